"""Figures of ReAG's critic chapter: training loss, P(Yes) by passage kind, passages kept (Fig. 7),
the threshold sweep (Fig. 8). Pure functions of the tables that ``kbvqa.reag.critic_eval`` and
``kbvqa.reag.critic_train`` return; each returns a closed matplotlib Figure (shown once, as the cell's
value) and writes nothing. Leaves out: computing any number (``kbvqa.reag.critic_eval``).
"""
from __future__ import annotations

from collections.abc import Sequence

from kbvqa.reag.critic import CLI_THRESHOLD, REAG_THRESHOLD

__all__ = ["draw_critic_loss", "draw_p_yes_by_kind", "draw_passages_kept", "draw_threshold_sweep"]
KIND_COLOURS = {"relevant": "#55a868", "hard": "#c44e52", "soft": "#dd8452"}


def _marks(ax, thresholds: Sequence[float]) -> None:
    for t, style in zip(thresholds, ("--", ":", "-.")):
        ax.axvline(t, color="grey", ls=style, lw=1, label=f"threshold {t:g}")


def draw_critic_loss(curve: dict):
    """Training loss per step (light) and its moving average (dark), with ln 2 (a coin flip)."""
    import math

    import matplotlib.pyplot as plt

    if not curve.get("step"):
        raise ValueError("curve has no steps; pass the curve train_critic returned")
    fig, ax = plt.subplots(figsize=(6, 3.4))
    ax.plot(curve["step"], curve["loss"], color="#4c72b0", alpha=0.3, lw=0.8, label="loss per step")
    ax.plot(curve["step"], curve.get("smoothed", curve["loss"]), color="#4c72b0", label="moving average")
    ax.axhline(math.log(2), color="grey", ls=":", lw=1, label="ln 2 (guessing Yes/No)")
    ax.set(xlabel="step", ylabel="cross-entropy of the Yes/No token", title="Critic fine-tuning")
    ax.legend(fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_p_yes_by_kind(p_yes: Sequence[float], kinds: Sequence[str],
                       thresholds: Sequence[float] = (REAG_THRESHOLD, CLI_THRESHOLD)):
    """Histograms of P(Yes) for relevant passages and hard / soft negatives, with the thresholds."""
    import matplotlib.pyplot as plt

    if len(p_yes) != len(kinds) or not len(p_yes):
        raise ValueError(f"need one kind per score and at least one score; got {len(p_yes)} and {len(kinds)}")
    fig, ax = plt.subplots(figsize=(6, 3.4))
    bins = [i / 20 for i in range(21)]
    for kind in sorted(set(kinds), key=lambda k: list(KIND_COLOURS).index(k) if k in KIND_COLOURS else 9):
        values = [float(s) for s, k in zip(p_yes, kinds) if k == kind]
        ax.hist(values, bins=bins, alpha=0.55, color=KIND_COLOURS.get(kind), label=f"{kind} (n={len(values)})")
    _marks(ax, thresholds)
    ax.set(xlabel="P(Yes)", ylabel="passages", xlim=(0, 1), title="Critic scores by passage kind")
    ax.legend(fontsize=8)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_passages_kept(table: Sequence[dict], paper: tuple[float, float] | None = (128.6, 5.7)):
    """Fig. 7 analogue: passages per query without the critic and after it at each threshold of
    ``kbvqa.reag.critic_eval.critic_table``, labelled with recall / specificity; ``paper``: ReAG's k = 20."""
    import matplotlib.pyplot as plt

    if not table:
        raise ValueError("table is empty; pass critic_eval.critic_table(...)")
    names = ["no critic" if r["threshold"] is None else f"> {r['threshold']:g}" for r in table]
    values = [r["passages_after"] for r in table]
    fig, ax = plt.subplots(figsize=(6, 3.4))
    bars = ax.bar(range(len(values)), values, color=["#8c8c8c"] + ["#4c72b0"] * (len(values) - 1))
    for bar, r in zip(bars, table):
        ax.text(bar.get_x() + bar.get_width() / 2, bar.get_height(),
                f"{bar.get_height():.1f}\nR {r['recall']:.2f} / S {r['specificity']:.2f}",
                ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(values)), names)
    title = "Passages per query (R: recall, S: specificity)"
    if paper:
        title += f"\nReAG, k = 20: {paper[0]} -> {paper[1]}"
    ax.set(ylabel="passages per query", title=title)
    ax.set_ylim(0, max(values) * 1.3 + 1e-9)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_threshold_sweep(rows: Sequence[dict], marks: Sequence[float] = (REAG_THRESHOLD, CLI_THRESHOLD)):
    """Fig. 8 analogue: answer accuracy (or, without a judge, recall and specificity) on the left
    axis and passages kept per query on the right, against the P(Yes) threshold."""
    import matplotlib.pyplot as plt

    if not rows:
        raise ValueError("rows is empty; pass critic_eval.threshold_sweep(...)")
    xs = [r["threshold"] for r in rows]
    fig, ax = plt.subplots(figsize=(6.5, 3.6))
    if all("answer_accuracy" in r for r in rows):
        ax.plot(xs, [r["answer_accuracy"] for r in rows], color="#c44e52", marker="o", label="answer accuracy")
    ax.plot(xs, [r["recall"] for r in rows], color="#55a868", marker=".", ls="--", label="recall (evidence kept)")
    ax.plot(xs, [r["specificity"] for r in rows], color="#8172b2", marker=".", ls="--", label="specificity")
    ax.set(xlabel="P(Yes) threshold", ylabel="share", ylim=(-0.02, 1.02))
    _marks(ax, marks)
    right = ax.twinx()
    right.plot(xs, [r["passages_after"] for r in rows], color="#4c72b0", marker="s", label="passages kept")
    right.set_ylabel("passages kept per query", color="#4c72b0")
    handles = ax.get_legend_handles_labels()[0] + right.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=7, loc="center right")
    ax.set_title("Critic threshold sweep (ReAG Fig. 8)")
    fig.tight_layout()
    plt.close(fig)
    return fig
