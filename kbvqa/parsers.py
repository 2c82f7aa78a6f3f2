"""Parsers of model output for the four papers. Every function returns a defined result on ANY
string -- truncated, reordered, empty, or full of stray tags -- and never raises.

- ``parse_rcts_answer``     RCTS App. C.2 "The answer is X. BECAUSE: ..." -> (letter | None, reason)
- ``parse_rcts_free_answer`` RCTS MathV "The answer is \\boxed{...}. BECAUSE: ..." -> (answer, reason)
- ``extract_boxed``         content of the last *closed* ``\\boxed{...}``, nested braces included
- ``parse_think_answer``    ReAG supplement B: the answer-extraction chain (``<answer>...</answer>``,
                            else text after the first ``<answer>``, else text after ``</think>``,
                            else everything; special tokens removed) and the format check of the
                            ``<think>...</think><answer>...</answer>`` template (R_fmt, Eq. 9)
- ``parse_score``           SeRTS Tab. 1 evaluator: ``<score>n</score>`` -> n in [0, 5] | None
- ``parse_query``           SeRTS Tab. 2 proposer: ``<query>...</query>``, with fall-backs for the
                            malformed outputs of SeRTS Tab. 7 (unclosed tag, bare quotes, leaked
                            "Query Here" placeholder or "Corresponding Feedback" text)
- ``parse_tournament``      MOLT Tab. 14: ``<round><compare>a vs b</compare><think>..</think>
                            <winner>w</winner></round>`` ... ``<evidence>id</evidence>``
- ``parse_candidate_number`` MOLT Tab. 13 / Tab. 17: "output only the number" -> int | None

What this file leaves out: scoring (``kbvqa.metrics``) and rewards (``kbvqa.reag.rewards``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import NamedTuple

_SPECIAL_TOKEN = re.compile(r"<\|[^<>|\n]{0,40}\|>")      # chat-template tokens: <|im_end|>, ...
_THINK_ANSWER_TAG = re.compile(r"</?(?:think|answer)>")


def strip_special_tokens(text: str) -> str:
    """Remove chat-template special tokens such as ``<|im_end|>`` and ``<|endoftext|>``."""
    return _SPECIAL_TOKEN.sub("", str(text))


def _last_tag_end(text: str, tag: str, start: int = 0) -> int:
    """End index of the last case-insensitive ``tag`` at or after ``start``, -1 if none (not via
    ``text.lower()``: lower-casing can change the length, e.g. of "İ")."""
    ends = [start + m.end() for m in re.finditer(re.escape(tag), text[start:], re.IGNORECASE)]
    return ends[-1] if ends else -1


# --- \boxed{...} ---------------------------------------------------------------------------------
_BOXED_OPEN = re.compile(r"(?:boxed|fbox)\s*\{")


def extract_boxed(text: str) -> str | None:
    """Content of the last closed ``\\boxed{...}`` (or ``\\fbox{...}``; the RCTS prompt's "//boxed"
    works too), with nested braces; ``None`` when there is none. Linear time."""
    text = str(text)
    closing: dict[int, int] = {}
    stack: list[int] = []
    for i, ch in enumerate(text):
        if ch == "{":
            stack.append(i)
        elif ch == "}" and stack:
            closing[stack.pop()] = i
    for m in reversed(list(_BOXED_OPEN.finditer(text))):
        brace = m.end() - 1
        if brace in closing:
            return text[brace + 1:closing[brace]].strip()
    return None


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


# --- SeRTS ---------------------------------------------------------------------------------------
_SCORE_PAIR = re.compile(r"<score>(.*?)</score>", re.DOTALL | re.IGNORECASE)
_SCORE_VALUE = re.compile(r"\s*\**\s*([+-]?\d{1,6})(?:\.0+)?\s*(?:/\s*5)?\s*\**\s*")


def parse_score(text: str, low: int = 0, high: int = 5) -> int | None:
    """The integer in the last ``<score>...</score>`` if it lies in [low, high], else ``None``.

    SeRTS Tab. 1 asks for "a score between 0 and 5" on an additive rubric, so 0 is valid by
    default (pass ``low=1`` for a 1-5 scale). Accepted contents: "3", " 3 ", "3.0", "**3**",
    "3/5". A trailing unclosed ``<score> 4`` (generation cut after the number) counts too.
    """
    text = str(text)
    pairs = list(_SCORE_PAIR.finditer(text))
    opening = _last_tag_end(text, "<score>", pairs[-1].end() if pairs else 0)
    if opening != -1:
        content = text[opening:]
    elif pairs:
        content = pairs[-1].group(1)
    else:
        return None
    m = _SCORE_VALUE.fullmatch(content)
    if m is None:
        return None
    value = int(m.group(1))
    return value if low <= value <= high else None


class QueryProposal(NamedTuple):
    query: str | None    # the proposed search query, None when nothing usable was found
    well_formed: bool    # True only for a proper <query>...</query> pair (SeRTS Tab. 7 "success")


_QUERY_PAIR = re.compile(r"<query>(.*?)</query>", re.DOTALL | re.IGNORECASE)
_QUOTED = re.compile(r"[\"\u201c]([^\"\u201c\u201d]{2,})[\"\u201d]")
_LEAKS = re.compile(r"Corresponding Feedback|</|<retrieved_info>|\n\s*\n", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"\bQuery Here\b", re.IGNORECASE)


def _clean_query(raw: str) -> str | None:
    raw = _LEAKS.split(raw, maxsplit=1)[0]
    raw = _PLACEHOLDER.sub(" ", raw).replace("<query>", " ").replace("<QUERY>", " ")
    raw = " ".join(raw.split()).strip(" \"'\u201c\u201d>`*")
    return raw or None


def parse_query(text: str) -> QueryProposal:
    """The query of a SeRTS proposal: the last ``<query>...</query>``; else the text after an
    unclosed ``<query>``; else the last double-quoted string. Only the first case is
    ``well_formed``; the fall-backs implement the "manual templates" SeRTS mentions."""
    text = strip_special_tokens(text)
    for m in reversed(list(_QUERY_PAIR.finditer(text))):
        if query := _clean_query(m.group(1)):
            return QueryProposal(query, _PLACEHOLDER.search(m.group(1)) is None)
    opening = _last_tag_end(text, "<query>")
    if opening != -1 and (query := _clean_query(text[opening:])):
        return QueryProposal(query, False)
    for m in reversed(list(_QUOTED.finditer(text))):
        if query := _clean_query(m.group(1)):
            return QueryProposal(query, False)
    return QueryProposal(None, False)


# --- MOLT ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TournamentRound:
    """One ``<round>`` of a MOLT ladder transcript (Tab. 14); missing parts are ``None``/""."""

    pair: tuple[str, str] | None   # the two ids in <compare>a vs b</compare>
    think: str
    winner: str | None
    closed: bool                   # the block ended with </round>

    @property
    def winner_in_pair(self) -> bool:
        return self.pair is not None and self.winner in self.pair


@dataclass(frozen=True)
class TournamentTranscript:
    rounds: tuple[TournamentRound, ...]
    evidence: str | None            # id in the final <evidence> tag
    format_valid: bool              # R_fmt (MOLT Eq. 9): tags present, in order, nothing else
    problems: tuple[str, ...]       # human-readable reasons when format_valid is False

    @property
    def chain_consistent(self) -> list[bool]:
        """Per round t: did the winner of round t-1 take part in round t (MOLT's logical
        consistency check behind the process reward, Eq. 10)? Round 1 is always True."""
        out, previous = [], None
        for r in self.rounds:
            out.append(previous is None or (r.pair is not None and previous in r.pair))
            previous = r.winner
        return out


_MOLT_TAG = re.compile(r"<(/?)(round|compare|think|winner|evidence)>", re.IGNORECASE)
_ROUND_SEQUENCE = ["round", "compare", "/compare", "think", "/think", "winner", "/winner", "/round"]
_VS = re.compile(r"\s+vs\.?\s+|\s*\bvs\.?\s*(?=\S)", re.IGNORECASE)
_ID_PREFIX = re.compile(r"^(?:candidate|id|doc(?:ument)?|#)\s*[:#]?\s*", re.IGNORECASE)


def _molt_id(raw: str | None) -> str | None:
    if raw is None:
        return None
    text = " ".join(raw.split()).strip("[](){}\"'`*. ")
    text = _ID_PREFIX.sub("", text).strip("[](){}\"'`*. ")
    return text or None


def _first(tag: str, block: str) -> str | None:
    m = re.search(f"<{tag}>(.*?)(?:</{tag}>|$)", block, re.DOTALL | re.IGNORECASE)
    return m.group(1) if m else None


def _parse_round(block: str, closed: bool) -> TournamentRound:
    compare = _first("compare", block)
    pair = None
    if compare is not None:
        parts = _VS.split(compare.split("<", 1)[0], maxsplit=1)
        if len(parts) == 2 and _molt_id(parts[0]) and _molt_id(parts[1]):
            pair = (_molt_id(parts[0]), _molt_id(parts[1]))
    think = (_first("think", block) or "").split("</think>")[0].strip()
    winner = _first("winner", block)
    return TournamentRound(pair, think, _molt_id(winner.split("<", 1)[0]) if winner else None,
                           closed)


def _format_problems(text: str, rounds: tuple[TournamentRound, ...]) -> list[str]:
    problems = []
    tags = [("/" if m.group(1) else "") + m.group(2).lower() for m in _MOLT_TAG.finditer(text)]
    k = (len(tags) - 2) // len(_ROUND_SEQUENCE)
    expected = _ROUND_SEQUENCE * k + ["evidence", "/evidence"]
    if k < 1 or tags != expected:
        problems.append("tags are missing, extra or out of order")
    outside = _MOLT_TAG.sub(" ", re.sub(r"<(think|compare|winner|evidence)>.*?</\1>", " ", text,
                                        flags=re.DOTALL | re.IGNORECASE))
    if outside.strip():
        problems.append("text outside the XML blocks")
    if any(r.pair is None for r in rounds):
        problems.append("a <compare> is not of the form 'a vs b'")
    if any(r.winner is None for r in rounds):
        problems.append("a <winner> is missing or empty")
    return problems


def parse_tournament(text: str) -> TournamentTranscript:
    """Rounds, final evidence id and format validity of a MOLT student output.

    Rounds are the ``<round>`` blocks in order (an unclosed block ends at the next ``<round>``, at
    ``<evidence>`` or at the end); without any ``<round>`` tag, each ``<compare>`` starts a round.
    Ids are stripped of brackets and a "Candidate"/"ID" prefix ("[3]" -> "3"). The evidence is the
    last ``<evidence>`` (an unclosed one is read to the end of its line). Semantic checks (ids
    among the candidates, winners carried over) are left to the caller; see ``chain_consistent``.
    """
    text = strip_special_tokens(text)
    evidence_end = _last_tag_end(text, "<evidence>")
    body = text if evidence_end == -1 else text[:evidence_end - len("<evidence>")]
    starter = "<round>" if re.search("<round>", body, re.IGNORECASE) else "<compare>"
    pieces = re.split(f"(?={starter})", body, flags=re.IGNORECASE)
    rounds = tuple(_parse_round(re.split("</round>", p, flags=re.IGNORECASE)[0],
                                re.search("</round>", p, re.IGNORECASE) is not None)
                   for p in pieces if re.match(starter, p, re.IGNORECASE))
    evidence = None
    if evidence_end != -1:
        tail = re.split(r"</evidence>|\n", text[evidence_end:], maxsplit=1, flags=re.IGNORECASE)[0]
        evidence = _molt_id(tail.split("<")[0])
    problems = _format_problems(text, rounds)
    if evidence is None:
        problems.append("no final <evidence> id")
    problems += ["an unclosed <round>"] * any(not r.closed for r in rounds)
    return TournamentTranscript(rounds, evidence, not problems, tuple(dict.fromkeys(problems)))


_INTEGER = re.compile(r"(?<![\d.])[+-]?\d{1,9}(?![\d.]\d)")


def parse_candidate_number(text: str, low: int = 1, high: int | None = 5) -> int | None:
    """The first integer in the output if it lies in [low, high] (``high=None``: no upper bound);
    MOLT Tab. 17 (one-shot 5-way choice, 1-5) and Tab. 13 (section id, ``low=0, high=None``)."""
    m = _INTEGER.search(strip_special_tokens(text))
    if m is None:
        return None
    value = int(m.group(0))
    return value if value >= low and (high is None or value <= high) else None


# One <winner> reading for every caller: the first id (model cards) or every listed id (the pipeline,
# which also accepts "candidate 3"); and the first [x1, y1, x2, y2] box (MOLT Table 11, ReAG grounding).
_WINNER = re.compile(r"<winner>\s*\[?\s*(\d+)", re.IGNORECASE)
_WINNER_IDS = re.compile(r"<winner>\s*\[?\s*(?:candidate\s*)?([0-9]+)", re.IGNORECASE)
_NUM = r"\s*(-?\d+(?:\.\d+)?)\s*"
_BOX = re.compile(r"\[" + ",".join([_NUM] * 4) + r"\]")


def parse_winner(text: str) -> str | None:
    """The id in the first ``<winner>`` tag, or ``None``."""
    m = _WINNER.search(text or "")
    return m.group(1) if m else None


def winner_ids(text: str) -> list[str]:
    """Every id named in a ``<winner>`` tag, in order (``candidate 3`` reads as ``3``)."""
    return _WINNER_IDS.findall(text or "")


def parse_box(text: str) -> list[float] | None:
    """The first ``[x1, y1, x2, y2]`` in ``text`` (corners sorted), or ``None``."""
    m = _BOX.search(text or "")
    if m is None:
        return None
    x1, y1, x2, y2 = (float(v) for v in m.groups())
    return [min(x1, x2), min(y1, y2), max(x1, x2), max(y1, y2)]
