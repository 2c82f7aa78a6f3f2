"""Multiple-choice and short-answer scoring for MMMU and ScienceQA, as their official tools do it.

- ``mmmu_parse_choice``   mirrors MMMU ``eval/eval_utils.py::parse_multi_choice_response``
                          (MMMU-Benchmark/MMMU). Candidates are looked for in three passes:
                          "(A)" with brackets; else " A " standing alone; else -- only when the
                          response has more than 5 words -- the option *text*. When several
                          options are found, the one whose last occurrence is latest wins. With
                          nothing found the official code guesses with ``random.choice`` after a
                          module-level ``random.seed(42)``; here that happens only when an ``rng``
                          is passed, otherwise the result is ``None`` (wrong).
- ``mmmu_parse_batch`` / ``mmmu_accuracy`` reproduce the official *batch* exactly: one
                          ``random.Random(42)`` (``mmmu_official_rng``) shared by every guess, in
                          order. The book reports MMMU accuracy this way; the per-item parser's
                          ``None`` default is only for showing which answers are unreadable.
- ``mmmu_parse_open``     mirrors ``parse_open_response``: key sub-responses after "is", "so",
                          "therefore", "answer", ..., plus every number in them, lower-cased, numbers
                          as floats rounded to 2 decimals.
- ``mmmu_eval_choice`` / ``mmmu_eval_open`` mirror ``eval_multi_choice`` / ``eval_open``.
- ``scienceqa_parse_choice`` mirrors the RCTS release's ScienceQA scorer
                          (yannqi/RCTS-RAG ``module/evaluate/ScienceQA_evaluate_acc.py``): drop
                          ``#$%^&*()[].,;:{}``, take the first "The answer is <capital>"; no
                          guess when it fails (the question counts as wrong).

What this file leaves out: MATH-Vision (``mathvision.py``, whose entry points are re-exported here)
and the RCTS reason parser (``kbvqa.parsers.parse_rcts_answer``).
"""
from __future__ import annotations

import random
import re
from collections.abc import Mapping, Sequence

from kbvqa.metrics.mathvision import (  # noqa: F401
    mathvision_correct,
    mathvision_extract_answer,
    mathvision_is_equal,
)

_EDGE_PUNCTUATION = (",", ".", "!", "?", ";", ":", "'")
_KEY_INDICATORS = ("could be ", "so ", "is ", "thus ", "therefore ", "final ", "answer ", "result ")
_TRIVIAL = (":", ",", ".", "!", "?", ";", "'")


MMMU_SEED = 42   # eval_utils.py: ``random.seed(42)`` at import


def mmmu_official_rng(seed: int = MMMU_SEED) -> random.Random:
    """A generator in the state of the official module right after import; share ONE across a
    batch, in order, to reproduce the official guesses (a fresh one per item reproduces only the
    first guess)."""
    return random.Random(seed)


def mmmu_parse_choice(response: str, all_choices: Sequence[str], index2ans: Mapping[str, str],
                      rng: random.Random | None = None) -> str | None:
    """The option letter a free-form response picks (MMMU rules); when none is found, ``None``
    (default) or, with ``rng``, ``rng.choice(all_choices)`` as the official fallback."""
    text = str(response)
    for ch in _EDGE_PUNCTUATION:
        text = text.strip(ch)
    text = f" {text} "  # so that " A " also matches at the edges
    by_content = False
    candidates = [c for c in all_choices if f"({c})" in text]
    in_brackets = bool(candidates)
    if not candidates:
        candidates = [c for c in all_choices if f" {c} " in text]
    if not candidates and len(text.split()) > 5:
        lowered = text.lower()
        candidates = [c for c in index2ans if str(index2ans[c]).lower() in lowered]
        by_content = bool(candidates)
    if not candidates:
        return rng.choice(list(all_choices)) if (rng is not None and all_choices) else None
    if len(candidates) == 1:
        return candidates[0]
    if by_content:
        lowered = text.lower()
        positions = [lowered.rfind(str(index2ans[c]).lower()) for c in candidates]
    elif in_brackets:
        positions = [text.rfind(f"({c})") for c in candidates]
    else:
        positions = [text.rfind(f" {c} ") for c in candidates]
    return candidates[positions.index(max(positions))]  # first of ties, as np.argmax


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
        return True
    except ValueError:
        return False


def mmmu_normalize_str(text: str) -> list:
    """``normalize_str``: a number -> [float rounded to 2 decimals]; a one-character string ->
    [" x", "x "] (to avoid trivial substring hits); otherwise [lower-cased string]."""
    text = text.strip()
    if _is_number(text):
        return [round(float(text.replace(",", "")), 2)]
    text = text.lower()
    return [" " + text, text + " "] if len(text) == 1 else [text]


_NUM_WITH_COMMAS = re.compile(r"-?\b\d{1,3}(?:,\d{3})+\b")
_NUM_SCIENTIFIC = re.compile(r"-?\d+(?:\.\d+)?[eE][+-]?\d+")
_NUM_SIMPLE = re.compile(r"-?(?:\d+\.\d+|\.\d+|\d+\b)(?![eE][+-]?\d+)(?![,\d])")


def mmmu_extract_numbers(text: str) -> list[str]:
    """``extract_numbers``: numbers with thousands commas, then scientific, then simple ones."""
    return (_NUM_WITH_COMMAS.findall(text) + _NUM_SCIENTIFIC.findall(text)
            + _NUM_SIMPLE.findall(text))


def _key_subresponses(response: str) -> list[str]:
    text = response.strip().strip(".").lower()
    # The official split looks for ". " before a capital *after* lower-casing, so it effectively
    # splits on newlines only; kept as is.
    parts = re.split(r"\.\s(?=[A-Z])|\n", text)
    keys = []
    indicators = list(_KEY_INDICATORS)
    for i, part in enumerate(parts):
        if i == len(parts) - 1:
            indicators.append("=")
        shortest = None
        for ind in indicators:
            if ind in part:
                tail = part.split(ind)[-1].strip()
                if not shortest or len(tail) < len(shortest):   # "" counts as unset, as officially
                    shortest = tail
        if shortest and shortest.strip() not in _TRIVIAL:
            keys.append(shortest)
    return keys or [text]


def mmmu_parse_open(response: str) -> list:
    """``parse_open_response``: candidate answers (strings and floats) found in a response."""
    keys = _key_subresponses(str(response))
    raw = list(keys)
    for key in keys:
        raw.extend(mmmu_extract_numbers(key))
    preds: list = []
    for item in raw:
        for norm in mmmu_normalize_str(item):
            if norm not in preds:
                preds.append(norm)
    return preds


def mmmu_eval_choice(gold: str | Sequence[str], pred: str | None) -> bool:
    """``eval_multi_choice``: exact letter match (a list of gold letters means any of them)."""
    golds = [gold] if isinstance(gold, str) else list(gold)
    return pred is not None and pred in golds


def mmmu_eval_open(gold: str | Sequence[str], preds: Sequence) -> bool:
    """``eval_open``: a string prediction is right when a normalised gold string is a substring of
    it; a float prediction when it equals a normalised gold number."""
    golds = [gold] if isinstance(gold, str) else list(gold)
    norm_golds = [n for g in golds for n in mmmu_normalize_str(str(g))]
    for pred in preds:
        if isinstance(pred, str):
            if any(isinstance(g, str) and g in pred for g in norm_golds):
                return True
        elif pred in norm_golds:
            return True
    return False


def mmmu_parse_batch(samples: Sequence[Mapping], seed: int | None = MMMU_SEED) -> list:
    """The official ``parsed_pred`` of each MMMU output record (``response``, ``question_type``,
    ``all_choices``, ``index2ans``), in order: a letter for multiple choice, a list for open
    questions. ``seed`` (official: 42) drives one generator shared by all guesses; ``None`` gives
    ``None`` for unreadable multiple-choice responses."""
    rng = mmmu_official_rng(seed) if seed is not None else None
    return [mmmu_parse_choice(s["response"], s["all_choices"], s["index2ans"], rng)
            if s.get("question_type", "multiple-choice") == "multiple-choice" else mmmu_parse_open(s["response"])
            for s in samples]


def mmmu_accuracy(samples: Sequence[Mapping], seed: int | None = MMMU_SEED) -> float:
    """Accuracy over MMMU output records (``mmmu_parse_batch`` plus ``answer``), as
    ``main_parse_and_eval.py`` computes it with the default ``seed=42``; ``seed=None`` counts
    unreadable multiple-choice responses as wrong instead of guessing."""
    if not samples:
        raise ValueError("no samples to score")
    preds = mmmu_parse_batch(samples, seed)
    correct = sum(mmmu_eval_choice(s["answer"], p) if s.get("question_type", "multiple-choice") == "multiple-choice"
                  else mmmu_eval_open(s["answer"], p) for s, p in zip(samples, preds))
    return correct / len(samples)


_SCIENCEQA_DROP = str.maketrans("", "", "#$%^&*()[].,;:{}")
_SCIENCEQA_ANSWER = re.compile(r"The answer is ([A-Z])")


def scienceqa_parse_choice(response: str, letters: Sequence[str] | None = None) -> str | None:
    """The first "The answer is X" letter after removing ``#$%^&*()[].,;:{}`` (RCTS scorer).

    Like the official regex there is no word boundary after X: "The answer is Apple" gives "A".
    With ``letters`` given, a letter outside them is ``None`` (the official scorer maps it to -1).
    """
    match = _SCIENCEQA_ANSWER.search(str(response).translate(_SCIENCEQA_DROP).strip())
    if match is None:
        return None
    letter = match.group(1)
    return letter if letters is None or letter in letters else None


def choice_accuracy(predictions: Sequence[str | None], golds: Sequence[str]) -> float:
    """Plain accuracy of predicted letters (``None`` counts as wrong)."""
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions for {len(golds)} gold answers")
    if not golds:
        raise ValueError("no questions to score")
    return sum(p is not None and p == g for p, g in zip(predictions, golds)) / len(golds)
