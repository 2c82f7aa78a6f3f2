"""Pretraining the book's tiny cpu-profile VLM on the toy world's mixture, and loading the result.

- ``TinyTrainConfig``: model sizes (``families.TinySpec``), optimiser, schedule, loss, budget.
- ``pretrain(config, world=None, out_dir=..., resume=True)``: builds (or resumes) the model, trains
  it on ``pretrain_mix.iter_pretrain_examples`` and writes, every ``ckpt_minutes`` and at the end,
  ``out_dir`` = model + processor (``vlm.save_pretrained``) + ``curves.json`` (train loss, learning
  rate, held-out teacher-forced accuracy); the optimiser state goes to ``data/cache/`` (not shipped).
- ``load_tiny_vlm(path)``: the shipped checkpoint as a ``VLM`` in eval mode.
- The two-stage recipe of the shipped checkpoint and its command line: ``tiny_recipe``.

Speed (2 shared CPU cores, 1 thread): a batch of 16 drawn straight from the stream is padded to its
longest example (~500 tokens for a mean of ~170), and the output layer (vocabulary 4,830 x 128, as
large as the 4 decoder layers together) plus its softmax ran on every padded position. Two fixes:
*length bucketing* (the stream is cut into pools of ``pool_batches`` batches, each pool is sorted
by token length, cut into batches, and the batches are shuffled; step ``s`` always reads the same
batch, so resuming needs only the step) and a *gathered loss* (the decoder runs once, the output
layer only on the positions that carry a label). ``sdpa`` attention beat ``eager`` by ~1.4x.

Loss: next-token cross-entropy on completions (on everything for ``loss_on="all"`` examples, i.e.
documents) plus ``prompt_loss_weight`` x the loss on the prompt text of the other examples
(measured on the toy world: language-model loss over passages and in-context examples helps the look-up
skill).
``loss_norm="example"``: per example, mean over answer tokens + weight x mean over prompt tokens,
then the mean over the batch (a 200-token document does not outweigh a "Yes"); ``"token"``: one
weighted mean over all tokens. ``phases`` switch the mixture (and the prompt weight) at given
steps: a curriculum that a from-scratch run reproduces exactly.

Leaves out: the evaluation of the model card (``model_card.py``), hub checkpoints.
"""
from __future__ import annotations

import dataclasses
import json
import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

import torch

from kbvqa.config import DATA_DIR, progress_enabled, seed_everything
from kbvqa.data import get_world
from kbvqa.models.families import build_tiny_vlm
from kbvqa.models.pretrain_mix import (
    PretrainMixConfig,
    eval_examples,
    example_length,
    iter_pretrain_examples,
    pretrain_batch,
    pretrain_corpus_texts,
)
from kbvqa.models.scoring import teacher_forced_accuracy
from kbvqa.models.strict_checkpoint import check_full_checkpoint
from kbvqa.models.vlm import VLM

DEFAULT_OUT = DATA_DIR / "tiny_vlm"
OPTIMIZER_DIR = DATA_DIR / "cache" / "tiny_vlm_optimizer"   # git-ignored
SCHEDULES = ("wsd", "cosine", "constant")
MONITOR_TASKS = ("kbvqa_gold_passage", "critic", "mc_3_same_rule", "pairwise")
__all__ = ["TinyTrainConfig", "load_tiny_vlm", "pretrain", "train_loss"]
# The shipped run's curriculum (see the model card): from step 1913 more KB-VQA/critic, at most 4
# passages, and language-model loss on prompts at weight 0.5; from 3600 up to 10 passages again.
FOCUS = {"kbvqa_with_passages": .30, "kbvqa_no_passage": .02, "mc_in_context": .14, "critic": .16,
         "reasoning_context_write": .02, "reasoning_context_answer": .02, "serts_query": .02, "serts_grade": .02,
         "serts_answer": .01, "pairwise": .08, "grounding": .05, "document_lm": .04, "lookup_drill": .12}
SHIPPED_PHASES = ((1913, {"weights": FOCUS, "max_passages": 4, "prompt_loss_weight": 0.5}),
                  (3600, {"weights": FOCUS, "max_passages": 10, "prompt_loss_weight": 0.5}))


@dataclass
class TinyTrainConfig:
    """One pretraining run of the tiny VLM (defaults: the shipped checkpoint's recipe)."""

    family: str = "qwen2_vl"         # one of families.FAMILIES
    hidden_size: int = 128           # TinySpec fields: text width ...
    num_layers: int = 4              # ... decoder layers
    num_heads: int = 4               # ... attention heads
    num_kv_heads: int = 2            # ... grouped-query KV heads
    intermediate_size: int = 256     # ... MLP width
    vision_width: int = 64           # ... vision tower width
    vision_depth: int = 2            # ... vision blocks
    image_size: int = 56             # ... pixels per side (56 -> 4 image tokens)
    tie_embeddings: bool = True      # ... shared input/output embeddings
    vocab_size: int = 5000           # tokenizer cap (the corpus has ~4,830 pieces: no unknown words)
    attn_implementation: str = "sdpa"  # "sdpa" or "eager"
    steps: int = 4500                # optimiser steps (the schedule's length)
    batch_size: int = 16             # examples per step
    pool_batches: int = 32           # length bucketing: batches per sorted pool (1: no bucketing)
    lr: float = 3e-3                 # peak learning rate (AdamW)
    warmup_steps: int = 200          # linear warm-up
    schedule: str = "wsd"            # "wsd" (warm-up, stable, linear decay), "cosine" or "constant"
    decay_fraction: float = 0.2      # wsd: share of the steps spent decaying
    min_lr_ratio: float = 0.1        # final lr / peak lr (wsd, cosine)
    weight_decay: float = 0.1        # AdamW weight decay (matrices only; no decay on norms/biases)
    grad_clip: float = 1.0           # max global gradient norm
    prompt_loss_weight: float = 0.0  # loss weight of prompt tokens of completion-only examples
    loss_norm: str = "example"       # "example": mean within each example, then over the batch; "token"
    seed: int = 0                    # init, tokenizer sampling and the example stream
    world_seed: int = 0              # kbvqa.data.get_world(world_seed)
    mix: dict = field(default_factory=dict)  # PretrainMixConfig overrides (weights, max_passages...)
    phases: list = field(default_factory=lambda: json.loads(json.dumps(SHIPPED_PHASES)))  # [[from_step,
    #                                mix overrides (may set prompt_loss_weight)], ...]; [] for none
    log_every: int = 20              # steps between curve points (train loss, lr)
    eval_every: int = 400            # steps between held-out teacher-forced accuracy points
    eval_n: int = 32                 # examples per MONITOR_TASKS set in those points
    ckpt_minutes: float = 10.0       # wall minutes between checkpoints
    minutes: float | None = None     # time budget of this invocation (None: run all steps)
    threads: int = 1                 # torch.set_num_threads
    init_from: str = ""              # start from this checkpoint's weights and tokenizer (a later stage)

    def __post_init__(self):
        for name in ("steps", "batch_size", "pool_batches", "log_every", "eval_every", "threads"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be a positive int, got {v!r}")
        for name, allowed in (("schedule", SCHEDULES), ("loss_norm", ("example", "token")),
                              ("attn_implementation", ("sdpa", "eager"))):
            if getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if not self.lr > 0 or self.warmup_steps < 0 or self.weight_decay < 0 or not self.grad_clip > 0:
            raise ValueError("need lr > 0, warmup_steps >= 0, weight_decay >= 0, grad_clip > 0")
        if not all(0 <= v <= 1 for v in (self.decay_fraction, self.min_lr_ratio, self.prompt_loss_weight)):
            raise ValueError("decay_fraction, min_lr_ratio and prompt_loss_weight must be in [0, 1]")
        if self.minutes is not None and not self.minutes > 0 or not self.ckpt_minutes > 0:
            raise ValueError("minutes (when set) and ckpt_minutes must be > 0")
        if self.eval_n < 0 or self.vocab_size < 64:
            raise ValueError("need eval_n >= 0 and vocab_size >= 64")
        if any(len(p) != 2 or not isinstance(p[0], int) or p[0] < 0 for p in self.phases):
            raise ValueError("phases must be [from_step, mix overrides] pairs with from_step >= 0")
        for step in [0] + [p[0] for p in self.phases]:
            self.mix_config(step)  # unknown mixture fields raise here

    def spec(self) -> dict:
        """The ``TinySpec`` keyword arguments."""
        names = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size",
                 "vision_width", "vision_depth", "image_size", "tie_embeddings")
        return {n: getattr(self, n) for n in names}

    def mix_config(self, step: int = 0):
        """The ``PretrainMixConfig`` of step ``step``: ``mix``, or the last phase started by then."""

        mix = ([self.mix] + [m for start, m in sorted(self.phases, key=lambda p: p[0]) if start <= step])[-1]
        mix = {k: v for k, v in mix.items() if k != "prompt_loss_weight"}
        known = {f.name for f in dataclasses.fields(PretrainMixConfig)} - {"seed", "image_size"}
        if set(mix) - known:
            raise ValueError(f"unknown mixture fields {sorted(set(mix) - known)}")
        return PretrainMixConfig(seed=self.seed, image_size=self.image_size, **mix)

    def prompt_weight(self, step: int) -> float:
        """``prompt_loss_weight`` of step ``step`` (the last phase that sets it, else the field)."""
        found = [m["prompt_loss_weight"] for start, m in sorted(self.phases, key=lambda p: p[0])
                 if start <= step and "prompt_loss_weight" in m]
        return float((found or [self.prompt_loss_weight])[-1])


def lr_at(config: TinyTrainConfig, step: int) -> float:
    """Learning rate of optimiser step ``step`` (0-based)."""
    if step < config.warmup_steps:
        return config.lr * (step + 1) / config.warmup_steps
    low = config.lr * config.min_lr_ratio
    if config.schedule == "constant":
        return config.lr
    if config.schedule == "cosine":
        frac = min(1.0, (step - config.warmup_steps) / max(1, config.steps - config.warmup_steps))
        return low + (config.lr - low) * 0.5 * (1 + math.cos(math.pi * frac))
    decay_start = config.steps * (1 - config.decay_fraction)
    if step < decay_start:
        return config.lr
    return config.lr - (config.lr - low) * min(1.0, (step - decay_start) / max(1.0, config.steps - decay_start))


class BatchStream:
    """Step -> list of examples, length-bucketed within pools; any step can be read first."""

    def __init__(self, world, config: TinyTrainConfig, tokenizer):
        self.world, self.config, self.tokenizer = world, config, tokenizer
        self._pool_index, self._pool = -1, []

    def _build_pool(self, index: int) -> list[list]:
        from itertools import islice

        c = self.config
        size = c.pool_batches * c.batch_size
        mix = c.mix_config(index * c.pool_batches)   # a pool follows the phase of its first step
        examples = list(islice(iter_pretrain_examples(self.world, mix, start=index * size), size))
        examples.sort(key=lambda e: example_length(e, self.tokenizer)[0])
        batches = [examples[i:i + c.batch_size] for i in range(0, size, c.batch_size)]
        random.Random(f"tiny-pool:{c.seed}:{index}").shuffle(batches)
        return batches

    def __call__(self, step: int) -> list:
        index, offset = divmod(step, self.config.pool_batches)
        if index != self._pool_index:
            self._pool_index, self._pool = index, self._build_pool(index)
        return self._pool[offset]


def train_loss(vlm, examples, prompt_loss_weight: float = 0.0, loss_norm: str = "example") -> torch.Tensor:
    """The weighted next-token loss of a batch (see the module docstring), with gradients.

    The decoder runs once; the output layer and softmax only on positions whose next token has a
    positive weight (padding, image placeholders and zero-weight prompt tokens are skipped)."""

    batch = pretrain_batch(vlm, examples)
    labels = batch.pop("labels")
    if prompt_loss_weight > 0:  # pretrain_batch masked prompts of completion-only examples: restore
        full = vlm.training_batch([e.prompt for e in examples], [e.completion for e in examples],
                                  loss_on="all")["labels"]
        answer, prompt = (labels != -100).float(), ((full != -100) & (labels == -100)).float()
        if loss_norm == "example":  # answer mean + weight x prompt mean, per example
            answer = answer / answer.sum(1, keepdim=True).clamp(min=1)
            prompt = prompt / prompt.sum(1, keepdim=True).clamp(min=1)
        weights, labels = answer + prompt_loss_weight * prompt, full
    else:
        weights = (labels != -100).float()
    inputs = vlm.forward_inputs(batch)
    hidden = vlm.core.model(**inputs, use_cache=False).last_hidden_state[:, :-1]
    targets, weights = labels[:, 1:], weights[:, 1:]
    if loss_norm == "example":
        weights = weights / weights.sum(dim=1, keepdim=True).clamp(min=1e-8)
    keep = weights > 0
    logits = vlm.core.lm_head(hidden[keep]).float()
    ce = torch.nn.functional.cross_entropy(logits, targets[keep], reduction="none")
    return (ce * weights[keep]).sum() / weights[keep].sum().clamp(min=1e-8)


def _paths(out_dir: Path, state_dir: Path | None) -> tuple[Path, Path]:
    return out_dir / "curves.json", Path(state_dir or OPTIMIZER_DIR) / (out_dir.resolve().name + ".pt")


def save_checkpoint(vlm, optimizer, out_dir: Path, state: dict, state_dir: Path | None = None) -> None:
    """Model + processor + curves in ``out_dir``; optimiser state and step in ``state_dir``."""
    curves_path, opt_path = _paths(out_dir, state_dir)
    vlm.save_pretrained(out_dir)
    curves_path.write_text(json.dumps(state, indent=1))
    opt_path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"optimizer": optimizer.state_dict(), "step": state["steps_done"]}, opt_path)


def _optimizer(vlm, config: TinyTrainConfig):
    decay = [p for n, p in vlm.model.named_parameters() if p.ndim >= 2]
    other = [p for n, p in vlm.model.named_parameters() if p.ndim < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": config.weight_decay},
                              {"params": other, "weight_decay": 0.0}], lr=config.lr, betas=(0.9, 0.95))


def pretrain(config: TinyTrainConfig | None = None, world=None, out_dir=DEFAULT_OUT, resume: bool = True,
             progress: bool = True, state_dir=None):
    """Train (or continue) the tiny VLM; returns ``(vlm, state)`` (``state`` = curves.json).

    ``resume``: continue from the checkpoint in ``out_dir`` (its saved config wins, except the time
    budget) when the optimiser state is in ``state_dir`` (default ``data/cache/tiny_vlm_optimizer``)."""
    from tqdm import tqdm

    config = config or TinyTrainConfig()
    torch.set_num_threads(config.threads)
    world = world if world is not None else get_world(config.world_seed)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    curves_path, opt_path = _paths(out_dir, state_dir)
    seed_everything(config.seed)
    state = None
    if resume and curves_path.exists() and opt_path.exists():
        state = json.loads(curves_path.read_text())
        if state["config"] != dataclasses.asdict(config):
            config = TinyTrainConfig(**{**state["config"], "minutes": config.minutes})
        vlm = VLM.from_pretrained(str(out_dir))
        vlm.core.set_attn_implementation(config.attn_implementation)
        optimizer = _optimizer(vlm, config)
        saved = torch.load(opt_path, weights_only=False)
        if saved["step"] != state["steps_done"]:
            raise ValueError(f"optimizer state ({saved['step']}) and curves ({state['steps_done']}) disagree")
        optimizer.load_state_dict(saved["optimizer"])
    else:
        if config.init_from:  # a later stage: the earlier stage's weights, tokenizer and history
            vlm = load_tiny_vlm(config.init_from)
            previous = json.loads((Path(config.init_from) / "curves.json").read_text())
        else:
            vlm = build_tiny_vlm(config.family, texts=pretrain_corpus_texts(world), seed=config.seed,
                                 vocab_size=config.vocab_size, **config.spec())
            previous = None
        vlm.core.set_attn_implementation(config.attn_implementation)
        optimizer = _optimizer(vlm, config)
        state = {"config": dataclasses.asdict(config), "steps_done": 0, "wall_s": 0.0, "train": [], "eval": [],
                 "parameters": vlm.num_parameters(), "vocab": len(vlm.tokenizer)}
        if previous is not None:
            state["previous_stages"] = previous.pop("previous_stages", []) + [previous]
    monitor = {t: eval_examples(world, t, n=config.eval_n) for t in MONITOR_TASKS} if config.eval_n else {}
    stream = BatchStream(world, config, vlm.tokenizer)
    start, t0 = state["steps_done"], time.time()
    wall0, last_ckpt, window = state["wall_s"], time.time(), []

    def evaluate(step):
        vlm.model.eval()
        point = {"step": step, **{t: teacher_forced_accuracy(vlm, ex) for t, ex in monitor.items()}}
        vlm.model.train()
        state["eval"].append(point)

    vlm.model.train()
    bar = tqdm(range(start, config.steps), initial=start, total=config.steps,
               disable=not progress_enabled(progress), desc="tiny")
    for step in bar:
        for group in optimizer.param_groups:
            group["lr"] = lr_at(config, step)
        loss = train_loss(vlm, stream(step), config.prompt_weight(step), config.loss_norm)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(vlm.model.parameters(), config.grad_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        window.append(loss.item())
        state["steps_done"], state["wall_s"] = step + 1, wall0 + time.time() - t0
        if (step + 1) % config.log_every == 0:
            state["train"].append({"step": step + 1, "loss": sum(window) / len(window),
                                   "lr": lr_at(config, step), "minutes": state["wall_s"] / 60})
            bar.set_postfix(loss=f"{state['train'][-1]['loss']:.3f}")
            window = []
        if monitor and (step + 1) % config.eval_every == 0:
            evaluate(step + 1)
        out_of_time = config.minutes is not None and time.time() - t0 > config.minutes * 60
        if out_of_time or time.time() - last_ckpt > config.ckpt_minutes * 60:
            save_checkpoint(vlm, optimizer, out_dir, state, state_dir)
            last_ckpt = time.time()
        if out_of_time:
            break
    if monitor and (not state["eval"] or state["eval"][-1]["step"] != state["steps_done"]):
        evaluate(state["steps_done"])
    save_checkpoint(vlm, optimizer, out_dir, state, state_dir)
    vlm.model.eval()
    return vlm, state


def load_tiny_vlm(path=DEFAULT_OUT):
    """The pretrained tiny VLM saved in ``path`` (model + processor), in eval mode; loaded strictly
    (every tensor and its shape, and the card's fingerprint: ``strict_checkpoint``)."""

    if not (Path(path) / "config.json").exists():
        raise ValueError(f"no tiny VLM checkpoint in {path}; train one with python -m kbvqa.models.tiny_recipe")
    check_full_checkpoint(path)
    vlm = VLM.from_pretrained(str(path), strict=True)
    vlm.model.eval()
    return vlm
