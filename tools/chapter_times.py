"""Per-chapter times and sizes for the README: measured on the CPU, estimated for one GPU.

``python -m tools.chapter_times --measure`` executes every chapter of the book in the cpu profile
(a fresh kernel each, as the book build does; ``tools.nb_execute``) and writes
``data/benchmarks/chapters.json``: per chapter its wall time, whether it ran and its three slowest
cells (``[cell index, seconds]``: where to look when a chapter runs over its budget), with provenance
(commit, date, machine, load average before and after, so a busy machine shows). ``--only NAME ...``
re-executes the named chapters and replaces their rows, each marked with its own commit and date
(``merge``; the README's table names them), so a change to a few chapters is re-timed in minutes. ``--readme``
rewrites the README's table between ``<!-- chapters:start -->`` and ``<!-- chapters:end -->`` from
that record and from the gpu profile's estimates (``kbvqa.models.gpu_budget.chapter_budget``: the
checkpoints a chapter loads, their bf16 download and the chapter's peak memory on a T4) and
``kbvqa.models.t4_time.chapter_minutes`` (its time on a T4; a chapter without a model: its CPU time), and from
``data/benchmarks/gpu_smoke.json`` when a GPU smoke run exists. A test holds the README's table
equal to what ``readme_table`` makes of the committed records.

``--background N`` measures under load (issue 50): N other processes, each a numpy matmul loop on one
thread (``OMP_NUM_THREADS=1``), run beside the chapters, and the record goes to
``data/benchmarks/chapters_under_load.json`` with the load averages, so that a chapter near its budget
on idle cores shows what a busy machine makes of it (the goal there: no cell over 150 s).

Leaves out: executing notebooks (``nb_execute``), the gpu smoke run (``gpu_smoke``), speed
benchmarks (``benchmarks/``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

from kbvqa.experiments.runs import non_negative_int

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "data" / "benchmarks" / "chapters.json"
LOADED_RECORD = ROOT / "data" / "benchmarks" / "chapters_under_load.json"
CELL_LIMIT_UNDER_LOAD = 150          # seconds: issue 50's bound on any one cell beside the background load
SMOKE = ROOT / "data" / "benchmarks" / "gpu_smoke.json"
README = ROOT / "README.md"
START, END = "<!-- chapters:start -->", "<!-- chapters:end -->"


def measure(notebooks=None) -> dict:
    """Execute ``notebooks`` (default: the book's, in order) in the cpu profile; the record."""
    from tools.nb_execute import book_environment, book_notebooks, execute_notebook

    load_before = os.getloadavg()
    runs = []
    with book_environment({"KBVQA_PROFILE": "cpu"}):
        for path in notebooks or book_notebooks():
            runs.append(execute_notebook(Path(path)))
    return record_of(runs, load_before)


def record_of(runs, load_before) -> dict:
    """The record of executed chapters (``tools.nb_execute.ExecutedNotebook``s, in order), measured from
    the load average ``load_before`` until now; ``benchmarks/bench_book.py`` writes it from its own run."""
    import torch

    from tools.nb_execute import cell_seconds

    chapters = [{"name": run.path.stem, "seconds": round(run.seconds, 1), "passed": not run.error,
                 "slowest_cells": [list(c) for c in cell_seconds(run.notebook)[:3]]} for run in runs]
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return {"chapters": chapters, "provenance": {
        "commit": commit or "unknown", "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "platform": platform.platform(), "cpus": os.cpu_count(), "python": platform.python_version(),
        "torch": torch.__version__, "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()]}}


LOAD_LOOP = "import numpy as np\na = np.random.rand(512, 512)\nwhile True:\n    a = np.tanh(a @ a)"


class background_load:
    """``with background_load(n):`` runs ``n`` single-threaded numpy matmul loops (the load of issue 50)
    and stops them on exit, whatever happened inside."""

    def __init__(self, n: int):
        if n < 0:
            raise ValueError(f"--background must be >= 0, got {n}")
        self.n, self.procs = n, []

    def __enter__(self):
        import sys

        env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
        self.procs = [subprocess.Popen([sys.executable, "-c", LOAD_LOOP], env=env, stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL) for _ in range(self.n)]
        return self

    def __exit__(self, *exc):
        for proc in self.procs:
            proc.kill()
            proc.wait()
        return False


def over_limit(record: dict, limit: float = CELL_LIMIT_UNDER_LOAD) -> list[tuple[str, int, float]]:
    """``[(chapter, cell index, seconds)]`` of the cells slower than ``limit`` in ``record``."""
    return [(c["name"], int(i), float(t)) for c in record["chapters"] for i, t in c.get("slowest_cells", [])
            if t > limit]


def merge(record: dict, remeasured: dict) -> dict:
    """``record`` with the chapters of ``remeasured`` replaced (or appended), each carrying the commit,
    date and load averages of its own measurement. ``ValueError`` when the two were measured on
    machines with different CPU counts: a record mixes measurements of one kind of machine only."""
    prov = remeasured["provenance"]
    if prov["cpus"] != record["provenance"]["cpus"]:
        raise ValueError(f"the record was measured on {record['provenance']['cpus']} CPUs, this run on "
                         f"{prov['cpus']}: measure every chapter again (--measure without --only)")
    stamp = {"commit": prov["commit"], "date": prov["date"],
             "load_average": [prov["load_average_before"], prov["load_average_after"]]}
    new = {c["name"]: {**c, "remeasured": stamp} for c in remeasured["chapters"]}
    chapters = [new.pop(c["name"], c) for c in record["chapters"]] + list(new.values())
    return {**record, "chapters": chapters}


def _title(name: str) -> str:
    return name.split("_", 1)[0] + " " + name.split("_", 1)[1].replace("_", " ")


def _remeasured_lines(record: dict) -> list[str]:
    """One line per separate measurement (``merge``) naming its chapters, each followed by a blank line."""
    groups: dict[str, list[str]] = {}
    for c in record["chapters"]:
        if "remeasured" in c:
            when = f"{c['remeasured']['date'][:10]}, commit {c['remeasured']['commit'][:7]}"
            groups.setdefault(when, []).append(_title(c["name"]))
    return [line for when, names in groups.items() for line in (f"Re-measured alone ({when}): {', '.join(names)}.", "")]


def readme_table(record: dict, smoke: dict | None = None) -> str:
    """The README's markdown table (see the module docstring); ``smoke``: a gpu_smoke.json record."""
    from kbvqa.models.gpu_budget import chapter_budget
    from kbvqa.models.t4_time import chapter_minutes

    prov = record["provenance"]
    on_gpu = {c["name"]: c for c in (smoke or {}).get("chapters", [])}
    gpu_head = (f"GPU smoke run, s ({smoke['device']}, random tiny models, several chapters at once)" if smoke else
                "on a T4 (not measured: no T4 was lent)")
    lines = [f"Measured on the CPU ({prov['cpus']} cores, {prov['date'][:10]}, commit {prov['commit'][:7]}). "
             "The T4 columns are *estimates* for the gpu profile on a free Colab T4, until a run on one replaces "
             "them: memory from parameter counts and activations per token measured on the CPU at full width "
             "(`kbvqa.models.gpu_budget`: weights in bf16, every model the chapter holds at once, its training "
             "step's activations from `benchmarks/bench_activations.py`, retrieval models as the hub stores them; "
             "datasets not counted), time from the chapter's work at the gpu profile's sizes on a T4's data-sheet "
             "figures at an assumed utilisation (`kbvqa.models.t4_time`: 65 TFLOP/s fp16 at 25 %, 320 GB/s at "
             "70 %, downloads at 100 MB/s).", "",
             *_remeasured_lines(record),
             "| chapter | CPU, s | gpu-profile checkpoints | download, GB | peak memory on a T4, GiB (estimate) | "
             f"time on a T4, min (estimate) | {gpu_head} |",
             "|---|---|---|---|---|---|---|"]
    for c in record["chapters"]:
        b = chapter_budget(c["name"])
        names = ", ".join(x.split("/")[1] for x in b["checkpoints"]) or "—"
        peak = f"{b['peak_gib']:.1f}" + (" (over 16 GB)" if b["over_budget"] else "") if b["checkpoints"] else "—"
        run = on_gpu.get(c["name"])
        smoke_cell = "—" if run is None else f"{run['seconds']:.0f}" + ("" if run["passed"] else " (failed)")
        cpu = f"{c['seconds']:.0f}" if c["passed"] else "failed"
        # no model: the same work on Colab's two CPU cores as on these two (the CPU column)
        minutes = chapter_minutes(c["name"])["total"] if b["checkpoints"] else c["seconds"] / 60
        t4 = f"{minutes:.0f}" if minutes >= 1 else "< 1"
        lines.append(f"| {_title(c['name'])} | {cpu} | {names} | {b['download_gb'] or '—'} | {peak} | {t4} | "
                     f"{smoke_cell} |")
    return "\n".join(lines)


def readme_block(record_path: Path = RECORD, smoke_path: Path = SMOKE) -> str:
    record = json.loads(Path(record_path).read_text())
    smoke = json.loads(Path(smoke_path).read_text()) if Path(smoke_path).exists() else None
    return f"{START}\n{readme_table(record, smoke)}\n{END}"


def update_readme(readme: Path = README, record_path: Path = RECORD, smoke_path: Path = SMOKE) -> None:
    """Replace the README's block between the markers (``ValueError`` when they are missing)."""
    text = Path(readme).read_text()
    if START not in text or END not in text:
        raise ValueError(f"{readme} has no {START} ... {END} block")
    head, rest = text.split(START, 1)
    Path(readme).write_text(head + readme_block(record_path, smoke_path) + rest.split(END, 1)[1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--measure", action="store_true", help="execute every chapter, write the record")
    parser.add_argument("--only", nargs="+", metavar="CHAPTER", default=None,
                        help="with --measure: re-execute these chapters (notebook stems) and merge their rows")
    parser.add_argument("--readme", action="store_true", help="rewrite the README's table from the records")
    parser.add_argument("--background", type=non_negative_int, default=0, metavar="N",
                        help="with --measure: N single-threaded numpy loops run beside the chapters; the "
                             f"record goes to {LOADED_RECORD.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    if args.only and not args.measure:
        parser.error("--only needs --measure")
    if args.background and not args.measure:
        parser.error("--background needs --measure")
    if args.background and args.only:
        parser.error("--background measures every chapter: leave out --only")
    if args.measure and args.background:
        with background_load(args.background):
            record = measure()
        record["provenance"]["background"] = {"processes": args.background, "loop": LOAD_LOOP,
                                              "cell_limit_s": CELL_LIMIT_UNDER_LOAD,
                                              "cells_over_limit": over_limit(record)}
        LOADED_RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps(record["provenance"]["background"]))
        return
    if args.measure and args.only:
        from tools.nb_execute import book_notebooks

        known = {Path(p).stem: p for p in book_notebooks()}
        unknown = sorted(set(args.only) - set(known))
        if unknown:
            parser.error(f"not chapters of the book: {unknown}")
        record = merge(json.loads(RECORD.read_text()), measure([known[n] for n in args.only]))
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps([c for c in record["chapters"] if c["name"] in args.only]))
    elif args.measure:
        record = measure()
        RECORD.write_text(json.dumps(record, indent=1) + "\n")
        print(json.dumps(record["chapters"]))
    if args.readme:
        update_readme()


if __name__ == "__main__":
    main()
