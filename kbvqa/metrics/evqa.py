"""Encyclopedic-VQA scoring, mirroring the official ``evaluation_utils.py`` (google-research,
``encyclopedic_vqa``).

One question is scored against every reference answer (the CSV ``answer`` column holds the
alternatives separated by '|'), and the best score counts. Against one reference:

1. exact match after ``evqa_normalize``; for *multi-answer* questions the reference is split on
   '&&', the candidate on ',' (after turning ' and ' and ' & ' into commas), both lists are
   normalised, empty items dropped, and the candidate is right when the set IoU is >= 0.5;
2. if that fails, BEM (a BERT answer-equivalence classifier, score >= 0.5 is right). BEM needs a
   model download, so here it is a pluggable callable ``bem(question, reference, candidate) ->
   probability``; the cpu profile passes ``None`` and the score is exact match only. For
   multi-answer questions the reference handed to BEM has '&&' replaced by ',' (as officially).

An empty reference (after normalisation) raises ``ValueError``, as in the official code; the
candidate may be any string.

What this file leaves out: the BEM model itself (TF-Hub ``google/answer_equivalence/bem``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from kbvqa.data.schema import ANSWER_TYPES
from kbvqa.metrics.normalize import evqa_normalize

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
