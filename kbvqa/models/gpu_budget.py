"""Which gpu-profile checkpoints fit a GPU of a given size: an estimate from parameter counts.

The one GPU lent while this book was written (an H200, for fifteen minutes) ran the smoke run of
tiny random models (``data/benchmarks/gpu_smoke.json``), not the full-size shapes, so the book does
not *measure* their memory; this file estimates it with the usual accounting, and says so wherever
it is shown:

- **inference**: weights at ``bits`` per parameter (16 for bf16, ~4.5 for 4-bit NF4/AWQ including
  scales and the layers kept in 16 bit), times ``overhead`` (1.2: activations, KV cache of a few
  thousand tokens, CUDA context) — the rule of thumb of the HF model-memory calculator;
- **LoRA training** (ReAG/MOLT GRPO, SeRTS PPO on one GPU): frozen bf16 weights plus activations
  with gradient checkpointing, ≈ 1.5 × the bf16 weights (the adapter and its Adam states are < 1 %);
- **full fine-tuning** with AdamW in mixed precision: 16 bytes per parameter (bf16 weights and
  grads, fp32 master copy and two Adam moments), times the same ``overhead``.

``CHAPTER_ROLES`` records what each chapter holds on the GPU (read off its cells; a test checks it
against the notebooks), ``CHAPTER_PHASES`` the chapters that free one model before loading the next,
``OVER_BUDGET`` the chapters known not to fit a 16 GB T4, ``CHAPTER_RETRIEVAL`` the retrieval models
(CLIP, GroundingDINO) a chapter loads beside its VLMs, and ``chapter_budget()`` the per-chapter
download and memory estimates the README lists.

Parameter counts are the hub model cards' (billions, rounded). Where the checkpoint's published
``config.json`` is committed (``data/hub_configs``, ``kbvqa.models.hub_configs``), the count is
checked against the exact one from the shapes (the model built on the meta device, no weights):
Qwen2-VL-2B 2,208,985,600 and Qwen2.5-VL-3B 3,754,622,976 agree within 0.1 % (the tests allow 1 %).
Qwen3-VL-2B and the SmolVLM counts stay the cards' until their configs are committed
(``hub_configs.MISSING``). Leaves out: activation memory as a function of image resolution and batch
size (measure it with ``torch.cuda.max_memory_allocated`` on a GPU).
"""
from __future__ import annotations

from kbvqa.models.checkpoints import GPU_CHECKPOINTS
from kbvqa.models.encoders import GPU_ENCODER
from kbvqa.retrieval.subject_grounding import GPU_GROUNDER
from kbvqa.rl.common import FULL_FINETUNE_LIMIT

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


def chapter_memory_gib(loaded: dict, trained_copies=(), trained_in_place=()) -> float:
    """Estimated peak GiB of a chapter in the gpu profile: every role it loads (a dict role ->
    checkpoint) in bf16 inference, a role trained in place counted in its training mode instead,
    plus each trained *copy* (``copy.deepcopy`` of a loaded role) in its training mode. The mode of
    a trained model follows ``kbvqa.rl.common``: LoRA from ``FULL_FINETUNE_LIMIT`` parameters on
    (every hub checkpoint), full AdamW below."""
    def training(checkpoint):
        params = PARAMS_B[checkpoint]
        return memory_gib(params, "lora" if params * 1e9 >= FULL_FINETUNE_LIMIT else "full")

    unknown = [c for c in loaded.values() if c not in PARAMS_B]
    if unknown:
        raise ValueError(f"no parameter count for {unknown}; known: {sorted(PARAMS_B)}")
    missing = [r for r in (*trained_copies, *trained_in_place) if r not in loaded]
    if missing:
        raise ValueError(f"trained roles {missing} are not among the loaded ones {sorted(loaded)}")
    total = sum(training(c) if role in trained_in_place else memory_gib(PARAMS_B[c], "bf16")
                for role, c in loaded.items())
    return total + sum(training(loaded[role]) for role in trained_copies)


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
    "22_reag_cold_start": ({"rl_policy"}, (), ("rl_policy",)),
    "23_reag_grpo": ({"rl_policy"}, (), ("rl_policy",)),
    "25_molt_candidates": ({"judge"}, (), ()),
    "26_molt_ladder": ({"judge"}, (), ()),
    "27_molt_training": ({"judge"}, (), ("judge",)),
    "28_molt_weak_to_strong": ({"judge"}, (), ()),
    "30_end_to_end": ({"reag_generator"}, (), ()),
}
# Chapters whose training ends before they load the next model (``kbvqa.models.free_memory`` hands the
# optimiser and activations back): their phases, each (roles, trained copies, trained in place) as in
# CHAPTER_ROLES; the peak is the largest phase.
CHAPTER_PHASES: dict = {}     # none since chapter 21 stopped loading the generator beside its critic
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
    return max(chapter_memory_gib({r: GPU_CHECKPOINTS[r] for r in roles}, copies, in_place)
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
