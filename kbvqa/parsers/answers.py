"""Answer parsers: RCTS App. C.2 ("The answer is X. BECAUSE: ...", letters and free answers) and
ReAG supplement B (the ``<think>...</think><answer>...</answer>`` template, its format check R_fmt
and the answer-extraction chain). Every function returns a defined result on ANY string.

Leaves out: scoring the answers (``kbvqa.metrics``), rewards (``kbvqa.reag.rewards``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

from kbvqa.parsers.common import extract_boxed, strip_special_tokens

_THINK_ANSWER_TAG = re.compile(r"</?(?:think|answer)>")


# --- RCTS ----------------------------------------------------------------------------------------
class RCTSAnswer(NamedTuple):
    letter: str | None   # the option letter, or None when no valid "answer is X" was found
    reason: str          # text after "BECAUSE:" ("" when absent)


_ANSWER_IS_LETTER = re.compile(
    r"answer\s+is\s*:?\s*(?:\*\*|\$|\\?/*boxed\{|\\text\{|[(\[])*\s*([A-Z])(?![A-Za-z0-9])",
    re.IGNORECASE)
_BECAUSE = re.compile(r"\bBEC(?:AUSE|ASUE)\b\s*:?", re.IGNORECASE)   # "BECASUE" typo seen in RCTS code


def _reason_after(text: str, start: int) -> str:
    m = _BECAUSE.search(text, start) or _BECAUSE.search(text)
    return text[m.end():].strip() if m else ""


def parse_rcts_answer(text: str, letters: str | list[str] | None = None) -> RCTSAnswer:
    """The first "The answer is X" (X a capital letter standing alone, possibly wrapped in
    brackets, bold or ``\\boxed{}``) and the reason after the BECAUSE that follows it.

    With ``letters`` (e.g. "ABCD") a letter outside them gives ``letter=None``.
    """
    text = strip_special_tokens(text)
    m = next((m for m in _ANSWER_IS_LETTER.finditer(text) if m.group(1).isupper()), None)
    if m is None:
        return RCTSAnswer(None, _reason_after(text, 0))
    letter = m.group(1)
    if letters is not None and letter not in letters:
        letter = None
    return RCTSAnswer(letter, _reason_after(text, m.end()))


_ANSWER_IS_FREE = re.compile(r"answer\s+is\s*:?\s*(.+)", re.IGNORECASE)


def parse_rcts_free_answer(text: str) -> tuple[str | None, str]:
    """MathV form: (answer, reason). The answer is taken from the text before BECAUSE (as the RCTS
    MathV scorer cuts it): the last closed ``\\boxed{}``, else what follows the last "answer is" up
    to the end of that line / sentence; ``None`` when neither is there."""
    text = strip_special_tokens(text)
    cut = _BECAUSE.search(text)
    head = text[:cut.start()] if cut else text
    reason = text[cut.end():].strip() if cut else ""
    boxed = extract_boxed(head)
    if boxed is not None:
        return boxed.strip("$ ") or None, reason
    matches = list(_ANSWER_IS_FREE.finditer(head))
    if not matches:
        return None, reason
    answer = re.split(r"\.\s|\n", matches[-1].group(1))[0].strip().rstrip(".").strip("*$ ")
    return answer or None, reason


# --- ReAG ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ThinkAnswer:
    """ReAG output parsed (supplement B)."""

    answer: str       # extracted prediction, special tokens and tags removed, stripped
    think: str        # the reasoning trace ("" when there is none)
    source: str       # which rule fired: "answer_tags" | "after_answer" | "after_think" | "whole"
    format_ok: bool   # exactly <think>...</think><answer>...</answer>, nothing else around


_ANSWER_PAIR = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)
_THINK_PAIR = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_TEMPLATE = re.compile(r"\s*<think>(.*?)</think>\s*<answer>(.*?)</answer>\s*", re.DOTALL)


def check_think_answer_format(text: str) -> bool:
    """R_fmt of ReAG (Eq. 9): the whole output (special tokens aside) is one ``<think>`` block
    followed by one ``<answer>`` block, with no other tag inside either."""
    m = _TEMPLATE.fullmatch(strip_special_tokens(text))
    return bool(m) and not any(_THINK_ANSWER_TAG.search(g) for g in m.groups())


def parse_think_answer(text: str) -> ThinkAnswer:
    """Apply ReAG's answer-extraction chain to a completion."""
    text = strip_special_tokens(text)
    if m := _ANSWER_PAIR.search(text):
        raw, source = m.group(1), "answer_tags"
    elif "<answer>" in text:
        raw, source = text.split("<answer>", 1)[1], "after_answer"
    elif "</think>" in text:
        raw, source = text.split("</think>", 1)[1], "after_think"
    else:
        raw, source = text, "whole"
    if t := _THINK_PAIR.search(text):
        think = t.group(1)
    elif "</think>" in text:
        think = text.split("</think>", 1)[0]
    else:
        think = text.split("<think>", 1)[1].split("<answer>", 1)[0] if "<think>" in text else ""
    answer = _THINK_ANSWER_TAG.sub(" ", raw).strip()     # a space, so no words get glued
    think = _THINK_ANSWER_TAG.sub(" ", think).strip()
    return ThinkAnswer(answer, think, source, check_think_answer_format(text))
