"""ReAG's ablation ladder on the toy world (Tab. 4): the experiment script behind chapter 24.

Run ``python -m kbvqa.experiments.reag_ladder [--limit N] [--threads 1]``. Seven rungs, each adds
one component to the previous one (``RUNGS``):

    no retrieval (question + image) -> coarse (every passage of the top-k pages of the image)
    -> + critic (Eq. 4, P(Yes) > 0.1) -> + fine (crop of the grounded subject, merge by max)
    -> + SFT (answer only) -> + traces (cold start, Eq. 5, alpha = 0.8) -> + RL (GRPO, Eq. 6-9)

The first four rungs use the shipped generator zero-shot; the last three fix the retrieval
pipeline (coarse + fine + critic) and change the generator, trained inside the script with small
budgets (``LadderConfig``: critic 150 steps x 16, SFT and cold start 150 steps x 8, GRPO 30 steps
x 4 prompts x G = 4; CPU, one thread). Training data are the chapters' critic tuples of the
TRAIN split (evidence or a 70 % hard / 30 % soft negative, ``rl.cold_start_examples``); the
answer-only SFT uses the same tuples with ``<answer>y</answer>`` targets. Every rung is scored by the
official scorer of each question's kind (``kbvqa.metrics.official_correct``: InfoSeek's pointwise
score, E-VQA's multi-answer IoU; accuracy and InfoSeek's split score) on the same first N queries
of ``world.kbvqa_test``, greedy decoding. Three
diagnostic rungs, not in the paper (``ORACLE_RUNGS``), give the zero-shot, cold-start and GRPO
generators the evidence passage alone: the ceiling each generator reaches without noise.

Retrieval and critic scores are computed once per run and kept in ``evidence.json`` next to the
results (passage ids and P(Yes); no weights are saved: a pending training rung retrains, seeded,
from the shipped model). Each rung's records
go to ``runs/<rung>.jsonl`` under a fingerprint header (``kbvqa.experiments.runs.read_run``): a rerun with the
same settings skips finished rungs. ``kbvqa.reag.results`` turns the records into the table.

Leaves out: the settings, retrieval and critic scores, evaluation and the rungs' runs
(``kbvqa.reag.ladder``), training the critic and generators (``kbvqa.reag.ladder_train``), tables,
the paper's numbers and figures (``kbvqa.reag.results``); the gpu profile's real-data subset
(``kbvqa.reag.ladder.real_subset_ladder``: chapter 24 shows it, never run in the cpu profile).
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from kbvqa.reag.ladder import LadderConfig, load_evidence, run_rungs
from kbvqa.reag.results import RESULTS_DIR, RUNG_BY_NAME, Rung


# ------------------------------------------------------------------------------ the run
def rung_fingerprint(rung: Rung, config: LadderConfig) -> str:
    """What a rung's records depend on: retrieval/critic settings always, training budgets by kind."""
    fields = ["max_new_tokens"] if rung.oracle else ["k", "threshold", "critic_steps", "max_new_tokens"]
    if rung.generator in ("sft", "cold_start", "rl"):
        fields += ["sft_steps" if rung.generator == "sft" else "cold_steps", "alpha", "train_examples", "sft_lr"]
    if rung.generator == "rl":
        fields += ["grpo_steps", "group_size", "prompts_per_step", "grpo_lr"]
    return f"{rung.name}:{config.fingerprint(*fields)}"


def run_ladder(config: LadderConfig, out: Path = RESULTS_DIR, rungs=None,
               fresh: bool = False) -> tuple[dict[str, list[dict]], dict]:
    """The whole experiment: records of every rung in ``out/runs/`` (resumed unless ``fresh``) and a
    training log; returns ({rung: records}, log)."""
    from kbvqa.data import get_world
    from kbvqa.experiments.runs import resumed_run

    world = get_world(0)
    queries = list(world.kbvqa_test)[: config.limit]
    ids = [q.id for q in queries]
    runs_dir = Path(out) / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    finished, log = {}, {}
    for name in rungs or RUNG_BY_NAME:
        done = resumed_run(runs_dir / f"{name}.jsonl", rung_fingerprint(RUNG_BY_NAME[name], config), ids, fresh)
        if done:
            finished[name] = done[1]
    pending = len(finished) < len(rungs or RUNG_BY_NAME)
    evidence = load_evidence(world, queries, config, Path(out) / "evidence.json", log) if pending else {}

    def write(name, records):
        header = {"rung": name, "fingerprint": rung_fingerprint(RUNG_BY_NAME[name], config), "n": len(records)}
        lines = [json.dumps(header)] + [json.dumps(r, separators=(",", ":")) for r in records]
        (runs_dir / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"  {name}: {sum(r['correct'] for r in records)}/{len(records)} correct", flush=True)

    new = run_rungs(world, queries, evidence, config, rungs, log, done=finished, on_records=write)
    return {name: (finished.get(name) or new[name]) for name in (rungs or RUNG_BY_NAME)}, log


def main(argv=None) -> dict:
    from kbvqa.experiments.runs import resumable_parser

    parser = resumable_parser(__doc__.split("\n")[0], "--rungs", RUNG_BY_NAME, LadderConfig.limit,
                              "first N test queries", RESULTS_DIR, what="rungs")
    args = parser.parse_args(argv)
    import torch

    from kbvqa.config import seed_everything
    from kbvqa.experiments.runs import provenance
    from kbvqa.reag.results import print_table, summarise, write_results

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    config = LadderConfig(limit=args.limit, seed=args.seed)
    t0 = time.perf_counter()
    records, log = run_ladder(config, args.out, args.rungs, args.fresh)
    command = "python -m kbvqa.experiments.reag_ladder " + " ".join(argv if argv is not None else sys.argv[1:])
    earlier = json.loads((args.out / "results.json").read_text()) if (args.out / "results.json").exists() else {}
    earlier_prov = earlier.get("provenance", {})    # a resumed run keeps the earlier invocations' log and time
    invocations = earlier_prov.get("invocations", []) + ([{k: earlier_prov.get(k) for k in (
        "git_commit", "date", "command", "wall_seconds")}] if earlier_prov else [])
    results = summarise(records, config=asdict(config), training={**earlier.get("training", {}), **log},
                        provenance=provenance(args.seed, None, wall_seconds=round(time.perf_counter() - t0, 1),
                                              command=command.strip(), invocations=invocations))
    write_results(results, args.out)
    print_table(results)
    return results


if __name__ == "__main__":
    main()
