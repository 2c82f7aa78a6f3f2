"""Small, pure plotting helpers shared by chapters (they return matplotlib Figures, write nothing).

``draw_world_stats`` draws the toy world's statistics (``ToyWorld.stats()``) as a 2 x 2 grid of bar
charts, 9 in wide, no text under 8 pt (at least ``frames.MIN_TEXT_PX`` at the page column: one row
of four panels, 15 in wide, showed its counts at 5 px); ``image_grid`` lays PIL images out with
captions. Figures are closed before they are returned, so a notebook shows each exactly once (as
the cell's value). Leaves out: trees and tournaments (their own ``draw_*`` modules) and the pipeline
map (``pipeline.py``).
"""
from __future__ import annotations

import math
import textwrap

from kbvqa.viz.frames import MIN_TEXT_PX, PAGE_PX

SMALL_PT = 8.0   # ticks, counts and legends of draw_world_stats (legible_pt(9 in) is 6.9 pt)


def _bars(ax, counts: dict, title: str, colour: str):
    names, values = list(counts), list(counts.values())
    ax.bar(range(len(values)), values, color=colour)
    ax.set_xticks(range(len(values)), names, rotation=35, ha="right", fontsize=SMALL_PT)
    ax.tick_params(axis="y", labelsize=SMALL_PT)
    ax.set_title(title, fontsize=10)
    for x, v in enumerate(values):
        ax.text(x, v, str(v), ha="center", va="bottom", fontsize=SMALL_PT)
    ax.margins(y=0.12)                   # room for the count above the tallest bar
    ax.spines[["top", "right"]].set_visible(False)


def draw_world_stats(stats: dict):
    """Four bar charts (2 x 2): split sizes, KB-VQA answer types, MC templates, literature question types."""
    import matplotlib.pyplot as plt

    needed = ("kbvqa_train", "kbvqa_test", "mc_train", "mc_kb", "mc_test", "lit_questions",
              "kbvqa_answer_types", "mc_templates", "lit_question_types")
    missing = [k for k in needed if k not in stats]
    if missing:
        raise ValueError(f"stats is missing {missing}; pass ToyWorld.stats()")
    fig, axes = plt.subplots(2, 2, figsize=(9, 6.6))
    axes = axes.ravel()
    splits = {k: stats[k] for k in ("kbvqa_train", "kbvqa_test", "mc_train", "mc_kb", "mc_test",
                                    "lit_questions")}
    splits["literature"] = stats.get("literature", 0)
    _bars(axes[0], splits, "records per split", "#4c72b0")
    types = stats["kbvqa_answer_types"]
    all_types = sorted({t for s in types.values() for t in s})
    for i, (split, colour) in enumerate((("kbvqa_train", "#55a868"), ("kbvqa_test", "#c44e52"))):
        xs = [j + (i - 0.5) * 0.4 for j in range(len(all_types))]
        axes[1].bar(xs, [types[split].get(t, 0) for t in all_types], width=0.4, color=colour,
                    label=split)
    axes[1].set_xticks(range(len(all_types)), all_types, fontsize=SMALL_PT)
    axes[1].tick_params(axis="y", labelsize=SMALL_PT)
    axes[1].set_title("KB-VQA answer types", fontsize=10)
    axes[1].legend(fontsize=SMALL_PT, frameon=False, loc="best")
    axes[1].spines[["top", "right"]].set_visible(False)
    _bars(axes[2], stats["mc_templates"], "multiple-choice templates (mc_kb)", "#8172b2")
    _bars(axes[3], stats["lit_question_types"], "literature question types", "#ccb974")
    fig.tight_layout()
    plt.close(fig)  # shown once, by the notebook's display of the returned figure
    return fig


def caption_pt(width_in: float, margin: float = 1.1) -> float:
    """The font size (pt, at least 8) at which a text in a figure ``width_in`` inches wide shows at
    least ``margin * MIN_TEXT_PX`` CSS px once the figure is scaled down to the page column
    (``PAGE_PX``)."""
    return max(8.0, round(margin * MIN_TEXT_PX * 72.0 * width_in / PAGE_PX, 1))


def image_grid(images, captions=None, n_cols: int = 4, size: float = 2.4):
    """A Figure showing PIL images in a grid, each with an optional caption."""
    import matplotlib.pyplot as plt

    images = list(images)
    if not images:
        raise ValueError("image_grid needs at least one image")
    if captions is not None and len(captions) != len(images):
        raise ValueError("captions must match images one to one")
    n_cols = max(1, min(n_cols, len(images)))
    n_rows = math.ceil(len(images) / n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(size * n_cols, size * n_rows + 0.3 * n_rows),
                             squeeze=False)
    for ax in axes.flat:
        ax.axis("off")
    # A wide grid is scaled down to the page column: size the captions so that they still show at
    # least MIN_TEXT_PX there (with a 10% margin), and wrap them to their column so that a long
    # caption does not widen the figure's tight crop.
    fontsize = caption_pt(size * n_cols)
    chars = max(8, int(size * 72 / (0.6 * fontsize)))
    for i, im in enumerate(images):
        ax = axes.flat[i]
        ax.imshow(im)
        if captions is not None:
            ax.set_title(textwrap.fill(str(captions[i]), chars), fontsize=fontsize)
    fig.tight_layout()
    plt.close(fig)  # shown once, by the notebook's display of the returned figure
    return fig
