"""One forward pass each: next-token logits, P(Yes) (ReAG Eq. 4), completion log-probs, labels.

``p_yes`` -- ReAG Eq. 4 keeps passage p when Pr(Yes | C, q, I_q, p) > thresh (0.1 in the shipped
scripts). The official critic (aimagelab/ReAG, ``src/critic_module/critic.py``) runs one forward
pass over the left-padded batch, takes the logits at the last position, applies a softmax over the
*whole vocabulary* (temperature 1) and reads the probabilities of the tokens ``'Yes'`` and ``'No'``
(``convert_tokens_to_ids``). We offer both readings:

- ``normalise="pair"`` (default): softmax over the two logits {Yes, No}, so P(Yes) + P(No) = 1.
  A fine-tuned critic puts almost all its mass on Yes/No, where both readings agree; a small or
  untrained model spreads mass over other tokens, and the pair reading keeps the threshold
  meaningful there.
- ``normalise="vocab"``: the official code's number, P(Yes) under the full softmax.

The Yes/No ids are the first token of an assistant answer "Yes"/"No" as the chat template renders
it (``answer_token_id``), which is the id the official code uses for Qwen ("Yes" right after
``assistant\\n``) and ``" Yes"`` for Idefics3/SmolVLM (answers follow ``Assistant:`` with a space).

``completion_logprobs`` -- the prompt (left-padded, as in generation) followed by the completion
(right-padded); one forward pass keeps only the last T+1 positions' logits (``logits_to_keep``), so
memory grows with the completion, not the prompt. ``logprobs[b, t]`` is log pi(c_t | prompt, c_<t),
zero where ``mask`` is False. With ``grad=True`` it is differentiable (GRPO/PPO ratios).

``training_batch`` -- the same joined sequence with ``labels`` (-100 on padding, on the prompt for
answer-only loss, on image placeholders always) so that ``vlm.model(**batch).loss`` is the usual
shifted cross-entropy: SFT cold start, or the tiny model's pretraining with loss on every token.

Leaves out: batching of the gradient path (one graph per call), value heads, KL terms (``kbvqa.rl``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

from kbvqa.models.chat import make_chat, normalise_prompts, with_answer
from kbvqa.models.finite import check_finite
from kbvqa.models.generation import placeholder_ids
from kbvqa.models.prefix import shared_prefix_logits, supports_prefix_reuse


@dataclass
class CompletionLogprobs:
    """Per-token scores of completions; every tensor is on the model's device."""

    logprobs: torch.Tensor        # [B, T] float32, log pi(token); 0 where mask is False
    mask: torch.Tensor            # [B, T] bool, True exactly on completion tokens
    completion_ids: torch.Tensor  # [B, T] completion ids, right-padded with the pad id
    input_ids: torch.Tensor       # [B, P + T] left-padded prompt + right-padded completion
    attention_mask: torch.Tensor  # [B, P + T]
    prompt_length: int            # P, the padded prompt length


def answer_token_id(vlm, word: str) -> int:
    """The first token of an assistant answer ``word`` right after the generation prompt."""
    tok = vlm.tokenizer
    chat = normalise_prompts([make_chat("?")])[0]
    prompt = vlm._render(chat)
    full = vlm.processor.apply_chat_template(with_answer(chat, word), tokenize=False)
    tid = None
    if full.startswith(prompt):
        p_ids = tok(prompt, add_special_tokens=False).input_ids
        f_ids = tok(full, add_special_tokens=False).input_ids
        if f_ids[: len(p_ids)] == p_ids and len(f_ids) > len(p_ids):
            tid = f_ids[len(p_ids)]
    if tid is None:  # a template that rewrites the prompt: fall back to the bare word
        ids = tok(word, add_special_tokens=False).input_ids
        tid = ids[0] if ids else None
    if tid is None or tid == tok.unk_token_id:
        raise ValueError(f"{word!r} is not a token of this tokenizer (got the unknown token)")
    return tid


def next_token_logits(vlm, prompts, batch_size: int = 16, share_prefix: bool = False) -> torch.Tensor:
    """Float32 logits ``[B, V]`` (CPU) of the next token after each prompt, no gradients.
    ``share_prefix``: consecutive prompts that open with the same tokens prefill them once
    (``kbvqa.models.prefix``; the same logits up to floating-point noise)."""
    if share_prefix and supports_prefix_reuse(vlm):
        return shared_prefix_logits(vlm, prompts, batch_size=batch_size)
    chats = normalise_prompts(prompts)
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    out = []
    with torch.no_grad():
        for start in range(0, len(chats), batch_size):
            batch = vlm.forward_inputs(vlm.encode(chats[start:start + batch_size]))
            logits = vlm.model(**batch, logits_to_keep=1, use_cache=False).logits
            out.append(check_finite(logits[:, -1].float().cpu(), "next_token_logits", logits.dtype))
    vocab = vlm.core.get_output_embeddings().weight.shape[0]
    return torch.cat(out) if out else torch.zeros(0, vocab)


def p_yes(vlm, prompts, yes: str = "Yes", no: str = "No", normalise: str = "pair",
          batch_size: int = 16, share_prefix: bool = False) -> torch.Tensor:
    """Pr(Yes) per prompt (ReAG Eq. 4), float32 ``[B]`` on CPU, in [0, 1]; ``share_prefix`` as in
    ``next_token_logits``."""
    if normalise not in ("pair", "vocab"):
        raise ValueError(f"normalise must be 'pair' or 'vocab', got {normalise!r}")
    y, n = vlm.answer_token_id(yes), vlm.answer_token_id(no)
    if y == n:
        raise ValueError(f"{yes!r} and {no!r} start with the same token; P(Yes) is undefined")
    logits = next_token_logits(vlm, prompts, batch_size=batch_size, share_prefix=share_prefix)
    if normalise == "pair":
        return torch.softmax(logits[:, [y, n]], dim=-1)[:, 0]
    return torch.softmax(logits, dim=-1)[:, y]


def _completion_ids(tok, completion, add_eos: bool) -> list[int]:
    if isinstance(completion, str):
        ids = tok(completion, add_special_tokens=False).input_ids
    elif isinstance(completion, (list, tuple)) and all(isinstance(i, int) for i in completion):
        ids = list(completion)
    elif isinstance(completion, torch.Tensor) and completion.ndim == 1:
        ids = completion.tolist()
    else:
        raise ValueError("a completion must be a str or a sequence of token ids")
    return ids + [tok.eos_token_id] if add_eos else ids


def join_completions(vlm, prompts, completions: Sequence, add_eos: bool = False):
    """(inputs, completion ids [B, T], mask [B, T], P): the encoded prompts (left-padded) followed
    by the completions (right-padded), with every per-token input extended over the completion."""
    chats = normalise_prompts(prompts)
    if isinstance(completions, str) or len(completions) != len(chats):
        raise ValueError("completions must be a list with one completion per prompt")
    tok = vlm.tokenizer
    ids = [_completion_ids(tok, c, add_eos) for c in completions]
    batch = vlm.encode(chats)
    device, (size, prompt_len) = vlm.device, batch["input_ids"].shape
    width = max(1, max(len(i) for i in ids))
    comp = torch.full((size, width), tok.pad_token_id, dtype=torch.long, device=device)
    mask = torch.zeros((size, width), dtype=torch.bool, device=device)
    for row, row_ids in enumerate(ids):
        comp[row, : len(row_ids)] = torch.tensor(row_ids, dtype=torch.long, device=device)
        mask[row, : len(row_ids)] = True
    inputs = dict(batch)
    inputs["input_ids"] = torch.cat([batch["input_ids"], comp], dim=1)
    inputs["attention_mask"] = torch.cat([batch["attention_mask"], mask.long()], dim=1)
    for key in ("mm_token_type_ids", "token_type_ids"):  # per-token extras: completion is text
        if key in batch:
            inputs[key] = torch.cat([batch[key], torch.zeros_like(comp)], dim=1)
    return vlm.forward_inputs(inputs), comp, mask, prompt_len


def completion_logprobs(vlm, prompts, completions: Sequence, grad: bool = False,
                        temperature: float = 1.0, add_eos: bool = False) -> CompletionLogprobs:
    """log pi(completion tokens | prompt) for paired prompts and completions (str or id lists).

    ``temperature`` divides the logits first (as the sampler did); ``add_eos`` appends the EOS id
    to each completion (score the decision to stop). The model's train/eval mode is the caller's.
    """
    if not temperature > 0:
        raise ValueError(f"temperature must be > 0, got {temperature!r}")
    inputs, comp, mask, prompt_len = join_completions(vlm, prompts, completions, add_eos)
    width = comp.shape[1]
    with torch.set_grad_enabled(grad):
        logits = vlm.model(**inputs, logits_to_keep=width + 1, use_cache=False).logits
        logits = check_finite(logits[:, :width].float(), "completion_logprobs", logits.dtype) / temperature
        logprobs = torch.log_softmax(logits, dim=-1).gather(-1, comp.unsqueeze(-1)).squeeze(-1)
        logprobs = logprobs.masked_fill(~mask, 0.0)
    return CompletionLogprobs(logprobs=logprobs, mask=mask, completion_ids=comp,
                              input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"],
                              prompt_length=prompt_len)


def training_batch(vlm, prompts, completions: Sequence, loss_on: str = "completion",
                   add_eos: bool = True) -> dict[str, torch.Tensor]:
    """Model inputs with ``labels`` for ``vlm.model(**batch).loss`` (SFT, tiny-model pretraining).

    ``loss_on="completion"``: only completion tokens are labelled (answer-only loss);
    ``"all"``: every real text token of prompt and completion (language-model loss over passages
    and questions too); padding and image placeholders are never labelled (-100).
    """
    if loss_on not in ("completion", "all"):
        raise ValueError(f"loss_on must be 'completion' or 'all', got {loss_on!r}")
    inputs, _, _, prompt_len = join_completions(vlm, prompts, completions, add_eos)
    labels = inputs["input_ids"].clone()
    labels[inputs["attention_mask"] == 0] = -100
    if loss_on == "completion":
        labels[:, :prompt_len] = -100
    else:
        labels[torch.isin(labels, torch.tensor(placeholder_ids(vlm), device=labels.device))] = -100
    return {**inputs, "labels": labels}


@torch.no_grad()
def teacher_forced_accuracy(vlm, examples, batch_size: int = 16) -> float:
    """Share of examples whose every completion token (and EOS) is the argmax: greedy exact match."""
    if not examples:
        return float("nan")
    hits = 0
    for i in range(0, len(examples), batch_size):
        chunk = examples[i:i + batch_size]
        inputs, comp, mask, _ = join_completions(vlm, [e.prompt for e in chunk], [e.completion for e in chunk],
                                                 add_eos=True)
        width = comp.shape[1]
        logits = vlm.model(**inputs, logits_to_keep=width + 1, use_cache=False).logits
        right = (logits[:, :width].argmax(-1) == comp) | ~mask
        hits += int(right.all(dim=1).sum())
    return hits / len(examples)
