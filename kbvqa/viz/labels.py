"""The name a figure gives the model behind a committed table, read from its ``provenance.model``.

A title typed by hand ("tiny model") goes stale when the tables are remade with another model;
``model_label`` derives it from the string ``kbvqa.experiments.runs.model_fingerprint`` wrote:
``reader:<fingerprint>[+precision]`` is the reader, ``tiny_vlm:<sha>`` the tiny checkpoint, anything
else a hub id (shown without its organisation). ``tests/test_viz_labels.py`` holds every results
file's figure title to it.

Leaves out: the papers' models (``paper.py`` of each part names them).
"""
from __future__ import annotations

__all__ = ["model_label", "results_model_label"]


def model_label(model: str | None) -> str:
    """``"the reader"``, ``"the reader (bf16)"``, ``"the tiny VLM"``, a hub id's last part, or
    ``"unknown model"`` for an empty or missing string."""
    model = (model or "").strip()
    if not model or model == "unknown":
        return "unknown model"
    if model.startswith("reader:"):
        _, _, precision = model.partition("+")
        return "the reader" + (f" ({precision})" if precision else "")
    if model.startswith("tiny_vlm:"):
        return "the tiny VLM"
    return model.rsplit("/", 1)[-1]


def results_model_label(results: dict) -> str:
    """``model_label`` of ``results["provenance"]["model"]``."""
    return model_label((results.get("provenance") or {}).get("model"))
