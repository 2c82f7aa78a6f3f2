"""Pictures: pure ``draw_*`` functions that turn a pipeline, tree or tournament into a figure.

A static figure in the book, a kernel-free viewer in the HTML and a live widget in Jupyter all
call the same ``draw_*`` function, so there is one picture of each idea.
"""
from kbvqa.viz.pipeline import PIPELINE_STAGES, PIPELINE_SYSTEMS, draw_pipeline
from kbvqa.viz.plots import image_grid, plot_world_stats

__all__ = ["PIPELINE_STAGES", "PIPELINE_SYSTEMS", "draw_pipeline", "image_grid", "plot_world_stats"]
