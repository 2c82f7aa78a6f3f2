"""InfoSeek scoring as its official evaluation code computes it.

Mirrors ``infoseek_eval.py`` (edchengg/infoseek_eval, the script the InfoSeek README points to;
entry point ``evaluate(prediction_path, reference_path, reference_qtype_path)``).

**Pointwise.** String (entity) and time questions: exact match after ``infoseek_normalize`` against
any alias of ``answer_eval`` (the "time" rule is plain exact match, despite its docstring about
+/- one year). Numerical: the first two numbers of the prediction form a range ``[a, b]`` when
``a <= b``, otherwise only ``a`` counts; no number at all gives ``[0, 0]``. The gold answer is a
range (a bare ``x`` becomes ``[0.9x, 1.1x]``); a scalar is right inside it, a range is right
inside it or with interval IoU >= 0.5.

**Split score.** Every prediction row whose ``data_id`` is in the references is scored (ids
absent from the predictions are simply not scored; a repeated row counts twice). A row goes to
the *unseen question* split when its ``data_split`` ends in "unseen_question", otherwise to the
*unseen entity* split (so "val_seen" lands there too). Question types other than "time" and
"numerical" (case-insensitive) fall into the string bucket. Each split's accuracy, and its
per-type accuracies, are percentages rounded to 2 decimals (an empty bucket scores 0); the final
score is the harmonic mean of the two *rounded* split scores (0 replaced by 1e-12), rounded to 2
decimals again.

``infoseek_evaluate_official`` returns exactly that dict; ``infoseek_evaluate`` takes the book's
flat records and returns fractions. What this file leaves out: the normalisation
(``normalize.py``) and file I/O (rows in, dict out).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence

from kbvqa.metrics.normalize import infoseek_normalize

NUMERIC_TOLERANCE = 0.1      # a scalar gold answer x becomes [x(1-0.1), x(1+0.1)]
RANGE_IOU_THRESHOLD = 0.5
_NUMBER = re.compile(r"[-+]?[.]?[\d]+(?:,\d\d\d)*[\.]?\d*(?:[eE][-+]?\d+)?")
INFOSEEK_SPLITS = ("unseen_question", "unseen_entity")
INFOSEEK_TYPE_KEYS = {"time": "score_time", "numerical": "score_num", "string": "score_string"}


# --- numbers -----------------------------------------------------------------------------------
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
        except ValueError:  # cannot happen with this pattern; kept so that parsing never raises
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


# --- one question ------------------------------------------------------------------------------
def infoseek_exact_match(prediction: str, aliases: Iterable[str]) -> bool:
    """Exact match after ``infoseek_normalize`` against any alias (entity and time questions)."""
    pred = infoseek_normalize(str(prediction))
    return any(pred == infoseek_normalize(str(a)) for a in aliases)


def _scalar_gold(answers: Sequence[str]) -> float:
    """The one number that every numeric alias states; anything else is ambiguous."""
    parsed = [parse_numeric_prediction(a) for a in answers]
    numbers = [p for p in parsed if p != (0.0, 0.0)]
    if any(isinstance(p, tuple) for p in numbers) or len(set(numbers)) != 1:
        raise ValueError(
            f"numerical answers {list(answers)!r} do not state one number; pass the accepted range "
            "as answer_range=(lo, hi) (answers are aliases, never the bounds of a range)")
    return numbers[0]


def infoseek_score(prediction: str, question_type: str, answers: Sequence[str] = (),
                   answer_range: Sequence[float] | None = None) -> int:
    """1 or 0 for one InfoSeek question.

    ``question_type`` is "string"/"entity"/"other", "time" or "numerical" (case-insensitive);
    anything else raises ``ValueError`` (``infoseek_evaluate_official`` puts unknown types into
    the string bucket, as the official script does). ``answers`` is a *list* of aliases.

    Numerical questions are scored against ``answer_range`` (the official ``answer_eval`` range).
    Without it, every alias that contains a number must state the *same single* number ``x``,
    which becomes ``[0.9x, 1.1x]``; aliases that disagree (``["9", "11"]``: bounds passed as
    aliases) or that are ranges raise ``ValueError`` instead of silently scoring against ``[8.1,
    9.9]``. With ``answer_range`` given, ``answers`` is ignored for numerical questions.
    """
    if isinstance(answers, str):
        raise ValueError("answers must be a list of aliases, not one string")
    qtype = question_type.lower()
    if qtype == "numerical":
        gold = _scalar_gold(answers) if answer_range is None else answer_range
        return int(numeric_range_correct(parse_numeric_prediction(prediction), gold))
    if qtype not in ("string", "entity", "time", "other"):
        raise ValueError(f"unknown InfoSeek question type {question_type!r}")
    if not answers:
        raise ValueError("a string/time question needs at least one answer alias")
    return int(infoseek_exact_match(prediction, answers))


# --- split scores --------------------------------------------------------------------------------
def harmonic_mean(*values: float) -> float:
    """Harmonic mean with zeros replaced by 1e-12 (as ``infoseek_eval.harmonic_mean``)."""
    if not values:
        raise ValueError("harmonic_mean needs at least one value")
    safe = [v if v != 0 else 1e-12 for v in values]
    return len(safe) / sum(1.0 / v for v in safe)


def infoseek_split(data_split: str) -> str:
    """The official bucket of a ``data_split``: "unseen_question" if it ends so, else
    "unseen_entity" ("val_seen", "test_unseen_entity", "" all go there)."""
    return "unseen_question" if str(data_split).endswith("unseen_question") else "unseen_entity"


def infoseek_type_bucket(question_type: str) -> str:
    """The official bucket of a question type: "time", "numerical", else "string"."""
    qtype = str(question_type).lower()
    return qtype if qtype in ("time", "numerical") else "string"


def _percent(scores: Sequence[int]) -> float:
    return round((sum(scores) / len(scores) if scores else 0) * 100, 2)


def _official_dict(scored: Iterable[tuple[str, str, int]]) -> dict:
    """(split, type bucket, 0/1) triples -> the official result dict (``evaluate_infoseek_full``)."""
    buckets: dict[str, dict[str, list[int]]] = {s: {t: [] for t in INFOSEEK_TYPE_KEYS}
                                                for s in INFOSEEK_SPLITS}
    for split, bucket, score in scored:
        buckets[split][bucket].append(int(score))
    out: dict = {}
    for split in INFOSEEK_SPLITS:
        by_type = buckets[split]
        every = by_type["time"] + by_type["numerical"] + by_type["string"]
        out[f"{split}_score"] = {"score": _percent(every),
                                 **{key: _percent(by_type[t]) for t, key in INFOSEEK_TYPE_KEYS.items()}}
    split_scores = [out[f"{s}_score"]["score"] for s in INFOSEEK_SPLITS]
    return {"final_score": round(harmonic_mean(*split_scores), 2), **out}


def _numerical_range(answer_eval) -> list[float]:
    """``prepare_qid2example`` for a numerical reference: the first ``range`` of ``answer_eval``."""
    try:
        first = answer_eval[0] if isinstance(answer_eval, list) else answer_eval
        bounds = first["range"]
    except (KeyError, IndexError, TypeError):
        raise ValueError(f"a numerical answer_eval must be [{{'range': [lo, hi]}}, ...], "
                         f"got {answer_eval!r}") from None
    return [float(str(b)) for b in bounds][:2]


def infoseek_evaluate_official(predictions: Iterable[Mapping], references: Iterable[Mapping],
                               qtypes: Iterable[Mapping] | None = None) -> dict:
    """The official ``evaluate(prediction_path, reference_path, reference_qtype_path)`` on rows.

    ``predictions``: ``{"data_id", "prediction"}``; ``references``: ``{"data_id", "data_split",
    "answer_eval", ...}`` with aliases for string/time questions and the raw
    ``[{"range": [lo, hi]}, ...]`` for numerical ones; question types from ``qtypes`` rows
    ``{"data_id", "question_type"}`` or, when ``qtypes`` is None, from each reference's
    ``question_type``. Returns, in percent rounded to 2 decimals, ``{"final_score",
    "unseen_question_score": {"score", "score_time", "score_num", "score_string"},
    "unseen_entity_score": {...}}``. The inputs are not modified. A reference without a question
    type raises ``ValueError`` (the official script raises ``KeyError``).
    """
    references = list(references)
    if qtypes is None:
        qid2qtype = {r["data_id"]: r.get("question_type") for r in references}
    else:
        qid2qtype = {q["data_id"]: q["question_type"] for q in qtypes}
    qid2example = {}
    for ref in references:
        qtype = qid2qtype.get(ref["data_id"])
        if qtype is None:
            raise ValueError(f"no question type for reference {ref['data_id']!r}")
        answer = ref["answer_eval"]
        if str(qtype).lower() == "numerical":
            answer = _numerical_range(answer)
        qid2example[ref["data_id"]] = (infoseek_split(ref["data_split"]), infoseek_type_bucket(qtype), answer)
    scored = []
    for pred in predictions:
        if pred["data_id"] not in qid2example:
            continue
        split, bucket, answer = qid2example[pred["data_id"]]
        text = "" if pred["prediction"] is None else str(pred["prediction"])
        if bucket == "numerical":
            right = numeric_range_correct(parse_numeric_prediction(text), answer)
        else:
            if not answer:
                raise ValueError(f"reference {pred['data_id']!r} has no answer_eval aliases")
            right = max(infoseek_normalize(text) == infoseek_normalize(str(a)) for a in answer)
        scored.append((split, bucket, int(right)))
    return _official_dict(scored)


def infoseek_evaluate(records: Iterable[dict]) -> dict[str, float]:
    """Score the book's flat records and combine the splits as the official script does.

    Each record has ``prediction``, ``question_type``, ``answers`` (aliases), optionally
    ``answer_range`` and ``split`` (the official ``data_split``, e.g. "val_unseen_entity"; any
    value not ending in "unseen_question" is the entity split, as officially). Types other than
    time/numerical are scored as strings. Returns fractions: per-split accuracy
    (``unseen_question``, ``unseen_entity``), per-split per-type accuracy
    (``unseen_question_time``, ..., 0 for an empty bucket as officially), per-type accuracy over all
    records (``type_<type>``) and ``final`` = the official final score / 100 (harmonic mean of the
    split percentages rounded to 2 decimals, rounded again).
    """
    scored, per_type = [], {}
    for rec in records:
        if rec.get("split") is None:
            raise ValueError(f"record without a split: {rec!r}")
        bucket = infoseek_type_bucket(rec["question_type"])
        qtype = rec["question_type"] if bucket != "string" else "string"
        score = infoseek_score(rec["prediction"], qtype, rec.get("answers", ()), rec.get("answer_range"))
        scored.append((infoseek_split(rec["split"]), bucket, score))
        per_type.setdefault(str(rec["question_type"]).lower(), []).append(score)
    out: dict[str, float] = {}
    for split in INFOSEEK_SPLITS:
        mine = [s for sp, _, s in scored if sp == split]
        out[split] = sum(mine) / len(mine) if mine else 0.0
        for bucket in INFOSEEK_TYPE_KEYS:
            typed = [s for sp, b, s in scored if sp == split and b == bucket]
            out[f"{split}_{bucket}"] = sum(typed) / len(typed) if typed else 0.0
    out.update({f"type_{t}": sum(v) / len(v) for t, v in per_type.items()})
    out["final"] = _official_dict(scored)["final_score"] / 100
    return out
