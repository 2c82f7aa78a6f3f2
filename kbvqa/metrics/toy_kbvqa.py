"""The toy world's KB-VQA answers scored by the official scorers, and their split score.

The toy KB-VQA questions are InfoSeek-style (string / time / numerical with an accepted range,
split into *unseen question* and *unseen entity*) plus E-VQA-style multi-answer questions, so each
is scored by the official rule of its kind:

- ``toy_kbvqa_correct``: InfoSeek's pointwise score (``infoseek_score``) for string, time and
  numerical questions (numbers against ``answer_range``); E-VQA's multi-answer set IoU >= 0.5
  (``evqa_score`` with the items joined by '&&', question type "multi_answer") for "multi". A
  missing or blank prediction is wrong (every query counts).
- ``official_correct(prediction, query)``: the same for a ``Query`` of any KB-VQA source: E-VQA's
  ``evaluate_example`` for E-VQA questions (ids ``evqa-*``: single answers by exact match, answer
  sets by IoU, every alternative of ``meta["answer_sets"]``), ``toy_kbvqa_correct`` otherwise (the
  toy world and InfoSeek). ``kbvqa_split_of(query)``: the split a question counts in.
- ``score_records(records, queries)``: a run's per-query records (``id`` and the extracted
  ``answer``) re-judged in place by ``official_correct``, each tagged with its split, so a table
  can be rescored from committed answers without running a model again.
- ``kbvqa_split_score``: InfoSeek's final score over 0/1 results -- split accuracies in percent
  rounded to 2 decimals, their harmonic mean rounded again (``infoseek.py``) -- with a seeded
  percentile bootstrap interval that resamples questions *within* each split, so every replicate
  keeps the two split sizes (the statistic is a harmonic mean of two split means, not one mean).
- ``records_split_score(records)``: ``kbvqa_split_score`` of records scored by ``score_records``, or
  ``None`` when a split is missing (a live subset may hold one split only).
- ``paired_split_bootstrap``: the same for the difference of two systems on the same questions.

ReAG's training reward (Psi, IoU, gamma/delta; ``kbvqa.reag.rewards``) is not a scorer and is not used
here. What this file leaves out: running models (the chapters) and the scorers themselves.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from kbvqa.data.schema import Query
from kbvqa.metrics.answers import query_gold
from kbvqa.metrics.evqa import evqa_score
from kbvqa.metrics.infoseek import INFOSEEK_SPLITS, harmonic_mean, infoseek_score, infoseek_split
from kbvqa.metrics.intervals import PairedDiff

TOY_KBVQA_TYPES = ("string", "time", "numerical", "multi")


def toy_kbvqa_correct(prediction: str | None, answers: Sequence[str], answer_type: str,
                      answer_range: Sequence[float] | None = None) -> bool:
    """Is a toy KB-VQA prediction right by the official scorer of its kind (module docstring)?

    ``answers``: aliases (string/time/numerical) or the items of the one answer set ("multi").
    """
    if answer_type not in TOY_KBVQA_TYPES:
        raise ValueError(f"unknown toy KB-VQA answer type {answer_type!r}; expected one of {TOY_KBVQA_TYPES}")
    if prediction is None or not str(prediction).strip():
        return False
    if answer_type == "multi":
        return evqa_score(str(prediction), ["&&".join(answers)], "multi_answer") == 1.0
    return bool(infoseek_score(str(prediction), answer_type, list(answers), answer_range))


def official_correct(prediction: str | None, query: Query) -> bool:
    """Is ``prediction`` (an extracted answer) right for ``query`` by its dataset's official scorer?

    E-VQA questions (ids ``evqa-*``) go through ``evqa_score`` with every alternative answer (set);
    toy and InfoSeek questions through ``toy_kbvqa_correct``. A missing or blank prediction is wrong;
    a query without a usable gold answer raises ``ValueError`` (as the official tools do).
    """
    if prediction is None or not str(prediction).strip():
        return False
    if query.id.startswith("evqa-"):
        multi = query.answer_type == "multi"
        return evqa_score(str(prediction), query_gold(query), "multi_answer" if multi else "automatic") == 1.0
    return toy_kbvqa_correct(prediction, query.answers, query.answer_type, query.answer_range)


def kbvqa_split_of(query: Query) -> str:
    """The InfoSeek split a KB-VQA question counts in ("unseen_question" / "unseen_entity"), from
    ``meta["split_kind"]`` (toy world, InfoSeek) or else its ``split``."""
    return infoseek_split(query.meta.get("split_kind") or query.split or "")


def score_records(records: Sequence[dict], queries: Sequence[Query], field: str = "answer") -> list[dict]:
    """Set ``correct`` (``official_correct`` of each record's ``field``) and ``split`` on records
    that carry a query ``id``; returns them. A record whose query is unknown raises ``ValueError``."""
    by_id = {q.id: q for q in queries}
    missing = sorted({r["id"] for r in records} - set(by_id))
    if missing:
        raise ValueError(f"no query for records {missing[:3]}")
    for r in records:
        q = by_id[r["id"]]
        r["correct"], r["split"] = official_correct(r.get(field), q), kbvqa_split_of(q)
    return list(records)


def _official_final(q_percent: np.ndarray, e_percent: np.ndarray) -> np.ndarray:
    q = np.where(q_percent == 0, 1e-12, q_percent)
    e = np.where(e_percent == 0, 1e-12, e_percent)
    return np.round(2.0 / (1.0 / q + 1.0 / e), 2)


def _split_indices(splits: Sequence[str], n: int) -> list[np.ndarray]:
    if len(splits) != n:
        raise ValueError(f"{n} results for {len(splits)} splits")
    buckets = np.array([infoseek_split(s) for s in splits])
    out = [np.flatnonzero(buckets == s) for s in INFOSEEK_SPLITS]
    for split, idx in zip(INFOSEEK_SPLITS, out):
        if len(idx) == 0:
            raise ValueError(f"no question in the {split} split: the split score needs both")
    return out


def _replicates(results: Sequence[np.ndarray], index: list[np.ndarray], n_boot: int,
                seed: int) -> list[np.ndarray]:
    """Official final score of each result vector on ``n_boot`` within-split resamples (the same
    resampled questions for every vector)."""
    rng = np.random.default_rng(seed)
    draws = [idx[rng.integers(0, len(idx), size=(n_boot, len(idx)))] for idx in index]
    out = []
    for x in results:
        q, e = (np.round(x[d].mean(axis=1) * 100, 2) for d in draws)
        out.append(_official_final(q, e))
    return out


def _check(n_boot: int, level: float) -> float:
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    return (1 - level) / 2


def _percent(x: np.ndarray) -> float:
    return round(float(x.sum()) / len(x) * 100, 2)


@dataclass(frozen=True)
class SplitScore:
    """InfoSeek's final score of 0/1 results, in percent (official rounding), with its interval."""
    final: float            # harmonic mean of the two split scores
    unseen_question: float
    unseen_entity: float
    low: float              # percentile bootstrap interval of ``final`` (within-split resampling)
    high: float
    n_question: int
    n_entity: int

    def __str__(self) -> str:
        return (f"{self.final:.2f} [{self.low:.2f}, {self.high:.2f}] (unseen question {self.unseen_question:.2f}"
                f" on {self.n_question}, unseen entity {self.unseen_entity:.2f} on {self.n_entity})")


def kbvqa_split_score(correct: Sequence[bool], splits: Sequence[str], n_boot: int = 2000,
                      level: float = 0.95, seed: int = 0) -> SplitScore:
    """Final score (percent) of one result per question, and its within-split bootstrap interval.

    ``splits``: each question's split ("unseen_question", "unseen_entity", or an official
    ``data_split``; anything not ending in "unseen_question" is the entity split). Both splits must
    be present.
    """
    tail = _check(n_boot, level)
    x = np.asarray(correct, dtype=float)
    index = _split_indices(splits, len(x))
    q, e = (_percent(x[idx]) for idx in index)
    reps = _replicates([x], index, n_boot, seed)[0]
    return SplitScore(round(harmonic_mean(q, e), 2), q, e, float(np.quantile(reps, tail)),
                      float(np.quantile(reps, 1 - tail)), len(index[0]), len(index[1]))


def records_split_score(records: Sequence[dict], n_boot: int = 2000, seed: int = 0) -> SplitScore | None:
    """``kbvqa_split_score`` of records with ``correct`` and ``split`` (``score_records``); ``None``
    when a record has no split or one split has no record."""
    splits = [r.get("split") for r in records]
    if not records or None in splits or len({infoseek_split(s) for s in splits}) < 2:
        return None
    return kbvqa_split_score([bool(r["correct"]) for r in records], splits, n_boot=n_boot, seed=seed)


def split_score_fields(records: Sequence[dict]) -> dict:
    """A results row's split-score columns (percent): ``split_score``, ``split_low``,
    ``split_high``, all ``None`` when ``records_split_score`` is."""
    s = records_split_score(records)
    return {"split_score": s and s.final, "split_low": s and s.low, "split_high": s and s.high}


@dataclass(frozen=True)
class SplitDiff(PairedDiff):
    """Final score of ``a`` minus that of ``b`` on the same questions, in percentage points."""

    def __str__(self) -> str:
        return f"{self.diff:+.2f} [{self.low:+.2f}, {self.high:+.2f}] points on {self.n} questions"


def paired_split_bootstrap(a: Sequence[bool], b: Sequence[bool], splits: Sequence[str], n_boot: int = 2000,
                           level: float = 0.95, seed: int = 0) -> SplitDiff:
    """Split-score difference a - b with a paired percentile bootstrap resampling within splits."""
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"need two non-empty results on the same questions, got {len(a)} and {len(b)}")
    tail = _check(n_boot, level)
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    index = _split_indices(splits, len(xa))
    finals = [round(harmonic_mean(*(_percent(x[idx]) for idx in index)), 2) for x in (xa, xb)]
    ra, rb = _replicates([xa, xb], index, n_boot, seed)
    d = ra - rb
    return SplitDiff(round(finals[0] - finals[1], 2), float(np.quantile(d, tail)),
                     float(np.quantile(d, 1 - tail)), len(xa))
