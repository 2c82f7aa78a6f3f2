"""book/equations.md is generated from the ``Appendix:`` tags of the docstrings, and every tag points
to a function, a unit test and a chapter section (a MyST label) that exist."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

from tools.equations import PAGE, PAPERS, ROOT, render, tags

ROWS = tags()


def test_the_page_is_the_generated_one():
    assert PAGE.read_text() == render(ROWS), "run: python -m tools.equations"


def test_every_paper_has_rows_and_every_function_exists():
    assert {r["paper"] for r in ROWS} == set(PAPERS)
    for r in ROWS:
        module, _, name = r["function"].rpartition(".")
        assert callable(getattr(importlib.import_module(module), name))


def test_every_named_test_exists():
    for r in ROWS:
        path, _, name = r["test"].partition("::")
        assert f"def {name}(" in (ROOT / path).read_text(), r["test"]


def test_every_label_marks_a_chapter_section():
    labels = set()
    for nb in (ROOT / "notebooks").glob("*.ipynb"):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "markdown":
                labels |= {line[1:-2] for line in "".join(cell["source"]).splitlines()
                           if line.startswith("(") and line.endswith(")=")}
    for md in (ROOT / "book").glob("*.md"):
        labels |= {line[1:-2] for line in md.read_text().splitlines() if line.startswith("(") and line.endswith(")=")}
    missing = [r["label"] for r in ROWS if r["label"] not in labels]
    assert not missing, missing


def test_the_page_and_the_api_reference_are_in_the_book():
    toc = (ROOT / "_toc.yml").read_text()
    assert "book/equations" in toc and "book/api" in toc
    assert "sphinx.ext.autodoc" in (ROOT / "_config.yml").read_text()
    assert Path(ROOT / "book" / "api.md").exists()


def test_every_tagged_function_is_documented_in_the_api_reference():
    """The equations page links each function to its API entry: the entry must exist."""
    import re

    api = (ROOT / "book" / "api.md").read_text()
    documented = {}
    for module, line in re.findall(r"\.\. automodule:: (\S+)\n(   :members:.*\n)?", api):
        members = line.partition(":members:")[2].strip()
        documented[module] = {m.strip() for m in members.split(",")} if members else ({"*"} if line else set())
    for r in ROWS:
        module, _, name = r["function"].rpartition(".")
        assert module in documented and (name in documented[module] or "*" in documented[module]), r["function"]
