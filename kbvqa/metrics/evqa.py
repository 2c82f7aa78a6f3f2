"""Encyclopedic-VQA scoring as its official evaluation code computes it.

Mirrors google-research ``encyclopedic_vqa/evaluation_utils.py`` (``evaluate_example``,
``encyclopedic_vqa_evaluation_function``, ``exact_match_scoring_function``). A candidate is scored
against *every* reference alternative and the best score counts. Against one reference: exact
match after ``evqa_normalize``; for ``multi_answer`` questions the reference is split on '&&', the
candidate on ',' (after ' and ' / ' & ' -> ','), both normalised, and set IoU >= 0.5 is right;
failing that, BEM (BERT answer equivalence, >= 0.5), here a pluggable ``bem(question, reference,
candidate) -> probability`` that the cpu profile leaves out (``None``: exact match only). For
multi-answer questions BEM sees '&&' replaced by ','.

Errors, as officially (``ValueError``): an empty reference list; an empty reference, or one that is
empty after normalisation (e.g. "the") -- *any* alternative, also one after a match, since the
official loop scores them all; a question type outside ``templated``, ``automatic``,
``multi_answer``, ``2_hop``. Conveniences, off by default: ``type_aliases=True`` also takes "list",
"multianswer", "multi" (-> multi_answer) and the book's answer types "string", "time",
"numerical", "choice" (-> single answer); a reference given as one string is split on '|' (E-VQA's
CSV format; the official function takes a list).

What this file leaves out: the normalisation (``normalize.py``) and the BEM model itself.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from kbvqa.metrics.normalize import evqa_normalize

EVQA_QUESTION_TYPES = ("templated", "automatic", "multi_answer", "2_hop")
MULTI_ANSWER_ALIASES = ("multianswer", "list", "multi")        # -> "multi_answer" with type_aliases
SINGLE_ANSWER_ALIASES = ("string", "time", "numerical", "choice")  # -> "automatic" with type_aliases
MULTI_ANSWER_TYPES = ("multi_answer", *MULTI_ANSWER_ALIASES)
IOU_THRESHOLD = 0.5
BEM_THRESHOLD = 0.5

BEMScorer = Callable[[str, str, str], float]   # (question, reference, candidate) -> P(equivalent)


def split_references(answer: str | Sequence[str]) -> list[str]:
    """The reference alternatives: an E-VQA answer string split on '|', or a list as given."""
    if isinstance(answer, str):
        return answer.split("|")
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


def _reference_items(reference: str) -> list[str]:
    items = [r for r in (evqa_normalize(x) for x in reference.split("&&")) if r]
    if not items:
        raise ValueError(f"reference answer {reference!r} is empty after normalisation")
    return items


def single_answer_exact_match(reference: str, candidate: str) -> bool:
    """``singleanswer_exact_match``."""
    ref = evqa_normalize(reference)
    if not ref:
        raise ValueError(f"reference answer {reference!r} is empty after normalisation")
    return ref == evqa_normalize(str(candidate))


def multi_answer_exact_match(reference: str, candidate: str,
                             iou_threshold: float = IOU_THRESHOLD) -> bool:
    """``multianswer_exact_match``: reference items split on '&&', set IoU >= threshold."""
    return list_iou(_reference_items(reference), split_candidate_items(candidate)) >= iou_threshold


def evqa_question_type(question_type: str, type_aliases: bool = False) -> str:
    """The official question type, or ``ValueError`` (aliases only with ``type_aliases=True``)."""
    if question_type in EVQA_QUESTION_TYPES:
        return question_type
    if type_aliases and question_type in MULTI_ANSWER_ALIASES:
        return "multi_answer"
    if type_aliases and question_type in SINGLE_ANSWER_ALIASES:
        return "automatic"
    hint = "" if type_aliases else " (type_aliases=True also takes list/multianswer/multi and the book's types)"
    raise ValueError(f"unknown E-VQA question type {question_type!r}; valid: {EVQA_QUESTION_TYPES}{hint}")


def evqa_exact_match(reference: str, candidate: str, question_type: str = "automatic", *,
                     type_aliases: bool = False) -> bool:
    """``exact_match_scoring_function`` for one reference: multi-answer IoU for "multi_answer",
    single exact match for any other type (as officially, which does not check the type here)."""
    if type_aliases and question_type in MULTI_ANSWER_ALIASES:
        question_type = "multi_answer"
    if question_type == "multi_answer":
        return multi_answer_exact_match(reference, candidate)
    return single_answer_exact_match(reference, candidate)


def _check_reference(reference: str, multi: bool) -> None:
    """The errors the official function raises for one reference, whatever the candidate."""
    if not reference:
        raise ValueError("reference answer cannot be empty")
    if multi:
        _reference_items(reference)
    elif not evqa_normalize(reference):
        raise ValueError(f"reference answer {reference!r} is empty after normalisation")


def evqa_score(candidate: str, references: str | Sequence[str], question_type: str = "automatic",
               question: str = "", bem: BEMScorer | None = None, *, type_aliases: bool = False) -> float:
    """``evaluate_example``: max over the references of (exact match, else thresholded BEM).

    ``references`` is a list of alternatives (official) or an E-VQA answer string ('|'
    alternatives). Every alternative is checked first, so an empty or article-only alternative
    raises ``ValueError`` even after one that matches; so does an unknown question type (see the
    module docstring for ``type_aliases``). Returns 1.0 or 0.0.
    """
    refs = split_references(references)
    if not refs:
        raise ValueError("reference list cannot be empty")
    qtype = evqa_question_type(question_type, type_aliases)
    multi = qtype == "multi_answer"
    for ref in refs:
        _check_reference(ref, multi)
    best = 0.0
    for ref in refs:
        if evqa_exact_match(ref, candidate, qtype):
            return 1.0
        if bem is not None:
            bem_ref = ref.replace("&&", ",") if multi else ref
            best = max(best, float(bem(question, bem_ref, str(candidate)) >= BEM_THRESHOLD))
    return best


def mean_evqa_score(candidates: Sequence[str], references: Sequence[str | Sequence[str]],
                    question_types: Sequence[str], bem: BEMScorer | None = None, *,
                    type_aliases: bool = False) -> float:
    """Mean ``evqa_score`` over a test set (E-VQA reports this, as a percentage)."""
    if not (len(candidates) == len(references) == len(question_types)):
        raise ValueError("candidates, references and question_types must have the same length")
    if not candidates:
        raise ValueError("no questions to score")
    scores = [evqa_score(c, r, t, bem=bem, type_aliases=type_aliases)
              for c, r, t in zip(candidates, references, question_types)]
    return sum(scores) / len(scores)
