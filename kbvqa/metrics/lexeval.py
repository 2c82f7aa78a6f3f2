"""A small, safe evaluator for the LaTeX arithmetic that math answers are written in.

MATH-V's official ``is_equal`` turns an answer into a number with ``latex2sympy`` and Python's
``eval``. That needs an extra dependency and evaluates arbitrary text; this module replaces it with a
recursive-descent parser over a closed grammar:

    sum     := product (('+' | '-') product)*
    product := signed (('*' | '/' | \\cdot | \\times | \\div) signed | implicit signed)*
    signed  := ('+' | '-') signed | power
    power   := atom ('^' (atom | signed))?
    atom    := number | '(' sum ')' | '{' sum '}' | '[' sum ']' | \\frac{..}{..} | \\sqrt[n]{..} | \\pi

Integers and their quotients stay exact (``Fraction``), as sympy keeps them; decimals and
irrational results are floats. Anything outside the grammar (letters, units, text), a division by
zero, a complex result or a number too large to be an answer gives ``None``. Never raises.

What this file leaves out: symbols, functions (sin, log, ...), matrices and intervals.
"""
from __future__ import annotations

import math
import re
from fractions import Fraction

Number = Fraction | float
MAX_TEXT = 500        # longer strings are not answers
MAX_DEPTH = 60        # nesting depth of brackets / calls
MAX_EXPONENT = 64     # largest root degree taken exactly
MAX_BITS = 1000       # numerator/denominator size kept exact (stays below float's 2**1024)

_TOKEN = re.compile(r"\s*(\d+\.\d*|\.\d+|\d+|\\[a-zA-Z]+|\\.|.)", re.DOTALL)
_IGNORED = {"\\left", "\\right", "\\,", "\\!", "\\;", "\\:", "\\ ", "\\displaystyle"}
_TIMES = {"*", "\\cdot", "\\times"}
_DIVIDE = {"/", "\\div"}
_FRAC = {"\\frac", "\\dfrac", "\\tfrac"}
_OPEN_CLOSE = {"(": ")", "{": "}", "[": "]"}


class _Fail(Exception):
    """Internal: the text is not an arithmetic expression we can evaluate."""


def _check(value: Number) -> Number:
    if isinstance(value, Fraction):
        if max(value.numerator.bit_length(), value.denominator.bit_length()) > MAX_BITS:
            raise _Fail
        return value
    if isinstance(value, complex) or not math.isfinite(value):
        raise _Fail
    return float(value)


class _Parser:
    def __init__(self, text: str):
        tokens = [t for t in _TOKEN.findall(text) if t.strip() and t not in _IGNORED]
        self.tokens, self.pos, self.depth = tokens, 0, 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise _Fail
        self.pos += 1
        return tok

    def parse(self) -> Number:
        value = self.sum()
        if self.peek() is not None:
            raise _Fail
        return value

    def sum(self) -> Number:
        value = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.product()
            value = _check(value + rhs if op == "+" else value - rhs)
        return value

    def product(self) -> Number:
        value = self.signed()
        while True:
            tok = self.peek()
            if tok in _TIMES or tok in _DIVIDE:
                self.take()
                rhs = self.signed()
                if tok in _DIVIDE and rhs == 0:
                    raise _Fail
                value = _check(value * rhs if tok in _TIMES else value / rhs)
            elif tok is not None and (tok[0].isdigit() or tok[0] == "." or tok in _OPEN_CLOSE
                                      or tok in _FRAC or tok in ("\\sqrt", "\\pi")):
                value = _check(value * self.signed())          # implicit product: 2\pi, 3(4)
            else:
                return value

    def signed(self) -> Number:
        if self.peek() in ("+", "-"):
            sign = -1 if self.take() == "-" else 1
            return _check(sign * self.signed())
        return self.power()

    def power(self) -> Number:
        base = self.atom()
        if self.peek() != "^":
            return base
        self.take("^")
        exponent = self.signed() if self.peek() in ("+", "-") else self.atom()
        return _power(base, exponent)

    def group(self) -> Number:
        self.depth += 1
        if self.depth > MAX_DEPTH:
            raise _Fail
        opening = self.take()
        if opening not in _OPEN_CLOSE:
            raise _Fail
        value = self.sum()
        self.take(_OPEN_CLOSE[opening])
        self.depth -= 1
        return value

    def atom(self) -> Number:
        tok = self.peek()
        if tok is None:
            raise _Fail
        if tok in _OPEN_CLOSE:
            return self.group()
        if tok in _FRAC:
            self.take()
            if self.peek() != "{":
                raise _Fail
            num = self.group()
            if self.peek() != "{":
                raise _Fail
            den = self.group()
            if den == 0:
                raise _Fail
            return _check(num / den)
        if tok == "\\sqrt":
            self.take()
            degree: Number = Fraction(2)
            if self.peek() == "[":
                degree = self.group()
            if self.peek() != "{":
                raise _Fail
            return _root(self.group(), degree)
        if tok == "\\pi":
            self.take()
            return math.pi
        if tok[0].isdigit() or tok[0] == ".":
            self.take()
            return Fraction(int(tok)) if tok.isdigit() else _check(float(tok))
        raise _Fail


def _power(base: Number, exponent: Number) -> Number:
    if isinstance(exponent, Fraction) and exponent.denominator == 1 and isinstance(base, Fraction):
        size = max(base.numerator.bit_length(), base.denominator.bit_length(), 1)
        if abs(exponent) * size > MAX_BITS or (base == 0 and exponent < 0):
            raise _Fail
        return _check(base ** int(exponent))
    try:
        result = float(base) ** float(exponent)
    except (OverflowError, ZeroDivisionError):
        raise _Fail from None
    return _check(result)


def _root(value: Number, degree: Number) -> Number:
    if degree == 0:
        raise _Fail
    if isinstance(value, Fraction) and isinstance(degree, Fraction) and degree.denominator == 1:
        n = int(degree)
        if 0 < n <= MAX_EXPONENT and value >= 0:
            num, den = _int_root(value.numerator, n), _int_root(value.denominator, n)
            if num is not None and den is not None:
                return Fraction(num, den)              # exact, like sympy's sqrt(4) = 2
    if value < 0:
        raise _Fail                                    # sympy would give an imaginary number
    return _check(float(value) ** (1.0 / float(degree)))


def _int_root(x: int, n: int) -> int | None:
    if x.bit_length() > MAX_BITS:
        return None
    r = math.isqrt(x) if n == 2 else round(x ** (1.0 / n)) if x < 2 ** 1000 else None
    if r is None:
        return None
    for cand in (r - 1, r, r + 1):
        if cand >= 0 and cand ** n == x:
            return cand
    return None


def evaluate_latex(text: str) -> Number | None:
    """The value of a LaTeX arithmetic expression, or ``None`` when it is not one."""
    if not isinstance(text, str) or not text.strip() or len(text) > MAX_TEXT:
        return None
    try:
        return _Parser(text).parse()
    except (_Fail, OverflowError, ValueError, ZeroDivisionError, RecursionError):
        return None
