"""MOLT's training ablation (Tab. 5), schedule ablation (Tab. 6) and GRPO curves (Fig. 3) on the toy world.

The runner of ``python -m kbvqa.experiments.molt_training``: ``run_experiment`` plays the scripted
judges, evaluates the shipped judge zero-shot, trains the cold start (``train_cold_start``) and GRPO
with and without R_proc (``train_grpo``) and evaluates each, keeping every finished stage in a work
folder (``work.py``) so that a rerun resumes; ``main`` parses the command line, runs it and writes
the tables with their provenance (``wall_seconds``: this invocation's; the training log keeps
every stage's seconds, ``row_seconds`` for the evaluated rows, whichever invocation ran it).

Leaves out: what the experiment is, its rows and folder (this package's ``__init__``), the settings,
evaluation sets, scripted judges and evaluators (``kbvqa.molt.experiment``), tables (``kbvqa.molt.results``).
"""
from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from kbvqa.config import seed_everything
from kbvqa.data import get_world
from kbvqa.experiments.molt_training.work import default_work_root, run_fingerprint
from kbvqa.experiments.plans import apply_plan, check_counted_run
from kbvqa.experiments.runs import non_negative_int, positive_int, provenance
from kbvqa.experiments.work import WorkFolder, map_in_chunks, stage_checkpointing, trained_model
from kbvqa.models.checkpoints import load_vlm, role_model
from kbvqa.models.inference import inference_copy
from kbvqa.models.vlm import VLM
from kbvqa.molt.analysis import comparison_error, defender_win_share, role_gate
from kbvqa.molt.experiment import (
    ERRORS,
    TEACHERS,
    MOLTExperimentConfig,
    eval_sets,
    evaluate_one_pass,
    evaluate_one_shot,
    grpo_tasks,
    scripted_records,
    train_slices,
)
from kbvqa.molt.ladder import ORDERS
from kbvqa.molt.results import RESULTS_DIR, print_table, summarise, write_results
from kbvqa.molt.rewards import MOLTRewardConfig, molt_grpo_rewards
from kbvqa.molt.sft import ROLE_RULES, build_sft_set
from kbvqa.rl import GRPOConfig, SFTConfig, grpo_train, sft_train


def train_cold_start(world, config: MOLTExperimentConfig, vlm=None, log: dict | None = None,
                     work: WorkFolder | None = None):
    """The judge after ``sft_steps`` of SFT on the §3.2.1 set, its transcripts written by
    ``config.teacher``: the oracle, or the judge itself before training (``build_sft_set``'s model teacher).

    With a ``work`` folder a model teacher's transcripts are kept as soon as they are written and the
    SFT saves a checkpoint every 10 steps; a rerun takes both up (seconds add up across runs)."""

    vlm = vlm or load_vlm("judge")
    t0 = time.perf_counter()
    saved = (work.data("sft_transcripts") if work is not None else None) or {"seconds": 0.0, "transcripts": []}

    def keep_transcripts(written):             # a model teacher's transcripts, 128 queries at a time
        if work is not None:
            work.save_data("sft_transcripts", {"seconds": round(saved["seconds"] + time.perf_counter() - t0, 1),
                                               "transcripts": written})
    examples = build_sft_set(world, train_slices(world, config)["sft"], config=config.sft_data(),
                             teacher_model=vlm if config.teacher == "model" else None,
                             max_new_tokens=config.teacher_tokens, transcripts=saved["transcripts"] or None,
                             chunk=128, on_transcripts=keep_transcripts)
    teacher_s = saved["seconds"] + time.perf_counter() - t0
    checkpointing, before = stage_checkpointing(work, "cold")
    t1 = time.perf_counter()
    out = sft_train(vlm, examples, SFTConfig(alpha=0.5, steps=config.sft_steps, batch_size=8, lr=config.sft_lr,
                                             warmup_steps=10, seed=config.seed, progress=False, checkpoint_every=10),
                    **checkpointing)
    if log is not None:
        log["sft"] = {"steps": config.sft_steps, "teacher": config.teacher, "teacher_seconds": round(teacher_s, 1),
                      "loss_start": round(out.loss[0], 4),
                      "loss_end": round(sum(out.loss[-10:]) / len(out.loss[-10:]), 4),
                      "seconds": round(teacher_s + before + time.perf_counter() - t1, 1),
                      **teacher_defender_share([e.completion for e in examples])}
    return vlm


def teacher_defender_share(completions) -> dict:
    """How often the cold start's transcripts let the defender (the incumbent) win a round
    (``kbvqa.molt.defender_win_share``): the prior a student may take from them."""
    out = defender_win_share(completions)
    return {"teacher_defender_wins": out["defender"], "teacher_rounds": out["rounds"],
            "teacher_defender_share": None if out["share"] is None else round(out["share"], 4)}


def train_grpo(cold, world, config: MOLTExperimentConfig, with_proc: bool, log: dict | None = None,
               work: WorkFolder | None = None):
    """A copy of ``cold`` after GRPO with Eq. 8 (``with_proc=False``: lambda_2 = 0); its curves go to ``log``.
    With a ``work`` folder it saves a checkpoint every 2 steps and a rerun goes on from the last one."""

    name = "grpo_full" if with_proc else "grpo_no_proc"
    vlm = VLM.from_model(copy.deepcopy(cold.model), cold.processor)
    checkpointing, before = stage_checkpointing(work, name)
    t0 = time.perf_counter()
    cfg = GRPOConfig(group_size=config.group_size, prompts_per_step=config.prompts_per_step, steps=config.grpo_steps,
                     max_new_tokens=config.max_new_tokens, lr=config.grpo_lr, seed=config.seed, progress=False,
                     checkpoint_every=2)
    rewards = MOLTRewardConfig(lambda_proc=0.5 if with_proc else 0.0)
    tasks = grpo_tasks(world, config)
    curves = grpo_train(vlm, [t.prompt for t in tasks], tasks, cfg, **molt_grpo_rewards(rewards), **checkpointing)
    if log is not None:
        log[name] = {**curves.curves, "seconds": round(before + time.perf_counter() - t0, 1)}
    return vlm


# The judge's rows, in the order the experiment makes them (the scripted rows come before them).
JUDGE_ROWS = ["zero_shot_one_shot", "zero_shot_tournament", "sft_tournament", "grpo_no_proc_tournament",
              *[f"grpo_full_{order}" for order in ORDERS]]


def run_experiment(config: MOLTExperimentConfig, work: WorkFolder | None = None) -> tuple[dict, dict]:
    """{row name: records} for every row of Tab. 5/6 (the judge's and scripted) and the training log.

    With a ``work`` folder every finished row and trained judge is saved there at once and read back
    by a rerun (``work.py``): a run cut off by the end of a session goes on where it stopped."""

    world, rows = get_world(0), {}
    log = work.log() if work is not None else {}
    items_all = eval_sets(world, world.kbvqa_test, config.gap, config.seed)
    for error in ERRORS:
        for order in ORDERS:
            rows[f"scripted_{error}_{order}"] = scripted_records(items_all, order, error, config.seed)
    items = items_all[: config.limit]
    for name in JUDGE_ROWS:
        done = work.rows(name) if work is not None else None
        if done is not None:
            rows[name] = done
            print(f"  {name}: {sum(r['correct'] for r in done)}/{len(done)} (resumed)", flush=True)

    def step(name, evaluate):
        """Row ``name``: ``evaluate(items)`` 80 queries at a time (5 of the evaluation's batches of 16,
        so the records are those of one call), each chunk kept in ``work`` until the row is saved."""
        if name in rows:
            return
        rows[name], seconds = map_in_chunks(work, f"row_{name}", items, evaluate, chunk=80)
        log.setdefault("row_seconds", {})[name] = round(seconds, 1)
        if work is not None:
            work.save_rows(name, rows[name])
            work.save_log(log)
            work.drop_data(f"row_{name}")
        print(f"  {name}: {sum(r['correct'] for r in rows[name])}/{len(rows[name])} ({seconds:.0f} s)", flush=True)

    def pending(*names):
        return any(n not in rows for n in names)

    def trained(name, train):
        """The judge of stage ``name``: read back from ``work`` when a run saved it, else trained and saved."""
        return trained_model(work, name, train, lambda: load_vlm("judge"),
                             on_saved=lambda: work.save_log(log))

    if pending("zero_shot_one_shot", "zero_shot_tournament"):
        base = load_vlm("judge")
        step("zero_shot_one_shot", lambda part: evaluate_one_shot(base, part, config.seed))
        step("zero_shot_tournament", lambda part: evaluate_one_pass(base, part, "weak_to_strong", config, config.seed))
        del base
    no_proc_rows, full_rows = ["grpo_no_proc_tournament"], [f"grpo_full_{order}" for order in ORDERS]
    gate_items = eval_sets(world, train_slices(world, config)["gate"], config.gap, config.seed)

    def gate(name, judge) -> bool:
        """Issue 54's gate on the held-out train queries: the one-pass judge's records there (kept in
        ``work`` as row ``name``), ``role_gate`` and ``comparison_error`` (observed vs predicted) in
        ``log["gates"][name]``. True when it passed (always True without ``gate_queries``)."""
        if not gate_items:
            return True
        if name not in rows:
            rows[name], seconds = map_in_chunks(work, f"row_{name}", gate_items, lambda part: evaluate_one_pass(
                judge(), part, "weak_to_strong", config, config.seed), chunk=80)
            if work is not None:
                work.save_rows(name, rows[name])
                work.drop_data(f"row_{name}")
            log.setdefault("row_seconds", {})[name] = round(seconds, 1)
        error = comparison_error(rows[name])
        log.setdefault("gates", {})[name] = {**role_gate(rows[name], seed=config.seed),
                                             "observed": error["observed"], "predicted": error["predicted"],
                                             "eps": error["eps"]}
        if work is not None:
            work.save_log(log)
        g = log["gates"][name]
        print(f"  {name}: challenger {g['challenger']} vs defender {g['defender']} "
              f"(difference {g['difference']}, 95 % [{g['low']}, {g['high']}]) -> "
              f"{'passed' if g['passed'] else 'FAILED'}", flush=True)
        return g["passed"]

    if pending("sft_tournament", *no_proc_rows, *full_rows):
        cold = trained("cold", lambda: train_cold_start(world, config, log=log, work=work))
        if not gate("gate_sft", lambda: inference_copy(cold)):
            log["stopped"] = "gate_sft failed: no Tab. 5/6 row runs (issue 54)"
            return {name: rows[name] for name in rows if name.startswith("scripted_") or name in JUDGE_ROWS}, log
        kept = work.data("sft_transcripts") if work is not None else None
        if kept and "sft" in log and "teacher_defender_share" not in log["sft"]:    # a cold start of an older run
            log["sft"].update(teacher_defender_share([completion for completion, _ in kept["transcripts"]]))
        if pending("sft_tournament"):
            cold_reader = inference_copy(cold)          # merged for inference; ``cold`` stays the GRPO start
            step("sft_tournament", lambda part: evaluate_one_pass(cold_reader, part, "weak_to_strong", config,
                                                                  config.seed))
            del cold_reader
        if pending(*no_proc_rows):
            no_proc = trained("grpo_no_proc", lambda: train_grpo(cold, world, config, with_proc=False, log=log,
                                                                 work=work))
            no_proc = inference_copy(no_proc)
            step(no_proc_rows[0], lambda part: evaluate_one_pass(no_proc, part, "weak_to_strong", config, config.seed))
            del no_proc
        if pending(*full_rows):
            full = inference_copy(trained("grpo_full", lambda: train_grpo(cold, world, config, with_proc=True, log=log,
                                                                          work=work)))
            for order in ORDERS:
                step(f"grpo_full_{order}", lambda part, order=order: evaluate_one_pass(full, part, order, config,
                                                                                       config.seed))
            gate("gate_grpo", lambda: full)          # measured again after GRPO and reported, pass or fail
    return {name: rows[name] for name in [n for n in rows if n.startswith("scripted_")] + JUDGE_ROWS}, log


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limit", type=positive_int, default=MOLTExperimentConfig.limit,
                        help="test queries (tiny model)")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--teacher", choices=TEACHERS, default=MOLTExperimentConfig.teacher,
                        help="who writes the cold start's transcripts")
    parser.add_argument("--sft-roles", choices=ROLE_RULES, default=MOLTExperimentConfig.sft_roles,
                        help="'balanced': the challenger wins the cold start's rounds between two negatives, so "
                             "neither role wins more often (issue 54); 'teacher': the committed run's data")
    parser.add_argument("--sft-pairwise", type=non_negative_int, default=MOLTExperimentConfig.sft_pairwise_per_query,
                        help="rounds of each SFT ladder also given as a pairwise example in random order")
    parser.add_argument("--sft-queries", type=positive_int, default=MOLTExperimentConfig.sft_queries,
                        help="the first train queries the cold start's set is built from (issue 54: 1792)")
    parser.add_argument("--sft-steps", type=positive_int, default=MOLTExperimentConfig.sft_steps,
                        help="cold-start optimiser steps of 8 examples (issue 54: about 300)")
    parser.add_argument("--gate-queries", type=non_negative_int, default=MOLTExperimentConfig.gate_queries,
                        help="held-out train queries of issue 54's role gate, just before GRPO's 256 (0: no gate); "
                             "a failed gate stops the run before any Tab. 5/6 row")
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--out", default=str(RESULTS_DIR))
    parser.add_argument("--work", type=Path, default=default_work_root(),
                        help="where finished rows and trained judges are kept for a rerun to resume")
    parser.add_argument("--fresh", action="store_true", help="redo every stage (empties this run's work folder)")
    args = parser.parse_args(argv)
    apply_plan(args, Path(args.out), parser)          # a committed plan.json holds a counted run's sizes
    import torch

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    try:
        config = MOLTExperimentConfig(limit=args.limit, seed=args.seed, teacher=args.teacher, sft_roles=args.sft_roles,
                                      sft_pairwise_per_query=args.sft_pairwise, sft_queries=args.sft_queries,
                                      sft_steps=args.sft_steps, gate_queries=args.gate_queries)
        train_slices(get_world(0), config)
    except ValueError as e:
        parser.error(str(e))
    work = WorkFolder(args.work, run_fingerprint(config, role_model("judge")), fresh=args.fresh)
    print(f"work folder: {work.dir}", flush=True)
    t0 = time.perf_counter()
    records, log = run_experiment(config, work)
    if "stopped" in log:            # the gate failed: report it, and leave the committed tables alone
        report = Path(args.out) / "gate.json"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(json.dumps({"stopped": log["stopped"], "gates": log["gates"], "config": asdict(config),
                                      "training": log, "provenance": provenance(
                                          args.seed, model=role_model("judge"),
                                          wall_seconds=round(time.perf_counter() - t0, 1))}, indent=1) + "\n")
        print(f"{log['stopped']}; the gate's report is in {report}", flush=True)
        return {"stopped": log["stopped"], "gates": log["gates"]}
    command = "python -m kbvqa.experiments.molt_training " + " ".join(argv if argv is not None else sys.argv[1:])
    results = summarise(records, config=asdict(config), training=log,
                        provenance=provenance(args.seed, model=role_model("judge"),
                                              wall_seconds=round(time.perf_counter() - t0, 1),
                                              command=command.strip()))
    check_counted_run(args.out, RESULTS_DIR, records, results["provenance"])       # plan.json
    write_results(results, records, args.out)
    print_table(results)
    return results


if __name__ == "__main__":
    main()
