"""The runner of ``python -m kbvqa.experiments.serts_ppo``: trajectories, PPO, the proposer's recall.

``run_experiment`` plays the stages of ``kbvqa.serts.ppo_experiment`` in order, each kept in a work
folder (``kbvqa.experiments.work``) as it ends, so a rerun goes on from the first one missing: the
trajectories (``map_in_chunks``, ``chunk`` questions at a time), the untuned proposer's row, then per
reward the PPO adapters (checkpointed inside) and their row. ``main`` parses the command line and
writes ``results.json`` with its provenance.

Leaves out: what the stages do (``kbvqa.serts.ppo_experiment``), the chapter's figures (chapter 18).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

import numpy as np

from kbvqa.config import seed_everything
from kbvqa.data.toyworld import get_world
from kbvqa.experiments.runs import non_negative_int, positive_int, provenance
from kbvqa.experiments.work import WorkFolder, default_work_root, map_in_chunks, work_fingerprint
from kbvqa.models.checkpoints import load_vlm, role_model
from kbvqa.models.inference import inference_copy
from kbvqa.models.pretrain_mc_lit import lit_question_split
from kbvqa.rl.ppo import BASELINES
from kbvqa.serts import ppo_experiment as stages
from kbvqa.serts.ppo_experiment import RESULTS_DIR, REWARDS, PPORunConfig, root_queries, summarise, train_ppo


def run_experiment(config: PPORunConfig, work: WorkFolder | None = None, log=print) -> dict:
    """The three stages; returns ``{"trajectories": summary, "steps": {...}, "rows": {...}, "records": {...}}``."""
    world = get_world(0)
    train_qs = lit_question_split(world)[0][:config.n_train]
    test_qs = lit_question_split(world)[1][:config.n_test]
    vlm = load_vlm("searcher")
    per_question, seconds = map_in_chunks(work, "trajectories", train_qs,
                                          lambda part: stages.collect(world, vlm, part, config), config.chunk)
    trajectories = [t for nodes in per_question for t in nodes]
    log(f"collect: {len(trajectories)} trajectories from {len(train_qs)} questions, {seconds:.0f} s")
    rows, steps = {}, {}
    rows["base"] = (work.rows("base") if work is not None else None) or root_queries(world, vlm, test_qs, config)
    if work is not None:
        work.save_rows("base", rows["base"])
    for reward in config.rewards:
        name = f"ppo_{reward}"
        policy, steps[name] = train_ppo(trajectories, reward, config, work, log)
        rows[name] = (work.rows(name) if work is not None else None) or root_queries(world, inference_copy(policy),
                                                                                    test_qs, config)
        if work is not None:
            work.save_rows(name, rows[name])
        log(f"{name}: greedy recall {np.mean([r['greedy_recall'] for r in rows[name]]):.3f}")
    kept = ("question_id", "depth", "evaluator", "rubric", "recall", "well_formed")   # no prompts: they stay in work
    return {"trajectories": stages.trajectory_summary(trajectories), "steps": steps, "rows": summarise(rows),
            "records": rows, "trajectory_records": [{k: t[k] for k in kept} for t in trajectories],
            "collect_seconds": round(seconds, 1)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-train", type=positive_int, default=PPORunConfig.n_train)
    parser.add_argument("--n-test", type=positive_int, default=PPORunConfig.n_test)
    parser.add_argument("--sim", type=positive_int, default=PPORunConfig.sim)
    parser.add_argument("--rewards", nargs="+", default=list(REWARDS), choices=REWARDS)
    parser.add_argument("--seed", type=non_negative_int, default=PPORunConfig.seed)
    parser.add_argument("--baseline", default=PPORunConfig.baseline,
                        help=f"PPO's reward baseline, one of {BASELINES}: App. C.4's constant 3.75 (default), the "
                             "batch's mean reward, or mean and standard deviation (issue 55)")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--work", type=Path, default=default_work_root("serts_ppo"))
    parser.add_argument("--fresh", action="store_true", help="redo every stage (empties this run's work folder)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    config = PPORunConfig(n_train=args.n_train, n_test=args.n_test, sim=args.sim, rewards=tuple(args.rewards),
                          seed=args.seed, baseline=args.baseline)    # an unknown baseline: ValueError naming them
    model = role_model("searcher")
    settings = asdict(config)
    if settings["baseline"] == "constant":         # the runs before the option keep their work folders
        settings.pop("baseline")
    work = WorkFolder(args.work, work_fingerprint({"config": settings, "model": model}), fresh=args.fresh)
    print(f"work folder: {work.dir}", flush=True)
    t0 = time.perf_counter()
    result = run_experiment(config, work)
    command = "python -m kbvqa.experiments.serts_ppo " + " ".join(argv if argv is not None else sys.argv[1:])
    result.update(config=asdict(config), provenance=provenance(args.seed, model=model, command=command.strip(),
                                                               wall_seconds=round(time.perf_counter() - t0, 1)))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    for name, row in result["rows"].items():
        print(name, {k: v for k, v in row.items() if not isinstance(v, dict)}, row.get("sample_recall_diff"))
    return result
