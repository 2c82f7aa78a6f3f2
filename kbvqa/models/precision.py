"""The precision a merged model infers in: ``KBVQA_PRECISION=auto|fp32|bf16|int8w`` (issue 49, item 1).

- ``fp32``: the default, and what every committed table was made with.
- ``bf16``: the whole model in bfloat16 (inputs follow the model's dtype in ``VLM.encode``; logits
  are read back in float32). Only where the hardware computes it (``computes_bf16``: AVX512-BF16 or
  AMX on a CPU, compute capability 8.0+ on CUDA); elsewhere PyTorch emulates it, several times slower
  than fp32, so asking for it raises ``ValueError`` naming ``computes_bf16`` and fp32. On a CPU the
  text model's linear layers and the output head keep their weights pre-packed for oneDNN
  (``PackedBF16Linear``): a plain bfloat16 ``F.linear`` reorders its weight on every call, which made
  a decode step slower than fp32.
- ``int8w``: weight-only int8 on the text model's linear layers (symmetric, one scale per output
  channel; ``torch._weight_int8pack_mm``, the kernel torchao's int8 weight-only mode uses on a CPU).
  Activations stay in the model's float dtype, unlike dynamic int8 (which quantises activations too
  and breaks this 135M reader: 0.225 gold-passage accuracy against 1.00, issue 49).
- ``auto``: bf16 where ``computes_bf16`` *and* the reader's card accepts the bf16 path (item 4:
  ``card.json["evaluation_fast"]``, written by ``python -m kbvqa.reader.fastcard``; ``accepted_fast_paths``),
  else fp32: a path that fails the accuracy condition is not used. It never picks int8w: its int8
  kernel is slower than an fp32 matmul on every machine measured (``data/benchmarks/results.json``).

Only inference uses this: a policy being trained keeps fp32 and unmerged adapters (``load_reader``
refuses another precision with ``merge=False``). The precision travels with the model string
(``precision_suffix``: ``reader:<fingerprint>+bf16``; fp32 adds nothing, so the committed tables
keep their string), and a table made at another precision is flagged as one made by another model.

Leaves out: a static KV cache and ``torch.compile`` (not measured to pay here), fp16 (the gpu profile's
``loading.resolve_dtype``).
"""
from __future__ import annotations

import functools
import os

import torch

from kbvqa.experiments.runs import precision_suffix

__all__ = ["DEFAULT_PRECISION", "PRECISIONS", "PRECISION_ENV", "Int8WeightLinear", "PackedBF16Linear",
           "accepted_fast_paths", "apply_precision", "can_pack_bf16", "contiguous_head_input", "onednn_packs_bf16",
           "pack_bf16_linears", "precision_suffix",
           "quantise_int8_weights", "requested_precision", "resolve_precision"]

PRECISIONS = ("auto", "fp32", "bf16", "int8w")
DEFAULT_PRECISION = "fp32"
PRECISION_ENV = "KBVQA_PRECISION"


def requested_precision(value: str | None = None) -> str:
    """``value``, else ``$KBVQA_PRECISION``, else ``DEFAULT_PRECISION``; an unknown one raises
    ``ValueError`` listing the choices."""
    value = value if value is not None else os.environ.get(PRECISION_ENV, DEFAULT_PRECISION)
    value = str(value).strip().lower()
    if value not in PRECISIONS:
        raise ValueError(f"unknown precision {value!r} ({PRECISION_ENV}); choose one of {list(PRECISIONS)}")
    return value


def accepted_fast_paths(card: str | os.PathLike | None = None) -> set[str]:
    """The precisions whose fast path passed the accuracy condition on the whole card (issue 49,
    item 4): ``evaluation_fast`` entries of the reader's ``card.json`` with ``accepted`` true. An absent
    card or entry accepts nothing (``auto`` then stays at fp32)."""
    import json
    from pathlib import Path

    from kbvqa.config import DATA_DIR

    path = Path(card) if card is not None else DATA_DIR / "reader" / "card.json"
    try:
        entries = json.loads(path.read_text()).get("evaluation_fast", {})
    except (OSError, ValueError, AttributeError):
        return set()
    return {e.get("precision") for e in entries.values() if isinstance(e, dict) and e.get("accepted") is True}


def resolve_precision(value: str | None, device: torch.device) -> str:
    """The concrete precision (``fp32``, ``bf16`` or ``int8w``) for ``device``: ``auto`` picks bf16 where
    ``computes_bf16`` and the card accepts it (``accepted_fast_paths``), fp32 elsewhere; bf16 where the
    hardware only emulates it raises."""
    from kbvqa.models.loading import computes_bf16

    value = requested_precision(value)
    if value == "auto":
        return "bf16" if computes_bf16(device) and "bf16" in accepted_fast_paths() else "fp32"
    if value == "bf16" and not computes_bf16(device):
        raise ValueError(f"{PRECISION_ENV}=bf16, but computes_bf16({device}) is False: this {device.type} only "
                         "emulates bfloat16, far slower than float32; use fp32 (or auto)")
    return value


class Int8WeightLinear(torch.nn.Module):
    """A linear layer with int8 weights (one float scale per output channel) and float activations."""

    def __init__(self, linear: torch.nn.Linear):
        super().__init__()
        w = linear.weight.detach().float()
        scale = w.abs().amax(dim=1).clamp(min=1e-8) / 127.0
        self.register_buffer("weight_int8", torch.round(w / scale[:, None]).clamp(-127, 127).to(torch.int8))
        self.register_buffer("scale", scale)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().float())
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, x.shape[-1])
        out = torch._weight_int8pack_mm(flat.contiguous(), self.weight_int8, self.scale.to(x.dtype))
        out = out.reshape(*x.shape[:-1], self.out_features)
        return out if self.bias is None else out + self.bias.to(out.dtype)


@functools.lru_cache(maxsize=1)
def onednn_packs_bf16() -> bool:
    """Whether this PyTorch *and this CPU* can pre-pack bfloat16 weights for oneDNN (``can_pack_bf16``
    on ``torch.ops.mkldnn``; decided once per process)."""
    return can_pack_bf16(getattr(torch.ops, "mkldnn", None))


def can_pack_bf16(ops) -> bool:
    """A CPU build with mkldnn whose ``ops`` namespace has the packing ops, on a CPU with the
    instructions its bf16 packing needs (AVX512BW/VL/DQ or AVX-NE-CONVERT): an AVX2-only CPU raises
    ``RuntimeError`` at the first reorder, so one tiny reorder is tried."""
    if not (torch.backends.mkldnn.is_available() and ops is not None
            and hasattr(ops, "_reorder_linear_weight") and hasattr(ops, "_linear_pointwise")):
        return False
    try:
        ops._reorder_linear_weight(torch.zeros(16, 16, dtype=torch.bfloat16), 1)
    except RuntimeError:
        return False
    return True


class PackedBF16Linear(torch.nn.Module):
    """A bfloat16 linear layer whose weight oneDNN reorders once, at load, into its own blocked layout.

    ``F.linear`` on a plain bfloat16 weight reorders it on every call; for the few rows of a decode
    step that costs more than the product (576 x 1536 at one row, one thread: fp32 144 us, bf16
    124 us, pre-packed bf16 59 us; the 49,156-row head 6.0 / 4.2 / 2.4 ms, measured on AMX). Same
    numbers as ``F.linear`` up to the order of the sums. ``weight`` stays as a buffer for code that
    reads it; the packed copy is an opaque tensor that ``state_dict`` and ``.to`` leave alone."""

    def __init__(self, linear: torch.nn.Linear, rows_hint: int = 1):
        super().__init__()
        weight = linear.weight.detach().to(torch.bfloat16)
        self.register_buffer("weight", weight, persistent=False)
        self.register_buffer("bias", None if linear.bias is None else linear.bias.detach().to(torch.bfloat16),
                             persistent=False)
        self.packed = torch.ops.mkldnn._reorder_linear_weight(weight, rows_hint)
        self.in_features, self.out_features = linear.in_features, linear.out_features

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        flat = x.reshape(-1, self.in_features).to(torch.bfloat16).clone(memory_format=torch.contiguous_format)
        out = torch.ops.mkldnn._linear_pointwise(flat, self.packed, self.bias, "none", [], "")
        return out.reshape(*x.shape[:-1], self.out_features)


def pack_bf16_linears(module: torch.nn.Module) -> int:
    """Replace every ``nn.Linear`` under ``module`` by ``PackedBF16Linear``; returns how many."""
    replaced = 0
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.Linear):
            setattr(module, name, PackedBF16Linear(child))
            replaced += 1
        else:
            replaced += pack_bf16_linears(child)
    return replaced


def quantise_int8_weights(module: torch.nn.Module, skip: tuple[str, ...] = ("lm_head",)) -> int:
    """Replace every ``nn.Linear`` under ``module`` (but those named in ``skip``) by ``Int8WeightLinear``;
    returns how many were replaced."""
    replaced = 0
    for name, child in list(module.named_children()):
        if isinstance(child, torch.nn.Linear) and name not in skip:
            setattr(module, name, Int8WeightLinear(child))
            replaced += 1
        else:
            replaced += quantise_int8_weights(child, skip)
    return replaced


def _contiguous_input(module, args):
    x = args[0]
    return (x.clone(memory_format=torch.contiguous_format), *args[1:])


def contiguous_head_input(core) -> None:
    """Make the output head read a contiguous input. The last position that ``logits_to_keep=1``
    slices out of ``[batch, length, hidden]`` is a strided view (``is_contiguous`` still says True: its
    strided dimension has size 1, so ``.contiguous()`` does nothing; a clone gives dense strides, a
    copy of ``batch x hidden`` numbers); ``matmul`` sends that 3-d input to
    ``bmm`` against the transposed ``[hidden, vocab]`` head, and in bfloat16 oneDNN first copies that
    whole 49,156 x 576 matrix (68 ms a prefill, measured; the matmul itself takes 2.5 ms). float32 is
    left as it is, so the committed fp32 path stays bit for bit what made the tables."""
    head = getattr(core, "lm_head", None)
    if head is not None and not getattr(head, "_kbvqa_contiguous", False):
        head.register_forward_pre_hook(_contiguous_input)
        head._kbvqa_contiguous = True


def apply_precision(vlm, precision: str | None = None):
    """Put a merged ``vlm`` in ``precision`` (module docstring) and record it as ``vlm.precision``;
    returns ``vlm``. int8w quantises the text model's linear layers (the vision tower and the output
    head stay float)."""
    concrete = resolve_precision(precision, vlm.device)
    if concrete != "fp32":
        contiguous_head_input(vlm.core)
    if concrete == "bf16":
        vlm.model.to(torch.bfloat16)
        if vlm.device.type == "cpu" and onednn_packs_bf16():
            text = getattr(vlm.core.model, "text_model", None) or getattr(vlm.core.model, "language_model", None)
            pack_bf16_linears(text)
            vlm.core.lm_head = PackedBF16Linear(vlm.core.lm_head)
    elif concrete == "int8w":
        text = getattr(vlm.core.model, "text_model", None) or getattr(vlm.core.model, "language_model", None)
        if text is None or quantise_int8_weights(text) == 0:
            raise ValueError("int8w found no text-model linear layers to quantise")
    vlm.precision = concrete
    return vlm
