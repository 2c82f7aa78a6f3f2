"""Helpers shared by the benchmark scripts (imported as a sibling module when a script runs):
``best_of`` times a call, ``row`` builds one result row (a measured value, its unit, its goal and
whether this run met it), ``format_value`` / ``print_rows`` print rows as an aligned table.

Every ``bench_*.py`` exposes ``rows(argv=None) -> list[dict]`` built with ``row`` (``run_all.py``
collects them) and a ``main`` that prints them. Leaves out: writing results files (``report.py``).
"""
from __future__ import annotations

import math
import time

GOAL_OPS = {"<=": lambda v, b: v <= b, ">=": lambda v, b: v >= b, "<": lambda v, b: v < b,
            ">": lambda v, b: v > b, "==": lambda v, b: v == b}


def best_of(fn, repeats: int) -> tuple[float, object]:
    """``(best wall seconds over repeats, the last result)``: the minimum is the least noisy
    estimate of a cost on a shared machine."""
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def row(name: str, value, unit: str = "", goal: tuple[str, float] | None = None, note: str = "",
        kind: str = "ratio") -> dict:
    """One result row. ``goal`` is ``(op, bound)`` with op in ``<=, >=, <, >, ==`` (or None);
    ``met`` is whether ``value`` meets it (None without a goal or without a number). ``kind`` says
    how to read it: ``ratio`` (the target, measured in one run), ``time`` (absolute, context only),
    ``count`` (calls, images: exact) or ``check`` (a correctness figure)."""
    if goal is not None and (len(goal) != 2 or goal[0] not in GOAL_OPS):
        raise ValueError(f"goal must be (op, bound) with op in {sorted(GOAL_OPS)}, got {goal!r}")
    if kind not in ("ratio", "time", "count", "check"):
        raise ValueError(f"kind must be ratio, time, count or check, got {kind!r}")
    number = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
    met = bool(GOAL_OPS[goal[0]](value, goal[1])) if goal is not None and number else None
    return {"name": name, "value": value, "unit": unit, "goal": list(goal) if goal else None, "met": met,
            "note": note, "kind": kind}


def format_value(value, unit: str = "") -> str:
    """``3.14159, "x"`` -> ``3.14x``; seconds with 2 decimals; integers as they are."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"{value}{(' ' + unit) if unit else ''}"
    if isinstance(value, int):
        text = f"{value:d}"
    elif not math.isfinite(value):
        text = str(value)
    elif abs(value) >= 1e5 or (value != 0 and abs(value) < 1e-2):
        text = f"{value:.3g}"
    else:
        text = f"{value:.2f}"
    if unit == "x":
        return text + "x"
    return f"{text} {unit}" if unit else text


def format_goal(goal) -> str:
    """``["<=", 8]`` -> ``<= 8``; None -> ``""``."""
    return "" if not goal else f"{goal[0]} {goal[1]:g}" if isinstance(goal[1], (int, float)) else f"{goal[0]} {goal[1]}"


def print_rows(rows: list[dict], header: str | None = None) -> None:
    """Print rows (from ``row``) with aligned columns: name, value, goal, met, note."""
    if header:
        print(header)
    if not rows:
        print("(no rows)")
        return
    width = max(len(r["name"]) for r in rows)
    for r in rows:
        met = {True: "met", False: "NOT met", None: ""}[r["met"]]
        goal = format_goal(r["goal"]) + (f" {r['unit']}" if r["goal"] and r["unit"] not in ("", "x") else "")
        print(f"{r['name']:<{width}}  {format_value(r['value'], r['unit']):>14}  {goal:>9} {met:>7}  {r['note']}")
