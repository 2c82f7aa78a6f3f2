"""MATH-Vision answer extraction and equality, mirroring the official MATH-V evaluation
(mathllm/MATH-V ``evaluation/evaluate.py`` and ``evaluation/utils.py``).

``mathvision_extract_answer`` follows ``evaluate.py`` step by step: a trailing " C." or a leading
"(C)\\n" means option C; a number after the last "is " is taken; without ``\\boxed`` the text after
"the (final|correct) answer is" / "the answer should be" (first line, first sentence); with several
``\\boxed{`` only the last is kept; then ``find_math_answer`` (greedy ``oxed{(.*)}`` with its fix for
a stray "}", the value after the last "=" / "\\approx", LaTeX clean-up, ``_strip_string``).

``mathvision_is_equal`` follows ``is_equal``: case-insensitive string equality, then tuples
"(a,b)" evaluated element-wise and rounded to 2 decimals, then both sides evaluated as numbers and
compared after rounding to 2 decimals. The official code evaluates with ``latex2sympy`` and
``eval``; here ``evaluate_latex`` is a small safe evaluator (numbers, + - * / ^, brackets, \\frac,
\\sqrt, \\pi, \\cdot, \\times, \\div, implicit products), exact on integers and fractions like
sympy, so "6/2" prints as 3 and "3.0" as 3.0. It never calls ``eval`` and never raises.

A response is right (``mathvision_correct``) if its extraction equals the gold answer or, for
multiple choice, the gold option's text.

What this file leaves out: RCTS's LLM-judge extraction (VLMEvalKit), which needs a judge model.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

from kbvqa.metrics.lexeval import evaluate_latex

_FLAGS = ("the final answer is", "the answer is", "the correct answer is", "the answer should be")


def _is_float(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def _fix_fracs(text: str) -> str:
    """``_fix_fracs``: \\frac12 -> \\frac{1}{2}."""
    parts = text.split("\\frac")
    out = parts[0]
    for part in parts[1:]:
        out += "\\frac"
        if part[:1] == "{":
            out += part
            continue
        if len(part) < 2:
            return text
        a, b, rest = part[0], part[1], part[2:]
        out += "{" + a + "}{" + b + "}" + rest if b != "{" else "{" + a + "}" + b + rest
    return out


def _fix_a_slash_b(text: str) -> str:
    """``_fix_a_slash_b``: "3/4" (two plain integers) -> \\frac{3}{4}."""
    parts = text.split("/")
    if len(parts) != 2:
        return text
    try:
        a, b = int(parts[0]), int(parts[1])
    except ValueError:
        return text
    return f"\\frac{{{a}}}{{{b}}}" if text == f"{a}/{b}" else text


def _fix_sqrt(text: str) -> str:
    """``_fix_sqrt``: \\sqrt2 -> \\sqrt{2}."""
    parts = text.split("\\sqrt")
    out = parts[0]
    for part in parts[1:]:
        out += "\\sqrt{" + part[0] + "}" + part[1:] if part and part[0] != "{" else "\\sqrt" + part
    return out


def _strip_string(text: str) -> str:
    """``_strip_string``: the MATH-dataset clean-up, in the official order (including its quirk
    that \\frac12 is repaired only when the string also contains "sqrt")."""
    text = text.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    text = text.replace("tfrac", "frac").replace("dfrac", "frac")
    text = text.replace("\\left", "").replace("\\right", "")
    text = text.replace("^{\\circ}", "").replace("^\\circ", "")
    text = text.replace("\\$", "").replace("$", "")
    text = text.split("\\text{ ")[0]                      # _remove_right_units
    text = text.replace("\\%", "")
    text = text.replace(" .", " 0.").replace("{.", "{0.")
    if not text:
        return text
    if text[0] == ".":
        text = "0" + text
    if len(text.split("=")) == 2:
        text = text.split("=")[-1]
    if len(text.split("\\approx")) == 2:
        text = text.split("\\approx")[-1]
    if "sqrt" in text:
        text = _fix_sqrt(text)
    text = text.replace(" ", "")
    if "sqrt" in text:
        text = _fix_fracs(text)
    if text == "0.5":
        text = "\\frac{1}{2}"
    return _fix_a_slash_b(text)


_BOXED_GREEDY = re.compile(r"oxed{(.*)}", flags=re.DOTALL)


def find_math_answer(text: str) -> str:
    """``find_math_answer``: the (last, greedy) boxed content, cleaned."""
    text = text.lower().replace("{}", "")
    found = _BOXED_GREEDY.findall(text)
    ans = found[-1] if found else text
    close, open_ = ans.find("}"), ans.find("{")
    if close != -1 and (open_ == -1 or close < open_):
        ans = ans.split("}")[0]
    ans = ans.split("=")[-1].split("\\approx")[-1]
    for old, new in ((" ", ""), ("\\,", ""), ("∞", "\\infty"), ("+\\infty", "\\infty"),
                     ("\\\\", "\\"), ("\n", ""), ("\\text", ""), ("\\mbox", ""),
                     ("bmatrix", "pmatrix"), ("\\left", ""), ("\\right", ""), ("^{\\circ}", ""),
                     ("^\\circ", ""), ("{m}^3", ""), ("m^3", ""), ("{units}", ""), ("units", ""),
                     ("{km}", ""), ("km", "")):
        ans = ans.replace(old, new)
    return _strip_string(ans)


def mathvision_extract_answer(response: str) -> str:
    """The answer string ``evaluate.py`` extracts from a model response (never raises)."""
    ans = str(response).strip()
    for c in "ABCDE":
        if ans.endswith((f" {c}.", f" ({c}).")) or ans.startswith((f"{c}\n", f"({c})\n",
                                                                   f"({c}) {c}\n")):
            ans = c
    tail = ans.split("is ")[-1].rstrip(".")
    if _is_float(tail):
        ans = tail
    if "oxed{" not in ans:
        for flag in _FLAGS:
            for variant in (flag, flag.replace("the", "The")):
                before = ans
                ans = ans.split(variant)[-1].strip()
                if variant in before:
                    ans = ans.split("\n")[0].split(". ")[0]
    elif ans.count("oxed{") > 1:
        ans = "\\boxed{" + ans.split("oxed{")[-1]
    ans = find_math_answer(ans)
    for letter in "abcde":
        ans = ans.replace(f"({letter})", letter).replace(f"{{{letter}}}", letter)
    return ans.rstrip(".").lstrip(":").strip()


def _rounded(value: Fraction | float) -> int | float:
    """``round(eval(str(sympy_value)), 2)``: integers stay ints, everything else is a float."""
    if isinstance(value, Fraction):
        return value.numerator if value.denominator == 1 else round(float(value), 2)
    return round(value, 2)


def _eval_tuple(text: str) -> str:
    """``eval_tuple``: "(2*3, 5+2)" -> "(6,7)"; anything else (or any failure) unchanged."""
    if len(text) < 2 or (text[0], text[-1]) not in (("(", ")"), ("[", "]")):
        return text
    items = text[1:-1].split(",")
    if len(items) < 2:
        return text
    out = []
    for item in items:
        if "infty" in item or item in ("a", "-a"):
            out.append(item)
            continue
        value = evaluate_latex(item)
        if value is None:
            return text
        out.append(str(_rounded(value)))
    return text[0] + ",".join(out) + text[-1]


def mathvision_is_equal(answer: str, gold: str) -> bool:
    """``is_equal``: are two answer strings the same (strings, tuples or numbers)?"""
    answer, gold = str(answer).lower(), str(gold).lower()
    if not answer.replace(" ", "") or not gold.replace(" ", ""):
        return False
    if answer.strip() == gold.strip():
        return True
    answer, gold = _eval_tuple(answer), _eval_tuple(gold)
    if answer == gold:
        return True
    a, g = evaluate_latex(answer), evaluate_latex(gold)
    if a is None or g is None:
        return False
    ra, rg = _rounded(a), _rounded(g)
    finite = all(isinstance(x, int) or math.isfinite(x) for x in (ra, rg))
    return bool(finite and ra == rg)


def mathvision_correct(response: str, answer: str, options: list[str] | None = None) -> bool:
    """Is a raw response right for a MATH-Vision item (``answer`` is a letter when ``options``)?"""
    extracted = mathvision_extract_answer(response)
    option_text = ""
    if options:
        index = ord(answer[:1].upper() or "?") - ord("A")
        option_text = options[index] if 0 <= index < len(options) else ""
    return mathvision_is_equal(extracted, answer) or mathvision_is_equal(extracted, option_text)
