"""What training small models from scratch on these cores measured: the associative-recall runs.

``python -m kbvqa.experiments.assoc_recall`` trains tiny transformers from scratch on synthetic
key -> value recall (one JSON per run in ``data/experiments/assoc_recall/``). Those runs are the
evidence for the reader's design (chapter 01): a language model trained from scratch here does not
learn to read a passage in the time the book has, so the reader starts from a pretrained one.
``assoc_recall_table`` reads the committed runs into one markdown table.

Leaves out: the training itself and the synthetic tasks (``kbvqa.experiments.assoc_recall``: ``run.py``, ``data.py``).
"""
from __future__ import annotations

import json
from pathlib import Path

from kbvqa.config import DATA_DIR

ASSOC_RECALL_DIR = DATA_DIR / "experiments" / "assoc_recall"


def assoc_recall_table(results_dir: Path = ASSOC_RECALL_DIR) -> str:
    """A markdown table of every results JSON in ``results_dir``, sorted by name: task, size,
    learning rate, loss, steps, minutes, steps per second, final accuracy and when it reached 95 %."""
    rows = ["| run | task | pairs | h x layers | lr | loss on | steps | min | steps/s | acc | 95 % at |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    for path in sorted(Path(results_dir).glob("*.json")):
        r = json.loads(path.read_text())
        c = r["config"]
        pairs = f"{c['min_pairs']}->{c['num_pairs']}" if c["min_pairs"] else str(c["num_pairs"])
        reached = f"{r['steps_to_95']} ({r['minutes_to_95']:.1f} min)" if r.get("steps_to_95") else "-"
        rows.append(f"| {c['name']} | {c['task']} | {pairs} | {c['hidden_size']}x{c['num_layers']} | "
                    f"{c['lr']:g} | {c['loss_on']} | {r.get('steps_done', 0)} | {r.get('wall_s', 0) / 60:.1f} | "
                    f"{r.get('steps_per_s', 0):.1f} | {r.get('final_acc', 0):.3f} | {reached} |")
    return "\n".join(rows)
