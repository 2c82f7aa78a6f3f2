"""pyproject.toml's floors hold what the pinned stack itself requires (a Colab student installs
``kbvqa-book[gpu]`` on the Python and torch the runtime has: a floor that is too low lets pip pick a
combination that fails at import time)."""
from __future__ import annotations

import importlib.metadata as metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

PYPROJECT = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
DEPENDENCIES = [Requirement(r) for r in PYPROJECT["project"]["dependencies"]]


def _floor(specifiers: SpecifierSet) -> Version | None:
    floors = [Version(s.version) for s in specifiers if s.operator in (">=", "==", "~=")]
    return max(floors) if floors else None


def test_requires_python_covers_every_pinned_dependency():
    ours = _floor(SpecifierSet(PYPROJECT["project"]["requires-python"]))
    for req in DEPENDENCIES:
        try:
            theirs = metadata.metadata(req.name)["Requires-Python"]
        except metadata.PackageNotFoundError:
            continue
        if theirs:
            floor = _floor(SpecifierSet(theirs))
            assert floor is None or ours >= floor, f"{req.name} needs Python {theirs}, pyproject allows {ours}"


def test_torch_floor_meets_transformers_needs():
    torch_req = next(r for r in DEPENDENCIES if r.name == "torch")
    needs = [Requirement(r) for r in metadata.requires("transformers") or [] if re.match(r"torch\b", r)]
    needs = [r for r in needs if r.name == "torch"]
    if not needs:
        pytest.skip("transformers declares no torch requirement")
    assert _floor(torch_req.specifier) >= max(_floor(r.specifier) for r in needs)
