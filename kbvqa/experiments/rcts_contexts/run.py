"""Script: a reasoning-context KB for the toy world's first N ``mc_kb`` pairs and its Tab. 6 table.

The runner of ``python -m kbvqa.experiments.rcts_contexts``: ``run`` builds the KB, compares the
four context sources (``SOURCES``) and writes ``results.json`` and ``kb.jsonl`` with their
provenance; ``main`` is its command line.

Leaves out: what the experiment is and what it writes (this package's ``__init__``), building and
reading the KB, its summaries and checks (``kbvqa.rcts.contexts``, ``kbvqa.rcts.context_kb``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from kbvqa.config import get_profile, seed_everything
from kbvqa.data import TOYWORLD_VERSION, get_world
from kbvqa.experiments.runs import git_commit, model_fingerprint
from kbvqa.models import load_vlm
from kbvqa.rcts.context_kb import (
    RESULTS_DIR,
    answer_letters,
    compare_context_sources,
    oracle_records,
    save_reasoning_kb,
    summarize_build,
    toy_check_summary,
)
from kbvqa.rcts.contexts import ReasoningContextConfig, build_reasoning_kb

SOURCES = ("no context", "first candidate (no check)", "chosen by self-consistency",
           "oracle (toy worked solution)")


def run(n_pairs: int = 160, out: Path = RESULTS_DIR, seed: int = 0, threads: int = 1,
        progress: bool = True) -> dict:
    """Build, measure and write; returns the results dict."""
    import torch

    if n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1, got {n_pairs}")
    torch.set_num_threads(threads)
    seed_everything(seed)
    profile = get_profile()
    world, vlm = get_world(0), load_vlm("reasoner")
    cfg = ReasoningContextConfig.for_profile(profile, seed=seed)
    pairs = world.mc_kb[:n_pairs]
    start = time.perf_counter()
    records = build_reasoning_kb(vlm, pairs, cfg, progress=progress)
    build_s = time.perf_counter() - start
    contexts = [[""] * len(pairs), [r.candidates[0].text for r in records], records, oracle_records(pairs)]
    table = compare_context_sources(vlm, pairs, dict(zip(SOURCES, contexts)), cfg, seed=seed)
    n = len(pairs)
    results = {
        "provenance": {"commit": git_commit(), "date": datetime.datetime.now(datetime.UTC).isoformat(
            timespec="seconds"), "model": model_fingerprint(vlm), "world_seed": 0,
            "toyworld_version": TOYWORLD_VERSION, "profile": profile.name, "threads": threads,
            "build_seconds": round(build_s, 1), "total_seconds": round(time.perf_counter() - start, 1),
            "command": f"python -m kbvqa.experiments.rcts_contexts --pairs {n_pairs} --seed {seed}"},
        "pairs": n, "split": "mc_kb", "config": asdict(cfg), "build": summarize_build(records),
        "accuracy": {k: {"accuracy": v.accuracy, "stderr": math.sqrt(v.accuracy * (1 - v.accuracy) / n),
                         "answer_letters": answer_letters(pairs, v.predictions)} for k, v in table.items()},
        "gold_letters": dict(sorted(Counter(q.answer for q in pairs).items())),
        "toy_checks": toy_check_summary(pairs, records)}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_reasoning_kb(out / "kb.jsonl", records, cfg, meta=results["provenance"])
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=int, default=160, help="first N mc_kb pairs")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    results = run(args.pairs, args.out, args.seed, args.threads)
    print(json.dumps({k: results[k] for k in ("build", "accuracy")}, indent=1))


if __name__ == "__main__":
    main()
