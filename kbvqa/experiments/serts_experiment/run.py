"""SeRTS experiments on the toy literature (Tab. 3, 4, 6 and 9 analogues): the script behind chapter 17.

The runner of ``python -m kbvqa.experiments.serts_experiment``: ``run_setup`` plays every chunk and
seed of one setup, ``write_run`` writes its ``runs/<setup>.jsonl``; ``main`` parses the command line,
runs the setups and writes the summary with its provenance.

Leaves out: what the experiment is, its setups and folder (this package's ``__init__``), the
methods, models and per-chunk records (``kbvqa.serts.experiment``), tables (``kbvqa.serts.results``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, replace
from pathlib import Path

from kbvqa.config import get_profile, seed_everything
from kbvqa.data.toyworld import get_world
from kbvqa.experiments.runs import provenance
from kbvqa.models.checkpoints import load_vlm
from kbvqa.serts.experiment import SETUPS, ExperimentConfig, experiment_questions, run_chunk
from kbvqa.serts.results import METHODS, RESULTS_DIR, print_tables, summarise, write_results


def run_setup(setup: str, world, vlm, config: ExperimentConfig, methods=METHODS, log=print) -> list[dict]:
    """All chunks and seeds of one setup (records in chunk, seed, method order)."""
    questions = experiment_questions(world, setup, config)
    records, t0 = [], time.perf_counter()
    for chunk, start in enumerate(range(0, len(questions), config.chunk)):
        cache = {}                       # per chunk: BM25 / gold answers are shared by its seeds
        for seed in config.seeds:
            records += run_chunk(setup, world, vlm, questions[start:start + config.chunk], seed, chunk, config,
                                 methods, cache)
        log(f"{setup}: {min(start + config.chunk, len(questions))}/{len(questions)} questions, "
            f"{time.perf_counter() - t0:.0f} s")
    return records


def write_run(path: Path, header: dict, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write(json.dumps({"header": header}) + "\n")
        for r in records:
            f.write(json.dumps(r) + "\n")


def main(argv=None) -> dict:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scripted-n", type=int, default=ExperimentConfig.scripted_n)
    parser.add_argument("--model-n", type=int, default=ExperimentConfig.model_n)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--setups", nargs="+", default=list(SETUPS), choices=SETUPS)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    seed_everything(0)
    config = replace(ExperimentConfig(), scripted_n=args.scripted_n, model_n=args.model_n)
    world, vlm = get_world(0), load_vlm("searcher", profile=get_profile("cpu"))
    t0, runs, times = time.perf_counter(), {}, {}
    for setup in args.setups:
        t = time.perf_counter()
        runs[setup] = run_setup(setup, world, vlm, config)
        times[setup] = round(time.perf_counter() - t, 1)
        write_run(args.out / "runs" / f"{setup}.jsonl", {"setup": setup, "config": asdict(config)}, runs[setup])
    prov = provenance(0, vlm, seeds=list(config.seeds), wall_seconds=round(time.perf_counter() - t0, 1),
                      setup_seconds=times,
                      command="python -m kbvqa.experiments.serts_experiment " + " ".join(argv or sys.argv[1:]))
    results = summarise(runs, config=asdict(config), provenance=prov)
    write_results(results, args.out)
    print_tables(results)
    return results


if __name__ == "__main__":
    main()
