"""The live widgets' one gate (issue 56, item 2): ``live_widgets()`` gives ``ipywidgets`` when it can
draw them, else ``None`` after a one-line note, and each live viewer then returns its static figure
(the kernel-free slider of the same frames).

Colab's front end is ipywidgets 7.7.1 (``requirements/colab-2026-12.txt``) and the book's pin
8.1.9 (CI). The viewers (``bandits.exploration_widget``, ``trees_player.rcts_tree_widget``,
``molt.tournament_widget``) use only what both have: ``interactive``, ``FloatSlider``,
``IntSlider``, ``Dropdown``, ``Image``, ``VBox`` and ``observe(..., names="value")``, with keyword
arguments that 7.0 already took (``readout_format``, ``continuous_update``, ``format="png"``).
``NEEDED`` lists those names and ``MIN_VERSION`` the oldest release checked (7.7.1, with those
viewers, on 2026-12-07): an older or a stripped-down ipywidgets gets the static figure.
"""
from __future__ import annotations

import re

NEEDED = ("interactive", "FloatSlider", "IntSlider", "Dropdown", "Image", "VBox")
MIN_VERSION = (7, 7)


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", version.split("+")[0])[:2])


def live_widgets(needed=NEEDED):
    """``ipywidgets`` when it is installed, at ``MIN_VERSION`` or later, with every name in
    ``needed``; otherwise ``None``, after printing why and that the static figure follows."""
    try:
        import ipywidgets as widgets
    except ImportError:
        print("ipywidgets is not installed: showing the static figure instead "
              "(pip install 'ipywidgets>=7.7' for the live one)")
        return None
    version = str(getattr(widgets, "__version__", "0"))
    missing = [name for name in needed if not hasattr(widgets, name)]
    if _release(version) < MIN_VERSION or missing:
        why = f"lacks {', '.join(missing)}" if missing else f"is older than {'.'.join(map(str, MIN_VERSION))}"
        print(f"ipywidgets {version} {why}: showing the static figure instead")
        return None
    return widgets
