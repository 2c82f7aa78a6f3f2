"""PPO on SeRTS trajectories (SeRTS §3.2, Eq. 2, App. C.4): the clipped objective written once, and a
``ppo_step`` that fine-tunes the query proposer's LoRA adapters on (observation, query, reward).

Eq. 2, to be *maximised*:

    L(theta) = E[ min( r(theta) * A,  clip(r(theta), 1 - eps, 1 + eps) * A ) ],
    r(theta) = pi_theta(A_1..i | O_1..i) / pi_theta_old(A_1..i | O_1..i)

- Trajectories T_SeRTS = (A, O, R): every node of a SeRTS tree gives the proposer's prompt O (which
  holds its ancestors' and siblings' queries, documents and feedback), its output A and the
  evaluator's score R of the documents the query led to (``collect_trajectories``).
- Advantage: A = (R - 3.75) * ``advantage_scale`` -- the "reward baseline" 3.75 of App. C.4 (TRL's
  stack-llama script subtracts it from the reward). We have no value head: the constant baseline is
  the value estimate, so there is no GAE and no KL penalty (TRL's old PPOTrainer had both; TRL 1.16,
  the version we pin, no longer ships a PPOTrainer that takes scalar rewards, hence this file).
  ``PPOConfig(baseline=...)`` chooses the baseline: ``"constant"`` (App. C.4's, the default),
  ``"batch_mean"`` (the batch's mean reward: a baseline that follows the policy) or ``"normalised"``
  (batch mean and standard deviation, as TRL's ``whiten``). Issue 55 of this book found the constant
  too high for our proposer: with a mean reward of 2.2, about 85 % of advantages were negative.
- ``ratio="token"`` (default, as TRL and most LLM PPO code): r_t per token, the objective averaged over
  all completion tokens of the batch. ``ratio="sequence"``: Eq. 2 as printed, r = exp(sum_t of the
  log-ratio) per trajectory, averaged over trajectories.
- LoRA r = 16, alpha = 32, dropout 0.05 on q_proj / v_proj (App. C.4) via ``VLM.add_lora``;
  learning rate 1.41e-5, batch 8, micro-batch 1, one epoch in the paper; ``ppo_epochs`` passes over
  each batch (TRL's default 4) with the old log-probs fixed at the start of the step.

Leaves out: sampling (``kbvqa.serts.search``), the evaluator's own training signal (the paper does
not say which reward the evaluator's PPO used), value heads, reference-model KL.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from kbvqa.models.adapters import add_named_adapter
from kbvqa.rl.common import check_checkpointing, gradient_checkpointing

__all__ = ["BASELINES", "PPO_REWARD_BASELINE", "PPOConfig", "PPOStats", "Trajectory", "collect_trajectories",
           "ppo_advantages", "ppo_objective", "ppo_step", "prepare_ppo_policy"]

PPO_REWARD_BASELINE = 3.75
RATIO_LEVELS = ("token", "sequence")
BASELINES = ("constant", "batch_mean", "normalised")


@dataclass(frozen=True)
class Trajectory:
    observation: object   # O: the proposer's prompt (a chat), as the search built it
    action: str           # A: the proposer's raw output (reasoning + <query>...</query>)
    reward: float         # R: the evaluator's 0..5 score of the documents the query retrieved


@dataclass(frozen=True)
class PPOConfig:
    clip_eps: float = 0.2                  # epsilon of Eq. 2 (TRL's cliprange)
    reward_baseline: float = PPO_REWARD_BASELINE   # App. C.4 (the "constant" baseline's value)
    baseline: str = "constant"             # "constant" (App. C.4) | "batch_mean" | "normalised" (docstring)
    advantage_scale: float = 1.0           # A = (R - baseline) * scale
    learning_rate: float = 1.41e-5         # App. C.4 (a 1.45M-parameter model needs ~1e-3)
    batch_size: int = 8                    # trajectories per ppo_step (App. C.4)
    mini_batch_size: int = 1               # trajectories per gradient step (App. C.4 micro_batch_size)
    ppo_epochs: int = 4                    # passes over the batch per step (TRL default)
    ratio: str = "token"                   # "token" | "sequence" (module docstring)
    max_grad_norm: float = 1.0             # gradient clipping (0: none)
    seed: int = 0                          # App. C.4: random seed 0
    gradient_checkpointing: bool | str = "auto"  # recompute activations in backward ("auto": on CUDA)

    def __post_init__(self):
        if not 0 < self.clip_eps < 1:
            raise ValueError(f"clip_eps must lie in (0, 1), got {self.clip_eps!r}")
        if self.ratio not in RATIO_LEVELS:
            raise ValueError(f"ratio must be one of {RATIO_LEVELS}, got {self.ratio!r}")
        if self.baseline not in BASELINES:
            raise ValueError(f"baseline must be one of {BASELINES}, got {self.baseline!r}")
        if self.batch_size < 1 or self.mini_batch_size < 1 or self.ppo_epochs < 1:
            raise ValueError("batch_size, mini_batch_size and ppo_epochs must be >= 1")
        if not self.learning_rate > 0 or self.max_grad_norm < 0:
            raise ValueError("need learning_rate > 0 and max_grad_norm >= 0")
        check_checkpointing(self.gradient_checkpointing)


@dataclass
class PPOStats:
    losses: list[float]          # -objective per gradient step
    mean_ratio: float            # mean r over the last epoch's tokens (1 at the first on-policy pass)
    clip_fraction: float         # share of ratios outside [1 - eps, 1 + eps] in the last epoch
    mean_advantage: float


def collect_trajectories(results) -> list[Trajectory]:
    """(O, A, R) of every proposer call in SeRTS / self-reflection results (root excluded)."""
    return [Trajectory(n.proposer_prompt, n.proposer_output, float(n.score))
            for r in results for n in r.nodes[1:] if n.proposer_prompt is not None]


def ppo_advantages(rewards, baseline: float = PPO_REWARD_BASELINE, scale: float = 1.0,
                   kind: str = "constant") -> torch.Tensor:
    """A, float32 ``[B]``: ``kind="constant"`` (R - baseline) * scale; ``"batch_mean"`` (R - mean R) *
    scale; ``"normalised"`` (R - mean R) / (std R + 1e-8) * scale (all zeros when every reward is
    equal). Non-finite rewards or an unknown ``kind`` raise ``ValueError``."""
    if kind not in BASELINES:
        raise ValueError(f"kind must be one of {BASELINES}, got {kind!r}")
    r = torch.as_tensor(rewards, dtype=torch.float32).reshape(-1)
    if not torch.isfinite(r).all():
        raise ValueError("rewards must be finite")
    if kind == "constant":
        return (r - baseline) * scale
    centred = r - r.mean()
    if kind == "batch_mean":
        return centred * scale
    std = r.std(unbiased=False) if r.numel() > 1 else torch.tensor(0.0)
    return centred / (std + 1e-8) * scale


def ppo_objective(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor,
                  mask: torch.Tensor, clip_eps: float = 0.2, ratio: str = "token"):
    """Eq. 2 (to maximise) and the ratios: ``logprobs``/``old_logprobs``/``mask`` are ``[B, T]``,
    ``advantages`` ``[B]``. Returns ``(objective, ratios)`` with ratios ``[B, T]`` or ``[B]``.

    Appendix: SeRTS | Eq. 2 | tests/test_ppo.py::test_objective_by_hand_token_level_and_gradient | serts-eq2"""
    if ratio not in RATIO_LEVELS:
        raise ValueError(f"ratio must be one of {RATIO_LEVELS}, got {ratio!r}")
    if not 0 < clip_eps < 1:
        raise ValueError(f"clip_eps must lie in (0, 1), got {clip_eps!r}")
    if logprobs.shape != old_logprobs.shape or mask.shape != logprobs.shape:
        raise ValueError("logprobs, old_logprobs and mask must have the same shape")
    if advantages.shape != logprobs.shape[:1]:
        raise ValueError(f"{tuple(advantages.shape)} advantages for {logprobs.shape[0]} trajectories")
    old_logprobs, advantages, mask = (t.to(logprobs.device) for t in (old_logprobs, advantages, mask))
    m = mask.to(logprobs.dtype)
    log_ratio = (logprobs - old_logprobs.detach()) * m
    if ratio == "sequence":                  # pi(A|O) / pi_old(A|O): product over the query's tokens
        r = torch.exp(log_ratio.sum(-1))
        surrogate = torch.min(r * advantages, torch.clamp(r, 1 - clip_eps, 1 + clip_eps) * advantages)
        return surrogate.mean(), r
    r = torch.exp(log_ratio)
    adv = advantages.unsqueeze(1)
    surrogate = torch.min(r * adv, torch.clamp(r, 1 - clip_eps, 1 + clip_eps) * adv)
    return (surrogate * m).sum() / m.sum().clamp(min=1.0), r


def prepare_ppo_policy(vlm, cfg: PPOConfig = PPOConfig(), r: int = 16, alpha: int = 32, dropout: float = 0.05,
                       adapter: str | None = None):
    """Add LoRA (App. C.4: r 16, alpha 32, dropout 0.05 on q/v projections) and return
    ``(policy, optimizer)`` (AdamW over the adapter weights only). The adapters' random initial
    weights come from ``cfg.seed``.

    ``adapter=None`` wraps ``vlm`` itself and returns it. A name adds a *named* adapter beside any
    others on the same base and returns the view that trains it (``vlm.adapter(name)``): SeRTS's
    proposer and evaluator then share one copy of the weights, and ``vlm.without_adapters()`` is
    the original model (``kbvqa.models.adapters``)."""
    torch.manual_seed(cfg.seed)
    if adapter is None:
        vlm.add_lora(r=r, alpha=alpha, dropout=dropout, target_modules=("q_proj", "v_proj"))
        policy = vlm
    else:
        add_named_adapter(vlm, adapter, r=r, alpha=alpha, dropout=dropout, target_modules=("q_proj", "v_proj"))
        policy = vlm.adapter(adapter)
    params = [p for p in policy.model.parameters() if p.requires_grad]
    return policy, torch.optim.AdamW(params, lr=cfg.learning_rate)


def ppo_step(vlm, optimizer, trajectories: Sequence[Trajectory], cfg: PPOConfig = PPOConfig()) -> PPOStats:
    """One PPO step on up to ``cfg.batch_size`` trajectories: old log-probs once (no grad), then
    ``ppo_epochs`` passes of mini-batches maximising Eq. 2. Repeatable given ``cfg.seed``."""
    batch = list(trajectories)[: cfg.batch_size]
    if not batch:
        raise ValueError("no trajectories to learn from")
    torch.manual_seed(cfg.seed)
    prompts, actions = [t.observation for t in batch], [t.action for t in batch]
    advantages = ppo_advantages([t.reward for t in batch], cfg.reward_baseline, cfg.advantage_scale, cfg.baseline)
    was_training = vlm.model.training
    vlm.model.eval()                        # pi_old: no dropout, no gradient
    old = [vlm.completion_logprobs([p], [a], add_eos=True).logprobs for p, a in zip(prompts, actions)]
    vlm.model.train()
    params = [p for p in vlm.model.parameters() if p.requires_grad]
    losses, ratios, clipped = [], [], []
    with gradient_checkpointing(vlm, cfg.gradient_checkpointing):   # issue 56: a 2B model on a T4
        for _ in range(cfg.ppo_epochs):
            ratios, clipped = [], []
            for start in range(0, len(batch), cfg.mini_batch_size):
                idx = range(start, min(start + cfg.mini_batch_size, len(batch)))
                out = vlm.completion_logprobs([prompts[i] for i in idx], [actions[i] for i in idx], grad=True,
                                              add_eos=True)
                width = out.logprobs.shape[1]
                old_lp = torch.zeros_like(out.logprobs)
                for row, i in enumerate(idx):   # mini-batch padding may differ from the one-by-one pass
                    old_lp[row, : old[i].shape[1]] = old[i][0, :width].to(old_lp.device)
                adv = advantages[list(idx)].to(out.logprobs.device)
                objective, r = ppo_objective(out.logprobs, old_lp, adv, out.mask, cfg.clip_eps, cfg.ratio)
                loss = -objective
                optimizer.zero_grad()
                loss.backward()
                if cfg.max_grad_norm > 0:
                    torch.nn.utils.clip_grad_norm_(params, cfg.max_grad_norm)
                optimizer.step()
                losses.append(float(loss.detach()))
                kept = r.detach()[out.mask] if cfg.ratio == "token" else r.detach()
                ratios.append(kept)
                clipped.append(((kept - 1).abs() > cfg.clip_eps).float())
    vlm.model.train(was_training)
    all_r = torch.cat(ratios)
    return PPOStats(losses, float(all_r.mean()), float(torch.cat(clipped).mean()), float(advantages.mean()))
