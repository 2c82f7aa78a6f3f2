"""Pictures for the bandit/UCT chapter: regret curves and UCT's exploration term.

One pure function, ``draw_exploration_term(ax, c, n_parent, ...)``, draws the exploration term
``c * bonus(N, N_parent)`` of each UCT variant against a child's visits ``N``. Three views call it:

- ``draw_exploration_terms``: a static figure, one panel per ``c`` (what the built book shows);
- ``exploration_slider_html``: one ``exploration_frame`` PNG per ``c``, as wide as the book's
  content column, behind the book's kernel-free slider (``frames.frames_html``): it works in the
  HTML book with no kernel and no network (matplotlib's ``to_jshtml`` player would fetch its
  button icons from a CDN);
- ``exploration_widget``: a live ``ipywidgets.interactive`` (c, N_parent, variant) for Jupyter/Colab
  drawing the same ``exploration_frame``; the kernel-free slider, with a note, when ipywidgets is
  missing or cannot draw it (``kbvqa.viz.live``).

Legibility: legends are at least 7 pt and ``frames.legible_pt`` of the figure's width, so every
text is at least ``frames.MIN_TEXT_PX`` high at the book's page width.

``draw_exploration_vs_parent`` draws the term against ``N_parent`` and ``draw_regret_curves`` the
mean (and 10-90 % band over seeds) of ``kbvqa.search.bandits.regret_curves``. Every figure is
closed before it is returned, so a notebook shows it once. Leaves out: tree pictures.
"""
from __future__ import annotations

import numpy as np

from kbvqa.search.uct import OFFICIAL_EPS, UCT_VARIANTS, exploration_term
from kbvqa.viz.frames import figure_png, frames_html, legible_pt

REGRET_BAND = (10, 90)   # percentiles over seeds of the band drawn around each mean regret curve

VARIANT_STYLE = {  # colour and label of each UCT variant in every figure of the chapter
    "paper": ("#4c72b0", "RCTS paper, Eq. 11"),
    "official": ("#dd8452", "RCTS official code"),
    "serts": ("#55a868", "SeRTS Eq. 1"),
    "ucb1": ("#8172b2", "UCB1 / UCT"),
}


def draw_exploration_term(ax, c: float, n_parent: int = 50, variants=UCT_VARIANTS,
                          n_max: int | None = None, y_max: float = 4.0,
                          eps: float = OFFICIAL_EPS):
    """Draw ``c * bonus`` against ``N = 1..n_max`` (default ``n_parent``) on ``ax``; returns ax.

    ``N = 0`` is left out (its term is huge or infinite, see ``kbvqa.search.uct``); the y axis is
    fixed at ``[0, y_max]`` so frames and panels compare.
    """
    n_parent = int(n_parent)
    if n_parent < 1:
        raise ValueError(f"n_parent must be >= 1, got {n_parent}")
    n_max = n_parent if n_max is None else int(n_max)
    if n_max < 1:
        raise ValueError(f"n_max must be >= 1, got {n_max}")
    ns = np.arange(1, n_max + 1)
    for variant in variants:
        colour, label = VARIANT_STYLE[variant]
        ax.plot(ns, exploration_term(ns, n_parent, c, variant, eps), color=colour, label=label,
                lw=1.8)
    ax.set_ylim(0, y_max)
    ax.set_xlim(1, n_max)
    ax.set_xlabel("visits of the child, N")
    ax.set_ylabel("exploration term")
    ax.set_title(f"c = {c:.2f}, N(parent) = {n_parent}", fontsize=10)
    ax.spines[["top", "right"]].set_visible(False)
    return ax


def draw_exploration_terms(cs=(0.1, 0.5, 1.0, 2.0), n_parent: int = 50, variants=UCT_VARIANTS):
    """Static figure: one ``draw_exploration_term`` panel per exploration constant in ``cs``."""
    import matplotlib.pyplot as plt

    cs = list(cs)
    if not cs:
        raise ValueError("cs must hold at least one exploration constant")
    fig, axes = plt.subplots(1, len(cs), figsize=(2.8 * len(cs) + 0.4, 3.2), sharey=True, squeeze=False)
    for ax, c in zip(axes[0], cs):
        draw_exploration_term(ax, c, n_parent, variants)
    for ax in axes[0][1:]:
        ax.set_ylabel("")
    axes[0][0].legend(fontsize=max(7.0, legible_pt(fig.get_size_inches()[0])), frameon=False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_exploration_vs_parent(c: float = 0.5, visits=(1, 4, 16), n_parent_max: int = 200,
                               variants=UCT_VARIANTS):
    """The term against ``N_parent`` for a few child visit counts (one panel per count)."""
    import matplotlib.pyplot as plt

    visits = list(visits)
    if not visits:
        raise ValueError("visits must hold at least one visit count")
    parents = np.arange(1, int(n_parent_max) + 1)
    fig, axes = plt.subplots(1, len(visits), figsize=(3.6 * len(visits), 3.2), sharey=True,
                             squeeze=False)
    for ax, n in zip(axes[0], visits):
        for variant in variants:
            colour, label = VARIANT_STYLE[variant]
            ax.plot(parents, exploration_term(n, parents, c, variant), color=colour, label=label)
        ax.axvline(n, color="grey", lw=0.8, ls=":")  # SeRTS's term is 0 until N_parent > N
        ax.set_title(f"c = {c:g}, child visits N = {n}", fontsize=10)
        ax.set_xlabel("visits of the parent, N(parent)")
        ax.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylabel("exploration term")
    axes[0][0].legend(fontsize=max(7.0, legible_pt(fig.get_size_inches()[0])), frameon=False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def exploration_frame(c: float, n_parent: int = 50, variants=UCT_VARIANTS):
    """One frame of the slider and the live widget: ``draw_exploration_term`` in a 5.5 x 3.4 in
    figure with its legend; the figure is closed (a notebook shows it once)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    draw_exploration_term(ax, float(c), n_parent, variants)
    ax.legend(fontsize=max(7.0, legible_pt(5.5)), frameon=False, loc="upper right")
    fig.tight_layout()
    plt.close(fig)
    return fig


def exploration_slider_html(cs=None, n_parent: int = 50, variants=UCT_VARIANTS,
                            dpi: float | None = None) -> str:
    """A kernel-free slider over ``c``: one ``exploration_frame`` per value, shown by
    ``kbvqa.viz.frames.frames_html`` (self-contained HTML: no kernel, no network).

    Returns the HTML string (display it with ``IPython.display.HTML``); frames are rendered at
    ``dpi`` but never narrower than the book's content column (``frames.figure_png``), about
    40 kB per frame.
    """
    cs = np.round(np.linspace(0.0, 2.0, 11), 2) if cs is None else np.asarray(cs, dtype=float)
    if cs.size == 0:
        raise ValueError("cs must hold at least one exploration constant")
    frames = [figure_png(exploration_frame(float(c), n_parent, variants), dpi) for c in cs]
    labels = [f"c = {float(c):g}" for c in cs]
    return frames_html(frames, labels, title=f"UCT's exploration term, N_parent = {n_parent}: drag to change c")


def exploration_widget(n_parent: int = 50):
    """A live ipywidgets slider panel (c, N_parent, variant) over ``draw_exploration_term``.

    Needs a running kernel (Jupyter/Colab). Returns the ``interactive`` widget (a notebook shows
    it as the cell's value), or, after a printed note, the static figure (the kernel-free slider
    over ``c``, ``exploration_slider_html``) when ipywidgets is missing or cannot draw it
    (``kbvqa.viz.live``: ipywidgets 7.7 and 8 can).
    """
    from IPython.display import HTML, display

    from kbvqa.viz.live import live_widgets

    widgets = live_widgets()
    if widgets is None:
        return HTML(exploration_slider_html(n_parent=n_parent))

    def show(c=0.5, n_parent=n_parent, variant="all"):
        display(exploration_frame(c, n_parent, UCT_VARIANTS if variant == "all" else (variant,)))

    return widgets.interactive(
        show,
        c=widgets.FloatSlider(value=0.5, min=0.0, max=2.0, step=0.05, description="c"),
        n_parent=widgets.IntSlider(value=n_parent, min=1, max=200, description="N(parent)"),
        variant=widgets.Dropdown(options=("all",) + UCT_VARIANTS, value="all"),
    )


def draw_regret_curves(curves: dict, title: str = "cumulative regret (mean over seeds)",
                       log_x: bool = False):
    """Mean cumulative regret of each policy with its ``REGRET_BAND`` (10-90 %) band over seeds."""
    import matplotlib.pyplot as plt

    if not curves:
        raise ValueError("curves is empty; pass kbvqa.search.bandits.regret_curves(...)")
    fig, ax = plt.subplots(figsize=(7, 4))
    for label, runs in curves.items():
        runs = np.atleast_2d(np.asarray(runs, dtype=float))
        steps = np.arange(1, runs.shape[1] + 1)
        line, = ax.plot(steps, runs.mean(0), label=f"{label} ({runs.mean(0)[-1]:.0f})")
        lo, hi = np.percentile(runs, REGRET_BAND, axis=0)
        ax.fill_between(steps, lo, hi, color=line.get_color(), alpha=0.15, lw=0)
    if log_x:
        ax.set_xscale("log")
    ax.set_xlabel("step t")
    ax.set_ylabel("cumulative regret  Σ (μ* − μ_a)")
    ax.set_title(title, fontsize=10)
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
