"""Benchmarks of the reader (SmolLM2-135M + our vision tower, ``kbvqa.reader``): load, prefix sharing, decode.

``rows()`` returns the measurements (``main`` prints them); targets are ratios measured in this run:

- load time of the shipped reader from the cached base (absolute, context only);
- one prompt x 8 samples x 32 new tokens: one call (the prompt prefilled once, its KV cache shared
  by the 8 samples) against 8 separate calls (goal >= 3x);
- decode throughput (new tokens per second, prefill excluded: time(1 + 32 tokens) - time(1 token),
  every row forced to 32 tokens) at batch 1, 8 and 32, beside the memory-bandwidth bound: a decode
  step must read every weight once, so tokens/s <= batch x copy bandwidth / weight bytes. The copy
  bandwidth is measured here (a 256 MiB tensor copy: bytes read + written per second);
- prefill of the ten-passage prompt (the time to the first token) at batch 1 and 8, in prompt tokens
  per second: the cost of the long prompts of ReAG's coarse rungs and of the experiments' budget;
- training precision: one bfloat16 matmul of the reader's MLP shape (1024 x 576 @ 576 x 1536) against
  float32, beside ``kbvqa.models.loading.computes_bf16`` for this CPU (where it says False, PyTorch
  emulates bfloat16 and ``kbvqa.reader.train`` autocasts nothing).

Run: ``python benchmarks/bench_reader.py`` (or ``make benchmarks``). Leaves out: GPUs.
"""
from __future__ import annotations

import torch
from _timing import best_of, print_rows, row

DECODE_TOKENS = 32


def copy_bandwidth(mib: int = 256, repeats: int = 5) -> float:
    """Bytes per second of ``dst.copy_(src)`` (read + write) for a ``mib`` MiB float32 tensor."""
    src = torch.rand(mib * 2**20 // 4)
    dst = torch.empty_like(src)
    seconds, _ = best_of(lambda: dst.copy_(src), repeats)
    return 2 * src.numel() * 4 / seconds


def weight_bytes_per_step(vlm) -> int:
    """Bytes of the text model's weights one decode step reads (the tied output table once)."""
    text = vlm.core.model.text_model
    seen, total = set(), 0
    for p in list(text.parameters()) + [vlm.core.lm_head.weight]:
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            total += p.numel() * p.element_size()
    return total


def first_and_full(vlm, prompt, batch: int) -> tuple[float, float]:
    """Seconds to generate 1 token and 1 + ``DECODE_TOKENS`` tokens for ``batch`` copies of ``prompt``
    (best of 2; the first is the prefill plus one decode step)."""
    def run(new):
        return vlm.model.generate(**vlm.encode([prompt] * batch), max_new_tokens=new, min_new_tokens=new,
                                  do_sample=False, pad_token_id=vlm.tokenizer.pad_token_id)

    with torch.no_grad():
        first, _ = best_of(lambda: run(1), 2)
        full, _ = best_of(lambda: run(1 + DECODE_TOKENS), 2)
    return first, full


def matmul_seconds(dtype, shape=(1024, 576, 1536), repeats: int = 3) -> float:
    """Best-of seconds of one (m x k) @ (k x n) product in ``dtype``."""
    m, k, n = shape
    a, b = torch.rand(m, k).to(dtype), torch.rand(k, n).to(dtype)
    seconds, _ = best_of(lambda: a @ b, repeats)
    return seconds


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.models.loading import computes_bf16
    from kbvqa.models.pretrain_mix import eval_examples
    from kbvqa.reader.ship import load_reader
    from kbvqa.reader.tasks import mix_config

    torch.set_num_threads(2)
    load_reader()                        # warm the base cache (converted once per machine)
    load_s, vlm = best_of(load_reader, 1)
    world = get_world(0)
    prompt = eval_examples(world, "kbvqa_10_passages", n=1, config=mix_config(112, 0))[0].prompt
    kwargs = {"max_new_tokens": DECODE_TOKENS, "temperature": 1.0}
    one_call, shared = best_of(lambda: vlm.generate([prompt], n=8, seed=0, details=True, **kwargs), 2)
    eight_calls, separate = best_of(
        lambda: [vlm.generate([prompt], n=1, seed=s, details=True, **kwargs) for s in range(8)], 2)
    # Sampled lengths differ between the two sides; the note prints them so that a ratio made of
    # unequal decode work shows as such (one call decodes until its longest sample stops).
    longest = max(shared.num_tokens[0])
    mean_separate = sum(g.num_tokens[0][0] for g in separate) / len(separate)
    work = f"one call decodes {longest} steps (its longest sample); separate calls {mean_separate:.1f} each"
    bandwidth = copy_bandwidth()
    weights = weight_bytes_per_step(vlm)
    out = [row("reader load (base cached)", load_s, "s", kind="time"),
           row("8 samples x 32 tokens, one call (shared prefill)", one_call, "s", kind="time"),
           row("8 separate calls / one call (prefix sharing)", eight_calls / one_call, "x", (">=", 3), note=work),
           row("copy bandwidth", bandwidth / 1e9, "GB/s", kind="time"),
           row("weight bytes read per decode step", weights / 1e6, "MB", kind="count")]
    prompt_tokens = int(vlm.encode([prompt])["input_ids"].shape[1])
    for batch in (1, 8, 32):
        first, full = first_and_full(vlm, prompt, batch)
        measured = batch * DECODE_TOKENS / max(full - first, 1e-9)
        bound = batch * bandwidth / weights
        if batch in (1, 8):
            out.append(row(f"prefill, ten-passage prompt ({prompt_tokens} tokens), batch {batch}: time to first token",
                           first, "s", kind="time", note=f"{batch * prompt_tokens / first:.0f} prompt tokens/s"))
        out.append(row(f"decode, batch {batch}: tokens/s", measured, "tok/s", kind="time"))
        out.append(row(f"decode, batch {batch}: share of the bandwidth bound ({bound:.0f} tok/s)",
                       measured / bound, "", note="context: 1 would be the memory-bandwidth limit"))
    fp32, bf16 = matmul_seconds(torch.float32), matmul_seconds(torch.bfloat16)
    out.append(row("bfloat16 / float32 time, one 1024x576 @ 576x1536 matmul", bf16 / fp32, "x",
                   note=f"computes_bf16(cpu) = {computes_bf16(torch.device('cpu'))}; float32 {1e3 * fp32:.1f} ms"))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "the reader (SmolLM2-135M-Instruct + toy vision tower)")


if __name__ == "__main__":
    main()
