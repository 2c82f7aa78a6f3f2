"""Results of a benchmark run: provenance, the committed JSON file and its markdown table.

``provenance()`` records where and when the numbers were measured (commit and whether the tree
was dirty, UTC date, machine, CPU model and count, torch / transformers / Python versions, the
profile, and the load average: the machine is shared, so the load says how noisy the times are).
``write_results`` writes ``results.json`` (every row, for programs) and ``results.md`` (the table
the book's appendix includes). ``render_markdown`` is pure, so it is tested on fake rows.

Leaves out: running benchmarks (``run_all.py``) and formatting single values (``_timing.py``).
"""
from __future__ import annotations

import datetime as dt
import json
import os
import platform
import re
import subprocess
from pathlib import Path

from _timing import format_goal, format_value

ROOT = Path(__file__).resolve().parents[1]
# A ratio is the comparison a benchmark exists for: "(the target)" where it has a goal, "(context)"
# where it explains another row (a breakdown, a batching the goal's row beats).
KIND_LABEL = {"ratio": "ratio (the target)", "time": "time (context)", "count": "count", "check": "check"}


def kind_label(row: dict) -> str:
    kind = row.get("kind")
    if kind == "ratio" and not row.get("goal"):
        return "ratio (context)"
    return KIND_LABEL.get(kind, kind or "")


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(module: str) -> str:
    try:
        return __import__(module).__version__
    except Exception:  # not installed, or no __version__: say so rather than fail a whole run
        return "unavailable"


def load_average() -> list[float]:
    """1, 5 and 15 minute load averages (``[]`` where the OS has none)."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (OSError, AttributeError):
        return []


def provenance() -> dict:
    """Where, when and on what this run was measured."""
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {
        "commit": _git("rev-parse", "HEAD") or "unknown",
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "date_utc": dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat(),
        "machine": platform.node(),
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "python": platform.python_version(),
        "torch": _version("torch"),
        "transformers": _version("transformers"),
        "profile": os.environ.get("KBVQA_PROFILE", "cpu"),
        "reader": _reader(),
        "load_average_start": load_average(),
    }


def _reader() -> str:
    """The shipped reader's fingerprint (``kbvqa.reader.ship.reader_fingerprint``): the weights every
    reader row measured, so a table from another reader is caught (``tests/test_benchmarks.py``)."""
    try:
        from kbvqa.reader.ship import reader_fingerprint
        return reader_fingerprint()
    except (ImportError, OSError):
        return "unknown"


def reader_at(commit: str) -> str | None:
    """The reader fingerprint of the tensor files committed at ``commit`` (the same sha256 as
    ``reader_fingerprint``, read from git's blobs), or None when git cannot show them there."""
    import hashlib

    from kbvqa.reader.ship import READER_DIR, TENSOR_FILES

    h, rel = hashlib.sha256(), READER_DIR.relative_to(ROOT)
    for name in TENSOR_FILES:
        try:
            blob = subprocess.run(["git", "show", f"{commit}:{rel.as_posix()}/{name}"], cwd=ROOT,
                                  capture_output=True, timeout=60, check=True).stdout
        except (OSError, subprocess.SubprocessError):
            return None
        h.update(blob)
    return h.hexdigest()[:16]


def benchmark_reader(results: dict, name: str) -> str | None:
    """The reader a benchmark measured: its own provenance's (a rerun alone), else the run's."""
    own = results["benchmarks"][name].get("provenance") or results.get("provenance", {})
    return own.get("reader")


def backfill_readers(results: dict) -> dict:
    """``results`` with a ``reader`` added to every provenance that lacks one, computed from the reader
    files at that provenance's commit (``reader_at``) and marked ``reader_from: "git"``: the runs made
    before the fingerprint was recorded. A dirty checkout's reader files may have differed from the
    commit's, which the ``dirty`` flag beside it says."""
    def fill(prov: dict) -> dict:
        if prov.get("reader") or not prov.get("commit") or prov.get("commit") == "unknown":
            return prov
        reader = reader_at(prov["commit"])
        return {**prov, "reader": reader, "reader_from": "git"} if reader else prov

    out = {**results, "provenance": fill(results.get("provenance", {})), "benchmarks": {}}
    for name, bench in results["benchmarks"].items():
        own = bench.get("provenance")
        out["benchmarks"][name] = {**bench, "provenance": fill(own)} if own else bench
    return out


_FLAG = re.compile(r"(?<![`\w-])(--[a-z][\w-]*)")
_ABSOLUTE_PATH = re.compile(r"(?<![`\w.])/(?:tmp|home|work|root|var|check|content|mnt)(?:/[^\s/`:,;]+)+")


def _cell(text) -> str:
    """``text`` as one table cell: pipes escaped, one line."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _prose_cell(text) -> str:
    """A row's name or note as a cell: ``_cell`` plus command-line flags in code (markdown would turn
    ``--twice`` into an en dash) and a machine's absolute path cut to its last three parts."""
    text = _ABSOLUTE_PATH.sub(lambda m: "…/" + "/".join(m.group(0).split("/")[-3:]), str(text))
    return _cell(_FLAG.sub(r"`\1`", text))


def _measured_where(results: dict) -> list[str]:
    """One line saying how many tables the file holds, when, at which commits and on which CPUs: a
    table rerun alone (``--merge``) keeps its own provenance, so one file can mix several."""
    benches = results.get("benchmarks", {})
    provs = [b.get("provenance") or results.get("provenance", {}) for b in benches.values()]
    if not provs:
        return []
    dates = sorted(str(p.get("date_utc", "?"))[:10] for p in provs)
    commits = sorted({str(p.get("commit", "?"))[:10] for p in provs})
    cpus = sorted({str(p.get("cpu", "?")) for p in provs})
    when = dates[0] if dates[0] == dates[-1] else f"between {dates[0]} and {dates[-1]}"
    return [f"- {len(provs)} table(s), measured {when} at {len(commits)} commit(s) "
            f"({', '.join(f'`{c}`' for c in commits)}) on {len(cpus)} CPU model(s) ({'; '.join(cpus)}): "
            "each table's own line says which; compare seconds only within one table"]


def render_markdown(results: dict) -> str:
    """The results as markdown: a provenance list, then one table per benchmark."""
    prov = results.get("provenance", {})
    load = lambda key: ", ".join(f"{x:g}" for x in prov.get(key) or []) or "n/a"  # noqa: E731
    shared = [name for name, b in results.get("benchmarks", {}).items() if not b.get("provenance")]
    run = [
        f"- measured {prov.get('date_utc', '?')} at commit `{str(prov.get('commit', '?'))[:10]}`"
        + (" (uncommitted changes)" if prov.get("dirty") else ""),
        f"- machine: {prov.get('cpu', '?')}, {prov.get('cpus_usable', '?')} usable of {prov.get('cpu_count', '?')} "
        f"CPUs; torch {prov.get('torch', '?')}, transformers {prov.get('transformers', '?')}, "
        f"Python {prov.get('python', '?')}; profile `{prov.get('profile', '?')}`; reader "
        f"`{prov.get('reader', '?')}`",
        f"- load average (1, 5, 15 min) at start: {load('load_average_start')}; at end: {load('load_average_end')}",
    ]
    # The run's own provenance describes only the tables that were not rerun alone since; once every
    # table carries its own line, the run's header would describe none of them, so it is left out.
    lines = ["<!-- generated by benchmarks/run_all.py: do not edit by hand -->", *_measured_where(results)]
    if shared:
        if len(shared) < len(results.get("benchmarks", {})):
            lines.append("- the tables without a line of their own:")
            run = ["  " + line for line in run]
        lines += run
    lines.append("")
    if results.get("quick"):
        lines[1:1] = ["- **quick run** (`--quick`: tiny sizes to check the plumbing; the numbers mean nothing)"]
    for name, bench in results.get("benchmarks", {}).items():
        seconds = bench.get("seconds")
        took = f" ({seconds:.0f} s)" if isinstance(seconds, (int, float)) else ""
        lines += [f"**{name}**{took}", ""]
        own = bench.get("provenance")
        if own:                                    # rerun alone (--merge): its own date and commit
            lines += [f"Rerun alone {own.get('date_utc', '?')} at commit `{str(own.get('commit', '?'))[:10]}`"
                      + (" (uncommitted changes)" if own.get("dirty") else "")
                      + (f", reader `{own['reader']}`" if own.get("reader") else "")
                      + (f", on {own['cpu']}" if own.get("cpu") else "")
                      + (f" (1-min load average {own['load_average_start'][0]:g} at the start, "
                         f"{own['load_average_end'][0]:g} at the end, on {own.get('cpus_usable', '?')} CPUs)"
                         if own.get("load_average_start") and own.get("load_average_end") else "") + ".", ""]
        if bench.get("args"):                     # sizes other than its defaults (run_all --args / --quick)
            lines += [f"Sizes: `{_cell(' '.join(bench['args']))}`.", ""]
        if bench.get("error"):
            lines += [f"Did not finish: `{_cell(bench['error'])}`", ""]
            continue
        lines += ["| measurement | value | goal | met | kind | note |", "|---|---:|---|---|---|---|"]
        for r in bench.get("rows", []):
            goal = format_goal(r.get("goal"))
            if goal and r.get("unit") not in ("", "x", None):
                goal += f" {r['unit']}"
            met = {True: "yes", False: "**no**", None: ""}[r.get("met")]
            lines.append(f"| {_prose_cell(r['name'])} | {_cell(format_value(r['value'], r.get('unit', '')))} | "
                         f"{goal} | {met} | {kind_label(r)} | {_prose_cell(r.get('note', ''))} |")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def merge_results(old: dict, new: dict) -> dict:
    """``old`` with ``new``'s benchmarks put in place of (or after) its own, each carrying ``new``'s
    provenance (``--merge``: a benchmark rerun alone after the model it measures changed); the rest of
    ``old``, its provenance included, is kept as it was measured."""
    if "benchmarks" not in old or "benchmarks" not in new or "provenance" not in new:
        raise ValueError("both results need 'benchmarks' (and the new one its 'provenance')")
    merged = {**old, "benchmarks": dict(old["benchmarks"])}
    for name, bench in new["benchmarks"].items():
        merged["benchmarks"][name] = {**bench, "provenance": new["provenance"]}
    return merged


def write_results(results: dict, out_dir: Path) -> tuple[Path, Path]:
    """Write ``results.json`` and ``results.md`` into ``out_dir``; return their paths."""
    if "benchmarks" not in results or "provenance" not in results:
        raise ValueError("results need 'provenance' and 'benchmarks' keys")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out_dir / "results.json", out_dir / "results.md"
    json_path.write_text(json.dumps(results, indent=1, default=str) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(results), encoding="utf-8")
    return json_path, md_path


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Rewrite data/benchmarks/results.{json,md} from results.json.")
    parser.add_argument("--backfill-reader", action="store_true",
                        help="add the reader fingerprint, from git, to provenances made before it was recorded")
    args = parser.parse_args()
    path = ROOT / "data" / "benchmarks" / "results.json"
    results = json.loads(path.read_text())
    write_results(backfill_readers(results) if args.backfill_reader else results, path.parent)
