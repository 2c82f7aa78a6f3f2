"""Training the reader in three resumable stages (``make reader``; ``python -m kbvqa.reader.cli``).

1. ``vision``: the vision tower alone, a classifier of fresh views (``tasks.ViewBank``): creature, family,
   colour and pattern heads on the mean patch state; no language model, so thousands of images a minute.
2. ``naming``: LoRA on every linear layer of SmolLM2, the connector and the tower (a tenth of the rate) on
   "Which creature is this?" -> "The image shows the <name>, a <family> with <colour> <pattern>." Why LoRA
   already here: with the LM frozen (LLaVA's stage 1) neither the connector alone (0 % named after 120 steps
   of 16) nor image tokens regressed onto the name's embeddings (0 % after 900) taught SmolLM2 an *invented*
   name; with LoRA it came within 150 steps.
3. ``mixture``: the same adapters and connector on the task mixture (``tasks.READER_WEIGHTS``),
   answer-only loss (``tiny.train_loss``), rationales in ``rationale_order``.

Stages 2 and 3 autocast to bfloat16 only where the hardware computes it (``computes_bf16``; each call
records its choice in ``autocast_bf16``). Every ``checkpoint_minutes`` the run writes ``state.pt`` (trainable
tensors, optimiser, stage, step, curves) atomically into ``reader_cache_dir()/run``; a new call resumes it.
Leaves out: the architecture (``build.py``), shipping and loading (``ship.py``), the card (``card.py``).
"""
from __future__ import annotations

import json
import math
import os
import random
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from kbvqa.config import progress_enabled
from kbvqa.data import get_world
from kbvqa.models.loading import computes_bf16, resolve_device
from kbvqa.models.tiny import train_loss
from kbvqa.reader import tasks
from kbvqa.reader.build import ReaderConfig, VisionHeads, build_reader
from kbvqa.reader.card import quick_checks

STAGES = ("vision", "naming", "mixture", "done")
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


@dataclass(frozen=True)
class ReaderTrainConfig:
    seed: int = 0                        # model init, view bank, example stream, batch order
    world_seed: int = 0                  # the toy world
    threads: int = 2                     # torch threads (the machines have 2 cores)
    device: str | None = None            # None: CUDA when present, else CPU (bf16 autocast where native)
    image_size: int = 112                # see build.ReaderConfig
    # stage 1: vision tower as a classifier
    views_per_entity: int = 160          # fresh renders per creature (+ its page picture)
    vision_steps: int = 3000
    vision_batch: int = 64
    vision_lr: float = 1e-3
    vision_family_weight: float = 0.5    # loss weight of the family (silhouette) head; creature 1, others 0.5
    # stage 2: LoRA + connector + tower on naming
    naming_steps: int = 400
    naming_batch: int = 16
    naming_lr: float = 5e-4              # LoRA; the connector at 2x, the tower at a tenth
    # stage 3: LoRA + connector on the mixture
    lora_rank: int = 32                  # r 32 on all linear layers: 9.8M parameters, ~20 MB in bf16
    lora_alpha: int = 64
    lora_targets: tuple = ALL_LINEAR
    mixture_steps: int = 500
    mixture_batch: int = 4
    mixture_lr: float = 3e-4
    warmup_steps: int = 20               # linear warm-up, then cosine to 10 % (every stage)
    weights: dict = field(default_factory=lambda: dict(tasks.READER_WEIGHTS))
    rationale_order: str = "name_first"  # or "describe_first": what is seen, then the name (tasks.py)
    look_name_batch: int = 0             # + text-only look -> name examples a mixture step (own forward pass)
    # monitoring and checkpoints
    eval_every: int = 100                # mixture steps between teacher-forced checks (test split)
    eval_n: int = 32
    checkpoint_minutes: float = 4.0

    def __post_init__(self):
        for name in ("vision_steps", "naming_steps", "mixture_steps", "vision_batch", "naming_batch",
                     "mixture_batch", "lora_rank", "eval_every", "eval_n", "threads"):
            if not isinstance(getattr(self, name), int) or getattr(self, name) < 1:
                raise ValueError(f"{name} must be a positive int, got {getattr(self, name)!r}")
        if not isinstance(self.look_name_batch, int) or self.look_name_batch < 0:
            raise ValueError(f"look_name_batch must be an int >= 0, got {self.look_name_batch!r}")
        if min(self.vision_lr, self.naming_lr, self.mixture_lr, self.checkpoint_minutes) <= 0:
            raise ValueError("learning rates and checkpoint_minutes must be positive")
        if not self.vision_family_weight >= 0:
            raise ValueError(f"vision_family_weight must be >= 0, got {self.vision_family_weight!r}")
        if self.rationale_order not in tasks.RATIONALE_ORDERS:
            raise ValueError(f"rationale_order must be one of {tasks.RATIONALE_ORDERS}, got {self.rationale_order!r}")


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    """Linear warm-up to ``peak`` over ``warmup`` steps, then cosine down to 10 % at ``total``."""
    if step < warmup:
        return peak * (step + 1) / warmup
    t = min(1.0, (step - warmup) / max(1, total - warmup))
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


class Trainer:
    """Holds the reader, the stage's optimiser and the curves; one ``run`` goes stage to stage."""

    def __init__(self, config: ReaderTrainConfig, run_dir: Path, world=None, base=None):
        self.config, self.run_dir = config, Path(run_dir)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        torch.set_num_threads(config.threads)
        self.world = world or get_world(config.world_seed)
        self.vlm = build_reader(ReaderConfig(image_size=config.image_size), seed=config.seed, base=base)
        self.device = resolve_device(config.device)
        self.bf16 = computes_bf16(self.device)     # bf16 autocast where the hardware computes it, else float32
        self.vlm.model.to(self.device)
        self.state = {"stage": "vision", "step": 0, "curves": [], "evals": [], "wall_s": 0.0,
                      "config": asdict(config)}
        self.heads, self.optimizer = None, None
        self._last_save = time.time()
        path = self.run_dir / "state.pt"
        if path.exists():
            self._resume(torch.load(path, weights_only=False, map_location=self.device))

    # ------------------------------------------------------------------ checkpoints
    def _trainable_names(self):
        """Every tensor a stage trains or trained: the LoRA adapters are saved in every stage, also
        after the run is done (a finished run's state without them resumed with fresh adapters)."""
        core = self.vlm.core
        return [n for n, p in core.named_parameters()
                if p.requires_grad or "lora_" in n or ".vision_model." in f".{n}" or ".connector." in f".{n}"]

    def save(self) -> None:
        core = dict(self.vlm.core.named_parameters())
        blob = {"tensors": {n: core[n].detach().cpu().clone() for n in self._trainable_names()},
                "state": self.state, "heads": self.heads.state_dict() if self.heads is not None else None,
                "optimizer": self.optimizer.state_dict() if self.optimizer is not None else None}
        tmp = self.run_dir / "state.pt.tmp"
        torch.save(blob, tmp)
        os.replace(tmp, self.run_dir / "state.pt")
        (self.run_dir / "curves.json").write_text(json.dumps(self.state, indent=1, default=str))
        self._last_save = time.time()

    def _resume(self, blob) -> None:
        self.state = blob["state"]
        current = json.loads(json.dumps(asdict(self.config), default=str))
        if self.state.get("config") != current:      # the knobs of THIS call are the ones that run now
            self.state.setdefault("config_changes", []).append(
                {"stage": self.state["stage"], "step": self.state["step"], "before": self.state.get("config")})
            self.state["config"] = current
        if self.state["stage"] in ("naming", "mixture", "done") or any("lora_" in n for n in blob["tensors"]):
            self._wrap_lora()                # (a reopened vision stage holds adapters too)
        core = dict(self.vlm.core.named_parameters())
        with torch.no_grad():
            for name, tensor in blob["tensors"].items():
                core[name].copy_(tensor)
        self._setup_stage(blob)
        print(f"resumed: stage {self.state['stage']}, step {self.state['step']}", flush=True)

    def _wrap_lora(self) -> None:
        c = self.config
        self.vlm.add_lora(r=c.lora_rank, alpha=c.lora_alpha, dropout=0.0, target_modules=c.lora_targets)

    # ------------------------------------------------------------------ stages
    def _setup_stage(self, blob=None) -> None:
        c, stage, core = self.config, self.state["stage"], self.vlm.core
        for p in self.vlm.model.parameters():
            p.requires_grad_(False)
        vision, connector = core.model.vision_model, core.model.connector
        if stage == "vision":
            self.bank = tasks.ViewBank(self.world, c.views_per_entity, c.image_size, seed=c.seed)
            self.heads = VisionHeads(vision.config.hidden_size, self.bank.heads()).to(self.device)
            if blob and blob.get("heads"):
                self.heads.load_state_dict(blob["heads"])
            vision.requires_grad_(True)
            groups = [{"params": list(vision.parameters()) + list(self.heads.parameters()), "lr": c.vision_lr}]
        elif stage == "naming":
            self._train_lora()
            connector.requires_grad_(True)
            vision.requires_grad_(True)
            groups = [{"params": self._lora_parameters(), "lr": c.naming_lr},
                      {"params": list(connector.parameters()), "lr": 2 * c.naming_lr},
                      {"params": list(vision.parameters()), "lr": c.naming_lr / 10}]
        elif stage == "mixture":
            self._train_lora()
            connector.requires_grad_(True)
            groups = [{"params": self._lora_parameters(), "lr": c.mixture_lr},
                      {"params": list(connector.parameters()), "lr": c.mixture_lr}]
        else:
            self.optimizer = None
            return
        for g in groups:
            g["peak"] = g["lr"]
        self.optimizer = torch.optim.AdamW(groups, betas=(0.9, 0.95), weight_decay=0.0)
        if blob and blob.get("optimizer") and blob["state"]["stage"] == stage:
            self.optimizer.load_state_dict(blob["optimizer"])

    def _lora_parameters(self) -> list:
        return [p for n, p in self.vlm.model.named_parameters() if "lora_" in n]

    def _train_lora(self) -> None:
        for p in self._lora_parameters():
            p.requires_grad_(True)

    def _next_stage(self) -> None:
        stage = STAGES[STAGES.index(self.state["stage"]) + 1]
        self.state.update(stage=stage, step=0)
        if stage == "naming" and not self._lora_parameters():     # a reopened tower keeps its adapters
            self._wrap_lora()
        self._setup_stage()
        self.save()

    def reopen(self, stage: str) -> bool:
        """Train ``stage`` of a run past it longer (a warm restart, ``_set_lr``) from the step it ended
        on; later stages rerun from step 0 on fresh examples; points carry ``round`` 1, 2, ... Only when
        ``<stage>_steps`` exceeds the stage's steps (a finished round's command trains nothing).
        A reopened ``vision`` stage trains the tower with fresh classifier heads (they are not kept
        past the stage), then the naming stage rebinds the adapters to the changed tower."""
        if stage not in STAGES[:-1]:
            raise ValueError(f"only one of {STAGES[:-1]} can be reopened, got {stage!r}")
        s = self.state
        resume_at = 1 + max((p["step"] for p in s["curves"] if p["stage"] == stage), default=-1)
        if STAGES.index(s["stage"]) <= STAGES.index(stage) or resume_at >= getattr(self.config, f"{stage}_steps"):
            return False
        mixture_done = sum(1 for p in s["curves"] if p["stage"] == "mixture")
        s.setdefault("reopened", []).append({"to": stage, "from_stage": s["stage"], "from_step": s["step"],
                                             "at_step": resume_at})
        s["mixture_offset"] = s.get("mixture_offset", 0) + mixture_done * self.config.mixture_batch
        s.update(stage=stage, step=resume_at, round=s.get("round", 0) + 1)
        self._setup_stage()
        self.save()
        return True

    def restart_step(self) -> int:
        """Where this round's reopen resumed the current stage, else 0 (reopen i starts round i + 1)."""
        s = self.state
        starts = [r["at_step"] for i, r in enumerate(s.get("reopened", []))
                  if r["to"] == s["stage"] and i + 1 == s.get("round", 0)]
        return starts[0] if starts else 0

    def _set_lr(self, total: int) -> None:
        """``lr_at`` from the stage's (re)start: a reopened stage warms up again, since fresh AdamW moments
        at a near-peak rate move every trained weight by about the rate, whatever its gradient; a run
        carried on inside a stage with fresh moments (``ship.seed_run``) ramps back into the schedule."""
        s, start, warmup = self.state, self.restart_step(), self.config.warmup_steps
        here = (s["stage"], s.get("round", 0))
        fresh = [f["step"] for f in s.get("fresh_moments", []) if (f["stage"], f["round"]) == here]
        ramp = min(1.0, (s["step"] - fresh[-1] + 1) / warmup) if fresh else 1.0
        for g in self.optimizer.param_groups:
            g["lr"] = ramp * lr_at(s["step"] - start, total - start, g["peak"], warmup)

    def _log(self, loss: float, seconds: float, **extra) -> None:
        s = self.state
        s["curves"].append({"stage": s["stage"], "step": s["step"], "round": s.get("round", 0), "loss": round(loss, 5),
                            "lr": self.optimizer.param_groups[0]["lr"], "seconds": round(seconds, 2), **extra})

    # ------------------------------------------------------------------ one step per stage
    def vision_step(self, rng: random.Random) -> float:
        bank, c = self.bank, self.config
        idx = [rng.randrange(len(bank.pixels)) for _ in range(c.vision_batch)]
        pixels = tasks.to_pixels(torch.from_numpy(bank.pixels[idx])).to(self.device)
        labels = torch.from_numpy(bank.labels[idx]).to(self.device)
        states = self.vlm.core.model.vision_model(pixel_values=pixels).last_hidden_state
        logits = self.heads(states)
        weights = (1.0, c.vision_family_weight, 0.5, 0.5)
        return sum(w * torch.nn.functional.cross_entropy(lg, labels[:, k])
                   for k, (w, lg) in enumerate(zip(weights, logits)))

    def naming_step(self, rng: random.Random):
        cfg = tasks.mix_config(self.config.image_size, self.config.seed)
        order = self.config.rationale_order
        examples = [tasks.in_rationale_order(tasks.creature_name(self.world, rng, cfg), order, self.world)
                    for _ in range(self.config.naming_batch)]
        return train_loss(self.vlm, examples)

    def mixture_step(self, stream, rng: random.Random):
        """The mixture's batch, plus ``look_name_batch`` text-only examples; every example weighs the same."""
        c = self.config
        loss = train_loss(self.vlm, [next(stream) for _ in range(c.mixture_batch)])
        if c.look_name_batch:
            side = train_loss(self.vlm, [tasks.look_name(self.world, rng, None) for _ in range(c.look_name_batch)])
            loss = (c.mixture_batch * loss + c.look_name_batch * side) / (c.mixture_batch + c.look_name_batch)
        return loss

    def loss(self, stage: str, rng: random.Random, stream):
        if stage == "vision":
            return self.vision_step(rng)
        return self.naming_step(rng) if stage == "naming" else self.mixture_step(stream, rng)

    # ------------------------------------------------------------------ the loop
    def run(self, max_minutes: float | None = None, progress: bool = True, until: str | None = None) -> dict:
        """Train stage after stage until the run is done; ``max_minutes`` ends the call early (with a
        checkpoint), ``until`` ends it (with a checkpoint) once that stage is finished."""
        if until is not None and until not in STAGES[:-1]:
            raise ValueError(f"until must be one of {STAGES[:-1]}, got {until!r}")
        from tqdm.auto import tqdm

        c, start, s = self.config, time.time(), self.state
        s.setdefault("autocast_bf16", []).append({"stage": s["stage"], "step": s["step"], "on": self.bf16})
        if self.optimizer is None and self.state["stage"] != "done":
            self._setup_stage()
        while self.state["stage"] != "done":
            stage = self.state["stage"]
            total = {"vision": c.vision_steps, "naming": c.naming_steps, "mixture": c.mixture_steps}[stage]
            stream = None
            if stage == "mixture":
                seen = self.state.get("mixture_offset", 0) + self.state["step"] * c.mixture_batch
                stream = tasks.iter_reader_examples(self.world, tasks.mix_config(c.image_size, c.seed), c.weights,
                                                    start=seen, rationale_order=c.rationale_order)
            bar = tqdm(total=total, initial=self.state["step"], desc=stage,
                       disable=not progress_enabled(progress), mininterval=30)
            self.vlm.model.train()
            while self.state["step"] < total:
                t0 = time.time()
                rng = random.Random(f"reader-batch:{c.seed}:{stage}:{self.state['step']}")
                self._set_lr(total)
                with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=stage != "vision" and self.bf16):
                    loss = self.loss(stage, rng, stream)
                loss.backward()
                params = [p for g in self.optimizer.param_groups for p in g["params"]]
                torch.nn.utils.clip_grad_norm_(params, 1.0)
                self.optimizer.step()
                self.optimizer.zero_grad(set_to_none=True)
                self.state["wall_s"] += time.time() - t0
                self._log(loss.item(), time.time() - t0)
                self.state["step"] += 1
                bar.update(1)
                if self.state["step"] % {"vision": 500, "naming": 50, "mixture": c.eval_every}[stage] == 0:
                    self.evaluate()                # a quick check every 500 / 50 / eval_every steps
                if time.time() - self._last_save > 60 * c.checkpoint_minutes:
                    self.save()
                if max_minutes is not None and time.time() - start > 60 * max_minutes:
                    self.save()
                    bar.close()
                    return self.state
            bar.close()
            last = self.state["evals"][-1] if self.state["evals"] else {}
            if (last.get("stage"), last.get("step")) != (stage, self.state["step"]):
                self.evaluate()                 # the stage's final check, unless it just ran
            self._next_stage()                 # (saves the run)
            if stage == until:
                return self.state
        return self.state

    @torch.no_grad()
    def evaluate(self) -> dict:
        """A quick check on the TEST split: view classification, naming, or teacher-forced KB-VQA."""
        t0 = time.time()
        self.vlm.model.eval()
        point = {"stage": self.state["stage"], "step": self.state["step"], "round": self.state.get("round", 0),
                 **quick_checks(self, n=self.config.eval_n)}
        self.vlm.model.train()
        point["seconds"] = round(time.time() - t0, 1)
        self.state["evals"].append(point)
        print(json.dumps(point), flush=True)
        return point
