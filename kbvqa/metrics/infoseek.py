"""InfoSeek scoring, mirroring the official ``infoseek_eval.py`` (edchengg/infoseek_eval).

Per question type:

- ``string`` (entity) and ``time``: exact match after ``infoseek_normalize`` against any alias
  (the official "time" rule is plain exact match too, despite its docstring about +/- one year);
- ``numerical``: the prediction is read as numbers (``parse_numeric_prediction``): the first two
  numbers found form a range ``[a, b]`` when ``a <= b`` and otherwise only ``a`` counts; with no
  number at all the prediction becomes the range ``[0, 0]``. The gold answer is a range
  ``[lo, hi]`` (a bare number ``x`` becomes ``[0.9x, 1.1x]``). A scalar is right inside the gold
  range; a range is right if it lies inside the gold range or its interval IoU is >= 0.5.

The final InfoSeek score is the harmonic mean of the accuracies on the two validation splits,
*unseen question* and *unseen entity* (each split pools all question types); a zero split score is
replaced by 1e-12, as officially. Scores here are fractions in [0, 1] (the official script prints
percentages rounded to two decimals).

What this file leaves out: the normalisation itself (``normalize.py``) and reading InfoSeek files.
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence

from kbvqa.metrics.normalize import infoseek_normalize

NUMERIC_TOLERANCE = 0.1      # a scalar gold answer x becomes [x(1-0.1), x(1+0.1)]
RANGE_IOU_THRESHOLD = 0.5
_NUMBER = re.compile(r"[-+]?[.]?[\d]+(?:,\d\d\d)*[\.]?\d*(?:[eE][-+]?\d+)?")
_SPLITS = ("unseen_question", "unseen_entity")


def _spread_ranges(text: str) -> str:
    """``clean_str_range``: "9-10" -> "9 - 10" (a hyphen right after a digit is a range dash)."""
    return "".join(" - " if ch == "-" and i >= 1 and text[i - 1].isdigit() else ch
                   for i, ch in enumerate(text))


def parse_numeric_prediction(text: str) -> float | tuple[float, float]:
    """``process_numerical_answer``: a float (scalar) or a ``(lo, hi)`` range; never raises."""
    numbers = []
    for raw in _NUMBER.findall(_spread_ranges(str(text))):
        raw = raw.replace(",", "").strip(".")
        if raw.count(".") > 1:
            raw = raw.split(".")[0]
        try:
            numbers.append(float(raw))
        except ValueError:  # e.g. "+" left alone after stripping; the official code would crash
            continue
        if len(numbers) == 2:
            break
    if len(numbers) == 2:
        first, second = numbers
        return (first, second) if first <= second else first
    if len(numbers) == 1:
        return numbers[0]
    return (0.0, 0.0)


def range_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """``range_intersection_over_union`` of two closed intervals (with the official 1e-12 padding
    on each length, so two identical points have IoU 0, not NaN)."""
    lo_a, hi_a = min(a), max(a)
    lo_b, hi_b = min(b), max(b)
    overlap = max(0.0, min(hi_a, hi_b) - max(lo_a, lo_b))
    union = (hi_a - lo_a + 1e-12) + (hi_b - lo_b + 1e-12) - overlap
    if not math.isfinite(union) or union == 0:
        return 0.0
    return overlap / union


def numeric_range_correct(prediction: float | Sequence[float], gold: float | Sequence[float],
                          tolerance: float = NUMERIC_TOLERANCE) -> bool:
    """``metric_numerical_range``: is a parsed prediction right for a gold range (or scalar)?

    A scalar gold ``x`` becomes ``[x(1-tol), x(1+tol)]``; we sort the two ends so that a negative
    ``x`` still gives a valid range (the official code would produce an empty one; it never feeds
    scalars in practice, InfoSeek gold answers are ranges).
    """
    if isinstance(gold, (int, float)):
        gold = sorted((gold * (1 - tolerance), gold * (1 + tolerance)))
    lo, hi = float(gold[0]), float(gold[1])
    if isinstance(prediction, (int, float)):
        return lo <= prediction <= hi
    p_lo, p_hi = float(prediction[0]), float(prediction[1])
    if lo <= p_lo <= hi and lo <= p_hi <= hi:
        return True
    return range_iou((p_lo, p_hi), (lo, hi)) >= RANGE_IOU_THRESHOLD - 1e-12


def infoseek_exact_match(prediction: str, aliases: Iterable[str]) -> bool:
    """Exact match after ``infoseek_normalize`` against any alias (entity and time questions)."""
    pred = infoseek_normalize(str(prediction))
    return any(pred == infoseek_normalize(str(a)) for a in aliases)


def infoseek_score(prediction: str, question_type: str, answers: Sequence[str] = (),
                   answer_range: Sequence[float] | None = None) -> int:
    """1 or 0 for one InfoSeek question.

    ``question_type`` is "string"/"entity", "time" or "numerical" (case-insensitive). Numerical
    questions need ``answer_range`` (the ``answer_eval`` range) or a first answer that reads as a
    number; anything else raises ``ValueError``.
    """
    qtype = question_type.lower()
    if qtype == "numerical":
        if answer_range is None:
            parsed = [parse_numeric_prediction(a) for a in answers]
            scalars = [p for p in parsed if isinstance(p, float)]
            if not scalars:
                raise ValueError("a numerical question needs answer_range or a numeric answer")
            gold: float | Sequence[float] = scalars[0]
        else:
            gold = answer_range
        return int(numeric_range_correct(parse_numeric_prediction(prediction), gold))
    if qtype not in ("string", "entity", "time", "other"):
        raise ValueError(f"unknown InfoSeek question type {question_type!r}")
    if not answers:
        raise ValueError("a string/time question needs at least one answer alias")
    return int(infoseek_exact_match(prediction, answers))


def harmonic_mean(*values: float) -> float:
    """Harmonic mean with zeros replaced by 1e-12 (as ``infoseek_eval.harmonic_mean``)."""
    if not values:
        raise ValueError("harmonic_mean needs at least one value")
    safe = [v if v != 0 else 1e-12 for v in values]
    return len(safe) / sum(1.0 / v for v in safe)


def infoseek_evaluate(records: Iterable[dict]) -> dict[str, float]:
    """Score a list of records and combine the two splits as the official leaderboard does.

    Each record has ``prediction``, ``question_type``, ``answers`` (aliases), optionally
    ``answer_range`` and a ``split`` ending in "unseen_question" or "unseen_entity" (as the
    official ``data_split`` field, e.g. "val_unseen_entity"). Returns per-split accuracy, the
    per-type accuracy over all records and ``final`` = harmonic mean of the two splits.
    """
    per_split: dict[str, list[int]] = {s: [] for s in _SPLITS}
    per_type: dict[str, list[int]] = {}
    for rec in records:
        split = next((s for s in _SPLITS if str(rec.get("split", "")).endswith(s)), None)
        if split is None:
            raise ValueError(f"record split {rec.get('split')!r} is neither of {_SPLITS}")
        score = infoseek_score(rec["prediction"], rec["question_type"], rec.get("answers", ()),
                               rec.get("answer_range"))
        per_split[split].append(score)
        per_type.setdefault(rec["question_type"].lower(), []).append(score)
    out = {s: (sum(v) / len(v) if v else 0.0) for s, v in per_split.items()}
    out.update({f"type_{t}": sum(v) / len(v) for t, v in per_type.items()})
    out["final"] = harmonic_mean(out["unseen_question"], out["unseen_entity"])
    return out
