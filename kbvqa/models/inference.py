"""A trained role's model for inference: its LoRA adapter merged into a copy, at the run's precision
(issue 49, item 1).

A policy trains in fp32 with unmerged adapters (``rl.sft``, ``rl.grpo``, ``reag.critic_train``). An
unmerged LoRA layer computes ``W x + B (A x)`` at every call: two more small matrix products per
adapted projection and more Python per layer. Once a role has finished training, the experiments
only read it (the MOLT judges, the ReAG rungs, the SeRTS roles), so ``inference_copy`` folds
``W + (alpha / r) B A`` into a deep copy (peft's ``merge_and_unload``) and puts the copy in
``KBVQA_PRECISION`` (``precision.apply_precision``). The policy itself is left untouched, so training
can go on from it. ``vlm.adapter(name)`` views merge that adapter alone; ``without_adapters()``
drops them all.

Leaves out: merging in place (``merge_adapter`` / ``unmerge_adapter`` would drift the base weights
by rounding at every round trip) and quantised bases (``load_in_4bit``: peft cannot merge into them).
"""
from __future__ import annotations

import copy

from kbvqa.models.adapters import AdapterView
from kbvqa.models.precision import apply_precision, resolve_precision
from kbvqa.models.vlm import VLM

__all__ = ["inference_copy"]

_KEPT = ("fingerprint",)


def inference_copy(vlm, precision: str | None = None):
    """A deep copy of ``vlm`` (a ``VLM`` or an ``AdapterView``) with its active adapter merged, in
    eval mode, at ``precision`` (default ``$KBVQA_PRECISION``, else fp32); ``vlm`` is not changed. A
    model without adapters is copied and put in the precision; ``vlm`` itself comes back when there is
    nothing to merge or convert, and on a GPU (whose dtype ``loading.resolve_dtype`` chose at load, and
    whose memory holds no second copy of a 3B model on a T4)."""
    if not isinstance(vlm, (VLM, AdapterView)):
        return vlm                   # a scripted stand-in (tests, oracles) has nothing to merge
    name = vlm.adapter_name if isinstance(vlm, AdapterView) else ...
    base = vlm.activate() if isinstance(vlm, AdapterView) else vlm
    model = base.model
    concrete = resolve_precision(precision, base.device)
    if base.device.type != "cpu" or (not hasattr(model, "peft_config") and concrete == getattr(base, "precision",
                                                                                                  "fp32")):
        return vlm                   # a GPU holds no second copy; nothing to merge or convert
    was_training = model.training
    twin = copy.copy(base)
    twin.model = copy.deepcopy(model)
    if hasattr(twin.model, "peft_config"):
        if name is None:
            twin.model = twin.model.unload()
        elif name is ...:
            twin.model = twin.model.merge_and_unload()
        else:
            twin.model = twin.model.merge_and_unload(adapter_names=[name])
    for attr in _KEPT:
        if hasattr(base, attr):
            setattr(twin, attr, getattr(base, attr))
    twin.model.eval()
    model.train(was_training)
    return apply_precision(twin, concrete)
