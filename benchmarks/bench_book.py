"""Whole-book execution time (issue #9 §3) and the "execute twice, same outputs" check (§2).

Executes every notebook of ``_toc.yml`` one after another with nbclient, each in a fresh kernel, in
the cpu profile and the Makefile's environment (``tools.nb_execute``), and times each (kernel start
included). Goals: the whole book <= 30 min on 2 cores, no notebook over 90 s (absolute times: they
depend on the machine and its load, which ``run_all.py`` records).

Reproducibility: this execution is compared, after ``tools.nb_compare``'s normalisation (timings,
addresses, widget ids, ... removed), with a reference execution -- by default the copies that
``make book`` (myst-nb) left in ``_build/jupyter_execute/`` -- so a benchmark run after a build
checks "executing the book twice gives the same outputs" at no extra cost. ``--twice`` executes
the book a second time instead and compares the two runs of this process (no build needed, twice
the time). A notebook whose *source* differs from the reference's is counted as stale (the build
is older than the notebook), not as non-deterministic. Executed copies are kept in
``data/cache/bench_book/`` for inspection.

Over the whole book (no ``--only``) the same execution also writes ``data/benchmarks/chapters.json``
and the README's chapter table (``tools.chapter_times.record_of``: each chapter's time and its three
slowest cells), so the two records never come from different runs.

``rows()`` returns the rows, ``main`` prints them and every difference found.
Run: ``python benchmarks/bench_book.py [--only 01_models 22_reag_cold_start] [--twice]``.
Leaves out: the HTML build (Sphinx's time) and the gpu profile.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:   # tools/ lives at the repository root, next to benchmarks/
    sys.path.insert(0, str(ROOT))

from _timing import print_rows, row  # noqa: E402

from tools import chapter_times  # noqa: E402
from tools.nb_compare import compare_files  # noqa: E402
from tools.nb_execute import book_notebooks, cell_seconds, execute_notebook, write_notebook  # noqa: E402

BOOK_GOAL_S, NOTEBOOK_GOAL_S = 1800, 90      # the guide: the book <= 30 min, each chapter <= 90 s
REFERENCE = ROOT / "_build" / "jupyter_execute" / "notebooks"
CACHE = ROOT / "data" / "cache" / "bench_book"



def _shown(path: Path) -> str:
    """``path`` as a table may print it: relative to the repository when under it, else only its last
    three parts (a temporary folder's full path names the machine, not the book)."""
    path = Path(path).resolve()
    try:
        return str(path.relative_to(ROOT))
    except ValueError:
        return str(Path("…", *path.parts[-3:]))

def _parse(argv):
    ap = argparse.ArgumentParser(description="Execute the book's notebooks, time them, compare with a reference.")
    ap.add_argument("--only", nargs="*", default=None, help="notebook stems to run (default: every toc notebook)")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per cell (as _config.yml)")
    ap.add_argument("--reference", type=Path, default=REFERENCE, help="executed copies to compare with")
    ap.add_argument("--twice", action="store_true", help="execute twice and compare the two runs")
    ap.add_argument("--out", type=Path, default=CACHE, help="where the executed copies are written")
    return ap.parse_args(argv)


def execute_book(notebooks, out: Path, timeout: int) -> dict:
    """``{stem: ExecutedNotebook}``, each saved under ``out``; printed as it goes."""
    runs = {}
    for path in notebooks:
        executed = execute_notebook(path, timeout=timeout)
        write_notebook(executed, out)
        runs[path.stem] = executed
        status = f"FAILED: {executed.error}" if executed.error else "ok"
        print(f"  {path.name:<40} {executed.seconds:6.1f} s  {status}", flush=True)
    return runs


def compare_runs(names, first: Path, second: Path) -> dict:
    """``{"compared": [...], "missing": [...], "stale": {stem: diffs}, "differ": {stem: diffs}}``."""
    result = {"compared": [], "missing": [], "stale": {}, "differ": {}}
    for stem in names:
        a, b = first / f"{stem}.ipynb", second / f"{stem}.ipynb"
        if not (a.exists() and b.exists()):
            result["missing"].append(stem)
            continue
        diffs = compare_files(a, b)
        result["compared"].append(stem)
        if any(d.kind in ("source", "cells") for d in diffs):
            result["stale"][stem] = diffs
        elif diffs:
            result["differ"][stem] = diffs
    return result


def _slowest(run) -> str:
    """Where a notebook's time went: its slowest cell (0-based index in the .ipynb) and seconds."""
    cells = cell_seconds(run.notebook)
    return f"slowest cell {cells[0][0]}: {cells[0][1]:.0f} s" if cells else ""


def rows(argv=None) -> list[dict]:
    args = _parse(argv)
    notebooks = book_notebooks(ROOT)
    if args.only:
        unknown = set(args.only) - {p.stem for p in notebooks}
        if unknown:
            raise ValueError(f"--only names notebooks not in _toc.yml: {sorted(unknown)}")
        notebooks = [p for p in notebooks if p.stem in args.only]
    print(f"executing {len(notebooks)} notebook(s) in the cpu profile, one after another", flush=True)
    load_before = os.getloadavg()
    runs = execute_book(notebooks, args.out / "run1", args.timeout)
    if not args.only:            # the whole book: this execution is also the README's chapter record
        chapters = chapter_times.record_of(list(runs.values()), load_before)
        chapter_times.RECORD.write_text(json.dumps(chapters, indent=1) + "\n")
        chapter_times.update_readme()
    reference, label = args.reference, "make book's _build/jupyter_execute"
    if args.twice:
        print("second execution, for the comparison", flush=True)
        execute_book(notebooks, args.out / "run2", args.timeout)
        reference, label = args.out / "run2", "a second execution"

    out = [row(f"{stem}: execution", r.seconds, "s", ("<=", NOTEBOOK_GOAL_S),
               f"FAILED: {r.error}" if r.error else _slowest(r), kind="time") for stem, r in runs.items()]
    total = sum(r.seconds for r in runs.values())
    slowest = max(runs.values(), key=lambda r: r.seconds)
    failed = [s for s, r in runs.items() if r.error]
    out.append(row(f"whole book, {len(runs)} notebooks one after another", total, "s", ("<=", BOOK_GOAL_S),
                   f"slowest {slowest.path.stem} ({slowest.seconds:.0f} s)", kind="time"))
    out.append(row("notebooks with a failing cell", len(failed), "", ("==", 0), ", ".join(failed), kind="check"))

    comparison = compare_runs([s for s in runs if s not in failed], args.out / "run1", reference)
    for stem, diffs in {**comparison["stale"], **comparison["differ"]}.items():
        print(f"-- {stem}: {len(diffs)} difference(s) with {label}")
        for d in diffs[:20]:
            print(d)
    if not comparison["compared"]:
        out.append(row("notebooks whose outputs differ between two executions", "n/a", "",
                       note=f"no reference copies of these notebooks in `{_shown(reference)}`: run `make book` "
                            "first, or pass `--twice`",
                       kind="check"))
        return out
    differ = comparison["differ"]
    where = "; ".join(f"{s} (cells {sorted({d.cell for d in ds})})" for s, ds in differ.items())
    out.append(row("notebooks whose outputs differ between two executions", len(differ), "", ("==", 0),
                   f"{len(comparison['compared'])} compared with {label}" + (f"; {where}" if where else ""),
                   kind="check"))
    if comparison["stale"]:
        out.append(row("notebooks not compared: reference is stale", len(comparison["stale"]), "",
                       note="source changed since the reference ran: " + ", ".join(comparison["stale"]),
                       kind="check"))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "the book: execution time (cpu profile) and reproducibility")


if __name__ == "__main__":
    main()
