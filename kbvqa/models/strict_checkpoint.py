"""Strict checks on a shipped full checkpoint (``data/tiny_vlm``; issue 50, item 2).

``transformers``' ``from_pretrained`` fills a missing tensor with a fresh initialisation and only
warns, so a checkpoint with half its tensors would load as a silently different model.
``loading.load_model(strict=True)`` holds the saved file against the model its ``config.json``
builds (every tensor present, none extra, each with its shape, after ``transformers`` renames old
keys); ``check_full_checkpoint`` holds it against the ``fingerprint`` its ``card.json`` records, the
same SHA-256 prefix of ``model.safetensors`` that ``model_fingerprint`` writes into every table, so
no new hash file is needed.

Leaves out: the reader (``kbvqa.reader.ship.check_shipped_tensors`` / ``check_card_fingerprint``) and
hub checkpoints (the hub's own revision pins them).
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

__all__ = ["check_full_checkpoint", "weights_fingerprint"]

WEIGHTS = "model.safetensors"


def weights_fingerprint(path) -> str:
    """SHA-256 (first 16 hex digits) of ``path/model.safetensors``, as ``model_fingerprint`` uses."""
    return hashlib.sha256((Path(path) / WEIGHTS).read_bytes()).hexdigest()[:16]


def check_full_checkpoint(path) -> None:
    """Raise ``ValueError`` naming ``path`` and the fix unless ``path/model.safetensors`` hashes to the
    ``fingerprint`` of ``path/card.json`` (where the card records one). Keys and shapes are checked as
    the model loads (``loading.load_model(strict=True)``), after ``transformers`` renames old keys."""
    path = Path(path)
    card = path / "card.json"
    recorded = json.loads(card.read_text()).get("fingerprint") if card.exists() else None
    if recorded and recorded != weights_fingerprint(path):
        raise ValueError(f"{path / WEIGHTS} hashes to {weights_fingerprint(path)}, but {card} was measured on "
                         f"{recorded}; restore it with `git checkout {path}` (or re-run "
                         "`python -m kbvqa.models.model_card` after training)")
