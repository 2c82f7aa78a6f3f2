"""Benchmark of MOLT's cost (App. C, Tab. 7/10): one-pass ladder vs iterative pairwise calls.

Same model, same queries, same candidates, one run: for each toy-world test query, five
candidates (the gold page and four look-alikes, at the judge's picture size), the weak-to-strong schedule, then

- one pass (``run_one_pass``): ONE call with the query and the 5 candidates (6 images);
- iterative (``run_iterative``): N - 1 = 4 calls, each with the query and 2 candidates (12 images).

Two decoding modes:
- ``fixed``: the decode work is made equal, so the difference is what App. C is about (repeated
  prefill, repeated image encoding, per-call overhead): every round decodes exactly
  ``--round-tokens`` tokens (EOS suppressed with ``min_new_tokens``); one pass decodes
  (N - 1) x round-tokens + ``--evidence-tokens`` in one call, iterative round-tokens per call.
- ``natural``: the model's own stopping (``VLM.generate``): each set-up decodes as much as the judge
  writes (the reader writes the whole ladder in one pass, and a short verdict per pairwise call).

Reported: median latency per query of each method and their ratio (paper, RTX 3090, Qwen3-VL-4B
with vLLM: 10,304 ms / 4,231 ms = 2.44x), model calls, and vision-encoder calls / images encoded
counted by a hook on the vision tower (one pass: 1 call, N + 1 images -- the N candidates once;
iterative: N - 1 calls, 2 (N - 1) candidate images + N - 1 query images), with the milliseconds
spent in the vision tower (the part of the latency that App. C's argument is about).

``rows()`` returns the ratios and counts (``report()`` the full dictionary), ``main`` prints them.
Run: ``python benchmarks/bench_molt.py [--queries 4] [--repeats 2] [--threads 1]``.
Leaves out: the embedding baseline of Tab. 10 (BGE-VL), vLLM.
"""
from __future__ import annotations

import argparse
import functools
import random
import statistics

import torch
from _timing import best_of, print_rows, row


class FixedLength:
    """A ``generate`` that decodes exactly ``tokens`` tokens per call (EOS suppressed, greedy)."""

    def __init__(self, vlm, tokens_for_call):
        self.vlm, self.tokens_for_call = vlm, tokens_for_call

    def generate(self, prompts, n=1, max_new_tokens=64, temperature=0.0, seed=None, **_):
        tokens = self.tokens_for_call(max_new_tokens)
        with torch.no_grad():
            batch = self.vlm.encode(prompts)
            out = self.vlm.model.generate(**batch, max_new_tokens=tokens, min_new_tokens=tokens, do_sample=False,
                                          pad_token_id=self.vlm.tokenizer.pad_token_id)
        rows = out[:, batch["input_ids"].shape[1]:].tolist()
        return [[self.vlm.tokenizer.decode(r, skip_special_tokens=True)] for r in rows]


def report(argv=None) -> dict:
    from kbvqa.data import get_world
    from kbvqa.models.checkpoints import load_vlm
    from kbvqa.molt.experiment import judge_view
    from kbvqa.molt.run import VisionCounter, run_iterative, run_one_pass
    from kbvqa.molt.sft import SFTDataConfig, sft_candidates

    ap = argparse.ArgumentParser(description="MOLT one-pass vs iterative pairwise latency and vision calls.")
    ap.add_argument("--queries", type=int, default=4, help="toy-world test queries")
    ap.add_argument("--repeats", type=int, default=2, help="timed repeats per query (best kept)")
    ap.add_argument("--round-tokens", type=int, default=64, help="tokens decoded per round (fixed mode)")
    ap.add_argument("--evidence-tokens", type=int, default=10, help="tokens of the final <evidence> (fixed mode)")
    ap.add_argument("--threads", type=int, default=1, help="torch threads")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)

    world, vlm = get_world(0), load_vlm("judge")
    n, per_round = 5, args.round_tokens
    one_pass_tokens = (n - 1) * per_round + args.evidence_tokens
    modes = {"fixed": (FixedLength(vlm, lambda m: one_pass_tokens if m == one_pass_tokens else per_round),
                       one_pass_tokens, per_round),
             "natural": (vlm, 400, 96)}
    result = {"device": str(vlm.device), "threads": args.threads, "queries": args.queries, "n_candidates": n,
              "round_tokens": per_round, "paper_ms": {"iterative": 10304, "one_pass": 4231, "ratio": 2.44}}
    for mode, (model, one_budget, pair_budget) in modes.items():
        times = {"one_pass": [], "iterative": []}
        counts = {}
        for q in world.kbvqa_test[:args.queries]:
            cands = sft_candidates(world, q, [], SFTDataConfig(n_negatives=n - 1), random.Random(q.id))
            image = judge_view(world, q)
            runs = {"one_pass": functools.partial(run_one_pass, model, q.question, image, cands,
                                                  max_new_tokens=one_budget, short=True),
                    "iterative": functools.partial(run_iterative, model, q.question, image, cands,
                                                   max_new_tokens=pair_budget, short=True)}
            for name, fn in runs.items():
                seconds, _ = best_of(fn, args.repeats)
                times[name].append(seconds)
                with VisionCounter(vlm) as counter:
                    run = fn()
                counts[name] = {"model_calls": run.model_calls, "images_sent": run.images_sent,
                                "vision_calls": counter.calls, "images_encoded": counter.images,
                                "vision_ms": round(1000 * counter.seconds, 1)}
        one, it = statistics.median(times["one_pass"]), statistics.median(times["iterative"])
        result[mode] = {"one_pass_ms": round(1000 * one, 1), "iterative_ms": round(1000 * it, 1),
                        "ratio": round(it / one, 2), "counts": counts}
    return result


def rows(argv=None) -> list[dict]:
    """The report as rows: per decoding mode, the latency ratio, the times, and the vision counts."""
    rep = report(argv)
    out = []
    for mode in ("fixed", "natural"):
        r = rep[mode]
        c_one, c_it = r["counts"]["one_pass"], r["counts"]["iterative"]
        goal = (">", 1) if mode == "fixed" else None
        out.append(row(f"{mode} decoding: iterative / one-pass latency", r["ratio"], "x", goal,
                       f"median of {rep['queries']} queries, {rep['n_candidates']} candidates; paper 2.44x "
                       "(10,304 / 4,231 ms)"))
        out.append(row(f"{mode} decoding: one pass / iterative, ms per query",
                       f"{r['one_pass_ms']:.0f} / {r['iterative_ms']:.0f}", "ms", kind="time"))
        out.append(row(f"{mode} decoding: vision-encoder calls, one pass / iterative",
                       f"{c_one['vision_calls']} / {c_it['vision_calls']}", "", kind="count",
                       note=f"images encoded {c_one['images_encoded']} / {c_it['images_encoded']}; vision tower "
                            f"{c_one['vision_ms']:.0f} / {c_it['vision_ms']:.0f} ms; model calls "
                            f"{c_one['model_calls']} / {c_it['model_calls']}"))
    return out


def main(argv=None) -> None:
    rep_rows = rows(argv)
    print_rows(rep_rows, "MOLT (App. C, Tab. 7/10): one-pass ladder vs iterative pairwise, the judge role, 1 thread")


if __name__ == "__main__":
    main()
