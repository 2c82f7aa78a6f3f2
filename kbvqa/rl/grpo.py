"""GRPO steps on a VLM, written out in readable steps: one trainer, reward functions passed in.

Rewards are plugged in as TRL's ``GRPOTrainer(reward_funcs=...)``: ``reward_funcs`` maps a name
to a function ``(completions, tasks) -> [float, ...]`` (one reward per completion; ``tasks`` holds
what each prompt is scored against: a ``Query`` for ReAG, a ``MOLTTask`` for MOLT) and
``reward_weights`` gives each name's weight (default 1). The total reward is the weighted sum, and
``grpo_train`` returns one curve per reward name. ReAG passes R_task and R_fmt with gamma = 1,
delta = 0.2 (Eq. 9, ``kbvqa.reag.rewards.reag_grpo_rewards``); MOLT passes R_fmt, R_proc and R_res
(Eq. 8, ``kbvqa.molt.rewards.molt_grpo_rewards``).

One ``grpo_step`` on a batch of prompts (each with its task):

1. sample a group of G completions per prompt from the current policy, in ONE ``vlm.generate``
   call (``n=G``; the image of a prompt is encoded once);
2. score each completion with every reward function; R = sum_k w_k R_k;
3. group-normalised advantages (ReAG Eq. 8, ``grpo_loss.group_advantages``);
4. old log-probs of the sampled tokens under the sampling policy, detached (Eq. 7's denominator);
5. new log-probs with gradients, the clipped token loss with no KL (Eq. 6, ``grpo_loss.grpo_loss``),
   backward, gradient clipping, an optimiser step. With ``num_iterations > 1`` steps 5 repeat on
   the same samples (off-policy updates, where the ratio moves away from 1 and clipping bites).

ReAG never updates off-policy (one update per sample batch), so its ratio is always 1 and the loss
gradient is that of -A_i * log pi(o_t) / (number of tokens). With ``num_iterations == 1`` the old
log-probs are the new ones detached: the same numbers (same weights, dropout off because the model
stays in eval mode, as TRL's ``disable_dropout``), one forward pass saved -- TRL does the same.
Log-probs use the sampling temperature (TRL divides the logits by it too). The sampled token ids
are scored as generated (with their EOS), never re-tokenised from text.

Leaves out: the loss maths (``grpo_loss.py``), the rewards themselves (each paper's package),
vLLM, reference models and KL (beta = 0), reward models, multi-GPU. ReAG's scale: 128 prompts x 8
completions per batch, Adam, lr 1e-6, cosine schedule with 150 warm-up steps, no weight decay,
48 h on 32-64 A100s.
"""
from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch

from kbvqa.config import progress_enabled, seed_everything
from kbvqa.rl.common import (
    SCHEDULES,
    build_optimizer,
    check_checkpoint_every,
    check_checkpointing,
    check_micro_batch,
    check_positive_int,
    gradient_checkpointing,
    prepare_trainable,
    resolve_micro_batch,
    restore_training_state,
    training_state,
)
from kbvqa.rl.grpo_loss import NORMALISATIONS, STD_KINDS, group_advantages, grpo_loss


@dataclass
class GRPOConfig:
    """GRPO settings. Defaults suit the tiny cpu model; ReAG's values (or TRL's) are in comments."""

    group_size: int = 8                 # G completions per prompt (ReAG: 8)
    prompts_per_step: int = 4           # prompts per optimiser step (ReAG: 128)
    steps: int = 20                     # optimiser steps of grpo_train
    lr: float = 1e-5                    # peak learning rate (ReAG: 1e-6, Adam)
    warmup_steps: int = 0               # linear warm-up (ReAG: 150), then ``schedule``
    schedule: str = "constant"          # "constant" or "cosine" (ReAG: cosine)
    clip_eps: float = 0.2               # ratio clip 1 - eps (TRL default; ReAG states none, uses TRL)
    clip_eps_high: float | None = None  # upper clip 1 + eps_high (None: = clip_eps; DAPO: 0.28)
    num_iterations: int = 1             # updates per sample batch (ReAG/TRL: 1, always on-policy)
    normalise: str = "batch"            # token average: "batch" (TRL dapo), "group" (Eq. 6), "sequence"
    advantage_eps: float = 1e-4         # Eq. 8 denominator std + eps (TRL: 1e-4)
    advantage_std: str = "unbiased"     # "unbiased" (TRL), "biased", "none" (Dr. GRPO: centre only)
    max_new_tokens: int = 64            # completion length cap
    temperature: float = 1.0            # sampling temperature (TRL default 1.0)
    top_p: float = 1.0                  # nucleus sampling (1 = off)
    micro_batch_size: int | None | str = "auto"  # completions per forward/backward (None: all at once;
                                        # "auto": AUTO_MICRO_BATCH["grpo"] on CUDA unless normalise="group")
    gradient_checkpointing: bool | str = "auto"  # recompute activations in backward ("auto": on CUDA)
    max_grad_norm: float = 1.0          # gradient clipping (TRL default 1.0; 0 = off)
    lora: dict | None = None            # VLM.add_lora arguments; None trains the weights
    freeze_vision: bool = True          # ReAG keeps the vision encoder frozen (merger trains)
    seed: int = 0                       # prompt order, sampling and LoRA init repeat exactly
    progress: bool = True               # tqdm bar in grpo_train
    checkpoint_every: int = 0           # steps between calls of grpo_train's on_checkpoint (0: never)

    def __post_init__(self):
        if not isinstance(self.group_size, int) or isinstance(self.group_size, bool) or self.group_size < 2:
            raise ValueError(f"group_size must be an int >= 2 (advantages compare completions of one "
                             f"prompt), got {self.group_size!r}")
        check_positive_int(prompts_per_step=self.prompts_per_step, steps=self.steps,
                           num_iterations=self.num_iterations, max_new_tokens=self.max_new_tokens)
        check_micro_batch(self.micro_batch_size)
        check_checkpointing(self.gradient_checkpointing)
        check_checkpoint_every(self.checkpoint_every)
        if not self.lr > 0 or self.warmup_steps < 0 or self.max_grad_norm < 0:
            raise ValueError("need lr > 0, warmup_steps >= 0, max_grad_norm >= 0")
        if not 0 <= self.clip_eps < 1 or (self.clip_eps_high is not None and self.clip_eps_high < 0):
            raise ValueError(f"need 0 <= clip_eps < 1 and clip_eps_high >= 0, got {self.clip_eps}, "
                             f"{self.clip_eps_high}")
        if self.normalise not in NORMALISATIONS:
            raise ValueError(f"normalise must be one of {NORMALISATIONS}, got {self.normalise!r}")
        if self.normalise == "group" and isinstance(self.micro_batch_size, int):
            raise ValueError("normalise='group' needs whole groups in one pass: leave micro_batch_size None or 'auto'")
        if self.advantage_std not in STD_KINDS or self.advantage_eps < 0:
            raise ValueError(f"advantage_std must be one of {STD_KINDS} and advantage_eps >= 0")
        if not self.temperature > 0 or not 0 < self.top_p <= 1:
            raise ValueError("GRPO samples: need temperature > 0 and 0 < top_p <= 1")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")


RewardFunc = Callable[[list[str], list], list[float]]


def _weights(reward_funcs: Mapping[str, RewardFunc], reward_weights: Mapping[str, float] | None) -> dict:
    if not reward_funcs:
        raise ValueError("GRPO needs at least one reward function (reward_funcs={name: fn})")
    weights = dict(reward_weights or {})
    unknown = set(weights) - set(reward_funcs)
    if unknown or any(w < 0 for w in weights.values()):
        raise ValueError(f"reward_weights must be >= 0 and name reward functions, got {weights}")
    return {name: float(weights.get(name, 1.0)) for name in reward_funcs}


@dataclass
class Rollouts:
    """A batch of sampled groups, flat and ordered group by group (row = prompt * G + sample)."""

    prompts: list                 # the prompt of each row (repeated G times)
    tasks: list                   # what each row is scored against (a Query, a MOLTTask, ...)
    texts: list[str]              # decoded completions
    token_ids: list[list[int]]    # generated ids, EOS included when the model stopped
    rewards_by_key: dict          # name -> [B*G] tensor, one per reward function
    rewards: torch.Tensor         # [B*G] sum_k w_k R_k
    advantages: torch.Tensor      # [B*G] Eq. 8


def sample_groups(vlm, prompts: Sequence, tasks: Sequence, config: GRPOConfig,
                  reward_funcs: Mapping[str, RewardFunc], reward_weights: Mapping[str, float] | None = None,
                  seed: int | None = None) -> Rollouts:
    """Steps 1-3: G samples per prompt in one ``generate`` call, their rewards and advantages."""
    if len(prompts) != len(tasks) or not prompts:
        raise ValueError(f"need one task per prompt and at least one prompt, got {len(prompts)} "
                         f"prompts and {len(tasks)} tasks")
    weights = _weights(reward_funcs, reward_weights)
    g = config.group_size
    gen = vlm.generate(list(prompts), n=g, max_new_tokens=config.max_new_tokens,
                       temperature=config.temperature, top_p=config.top_p, seed=seed,
                       batch_size=len(prompts), details=True)
    texts = [t for row in gen.texts for t in row]
    ids = [list(i) for row in gen.token_ids for i in row]
    flat_tasks = [q for q in tasks for _ in range(g)]
    by_key = {name: torch.tensor([float(r) for r in fn(texts, flat_tasks)], dtype=torch.float32)
              for name, fn in reward_funcs.items()}
    rewards = sum(weights[name] * r for name, r in by_key.items())
    advantages = group_advantages(rewards, g, eps=config.advantage_eps, std=config.advantage_std)
    return Rollouts([p for p in prompts for _ in range(g)], flat_tasks, texts, ids, by_key, rewards, advantages)


@dataclass
class GRPOStepStats:
    """What one optimiser step saw (means over the batch's completions)."""

    loss: float
    rewards: dict                 # name -> mean of that reward function
    reward: float                 # mean total reward
    zero_spread_groups: float     # share of groups whose rewards are all equal (no signal)
    completion_tokens: float      # mean sampled length
    clip_fraction: float          # share of clipped tokens (0 when on-policy)


def _old_logprobs(vlm, rollouts: Rollouts, config: GRPOConfig, rows: list[range]) -> list[torch.Tensor]:
    """Step 4 for ``num_iterations > 1``: log-probs under the sampling policy, no gradients."""
    with torch.no_grad():
        return [vlm.completion_logprobs([rollouts.prompts[i] for i in r], [rollouts.token_ids[i] for i in r],
                                        temperature=config.temperature).logprobs for r in rows]


def policy_update(vlm, optimizer, rollouts: Rollouts, config: GRPOConfig, params) -> tuple[float, float]:
    """Step 5 (repeated ``num_iterations`` times): (summed loss, clip fraction) of the last pass."""
    n = len(rollouts.token_ids)
    micro = None if config.normalise == "group" else resolve_micro_batch(config.micro_batch_size, vlm, "grpo")
    size = micro or n
    rows = [range(s, min(n, s + size)) for s in range(0, n, size)]
    total_tokens = float(sum(len(i) for i in rollouts.token_ids))
    old = _old_logprobs(vlm, rollouts, config, rows) if config.num_iterations > 1 else None
    loss_value, clip = 0.0, 0.0
    for _ in range(config.num_iterations):
        optimizer.zero_grad(set_to_none=True)
        loss_value, clipped_tokens = 0.0, 0.0
        for k, r in enumerate(rows):
            scored = vlm.completion_logprobs([rollouts.prompts[i] for i in r],
                                             [rollouts.token_ids[i] for i in r], grad=True,
                                             temperature=config.temperature)
            old_lp = scored.logprobs.detach() if old is None else old[k]
            out = grpo_loss(scored.logprobs, old_lp, rollouts.advantages[list(r)].to(scored.logprobs.device),
                            scored.mask, config.clip_eps, config.clip_eps_high, config.normalise,
                            group_size=config.group_size,
                            num_tokens=max(total_tokens, 1.0) if config.normalise == "batch" else None)
            weight = len(r) / n if config.normalise == "sequence" else 1.0  # sequence: mean of row means
            (out.loss * weight).backward()
            loss_value += out.loss.item() * weight
            clipped_tokens += out.clip_fraction * out.num_tokens
        if config.max_grad_norm > 0:
            torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
        optimizer.step()
        clip = clipped_tokens / max(total_tokens, 1.0)
    return loss_value, clip


def grpo_step(vlm, optimizer, prompts: Sequence, tasks: Sequence, config: GRPOConfig,
              reward_funcs: Mapping[str, RewardFunc], reward_weights: Mapping[str, float] | None = None,
              params=None, seed: int | None = None) -> GRPOStepStats:
    """One GRPO step (steps 1-5 of the module docstring) on ``prompts`` with their ``tasks``.

    ``params`` are the parameters to clip (default: all trainable ones); ``seed`` fixes the samples.
    The model is left in eval mode (dropout off).
    """
    params = params if params is not None else [p for p in vlm.model.parameters() if p.requires_grad]
    vlm.model.eval()
    rollouts = sample_groups(vlm, prompts, tasks, config, reward_funcs, reward_weights, seed=seed)
    with gradient_checkpointing(vlm, config.gradient_checkpointing):
        loss, clip = policy_update(vlm, optimizer, rollouts, config, params)
    groups = rollouts.rewards.view(-1, config.group_size)
    return GRPOStepStats(
        loss=loss, rewards={name: float(r.mean()) for name, r in rollouts.rewards_by_key.items()},
        reward=float(rollouts.rewards.mean()),
        zero_spread_groups=float((groups == groups[:, :1]).all(dim=1).float().mean()),
        completion_tokens=sum(len(i) for i in rollouts.token_ids) / len(rollouts.token_ids),
        clip_fraction=clip)


@dataclass
class GRPOResult:
    """Curves of ``grpo_train``, one point per step: one per reward function (by its name, e.g.
    ReAG's ``accuracy_reward``, plotted in its Fig. 5), the total ``reward``, ``loss``,
    ``zero_spread_groups``, ``completion_tokens`` and ``lr``. ``result.name`` reads a curve."""

    curves: dict = field(default_factory=dict)

    def __getattr__(self, name):
        curves = self.__dict__.get("curves", {})
        if name in curves:
            return curves[name]
        raise AttributeError(name)

    def add(self, name: str, value: float) -> None:
        self.curves.setdefault(name, []).append(value)


def grpo_train(vlm, prompts: Sequence, tasks: Sequence, config: GRPOConfig | None = None,
               reward_funcs: Mapping[str, RewardFunc] | None = None,
               reward_weights: Mapping[str, float] | None = None, resume: dict | None = None,
               on_checkpoint=None) -> GRPOResult:
    """``config.steps`` GRPO steps on ``vlm`` (trained in place), each on ``prompts_per_step``
    prompts drawn from the pool (seeded reshuffles); returns the per-step curves.

    Every ``config.checkpoint_every`` steps (before the last) ``on_checkpoint(state)`` receives
    ``kbvqa.rl.common.training_state``; ``resume=state`` on a fresh copy of the same model, prompts
    and config goes on from it with the same batches and samples as an uninterrupted run (each
    step's samples are seeded by its number)."""
    from tqdm.auto import tqdm

    config = config or GRPOConfig()
    if len(prompts) != len(tasks) or not prompts:
        raise ValueError(f"need one task per prompt and at least one prompt, got {len(prompts)} and "
                         f"{len(tasks)}")
    _weights(reward_funcs or {}, reward_weights)
    seed_everything(config.seed)
    params = prepare_trainable(vlm, config.lora, config.freeze_vision)
    optimizer, scheduler = build_optimizer(params, config.lr, 0.0, config.warmup_steps, config.steps,
                                           config.schedule)
    rng, order, result, start = random.Random(f"grpo:{config.seed}"), [], GRPOResult(), 0
    if resume is not None:
        fields, start = restore_training_state(vlm, optimizer, scheduler, resume)
        result = GRPOResult(**fields)
    for step in tqdm(range(config.steps), desc="grpo", disable=not progress_enabled(config.progress)):
        batch = []
        while len(batch) < min(config.prompts_per_step, len(prompts)):
            if not order:
                order = list(range(len(prompts)))
                rng.shuffle(order)
            batch.append(order.pop())
        if step < start:                       # resumed: the same seeded batches, skipped
            continue
        result.add("lr", optimizer.param_groups[0]["lr"])
        stats = grpo_step(vlm, optimizer, [prompts[i] for i in batch], [tasks[i] for i in batch], config,
                          reward_funcs, reward_weights, params=params, seed=config.seed * 100_003 + step)
        scheduler.step()
        for name, value in stats.rewards.items():
            result.add(name, value)
        for name in ("reward", "loss", "zero_spread_groups", "completion_tokens"):
            result.add(name, getattr(stats, name))
        if on_checkpoint is not None and config.checkpoint_every and (step + 1) % config.checkpoint_every == 0 \
                and step + 1 < config.steps:
            on_checkpoint(training_state(vlm, optimizer, scheduler, result, step + 1))
    return result
