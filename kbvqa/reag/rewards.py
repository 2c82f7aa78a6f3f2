"""ReAG's rule-based rewards for GRPO (ReAG Sec. 3.4, Eq. 9, and supplement B).

    R_i = gamma * R_task(o_i) + delta * R_fmt(o_i)           gamma = 1.0, delta = 0.2   (Eq. 9)

R_fmt is 1 when the completion is exactly ``<think>...</think><answer>...</answer>``
(``kbvqa.parsers.check_think_answer_format``). R_task judges only the final answer, extracted with
ReAG's chain (``kbvqa.parsers.parse_think_answer``), by the rule-based judge of supplement B
(``kbvqa.metrics.answers.answer_correct``: normalised exact match, Psi_num for numbers, item IoU
for multi-answer questions). Two cases the paper leaves open are fixed there: an interval predicted
for a scalar gold is right only if it is the gold point itself; a prediction without any digit
scores 0. The scalar tolerance is absolute (0.1) as in the supplement's Psi_num, while InfoSeek's
official scorer widens a scalar gold by +/-10 %.

What this file leaves out: the MOLT, SeRTS and RCTS rewards (they reuse ``kbvqa.parsers``).
"""
from __future__ import annotations

from collections.abc import Sequence

from kbvqa.data.schema import Query
from kbvqa.metrics.answers import DEFAULT_CONFIG, ReAGRewardConfig, answer_correct, query_gold
from kbvqa.parsers import check_think_answer_format, parse_think_answer


def task_reward(completion: str, answers: str | Sequence[str], answer_type: str = "string",
                answer_range: Sequence[float] | None = None,
                config: ReAGRewardConfig = DEFAULT_CONFIG) -> float:
    """R_task: 1.0 if the answer extracted from a raw completion is right, else 0.0."""
    prediction = parse_think_answer(completion).answer
    return float(answer_correct(prediction, answers, answer_type, answer_range, config))


def format_reward(completion: str) -> float:
    """R_fmt: 1.0 for the exact ``<think>...</think><answer>...</answer>`` template, else 0.0."""
    return float(check_think_answer_format(completion))


def reag_reward(completion: str, answers: str | Sequence[str], answer_type: str = "string",
                answer_range: Sequence[float] | None = None,
                config: ReAGRewardConfig = DEFAULT_CONFIG) -> float:
    """R = gamma * R_task + delta * R_fmt (Eq. 9): one of 0, 0.2, 1.0, 1.2 with the defaults.

    Appendix: ReAG | Eq. 9 | tests/test_rewards.py::test_eq9_weights | reag-eq9
    """
    return (config.gamma * task_reward(completion, answers, answer_type, answer_range, config)
            + config.delta * format_reward(completion))


def reag_reward_for_query(completion: str, query: Query,
                          config: ReAGRewardConfig = DEFAULT_CONFIG) -> float:
    """``reag_reward`` with the gold answers (``query_gold``), type and range of a ``Query``."""
    return reag_reward(completion, query_gold(query), query.answer_type, query.answer_range, config)


def reag_rewards(completions: Sequence[str], queries: Sequence[Query],
                 config: ReAGRewardConfig = DEFAULT_CONFIG) -> list[float]:
    """Rewards for a batch of completions, one query each (a GRPO group repeats the query)."""
    if len(completions) != len(queries):
        raise ValueError(f"{len(completions)} completions for {len(queries)} queries")
    return [reag_reward_for_query(c, q, config) for c, q in zip(completions, queries)]


def reag_grpo_rewards(config: ReAGRewardConfig = DEFAULT_CONFIG) -> dict:
    """ReAG's reward functions for ``kbvqa.rl.grpo_train`` (keyword arguments): R_task as
    ``accuracy_reward`` (the curve of ReAG Fig. 5) and R_fmt as ``format_reward``, weighted gamma and
    delta, so the total is Eq. 9. Each task is the prompt's ``Query``."""
    def accuracy(texts, queries):
        return [task_reward(x, query_gold(q), q.answer_type, q.answer_range, config) for x, q in zip(texts, queries)]

    def fmt(texts, queries):
        return [format_reward(x) for x in texts]

    return {"reward_funcs": {"accuracy_reward": accuracy, "format_reward": fmt},
            "reward_weights": {"accuracy_reward": config.gamma, "format_reward": config.delta}}
