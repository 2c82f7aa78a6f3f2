"""The runner of ``python -m kbvqa.experiments.serts_roles`` (see the package docstring).

Leaves out: the examples and the measures (``kbvqa.serts.role_data``), the training loop (``kbvqa.rl``).
"""
from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from dataclasses import replace
from pathlib import Path

import torch

from kbvqa.config import DATA_DIR
from kbvqa.data import get_world
from kbvqa.data.toy_config import ToyWorldConfig
from kbvqa.experiments.plans import load_plan
from kbvqa.experiments.runs import provenance
from kbvqa.experiments.work import WorkFolder, default_work_root, stage_checkpointing, trained_model, work_fingerprint
from kbvqa.models.checkpoints import load_vlm, role_model
from kbvqa.serts.role_data import (
    ROLES,
    RoleDataConfig,
    evaluate_grader,
    evaluate_proposer,
    heldout_examples,
    role_examples,
)

PART = "serts_roles"
OUT = DATA_DIR / "experiments" / PART
GOALS = {"proposer": "recall gain with ancestors in the prompt > the shipped reader's, well formed >= 0.9",
         "grader": "Spearman of grade and rubric > the shipped reader's"}


def training_set(world, role: str, training: dict) -> list:
    """``n_examples`` examples: the role's (training questions) and, for ``replay_share`` of them, the
    reader's own mixture on the default world (mixture replay), interleaved by a seeded draw."""
    from kbvqa.reader import tasks

    n, share = training["n_examples"], training["replay_share"]
    rng = random.Random(f"serts_roles:{training['seed']}:{role}")
    own = iter(role_examples(world, role, n, RoleDataConfig(seed=training["seed"])))
    replay = tasks.iter_reader_examples(get_world(0), tasks.mix_config(112, training["seed"]), tasks.READER_WEIGHTS)
    return [next(replay) if rng.random() < share else next(own) for _ in range(n)]


def _measure(role: str, vlm, world, examples) -> dict:
    return evaluate_proposer(vlm, world, examples) if role == "proposer" else evaluate_grader(vlm, world, examples)


def _row(work: WorkFolder, name: str, measure) -> dict:
    kept = work.rows(name)
    if kept is None:
        t = time.perf_counter()
        kept = [{**measure(), "seconds": round(time.perf_counter() - t, 1)}]
        work.save_rows(name, kept)
    print(f"{name}: { {k: v for k, v in kept[0].items() if k != 'records'} }", flush=True)
    return kept[0]


def role_stage(role: str, world, work: WorkFolder, plan: dict, log: dict) -> dict:
    """{"<role>_before", "<role>_after"} rows of one role, its adapter trained (or read back) between them."""
    from kbvqa.rl.sft import SFTConfig, sft_train

    training = plan["training"]
    examples = heldout_examples(world, role, plan["n"][f"{role}_before"])
    lora = {"r": training["lora_r"], "alpha": 2 * training["lora_r"]}
    rows = {f"{role}_before": _row(work, f"{role}_before",
                                   lambda: _measure(role, load_vlm("searcher"), world, examples))}
    kwargs, before = stage_checkpointing(work, role)

    def train():
        vlm, t = load_vlm("searcher"), time.perf_counter()
        sft = SFTConfig(alpha=1.0, steps=training["steps"], batch_size=training["batch_size"], lr=training["lr"],
                        warmup_steps=max(1, training["steps"] // 20), lora=lora, seed=training["seed"],
                        checkpoint_every=training["checkpoint_every"], gradient_checkpointing=False)
        result = sft_train(vlm, training_set(world, role, training), sft, **kwargs)
        log[role] = {"seconds": round(before + time.perf_counter() - t, 1), "loss": result.loss,
                     "steps": result.steps}
        return vlm

    tuned = trained_model(work, role, train, lambda: load_vlm("searcher"), on_saved=lambda: work.save_log(log),
                          lora=lora, freeze_vision=True)
    tuned.model.eval()
    rows[f"{role}_after"] = _row(work, f"{role}_after", lambda: _measure(role, tuned, world, examples))
    return rows


def run(plan: dict, out: Path, work_root: Path, threads: int) -> dict:
    torch.set_num_threads(threads)
    training = plan["training"]
    world = get_world(0, replace(ToyWorldConfig(), abstract_alias_share=plan["abstract_alias_share"]))
    model = role_model("searcher")
    work = WorkFolder(work_root, work_fingerprint({"plan": plan, "model": model}))
    print(f"work folder: {work.dir}", flush=True)
    t0, rows, log = time.perf_counter(), {}, work.log()
    for role in ROLES:
        rows.update(role_stage(role, world, work, plan, log))
    log = work.log()
    results = {"part": PART, "goals": GOALS, "abstract_alias_share": plan["abstract_alias_share"],
               "rows": {k: {f: v for f, v in r.items() if f != "records"} for k, r in rows.items()},
               "records": {k: r["records"] for k, r in rows.items()}, "training": training,
               "curves": {role: log.get(role, {}) for role in ROLES},
               "provenance": provenance(training["seed"], model=model, threads=threads, precision="fp32",
                                        wall_seconds=round(time.perf_counter() - t0, 1),
                                        command=f"python -m kbvqa.experiments.{PART}")}
    (out / "models").mkdir(parents=True, exist_ok=True)
    for role in ROLES:
        shutil.copyfile(work.dir / "models" / f"{role}.pt", out / "models" / f"{role}.pt")
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m kbvqa.experiments.{PART}", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="folder with plan.json; results.json goes there")
    parser.add_argument("--work", type=Path, default=None, help="work folder root (default: the cache)")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    plan = load_plan(args.out)
    if plan is None:
        parser.exit(2, f"{args.out / 'plan.json'}: no plan; commit one first (kbvqa.experiments.plans)\n")
    results = run(plan, args.out, args.work or default_work_root(PART), args.threads)
    print(json.dumps(results["rows"], indent=1))
