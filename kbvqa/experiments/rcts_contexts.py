"""Script: a reasoning-context KB for the toy world's first N ``mc_kb`` pairs and its Tab. 6 table.

    python -m kbvqa.experiments.rcts_contexts --pairs 160 --out data/experiments/rcts_contexts

Builds the KB with the profile's ``ReasoningContextConfig`` (RCTS §3.2), measures the
reasoning-context accuracy (Tab. 6) of four context sources with one fresh greedy answer per pair
(no context, first candidate, chosen candidate, the toy world's worked solution = oracle), reads the
candidates with ``toy_context_checks``, and writes

- ``results.json``: provenance (commit, date, SHA-256 of the model weights, world seed and toy-world
  version, profile, threads, seconds), the config, ``summarize_build``, the accuracy of each source
  with its standard error sqrt(p(1-p)/n) and the letters answered, the gold letters, and the toy
  checks;
- ``kb.jsonl``: the records (``save_reasoning_kb``), for chapters that reuse them.

``load_results(folder)`` reads ``results.json`` back. Leaves out: plotting (the chapter draws).
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import math
import time
from collections import Counter
from dataclasses import asdict
from pathlib import Path

from kbvqa.config import DATA_DIR, get_profile, seed_everything
from kbvqa.data.schema import option_letters
from kbvqa.experiments.runs import git_commit
from kbvqa.parsers import parse_rcts_answer
from kbvqa.rcts.context_kb import (
    compare_context_sources,
    oracle_records,
    save_reasoning_kb,
    summarize_build,
    toy_context_checks,
)
from kbvqa.rcts.contexts import ReasoningContextConfig, build_reasoning_kb

RESULTS_DIR = DATA_DIR / "experiments" / "rcts_contexts"
SOURCES = ("no context", "first candidate (no check)", "chosen by self-consistency",
           "oracle (toy worked solution)")


def _weights_sha256(profile) -> str:
    if profile.is_gpu:
        from kbvqa.models.checkpoints import gpu_checkpoint

        return f"hub:{gpu_checkpoint('reasoner')}"
    digest = hashlib.sha256((DATA_DIR / "tiny_vlm" / "model.safetensors").read_bytes())
    return digest.hexdigest()


def answer_letters(pairs, predictions: list[str]) -> dict:
    """How often each option letter (or None: unparsed) was answered: a model that ignores its
    context answers the same letter whatever the context says."""
    counts = Counter(str(parse_rcts_answer(p, option_letters(len(q.options))).letter)
                     for q, p in zip(pairs, predictions))
    return dict(sorted(counts.items()))


def toy_check_summary(pairs, records) -> dict:
    """Shares of chosen / all candidates that read the key value, name the gold option or another
    option, and the mean Score_i of candidates that do or do not name the gold option."""
    rows = [(toy_context_checks(q, c.text), c.score, k == r.best_index)
            for q, r in zip(pairs, records) for k, c in enumerate(r.candidates) if c.score is not None]
    out = {}
    for name, keep in (("all", lambda chosen: True), ("chosen", lambda chosen: chosen)):
        sel = [checks for checks, _, chosen in rows if keep(chosen)]
        out[name] = {k: sum(c[k] for c in sel) / len(sel) for k in sel[0]} if sel else {}
    for flag in (True, False):
        scores = [s for checks, s, _ in rows if checks["names_gold_answer"] is flag]
        out[f"mean_score_names_gold_{str(flag).lower()}"] = sum(scores) / len(scores) if scores else None
        out[f"candidates_names_gold_{str(flag).lower()}"] = len(scores)
    return out


def run(n_pairs: int = 160, out: Path = RESULTS_DIR, seed: int = 0, threads: int = 1,
        progress: bool = True) -> dict:
    """Build, measure and write; returns the results dict."""
    import torch

    from kbvqa.data import TOYWORLD_VERSION, get_world
    from kbvqa.models import load_vlm

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
        "provenance": {"commit": git_commit(), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(
            timespec="seconds"), "weights_sha256": _weights_sha256(profile), "world_seed": 0,
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


def load_results(folder=RESULTS_DIR) -> dict:
    """``results.json`` of a committed run (``FileNotFoundError`` if it was never run)."""
    return json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))


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
