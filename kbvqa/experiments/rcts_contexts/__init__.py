"""Script: a reasoning-context KB for the toy world's first N ``mc_kb`` pairs and its Tab. 6 table.

    python -m kbvqa.experiments.rcts_contexts --pairs 160 --out data/experiments/rcts_contexts

Builds the KB with the profile's ``ReasoningContextConfig`` (RCTS §3.2), measures the
reasoning-context accuracy (Tab. 6) of four context sources with one fresh greedy answer per pair
(no context, first candidate, chosen candidate, the toy world's worked solution = oracle), reads the
candidates with ``toy_context_checks``, and writes

- ``results.json``: provenance (commit, date, SHA-256 of the model weights, world seed and toy-world
  version, profile, threads, seconds), the config, ``summarize_build``, the accuracy of each source
  with its standard error sqrt(p(1-p)/n) and the letters answered, the gold letters, and the toy
  checks;
- ``kb.jsonl``: the records (``save_reasoning_kb``), for chapters that reuse them.

With ``--for-queries N`` it instead builds only ``kb_rcts.jsonl``, the contexts the RCTS rows read
(``rcts_toy --contexts``): one record for every example the first N test questions retrieve
(``candidate_pairs``), appended in chunks so that an interrupted build resumes (``build_for_queries``;
``--set n_candidates=2 n_predictions=2`` shrinks N_c, N_p for the CPU).

This package is the experiment's spec: the context sources it compares (``SOURCES``) and the
folder it writes (``RESULTS_DIR``: ``data/experiments/rcts_contexts/``, ``kbvqa.rcts.context_kb``).
``run.py`` runs it (``run``, ``main``); ``__main__.py`` is ``python -m kbvqa.experiments.rcts_contexts``.

Leaves out: the folder, reading ``results.json`` back and the summaries (``kbvqa.rcts.context_kb``:
``RESULTS_DIR``, ``load_results``, ``answer_letters``, ``toy_check_summary``), plotting (the chapter draws).
"""
from __future__ import annotations

from kbvqa.experiments.rcts_contexts.run import SOURCES
from kbvqa.rcts.context_kb import RESULTS_DIR

__all__ = ["RESULTS_DIR", "SOURCES"]
