"""Retrieval metrics: BioASQ-style precision / recall / F1 / hit rate (SeRTS Tab. 3), Recall@K,
hit@K, MRR and BioASQ average precision.

Per question, following the BioASQ evaluation measures (BioASQ ``QuestionAnswerEvaluator.java``,
``calculatePRF`` / ``calculateAveragePrecision``, phase A documents):

    precision = |retrieved ∩ gold| / |retrieved|        recall = |retrieved ∩ gold| / |gold|
    F1 = 2PR / (P + R)  (0 when P or R is 0)            hit = 1 if retrieved ∩ gold ≠ ∅

An empty retrieved list scores 0 everywhere (the official code skips it, leaving zeros); the
dataset averages are macro averages over questions. SeRTS (Sec. 4, "Hit Rate") reports the share of
questions with at least one gold document retrieved. Retrieved ids are de-duplicated (first
occurrence kept) before scoring; BioASQ submissions are lists of distinct documents anyway.

``recall_at_k`` is |top-k ∩ gold| / |gold|; with one gold item per query (E-VQA, InfoSeek, MOLT
Tab. 2) it equals ``hit_at_k``, the usual "Recall@K" of KB-VQA retrieval papers.

What this file leaves out: snippet-level (character-offset) BioASQ measures and GMAP.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RetrievalScores:
    """Precision, recall, F1 and hit (0/1, or a rate once averaged) for one or many questions."""

    precision: float
    recall: float
    f1: float
    hit: float


def pubmed_id(url_or_id: str) -> str:
    """'http://www.ncbi.nlm.nih.gov/pubmed/34687634' -> '34687634' (BioASQ document ids)."""
    return str(url_or_id).rstrip("/").rsplit("/", 1)[-1].strip()


def _unique(items: Iterable[Hashable]) -> list:
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def retrieval_prf(retrieved: Sequence[Hashable], gold: Iterable[Hashable]) -> RetrievalScores:
    """BioASQ precision / recall / F1 / hit of one question's retrieved ids."""
    ranked, gold_set = _unique(retrieved), set(gold)
    if not ranked:
        return RetrievalScores(0.0, 0.0, 0.0, 0.0)
    tp = sum(1 for r in ranked if r in gold_set)
    precision = tp / len(ranked)
    recall = tp / len(gold_set) if gold_set else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision and recall else 0.0
    return RetrievalScores(precision, recall, f1, float(tp > 0))


def mean_retrieval_prf(retrieved_lists: Sequence[Sequence[Hashable]],
                       gold_lists: Sequence[Iterable[Hashable]]) -> RetrievalScores:
    """Macro average of ``retrieval_prf`` over questions; ``hit`` becomes the hit rate."""
    if len(retrieved_lists) != len(gold_lists):
        raise ValueError(f"{len(retrieved_lists)} retrieved lists for {len(gold_lists)} gold lists")
    if not gold_lists:
        raise ValueError("no questions to score")
    scores = [retrieval_prf(r, g) for r, g in zip(retrieved_lists, gold_lists)]
    n = len(scores)
    return RetrievalScores(sum(s.precision for s in scores) / n, sum(s.recall for s in scores) / n,
                           sum(s.f1 for s in scores) / n, sum(s.hit for s in scores) / n)


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")


def recall_at_k(retrieved: Sequence[Hashable], gold: Iterable[Hashable], k: int) -> float:
    """|top-k ∩ gold| / |gold| (0 when gold is empty)."""
    _check_k(k)
    gold_set = set(gold)
    if not gold_set:
        return 0.0
    return len(set(_unique(retrieved)[:k]) & gold_set) / len(gold_set)


def hit_at_k(retrieved: Sequence[Hashable], gold: Iterable[Hashable], k: int) -> float:
    """1.0 if any gold id is among the top k, else 0.0."""
    _check_k(k)
    gold_set = set(gold)
    return float(any(r in gold_set for r in _unique(retrieved)[:k]))


def reciprocal_rank(retrieved: Sequence[Hashable], gold: Iterable[Hashable],
                    k: int | None = None) -> float:
    """1 / rank of the first gold id (ranks from 1), 0 if none within the first ``k``."""
    if k is not None:
        _check_k(k)
    gold_set = set(gold)
    ranked = _unique(retrieved)
    for rank, item in enumerate(ranked[:k] if k else ranked, start=1):
        if item in gold_set:
            return 1.0 / rank
    return 0.0


def average_precision(retrieved: Sequence[Hashable], gold: Iterable[Hashable],
                      cutoff: int = 10) -> float:
    """BioASQ (since BioASQ8) average precision: sum of precision@r at each relevant rank r,
    divided by min(cutoff, |gold|); 0 when nothing relevant is retrieved."""
    _check_k(cutoff)
    gold_set = set(gold)
    ranked = _unique(retrieved)
    hits, total = 0, 0.0
    for rank, item in enumerate(ranked, start=1):
        if item in gold_set:
            hits += 1
            total += hits / rank
    if hits == 0:
        return 0.0
    return total / min(cutoff, len(gold_set))


def mean_over_queries(metric, retrieved_lists: Sequence[Sequence[Hashable]],
                      gold_lists: Sequence[Iterable[Hashable]], **kwargs) -> float:
    """Average any per-query metric above (e.g. ``recall_at_k`` with ``k=5``, ``reciprocal_rank``
    for MRR) over queries."""
    if len(retrieved_lists) != len(gold_lists):
        raise ValueError(f"{len(retrieved_lists)} retrieved lists for {len(gold_lists)} gold lists")
    if not gold_lists:
        raise ValueError("no queries to score")
    values = [metric(r, g, **kwargs) for r, g in zip(retrieved_lists, gold_lists)]
    return sum(values) / len(values)


def mean_reciprocal_rank(retrieved_lists: Sequence[Sequence[Hashable]],
                         gold_lists: Sequence[Iterable[Hashable]], k: int | None = None) -> float:
    """MRR over queries (optionally MRR@k)."""
    return mean_over_queries(reciprocal_rank, retrieved_lists, gold_lists, k=k)
