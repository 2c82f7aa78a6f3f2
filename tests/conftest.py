"""Shared test set-up: every test starts with no open matplotlib figure; ``session_ends_at_checkpoint``.

Several tests assert that a plotting helper closed the figures it drew (``plt.get_fignums()`` is
empty afterwards: a notebook then shows each figure once). A figure left open by an unrelated
earlier test would make that check depend on the test order, so it is cleared here first.

The resumable experiments' tests cut a run off inside a training stage, as the end of a working
session does: ``session_ends_at_checkpoint`` makes the work folder save its first checkpoint and
then stop the run.
"""
from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _no_open_figures():
    if "matplotlib.pyplot" in sys.modules:  # never import matplotlib just for this
        sys.modules["matplotlib.pyplot"].close("all")
    yield


@pytest.fixture()
def session_ends_at_checkpoint(monkeypatch):
    """``WorkFolder.save_checkpoint`` saves, then raises ``KeyboardInterrupt`` (the session ends
    there); the fixture's value, called, restores it for the rerun."""
    from kbvqa.experiments.work import WorkFolder

    real = WorkFolder.save_checkpoint

    def save_then_stop(self, name, state):
        real(self, name, state)
        raise KeyboardInterrupt("the session ended")

    monkeypatch.setattr(WorkFolder, "save_checkpoint", save_then_stop)
    return lambda: monkeypatch.setattr(WorkFolder, "save_checkpoint", real)
