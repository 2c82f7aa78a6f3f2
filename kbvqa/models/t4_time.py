"""How long each chapter's live work takes on a free Colab T4 in the gpu profile: an *estimate*.

No T4 was lent while this book was written, so nothing here is a measurement on one. The estimate
is the usual roofline accounting of a transformer's work, with a T4's published figures and an
assumed utilisation, applied to the work each chapter's cells do at the gpu profile's sizes
(``CHAPTER_WORK``: sequences generated, prompt and completion tokens, training steps):

- **T4** (NVIDIA's data sheet): 65 TFLOP/s fp16 on the tensor cores (peak), 320 GB/s of memory
  bandwidth. Assumed: ``UTILISATION`` = 25 % of the peak for prefill and training (eager PyTorch,
  no flash-attention 2 on Turing: 16 TFLOP/s) and ``BANDWIDTH_SHARE`` = 70 % of the bandwidth for
  decoding; ``STEP_OVERHEAD_S`` = 20 ms of Python and kernel launches per decoding step of
  ``transformers.generate`` (a 28-36-layer model; it dominates the small models).
- **prefill** of ``n`` tokens: ``2 x params x n`` FLOPs;
- **a decoding step** of ``b`` sequences whose context is ``c`` tokens long: the larger of reading
  the weights and the KV cache (``bf16 weights + b x c x kv_bytes``) at the usable bandwidth and
  computing ``2 x params x b`` FLOPs, plus the step overhead;
- **training** (LoRA, activations recomputed): ``8 x params`` FLOPs a token (forward, recomputation,
  the backward's two matrix products against activations);
- **loading**: the download at ``DOWNLOAD_GBPS`` (100 MB/s, an assumption for Colab's network to
  the hub) plus 10 s to move the weights to the GPU.

``chapter_minutes(chapter)`` sums it; ``T4_MINUTES_LIMIT`` (20) is what a chapter may take in a free
session (issue 56). Prompt lengths of the ReAG and MOLT prompts are counted (``tools/prompt_tokens.py``:
the gpu profile's renderings, the reader's tokenizer, the hub processors' picture tokens; see
``gpu_budget.CHAPTER_TRAINING``); the RCTS and SeRTS prompts and the completions' lengths are read off the
templates and the caps (``max_new_tokens``; a typical length where the cap is far above what a model
writes, said beside each entry). Replace the figures with measured ones when a T4 run records them.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kbvqa.models.checkpoints import GPU_CHECKPOINTS
from kbvqa.models.gpu_budget import PARAMS_B, chapter_budget

T4_PEAK_FLOPS = 65e12        # fp16 tensor cores, NVIDIA T4 data sheet
T4_BANDWIDTH = 320e9         # bytes/s, GDDR6
UTILISATION = 0.25           # assumed share of the peak reached by prefill and training
BANDWIDTH_SHARE = 0.70       # assumed share of the bandwidth reached while decoding
STEP_OVERHEAD_S = 0.020      # assumed Python and launch time per decoding step
DOWNLOAD_GBPS = 0.10         # assumed GB/s from the hub to a Colab machine
LOAD_S = 10.0                # moving a checkpoint's weights onto the GPU
T4_MINUTES_LIMIT = 20.0

# KV cache bytes per token in fp16: layers x 2 (K, V) x KV heads x head size x 2 bytes, from the configs
# (committed: Qwen2-VL-2B 28 x 2 x 2 x 128, Qwen2.5-VL-3B 36 x 2 x 2 x 128; model cards: Qwen3-VL-2B
# 28 x 2 x 8 x 128, SmolVLM-256M 30 x 2 x 3 x 64).
KV_BYTES = {
    "Qwen/Qwen2-VL-2B-Instruct": 28 * 2 * 2 * 128 * 2,
    "Qwen/Qwen2.5-VL-3B-Instruct": 36 * 2 * 2 * 128 * 2,
    "Qwen/Qwen3-VL-2B-Instruct": 28 * 2 * 8 * 128 * 2,
    "HuggingFaceTB/SmolVLM-256M-Instruct": 30 * 2 * 3 * 64 * 2,
    "HuggingFaceTB/SmolVLM-500M-Instruct": 32 * 2 * 5 * 64 * 2,
}


@dataclass(frozen=True)
class Generate:
    """``sequences`` completions of ``new`` tokens after ``prompt`` tokens, ``batch`` at a time."""

    role: str
    sequences: int
    prompt: int
    new: int
    batch: int = 8


@dataclass(frozen=True)
class Score:
    """``sequences`` forward passes of ``tokens`` tokens without generation (P(Yes), log-probabilities)."""

    role: str
    sequences: int
    tokens: int


@dataclass(frozen=True)
class Train:
    """``steps`` optimiser steps of ``rows`` sequences of ``tokens`` tokens (LoRA, recomputation)."""

    role: str
    steps: int
    rows: int
    tokens: int


@dataclass(frozen=True)
class Work:
    items: tuple = ()
    note: str = ""
    loads: tuple = field(default=())      # roles loaded (default: every role the items name)


def _flops() -> float:
    return T4_PEAK_FLOPS * UTILISATION


def _params(role: str) -> float:
    return PARAMS_B[GPU_CHECKPOINTS[role]] * 1e9


def item_seconds(item) -> float:
    """Estimated T4 seconds of one work item (see the module docstring)."""
    if not isinstance(item, (Generate, Score, Train)):
        raise TypeError(f"unknown work item {item!r}")
    params = _params(item.role)
    if isinstance(item, Score):
        return 2 * params * item.sequences * item.tokens / _flops()
    if isinstance(item, Train):
        return 8 * params * item.steps * item.rows * item.tokens / _flops()
    kv = KV_BYTES[GPU_CHECKPOINTS[item.role]]
    prefill = 2 * params * item.sequences * item.prompt / _flops()
    mean_context = item.prompt + item.new / 2
    full, rest = divmod(item.sequences, item.batch)
    seconds = 0.0
    for size in [item.batch] * full + ([rest] if rest else []):
        memory = (2 * params + size * mean_context * kv) / (T4_BANDWIDTH * BANDWIDTH_SHARE)
        compute = 2 * params * size / _flops()
        seconds += item.new * (max(memory, compute) + STEP_OVERHEAD_S)
    return prefill + seconds


# The live work of each chapter at the gpu profile's sizes (``profile.size(cpu, gpu)``'s second value),
# read off its cells. Committed tables (``data/experiments``) load in seconds and are not counted.
CHAPTER_WORK = {
    "01_models": Work((Generate("reader", 16, 300, 64), Score("reader", 64, 300))),
    # 24 pairs: N_c = 10 candidate contexts (~200 tokens, cap 512), N_p = 10 checks of each (~64 tokens: "The
    # answer is X." and a reason), 16 prompts x 10 samples a forward; four context sources answered greedily
    # (~16 tokens); the official loop on 3 pairs
    "10_rcts_reasoning_contexts": Work((Generate("reasoner", 24 * 10, 400, 200, batch=10),
                                        Generate("reasoner", 24 * 100, 700, 64, batch=160),
                                        Generate("reasoner", 4 * 24, 700, 16, batch=16),
                                        Generate("reasoner", 3 * 110, 700, 100, batch=10))),
    # P = 10 leaves x (a 64-token response + 8 reward samples of <= 8 tokens), three searches, two official
    # rollouts (their reward answers ~96 tokens)
    "13_rcts_mcts_hr": Work((Generate("generator", 3 * 10, 1200, 64, batch=1),
                             Generate("generator", 3 * 10 * 8, 1200, 8, batch=8),
                             Generate("generator", 2 * 8, 1200, 96, batch=8))),
    # 12 questions x 2 rows greedy, 12 early-stopped RCTS questions (P = 10 leaves, 8 reward samples each),
    # 100 ScienceQA questions
    "14_rcts_experiments": Work((Generate("generator", 2 * 12, 1200, 64, batch=8),
                                 Generate("generator", 12 * 10, 1200, 64, batch=1),
                                 Generate("generator", 12 * 10 * 8, 1200, 8, batch=8),
                                 Generate("generator", 100, 1200, 16, batch=8))),
    # CLIP (and GroundingDINO in 20) encode the toy world's few hundred pictures and passages: seconds on a
    # GPU; what counts is the download
    "11_rcts_hybrid_retrieval": Work(note="retrieval models only"),
    "20_reag_retrieval": Work(note="retrieval models only"),
    # Sim = 12 nodes x (proposer + evaluator, <= 48 tokens) on 1 + 6 questions
    "16_serts_tree_search": Work((Generate("searcher", 7 * 12 * 2, 800, 48, batch=1),)),
    # 8 of the committed experiment's questions at its Sim = 6 (proposer + evaluator, <= 96 tokens), PPO
    # steps of 8 trajectories x 2 epochs over them, 24 live answers
    "18_serts_ppo": Work((Generate("searcher", 8 * 6 * 2, 800, 96, batch=1),
                          Train("searcher", 6 * 2, 8, 900),
                          Generate("searcher", 24, 900, 128, batch=8))),
    # P(Yes) of 100 queries x 5 pages, 400 held-out items, 40 steps x 16 examples, 50 ladder queries x 5
    "21_reag_critic": Work((Score("critic", 100 * 5, 500), Score("critic", 400, 500),
                            Train("critic", 40, 16, 500), Score("critic", 50 * 5, 500))),
    # 256 traces (~150 tokens, cap 256) by the 3B writer; 200 SFT steps x 8; 2 x 32 relevance queries
    "22_reag_cold_start": Work((Generate("reag_generator", 256, 500, 150, batch=8),
                                Train("rl_policy", 200, 8, 500),
                                Generate("rl_policy", 64, 500, 128, batch=8))),
    # a cold start of 80 SFT steps x 8, 60 GRPO steps x 4 prompts x G = 4 completions of <= 80 tokens
    "23_reag_grpo": Work((Train("rl_policy", 80, 8, 500),
                          Generate("rl_policy", 60 * 16, 250, 80, batch=16),
                          Train("rl_policy", 60, 16, 330))),
    # 24 queries x the live rungs (the shipped generators), 50 InfoSeek queries with the critic's evidence
    "24_reag_ablation": Work((Generate("rl_policy", 24 * 5, 600, 128, batch=8),
                              Score("critic", 50 * 10, 400),
                              Generate("rl_policy", 50, 600, 128, batch=8))),
    "25_molt_candidates": Work((Generate("judge", 32, 900, 24, batch=8),)),
    # three runs of one query, then 12 queries x (one pass: 1 call; iterative: 4 calls) of ~200 tokens
    "26_molt_ladder": Work((Generate("judge", 13 * 6, 600, 200, batch=1),)),
    # 40 SFT steps x 4, 12 GRPO steps x 2 prompts x G = 4 of <= 300 tokens
    "27_molt_training": Work((Train("judge", 40, 4, 900),
                              Generate("judge", 12 * 8, 600, 300, batch=8),
                              Train("judge", 12, 8, 900))),
    # 16 one-shot + 16 one-pass tournaments
    "28_molt_weak_to_strong": Work((Generate("judge", 16, 600, 64, batch=8),
                                    Generate("judge", 16, 600, 300, batch=8))),
    # 48 queries: the critic-kept candidates and a ladder of ~200 tokens
    "30_end_to_end": Work((Generate("reag_generator", 48 * 2, 1500, 200, batch=8),)),
}


def chapter_minutes(chapter: str) -> dict:
    """``{"load", "work", "total"}`` estimated T4 minutes of ``chapter``'s live work in the gpu profile
    (0 for a chapter without a model or not listed)."""
    work = CHAPTER_WORK.get(chapter, Work())
    download = chapter_budget(chapter)["download_gb"]
    n_models = len(chapter_budget(chapter)["checkpoints"])
    load = download / DOWNLOAD_GBPS + LOAD_S * n_models
    seconds = sum(item_seconds(i) for i in work.items)
    return {"load": round(load / 60, 1), "work": round(seconds / 60, 1), "total": round((load + seconds) / 60, 1)}
