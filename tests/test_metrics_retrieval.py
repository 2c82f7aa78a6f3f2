"""Retrieval metrics (kbvqa.metrics.retrieval) on the real BioASQ 11B1 gold documents and by hand."""
from __future__ import annotations

import json

import pytest
from _samples import sample  # noqa: E402

from kbvqa.metrics import (
    RetrievalScores,
    average_precision,
    hit_at_k,
    mean_over_queries,
    mean_reciprocal_rank,
    mean_retrieval_prf,
    pubmed_id,
    recall_at_k,
    reciprocal_rank,
    retrieval_prf,
)


def bioasq_gold() -> list[list[str]]:
    path = sample("bioasq/11B1_subset_20.json")
    questions = json.loads(path.read_text())["questions"]
    return [[pubmed_id(url) for url in q["documents"]] for q in questions]


def test_pubmed_ids():
    assert pubmed_id("http://www.ncbi.nlm.nih.gov/pubmed/34687634") == "34687634"
    assert pubmed_id("34687634") == "34687634"


def test_bioasq_prf_on_real_gold_documents():
    gold = bioasq_gold()
    assert len(gold) == 20 and [len(g) for g in gold][:2] == [1, 19]
    fake = [f"fake{i}" for i in range(10)]
    # Question 1 (yes/no, 1 gold document): the gold document first, then 3 wrong ones.
    s = retrieval_prf([gold[0][0], *fake[:3]], gold[0])
    assert s == RetrievalScores(precision=0.25, recall=1.0, f1=pytest.approx(0.4), hit=1.0)
    # F1 = 2 * 1/4 * 1 / (1/4 + 1) = (1/2) / (5/4) = 2/5
    # Question 2 (factoid, 19 gold documents): 5 of them among 10 retrieved.
    s = retrieval_prf(gold[1][:5] + fake[:5], gold[1])
    assert (s.precision, s.recall) == (0.5, pytest.approx(5 / 19))
    assert s.f1 == pytest.approx(10 / 29)   # 2 * 1/2 * 5/19 / (1/2 + 5/19) = (5/19) / (29/38)


def test_bioasq_macro_average_and_hit_rate():
    gold = bioasq_gold()
    # Even questions: the first gold document and one wrong one; odd questions: only wrong ones.
    retrieved = [[g[0], "fake"] if i % 2 == 0 else ["fake1", "fake2"] for i, g in enumerate(gold)]
    s = mean_retrieval_prf(retrieved, gold)
    assert s.hit == 0.5                                   # 10 of 20 questions hit
    assert s.precision == pytest.approx(0.25)             # (10 * 1/2 + 10 * 0) / 20
    even_recall = [1 / len(g) for g in gold[::2]]
    assert s.recall == pytest.approx(sum(even_recall) / 20)
    assert s.f1 == pytest.approx(sum(2 * 0.5 * r / (0.5 + r) for r in even_recall) / 20)


def test_prf_edge_cases():
    assert retrieval_prf([], ["a"]) == RetrievalScores(0.0, 0.0, 0.0, 0.0)   # nothing retrieved
    assert retrieval_prf(["a", "a", "b"], ["a"]).precision == 0.5            # duplicates dropped
    assert retrieval_prf(["x"], []).recall == 0.0
    with pytest.raises(ValueError):
        mean_retrieval_prf([["a"]], [])


def test_ranking_metrics_by_hand():
    ranked = ["d3", "d1", "d7", "d2", "d9"]
    gold = {"d1", "d2", "d5"}
    assert recall_at_k(ranked, gold, 1) == 0.0
    assert recall_at_k(ranked, gold, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranked, gold, 5) == pytest.approx(2 / 3)
    assert hit_at_k(ranked, gold, 1) == 0.0 and hit_at_k(ranked, gold, 2) == 1.0
    assert reciprocal_rank(ranked, gold) == 0.5                     # first gold at rank 2
    assert reciprocal_rank(ranked, gold, k=1) == 0.0
    # AP: relevant at ranks 2 and 4 -> (1/2 + 2/4) / min(10, 3) = 1/3
    assert average_precision(ranked, gold) == pytest.approx(1 / 3)
    assert average_precision(["x"], gold) == 0.0
    assert mean_reciprocal_rank([ranked, ["d5"]], [gold, gold]) == pytest.approx((0.5 + 1) / 2)
    assert mean_over_queries(recall_at_k, [ranked], [gold], k=5) == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        recall_at_k(ranked, gold, 0)


def test_single_gold_recall_equals_hit():
    # KB-VQA "Recall@K" (one gold entity per query) is the hit rate at K.
    ranked = ["e4", "e2", "e9"]
    for k in (1, 2, 3):
        assert recall_at_k(ranked, ["e2"], k) == hit_at_k(ranked, ["e2"], k)
