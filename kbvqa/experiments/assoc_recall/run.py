"""Go/no-go stage: can a tiny Qwen2-VL language model learn associative recall on one CPU core?

The runner of ``python -m kbvqa.experiments.assoc_recall``: ``AssocRecallConfig`` (one run, every
field a ``--flag`` of ``parse_args``), the model (``build_model``), schedules (``lr_at``,
``pairs_at``), loss and teacher-forced accuracy, ``train`` (writes the run's JSON record after every
evaluation) and ``main`` (train one run from the command line, print its summary).

Leaves out: what the stage measured and why this model class (this package's ``__init__``), the
synthetic sequences (``data.py``), the table of the runs (``kbvqa.models.from_scratch``).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import platform
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from kbvqa.config import progress_enabled, seed_everything
from kbvqa.experiments.assoc_recall.data import QUERY_MODES, TASKS, build_vocab, make_batch
from kbvqa.experiments.runs import git_commit
from kbvqa.models.from_scratch import ASSOC_RECALL_DIR

RESULTS_DIR = ASSOC_RECALL_DIR      # the table of these runs: kbvqa.models.from_scratch.assoc_recall_table
LOSS_ON = ("answers", "all")


@dataclass
class AssocRecallConfig:
    """One run. Defaults: the smallest MQAR setting measured to pass (see README.md)."""

    name: str = ""                 # results file stem; "" -> built from task/size/lr/seed
    task: str = "mqar"             # "mqar" (key-value pairs) or "facts" (sentences + questions)
    num_pairs: int = 8             # pairs (mqar) / facts (facts) per sequence, at the end of curriculum
    min_pairs: int = 0             # curriculum: 0 -> no curriculum; else start at this many pairs
    curriculum_steps: int = 0      # steps over which the upper pair count grows min_pairs -> num_pairs
    num_keys: int = 64             # mqar key vocabulary (keys in one sequence are distinct)
    num_values: int = 64           # mqar value vocabulary
    query_mode: str = "random"     # "random" (with replacement) or "permutation" (each key once)
    loss_on: str = "answers"       # "answers": answer tokens only; "all": next-token loss everywhere
    hidden_size: int = 128         # text hidden width
    num_layers: int = 2            # decoder layers
    num_heads: int = 4             # attention heads (no grouped-query sharing)
    mlp_ratio: int = 4             # intermediate size = mlp_ratio * hidden_size
    rope_theta: float = 1e6        # Qwen2-VL's value
    init_std: float = 0.02         # initializer_range of every Linear/Embedding (Qwen2-VL: 0.02)
    tie_embeddings: bool = False   # share input embedding and LM head (Qwen2-VL-2B does; 7B does not)
    steps: int = 3000              # optimiser steps (cosine schedule length)
    batch_size: int = 32           # sequences per step
    lr: float = 3e-3               # peak AdamW learning rate
    warmup_steps: int = 200        # linear warm-up, then cosine decay to min_lr_ratio * lr
    min_lr_ratio: float = 0.1
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    eval_every: int = 250          # steps between evaluations
    eval_sequences: int = 256      # held-out sequences per evaluation (fixed set, own seed)
    stop_at_acc: float = 1.01      # stop early once eval accuracy >= this (1.01: never)
    seed: int = 0
    threads: int = 1               # torch intra-op threads (the machine is shared)

    def __post_init__(self):
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.query_mode not in QUERY_MODES:
            raise ValueError(f"query_mode must be one of {QUERY_MODES}, got {self.query_mode!r}")
        if self.loss_on not in LOSS_ON:
            raise ValueError(f"loss_on must be one of {LOSS_ON}, got {self.loss_on!r}")
        if self.hidden_size % self.num_heads or (self.hidden_size // self.num_heads) % 2:
            raise ValueError("hidden_size / num_heads must be an even integer (rotary head dim)")
        if min(self.steps, self.batch_size, self.eval_every, self.eval_sequences, self.num_pairs) < 1:
            raise ValueError("steps, batch_size, eval_every, eval_sequences, num_pairs must be >= 1")
        if not 0 < self.lr < 1:
            raise ValueError(f"lr must be in (0, 1), got {self.lr}")
        if self.min_pairs > self.num_pairs:
            raise ValueError(f"min_pairs={self.min_pairs} > num_pairs={self.num_pairs}")
        if not self.name:
            self.name = (f"{self.task}_p{self.num_pairs}_h{self.hidden_size}_l{self.num_layers}"
                         f"_lr{self.lr:g}_{self.loss_on}{'_tied' if self.tie_embeddings else ''}"
                         f"{f'_cur{self.min_pairs}' if self.min_pairs else ''}_s{self.seed}")


def build_model(cfg: AssocRecallConfig, vocab_size: int):
    """A tiny ``Qwen2VLForConditionalGeneration`` from config; the special image/video ids sit
    past the task vocabulary so that no task token is ever taken for an image placeholder."""
    from transformers import Qwen2VLConfig, Qwen2VLForConditionalGeneration

    half = cfg.hidden_size // cfg.num_heads // 2  # rotary frequencies per head
    mrope = [half - 2 * (half // 3), half // 3, half // 3]  # (time, height, width) split
    full_vocab = vocab_size + 4
    config = Qwen2VLConfig(
        text_config=dict(
            vocab_size=full_vocab, hidden_size=cfg.hidden_size, num_hidden_layers=cfg.num_layers,
            intermediate_size=cfg.mlp_ratio * cfg.hidden_size, num_attention_heads=cfg.num_heads,
            num_key_value_heads=cfg.num_heads, max_position_embeddings=1024,
            rope_parameters={"rope_type": "default", "rope_theta": cfg.rope_theta, "mrope_section": mrope},
            bos_token_id=1, eos_token_id=4, pad_token_id=0, initializer_range=cfg.init_std),
        vision_config=dict(depth=1, embed_dim=32, hidden_size=cfg.hidden_size, num_heads=1),
        vision_start_token_id=vocab_size, vision_end_token_id=vocab_size + 1,
        image_token_id=vocab_size + 2, video_token_id=vocab_size + 3,
        tie_word_embeddings=cfg.tie_embeddings)
    config._attn_implementation = "sdpa"
    return Qwen2VLForConditionalGeneration(config)


def lr_at(step: int, cfg: AssocRecallConfig) -> float:
    """Linear warm-up to ``lr`` then cosine decay to ``min_lr_ratio * lr`` at ``steps``."""
    if step < cfg.warmup_steps:
        return cfg.lr * (step + 1) / cfg.warmup_steps
    progress = min(1.0, (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps))
    return cfg.lr * (cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * 0.5 * (1 + math.cos(math.pi * progress)))


def pairs_at(step: int, cfg: AssocRecallConfig) -> tuple[int, int | None]:
    """(upper pair count, lower pair count) of the batch at ``step`` under the curriculum."""
    if cfg.min_pairs <= 0:
        return cfg.num_pairs, None
    frac = 1.0 if cfg.curriculum_steps <= 0 else min(1.0, step / cfg.curriculum_steps)
    return cfg.min_pairs + round(frac * (cfg.num_pairs - cfg.min_pairs)), cfg.min_pairs


def sequence_loss(logits: torch.Tensor, input_ids: torch.Tensor, answer_mask: torch.Tensor,
                  loss_on: str) -> torch.Tensor:
    """Mean next-token cross-entropy over answer tokens, or over every non-pad token."""
    targets = input_ids[:, 1:]
    mask = answer_mask[:, 1:] if loss_on == "answers" else targets != 0
    per_token = torch.nn.functional.cross_entropy(
        logits[:, :-1].reshape(-1, logits.size(-1)), targets.reshape(-1), reduction="none")
    return (per_token * mask.reshape(-1)).sum() / mask.sum().clamp(min=1)


def answer_accuracy(logits: torch.Tensor, input_ids: torch.Tensor, answer_mask: torch.Tensor
                    ) -> tuple[float, float]:
    """(answer exact-match accuracy, answer-token accuracy), teacher-forced argmax.

    An answer is a maximal run of answer tokens; it counts as right when every token is."""
    hit = (logits[:, :-1].argmax(-1) == input_ids[:, 1:]) | ~answer_mask[:, 1:]
    mask = answer_mask[:, 1:]
    token_acc = (hit & mask).sum().item() / max(1, mask.sum().item())
    right = total = 0
    for row_hit, row_mask in zip(hit.tolist(), mask.tolist()):
        inside, ok = False, True
        for h, m in zip(row_hit + [True], row_mask + [False]):
            if m:
                ok, inside = (ok and h) if inside else h, True
            elif inside:
                right, total, inside = right + ok, total + 1, False
    return right / max(1, total), token_acc


@torch.no_grad()
def evaluate(model, batches) -> dict:
    """Held-out answer loss, exact-match answer accuracy and answer-token accuracy."""
    model.eval()
    losses, accs, token_accs = [], [], []
    for input_ids, answer_mask in batches:
        logits = model(input_ids=input_ids).logits
        losses.append(sequence_loss(logits, input_ids, answer_mask, "answers").item())
        acc, tok = answer_accuracy(logits, input_ids, answer_mask)
        accs.append(acc)
        token_accs.append(tok)
    model.train()
    return {"eval_answer_loss": float(np.mean(losses)), "eval_acc": float(np.mean(accs)),
            "eval_token_acc": float(np.mean(token_accs))}


def write_results(record: dict, out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{record['config']['name']}.json"
    path.write_text(json.dumps(record, indent=1))
    return path


def train(cfg: AssocRecallConfig, out_dir: Path | None = RESULTS_DIR, progress: bool = True) -> dict:
    """Train one configuration; return (and, unless ``out_dir`` is None, write) its record."""
    torch.set_num_threads(cfg.threads)
    seed_everything(cfg.seed)
    vocab = build_vocab(cfg.task, cfg.num_keys, cfg.num_values)
    model = build_model(cfg, len(vocab))
    eval_rng = np.random.default_rng(cfg.seed + 10_000)  # held-out: never the training stream
    eval_batches = [make_batch(cfg.task, eval_rng, min(64, cfg.eval_sequences), cfg.num_pairs, vocab,
                               cfg.num_keys, cfg.num_values, query_mode=cfg.query_mode)
                    for _ in range(-(-cfg.eval_sequences // 64))]
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "embed" not in n]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2 or "embed" in n]
    optimiser = torch.optim.AdamW([{"params": decay, "weight_decay": cfg.weight_decay},
                                   {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr, betas=(0.9, 0.98))
    rng = np.random.default_rng(cfg.seed)
    record = {"config": dataclasses.asdict(cfg), "vocab_size": len(vocab),
              "text_parameters": sum(p.numel() for n, p in model.named_parameters() if "visual" not in n),
              "git_commit": git_commit(), "date": datetime.datetime.now().isoformat(timespec="seconds"),
              "machine": {"platform": platform.platform(), "processor": platform.processor(),
                          "torch": torch.__version__, "threads": torch.get_num_threads()},
              "curve": [], "steps_to_95": None, "minutes_to_95": None}
    start, running = time.time(), []
    bar = tqdm(range(cfg.steps), disable=not progress_enabled(progress), desc=cfg.name, mininterval=10)
    for step in bar:
        for group in optimiser.param_groups:
            group["lr"] = lr_at(step, cfg)
        upper, lower = pairs_at(step, cfg)
        input_ids, answer_mask = make_batch(cfg.task, rng, cfg.batch_size, upper, vocab,
                                            cfg.num_keys, cfg.num_values, min_pairs=lower,
                                            query_mode=cfg.query_mode)
        loss = sequence_loss(model(input_ids=input_ids).logits, input_ids, answer_mask, cfg.loss_on)
        optimiser.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.grad_clip)
        optimiser.step()
        running.append(loss.item())
        if (step + 1) % cfg.eval_every == 0 or step + 1 == cfg.steps:
            point = {"step": step + 1, "minutes": round((time.time() - start) / 60, 3),
                     "train_loss": float(np.mean(running)), "pairs": upper,
                     **evaluate(model, eval_batches)}
            running = []
            record["curve"].append(point)
            if record["steps_to_95"] is None and point["eval_acc"] >= 0.95:
                record["steps_to_95"], record["minutes_to_95"] = point["step"], point["minutes"]
            record.update(final_acc=point["eval_acc"], final_token_acc=point["eval_token_acc"],
                          steps_done=step + 1, wall_s=round(time.time() - start, 1),
                          steps_per_s=round((step + 1) / (time.time() - start), 3))
            bar.set_postfix(loss=f"{point['train_loss']:.3f}", acc=f"{point['eval_acc']:.3f}")
            if progress:
                tqdm.write(json.dumps(point))
            if out_dir is not None:
                write_results(record, out_dir)
            if point["eval_acc"] >= cfg.stop_at_acc and upper == cfg.num_pairs:
                break
    return record


def parse_args(argv: list[str] | None = None) -> AssocRecallConfig:
    """Every ``AssocRecallConfig`` field as a ``--flag`` with its default and type."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    def as_bool(text: str) -> bool:
        if text.strip().lower() not in ("1", "0", "true", "false", "yes", "no"):
            raise argparse.ArgumentTypeError(f"expected true/false, got {text!r}")
        return text.strip().lower() in ("1", "true", "yes")

    for f in dataclasses.fields(AssocRecallConfig):
        kind = as_bool if isinstance(f.default, bool) else type(f.default)
        parser.add_argument(f"--{f.name}", type=kind, default=f.default)
    return AssocRecallConfig(**vars(parser.parse_args(argv)))


def main(argv: list[str] | None = None) -> dict:
    """Train one run from the command line and print its summary."""
    result = train(parse_args(argv))
    print(json.dumps({k: result.get(k) for k in ("final_acc", "steps_to_95", "minutes_to_95",
                                                  "wall_s", "steps_per_s")}))
    return result


if __name__ == "__main__":
    main()
