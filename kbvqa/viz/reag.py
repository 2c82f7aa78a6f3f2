"""Figures of ReAG's chapters: retrieval (20), cold start (22) and GRPO (23).

- ``draw_recall_by_k(rows)``: evidence recall against k for the runs of
  ``multilevel.evaluate_multilevel`` (coarse, coarse + fine, oracle box, crop alone).
- ``draw_boxes_and_crops(queries, boxes, margin, square)``: each query image with its
  ground-truth (green) and predicted (red, dashed) box, and the crop the fine stage retrieves with;
  1.6 in per query and titles no smaller than ``frames.legible_pt`` of the figure's width (at 1.9 in
  per query and 8 pt, six queries' titles were 7.5 px at the page column).
- ``draw_sft_curves``, ``draw_grpo_curves``, ``draw_group_advantages``: the training curves of
  chapters 22-23 and Eq. 8 per group; the SFT legend sits below the axes (inside, it covered the
  committed run's $L_{SFT}$ curve).
- ``draw_ladder``: chapter 24's rungs beside the paper's Tab. 4; its left legend sits below the bars
  (inside, it covered a bar and the diagnostic lines) and no text is under 8 pt (7 pt: 7.5 px).

Every figure function closes its figure and returns it (shown once as the cell's value).
Leaves out: retrieval and grounding (``kbvqa.retrieval.multilevel``, ``kbvqa.retrieval.subject_grounding``),
the critic's figures (``kbvqa.viz.critic``), the paper's numbers (``kbvqa.reag.paper``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np

from kbvqa.data.schema import open_image
from kbvqa.retrieval.subject import box_iou, crop_to_box
from kbvqa.viz.frames import legible_pt
from kbvqa.viz.labels import results_model_label

__all__ = ["RUN_LABELS", "draw_boxes_and_crops", "draw_group_advantages", "draw_grpo_curves", "draw_recall_by_k",
           "draw_sft_curves"]

RUN_LABELS = {"coarse": "coarse (whole image)", "coarse_fine": "coarse + fine (predicted box)",
              "coarse_fine_oracle": "coarse + fine (oracle box)", "fine_oracle": "fine alone (oracle crop)",
              "union": "coarse + fine, not cut to k"}
_COLOURS = {"coarse": "#4c72b0", "coarse_fine": "#c44e52", "coarse_fine_oracle": "#55a868",
            "fine_oracle": "#8172b2", "union": "#937860"}


def draw_recall_by_k(rows: Sequence[dict], runs: Sequence[str] = ("coarse", "coarse_fine", "coarse_fine_oracle",
                                                                     "fine_oracle"), title: str | None = None):
    """Evidence recall against k for each run of ``evaluate_multilevel(...)["rows"]``."""
    import matplotlib.pyplot as plt

    if not rows:
        raise ValueError("rows is empty; pass evaluate_multilevel(...)['rows']")
    missing = [r for r in runs if r not in rows[0]]
    if missing:
        raise ValueError(f"runs {missing} are not in the rows (have {sorted(rows[0])})")
    ks = [r["k"] for r in rows]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    for i, run in enumerate(runs):
        ax.plot(ks, [r[run] for r in rows], marker="os^vd"[i % 5], color=_COLOURS.get(run),
                ls="--" if run in ("fine_oracle", "union") else "-", label=RUN_LABELS.get(run, run))
    ax.set(xlabel="k (documents kept)", ylabel="evidence recall", xticks=ks,
           title=title or "Is the evidence passage among the passages of the top-k documents?")
    low = min(min(r[run] for run in runs) for r in rows)
    ax.set_ylim(max(0.0, math.floor(low * 10) / 10 - 0.05), 1.01)
    ax.legend(fontsize=8, loc="lower right")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def _outline(ax, box, colour: str, style: str) -> None:
    from matplotlib.patches import Rectangle

    if box is None:
        return
    x0, y0, x1, y1 = (float(v) for v in box)
    ax.add_patch(Rectangle((x0, y0), x1 - x0, y1 - y0, fill=False, ec=colour, ls=style, lw=2))


def draw_boxes_and_crops(queries: Sequence, boxes: Sequence, margin: float = 0.15, square: bool = True,
                         subjects: Sequence[str] | None = None):
    """Top row: each query image with its ground-truth box (green) and the predicted one (red,
    dashed), titled with the IoU; bottom row: the crop the fine stage sees (the whole image, and
    "no box", where nothing was predicted)."""
    import matplotlib.pyplot as plt


    if not queries or len(queries) != len(boxes):
        raise ValueError(f"need one box (or None) per query; got {len(queries)} queries and {len(boxes)} boxes")
    n = len(queries)
    fig, axes = plt.subplots(2, n, figsize=(1.6 * n, 4.3), squeeze=False)
    fs = max(8.0, legible_pt(1.6 * n + 0.3))          # + 0.3 in: the tight crop's padding
    for j, (q, box) in enumerate(zip(queries, boxes)):
        im = open_image(q.image)
        top, bottom = axes[0][j], axes[1][j]
        top.imshow(im)
        _outline(top, q.box, "#2ca02c", "-")
        _outline(top, box, "#d62728", "--")
        iou = box_iou(list(box) if box is not None else None, list(q.box))
        label = f"'{subjects[j]}'\n" if subjects else ""
        top.set_title(f"{label}IoU {iou:.2f}", fontsize=fs)
        bottom.imshow(crop_to_box(im, box, margin, square))
        bottom.set_title("crop" if box is not None else "no box: whole image", fontsize=fs)
        for ax in (top, bottom):
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("ground truth (green) vs predicted box (red, dashed); below: the crop", fontsize=fs + 1)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_sft_curves(result, alpha: float = 0.8, title: str = "Cold start (Eq. 5)"):
    """L_A, L_T and L_SFT per step of an ``SFTResult``, or of a training log's ``curve`` (a dict with
    the same fields: ``steps``, ``loss``, ``answer_loss``, ``trace_loss``), on a log scale."""
    if isinstance(result, dict):
        result = SimpleNamespace(**{k: result.get(k, []) for k in ("steps", "loss", "answer_loss", "trace_loss")})
    if not result.steps:
        raise ValueError("the SFT result has no points")
    fig, ax = plt.subplots(figsize=(6.4, 3.4))
    ax.plot(result.steps, result.trace_loss, label="$L_T$ (trace tokens)", color="tab:orange")
    ax.plot(result.steps, result.answer_loss, label="$L_A$ (answer tokens)", color="tab:blue")
    ax.plot(result.steps, result.loss, label=f"$L_{{SFT}}$ = {alpha}·$L_A$ + {1 - alpha:.1f}·$L_T$",
            color="black", lw=2)
    ax.set(xlabel="optimiser step", ylabel="mean NLL per token", yscale="log", title=title)
    # below the axes: inside, "best" left it over the L_SFT curve of the committed run (chapter 22)
    ax.legend(frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3)
    fig.tight_layout()
    plt.close(fig)
    return fig


def _smooth(values: Sequence[float], window: int) -> np.ndarray:
    v = np.asarray(values, dtype=float)
    if window <= 1 or len(v) < window:
        return v
    return np.convolve(v, np.ones(window) / window, mode="valid")


def draw_grpo_curves(result, window: int = 1, title: str = "GRPO on the toy world (cf. ReAG Fig. 5)"):
    """Accuracy reward and format reward per step of a ``GRPOResult``, or of a training log's
    ``curves`` dict (+ share of zero-spread groups)."""
    if isinstance(result, dict):
        from kbvqa.rl.grpo import GRPOResult

        result = GRPOResult(curves=dict(result))
    if not result.curves.get("accuracy_reward"):
        raise ValueError("the GRPO result has no points")
    steps = np.arange(len(result.accuracy_reward))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, name, color in ((axes[0], "accuracy_reward", "tab:green"), (axes[0], "format_reward", "tab:purple")):
        values = getattr(result, name)
        ax.plot(steps, values, "o-", alpha=0.35 if window > 1 else 1, color=color,
                label=name.replace("_", " "))
        if window > 1 and len(values) >= window:
            ax.plot(steps[window - 1:], _smooth(values, window), color=color, lw=2)
    axes[0].set(xlabel="GRPO step", ylabel="mean reward of the batch", ylim=(-0.05, 1.05), title=title)
    axes[0].legend(frameon=False)
    axes[1].plot(steps, result.zero_spread_groups, "s-", color="gray")
    axes[1].set(xlabel="GRPO step", ylabel="share of groups", ylim=(-0.05, 1.05),
                title="groups with equal rewards (A = 0)")
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_group_advantages(rewards, advantages, group_size: int, title: str = "Eq. 8 per group"):
    """Rewards (bars) and advantages (dots) of every completion, one panel column per group."""
    r = np.asarray(rewards, dtype=float).reshape(-1, group_size)
    a = np.asarray(advantages, dtype=float).reshape(-1, group_size)
    fig, ax = plt.subplots(figsize=(7, 3))
    x = np.arange(r.size)
    ax.bar(x, r.reshape(-1), color="lightsteelblue", label="reward R_i (Eq. 9)")
    ax.plot(x, a.reshape(-1), "o", color="crimson", label="advantage Â_i (Eq. 8)")
    for g in range(1, r.shape[0]):
        ax.axvline(g * group_size - 0.5, color="gray", lw=0.8, ls="--")
    ax.axhline(0, color="black", lw=0.6)
    ax.set(xlabel="completion (groups separated by dashes)", title=title)
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_ladder(results: dict, title: str | None = None):
    """Our accuracy per rung with Wilson intervals (left; the oracle diagnostics as horizontal
    lines) next to the paper's Tab. 4 rows (E-VQA single-hop and InfoSeek all, right panel), on the
    same 0-50 % scale, rungs in ladder order."""
    import matplotlib.pyplot as plt
    import numpy as np

    rows = results["rows"]
    if not rows:
        raise ValueError("results has no rows")
    x = np.arange(len(rows))
    acc = np.array([r["accuracy"] for r in rows]) * 100
    err = np.array([[r["accuracy"] - r["low"], r["high"] - r["accuracy"]] for r in rows]).T * 100
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 3.8), sharex=True)
    ax.bar(x, acc, yerr=err, color="#4c72b0", capsize=3, label="ladder (95 % Wilson)")
    for r, style in zip(results.get("diagnostics", []), ("--", ":", "-.")):
        ax.axhline(r["accuracy"] * 100, color="gray", ls=style, lw=1.2, label=f"{r['label']} (diagnostic)")
    ax.set(ylabel="accuracy (%)", title=title or f"ours: toy world, {results_model_label(results)}, n = {results['n']}",
           ylim=(0, max(50, *(r["high"] * 100 for r in rows + results.get("diagnostics", [])))))
    small = max(8.0, legible_pt(10 + 0.3))           # + 0.3 in: the tight crop's padding (7 pt: 7.5 px)
    ax.legend(fontsize=small, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2)  # off the bars
    bx.plot(x, [r["paper_evqa"] for r in rows], "o-", color="#c44e52", label="E-VQA single-hop")
    bx.plot(x, [r["paper_infoseek"] for r in rows], "s-", color="#55a868", label="InfoSeek all")
    bx.set(ylabel="accuracy (%)", title="ReAG Tab. 4 (Qwen2.5-VL-3B)", ylim=(0, 50))
    bx.legend(fontsize=small, frameon=False)
    for a in (ax, bx):
        a.set_xticks(x, [r["rung"].replace("_", "\n") for r in rows], fontsize=small)
        a.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
