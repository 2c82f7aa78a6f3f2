"""SeRTS experiments on the toy literature (Tab. 3, 4, 6 and 9 analogues): the script behind chapter 17.

Run ``python -m kbvqa.experiments.serts_experiment [--scripted-n 80] [--model-n 8] [--threads 1]``;
``--methods``, ``--seeds`` and ``--chunk`` pick a subset of the methods and seeds and the questions
searched together (on the reader each searching method costs ~24 model calls per question and seed).

Every chunk of held-out questions, for every seed, of each setup (``run_setup``), with the methods,
models and per-chunk records of ``kbvqa.serts.experiment`` (``run_chunk``, ``ExperimentConfig``,
``SETUPS``; the design is described there).

Output under ``data/experiments/serts/``: ``runs/<setup>.jsonl`` (a header, then one record per
question, method and seed) and the summary ``results.json`` / ``results.csv`` (``kbvqa.serts.results``).
This package is the experiment's spec: the setups it runs (``SETUPS``: ``kbvqa.serts.experiment``),
the methods of each (``METHODS``) and the folder it writes (``RESULTS_DIR``), both in
``kbvqa.serts.results``. ``run.py`` runs it (``run_setup``, ``write_run``, ``main``); ``__main__.py``
is ``python -m kbvqa.experiments.serts_experiment``.

Leaves out: PPO (chapter 18, live), the gpu profile's BioASQ run, tables and figures (``kbvqa.serts.results``).
"""
from __future__ import annotations

from kbvqa.experiments.serts_experiment.run import run_setup, write_run
from kbvqa.serts.experiment import SETUPS
from kbvqa.serts.results import METHODS, RESULTS_DIR

__all__ = ["METHODS", "RESULTS_DIR", "SETUPS", "run_setup", "write_run"]
