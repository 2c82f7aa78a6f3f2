"""Numbers in the book's prose, held to what the cells compute (issue 51).

Project rule: numbers in prose come from results or cell outputs, never typed by hand. A chapter
states each number it writes in a markdown cell in a hidden code cell (tag ``remove-cell``: executed,
not shown), placed right after the cell that computes it::

    claims({"77.0 %": 100 * r1, "97.8 %": 100 * r5})   # R@1, R@5 as the prose writes them
    claims({"42.4": PAPER_RECALL["E-VQA (Tab. 2)"]["Ours (Doc sel.)"][0]})   # quoted from a paper
    given("10 %", "0.5")   # stated by design (a hyperparameter, a rule's constant): nothing computes it

``claims`` rounds each value to as many decimals as its literal shows ("77.0" -> one, "77" -> none)
and raises an ``AssertionError`` that names the literal and the value when the two differ. A value
may be a tuple when the literal stands for several computed numbers; a literal's unit (``%``, ``×``,
``s``) and thousands commas are for the reader and are ignored. A paper's number is claimed against
the part's ``kbvqa/<part>/paper.py``. Pure Python, no myst-nb: it runs in Colab too.

``prose_numbers`` and ``declared`` are the static half (tests/test_book.py, no execution): every
number in a markdown cell that looks like a result must be a key of some ``claims`` call or an
argument of ``given`` in the same notebook, and every such key must still be in the prose. Looks
like a result: a percentage ("77.0 %", "77 %", "10–90 %"), a ratio ("1.8×", "1.8x"), a time ("40 s",
"3 min") or a decimal ("0.83", "12.5"), in prose, exercises, solutions and captions alike.

Left out: integers without a unit (counts, sizes, years), numbers inside ``$...$`` / ``$$...$$``
maths, inline code, fenced code and directive options, link targets, references (§3.2.1, Eq. 4,
Table 13, Fig. 2), dotted versions (1.5.5) and numbers glued to a name (Qwen2.5-VL, SmolLM2-135M,
1.45M, R@1). One claim of a literal covers every place the prose writes it. Not read: figure
titles drawn by code, and whether the words around a number ("about", "above") hold.
"""
from __future__ import annotations

import ast
import math
import re

__all__ = ["claims", "given", "prose_numbers", "declared"]


_TIME = r"(?:ms|s|min|minutes?|seconds?|h|hours?)\b"     # "40 s": a measured time, even whole


def _digits(literal: str) -> str:
    """The number a literal writes: sign and digits, without %, ×, spaces or thousands commas."""
    text = str(literal).strip().replace("\u2212", "-").replace(",", "")
    m = re.fullmatch(rf"([-+]?\d+(?:\.\d+)?)(?:\s?(?:%|×)|x|\s{_TIME})?", text)
    if not m:
        raise ValueError(f"{literal!r} is not a number as the prose writes it (e.g. '77.0 %', '0.83', '1.8×')")
    return m.group(1).lstrip("+")


def _shown(value, places: int) -> str:
    text = f"{float(value):.{places}f}"
    return text[1:] if re.fullmatch(r"-0\.?0*", text) else text   # -0.0 reads as 0.0


def claims(numbers: dict, places: int | None = None) -> None:
    """Assert that each prose literal equals its computed value rounded as the literal is written.

    ``numbers`` maps the literal (as in the prose) to a value or a tuple of values; ``places``, when
    given, must agree with every literal's decimals (a guard for a table printed at that rounding)."""
    wrong = []
    for literal, values in numbers.items():
        digits = _digits(literal)
        decimals = len(digits.partition(".")[2])
        if places is not None and decimals != places:
            raise ValueError(f"{literal!r} shows {decimals} decimal(s), not the {places} asked for")
        values = tuple(values) if isinstance(values, (tuple, list)) else (values,)
        if not values:
            wrong.append(f"the prose says {literal!r} but the cell computes no value")
        for value in values:
            if value is None or not math.isfinite(float(value)):
                wrong.append(f"the prose says {literal!r} but the cell computes {value!r}")
            elif _shown(value, decimals) != digits:
                wrong.append(f"the prose says {literal!r} but the cell computes {float(value):.6g} "
                             f"({_shown(value, decimals)} as written)")
    if wrong:   # raised, not asserted: python -O must not skip the check
        raise AssertionError("; ".join(wrong) + ": update the prose (and this claim)")


def given(*literals: str) -> None:
    """Declare prose numbers that nothing computes (hyperparameters, a rule's constants, a quoted
    case): the static check accepts them; at run time this only checks that each is a number."""
    for literal in literals:
        _digits(literal)


# --- the static half: read a notebook's cells, never run them ---------------------------------

_NUM = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_QUANTITY = re.compile(rf"(?<![\w.,@§/\\^_\-−])(?P<a>{_NUM})(?:\s?[–—]\s?(?P<b>{_NUM}))?"
                       rf"(?P<unit>\s?%|\s?×(?!\s?\d)|x(?!\w)|\s{_TIME})?")
# A reference to a part of a paper or of the book: its numbers are not results.
_REFERENCE = re.compile(r"(?:§\s?|\b(?:Eqs?|Equations?|Tabs?|Tables?|Figs?|Figures?|App|Appendix|Secs?|Sections?|"
                        r"Alg|Algorithm|[Cc]hapters?|Ch|Parts?|[Ss]tep|[Rr]ound|[Vv]ersion|v|Python)\.?\s?)$")
_CODE_DIRECTIVES = {"code", "code-block", "code-cell", "sourcecode", "math", "raw", "literalinclude", "glue"}
_FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*(.*)$")
_OPTION = re.compile(r"^\s*:[\w-]+:")


def _prose_lines(markdown: str) -> str:
    """A markdown cell's prose: fenced code and directive options dropped, directive bodies kept."""
    kept, stack = [], []            # stack of (fence, is_code)
    for line in re.sub(r"<!--.*?-->", " ", markdown, flags=re.S).splitlines():
        m = _FENCE.match(line)
        if m:
            fence, info = m.groups()
            if stack and not info and fence[0] == stack[-1][0][0] and len(fence) >= len(stack[-1][0]):
                stack.pop()
                continue
            if not (stack and stack[-1][1]):
                name = re.match(r"\{([\w:-]+)\}\s*(.*)", info)
                is_code = not name or name.group(1) in _CODE_DIRECTIVES
                stack.append((fence, is_code))
                if name and not is_code:
                    kept.append(name.group(2))        # a directive's argument: an exercise's title
                continue
        if stack and stack[-1][1]:
            continue
        if not _OPTION.match(line):
            kept.append(line)
    return "\n".join(kept)


def _strip_markup(text: str) -> str:
    text = re.sub(r"\$\$.*?\$\$", " ", text, flags=re.S)               # display maths
    text = re.sub(r"(?<!\\)\$[^$\n]+?(?<!\\)\$", " ", text)             # inline maths
    text = re.sub(r"(`+)(?:(?!\1).)+?\1", " ", text, flags=re.S)        # inline code, roles' targets
    text = re.sub(r"\]\([^)]*\)", "] ", text)                           # link targets
    text = re.sub(r"<https?://[^>]*>|https?://\S+", " ", text)
    return re.sub(r"<[^>]+>", " ", text)                                # HTML tags


def prose_numbers(markdown: str) -> list[tuple[str, str]]:
    """(literal, context) for each number in a markdown cell that looks like a result."""
    text = _strip_markup(_prose_lines(markdown))
    found = []
    for m in _QUANTITY.finditer(text):
        after = text[m.end():m.end() + 2]
        if not m.group("unit") and (re.match(r"\.\d|[^\W\d_]|\d|-[^\W\d_]", after)):
            continue                                    # 1.5.5, 135M, 2.5-VL: a version or a name
        if _REFERENCE.search(text[max(0, m.start() - 14):m.start()]):
            continue
        context = " ".join(text[max(0, m.start() - 40):m.end() + 30].split())
        for key in ("a", "b"):
            number = m.group(key)
            if number and (m.group("unit") or "." in number):
                found.append((number.replace(",", ""), context))
    return found


def _python(source: str) -> ast.AST | None:
    """A code cell as Python: IPython's %magics and !commands become ``pass``."""
    lines = [re.sub(r"^(\s*)[%!].*$", r"\1pass", line) for line in source.splitlines()]
    try:
        return ast.parse("\n".join(lines))
    except SyntaxError:
        return None


def declared(code_sources: list[str]) -> tuple[set[str], set[str]]:
    """The literals a notebook's code cells claim (keys of ``claims({...})``) and declare ``given``."""
    claimed, stated = set(), set()
    for source in code_sources:
        tree = _python(source)
        for node in ast.walk(tree) if tree else ():
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name == "claims" and node.args and isinstance(node.args[0], ast.Dict):
                claimed |= {_digits(k.value).lstrip("-") for k in node.args[0].keys
                            if isinstance(k, ast.Constant) and isinstance(k.value, str)}
            elif name == "given":
                stated |= {_digits(a.value).lstrip("-") for a in node.args
                           if isinstance(a, ast.Constant) and isinstance(a.value, str)}
    return claimed, stated
