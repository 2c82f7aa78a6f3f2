"""Front-ends of the RCTS tree viewer: a kernel-free HTML slider and a live ipywidgets slider.

Both step through the rollouts of one search by calling ``draw_rcts_tree(records, upto_rollout=r)``
(``trees.py``), so every front-end shows the same picture:

- ``rcts_tree_html``: pre-renders one PNG per rollout (``max_frames`` of them at most, always
  including the last) and returns an ``IPython.display.HTML`` with the frames and a range slider
  whose inline ``oninput`` shows one frame. It needs no kernel, so it works in the built book's
  HTML. Frames are as wide as the book's content column (``frames.page_dpi``: a ``dpi`` below it
  is raised), so their text is as large as on the static figure: ~100 kB of PNG a frame for the
  chapters' 20-node trees, ~0.8 MB of HTML for chapter 14's six frames.
- ``rcts_tree_widget``: an ``ipywidgets`` slider that redraws live into an ``Image`` widget in
  Jupyter/Colab. Without ipywidgets it says so and returns the HTML slider instead.

``frame_rollouts`` (which rollouts become frames) is pure and tested. Leaves out: the drawing.
"""
from __future__ import annotations

from kbvqa.viz.frames import figure_png, frames_html
from kbvqa.viz.trees import draw_rcts_tree
from kbvqa.viz.trees_records import TreeView, tree_view


def frame_rollouts(n_rollouts: int, max_frames: int | None = None) -> list[int]:
    """Rollout positions to pre-render: all of them, or ``max_frames`` spread evenly and always
    ending at the last; ``[-1]`` (the tree before any rollout) when there are none."""
    if n_rollouts < 0:
        raise ValueError(f"n_rollouts must be >= 0, got {n_rollouts}")
    if max_frames is not None and max_frames < 1:
        raise ValueError(f"max_frames must be >= 1 or None, got {max_frames}")
    if n_rollouts == 0:
        return [-1]
    if max_frames is None or n_rollouts <= max_frames:
        return list(range(n_rollouts))
    if max_frames == 1:
        return [n_rollouts - 1]
    step = (n_rollouts - 1) / (max_frames - 1)
    return sorted({round(i * step) for i in range(max_frames)})


def render_frames(tree_records, max_frames: int | None = 12, dpi: float | None = None,
                  **draw_kwargs) -> list[bytes]:
    """PNG bytes of each frame of ``frame_rollouts`` (one ``draw_rcts_tree`` call per frame), at
    ``dpi`` but never narrower than the content column (``frames.figure_png``)."""
    view = tree_records if isinstance(tree_records, TreeView) else tree_view(tree_records)
    frames, thumbnails = [], draw_kwargs.pop("thumbnails", {})
    for upto in frame_rollouts(len(view.rollouts), max_frames):
        fig = draw_rcts_tree(view, upto_rollout=upto, thumbnails=thumbnails, **draw_kwargs)
        frames.append(figure_png(fig, dpi))
    return frames


def rcts_tree_html(tree_records, max_frames: int | None = 12, dpi: float | None = None, title: str = "",
                   **draw_kwargs):
    """``IPython.display.HTML``: the tree after each rollout, behind a slider that needs no kernel."""
    from IPython.display import HTML

    view = tree_records if isinstance(tree_records, TreeView) else tree_view(tree_records)
    positions = frame_rollouts(len(view.rollouts), max_frames)
    frames = render_frames(view, max_frames=max_frames, dpi=dpi, **draw_kwargs)
    labels = ["before any rollout" if p < 0 else f"rollout {p + 1} of {len(view.rollouts)}" for p in positions]
    return HTML(frames_html(frames, labels, title or "drag the slider to step through the rollouts"))


def rcts_tree_widget(tree_records, dpi: float | None = None, **draw_kwargs):
    """A live ``ipywidgets`` slider over the rollouts (Jupyter/Colab): moving it redraws the tree into
    an ``Image`` widget (as wide as the content column at least, like the HTML frames; the book
    embeds the first image in the page). Without ipywidgets, the kernel-free HTML slider of
    ``rcts_tree_html``, also when it cannot draw the widget (``kbvqa.viz.live``: ipywidgets 7.7 and
    8 can)."""
    from kbvqa.viz.live import live_widgets

    widgets = live_widgets()
    if widgets is None:
        return rcts_tree_html(tree_records, dpi=dpi, **draw_kwargs)

    view = tree_records if isinstance(tree_records, TreeView) else tree_view(tree_records)
    last = len(view.rollouts) - 1
    draw_kwargs.setdefault("thumbnails", {})

    def png(upto: int) -> bytes:
        return figure_png(draw_rcts_tree(view, upto_rollout=upto, **draw_kwargs), dpi)

    slider = widgets.IntSlider(value=last, min=min(0, last), max=last, description="rollout",
                               readout_format="d", continuous_update=False)
    image = widgets.Image(value=png(last), format="png")
    slider.observe(lambda change: setattr(image, "value", png(change["new"])), names="value")
    return widgets.VBox([slider, image])
