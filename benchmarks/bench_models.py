"""Benchmarks of the model layer (issue "Models"): load time, sampling with prefix reuse, batched P(Yes).

Prints one table; every speed target is a *ratio measured in this run* (absolute seconds are
context only, they depend on the machine):

- load time of the shipped tiny checkpoint (goal <= 3 s);
- 8 samples x 32 new tokens for one prompt in one call (goal <= 2 s on 2 cores), and the speed-up
  over 8 separate calls (prefix reuse: the vision tower runs once instead of 8 times);
- P(Yes) for 64 critic prompts in batches of 16 vs one prompt at a time.

Run: ``python benchmarks/bench_models.py`` (or ``make benchmarks``).
"""
from __future__ import annotations

import time

import torch
from _timing import print_rows


def _best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def main() -> None:
    from kbvqa.data import get_world
    from kbvqa.models.pretrain_mix import eval_examples
    from kbvqa.models.tiny import load_tiny_vlm

    torch.set_num_threads(2)
    t0 = time.perf_counter()
    vlm = load_tiny_vlm()
    load_s = time.perf_counter() - t0
    world = get_world(0)
    prompt = eval_examples(world, "kbvqa_10_passages", n=1)[0].prompt
    one_call = _best_of(lambda: vlm.generate([prompt], n=8, max_new_tokens=32, seed=0))
    eight_calls = _best_of(lambda: [vlm.generate([prompt], n=1, max_new_tokens=32, seed=s) for s in range(8)])
    critic = [e.prompt for e in eval_examples(world, "critic", n=22)][:64]
    batched = _best_of(lambda: vlm.p_yes(critic, batch_size=16))
    single = _best_of(lambda: [vlm.p_yes([p]) for p in critic], repeats=1)
    rows = [
        ("tiny checkpoint load", f"{load_s:.2f} s", "goal <= 3 s"),
        ("8 samples x 32 tokens, one call", f"{one_call:.2f} s", "goal <= 2 s"),
        ("8 separate calls / one call (prefix reuse)", f"{eight_calls / one_call:.1f}x", "> 1"),
        (f"P(Yes), {len(critic)} prompts: one at a time / batched", f"{single / batched:.1f}x", "> 1"),
    ]
    print_rows([("benchmark", "measured", "target")] + rows)


if __name__ == "__main__":
    main()
