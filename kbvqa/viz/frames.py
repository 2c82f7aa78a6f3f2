"""The book's picture primitives: a figure as PNG bytes, a slider over PNG frames, and a legibility check.

- ``figure_png(fig, dpi)``: the PNG bytes of a matplotlib figure, which is closed afterwards (the
  one place a figure becomes an image: every pre-rendered slider frame goes through it); the PNG is
  never narrower than the book's content column (``page_dpi``), so frames are not shown below
  their own resolution;
- ``frames_html(frames, labels, title)``: a self-contained HTML slider over PNG frames (inline
  ``oninput``, base64 images): it needs no kernel and no network, so it works in the built book.
  The RCTS tree viewer, the SeRTS tree viewer, the MOLT ladder viewer and UCT's exploration slider
  all use it;
- ``text_px_at_page_width(fig, dpi)``: the height in CSS px of the figure's smallest text once the
  book shows it (scaled down to the content column when wider); every picture the book shows is
  tested against ``MIN_TEXT_PX``.

The content column: sphinx-book-theme 1.3 (pydata-sphinx-theme 0.17) caps the article at 60em
(960 px) and at the main area minus the 17rem secondary sidebar, less 2rem padding each side: about
790 px on a 1408 px (88rem) page, 690 px on a 1280 px screen. ``PAGE_PX = 760`` sits between.

Leaves out: what is drawn (the ``draw_*`` functions of the other ``viz`` modules).
"""
from __future__ import annotations

import base64
import hashlib
import html
import io
import math

PAGE_PX = 760
"""Width in CSS px of the book's content column (see the module docstring)."""

MIN_TEXT_PX = 8.0
"""Readability floor: the smallest text of a picture the book shows is at least this many CSS px
high at page width. 8-9 px is the usual minimum for figure labels (the body text is 16 px, and
browsers' own minimum font setting is around 9 px); below ~7 px digits such as 0.80 and 0.60 or
3 and 8 blur into each other, which is what the reviewer saw at 4 px."""


def page_dpi(fig, dpi: float | None = None, page_px: float = PAGE_PX) -> float:
    """The dpi at which ``fig`` becomes a PNG at least ``page_px`` wide: ``max(dpi, ceil(page_px / width))``
    (``dpi=None``: just the page width). A narrower PNG is shown at its own size, so its text
    would be smaller than the page allows; a wider one is scaled down to the column."""
    width_in = float(fig.get_size_inches()[0])
    fit = math.ceil(page_px / width_in)
    return fit if dpi is None else max(float(dpi), fit)


def legible_pt(width_in: float, px: float = MIN_TEXT_PX, page_px: float = PAGE_PX) -> float:
    """The smallest font size in points (rounded up to 0.1 pt) whose text is ``px`` CSS px high when
    a figure ``width_in`` inches wide fills the content column: ``px * 72 * width_in / page_px``.
    The ``draw_*`` functions take ``max(their base size, legible_pt(figure width))``."""
    return math.ceil(10.0 * px * 72.0 * float(width_in) / page_px - 1e-9) / 10.0


def figure_png(fig, dpi: float | None = None, page_px: float = PAGE_PX) -> bytes:
    """``fig`` as PNG bytes at ``page_dpi(fig, dpi, page_px)`` (``dpi`` is a floor: the PNG is at
    least as wide as the content column; ``page_px=0`` keeps ``dpi`` as given); the figure is closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=page_dpi(fig, dpi, page_px) if page_px else dpi)
    finally:
        plt.close(fig)
    return buffer.getvalue()


def _visible_texts(artist):
    """Every ``Text`` under ``artist`` that a draw would show: visible, non-empty, not inside an
    invisible parent, and not an axis of an Axes drawn with ``axis("off")``; a table cell's text
    too (a ``Cell`` does not list it among its children)."""
    from matplotlib.axes import Axes
    from matplotlib.table import Cell
    from matplotlib.text import Text

    if not artist.get_visible():
        return
    if isinstance(artist, Text) and artist.get_text().strip():
        yield artist
    children = artist.get_children()
    if isinstance(artist, Axes) and not artist.axison:
        hidden = set(map(id, artist._axis_map.values()))
        children = [c for c in children if id(c) not in hidden]
    if isinstance(artist, Cell):
        children = [*children, artist.get_text()]
    for child in children:
        yield from _visible_texts(child)


def text_px_at_page_width(fig, dpi: float, page_px: float = PAGE_PX) -> float:
    """The smallest on-page height in CSS px of any visible text of ``fig`` (titles, axis labels,
    tick labels, legends, annotations, texts in the axes) when the figure, ``w`` inches wide, is
    saved at ``dpi`` and shown no wider than ``page_px``: ``size_pt / 72 * min(dpi, page_px / w)``.

    The figure is drawn once without rendering, so tick labels have their text. ``inf`` when the
    figure shows no text. Pure: the figure is not closed or changed (beyond that layout pass)."""
    fig.draw_without_rendering()
    width_in = float(fig.get_size_inches()[0])
    scale = min(float(dpi), page_px / width_in)
    sizes = [t.get_fontsize() for t in _visible_texts(fig)]
    return min(sizes) / 72.0 * scale if sizes else math.inf


def frames_html(frames: list[bytes], labels: list[str] | None = None, title: str = "") -> str:
    """The HTML of a kernel-free slider over PNG ``frames`` (the last one shown first)."""
    if not frames:
        raise ValueError("frames_html needs at least one frame")
    labels = labels or [f"frame {i + 1}" for i in range(len(frames))]
    uid = "rcts-" + hashlib.sha1(b"".join(frames)).hexdigest()[:10]
    last = len(frames) - 1
    images = "".join(
        f'<img class="{uid}-f" alt="{html.escape(labels[i])}" style="max-width:100%;'
        f'display:{"block" if i == last else "none"}" src="data:image/png;base64,'
        f'{base64.b64encode(f).decode()}"/>' for i, f in enumerate(frames))
    names = "|".join(html.escape(x).replace("|", "/") for x in labels)
    show = (f"var b=document.getElementById('{uid}');var i=+this.value;"
            f"b.querySelectorAll('.{uid}-f').forEach(function(m,j){{m.style.display=(j==i)?'block':'none';}});"
            f"b.querySelector('.{uid}-l').textContent=b.dataset.names.split('|')[i];")
    slider = (f'<input type="range" min="0" max="{last}" value="{last}" step="1" style="width:60%" '
              f'oninput="{show}"/>' if last > 0 else "")
    return (f'<div id="{uid}" data-names="{names}" style="font-family:sans-serif;font-size:13px">'
            f'<div>{html.escape(title)}</div>{images}<div>{slider} '
            f'<span class="{uid}-l">{html.escape(labels[last])}</span></div></div>')
