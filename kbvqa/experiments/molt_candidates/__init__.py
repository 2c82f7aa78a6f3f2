"""MOLT's candidate pipeline on the whole toy test split: Recall@K per stage (Tab. 2/3 analogue).

``run(seed, k, every)`` runs ``CandidatePipeline`` (coarse top-K over the summaries,
fusion re-scoring kept at length K so that every Recall@K <= K is read off one run, the oracle
passage extractor) over every ``kbvqa_test`` query and returns the recall curves, the gold ranks
per query (chapter 26 draws its schedule analysis from the fused ranks) and provenance.
``write_results`` keeps it as ``data/experiments/molt/candidates.json``; the pipeline on the toy
world (``pipeline_for``, ``candidate_sets``) and the loader (``load_results``) are in
``kbvqa.molt.candidates``.

Run: ``python -m kbvqa.experiments.molt_candidates`` (about a minute on one thread).
This package is the experiment's spec: the K it reads Recall@K at (``KS``) and the file it writes
(``RESULTS``: ``kbvqa.molt.candidates``). ``run.py`` runs it (``run``, ``write_results``, ``main``);
``__main__.py`` is ``python -m kbvqa.experiments.molt_candidates``.

Leaves out: the model's passage extractor and grounder (model calls: chapter 25 runs them live on
a few queries), the tournament.
"""
from __future__ import annotations

from kbvqa.experiments.molt_candidates.run import KS, write_results
from kbvqa.molt.candidates import RESULTS

__all__ = ["KS", "RESULTS", "write_results"]
