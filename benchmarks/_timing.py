"""Helpers shared by the benchmark scripts (imported as a sibling module when a script runs):
``best_of`` times a call, ``print_rows`` prints (name, measured, note) rows as an aligned table."""
from __future__ import annotations

import time


def best_of(fn, repeats: int) -> tuple[float, object]:
    """``(best wall seconds over repeats, the last result)``: the minimum is the least noisy
    estimate of a cost on a shared machine."""
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def print_rows(rows, header: str | None = None) -> None:
    """Print ``(name, measured, note)`` rows with aligned columns, after an optional header line."""
    width = max(len(r[0]) for r in rows)
    if header:
        print(header)
    for name, value, note in rows:
        print(f"{name:<{width}}  {value:>9}  {note}")
