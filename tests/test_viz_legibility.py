"""Every tree, bracket and slider picture the book shows is readable at page width.

Each figure is built on an input the size of the chapters' (the RCTS tree of chapter 14, P = 10
rollouts of width 3 and depth 3; chapter 16's SeRTS search, Sim = 12; a MOLT ladder over N = 5
candidates; chapter 12's exploration-term slider) and its smallest text must be at least
``MIN_TEXT_PX`` high once the book scales it to its content column (``text_px_at_page_width``):
static figures at the figure's own dpi (what the inline backend saves), slider frames and widget
images at the dpi they are really saved at (read back from the PNG's width). Sliders also stay
under 1.5 MB of HTML.
"""
from __future__ import annotations

import re
import struct

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from kbvqa.viz.frames import MIN_TEXT_PX, text_px_at_page_width  # noqa: E402

MAX_SLIDER_BYTES = 1_500_000


@pytest.fixture(scope="module")
def world():
    from kbvqa.data import get_world

    return get_world(0)


def capture(monkeypatch, module) -> list[float]:
    """Patch ``module.figure_png`` so that every frame it saves records its smallest text in px."""
    import kbvqa.viz.frames as frames

    seen: list[float] = []

    def recording(fig, dpi=None, *args, **kwargs):
        png = frames.figure_png(fig, dpi, *args, **kwargs)
        width_px = struct.unpack(">I", png[16:20])[0]
        seen.append(text_px_at_page_width(fig, width_px / fig.get_size_inches()[0]))
        return png

    monkeypatch.setattr(module, "figure_png", recording)
    return seen


def static_px(fig) -> float:
    px = text_px_at_page_width(fig, fig.dpi)
    plt.close(fig)
    return px


# ---- RCTS (chapters 13 and 14) --------------------------------------------------------------------

@pytest.fixture(scope="module")
def rcts_tree(world):
    from kbvqa.rcts import RESULTS_DIR, SWEEP_BASE, load_tree, shows_answer

    query_id, tree = load_tree(RESULTS_DIR, SWEEP_BASE, index=0)      # what chapter 14 draws
    query = next(q for q in world.mc_test if q.id == query_id)
    marks = dict(examples={e.id: e for e in world.mc_kb}, good_example=lambda e: shows_answer(query, e))
    return tree, marks


def test_rcts_tree_is_chapter_sized(rcts_tree):
    from kbvqa.viz.trees import tree_view

    tree, _ = rcts_tree
    view = tree_view(tree)
    assert (tree["config"]["P"], tree["config"]["width"], tree["config"]["K"]) == (10, 3, 3)
    parents = {n.parent for n in view.nodes.values()}
    assert len(view.rollouts) == 10 and sum(n not in parents for n in view.nodes) >= 8   # leaves


def test_rcts_static_tree_is_legible(rcts_tree):
    from kbvqa.viz.trees import draw_rcts_tree

    tree, marks = rcts_tree
    assert static_px(draw_rcts_tree(tree, **marks)) >= MIN_TEXT_PX
    assert static_px(draw_rcts_tree(tree, upto_rollout=2, title="MCTS-HR (P = 10, K = 3, width = 3)",
                                    **marks)) >= MIN_TEXT_PX


def test_rcts_slider_and_widget_are_legible(rcts_tree, monkeypatch):
    import kbvqa.viz.trees_player as player

    tree, marks = rcts_tree
    seen = capture(monkeypatch, player)
    page = player.rcts_tree_html(tree, max_frames=6, dpi=50, **marks).data     # as chapter 14 calls it
    assert len(seen) == 6 and min(seen) >= MIN_TEXT_PX
    assert len(page.encode()) < MAX_SLIDER_BYTES
    seen.clear()
    player.rcts_tree_widget(tree, **marks)
    assert len(seen) == 1 and seen[0] >= MIN_TEXT_PX


# ---- SeRTS (chapter 16) ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def serts_search(world):
    from kbvqa.models.pretrain_mc_lit import lit_question_split
    from kbvqa.serts import SeRTSConfig, noisy_reformulator, rubric_evaluator, run_self_reflection, run_serts
    from kbvqa.serts.evaluate import toy_literature_task

    retrieve, doc_text = toy_literature_task(world)
    question = next(q for q in lit_question_split(world)[1]
                    if q.question.startswith("Does Groglek improve outcomes"))
    args = ([question.question], noisy_reformulator(world, seed=3), rubric_evaluator(world), retrieve, doc_text)
    (result,) = run_serts(*args, SeRTSConfig())
    args = ([question.question], noisy_reformulator(world, seed=3), rubric_evaluator(world), retrieve, doc_text)
    (reflect,) = run_self_reflection(*args, SeRTSConfig(sim=12))
    return result, reflect, question.gold_doc_ids


def test_serts_static_trees_are_legible(serts_search):
    from kbvqa.viz.serts import draw_serts_tree

    result, reflect, gold = serts_search
    assert result.simulations == 12 and len(result.nodes) >= 10
    assert static_px(draw_serts_tree(result, gold=gold, max_query_chars=48)) >= MIN_TEXT_PX
    assert static_px(draw_serts_tree(reflect, gold=gold, max_query_chars=48, title="self-reflection")) >= MIN_TEXT_PX


def test_serts_slider_is_legible_and_keeps_its_frame(serts_search, monkeypatch):
    import kbvqa.viz.serts_player as player

    result, _, gold = serts_search
    seen = capture(monkeypatch, player)
    page = player.serts_tree_html(result, max_frames=8, gold=gold, max_query_chars=48).data
    assert len(seen) == 8 and min(seen) >= MIN_TEXT_PX
    assert len(page.encode()) < MAX_SLIDER_BYTES
    widths = {struct.unpack(">I", __import__("base64").b64decode(b)[16:20])[0]
              for b in re.findall(r'base64,([^"]+)"', page)}
    assert len(widths) == 1                       # every frame drawn in the final tree's frame


# ---- MOLT (chapters 26 and 27) --------------------------------------------------------------------

THINK = ("The creature in the query image is a plain yellow driftfin; neither page shows it, the brook "
         "page shows a striped one")
SCHEDULE = ["5", "4", "3", "2", "1"]                     # N = 5 candidates, weak to strong
LABELS = {"5": "Brookgre", "4": "Kibek", "3": "Robeash", "2": "Thearguk", "1": "Bronvek marsh heron"}


def ladder(rounds, evidence) -> str:
    return "".join(f"<round><compare>[{a}] vs [{b}]</compare><think>{THINK}</think><winner>[{w}]</winner></round>"
                   for a, b, w in rounds) + f"<evidence>[{evidence}]</evidence>"


ONE_PASS = ladder([("5", "4", "5"), ("5", "3", "3"), ("3", "2", "3"), ("3", "1", "3")], "3")
BROKEN = ladder([("5", "4", "4"), ("4", "3", "3"), ("4", "2", "4"), ("4", "1", "4")], "4")


@pytest.mark.parametrize("transcript", [ONE_PASS, BROKEN])
def test_molt_static_bracket_is_legible(transcript):
    from kbvqa.viz.molt import draw_tournament

    fig = draw_tournament(transcript, schedule=SCHEDULE, gold_id="3", labels=LABELS, title="oracle, one pass")
    assert static_px(fig) >= MIN_TEXT_PX


def test_molt_slider_and_widget_are_legible(monkeypatch):
    import kbvqa.viz.molt as molt

    seen = capture(monkeypatch, molt)
    page = molt.tournament_html(ONE_PASS, schedule=SCHEDULE, gold_id="3", labels=LABELS, dpi=50,
                                title="drag").data                            # as chapter 26 calls it
    assert len(seen) == 4 and min(seen) >= MIN_TEXT_PX
    assert len(page.encode()) < MAX_SLIDER_BYTES
    seen.clear()
    molt.tournament_widget(ONE_PASS, schedule=SCHEDULE, gold_id="3", labels=LABELS)
    assert len(seen) == 1 and seen[0] >= MIN_TEXT_PX


# ---- UCT exploration term (chapter 12) ------------------------------------------------------------

def test_bandit_slider_is_legible(monkeypatch):
    import kbvqa.viz.bandits as bandits

    seen = capture(monkeypatch, bandits)
    page = bandits.exploration_slider_html(n_parent=50)
    assert len(seen) == 11 and min(seen) >= MIN_TEXT_PX
    assert len(page.encode()) < MAX_SLIDER_BYTES


def test_bandit_static_figures_are_legible():
    import numpy as np

    from kbvqa.viz.bandits import draw_exploration_terms, draw_exploration_vs_parent, draw_regret_curves

    assert static_px(draw_exploration_terms(cs=(0.1, 0.5, 1.0, 2.0), n_parent=50)) >= MIN_TEXT_PX
    assert static_px(draw_exploration_vs_parent(c=0.5, visits=(1, 4, 16), n_parent_max=200)) >= MIN_TEXT_PX
    runs = np.cumsum(np.ones((3, 50)), axis=1)
    assert static_px(draw_regret_curves({"UCB1": runs, "epsilon-greedy": 2 * runs})) >= MIN_TEXT_PX


@pytest.mark.parametrize("n_images,n_cols,size", [(4, 4, 2.8), (8, 4, 2.4), (2, 2, 3.0), (6, 6, 2.8)])
def test_image_grid_captions_are_legible(n_images, n_cols, size):
    """Chapter 02's grid (four images of 2.8 in, 11.2 in wide) showed its captions at 7.6 px: the
    captions now grow with the grid's width and wrap to their column."""
    import numpy as np
    from PIL import Image

    from kbvqa.viz import image_grid
    from kbvqa.viz.legibility import check_figure, rendered_width_in

    images = [Image.fromarray(np.full((32, 32, 3), (40 * i) % 256, dtype=np.uint8)) for i in range(n_images)]
    captions = [f"{i}: how steady a parachute with a long caption {i}" for i in range(n_images)]
    fig = image_grid(images, captions, n_cols=n_cols, size=size)
    dpi = fig.dpi
    problems = check_figure(fig, dpi, rendered_width_in(fig, dpi, "tight"))
    assert not problems, [p.describe() for p in problems]
