"""Pictures of a reasoning-context KB (RCTS §3.2): candidate scores, and good versus bad contexts.

- ``draw_candidate_scores(records)``: left, every checked candidate's Score_i per KB pair (grey)
  and the chosen one (coloured); right, the distribution of all candidates' scores next to the
  chosen ones' -- the max over N_c candidates is what selection buys (and what makes the chosen
  score an optimistic estimate of how good the context is).
- ``contrast_pairs(records, n)``: the pairs whose best and worst candidates differ most (pairs
  whose candidates all scored the same are left out).
- ``draw_context_comparison(examples, records)``: per pair its image, question and gold answer,
  the best candidate (green) and the worst (red), with their scores and verdicts.

Legibility: both figures are 10-11 in wide with no text under ``frames.legible_pt`` of their width
(at 12 and 15 in their legends and candidate texts were 7 and 5.7 px at the page column). Figures
are closed before they are returned, so a notebook shows each once. Leaves out: building
the KB (``kbvqa.rcts.contexts``), accuracies and tables (``kbvqa.rcts.context_kb``).
"""
from __future__ import annotations

import textwrap

from kbvqa.data.schema import open_image, option_letters
from kbvqa.viz.frames import legible_pt

_MARK = {"correct": "✓", "wrong": "✗", "unparsed": "?"}


def _scored(record) -> list[tuple[int, float]]:
    return [(i, c.score) for i, c in enumerate(record.candidates) if c.score is not None]


def draw_candidate_scores(records, title: str = "Self-consistency scores of the candidates"):
    """Strip plot of Score_i per pair (chosen candidate highlighted) and the two distributions."""
    import matplotlib.pyplot as plt

    records = [r for r in records if r.candidates]
    if not records:
        raise ValueError("no records with candidates to draw")
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6), gridspec_kw={"width_ratios": [2.2, 1]})
    small = max(8.0, legible_pt(10 + 0.3))            # + 0.3 in: the tight crop's padding
    all_scores, chosen = [], []
    for x, r in enumerate(records):
        scores = [s for _, s in _scored(r)]
        all_scores += scores
        chosen.append(r.score)
        left.scatter([x] * len(scores), scores, s=18, color="#9e9e9e", alpha=0.6, zorder=2)
        left.scatter([x], [r.score], s=70, marker="*", color="#2e7d32" if r.perfect else "#1565c0", zorder=3)
    left.set_xlabel("KB pair")
    left.set_ylabel("Score$_i$")
    left.set_title("grey: every candidate; star: the chosen one (green: perfect)", fontsize=small + 1)
    bins = sorted({round(s, 6) for s in all_scores + chosen})
    width = min((b - a for a, b in zip(bins, bins[1:])), default=0.2) * 0.4
    for offset, values, colour, label in ((-width / 2, all_scores, "#9e9e9e", "all candidates"),
                                          (width / 2, chosen, "#1565c0", "chosen")):
        shares = [sum(abs(v - b) < 1e-6 for v in values) / len(values) for b in bins]
        right.bar([b + offset for b in bins], shares, width=width, color=colour, label=label)
    right.set_xlabel("Score$_i$")
    right.set_ylabel("share")
    right.legend(fontsize=small, frameon=False, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2)
    for ax in (left, right):
        ax.spines[["top", "right"]].set_visible(False)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    plt.close(fig)
    return fig


def contrast_pairs(records, n: int = 3) -> list[int]:
    """Indices of at most ``n`` records with the largest gap between best and worst candidate score
    (ties: earlier first); pairs with fewer than two checked candidates, or whose candidates all
    scored the same (no best and worst to show), are skipped."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    gaps = []
    for i, r in enumerate(records):
        scores = [s for _, s in _scored(r)]
        if len(scores) >= 2 and max(scores) > min(scores):
            gaps.append((-(max(scores) - min(scores)), i))
    return [i for _, i in sorted(gaps)[:n]]


def _wrap(text: str, width: int, lines: int) -> str:
    wrapped = textwrap.wrap(" ".join(str(text).split()), width) or [""]
    return "\n".join(wrapped[:lines]) + (" …" if len(wrapped) > lines else "")


def _panel(ax, header: str, body: str, colour: str, fontsize: float = 8.0):
    from matplotlib.patches import FancyBboxPatch

    ax.axis("off")
    ax.add_patch(FancyBboxPatch((0.01, 0.02), 0.98, 0.96, boxstyle="round,pad=0.01", facecolor=colour,
                                edgecolor="none", transform=ax.transAxes))
    for text in (ax.text(0.04, 0.93, header, fontsize=fontsize + 0.5, fontweight="bold", va="top",
                         transform=ax.transAxes),
                 ax.text(0.04, 0.74, body, fontsize=fontsize, va="top", family="monospace", transform=ax.transAxes)):
        text.set_in_layout(False)      # the panels keep their width: tight_layout does not make room for it


def draw_context_comparison(examples, records, indices: list[int] | None = None, width: int = 36):
    """One row per pair: image, question with the gold answer, best and worst candidate."""
    import matplotlib.pyplot as plt

    indices = contrast_pairs(records, 3) if indices is None else list(indices)
    if not indices:
        raise ValueError("no pair to show (need a record whose checked candidates scored differently)")
    fig, axes = plt.subplots(len(indices), 4, figsize=(11, 2.6 * len(indices)), squeeze=False,
                             gridspec_kw={"width_ratios": [0.5, 1.3, 1.6, 1.6]})
    fontsize = max(8.0, legible_pt(11 + 0.3))         # + 0.3 in: the tight crop's padding
    for row, i in zip(axes, indices):
        q, r = examples[i], records[i]
        if q.id != r.query_id:
            raise ValueError(f"examples[{i}] is {q.id} but records[{i}] is {r.query_id}")
        image = open_image(q.image)
        row[0].axis("off")
        if image is not None:
            row[0].imshow(image)
        options = "\n".join(f"({k}) {o}" for k, o in zip(option_letters(len(q.options)), q.options)) \
            if q.options else ""
        gold = f"gold: ({q.answer}) {q.answer_text}" if q.options else f"gold: {q.answer}"
        _panel(row[1], _wrap(q.question, width - 6, 2), f"{options}\n{gold}", "#f3f3f3", fontsize)
        scored = _scored(r)
        worst = min(scored, key=lambda t: (t[1], -t[0]))[0]
        for ax, k, colour, name in ((row[2], r.best_index, "#e3f2e1", "best"), (row[3], worst, "#fbe3e3", "worst")):
            c = r.candidates[k]
            marks = "".join(_MARK.get(v, "?") for v in c.verdicts)
            _panel(ax, f"{name}: candidate {k + 1}, Score = {c.score:.2f}  {marks}",
                   _wrap(c.text, width, 7), colour, fontsize)
    fig.tight_layout()
    plt.close(fig)
    return fig
