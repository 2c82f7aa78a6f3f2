"""Benchmarks of the model layer (issue "Models"): load time, sampling with prefix reuse, batched P(Yes).

``rows()`` returns the measurements (``main`` prints them); every speed target is a *ratio measured
in this run* (absolute seconds are context only, they depend on the machine):

- load time of the shipped tiny checkpoint (goal <= 3 s);
- 8 samples x 32 new tokens for one prompt in one call (goal <= 2 s on 2 cores), and the speed-up
  over 8 separate calls (prefix reuse: the vision tower runs once instead of 8 times);
- P(Yes) for 64 critic prompts in batches of 16 vs one prompt at a time.

Run: ``python benchmarks/bench_models.py`` (or ``make benchmarks``). Leaves out: the hub checkpoints.
"""
from __future__ import annotations

import time

import torch
from _timing import best_of, print_rows, row


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.models.pretrain_mix import eval_examples
    from kbvqa.models.tiny import load_tiny_vlm

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    vlm = load_tiny_vlm()
    load_s = time.perf_counter() - t0
    world = get_world(0)
    prompt = eval_examples(world, "kbvqa_10_passages", n=1)[0].prompt
    one_call, _ = best_of(lambda: vlm.generate([prompt], n=8, max_new_tokens=32, seed=0), 3)
    eight_calls, _ = best_of(lambda: [vlm.generate([prompt], n=1, max_new_tokens=32, seed=s) for s in range(8)], 3)
    critic = [e.prompt for e in eval_examples(world, "critic", n=22)][:64]
    batched, _ = best_of(lambda: vlm.p_yes(critic, batch_size=16), 3)
    single, _ = best_of(lambda: [vlm.p_yes([p]) for p in critic], 1)
    return [
        row("tiny checkpoint load", load_s, "s", ("<=", 3), kind="time"),
        row("8 samples x 32 tokens, one call", one_call, "s", ("<=", 2), "2 threads", kind="time"),
        row("8 separate calls / one call (prefix reuse)", eight_calls / one_call, "x", (">", 1)),
        row(f"P(Yes), {len(critic)} prompts: one at a time / batched (16)", single / batched, "x", (">", 1)),
    ]


def main(argv=None) -> None:
    print_rows(rows(argv), "model layer: tiny checkpoint")


if __name__ == "__main__":
    main()
