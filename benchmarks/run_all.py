"""Run every benchmark of the book and write its results table (``make benchmarks``, issue #9 §3).

Each ``bench_<name>.py`` runs in its own Python process (fresh threads and memory, so one
benchmark's models do not slow the next), returns its rows (``rows(argv)``), and the rows are
gathered with the run's provenance into ``data/benchmarks/results.json`` and the markdown table
``data/benchmarks/results.md`` that the appendix page ``book/benchmarks.md`` includes. Ratios are
the targets (measured within one run, on one machine state); absolute times are context.

A benchmark that fails is recorded with its error and the others still run; the exit status is 1
when any failed. ``--quick`` shrinks every benchmark to check the plumbing in a few minutes (its
numbers mean nothing; it writes to ``data/cache/benchmarks_quick`` unless ``--out`` is given).

``--merge`` keeps the other benchmarks of the existing results and replaces only those it runs, each
with its own provenance (after the model one benchmark measures changed).

``--args rcts="--queries 6 --full 2"`` gives one benchmark other sizes than its defaults (the reader
makes RCTS's full search cost minutes per query on two cores).

Run: ``python benchmarks/run_all.py [--only book maxsim] [--quick] [--merge] [--out DIR] [--args NAME=ARGS]``.
Leaves out: the experiments (``make experiments``) and the gpu profile.
"""
from __future__ import annotations

import argparse
import importlib
import json
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from report import ROOT, load_average, merge_results, provenance, write_results

HERE = Path(__file__).resolve().parent
# In the order they run: the model layer first, the whole book last.
BENCHMARKS = {
    "models": "model layer: load, sampling with prefix reuse, batched P(Yes)",
    "reader": "the reader: load, prefix sharing, decode throughput against the bandwidth bound",
    "fastpath": "the reader's fast path: the critic's shared prefix, each inference precision",
    "prefix": "prefix reuse beyond the critic: SeRTS grades and proposals, MOLT rounds",
    "profile": "where the reader's prefill and decode time goes: linear ops' share, Amdahl's ceiling",
    "maxsim": "late interaction (RCTS Eq. 4): MaxSim vs matrix multiply",
    "rcts": "RCTS (MCTS-HR) cost against Vanilla-RAG",
    "rcts_fast": "RCTS time per question on the reader's fast path",
    "critic": "ReAG critic: batched vs one passage per call",
    "grpo": "GRPO step (ReAG Eq. 6-7): ours vs TRL",
    "molt": "MOLT (App. C): one-pass ladder vs iterative pairwise",
    "activations": "activation memory per token of a LoRA training step at full width (gpu_budget's figures)",
    "book": "the book: execution time and reproducibility",
}
QUICK_ARGS = {"maxsim": "--items 256 --queries 4 --repeats 2", "rcts": "--queries 2 --full 1",
              "critic": "--queries 1 --k 1", "fastpath": "--k 1 --tokens 4 --sweep 1",
              "prefix": "--questions 2 --tokens 2", "profile": "--tokens 2", "rcts_fast": "--queries 1",
              "molt": "--queries 1 --repeats 1", "book": "--only 01_models",
              "activations": "--only HuggingFaceTB/SmolVLM-256M-Instruct --tokens 64 --no-write"}


def parse_sizes(items: list[str]) -> dict[str, str]:
    """``["rcts=--queries 6 --full 2"]`` -> ``{"rcts": "--queries 6 --full 2"}`` (``--args``); these
    replace a benchmark's defaults and its ``--quick`` sizes. Raises ``ValueError`` on an item
    without ``=`` or naming no benchmark."""
    sizes = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or name not in BENCHMARKS:
            raise ValueError(f"--args takes NAME=ARGS with NAME one of {sorted(BENCHMARKS)}, got {item!r}")
        sizes[name] = value
    return sizes


def run_child(name: str, argv: list[str], out: Path) -> None:
    """In the child process: import ``bench_<name>``, run ``rows(argv)``, dump the rows to ``out``."""
    module = importlib.import_module(f"bench_{name}")
    rows = module.rows(argv)
    out.write_text(json.dumps(rows, default=str), encoding="utf-8")


def run_benchmark(name: str, argv: list[str]) -> dict:
    """``{"title", "seconds", "rows", "error"}`` for one benchmark, run in a fresh process."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, str(HERE / "run_all.py"), "--child", name, "--child-out", str(out), "--", *argv]
        t0 = time.perf_counter()
        proc = subprocess.run(cmd, cwd=HERE, stderr=subprocess.PIPE, text=True)
        seconds = time.perf_counter() - t0
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr or "").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
            sys.stderr.write(proc.stderr[-4000:] if proc.stderr else "")
            return {"title": BENCHMARKS[name], "seconds": round(seconds, 1), "rows": [], "error": tail[0][:500]}
        rows = json.loads(out.read_text(encoding="utf-8"))
    return {"title": BENCHMARKS[name], "seconds": round(seconds, 1), "rows": rows, "error": ""}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Run every benchmark and write data/benchmarks/results.{json,md}.")
    ap.add_argument("--only", nargs="*", choices=sorted(BENCHMARKS), help="run these benchmarks only")
    ap.add_argument("--quick", action="store_true", help="tiny sizes: check the plumbing, numbers meaningless")
    ap.add_argument("--out", type=Path, default=None, help="results folder (default data/benchmarks)")
    ap.add_argument("--merge", action="store_true", help="replace only these benchmarks in the existing results")
    ap.add_argument("--args", nargs="*", default=[], metavar="NAME=ARGS",
                    help='sizes for one benchmark, e.g. rcts="--queries 6 --full 2" (instead of its defaults)')
    ap.add_argument("--child", choices=sorted(BENCHMARKS), help=argparse.SUPPRESS)
    ap.add_argument("--child-out", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("rest", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        run_child(args.child, args.rest, args.child_out)
        return 0
    names = args.only or list(BENCHMARKS)
    try:
        sizes = parse_sizes(args.args)
    except ValueError as err:
        ap.error(str(err))
    out_dir = args.out or (ROOT / "data" / "cache" / "benchmarks_quick" if args.quick else ROOT / "data" / "benchmarks")
    results = {"provenance": provenance(), "quick": args.quick, "benchmarks": {}}
    for name in names:
        bench_argv = shlex.split(sizes.get(name, QUICK_ARGS.get(name, "") if args.quick else ""))
        print(f"== {name}: {BENCHMARKS[name]}", flush=True)
        results["benchmarks"][BENCHMARKS[name]] = {**run_benchmark(name, bench_argv), "args": bench_argv}
        bench = results["benchmarks"][BENCHMARKS[name]]
        print(f"   {bench['seconds']:.0f} s" + (f", FAILED: {bench['error']}" if bench["error"] else ""), flush=True)
    results["provenance"]["load_average_end"] = load_average()
    existing = out_dir / "results.json"
    if args.merge and existing.exists():
        results = merge_results(json.loads(existing.read_text(encoding="utf-8")), results)
    json_path, md_path = write_results(results, out_dir)
    print(md_path.read_text(encoding="utf-8"))
    print(f"wrote {json_path.relative_to(ROOT) if json_path.is_relative_to(ROOT) else json_path} and {md_path.name}")
    return 1 if any(b["error"] for b in results["benchmarks"].values()) else 0


if __name__ == "__main__":
    sys.exit(main())
