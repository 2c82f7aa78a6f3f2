"""The live widgets on Colab's ipywidgets 7.7 (issue 56, item 2): ``kbvqa.viz.live.live_widgets`` is the
one gate, every viewer uses only the names it checks (the API that ipywidgets 7.7.1 and 8 share,
checked by hand against 7.7.1 on 2026-12-07), and an ipywidgets that is missing, too old or lacks a
name gives the static figure, with a note, instead of a broken widget."""
from __future__ import annotations

import sys
import types

import ipywidgets
import pytest
from IPython.display import HTML
from test_viz_legibility import LABELS, ONE_PASS, SCHEDULE
from test_viz_trees import build, tree_to_records

from kbvqa.viz import live


def fake_ipywidgets(version="7.7.1", leave_out=()):
    """A module that is ipywidgets (the real classes) but says ``version`` and lacks ``leave_out``."""
    module = types.ModuleType("ipywidgets")
    module.__version__ = version
    for name in live.NEEDED:
        if name not in leave_out:
            setattr(module, name, getattr(ipywidgets, name))
    return module


def viewers():
    """The three live viewers, each on a small input."""
    from kbvqa.viz.bandits import exploration_widget
    from kbvqa.viz.molt import tournament_widget
    from kbvqa.viz.trees_player import rcts_tree_widget

    root, _ = build()
    return {"bandits": lambda: exploration_widget(n_parent=20),
            "rcts tree": lambda: rcts_tree_widget(tree_to_records(root), dpi=30),
            "tournament": lambda: tournament_widget(ONE_PASS, schedule=SCHEDULE, gold_id="3", labels=LABELS, dpi=30)}


def test_the_installed_ipywidgets_passes_the_gate():
    assert live.live_widgets() is ipywidgets


@pytest.mark.parametrize(("module", "note"), [
    (None, "ipywidgets is not installed"),
    (fake_ipywidgets("7.6.5"), "ipywidgets 7.6.5 is older than 7.7"),
    (fake_ipywidgets("7.7.1", leave_out=("Image",)), "ipywidgets 7.7.1 lacks Image"),
])
def test_the_gate_says_why_it_falls_back(monkeypatch, capsys, module, note):
    monkeypatch.setitem(sys.modules, "ipywidgets", module)      # None: the import fails
    assert live.live_widgets() is None
    out = capsys.readouterr().out
    assert note in out and "static figure" in out


def test_a_7_7_release_with_every_name_passes(monkeypatch):
    fake = fake_ipywidgets("7.7.1")
    monkeypatch.setitem(sys.modules, "ipywidgets", fake)
    assert live.live_widgets() is fake


@pytest.mark.parametrize("viewer", ["bandits", "rcts tree", "tournament"])
def test_every_viewer_uses_only_the_checked_names(monkeypatch, viewer):
    """A new widget name would need checking against ipywidgets 7.7 first: add it to NEEDED then."""
    monkeypatch.setitem(sys.modules, "ipywidgets", fake_ipywidgets("7.7.1"))
    widget = viewers()[viewer]()
    assert isinstance(widget, ipywidgets.Widget), type(widget)


@pytest.mark.parametrize("viewer", ["bandits", "rcts tree", "tournament"])
def test_every_viewer_falls_back_to_the_static_figure(monkeypatch, capsys, viewer):
    monkeypatch.setitem(sys.modules, "ipywidgets", fake_ipywidgets("7.7.1", leave_out=("IntSlider",)))
    shown = viewers()[viewer]()
    assert isinstance(shown, HTML) and "<img" in shown.data and "base64" in shown.data
    assert "lacks IntSlider: showing the static figure instead" in capsys.readouterr().out
