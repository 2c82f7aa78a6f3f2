"""Execute the book's notebooks one after another with nbclient, timing each, the way ``make book``
does (myst-nb, force mode): same kernel, the notebook's own folder as working directory, the cpu
profile and the Makefile's environment (``PYTHONHASHSEED=0``, offline hub, no tokenizer threads).

``book_notebooks`` lists the notebooks of ``_toc.yml`` in book order; ``execute_notebook`` runs one
in a fresh kernel and returns the executed notebook with its wall time (kernel start included: what
a reader waits for); ``env`` changes the kernel's environment on top of the book's (the gpu smoke
run, ``tools/gpu_smoke.py``, sets the gpu profile and its local checkpoints that way).

Leaves out: comparing executions (``tools.nb_compare``) and the HTML build.
"""
from __future__ import annotations

import contextlib
import os
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The environment of `make book` (Makefile exports); the profile is forced to cpu.
BOOK_ENV = {"KBVQA_PROFILE": "cpu", "KBVQA_PROGRESS": "0", "PYTHONHASHSEED": "0", "TOKENIZERS_PARALLELISM": "false",
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}


@dataclass
class ExecutedNotebook:
    """One execution: the notebook (nbformat node, outputs filled), its wall time and its error."""

    path: Path
    notebook: object      # nbformat.NotebookNode
    seconds: float        # wall time, kernel start to last cell
    error: str = ""       # "" when every cell ran; else the first line of the failure


def book_notebooks(root: Path = ROOT) -> list[Path]:
    """The .ipynb files listed in ``_toc.yml``, in the order the book shows them."""
    import yaml

    toc = yaml.safe_load((Path(root) / "_toc.yml").read_text(encoding="utf-8"))
    files = [toc.get("root", "")]
    for part in toc.get("parts", []) or []:
        files += [c["file"] for c in part.get("chapters", []) or [] if "file" in c]
    return [Path(root) / f"{f}.ipynb" for f in files if (Path(root) / f"{f}.ipynb").exists()]


@contextlib.contextmanager
def book_environment(extra: dict | None = None):
    """``os.environ`` updated with ``BOOK_ENV`` and then ``extra`` (the kernel inherits it; a value
    ``None`` removes that variable), restored afterwards."""
    env = {**BOOK_ENV, **(extra or {})}
    saved = {k: os.environ.get(k) for k in env}
    for k, v in env.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = str(v)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute_notebook(path: Path, timeout: int = 300, kernel_name: str = "python3",
                     env: dict | None = None) -> ExecutedNotebook:
    """Run every cell of ``path`` in a fresh kernel (``timeout`` seconds per cell, as in
    ``_config.yml``); a failing cell stops the run and is reported in ``error``, never raised.
    ``env``: variables set (or, with value ``None``, removed) for the kernel over ``BOOK_ENV``."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    if timeout < 1:
        raise ValueError(f"timeout must be >= 1 second, got {timeout}")
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, allow_errors=False,
                            resources={"metadata": {"path": str(path.parent)}})
    error = ""
    with book_environment(env):
        t0 = time.perf_counter()
        try:
            client.execute()
        except (CellExecutionError, CellTimeoutError, DeadKernelError) as exc:
            error = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:300]
        seconds = time.perf_counter() - t0
    return ExecutedNotebook(path, nb, seconds, error)


def cell_seconds(notebook) -> list[tuple[int, float]]:
    """``[(cell index, seconds)]`` of every executed code cell, slowest first, from the timestamps
    nbclient records in ``metadata.execution`` (input received to reply sent)."""
    import datetime as dt

    out = []
    for index, cell in enumerate(notebook.cells):
        stamps = cell.get("metadata", {}).get("execution", {})
        start, end = stamps.get("iopub.execute_input"), stamps.get("shell.execute_reply")
        if cell.get("cell_type") == "code" and start and end:
            seconds = (dt.datetime.fromisoformat(end.replace("Z", "+00:00"))
                       - dt.datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds()
            out.append((index, round(seconds, 2)))
    return sorted(out, key=lambda item: -item[1])


def write_notebook(executed: ExecutedNotebook, folder: Path) -> Path:
    """Save an execution as ``folder/<name>.ipynb`` (the layout of ``_build/jupyter_execute``)."""
    import nbformat

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / executed.path.name
    nbformat.write(executed.notebook, target)
    return target
