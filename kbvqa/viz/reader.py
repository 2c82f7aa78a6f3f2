"""Pictures of the reader: how a view becomes image tokens, and how its three training stages went.

- ``draw_image_tokens(image, patch, scale)``: the view with its ViT patch grid (thin lines) and the
  pixel-shuffle groups (thick lines: each ``scale x scale`` block of patches becomes ONE token of
  the language model), numbered in the order the tokens enter the prompt.
- ``draw_reader_curves(state, round_labels)``: one panel per training stage (vision classifier,
  naming, the task mixture), stacked: training loss (smoothed) and the stage's test-split checks on
  a second axis; a reopened stage goes on after a dashed line, labelled with the round it belongs
  to (``round_labels``: the run's curves count its own reopens, ``data/reader/rounds.json``
  numbers every round tried, branches included).

Both return a closed ``matplotlib`` figure (a notebook shows it once, as the cell's value).
Leaves out: training and evaluation (``kbvqa.reader``).
"""
from __future__ import annotations

import numpy as np

from kbvqa.models.model_card import stages
from kbvqa.viz.frames import legible_pt

STAGE_TITLES = {"vision": "1. vision tower (classifier)", "naming": "2. LoRA + connector: naming",
                "mixture": "3. LoRA + connector: task mixture"}
CHECK_LABELS = {"vision_entity_acc": "creature from a test view", "naming_acc": "names the creature (greedy)",
                "tf_gold_passage": "KB-VQA, gold passage (teacher-forced)",
                "tf_10_passages": "KB-VQA, gold among 10 (teacher-forced)"}


def draw_image_tokens(image, patch: int = 14, scale: int = 2, size: float = 4.0):
    """The view, its ``patch``-pixel ViT patches and the ``scale x scale`` groups that become tokens."""
    import matplotlib.pyplot as plt

    pixels = np.asarray(image)
    side = pixels.shape[0]
    if side % (patch * scale):
        raise ValueError(f"image side {side} is not a multiple of patch x scale = {patch * scale}")
    fig, ax = plt.subplots(figsize=(size, size))
    ax.imshow(pixels, extent=(0, side, side, 0))
    for x in range(0, side + 1, patch):
        thick = x % (patch * scale) == 0
        kw = {"color": "white", "lw": 2.2 if thick else 0.6, "alpha": 0.95 if thick else 0.6}
        ax.axvline(x, **kw)
        ax.axhline(x, **kw)
    step = patch * scale
    for k, (r, c) in enumerate((r, c) for r in range(side // step) for c in range(side // step)):
        ax.text(c * step + step / 2, r * step + step / 2, str(k + 1), ha="center", va="center", fontsize=11,
                color="black", bbox={"boxstyle": "round,pad=0.15", "fc": "white", "alpha": 0.8, "lw": 0})
    n_patches, n_tokens = (side // patch) ** 2, (side // step) ** 2
    ax.set_title(f"{side}x{side} px: {n_patches} patches -> {n_tokens} tokens", fontsize=11)
    ax.set_xticks([])
    ax.set_yticks([])
    fig.tight_layout()
    plt.close(fig)
    return fig


def _smooth(values, window: int):
    values = np.asarray(values, dtype=float)
    if len(values) < window or window < 2:
        return values
    kernel = np.ones(window) / window
    head = [values[: i + 1].mean() for i in range(window - 1)]
    return np.concatenate([head, np.convolve(values, kernel, mode="valid")])


def _round_offsets(points) -> dict:
    """x offset per round so that a reopened stage (``Trainer.reopen``) continues to the right:
    a round whose steps start again from 0 (the mixture after a reopen) goes after the last one."""
    offsets, last = {}, -1
    for r in sorted({p.get("round", 0) for p in points}):
        steps = [p["step"] for p in points if p.get("round", 0) == r]
        offsets[r] = 0 if min(steps) > last else last + 1 - min(steps)
        last = max(steps) + offsets[r]
    return offsets


CHECK_COLOURS = {"vision_entity_acc": "tab:purple", "naming_acc": "tab:blue", "tf_gold_passage": "tab:orange",
                 "tf_10_passages": "tab:green"}


def draw_reader_curves(state: dict, width: float = 7.6, round_labels: dict | None = None):
    """Training loss and test-split checks of each stage in ``state`` (``curves.json`` of a run),
    one panel per stage, stacked, with one legend of the checks under them; a stage trained again
    after a reopen goes on to the right of a dashed line labelled ``round_labels[r]`` for the run's
    ``r``-th reopen (default "reopen r"), in a band above the data. Every text is at least
    ``frames.legible_pt(width)``."""
    import matplotlib.pyplot as plt

    stages = [s for s in STAGE_TITLES if any(c["stage"] == s for c in state["curves"])]
    if not stages:
        raise ValueError("the training state has no curve points")
    small = max(7.0, legible_pt(width))
    headroom = 1.25                      # the top fifth of each panel holds the round labels
    fig, axes = plt.subplots(len(stages), 1, figsize=(width, 2.7 * len(stages) + 0.5), squeeze=False)
    handles = {}
    for ax, stage in zip(axes[:, 0], stages):
        points = [c for c in state["curves"] if c["stage"] == stage]
        offsets = _round_offsets(points)
        steps = [c["step"] + offsets[c.get("round", 0)] for c in points]
        window = max(1, len(points) // 40)
        loss = _smooth([c["loss"] for c in points], window)
        ax.plot(steps, loss, color="0.45", lw=1.0)
        low, high = float(min(0.0, loss.min())), float(loss.max())
        ax.set_ylim(low, low + (high - low) * headroom)
        ax.set(title=STAGE_TITLES[stage], xlabel="step (this stage, all rounds)", ylabel="training loss (grey)")
        for r in sorted(offsets)[1:]:
            start = min(c["step"] for c in points if c.get("round", 0) == r) + offsets[r]
            ax.axvline(start, color="grey", ls="--", lw=0.8)
            label = (round_labels or {}).get(r, f"reopen {r}")
            ax.annotate(label, (start, 0.985), xycoords=("data", "axes fraction"), fontsize=small,
                        color="0.25", ha="left", va="top", xytext=(2, 0), textcoords="offset points")
        checks = [e for e in state.get("evals", []) if e["stage"] == stage]
        keys = [k for k in CHECK_LABELS if any(k in e for e in checks)]
        if keys:
            twin = ax.twinx()
            for key in keys:
                rows = [e for e in checks if key in e]
                xs = [e["step"] + offsets.get(e.get("round", 0), 0) for e in rows]
                (line,) = twin.plot(xs, [e[key] for e in rows], marker="o", ms=3, color=CHECK_COLOURS[key],
                                    label=CHECK_LABELS[key])
                handles.setdefault(key, line)
            twin.set(ylim=(-0.02, 1.02 * headroom), yticks=[0, 0.25, 0.5, 0.75, 1.0], ylabel="share right (test)")
    if handles:
        fig.legend(list(handles.values()), [CHECK_LABELS[k] for k in handles], loc="lower center", ncol=2,
                   fontsize=max(8.0, small), frameon=False)
    fig.tight_layout(rect=(0, 0.045 if handles else 0, 1, 1))
    plt.close(fig)
    return fig


def draw_tiny_training_curves(curves: dict):
    """Figure: training loss and learning rate by step (left), held-out teacher-forced exact match
    per monitored task (right); every stage of the recipe on one step axis, stages split by a line."""
    import matplotlib.pyplot as plt

    fig, (ax_loss, ax_eval) = plt.subplots(1, 2, figsize=(11, 3.8))
    parts = stages(curves)
    train = [{**p, "step": p["step"] + s["offset"]} for s in parts for p in s.get("train", [])]
    points = [{**p, "step": p["step"] + s["offset"]} for s in parts for p in s.get("eval", [])]
    ax_loss.plot([p["step"] for p in train], [p["loss"] for p in train], color="tab:blue")
    ax_loss.set(xlabel="step", ylabel="training loss", title="Training loss")
    if train:
        ax_lr = ax_loss.twinx()
        ax_lr.plot([p["step"] for p in train], [p["lr"] for p in train], color="tab:gray", lw=0.8, ls="--")
        ax_lr.set_ylabel("learning rate")
    for task in sorted({k for p in points for k in p if k != "step"}):
        ax_eval.plot([p["step"] for p in points], [p.get(task) for p in points], marker=".", label=task)
    ax_eval.set(xlabel="step", ylabel="exact match (teacher-forced)", ylim=(-0.02, 1.02),
                title="Held-out sets (test split, small n)")
    for ax in (ax_loss, ax_eval):
        for s in parts[1:]:
            ax.axvline(s["offset"], color="k", lw=0.8, ls=":")
    if points:
        ax_eval.legend(fontsize=8)
    fig.tight_layout()
    plt.close(fig)  # shown once, as the notebook cell's value
    return fig


def draw_naming_parts(scores: dict, title: str = "What the naming sentence gets right"):
    """Horizontal bars: the share of naming sentences right in each part (``diagnose.score_naming``)."""
    import matplotlib.pyplot as plt

    parts = [p for p in ("colour", "pattern", "family", "name") if f"{p}_acc" in scores]
    if not parts:
        raise ValueError("no <part>_acc entries to draw (expected diagnose.score_naming's result)")
    values = [scores[f"{p}_acc"] for p in parts]
    fig, ax = plt.subplots(figsize=(6, 0.45 * len(parts) + 0.9))
    ax.barh(parts[::-1], values[::-1], color="tab:blue")
    for y, v in enumerate(values[::-1]):
        ax.text(min(v, 0.9) + 0.01, y, f"{v:.2f}", va="center", fontsize=8)
    ax.set(xlim=(0, 1), xlabel=f"share right ({scores.get('n', '?')} test views, greedy)", title=title)
    fig.tight_layout()
    plt.close(fig)
    return fig
