"""Bandit environments and policies: repeatability, UCB1's first sweep, regret shapes, selection."""
import numpy as np
import pytest

from kbvqa.search.bandits import (
    UCB1,
    BernoulliBandit,
    EpsilonGreedy,
    GaussianBandit,
    UCTPolicy,
    gaussian_testbed,
    regret_curves,
    run_bandit,
)

STANDARD = BernoulliBandit((0.9, 0.6, 0.5, 0.4, 0.2))


def test_bad_environments_and_policies_raise():
    for bad in [lambda: BernoulliBandit(()), lambda: BernoulliBandit((0.5, 1.2)),
                lambda: GaussianBandit((0.0, 1.0), sigma=0.0), lambda: gaussian_testbed(0),
                lambda: EpsilonGreedy(1.5), lambda: UCB1(c=-1.0),
                lambda: UCTPolicy(variant="nope"), lambda: UCTPolicy(how="softmax"),
                lambda: run_bandit(UCB1(), STANDARD, 0)]:
        with pytest.raises(ValueError):
            bad()
    with pytest.raises(ValueError):
        STANDARD.pull(7, np.random.default_rng(0))


def test_environments_pay_their_means():
    rng = np.random.default_rng(1)
    env = BernoulliBandit((0.2, 0.7))
    draws = [env.pull(1, rng) for _ in range(4000)]
    assert set(draws) <= {0.0, 1.0} and np.mean(draws) == pytest.approx(0.7, abs=0.03)
    env = GaussianBandit((-1.0, 2.0), sigma=0.5)
    draws = [env.pull(0, rng) for _ in range(4000)]
    assert np.mean(draws) == pytest.approx(-1.0, abs=0.05)
    assert np.std(draws) == pytest.approx(0.5, abs=0.05)
    bed = gaussian_testbed(10, seed=3)
    assert bed.n_arms == 10 and bed.means == gaussian_testbed(10, seed=3).means
    assert bed.means != gaussian_testbed(10, seed=4).means


def test_ucb1_plays_every_arm_once_first():
    run = run_bandit(UCB1(), STANDARD, 20, seed=0)
    assert list(run.choices[:5]) == [0, 1, 2, 3, 4]
    bed = gaussian_testbed(10, seed=0)
    assert sorted(run_bandit(UCB1(), bed, 10, seed=5).choices) == list(range(10))
    # the paper's Eq. 11 as a bandit rule: eps makes an unvisited arm huge, so it sweeps too
    assert sorted(run_bandit(UCTPolicy(0.5, "paper"), STANDARD, 5).choices) == [0, 1, 2, 3, 4]


def test_runs_are_repeatable_by_seed_and_policy_is_not_mutated():
    policy = EpsilonGreedy(0.2)
    a, b = run_bandit(policy, STANDARD, 300, seed=11), run_bandit(policy, STANDARD, 300, seed=11)
    assert np.array_equal(a.choices, b.choices) and np.array_equal(a.rewards, b.rewards)
    c = run_bandit(policy, STANDARD, 300, seed=12)
    assert not np.array_equal(a.choices, c.choices)
    assert policy.counts is None  # run_bandit works on a copy


def test_regret_is_cumulative_pseudo_regret():
    run = run_bandit(EpsilonGreedy(0.3), STANDARD, 200, seed=2)
    gaps = 0.9 - np.array(STANDARD.means)
    assert np.allclose(run.regret, np.cumsum(gaps[run.choices]))
    assert np.all(np.diff(run.regret) >= -1e-12)


def test_ucb1_regret_sublinear_epsilon_greedy_linear():
    curves = regret_curves([EpsilonGreedy(0.1), UCB1()], STANDARD, 4000, seeds=range(4),
                           progress=False)
    eg, ucb = curves["ε-greedy (ε=0.1)"].mean(0), curves["UCB1"].mean(0)
    assert curves["UCB1"].shape == (4, 4000)

    def late_over_early(m):  # regret added in the second half / regret of the first half
        return (m[-1] - m[1999]) / m[1999]

    assert late_over_early(eg) > 0.75       # linear: about 1
    assert late_over_early(ucb) < 0.5       # logarithmic: far below 1 (measured ~0.2)
    assert ucb[-1] < eg[-1]


def test_sampling_selection_explores_much_more_than_argmax():
    # the official code samples children with probability proportional to UCT; as a bandit rule
    # that is close to uniform play once the arms are visited, so its regret stays linear
    curves = regret_curves({"argmax": UCTPolicy(0.5, "official", "argmax"),
                            "sample": UCTPolicy(0.5, "official", "sample")},
                           STANDARD, 1000, seeds=range(3), progress=False)
    argmax_final, sample_final = curves["argmax"].mean(0)[-1], curves["sample"].mean(0)[-1]
    assert sample_final > 3 * argmax_final
    run = run_bandit(UCTPolicy(0.5, "official", "sample"), STANDARD, 1000, seed=0)
    share_best = np.mean(run.choices == 0)
    assert 0.2 < share_best < 0.6  # proportional, not greedy: best arm well under 0.9


def test_figures_draw_every_variant_and_the_slider_is_kernel_free():
    from kbvqa.search.uct import UCT_VARIANTS
    from kbvqa.viz.bandits import draw_exploration_terms, draw_regret_curves, exploration_slider_html

    fig = draw_exploration_terms(cs=(0.5, 1.0), n_parent=20)
    assert len(fig.axes) == 2 and all(len(ax.lines) == len(UCT_VARIANTS) for ax in fig.axes)
    fig = draw_regret_curves({"a": np.ones((2, 5)).cumsum(1), "b": np.zeros((2, 5))})
    assert len(fig.axes[0].lines) == 2
    html = exploration_slider_html(cs=(0.2, 1.0), n_parent=10, dpi=30)
    assert 'type="range"' in html and html.count("data:image/png;base64") == 2
    assert "c = 0.2" in html and "c = 1" in html
    assert "://" not in html.replace("data:image", ""), "the slider must not load anything from the network"
    with pytest.raises(ValueError):
        draw_regret_curves({})
