"""Is an extracted answer right? The rule-based judge of ReAG's supplement B, shared by every scorer.

Compared by question type tau after E-VQA/InfoSeek normalisation (``evqa_normalize``):

    numerical : Psi_num(o, o*)                      multi : IoU(items(o), items(o*)) >= 0.5
    otherwise : o == o*   (exact match: E-VQA single answers, InfoSeek entity and time)

    Psi_num   : abs(o - o*) <= 0.1         if o and o* are scalars
                o in o*                 if o is a scalar and o* an interval
                IoU(o, o*) >= 0.5       if both are intervals

Several ground truths (the list of answers, and '|' alternatives inside one) -> the maximum.
Numbers are read as InfoSeek reads them (first two numbers form a range, ``parse_numeric_prediction``).
``query_gold(query)`` gives a ``Query``'s alternatives in the form ``answer_correct`` takes. ReAG's
reward (Eq. 9) wraps this judge (``kbvqa.reag.rewards``); the model cards and the pipeline use it directly.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from kbvqa.data.schema import Query
from kbvqa.metrics.evqa import split_candidate_items
from kbvqa.metrics.infoseek import parse_numeric_prediction, range_iou
from kbvqa.metrics.normalize import evqa_normalize


@dataclass(frozen=True)
class ReAGRewardConfig:
    """Weights and thresholds of ReAG's reward (defaults: the paper's)."""

    gamma: float = 1.0              # weight of the task-accuracy reward (Eq. 9)
    delta: float = 0.2              # weight of the format reward (Eq. 9)
    scalar_tolerance: float = 0.1   # Psi_num: |o - o*| <= tolerance for two scalars
    iou_threshold: float = 0.5      # multi-answer item IoU and numeric interval IoU

    def __post_init__(self):
        if self.gamma < 0 or self.delta < 0:
            raise ValueError(f"gamma and delta must be >= 0, got {self.gamma}, {self.delta}")
        if self.scalar_tolerance < 0:
            raise ValueError(f"scalar_tolerance must be >= 0, got {self.scalar_tolerance}")
        if not 0 < self.iou_threshold <= 1:
            raise ValueError(f"iou_threshold must be in (0, 1], got {self.iou_threshold}")


DEFAULT_CONFIG = ReAGRewardConfig()


_HAS_DIGIT = re.compile(r"\d")


def gold_alternatives(answers: str | Sequence[str]) -> list[str]:
    """All ground-truth alternatives: the answers, each split on '|', blanks dropped."""
    answers = [answers] if isinstance(answers, str) else list(answers)
    return [alt.strip() for a in answers for alt in str(a).split("|") if alt.strip()]


def psi_num(prediction: str, gold: float | tuple[float, float],
            config: ReAGRewardConfig = DEFAULT_CONFIG) -> bool:
    """Psi_num of ReAG supplement B for a predicted answer string and a scalar/interval gold."""
    if not _HAS_DIGIT.search(str(prediction)):
        return False
    pred = parse_numeric_prediction(prediction)
    if isinstance(gold, (int, float)):
        if isinstance(pred, float):
            return abs(pred - gold) <= config.scalar_tolerance
        return pred[0] == pred[1] == gold
    lo, hi = sorted((float(gold[0]), float(gold[1])))
    if isinstance(pred, float):
        return lo <= pred <= hi
    return range_iou(pred, (lo, hi)) >= config.iou_threshold - 1e-12


def multi_answer_match(prediction: str, gold: str,
                       config: ReAGRewardConfig = DEFAULT_CONFIG) -> bool:
    """IoU of the predicted and gold item sets >= threshold (gold items split on '&&', predicted
    items on ',', ' and ', ' & '; all normalised)."""
    gold_items = {g for g in (evqa_normalize(x) for x in gold.split("&&")) if g}
    pred_items = set(split_candidate_items(prediction))
    if not gold_items:
        return False
    return len(gold_items & pred_items) / len(gold_items | pred_items) >= config.iou_threshold


def _numeric_golds(alternatives: list[str], answer_range) -> list:
    if answer_range is not None:
        return [tuple(float(x) for x in answer_range)]
    golds = []
    for alt in alternatives:
        if _HAS_DIGIT.search(alt):
            value = parse_numeric_prediction(alt)
            golds.append(value if isinstance(value, float) else tuple(value))
    return golds


def answer_correct(prediction: str, answers: str | Sequence[str], answer_type: str = "string",
                   answer_range: Sequence[float] | None = None,
                   config: ReAGRewardConfig = DEFAULT_CONFIG) -> bool:
    """Is an *extracted* prediction right (max over the ground-truth alternatives)?

    Raises ``ValueError`` when there is no usable ground truth (no answers, or no number for a
    numerical question).
    """
    alternatives = gold_alternatives(answers)
    if answer_type == "numerical":
        golds = _numeric_golds(alternatives, answer_range)
        if not golds:
            raise ValueError("a numerical question needs answer_range or a numeric answer")
        return any(psi_num(prediction, g, config) for g in golds)
    if not alternatives:
        raise ValueError("at least one non-empty ground-truth answer is needed")
    if answer_type == "multi":
        return any(multi_answer_match(prediction, g, config) for g in alternatives)
    pred = evqa_normalize(str(prediction))
    return any(pred == evqa_normalize(g) for g in alternatives)


def query_gold(query: Query) -> list[str]:
    """The ground-truth alternatives of a ``Query`` in the form the scorers take.

    For ``multi`` questions the schema keeps the items of ONE answer set in ``answers`` (all of
    them are expected) and every alternative set in ``meta["answer_sets"]`` when there are several
    (E-VQA's ``a&&b|c&&d``); each set becomes one ``'&&'``-joined alternative, so that "France"
    alone does not match the set {France, Italy, Spain}. Other types: ``answers`` as they are.
    """
    if query.answer_type != "multi":
        return list(query.answers)
    sets = query.meta.get("answer_sets") or [query.answers]
    return ["&&".join(str(x) for x in items) for items in sets if items]
