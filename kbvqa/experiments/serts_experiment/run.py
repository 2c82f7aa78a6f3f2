"""SeRTS experiments on the toy literature (Tab. 3, 4, 6 and 9 analogues): the script behind chapter 17.

The runner of ``python -m kbvqa.experiments.serts_experiment``: ``run_setup`` plays every chunk and
seed of one setup, appending each to its ``runs/<setup>.jsonl`` as it finishes, and a rerun resumes
from the ones there (``resumed_units``: same setup, settings and model); ``main`` parses the command
line, runs the setups and writes the summary with its provenance (``setup_seconds``: this run's). A
setup another call ran (with its own seeds and chunks: ``setup_configs``) joins the summary when the
same model made its records (``kbvqa.serts.results.read_run``), so each setup can run with the settings it needs.

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
from kbvqa.data.toy_config import ToyWorldConfig
from kbvqa.data.toyworld import get_world
from kbvqa.experiments.plans import apply_plan, check_counted_run
from kbvqa.experiments.runs import model_fingerprint, non_negative_int, positive_int, provenance
from kbvqa.models.checkpoints import load_vlm
from kbvqa.serts.experiment import SETUPS, ExperimentConfig, experiment_questions, run_chunk
from kbvqa.serts.results import METHODS, RESULTS_DIR, print_tables, read_run, summarise, write_results


def run_setup(setup: str, world, vlm, config: ExperimentConfig, methods=METHODS, log=print,
              path: Path | None = None) -> list[dict]:
    """All chunks and seeds of one setup (records in chunk, seed, method order). With ``path`` (its
    ``runs/<setup>.jsonl``) every finished (chunk, seed) is appended at once and a rerun of the same
    setup, settings and model (the file's header, but for the sizes ``RESUME_IGNORES``) skips the ones
    already there: resumable, and a larger ``model_n`` or more seeds extend a run instead of restarting it."""
    questions = experiment_questions(world, setup, config)
    header = {"setup": setup, "config": asdict(config), "model": model_fingerprint(vlm),
              "methods": [m.name for m in methods]}
    if world.config.abstract_alias_share:        # another corpus: its own header (never resumed into)
        header["abstract_alias_share"] = world.config.abstract_alias_share
    starts = list(range(0, len(questions), config.chunk))
    sizes = {chunk: len(questions[start:start + config.chunk]) for chunk, start in enumerate(starts)}
    done = resumed_units(path, header, len(methods), sizes) if path is not None else {}
    if path is not None:
        write_run(path, header, [r for unit in sorted(done) for r in done[unit]])
    records, t0 = [], time.perf_counter()
    for chunk, start in enumerate(starts):
        cache = {}                       # per chunk: BM25 / gold answers are shared by its seeds
        for seed in config.seeds:
            if (chunk, seed) in done:
                records += done[(chunk, seed)]
                continue
            new = run_chunk(setup, world, vlm, questions[start:start + config.chunk], seed, chunk, config,
                            methods, cache)
            records += new
            if path is not None:
                with path.open("a") as f:
                    f.write("".join(json.dumps(r) + "\n" for r in new))
        log(f"{setup}: {min(start + config.chunk, len(questions))}/{len(questions)} questions, "
            f"{time.perf_counter() - t0:.0f} s" + (f" ({len(done)} chunk-seeds resumed)" if done else ""))
    return records


# settings that decide how many units a run has, not what a unit holds: chunk k is the same questions of the
# held-out list (k * chunk onwards) whatever n is, and each (chunk, seed) seeds its own models
RESUME_IGNORES = ("scripted_n", "model_n", "seeds")


def _resume_key(header: dict) -> dict:
    """``header`` without the sizes ``RESUME_IGNORES`` (JSON-normalised: tuples come back as lists)."""
    key = json.loads(json.dumps(header))
    key["config"] = {k: v for k, v in key.get("config", {}).items() if k not in RESUME_IGNORES}
    if not key["config"].get("share_prefix", False):   # runs made before the option resume under it
        key["config"].pop("share_prefix", None)
    return key


def resumed_units(path: Path, header: dict, n_methods: int, sizes: dict[int, int]) -> dict[tuple, list[dict]]:
    """{(chunk, seed): records} of the units a previous run wrote to ``path`` in full (one record per
    method and question of the chunk) under the same ``header`` but for its sizes (``_resume_key``);
    {} for another header or no file. A line cut by a killed run is ignored, and so is its unit; so are
    chunks and seeds this run does not have (``sizes``, ``header["config"]["seeds"]``)."""
    if not Path(path).exists():
        return {}
    lines = Path(path).read_text().splitlines()
    try:
        if _resume_key(json.loads(lines[0])["header"]) != _resume_key(header):
            return {}
    except (IndexError, ValueError, KeyError, TypeError):
        return {}
    units: dict[tuple, list[dict]] = {}
    for line in lines[1:]:
        try:
            r = json.loads(line)
        except ValueError:
            continue
        units.setdefault((r["chunk"], r["seed"]), []).append(r)
    seeds = set(header["config"]["seeds"])
    return {u: rs for u, rs in units.items()
            if u[0] in sizes and u[1] in seeds and len(rs) == n_methods * sizes[u[0]]}


def write_run(path: Path, header: dict, records: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as f:
        f.write(json.dumps({"header": header}) + "\n")
        for r in records:
            f.write(json.dumps(r) + "\n")


def main(argv=None) -> dict:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scripted-n", type=positive_int, default=ExperimentConfig.scripted_n)
    parser.add_argument("--model-n", type=positive_int, default=ExperimentConfig.model_n)
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--setups", nargs="+", default=list(SETUPS), choices=SETUPS)
    parser.add_argument("--methods", nargs="+", default=[m.name for m in METHODS], choices=[m.name for m in METHODS],
                        help="a subset of the methods (on the reader each searching method costs ~24 calls "
                             "per question and seed)")
    parser.add_argument("--seeds", nargs="+", type=non_negative_int, default=list(ExperimentConfig.seeds))
    parser.add_argument("--chunk", type=positive_int, default=ExperimentConfig.chunk,
                        help="questions searched together")
    parser.add_argument("--share-prefix", action="store_true",
                        help="prefill the proposer's and grader's common opening once (same text up to "
                             "floating-point noise; off for the committed runs)")
    parser.add_argument("--abstract-alias-share", type=float, default=0.0,
                        help="share of abstracts that introduce a second name, 'X (Y)' (issue 55; "
                             "ToyWorldConfig.abstract_alias_share, 0 = the committed corpus)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    args = parser.parse_args(argv)
    try:
        world_config = replace(ToyWorldConfig(), abstract_alias_share=args.abstract_alias_share)
    except ValueError as e:
        parser.error(str(e))
    apply_plan(args, args.out, parser, rows_attr="methods", limit_attr="model_n")     # plan.json's sizes
    torch.set_num_threads(args.threads)
    seed_everything(0)
    config = replace(ExperimentConfig(), scripted_n=args.scripted_n, model_n=args.model_n, seeds=tuple(args.seeds),
                     chunk=args.chunk, share_prefix=args.share_prefix)
    methods = tuple(m for m in METHODS if m.name in args.methods)
    world, vlm = get_world(0, world_config), load_vlm("searcher", profile=get_profile("cpu"))
    t0, runs, times, configs = time.perf_counter(), {}, {}, {}
    for setup in args.setups:
        t = time.perf_counter()
        runs[setup] = run_setup(setup, world, vlm, config, methods, path=args.out / "runs" / f"{setup}.jsonl")
        times[setup], configs[setup] = round(time.perf_counter() - t, 1), asdict(config)
    for setup in (s for s in SETUPS if s not in runs):   # another call's setup (its own seeds and chunks),
        path = args.out / "runs" / f"{setup}.jsonl"                                # if the same model made it
        header, records = read_run(path) if path.exists() else ({}, [])
        if records and header.get("model") == model_fingerprint(vlm):
            runs[setup], configs[setup] = records, header["config"]
        elif records:
            print(f"{setup}: its records were made by {header.get('model')}, not this model; left out")
    prov = provenance(0, vlm, seeds=list(config.seeds), wall_seconds=round(time.perf_counter() - t0, 1),
                      setup_seconds=times, setup_configs=configs,
                      **({"abstract_alias_share": args.abstract_alias_share} if args.abstract_alias_share else {}),
                      command="python -m kbvqa.experiments.serts_experiment " + " ".join(argv or sys.argv[1:]))
    check_counted_run(args.out, RESULTS_DIR, [r for recs in runs.values() for r in recs], prov)   # plan.json
    results = summarise(runs, config=asdict(config), provenance=prov)
    write_results(results, args.out)
    print_tables(results)
    return results


if __name__ == "__main__":
    main()
