"""The published ``config.json`` of the gpu-profile checkpoints, committed, and the exact shapes they give.

``data/hub_configs/<org>__<name>/config.json`` holds a checkpoint's ``config.json`` as its authors
published it on the Hugging Face hub (where each copy was read, and the model's licence:
``data/hub_configs/README.md``). With it a machine without the hub can still build the full-size
model *on the meta device*: every module and parameter shape, no weights allocated (a fraction of a
second and a few MB, even for the 3B). That gives

- ``hub_config(checkpoint)``: the ``transformers`` config, loaded from the local folder only;
- ``meta_model(checkpoint)``: ``AutoModelForImageTextToText.from_config`` under ``torch.device("meta")``,
  for shape-level checks of full-size code paths (layer names, LoRA target modules, tied heads);
- ``param_count(checkpoint)``: the exact number of parameters (tied embeddings counted once), which
  ``kbvqa.models.gpu_budget.PARAMS_B`` (the model cards' rounded counts) is checked against in
  ``tests/test_gpu_budget.py``.

``MISSING`` names the gpu-profile checkpoints whose published ``config.json`` could not be found in
full when the folder was assembled (no network here), with the reason; those keep their model-card
counts, unchecked. A config is added by copying the hub file verbatim into a new folder (and its
source into the README); the tests then require it to leave ``MISSING``.

Leaves out: weights, tokenizers and processors (a meta model cannot run a forward pass); checkpoints
outside ``GPU_CHECKPOINTS`` (the papers' 7B/8B models in ``PARAMS_B`` have no committed config);
activation memory (see ``gpu_budget``).
"""
from __future__ import annotations

from functools import cache
from pathlib import Path

from kbvqa.config import DATA_DIR

HUB_CONFIGS_DIR = DATA_DIR / "hub_configs"

# gpu-profile checkpoints without a committed config.json, and why (see data/hub_configs/README.md).
MISSING = {
    "Qwen/Qwen3-VL-2B-Instruct": (
        "published config.json (1.51 kB) not found in full in the sources searched; only partial "
        "copies (text_config subsets) were found, and values are not reconstructed from defaults"),
    "HuggingFaceTB/SmolVLM-256M-Instruct": (
        "published config.json (7.35 kB, full Idefics3 text and perceiver dumps) not found verbatim; "
        "only truncated excerpts and fine-tunes' edited copies were found"),
    "HuggingFaceTB/SmolVLM-500M-Instruct": (
        "published config.json not found verbatim; only a fine-tune's edited copy was found"),
}


def config_dir(checkpoint: str) -> Path:
    """The committed folder of ``checkpoint`` (``org/name`` -> ``data/hub_configs/org__name``).
    Raises ``ValueError`` when none is committed, quoting the ``MISSING`` reason if there is one."""
    folder = HUB_CONFIGS_DIR / checkpoint.replace("/", "__")
    if not (folder / "config.json").is_file():
        reason = MISSING.get(checkpoint, "not a checkpoint this project uses")
        raise ValueError(f"no committed config.json for {checkpoint!r} ({reason}); "
                         f"committed: {committed_checkpoints()}")
    return folder


def committed_checkpoints() -> list[str]:
    """Hub ids of every committed config, sorted."""
    if not HUB_CONFIGS_DIR.is_dir():
        return []
    return sorted(p.parent.name.replace("__", "/", 1) for p in HUB_CONFIGS_DIR.glob("*/config.json"))


def hub_config(checkpoint: str):
    """``AutoConfig`` of ``checkpoint`` from its committed folder (``local_files_only``: no network)."""
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(str(config_dir(checkpoint)), local_files_only=True)


def meta_model(checkpoint: str):
    """The full-size model of ``checkpoint`` built on the meta device: real module tree and
    parameter shapes, no storage. Use it for shapes and names only; it cannot run."""
    import torch
    from transformers import AutoModelForImageTextToText

    config = hub_config(checkpoint)
    with torch.device("meta"):
        return AutoModelForImageTextToText.from_config(config)


@cache
def param_count(checkpoint: str) -> int:
    """Exact parameter count of ``checkpoint`` from its committed shapes (``model.parameters()``,
    so a tied LM head is counted once, as the hub's safetensors store it)."""
    return sum(p.numel() for p in meta_model(checkpoint).parameters())


def param_counts() -> dict:
    """``{checkpoint: exact parameter count}`` for every committed config."""
    return {checkpoint: param_count(checkpoint) for checkpoint in committed_checkpoints()}


def params_b_disagreements(params_b: dict, tolerance: float = 0.01) -> dict:
    """The committed checkpoints whose count in ``params_b`` (billions, e.g. ``gpu_budget.PARAMS_B``)
    differs from the exact count by more than ``tolerance`` (relative): ``{checkpoint: (exact_b,
    listed_b)}``. A committed checkpoint missing from ``params_b`` is reported with ``None``."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    out = {}
    for checkpoint, exact in param_counts().items():
        exact_b, listed = exact / 1e9, params_b.get(checkpoint)
        if listed is None or abs(exact_b - listed) > tolerance * exact_b:
            out[checkpoint] = (exact_b, listed)
    return out
