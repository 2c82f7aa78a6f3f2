"""RCTS on the toy world: the experiment script behind chapter 14 (Tab. 2, 4, 5 and Fig. 5b analogues).

Run ``python -m kbvqa.experiments.rcts_toy`` (every group) or pick groups and sizes::

    python -m kbvqa.experiments.rcts_toy --groups main --limit 320        # Tab. 2 analogue
    python -m kbvqa.experiments.rcts_toy --groups ablation alpha rollouts diagnostics --sweep-limit 20

The with-context rows show each example's reasoning context C_i: the toy world's worked solution,
or with ``--contexts data/experiments/rcts_contexts/kb_rcts.jsonl`` the contexts a reasoner wrote
(RCTS §3.2; ``python -m kbvqa.experiments.rcts_contexts --for-queries 320`` builds them, resumably,
for every candidate of the first N test questions; the provenance then names the reasoner's model).

It works on the toy world's multiple-choice test split (320 questions; ``--limit`` takes the
first n) with the ``mc_kb`` split as knowledge base and the shipped model of the active profile, on
one CPU thread (``--threads``). Each question's record is appended to ``runs/<run>.jsonl`` as soon
as it is done, under a header with the run's fingerprint; a rerun skips the questions already
there (resumable) unless the fingerprint changed or ``--fresh`` is given. At the end it writes
``results.json`` (tables + provenance: git commit, seed, date, machine, model checkpoint hash, wall
time) and ``results.csv``, and prints every table next to the paper's numbers.

Retrieval (§3.3, hybrid MaxSim, k+1 with the query dropped) is computed once and kept in
``retrieval.json`` (top-N ids and scores per test question), so reruns and the chapter reuse the
same candidates. The similarity s_i of Eq. 5-6 is the MaxSim score divided by the query's token
count (the mean per-token cosine), our reading of "normalised similarity".

This package is the experiment's spec: the rows it runs (``ROWS``, by group ``GROUPS``:
``kbvqa.rcts.runs``) and the folder it writes (``RESULTS_DIR``: ``data/experiments/rcts/``,
``kbvqa.rcts.results``). ``run.py`` runs it (``run_to_file``, ``main``); ``__main__.py`` is
``python -m kbvqa.experiments.rcts_toy``.

Leaves out: the rows and how they run (``kbvqa.rcts.runs``), the retrieval cache and the toy
``Setting`` (``kbvqa.rcts.settings``), the folder, tables and figures (``kbvqa.rcts.results``).
"""
from __future__ import annotations

from kbvqa.experiments.rcts_toy.run import run_to_file
from kbvqa.rcts.results import RESULTS_DIR
from kbvqa.rcts.runs import GROUPS, ROWS

__all__ = ["GROUPS", "RESULTS_DIR", "ROWS", "run_to_file"]
