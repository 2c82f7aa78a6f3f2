"""The book's two picture primitives: a figure as PNG bytes, and a slider over PNG frames.

- ``figure_png(fig, dpi)``: the PNG bytes of a matplotlib figure, which is closed afterwards (the
  one place a figure becomes an image: every pre-rendered slider frame goes through it);
- ``frames_html(frames, labels, title)``: a self-contained HTML slider over PNG frames (inline
  ``oninput``, base64 images): it needs no kernel and no network, so it works in the built book.
  The RCTS tree viewer, the SeRTS tree viewer, the MOLT ladder viewer and UCT's exploration slider
  all use it.

Leaves out: what is drawn (the ``draw_*`` functions of the other ``viz`` modules).
"""
from __future__ import annotations

import base64
import hashlib
import html
import io


def figure_png(fig, dpi: int = 60) -> bytes:
    """``fig`` as PNG bytes at ``dpi``; the figure is closed."""
    import matplotlib.pyplot as plt

    buffer = io.BytesIO()
    try:
        fig.savefig(buffer, format="png", dpi=dpi)
    finally:
        plt.close(fig)
    return buffer.getvalue()


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
