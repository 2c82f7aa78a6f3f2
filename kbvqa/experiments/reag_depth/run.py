"""The runner of ``python -m kbvqa.experiments.reag_depth`` (see the package docstring).

Leaves out: retrieval, the generator's prompt and the switch rule (``kbvqa.reag.ladder``).
"""
from __future__ import annotations

import argparse
import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from kbvqa.config import DATA_DIR
from kbvqa.data import get_world
from kbvqa.experiments.plans import load_plan
from kbvqa.experiments.runs import provenance
from kbvqa.models.checkpoints import load_vlm, role_model
from kbvqa.reag.ladder import LadderConfig, heldout_queries, retrieval_depth

PART = "reag_depth"
OUT = DATA_DIR / "experiments" / PART


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(prog=f"python -m kbvqa.experiments.{PART}", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="folder with plan.json; results.json goes there")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    plan = load_plan(args.out)
    if plan is None:
        parser.exit(2, f"{args.out / 'plan.json'}: no plan; commit one first (kbvqa.experiments.plans)\n")
    torch.set_num_threads(args.threads)
    n, settings = plan["n"], plan["settings"]
    config = LadderConfig(seed=plan["seeds"][0], heldout_train=settings["heldout_train"],
                          batch_size=settings["batch_size"], max_new_tokens=settings["max_new_tokens"])
    world = get_world(0)
    queries = heldout_queries(world, config)[:n]
    t0 = time.perf_counter()
    out = retrieval_depth(load_vlm("rl_policy"), world, queries, config, ks=settings["ks"])
    results = {"part": PART, "summary": out["summary"], "query_ids": [q.id for q in queries],
               "config": asdict(replace(config, k=None)),
               "records": {str(k): v for k, v in out["records"].items()},
               "provenance": provenance(config.seed, model=role_model("rl_policy"), threads=args.threads,
                                        precision="fp32", wall_seconds=round(time.perf_counter() - t0, 1),
                                        command=f"python -m kbvqa.experiments.{PART}")}
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    print(json.dumps(out["summary"], indent=1))
    return results
