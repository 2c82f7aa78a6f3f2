"""Where a long experiment keeps what it finished, so that an interrupted run picks up from there.

On the reader an experiment's training stages take hours of CPU, more than one sitting of the
machines they run on. Each finished stage is written at once: an evaluated row's records
(``rows/<row>.json``), a trained model's trainable weights (``models/<stage>.pt``: what
``kbvqa.rl.common.prepare_trainable`` made trainable, LoRA adapters, the connector, the tiny model's
weights) and the training log (``log.json``). Inside a long stage, plain JSON the stage computed
(``data/<name>.json``: a model teacher's transcripts, the records of a row evaluated so far) and
an SFT or GRPO run's last checkpoint (``checkpoints/<stage>.pt``) are kept too. A rerun with the
same settings and models (the folder's fingerprint, ``work_fingerprint``) reads them back instead of
redoing them; another setting or model gets a folder of its own. Files are written whole (a
temporary file renamed), so a run killed mid-write leaves the previous state.

- ``WorkFolder``: the files of one run; ``trained_model``: a stage's model read back or trained and
  saved; ``stage_checkpointing``: the ``resume`` / ``on_checkpoint`` arguments of ``kbvqa.rl.sft_train``
  and ``grpo_train``; ``map_in_chunks``: a long evaluation kept chunk by chunk.
- ``work_fingerprint``, ``default_work_root``: the folder's name and where folders go by default.

Used by ``kbvqa.experiments.molt_training`` and ``kbvqa.experiments.reag_ladder``.

Leaves out: what the stages are (each experiment's ``run.py``), the tables written at the end.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

from kbvqa.config import cache_dir


def default_work_root(experiment: str) -> Path:
    """``<cache>/experiments/<experiment>``: out of the repository, kept between runs."""
    return cache_dir() / "experiments" / experiment


def work_fingerprint(what: dict) -> str:
    """16 hex digits of the JSON of ``what`` (keys sorted): the settings and models every stage depends on."""
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


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

    # -- trained models
    def has_model(self, name: str) -> bool:
        return (self.dir / "models" / f"{name}.pt").exists()

    def save_model(self, name: str, vlm) -> None:
        """The parameters of ``vlm`` that training changed (those with ``requires_grad``)."""
        import torch

        state = {n: p.detach().cpu() for n, p in vlm.model.named_parameters() if p.requires_grad}
        if not state:
            raise ValueError(f"{name}: the model has no trainable parameters to save")
        _write(self.dir / "models" / f"{name}.pt", lambda p: torch.save(state, p))

    def load_model(self, name: str, base, **prepare):
        """``base`` (a fresh copy of the model that was trained) made trainable as training made it
        (``prepare``: ``prepare_trainable``'s ``lora`` / ``freeze_vision`` when the stage set them),
        then given the saved weights; a saved weight the model does not have raises ``ValueError``
        (another model or recipe)."""
        return load_saved_model(self.dir / "models" / f"{name}.pt", base, **prepare)

    # -- inside a stage: plain data it computed, an SFT run's last checkpoint
    def data(self, name: str):
        """What ``save_data(name, ...)`` kept (plain JSON), or None."""
        path = self.dir / "data" / f"{name}.json"
        return json.loads(path.read_text()) if path.exists() else None

    def save_data(self, name: str, value) -> None:
        _write(self.dir / "data" / f"{name}.json", lambda p: p.write_text(json.dumps(value) + "\n"))

    def drop_data(self, name: str) -> None:
        (self.dir / "data" / f"{name}.json").unlink(missing_ok=True)

    def checkpoint(self, name: str) -> dict | None:
        """The last ``kbvqa.rl.common.training_state`` saved for stage ``name``, or None."""
        import torch

        path = self.dir / "checkpoints" / f"{name}.pt"
        return torch.load(path, map_location="cpu", weights_only=False) if path.exists() else None

    def save_checkpoint(self, name: str, state: dict) -> None:
        import torch

        _write(self.dir / "checkpoints" / f"{name}.pt", lambda p: torch.save(state, p))

    def drop_checkpoint(self, name: str) -> None:
        """Once the stage's model is saved its checkpoint is not needed (it holds optimiser state too)."""
        (self.dir / "checkpoints" / f"{name}.pt").unlink(missing_ok=True)


def load_saved_model(path: Path, base, **prepare):
    """``base`` made trainable as training made it (``prepare``: ``prepare_trainable``'s ``lora`` /
    ``freeze_vision``), then given the weights ``WorkFolder.save_model`` wrote to ``path``; a saved
    weight the model does not have raises ``ValueError`` (another model or recipe)."""
    import torch

    from kbvqa.rl.common import prepare_trainable

    state = torch.load(path, map_location="cpu")
    prepare_trainable(base, **prepare)
    params = dict(base.model.named_parameters())
    unknown = sorted(set(state) - set(params))
    if unknown:
        raise ValueError(f"{Path(path).name}: {len(unknown)} saved weights are not in this model "
                         f"({unknown[:2]}...); rerun with --fresh")
    with torch.no_grad():
        for n, value in state.items():
            params[n].copy_(value.to(params[n].device, params[n].dtype))
    base.model.eval()
    return base


def trained_model(work: WorkFolder | None, name: str, train, base, on_saved=None, **prepare):
    """The model of stage ``name``: read back into ``base()`` (a fresh model) when ``work`` holds it,
    else ``train()``, saved to ``work`` (its checkpoint dropped) and ``on_saved()`` called (to write
    the log beside it). ``prepare``: ``WorkFolder.load_model``'s. Without ``work``: ``train()``."""
    if work is not None and work.has_model(name):
        return work.load_model(name, base(), **prepare)
    vlm = train()
    if work is not None:
        work.save_model(name, vlm)
        if on_saved is not None:
            on_saved()
        work.drop_checkpoint(name)
    return vlm


def stage_checkpointing(work: WorkFolder | None, name: str) -> tuple[dict, float]:
    """``(kwargs, seconds_before)`` for an SFT or GRPO stage ``name``: ``kwargs`` are the loop's ``resume``
    (the last checkpoint in ``work``, or None) and ``on_checkpoint`` (saves each new one with the
    stage's seconds so far); ``seconds_before`` is what the earlier runs spent. ``({}, 0.0)`` without ``work``."""
    if work is None:
        return {}, 0.0
    resume = work.checkpoint(name)
    before, t0 = (resume or {}).get("seconds", 0.0), time.perf_counter()

    def keep(state):
        work.save_checkpoint(name, {**state, "seconds": before + time.perf_counter() - t0})
    return {"resume": resume, "on_checkpoint": keep}, before


def map_in_chunks(work: WorkFolder | None, name: str, items: list, evaluate, chunk: int) -> tuple[list, float]:
    """``(evaluate(items[0:chunk]) + evaluate(items[chunk:2 * chunk]) + ..., seconds)``, each chunk's
    results kept in ``work`` as ``data/<name>.json`` as soon as it is done, so a rerun goes on from the
    first chunk not done (``seconds`` add up across runs). ``evaluate`` must give the same results
    on a chunk as on the whole list (e.g. greedy decoding in batches that ``chunk`` is a multiple
    of). The caller saves the finished results and ``drop_data(name)``. Without ``work``: one call."""
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be a positive int, got {chunk!r}")
    t0 = time.perf_counter()
    if work is None:
        return list(evaluate(items)), time.perf_counter() - t0
    saved = work.data(name) or {"seconds": 0.0, "done": []}
    done = list(saved["done"])
    if len(done) > len(items):
        raise ValueError(f"{name}: {len(done)} results kept for {len(items)} items; rerun with --fresh")
    for start in range(len(done), len(items), chunk):
        done += list(evaluate(items[start:start + chunk]))
        work.save_data(name, {"seconds": saved["seconds"] + time.perf_counter() - t0, "done": done})
    return done, saved["seconds"] + time.perf_counter() - t0
