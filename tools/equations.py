"""Write ``book/equations.md``, the appendix table from equations to code, tests and chapters.

Every function that implements a paper's equation or table carries one tag in its docstring::

    Appendix: <paper> | <equation or table> | <tests/file.py::test_name> | <MyST label of the chapter section>

(a tag may wrap onto the next indented line). ``python -m tools.equations`` rewrites the page;
``tests/test_equations.py`` fails when the page and the tags differ, or a tag names a test, a
function or a label that does not exist.
"""
from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "book" / "equations.md"
PAPERS = ("RCTS", "SeRTS", "ReAG", "MOLT")
_TAG = re.compile(r"Appendix:\s*(.*?)(?:\n\s*\n|\Z)", re.S)
HEADER = """# Equations to code

Each row links an equation or table of one of the four papers to the function that implements it
(its API entry, with a link to the source), the unit test that checks it, and the chapter section
where it is derived. Generated from the ``Appendix:`` tags in the package's docstrings by
`python -m tools.equations`; a unit test keeps this page and the tags equal.

| Paper | Equation | Function | Test | Chapter |
|---|---|---|---|---|
"""


def tags() -> list[dict]:
    """One dict per tagged function: paper, equation, function (dotted), test, label."""
    rows = []
    for path in sorted((ROOT / "kbvqa").rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                continue
            doc = ast.get_docstring(node) or ""
            for m in _TAG.finditer(doc):
                parts = [" ".join(x.split()) for x in m.group(1).split("|")]
                if len(parts) != 4:
                    raise ValueError(f"{module}.{node.name}: a tag has four fields, got {parts}")
                paper, equation, test, label = parts
                rows.append({"paper": paper, "equation": equation, "function": f"{module}.{node.name}",
                             "test": test, "label": label})
    order = {p: i for i, p in enumerate(PAPERS)}
    return sorted(rows, key=lambda r: (order.get(r["paper"], 99), r["function"]))


def render(rows: list[dict] | None = None) -> str:
    rows = tags() if rows is None else rows
    lines = [f"| {r['paper']} | {r['equation']} | {{py:func}}`~{r['function']}` | `{r['test']}` | "
             f"{{ref}}`{r['label']}` |" for r in rows]
    return HEADER + "\n".join(lines) + "\n"


if __name__ == "__main__":
    PAGE.write_text(render())
    print(f"wrote {PAGE.relative_to(ROOT)} ({len(tags())} rows)", file=sys.stderr)
