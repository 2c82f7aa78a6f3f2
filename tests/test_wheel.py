"""The built wheel carries the data the chapters read (a Colab student installs ``kbvqa`` from a wheel
or from git, never as a checkout): built from a clean copy of the tracked tree, installed without
dependencies into an environment that sees the already-installed stack, run from outside the repo."""
from __future__ import annotations

import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Tracked but not package data: an unfinished experiment's work folder, carried between working
# sessions (data/runs_in_progress/README.md). No chapter reads it; pyproject's package-data omits it.
NOT_SHIPPED = ("data/runs_in_progress/",)
CHAPTER_31 = """
from pathlib import Path
import kbvqa
from kbvqa.config import DATA_DIR
from kbvqa import paper_vs_ours as pvo
from kbvqa.reader.ship import reader_fingerprint
root = Path(kbvqa.__file__).resolve().parent
assert DATA_DIR.is_relative_to(root), (DATA_DIR, root)
effects = pvo.all_effects()
from kbvqa.molt import load_candidate_results     # the gpu smoke run found it reading beside the package
assert load_candidate_results()["ks"]
print(len(effects), reader_fingerprint())
"""


def _run(*args, **kwargs):
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=600, **kwargs)
    if done.returncode:                       # say what failed: CalledProcessError alone hides stderr
        raise AssertionError(f"{args[:3]} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return done


@pytest.mark.slow
def test_wheel_carries_the_data_and_a_chapter_runs_from_it(tmp_path):
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True)
    if tracked.returncode != 0:
        pytest.skip("not a git checkout: the clean tree comes from git ls-files")
    tree = tmp_path / "tree"
    for name in filter(None, tracked.stdout.split("\0")):
        source, target = ROOT / name, tree / name
        if source.is_symlink() or source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(source.readlink()) if source.is_symlink() else target.write_bytes(source.read_bytes())
    assert (tree / "kbvqa" / "_data").is_symlink()
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", tmp_path / "dist", tree)
    wheel = next((tmp_path / "dist").glob("*.whl"))    # kbvqa_book-<version>-py3-none-any.whl
    names = zipfile.ZipFile(wheel).namelist()
    shipped = {n.removeprefix("kbvqa/_data/") for n in names if n.startswith("kbvqa/_data/")}
    data_files = {n.removeprefix("data/") for n in tracked.stdout.split("\0")
                  if n.startswith("data/") and not n.startswith(NOT_SHIPPED)}
    assert shipped == data_files                       # every tracked data file, and nothing else (no caches)
    assert "kbvqa/prompts/" in "".join(names)
    env = tmp_path / "venv"
    _run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", env)
    python = env / "bin" / "python"
    site = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
    (site / "_stack.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")   # the installed stack, after us
    _run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", site, wheel)
    out = _run(python, "-c", CHAPTER_31, cwd=tmp_path).stdout.split()
    from kbvqa import paper_vs_ours as pvo
    from kbvqa.reader.ship import reader_fingerprint

    assert out == [str(len(pvo.all_effects())), reader_fingerprint()]


def test_no_module_finds_the_data_by_its_own_path():
    """Every data path goes through ``kbvqa.config.DATA_DIR`` (a checkout's ``data/`` or the wheel's
    ``kbvqa/_data``); a path built from a module's own location points beside site-packages."""
    import re

    pattern = re.compile(r"parents\[\d+\]\s*/\s*[\"']data[\"']")
    found = [str(p) for p in (ROOT / "kbvqa").rglob("*.py") if pattern.search(p.read_text(encoding="utf-8"))]
    assert found == []
