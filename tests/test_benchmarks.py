"""The benchmark runner's rows, table writer and provenance, on fake rows (no timing, no models)."""
import json
import re
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "benchmarks"
sys.path.insert(0, str(BENCH))

from _timing import best_of, format_goal, format_value, row  # noqa: E402
from report import merge_results, provenance, render_markdown, write_results  # noqa: E402


def _fake_results():
    return {
        "provenance": {"commit": "0123456789abcdef0123456789abcdef01234567", "dirty": True,
                       "date_utc": "2026-11-22T09:00:00+00:00", "cpu": "Fake CPU", "cpu_count": 8, "cpus_usable": 2,
                       "torch": "2.13.0", "transformers": "5.23.0", "python": "3.11.9", "profile": "cpu",
                       "load_average_start": [3.5, 2.0, 1.25], "load_average_end": [4.0, 2.5, 1.5]},
        "benchmarks": {
            "RCTS cost": {"seconds": 42.4, "error": "", "rows": [
                row("RCTS / Vanilla-RAG", 9.5, "x", ("<=", 8), "20 queries | early stop"),
                row("Vanilla-RAG s per query", 0.123, "s", kind="time"),
                row("RCTS, 1 leaf per step / Vanilla-RAG", 20.4, "x")]},
            "MaxSim": {"seconds": 3.0, "error": "", "rows": [row("MaxSim / matmul", 0.61, "x", (">=", 0.5))]},
            "GRPO": {"seconds": 1.0, "error": "ModuleNotFoundError: No module named 'datasets'", "rows": []},
        },
    }


@pytest.mark.parametrize("op,bound,value,met", [("<=", 8, 8.0, True), ("<=", 8, 8.01, False), (">", 1, 1.0, False),
                                                (">=", 0.5, 0.5, True), ("==", 0, 0, True), ("==", 0, 2, False),
                                                ("<", 90, 91.0, False)])
def test_row_meets_its_goal(op, bound, value, met):
    r = row("x", value, "x", (op, bound))
    assert r["met"] is met and r["goal"] == [op, bound] and r["value"] == value


def test_row_without_goal_or_number_has_no_verdict():
    assert row("a", 3.0)["met"] is None
    assert row("b", "1 / 4", goal=("<=", 2))["met"] is None
    assert row("c", float("nan"), goal=("<=", 2))["met"] is None


@pytest.mark.parametrize("goal,kind", [(("~", 1), "ratio"), (("<=",), "ratio"), (None, "speed")])
def test_row_rejects_bad_goal_or_kind(goal, kind):
    with pytest.raises(ValueError):
        row("x", 1.0, "x", goal, kind=kind)


def test_format_value_and_goal():
    assert format_value(3.14159, "x") == "3.14x"
    assert format_value(12.0, "s") == "12.00 s"
    assert format_value(7, "") == "7"
    assert format_value(1.5e6, "") == "1.5e+06"
    assert format_value("1 / 4", "") == "1 / 4"
    assert format_goal(["<=", 8]) == "<= 8" and format_goal(None) == ""


def test_best_of_keeps_the_last_result_and_rejects_zero_repeats():
    calls = []
    seconds, out = best_of(lambda: calls.append(1) or len(calls), 3)
    assert out == 3 and len(calls) == 3 and seconds >= 0
    with pytest.raises(ValueError):
        best_of(lambda: None, 0)


def test_markdown_table_has_provenance_rows_verdicts_and_errors():
    md = render_markdown(_fake_results())
    assert "commit `0123456789`" in md and "(uncommitted changes)" in md
    assert "2 usable of 8 CPUs" in md and "torch 2.13.0" in md
    assert "at start: 3.5, 2, 1.25; at end: 4, 2.5, 1.5" in md
    assert "| RCTS / Vanilla-RAG | 9.50x | <= 8 | **no** | ratio (the target) | 20 queries \\| early stop |" in md
    assert "| MaxSim / matmul | 0.61x | >= 0.5 | yes |" in md
    assert "| Vanilla-RAG s per query | 0.12 s |  |  | time (context) |" in md
    assert "| RCTS, 1 leaf per step / Vanilla-RAG | 20.40x |  |  | ratio (context) |" in md   # no goal: not a target
    assert "**GRPO** (1 s)" in md and "Did not finish: `ModuleNotFoundError" in md
    # one table per finished benchmark, each row with the header's six columns
    tables = [line for line in md.splitlines() if line.startswith("| measurement")]
    assert len(tables) == 2
    for line in md.splitlines():
        if line.startswith("| ") and not line.startswith("| measurement"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 7, line


def test_write_results_round_trips(tmp_path):
    results = _fake_results()
    json_path, md_path = write_results(results, tmp_path / "out")
    assert json.loads(json_path.read_text()) == json.loads(json.dumps(results))
    assert md_path.read_text() == render_markdown(results)
    with pytest.raises(ValueError):
        write_results({"benchmarks": {}}, tmp_path)


def test_a_benchmark_run_with_other_sizes_says_them():
    results = _fake_results()
    results["benchmarks"]["MaxSim"]["args"] = ["--items", "256"]
    md = render_markdown(results)
    assert md.count("Sizes: `--items 256`.") == 1 and md.index("**MaxSim**") < md.index("Sizes:")


def test_a_benchmark_rerun_alone_replaces_only_its_own_rows():
    old = _fake_results()
    names = list(old["benchmarks"])
    rerun = {"provenance": {**old["provenance"], "commit": "fedcba9876543210", "date_utc": "2030-01-01", "dirty": False,
                            "reader": "87914057b0c95a6e"},
             "benchmarks": {names[0]: {"title": names[0], "seconds": 2.0, "rows": [], "error": ""}}}
    merged = merge_results(old, rerun)
    assert list(merged["benchmarks"]) == names and merged["provenance"] == old["provenance"]
    assert merged["benchmarks"][names[0]]["provenance"]["commit"] == "fedcba9876543210"
    assert all(merged["benchmarks"][n] == old["benchmarks"][n] for n in names[1:])
    md = render_markdown(merged)
    assert md.count("Rerun alone 2030-01-01 at commit `fedcba9876`, reader `87914057b0c95a6e`, on Fake CPU (1-min load "
                    "average 3.5 at the start, 4 at the end, on 2 CPUs).") == 1
    assert "commit `0123456789`" in md
    with pytest.raises(ValueError):
        merge_results(old, {"benchmarks": {}})


def test_provenance_records_where_and_when():
    prov = provenance()
    assert re.fullmatch(r"[0-9a-f]{40}|unknown", prov["commit"])
    assert isinstance(prov["dirty"], bool)
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00$", prov["date_utc"])
    assert isinstance(prov["cpu_count"], int) and prov["cpu_count"] >= 1
    assert 1 <= prov["cpus_usable"] <= prov["cpu_count"]
    assert prov["torch"].split(".")[0].isdigit()
    assert all(isinstance(x, float) for x in prov["load_average_start"])


def test_every_benchmark_script_exposes_rows():
    import ast

    from run_all import BENCHMARKS

    scripts = {p.stem.removeprefix("bench_") for p in BENCH.glob("bench_*.py")}
    assert scripts == set(BENCHMARKS), "run_all.BENCHMARKS must list every bench_*.py"
    for name in scripts:
        tree = ast.parse((BENCH / f"bench_{name}.py").read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert {"rows", "main"} <= functions, name


def test_sizes_for_one_benchmark_are_parsed_and_bad_ones_refused():
    from run_all import parse_sizes

    assert parse_sizes(["rcts=--queries 6 --full 2", "maxsim="]) == {"rcts": "--queries 6 --full 2", "maxsim": ""}
    assert parse_sizes([]) == {}
    for bad in (["rcts"], ["nope=--queries 2"], ["=--queries 2"]):
        with pytest.raises(ValueError, match="NAME=ARGS"):
            parse_sizes(bad)


def test_the_reader_at_a_commit_is_the_fingerprint_of_its_files():
    import subprocess

    from report import reader_at

    from kbvqa.reader.ship import reader_fingerprint

    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=BENCH.parent, capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout")
    dirty = subprocess.run(["git", "status", "--porcelain", "data/reader"], cwd=BENCH.parent,
                           capture_output=True, text=True).stdout
    if "safetensors" in dirty:
        pytest.skip("the reader's tensor files differ from HEAD's")
    assert reader_at(head.stdout.strip()) == reader_fingerprint()
    assert reader_at("0" * 40) is None                                    # no such commit


def test_backfill_adds_the_reader_only_where_missing(monkeypatch):
    import report

    monkeypatch.setattr(report, "reader_at", lambda commit: f"reader-of-{commit[:3]}")
    results = {"provenance": {"commit": "abc123"},
               "benchmarks": {"a": {"rows": []},
                              "b": {"rows": [], "provenance": {"commit": "def456", "reader": "kept"}},
                              "c": {"rows": [], "provenance": {"commit": "unknown"}}}}
    out = report.backfill_readers(results)
    assert out["provenance"] == {"commit": "abc123", "reader": "reader-of-abc", "reader_from": "git"}
    assert report.benchmark_reader(out, "a") == "reader-of-abc"             # the run's provenance
    assert report.benchmark_reader(out, "b") == "kept"                      # its own, untouched
    assert report.benchmark_reader(out, "c") is None                        # nothing to read it from
    assert "reader" not in results["provenance"]                            # the input is not changed


def test_every_committed_benchmark_measured_the_shipped_reader():
    """Issue 51, item 5: a table measured on another reader than the shipped one fails here; rerun it
    (``python benchmarks/run_all.py --merge --only NAME``)."""
    from report import ROOT, benchmark_reader

    from kbvqa.reader.ship import reader_fingerprint

    results = json.loads((ROOT / "data" / "benchmarks" / "results.json").read_text())
    shipped = reader_fingerprint()
    other = {name: benchmark_reader(results, name) for name in results["benchmarks"]
             if benchmark_reader(results, name) != shipped}
    assert not other, f"measured on another reader than {shipped}: {other}"


def test_profile_categories_and_shares_add_up():
    from types import SimpleNamespace

    from bench_profile import category, shares

    assert category("aten::mm") == category("aten::addmm") == category("aten::_weight_int8pack_mm") == "linear"
    assert category("mkldnn::_linear_pointwise") == "linear"
    assert category("aten::_scaled_dot_product_flash_attention_for_cpu") == category("aten::bmm") == "attention"
    assert category("aten::mul") == category("aten::copy_") == "other"
    events = [SimpleNamespace(key="aten::mm", self_cpu_time_total=600_000),
              SimpleNamespace(key="aten::mul", self_cpu_time_total=200_000)]
    split = shares(events, 1.0)                         # 0.6 s + 0.2 s of ops in 1 s of wall time
    assert split == pytest.approx({"linear": 0.6, "attention": 0.0, "other": 0.2, "outside": 0.2})
    assert sum(split.values()) == pytest.approx(1.0)


def test_markdown_header_says_what_the_tables_mix_and_drops_a_stale_run_line():
    results = _fake_results()
    md = render_markdown(results)
    assert "3 table(s), measured 2026-11-22 at 1 commit(s) (`0123456789`) on 1 CPU model(s) (Fake CPU)" in md
    assert "the tables without a line of their own" not in md     # all share the run's line
    rerun = {"provenance": {**results["provenance"], "commit": "fedcba9876543210", "date_utc": "2030-01-01",
                            "cpu": "Other CPU"},
             "benchmarks": {name: {**b} for name, b in results["benchmarks"].items()}}
    merged = merge_results(results, rerun)             # every table rerun alone: the run's line is stale
    md = render_markdown(merged)
    assert "commit `0123456789`" not in md and "load average (1, 5, 15 min)" not in md
    assert md.count("(1-min load average 3.5 at the start") == 3               # each table says its own load
    assert "measured 2030-01-01 at 1 commit(s) (`fedcba9876`) on 1 CPU model(s) (Other CPU)" in md
    one = merge_results(results, {"provenance": rerun["provenance"],
                                  "benchmarks": {"MaxSim": results["benchmarks"]["MaxSim"]}})
    md = render_markdown(one)                          # a mix: both commits, and the run's line kept for the rest
    assert "at 2 commit(s) (`0123456789`, `fedcba9876`) on 2 CPU model(s) (Fake CPU; Other CPU)" in md
    assert "- the tables without a line of their own:" in md and "  - measured 2026-11-22" in md


def test_markdown_notes_show_flags_as_code_and_no_machine_path():
    results = _fake_results()
    results["benchmarks"]["MaxSim"]["rows"] = [
        row("outputs differ", "n/a", "", note="no copies in /tmp/bench/_build/jupyter_execute/notebooks: "
                                              "run `make book` first, or pass --twice", kind="check")]
    results["benchmarks"]["MaxSim"]["args"] = ["--items", "256"]
    md = render_markdown(results)
    assert "no copies in …/_build/jupyter_execute/notebooks: run `make book` first, or pass `--twice` |" in md
    assert "/tmp/" not in md and "Sizes: `--items 256`." in md
