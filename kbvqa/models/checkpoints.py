"""Which hub checkpoint each chapter role uses in the gpu profile (one Colab-class GPU).

The papers' models are larger than one free GPU holds; each role names the largest checkpoint of
the paper's family that fits with room for batching, and ``PAPER_MODELS`` records what the paper
used so the book can say how far the reproduction is from it. Nothing here downloads: the ids go
to ``VLM.from_pretrained`` in the gpu profile only (the cpu profile uses the shipped reader or the
tiny checkpoint).

``KBVQA_CHECKPOINTS`` overrides where any role comes from, for a machine without the hub (a GPU box
with local copies, the gpu smoke test's random tiny models): either ``role=id_or_path`` pairs
separated by commas, or the path of a JSON file ``{"role": "id_or_path", ...}``. Roles it does not
name keep their hub ids; an unknown role or a malformed entry raises ``ValueError``.

Leaves out: the cpu checkpoints (``kbvqa.reader``, ``kbvqa.models.tiny``), loading (``loading.py``).
"""
from __future__ import annotations

from kbvqa.config import get_profile, plays_reader
from kbvqa.experiments.runs import model_fingerprint
from kbvqa.models.tiny import load_tiny_vlm
from kbvqa.models.vlm import VLM
from kbvqa.reader.ship import load_reader, reader_fingerprint

GPU_CHECKPOINTS = {
    "reader": "HuggingFaceTB/SmolVLM-256M-Instruct",   # the cpu reader's family at full size (chapter 01)
    "generator": "Qwen/Qwen2-VL-2B-Instruct",          # RCTS answers (the simulations and reward samples)
    "reasoner": "Qwen/Qwen2-VL-2B-Instruct",           # RCTS reasoning contexts (§3.2)
    "searcher": "Qwen/Qwen2-VL-2B-Instruct",           # SeRTS proposer, evaluator and answerer (one LLM)
    "reag_generator": "Qwen/Qwen2.5-VL-3B-Instruct",   # ReAG's reasoning-trace writer; the end-to-end reader
    "critic": "Qwen/Qwen2.5-VL-3B-Instruct",           # ReAG critic, P(Yes) (Eq. 4)
    "judge": "Qwen/Qwen3-VL-2B-Instruct",              # MOLT tournament judge
    "rl_policy": "HuggingFaceTB/SmolVLM-256M-Instruct",  # ReAG's generator, every rung of its ladder
                                                         # (untrained, SFT, cold start, GRPO) on one GPU
    "rl_policy_large": "HuggingFaceTB/SmolVLM-500M-Instruct",
}

PAPER_MODELS = {
    "reader": "SmolVLM-256M/500M-Instruct (SmolLM2-135M/360M + SigLIP, Idefics3): the reader's own family",
    "generator": "Qwen2-VL-7B-Instruct GPTQ-Int4 (RCTS code)",
    "reasoner": "Qwen2-VL-7B-Instruct GPTQ-Int4 (RCTS code)",
    "searcher": "Llama2-7B-chat / GPT-3.5 (SeRTS)",
    "reag_generator": "Qwen2.5-VL-7B / 3B (ReAG)",
    "critic": "Qwen2.5-VL-3B fine-tuned on 1M ReflectiVA samples (ReAG supplement A)",
    "judge": "Qwen3-VL-4B/8B-Instruct (MOLT)",
    "rl_policy": "Qwen2.5-VL-3B/7B (ReAG generator, every rung), scaled down for one GPU",
    "rl_policy_large": "Qwen2.5-VL-3B/7B (ReAG GRPO), scaled down for one GPU",
}


OVERRIDE_VARIABLE = "KBVQA_CHECKPOINTS"


def checkpoint_overrides(text: str | None = None) -> dict:
    """``{role: id_or_path}`` from ``text`` (default: the ``KBVQA_CHECKPOINTS`` variable): pairs
    ``role=value`` separated by commas, or a path to a JSON object. Empty or unset: ``{}``."""
    import json
    import os
    from pathlib import Path

    text = (os.environ.get(OVERRIDE_VARIABLE, "") if text is None else text).strip()
    if not text:
        return {}
    if "=" not in text:
        path = Path(text).expanduser()
        if not path.is_file():
            raise ValueError(f"{OVERRIDE_VARIABLE}={text!r} is neither role=value pairs nor a JSON file")
        mapping = json.loads(path.read_text())
        if not isinstance(mapping, dict) or not all(isinstance(v, str) for v in mapping.values()):
            raise ValueError(f"{path} must hold a JSON object of role -> hub id or local path")
    else:
        mapping = {}
        for pair in filter(None, (p.strip() for p in text.split(","))):
            role, sep, value = pair.partition("=")
            if not sep or not role.strip() or not value.strip():
                raise ValueError(f"{OVERRIDE_VARIABLE} entry {pair!r} is not role=value")
            mapping[role.strip()] = value.strip()
    unknown = sorted(set(mapping) - set(GPU_CHECKPOINTS))
    if unknown:
        raise ValueError(f"{OVERRIDE_VARIABLE} names unknown roles {unknown}; known roles: {sorted(GPU_CHECKPOINTS)}")
    return mapping


def gpu_checkpoint(role: str) -> str:
    """The hub id (or the ``KBVQA_CHECKPOINTS`` override) for ``role`` in the gpu profile; an
    unknown role raises ``ValueError``."""
    if role not in GPU_CHECKPOINTS:
        raise ValueError(f"unknown model role {role!r}; known roles: {sorted(GPU_CHECKPOINTS)}")
    return checkpoint_overrides().get(role, GPU_CHECKPOINTS[role])


def load_vlm(role: str = "generator", profile=None, **kwargs):
    """The model a chapter uses for ``role`` in the active profile. In the cpu profile: the shipped
    reader (``kbvqa.reader``: SmolLM2-135M-Instruct + our vision tower) for the roles in
    ``kbvqa.config.CPU_READER_ROLES``, the shipped tiny checkpoint for every other role (chapters
    fine-tune copies; they move to the reader as their experiments are re-run on it). In the gpu
    profile: the hub checkpoint of ``gpu_checkpoint(role)`` on the profile's device. This is the one
    place where the profile decides which weights a notebook gets."""
    gpu_checkpoint(role)  # validates the role in both profiles
    profile = profile or get_profile()
    if profile.is_gpu:
        return VLM.from_pretrained(gpu_checkpoint(role), device=profile.device, **kwargs)
    if plays_reader(role):
        return load_reader(**kwargs)
    return load_tiny_vlm(**kwargs)


def role_model(role: str, profile=None) -> str:
    """The weights ``load_vlm(role)`` gives in ``profile``, named without loading them as a run's
    provenance names its model (``kbvqa.experiments.runs.model_fingerprint`` of the loaded one):
    ``reader:<fingerprint>`` (``+bf16`` / ``+int8w`` when ``KBVQA_PRECISION`` asks for another precision
    than fp32), ``tiny_vlm:<sha256 prefix>`` or the gpu checkpoint's id."""
    gpu_checkpoint(role)
    profile = profile or get_profile()
    if profile.is_gpu:
        return gpu_checkpoint(role)
    if plays_reader(role):          # at the precision a merged reader loads in (KBVQA_PRECISION; fp32 adds nothing)
        import torch

        from kbvqa.models.precision import precision_suffix, resolve_precision

        return f"reader:{reader_fingerprint()}" + precision_suffix(resolve_precision(None, torch.device("cpu")))
    return model_fingerprint(None)   # tiny
