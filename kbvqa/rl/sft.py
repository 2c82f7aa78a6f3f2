"""ReAG's cold start (Sec. 3.3, Eq. 5): supervised fine-tuning that weighs answer and trace tokens.

The generator learns completions ``<think>tr</think><answer>y</answer>`` by next-token prediction,
with the answer weighted more than the reasoning trace (Eq. 5, alpha = 0.8 in ReAG Sec. 4):

    L_SFT = alpha * L_A + (1 - alpha) * L_T

L_A and L_T are the mean negative log-likelihoods of the answer tokens and of the trace tokens of
the batch (token means over the whole batch, each part on its own; the paper does not say how it
averages). Which token is which (``answer_start``, ``split_tokens``), for ANY completion string:

- the answer starts right after the first ``</think>``: the trace is ``<think>...</think>`` with
  its tags, the answer ``<answer>...</answer>`` with its tags and whatever follows;
- no ``</think>`` but an ``<answer>``: the answer starts at the first ``<answer>``;
- only an unclosed ``<think>``: everything is trace;  no tags at all: everything is answer;
- the end-of-turn token that closes the completion counts as answer.

Tokens are assigned by the character offset where they start (fast tokenizers), so the ids are the
ones the tokenizer gives the whole string (the ones the model will generate); a tokenizer without
offsets tokenises the two parts separately. A batch without trace (or answer) tokens gives that
part a loss of 0.

``sft_train(vlm, examples, config)``: AdamW, cosine schedule with warm-up, optional LoRA, frozen
vision encoder, seeded batches, tqdm, optional checkpoints to resume from; returns the loss curves.
ReAG's own values (Qwen2.5-VL 3B/7B): lr 2e-6, effective batch 128, one epoch, 450 warm-up steps, weight decay 0.01.

Leaves out: the cold-start data (``cold_start.py``), GRPO (``grpo.py``).
"""
from __future__ import annotations

import random
from collections.abc import Sequence
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
    prompt_and_completion,
    resolve_micro_batch,
    restore_training_state,
    training_state,
)

THINK_CLOSE, ANSWER_OPEN, THINK_OPEN = "</think>", "<answer>", "<think>"


def answer_start(text: str) -> int:
    """Character index where the answer part of a completion starts (module docstring's rules)."""
    text = str(text)
    if (end := text.find(THINK_CLOSE)) != -1:
        return end + len(THINK_CLOSE)
    if (start := text.find(ANSWER_OPEN)) != -1:
        return start
    return len(text) if THINK_OPEN in text else 0


def split_tokens(tokenizer, completion: str, marker: str | None = None) -> tuple[list[int], list[bool]]:
    """(token ids of ``completion``, is-answer flag per token), without special tokens or EOS.
    ``marker`` (ours, not ReAG's): the answer starts at the marker's last occurrence when the
    completion holds it (e.g. "The answer is" of a rationale-first response), else by ``answer_start``."""
    text = str(completion)
    found = text.rfind(marker) if marker else -1
    while found > 0 and text[found - 1].isspace():     # the token that carries the marker's first word
        found -= 1                                     # starts at the space before it
    boundary = found if found != -1 else answer_start(text)
    if getattr(tokenizer, "is_fast", False):
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        return list(enc.input_ids), [start >= boundary for start, _ in enc.offset_mapping]
    trace = tokenizer(text[:boundary], add_special_tokens=False).input_ids if boundary else []
    answer = tokenizer(text[boundary:], add_special_tokens=False).input_ids if text[boundary:] else []
    return list(trace) + list(answer), [False] * len(trace) + [True] * len(answer)


def answer_token_mask(tokenizer, completions: Sequence[str], add_eos: bool = True, marker: str | None = None):
    """(id lists, answer mask ``[B, T]`` bool) aligned with ``VLM.completion_logprobs(prompts, ids,
    add_eos=add_eos)``: right-padded, True on answer tokens (and the appended EOS); ``marker``: see
    ``split_tokens``."""
    ids, flags = zip(*(split_tokens(tokenizer, c, marker) for c in completions)) if completions else ((), ())
    rows = [f + [True] * add_eos for f in flags]
    width = max([1] + [len(r) for r in rows])
    mask = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, row in enumerate(rows):
        mask[i, :len(row)] = torch.tensor(row, dtype=torch.bool)
    return [list(i) for i in ids], mask


@dataclass
class SFTLoss:
    loss: torch.Tensor          # alpha * L_A + (1 - alpha) * L_T, differentiable
    answer_loss: float          # L_A (0 when the batch has no answer token)
    trace_loss: float           # L_T (0 when the batch has no trace token)
    answer_tokens: int
    trace_tokens: int


def sft_loss(logprobs: torch.Tensor, mask: torch.Tensor, answer_mask: torch.Tensor,
             alpha: float = 0.8, counts: tuple[int, int] | None = None) -> SFTLoss:
    """Eq. 5 from per-token log-probs ``[B, T]``, the completion mask and the answer mask.
    ``counts``: the (answer, trace) token counts of the whole batch when these rows are one micro-batch
    of it, so that the micro-batches' losses add up to the batch's (default: these rows' own).

    Appendix: ReAG | Eq. 5 |
        tests/test_rl_sft.py::test_sft_loss_weighs_answer_by_alpha_and_trace_by_one_minus_alpha | reag-eq5"""
    if not 0 <= alpha <= 1:
        raise ValueError(f"alpha must be in [0, 1], got {alpha!r}")
    if not logprobs.shape == mask.shape == answer_mask.shape:
        raise ValueError("logprobs, mask and answer_mask must have the same shape")
    answer = (mask & answer_mask.to(mask.device)).to(logprobs.dtype)
    trace = (mask & ~answer_mask.to(mask.device)).to(logprobs.dtype)
    n_answer, n_trace = answer.sum(), trace.sum()
    den_a, den_t = (n_answer, n_trace) if counts is None else (
        torch.tensor(float(counts[0]), device=logprobs.device), torch.tensor(float(counts[1]), device=logprobs.device))
    loss_a = -(logprobs * answer).sum() / den_a.clamp(min=1.0)
    loss_t = -(logprobs * trace).sum() / den_t.clamp(min=1.0)
    return SFTLoss(alpha * loss_a + (1 - alpha) * loss_t, loss_a.item(), loss_t.item(),
                   int(n_answer), int(n_trace))


@dataclass
class SFTConfig:
    """Cold-start SFT settings. Defaults suit the tiny cpu model; ReAG's values are in comments."""

    alpha: float = 0.8               # Eq. 5: weight of the answer tokens (1 - alpha on the trace)
    steps: int = 100                 # optimiser steps (ReAG: one epoch)
    batch_size: int = 8              # examples per step (ReAG: 128)
    lr: float = 1e-4                 # peak learning rate (ReAG: 2e-6 on 3B/7B models)
    weight_decay: float = 0.01       # AdamW weight decay (ReAG supp. B: 0.01 for the cold start)
    warmup_steps: int = 10           # linear warm-up (ReAG: 450)
    schedule: str = "cosine"         # "cosine" (ReAG) or "constant" after warm-up
    max_grad_norm: float = 1.0       # gradient clipping (0 = off)
    lora: dict | None = None         # VLM.add_lora arguments, e.g. {"r": 8}; None trains the weights
    freeze_vision: bool = True       # ReAG keeps the vision encoder frozen (merger trains)
    seed: int = 0                    # batches, dropout and LoRA init repeat exactly
    log_every: int = 1               # steps between curve points
    progress: bool = True            # tqdm bar
    checkpoint_every: int = 0        # steps between calls of sft_train's on_checkpoint (0: never)
    micro_batch_size: int | None | str = "auto"  # rows per forward/backward, gradients accumulated (None: the
                                     # batch; "auto": AUTO_MICRO_BATCH["sft"] on CUDA, the batch on the CPU)
    gradient_checkpointing: bool | str = "auto"  # recompute activations in backward ("auto": on CUDA)
    answer_marker: str | None = None  # the answer part starts at this text's last occurrence (ours: e.g. the
                                      # closing "The answer is" of a rationale-first response); None: ReAG's tags

    def __post_init__(self):
        check_positive_int(steps=self.steps, batch_size=self.batch_size, log_every=self.log_every)
        check_checkpoint_every(self.checkpoint_every)
        check_micro_batch(self.micro_batch_size)
        check_checkpointing(self.gradient_checkpointing)
        if not 0 <= self.alpha <= 1:
            raise ValueError(f"alpha must be in [0, 1], got {self.alpha!r}")
        if not self.lr > 0 or self.weight_decay < 0 or self.warmup_steps < 0 or self.max_grad_norm < 0:
            raise ValueError("need lr > 0, weight_decay >= 0, warmup_steps >= 0, max_grad_norm >= 0")
        if self.schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {self.schedule!r}")


@dataclass
class SFTResult:
    """Curves of ``sft_train`` (one point every ``log_every`` steps); the VLM is trained in place."""

    steps: list[int] = field(default_factory=list)
    loss: list[float] = field(default_factory=list)          # Eq. 5
    answer_loss: list[float] = field(default_factory=list)   # L_A
    trace_loss: list[float] = field(default_factory=list)    # L_T
    lr: list[float] = field(default_factory=list)


def sft_batch_loss(vlm, prompts, completions: Sequence[str], alpha: float = 0.8, marker: str | None = None) -> SFTLoss:
    """Eq. 5 on one batch of (prompt, completion) pairs, with gradients (EOS appended)."""
    ids, answer_mask = answer_token_mask(vlm.tokenizer, list(completions), add_eos=True, marker=marker)
    scored = vlm.completion_logprobs(list(prompts), ids, grad=True, add_eos=True)
    return sft_loss(scored.logprobs, scored.mask, answer_mask.to(scored.mask.device), alpha)


def sft_backward(vlm, prompts, completions: Sequence[str], alpha: float = 0.8,
                 micro_batch_size: int | None = None, marker: str | None = None) -> SFTLoss:
    """``sft_batch_loss(...).loss.backward()`` in micro-batches of ``micro_batch_size`` rows (None: one
    pass), each normalised by the whole batch's token counts, so the accumulated gradient is the
    batch's (issue 56: the activations of a few rows at a time). Returns the batch's loss, detached."""
    prompts, completions = list(prompts), list(completions)
    if micro_batch_size is None or micro_batch_size >= len(prompts):
        out = sft_batch_loss(vlm, prompts, completions, alpha, marker)
        out.loss.backward()
        return SFTLoss(out.loss.detach(), out.answer_loss, out.trace_loss, out.answer_tokens, out.trace_tokens)
    ids, answer_mask = answer_token_mask(vlm.tokenizer, completions, add_eos=True, marker=marker)
    n_answer = int(answer_mask.sum())
    counts = (n_answer, sum(len(i) + 1 for i in ids) - n_answer)        # + 1: the appended EOS
    total, answer_loss, trace_loss = 0.0, 0.0, 0.0
    for start in range(0, len(prompts), micro_batch_size):
        part = slice(start, start + micro_batch_size)
        scored = vlm.completion_logprobs(prompts[part], ids[part], grad=True, add_eos=True)
        width = scored.mask.shape[1]
        rows = answer_mask[part][:, :width]
        if rows.shape[1] < width:
            rows = torch.nn.functional.pad(rows, (0, width - rows.shape[1]), value=False)
        out = sft_loss(scored.logprobs, scored.mask, rows.to(scored.mask.device), alpha, counts)
        out.loss.backward()
        total, answer_loss, trace_loss = total + out.loss.item(), answer_loss + out.answer_loss, \
            trace_loss + out.trace_loss
    return SFTLoss(torch.tensor(total), answer_loss, trace_loss, counts[0], counts[1])


def _batches(n: int, batch_size: int, steps: int, seed: int):
    """Example indices per step: seeded reshuffles of the whole set (epochs), cut into batches."""
    rng, order = random.Random(f"sft:{seed}"), []
    for _ in range(steps):
        batch = []
        while len(batch) < min(batch_size, n):
            if not order:
                order = list(range(n))
                rng.shuffle(order)
            batch.append(order.pop())
        yield batch


def sft_train(vlm, examples: Sequence, config: SFTConfig | None = None, resume: dict | None = None,
              on_checkpoint=None) -> SFTResult:
    """Fine-tune ``vlm`` in place on ``examples`` (``Example`` objects or (prompt, completion) pairs) with
    the loss of Eq. 5; the model is left in eval mode. Returns the loss curves.

    Every ``config.checkpoint_every`` steps (before the last) ``on_checkpoint(state)`` receives the
    ``training_state``; ``resume=state`` on a fresh copy of the same model and examples continues from
    it (a long run cut off by the end of a session loses at most ``checkpoint_every`` steps)."""
    from tqdm.auto import tqdm

    config = config or SFTConfig()
    pairs = [prompt_and_completion(e) for e in examples]
    if not pairs:
        raise ValueError("examples is empty")
    seed_everything(config.seed)
    params = prepare_trainable(vlm, config.lora, config.freeze_vision)
    optimizer, scheduler = build_optimizer(params, config.lr, config.weight_decay, config.warmup_steps,
                                           config.steps, config.schedule)
    result, start = SFTResult(), 0
    if resume is not None:
        fields, start = restore_training_state(vlm, optimizer, scheduler, resume)
        result = SFTResult(**fields)
    vlm.model.train()
    try:
        bar = tqdm(_batches(len(pairs), config.batch_size, config.steps, config.seed), total=config.steps,
                   desc="sft", disable=not progress_enabled(config.progress))
        for step, batch in enumerate(bar):
            if step < start:                       # resumed: the same seeded batches, skipped
                continue
            lr = optimizer.param_groups[0]["lr"]
            optimizer.zero_grad(set_to_none=True)
            with gradient_checkpointing(vlm, config.gradient_checkpointing):
                out = sft_backward(vlm, [pairs[i][0] for i in batch], [pairs[i][1] for i in batch], config.alpha,
                                   resolve_micro_batch(config.micro_batch_size, vlm, "sft"), config.answer_marker)
            if config.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(params, config.max_grad_norm)
            optimizer.step()
            scheduler.step()
            if step % config.log_every == 0 or step == config.steps - 1:
                result.steps.append(step)
                result.loss.append(out.loss.item())
                result.answer_loss.append(out.answer_loss)
                result.trace_loss.append(out.trace_loss)
                result.lr.append(lr)
                bar.set_postfix(loss=f"{result.loss[-1]:.3f}")
            if on_checkpoint is not None and config.checkpoint_every and (step + 1) % config.checkpoint_every == 0 \
                    and step + 1 < config.steps:
                on_checkpoint(training_state(vlm, optimizer, scheduler, result, step + 1))
    finally:
        vlm.model.eval()
    return result
