"""ROUGE-N and ROUGE-S/SU (ROUGE-2 and ROUGE-SU4 in SeRTS Tab. 4-6), computed as ROUGE-1.5.5.pl
does, so the numbers match the perl reference to its printed precision.

Tokenisation (``readText``): ASCII lower-case, every "-" becomes its own token, every character
other than ``[A-Za-z0-9-]`` (including all non-ASCII) becomes a space, and only tokens starting with
a letter or digit are kept (so the dashes are dropped again). With ``stemming`` (perl ``-m``) each
token longer than 3 characters is Porter-stemmed (``porter.py``).

Counting (``createNGram`` / ``createSkipBigram``): ROUGE-N counts n-grams; ROUGE-S<d> counts ordered
word pairs (i, j) with at most ``d`` words between them; ROUGE-SU<d> (``-u``) also counts unigrams,
but -- a quirk of the perl loop -- not the unigram of the last token. Hits are clipped counts.

Several references (``-f A``, the default): hits and counts are summed over the references, so
recall = sum(hits) / sum(reference counts) and precision = sum(hits) / (k * candidate count);
``mode="best"`` (``-f B``) keeps the reference with the best recall. F = PR / ((1-a)P + aR), a = 0.5.
A corpus score (``mean_rouge``) is the mean of the per-pair R, P and F, as ROUGE's "Average_X".

What this file leaves out: ROUGE-L/W/BE, stop-word removal (``-s``), length limits and the
bootstrap confidence intervals.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from kbvqa.metrics.porter import porter_stem

_NON_TOKEN = re.compile(r"[^A-Za-z0-9\-]")
_WORD_START = re.compile(r"[a-z0-9]")
MODES = ("average", "best")


@dataclass(frozen=True)
class RougeScore:
    """Recall, precision and F-measure of one ROUGE variant."""

    recall: float
    precision: float
    f: float


def rouge_tokens(text: str, stemming: bool = False) -> list[str]:
    """ROUGE-1.5.5 tokens of a text (see the module docstring)."""
    text = _NON_TOKEN.sub(" ", str(text).replace("-", " - ")).lower()
    tokens = [t for t in text.split() if _WORD_START.match(t)]
    if stemming:
        tokens = [porter_stem(t) if len(t) > 3 else t for t in tokens]
    return tokens


def ngram_counts(tokens: Sequence[str], n: int) -> Counter:
    """Counts of the n-grams of a token list."""
    return Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def skip_bigram_counts(tokens: Sequence[str], max_skip: int | None = 4,
                       with_unigrams: bool = True) -> Counter:
    """Counts of skip-bigrams (at most ``max_skip`` words in between; ``None`` = unlimited), plus
    the unigrams of all tokens but the last when ``with_unigrams`` (ROUGE-SU)."""
    grams: Counter = Counter()
    last = len(tokens) - 1
    for i in range(last):
        if with_unigrams:
            grams[(tokens[i],)] += 1
        stop = last if max_skip is None else min(last, i + max_skip + 1)
        for j in range(i + 1, stop + 1):
            grams[(tokens[i], tokens[j])] += 1
    return grams


def _f_measure(recall: float, precision: float, alpha: float) -> float:
    denom = (1 - alpha) * precision + alpha * recall
    return precision * recall / denom if denom > 0 else 0.0


def _combine(candidate: Counter, references: Sequence[Counter], mode: str,
             alpha: float) -> RougeScore:
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha}")
    if not references:
        raise ValueError("at least one reference is needed")
    cand_total = sum(candidate.values())
    hits, ref_total, cand_sum, best = 0, 0, 0, -1.0
    for ref in references:
        hit = sum(min(count, candidate[g]) for g, count in ref.items())
        total = sum(ref.values())
        if mode == "average":
            hits, ref_total, cand_sum = hits + hit, ref_total + total, cand_sum + cand_total
        else:
            recall = round(hit / total, 5) if total else 0.0   # perl compares "%07.5f" strings
            if recall > best:
                best, hits, ref_total, cand_sum = recall, hit, total, cand_total
    recall = hits / ref_total if ref_total else 0.0
    precision = hits / cand_sum if cand_sum else 0.0
    return RougeScore(recall, precision, _f_measure(recall, precision, alpha))


def _as_list(references: str | Sequence[str]) -> list[str]:
    return [references] if isinstance(references, str) else list(references)


def rouge_n(candidate: str, references: str | Sequence[str], n: int = 2, stemming: bool = False,
            mode: str = "average", alpha: float = 0.5) -> RougeScore:
    """ROUGE-N of a candidate against one or several references (ROUGE-2: ``n=2``)."""
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    cand = ngram_counts(rouge_tokens(candidate, stemming), n)
    refs = [ngram_counts(rouge_tokens(r, stemming), n) for r in _as_list(references)]
    return _combine(cand, refs, mode, alpha)


def rouge_su(candidate: str, references: str | Sequence[str], max_skip: int | None = 4,
             stemming: bool = False, mode: str = "average", alpha: float = 0.5,
             with_unigrams: bool = True) -> RougeScore:
    """ROUGE-SU<max_skip> (ROUGE-SU4 by default); ``with_unigrams=False`` gives ROUGE-S."""
    if max_skip is not None and (not isinstance(max_skip, int) or max_skip < 0):
        raise ValueError(f"max_skip must be a non-negative int or None, got {max_skip!r}")
    cand = skip_bigram_counts(rouge_tokens(candidate, stemming), max_skip, with_unigrams)
    refs = [skip_bigram_counts(rouge_tokens(r, stemming), max_skip, with_unigrams)
            for r in _as_list(references)]
    return _combine(cand, refs, mode, alpha)


def mean_rouge(candidates: Sequence[str], references: Sequence[str | Sequence[str]],
               variant: str = "rouge-2", **kwargs) -> RougeScore:
    """Corpus ROUGE: the mean of per-pair recall, precision and F ("Average_R/P/F" in perl).

    ``variant`` is "rouge-<n>" or "rouge-su<d>" / "rouge-s<d>"; other keyword arguments go to
    ``rouge_n`` / ``rouge_su``.
    """
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates for {len(references)} reference sets")
    if not candidates:
        raise ValueError("no candidates to score")
    if m := re.fullmatch(r"rouge-(\d+)", variant):
        scores = [rouge_n(c, r, n=int(m.group(1)), **kwargs) for c, r in zip(candidates, references)]
    elif m := re.fullmatch(r"rouge-(su|s)(\d*)", variant):
        skip = int(m.group(2)) if m.group(2) else None
        scores = [rouge_su(c, r, max_skip=skip, with_unigrams=m.group(1) == "su", **kwargs)
                  for c, r in zip(candidates, references)]
    else:
        raise ValueError(f"unknown ROUGE variant {variant!r}; use e.g. 'rouge-2' or 'rouge-su4'")
    k = len(scores)
    return RougeScore(sum(s.recall for s in scores) / k, sum(s.precision for s in scores) / k,
                      sum(s.f for s in scores) / k)
