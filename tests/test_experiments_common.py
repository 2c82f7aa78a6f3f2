import csv
import json

import pytest

from kbvqa.experiments.runs import resumable_parser, resumed_run, write_json_and_csv


def _run_file(path, fingerprint, ids):
    lines = [{"fingerprint": fingerprint, "seconds": 3.0}] + [{"id": i, "correct": 1} for i in ids]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_a_finished_row_is_resumed_only_with_the_same_setting_and_queries(tmp_path):
    path = _run_file(tmp_path / "row.jsonl", "abc", ["q1", "q2", "q3"])
    header, records = resumed_run(path, "abc", ["q1", "q2"])
    assert header["seconds"] == 3.0 and [r["id"] for r in records] == ["q1", "q2"]   # cut to the queries asked
    assert resumed_run(path, "abd", ["q1", "q2"]) is None               # another setting
    assert resumed_run(path, "abc", ["q1", "q2", "q3", "q4"]) is None   # a shorter run
    assert resumed_run(path, "abc", ["q2"]) is None                     # other queries
    assert resumed_run(path, "abc", ["q1"], fresh=True) is None
    assert resumed_run(tmp_path / "missing.jsonl", "abc", ["q1"]) is None


def test_results_files_and_parser(tmp_path):
    write_json_and_csv(tmp_path / "out", {"rows": [1]}, ["a", "b"], [[1, 2], [3, 4]])
    assert json.loads((tmp_path / "out" / "results.json").read_text()) == {"rows": [1]}
    assert list(csv.reader((tmp_path / "out" / "results.csv").open())) == [["a", "b"], ["1", "2"], ["3", "4"]]
    args = resumable_parser("d", "--rungs", ["x", "y"], 7, "help", tmp_path).parse_args(["--rungs", "y", "--fresh"])
    assert args.rungs == ["y"] and args.fresh and args.limit == 7 and args.out == tmp_path


def test_committed_for_pairs_live_records_with_the_committed_ones():
    from kbvqa.experiments.runs import committed_for

    committed = [{"id": "a", "seed": 0, "x": 1}, {"id": "b", "seed": 0, "x": 2}, {"id": "a", "seed": 1, "x": 3}]
    assert [r["x"] for r in committed_for([{"id": "b"}, {"id": "a"}], committed[:2])] == [2, 1]
    pairs = committed_for([{"id": "a", "seed": 1}], committed, key=lambda r: (r["id"], r["seed"]))
    assert pairs == [committed[2]]
    with pytest.raises(ValueError, match=r"rung 'r': no committed record for \['c'\]; see"):
        committed_for([{"id": "c"}, {"id": "a"}], committed, what="rung 'r': ", hint="; see")
    with pytest.raises(ValueError, match="no live records"):
        committed_for([], committed)


def test_same_model_compares_what_made_the_committed_run():
    import types

    from kbvqa.experiments.runs import model_fingerprint, same_model

    reader = types.SimpleNamespace(fingerprint="0123abcd")
    hub = types.SimpleNamespace(core=types.SimpleNamespace(name_or_path="Qwen/Qwen3-VL-2B-Instruct"))
    assert model_fingerprint(reader) == "reader:0123abcd" and model_fingerprint(hub) == "Qwen/Qwen3-VL-2B-Instruct"
    assert same_model(reader, {"model": "reader:0123abcd"}) and not same_model(hub, {"model": "reader:0123abcd"})
    tiny = model_fingerprint(None)
    assert tiny.startswith("tiny_vlm:") and same_model(None, {"model": tiny}) and not same_model(None, {})


def test_git_commit_outside_a_checkout_reads_kbvqa_commit(tmp_path, monkeypatch):
    """A long run imports a ``git archive`` snapshot (no .git): its provenance names the commit the
    snapshot was made from when ``KBVQA_COMMIT`` says it, else "unknown"."""
    from kbvqa.experiments import runs

    monkeypatch.setattr(runs, "REPO_ROOT", tmp_path)
    monkeypatch.delenv("KBVQA_COMMIT", raising=False)
    assert runs.git_commit() == "unknown"
    monkeypatch.setenv("KBVQA_COMMIT", "0123abc")
    assert runs.git_commit(("data",)) == "0123abc"


def test_no_committed_results_file_records_an_unknown_commit(tmp_path):
    """The book promises a commit beside every result: a committed results file whose run recorded
    "unknown" has it recovered from git (``commit_from_git``, marked ``git_commit_from: "git"``)."""
    from kbvqa.experiments.runs import unknown_commits

    assert unknown_commits() == [], "recover each commit with kbvqa.experiments.runs.commit_from_git"
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps({"provenance": {"git_commit": "unknown"}}))
    (tmp_path / "b.json").write_text(json.dumps({"runs": [{"commit": "0123abc"}]}))
    assert unknown_commits(tmp_path) == ["a/results.json"]


def test_the_recovered_molt_commit_is_the_one_that_added_its_results():
    """molt/results.json's run recorded "unknown": its commit is the first that holds its date."""
    import subprocess

    from kbvqa.config import DATA_DIR, REPO_ROOT
    from kbvqa.experiments.runs import commit_from_git, read_json

    path = DATA_DIR / "experiments" / "molt" / "results.json"
    prov = read_json(path)["provenance"]
    if prov.get("git_commit_from") != "git":
        pytest.skip("the MOLT run recorded its own commit")
    shown = subprocess.run(["git", "show", f"{prov['git_commit']}:data/experiments/molt/results.json"],
                           cwd=REPO_ROOT, capture_output=True, text=True)
    if shown.returncode:
        pytest.skip("no git history here (a wheel or an archive)")
    assert prov["date"] in shown.stdout and commit_from_git(path) == prov   # already recovered
