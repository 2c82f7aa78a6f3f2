"""Figures of hybrid retrieval (RCTS §3.3): late interaction, Recall@K curves, retrieved examples.

- ``draw_maxsim_matrix``: the token-by-token similarity matrix of a query E_u = [E_T; E_I] and one
  knowledge-base item E_i (Eq. 3), with each query token's best item token marked: Eq. 4 is the
  sum of the marked cells.
- ``draw_recall_at_k``: Recall@K and Precision@K against K, one colour per mode, solid for MaxSim
  and dotted for the pooled first stage alone (``kbvqa.retrieval.hybrid_eval.RetrievalEvaluation``).
- ``draw_retrieved``: the query's picture and question next to its top retrieved examples, each
  framed green when it carries the query's answer and red otherwise, under an optional title;
  1.6 in per panel and no text under ``frames.legible_pt`` of the figure's width (six 2 in panels
  at 6.5 pt showed the questions at 5.8 px).

Every function closes its figure and returns it, so a notebook shows it exactly once. Leaves out:
computing anything (``kbvqa.retrieval``).
"""
from __future__ import annotations

import textwrap

from kbvqa.data.schema import open_image
from kbvqa.viz.frames import legible_pt

MODE_COLOURS = {"text": "tab:blue", "image": "tab:orange", "hybrid": "tab:green"}


def draw_maxsim_matrix(query_tokens, doc_tokens, n_query_text: int | None = None,
                       n_doc_text: int | None = None, title: str = ""):
    """Heat map of <E_u[j], E_i[k]> with the argmax of each row marked (Eq. 4). ``n_*_text``:
    how many leading rows / columns are text tokens (a line separates them from image tokens)."""
    import matplotlib.pyplot as plt
    import torch

    q, d = torch.as_tensor(query_tokens).float(), torch.as_tensor(doc_tokens).float()
    if q.dim() != 2 or d.dim() != 2 or not len(q) or not len(d):
        raise ValueError("draw_maxsim_matrix needs two non-empty [tokens, d] matrices")
    sim = (q @ d.T).numpy()
    best = sim.argmax(1)
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    im = ax.imshow(sim, cmap="viridis", aspect="auto", interpolation="nearest")
    ax.scatter(best, range(len(q)), s=9, c="red", marker="s", label="max over item tokens")
    for n_text, line in ((n_query_text, ax.axhline), (n_doc_text, ax.axvline)):
        if n_text:
            line(n_text - 0.5, color="white", lw=1.2, ls="--")
    ax.set_xlabel("knowledge-base item tokens  (text | image)")
    ax.set_ylabel("query tokens  (text / image)")
    score = float(sim.max(1).sum())
    ax.set_title(title or f"r(E_u, E_i) = sum of the red cells = {score:.2f}", fontsize=10)
    ax.legend(loc="upper right", fontsize=7)
    fig.colorbar(im, ax=ax, fraction=0.04, label="cosine")
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_recall_at_k(evaluation, relevance: str = "answer"):
    """Recall@K (left) and Precision@K (right) against K for one relevance, one line per row of
    ``evaluation.scores``: colour = mode, solid = MaxSim re-scored, dotted = pooled first stage."""
    import matplotlib.pyplot as plt

    titles = {"answer": "relevant = carries the answer (same rule and key value)",
              "rule": "relevant = same rule (the key value may differ)"}
    ks = list(evaluation.ks)
    fig, axes = plt.subplots(1, 2, figsize=(8.8, 3.5))
    for ax, metric, name in zip(axes, ("R", "P"), ("Recall@K", "Precision@K")):
        for row, by_rel in evaluation.scores.items():
            pooled = row.endswith(" pooled")
            ax.plot(ks, [by_rel[relevance][f"{metric}@{k}"] for k in ks], ":s" if pooled else "-o",
                    color=MODE_COLOURS.get(row.split()[0]), alpha=0.7 if pooled else 1.0, label=row)
        ax.set_xticks(ks)
        ax.set_ylim(0, 1.02)
        ax.set_xlabel("K")
        ax.set_title(name, fontsize=10)
        ax.grid(alpha=0.3)
    axes[1].legend(fontsize=7, loc="upper right")
    fig.suptitle(f"{titles.get(relevance, relevance)}: {evaluation.n_queries} test queries, "
                 f"{evaluation.n_kb} knowledge-base examples", fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_retrieved(query, examples, scores=None, relevant=None, size: float = 1.6, wrap: int = 22,
                   title: str = ""):
    """The query (first panel) and its retrieved ``examples`` (``KBExample``/``Query`` with images).
    ``scores``: one per example; ``relevant``: one bool per example (green / red frame); ``title``:
    a line above the panels (say which retrieval this is when a page shows several)."""
    import matplotlib.pyplot as plt


    examples = list(examples)
    if not examples:
        raise ValueError("draw_retrieved needs at least one retrieved example")
    for name, values in (("scores", scores), ("relevant", relevant)):
        if values is not None and len(values) != len(examples):
            raise ValueError(f"{name} must match examples one to one")
    items = [query] + examples
    fig, axes = plt.subplots(1, len(items), figsize=(size * len(items), size + 1.1), squeeze=False)
    small = max(7.0, legible_pt(size * len(items) + 0.3))      # + 0.3 in: the tight crop's padding
    for i, (ax, item) in enumerate(zip(axes[0], items)):
        image = open_image(item.image)
        if image is not None:
            ax.imshow(image)
        ax.set_xticks([])
        ax.set_yticks([])
        head = "query" if i == 0 else f"#{i}" + (f"  r={scores[i - 1]:.1f}" if scores is not None else "")
        ax.set_title(head, fontsize=small + 0.5, fontweight="bold" if i == 0 else "normal")
        ax.set_xlabel(textwrap.fill(item.question, wrap), fontsize=small)
        colour = "black" if i == 0 or relevant is None else ("tab:green" if relevant[i - 1] else "tab:red")
        for spine in ax.spines.values():
            spine.set_edgecolor(colour)
            spine.set_linewidth(1 if i == 0 or relevant is None else 3)
    if title:
        fig.suptitle(title, fontsize=small + 1.5)
    fig.tight_layout()
    plt.close(fig)
    return fig
