"""MOLT's RL stage (§3.2.2): GRPO with the composite reward of Eq. 8-11, on the shared GRPO code.

``kbvqa.rl.grpo`` scores ReAG's answers; MOLT's samples are scored by ``molt_reward`` instead.
This module only swaps the scoring step: it samples G completions per prompt in one ``generate``
call (as ``kbvqa.rl.grpo.sample_groups``), scores each with Eq. 8 against the prompt's schedule
and ground-truth id, builds group-normalised advantages (``grpo_loss.group_advantages``), and
hands the batch to ``kbvqa.rl.grpo.policy_update`` (the clipped token loss, unchanged). The
``Rollouts`` record keeps R_res as its task reward and R_fmt as its format reward; R_proc and
the total come back separately so the chapter can plot process and result rewards per step
(Fig. 3 analogue).

A ``MOLTTask`` is a prompt (the Table 14 chat) with its schedule and ground-truth id; SFT examples
(``tournament_sft``) carry both in their meta (``tasks_from_examples``). The GRPO settings are
``kbvqa.rl.GRPOConfig`` (its gamma/delta, ReAG's weights, are not used here), the reward weights a
``MOLTRewardConfig``.

Leaves out: the loss maths and the update (``kbvqa.rl``), the SFT cold start (``kbvqa.rl.sft``).
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch

from kbvqa.config import seed_everything
from kbvqa.rl.common import build_optimizer, prepare_trainable
from kbvqa.rl.grpo import GRPOConfig, Rollouts, policy_update
from kbvqa.rl.grpo_loss import group_advantages
from kbvqa.tournament_rewards import MOLTRewardConfig, molt_reward

__all__ = ["MOLTGRPOCurves", "MOLTRollouts", "MOLTTask", "molt_grpo_step", "molt_grpo_train", "sample_molt_groups",
           "tasks_from_examples"]


@dataclass(frozen=True)
class MOLTTask:
    prompt: list                 # the Table 14 chat
    schedule: tuple[str, ...]    # order of play (seed first)
    gold_id: str                 # the ground-truth candidate id


def tasks_from_examples(examples: Sequence) -> list[MOLTTask]:
    """``MOLTTask``s from SFT ``Example``s (their meta holds the schedule and the gold id)."""
    return [MOLTTask(e.prompt, tuple(e.meta["schedule"]), str(e.meta["gold_id"])) for e in examples]


@dataclass
class MOLTRollouts:
    rollouts: Rollouts           # shared record: task_rewards = R_res, format_rewards = R_fmt
    process_rewards: torch.Tensor   # [B*G] R_proc


def sample_molt_groups(vlm, tasks: Sequence[MOLTTask], config: GRPOConfig,
                       reward_config: MOLTRewardConfig | None = None, seed: int | None = None) -> MOLTRollouts:
    """G samples per task in one ``generate`` call, scored by Eq. 8, with Eq. 8 (GRPO) advantages."""
    if not tasks:
        raise ValueError("need at least one task")
    reward_config = reward_config or MOLTRewardConfig()
    g = config.group_size
    gen = vlm.generate([t.prompt for t in tasks], n=g, max_new_tokens=config.max_new_tokens,
                       temperature=config.temperature, top_p=config.top_p, seed=seed, batch_size=len(tasks),
                       details=True)
    texts = [t for row in gen.texts for t in row]
    ids = [list(i) for row in gen.token_ids for i in row]
    flat = [t for t in tasks for _ in range(g)]
    scored = [molt_reward(text, task.schedule, task.gold_id, reward_config) for text, task in zip(texts, flat)]
    res = torch.tensor([float(s.res) for s in scored], dtype=torch.float32)
    fmt = torch.tensor([float(s.fmt) for s in scored], dtype=torch.float32)
    proc = torch.tensor([float(s.proc) for s in scored], dtype=torch.float32)
    total = torch.tensor([float(s.total) for s in scored], dtype=torch.float32)
    advantages = group_advantages(total, g, eps=config.advantage_eps, std=config.advantage_std)
    rollouts = Rollouts([t.prompt for t in flat], [None] * len(flat), texts, ids, res, fmt, total, advantages)
    return MOLTRollouts(rollouts, proc)


@dataclass
class MOLTGRPOCurves:
    """One point per optimiser step (means over the step's completions)."""

    format_reward: list[float] = field(default_factory=list)
    process_reward: list[float] = field(default_factory=list)
    result_reward: list[float] = field(default_factory=list)
    reward: list[float] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)
    zero_spread_groups: list[float] = field(default_factory=list)


def molt_grpo_step(vlm, optimizer, tasks: Sequence[MOLTTask], config: GRPOConfig,
                   reward_config: MOLTRewardConfig | None = None, params=None, seed: int | None = None) -> dict:
    """One GRPO step on ``tasks``; returns the step's mean rewards and loss."""
    params = params if params is not None else [p for p in vlm.model.parameters() if p.requires_grad]
    vlm.model.eval()
    sampled = sample_molt_groups(vlm, tasks, config, reward_config, seed=seed)
    r = sampled.rollouts
    loss, _ = policy_update(vlm, optimizer, r, config, params)
    groups = r.rewards.view(-1, config.group_size)
    return {"format_reward": float(r.format_rewards.mean()), "process_reward": float(sampled.process_rewards.mean()),
            "result_reward": float(r.task_rewards.mean()), "reward": float(r.rewards.mean()), "loss": loss,
            "zero_spread_groups": float((groups == groups[:, :1]).all(dim=1).float().mean())}


def molt_grpo_train(vlm, tasks: Sequence[MOLTTask], config: GRPOConfig | None = None,
                    reward_config: MOLTRewardConfig | None = None) -> MOLTGRPOCurves:
    """``config.steps`` GRPO steps on ``vlm`` (trained in place), ``prompts_per_step`` tasks each
    drawn from seeded reshuffles of ``tasks``; returns the per-step curves."""
    config = config or GRPOConfig()
    if not tasks:
        raise ValueError("need at least one task")
    seed_everything(config.seed)
    params = prepare_trainable(vlm, config.lora, config.freeze_vision)
    optimizer, scheduler = build_optimizer(params, config.lr, 0.0, config.warmup_steps, config.steps, config.schedule)
    rng, order, curves = random.Random(f"molt-grpo:{config.seed}"), [], MOLTGRPOCurves()
    for step in range(config.steps):
        batch = []
        while len(batch) < min(config.prompts_per_step, len(tasks)):
            if not order:
                order = list(range(len(tasks)))
                rng.shuffle(order)
            batch.append(order.pop())
        stats = molt_grpo_step(vlm, optimizer, [tasks[i] for i in batch], config, reward_config, params=params,
                               seed=config.seed * 100_003 + step)
        scheduler.step()
        for name, value in stats.items():
            getattr(curves, name).append(value)
    return curves
