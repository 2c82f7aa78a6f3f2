"""What every parser shares: chat-template special tokens removed, the last closing tag found, and
the content of the last closed ``\\boxed{...}`` (nested braces included).

Leaves out: the papers' formats (``answers``, ``serts``, ``molt``).
"""
from __future__ import annotations

import re

_SPECIAL_TOKEN = re.compile(r"<\|[^<>|\n]{0,40}\|>")      # chat-template tokens: <|im_end|>, ...


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
