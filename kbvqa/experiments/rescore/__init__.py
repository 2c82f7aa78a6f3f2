"""Re-judge committed KB-VQA answers with the official scorers, without running a model again.

Run ``python -m kbvqa.experiments.rescore``. The ReAG ablation ladder (chapter 24,
``data/experiments/reag``) and the end-to-end ablation (chapter 30, ``data/experiments/pipeline``)
store every query's extracted answer in ``runs/<row>.jsonl``. This script sets each record's
``correct`` to the official verdict on that answer (``kbvqa.metrics.score_records``:
``official_correct``, InfoSeek's pointwise score or E-VQA's multi-answer IoU) and its ``split``,
then rewrites the runs and the table (each package's ``summarise``: accuracy with its Wilson
interval, InfoSeek's split score with its within-split bootstrap). The config, training log and
provenance of the run that made the answers are kept; the provenance gains ``rescored``: the
scorer, this commit and date, and per row how many verdicts changed. Rows whose reader is the
``"oracle"`` (right exactly when the evidence is in context) keep their verdicts and only get a split.

Answers are judged exactly as a fresh run judges them (same function, same stored string), so a
rescored table equals the table a rerun of the same model would write. The tiny model's card
(``data/tiny_vlm/card.json``) stored no answers: ``--tables tiny_card`` regenerates its three
KB-VQA rows' greedy answers with the shipped tiny checkpoint (deterministic) and judges them
(``kbvqa.models.model_card.kbvqa_rows``); the card keeps the old values under ``rescored``.

This package is the job's spec: the scorer it names (``SCORER``) and the tables it rewrites
(``SUMMARY_KEYS``: ``reag`` and ``pipeline``, each in its package's ``RESULTS_DIR``,
``kbvqa.reag.results`` / ``kbvqa.pipeline.results``; ``--tables tiny_card``: ``data/tiny_vlm/card.json``).
Those folders are named here, not imported: ``kbvqa.pipeline.results`` loads torch, and the runner
reads them only when it rescores. ``run.py`` rescores (``rescore_runs``, ``rescore_table``,
``rescore_tiny_card``, ``main``); ``__main__.py`` is ``python -m kbvqa.experiments.rescore``.

Leaves out: the RCTS tables, whose records stored the parsed letter only (their rerun stores the
response and scores it as RCTS's release does, ``kbvqa.rcts.runs.scored_answer``).
"""
from __future__ import annotations

from kbvqa.experiments.rescore.run import SCORER, SUMMARY_KEYS, rescore_runs, rescore_table, rescore_tiny_card

__all__ = ["SCORER", "SUMMARY_KEYS", "rescore_runs", "rescore_table", "rescore_tiny_card"]
