"""BM25 (SeRTS Eq. 3-4): the readable version equals bm25s (lucene variant), Eq. 3 = (k1 + 1) x bm25s,
a hand-computed score, tokenisation as bm25s's, empty results, argument errors, and the toy world's
vocabulary mismatch (synonyms) that motivates query reformulation."""
from __future__ import annotations

import math

import numpy as np
import pytest

from kbvqa.retrieval.bm25 import BM25Index, ReadableBM25, bm25_idf, bm25_term_weight, bm25_tokens

CORPUS = ["The zorp fever is treated with blimthopril in adults.",
          "Blimthopril lowers blood pressure; the drug was tested in 40 adults.",
          "Marsh fever (also called zorp fever) spreads in wet seasons.",
          "An unrelated abstract about dune habitats and their plants.",
          "Zorp zorp zorp: a case series of the fever in children."]
QUERIES = ["zorp fever treatment", "blimthopril adults", "marsh", "dune plants habitats", "the a of",
           "fever fever children"]


def test_readable_lucene_equals_bm25s_and_paper_is_k1_plus_1_times():
    bm25s = pytest.importorskip("bm25s")
    ours = ReadableBM25(CORPUS, variant="lucene")
    paper = ReadableBM25(CORPUS, variant="paper")
    lib = bm25s.BM25(k1=1.5, b=0.75)
    lib.index(bm25s.tokenize(CORPUS, stopwords="en", show_progress=False), show_progress=False)
    wrapper = BM25Index(CORPUS)
    for query in QUERIES:
        tokens = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
        assert tokens == bm25_tokens(query)                      # same tokenisation
        expected = np.asarray(lib.get_scores(tokens), dtype=float) if tokens else np.zeros(len(CORPUS))
        assert np.allclose(ours.scores(query), expected, atol=1e-5)
        assert np.allclose(wrapper.scores(query), expected, atol=1e-5)
        assert np.allclose(paper.scores(query), 2.5 * expected, atol=1e-5)   # (k1 + 1) = 2.5
    assert np.ptp(ours.scores("zorp fever treatment")) > 0.1     # not all equal (the test can fail)


def test_search_agrees_with_wrapper_on_the_toy_literature():
    from kbvqa.data.toyworld import get_world

    world = get_world(0)
    texts = [f"{x.title}. {x.text}" for x in world.literature[:300]]
    ids = [x.id for x in world.literature[:300]]
    ours, lib = ReadableBM25(texts, ids), BM25Index(texts, ids)
    for q in world.lit_questions[:10]:
        assert np.allclose(ours.scores(q.question), lib.scores(q.question), atol=1e-4)
        a, b = ours.search(q.question, 5), lib.search(q.question, 5)
        assert np.allclose([s for _, s in a], [s for _, s in b], atol=1e-4)
        cut = a[-1][1] + 1e-4                                    # ties at the 5th score may differ
        assert {i for i, s in a if s > cut} == {i for i, s in b if s > cut}


def test_hand_computed_score():
    docs = ["apple banana", "apple apple cherry", "cherry"]
    index = ReadableBM25(docs, variant="paper", stopwords=False)
    # "apple" in doc 1: N = 3, n = 2, f = 2, |d| = 3, avgdl = 2
    idf = math.log((3 - 2 + 0.5) / (2 + 0.5) + 1)
    tf_part = 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / 2))
    assert index.score("apple", 1) == pytest.approx(idf * tf_part)
    assert bm25_idf(3, 2) == pytest.approx(idf)
    assert bm25_term_weight(2, 3, 2, variant="paper") == pytest.approx(tf_part)
    assert bm25_term_weight(2, 3, 2, variant="lucene") == pytest.approx(tf_part / 2.5)
    assert index.score("durian", 0) == 0.0


def test_tokens_and_empty_results():
    assert bm25_tokens("The Zorp-fever, in 2020!") == ["zorp", "fever", "2020"]
    assert bm25_tokens("a I x") == []
    for index in (ReadableBM25(CORPUS), BM25Index(CORPUS)):
        assert index.search("", 5) == []
        assert index.search("the of and", 5) == []                # stop words only
        assert index.search("xylophone", 5) == []                 # out of vocabulary
        hits = index.search("zorp", 10)
        assert [i for i, _ in hits] and all(s > 0 for _, s in hits)
        assert "3" not in [i for i, _ in hits]                    # no zero-score padding


@pytest.mark.parametrize("kwargs", [{"k1": -1.0}, {"b": 1.5}, {"b": -0.1}])
def test_bad_parameters(kwargs):
    with pytest.raises(ValueError):
        ReadableBM25(CORPUS, **kwargs)
    with pytest.raises(ValueError):
        BM25Index(CORPUS, **kwargs)


def test_bad_arguments():
    with pytest.raises(ValueError):
        ReadableBM25(CORPUS, variant="okapi")
    with pytest.raises(ValueError):
        ReadableBM25([])
    with pytest.raises(ValueError):
        ReadableBM25(CORPUS, ids=["a"])
    with pytest.raises(ValueError):
        ReadableBM25(CORPUS).search("zorp", 0)


def test_vocabulary_mismatch_is_fixed_by_the_other_name():
    index = ReadableBM25(CORPUS)
    assert [i for i, _ in index.search("marsh", 5)] == ["2"]       # the other name finds only one
    assert set(i for i, _ in index.search("marsh zorp", 5)) >= {"0", "2", "4"}


def test_bm25s_top_k_never_picks_jax(monkeypatch):
    """bm25s's "auto" backend takes JAX when it is installed, and JAX's first call grabs 75 % of the
    GPU's memory (the gpu smoke run's chapters died of it): the index asks for numpy."""
    index = BM25Index(["the red fox", "a blue whale"])
    seen = {}
    real = index.index.retrieve

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(index.index, "retrieve", spy)
    assert index.search("fox", k=1)[0][0] == "0"
    assert seen["backend_selection"] == "numpy"
