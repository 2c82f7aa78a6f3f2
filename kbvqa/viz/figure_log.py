"""Every figure the book prints while it executes, checked for legibility and logged (issue 51).

An IPython extension: ``make book`` points the chapters' kernels at an IPython profile
(``tools/ipython/ipython_kernel_config.py``, copied to ``_build/ipython/profile_default``) that loads
it, and names a log file in ``KBVQA_FIGURE_LOG``. ``install()`` wraps
``FigureCanvasBase.print_figure``, the one call every raster image of a figure goes through: the
inline backend's display at the end of a cell (``bbox_inches="tight"``), ``display(fig)``,
``fig.savefig`` and ``frames.figure_png`` (slider frames and widget images). After the original call
has written the image, ``legibility.check_figure`` checks the figure at the dpi and width the image
really has (read from the PNG's header when the image went to a buffer, else
``legibility.rendered_width_in``), and one JSON line per figure (``"kind": "figure"``) and one per
problem (``small_text``, ``under_legend``) is appended to the log, with the figure's name, the
notebook and the first line of the cell that drew it. A check that raises is logged as
``"kind": "error"`` (so ``tests/test_book_figures.py`` fails on it) and never reaches the page:
nothing is printed, the image is the one matplotlib wrote, the figure is only drawn once more
without rendering.

Without ``KBVQA_FIGURE_LOG`` the extension does nothing. Leaves out: images that are not matplotlib
figures (PIL images, pre-rendered PNG files), and deciding pass or fail (the book check does).
"""
from __future__ import annotations

import hashlib
import inspect
import json
import os
from pathlib import Path

from kbvqa.viz.frames import MIN_TEXT_PX, PAGE_PX

ENV = "KBVQA_FIGURE_LOG"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_NOTEBOOK_CELLS: dict[str, list[str]] | None = None


def load_ipython_extension(ipython) -> None:  # noqa: ARG001 - IPython's extension protocol
    """IPython's entry point (``%load_ext kbvqa.viz.figure_log`` or the profile's extensions)."""
    install()


def install() -> bool:
    """Wrap ``FigureCanvasBase.print_figure`` once; ``False`` when ``KBVQA_FIGURE_LOG`` is unset."""
    if not os.environ.get(ENV):
        return False
    from matplotlib.backend_bases import FigureCanvasBase

    original = FigureCanvasBase.print_figure
    if getattr(original, "_kbvqa_logged", False):
        return True
    signature = inspect.signature(original)

    def print_figure(self, filename, *args, **kwargs):
        start = _tell(filename)
        result = original(self, filename, *args, **kwargs)
        try:
            bound = signature.bind(self, filename, *args, **kwargs).arguments
            options = {k: bound.get(k) for k in ("dpi", "format", "bbox_inches", "pad_inches")}
            record(self.figure, _png_width(filename, start), **options)
        except Exception as exc:  # noqa: BLE001 - a failed check is logged, never shown on the page
            _append([{"kind": "error", "error": f"{type(exc).__name__}: {exc}"[:300], **where_drawn()}])
        return result

    print_figure._kbvqa_logged = True
    print_figure.__wrapped__ = original
    FigureCanvasBase.print_figure = print_figure
    return True


def uninstall() -> None:
    """Undo ``install()`` (tests)."""
    from matplotlib.backend_bases import FigureCanvasBase

    current = FigureCanvasBase.print_figure
    if getattr(current, "_kbvqa_logged", False):
        FigureCanvasBase.print_figure = current.__wrapped__


def record(fig, png_width_px: int | None = None, dpi=None, format=None, bbox_inches=None,  # noqa: A002
           pad_inches=None, path: str | None = None) -> list[dict]:
    """Check ``fig`` as ``print_figure(dpi=..., bbox_inches=..., pad_inches=...)`` rendered it (an image
    ``png_width_px`` wide when known) and append its lines to ``path`` (default: ``KBVQA_FIGURE_LOG``);
    returns them."""
    import matplotlib as mpl

    from kbvqa.viz.legibility import check_figure, figure_name, min_text_px, rendered_width_in

    if dpi is None:
        dpi = mpl.rcParams["savefig.dpi"]
    if dpi == "figure":
        dpi = getattr(fig, "_original_dpi", fig.dpi)
    dpi = float(dpi)
    width_in = (png_width_px / dpi if png_width_px
                else rendered_width_in(fig, dpi, bbox_inches, pad_inches))
    problems = check_figure(fig, dpi, width_in)
    base = {"figure": figure_name(fig), **where_drawn()}
    smallest = min_text_px(fig, dpi, width_in)
    lines = [{"kind": "figure", **base, "dpi": round(dpi, 2), "width_in": round(width_in, 3),
              "page_px": PAGE_PX, "min_px": None if smallest == float("inf") else round(smallest, 2),
              "format": format or "png", "problems": len(problems)}]
    groups: dict[tuple, list[str]] = {}
    for p in problems:                      # one line per kind of problem, place and size
        groups.setdefault((p.kind, p.where, round(p.px, 2)), []).append(p.text)
    lines += [{"kind": kind, **base, "text": " / ".join(dict.fromkeys(texts))[:120], "count": len(texts),
               "where": where, "px": px, "min_px": MIN_TEXT_PX} for (kind, where, px), texts in groups.items()]
    _append(lines, path)
    return lines


def where_drawn() -> dict:
    """The notebook (a file of the working directory whose cell has this source) and cell that are
    executing, from IPython's input history; ``{}`` outside IPython."""
    try:
        from IPython import get_ipython

        shell = get_ipython()
        source = shell.history_manager.input_hist_raw[-1] if shell is not None else ""
    except (ImportError, AttributeError, IndexError):
        return {}
    if not source:
        return {}
    first = next((line for line in source.splitlines() if line.strip() and not line.startswith("#")), "")
    return {"notebook": ",".join(_notebooks_with(source)), "cell": first.strip()[:100],
            "execution_count": getattr(shell, "execution_count", None)}


def _notebooks_with(source: str) -> list[str]:
    global _NOTEBOOK_CELLS
    if _NOTEBOOK_CELLS is None:
        _NOTEBOOK_CELLS = {}
        for path in sorted(Path.cwd().glob("*.ipynb")):
            try:
                cells = json.loads(path.read_text(encoding="utf-8")).get("cells", [])
            except (OSError, ValueError):
                continue
            for cell in cells:
                text = "".join(cell.get("source", []))
                _NOTEBOOK_CELLS.setdefault(_key(text), []).append(path.stem)
    return _NOTEBOOK_CELLS.get(_key(source), [])


def _key(source: str) -> str:
    return hashlib.sha1(source.strip().encode()).hexdigest()


def _tell(target) -> int | None:
    try:
        return target.tell() if hasattr(target, "getbuffer") else None
    except (OSError, ValueError):
        return None


def _png_width(target, start: int | None) -> int | None:
    """The width in px of the PNG ``print_figure`` just wrote into the buffer ``target`` from ``start``."""
    if start is None:
        return None
    try:
        head = bytes(target.getbuffer()[start:start + 24])
    except (ValueError, TypeError):
        return None
    return int.from_bytes(head[16:20], "big") if head.startswith(PNG_SIGNATURE) else None


def _append(lines: list[dict], path: str | None = None) -> None:
    path = path or os.environ.get(ENV)
    if not path:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a", encoding="utf-8") as log:
        log.write("".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines))


def read_log(path) -> tuple[list[dict], list[dict]]:
    """``(figures, problems)`` of a log: the ``figure`` lines and every other line."""
    lines = [json.loads(x) for x in Path(path).read_text(encoding="utf-8").splitlines() if x.strip()]
    return [x for x in lines if x.get("kind") == "figure"], [x for x in lines if x.get("kind") != "figure"]
