"""k-armed bandits: the one-node case of tree search, where UCT's exploration term comes from.

Environments: ``BernoulliBandit`` (reward 1 with probability ``means[a]``) and ``GaussianBandit``
(reward ``N(means[a], sigma^2)``; ``gaussian_testbed`` draws Sutton & Barto's 10-armed testbed).
Policies keep a count ``N_a`` and a running mean ``Q_a`` per arm and pick an arm each step:

- ``EpsilonGreedy``: a uniformly random arm with probability epsilon, else the best mean (ties at
  random); its regret grows linearly because it never stops exploring at rate epsilon.
- ``UCB1`` (Auer et al. 2002): ``Q_a + c*sqrt(2 ln t / N_a)`` with c = 1; every arm is played once
  first (an unvisited arm scores ``inf``); regret grows like ``log t``.
- ``UCTPolicy``: any ``kbvqa.search.uct`` variant (RCTS Eq. 11 "paper", "official", SeRTS Eq. 1
  "serts") with "argmax" or the official code's "sample" selection; the bandit's ``t`` plays the
  parent's visit count ``N(Father(a))``.

``run_bandit`` plays one seeded episode; ``regret_curves`` averages over seeds with a tqdm bar.
Regret is the *pseudo-regret* ``sum_t (mu* - mu_{a_t})`` (expected, so curves are smooth).
Every run is a pure function of its seed: the environment and the policy draw from two
independent streams spawned from it. Leaves out: trees (``kbvqa.rcts.tree``) and plots
(``kbvqa.viz.bandits``).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from kbvqa.config import progress_enabled
from kbvqa.search.uct import OFFICIAL_C, select_index, uct_score


def _means(means) -> np.ndarray:
    arr = np.asarray(means, dtype=float).ravel()
    if arr.size < 1 or not np.all(np.isfinite(arr)):
        raise ValueError(f"a bandit needs >= 1 finite arm mean, got {means!r}")
    return arr


class _Arms:
    """What every bandit shares: its arms' expected rewards ``means``."""

    @property
    def n_arms(self) -> int:
        return len(self.means)

    @property
    def best_mean(self) -> float:
        return max(self.means)

    def check_arm(self, arm: int) -> None:
        if not 0 <= arm < self.n_arms:
            raise ValueError(f"arm {arm} out of range 0..{self.n_arms - 1}")


@dataclass(frozen=True)
class BernoulliBandit(_Arms):
    """Arm ``a`` pays 1 with probability ``means[a]`` and 0 otherwise."""

    means: tuple  # success probability of each arm, each in [0, 1]

    def __post_init__(self):
        arr = _means(self.means)
        if arr.min() < 0 or arr.max() > 1:
            raise ValueError(f"Bernoulli means must lie in [0, 1], got {self.means!r}")
        object.__setattr__(self, "means", tuple(float(m) for m in arr))

    def pull(self, arm: int, rng: np.random.Generator) -> float:
        self.check_arm(arm)
        return float(rng.random() < self.means[arm])


@dataclass(frozen=True)
class GaussianBandit(_Arms):
    """Arm ``a`` pays a draw from ``Normal(means[a], sigma**2)``."""

    means: tuple        # expected reward of each arm
    sigma: float = 1.0  # reward noise (standard deviation), shared by all arms

    def __post_init__(self):
        object.__setattr__(self, "means", tuple(float(m) for m in _means(self.means)))
        if not (np.isfinite(self.sigma) and self.sigma > 0):
            raise ValueError(f"sigma must be > 0, got {self.sigma}")

    def pull(self, arm: int, rng: np.random.Generator) -> float:
        self.check_arm(arm)
        return float(rng.normal(self.means[arm], self.sigma))


def gaussian_testbed(k: int = 10, seed: int = 0, sigma: float = 1.0) -> GaussianBandit:
    """Sutton & Barto's k-armed testbed: arm means drawn from N(0, 1), unit reward noise."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    return GaussianBandit(tuple(np.random.default_rng(seed).normal(0.0, 1.0, k)), sigma)


@dataclass
class _CountingPolicy:
    """Per-arm visit counts ``N_a``, running means ``Q_a`` and the step counter ``t``."""

    counts: np.ndarray = field(default=None, init=False, repr=False)
    values: np.ndarray = field(default=None, init=False, repr=False)
    t: int = field(default=0, init=False, repr=False)

    def reset(self, n_arms: int) -> None:
        self.counts = np.zeros(n_arms)
        self.values = np.zeros(n_arms)
        self.t = 0

    def update(self, arm: int, reward: float) -> None:
        self.t += 1
        self.counts[arm] += 1
        self.values[arm] += (reward - self.values[arm]) / self.counts[arm]  # incremental mean


@dataclass
class EpsilonGreedy(_CountingPolicy):
    epsilon: float = 0.1  # probability of a uniformly random arm at each step

    def __post_init__(self):
        if not 0.0 <= self.epsilon <= 1.0:
            raise ValueError(f"epsilon must lie in [0, 1], got {self.epsilon}")

    @property
    def name(self) -> str:
        return f"ε-greedy (ε={self.epsilon:g})"

    def choose(self, rng: np.random.Generator) -> int:
        if rng.random() < self.epsilon:
            return int(rng.integers(len(self.values)))
        best = np.flatnonzero(self.values == self.values.max())
        return int(best[rng.integers(best.size)])  # ties broken at random


@dataclass
class UCB1(_CountingPolicy):
    c: float = 1.0  # 1 is Auer et al.'s UCB1: Q + sqrt(2 ln t / N)

    def __post_init__(self):
        uct_score(0.0, 1, 1, self.c, "ucb1")  # validates c

    @property
    def name(self) -> str:
        return "UCB1" if self.c == 1.0 else f"UCB1 (c={self.c:g})"

    def choose(self, rng: np.random.Generator) -> int:
        return select_index(uct_score(self.values, self.counts, self.t, self.c, "ucb1"), "argmax")


@dataclass
class UCTPolicy(_CountingPolicy):
    c: float = OFFICIAL_C      # exploration constant (0.5 in the official RCTS code)
    variant: str = "official"  # a kbvqa.search.uct variant: paper, official, serts, ucb1
    how: str = "argmax"        # "argmax" (papers) or "sample" (official RCTS code)

    def __post_init__(self):
        uct_score(0.0, 1, 1, self.c, self.variant)  # validates c and variant
        select_index([0.0], self.how)                # validates the rule

    @property
    def name(self) -> str:
        return f"UCT {self.variant} {self.how} (c={self.c:g})"

    def choose(self, rng: np.random.Generator) -> int:
        scores = uct_score(self.values, self.counts, self.t, self.c, self.variant)
        return select_index(scores, self.how, rng)


@dataclass(frozen=True)
class BanditRun:
    choices: np.ndarray  # arm played at each step, shape [steps]
    rewards: np.ndarray  # reward received at each step, shape [steps]
    regret: np.ndarray   # cumulative pseudo-regret sum_{s<=t} (mu* - mu_{a_s}), shape [steps]


def run_bandit(policy, env, steps: int, seed: int = 0) -> BanditRun:
    """Play ``steps`` rounds of ``policy`` (copied, then reset) on ``env``; repeatable by seed."""
    if int(steps) != steps or steps < 1:
        raise ValueError(f"steps must be a positive integer, got {steps}")
    policy = copy.deepcopy(policy)
    policy.reset(env.n_arms)
    env_rng, policy_rng = (np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(2))
    choices = np.zeros(int(steps), dtype=int)
    rewards = np.zeros(int(steps))
    for t in range(int(steps)):
        arm = policy.choose(policy_rng)
        reward = env.pull(arm, env_rng)
        policy.update(arm, reward)
        choices[t], rewards[t] = arm, reward
    gaps = env.best_mean - np.asarray(env.means)
    return BanditRun(choices, rewards, np.cumsum(gaps[choices]))


def regret_curves(policies, env, steps: int, seeds=range(10), progress: bool = True) -> dict:
    """Cumulative pseudo-regret of each policy for each seed: ``{name: array [n_seeds, steps]}``.

    ``policies`` is a dict ``{label: policy}`` or a list of policies (labelled by ``.name``).
    """
    if not isinstance(policies, dict):
        policies = {p.name: p for p in policies}
    seeds = list(seeds)
    if not policies or not seeds:
        raise ValueError("regret_curves needs at least one policy and one seed")
    from tqdm.auto import tqdm  # a widget in notebooks: no stderr text in the rendered chapter

    bar = tqdm(total=len(policies) * len(seeds), desc="bandit runs", disable=not progress_enabled(progress),
               mininterval=0.5)
    curves = {}
    for label, policy in policies.items():
        rows = []
        for seed in seeds:
            rows.append(run_bandit(policy, env, steps, seed).regret)
            bar.update(1)
        curves[label] = np.stack(rows)
    bar.close()
    return curves
