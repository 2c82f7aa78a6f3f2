"""The SeRTS query tree as a picture: queries on the edges, rubric scores and visits on the nodes.

``draw_serts_tree(result)`` draws a ``SeRTSResult`` (``kbvqa.serts.search``): each node shows its
0..5 score R_i (colour: red 0 -> green 5), visits N and mean backed-up value; the edge into a node
carries its query A_i (shortened; "Q + added words" when it extends the question, "Q" when it is the
question, a final "?" or "." ignored); "*" marks a repeated query, "?" a proposal without a proper
``<query>...</query>`` pair (``well_formed=False``).
The path to the best node is drawn thick; with ``gold`` (the gold document ids) each node also
shows how many of them its D u O_d^anc holds.
``serts_tree_records`` is the same information as plain rows (for a table or a test), and
``draw_anytime_recall`` plots recall against the number of expansions (mean and seed range).

Positions come from ``kbvqa.viz.trees.tree_layout`` (leaves in columns, parents centred), or from
the caller (the slider passes the final tree's, so nodes keep their place from frame to frame).
Legibility: 1.1 in per leaf, and no text smaller than 7.5 pt nor than ``frames.legible_pt`` of the
figure's width, so the smallest text is at least ``frames.MIN_TEXT_PX`` high at the book's page
width; edge labels are wrapped to the room between sibling edges. ``draw_retrieval``'s legend and ticks
follow ``legible_pt`` of its width too (its 7 pt legend was 7.2 px at the page column).
Leaves out: the search, animation (the RCTS player in ``trees_player`` is not reused here).
"""
from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping

import numpy as np

from kbvqa.viz.frames import legible_pt
from kbvqa.viz.trees import tree_layout

__all__ = ["draw_anytime_recall", "draw_serts_tree", "serts_tree_records", "short_query"]


def short_query(query: str | None, max_chars: int = 28, question: str | None = None) -> str:
    """A query cut to ``max_chars`` with an ellipsis ("" for the root). With ``question``, a query that
    starts with the question is shown as "Q + <the added words>" (the part a reformulation changes)."""
    if not query:
        return ""
    query = " ".join(str(query).split())
    if question:
        stem = " ".join(str(question).split()).rstrip("?. ")
        bare = query.rstrip("?. ")
        if stem and (bare.lower() == stem.lower() or query.lower().startswith(stem.lower() + " ")):
            rest = query[len(stem):].strip(" ?.")
            query = "Q + " + rest if rest else "Q"
    return query if len(query) <= max_chars else query[: max_chars - 1] + "…"


def _wrapped(text: str, width: int = 18, max_lines: int = 4) -> str:
    lines = textwrap.wrap(text, width, break_long_words=False) if text else []
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(width - 1, 1)].rstrip("…") + "…"
    return "\n".join(lines)


def serts_tree_records(result, gold: Iterable[str] | None = None) -> list[dict]:
    """One row per node in creation order: id, parent, depth, query, score, N, mean value, flags."""
    gold_set = set(gold) if gold is not None else None
    rows = []
    for n in result.nodes:
        row = {"id": n.id, "parent": n.parent.id if n.parent is not None else None, "depth": n.depth,
               "query": n.query, "score": n.score, "visits": n.visits, "mean_value": round(n.mean_value, 4),
               "docs": len(n.context_docs), "repeated": n.repeated, "well_formed": n.well_formed,
               "best": n is result.best}
        if gold_set is not None:
            row["gold_found"] = sum(d in gold_set for d in n.context_docs)
        rows.append(row)
    return rows


def draw_serts_tree(result, ax=None, gold: Iterable[str] | None = None, max_query_chars: int = 40,
                    title: str | None = None, positions: Mapping | None = None):
    """Draw the tree into ``ax`` (or a new figure, closed so notebooks show it once) and return the figure.

    ``positions``: node id -> (x, y) to place the nodes at (default: ``tree_layout`` of this tree);
    with a new figure, its size follows these positions."""
    import matplotlib.pyplot as plt

    rows = serts_tree_records(result, gold)
    own = tree_layout({r["id"]: r["parent"] for r in rows})
    if positions is None or any(r["id"] not in positions for r in rows):
        positions = own
    by_id = {n.id: n for n in result.nodes}
    best_path = {n.id for n in result.best.path()}
    cmap = plt.get_cmap("RdYlGn")
    xs = [p[0] for p in positions.values()]
    ys = [p[1] for p in positions.values()]
    if ax is None:
        width = min(max(4.0, 1.1 * (1 + max(xs) - min(xs)) + 0.5), 14.0)
        height = 1.7 + 1.6 * (max(ys) - min(ys))
        fig, ax = plt.subplots(figsize=(width, height))
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=1 - 0.6 / height)   # room for the title
        plt.close(fig)
    fig = ax.figure
    fontsize = max(7.5, legible_pt(fig.get_size_inches()[0]))
    unit_pt = 72.0 * fig.get_size_inches()[0] * ax.get_position().width / (max(xs) - min(xs) + 1.6)
    chars = max(11, int(0.6 * unit_pt / (0.55 * fontsize)))   # sibling labels sit 0.62 unit apart
    for r in rows:
        x, y = positions[r["id"]]
        if r["parent"] is not None:
            px, py = positions[r["parent"]]
            on_path = r["id"] in best_path
            ax.plot([px, x], [py, y], color="#c0392b" if on_path else "#888888", lw=2.2 if on_path else 0.8,
                    zorder=1)
            mark = ("*" if r["repeated"] else "") + ("" if r["well_formed"] else "?")
            label = _wrapped(short_query(r["query"], max_query_chars, result.question), chars) + mark
            ax.text(px + 0.62 * (x - px), py + 0.62 * (y - py), label, fontsize=fontsize, linespacing=1.1,
                    ha="center", va="center", rotation=0, zorder=3, color="#1f3b73",
                    bbox=dict(boxstyle="round,pad=0.15", fc="white", ec="none", alpha=0.85))
        score = r["score"]
        colour = cmap(score / 5) if score is not None else (0.9, 0.9, 0.9, 1.0)
        text = "root" if score is None else f"R {score}"
        text += f"\nN {r['visits']}  V {r['mean_value']:.2f}"
        if "gold_found" in r:
            text += f"\ngold {r['gold_found']}"
        ax.text(x, y, text, ha="center", va="center", fontsize=fontsize + 0.5, zorder=4,
                bbox=dict(boxstyle="round,pad=0.3", fc=colour,
                          ec="#c0392b" if r["id"] in best_path else "#555555",
                          lw=2.0 if by_id[r["id"]] is result.best else 0.6))
    ax.set_xlim(min(xs) - 0.8, max(xs) + 0.8)
    ax.set_ylim(min(ys) - 0.6, max(ys) + 0.6)
    ax.axis("off")
    head = title if title is not None else short_query(result.question, 70)
    ax.set_title(f"{head}\nbest R = {result.best.score}  sims = {result.simulations}"
                 + ("  (stopped at 5)" if result.stopped_early else ""), fontsize=fontsize + 1.5)
    return fig


def draw_anytime_recall(curves: dict, baseline: float | None = None, title: str = ""):
    """One line per method: ``curves[name]`` is a (seeds, steps) array of recall after 1..steps
    expansions, drawn as the mean with the min-max range over seeds; ``baseline`` a dashed line."""
    import matplotlib.pyplot as plt
    import numpy as np

    if not curves:
        raise ValueError("draw_anytime_recall needs at least one curve")
    fig, ax = plt.subplots(figsize=(6.5, 3.2))
    for name, c in curves.items():
        c = np.atleast_2d(np.asarray(c, dtype=float))
        steps, mean = np.arange(1, c.shape[1] + 1), c.mean(0)
        ax.errorbar(steps, mean, yerr=[mean - c.min(0), c.max(0) - mean], marker=".", capsize=2, label=name)
    if baseline is not None:
        ax.axhline(baseline, color="k", ls="--", label="BM25 on the question")
    ax.set(xlabel="expansions (simulations)", ylabel="recall of the returned documents", ylim=(0, 1), title=title)
    ax.legend(fontsize=8)
    plt.close(fig)
    return fig


def draw_retrieval(results: dict, keys=("recall", "f1", "hit")):
    """Tab. 3 analogue: recall / F1 / hit per method for each setup (bars, seed spread as error bars)
    with the paper's value of the matching model as a marker (BioASQ; a different task and scale)."""
    import matplotlib.pyplot as plt

    names = ("bm25", "reflection_6", "serts_6", "reflection_12", "serts_12")
    setups = list(results["setups"])
    fig, axes = plt.subplots(1, len(setups), figsize=(5.2 * len(setups), 3.6), sharey=True, squeeze=False)
    small = max(7.0, legible_pt(5.2 * len(setups) + 0.3))     # + 0.3 in: the tight crop's padding
    for ax, setup in zip(axes[0], setups):
        rows = {r["method"]: r for r in results["setups"][setup]["rows"]}
        x = np.arange(len(names))
        for j, k in enumerate(keys):
            vals = [rows[n][k] if n in rows else [np.nan, 0] for n in names]
            ax.bar(x + (j - 1) * 0.27, [v[0] * 100 for v in vals], 0.27, yerr=[v[1] * 50 for v in vals],
                   capsize=2, label=f"{k} (ours)")
            ax.scatter(x + (j - 1) * 0.27, [rows[n].get("paper_" + k, np.nan) if n in rows else np.nan
                                             for n in names], marker="_", s=120, color="k", zorder=3)
        ax.set_xticks(x, [n.replace("_", "\n") for n in names], fontsize=max(8.0, small))
        ax.set(title=f"{setup} (n = {results['setups'][setup]['n']}) — black: paper "
                     f"{results['setups'][setup]['paper_model']}", ylim=(0, 105))
        ax.title.set_fontsize(max(9.0, small + 1))
        ax.spines[["top", "right"]].set_visible(False)
    axes[0][0].set_ylabel("%")
    axes[0][0].legend(fontsize=small, frameon=False, loc="lower left")
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_policies(results: dict, key: str = "recall"):
    """Tab. 6 analogue: ``key`` of SeRTS Sim 12 under RANDOM, C = 0 and C = 0.1 per setup, per seed
    (dots) and mean (bar), beside BM25 and self-reflection Sim 12."""
    import matplotlib.pyplot as plt

    names = ("bm25", "reflection_12", "serts_random_12", "serts_greedy_12", "serts_12")
    labels = ("BM25", "reflection", "RANDOM", "C = 0", "C = 0.1")
    setups = list(results["setups"])
    fig, axes = plt.subplots(1, len(setups), figsize=(4.6 * len(setups), 3.2), squeeze=False)
    for ax, setup in zip(axes[0], setups):
        rows = {r["method"]: r for r in results["setups"][setup]["rows"]}
        for i, n in enumerate(names):
            if n not in rows:
                continue
            ax.bar(i, rows[n][key][0] * 100, color="#4c72b0" if n.startswith("serts") else "#bbbbbb")
            ax.scatter([i] * len(rows[n]["per_seed"]), [s[key] * 100 for s in rows[n]["per_seed"]], color="k", s=10)
        ax.set_xticks(range(len(names)), labels, fontsize=8)
        ax.set(title=f"{setup}: {key} (%), dots = seeds", ylim=(0, 100))
        ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
