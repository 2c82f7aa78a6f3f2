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
from kbvqa.rcts.context_kb import answer_letters, contexts_of  # noqa: E402
from kbvqa.rcts.context_kb import load_results as load_context_results  # noqa: E402  (chapter 10's committed run)
from kbvqa.rcts.contexts import check_prompt, context_prompt, judge_prediction, score_verdicts  # noqa: E402
from kbvqa.rcts.diagnostics import answer_text_table, named_answer, reward_correctness, shows_answer  # noqa: E402
from kbvqa.rcts.mcts_hr import SearchState, expansion_probabilities  # noqa: E402
from kbvqa.rcts.paper import PAPER_TABLE6  # noqa: E402
from kbvqa.rcts.results import (  # noqa: E402
           RESULTS_DIR,
           accuracy_table,
           group_table,
           live_agreement,
           load_results,
           load_tree,
           read_runs,
)
from kbvqa.rcts.runs import ROWS, SWEEP_BASE, run_row  # noqa: E402
from kbvqa.rcts.settings import load_retrieval, scienceqa_rows, toy_setting  # noqa: E402
from kbvqa.rcts.tree import best_leaf, best_path_official, eq10_update  # noqa: E402

__all__ += ["PAPER_TABLE6", "RESULTS_DIR", "ROWS", "SWEEP_BASE", "SearchState", "accuracy_table", "answer_letters",
            "answer_text_table", "best_leaf", "best_path_official", "check_prompt", "context_prompt", "contexts_of",
            "eq10_update", "named_answer",
            "expansion_probabilities", "group_table", "judge_prediction", "live_agreement", "load_context_results",
            "load_results", "load_retrieval", "load_tree", "read_runs", "reward_correctness", "run_row",
            "scienceqa_rows", "score_verdicts", "shows_answer", "toy_setting"]

# Shared pieces the chapters use with RCTS, re-exported so that a chapter imports one package (issue #16);
# their home stays where it is: the prompt files (``kbvqa.prompts``), the run-file format (``kbvqa.experiments.runs``).
from kbvqa.experiments.runs import read_run  # noqa: E402
from kbvqa.prompts import load_prompt  # noqa: E402

__all__ += ["load_prompt", "read_run"]
