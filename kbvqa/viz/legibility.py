"""Is a rendered figure legible in the book? Its text size at the content column, and labels under legends.

``check_figure(fig, dpi, width_in)`` returns the ``Problem``s of ``fig`` rendered at ``dpi`` into an
image ``width_in`` inches wide (``rendered_width_in``: the figure's own width, or its tight bounding box
plus padding when it is saved with ``bbox_inches="tight"``, as the inline backend saves it):

- ``small_text``: a visible text (title, axis label, tick label, legend entry, annotation, text, table
  cell, figure text) whose height at the page column, ``size_pt / 72 * min(dpi, PAGE_PX / width_in)``
  CSS px, is below ``MIN_TEXT_PX``. The same formula and the same set of texts as
  ``frames.text_px_at_page_width``, with the rendered width in place of the figure's width: a tight
  crop is narrower than the figure, so it is scaled down less;
- ``under_legend``: a visible text outside a legend whose window extent overlaps the legend's (an
  Axes' legend or a figure legend), e.g. an AUC label hidden behind ``loc="lower right"``.

Why a checker of the rendered figure rather than more tests of ``draw_*`` functions: the chapters' own
cells draw figures too (pandas and matplotlib plots, several panels); ``figure_log`` runs this check on
every figure the book prints while it executes, so one check covers all of them.

Pure: the figure is drawn once without rendering (so tick labels have their text and the layout is
done) and otherwise not changed. Leaves out: text hidden by other artists than legends (bars, lines,
images), texts overlapping each other, clipped texts, images' own pixels (``imshow`` of a picture with
text in it), and vector formats' own scaling (an SVG is treated as a PNG at its dpi).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from kbvqa.viz.frames import MIN_TEXT_PX, PAGE_PX

OVERLAP_PX = 1.0
"""Two extents overlap when they share more than this many px in both directions (at the figure's
dpi): texts that only touch a legend's frame are not under it."""


@dataclass(frozen=True)
class Problem:
    """One legibility problem: ``kind`` (``small_text`` or ``under_legend``), the text, its height
    in CSS px at the page column, and where it sits (``title``, ``tick label``, ``legend``, ...)."""

    kind: str
    text: str
    px: float
    where: str

    def describe(self) -> str:
        what = {"small_text": f"{self.px:.1f} px < {MIN_TEXT_PX:g} px",
                "under_legend": "under a legend"}.get(self.kind, self.kind)
        return f"{self.where} {self.text[:60]!r}: {what}"


def text_px(size_pt: float, dpi: float, width_in: float, page_px: float = PAGE_PX) -> float:
    """CSS px of a ``size_pt`` text in an image ``width_in`` inches wide rendered at ``dpi`` and shown
    no wider than ``page_px``."""
    return size_pt / 72.0 * min(float(dpi), page_px / float(width_in))


def rendered_width_in(fig, dpi: float, bbox_inches=None, pad_inches=None) -> float:
    """Width in inches of the image ``fig.savefig(..., dpi=dpi, bbox_inches=..., pad_inches=...)``
    writes: the figure's width, or a given ``Bbox``'s (inches), or with ``"tight"`` the figure's tight
    bounding box padded by ``pad_inches`` (default ``rcParams["savefig.pad_inches"]``) on each side."""
    import matplotlib as mpl

    if bbox_inches is None:
        bbox_inches = mpl.rcParams["savefig.bbox"]
    if bbox_inches is None or bbox_inches == "standard":
        return float(fig.get_size_inches()[0])
    if isinstance(bbox_inches, str):          # "tight"
        if pad_inches in (None, "layout"):
            pad_inches = mpl.rcParams["savefig.pad_inches"]
        fig.draw_without_rendering()
        tight = fig.get_tightbbox(fig._get_renderer())
        return float(tight.width) + 2.0 * float(pad_inches)
    return float(bbox_inches.width)


def labelled_texts(fig):
    """``[(text, where)]``: every visible, non-empty ``Text`` of ``fig`` (the set of
    ``frames._visible_texts``) with the kind of place it sits in."""
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis, Tick
    from matplotlib.legend import Legend
    from matplotlib.table import Cell, Table
    from matplotlib.text import Annotation, Text

    out = []

    def walk(artist, where, axes):
        if not artist.get_visible():
            return
        if isinstance(artist, Legend):
            where = "legend"
        elif isinstance(artist, Table):
            where = "table cell"
        elif isinstance(artist, Tick):
            where = "tick label"
        elif isinstance(artist, Axis) and where not in ("legend", "table cell"):
            where = "axis label"
        if isinstance(artist, Text) and artist.get_text().strip():
            kind = where
            if where == "axes":
                titles = (axes.title, axes._left_title, axes._right_title) if axes is not None else ()
                kind = ("title" if any(artist is t for t in titles)
                        else "annotation" if isinstance(artist, Annotation) else "text")
            elif where == "figure":
                kind = "figure title" if artist is getattr(fig, "_suptitle", None) else "figure text"
            out.append((artist, kind))
        children = artist.get_children()
        if isinstance(artist, Axes):
            axes, where = artist, "axes"
            if not artist.axison:
                hidden = set(map(id, artist._axis_map.values()))
                children = [c for c in children if id(c) not in hidden]
        if isinstance(artist, Cell):
            children = [*children, artist.get_text()]
        for child in children:
            walk(child, where, axes)

    walk(fig, "figure", None)
    return out


def _legends(fig):
    legends = [ax.get_legend() for ax in fig.axes] + list(getattr(fig, "legends", []))
    return [leg for leg in legends if leg is not None and leg.get_visible()]


def check_figure(fig, dpi: float, width_in: float | None = None, page_px: float = PAGE_PX,
                 min_px: float = MIN_TEXT_PX) -> list[Problem]:
    """The ``Problem``s of ``fig`` rendered at ``dpi`` into an image ``width_in`` inches wide
    (default: the figure's width, i.e. saved without ``bbox_inches="tight"``); ``[]`` when legible."""
    fig.draw_without_rendering()
    width_in = float(fig.get_size_inches()[0]) if width_in is None else float(width_in)
    texts = labelled_texts(fig)
    problems = []
    for text, where in texts:
        px = text_px(text.get_fontsize(), dpi, width_in, page_px)
        if px < min_px - 1e-9:
            problems.append(Problem("small_text", text.get_text(), px, where))
    legends = _legends(fig)
    if legends:
        renderer = fig._get_renderer()
        boxes = [leg.get_window_extent(renderer) for leg in legends]
        inside = {id(t) for leg in legends for t, _ in labelled_texts_of(leg)}
        for text, where in texts:
            if id(text) in inside:
                continue
            extent = text.get_window_extent(renderer)
            for box in boxes:
                if _overlap(extent, box) > OVERLAP_PX:
                    px = text_px(text.get_fontsize(), dpi, width_in, page_px)
                    problems.append(Problem("under_legend", text.get_text(), px, where))
                    break
    return problems


def labelled_texts_of(artist):
    """The visible texts under one artist (a legend: its entries and its title)."""
    from matplotlib.text import Text

    found = []
    stack = [artist]
    while stack:
        a = stack.pop()
        if isinstance(a, Text):
            found.append((a, "legend"))
        stack.extend(a.get_children())
    return found


def _overlap(a, b) -> float:
    """The smaller side of the intersection of two ``Bbox``es in px (0 when they are apart)."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(0.0, min(width, height))


def min_text_px(fig, dpi: float, width_in: float | None = None, page_px: float = PAGE_PX) -> float:
    """The smallest text's CSS px at the page column (``inf`` without text): with ``width_in`` the
    figure's own width, equal to ``frames.text_px_at_page_width(fig, dpi, page_px)``."""
    fig.draw_without_rendering()
    width_in = float(fig.get_size_inches()[0]) if width_in is None else float(width_in)
    sizes = [t.get_fontsize() for t, _ in labelled_texts(fig)]
    return text_px(min(sizes), dpi, width_in, page_px) if sizes else math.inf


def figure_name(fig) -> str:
    """What a reader sees first of ``fig``: its suptitle, else its Axes' titles (``" | "``-joined),
    else its first texts; ``""`` for a figure without text."""
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text().strip():
        return suptitle.get_text().strip()
    titles = [t.get_text().strip() for ax in fig.axes
              for t in (ax.title, ax._left_title, ax._right_title) if t.get_text().strip()]
    if titles:
        return " | ".join(titles)[:200]
    labels = [ax.get_ylabel() or ax.get_xlabel() for ax in fig.axes]
    return " | ".join(x for x in labels if x)[:200]
