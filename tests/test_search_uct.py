"""UCT scores (RCTS Eq. 11, official code, SeRTS Eq. 1, UCB1) and the two selection rules."""
import math

import numpy as np
import pytest

from kbvqa.search.uct import (
    OFFICIAL_EPS,
    UCT_VARIANTS,
    exploration_term,
    select_child,
    select_index,
    selection_probabilities,
    uct_score,
)


def test_paper_formula_by_hand():
    # Eq. 11: Q + c * sqrt((ln N(father) + 1) / (N + eps))
    got = uct_score(0.3, 4, 10, c=0.7, variant="paper", eps=1e-6)
    assert float(got) == pytest.approx(0.3 + 0.7 * math.sqrt((math.log(10) + 1) / (4 + 1e-6)))


def test_official_formula_by_hand():
    got = uct_score(0.3, 4, 10, c=0.5, variant="official")
    assert float(got) == pytest.approx(0.3 + 0.5 * math.sqrt(math.log(11) / (4 + 1e-10)))


def test_serts_formula_by_hand():
    # SeRTS Eq. 1 as printed: R/N + C * sqrt(2 ln(N(p) / N(s)))
    got = uct_score(0.3, 4, 10, c=0.1, variant="serts")
    assert float(got) == pytest.approx(0.3 + 0.1 * math.sqrt(2 * math.log(10 / 4)))


def test_ucb1_formula_by_hand():
    got = uct_score(0.3, 4, 10, c=1.0, variant="ucb1")
    assert float(got) == pytest.approx(0.3 + math.sqrt(2 * math.log(10) / 4))


def test_variants_differ():
    values = {v: float(uct_score(0.3, 4, 10, c=0.5, variant=v)) for v in UCT_VARIANTS}
    assert len(set(round(x, 9) for x in values.values())) == len(UCT_VARIANTS)


def test_vectorised_matches_scalar_and_broadcasts():
    q, n = np.array([0.1, 0.5, 0.9]), np.array([1, 3, 7])
    for v in UCT_VARIANTS:
        vec = uct_score(q, n, 11, c=0.5, variant=v)
        assert vec.shape == (3,)
        for i in range(3):
            assert vec[i] == pytest.approx(float(uct_score(q[i], n[i], 11, 0.5, v)))
    per_parent = uct_score(q, n, np.array([3, 5, 8]), c=0.5)
    assert per_parent[0] == pytest.approx(float(uct_score(0.1, 1, 3, 0.5)))


def test_unvisited_children():
    # paper / official: huge but finite (eps in the denominator); serts / ucb1: inf
    paper = float(uct_score(0.0, 0, 5, c=0.5, variant="paper"))
    assert paper == pytest.approx(0.5 * math.sqrt((math.log(5) + 1) / OFFICIAL_EPS))
    assert np.isfinite(paper) and paper > 1e4
    official = float(uct_score(0.0, 0, 5, c=0.5, variant="official"))
    assert np.isfinite(official) and official > 1e4
    assert float(uct_score(0.0, 0, 5, c=0.5, variant="serts")) == math.inf
    assert float(uct_score(0.0, 0, 5, c=0.5, variant="ucb1")) == math.inf
    # the official code gives no bonus under an unvisited parent: ln(0 + 1) = 0
    assert float(uct_score(0.25, 0, 0, c=0.5, variant="official")) == pytest.approx(0.25)


def test_unvisited_parent_is_defined():
    for v in UCT_VARIANTS:
        out = uct_score([0.2, 0.4], [0, 2], 0, c=0.5, variant=v)
        assert not np.isnan(out).any(), v
    # paper: ln N_parent with N_parent = 0 is read as ln 1 = 0
    assert float(uct_score(0.2, 2, 0, 0.5)) == pytest.approx(0.2 + 0.5 * math.sqrt(1 / 2))


def test_serts_negative_log_is_clipped():
    assert float(uct_score(0.4, 9, 3, c=1.0, variant="serts")) == pytest.approx(0.4)


def test_c_zero_is_pure_exploitation_even_when_unvisited():
    for v in UCT_VARIANTS:
        assert list(uct_score([0.2, 0.7], [0, 3], 5, c=0.0, variant=v)) == [0.2, 0.7]


def test_bonus_shrinks_with_visits_and_grows_with_parent():
    for v in ("paper", "official", "ucb1"):
        t = exploration_term(np.arange(1, 50), 50, c=1.0, variant=v)
        assert np.all(np.diff(t) < 0), v
        t = exploration_term(3, np.arange(3, 50), c=1.0, variant=v)
        assert np.all(np.diff(t) > 0), v


@pytest.mark.parametrize("kwargs", [
    dict(c=-0.1), dict(c=float("nan")), dict(c="big"), dict(variant="alphago"),
    dict(n=-1), dict(n_parent=-2), dict(q=float("nan")), dict(eps=0.0), dict(n=float("nan")),
])
def test_bad_arguments_raise(kwargs):
    args = dict(q=0.5, n=2, n_parent=4, c=0.5, variant="paper")
    args.update(kwargs)
    with pytest.raises(ValueError):
        uct_score(**args)


def test_argmax_first_of_ties_and_ignores_nan():
    assert select_index([0.1, 0.9, 0.9, 0.2]) == 1
    assert select_index([float("nan"), 0.3, 0.1]) == 1
    assert select_index([math.inf, 5.0, math.inf]) == 0
    with pytest.raises(ValueError):
        select_index([])
    with pytest.raises(ValueError):
        select_index([1.0], how="softmax")


def test_select_child_argmax_prefers_unvisited_then_best():
    assert select_child([0.9, 0.1, 0.5], [3, 0, 2], 5, 0.5, variant="paper") == 1
    assert select_child([0.9, 0.1, 0.5], [3, 0, 2], 5, 0.0, variant="paper") == 0


def test_sampling_probabilities_defined_on_awkward_scores():
    cases = [[1.0, 3.0], [math.inf, 2.0, math.inf], [-1.0, 2.0], [-1.0, -5.0],
             [float("nan"), 1.0], [0.0, 0.0, 0.0], [1e308, 1e308, 1.0], [-math.inf, 0.5]]
    for scores in cases:
        p = selection_probabilities(scores)
        assert np.all(np.isfinite(p)) and np.all(p >= 0) and p.sum() == pytest.approx(1.0)
    assert list(selection_probabilities([1.0, 3.0])) == [0.25, 0.75]
    assert list(selection_probabilities([math.inf, 2.0, math.inf])) == [0.5, 0.0, 0.5]
    assert list(selection_probabilities([-1.0, 2.0])) == [0.0, 1.0]
    assert list(selection_probabilities([-1.0, -5.0])) == [0.5, 0.5]


def test_sampling_frequencies_follow_scores_and_are_seeded():
    rng = np.random.default_rng(7)
    picks = [select_index([1.0, 2.0, 5.0], "sample", rng) for _ in range(8000)]
    freq = np.bincount(picks, minlength=3) / len(picks)
    assert np.allclose(freq, [0.125, 0.25, 0.625], atol=0.02)
    a = [select_child([0.2, 0.5, 0.3], [2, 2, 2], 6, 0.5, how="sample", rng=np.random.default_rng(3))
         for _ in range(5)]
    b = [select_child([0.2, 0.5, 0.3], [2, 2, 2], 6, 0.5, how="sample", rng=np.random.default_rng(3))
         for _ in range(5)]
    assert a == b


def test_sampling_explores_where_argmax_does_not():
    q, n = [0.9, 0.1, 0.1], [10, 10, 10]
    arg = {select_child(q, n, 30, 0.5, variant="official") for _ in range(20)}
    rng = np.random.default_rng(0)
    smp = {select_child(q, n, 30, 0.5, variant="official", how="sample", rng=rng) for _ in range(200)}
    assert arg == {0}
    assert smp == {0, 1, 2}
