"""Benchmarks of the reader's fast path (issue 49): prefix reuse for the critic, and each inference precision.

``rows()`` returns the measurements (``main`` prints them); every goal is a ratio measured in this run
against today's committed path (fp32, batched, no cross-prompt prefix reuse), on this machine:

- the ReAG critic on one query's passages (the top-``k`` pages of coarse retrieval, 8 passages each):
  batched as the experiments ran it (``batch_size`` 16) against ``share_prefix=True`` (system, picture
  and question prefilled once, ``kbvqa.models.prefix``); goal >= 3x. The bound beside it is the ratio
  of token positions the two paths compute (the plain path pads every prompt of a batch to its
  longest); the scores must agree (max |ΔP(Yes)| <= 1e-4; the card's accuracy condition is <= 0.02);
- each precision this machine can run (``kbvqa.models.precision``: fp32, bf16 where
  ``computes_bf16``, int8w everywhere): prefill of the gold-passage prompt (prompt tokens/s at batch 1;
  the ten-passage prompt would take minutes per call at int8w on a CPU without AVX512, where the int8
  kernel with float activations is far slower than an fp32 matmul) and greedy decode (new tokens/s at
  batch 1 and 8: the decode steps alone, one token at a time on the prefilled cache), each against
  fp32 (goal >= 1.8x), the decode rows beside the bandwidth bound of the weights one step reads;
- the batch size across queries: greedy ``generate`` of ``--sweep`` different queries (left-padded
  together) at batch 1, 4, 8, 16 and 32, per float precision: the measurement behind the runners'
  batch of 16.

Run: ``python benchmarks/bench_fastpath.py [--k 5] [--threads 2] [--tokens 16] [--sweep 32]``.
Leaves out: GPUs,
the RCTS search (``bench_rcts.py``), the card's accuracy on the fast path (``kbvqa.reader.card``).
"""
from __future__ import annotations

import argparse

import torch
from _timing import best_of, print_rows, row
from bench_reader import copy_bandwidth


def _positions(vlm, prompts, batch_size: int, suffix_pictures: bool = False) -> tuple[int, int]:
    """(token positions the plain batched path computes, positions the shared-prefix path computes);
    ``suffix_pictures``: as generation groups prompts (pictures may follow the shared run)."""
    from kbvqa.models.chat import normalise_prompts
    from kbvqa.models.prefix import _image_token_ids, prefix_groups

    items = [vlm.encode([c]) for c in normalise_prompts(prompts)]
    lengths = [int(i["input_ids"].shape[1]) for i in items]
    plain = sum(len(chunk) * max(chunk) for chunk in (lengths[s:s + batch_size]
                                                      for s in range(0, len(lengths), batch_size)))
    shared = 0
    for length, members in prefix_groups(items, _image_token_ids(vlm), suffix_pictures=suffix_pictures):
        suffixes = sorted(lengths[i] - length for i in members)
        shared += length + sum(len(c) * max(c) for c in (suffixes[s:s + batch_size]
                                                         for s in range(0, len(suffixes), batch_size)))
    return plain, shared


def _weight_bytes(vlm) -> int:
    """Bytes of the text model's weights one decode step reads: parameters and buffers (int8w keeps
    its int8 weights and scales as buffers), the output head once."""
    seen, total = set(), 0
    tensors = list(vlm.core.model.text_model.parameters()) + list(vlm.core.model.text_model.buffers())
    for t in tensors + [vlm.core.lm_head.weight]:
        if t is not None and t.data_ptr() not in seen:
            seen.add(t.data_ptr())
            total += t.numel() * t.element_size()
    return total


def decode_steps(vlm, first, mask, tokens: int) -> None:
    """``tokens`` greedy decode steps, one token at a time, on a copy of the prefill ``first``'s cache."""
    import copy

    past, token = copy.deepcopy(first.past_key_values), first.logits[:, -1].argmax(-1, keepdim=True)
    for _ in range(tokens):
        mask = torch.cat([mask, torch.ones_like(token)], dim=1)
        step = vlm.model(input_ids=token, attention_mask=mask, past_key_values=past, use_cache=True,
                         logits_to_keep=1)
        past, token = step.past_key_values, step.logits[:, -1].argmax(-1, keepdim=True)


def _decode_rates(vlm, prompt, tokens: int) -> dict:
    """Prompt tokens/s of the prefill at batch 1, and new tokens/s of greedy decode at batch 1 and 8:
    the decode steps alone, timed one token at a time on the prefilled cache (best of 2)."""
    out = {}
    for batch in (1, 8):
        inputs = vlm.encode([prompt] * batch)
        with torch.no_grad():
            prefill_s, first = best_of(lambda i=inputs: vlm.model(**i, use_cache=True, logits_to_keep=1), 2)
            if batch == 1:
                out["prefill"] = inputs["input_ids"].shape[1] / prefill_s

            decode_s, _ = best_of(lambda f=first, m=inputs["attention_mask"]: decode_steps(vlm, f, m, tokens), 2)
        out[f"decode_{batch}"] = batch * tokens / decode_s
    return out


def _batch_sweep(vlm, prompts, tokens: int, sizes=(1, 4, 8, 16, 32)) -> dict[int, float]:
    """{batch size: prompts per second} of greedy ``vlm.generate`` on ``prompts`` (different queries,
    left-padded together), ``tokens`` new tokens each: the measurement behind the runners' batch of 16."""
    out = {}
    vlm.generate(prompts[:2], max_new_tokens=2, temperature=0, batch_size=2)                # warm-up
    for size in sizes:
        seconds, _ = best_of(lambda s=size: vlm.generate(prompts, max_new_tokens=tokens, temperature=0,
                                                         batch_size=s), 1)
        out[size] = len(prompts) / seconds
    return out


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.models.loading import computes_bf16
    from kbvqa.models.precision import resolve_precision
    from kbvqa.models.pretrain_mix import eval_examples
    from kbvqa.reader.ship import load_reader
    from kbvqa.reader.tasks import mix_config
    from kbvqa.reag.critic import Critic, CriticConfig
    from kbvqa.reag.critic_eval import critic_items

    ap = argparse.ArgumentParser(description="The reader's fast path: prefix reuse and precision.")
    ap.add_argument("--k", type=int, default=5, help="pages per critic query (8 passages each)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--sweep", type=int, default=32, help="queries in the batch-size sweep (1: no sweep)")
    ap.add_argument("--tokens", type=int, default=16, help="decode tokens per timing")
    args = ap.parse_args(argv)
    if args.k < 1 or args.threads < 1 or args.tokens < 1:
        ap.error("--k, --threads and --tokens must be positive")
    torch.set_num_threads(args.threads)
    cpu = torch.device("cpu")
    native = computes_bf16(cpu)
    out = [row("computes_bf16 on this CPU", str(native), kind="check",
               note=f"KBVQA_PRECISION=auto gives {resolve_precision('auto', cpu)} here")]

    world, vlm = get_world(0), load_reader(precision="fp32")
    query, passages = critic_items(world, n=1, k=args.k)[0]
    prompts = Critic(vlm, CriticConfig()).prompts(query, passages)
    vlm.p_yes(prompts[:2])                                                  # warm-up
    plain_s, plain = best_of(lambda: vlm.p_yes(prompts, batch_size=16), 2)
    shared_s, shared = best_of(lambda: vlm.p_yes(prompts, batch_size=16, share_prefix=True), 2)
    plain_pos, shared_pos = _positions(vlm, prompts, 16)
    gap = (plain - shared).abs()
    setting = f"one query, {len(prompts)} passages, {args.threads} thread(s)"
    out += [row("critic, batched (today's path): seconds per query", plain_s, "s", kind="time", note=setting),
            row("critic, shared prefix: seconds per query", shared_s, "s", kind="time"),
            row("critic: batched / shared prefix", plain_s / shared_s, "x", (">=", 3),
                f"token positions computed {plain_pos} vs {shared_pos}: at most {plain_pos / shared_pos:.2f}x"),
            row("critic: max |ΔP(Yes)| shared vs batched", float(gap.max()), "", ("<=", 1e-4),
                f"mean {float(gap.mean()):.1e}", kind="check")]

    examples = eval_examples(world, "kbvqa_gold_passage", n=args.sweep, config=mix_config(112, 0))
    prompt = examples[0].prompt
    bandwidth = copy_bandwidth()
    rates = {}
    for precision in ["fp32"] + (["bf16"] if native else []) + ["int8w"]:
        model = vlm if precision == "fp32" else load_reader(precision=precision)
        rates[precision] = _decode_rates(model, prompt, args.tokens)
        bytes_step = _weight_bytes(model)
        r = rates[precision]
        out.append(row(f"{precision}: prefill, gold-passage prompt, batch 1", r["prefill"], "tok/s", kind="time"))
        for batch in (1, 8):
            bound = batch * bandwidth / bytes_step
            out.append(row(f"{precision}: decode, batch {batch}", r[f"decode_{batch}"], "tok/s", kind="time",
                           note=f"bandwidth bound {bound:.0f} tok/s ({bytes_step / 1e6:.0f} MB per step)"))
        if args.sweep > 1 and precision != "int8w":
            sweep = _batch_sweep(model, [e.prompt for e in examples], args.tokens)
            best = max(sweep, key=sweep.get)
            for size, rate in sweep.items():
                out.append(row(f"{precision}: generate {len(examples)} queries, batch {size}", rate, "queries/s",
                               kind="time", note="the fastest here" if size == best else ""))
            out.append(row(f"{precision}: batch 16 / batch 1, queries/s", sweep[16] / sweep[1], "x", (">", 1),
                           f"16 is the runners' batch; the fastest here was {best} "
                           f"({sweep[best] / sweep[16]:.2f}x batch 16)"))
        if precision != "fp32":
            base = rates["fp32"]
            for key, label in (("prefill", "prefill"), ("decode_1", "decode batch 1"), ("decode_8", "decode batch 8")):
                out.append(row(f"{precision} / fp32: {label} tokens/s", r[key] / base[key], "x", (">=", 1.8)))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "the reader's fast path (issue 49): prefix reuse and precision")


if __name__ == "__main__":
    main()
