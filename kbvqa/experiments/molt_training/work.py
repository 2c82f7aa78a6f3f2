"""Where a MOLT training run keeps what it finished (``kbvqa.experiments.work``), and under which name.

On the reader the run takes hours of CPU (the judge writes the cold start's transcripts, then SFT,
two GRPO variants and eight evaluated rows), more than one sitting of the machines it runs on. Its
work folder keeps every evaluated row (``rows/<row>.json``), trained judge (``models/cold.pt``,
``grpo_no_proc.pt``, ``grpo_full.pt``) and the log; inside the cold start, the longest stage, a model
teacher's transcripts (``data/sft_transcripts.json``) and the SFT's last checkpoint
(``checkpoints/cold.pt``, every 10 steps). A rerun with the same settings and the same judge
(``run_fingerprint``) reads them back; another setting or judge gets a folder of its own.

Leaves out: the folder itself (``kbvqa.experiments.work``), what the stages are (``run.py``), the
tables written at the end (``kbvqa.molt.results``).
"""
from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from kbvqa.experiments.work import WorkFolder, work_fingerprint
from kbvqa.experiments.work import default_work_root as _work_root

__all__ = ["WorkFolder", "default_work_root", "run_fingerprint"]


def default_work_root() -> Path:
    """``<cache>/experiments/molt_training``: out of the repository, kept between runs."""
    return _work_root("molt_training")


def run_fingerprint(config, judge: str) -> str:
    """What every stage depends on: the experiment's settings and the judge's weights (``role_model``)."""
    settings = asdict(config)
    for name, default in (("sft_roles", "teacher"), ("sft_pairwise_per_query", 0), ("gate_queries", 0)):  # later
        if settings.get(name) == default:         # options: the runs before them keep their folders
            settings.pop(name)
    return work_fingerprint({"config": settings, "judge": judge})
