"""Small helpers of the ReAG chapters 20 (coarse and fine retrieval) and 21 (the critic).

- ``PAPER``: the ReAG numbers the chapters print next to ours (Tab. 4 retrieval rows, Tab. 6,
  the "128.6 -> 5.7" passages of Fig. 7, k = 20 and the 0.1 threshold of supp. A / C.3).
- ``separation_auc(scores, kinds)``: how well P(Yes) ranks relevant passages above each kind of
  negative (the Mann-Whitney AUC, ties count one half; 0.5 = chance), the critic chapter's
  training-independent measure.
- ``score_scales(evaluation_rankings)``: the mean top-1 cosine of the coarse and the fine rankings,
  to show why "merge by max" favours whichever stage gives larger cosines.
- ``draw_recall_by_k(rows)``: evidence recall against k for the runs of
  ``multilevel.evaluate_multilevel`` (coarse, coarse + fine, oracle box, crop alone).
- ``draw_boxes_and_crops(queries, boxes, margin, square)``: each query image with its
  ground-truth (green) and predicted (red, dashed) box, and the crop the fine stage retrieves with.

Every figure function closes its figure and returns it (shown once as the cell's value).
Leaves out: retrieval, grounding, the critic and its evaluation (``kbvqa.retrieval.multilevel``,
``kbvqa.retrieval.subject_grounding``, ``kbvqa.critic``, ``kbvqa.critic_eval``), the critic's
figures (``kbvqa.viz.critic``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["PAPER", "RUN_LABELS", "draw_boxes_and_crops", "draw_recall_by_k", "score_scales", "separation_auc"]

PAPER = {
    # Tab. 4, Qwen2.5-VL-3B zero-shot generator, k = 20: answer accuracy (E-VQA single-hop, InfoSeek all)
    "tab4_retrieval_rows": {"no retrieval": (21.9, 18.3), "coarse": (19.2, 10.1),
                            "coarse + critic": (38.0, 27.0), "coarse + fine + critic": (40.2, 27.1)},
    "tab6": {"ReflectiVA (Qwen2.5-VL-3B)": (91.3, 93.8), "ReAG (Qwen2.5-VL-3B)": (94.6, 95.7)},  # recall, specificity
    "passages_k20": (128.6, 5.7),   # Fig. 7: passages per query without / with the critic
    "k": 20,                        # documents per stage (supp. A)
    "threshold": 0.1,               # P(Yes) threshold (supp. A, C.3)
}
RUN_LABELS = {"coarse": "coarse (whole image)", "coarse_fine": "coarse + fine (predicted box)",
              "coarse_fine_oracle": "coarse + fine (oracle box)", "fine_oracle": "fine alone (oracle crop)",
              "union": "coarse + fine, not cut to k"}
_COLOURS = {"coarse": "#4c72b0", "coarse_fine": "#c44e52", "coarse_fine_oracle": "#55a868",
            "fine_oracle": "#8172b2", "union": "#937860"}


def separation_auc(scores: Sequence[float], kinds: Sequence[str], positive: str = "relevant") -> dict[str, float]:
    """AUC of ``positive`` scores against each other kind: P(score_pos > score_neg) + P(tie) / 2,
    over all pairs. NaN for a kind (or the positive class) with no score."""
    if len(scores) != len(kinds):
        raise ValueError(f"{len(scores)} scores for {len(kinds)} kinds")
    pos = [float(s) for s, k in zip(scores, kinds) if k == positive]
    out = {}
    for kind in sorted(set(kinds) - {positive}):
        neg = [float(s) for s, k in zip(scores, kinds) if k == kind]
        pairs = len(pos) * len(neg)
        wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
        out[kind] = round(wins / pairs, 4) if pairs else float("nan")
    return out


def score_scales(coarse: Sequence, fine: Sequence) -> dict[str, float]:
    """Mean top-1 cosine of the coarse and the fine rankings (lists of ``[(doc_id, score), ...]``;
    empty rankings are skipped) and the share of queries whose merged top-1 comes from the fine one."""
    top_c = [r[0][1] for r in coarse if r]
    top_f = [r[0][1] for r in fine if r]
    both = [(c, f) for c, f in zip(coarse, fine) if c and f]
    fine_wins = [f[0][1] > c[0][1] and f[0][0] != c[0][0] for c, f in both]

    def mean(v):
        return round(sum(v) / len(v), 4) if v else float("nan")

    return {"coarse_top1": mean(top_c), "fine_top1": mean(top_f), "fine_takes_top1": mean(fine_wins)}


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

    from kbvqa.data.schema import open_image
    from kbvqa.models.model_card import box_iou
    from kbvqa.retrieval.subject import crop_to_box

    if not queries or len(queries) != len(boxes):
        raise ValueError(f"need one box (or None) per query; got {len(queries)} queries and {len(boxes)} boxes")
    n = len(queries)
    fig, axes = plt.subplots(2, n, figsize=(1.9 * n, 4.2), squeeze=False)
    for j, (q, box) in enumerate(zip(queries, boxes)):
        im = open_image(q.image)
        top, bottom = axes[0][j], axes[1][j]
        top.imshow(im)
        _outline(top, q.box, "#2ca02c", "-")
        _outline(top, box, "#d62728", "--")
        iou = box_iou(list(box) if box is not None else None, list(q.box))
        label = f"'{subjects[j]}'\n" if subjects else ""
        top.set_title(f"{label}IoU {iou:.2f}", fontsize=8)
        bottom.imshow(crop_to_box(im, box, margin, square))
        bottom.set_title("crop" if box is not None else "no box: whole image", fontsize=8)
        for ax in (top, bottom):
            ax.set_xticks([])
            ax.set_yticks([])
    fig.suptitle("ground truth (green) vs predicted box (red, dashed); below: the crop", fontsize=9)
    fig.tight_layout()
    plt.close(fig)
    return fig
