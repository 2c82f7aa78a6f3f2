"""The reader's training command line: ``python -m kbvqa.reader.cli`` (``make reader``).

``--set KEY=VALUE`` overrides any scalar knob of ``ReaderTrainConfig`` (``config_overrides``);
``--weight TASK=W`` changes one task's weight in the mixture (``weight_overrides``; relative weights,
0 drops a task);
``--reopen vision|naming|mixture`` takes a run that is past that stage back into it for the extra
steps a larger ``<stage>_steps`` gives (``Trainer.reopen``), after which the later stages run again;
``--until STAGE`` ends the call (with a checkpoint) once that stage is finished; a resumed call goes
on where the last one stopped, with the knobs it is given (recorded in the run's state);
``--from-shipped`` starts an empty run folder from the shipped reader (``ship.seed_run``), so a new round
can reopen a stage on a machine that never held the run; ``--carry FOLDER`` writes the run (tensors and
history, no optimiser) when a call ends, done or not, and ``--from FOLDER`` starts an empty run folder
from it: a run goes on in another session or on another machine (``ship.seed_run`` says what is lost).

Leaves out: the stages themselves (``train.py``), shipping (``ship.py``).
"""
from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from kbvqa.experiments.runs import positive_float, positive_int
from kbvqa.reader.base import reader_cache_dir
from kbvqa.reader.ship import READER_DIR, export, seed_run
from kbvqa.reader.tasks import READER_TASKS, READER_WEIGHTS
from kbvqa.reader.train import ReaderTrainConfig, Trainer


def config_overrides(pairs) -> dict:
    """``["naming_steps=2000", "mixture_lr=1e-4"]`` -> typed ``ReaderTrainConfig`` keyword arguments."""
    fields = {f.name: f for f in dataclasses.fields(ReaderTrainConfig)}
    out = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or key not in fields or key in ("weights", "lora_targets", "device", "threads"):
            raise ValueError(f"--set expects KEY=VALUE with KEY a scalar ReaderTrainConfig knob, got {pair!r}")
        kind = type(getattr(ReaderTrainConfig(), key))
        out[key] = kind(float(value)) if kind is int and "e" in value.lower() else kind(value)
    return out


def weight_overrides(pairs) -> dict:
    """``["creature_name=0.2"]`` -> the reader's mixture weights with those tasks' weights replaced."""
    weights = dict(READER_WEIGHTS)
    for pair in pairs:
        task, sep, value = pair.partition("=")
        if not sep or task not in READER_TASKS:
            raise ValueError(f"--weight expects TASK=W with TASK one of {sorted(READER_TASKS)}, got {pair!r}")
        weight = float(value)
        if weight < 0:
            raise ValueError(f"a mixture weight must be >= 0, got {pair!r}")
        weights[task] = weight
    if not any(w > 0 for w in weights.values()):
        raise ValueError("at least one task needs a positive weight")
    return weights


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description="Train the reader (resumable; see kbvqa.reader.train)")
    parser.add_argument("--run-dir", type=Path, default=None, help="default: <reader cache>/run")
    parser.add_argument("--max-minutes", type=positive_float, default=None,
                        help="stop (with a checkpoint) after this long")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--device", default=None, help="cpu or cuda (default: CUDA when present)")
    parser.add_argument("--export", type=Path, default=None, help="when done, write the shipped reader here")
    parser.add_argument("--carry", type=Path, default=None,
                        help="when this call ends, done or not, write the run here (for --from in another session)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="override ReaderTrainConfig knobs, e.g. --set naming_steps=2000 mixture_batch=16")
    parser.add_argument("--weight", nargs="*", default=[], metavar="TASK=W",
                        help="change mixture weights, e.g. --weight creature_name=0.2")
    parser.add_argument("--until", choices=("vision", "naming", "mixture"), default=None,
                        help="stop (with a checkpoint) once this stage is finished")
    parser.add_argument("--reopen", choices=("vision", "naming", "mixture"), default=None,
                        help="train a finished stage longer (with a larger --set <stage>_steps)")
    parser.add_argument("--from-shipped", action="store_true",
                        help="an empty run folder starts from data/reader/ (then --reopen a stage)")
    parser.add_argument("--from", dest="source", type=Path, default=None,
                        help="an empty run folder starts from this export (a --carry folder, or shipped)")
    args = parser.parse_args(argv)
    run_dir = args.run_dir or reader_cache_dir() / "run"
    source = args.source or (READER_DIR if args.from_shipped else None)
    if source is not None and not (run_dir / "state.pt").exists():
        print(f"seeded {seed_run(run_dir, source)} from {source}")
    config = ReaderTrainConfig(threads=args.threads, device=args.device, weights=weight_overrides(args.weight),
                               **config_overrides(args.set))
    trainer = Trainer(config, run_dir)
    if args.reopen and trainer.reopen(args.reopen):
        print(f"reopened the {args.reopen} stage at step {trainer.state['step']} (round {trainer.state['round']})")
    state = trainer.run(max_minutes=args.max_minutes, until=args.until)
    if state["stage"] == "done" and args.export is not None:
        print(export(trainer, args.export))
    if args.carry is not None:
        print(f"carried: {export(trainer, args.carry)} (stage {state['stage']}, step {state['step']})")


if __name__ == "__main__":
    main()
