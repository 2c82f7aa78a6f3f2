"""Go/no-go stage: can a tiny Qwen2-VL language model learn associative recall on one CPU core?

Trains the text backbone of ``Qwen2VLForConditionalGeneration`` (built from config, no download;
the vision tower is kept, one block of width 32, but never called) on the seeded synthetic tasks
of ``data`` (this package's ``data.py``) and writes a JSON record (config, curves, final accuracy, wall time, git
commit, machine) to ``data/experiments/assoc_recall/<name>.json`` after every evaluation, so an
interrupted run still leaves its curve.

Why this model class: the tiny VLM of the book *is* ``Qwen2VLForConditionalGeneration``. Its
language model is a Qwen2 decoder (RMSNorm, SwiGLU MLP, q/k/v biases, rotary attention) whose
rotary embedding is M-RoPE; with text-only input the model receives no ``image_grid_thw``, builds
``position_ids = arange(T)`` and copies it to the three (time, height, width) sections, so M-RoPE
reduces to plain 1-D RoPE. Training exactly this class means the recipe carries over unchanged.

Run ``python -m kbvqa.experiments.assoc_recall --task mqar --lr 3e-3 --steps 10000``; every
run and its curve are in ``data/experiments/assoc_recall/README.md``. Measured on one shared core
(hidden 128, 2 layers, 4 heads, ~0.74M text parameters, 6-14 steps/s):

- No configuration reached 95 %: the go/no-go answer for "cheap on CPU" is *no-go*.
- MQAR (8 pairs, loss on answers) sits on the "some value from the context" plateau (acc ~0.15,
  loss -> ln 8) for 7,500 steps / 11 min; lr 1e-2, tied embeddings, a 2->8 curriculum, rope
  theta 1e4 and unit-gain init did not shorten it. Asking every key once lets the model answer
  by elimination (0.35 plateau): queries are drawn with replacement by default.
- Toy-world fact passages with LM loss on the *whole* sequence do leave the first plateau (exact
  answers 0.06 -> 0.40 between steps 2,000 and 3,500) and then stall at ~0.40, below what
  attribute-only matching would give (0.64): whole-sequence LM loss is the one change that moved
  anything, and the recipe to keep for the tiny VLM's pretraining.

This package is the experiment's spec: the tasks and query modes it trains on (``TASKS``,
``QUERY_MODES``: ``data.py``), one run's settings (``AssocRecallConfig``) and the folder it writes
(``RESULTS_DIR``: ``kbvqa.models.from_scratch.ASSOC_RECALL_DIR``, whose ``assoc_recall_table`` reads
the runs). ``run.py`` trains (``train``, ``parse_args``, ``main``); ``data.py`` makes the sequences;
``__main__.py`` is ``python -m kbvqa.experiments.assoc_recall``.

Leaves out: images, generation (accuracy is teacher-forced argmax over the answer tokens, which
equals greedy-decoding exact match of the whole answer), checkpoints (nothing is shipped here).
"""
from __future__ import annotations

from kbvqa.experiments.assoc_recall.data import QUERY_MODES, TASKS
from kbvqa.experiments.assoc_recall.run import (
    RESULTS_DIR,
    AssocRecallConfig,
    answer_accuracy,
    lr_at,
    pairs_at,
    parse_args,
    train,
)

__all__ = ["QUERY_MODES", "RESULTS_DIR", "TASKS", "AssocRecallConfig", "answer_accuracy", "lr_at", "pairs_at",
           "parse_args", "train"]
