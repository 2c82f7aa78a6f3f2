"""Shared test set-up: every test starts with no open matplotlib figure.

Several tests assert that a plotting helper closed the figures it drew (``plt.get_fignums()`` is
empty afterwards: a notebook then shows each figure once). A figure left open by an unrelated
earlier test would make that check depend on the test order, so it is cleared here first.
"""
from __future__ import annotations

import sys

import pytest


@pytest.fixture(autouse=True)
def _no_open_figures():
    if "matplotlib.pyplot" in sys.modules:  # never import matplotlib just for this
        sys.modules["matplotlib.pyplot"].close("all")
    yield
