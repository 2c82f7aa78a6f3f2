"""MOLT's training ablation (Tab. 5), schedule ablation (Tab. 6) and GRPO curves (Fig. 3) on the toy world.

Run ``python -m kbvqa.experiments.molt_training [--limit N] [--threads 1]`` (~10-15 min on one
thread; ``make experiments``). ``run_experiment`` plays the scripted judges over every test query,
evaluates the shipped judge zero-shot, trains the SFT cold start (``train_cold_start``) and GRPO from
it with and without R_proc (``train_grpo``), evaluates each, and ``main`` writes
``data/experiments/molt/``. Each finished row and trained judge is kept in a work folder out of the
repository (``work.py``; ``--work``, ``--fresh``), so a run cut off by the end of a session resumes
when the same command runs again. The settings, evaluation sets, scripted judges, evaluators and GRPO tasks
are in ``kbvqa.molt.experiment`` (the design is described there).

This package is the experiment's spec: its settings (``MOLTExperimentConfig``), the scripted
judges' errors (``ERRORS``: ``kbvqa.molt.experiment``) and schedules (``ORDERS``: ``kbvqa.molt.ladder``)
that make the rows, and the folder it writes (``RESULTS_DIR``: ``kbvqa.molt.results``). ``run.py``
runs it (``run_experiment``, ``train_cold_start``, ``train_grpo``, ``main``); ``__main__.py`` is
``python -m kbvqa.experiments.molt_training``.

Leaves out: tables, paper numbers, figures (``kbvqa.molt.results``); real data (gpu only, not run here).
"""
from __future__ import annotations

from kbvqa.experiments.molt_training.run import run_experiment, train_cold_start, train_grpo
from kbvqa.molt.experiment import ERRORS, MOLTExperimentConfig
from kbvqa.molt.ladder import ORDERS
from kbvqa.molt.results import RESULTS_DIR

__all__ = ["ERRORS", "MOLTExperimentConfig", "ORDERS", "RESULTS_DIR", "run_experiment", "train_cold_start",
           "train_grpo"]
