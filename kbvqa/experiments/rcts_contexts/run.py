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
from kbvqa.experiments.runs import git_commit, model_fingerprint, non_negative_int, positive_int
from kbvqa.models import load_vlm
from kbvqa.rcts.context_kb import (
    RESULTS_DIR,
    answer_letters,
    append_reasoning_kb,
    compare_context_sources,
    load_reasoning_kb,
    load_reasoning_kb_config,
    oracle_records,
    reasoning_kb_meta,
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
                         "answer_letters": answer_letters(pairs, v.predictions),
                         "correct": [int(c) for c in v.correct]}       # per pair, in mc_kb order: live checks
                     for k, v in table.items()},
        "gold_letters": dict(sorted(Counter(q.answer for q in pairs).items())),
        "toy_checks": toy_check_summary(pairs, records)}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    save_reasoning_kb(out / "kb.jsonl", records, cfg, meta=results["provenance"])
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return results


RCTS_KB = RESULTS_DIR / "kb_rcts.jsonl"


def candidate_pairs(world, retrieval: dict, n_queries: int) -> list:
    """The ``mc_kb`` pairs among the retrieved candidates of the first ``n_queries`` ``mc_test``
    questions (``retrieval``: ``kbvqa.rcts.settings.load_retrieval``), in ``mc_kb`` order: every
    example an RCTS row on those questions can put in a prompt."""
    if n_queries < 1:
        raise ValueError(f"n_queries must be >= 1, got {n_queries}")
    wanted = {i for q in world.mc_test[:n_queries] for i, _ in retrieval["candidates"].get(q.id, [])}
    return [e for e in world.mc_kb if e.id in wanted]


def build_for_queries(n_queries: int, out: Path = RCTS_KB, seed: int = 0, threads: int = 1, chunk: int = 64,
                      vlm=None, progress: bool = True, **overrides) -> Path:
    """The reasoning-context KB the RCTS rows read (``rcts_toy --contexts``): a record for every
    candidate of the first ``n_queries`` test questions (``candidate_pairs``), built by the
    ``reasoner`` role's model with the profile's ``ReasoningContextConfig`` (``overrides`` change it,
    e.g. ``n_candidates=2``), ``chunk`` pairs at a time appended to ``out``: an interrupted build goes
    on where it stopped (the same config and model, else it starts again)."""
    import torch
    from tqdm.auto import tqdm

    from kbvqa.config import progress_enabled
    from kbvqa.rcts.settings import load_retrieval

    torch.set_num_threads(threads)
    seed_everything(seed)
    world = get_world(0)
    vlm = vlm or load_vlm("reasoner")
    cfg = ReasoningContextConfig.for_profile(get_profile(), seed=seed, **overrides)
    pairs = candidate_pairs(world, load_retrieval(world), n_queries)
    model, out = model_fingerprint(vlm), Path(out)
    done: set[str] = set()
    if out.exists() and load_reasoning_kb_config(out) == cfg and reasoning_kb_meta(out).get("model") == model:
        done = {r.query_id for r in load_reasoning_kb(out)}
    else:
        save_reasoning_kb(out, [], cfg, meta={"commit": git_commit(), "model": model, "seed": seed,
                                              "toyworld_version": TOYWORLD_VERSION, "n_queries": n_queries,
                                              "command": f"python -m kbvqa.experiments.rcts_contexts "
                                                         f"--for-queries {n_queries} --seed {seed}"})
    todo = [p for p in pairs if p.id not in done]
    with tqdm(total=len(todo), desc="contexts", disable=not progress_enabled(progress) or not todo) as bar:
        for start in range(0, len(todo), chunk):
            part = todo[start:start + chunk]
            append_reasoning_kb(out, build_reasoning_kb(vlm, part, cfg, progress=False))
            bar.update(len(part))
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pairs", type=positive_int, default=160, help="first N mc_kb pairs")
    parser.add_argument("--for-queries", type=positive_int, default=None,
                        help="instead: build only the KB the RCTS rows read (kb_rcts.jsonl) for the "
                             "candidates of the first N test questions, resumable")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=INT",
                        help="ReasoningContextConfig overrides for --for-queries, e.g. n_candidates=2")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR,
                        help="the results folder (with --for-queries: the folder of kb_rcts.jsonl)")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--threads", type=positive_int, default=1)
    args = parser.parse_args(argv)
    if args.set and args.for_queries is None:
        parser.error("--set applies to --for-queries only: add --for-queries N (without it the Tab. 6 run would "
                     "ignore the overrides and rewrite the committed table)")
    if args.for_queries is not None:
        overrides = {}
        for item in args.set:
            key, _, value = item.partition("=")
            if key not in ReasoningContextConfig.__dataclass_fields__ or not value.lstrip("-").isdigit():
                parser.error(f"--set takes KEY=INT with KEY a ReasoningContextConfig field, got {item!r}")
            overrides[key] = int(value)
        print(build_for_queries(args.for_queries, out=args.out / RCTS_KB.name, seed=args.seed, threads=args.threads,
                                **overrides))
        return
    results = run(args.pairs, args.out, args.seed, args.threads)
    print(json.dumps({k: results[k] for k in ("build", "accuracy")}, indent=1))


if __name__ == "__main__":
    main()
