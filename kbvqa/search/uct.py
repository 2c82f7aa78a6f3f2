"""UCT scores and child selection: RCTS App. A Eq. 11, its official code, SeRTS Eq. 1, UCB1.

Every variant is ``value + c * bonus`` and is vectorised over children (``q``, ``n`` and
``n_parent`` broadcast against each other):

==========  =================================================  =========================================
variant     formula                                            unvisited child (``N = 0``, ``c > 0``)
==========  =================================================  =========================================
"paper"     ``Q + c*sqrt((ln N_parent + 1) / (N + eps))``      huge, finite: ``c*sqrt((ln N_p + 1)/eps)``
            (RCTS App. A, Eq. 11)
"official"  ``Q + c*sqrt(ln(N_parent + 1) / (N + 1e-10))``     huge, finite (``c*1e5*sqrt(ln(N_p+1))``),
            (yannqi/RCTS-RAG ``MCTSr_Reranking.uct``, c=0.5)    but exactly ``Q`` when ``N_parent = 0``
"serts"     ``R/N + C*sqrt(2*ln(N_parent / N))``               ``inf``
            (SeRTS Eq. 1, as printed)
"ucb1"      ``Q + c*sqrt(2*ln N_parent / N)``                  ``inf``
            (Auer et al. 2002; Kocsis & Szepesvari's UCT)
==========  =================================================  =========================================

``q`` is always the child's *mean* value: SeRTS writes ``R(s)/N(s)``, so pass ``R/N`` there.
Edge cases are defined rather than left to ``nan``:

- ``ln N_parent`` with ``N_parent < 1`` (an unvisited parent) is read as ``ln 1 = 0`` in "paper"
  and "ucb1" (the printed formula would give ``-inf`` and a ``nan`` square root).
- "serts" prints ``ln(N_parent / N)``, not UCB1's ``ln(N_parent) / N``; a negative log (possible
  only when a child has more visits than its parent) is clipped to 0.
- ``c = 0`` gives no bonus at all, even for unvisited children (``0 * inf`` is taken as 0).

Selection (``select_index``/``select_child``): "argmax" is the papers' rule (ties go to the first
child, as Python's ``max`` in the official code); "sample" is the official code's
``random.choices(weights=uct_scores)``: probability proportional to the score. We define the
cases that code leaves open: infinite scores share all the mass equally (the limit of the
proportional rule), negative and ``nan`` scores get weight 0, and when no weight is positive the
draw is uniform. Leaves out: trees, visit counting and backpropagation (``kbvqa.rcts.tree``).
"""
from __future__ import annotations

import numpy as np

UCT_VARIANTS = ("paper", "official", "serts", "ucb1")
SELECTION_RULES = ("argmax", "sample")
OFFICIAL_C = 0.5          # exploration_constant in the official MCTSr_Reranking
OFFICIAL_EPS = 1e-10      # epsilon in the official code (the paper only says "small")
OFFICIAL_ROOT_UCT = 10_000.0  # the official code's fixed score for the root (favours breadth)


def _as_counts(x, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if not (arr >= 0).all():  # one pass catches both nan and negative counts
        if np.isnan(arr).any():
            raise ValueError(f"{name} contains nan")
        raise ValueError(f"{name} must be >= 0 (visit counts), got min {arr.min()}")
    return arr


def _check_c(c) -> float:
    try:
        c = float(c)
    except (TypeError, ValueError):
        raise ValueError(f"c must be a number, got {c!r}") from None
    if not np.isfinite(c) or c < 0:
        raise ValueError(f"c must be a finite number >= 0, got {c}")
    return c


def exploration_bonus(n, n_parent, variant: str = "paper", eps: float = OFFICIAL_EPS) -> np.ndarray:
    """The bonus multiplied by ``c`` (so the exploration term is ``c * bonus``); >= 0, maybe inf."""
    if variant not in UCT_VARIANTS:
        raise ValueError(f"unknown UCT variant {variant!r}; expected one of {UCT_VARIANTS}")
    n = _as_counts(n, "n")
    n_parent = _as_counts(n_parent, "n_parent")  # broadcasts against n in the arithmetic below
    with np.errstate(divide="ignore", invalid="ignore"):
        if variant in ("paper", "official"):
            eps = float(eps)
            if not eps > 0:
                raise ValueError(f"eps must be > 0, got {eps}")
            if variant == "paper":    # Eq. 11: (ln N(Father(a)) + 1) / (N(a) + eps)
                numerator = np.log(np.maximum(n_parent, 1.0)) + 1.0
            else:                     # official: ln(N_father + 1) / (N + 1e-10)
                numerator = np.log(n_parent + 1.0)
            return np.sqrt(numerator / (n + eps))
        if variant == "serts":        # SeRTS Eq. 1: sqrt(2 ln(N(p) / N(s)))
            log_ratio = np.where(n > 0, np.log(n_parent / np.where(n > 0, n, 1.0)), np.inf)
            return np.sqrt(2.0 * np.clip(log_ratio, 0.0, None))
        log_parent = np.log(np.maximum(n_parent, 1.0))  # ucb1: sqrt(2 ln N_parent / N)
        return np.where(n > 0, np.sqrt(2.0 * log_parent / np.where(n > 0, n, 1.0)), np.inf)


def exploration_term(n, n_parent, c: float, variant: str = "paper",
                     eps: float = OFFICIAL_EPS) -> np.ndarray:
    """``c * bonus`` with ``0 * inf := 0`` (``c = 0`` means no exploration at all)."""
    c = _check_c(c)
    bonus = exploration_bonus(n, n_parent, variant, eps)
    if c == 0:
        return np.zeros_like(bonus)
    return c * bonus


def uct_score(q, n, n_parent, c: float = 1.0, variant: str = "paper",
              eps: float = OFFICIAL_EPS) -> np.ndarray:
    """UCT of each child: mean value ``q`` plus the variant's exploration term (see module doc).

    ``q``, ``n`` (child visits) and ``n_parent`` (parent visits, or one count per child) broadcast.
    Raises ``ValueError`` for ``c < 0``, negative or ``nan`` counts, a ``nan`` value, ``eps <= 0``
    or an unknown variant. Returns a float array (a 0-d array for scalar inputs).

    Appendix: RCTS | App. A Eq. 11 (SeRTS Eq. 1) | tests/test_search_uct.py::test_paper_formula_by_hand | rcts-uct
    """
    q = np.asarray(q, dtype=float)
    if np.isnan(q).any():
        raise ValueError("q contains nan")
    term = exploration_term(n, n_parent, c, variant, eps)
    return q + term


def selection_probabilities(scores) -> np.ndarray:
    """The official "sample" rule's distribution: proportional to the scores, made total.

    ``+inf`` scores split all the mass equally; negative, ``-inf`` and ``nan`` scores get 0; if no
    score is positive the distribution is uniform. Always finite, non-negative, sums to 1.
    """
    s = np.asarray(scores, dtype=float).ravel()
    if s.size == 0:
        raise ValueError("no scores to select from")
    if (s > 0).all() and s.max() < 1e300:  # the common case: all positive, sum cannot overflow
        return s / s.sum()
    pos_inf = np.isposinf(s)
    if pos_inf.any():
        weights = pos_inf.astype(float)
    else:
        weights = np.where(np.isfinite(s) & (s > 0), s, 0.0)
        with np.errstate(over="ignore"):
            total = weights.sum()
        if not np.isfinite(total):      # finite scores whose sum overflows: rescale first
            weights = weights / weights.max()
        if not weights.sum() > 0:
            weights = np.ones_like(s)
    return weights / weights.sum()


def select_index(scores, how: str = "argmax", rng=None) -> int:
    """Pick one index from precomputed ``scores`` by "argmax" (first of ties) or "sample".

    ``rng`` is a ``numpy.random.Generator`` or a seed (used only by "sample"; ``None`` = seed 0,
    so the choice is repeatable unless a generator is passed). ``nan`` never wins an argmax.
    """
    if how not in SELECTION_RULES:
        raise ValueError(f"unknown selection rule {how!r}; expected one of {SELECTION_RULES}")
    s = np.asarray(scores, dtype=float).ravel()
    if s.size == 0:
        raise ValueError("no scores to select from")
    if how == "argmax":
        return int(np.argmax(np.where(np.isnan(s), -np.inf, s)))
    if not isinstance(rng, np.random.Generator):
        rng = np.random.default_rng(0 if rng is None else rng)
    probabilities = selection_probabilities(s)
    cumulative = np.cumsum(probabilities)  # inverse CDF with one uniform draw
    index = int(np.searchsorted(cumulative, rng.random() * cumulative[-1], side="right"))
    if index >= s.size:  # rounding at the top end: the last index that has any mass
        index = int(np.flatnonzero(probabilities > 0)[-1])
    return index


def select_child(q, n, n_parent, c: float = 1.0, *, variant: str = "paper", how: str = "argmax",
                 rng=None, eps: float = OFFICIAL_EPS) -> int:
    """Index of the child to descend into: ``select_index(uct_score(...), how, rng)``."""
    return select_index(np.atleast_1d(uct_score(q, n, n_parent, c, variant, eps)), how, rng)
