"""ReAG: multi-level retrieval, a critic that filters passages by P(Yes), and SFT + GRPO of the generator.

Modules: ``critic`` (§3.2, Eq. 4), ``kbvqa.reag.critic_train`` / ``kbvqa.reag.critic_eval`` (supp. A, Tab. 6, Fig. 7),
``cold_start`` and ``traces`` (§3.3, supp. D: cold-start data and teacher traces), ``rewards``
(Eq. 9 on the judge of supp. B, ``kbvqa.metrics.answers``), ``results`` (the ablation ladder,
Tab. 4), ``ladder`` and ``ladder_train`` (the ladder's rungs run and its generators trained, chapter 24),
``paper`` (every number we quote from the paper). Retrieval is shared
(``kbvqa.retrieval.multilevel``), and so are the trainers (``kbvqa.rl``: ReAG passes
``reag_grpo_rewards()`` to ``grpo_train``).
"""
from kbvqa.reag.cold_start import cold_start_example, cold_start_examples, cold_start_trace
from kbvqa.reag.critic import Critic, CriticConfig, critic_prompt, generator_prompt, keep_passages
from kbvqa.reag.rewards import format_reward, reag_grpo_rewards, reag_reward, reag_rewards, task_reward
from kbvqa.reag.traces import grpo_prompts, load_trace_writer, relevance_eval, trace_writer_prompt, write_traces

__all__ = ["Critic", "CriticConfig", "cold_start_example", "cold_start_examples", "cold_start_trace",
           "critic_prompt", "format_reward", "generator_prompt", "grpo_prompts", "keep_passages",
           "load_trace_writer", "reag_grpo_rewards", "reag_reward", "reag_rewards", "relevance_eval", "task_reward",
           "trace_writer_prompt", "write_traces"]

# What the chapters use beyond the core API: derivations by hand, paper numbers, committed results.
from kbvqa.reag.critic import CLI_THRESHOLD, REAG_THRESHOLD  # noqa: E402
from kbvqa.reag.critic_eval import (  # noqa: E402
           critic_items,
           critic_table,
           evidence_items,
           generator_judge,
           heldout_critic_items,
           labels_of,
           pipeline_kinds,
           pipeline_separation,
           threshold_sweep,
)
from kbvqa.reag.critic_train import CriticTrainConfig, critic_training_examples, train_critic  # noqa: E402
from kbvqa.reag.ladder import critic_agreement, real_subset_ladder  # noqa: E402
from kbvqa.reag.ladder_train import (  # noqa: E402
           cold_started_policy,
           committed_model,
           shipped_generators,
           shipped_model,
)
from kbvqa.reag.paper import PAPER, paper_rows  # noqa: E402
from kbvqa.reag.results import (  # noqa: E402
           CHEAP_RUNGS,
           RESULTS_DIR,
           RUNGS,
           live_agreement,
           load_records,
           load_results,
           summarise,
           table_rows,
)
from kbvqa.reag.traces import cold_start_examples_for, stated_relevance, trace_follows_label  # noqa: E402

__all__ += ["CHEAP_RUNGS", "CLI_THRESHOLD", "CriticTrainConfig", "PAPER", "REAG_THRESHOLD", "RESULTS_DIR", "RUNGS",
            "cold_start_examples_for", "cold_started_policy", "committed_model", "critic_agreement", "critic_items",
            "critic_table", "critic_training_examples", "evidence_items", "generator_judge", "heldout_critic_items",
            "labels_of", "live_agreement", "load_records", "load_results", "paper_rows", "pipeline_kinds",
            "pipeline_separation", "real_subset_ladder", "shipped_generators", "shipped_model", "stated_relevance",
            "summarise", "table_rows", "threshold_sweep", "trace_follows_label", "train_critic"]

# Shared pieces the chapters use with ReAG, re-exported so that a chapter imports one package (issue #16);
# their home stays where it is: multi-level retrieval (§3.1, ``kbvqa.retrieval``), the answer chain of
# supp. B (``kbvqa.parsers``), ranking AUC (``kbvqa.metrics``), the SFT and GRPO trainers (§3.3, ``kbvqa.rl``).
from kbvqa.metrics import separation_auc  # noqa: E402
from kbvqa.parsers import parse_think_answer  # noqa: E402
from kbvqa.retrieval import (  # noqa: E402
           MultilevelConfig,
           MultilevelRetriever,
           box_iou,
           crop_to_box,
           evaluate_multilevel,
           expand_box,
           extract_subject,
           get_grounder,
           merge_by_max,
           score_scales,
           subject_rule,
)
from kbvqa.rl import (  # noqa: E402
           GRPOConfig,
           SFTConfig,
           answer_token_mask,
           group_advantages,
           grpo_loss,
           grpo_train,
           sample_groups,
           sft_batch_loss,
           sft_loss,
           sft_train,
           split_tokens,
)

__all__ += ["GRPOConfig", "MultilevelConfig", "MultilevelRetriever", "SFTConfig", "answer_token_mask", "box_iou",
            "crop_to_box", "evaluate_multilevel", "expand_box", "extract_subject", "get_grounder", "group_advantages",
            "grpo_loss", "grpo_train", "merge_by_max", "parse_think_answer", "sample_groups", "score_scales",
            "separation_auc", "sft_batch_loss", "sft_loss", "sft_train", "split_tokens", "subject_rule"]
