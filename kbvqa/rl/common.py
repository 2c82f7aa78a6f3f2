"""What the SFT and GRPO loops share: which weights train, the optimiser and its schedule, checkpoints.

ReAG (Sec. 4 and supp. B) updates "the MLP adapter and LLM weights while keeping the vision encoder
frozen": ``prepare_trainable`` freezes the vision tower except its merger (the Qwen families' MLP
adapter lives at ``visual.merger``; Idefics3's connector sits outside the vision model), or adds LoRA
adapters (``VLM.add_lora``), after which only adapters train. Both stages use a cosine schedule
with linear warm-up (supp. B: 450 / 150 warm-up steps for SFT / RL, weight decay 0.01 / 0).

A long run cut off by the end of a session goes on from its last checkpoint: ``training_state``
copies what a loop needs to go on exactly as an uninterrupted run would, ``restore_training_state``
puts it back into a fresh copy of the same model.

A model of ``FULL_FINETUNE_LIMIT`` parameters or more trains LoRA adapters by design; the
``LoRAInsteadOfFullWeights`` notice that says so is ignored unless asked for (see below).

Leaves out: the losses (``sft.py``, ``grpo_loss.py``) and the loops (``sft.py``, ``grpo.py``).
"""
from __future__ import annotations

import contextlib
import copy
import math
import warnings
from dataclasses import asdict, is_dataclass
from typing import Any

import torch

SCHEDULES = ("cosine", "constant")


# Full fine-tuning stops here: a model of this many parameters or more trains LoRA adapters even
# when a config asks for all weights. Every gpu checkpoint is above it (a 2-3B model in full needs its
# weights, gradients and AdamW's two moments -- over 16 GB before activations -- which one Colab GPU
# does not have), and so is the cpu reader (SmolLM2-135M + its tower, ~0.16B: its base is never
# trained in full on the CPU, issue #15); the 1.45M-parameter tiny model trains all its weights.
FULL_FINETUNE_LIMIT = 100_000_000
DEFAULT_LORA = {"r": 16, "alpha": 32}


class LoRAInsteadOfFullWeights(UserWarning):
    """``prepare_trainable`` gave a model of ``FULL_FINETUNE_LIMIT`` parameters or more LoRA adapters
    where the config left ``lora`` at None (train all weights when the model is small enough)."""


# Ignored by default, like a DeprecationWarning: the notice is harmless. LoRA above the limit is the
# design (issue #15), not a fallback: every config of the reader and of the gpu checkpoints leaves
# ``lora`` at None and gets these adapters, so the notice printed on every training run and on every
# load of a committed model (``kbvqa.experiments.work.load_saved_model`` rebuilds the same adapters
# before it copies the saved weights in: nothing trains there), in chapters 21-24 and 27 alike.
# Only this category is ignored; ``warnings.simplefilter("default", LoRAInsteadOfFullWeights)``
# shows it again.
warnings.filterwarnings("ignore", category=LoRAInsteadOfFullWeights)


def prepare_trainable(vlm, lora: dict | None = None, freeze_vision: bool = True,
                      full_finetune_limit: int = FULL_FINETUNE_LIMIT) -> list[torch.nn.Parameter]:
    """Add LoRA adapters when ``lora`` is a dict of ``VLM.add_lora`` arguments (not twice), or
    ``DEFAULT_LORA`` when ``lora`` is None but the model has ``full_finetune_limit`` parameters or
    more (the reader and the gpu profile's 2-3B roles; a ``LoRAInsteadOfFullWeights`` notice, ignored
    by default); freeze the vision encoder (merger excepted) when
    ``freeze_vision``; return the trainable parameters, always in float32: float16 adapters are
    upcast, and a float16 model trained in full is converted to float32 (issue 56: a T4 loads fp16,
    whose weights lose AdamW's small updates; the base of a LoRA model stays fp16)."""
    if lora is not None and not isinstance(lora, dict):
        raise ValueError(f"lora must be None or a dict of VLM.add_lora arguments, got {type(lora).__name__}")
    if lora is None and not hasattr(vlm.model, "peft_config"):
        size = sum(p.numel() for p in vlm.model.parameters())
        if size >= full_finetune_limit:
            warnings.warn(f"{size / 1e9:.1f}B parameters: training LoRA adapters {DEFAULT_LORA} instead of "
                          f"all weights (kbvqa.rl.common.FULL_FINETUNE_LIMIT)", LoRAInsteadOfFullWeights,
                          stacklevel=2)
            lora = DEFAULT_LORA
    if lora is not None and not hasattr(vlm.model, "peft_config"):
        vlm.add_lora(**lora)
    if freeze_vision:
        for name, param in vlm.vision_tower.named_parameters():
            if not name.startswith("merger."):
                param.requires_grad_(False)
    params = [p for p in vlm.model.parameters() if p.requires_grad]
    if not params:
        raise ValueError("no trainable parameters left")
    if any(p.dtype == torch.float16 for p in params):   # a T4 loads fp16 (issue 56): AdamW's small updates
        if hasattr(vlm.model, "peft_config"):            # vanish in fp16 weights, so train fp32 ones
            for p in params:
                if p.dtype == torch.float16:
                    p.data = p.data.float()              # adapters in fp32 (peft casts their inputs)
        else:
            vlm.model.float()                            # a full fine-tune of a small model: all in fp32
        params = [p for p in vlm.model.parameters() if p.requires_grad]
    return params


CHECKPOINTING = (True, False, "auto")


def check_checkpointing(value) -> None:
    if value not in CHECKPOINTING or (value is not True and value is not False and value != "auto"):
        raise ValueError(f"gradient_checkpointing must be one of {CHECKPOINTING}, got {value!r}")


@contextlib.contextmanager
def gradient_checkpointing(vlm, mode=True):
    """Within the block, the model recomputes its layers' activations in the backward pass instead of
    keeping them (non-reentrant, inputs requiring grads, as a LoRA model needs; issue 56: what lets a
    2-3B model train on a 16 GB T4). ``mode``: True, False, or "auto" (on for a model on CUDA). The
    model leaves the block as it entered it. The gradients are those of the plain backward.
    ``transformers`` recomputes a layer only while that layer is in train mode: for a model in eval
    mode (``grpo_step`` updates with dropout off) the block puts the decoder layers themselves, not
    their children, in train mode, so dropout stays off and the layers still recompute."""
    check_checkpointing(mode)
    core = vlm.core
    on = mode is True or (mode == "auto" and getattr(core, "device", torch.device("cpu")).type == "cuda")
    if not on or not getattr(core, "supports_gradient_checkpointing", False):
        yield False
        return
    was = is_checkpointing(core)
    if hasattr(core, "activation_checkpointing_enable"):      # transformers >= 5.23's name
        core.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        core.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if hasattr(core, "enable_input_require_grads"):
        core.enable_input_require_grads()
    from transformers.modeling_layers import GradientCheckpointingLayer

    flipped = [m for m in core.modules() if isinstance(m, GradientCheckpointingLayer) and not m.training]
    for m in flipped:       # only the layer's own flag: its dropout and attention modules stay in eval mode
        m.training = True
    try:
        yield True
    finally:
        for m in flipped:
            m.training = False
        if not was:
            (core.activation_checkpointing_disable if hasattr(core, "activation_checkpointing_disable")
             else core.gradient_checkpointing_disable)()
        if hasattr(core, "disable_input_require_grads"):
            core.disable_input_require_grads()


# Rows per forward/backward that a trainer's ``micro_batch_size="auto"`` takes on a CUDA model (issue 56:
# a 2-3B model's activations on a 16 GB T4; ``kbvqa.models.gpu_budget`` counts these sizes). On the CPU
# "auto" is the whole batch, so the committed cpu runs are unchanged.
AUTO_MICRO_BATCH = {"sft": 1, "grpo": 1, "critic": 4}


def check_micro_batch(value) -> None:
    """``micro_batch_size`` is None (the whole batch), "auto" or a positive int."""
    if value is None or (isinstance(value, str) and value == "auto"):
        return
    check_positive_int(micro_batch_size=value)


def on_cuda(vlm) -> bool:
    """Whether ``vlm``'s model sits on a CUDA device."""
    return getattr(getattr(vlm, "core", None), "device", torch.device("cpu")).type == "cuda"


def resolve_micro_batch(value, vlm, trainer: str) -> int | None:
    """A config's ``micro_batch_size`` as rows: None or an int as given; "auto", the trainer's
    ``AUTO_MICRO_BATCH`` size on a CUDA model, else None (the whole batch in one pass)."""
    check_micro_batch(value)
    if isinstance(value, str):
        return AUTO_MICRO_BATCH[trainer] if on_cuda(vlm) else None
    return value


def is_checkpointing(core) -> bool:
    """Whether a ``transformers`` model recomputes activations in backward (either attribute name)."""
    return bool(getattr(core, "is_activation_checkpointing", None) if hasattr(core, "is_activation_checkpointing")
                else getattr(core, "is_gradient_checkpointing", False))


def lr_factor(step: int, warmup_steps: int, total_steps: int, schedule: str = "cosine") -> float:
    """Multiplier of the peak learning rate at ``step``: linear warm-up, then cosine to 0 or constant."""
    if step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    span = max(1, total_steps - warmup_steps)
    return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup_steps) / span)))


def build_optimizer(params, lr: float, weight_decay: float, warmup_steps: int, total_steps: int,
                    schedule: str = "cosine", betas: tuple[float, float] = (0.9, 0.999)):
    """(AdamW, LambdaLR) with the schedule of ``lr_factor``; weight_decay = 0 is plain Adam."""
    if not lr > 0 or weight_decay < 0 or warmup_steps < 0 or total_steps < 1:
        raise ValueError("need lr > 0, weight_decay >= 0, warmup_steps >= 0, total_steps >= 1")
    if schedule not in SCHEDULES:
        raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    optimizer = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, betas=betas)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: lr_factor(s, warmup_steps, total_steps, schedule))
    return optimizer, scheduler


def prompt_and_completion(example: Any) -> tuple[Any, str]:
    """(prompt, completion) of an ``Example``-like object or a ``(prompt, completion)`` pair."""
    if hasattr(example, "prompt") and hasattr(example, "completion"):
        return example.prompt, example.completion
    if isinstance(example, (tuple, list)) and len(example) == 2:
        return example[0], example[1]
    raise ValueError("an example must have .prompt and .completion or be a (prompt, completion) pair")


def check_positive_int(**values) -> None:
    """Raise ``ValueError`` unless every value is an int >= 1."""
    for name, value in values.items():
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")


def check_checkpoint_every(value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"checkpoint_every must be an int >= 0, got {value!r}")


def training_state(vlm, optimizer, scheduler, result, next_step: int) -> dict:
    """What a loop's ``resume=`` needs to go on at ``next_step`` exactly as an uninterrupted run would:
    the trainable weights, the optimiser's moments, the schedule, the curves so far (``result``, a
    dataclass or a dict) and torch's RNG (dropout). Copies, so the run may go on changing its own."""
    return {"step": next_step, "optimizer": copy.deepcopy(optimizer.state_dict()),
            "trainable": {n: p.detach().cpu().clone() for n, p in vlm.model.named_parameters() if p.requires_grad},
            "scheduler": scheduler.state_dict(), "rng": torch.get_rng_state(),
            "result": copy.deepcopy(asdict(result) if is_dataclass(result) else result)}


def restore_training_state(vlm, optimizer, scheduler, state: dict) -> tuple[dict, int]:
    """Put ``training_state``'s weights, optimiser, schedule and RNG back; return (the result's fields,
    the step to go on from). Raises ``ValueError`` when the trainable weights are another model's."""
    params = {n: p for n, p in vlm.model.named_parameters() if p.requires_grad}
    if set(state["trainable"]) != set(params) or any(v.shape != params[n].shape for n, v in state["trainable"].items()):
        raise ValueError("the checkpoint's trainable weights are not this model's (another model or LoRA setting)")
    with torch.no_grad():
        for name, value in state["trainable"].items():
            params[name].copy_(value.to(params[name].device, params[name].dtype))
    optimizer.load_state_dict(state["optimizer"])
    scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"])
    return copy.deepcopy(state["result"]), int(state["step"])
