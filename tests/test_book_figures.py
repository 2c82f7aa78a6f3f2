"""Every figure the book printed while ``make book`` executed it is legible (issue 51, ``-m book``).

``make book`` loads ``kbvqa.viz.figure_log`` into every chapter's kernel, which checks each figure it
prints (``kbvqa.viz.legibility``: the smallest text at least ``MIN_TEXT_PX`` CSS px high at the 760 px
column, no label under a legend) and writes ``_build/figure_log.jsonl``: a ``figure`` line per figure
checked, a line per problem. Here any problem fails, naming the chapter, the cell and the figure; a
log without figures fails too ("nothing checked" is not "all passed"), and so does a chapter that
``test_book.MIN_FIGURES`` says draws figures but logged none. Without a build the test
skips, or fails under ``KBVQA_REQUIRE_BOOK=1`` (``make book-check``), as the HTML checks do.

Leaves out: figures that are not matplotlib figures (images loaded from files, PIL pictures).
"""
import os
from pathlib import Path

import pytest

from kbvqa.viz.figure_log import read_log

ROOT = Path(__file__).resolve().parents[1]
LOG = ROOT / "_build" / "figure_log.jsonl"


def _log():
    if not LOG.exists():
        if os.environ.get("KBVQA_REQUIRE_BOOK"):
            pytest.fail(f"{LOG} is missing: `make book` did not check its figures")
        pytest.skip("book not built (run `make book`)")
    return read_log(LOG)


def _name(line) -> str:
    figure = " ".join(line.get("figure", "").split())[:80] or "(untitled)"
    return f"{line.get('notebook') or '?'}: cell {line.get('cell', '?')!r}, figure {figure!r}"


@pytest.mark.book
def test_the_book_checked_its_figures():
    from test_book import MIN_FIGURES

    figures, _ = _log()
    assert figures, f"{LOG} lists no figure: the kernels did not load kbvqa.viz.figure_log"
    unplaced = sorted({f.get("cell", "") for f in figures if not f.get("notebook")})
    assert not unplaced, f"figures drawn in cells of no chapter: {unplaced[:5]}"
    seen = {name for f in figures for name in f["notebook"].split(",")}
    unchecked = sorted(name for name, n in MIN_FIGURES.items() if n and name not in seen)
    assert not unchecked, f"chapters that draw figures but logged none: {unchecked}"


@pytest.mark.book
def test_every_figure_is_legible():
    _, problems = _log()
    messages = []
    for p in problems:
        if p.get("kind") == "error":
            messages.append(f"{_name(p)}: the check failed: {p.get('error')}")
        elif p.get("kind") == "small_text":
            messages.append(f"{_name(p)}: {p.get('count', 1)} {p.get('where')} text(s) at {p.get('px')} px "
                            f"< {p.get('min_px')} px, e.g. {p.get('text', '')[:60]!r}")
        else:
            messages.append(f"{_name(p)}: {p.get('where')} {p.get('text', '')[:60]!r} is under a legend")
    assert not messages, f"{len(messages)} legibility problems:\n" + "\n".join(dict.fromkeys(messages))
