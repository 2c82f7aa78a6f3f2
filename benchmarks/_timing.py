"""Timing helper shared by the benchmark scripts (imported as a sibling module when a script runs)."""
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
