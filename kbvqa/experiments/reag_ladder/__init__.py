"""ReAG's ablation ladder on the toy world (Tab. 4): the experiment script behind chapter 24.

Run ``python -m kbvqa.experiments.reag_ladder [--limit N] [--threads 1]``. Seven rungs, each adds
one component to the previous one (``RUNGS``):

    no retrieval (question + image) -> coarse (every passage of the top-k pages of the image)
    -> + critic (Eq. 4, P(Yes) > 0.1) -> + fine (crop of the grounded subject, merge by max)
    -> + SFT (answer only) -> + traces (cold start, Eq. 5, alpha = 0.8) -> + RL (GRPO, Eq. 6-9)

The first four rungs use the shipped generator zero-shot; the last three fix the retrieval
pipeline (coarse + fine + critic) and change the generator, trained inside the script with small
budgets (``LadderConfig``: critic 150 steps x 16, SFT and cold start 150 steps x 8, GRPO 30 steps
x 4 prompts x G = 4; CPU, one thread). Training data are the chapters' critic tuples of the
TRAIN split (evidence or a 70 % hard / 30 % soft negative, ``rl.cold_start_examples``); the
answer-only SFT uses the same tuples with ``<answer>y</answer>`` targets. Every rung is scored by the
official scorer of each question's kind (``kbvqa.metrics.official_correct``: InfoSeek's pointwise
score, E-VQA's multi-answer IoU; accuracy and InfoSeek's split score) on the same first N queries
of ``world.kbvqa_test``, greedy decoding. Three
diagnostic rungs, not in the paper (``ORACLE_RUNGS``), give the zero-shot, cold-start and GRPO
generators the evidence passage alone: the ceiling each generator reaches without noise.

Retrieval and critic scores are computed once per run and kept in ``evidence.json`` next to the
results (passage ids and P(Yes); no weights are saved: a pending training rung retrains, seeded,
from the shipped model). Each rung's records
go to ``runs/<rung>.jsonl`` under a fingerprint header (``kbvqa.experiments.runs.read_run``): a rerun with the
same settings skips finished rungs. ``kbvqa.reag.results`` turns the records into the table.

This package is the experiment's spec: the rungs it runs (``RUNGS``, ``ORACLE_RUNGS``: ``kbvqa.reag.results``),
its settings (``LadderConfig``: ``kbvqa.reag.ladder``) and the folder it writes (``RESULTS_DIR``:
``data/experiments/reag/``). ``run.py`` runs it (``run_ladder``, ``rung_fingerprint``, ``main``);
``__main__.py`` is ``python -m kbvqa.experiments.reag_ladder``.

Leaves out: the settings, retrieval and critic scores, evaluation and the rungs' runs
(``kbvqa.reag.ladder``), training the critic and generators (``kbvqa.reag.ladder_train``), tables,
the paper's numbers and figures (``kbvqa.reag.results``); the gpu profile's real-data subset
(``kbvqa.reag.ladder.real_subset_ladder``: chapter 24 shows it, never run in the cpu profile).
"""
from __future__ import annotations

from kbvqa.experiments.reag_ladder.run import run_ladder, rung_fingerprint
from kbvqa.reag.ladder import LadderConfig
from kbvqa.reag.results import ORACLE_RUNGS, RESULTS_DIR, RUNGS

__all__ = ["LadderConfig", "ORACLE_RUNGS", "RESULTS_DIR", "RUNGS", "rung_fingerprint", "run_ladder"]
