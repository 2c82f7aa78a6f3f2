"""Where a MOLT training run keeps what it finished, so that an interrupted run picks up from there.

On the reader the run takes hours of CPU (the judge writes the cold start's transcripts, then SFT,
two GRPO variants and eight evaluated rows), more than one sitting of the machines it runs on. Each
finished stage is written at once: an evaluated row's records (``rows/<row>.json``), a trained
judge's trainable weights (``models/<stage>.pt``: what ``kbvqa.rl.common.prepare_trainable`` made
trainable, LoRA adapters or the tiny model's weights) and the training log (``log.json``). Inside
the cold start, the longest stage, a model teacher's transcripts (``data/sft_transcripts.json``)
and the SFT's last checkpoint (``checkpoints/cold.pt``, every 10 steps) are kept too. A rerun
with the same settings and the same judge (``run_fingerprint``) reads them back instead of redoing
them; another setting or judge gets a folder of its own. Files are written whole (a temporary file
renamed), so a run killed mid-write leaves the previous state.

Leaves out: what the stages are (``run.py``), the tables written at the end (``kbvqa.molt.results``).
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict
from pathlib import Path

from kbvqa.config import cache_dir


def default_work_root() -> Path:
    """``<cache>/experiments/molt_training``: out of the repository, kept between runs."""
    return cache_dir() / "experiments" / "molt_training"


def run_fingerprint(config, judge: str) -> str:
    """What every stage depends on: the experiment's settings and the judge's weights (``role_model``)."""
    text = json.dumps({"config": asdict(config), "judge": judge}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _write(path: Path, write) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    write(tmp)
    os.replace(tmp, path)


class WorkFolder:
    """The finished stages of one run (``root/<fingerprint>``); ``fresh`` empties it first."""

    def __init__(self, root: Path, fingerprint: str, fresh: bool = False):
        self.dir = Path(root) / fingerprint
        if fresh and self.dir.exists():
            for path in sorted(self.dir.rglob("*"), reverse=True):
                path.unlink() if path.is_file() else path.rmdir()
        self.dir.mkdir(parents=True, exist_ok=True)

    # -- evaluated rows
    def rows(self, name: str) -> list[dict] | None:
        path = self.dir / "rows" / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def save_rows(self, name: str, records: list[dict]) -> None:
        _write(self.dir / "rows" / f"{name}.json", lambda p: p.write_text(json.dumps(records) + "\n"))

    # -- the training log
    def log(self) -> dict:
        path = self.dir / "log.json"
        return json.loads(path.read_text()) if path.exists() else {}

    def save_log(self, log: dict) -> None:
        _write(self.dir / "log.json", lambda p: p.write_text(json.dumps(log, indent=1) + "\n"))

    # -- trained judges
    def has_model(self, name: str) -> bool:
        return (self.dir / "models" / f"{name}.pt").exists()

    def save_model(self, name: str, vlm) -> None:
        """The parameters of ``vlm`` that training changed (those with ``requires_grad``)."""
        import torch

        state = {n: p.detach().cpu() for n, p in vlm.model.named_parameters() if p.requires_grad}
        if not state:
            raise ValueError(f"{name}: the model has no trainable parameters to save")
        _write(self.dir / "models" / f"{name}.pt", lambda p: torch.save(state, p))

    def load_model(self, name: str, base):
        """``base`` (a fresh judge) made trainable as training made it, then given the saved weights;
        a saved weight the model does not have raises ``ValueError`` (another judge or recipe)."""
        import torch

        from kbvqa.rl.common import prepare_trainable

        state = torch.load(self.dir / "models" / f"{name}.pt", map_location="cpu")
        prepare_trainable(base)                      # the same adapters/freezing as SFT and GRPO use
        params = dict(base.model.named_parameters())
        unknown = sorted(set(state) - set(params))
        if unknown:
            raise ValueError(f"{name}: {len(unknown)} saved weights are not in this judge ({unknown[:2]}...); "
                             "rerun with --fresh")
        with torch.no_grad():
            for n, value in state.items():
                params[n].copy_(value.to(params[n].device, params[n].dtype))
        base.model.eval()
        return base

    # -- inside a stage: the model teacher's transcripts, an SFT run's last checkpoint
    def data(self, name: str):
        """What ``save_data(name, ...)`` kept (plain JSON), or None."""
        path = self.dir / "data" / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def save_data(self, name: str, value) -> None:
        _write(self.dir / "data" / f"{name}.json", lambda p: p.write_text(json.dumps(value) + "\n"))

    def checkpoint(self, name: str) -> dict | None:
        """The last ``kbvqa.rl.sft.training_state`` saved for stage ``name``, or None."""
        import torch

        path = self.dir / "checkpoints" / f"{name}.pt"
        return torch.load(path, map_location="cpu", weights_only=False) if path.exists() else None

    def save_checkpoint(self, name: str, state: dict) -> None:
        import torch

        _write(self.dir / "checkpoints" / f"{name}.pt", lambda p: torch.save(state, p))

    def drop_checkpoint(self, name: str) -> None:
        """Once the stage's model is saved its checkpoint is not needed (it holds optimiser state too)."""
        (self.dir / "checkpoints" / f"{name}.pt").unlink(missing_ok=True)
