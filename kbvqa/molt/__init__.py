"""MOLT: candidates from coarse + fused retrieval, then a one-pass weak-to-strong ladder tournament.

Modules: ``candidates`` (§3.1, App. A, Eq. 3-5 / 12-15), ``ladder`` (Eq. 6-7: schedules and the
three reranking prompts), ``run`` (one-pass, iterative, one-shot, with costs), ``sft`` (§3.2.1),
``rewards`` (Eq. 8-11, App. D), ``grpo`` (the tasks GRPO trains on; the trainer is
``kbvqa.rl.grpo_train`` with ``molt_grpo_rewards()``), ``analysis`` (recall curves, a perfect
comparator, the schedule's exact effect), ``experiment`` (the training experiment's settings,
evaluation sets, scripted judges and evaluators), ``results`` (Tab. 5/6 analogues), ``paper`` (every
number we quote from the paper). Inside this package "Eq. 9" means MOLT Eq. 9.
"""
from kbvqa.molt.candidates import CandidateConfig, CandidatePipeline, CandidateSet
from kbvqa.molt.grpo import MOLTTask, tasks_from_examples
from kbvqa.molt.ladder import ORDERS, Candidate, ladder_schedule, one_shot_prompt, pairwise_prompt, student_prompt
from kbvqa.molt.rewards import MOLTRewardConfig, molt_grpo_rewards, molt_reward
from kbvqa.molt.run import run_iterative, run_one_pass, run_one_shot
from kbvqa.molt.sft import SFTDataConfig, build_sft_example, build_sft_set

__all__ = ["ORDERS", "Candidate", "CandidateConfig", "CandidatePipeline", "CandidateSet", "MOLTRewardConfig",
           "MOLTTask", "SFTDataConfig", "build_sft_example", "build_sft_set", "ladder_schedule", "molt_grpo_rewards",
           "molt_reward", "one_shot_prompt", "pairwise_prompt", "run_iterative", "run_one_pass", "run_one_shot",
           "student_prompt", "tasks_from_examples"]

# What the chapters use beyond the core API: derivations by hand, paper numbers, committed results.
from kbvqa.molt.analysis import (  # noqa: E402
           ComparatorVLM,
           comparison_error,
           defender_win_share,
           gold_ranks,
           gold_win_rates,
           ladder_survival,
           recall_curves,
           role_survival,
           rounds_played,
)
from kbvqa.molt.candidates import (  # noqa: E402
           candidate_sets,
           doc_image_of,
           format_wiki,
           ground_crop,
           model_extractor,
           model_grounder,
           oracle_extractor,
           pipeline_for,
)
from kbvqa.molt.candidates import load_results as load_candidate_results  # noqa: E402  (chapter 25's committed run)
from kbvqa.molt.experiment import (  # noqa: E402
           ERRORS,
           MOLTExperimentConfig,
           eval_sets,
           evaluate_one_pass,
           evaluate_one_shot,
           grpo_tasks,
           item_schedule,
           judge_view,
           scripted_records,
)
from kbvqa.molt.ladder import query_seed  # noqa: E402  (the random schedule's per-query seed)
from kbvqa.molt.paper import PAPER_RECALL  # noqa: E402
from kbvqa.molt.results import live_agreement, load_records, load_results, summarise_row, tab5, tab6  # noqa: E402
from kbvqa.molt.rewards import chain_validity, difficulty_table  # noqa: E402
from kbvqa.molt.run import VisionCounter, transcript_text  # noqa: E402
from kbvqa.molt.sft import oracle_teacher  # noqa: E402

__all__ += ["ERRORS", "ComparatorVLM", "MOLTExperimentConfig", "PAPER_RECALL", "VisionCounter", "candidate_sets",
            "chain_validity", "comparison_error", "defender_win_share", "difficulty_table", "doc_image_of",
            "eval_sets", "evaluate_one_pass", "evaluate_one_shot", "format_wiki", "gold_ranks", "gold_win_rates",
            "ground_crop", "grpo_tasks", "item_schedule", "judge_view", "ladder_survival",
            "live_agreement", "load_candidate_results", "load_records", "load_results", "model_extractor",
            "model_grounder", "oracle_extractor", "oracle_teacher", "pipeline_for", "query_seed", "recall_curves",
            "role_survival", "rounds_played", "scripted_records", "summarise_row", "tab5", "tab6", "transcript_text"]

# Shared pieces the chapters use with MOLT, re-exported so that a chapter imports one package (issue #16);
# their home stays where it is: the ladder transcript's parser (``kbvqa.parsers``), the toy views
# (``kbvqa.prompts.formats``), the SFT and GRPO trainers (``kbvqa.rl``).
from kbvqa.parsers import TournamentRound, parse_tournament  # noqa: E402
from kbvqa.prompts.formats import view_ref  # noqa: E402
from kbvqa.rl import GRPOConfig, SFTConfig, grpo_train, sft_train  # noqa: E402

__all__ += ["GRPOConfig", "SFTConfig", "TournamentRound", "grpo_train", "parse_tournament", "sft_train", "view_ref"]
