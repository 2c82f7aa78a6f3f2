"""BM25 (SeRTS App. C.1, Eq. 3-4) written out readably, and a thin wrapper over ``bm25s`` for real use.

Eq. 3, the score of document d for query q with terms q_1..q_n:

    score(q, d) = sum_i IDF(q_i) * f(q_i, d) * (k1 + 1) / (f(q_i, d) + k1 * (1 - b + b * len(d) / avgdl))

Eq. 4, the inverse document frequency over N documents of which n(q_i) contain q_i:

    IDF(q_i) = ln((N - n(q_i) + 0.5) / (n(q_i) + 0.5) + 1)

Which variant the library implements. ``bm25s`` (0.3.x) defaults to ``method="lucene"`` (Kamphuis et
al., ECIR 2020): its IDF is exactly Eq. 4, and its term-frequency part is
``f / (f + k1 * (1 - b + b * len(d) / avgdl))``, i.e. Eq. 3 *without* the constant factor (k1 + 1).
So ``bm25s`` score = Eq. 3 / (k1 + 1): same ranking, scores smaller by 2.5 at k1 = 1.5.
``ReadableBM25(variant="lucene")`` reproduces ``bm25s`` to float precision, ``variant="paper"`` is
Eq. 3 as printed (tests/test_bm25.py checks both). A query term repeated in the query counts once
per occurrence in both (the sum runs over query positions; bm25s does the same).

Tokenisation is ``bm25s.tokenize``'s rule, written out in ``bm25_tokens``: lower case, tokens are
runs of two or more word characters (``\\b\\w\\w+\\b``), English stop words removed (bm25s's list), no
stemming. Parameters k1 = 1.5, b = 0.75 (bm25s's defaults; the paper mentions k1 = 1.2 as usual).

Both indexes share one interface: ``index.search(query, k) -> list[(doc_id, score)]`` best first,
only documents with a positive score (an empty list when no query term is in the vocabulary; ties
keep corpus order in the readable version). ``BM25Index`` is also the toy literature's search
(``kbvqa.models.pretrain_mc_lit.bm25_search`` caches one per world). Leaves out: metrics.
"""
from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

__all__ = ["BM25_VARIANTS", "BM25Index", "ReadableBM25", "bm25_idf", "bm25_term_weight", "bm25_tokens"]

BM25_VARIANTS = ("paper", "lucene")
_TOKEN = re.compile(r"(?u)\b\w\w+\b")   # bm25s.tokenize's default token_pattern


def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def bm25_tokens(text: str, stopwords: bool = True) -> list[str]:
    """The tokens BM25 sees: lower-cased ``\\w\\w+`` runs, English stop words removed (as bm25s)."""
    tokens = _TOKEN.findall(str(text).lower())
    if not stopwords:
        return tokens
    stop = _stopwords()
    return [t for t in tokens if t not in stop]


def _check_params(k1: float, b: float, variant: str) -> None:
    if not k1 >= 0:
        raise ValueError(f"k1 must be >= 0, got {k1!r}")
    if not 0 <= b <= 1:
        raise ValueError(f"b must lie in [0, 1], got {b!r}")
    if variant not in BM25_VARIANTS:
        raise ValueError(f"variant must be one of {BM25_VARIANTS}, got {variant!r}")


def bm25_idf(n_docs: int, doc_freq: int) -> float:
    """Eq. 4: ln((N - n + 0.5) / (n + 0.5) + 1); always > 0 (the "+ 1" keeps common terms positive)."""
    return math.log((n_docs - doc_freq + 0.5) / (doc_freq + 0.5) + 1.0)


def bm25_term_weight(tf: float, doc_len: float, avgdl: float, k1: float = 1.5, b: float = 0.75,
                     variant: str = "paper") -> float:
    """The fraction of Eq. 3 for one term: f (k1 + 1) / (f + k1 (1 - b + b len(d) / avgdl)).

    ``variant="lucene"`` drops the factor (k1 + 1), as bm25s does.

    Appendix: SeRTS | App. C.1 Eq. 3-4 | tests/test_bm25.py::test_hand_computed_score | serts-bm25
    """
    _check_params(k1, b, variant)
    norm = k1 * (1.0 - b + b * doc_len / avgdl) if avgdl > 0 else k1
    numerator = tf * (k1 + 1.0) if variant == "paper" else tf
    return numerator / (tf + norm) if tf + norm > 0 else 0.0


class ReadableBM25:
    """Eq. 3-4 with plain Python dictionaries: slow, but every number can be printed in a chapter.

    ``texts`` are the documents, ``ids`` their names (default "0", "1", ...)."""

    def __init__(self, texts: Sequence[str], ids: Sequence[str] | None = None, k1: float = 1.5,
                 b: float = 0.75, variant: str = "lucene", stopwords: bool = True):
        _check_params(k1, b, variant)
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        if not texts:
            raise ValueError("cannot index an empty corpus")
        self.k1, self.b, self.variant, self.stopwords = k1, b, variant, stopwords
        self.ids = [str(i) for i in (ids if ids is not None else range(len(texts)))]
        self.doc_tokens = [bm25_tokens(t, stopwords) for t in texts]
        self.term_freqs = [Counter(toks) for toks in self.doc_tokens]          # f(q_i, d)
        self.doc_lengths = [len(toks) for toks in self.doc_tokens]             # |d|
        self.avgdl = sum(self.doc_lengths) / len(self.doc_lengths)             # avgdl
        self.doc_freq: Counter = Counter()                                     # n(q_i)
        for tf in self.term_freqs:
            self.doc_freq.update(tf.keys())

    def idf(self, term: str) -> float:
        return bm25_idf(len(self.ids), self.doc_freq.get(term, 0))

    def score(self, query: str, doc_index: int) -> float:
        """Eq. 3 for one (query, document) pair; terms absent from the corpus add nothing."""
        tf, total = self.term_freqs[doc_index], 0.0
        for term in bm25_tokens(query, self.stopwords):
            if term in tf:
                total += self.idf(term) * bm25_term_weight(tf[term], self.doc_lengths[doc_index], self.avgdl,
                                                           self.k1, self.b, self.variant)
        return total

    def scores(self, query: str) -> np.ndarray:
        """Eq. 3 against every document, in corpus order."""
        return np.array([self.score(query, i) for i in range(len(self.ids))], dtype=float)

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        s = self.scores(query)
        order = np.argsort(-s, kind="stable")[:k]
        return [(self.ids[i], float(s[i])) for i in order if s[i] > 0]


class BM25Index:
    """The same interface over ``bm25s`` (lucene variant, numpy backend): for real corpora.

    Scores are bm25s's, i.e. Eq. 3 / (k1 + 1) (module docstring)."""

    def __init__(self, texts: Sequence[str], ids: Sequence[str] | None = None, k1: float = 1.5,
                 b: float = 0.75, stopwords: bool = True):
        import bm25s

        _check_params(k1, b, "lucene")
        if ids is not None and len(ids) != len(texts):
            raise ValueError(f"{len(ids)} ids for {len(texts)} texts")
        if not texts:
            raise ValueError("cannot index an empty corpus")
        self.ids = [str(i) for i in (ids if ids is not None else range(len(texts)))]
        self._stop = "en" if stopwords else None
        self._bm25s = bm25s
        self.index = bm25s.BM25(k1=k1, b=b)
        self.index.index(bm25s.tokenize(list(texts), stopwords=self._stop, show_progress=False),
                         show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """bm25s's score of every document (zeros when no query term is in the vocabulary)."""
        tokens = [t for t in bm25_tokens(query, self._stop is not None)]
        return np.asarray(self.index.get_scores(tokens), dtype=float) if tokens else np.zeros(len(self.ids))

    def search(self, query: str, k: int = 5) -> list[tuple[str, float]]:
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        tokens = self._bm25s.tokenize([str(query)], stopwords=self._stop, show_progress=False)
        if not tokens.vocab:
            return []
        # numpy, never "auto": with JAX installed (Colab, most GPU images) bm25s would pick it, and
        # JAX's first call takes 75 % of the GPU's memory, leaving the chapter's models none
        docs, scores = self.index.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False,
                                           backend_selection="numpy")
        return [(self.ids[int(i)], float(s)) for i, s in zip(docs[0], scores[0]) if s > 0]
