"""RCTS time per question on the reader's fast path (issue 49, item 6: goal >= 2.5x lower).

Today's path is what ``bench_rcts.py`` found best for the committed runs: fp32, no cross-prompt prefix
reuse, the leaves of a step simulated and rewarded in one batched call (``--leaves``, 5 there). The
fast path is the same search with ``share_prefix=True`` (a leaf's mutual prompts and sibling paths
prefill their common opening once, ``kbvqa.models.prefix``) on the reader at the fast precision this
machine can run (bf16 where ``computes_bf16``; fp32 elsewhere, so prefix reuse alone). Both search
the same ``--queries`` test questions without early stop (P = 10 leaves each), one thread, in one run.
The answers are compared too: greedy simulations agree up to floating-point noise, reward samples are
other draws of the same distribution.

Run: ``python benchmarks/bench_rcts_fast.py [--queries 2] [--leaves 5]``.
Leaves out: the cost table of every RCTS setting (``bench_rcts.py``), GPUs.
"""
from __future__ import annotations

import argparse
import time

import torch
from _timing import print_rows, row


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.models.loading import computes_bf16
    from kbvqa.rcts.mcts_hr import RCTSConfig, rcts_search
    from kbvqa.rcts.prompts import MCPromptBuilder
    from kbvqa.rcts.settings import load_retrieval
    from kbvqa.reader.ship import load_reader

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=2, help="test questions searched by each path")
    parser.add_argument("--leaves", type=int, default=5, help="leaves per step on both paths")
    args = parser.parse_args(argv)
    if args.queries < 1 or args.leaves < 1:
        parser.error("--queries and --leaves must be positive")
    torch.set_num_threads(1)
    world = get_world(0)
    builder = MCPromptBuilder(world)
    kb = {e.id: e for e in world.mc_kb}
    retrieval = load_retrieval(world)
    queries = [q for q in world.mc_test if q.id in retrieval["candidates"]][: args.queries]
    cands = {q.id: [(kb[i], s) for i, s in retrieval["candidates"][q.id]] for q in queries}
    fast_precision = "bf16" if computes_bf16(torch.device("cpu")) else "fp32"

    def search(vlm, cfg):
        start, answers = time.perf_counter(), []
        for q in queries:
            answers.append(rcts_search(vlm, q, cands[q.id], cfg, builder).answer)
        return (time.perf_counter() - start) / len(queries), answers

    today_cfg = RCTSConfig(early_stop=False, rollouts_per_step=args.leaves)
    today_s, today_answers = search(load_reader(precision="fp32"), today_cfg)
    fast_s, fast_answers = search(load_reader(precision=fast_precision),
                                  RCTSConfig(early_stop=False, rollouts_per_step=args.leaves, share_prefix=True))
    setting = f"{len(queries)} questions, P = 10, no early stop, {args.leaves} leaves/step, 1 thread"
    same = sum(a == b for a, b in zip(today_answers, fast_answers))
    return [row("today's path (fp32, batched): seconds per question", today_s, "s", kind="time", note=setting),
            row(f"fast path ({fast_precision}, shared prefix): seconds per question", fast_s, "s", kind="time"),
            row("RCTS time per question: today's path / fast path", today_s / fast_s, "x", (">=", 2.5),
                f"computes_bf16: {fast_precision == 'bf16'}"),
            row("final answers the same on both paths", f"{same} / {len(queries)}", kind="check",
                note="reward samples are other draws on the fast path")]


def main(argv=None) -> None:
    print_rows(rows(argv), "RCTS on the reader's fast path (issue 49)")


if __name__ == "__main__":
    main()
