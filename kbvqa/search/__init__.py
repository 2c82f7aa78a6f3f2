"""Tree search over retrieval choices: UCT scores and selection, bandits, trees, RCTS, SeRTS.

This package starts with the UCT rule (``uct``) and its bandit background (``bandits``); the tree,
backpropagation, RCTS and SeRTS modules are added by other chapters and append their exports
here. Leaves out: model calls and rewards (``kbvqa.models``, ``kbvqa.reag.rewards``).
"""
from kbvqa.search.bandits import (
    UCB1,
    BanditRun,
    BernoulliBandit,
    EpsilonGreedy,
    GaussianBandit,
    UCTPolicy,
    gaussian_testbed,
    regret_curves,
    run_bandit,
)
from kbvqa.search.uct import (
    OFFICIAL_C,
    OFFICIAL_EPS,
    OFFICIAL_ROOT_UCT,
    SELECTION_RULES,
    UCT_VARIANTS,
    exploration_bonus,
    exploration_term,
    select_child,
    select_index,
    selection_probabilities,
    uct_score,
)

__all__ = [
    "UCB1",
    "BanditRun",
    "BernoulliBandit",
    "EpsilonGreedy",
    "GaussianBandit",
    "UCTPolicy",
    "gaussian_testbed",
    "regret_curves",
    "run_bandit",
    "OFFICIAL_C",
    "OFFICIAL_EPS",
    "OFFICIAL_ROOT_UCT",
    "SELECTION_RULES",
    "UCT_VARIANTS",
    "exploration_bonus",
    "exploration_term",
    "select_child",
    "select_index",
    "selection_probabilities",
    "uct_score",
]
