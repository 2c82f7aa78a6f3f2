"""Benchmark of ReAG's critic (issue "ReAG part", Efficiency): passages scored per second, batched
vs one at a time.

The critic reads P(Yes) from one forward pass per prompt (Eq. 4); ``Critic.score_many`` puts the
passages of many queries into left-padded batches of ``batch_size`` prompts, the naive loop calls
the model once per passage. The passages are what the pipeline gives the critic: every passage of
the top-k pages of coarse retrieval for a few toy-world test queries. The target is the *ratio*
measured in this run (absolute speeds depend on the machine and its load); the batched result
must equal the one-at-a-time result. ``rows()`` returns the measurements, ``main`` prints them.

Run: ``python benchmarks/bench_critic.py [--queries 4] [--k 2] [--threads 1]``.
"""
from __future__ import annotations

import argparse

import torch
from _timing import best_of, print_rows, row


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.models.tiny import load_tiny_vlm
    from kbvqa.reag.critic import Critic, CriticConfig
    from kbvqa.reag.critic_eval import critic_items

    ap = argparse.ArgumentParser(description="Critic throughput: batched vs one passage at a time.")
    ap.add_argument("--queries", type=int, default=4, help="toy-world test queries")
    ap.add_argument("--k", type=int, default=2, help="pages per query (8 passages each)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    world, vlm = get_world(0), load_tiny_vlm()
    items = critic_items(world, n=args.queries, k=args.k)
    n = sum(len(p) for _, p in items)
    timed, scores = [], {}
    for batch_size in (16, 32):
        critic = Critic(vlm, CriticConfig(batch_size=batch_size))
        critic.score_many(items[:1])                                     # warm-up
        seconds, scores[batch_size] = best_of(lambda c=critic: c.score_many(items), repeats=2)
        timed.append((f"batched, {batch_size} prompts per pass", seconds))
    single_critic = Critic(vlm, CriticConfig(batch_size=1))
    seconds, single = best_of(lambda: [[single_critic.score(q, [p])[0] for p in ps] for q, ps in items], repeats=1)
    flat = [s for row_ in single for s in row_]
    gap = max(abs(a - b) for a, b in zip(flat, [s for row_ in scores[16] for s in row_]))
    setting = f"{n} passages ({args.queries} queries x {args.k} pages), {args.threads} thread(s)"
    out = [row(f"{name}: passages/s", n / sec, "", note=f"{sec:.2f} s", kind="time") for name, sec in timed]
    out.append(row("one passage per call: passages/s", n / seconds, "", note=f"{seconds:.2f} s", kind="time"))
    out.append(row("critic: one at a time / batched (best batch)", seconds / min(s for _, s in timed), "x", (">", 1),
                   setting))
    out.append(row("max |P(Yes) batched - one at a time|", gap, "", ("<=", 1e-4), "batching must not change scores",
                   kind="check"))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "ReAG critic (Eq. 4): batched vs one passage per call")


if __name__ == "__main__":
    main()
