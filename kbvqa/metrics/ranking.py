"""Ranking quality: the Mann-Whitney ROC-AUC, written once for every chapter that ranks by a score.

``roc_auc(scores, labels)`` is P(score of a random positive > score of a random negative), ties
counting one half (NaN without both classes); ReAG's critic card, the reader's card and RCTS's
reward diagnostics read it. ``separation_auc(scores, kinds)`` gives the same AUC of one positive
kind against each other kind (ReAG chapter 21: relevant passages against soft and hard negatives).
"""
from __future__ import annotations

from collections.abc import Sequence


def roc_auc(scores, labels) -> float:
    """Area under the ROC curve (Mann-Whitney U; ties count half); NaN without both classes."""
    pos = [s for s, y in zip(scores, labels) if y]
    neg = [s for s, y in zip(scores, labels) if not y]
    if not pos or not neg:
        return float("nan")
    wins = sum((p > q) + 0.5 * (p == q) for p in pos for q in neg)
    return wins / (len(pos) * len(neg))


def separation_auc(scores: Sequence[float], kinds: Sequence[str], positive: str = "relevant") -> dict[str, float]:
    """AUC of ``positive`` scores against each other kind: P(score_pos > score_neg) + P(tie) / 2,
    over all pairs. NaN for a kind (or the positive class) with no score."""
    if len(scores) != len(kinds):
        raise ValueError(f"{len(scores)} scores for {len(kinds)} kinds")
    out = {}
    for kind in sorted(set(kinds) - {positive}):
        pairs = [(float(s), k == positive) for s, k in zip(scores, kinds) if k in (positive, kind)]
        auc = roc_auc([s for s, _ in pairs], [y for _, y in pairs])
        out[kind] = auc if auc != auc else round(auc, 4)
    return out
