"""Tree search over retrieval choices: UCT scores and selection, bandits, trees, RCTS, SeRTS.

This package starts with the UCT rule (``uct``) and its bandit background (``bandits``); the tree,
backpropagation, RCTS and SeRTS modules are added by other chapters and append their exports
here. Leaves out: model calls and rewards (``kbvqa.models``, ``kbvqa.rewards``).
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
# Tree/backprop (tree.py), RCTS (rcts.py) and SeRTS (serts.py) exports are appended below by
# their authors.
from kbvqa.search.rcts import RCTSConfig, RCTSResult, RolloutRecord, SearchState, rcts_search  # noqa: E402
from kbvqa.search.rcts_baselines import icl_random, vanilla_rag, zero_shot  # noqa: E402
from kbvqa.search.rcts_prompts import CallCounter, MCPromptBuilder  # noqa: E402
from kbvqa.search.tree import (  # noqa: E402
    BACKPROP_RULES,
    Node,
    backprop_mean,
    backprop_official,
    backprop_rcts,
    tree_to_records,
)

__all__ += [
    "BACKPROP_RULES", "CallCounter", "MCPromptBuilder", "Node", "RCTSConfig", "RCTSResult", "RolloutRecord",
    "SearchState", "backprop_mean", "backprop_official", "backprop_rcts", "icl_random", "rcts_search",
    "tree_to_records", "vanilla_rag", "zero_shot",
]
