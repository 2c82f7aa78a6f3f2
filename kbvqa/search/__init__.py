"""What RCTS and SeRTS share: UCT scores and child selection (``uct``) and its bandit background (``bandits``).

Leaves out: the searches themselves (``kbvqa.rcts.mcts_hr``, ``kbvqa.serts.search``), model calls.
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
