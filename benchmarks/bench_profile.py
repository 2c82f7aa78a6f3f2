"""Where the reader's prefill and decode steps spend their time (issue 49: the misses explained).

The fast-path goals ask bf16 for >= 1.8x fp32's tokens/s in prefill and in decode. A lower precision
speeds up the matrix products (``linear``: ``aten::mm``/``addmm``, oneDNN's packed products, the
int8 weight kernel) and nothing else. ``rows()`` profiles, for each precision this CPU can run,

- a prefill of the gold-passage prompt at batch 1, and
- ``--tokens`` greedy decode steps on its cache at batch 1 and at batch 8,

with ``torch.profiler`` and splits each wall time into the self time of the linear ops, of
attention (``scaled_dot_product_attention`` and the products inside it), of every other op
(norms, rotary, softmax, copies, the cache's concatenations), and the time outside any op (Python,
module calls, dispatch). If ``f`` is the linear share, no change that only speeds the products can
beat ``1 / (1 - f)`` (Amdahl's law): the *ceiling* rows. A goal above its ceiling cannot be met by
precision alone; it needs fewer ops or less overhead per step (a static cache, ``torch.compile``,
fewer layers' worth of Python), which this benchmark does not try.

Run: ``python benchmarks/bench_profile.py [--threads 2] [--tokens 16]``. The profiler's own cost
inflates the *outside* share a little; the ceiling is therefore read on the generous side.
Leaves out: GPUs, timing without the profiler (``bench_fastpath.py`` does that).
"""
from __future__ import annotations

import argparse

import torch
from _timing import print_rows, row
from bench_fastpath import decode_steps

LINEAR = ("aten::mm", "aten::addmm", "aten::_weight_int8pack_mm", "mkldnn::_linear_pointwise",
          "aten::mkldnn_linear", "aten::_mkldnn_linear")
ATTENTION = ("scaled_dot_product", "aten::bmm", "aten::baddbmm", "aten::_softmax")


def category(op: str) -> str:
    """``linear``, ``attention`` or ``other`` for a profiled op's name."""
    if op in LINEAR or "linear" in op.lower() and op.startswith(("mkldnn", "aten::_")):
        return "linear"
    if any(key in op for key in ATTENTION):
        return "attention"
    return "other"


def shares(events, wall_s: float) -> dict[str, float]:
    """Fractions of ``wall_s`` in each category's self time (CPU ops only), and ``outside``: the rest."""
    seconds = {"linear": 0.0, "attention": 0.0, "other": 0.0}
    for e in events:
        seconds[category(e.key)] += e.self_cpu_time_total / 1e6
    total = sum(seconds.values())
    out = {k: v / wall_s for k, v in seconds.items()}
    out["outside"] = max(0.0, 1.0 - total / wall_s)
    return out


def profiled(fn) -> dict[str, float]:
    """Run ``fn`` once to warm up, then once under the profiler; its shares (``shares``)."""
    import time

    from torch.profiler import ProfilerActivity, profile

    fn()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        fn()
        wall = time.perf_counter() - t0
    return shares(prof.key_averages(), wall)


def phases(vlm, prompt, tokens: int) -> dict[str, dict[str, float]]:
    """{phase: shares} for the prefill at batch 1 and the decode steps at batch 1 and 8."""
    out = {}
    for batch in (1, 8):
        inputs = vlm.encode([prompt] * batch)
        with torch.no_grad():
            if batch == 1:
                out["prefill, batch 1"] = profiled(lambda i=inputs: vlm.model(**i, use_cache=True, logits_to_keep=1))
            first = vlm.model(**inputs, use_cache=True, logits_to_keep=1)

            out[f"decode, batch {batch}"] = profiled(
                lambda f=first, m=inputs["attention_mask"]: decode_steps(vlm, f, m, tokens))
    return out


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.models.loading import computes_bf16
    from kbvqa.models.pretrain_mix import eval_examples
    from kbvqa.reader.ship import load_reader
    from kbvqa.reader.tasks import mix_config

    ap = argparse.ArgumentParser(description="Where the reader's prefill and decode time goes.")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    ap.add_argument("--tokens", type=int, default=16, help="decode steps profiled")
    args = ap.parse_args(argv)
    if args.threads < 1 or args.tokens < 1:
        ap.error("--threads and --tokens must be positive")
    torch.set_num_threads(args.threads)
    native = computes_bf16(torch.device("cpu"))
    out = [row("computes_bf16 on this CPU", str(native), kind="check",
               note="bf16 is profiled only where the CPU computes it")]
    prompt = eval_examples(get_world(0), "kbvqa_gold_passage", n=1, config=mix_config(112, 0))[0].prompt
    for precision in ["fp32"] + (["bf16"] if native else []):
        vlm = load_reader(precision=precision)
        for phase, share in phases(vlm, prompt, args.tokens).items():
            split = ", ".join(f"{k} {v:.0%}" for k, v in share.items())
            out.append(row(f"{precision}, {phase}: share of the time in linear ops", share["linear"], "",
                           kind="check", note=split))
            ceiling = 1 / max(1e-9, 1 - share["linear"])
            out.append(row(f"{precision}, {phase}: ceiling of any speed-up of the linear ops alone", ceiling, "x",
                           note="1 / (1 - linear share), Amdahl's law; the fast-path goal is 1.8x"))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "where the reader's prefill and decode time goes (issue 49)")


if __name__ == "__main__":
    main()
