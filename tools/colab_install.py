"""The install logic of every chapter's first cell (issue 56, item 1), kept here to be tested:
``tools.first_cell`` copies ``install_kbvqa``'s source into the cell (the package cannot hold it:
the cell runs before the package is installed), and ``tests/test_first_cell.py`` runs it with a
fake ``pip``. Its lines fit the book's code column (88 characters) once indented in the cell.

The order: ``KBVQA_SOURCE`` when it is set (a wheel or a clone uploaded to the runtime, or any pip
address), then the released package at the book's version on the package index, then the
repository named in ``_config.yml``. Each failure prints what the cell tries next; when nothing
works it raises with what to do: build a wheel with ``make dist`` and point ``KBVQA_SOURCE`` at it.
"""
from __future__ import annotations


def install_kbvqa(pip, source, extra, release, repository):
    """Install the book's package from the first place that works; returns the pip
    requirement that did. ``pip(requirement)`` installs and says whether it worked;
    ``source`` is KBVQA_SOURCE or None; ``release`` is "name==version"."""
    import pathlib

    name, version = release.split("==")
    tries = []
    if source:
        path = pathlib.Path(source).expanduser()
        where = path.resolve().as_uri() if path.exists() else source
        tries.append((f"KBVQA_SOURCE={source}", f"{name}{extra} @ {where}"))
    tries.append((f"the released package {release}", f"{name}{extra}=={version}"))
    tries.append((f"the repository {repository}", f"{name}{extra} @ {repository}"))
    for i, (what, requirement) in enumerate(tries):
        print(f"installing {what}")
        if pip(requirement):
            return requirement
        if i + 1 < len(tries):
            print(f"could not install {what}; next: {tries[i + 1][0]}")
    tried = ", ".join(what for what, _ in tries)
    raise RuntimeError(
        f"could not install {name} from {tried}. Next: on a machine with the "
        "repository, run `make dist`, upload dist/*.whl to this runtime, set "
        'os.environ["KBVQA_SOURCE"] to its path and run this cell again.'
    )
