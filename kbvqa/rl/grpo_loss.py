"""GRPO as ReAG trains its generator: group advantages (Eq. 8) and the clipped token loss (Eq. 6-7).

Pure tensor maths, no model: every function takes per-token log-probabilities ``[B, T]`` and a
completion mask ``[B, T]`` (as ``VLM.completion_logprobs`` returns them), so the same numbers can
be compared with TRL's ``GRPOTrainer._compute_loss`` (tests/test_rl_grpo.py) and plotted in the book.

Eq. 8, the advantage of completion i in its group of N completions of one prompt:

    A_i = (R_i - mean(R_1..R_N)) / (std(R_1..R_N) + eps)

``std`` is the unbiased (Bessel) standard deviation and ``eps = 1e-4`` as in TRL, on which ReAG's
training code builds (supp. B: Open-R1 + TRL); the paper writes no eps. A group whose rewards are all
equal carries no learning signal: its advantages are exactly 0 (never NaN, also with ``eps = 0``).

Eq. 7, the ratio r_t = pi_theta(o_t) / pi_old(o_t) = exp(logp_t - old_logp_t) per token, and Eq. 6,
the clipped surrogate with no KL term (beta = 0, as DAPO and ReAG do):

    loss_t = -min(r_t * A_i, clip(r_t, 1 - eps_low, 1 + eps_high) * A_i)

How the token losses are averaged (``normalise``) is where papers and code differ:

- ``"batch"``: sum over every completion token of the batch / number of those tokens. TRL's
  ``loss_type="dapo"`` (its normaliser ``num_items_in_batch`` counts the completion tokens of the
  whole generation batch) and DAPO's code. This is the default.
- ``"group"``: Eq. 6 read literally: 1 / sum_i len(o_i) inside each prompt's group, then the mean over
  prompts (the expectation over (I_q, q, p)). Equal to ``"batch"`` when every group has the same
  number of tokens (e.g. one prompt per batch).
- ``"sequence"``: the original GRPO (DeepSeekMath): mean over each completion's tokens, then over
  completions (TRL's ``loss_type="grpo"``); ReAG argues against it (long answers weigh less).

``num_tokens`` overrides the "batch" denominator so that a batch split into micro-batches gives the
same gradient as one pass (what TRL's ``num_items_in_batch`` is for).

Leaves out: sampling and rewards (``grpo.py``), KL penalties, entropy bonuses, importance-sampling
corrections for vLLM, sequence-level ratios (GSPO).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

NORMALISATIONS = ("batch", "group", "sequence")
STD_KINDS = ("unbiased", "biased", "none")


def group_advantages(rewards, group_size: int, eps: float = 1e-4, std: str = "unbiased") -> torch.Tensor:
    """Eq. 8 for flat rewards ``[B * G]`` ordered group by group; returns float32 ``[B * G]``.

    ``std="none"`` only centres (Dr. GRPO); ``"biased"`` divides by N instead of N - 1.
    A group with zero spread gets zero advantages. Raises ``ValueError`` on a bad group size, a
    reward count that is not a multiple of it, a negative ``eps`` or non-finite rewards.

    Appendix: ReAG | Eq. 8 | tests/test_rl_grpo.py::test_advantages_match_trl_formula_and_zero_spread_is_zero | reag-eq8
    """
    if not isinstance(group_size, int) or isinstance(group_size, bool) or group_size < 2:
        raise ValueError(f"group_size must be an int >= 2 (a group of one has no spread), got {group_size!r}")
    if std not in STD_KINDS:
        raise ValueError(f"std must be one of {STD_KINDS}, got {std!r}")
    if not eps >= 0:
        raise ValueError(f"eps must be >= 0, got {eps!r}")
    r = torch.as_tensor(rewards, dtype=torch.float32).reshape(-1)
    if r.numel() == 0 or r.numel() % group_size:
        raise ValueError(f"{r.numel()} rewards do not split into groups of {group_size}")
    if not torch.isfinite(r).all():
        raise ValueError("rewards must be finite")
    groups = r.view(-1, group_size)
    centred = groups - groups.mean(dim=1, keepdim=True)
    if std == "none":
        return centred.reshape(-1)
    spread = groups.std(dim=1, keepdim=True, correction=1 if std == "unbiased" else 0)
    flat = (groups == groups[:, :1]).all(dim=1, keepdim=True)   # exact test: no rounding noise
    scaled = centred / (spread + eps).clamp(min=torch.finfo(torch.float32).tiny)
    return torch.where(flat, torch.zeros_like(centred), scaled).reshape(-1)


def to_device_of(reference: torch.Tensor, *tensors: torch.Tensor) -> tuple:
    """``tensors`` moved to ``reference``'s device (dtypes kept): advantages and masks are often
    built on the CPU from rewards while the log-probabilities come from a model on the GPU."""
    return tuple(t.to(reference.device) for t in tensors)


def clipped_token_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor,
                       clip_eps: float = 0.2, clip_eps_high: float | None = None):
    """Per-token loss ``[B, T]`` of Eq. 6 (sign flipped: we minimise) and the ratios r_t (Eq. 7).

    ``advantages`` is ``[B]`` (one per completion, broadcast over its tokens) or ``[B, T]``.
    ``clip_eps_high`` defaults to ``clip_eps`` (DAPO's "clip-higher" uses 0.28).
    """
    eps_low = clip_eps
    eps_high = clip_eps if clip_eps_high is None else clip_eps_high
    if not (0 <= eps_low < 1 and eps_high >= 0):
        raise ValueError(f"need 0 <= clip_eps < 1 and clip_eps_high >= 0, got {eps_low}, {eps_high}")
    if logprobs.shape != old_logprobs.shape:
        raise ValueError(f"logprobs {tuple(logprobs.shape)} and old_logprobs {tuple(old_logprobs.shape)} differ")
    old_logprobs, advantages = to_device_of(logprobs, old_logprobs, advantages)
    adv = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
    ratio = torch.exp(logprobs - old_logprobs.detach())
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    return -torch.min(ratio * adv, clipped * adv), ratio


@dataclass
class GRPOLoss:
    """What ``grpo_loss`` returns: the scalar to backpropagate and a few diagnostics."""

    loss: torch.Tensor            # scalar, differentiable through ``logprobs``
    num_tokens: float             # completion tokens in this (micro-)batch
    clip_fraction: float          # share of tokens whose ratio was clipped (TRL's clip_ratio/region_mean)
    mean_ratio: float             # mean r_t over completion tokens (1.0 when on-policy)


def grpo_loss(logprobs: torch.Tensor, old_logprobs: torch.Tensor, advantages: torch.Tensor,
              mask: torch.Tensor, clip_eps: float = 0.2, clip_eps_high: float | None = None,
              normalise: str = "batch", group_size: int | None = None,
              num_tokens: float | None = None) -> GRPOLoss:
    """The GRPO/DAPO loss of ReAG (Eq. 6) over a batch of completions (rows), beta = 0.

    ``normalise`` picks the average (module docstring); ``"group"`` needs ``group_size`` and rows
    ordered group by group. ``num_tokens`` (only with ``"batch"``) is the denominator to use instead
    of this batch's token count (micro-batching). Rows without any token contribute 0.

    Appendix: ReAG | Eq. 6-7 | tests/test_rl_grpo.py::test_loss_equals_trl_dapo_on_given_logprobs | reag-eq6
    """
    if normalise not in NORMALISATIONS:
        raise ValueError(f"normalise must be one of {NORMALISATIONS}, got {normalise!r}")
    if mask.shape != logprobs.shape:
        raise ValueError(f"mask {tuple(mask.shape)} and logprobs {tuple(logprobs.shape)} differ")
    if advantages.shape[0] != logprobs.shape[0]:
        raise ValueError(f"{advantages.shape[0]} advantages for {logprobs.shape[0]} completions")
    if num_tokens is not None and (normalise != "batch" or not num_tokens > 0):
        raise ValueError("num_tokens must be > 0 and goes with normalise='batch' only")
    old_logprobs, advantages, mask = to_device_of(logprobs, old_logprobs, advantages, mask)
    per_token, ratio = clipped_token_loss(logprobs, old_logprobs, advantages, clip_eps, clip_eps_high)
    m = mask.to(per_token.dtype)
    masked = per_token * m
    count = m.sum()
    if normalise == "batch":
        loss = masked.sum() / (num_tokens if num_tokens is not None else count.clamp(min=1.0))
    elif normalise == "sequence":
        loss = (masked.sum(-1) / m.sum(-1).clamp(min=1.0)).mean()
    else:
        if not isinstance(group_size, int) or group_size < 1 or logprobs.shape[0] % group_size:
            raise ValueError(f"normalise='group' needs a group_size dividing {logprobs.shape[0]} rows, "
                             f"got {group_size!r}")
        sums = masked.sum(-1).view(-1, group_size).sum(-1)
        tokens = m.sum(-1).view(-1, group_size).sum(-1)
        loss = (sums / tokens.clamp(min=1.0)).mean()
    clip_fraction, mean_ratio = clip_diagnostics(ratio, advantages, m, clip_eps, clip_eps_high)
    return GRPOLoss(loss=loss, num_tokens=float(count), clip_fraction=clip_fraction, mean_ratio=mean_ratio)


@torch.no_grad()
def clip_diagnostics(ratio, advantages, m, clip_eps: float, clip_eps_high: float | None) -> tuple[float, float]:
    """Share of masked tokens whose ratio was clipped (TRL's clip_ratio/region_mean), and the mean ratio."""
    eps_high = clip_eps if clip_eps_high is None else clip_eps_high
    adv = advantages.unsqueeze(1) if advantages.dim() == 1 else advantages
    clipped = ((ratio < 1 - clip_eps) & (adv < 0)) | ((ratio > 1 + eps_high) & (adv > 0))
    count = float(m.sum())
    denominator = max(count, 1.0)
    clip_fraction = float((clipped.to(m.dtype) * m).sum()) / denominator
    mean_ratio = float((ratio * m).sum()) / denominator if count > 0 else 1.0
    return clip_fraction, mean_ratio
