"""What ``pip install kbvqa-book[gpu]`` asks of a Colab runtime (issue 56, item 2): every requirement
it installs, ours and those of the dependencies we pin, admits the versions Colab already has
(``requirements/colab-2026-12.txt``), so pip keeps Colab's numpy (its numba needs < 2.3), pandas
(google-colab pins it), torch (its CUDA build), pillow and ipywidgets (its front end is 7.7).
Offline: ``packaging`` only, with the pinned dependencies' own requirements read from this
environment's metadata (CI installs exactly those pins). A line marked ``# replaced:`` is a version
the book upgrades on purpose; the test checks that the mark is still true. A full resolve against the
package index is ``make colab-resolve`` (manual)."""
from __future__ import annotations

import importlib.metadata as metadata
import re
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
COLAB_FILE = ROOT / "requirements" / "colab-2026-12.txt"
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
# What the issue asks to keep: never to be marked replaced.
KEPT = {"python", "torch", "numpy", "pandas", "pillow", "ipywidgets"}


def colab_versions(path: Path = COLAB_FILE) -> dict[str, tuple[Version, bool]]:
    """``{canonical name: (version, replaced)}`` from ``name==version  # comment`` lines."""
    found = {}
    for line in path.read_text().splitlines():
        entry, _, comment = line.partition("#")
        if not entry.strip():
            continue
        match = re.fullmatch(r"\s*([A-Za-z0-9._-]+)==(\S+)\s*", entry)
        assert match, f"{path.name}: not 'name==version': {line!r}"
        name = canonicalize_name(match[1])
        assert name not in found, f"{path.name}: {name} twice"
        found[name] = (Version(match[2]), comment.strip().startswith("replaced:"))
    return found


def colab_environment(python: Version) -> dict[str, str]:
    """Marker values of a Colab GPU runtime (Linux x86-64, CPython ``python``)."""
    return {"python_version": f"{python.major}.{python.minor}", "python_full_version": str(python),
            "sys_platform": "linux", "platform_system": "Linux", "platform_machine": "x86_64",
            "os_name": "posix", "implementation_name": "cpython", "platform_python_implementation": "CPython",
            "extra": ""}


def gpu_profile_requirements(project: dict = PROJECT) -> list[Requirement]:
    """What ``kbvqa-book[gpu]`` installs directly: the dependencies and the ``gpu`` extra, with every
    variant of it (``gpu-faiss``: the same with FAISS's GPU build)."""
    extras = project["optional-dependencies"]
    chosen = [name for name in extras if name == "gpu" or name.startswith("gpu-")]
    return [Requirement(r) for r in project["dependencies"] + [r for name in chosen for r in extras[name]]]


def requirements_on_colab(project: dict = PROJECT, installed=metadata.version, requires=metadata.requires):
    """``[(who, Requirement)]`` that apply on Colab: ours, and those of every dependency we pin with
    ``==`` whose pinned version is the one installed here (its metadata is then the pinned one's)."""
    env = colab_environment(colab_versions()["python"][0])
    ours = [r for r in gpu_profile_requirements(project) if r.marker is None or r.marker.evaluate(env)]
    found = [("pyproject.toml", r) for r in ours]
    for req in ours:
        pins = [s.version for s in req.specifier if s.operator == "=="]
        try:
            if not pins or installed(req.name) != pins[0]:
                continue
            theirs = requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for line in theirs:
            dep = Requirement(line)
            if dep.marker is None or dep.marker.evaluate(env):
                found.append((f"{req.name}=={pins[0]}", dep))
    return found


def conflicts(colab: dict, requirements) -> dict[str, list[str]]:
    """``{name: ["who needs what", ...]}`` for each Colab package some requirement does not admit."""
    out: dict[str, list[str]] = {}
    for who, req in requirements:
        name = canonicalize_name(req.name)
        if name in colab and not req.specifier.contains(colab[name][0], prereleases=True):
            out.setdefault(name, []).append(f"{who} needs {req}")
    return out


def test_the_file_records_what_the_issue_names():
    colab = colab_versions()
    assert {"python", "torch", "numpy", "pandas", "pillow", "ipywidgets", "transformers"} <= set(colab)
    assert not [n for n in KEPT if colab[n][1]], "the issue asks to keep these: never 'replaced'"


def test_python_and_every_gpu_profile_requirement_admit_colabs_versions():
    colab = colab_versions()
    assert SpecifierSet(PROJECT["requires-python"]).contains(colab["python"][0])
    kept = {n: v for n, v in colab.items() if not v[1]}
    bad = conflicts(kept, requirements_on_colab())
    assert not bad, "pip would replace Colab's own packages:\n" + "\n".join(
        f"  {n}=={kept[n][0]}: {'; '.join(why)}" for n, why in sorted(bad.items()))


def test_every_replaced_mark_is_still_true():
    """A ``# replaced:`` line whose version the book now admits is stale: drop the mark."""
    colab = colab_versions()
    replaced = {n: v for n, v in colab.items() if v[1]}
    stale = set(replaced) - set(conflicts(replaced, requirements_on_colab()))
    assert not stale, f"the book now keeps {sorted(stale)}: remove '# replaced:' in {COLAB_FILE.name}"


def test_the_check_catches_a_pin_and_a_pinned_dependencys_floor(tmp_path):
    """The check itself: a pin of ours that Colab lacks, and a floor inside a pinned dependency."""
    project = {"dependencies": ["numpy==2.4.6", "torch>=2.6", "faiss-cpu==1.15.1"],
               "optional-dependencies": {"gpu": ["pandas>=2.2"]}}
    fake_requires = {"faiss-cpu": ["numpy>=2.3", "pandas<2; python_version < '3.12'"]}
    found = requirements_on_colab(project, installed=lambda name: "1.15.1",
                                  requires=lambda name: fake_requires.get(name, []))
    bad = conflicts(colab_versions(), found)
    assert sorted(bad) == ["numpy"]                          # the marker keeps pandas<2 off Python 3.13
    assert bad["numpy"] == ["pyproject.toml needs numpy==2.4.6", "faiss-cpu==1.15.1 needs numpy>=2.3"]
    # a pinned dependency installed here at another version: its metadata is not the pinned one's
    assert len(requirements_on_colab(project, installed=lambda name: "0.0", requires=fake_requires.get)) == 4


def test_colab_file_rejects_a_malformed_line(tmp_path):
    path = tmp_path / "colab.txt"
    path.write_text("numpy>=2\n")
    with pytest.raises(AssertionError, match="name==version"):
        colab_versions(path)
