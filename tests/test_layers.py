"""The layer order of ``kbvqa.layers`` holds for every import in the package, function-level too.

Walks every ``import`` / ``from ... import`` of every module with ``ast`` (inside functions as well),
resolves it to a module of the package, and fails on an import that points to a higher rank or on
a cycle, unless ``kbvqa.layers.EXCEPTIONS`` lists it with a reason (and then it must be lazy).
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

from kbvqa.layers import EXCEPTIONS, rank_of

ROOT = Path(__file__).resolve().parents[1] / "kbvqa"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = path.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path):
    """(imported module, lineno, at top level) for each kbvqa import of ``module``."""
    tree = ast.parse(path.read_text())
    top = {id(n) for n in tree.body}
    is_pkg = path.name == "__init__.py"
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = module.split(".") if is_pkg else module.split(".")[:-1]
                pkg = pkg[:len(pkg) - (node.level - 1)]
                base = ".".join(pkg + ([base] if base else []))
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        else:
            continue
        for target in targets:
            if not target.startswith("kbvqa"):
                continue
            resolved = _resolve(target)
            if resolved and resolved != module and not module.startswith(resolved + "."):
                yield resolved, node.lineno, id(node) in top


EDGES = {m: list(_imports(m, p)) for m, p in MODULES.items()}


def test_every_module_has_a_rank():
    missing = []
    for m in MODULES:
        try:
            rank_of(m)
        except KeyError:
            missing.append(m)
    assert not missing


def test_no_import_points_up():
    upward = [f"{m}:{line} (rank {rank_of(m)}) imports {t} (rank {rank_of(t)})"
              for m, edges in EDGES.items() for t, line, _ in edges
              if rank_of(t) > rank_of(m) and (m, t) not in EXCEPTIONS]
    assert not upward, "\n".join(upward)


def test_exceptions_are_real_lazy_and_explained():
    for (m, t), reason in EXCEPTIONS.items():
        hits = [top for target, _, top in EDGES.get(m, []) if target == t]
        assert hits, f"stale exception {m} -> {t}: remove it from kbvqa.layers.EXCEPTIONS"
        assert not any(hits), f"{m} -> {t} is an exception, so it must be imported inside a function"
        assert len(reason) > 40


def test_no_cycles():
    graph = {m: {t for t, _, _ in edges if (m, t) not in EXCEPTIONS} for m, edges in EDGES.items()}
    state, cycles = {}, []

    def visit(node, stack):
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


@pytest.mark.parametrize("name", ["tournament", "critic", "reasoning"])
def test_no_flat_paper_modules_at_the_top(name):
    flat = [p.name for p in ROOT.glob("*.py") if p.name.startswith(name) or p.name.endswith("_chapters.py")]
    assert not flat
