"""Benchmark: activation memory per token of the gpu-profile VLMs at full width (issue 56, item 3).

What a LoRA training step keeps on the GPU besides the weights is the activations of its forward
pass, kept for the backward. They grow with the tokens of the batch, so ``kbvqa.models.gpu_budget``
needs them *per token*, in half precision (2 bytes a value, fp16 on a T4). No GPU is at hand, so
they are measured on the CPU (see below for the precision), on random models built from the committed
hub configs
(``kbvqa/_data/hub_configs``; nothing is downloaded) at their full width (hidden size, MLP width,
heads, vocabulary) with 2 and 4 language-model layers, and extrapolated linearly to the full depth:
per token, ``a + b * layers`` (``a``: embeddings, final norm; ``b``: one layer).

The step measured is the book's (``kbvqa.models.scoring.completion_logprobs(grad=True)``, as SFT,
GRPO and PPO use it): LoRA r = 16 on ``q_proj``/``v_proj`` of the language model (base frozen), a
forward over ``tokens`` tokens, logits kept for the last ``completion`` tokens only, upcast to
float32, ``log_softmax``, gathered, summed, backward. Two figures, each from the peak of the memory
the CPU allocator hands out during forward + backward (``torch.profiler``'s memory events, their
running sum) above what was allocated before the step:

- ``body``: per token of the sequence, with one logit row kept (the critic's loss keeps one);
- ``head``: per completion token, the logits' extra (``vocab`` x (2 + 4 + 4 + 4) bytes: the bf16
  logits, their float32 copy, log-softmax and its gradient), measured at 2 layers (it does not
  depend on depth).

Both with and without gradient checkpointing (non-reentrant, input grads enabled, as
``kbvqa.rl.common.gradient_checkpointing`` turns it on). Vision towers are left out (one block is
built): they are frozen in every training chapter, so their activations are not kept for the
backward; a picture's tokens count as language-model tokens. Attention is PyTorch's SDPA, whose
memory is linear in the sequence on the CPU as the memory-efficient kernel's is on a T4.

Models without a committed config (``kbvqa.models.hub_configs.MISSING``: Qwen3-VL-2B, SmolVLM-256M)
are measured as *stand-ins*: the Qwen2-VL architecture at their language model's widths as their
model cards give them (``STAND_INS``), said so in the output.

bf16 matrix products crawl on this CPU (~0.5 GFLOP/s against ~35 in float32), so the full width runs
in float32 and its bytes are scaled by the bf16 / fp32 ratio of the same step measured on a model 8
times narrower (``half_ratio``: about 0.55-0.65, not 1/2, as RMSNorm and the softmax keep float32
statistics).

``rows()`` returns the figures for ``run_all.py`` and writes ``data/benchmarks/activations.json``
(figures, settings, provenance), which ``gpu_budget`` reads (``--no-write``: print only).
Run: ``nice -n 10 python benchmarks/bench_activations.py`` (14 minutes on 2 shared cores at 512
tokens; ``--tokens 256`` halves it; ``--only <checkpoint>`` measures one model).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch
from _timing import print_rows, row

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "benchmarks" / "activations.json"
BASE = "Qwen/Qwen2-VL-2B-Instruct"
# Language-model widths of the checkpoints whose config.json is not committed, from their model cards
# (Qwen3-VL-2B: text_config; SmolVLM-256M: its SmolLM2-135M text model), run on the Qwen2-VL layers.
STAND_INS = {
    "Qwen/Qwen3-VL-2B-Instruct": dict(hidden_size=2048, intermediate_size=6144, num_hidden_layers=28,
                                      num_attention_heads=16, num_key_value_heads=8, vocab_size=151936),
    "HuggingFaceTB/SmolVLM-256M-Instruct": dict(hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
                                                num_attention_heads=9, num_key_value_heads=3, vocab_size=49280),
}
DEPTHS = (2, 4)


def text_config(config):
    return getattr(config, "text_config", config)


def config_for(checkpoint: str):
    """``(config, full depth, stand-in?)``: the committed config, or the Qwen2-VL-2B one at a stand-in's widths."""
    from kbvqa.models.hub_configs import committed_checkpoints, hub_config

    if checkpoint in committed_checkpoints():
        config = hub_config(checkpoint)
        return config, text_config(config).num_hidden_layers, False
    config = hub_config(BASE)
    widths = STAND_INS[checkpoint]
    for name, value in widths.items():
        setattr(text_config(config), name, value)
        if hasattr(config, name) and config is not text_config(config):
            setattr(config, name, value)
    head_dim = widths["hidden_size"] // widths["num_attention_heads"]
    text_config(config).head_dim = head_dim
    half = head_dim // 2                    # M-RoPE's (time, height, width) split of the rotary half
    rope = dict(text_config(config).rope_parameters, mrope_section=[half // 4, 3 * half // 8, 3 * half // 8])
    text_config(config).rope_parameters = rope
    return config, widths["num_hidden_layers"], True


def build(config, layers: int, dtype=torch.float32, shrink: int = 1):
    import copy

    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForImageTextToText

    from kbvqa.models.loading import lora_pattern

    config = copy.deepcopy(config)
    text_config(config).num_hidden_layers = layers
    text_config(config).max_window_layers = layers
    config.vision_config.depth = 1
    if shrink > 1:                           # every width / shrink, the head size kept (the ratio's model)
        t = text_config(config)
        heads = max(1, t.num_attention_heads // shrink)
        t.head_dim = t.hidden_size // t.num_attention_heads
        t.hidden_size, t.num_attention_heads = heads * t.head_dim, heads
        t.num_key_value_heads = max(1, t.num_key_value_heads // shrink)
        while heads % t.num_key_value_heads:
            t.num_key_value_heads -= 1
        t.intermediate_size //= shrink
        t.vocab_size = t.vocab_size // shrink
        config.vision_config.hidden_size = t.hidden_size
    torch.manual_seed(0)
    model = AutoModelForImageTextToText.from_config(config, dtype=dtype)
    model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, lora_dropout=0.0,
                                             target_modules=lora_pattern(("q_proj", "v_proj"))))
    model.train()
    return model


def _peak(fn) -> int:
    """Peak bytes allocated on the CPU while ``fn`` runs, above the start (profiler memory events)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        fn()
    events = sorted((e.start_ns(), e.nbytes()) for e in prof.profiler.kineto_results.events()
                    if e.name() == "[memory]")
    current = peak = 0
    for _, nbytes in events:
        current += nbytes
        peak = max(peak, current)
    return peak


def step_peak(model, tokens: int, keep: int, vocab: int) -> int:
    ids = torch.randint(0, min(vocab, 150000), (1, tokens))

    def step():
        logits = model(input_ids=ids, logits_to_keep=keep, use_cache=False).logits
        logprobs = torch.log_softmax(logits.float(), dim=-1).gather(-1, ids[:, -keep:].unsqueeze(-1))
        logprobs.sum().backward()

    step()                                            # warm-up: lazily built buffers, rotary caches
    model.zero_grad(set_to_none=True)
    peak = _peak(step)
    model.zero_grad(set_to_none=True)
    return peak


def body_per_token(model, tokens: int, vocab: int, checkpointing: bool) -> float:
    if checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    return step_peak(model, tokens, 1, vocab) / tokens


def head_per_token(vocab: int, completion: int) -> float:
    """Bytes per completion token of the logits' chain in a half-precision model: bf16 logits
    (requiring grad, as the model's output does), their float32 copy, log-softmax, gather, backward."""
    logits = torch.randn(1, completion, vocab, dtype=torch.bfloat16)
    ids = torch.randint(0, vocab, (1, completion, 1))

    def step():
        x = logits.clone().requires_grad_(True)
        torch.log_softmax(x.float(), dim=-1).gather(-1, ids).sum().backward()

    step()
    return _peak(step) / completion


def half_ratio(config, tokens: int, shrink: int) -> dict:
    """bf16 / fp32 activation bytes of the same step on a model ``shrink`` times narrower (bf16 matmuls
    crawl on this CPU, ~0.5 GFLOP/s against ~35 in fp32, so the full width runs in fp32 and is scaled
    by this measured ratio: not exactly 1/2, as RMSNorm and softmax keep float32 statistics)."""
    out = {}
    for ckpt in (False, True):
        peaks = {}
        for dtype in (torch.float32, torch.bfloat16):
            model = build(config, DEPTHS[-1], dtype, shrink)
            peaks[dtype] = body_per_token(model, tokens, text_config(config).vocab_size // shrink, ckpt)
            del model
        out["checkpointing" if ckpt else "plain"] = peaks[torch.bfloat16] / peaks[torch.float32]
    return out


def measure(checkpoint: str, tokens: int, completion: int, shrink: int) -> dict:
    config, depth, stand_in = config_for(checkpoint)
    vocab = text_config(config).vocab_size
    ratio = half_ratio(config, tokens, shrink)
    out = {"checkpoint": checkpoint, "stand_in": stand_in, "layers": depth, "hidden_size":
           text_config(config).hidden_size, "vocab_size": vocab, "tokens": tokens,
           "half_over_fp32": {k: round(v, 3) for k, v in ratio.items()},
           "head_bytes_per_completion_token": round(head_per_token(vocab, completion))}
    for ckpt in (False, True):
        key = "checkpointing" if ckpt else "plain"
        fp32 = {}
        for layers in DEPTHS:
            model = build(config, layers)
            fp32[layers] = body_per_token(model, tokens, vocab, ckpt)
            del model
        (l1, l2), (m1, m2) = DEPTHS, (fp32[d] for d in DEPTHS)
        per_layer = (m2 - m1) / (l2 - l1)
        fixed = m1 - per_layer * l1
        out[key] = {"fp32_measured_bytes_per_token": {str(d): round(fp32[d]) for d in DEPTHS},
                    "fp32_per_layer": round(per_layer), "fp32_fixed": round(fixed),
                    "fp32_full_depth": round(fixed + per_layer * depth),
                    "half_full_depth": round((fixed + per_layer * depth) * ratio[key])}
    return out


def rows(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokens", type=int, nargs="*", default=[512, 1024],
                    help="sequence lengths measured (the chapters' prompts run from ~300 to ~2,000 tokens)")
    ap.add_argument("--completion", type=int, default=128, help="completion tokens whose logits are kept")
    ap.add_argument("--only", nargs="*", default=None, help="checkpoints to measure (default: all four)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--shrink", type=int, default=8, help="width divisor of the bf16 / fp32 ratio's model")
    ap.add_argument("--write", action=argparse.BooleanOptionalAction, default=True,
                    help="write data/benchmarks/activations.json (--no-write: print only)")
    args = ap.parse_args(argv)
    from kbvqa.models.hub_configs import committed_checkpoints

    torch.set_num_threads(args.threads)
    checkpoints = args.only or [*committed_checkpoints(), *STAND_INS]
    t0 = time.perf_counter()
    figures = [measure(c, t, args.completion, args.shrink) for c in checkpoints for t in args.tokens]
    seconds = time.perf_counter() - t0
    if args.write:
        import sys

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from report import provenance

        OUT.write_text(json.dumps({
            "what": "activation memory per token of a LoRA training step (bf16, CPU), benchmarks/bench_activations.py",
            "settings": {"depths": list(DEPTHS), "tokens": args.tokens, "completion": args.completion,
                         "dtype": "float32 at full width, scaled by the bf16 / fp32 ratio at width / shrink",
                         "shrink": args.shrink, "lora": "r 16 on q_proj, v_proj", "threads": args.threads},
            "seconds": round(seconds, 1), "provenance": provenance(), "figures": figures}, indent=1) + "\n")
    out = []
    for f in figures:
        name = f["checkpoint"].split("/")[1] + (" (stand-in)" if f["stand_in"] else "")
        for key in ("plain", "checkpointing"):
            out.append(row(f"{name}, {f['tokens']} tokens, {key}: activations per token at full depth "
                           f"({f['layers']} layers), half precision", f[key]["half_full_depth"] / 1e6, "MB",
                           kind="count"))
        out.append(row(f"{name}: logits per completion token", f["head_bytes_per_completion_token"] / 1e6,
                       "MB", kind="count"))
    return out


def main(argv=None):
    print_rows(rows(argv))


if __name__ == "__main__":
    main()
