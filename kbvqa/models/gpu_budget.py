"""Which gpu-profile checkpoints fit a GPU of a given size: an estimate from parameter counts.

The one GPU lent while this book was written (an H200, for fifteen minutes) ran the smoke run of
tiny random models (``data/benchmarks/gpu_smoke.json``), not the full-size shapes, so the book does
not *measure* their memory; this file estimates it with the usual accounting, and says so wherever
it is shown:

- **inference**: weights at ``bits`` per parameter (16 for bf16, ~4.5 for 4-bit NF4/AWQ including
  scales and the layers kept in 16 bit), times ``overhead`` (1.2: activations, KV cache of a few
  thousand tokens, CUDA context) — the rule of thumb of the HF model-memory calculator;
- **LoRA training** (ReAG/MOLT SFT and GRPO, the critic, SeRTS PPO on one GPU): frozen bf16 weights,
  ``TRAINING_EXTRA_GIB`` (CUDA context, adapters and their AdamW states, fragmentation) and the
  activations of the chapter's largest forward/backward (``CHAPTER_TRAINING``: rows per micro-batch,
  tokens per row, completion tokens) from bytes per token *measured* on the CPU at full width and
  extrapolated to full depth, with gradient checkpointing as every trainer turns it on with CUDA
  (``benchmarks/bench_activations.py`` -> ``data/benchmarks/activations.json``; Qwen3-VL-2B and
  SmolVLM-256M measured as stand-ins at their widths, their configs not being committed). A LoRA
  training without a ``CHAPTER_TRAINING`` entry keeps the old rule of thumb, 1.5 × the bf16 weights;
- **full fine-tuning** with AdamW in mixed precision: 16 bytes per parameter (bf16 weights and
  grads, fp32 master copy and two Adam moments), times the same ``overhead``.

``CHAPTER_ROLES`` records every model each chapter loads on the GPU (read off its cells, the trace
writer and the ladder's generators included; a test checks it against the notebooks), ``CHAPTER_PHASES``
the chapters that free one model (``free_memory()``) before the next phase,
``OVER_BUDGET`` the chapters known not to fit a 16 GB T4, ``CHAPTER_RETRIEVAL`` the retrieval models
(CLIP, GroundingDINO) a chapter loads beside its VLMs, and ``chapter_budget()`` the per-chapter
download and memory estimates the README lists.

Parameter counts are the hub model cards' (billions, rounded). Where the checkpoint's published
``config.json`` is committed (``data/hub_configs``, ``kbvqa.models.hub_configs``), the count is
checked against the exact one from the shapes (the model built on the meta device, no weights):
Qwen2-VL-2B 2,208,985,600 and Qwen2.5-VL-3B 3,754,622,976 agree within 0.1 % (the tests allow 1 %).
Qwen3-VL-2B and the SmolVLM counts stay the cards' until their configs are committed
(``hub_configs.MISSING``). Every figure is an estimate until a T4 run measures the peaks
(``torch.cuda.max_memory_allocated``); leaves out: the KV cache of generation beyond the 1.2 overhead.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from kbvqa.config import DATA_DIR
from kbvqa.models.checkpoints import GPU_CHECKPOINTS
from kbvqa.models.encoders import GPU_ENCODER
from kbvqa.retrieval.subject_grounding import GPU_GROUNDER
from kbvqa.rl.common import AUTO_MICRO_BATCH, FULL_FINETUNE_LIMIT

GIB = 1024 ** 3

# Parameters (billions) from each checkpoint's hub model card; tests/test_gpu_budget.py checks the ones
# with a committed config.json against the exact count from the shapes (kbvqa.models.hub_configs).
PARAMS_B = {
    "HuggingFaceTB/SmolVLM-256M-Instruct": 0.256,
    "HuggingFaceTB/SmolVLM-500M-Instruct": 0.507,
    "Qwen/Qwen2-VL-2B-Instruct": 2.21,
    "Qwen/Qwen3-VL-2B-Instruct": 2.13,
    "Qwen/Qwen2.5-VL-3B-Instruct": 3.75,
    "Qwen/Qwen3-VL-4B-Instruct": 4.44,
    "Qwen/Qwen2-VL-7B-Instruct": 8.29,
    "Qwen/Qwen2.5-VL-7B-Instruct": 8.29,
    "Qwen/Qwen3-VL-8B-Instruct": 8.77,
}
MODES = ("bf16", "4bit", "lora", "full")
BITS = {"bf16": 16.0, "4bit": 4.5}


def memory_gib(params_b: float, mode: str = "bf16", overhead: float = 1.2) -> float:
    """Estimated peak GPU memory (GiB) of a model with ``params_b`` billion parameters in ``mode``:
    ``bf16`` / ``4bit`` inference, ``lora`` training (bf16 base) or ``full`` AdamW fine-tuning."""
    if params_b <= 0:
        raise ValueError(f"params_b must be > 0, got {params_b}")
    if overhead < 1:
        raise ValueError(f"overhead must be >= 1, got {overhead}")
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose one of {MODES}")
    params = params_b * 1e9
    if mode in BITS:
        return params * BITS[mode] / 8 * overhead / GIB
    if mode == "lora":
        return params * 2 * 1.5 / GIB
    return params * 16 * overhead / GIB


def fits(checkpoint: str, gpu_gib: float = 16.0, mode: str = "bf16") -> bool:
    """Whether ``checkpoint`` (a key of ``PARAMS_B``) fits ``gpu_gib`` of GPU memory in ``mode``,
    keeping 10 % free for the allocator's fragmentation."""
    if checkpoint not in PARAMS_B:
        raise ValueError(f"no parameter count for {checkpoint!r}; known: {sorted(PARAMS_B)}")
    if gpu_gib <= 0:
        raise ValueError(f"gpu_gib must be > 0, got {gpu_gib}")
    return memory_gib(PARAMS_B[checkpoint], mode) <= 0.9 * gpu_gib


def budget_table(gpu_gib: float = 16.0, checkpoints=None):
    """A DataFrame: estimated GiB per checkpoint and mode, and the modes that fit ``gpu_gib``."""
    import pandas as pd

    rows = {}
    for name in checkpoints or PARAMS_B:
        if name not in PARAMS_B:
            raise ValueError(f"no parameter count for {name!r}; known: {sorted(PARAMS_B)}")
        params = PARAMS_B[name]
        row = {"params (B)": params}
        row.update({f"{mode} GiB": round(memory_gib(params, mode), 1) for mode in MODES})
        row[f"fits {gpu_gib:g} GB as"] = ", ".join(m for m in MODES if memory_gib(params, m) <= 0.9 * gpu_gib) or "-"
        rows[name] = row
    return pd.DataFrame(rows).T


# Activation memory per token of a LoRA training step, measured on the CPU at full width and extrapolated to
# full depth (``benchmarks/bench_activations.py``, its figures and provenance in this file).
ACTIVATIONS_FILE = DATA_DIR / "benchmarks" / "activations.json"
# What a training chapter holds beside its weights and activations: the CUDA context and cuBLAS workspaces
# (~0.4-0.5 GiB on a T4 with torch 2.x), the LoRA adapters, their fp32 gradients and AdamW moments (r = 16 on
# q/v projections: < 0.1 GiB for 3B), the allocator's fragmentation: 1 GiB in all, an allowance, not a measurement.
TRAINING_EXTRA_GIB = 1.0


@cache
def activation_figures(path=None) -> dict:
    """``{checkpoint: {"plain", "checkpointing": bytes per token at full depth in half precision,
    "head": bytes per completion token (the logits' float32 chain)}}`` from the committed benchmark."""
    record = json.loads((path or ACTIVATIONS_FILE).read_text())
    out = {}
    for f in record["figures"]:
        out[f["checkpoint"]] = {"plain": f["plain"]["half_full_depth"],
                                "checkpointing": f["checkpointing"]["half_full_depth"],
                                "head": f["head_bytes_per_completion_token"], "stand_in": f["stand_in"],
                                "tokens": f["tokens"]}
    return out


@dataclass(frozen=True)
class Training:
    """One forward/backward of a chapter's training in the gpu profile: ``rows`` sequences at once (the
    trainer's micro-batch on CUDA), each ``tokens`` long (prompt, pictures and completion) with
    ``completion`` tokens scored (logits kept), activations recomputed in the backward or not."""

    trainer: str          # "sft", "grpo", "critic" (AUTO_MICRO_BATCH) or "ppo" (its mini-batch)
    tokens: int
    completion: int
    rows: int | None = None      # None: AUTO_MICRO_BATCH[trainer]
    checkpointing: bool = True   # every trainer's gradient_checkpointing="auto" is on with CUDA

    @property
    def batch_rows(self) -> int:
        return self.rows if self.rows is not None else AUTO_MICRO_BATCH[self.trainer]


# The training each chapter runs in the gpu profile (its largest step), read off its cells and configs. Token
# counts per sequence: the prompt's text as the gpu profile renders it (the papers' prompts), counted with the
# reader's tokenizer (SmolLM2's) by ``tools/prompt_tokens.py`` (critic 438 median / 473 max, cold start 154 /
# 161, MOLT SFT 445 / 477 text tokens), the pictures at the hub processors' counts for the toy world's 112-px
# pictures (Qwen2/2.5-VL and Qwen3-VL: 16 tokens; SmolVLM with one tile: 64), and the completion (its cap, or
# the SFT target: MOLT's transcripts 282 / 290 tokens); rounded up. SeRTS's proposer prompt is read off its
# template (the question and three abstracts), not counted.
CHAPTER_TRAINING = {
    # SeRTS PPO: the proposer's prompt (question, three abstracts) + <= 96 new tokens; mini-batch 4 (the cell)
    "18_serts_ppo": Training("ppo", tokens=900, completion=96, rows=4),
    # ReAG critic: (I_q, q, p) -> one answer token; 16 examples a step in micro-batches of 4
    "21_reag_critic": Training("critic", tokens=500, completion=1),
    # cold start: (I_q, q, p) + a trace of <= 256 tokens (the writer's cap), one row at a time
    "22_reag_cold_start": Training("sft", tokens=500, completion=256),
    # its cold start (chapter 22's SFT step) is larger than its GRPO step (the prompt + <= 80 new tokens)
    "23_reag_grpo": Training("sft", tokens=500, completion=256),
    # MOLT: the query and five candidates (six pictures, five wiki sections) + <= 300 new tokens
    "27_molt_training": Training("grpo", tokens=900, completion=300),
}


def activation_gib(checkpoint: str, training: Training, figures: dict | None = None) -> float:
    """GiB of activations one forward/backward of ``training`` keeps on ``checkpoint``: ``rows`` x
    (``tokens`` x the body's bytes per token + ``completion`` x the logits' bytes per token)."""
    figures = figures or activation_figures()
    if checkpoint not in figures:
        raise ValueError(f"no activation figure for {checkpoint!r}; measured: {sorted(figures)} "
                         "(run benchmarks/bench_activations.py --only <checkpoint> --write)")
    f = figures[checkpoint]
    body = f["checkpointing" if training.checkpointing else "plain"]
    return training.batch_rows * (training.tokens * body + training.completion * f["head"]) / GIB


def training_gib(checkpoint: str, training: Training | None = None) -> float:
    """Estimated peak GiB of training ``checkpoint``: LoRA from ``FULL_FINETUNE_LIMIT`` parameters on (bf16
    weights + ``TRAINING_EXTRA_GIB`` + the activations of ``training``, or the old rule of thumb 1.5 x the
    weights without one), full AdamW below."""
    params = PARAMS_B[checkpoint]
    if params * 1e9 < FULL_FINETUNE_LIMIT:
        return memory_gib(params, "full")
    if training is None:
        return memory_gib(params, "lora")
    return params * 1e9 * 2 / GIB + TRAINING_EXTRA_GIB + activation_gib(checkpoint, training)


def chapter_memory_gib(loaded: dict, trained_copies=(), trained_in_place=(), training: Training | None = None) -> float:
    """Estimated peak GiB of a chapter in the gpu profile: every role it loads (a dict role ->
    checkpoint) in bf16 inference, a role trained in place counted in its training mode instead,
    plus each trained *copy* (``copy.deepcopy`` of a loaded role) in its training mode. The mode of
    a trained model follows ``kbvqa.rl.common``: LoRA from ``FULL_FINETUNE_LIMIT`` parameters on
    (every hub checkpoint), full AdamW below; ``training`` (the chapter's ``CHAPTER_TRAINING``) gives
    LoRA its measured activations."""
    unknown = [c for c in loaded.values() if c not in PARAMS_B]
    if unknown:
        raise ValueError(f"no parameter count for {unknown}; known: {sorted(PARAMS_B)}")
    missing = [r for r in (*trained_copies, *trained_in_place) if r not in loaded]
    if missing:
        raise ValueError(f"trained roles {missing} are not among the loaded ones {sorted(loaded)}")
    total = sum(training_gib(c, training) if role in trained_in_place else memory_gib(PARAMS_B[c], "bf16")
                for role, c in loaded.items())
    return total + sum(training_gib(loaded[role], training) for role in trained_copies)


# What each chapter holds on the GPU in the gpu profile, read off its cells: the roles it loads
# (load_vlm), the roles it trains as a deep copy, and the roles it trains in place.
CHAPTER_ROLES = {
    "01_models": ({"reader"}, (), ()),
    "10_rcts_reasoning_contexts": ({"reasoner"}, (), ()),
    "13_rcts_mcts_hr": ({"generator"}, (), ()),
    "14_rcts_experiments": ({"generator"}, (), ()),
    "16_serts_tree_search": ({"searcher"}, (), ()),
    "17_serts_experiments": (set(), (), ()),   # its live rerun loads the cpu profile's searcher, on the CPU
    "18_serts_ppo": ({"searcher"}, (), ("searcher",)),       # proposer + evaluator: named adapters on one base
    "21_reag_critic": ({"critic"}, (), ("critic",)),     # frees the live critic before the ladder's one
    "22_reag_cold_start": ({"reag_generator", "rl_policy"}, (), ("rl_policy",)),   # the trace writer, then the policy
    "23_reag_grpo": ({"rl_policy"}, (), ("rl_policy",)),
    "24_reag_ablation": ({"critic", "rl_policy"}, (), ()),   # the ladder's generators; the real subset's critic
    "25_molt_candidates": ({"judge"}, (), ()),
    "26_molt_ladder": ({"judge"}, (), ()),
    "27_molt_training": ({"judge"}, (), ("judge",)),
    "28_molt_weak_to_strong": ({"judge"}, (), ()),
    "30_end_to_end": ({"reag_generator"}, (), ()),
}
# Chapters whose training ends before they load the next model (``kbvqa.models.free_memory`` hands the
# optimiser and activations back): their phases, each (roles, trained copies, trained in place) as in
# CHAPTER_ROLES; the peak is the largest phase.
CHAPTER_PHASES: dict = {
    # the student (SmolVLM) and the trace writer (Qwen2.5-VL-3B) at inference; the writer, held by no name,
    # is handed back (free_memory()) before the student trains
    "22_reag_cold_start": (({"rl_policy", "reag_generator"}, (), ()), ({"rl_policy"}, (), ("rl_policy",))),
}
# Chapters known not to fit a 16 GB T4: chapter -> why. Empty since chapter 18 trains its proposer and
# evaluator as two named LoRA adapters on one base (``kbvqa.models.adapters``) instead of two deep copies.
OVER_BUDGET: dict[str, str] = {}


# The gpu profile's retrieval models (not VLMs), loaded beside a chapter's VLMs: hub id -> (parameters,
# billions; download, GB, as the hub stores them in fp32; bytes per parameter once loaded). From their hub
# pages: CLIP ViT-B/32 151M parameters, model.safetensors 605 MB, loaded in bf16 (``resolve_dtype``);
# GroundingDINO-tiny 172M, 689 MB, loaded in fp32 (transformers' default).
RETRIEVAL_MODELS = {GPU_ENCODER: (0.151, 0.61, 2), GPU_GROUNDER: (0.172, 0.69, 4)}
# Which chapters load them in the gpu profile, read off their cells: ``get_encoders()`` (the toy world's
# document index: ch 11, 20; ``critic_items`` builds one in ch 21; ``retrieve_evidence`` in ch 24) and
# ``get_grounder`` (ch 20; ch 24's fine stage). Chapters 25-28 use the shipped toy encoders in both profiles.
CHAPTER_RETRIEVAL = {
    "11_rcts_hybrid_retrieval": (GPU_ENCODER,),
    "14_rcts_experiments": (GPU_ENCODER,),      # scienceqa_rows: ScienceQA's knowledge base indexed live
    "20_reag_retrieval": (GPU_ENCODER, GPU_GROUNDER),
    "21_reag_critic": (GPU_ENCODER, GPU_GROUNDER),     # the ladder critic's evidence: coarse + fine retrieval
    "24_reag_ablation": (GPU_ENCODER, GPU_GROUNDER),
}


def retrieval_memory_gib(checkpoint: str, overhead: float = 1.2) -> float:
    """Estimated GiB of one retrieval model of ``RETRIEVAL_MODELS`` at inference."""
    params_b, _, nbytes = RETRIEVAL_MODELS[checkpoint]
    return params_b * 1e9 * nbytes * overhead / GIB


def chapter_peak_gib(chapter: str) -> float:
    """A chapter's estimated peak GiB: its largest phase (``CHAPTER_PHASES``), else all of its roles
    at once (``CHAPTER_ROLES``), by ``chapter_memory_gib``."""
    phases = CHAPTER_PHASES.get(chapter) or (CHAPTER_ROLES[chapter],)
    training = CHAPTER_TRAINING.get(chapter)
    return max(chapter_memory_gib({r: GPU_CHECKPOINTS[r] for r in roles}, copies, in_place, training)
               for roles, copies, in_place in phases)


def chapter_budget(chapter: str) -> dict:
    """A chapter's gpu-profile estimate: the checkpoints it loads (VLMs, then retrieval models),
    their download (GB: VLM weights in bf16, retrieval models as the hub stores them) and its peak
    memory (GiB: ``chapter_peak_gib`` plus the retrieval models beside it); nothing loaded: zeros."""
    roles = CHAPTER_ROLES.get(chapter, (set(), (), ()))[0]
    loaded = {r: GPU_CHECKPOINTS[r] for r in sorted(roles)}
    vlms = sorted(set(loaded.values()))
    retrieval = list(CHAPTER_RETRIEVAL.get(chapter, ()))
    peak = (chapter_peak_gib(chapter) if loaded else 0.0) + sum(retrieval_memory_gib(c) for c in retrieval)
    download = sum(PARAMS_B[c] * 2 for c in vlms) + sum(RETRIEVAL_MODELS[c][1] for c in retrieval)
    return {"checkpoints": vlms + retrieval, "download_gb": round(download, 1),
            "peak_gib": round(peak, 1),
            "over_budget": OVER_BUDGET.get(chapter, "")}
