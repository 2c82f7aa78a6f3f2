"""The legibility checker (``kbvqa.viz.legibility``) and the hook that runs it on every figure the book
prints (``kbvqa.viz.figure_log``), without a kernel: small text and a label under a legend fail, a
plain figure passes, the checker agrees with ``frames.text_px_at_page_width``, a tight crop is measured
at its own width, and a figure printed the way the inline backend prints it is logged.
"""
from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from kbvqa.viz import figure_log  # noqa: E402
from kbvqa.viz.frames import MIN_TEXT_PX, PAGE_PX, text_px_at_page_width  # noqa: E402
from kbvqa.viz.legibility import check_figure, figure_name, min_text_px, rendered_width_in  # noqa: E402


def legible_figure():
    fig, ax = plt.subplots(figsize=(6, 4), dpi=100)          # 600 px: shown at its own size
    ax.plot([0, 1, 2], [0, 1, 0.5], label="recall")
    ax.legend(loc="upper right")
    ax.text(0.05, 0.05, "AUC 0.91", transform=ax.transAxes)
    ax.set(title="a legible figure", xlabel="k", ylabel="recall")
    return fig


def test_a_legible_figure_passes():
    fig = legible_figure()
    assert check_figure(fig, 100) == []
    assert min_text_px(fig, 100) >= MIN_TEXT_PX
    assert figure_name(fig) == "a legible figure"


def test_five_px_text_fails_and_names_it():
    fig = legible_figure()
    fig.axes[0].tick_params(labelsize=3.6)                   # 3.6 pt at 100 dpi: 5 px
    problems = check_figure(fig, 100)
    assert problems and {p.kind for p in problems} == {"small_text"}
    assert {p.where for p in problems} == {"tick label"}
    assert all(p.px == pytest.approx(5.0) for p in problems)
    assert "5.0 px < 8 px" in problems[0].describe()


def test_a_wide_figure_is_scaled_down_to_the_column():
    fig, ax = plt.subplots(figsize=(15.2, 3), dpi=100)       # 1520 px shown at 760: half size
    ax.set_title("ten points", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    (problem,) = check_figure(fig, 100)
    assert (problem.where, problem.px) == ("title", pytest.approx(10 / 72 * 50))


def test_a_table_cell_counts():
    fig, ax = plt.subplots(figsize=(6, 2), dpi=100)
    ax.axis("off")
    table = ax.table(cellText=[["0.81", "0.64"]], loc="center")
    table.auto_set_font_size(False)
    table.set_fontsize(4)
    assert {(p.where, p.text) for p in check_figure(fig, 100)} == {("table cell", "0.81"), ("table cell", "0.64")}


def test_a_label_under_the_legend_fails():
    fig = legible_figure()
    ax = fig.axes[0]
    ax.legend(loc="lower left")                              # now over the AUC label
    problems = check_figure(fig, 100)
    assert [(p.kind, p.text, p.where) for p in problems] == [("under_legend", "AUC 0.91", "text")]
    ax.legend(loc="best")                                    # best avoids the data, not the text:
    ax.get_legend().set_bbox_to_anchor((1.02, 1.0))          # outside the axes it hides nothing
    ax.get_legend().set_loc("upper left")
    assert check_figure(fig, 100) == []


def test_a_figure_legend_over_a_panel_title_fails():
    fig, axes = plt.subplots(1, 2, figsize=(7, 3), dpi=100)
    for ax, name in zip(axes, ("left panel", "right panel")):
        ax.plot([0, 1], [0, 1], label=name)
        ax.set_title(name)
    fig.legend(loc="upper right", bbox_to_anchor=(0.95, 0.95))
    kinds = {(p.kind, p.text) for p in check_figure(fig, 100)}
    assert ("under_legend", "right panel") in kinds


@pytest.mark.parametrize("dpi", [50, 100, 200])
def test_the_checker_agrees_with_text_px_at_page_width(dpi):
    fig = legible_figure()
    fig.axes[0].annotate("peak", (1, 1), fontsize=6.5)
    fig.set_size_inches(9, 4)
    assert min_text_px(fig, dpi) == pytest.approx(text_px_at_page_width(fig, dpi))
    smallest = min(p.px for p in check_figure(fig, dpi, min_px=100))       # every text is a problem
    assert smallest == pytest.approx(text_px_at_page_width(fig, dpi), abs=0.01)


def test_a_tight_crop_is_measured_at_its_own_width():
    fig, ax = plt.subplots(figsize=(12, 3), dpi=100)
    ax.set_position([0.4, 0.2, 0.2, 0.6])                    # a narrow panel in a wide figure
    ax.set_title("cropped")
    tight = rendered_width_in(fig, 100, "tight")
    assert 2.4 < tight < 6 and rendered_width_in(fig, 100) == 12
    assert min_text_px(fig, 100, tight) > min_text_px(fig, 100)             # less scaled down
    assert min_text_px(fig, 100, tight) == pytest.approx(10 / 72 * min(100, PAGE_PX / tight))


@pytest.fixture()
def log(tmp_path, monkeypatch):
    path = tmp_path / "figures.jsonl"
    monkeypatch.setenv(figure_log.ENV, str(path))
    assert figure_log.install()
    yield path
    figure_log.uninstall()


def test_the_hook_logs_a_figure_printed_by_the_inline_path(log):
    from IPython.core.pylabtools import print_figure  # what the inline backend's display calls

    fig = legible_figure()
    fig.axes[0].tick_params(labelsize=3.6)
    png = print_figure(fig, "png")                           # bbox_inches="tight", dpi=fig.dpi
    assert png.startswith(figure_log.PNG_SIGNATURE)
    figures, problems = figure_log.read_log(log)
    (seen,) = figures
    assert seen["figure"] == "a legible figure" and seen["problems"] > 0
    assert seen["width_in"] == pytest.approx(int.from_bytes(png[16:20], "big") / 100, abs=1e-3)
    assert seen["width_in"] < 6                               # the tight crop, not the figure
    assert {p["kind"] for p in problems} == {"small_text"}
    assert all(p["figure"] == "a legible figure" and p["px"] == pytest.approx(5.0) for p in problems)


def test_the_hook_sees_savefig_and_figure_png_and_leaves_the_image_alone(log, tmp_path):
    from kbvqa.viz.frames import figure_png

    fig = legible_figure()
    fig.savefig(tmp_path / "a.png")
    before = (tmp_path / "a.png").read_bytes()
    figure_log.uninstall()
    fig.savefig(tmp_path / "b.png")
    assert (tmp_path / "b.png").read_bytes() == before       # the hook changes nothing drawn
    figure_log.install()
    figure_png(fig)
    figures, problems = figure_log.read_log(log)
    assert len(figures) == 2 and problems == []
    assert figures[1]["width_in"] == 6 and figures[1]["dpi"] == 127    # page_dpi: 760 px wide


def test_a_failing_check_is_logged_not_raised(log, monkeypatch):
    import kbvqa.viz.legibility as legibility

    def broken(*args, **kwargs):
        raise RuntimeError("no renderer")

    monkeypatch.setattr(legibility, "check_figure", broken)
    fig = legible_figure()
    fig.savefig(log.parent / "c.png")                         # the image is still written
    assert (log.parent / "c.png").exists()
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert lines == [{"kind": "error", "error": "RuntimeError: no renderer"}]


def test_without_the_variable_the_extension_does_nothing(monkeypatch):
    from matplotlib.backend_bases import FigureCanvasBase

    monkeypatch.delenv(figure_log.ENV, raising=False)
    figure_log.load_ipython_extension(None)
    assert not getattr(FigureCanvasBase.print_figure, "_kbvqa_logged", False)


def test_the_profile_loads_the_extension():
    from pathlib import Path

    config = Path(__file__).resolve().parents[1] / "tools" / "ipython" / "ipython_kernel_config.py"
    assert '"kbvqa.viz.figure_log"' in config.read_text()


# ---- the draw_* functions the book check found too small or hidden (issue 51), as the book shows them --

def tight_problems(fig) -> list[str]:
    """The problems of ``fig`` as the inline backend shows it (its dpi, ``bbox_inches="tight"``)."""
    problems = check_figure(fig, fig.dpi, rendered_width_in(fig, fig.dpi, "tight"))
    plt.close(fig)
    return [p.describe() for p in problems]


def test_world_stats_are_legible():
    from kbvqa.data import get_world
    from kbvqa.viz.plots import draw_world_stats

    assert tight_problems(draw_world_stats(get_world(0).stats())) == []


@pytest.mark.parametrize("name", ["draw_rcts_main", "draw_rcts_ablations", "draw_rcts_diagnostics",
                                  "draw_rcts_letter_vs_text"])
def test_rcts_figures_are_legible(name):
    import kbvqa.viz.rcts as rcts
    from kbvqa.rcts import RESULTS_DIR, load_results

    assert tight_problems(getattr(rcts, name)(load_results(RESULTS_DIR))) == []


def test_retrieved_examples_and_crops_are_legible():
    from kbvqa.data import get_world
    from kbvqa.viz.reag import draw_boxes_and_crops
    from kbvqa.viz.retrieval import draw_retrieved

    world = get_world(0)
    shown = world.kbvqa_test[0:48:8]                          # six queries, as chapter 20 draws them
    assert tight_problems(draw_boxes_and_crops(shown, [q.box for q in shown], subjects=["x"] * 6)) == []
    kb = world.mc_kb[:5]                                      # the query and its top 5, as chapter 11
    assert tight_problems(draw_retrieved(world.mc_test[0], kb, scores=[1.0] * 5, relevant=[True] * 5)) == []


def test_the_reag_ladder_is_legible():
    from kbvqa.reag import load_results
    from kbvqa.viz.reag import draw_ladder

    assert tight_problems(draw_ladder(load_results())) == []


def test_the_serts_retrieval_bars_are_legible():
    from kbvqa.serts import load_results
    from kbvqa.viz.serts import draw_retrieval

    assert tight_problems(draw_retrieval(load_results())) == []


def test_the_pipeline_ablation_is_legible():
    from kbvqa.pipeline import results
    from kbvqa.viz.pipeline import draw_ablation

    assert tight_problems(draw_ablation(results.load_results())) == []


def test_the_context_comparison_is_legible():
    from types import SimpleNamespace

    from kbvqa.data import get_world
    from kbvqa.viz.contexts import draw_context_comparison

    text = ("Look at the pattern of the creature: this driftfin has zigzags. Duskgill with pink zigzags "
            "are often called the desnusk. So the answer is the desnusk.")
    queries = get_world(0).mc_kb[:3]                          # three pairs, as chapter 10 draws them
    records = [SimpleNamespace(query_id=q.id, best_index=0, candidates=[
        SimpleNamespace(text=text, score=s, verdicts=[v] * 4) for s, v in ((1.0, "correct"), (0.0, "wrong"))])
        for q in queries]
    assert tight_problems(draw_context_comparison(queries, records)) == []
