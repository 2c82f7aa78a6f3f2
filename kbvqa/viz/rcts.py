"""Figures of the RCTS experiments chapter, drawn from ``results.json`` (``kbvqa.rcts.results.summarise``).

- ``draw_rcts_main(results)``         Tab. 2 analogue: toy accuracy per method with 95 % Wilson intervals
                                 and the chance level, beside the paper's bars (ScienceQA, 2B).
- ``draw_rcts_ablations(results)``    Tab. 4 (MCTS x reasoning context), Tab. 5 (alpha) and Fig. 5b
                                 (rollouts): toy accuracy with intervals on the left axis, the
                                 paper's numbers dashed on a right axis (different models and data,
                                 so only the *shape* is comparable).
- ``draw_rcts_diagnostics(results)``  why RCTS does or does not help: retrieval hit rate at k, accuracy
                                 with oracle examples, and how rewards separate right from wrong.
- ``draw_rcts_letter_vs_text(results)``  per run, the scored letter's accuracy beside the accuracy of
                                 the answer text the rationale names (``answer_text``).

Legibility: no text is smaller than ``frames.legible_pt`` of the figure's width (plus the tight crop's
padding), and the three-panel figures are 11 in wide (at 13 in with 7 pt ticks they showed 5.7 px
text at the page column, and the rewards panel's legend hid an AUC label: it now sits above them).
Every function returns a closed Figure (a notebook shows it once). Leaves out: computing anything.
"""
from __future__ import annotations

from kbvqa.viz.frames import legible_pt
from kbvqa.viz.labels import results_model_label

CHANCE = 0.25           # the toy world's multiple-choice questions have four options
_TOY, _PAPER = "#4c72b0", "#999999"


def _n_of(rows) -> str:
    """The title's n: one number when every row ran on the same questions, else "n per bar"
    (the tick labels then carry each row's n)."""
    ns = {r["n"] for r in rows}
    return f"n = {ns.pop()}" if len(ns) == 1 else "n per bar"


def _small(fig) -> float:
    """The figure's small text size: 7 pt, or more when the figure is wider than ~9 in."""
    return max(7.0, legible_pt(fig.get_size_inches()[0] + 0.3))      # + 0.3 in: the tight crop's padding


def _tick(rows, r) -> str:
    return r["row"] if len({x["n"] for x in rows}) == 1 else f"{r['row']} (n = {r['n']})"


def _acc_bars(ax, rows, colour=_TOY, fs=7.0):
    xs = list(range(len(rows)))
    acc = [100 * r["accuracy"] for r in rows]
    err = [[100 * (r["accuracy"] - r["low"]) for r in rows], [100 * (r["high"] - r["accuracy"]) for r in rows]]
    ax.bar(xs, acc, color=colour, yerr=err, capsize=3)
    for x, a in zip(xs, acc):
        ax.text(x, 1, f"{a:.0f}", ha="center", va="bottom", fontsize=fs, color="white")
    ax.set_xticks(xs, [_tick(rows, r) for r in rows], rotation=25, ha="right", fontsize=fs)
    ax.tick_params(axis="y", labelsize=fs)
    ax.set_ylim(0, 100)
    ax.spines[["top", "right"]].set_visible(False)


def _chance(ax, fs=7.0, inside=False):
    """The chance line, labelled right of the axes (``inside``: above the line at its right end, clear
    of a twin axis' tick labels)."""
    ax.axhline(100 * CHANCE, color="#c44e52", ls=":", lw=1)
    if inside:
        ax.text(0.98, 100 * CHANCE, "chance", color="#c44e52", fontsize=fs, ha="right", va="bottom",
                transform=ax.get_yaxis_transform())
    else:
        ax.text(ax.get_xlim()[1], 100 * CHANCE, " chance", color="#c44e52", fontsize=fs, va="center")


def draw_rcts_main(results: dict):
    """Toy accuracy of zero-shot / ICL / Vanilla-RAG / RCTS next to the paper's Tab. 2."""
    import matplotlib.pyplot as plt

    rows = results["tables"].get("main", [])
    if not rows:
        raise ValueError("results hold no 'main' table: run the script with --groups main")
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2), sharey=True)
    fs = _small(fig)
    _acc_bars(left, rows, fs=fs)
    _chance(left, fs)
    left.set_ylabel("accuracy (%)")
    left.set_title(f"toy world, {results_model_label(results)} ({_n_of(rows)})", fontsize=fs + 2)
    papers = [r for r in rows if r["paper"] is not None]
    right.bar(range(len(papers)), [r["paper"] for r in papers], color=_PAPER)
    right.set_xticks(range(len(papers)), [r["row"] for r in papers], rotation=25, ha="right", fontsize=fs)
    right.set_title("paper, " + results["paper_source"]["main"], fontsize=fs + 2)
    right.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def _line(ax, rows, xs, label):
    acc = [100 * r["accuracy"] for r in rows]
    ax.errorbar(xs, acc, yerr=[[100 * (r["accuracy"] - r["low"]) for r in rows],
                               [100 * (r["high"] - r["accuracy"]) for r in rows]],
                color=_TOY, marker="o", capsize=3, label=label)


def _paper_axis(ax, xs, values, label="paper", fs=7.0):
    if not any(v is not None for v in values):
        return
    twin = ax.twinx()
    twin.plot([x for x, v in zip(xs, values) if v is not None], [v for v in values if v is not None],
              color=_PAPER, ls="--", marker="s", label=label)
    twin.set_ylabel("paper accuracy (%)", color=_PAPER, fontsize=fs + 1)
    twin.tick_params(axis="y", colors=_PAPER, labelsize=fs)


def draw_rcts_ablations(results: dict):
    """Three panels: Tab. 4, Tab. 5 and Fig. 5b analogues (missing tables are left blank)."""
    import matplotlib.pyplot as plt

    tables = results["tables"]
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    fs = _small(fig)
    ablation = tables.get("ablation", [])
    if ablation:
        xs = list(range(len(ablation)))
        _line(axes[0], ablation, xs, "toy")
        axes[0].set_xticks(xs, [_tick(ablation, r) for r in ablation], rotation=20, ha="right", fontsize=fs)
        _paper_axis(axes[0], xs, [r["paper"] for r in ablation], fs=fs)
    axes[0].set_title(f"components (Tab. 4), {_n_of(ablation) if ablation else 'n = 0'}", fontsize=fs + 1)
    alpha = tables.get("alpha", [])
    if alpha:
        xs = [float(r["row"].split("=")[1]) for r in alpha]
        _line(axes[1], alpha, xs, "toy")
        _paper_axis(axes[1], xs, [r["paper"] for r in alpha], fs=fs)
        axes[1].set_xlabel("alpha (weight of the self-consistency\nreward, Eq. 9)", fontsize=fs)
    axes[1].set_title(f"reward weight (Tab. 5), {_n_of(alpha) if alpha else 'n = 0'}", fontsize=fs + 1)
    rollouts = tables.get("rollouts", [])
    if rollouts:
        xs = [int(r["row"].split("=")[1]) for r in rollouts]
        _line(axes[2], rollouts, xs, "toy")
        axes[2].set_xlabel("rollouts P (Fig. 5b; the paper\nprints no values)", fontsize=fs)
    axes[2].set_title(f"rollouts (Fig. 5b), {_n_of(rollouts) if rollouts else 'n = 0'}", fontsize=fs + 1)
    for ax in axes:
        ax.set_ylim(0, 100)
        ax.set_ylabel("toy accuracy (%)", color=_TOY, fontsize=fs)
        ax.tick_params(labelsize=fs)
        _chance(ax, fs, inside=True)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_rcts_diagnostics(results: dict):
    """Retrieval hit rate@k, accuracy with oracle examples, reward separation of right/wrong branches."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6))
    fs = _small(fig)
    hits = (results.get("retrieval") or {}).get("hit_rate", {})
    if hits:
        ks = list(hits)
        axes[0].bar(range(len(ks)), [100 * hits[k] for k in ks], color="#55a868")
        axes[0].set_xticks(range(len(ks)), [f"top-{k}" for k in ks], fontsize=fs)
    axes[0].set_ylim(0, 100)
    axes[0].set_title("retrieval: an example with the query's\nrule and key value in the top k (%)", fontsize=fs + 1)
    diag = results["tables"].get("diagnostics", [])
    if diag:
        _acc_bars(axes[1], diag, colour="#8172b2", fs=fs)
        _chance(axes[1], fs)
    axes[1].set_title("model: accuracy (%) with the best\nexamples the knowledge base holds", fontsize=fs + 1)
    rewards = results.get("reward_diagnostics") or {}
    names = [n for n in rewards if rewards[n]["n"]]
    for i, name in enumerate(names):
        r = rewards[name]
        for offset, key, colour in ((-0.2, "mean_correct", "#55a868"), (0.2, "mean_wrong", "#c44e52")):
            if r[key] is not None:
                axes[2].bar(i + offset, r[key], width=0.4, color=colour,
                            label=key.replace("mean_", "branch ") if i == 0 else None)
        auc = "n/a" if r["auc"] is None else f"{r['auc']:.2f}"
        axes[2].text(i, 1.02, f"AUC {auc}", ha="center", fontsize=fs)
    axes[2].set_xticks(range(len(names)), [n.replace("rcts_sweep_", "") for n in names], rotation=25,
                       ha="right", fontsize=fs)
    axes[2].set_ylim(0, 1.4)                  # the legend's row sits above the AUC labels, not on them
    axes[2].set_title("rewards: mean reward of right vs wrong\nbranches (AUC 0.5 = no signal)", fontsize=fs + 1)
    if names:
        axes[2].legend(fontsize=fs, frameon=False, loc="upper center", ncol=2)
    for ax in axes:
        ax.tick_params(axis="y", labelsize=fs)
        ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig


def draw_rcts_letter_vs_text(results: dict, runs=("zero_shot", "icl_random", "vanilla_rag", "rcts", "oracle")):
    """Per run (those of ``runs`` the results hold): accuracy of the scored letter and of the answer
    text the rationale names (``results["answer_text"]``, with Wilson intervals on the text), chance
    dotted. A text bar far above its letter bar: the model found the answer but named a wrong letter."""
    import matplotlib.pyplot as plt

    table = results.get("answer_text") or {}
    names = [r for r in runs if (table.get(r) or {}).get("n")]
    if not names:
        raise ValueError("results hold no 'answer_text' rows: rerun the script (it writes them)")
    fig, ax = plt.subplots(figsize=(7, 3.2))
    fs = _small(fig)
    xs = range(len(names))
    letter = [100 * table[r]["letter_accuracy"] for r in names]
    text = [100 * table[r]["text_accuracy"] for r in names]
    err = [[t - 100 * table[r]["low"] for t, r in zip(text, names)],
           [100 * table[r]["high"] - t for t, r in zip(text, names)]]
    ax.bar([x - 0.2 for x in xs], letter, width=0.4, color=_TOY, label="scored letter (\"The answer is X\")")
    ax.bar([x + 0.2 for x in xs], text, width=0.4, color="#dd8452", yerr=err, capsize=3,
           label="text the rationale names (\"So the answer is ...\")")
    for x, a, b in zip(xs, letter, text):      # values inside the bars' feet, clear of the whiskers
        ax.text(x - 0.2, 1, f"{a:.0f}", ha="center", va="bottom", fontsize=fs, color="white")
        ax.text(x + 0.2, 1, f"{b:.0f}", ha="center", va="bottom", fontsize=fs, color="white")
    ax.set_xticks(list(xs), [f"{r}\n(n={table[r]['n']})" for r in names], fontsize=8)
    ax.set_ylim(0, 105)
    ax.set_ylabel("accuracy (%)")
    _chance(ax, fs)
    ax.legend(fontsize=fs, frameon=False, loc="upper left")
    ax.spines[["top", "right"]].set_visible(False)
    fig.tight_layout()
    plt.close(fig)
    return fig
