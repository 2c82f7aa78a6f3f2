"""Pictures: pure ``draw_*`` functions that turn a pipeline, tree or tournament into a figure.

A static figure in the book, a kernel-free viewer in the HTML and a live widget in Jupyter all
call the same ``draw_*`` function, so there is one picture of each idea. The naming rule: every
function that returns a figure is ``draw_*`` and lives in ``viz/`` (one module per paper, plus
``plots``, ``pipeline``, ``effects``, ``reader``, ``toy_world``); ``frames.figure_png`` is the one place a figure
becomes PNG bytes and ``frames.frames_html`` the one kernel-free slider.
"""
from kbvqa.viz.pipeline import PIPELINE_STAGES, PIPELINE_SYSTEMS, draw_pipeline
from kbvqa.viz.plots import draw_world_stats, image_grid
from kbvqa.viz.toy_world import draw_query, family_grid

__all__ = ["PIPELINE_STAGES", "PIPELINE_SYSTEMS", "draw_pipeline", "draw_query", "draw_world_stats", "family_grid",
           "image_grid"]
