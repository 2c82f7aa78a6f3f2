"""MOLT parsers: the one-pass ladder transcript of Tab. 14 (rounds of compare / think / winner, then
the evidence), "output only the number" (Tab. 13 / 17), pairwise ``<winner>`` ids and grounding boxes.
Never raise.

Leaves out: the ladder schedule and rewards (``kbvqa.molt``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kbvqa.parsers.common import _last_tag_end, strip_special_tokens


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
