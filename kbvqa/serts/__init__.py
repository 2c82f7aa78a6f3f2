"""SeRTS (Hu et al., 2024): self-rewarding tree search over queries, on a BM25 literature index.

Modules: ``prompts`` (Tables 1, 2, 10, 11 and their parsers), ``search`` (§3.1, Alg. 1, and the
self-reflection baseline of App. C.3), ``oracle`` (scripted stand-ins for the two models),
``evaluate`` (Tab. 3/4/9 measures), ``analysis`` (why a search helps or not, from the records),
``experiment`` (the experiments' setups, settings, models and one chunk of
records, rerun live by chapters 17 and 18), ``results`` (the committed tables), ``paper`` (every number
we quote from the paper). UCT is shared (``kbvqa.search``), BM25 too (``kbvqa.retrieval.bm25``), and
PPO on SeRTS trajectories is ``kbvqa.rl.ppo``.
"""
from kbvqa.serts.oracle import noisy_reformulator, rubric_evaluator
from kbvqa.serts.prompts import answer_prompt, evaluator_prompt, proposer_prompt, vlm_generator
from kbvqa.serts.search import SeRTSConfig, SeRTSResult, run_search, run_self_reflection, run_serts

__all__ = ["SeRTSConfig", "SeRTSResult", "answer_prompt", "evaluator_prompt", "noisy_reformulator",
           "proposer_prompt", "rubric_evaluator", "run_search", "run_self_reflection", "run_serts", "vlm_generator"]

# What the chapters use beyond the core API: derivations by hand, paper numbers, committed results.
from kbvqa.serts.analysis import rank_correlation, search_diagnostics  # noqa: E402
from kbvqa.serts.evaluate import answer_rouge, bm25_baseline, retrieval_scores, toy_literature_task, write_answers  # noqa: E402
from kbvqa.serts.prompts import parse_evaluator_output, parse_proposer_output  # noqa: E402
from kbvqa.serts.results import (  # noqa: E402
           METHODS,
           live_agreement,
           load_records,
           load_results,
           table,
)
from kbvqa.serts.search import SeRTSNode  # noqa: E402

__all__ += ["METHODS", "SeRTSNode", "answer_rouge", "bm25_baseline", "live_agreement", "load_records", "load_results",
            "parse_evaluator_output", "parse_proposer_output", "rank_correlation",
            "retrieval_scores", "search_diagnostics", "table", "toy_literature_task", "write_answers"]

# Shared pieces the chapters use with SeRTS, re-exported so that a chapter imports one package (issue #16);
# their home stays where it is: UCT (``kbvqa.search``).
from kbvqa.search import uct_score  # noqa: E402

__all__ += ["uct_score"]
