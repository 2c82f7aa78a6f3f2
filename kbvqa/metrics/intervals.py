"""Noise bars for every experiment: binomial intervals, a live-rerun agreement check, paired bootstrap.

An accuracy measured on n questions is a binomial proportion, so two runs that differ by a few
points on a few hundred questions may not differ at all. Three tools say how much is noise:

- ``wilson_interval(k, n)``: the Wilson score interval of a proportion (better than the normal
  approximation at small n and near 0 or 1; no SciPy needed).
- ``check_agreement(live, reference_rate)``: does a small live rerun (``live``: one bool per
  question) agree with the committed accuracy of the same questions? It agrees when the reference
  lies inside the live run's Wilson interval. With few questions the interval is wide, so the
  check is weak -- the chapter also shows the per-question agreement rate (``same_answers``), which
  is 1.0 when the rerun repeats the committed run exactly.
- ``paired_bootstrap(a, b)``: the accuracy difference of two methods on the *same* questions with a
  percentile bootstrap interval (resampling questions, seeded), e.g. RCTS minus Vanilla-RAG.
- ``paired_sample_size(diff, discordant)``: how many questions such a comparison needs for its
  interval to exclude 0 with a given power (McNemar's test, Connor 1987): the power calculation
  behind each table's n.

Leaves out: running anything (``kbvqa.rcts.runs``), diagnostics of *why* (``kbvqa.rcts.diagnostics``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


def _z(level: float) -> float:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    # inverse normal CDF by bisection on erf (exact enough for intervals; no SciPy)
    lo, hi, target = 0.0, 10.0, (1 + level) / 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if 0.5 * (1 + math.erf(mid / math.sqrt(2))) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def wilson_interval(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """Wilson score interval of k successes in n trials; (0, 1) when n == 0."""
    if n < 0 or k < 0 or k > n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return 0.0, 1.0
    z = _z(level)
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (0.0 if k == 0 else max(0.0, centre - half)), (1.0 if k == n else min(1.0, centre + half))


@dataclass(frozen=True)
class Agreement:
    n: int                # live questions
    correct: int          # live correct answers
    rate: float           # live accuracy
    low: float            # Wilson interval of the live accuracy
    high: float
    reference: float      # committed accuracy of the same questions
    agrees: bool          # reference inside [low, high]

    def __str__(self) -> str:
        verdict = "agrees" if self.agrees else "DISAGREES"
        return (f"live {self.correct}/{self.n} = {self.rate:.3f} [{self.low:.3f}, {self.high:.3f}] vs "
                f"committed {self.reference:.3f}: {verdict} within noise")


def check_agreement(live: Sequence[bool], reference_rate: float, level: float = 0.95) -> Agreement:
    """Live rerun vs committed accuracy (module docstring). Empty ``live`` raises ``ValueError``."""
    if len(live) == 0:
        raise ValueError("check_agreement needs at least one live result")
    if not 0 <= reference_rate <= 1:
        raise ValueError(f"reference_rate must be a proportion in [0, 1], got {reference_rate}")
    k, n = int(sum(bool(x) for x in live)), len(live)
    low, high = wilson_interval(k, n, level)
    return Agreement(n, k, k / n, low, high, float(reference_rate), bool(low <= reference_rate <= high))


def same_answers(live: Sequence, committed: Sequence) -> float:
    """Share of questions where the live run gave the committed answer (None counts as an answer)."""
    if len(live) != len(committed):
        raise ValueError(f"one committed answer per live answer: {len(live)} vs {len(committed)}")
    if not live:
        raise ValueError("same_answers needs at least one answer")
    return sum(a == b for a, b in zip(live, committed)) / len(live)


@dataclass(frozen=True)
class PairedDiff:
    diff: float           # accuracy(a) - accuracy(b)
    low: float
    high: float
    n: int

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.diff:+.3f} [{self.low:+.3f}, {self.high:+.3f}] on {self.n} questions"


def paired_bootstrap(a: Sequence[bool], b: Sequence[bool], n_boot: int = 2000, level: float = 0.95,
                     seed: int = 0) -> PairedDiff:
    """Accuracy difference a - b on the same questions, with a seeded percentile bootstrap interval."""
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"need two non-empty results on the same questions, got {len(a)} and {len(b)}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    _z(level)
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    tail = (1 - level) / 2
    return PairedDiff(float(d.mean()), float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)), len(d))


def paired_sample_size(diff: float, discordant: float, level: float = 0.95, power: float = 0.8) -> int:
    """Questions a paired comparison of two accuracies needs so that its ``level`` interval excludes 0
    with probability ``power``, when the true difference is ``diff`` and a share ``discordant`` of the
    questions is answered right by exactly one of the two methods (psi = p10 + p01, diff = p10 - p01).
    Connor (1987), the sample size of McNemar's test:
    n = (z_{1-a/2} sqrt(psi) + z_{power} sqrt(psi - diff^2))^2 / diff^2."""
    diff = abs(float(diff))
    if not 0 < diff <= discordant <= 1:
        raise ValueError(f"need 0 < |diff| <= discordant <= 1, got diff={diff}, discordant={discordant}")
    if not 0 < power < 1:
        raise ValueError(f"power must be in (0, 1), got {power}")
    z_a, z_b = _z(level), _z(2 * power - 1)
    n = (z_a * math.sqrt(discordant) + z_b * math.sqrt(discordant - diff ** 2)) ** 2 / diff ** 2
    return math.ceil(n)
