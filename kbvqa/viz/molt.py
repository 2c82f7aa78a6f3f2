"""The MOLT tournament viewer: one pure ``draw_tournament`` and its three front-ends.

``draw_tournament(transcript, schedule, gold_id, ...)`` draws a ladder transcript (one-pass,
iterative or SFT target alike) as a bracket: one column per round with the two candidates who met
(defender on top, challenger below; the winner filled), an arrow carrying the winner to the next
round, the scheduled pair in grey when the model compared someone else, a red frame from the first
round that breaks the chain (Eq. 10's v_t = 0), a star on the ground truth, the round's reasoning
snippet under it and the final ``<evidence>`` at the right. ``upto`` draws only the first rounds
(the frames of the slider), in the full tournament's frame, so rounds keep their place. The
function returns the figure and touches no global state besides creating it; the caller shows or
closes it. Legibility: 1.75 in per column and no text smaller than 7.5 pt nor than
``frames.legible_pt`` of the figure's width (the smallest text is at least ``frames.MIN_TEXT_PX``
high at the book's page width); snippets are wrapped and labels cut to the column.

Front-ends, all built on ``draw_tournament``:
- the static figure (``draw_tournament`` itself);
- ``tournament_html``: one PNG per round, as wide as the book's content column, behind a slider
  that needs no kernel (the HTML book), via ``kbvqa.viz.frames.frames_html``; every figure is
  closed after rendering;
- ``tournament_widget``: an ipywidgets slider redrawing into an ``Image`` widget (Jupyter/Colab);
  without ipywidgets it returns the HTML slider.

Leaves out: running tournaments (``kbvqa.molt.run``), the rewards' arithmetic
(``kbvqa.molt.rewards``; only ``chain_validity`` is called to mark broken rounds).
"""
from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence

from kbvqa.molt.results import ORDER_LABEL, moving_average, scripted_table
from kbvqa.molt.rewards import chain_validity
from kbvqa.parsers import TournamentTranscript, parse_tournament
from kbvqa.viz.frames import figure_png, frames_html, legible_pt
from kbvqa.viz.labels import results_model_label

__all__ = ["draw_tournament", "render_tournament_frames", "tournament_html", "tournament_widget"]

WIN, LOSE, GOLD, BROKEN, PLAN = "#9fd89f", "#eeeeee", "#d4a017", "#c0392b", "#bbbbbb"


def _as_transcript(transcript) -> TournamentTranscript:
    if isinstance(transcript, TournamentTranscript):
        return transcript
    if hasattr(transcript, "transcript"):           # a TournamentRun
        return transcript.transcript
    return parse_tournament(str(transcript or ""))


def _label(cid: str | None, labels: Mapping | None, max_chars: int = 40) -> str:
    if cid is None:
        return "?"
    extra = str((labels or {}).get(cid) or "")
    extra = extra if len(extra) <= max_chars else extra[: max(max_chars - 1, 1)] + "\u2026"
    return f"[{cid}]" + (f"\n{extra}" if extra else "")


def _box(ax, x, y, text, fill, edge="#444444", width=1.0, star=False, fontsize=8.5):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x - 0.38, y - 0.22), 0.76, 0.44, boxstyle="round,pad=0.02", facecolor=fill,
                                edgecolor=edge, linewidth=width))
    ax.text(x, y, text + (" \u2605" if star else ""), ha="center", va="center", fontsize=fontsize)


def draw_tournament(transcript, schedule: Sequence[str] | None = None, gold_id: str | None = None,
                    labels: Mapping | None = None, upto: int | None = None, ax=None, snippet_chars: int = 90,
                    title: str = ""):
    """The bracket of ``transcript`` (a ``TournamentTranscript``, a ``TournamentRun`` or raw text).

    ``schedule``: the order of play (shows the scheduled pair where the model deviated and marks
    broken rounds); ``gold_id``: starred; ``labels``: id -> short text (e.g. the page title);
    ``upto``: number of rounds to draw (None: all, with the evidence)."""
    import matplotlib.pyplot as plt

    t = _as_transcript(transcript)
    rounds = list(t.rounds if upto is None else t.rounds[:max(0, upto)])
    valid = None
    if schedule is not None and len(schedule) >= 2:

        valid = chain_validity(t, schedule)
    n_cols = max(1, len(t.rounds)) + 1            # the whole tournament's frame, also for a prefix
    if ax is None:
        fig, ax = plt.subplots(figsize=(1.75 * n_cols + 0.5, 3.6))
        fig.subplots_adjust(left=0.01, right=0.99, bottom=0.01, top=0.9)
    else:
        fig = ax.figure
    fs = max(7.5, legible_pt(fig.get_size_inches()[0]))
    column_pt = 72.0 * fig.get_size_inches()[0] * ax.get_position().width / (n_cols + 0.2)
    wrap = max(12, int(0.95 * column_pt / (0.55 * fs)))            # snippet characters per line
    label_chars = max(8, int(0.75 * column_pt / (0.55 * (fs + 1))))   # a label within its box

    def label(cid):
        return _label(cid, labels, label_chars)

    gold = None if gold_id is None else str(gold_id)
    for i, r in enumerate(rounds):
        x = i + 1
        pair = r.pair or (None, None)
        broken = valid is not None and i < len(valid) and not valid[i]
        for cid, y in zip(pair, (1.0, 0.0)):
            _box(ax, x, y, label(cid), WIN if cid is not None and cid == r.winner else LOSE,
                 BROKEN if broken else "#444444", 2.0 if broken else 1.0, star=cid is not None and cid == gold,
                 fontsize=fs + 1)
        if schedule is not None and x < len(schedule):
            planned = schedule[x]
            if planned not in pair:
                ax.text(x, -0.42, f"scheduled: [{planned}]", ha="center", va="top", fontsize=fs, color=PLAN)
        ax.text(x, 1.42, f"round {x}" + (" (chain broken)" if broken else ""), ha="center", fontsize=fs + 1,
                color=BROKEN if broken else "black")
        snippet = (r.think or "").strip()
        snippet = snippet if len(snippet) <= snippet_chars else snippet[:snippet_chars - 1] + "\u2026"
        ax.text(x, -0.62, "\n".join(textwrap.wrap(snippet, wrap)) or "(no reasoning)", ha="center", va="top",
                fontsize=fs, color="#333333", style="italic", linespacing=1.1)
        if i + 1 < len(rounds) and r.winner is not None:
            ax.annotate("", xy=(x + 0.62, 1.0), xytext=(x + 0.38, 1.0 if r.winner == pair[0] else 0.0),
                        arrowprops={"arrowstyle": "->", "color": "#555555"})
    done = upto is None or upto >= len(t.rounds)
    if done:
        x = len(rounds) + 1
        ev = t.evidence
        _box(ax, x, 0.5, "evidence\n" + label(ev), GOLD if ev is not None and ev == gold else WIN,
             star=ev is not None and ev == gold, fontsize=fs + 1)
        if not t.format_valid:
            ax.text(x, -0.1, "format invalid", ha="center", va="top", fontsize=fs, color=BROKEN)
    ax.set_xlim(0.4, n_cols + 0.6)
    ax.set_ylim(-1.6, 1.7)
    ax.axis("off")
    ax.set_title(title or f"ladder tournament: {len(t.rounds)} round(s)", fontsize=fs + 2.5)
    return fig


def render_tournament_frames(transcript, dpi: float | None = None, **draw_kwargs) -> tuple[list[bytes], list[str]]:
    """(PNG bytes, label) for each step: after round 1, 2, ..., then with the evidence, at ``dpi``
    but never narrower than the content column (``frames.figure_png``); every figure is closed."""

    t = _as_transcript(transcript)
    steps = list(range(1, len(t.rounds))) + [None]
    frames, labels = [], []
    for upto in steps:
        frames.append(figure_png(draw_tournament(t, upto=upto, **draw_kwargs), dpi))
        labels.append("evidence" if upto is None else f"after round {upto}")
    return frames, labels


def tournament_html(transcript, dpi: float | None = None, title: str = "", **draw_kwargs):
    """``IPython.display.HTML``: the bracket round by round behind a slider that needs no kernel."""
    from IPython.display import HTML


    frames, labels = render_tournament_frames(transcript, dpi=dpi, **draw_kwargs)
    return HTML(frames_html(frames, labels, title=title))


def tournament_widget(transcript, dpi: float | None = None, **draw_kwargs):
    """An ipywidgets slider over the rounds, drawing live into an ``Image`` widget (as wide as the
    content column at least: the book embeds the first image); the HTML slider when ipywidgets is
    missing or cannot draw it (``kbvqa.viz.live``: ipywidgets 7.7 and 8 can)."""
    from kbvqa.viz.live import live_widgets

    widgets = live_widgets()
    if widgets is None:
        return tournament_html(transcript, dpi=dpi, **draw_kwargs)

    t = _as_transcript(transcript)
    n = len(t.rounds)
    image = widgets.Image(format="png")
    slider = widgets.IntSlider(value=max(n, 1), min=1, max=max(n, 1), description="round")

    def show(change=None):
        upto = slider.value if slider.value < n else None
        image.value = figure_png(draw_tournament(t, upto=upto, **draw_kwargs), dpi)

    slider.observe(show, names="value")
    show()
    return widgets.VBox([slider, image])


def draw_reward_curves(curves: dict, live: dict | None = None, window: int = 4, title: str = ""):
    """Fig. 3 analogue: R_proc and R_res per GRPO step (dots) and their moving average (lines), a
    live run's points overlaid (crosses). ``curves``/``live``: dicts with ``process_reward`` and
    ``result_reward`` lists. Returns the figure."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), sharex=True)
    names = ("process reward R_proc", "result reward R_res")
    for ax, key, name in zip(axes, ("process_reward", "result_reward"), names):
        y = curves[key]
        ax.plot(range(1, len(y) + 1), y, "o", ms=3, alpha=0.4, color="C0")
        ax.plot(range(1, len(y) + 1), moving_average(y, window), "-", color="C0", label=f"committed (MA {window})")
        if live:
            ax.plot(range(1, len(live[key]) + 1), live[key], "x", color="C3", label="live short run")
        ax.set_title(name, fontsize=10)
        ax.set_xlabel("GRPO step")
        ax.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def draw_schedule_accuracy(results: dict):
    """Accuracy by schedule: the scripted judges (lines over the error rate) and the trained judge
    (``provenance.model``)."""
    import matplotlib.pyplot as plt

    table = scripted_table(results)
    fig, ax = plt.subplots(figsize=(6, 3.4))
    for i, order in enumerate(ORDER_LABEL):
        ax.plot([r["error"] for r in table], [r[f"{order}_acc_%"] for r in table], "o-", color=f"C{i}",
                label=f"scripted, {order.replace('_', '-')}")
        trained = results["rows"].get(f"grpo_full_{order}")
        if trained:
            ax.axhline(100 * trained["accuracy"], color=f"C{i}", ls=":", lw=1)
    ax.set_xlabel("scripted judge's error per round the ground truth plays")
    ax.set_ylabel("evidence-selection accuracy (%)")
    ax.set_title(f"schedules (dotted: {results_model_label(results)} after SFT + GRPO)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
