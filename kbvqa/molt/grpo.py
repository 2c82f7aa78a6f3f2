"""MOLT's RL stage (§3.2.2): the tasks GRPO trains the ladder student on.

A ``MOLTTask`` is a prompt (the Table 14 chat) with its schedule and ground-truth id; SFT examples
(``kbvqa.molt.sft``) carry both in their meta (``tasks_from_examples``). Training is the shared
trainer with MOLT's rewards (Eq. 8-11)::

    grpo_train(vlm, [t.prompt for t in tasks], tasks, GRPOConfig(...), **molt_grpo_rewards())

which returns one curve per reward (``format_reward``, ``process_reward``, ``result_reward``) and
the total (Fig. 3 analogue). Leaves out: the trainer (``kbvqa.rl.grpo``), the rewards
(``kbvqa.molt.rewards``), the SFT cold start (``kbvqa.rl.sft``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["MOLTTask", "tasks_from_examples"]


@dataclass(frozen=True)
class MOLTTask:
    prompt: list                 # the Table 14 chat
    schedule: tuple[str, ...]    # order of play (seed first)
    gold_id: str                 # the ground-truth candidate id


def tasks_from_examples(examples: Sequence) -> list[MOLTTask]:
    """``MOLTTask``s from SFT ``Example``s (their meta holds the schedule and the gold id)."""
    return [MOLTTask(e.prompt, tuple(e.meta["schedule"]), str(e.meta["gold_id"])) for e in examples]
