"""RCTS (Yang et al., 2025): reasoning contexts and MCTS-HR re-ranking of in-context examples.

Modules: ``contexts`` / ``context_kb`` (§3.2: reasoning contexts with self-consistent evaluation),
``prompts`` (App. C), ``tree`` (nodes and backups, Eq. 10), ``rewards`` (Eq. 7-9), ``mcts_hr``
(§3.4, App. A: the search), ``baselines`` (Tab. 2-4 rows), ``runs`` (the experiment rows),
``settings`` (what they run on: toy world, ScienceQA), ``results`` / ``diagnostics`` (tables and
why), ``paper`` (every number we quote from the paper).
Inside this package "Eq. 10" means RCTS Eq. 10. UCT itself is shared: ``kbvqa.search``.
"""
from kbvqa.rcts.baselines import icl_random, vanilla_rag, zero_shot
from kbvqa.rcts.contexts import ReasoningContextConfig, build_reasoning_kb
from kbvqa.rcts.mcts_hr import RCTSConfig, RCTSResult, rcts_search
from kbvqa.rcts.prompts import CallCounter, MCPromptBuilder
from kbvqa.rcts.tree import BACKPROP_RULES, Node, backprop_mean, backprop_official, backprop_rcts, tree_to_records

__all__ = ["BACKPROP_RULES", "CallCounter", "MCPromptBuilder", "Node", "RCTSConfig", "RCTSResult",
           "ReasoningContextConfig", "backprop_mean", "backprop_official", "backprop_rcts", "build_reasoning_kb",
           "icl_random", "rcts_search", "tree_to_records", "vanilla_rag", "zero_shot"]

# What the chapters use beyond the core API: derivations by hand, paper numbers, committed results.
from kbvqa.rcts.contexts import check_prompt, context_prompt, judge_prediction, score_verdicts  # noqa: E402
from kbvqa.rcts.diagnostics import reward_correctness, shows_answer  # noqa: E402
from kbvqa.rcts.mcts_hr import SearchState, expansion_probabilities  # noqa: E402
from kbvqa.rcts.paper import PAPER_TABLE6  # noqa: E402
from kbvqa.rcts.results import group_table, live_agreement, load_results, load_tree, read_runs  # noqa: E402
from kbvqa.rcts.runs import ROWS, SWEEP_BASE, run_row  # noqa: E402
from kbvqa.rcts.tree import best_leaf, best_path_official, eq10_update  # noqa: E402

__all__ += ["PAPER_TABLE6", "ROWS", "SWEEP_BASE", "SearchState", "best_leaf", "best_path_official", "check_prompt",
            "context_prompt", "eq10_update", "expansion_probabilities", "group_table", "judge_prediction",
            "live_agreement", "load_results", "load_tree", "read_runs", "reward_correctness", "run_row",
            "score_verdicts", "shows_answer"]
