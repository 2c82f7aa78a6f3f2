"""VQA-style answer scorers: VQA accuracy (VizWiz, VQA v2), InfoSeek and Encyclopedic-VQA, each
as its official evaluation code computes it.

**VQA accuracy** -- GT-Vision-Lab/VQA ``PythonEvaluationTools/vqaEvaluation/vqaEval.py``. With
``m`` of the human answers matching, the naive score ``min(1, m/3)`` is averaged over the ten
leave-one-annotator-out subsets of nine answers:

    acc = 1/10 * sum_i min(1, #matches among the answers other than i / 3)

which gives 0.3, 0.6, 0.9, 1.0 for 1, 2, 3, >= 4 matching annotators out of 10. The prediction gets
the full normalisation (``vqa_normalize``); the human answers are taken as stored (the official
files are normalised already) and only get ``processPunctuation`` when the annotators disagree;
``normalize_gt=True`` normalises them fully, for raw answer lists (toy world, hand-made data).

**InfoSeek** -- edchengg/infoseek_eval ``infoseek_eval.py``. String (entity) and time questions:
exact match after ``infoseek_normalize`` against any alias (the "time" rule is plain exact match,
despite its docstring about +/- one year). Numerical: the first two numbers of the prediction form
a range ``[a, b]`` when ``a <= b``, otherwise only ``a`` counts; no number at all gives ``[0, 0]``.
The gold answer is a range (a bare ``x`` becomes ``[0.9x, 1.1x]``); a scalar is right inside it, a
range is right inside it or with interval IoU >= 0.5. The final score is the harmonic mean of the
accuracies on the *unseen question* and *unseen entity* splits (0 replaced by 1e-12). Scores here
are fractions in [0, 1]; the official script prints percentages rounded to two decimals.

**Encyclopedic-VQA** -- google-research ``encyclopedic_vqa/evaluation_utils.py``. A candidate is
scored against every '|' alternative and the best counts. Against one reference: exact match after
``evqa_normalize``; for multi-answer questions the reference is split on '&&', the candidate on
',' (after ' and ' / ' & ' -> ','), both normalised, and set IoU >= 0.5 is right; failing that,
BEM (BERT answer equivalence, >= 0.5), here a pluggable ``bem(question, reference, candidate) ->
probability`` that the cpu profile leaves out (``None``: exact match only). For multi-answer
questions BEM sees '&&' replaced by ','. An empty reference raises ``ValueError`` as officially.

What this file leaves out: the normalisations (``normalize.py``) and the BEM model itself.
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Sequence

from kbvqa.data.schema import ANSWER_TYPES
from kbvqa.metrics.normalize import (
    evqa_normalize,
    infoseek_normalize,
    vqa_normalize,
    vqa_process_punctuation,
)


# --- VQA accuracy ----------------------------------------------------------------------------
def vqa_accuracy(prediction: str, gt_answers: Sequence[str], normalize_gt: bool = False) -> float:
    """VQA accuracy of one prediction against its human answers (usually 10), in [0, 1].

    Any ``prediction`` string is accepted; an empty ``gt_answers`` raises ``ValueError``.
    """
    if isinstance(gt_answers, str) or len(gt_answers) == 0:
        raise ValueError("gt_answers must be a non-empty list of answer strings")
    pred = vqa_normalize(str(prediction))
    if normalize_gt:
        gts = [vqa_normalize(str(a)) for a in gt_answers]
    elif len(set(gt_answers)) > 1:
        gts = [vqa_process_punctuation(str(a)) for a in gt_answers]
    else:
        gts = [str(a) for a in gt_answers]
    matches = [g == pred for g in gts]
    total = sum(matches)
    # Leaving annotator i out removes one match exactly when annotator i matched.
    per_subset = [min(1.0, (total - left_out) / 3.0) for left_out in matches]
    return sum(per_subset) / len(per_subset)


def mean_vqa_accuracy(predictions: Sequence[str], gt_answer_lists: Sequence[Sequence[str]],
                      normalize_gt: bool = False) -> float:
    """Mean per-question VQA accuracy (the ``overall`` number of vqaEval.py, as a fraction)."""
    if len(predictions) != len(gt_answer_lists):
        raise ValueError(f"{len(predictions)} predictions for {len(gt_answer_lists)} questions")
    if not predictions:
        raise ValueError("no questions to score")
    scores = [vqa_accuracy(p, g, normalize_gt) for p, g in zip(predictions, gt_answer_lists)]
    return sum(scores) / len(scores)


# --- InfoSeek --------------------------------------------------------------------------------
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


# --- Encyclopedic-VQA ------------------------------------------------------------------------
EVQA_QUESTION_TYPES = ("templated", "automatic", "multi_answer", "2_hop")
MULTI_ANSWER_TYPES = ("multi_answer", "multianswer", "list", "multi")
IOU_THRESHOLD = 0.5
BEM_THRESHOLD = 0.5

BEMScorer = Callable[[str, str, str], float]   # (question, reference, candidate) -> P(equivalent)


def split_references(answer: str | Sequence[str]) -> list[str]:
    """The reference alternatives: an E-VQA answer string split on '|', or a list as given."""
    if isinstance(answer, str):
        return [a for a in answer.split("|")]
    return [str(a) for a in answer]


def split_candidate_items(candidate: str) -> list[str]:
    """A predicted list answer as items: ' and ' / ' & ' -> ',', split on ',', normalise, drop
    empties."""
    text = str(candidate).replace(" and ", ",").replace(" & ", ",")
    items = (evqa_normalize(item) for item in text.split(","))
    return [item for item in items if item]


def list_iou(reference_items: Sequence[str], candidate_items: Sequence[str]) -> float:
    """Set intersection over union (``_list_intersection_over_union``); the reference must be
    non-empty."""
    ref, cand = set(reference_items), set(candidate_items)
    if not ref:
        raise ValueError("reference list is empty")
    return len(ref & cand) / len(ref | cand)


def single_answer_exact_match(reference: str, candidate: str) -> bool:
    """``singleanswer_exact_match``."""
    ref = evqa_normalize(reference)
    if not ref:
        raise ValueError(f"reference answer {reference!r} is empty after normalisation")
    return ref == evqa_normalize(str(candidate))


def multi_answer_exact_match(reference: str, candidate: str,
                             iou_threshold: float = IOU_THRESHOLD) -> bool:
    """``multianswer_exact_match``: reference items split on '&&', set IoU >= threshold."""
    ref_items = [r for r in (evqa_normalize(x) for x in reference.split("&&")) if r]
    if not ref_items:
        raise ValueError(f"reference answer {reference!r} is empty after normalisation")
    return list_iou(ref_items, split_candidate_items(candidate)) >= iou_threshold


def _is_multi(question_type: str) -> bool:
    known = EVQA_QUESTION_TYPES + MULTI_ANSWER_TYPES + ANSWER_TYPES
    if question_type not in known:
        raise ValueError(f"unknown question type {question_type!r}; expected one of {known}")
    return question_type in MULTI_ANSWER_TYPES


def evqa_exact_match(reference: str, candidate: str, question_type: str = "automatic") -> bool:
    """``exact_match_scoring_function`` for one reference."""
    if _is_multi(question_type):
        return multi_answer_exact_match(reference, candidate)
    return single_answer_exact_match(reference, candidate)


def evqa_score(candidate: str, references: str | Sequence[str], question_type: str = "automatic",
               question: str = "", bem: BEMScorer | None = None) -> float:
    """``evaluate_example``: max over the references of (exact match, else thresholded BEM).

    ``references`` is the E-VQA answer string ('|' alternatives) or a list of alternatives.
    Returns 1.0 or 0.0.
    """
    refs = split_references(references)
    if not refs:
        raise ValueError("reference list cannot be empty")
    multi = _is_multi(question_type)
    best = 0.0
    for ref in refs:
        if not ref:
            raise ValueError("reference answer cannot be empty")
        if evqa_exact_match(ref, candidate, question_type):
            return 1.0
        if bem is not None:
            bem_ref = ref.replace("&&", ",") if multi else ref
            best = max(best, float(bem(question, bem_ref, str(candidate)) >= BEM_THRESHOLD))
    return best


def mean_evqa_score(candidates: Sequence[str], references: Sequence[str | Sequence[str]],
                    question_types: Sequence[str], bem: BEMScorer | None = None) -> float:
    """Mean ``evqa_score`` over a test set (E-VQA reports this, as a percentage)."""
    if not (len(candidates) == len(references) == len(question_types)):
        raise ValueError("candidates, references and question_types must have the same length")
    if not candidates:
        raise ValueError("no questions to score")
    scores = [evqa_score(c, r, t, bem=bem) for c, r, t in zip(candidates, references, question_types)]
    return sum(scores) / len(scores)
