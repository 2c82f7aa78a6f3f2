"""Training data for ReAG's critic and its fine-tuning (§3.2, supp. A "Critic Model and Dataset").

ReAG fine-tunes Qwen2.5-VL-3B with next-token prediction on 1M tuples (I_q, q, p, y), y in
{Yes, No}, from ReflectiVA's data; negatives are 30 % *soft* ("semantically related but
unhelpful") and 70 % *hard* ("high similarity to the relevant ones"). On the toy world:

- ``critic_training_examples(world, n, config)``: tuples from the TRAIN split only
  (``kbvqa_train``): the evidence passage -> "Yes" (``positive_rate``), else a negative -> "No",
  hard with probability ``hard_rate`` (the same section of a look-alike's page) or soft (another
  section of the right page, or a random page), by ``kbvqa.prompts.formats.critic_negative``; prompts by
  ``kbvqa.prompts.formats.critic_example`` (the rendering the tiny model was pretrained with). Example i
  depends only on ``(seed, i)``. With ``naming_rate > 0`` that share are ``naming_critic_example``s
  instead: "Which creature is this <family>?" over a knowledge-base picture of any creature, its own
  page's passage against a look-alike's (issue 53: a critic that knows every creature, as ReAG's
  backbone does).
- ``train_critic(vlm, config)``: fine-tunes a *copy* of ``vlm`` (the caller's model is untouched;
  ``in_place=True`` trains ``vlm`` itself, for a caller that no longer needs the base: no second
  copy of a 3B critic on the GPU), fully or with LoRA adapters (``config.lora``); AdamW with a
  linear warm-up, from ``kbvqa.rl``'s ``prepare_trainable`` / ``build_optimizer`` (as SFT and
  GRPO), seeded, tqdm progress. Returns the critic VLM and its loss curve.
- ``critic_loss(vlm, prompts, labels)``: next-token prediction on the answer (the paper's
  objective) = the cross-entropy, over the whole vocabulary, of the one token "Yes"/"No" right
  after the generation prompt, the token ``p_yes`` reads. It equals ``training_batch``'s loss for
  one-token answers but runs the output layer on one position per prompt (about 2x faster here).
  ``critic_backward`` runs its backward in micro-batches (``CriticTrainConfig.micro_batch_size``;
  "auto": a few prompts at a time on CUDA, the whole batch on the CPU) and ``train_critic``
  recomputes activations in the backward on CUDA (``gradient_checkpointing``): a 3B critic on a T4.

Leaves out: scoring and filtering (``critic.py``), evaluation (``kbvqa.reag.critic_eval``).
"""
from __future__ import annotations

import copy
import random
import time
from dataclasses import dataclass

from kbvqa.config import PROFILE_DEFAULT, progress_enabled, resolve_profile_fields, seed_everything
from kbvqa.data import get_world
from kbvqa.models.pretrain_mix import PretrainMixConfig
from kbvqa.models.vlm import VLM
from kbvqa.prompts import render_chat
from kbvqa.prompts.formats import Example, critic_example, critic_negative
from kbvqa.rl.common import (
    build_optimizer,
    check_checkpoint_every,
    check_checkpointing,
    check_micro_batch,
    gradient_checkpointing,
    prepare_trainable,
    resolve_micro_batch,
    restore_training_state,
    training_state,
)

__all__ = ["NAMING_QUESTION", "CriticTrainConfig", "critic_backward",
           "critic_loss", "critic_training_examples", "naming_critic_example",
           "train_critic"]


@dataclass(frozen=True)
class CriticTrainConfig:
    steps: int = 150                 # optimiser steps
    batch_size: int = 16             # examples per step
    lr: float = 5e-4                 # AdamW learning rate (constant after a short warm-up)
    warmup_steps: int = 10           # linear warm-up
    weight_decay: float = 0.0
    positive_rate: float = 0.5       # share of "Yes" examples
    hard_rate: float = 0.7           # share of hard negatives among "No" (ReAG: 70 % hard, 30 % soft)
    seed: int = 0                    # examples, initialisation of adapters, dropout
    lora: dict | None = None         # e.g. {"r": 8, "alpha": 16}: LoRA adapters only; None: all weights
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's
    image_size: int | None | str = PROFILE_DEFAULT  # cpu: 56 px (tiny) or 112 (reader), by role; gpu: native
    naming_rate: float = 0.0         # share of naming tuples ("Which creature is this <family>?" over a
                                     # knowledge-base picture of ANY creature, issue 53); 0: the committed stream
    heldout_train: int = 0           # the last train queries no critic tuple asks about (issue 53's held-out
                                     # questions, ``kbvqa.reag.ladder.heldout_queries``); 0: the committed stream
    threads: int = 1                 # torch threads (the book's machines share 2 cores)
    log_every: int = 10              # curve["smoothed"] window and progress-bar refresh
    checkpoint_every: int = 0        # steps between calls of train_critic's on_checkpoint (0: never)
    micro_batch_size: int | None | str = "auto"  # rows per forward/backward, gradients accumulated (None: the
                                     # batch; "auto": AUTO_MICRO_BATCH["critic"] on CUDA, the batch on the CPU)
    gradient_checkpointing: bool | str = "auto"  # recompute activations in backward ("auto": on CUDA)

    def __post_init__(self):
        resolve_profile_fields(self, role="critic")
        for name in ("steps", "batch_size", "threads", "log_every"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not self.lr > 0 or self.weight_decay < 0 or self.warmup_steps < 0:
            raise ValueError(f"need lr > 0, weight_decay >= 0, warmup_steps >= 0; got {self}")
        for name in ("positive_rate", "hard_rate", "naming_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")
        if not isinstance(self.heldout_train, int) or isinstance(self.heldout_train, bool) or self.heldout_train < 0:
            raise ValueError(f"heldout_train must be an int >= 0, got {self.heldout_train!r}")
        if self.lora is not None and not isinstance(self.lora, dict):
            raise ValueError(f"lora must be None or a dict of add_lora arguments, got {self.lora!r}")
        check_checkpoint_every(self.checkpoint_every)
        check_micro_batch(self.micro_batch_size)
        check_checkpointing(self.gradient_checkpointing)


def _task_config(config: CriticTrainConfig):
    """The ``kbvqa.prompts.formats`` knobs the critic examples read (image size, prompt rendering)."""

    return PretrainMixConfig(seed=config.seed, image_size=config.image_size, short_prompts=config.short_prompts,
                             critic_positive_rate=config.positive_rate, critic_hard_rate=config.hard_rate)


def critic_training_examples(world, n: int, config: CriticTrainConfig | None = None, start: int = 0,
                             split: str = "kbvqa_train") -> list:
    """Examples ``start .. start + n - 1`` of the seeded critic stream (``kbvqa.prompts.formats.Example``;
    ``completion`` is "Yes"/"No", ``meta["negative_kind"]`` is "", "hard" or "soft"). With
    ``config.heldout_train`` the last that many queries of the split are never asked about."""

    config = config or CriticTrainConfig()
    if n < 0 or start < 0:
        raise ValueError(f"n and start must be >= 0, got n={n}, start={start}")
    queries = list(getattr(world, split))
    if config.heldout_train:
        if config.heldout_train >= len(queries):
            raise ValueError(f"heldout_train = {config.heldout_train} leaves no query of world.{split} "
                             f"({len(queries)}) to train on")
        queries = queries[: -config.heldout_train]
    if not queries:
        raise ValueError(f"world.{split} is empty")
    cfg, out = _task_config(config), []
    for i in range(start, start + n):
        rng = random.Random(f"critic:{config.seed}:{i}")
        if config.naming_rate and rng.random() < config.naming_rate:   # no draw at 0: the stream stays
            out.append(naming_critic_example(world, rng.choice(world.entities), rng, config))
            continue
        q = rng.choice(queries)
        if rng.random() < config.positive_rate:
            out.append(critic_example(world, q, world.passage(q.evidence_ids[0]), "Yes", "", cfg, "critic"))
        else:
            passage, kind = critic_negative(world, q, rng, config.hard_rate)
            out.append(critic_example(world, q, passage, "No", kind, cfg, "critic"))
    return out


NAMING_QUESTION = "Which creature is this {family}?"


def naming_critic_example(world, entity, rng, config: CriticTrainConfig):
    """A critic tuple that asks only which creature a knowledge-base picture shows (issue 53): the
    picture is the creature's page picture or a fresh render (``kbvqa.reader.tasks.kb_picture``,
    never a query view), the passage a section of its own page ("Yes") or, as a negative, the same
    section of a look-alike's page (hard, ``hard_rate``) or another creature's page (soft) ("No").
    No fact is asked, so a creature without training questions can be taught: the test asks every
    fact of those creatures. ``meta["entity_id"]`` names the creature."""
    from kbvqa.reader.tasks import kb_picture  # the reader's training data: imported where used

    image = kb_picture(world, entity, rng, config.image_size)
    own = rng.choice(world.document_of(entity.id).passages)
    if rng.random() < config.positive_rate:
        passage, label, kind = own, "Yes", ""
    else:
        hard = rng.random() < config.hard_rate
        pool = world.lookalikes(entity.id) if hard else [e for e in world.entities if e.family_id != entity.family_id]
        other = world.document_of(rng.choice(pool).id)
        passage = next((x for x in other.passages if x.section == own.section), other.passages[0])
        label, kind = "No", "hard" if hard else "soft"
    prompt = render_chat("reag_critic", images=[image], short=config.short_prompts,
                         question=NAMING_QUESTION.format(family=entity.family), passage=passage.text)
    return Example(prompt, label, "critic_naming",
                   meta={"entity_id": entity.id, "query_ids": [], "image_ids": [], "doc_ids": [passage.doc_id],
                         "passage_ids": [passage.id], "label": label, "negative_kind": kind})


def critic_loss(vlm, prompts, labels):
    """Mean cross-entropy of the answer token (``vlm.answer_token_id(label)``) after each prompt,
    with gradients; ``labels`` are "Yes"/"No" (any word whose first token the model has)."""
    import torch
    import torch.nn.functional as F

    if isinstance(labels, str) or len(labels) != len(prompts) or not labels:
        raise ValueError("labels must be a non-empty list with one label per prompt")
    inputs = vlm.forward_inputs(vlm.encode(prompts))
    logits = vlm.model(**inputs, logits_to_keep=1, use_cache=False).logits[:, -1].float()
    targets = torch.tensor([vlm.answer_token_id(label) for label in labels], device=logits.device)
    return F.cross_entropy(logits, targets)


def critic_backward(vlm, prompts, labels, micro_batch_size: int | None = None) -> float:
    """``critic_loss(vlm, prompts, labels).backward()`` in micro-batches of ``micro_batch_size`` prompts
    (None: one pass), each part's summed cross-entropy divided by the whole batch's size, so the
    accumulated gradient is the batch's (issue 56). Returns the batch's loss."""
    if micro_batch_size is None or micro_batch_size >= len(prompts):
        loss = critic_loss(vlm, prompts, labels)
        loss.backward()
        return float(loss.item())
    prompts, labels, total = list(prompts), list(labels), 0.0
    for start in range(0, len(prompts), micro_batch_size):
        part = slice(start, start + micro_batch_size)
        loss = critic_loss(vlm, prompts[part], labels[part]) * (len(prompts[part]) / len(prompts))
        loss.backward()
        total += loss.item()
    return total


def train_critic(vlm, config: CriticTrainConfig | None = None, world=None, progress: bool = True,
                 in_place: bool = False, resume: dict | None = None, on_checkpoint=None):
    """Fine-tune a copy of ``vlm`` (``vlm`` itself when ``in_place``) as ReAG's critic on the toy
    world's training split. Both give the same critic: the copy only keeps the caller's base intact.

    Returns ``(critic_vlm, curve)``; ``curve`` holds per-step ``step``, ``loss``, ``lr``, a moving
    average ``smoothed`` (window ``log_every``), ``seconds`` and the label mix actually drawn.
    Every ``config.checkpoint_every`` steps (before the last) ``on_checkpoint`` receives
    ``kbvqa.rl.common.training_state``; ``resume=state`` on a fresh copy of the same model goes on
    from it as an uninterrupted run would (each step's examples are drawn by its number).
    """
    import torch

    config = config or CriticTrainConfig()
    if world is None:
        world = get_world(0)
    torch.set_num_threads(config.threads)
    seed_everything(config.seed)
    critic = vlm if in_place else VLM.from_model(copy.deepcopy(vlm.model), vlm.processor)
    params = prepare_trainable(critic, config.lora, freeze_vision=False)
    optimiser, scheduler = build_optimizer(params, config.lr, config.weight_decay, config.warmup_steps,
                                           config.steps, schedule="constant")
    curve: dict = {"step": [], "loss": [], "lr": [], "smoothed": [], "labels": {"Yes": 0, "hard": 0, "soft": 0}}
    start = 0
    if resume is not None:
        curve, start = restore_training_state(critic, optimiser, scheduler, resume)
    bar = None
    if progress_enabled(progress):
        from tqdm.auto import tqdm

        bar = tqdm(total=config.steps, desc="critic", leave=False)
    critic.model.train()
    micro = resolve_micro_batch(config.micro_batch_size, critic, "critic")
    t0 = time.perf_counter() - (resume or {}).get("seconds", 0.0)
    if bar is not None:
        bar.update(start)
    for step in range(start, config.steps):
        batch = critic_training_examples(world, config.batch_size, config, start=step * config.batch_size)
        for e in batch:
            curve["labels"]["Yes" if e.completion == "Yes" else e.meta["negative_kind"]] += 1
        lr = optimiser.param_groups[0]["lr"]
        optimiser.zero_grad()
        with gradient_checkpointing(critic, config.gradient_checkpointing):
            loss = critic_backward(critic, [e.prompt for e in batch], [e.completion for e in batch], micro)
        optimiser.step()
        scheduler.step()
        curve["step"].append(step)
        curve["loss"].append(loss)
        curve["lr"].append(lr)
        window = curve["loss"][-config.log_every:]
        curve["smoothed"].append(sum(window) / len(window))
        if bar is not None:
            bar.update(1)
            if step % config.log_every == 0 or step == config.steps - 1:
                bar.set_postfix(loss=f"{curve['smoothed'][-1]:.3f}")
        if on_checkpoint is not None and config.checkpoint_every and (step + 1) % config.checkpoint_every == 0 \
                and step + 1 < config.steps:
            on_checkpoint(training_state(critic, optimiser, scheduler, curve, step + 1))
    if bar is not None:
        bar.close()
    critic.model.eval()
    curve["seconds"] = round(time.perf_counter() - t0, 1)
    return critic, curve
