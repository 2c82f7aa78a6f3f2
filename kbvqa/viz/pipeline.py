"""The book's map: four systems placed on one retrieve -> select -> generate -> learn pipeline.

``draw_pipeline`` is a pure function of the table below (no I/O); ``save_pipeline_figure`` writes
the SVG that ``book/intro.md`` shows (``python -m kbvqa.viz.pipeline`` regenerates it, and a test
checks the committed file is up to date). ``draw_ablation`` draws chapter 30's ablation, 10 in wide
with no text under 8 pt (at 11 in its 7 pt legend was 6.8 px at the page column) and its legend below
the bars it covered. Leaves out: every other figure of the book.
"""
from __future__ import annotations

from pathlib import Path

from kbvqa.config import REPO_ROOT
from kbvqa.pipeline.results import STAGES
from kbvqa.viz.frames import legible_pt
from kbvqa.viz.labels import results_model_label

PIPELINE_STAGES = ("retrieve", "select / re-rank", "generate", "learn")

# system -> (what it does at each stage); "—" where the system adds nothing of its own.
PIPELINE_SYSTEMS: dict[str, tuple[str, str, str, str]] = {
    "RCTS": (
        "hybrid text+image\nlate interaction (Eq. 2-4)",
        "MCTS with heuristic\nrewards re-ranks examples",
        "K-shot prompt with\nreasoning contexts",
        "— (training-free;\nKB enriched offline)",
    ),
    "SeRTS": (
        "BM25 over abstracts\n(Eq. 3-4)",
        "self-rewarding tree search\nover search queries (Alg. 1)",
        "answer from the best\nnode's documents",
        "PPO on search\ntrajectories (Eq. 2)",
    ),
    "ReAG": (
        "coarse (image) + fine\n(cropped subject) retrieval",
        "critic keeps passages\nwith P(Yes) > t (Eq. 4)",
        "reasoning generator\n<think> / <answer>",
        "SFT cold start (Eq. 5)\n+ GRPO (Eq. 6-9)",
    ),
    "MOLT": (
        "image -> summaries, then\nfusion re-scoring (Eq. 3)",
        "one-pass weak-to-strong\nladder tournament (Eq. 6-7)",
        "answer from the\nwinning evidence",
        "SFT + GRPO with process\nreward (Eq. 8-11)",
    ),
}

_COLOURS = ("#dbe9f6", "#fde2c8", "#d9f0d3", "#eadcf2")


def draw_pipeline(systems: dict[str, tuple[str, ...]] | None = None, stages=PIPELINE_STAGES):
    """Return a matplotlib Figure: one column per stage, one row per system."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    systems = PIPELINE_SYSTEMS if systems is None else systems
    for name, cells in systems.items():
        if len(cells) != len(stages):
            raise ValueError(f"{name}: expected {len(stages)} cells, got {len(cells)}")
    n_rows, n_cols = len(systems), len(stages)
    fig, ax = plt.subplots(figsize=(2.6 * n_cols + 1.2, 1.05 * n_rows + 1.0))
    ax.set_xlim(-1.2, n_cols * 2.6)
    ax.set_ylim(-n_rows - 0.2, 1.0)
    ax.axis("off")
    for j, stage in enumerate(stages):
        x0 = j * 2.6 + 0.05
        ax.add_patch(FancyBboxPatch((x0, 0.3), 2.2, 0.5, boxstyle="round,pad=0.02",
                                    fc="white", ec="#555", lw=1.0))
        ax.text(x0 + 1.1, 0.55, stage, ha="center", va="center", fontsize=12, weight="bold")
        if j < n_cols - 1:
            ax.add_patch(FancyArrowPatch((x0 + 2.27, 0.55), (x0 + 2.58, 0.55),
                                         arrowstyle="-|>", mutation_scale=14, color="#555"))
    for i, (name, cells) in enumerate(systems.items()):
        y = -i - 0.5
        ax.text(-0.6, y, name, ha="center", va="center", fontsize=12, weight="bold")
        for j, text in enumerate(cells):
            x0 = j * 2.6 + 0.05
            ax.add_patch(FancyBboxPatch((x0, y - 0.4), 2.2, 0.8, boxstyle="round,pad=0.02",
                                        fc=_COLOURS[j % len(_COLOURS)], ec="#888", lw=0.8))
            ax.text(x0 + 1.1, y, text, ha="center", va="center", fontsize=8.5)
    fig.tight_layout()
    return fig


def save_pipeline_figure(path: str | Path) -> Path:
    """Write the pipeline figure as SVG without a timestamp (the file is byte-stable)."""
    import matplotlib

    matplotlib.rcParams["svg.hashsalt"] = "kbvqa"
    fig = draw_pipeline()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


if __name__ == "__main__":
    print(save_pipeline_figure(REPO_ROOT / "book" / "figures" / "pipeline.svg"))


def draw_ablation(results: dict, title: str | None = None):
    """Left: accuracy per row with 95 % Wilson intervals (diagnostic rows hatched). Right: the
    evidence recall after each stage per row (the accuracy a perfect reader would reach)."""
    import matplotlib.pyplot as plt
    import numpy as np

    rows = results["rows"]
    if not rows:
        raise ValueError("results has no rows")
    y = np.arange(len(rows))[::-1]
    acc = np.array([r["accuracy"] for r in rows])
    err = np.array([[r["accuracy"] - r["low"], r["high"] - r["accuracy"]] for r in rows]).T
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 0.45 * len(rows) + 1.6), sharey=True)
    small = max(8.0, legible_pt(10 + 0.3))           # + 0.3 in: the tight crop's padding
    bars = ax.barh(y, acc, xerr=err, color="#4c72b0", capsize=3)
    for bar, r in zip(bars, rows):
        if r["diagnostic"]:
            bar.set(color="#b0b0b0", hatch="//")
    ax.set(xlabel="accuracy (95 % Wilson)", xlim=(0, 1),
           title=title or f"{results_model_label(results)}, n = {results['n']}")
    ax.set_yticks(y, [r["label"] for r in rows], fontsize=small)
    width = 0.8 / len(STAGES)
    colours = ("#8172b2", "#c44e52", "#dd8452", "#55a868")
    for j, ((key, label), colour) in enumerate(zip(STAGES, colours)):
        bx.barh(y + 0.4 - width * (j + 0.5), [r[key] or 0 for r in rows], height=width, color=colour, label=label)
    bx.set(xlabel="evidence recall after the stage", xlim=(0, 1), title="is the evidence passage still there?")
    bx.legend(fontsize=small, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)  # off the bars
    for a in (ax, bx):
        a.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
