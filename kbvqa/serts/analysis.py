"""Why a SeRTS search helps or not, read from the records' per-node diagnostics (chapter 17).

A search can only beat the question's own BM25 if two things hold, and the records measure each:

- **the proposer finds something new**: some node's own query retrieves a gold abstract that the
  question's BM25 top k missed (``node_new_gold``, written by ``kbvqa.serts.experiment``);
- **the evaluator can tell**: its 0-5 grades R_i follow what was retrieved, here the toy world's rubric
  grade of the same documents (``node_rubric``: what a perfect evaluator would say). A grader that
  gives every node the same score leaves UCT (Eq. 1) nothing to follow.

``search_diagnostics(records)`` returns, per searching method: questions and graded nodes, the share of
nodes and of questions where a query found a new gold abstract, the evaluator's rank correlation with
the rubric and its exact-agreement share, the mean number of distinct grades per question, and the
paired recall gain over BM25. ``rank_correlation`` is Spearman's rho with average ranks for ties.

Leaves out: running searches (``kbvqa.serts.experiment``), the tables (``kbvqa.serts.results``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

NODE_FIELDS = ("node_new_gold", "node_score", "node_rubric")


def _average_ranks(values: Sequence[float]) -> np.ndarray:
    values = np.asarray(values, dtype=float)
    order = np.argsort(values, kind="mergesort")
    ranks = np.empty(len(values))
    ranks[order] = np.arange(1, len(values) + 1)
    for v in np.unique(values):                      # ties share their mean rank
        tied = values == v
        ranks[tied] = ranks[tied].mean()
    return ranks


def rank_correlation(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho of two equally long sequences (average ranks for ties); None when either is
    constant or shorter than 2 (no ranking to compare); ``ValueError`` for different lengths."""
    if len(x) != len(y):
        raise ValueError(f"need sequences of one length, got {len(x)} and {len(y)}")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return None
    return float(np.corrcoef(_average_ranks(x), _average_ranks(y))[0, 1])


def search_diagnostics(records: Sequence[dict], baseline: str = "bm25") -> dict[str, dict]:
    """{method: diagnostics} for every method whose records carry the per-node fields (see the module
    docstring); ``recall_gain`` pairs each question's recall with the ``baseline`` method's on the same
    question and seed (None without baseline records). ``ValueError`` when a record's node lists differ
    in length."""
    base = {(r["id"], r["seed"]): r["recall"] for r in records if r["method"] == baseline}
    by_method: dict[str, list[dict]] = {}
    for r in records:
        if all(k in r for k in NODE_FIELDS):
            if len({len(r[k]) for k in NODE_FIELDS}) != 1:
                raise ValueError(f"record {r['method']} / {r['id']}: node lists of different lengths")
            by_method.setdefault(r["method"], []).append(r)
    out = {}
    for method, recs in by_method.items():
        new_gold = [g for r in recs for g in r["node_new_gold"]]
        graded = [(s, g) for r in recs for s, g in zip(r["node_score"], r["node_rubric"]) if s is not None]
        gains = [r["recall"] - base[(r["id"], r["seed"])] for r in recs if (r["id"], r["seed"]) in base]
        out[method] = {
            "questions": len(recs), "nodes": len(new_gold),
            "nodes_with_new_gold": float(np.mean([g > 0 for g in new_gold])) if new_gold else None,
            "questions_with_new_gold": float(np.mean([any(g > 0 for g in r["node_new_gold"]) for r in recs])),
            "parsed_grades": len(graded),
            "grade_rubric_rho": rank_correlation([s for s, _ in graded], [g for _, g in graded]),
            "grade_equals_rubric": float(np.mean([s == g for s, g in graded])) if graded else None,
            "distinct_grades_per_question": float(np.mean([len({s for s in r["node_score"] if s is not None})
                                                           for r in recs])),
            "recall_gain": float(np.mean(gains)) if gains else None}
    return out
