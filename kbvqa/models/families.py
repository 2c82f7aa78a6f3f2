"""Tiny random VLMs of the four supported families, built from configs (no download).

Families (``FAMILIES``): ``qwen2_vl`` (Qwen2-VL), ``qwen2_5_vl`` (Qwen2.5-VL, ReAG's backbone),
``qwen3_vl`` (Qwen3-VL, MOLT's backbone) and ``idefics3`` (the architecture of SmolVLM-256M/500M;
``"smolvlm"`` is accepted as an alias). Each tiny model is the real ``transformers`` architecture at
toy size, so the code that drives it drives the hub checkpoints too.

- ``TinySpec``: the knobs of a tiny model (defaults = the tiny Qwen2-VL the book measured in chapter 01:
  text width 128, 4 layers, vision depth 2 / width 64, 56x56 images -> 4 image tokens).
- ``tiny_config(family, **overrides)``: the family's ``transformers`` config for a ``TinySpec``;
  special-token ids are the fixed ids of ``tokenizer.special_tokens(family)``.
- ``build_tokenizer`` (re-exported from ``tokenizer.py``) and ``build_tiny_vlm(family, texts)``,
  which trains a tokenizer on ``texts``, sizes the vocabulary to it, seeds, and returns a ``VLM``.

A later pretraining stage only needs ``build_tiny_vlm(family, texts=corpus, **sizes)`` and then
``vlm.completion_logprobs(..., grad=True)`` or ``vlm.model(**batch)`` in its loop, and
``vlm.save_pretrained(dir)`` / ``VLM.from_pretrained(dir)`` to ship the result.

Leaves out: training (``kbvqa.models.tiny``), hub checkpoints (``checkpoints.py``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from kbvqa.models.processors import build_processor
from kbvqa.models.tokenizer import build_tokenizer, canonical_family, special_token_id, special_tokens
from kbvqa.models.vlm import VLM

FAMILIES = ("qwen2_vl", "qwen2_5_vl", "qwen3_vl", "idefics3")
__all__ = ["FAMILIES", "TinySpec", "build_tiny_vlm", "build_tokenizer", "model_class", "tiny_config"]


@dataclass(frozen=True)
class TinySpec:
    """Sizes of a tiny model. ``text``/``vision`` pass raw config fields through (last word)."""

    vocab_size: int = 4000          # must cover the tokenizer (build_tiny_vlm sets it to len(tokenizer))
    hidden_size: int = 128          # text model width
    num_layers: int = 4             # text decoder layers
    num_heads: int = 4              # attention heads (head_dim = hidden_size / num_heads)
    num_kv_heads: int = 2           # grouped-query KV heads; must divide num_heads
    intermediate_size: int = 256    # text MLP width
    vision_width: int = 64          # vision transformer width
    vision_depth: int = 2           # vision transformer blocks
    vision_heads: int = 2           # vision attention heads
    image_size: int = 56            # pixels per side; 56 -> (56/14)^2 / 4 = 4 image tokens
    max_positions: int = 2048       # longest sequence (text + image tokens)
    tie_embeddings: bool = True     # share input and output embeddings (halves embedding params)
    text: dict = field(default_factory=dict)    # raw overrides of the text config
    vision: dict = field(default_factory=dict)  # raw overrides of the vision config

    def __post_init__(self):
        for name in ("vocab_size", "hidden_size", "num_layers", "num_heads", "num_kv_heads",
                     "intermediate_size", "vision_width", "vision_depth", "vision_heads", "max_positions"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.hidden_size % self.num_heads or (self.hidden_size // self.num_heads) % 4:
            raise ValueError("hidden_size / num_heads must be a multiple of 4 (rotary sections)")
        if self.num_heads % self.num_kv_heads:
            raise ValueError("num_kv_heads must divide num_heads")
        if self.vision_width % self.vision_heads:
            raise ValueError("vision_heads must divide vision_width")
        if self.image_size % 28 or self.image_size < 28:
            raise ValueError(f"image_size must be a positive multiple of 28, got {self.image_size}")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


def _mrope_section(head_dim: int, interleaved: bool) -> list[int]:
    """Split head_dim/2 rotary frequencies over (time, height, width) like the hub configs do:
    Qwen2/2.5-VL 16:24:24 of 64, Qwen3-VL (interleaved) 24:20:20 of 64."""
    half = head_dim // 2
    if interleaved:
        hw = half * 20 // 64
        return [half - 2 * hw, hw, hw]
    t = half // 4
    h = (half - t) // 2
    return [t, h, half - t - h]


def _text_fields(s: TinySpec, family: str) -> dict:
    ids = {"bos_token_id": special_token_id(family, "<|im_start|>"),
           "eos_token_id": special_token_id(family, "<end_of_utterance>" if family == "idefics3" else "<|im_end|>"),
           "pad_token_id": special_token_id(family, "<|endoftext|>")}
    fields = dict(vocab_size=s.vocab_size, hidden_size=s.hidden_size, intermediate_size=s.intermediate_size,
                  num_hidden_layers=s.num_layers, num_attention_heads=s.num_heads,
                  num_key_value_heads=s.num_kv_heads, max_position_embeddings=s.max_positions,
                  tie_word_embeddings=s.tie_embeddings, **ids)
    if family in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl"):
        fields["rope_parameters"] = {"rope_type": "default", "rope_theta": 10000.0,
                                     "mrope_section": _mrope_section(s.head_dim, family == "qwen3_vl")}
        if family == "qwen3_vl":
            fields["rope_parameters"]["mrope_interleaved"] = True
    if family in ("qwen3_vl", "idefics3"):
        fields["head_dim"] = s.head_dim
    return {**fields, **s.text}


def _vision_fields(s: TinySpec, family: str) -> dict:
    common = {"patch_size": 14, "spatial_merge_size": 2, "temporal_patch_size": 2}
    if family == "qwen2_vl":
        fields = dict(depth=s.vision_depth, embed_dim=s.vision_width, hidden_size=s.hidden_size,
                      num_heads=s.vision_heads, mlp_ratio=2, **common)
    elif family == "qwen2_5_vl":
        fields = dict(depth=s.vision_depth, hidden_size=s.vision_width, intermediate_size=2 * s.vision_width,
                      num_heads=s.vision_heads, out_hidden_size=s.hidden_size, window_size=s.image_size,
                      fullatt_block_indexes=[s.vision_depth - 1], **common)
    elif family == "qwen3_vl":
        side = s.image_size // 14
        fields = dict(depth=s.vision_depth, hidden_size=s.vision_width, intermediate_size=2 * s.vision_width,
                      num_heads=s.vision_heads, out_hidden_size=s.hidden_size,
                      num_position_embeddings=side * side, deepstack_visual_indexes=[0], **common)
    else:  # idefics3 (SigLIP-style encoder + pixel shuffle)
        fields = {"hidden_size": s.vision_width, "intermediate_size": 2 * s.vision_width,
                      "num_hidden_layers": s.vision_depth, "num_attention_heads": s.vision_heads,
                      "image_size": s.image_size, "patch_size": 14}
    return {**fields, **s.vision}


def tiny_config(family: str, **overrides):
    """A ``transformers`` config for a tiny random ``family`` model; ``overrides`` are ``TinySpec``
    fields (an unknown name raises ``ValueError``)."""
    from transformers import Idefics3Config, Qwen2_5_VLConfig, Qwen2VLConfig, Qwen3VLConfig

    family = canonical_family(family)
    known = {f.name for f in dataclasses.fields(TinySpec)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ValueError(f"unknown tiny-model fields {unknown}; known: {sorted(known)}")
    spec = TinySpec(**overrides)
    if spec.vocab_size < len(special_tokens(family)):
        raise ValueError(f"vocab_size must be >= {len(special_tokens(family))} (the special tokens)")
    text, vision = _text_fields(spec, family), _vision_fields(spec, family)
    if family == "idefics3":
        return Idefics3Config(text_config={"model_type": "llama", **text}, vision_config=vision,
                              image_token_id=special_token_id(family, "<image>"), scale_factor=2,
                              pad_token_id=text["pad_token_id"], tie_word_embeddings=spec.tie_embeddings)
    config_class = {"qwen2_vl": Qwen2VLConfig, "qwen2_5_vl": Qwen2_5_VLConfig, "qwen3_vl": Qwen3VLConfig}[family]
    return config_class(text_config=text, vision_config=vision, tie_word_embeddings=spec.tie_embeddings,
                        image_token_id=special_token_id(family, "<|image_pad|>"),
                        video_token_id=special_token_id(family, "<|video_pad|>"),
                        vision_start_token_id=special_token_id(family, "<|vision_start|>"),
                        vision_end_token_id=special_token_id(family, "<|vision_end|>"))


def model_class(family: str):
    """The ``...ForConditionalGeneration`` class of a family."""
    import transformers

    name = {"qwen2_vl": "Qwen2VLForConditionalGeneration", "qwen2_5_vl": "Qwen2_5_VLForConditionalGeneration",
            "qwen3_vl": "Qwen3VLForConditionalGeneration",
            "idefics3": "Idefics3ForConditionalGeneration"}[canonical_family(family)]
    return getattr(transformers, name)


DEFAULT_TEXTS = ("What is in the image ? Yes No . The answer is", "Is the passage relevant ? Yes . No .")


def build_tiny_vlm(family: str, texts=None, seed: int = 0, vocab_size: int = 4000,
                   tokenizer_kind: str = "word", **overrides):
    """A tiny random ``VLM`` of ``family`` with a tokenizer trained on ``texts``.

    ``vocab_size`` caps the tokenizer; the model's vocabulary is exactly the tokenizer's. Weights
    are initialised under ``seed`` (same arguments -> same model). Other keyword arguments are
    ``TinySpec`` fields.
    """
    import torch

    family = canonical_family(family)
    if "vocab_size" in overrides:
        raise ValueError("pass vocab_size as the tokenizer cap, not as a TinySpec override")
    tokenizer = build_tokenizer(list(texts) if texts is not None else list(DEFAULT_TEXTS), family,
                                vocab_size=vocab_size, kind=tokenizer_kind)
    config = tiny_config(family, vocab_size=len(tokenizer), **overrides)
    processor = build_processor(family, tokenizer, image_size=config_image_size(overrides))
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = model_class(family)(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return VLM.from_model(model.eval(), processor)


def config_image_size(overrides: dict) -> int:
    return overrides.get("image_size", TinySpec.image_size)
