"""Non-finite logits raise instead of turning into garbage text (issue 56: fp16 that is safe).

In float16 some models overflow: Qwen2 and Qwen2.5-VL are reported to produce NaN logits or
all-"!" output (transformers #33294; QwenLM/Qwen2.5-VL #761, #826, #868). Sampling from NaN
logits does not fail; it returns nonsense that every later number would silently inherit. So:

- ``check_finite(logits, where, dtype)`` raises ``NonFiniteLogitsError`` when a tensor of logits
  holds a NaN or +inf, or a row that is -inf everywhere (no token left), naming the fix;
- ``FiniteLogitsCheck`` is the same check as a ``transformers`` ``LogitsProcessor``, run at every
  decoding step of ``generate`` (after the built-in processors, whose -inf masks are legitimate).

The check costs one pass over the logits of a step, next to a forward pass of the whole model.
Leaves out: loss scaling for fp16 training (``kbvqa.rl.common``), choosing the dtype
(``kbvqa.models.loading``).
"""
from __future__ import annotations

import torch

__all__ = ["FiniteLogitsCheck", "NonFiniteLogitsError", "check_finite"]


class NonFiniteLogitsError(FloatingPointError):
    """A model produced NaN or infinite logits (see the module docstring for the usual cause)."""


def check_finite(logits: torch.Tensor, where: str, dtype=None) -> torch.Tensor:
    """``logits`` unchanged, or ``NonFiniteLogitsError`` when it holds NaN, +inf, or a row that is
    -inf everywhere. ``where`` names the call in the message; ``dtype`` the model's (default: the
    logits')."""
    with torch.no_grad():
        nan = int(torch.isnan(logits).sum())
        posinf = int(torch.isposinf(logits).sum())
        dead = int(torch.isneginf(logits).all(dim=-1).sum()) if logits.numel() else 0
    if nan or posinf or dead:
        dtype = dtype or logits.dtype
        raise NonFiniteLogitsError(
            f"{where}: the model produced {nan} NaN and {posinf} +inf logits, and {dead} row(s) with no "
            f"finite logit, in {str(dtype).replace('torch.', '')}. Float16 overflows in some models "
            "(Qwen2 / Qwen2.5-VL: transformers #33294). Load the model in float32 (dtype=torch.float32, or "
            "KBVQA_PRECISION=fp32 on the CPU), in bfloat16 where the GPU computes it, or choose another model.")
    return logits


class FiniteLogitsCheck:
    """``check_finite`` on every decoding step's scores (a ``LogitsProcessor``: ``(input_ids,
    scores) -> scores``)."""

    def __init__(self, dtype=None):
        self.dtype = dtype

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        return check_finite(scores, "generate", self.dtype)
