"""Chapter 31's picture: each paper-vs-ours effect as the paper's difference against ours.

``draw_effects(effects)``: one marker per effect (ours with its interval against the paper's
difference), one colour per part. Leaves out: computing the effects (``kbvqa.paper_vs_ours``).
"""
from __future__ import annotations

from kbvqa.paper_vs_ours import PARTS


def draw_effects(effects, title: str | None = None):
    """Paper difference (x) against ours (y), in points, one marker per effect and colour per part;
    our intervals as vertical bars. Points on the diagonal reproduce the paper; near y = 0, flat."""
    import matplotlib.pyplot as plt

    effects = [e for e in effects if e.metric.endswith("%")]
    if not effects:
        raise ValueError("no effect in percent to draw")
    colours = {"RCTS": "#4c72b0", "SeRTS": "#8172b2", "ReAG": "#c44e52", "MOLT": "#55a868"}
    fig, ax = plt.subplots(figsize=(6.4, 4.6))
    for part in PARTS:
        mine = [e for e in effects if e.part == part]
        if not mine:
            continue
        x, y = [e.paper_diff for e in mine], [e.ours_diff for e in mine]
        err = [[e.ours_diff - (e.ours_interval or (e.ours_diff,) * 2)[0] for e in mine],
               [(e.ours_interval or (e.ours_diff,) * 2)[1] - e.ours_diff for e in mine]]
        ax.errorbar(x, y, yerr=err, fmt="o", color=colours[part], capsize=3, label=part, alpha=0.85)
    lim = max(5.0, *(abs(v) for e in effects for v in (e.paper_diff, *(e.ours_interval or (e.ours_diff,)))))
    ax.plot([-lim, lim], [-lim, lim], color="gray", lw=0.8, ls="--", label="ours = paper")
    ax.axhline(0, color="black", lw=0.6)
    ax.axvline(0, color="black", lw=0.6)
    ax.set(xlabel="paper: treatment − baseline (points)", ylabel="ours: treatment − baseline (points)",
           title=title or "Each effect: the paper's size against ours")
    ax.legend(fontsize=8, frameon=False)
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
