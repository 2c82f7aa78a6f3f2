"""SeRTS parsers: the evaluator's ``<score>n</score>`` (Tab. 1) and the proposer's ``<query>...</query>``
(Tab. 2) with fall-backs for the malformed outputs of Tab. 7. Never raise.

Leaves out: the search that calls them (``kbvqa.serts``).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from kbvqa.parsers.common import _last_tag_end, strip_special_tokens

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
