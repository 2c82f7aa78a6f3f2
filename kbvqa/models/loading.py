"""Loading a VLM checkpoint: device and dtype, 4-bit / AWQ / GPTQ, LoRA adapters.

``load_model(path_or_id, ...)`` returns ``(model, processor)`` for ``VLM.from_pretrained``:

- a local directory is read with ``local_files_only=True`` (no network, whatever HF_HUB_OFFLINE
  says); a hub id goes through the normal hub cache (gpu profile only, never in tests);
- a directory holding a LoRA adapter (``adapter_config.json``, as ``VLM.save_pretrained`` writes for
  a LoRA model) loads its base checkpoint, then the adapter on top;
- ``device=None`` -> CUDA when present, else CPU; ``dtype=None`` -> bfloat16 on a GPU that computes
  in it natively (compute capability 8.0 and up: A100, L4, H100), float16 on older ones (the T4
  only *emulates* bfloat16, which ``torch.cuda.is_bf16_supported()`` counts), float32 on CPU;
  ``"auto"`` keeps the checkpoint's dtype;
- ``load_in_4bit=True`` quantises with bitsandbytes (NF4, bf16 compute; CUDA only);
- a checkpoint already quantised (``quantization_config`` in its config, e.g. ``...-AWQ`` or
  ``...-GPTQ-Int4``) loads through transformers' own support, which in transformers 5.23 needs
  ``gptqmodel`` (AWQ) or ``optimum`` + ``gptqmodel`` (GPTQ). Missing backends raise ``ImportError``
  saying what to install, before anything is downloaded or loaded.

``checkpoint_from_env(variable, default)`` reads a checkpoint override from the environment (the gpu
profile's CLIP encoder ``KBVQA_ENCODER`` and GroundingDINO ``KBVQA_GROUNDER``: a hub id or a local
folder, e.g. the random tiny models of ``tools/gpu_smoke_models.py``); ``local_only(path)`` is the
``local_files_only`` flag for a local folder.

``wrap_lora`` puts peft LoRA adapters on the *language model* only (the vision tower stays frozen,
as in ReAG's critic where the vision encoder is frozen); ``vision=True`` adapts it too.

Leaves out: the VLM operations (``vlm.py``), tiny models (``families.py``).
"""
from __future__ import annotations

import contextlib
import gc
import importlib.util
import json
import re
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from kbvqa.models.processors import family_of, load_processor

BACKENDS = {  # quant_method -> (modules that must import, what to install)
    "bitsandbytes": (("bitsandbytes",), "pip install 'bitsandbytes>=0.45'  (or: pip install 'kbvqa-book[gpu]')"),
    "awq": (("gptqmodel",), "pip install gptqmodel  (transformers 5.23 loads AWQ checkpoints through it)"),
    "gptq": (("optimum", "gptqmodel"), "pip install optimum gptqmodel"),
}
VISION_MODULES = ("visual", "vision_model", "vision_tower")


@contextlib.contextmanager
def quiet_progress():
    """Hide transformers' per-file progress bars (loading/saving a tiny model is instant and the
    bars clutter notebook output); restores the previous setting."""
    from transformers.utils import logging as hf_logging

    enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if enabled:
            hf_logging.enable_progress_bar()


def free_memory() -> None:
    """Collect garbage and hand cached CUDA blocks back: a chapter calls it after ``del`` of a model
    it no longer needs and before it loads the next, so the two never share a 16 GB GPU (on the CPU
    it only collects garbage)."""
    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def require_backend(method: str) -> None:
    """Raise ``ImportError`` naming the package to install when ``method``'s backend is missing."""
    if method not in BACKENDS:
        raise ValueError(f"unsupported quantisation method {method!r}; supported: {sorted(BACKENDS)}")
    modules, install = BACKENDS[method]
    missing = [m for m in modules if importlib.util.find_spec(m) is None]
    if missing:
        raise ImportError(f"loading a {method} model needs {', '.join(missing)}, which is not installed: {install}")


def resolve_device(device: str | torch.device | None) -> torch.device:
    if device is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    device = torch.device(device)
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' requested but no CUDA device is available")
    return device


def native_bf16(device: torch.device) -> bool:
    """Whether a CUDA device computes in bfloat16 in hardware (compute capability >= 8.0)."""
    return device.type == "cuda" and torch.cuda.get_device_capability(device)[0] >= 8


def computes_bf16(device: torch.device) -> bool:
    """Whether ``device`` computes bfloat16 matmuls in hardware: a CUDA device of compute capability
    >= 8.0, or a CPU with AVX512-BF16 or AMX. Elsewhere PyTorch emulates them, far slower than
    float32 (``benchmarks/bench_reader.py`` measures the ratio on the machine at hand), so training
    there autocasts nothing (``kbvqa.reader.train``)."""
    if device.type == "cuda":
        return native_bf16(device)
    probes = ("_is_avx512_bf16_supported", "_is_amx_tile_supported")
    return device.type == "cpu" and any(getattr(torch.cpu, name, lambda: False)() for name in probes)


def half_dtype(device: torch.device):
    """The 16-bit dtype to compute in on ``device``: bfloat16 where native, else float16."""
    return torch.bfloat16 if native_bf16(device) else torch.float16


def resolve_dtype(dtype: Any, device: torch.device):
    if dtype is None:
        return half_dtype(device) if device.type == "cuda" else torch.float32
    if dtype == "auto" or isinstance(dtype, torch.dtype):
        return dtype
    if isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype):
        return getattr(torch, dtype)
    raise ValueError(f"dtype must be None, 'auto', a torch.dtype or its name, got {dtype!r}")


def quantization_method(config) -> str | None:
    """``quant_method`` of a config's ``quantization_config`` (lower case), or None."""
    quant = getattr(config, "quantization_config", None)
    if quant is None:
        return None
    method = quant.get("quant_method") if isinstance(quant, dict) else getattr(quant, "quant_method", None)
    return str(getattr(method, "value", method)).lower() if method is not None else None


def checkpoint_from_env(variable: str, default: str) -> str:
    """``$variable`` when set (a hub id or a local checkpoint folder), else ``default``. A value that
    names a local path (it starts with ``/``, ``.`` or ``~``) must be an existing folder, else
    ``ValueError``: a typo must not turn into a hub download."""
    import os

    value = os.environ.get(variable, "").strip()
    if not value:
        return default
    if value.startswith(("/", ".", "~")):
        path = Path(value).expanduser()
        if not path.is_dir():
            raise ValueError(f"{variable}={value!r} is not a folder: give a hub id or a local checkpoint folder")
        return str(path)
    return value


def local_only(path_or_id) -> dict:
    """``{"local_files_only": True}`` for a local folder (read without any network), else ``{}``."""
    return {"local_files_only": True} if Path(str(path_or_id)).is_dir() else {}


def load_model(path_or_id, device=None, dtype=None, load_in_4bit: bool = False, strict: bool = False, **kwargs):
    """``(model, processor)`` for a checkpoint; see the module docstring. ``kwargs`` go to
    ``from_pretrained`` of the model (e.g. ``attn_implementation``, ``revision``). ``strict``: a tensor
    missing from the checkpoint (which ``from_pretrained`` would initialise afresh and only warn about),
    an unexpected one or a misshapen one raises ``ValueError`` naming the checkpoint."""
    from transformers import AutoConfig, AutoModelForImageTextToText

    path = str(path_or_id)
    adapter = Path(path) / "adapter_config.json"
    if adapter.is_file():
        return _load_adapter(path, json.loads(adapter.read_text()), device, dtype, load_in_4bit, **kwargs)
    device = resolve_device(device)
    dtype = resolve_dtype(dtype, device)
    hub = local_only(path)
    config = AutoConfig.from_pretrained(path, **hub)
    family = family_of(config)
    method = quantization_method(config)
    if method is not None:
        require_backend(method)
    if load_in_4bit:
        if method is not None:
            raise ValueError(f"{path} is already quantised ({method}); drop load_in_4bit")
        require_backend("bitsandbytes")
        if device.type != "cuda":
            raise ValueError("load_in_4bit needs a CUDA device")
    processor = load_processor(path, family=family, **hub)
    options: dict[str, Any] = dict(dtype=dtype, **hub, **kwargs)
    if load_in_4bit:
        from transformers import BitsAndBytesConfig

        compute = half_dtype(device) if dtype in ("auto", torch.float32) else dtype
        options["quantization_config"] = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                                            bnb_4bit_compute_dtype=compute)
    if load_in_4bit or method is not None:
        options["device_map"] = {"": device.index or 0} if device.type == "cuda" else {"": "cpu"}
    with quiet_progress():
        model = AutoModelForImageTextToText.from_pretrained(path, config=config, output_loading_info=strict,
                                                            **options)
    if strict:
        model, info = model
        problems = {k: sorted(info.get(k) or [])[:3] for k in ("missing_keys", "unexpected_keys", "mismatched_keys")}
        if any(problems.values()):
            raise ValueError(f"{path} does not hold the model its config.json describes: {problems}; "
                             f"restore it (`git checkout {path}` for a shipped one)")
    if "device_map" not in options:
        model = model.to(device)
    return model.eval(), processor


def _load_adapter(path, adapter_config, device, dtype, load_in_4bit, **kwargs):
    from peft import PeftModel

    base = adapter_config.get("base_model_name_or_path")
    if not base:
        raise ValueError(f"{path}/adapter_config.json names no base_model_name_or_path")
    model, _ = load_model(base, device=device, dtype=dtype, load_in_4bit=load_in_4bit, **kwargs)
    with quiet_progress():
        model = PeftModel.from_pretrained(model, path, is_trainable=False)
    return model.eval(), load_processor(path, family=model.get_base_model().config.model_type)


def lora_pattern(target_modules: Sequence[str], vision: bool = False) -> str:
    """A regex (peft ``target_modules``) matching the named linear layers, outside the vision tower
    unless ``vision``."""
    if isinstance(target_modules, str) or not target_modules or not all(
            isinstance(t, str) and t for t in target_modules):
        raise ValueError("target_modules must be a non-empty list of module names, e.g. ['q_proj', 'v_proj']")
    names = "|".join(re.escape(t) for t in target_modules)
    if vision:
        return rf"^(.*\.)?({names})$"
    skip = "|".join(VISION_MODULES)
    return rf"^(?!(.*\.)?({skip})(\.|$)).*\.({names})$"


def lora_config(model, r: int = 16, alpha: int = 32, dropout: float = 0.05,
                target_modules: Sequence[str] = ("q_proj", "v_proj"), vision: bool = False):
    """The checked ``peft.LoraConfig`` for ``model``: a clear ``ValueError`` for a bad rank, alpha or
    dropout, or target modules that match nothing (outside the vision tower unless ``vision``)."""
    from peft import LoraConfig

    if not isinstance(r, int) or r < 1:
        raise ValueError(f"r must be a positive int, got {r!r}")
    if not alpha > 0 or not 0 <= dropout < 1:
        raise ValueError(f"need alpha > 0 and 0 <= dropout < 1, got alpha={alpha!r}, dropout={dropout!r}")
    pattern = lora_pattern(target_modules, vision)
    if not any(re.fullmatch(pattern, name) for name, _ in model.named_modules()):
        raise ValueError(f"no module matches target_modules={list(target_modules)} "
                         f"({'with' if vision else 'outside'} the vision tower)")
    return LoraConfig(r=r, lora_alpha=alpha, lora_dropout=dropout, target_modules=pattern, bias="none")


def wrap_lora(model, r: int = 16, alpha: int = 32, dropout: float = 0.05,
              target_modules: Sequence[str] = ("q_proj", "v_proj"), vision: bool = False,
              adapter_name: str = "default"):
    """``peft.get_peft_model`` with a LoRA config (``lora_config``); all other weights are frozen.
    More adapters on the same base: ``kbvqa.models.adapters.add_named_adapter``."""
    from peft import get_peft_model, prepare_model_for_kbit_training

    if hasattr(model, "peft_config"):
        raise ValueError("the model already has LoRA adapters")
    config = lora_config(model, r=r, alpha=alpha, dropout=dropout, target_modules=target_modules, vision=vision)
    if getattr(model, "is_loaded_in_4bit", False):
        model = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
    with warnings.catch_warnings():  # peft probes transformers' deprecated `is_gradient_checkpointing`
        warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)
        return get_peft_model(model, config, adapter_name=adapter_name)
