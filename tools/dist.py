"""``make dist``: the sdist and the wheel of the book's package, built as a publisher builds them and
checked as the package index checks an upload (issue 56, item 1). ``make wheel`` is the same target.

1. A clean tree: the files git tracks (no cache, no stale ``build/``, nothing untracked), with the
   link ``kbvqa/_data -> ../data`` kept, as ``tests/test_wheel.py`` builds it. Their working copies
   travel: a note lists those that differ from the last commit (commit before publishing).
2. The sdist, from that tree, through setuptools' own build hook (no network: the build backend is
   the one installed here, as ``make wheel`` always used it).
3. The wheel, built from the *unpacked sdist* (what ``python -m build`` does): a file the sdist forgot
   is then missing from the wheel too, and step 4 sees it.
4. Checks (``check_metadata``, ``check_data``, ``check_sizes``): the metadata of both parses and
   validates with ``packaging.metadata`` (the library the index and ``twine check`` use), and says
   the name, version, Python floor, licence and README of ``pyproject.toml``; the file names are the
   normalised ones the index wants; the wheel carries every tracked data file the chapters read; no
   file is over the index's default upload limit (100 MB). When ``twine`` is installed, ``twine
   check`` runs too; it is not a dependency of the book (the cpu environment is pinned for CI).

``python -m tools.dist --out dist`` writes ``dist/kbvqa_book-<version>.tar.gz`` and
``dist/kbvqa_book-<version>-py3-none-any.whl`` and prints the upload command; it uploads nothing.
"""
from __future__ import annotations

import argparse
import importlib.util
import shutil
import subprocess
import sys
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path

from packaging.metadata import Metadata
from packaging.utils import canonicalize_name, parse_sdist_filename, parse_wheel_filename
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
# Tracked but not package data: an unfinished experiment's work folder (data/runs_in_progress/README.md).
NOT_SHIPPED = ("data/runs_in_progress/",)
UPLOAD_LIMIT = 100 * 10**6          # the package index's default limit per file, in bytes


def project(root: Path = ROOT) -> dict:
    return tomllib.loads((root / "pyproject.toml").read_text())["project"]


def tracked_files(root: Path = ROOT) -> list[str]:
    done = subprocess.run(["git", "ls-files", "-z"], cwd=root, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"make dist builds from the files git tracks, and git ls-files failed:\n{done.stderr}")
    return [name for name in done.stdout.split("\0") if name]


def uncommitted(root: Path = ROOT) -> list[str]:
    """Tracked files whose working copy differs from the last commit (they travel as they are)."""
    done = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                          capture_output=True, text=True)
    return [line[3:] for line in done.stdout.splitlines() if line.strip()]


def clean_tree(root: Path, tree: Path, names: list[str]) -> None:
    """Copy the tracked ``names`` of ``root`` into ``tree`` (links stay links)."""
    for name in names:
        source, target = root / name, tree / name
        if source.is_symlink() or source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            if source.is_symlink():
                target.symlink_to(source.readlink())
            else:
                shutil.copy2(source, target)


def _run(*args, cwd=None) -> str:
    done = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True)
    if done.returncode:
        raise SystemExit(f"{' '.join(map(str, args[:4]))} ... failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def build(tree: Path, out: Path, work: Path) -> tuple[Path, Path]:
    """Steps 2-3: ``(sdist, wheel)`` in ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    name = _run(sys.executable, "-c", "from setuptools import build_meta as b; "
                f"print(b.build_sdist({str(out)!r}))", cwd=tree).strip().splitlines()[-1]
    sdist = out / name
    with tarfile.open(sdist) as archive:
        archive.extractall(work / "sdist", filter="data")
    (unpacked,) = (work / "sdist").iterdir()
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", out, unpacked)
    (wheel,) = out.glob(f"{sdist.name.removesuffix('.tar.gz')}-*.whl")
    return sdist, wheel


def sdist_metadata(sdist: Path) -> str:
    with tarfile.open(sdist) as archive:
        member = next(m for m in archive.getmembers() if m.name.count("/") == 1 and m.name.endswith("/PKG-INFO"))
        return archive.extractfile(member).read().decode()


def wheel_metadata(wheel: Path) -> str:
    with zipfile.ZipFile(wheel) as archive:
        return archive.read(next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))).decode()


def check_metadata(text: str, spec: dict, readme: str, where: str) -> list[str]:
    """What the index would refuse or show wrongly: ``[]`` when ``text`` (a METADATA or PKG-INFO)
    validates and says what ``spec`` (``pyproject.toml``'s ``project``) and ``readme`` say."""
    try:
        meta = Metadata.from_email(text, validate=True)
    except Exception as error:        # ExceptionGroup of InvalidMetadata: every field at once
        problems = getattr(error, "exceptions", [error])
        return [f"{where}: invalid metadata: {p}" for p in problems]
    out = []
    if canonicalize_name(meta.name) != canonicalize_name(spec["name"]):
        out.append(f"{where}: Name is {meta.name}, pyproject says {spec['name']}")
    if meta.version != Version(spec["version"]):
        out.append(f"{where}: Version is {meta.version}, pyproject says {spec['version']}")
    if str(meta.requires_python or "") != str(spec.get("requires-python", "")):
        out.append(f"{where}: Requires-Python is {meta.requires_python!r}, "
                   f"pyproject says {spec.get('requires-python')!r}")
    licence = spec.get("license")
    if (meta.license_expression or meta.license) != licence:
        out.append(f"{where}: licence is {meta.license_expression or meta.license!r}, pyproject says {licence!r}")
    if not (meta.description_content_type or "").startswith("text/markdown"):
        out.append(f"{where}: Description-Content-Type is {meta.description_content_type!r}, not text/markdown "
                   "(the index would show the README as plain text)")
    if (meta.description or "").strip() != readme.strip():
        out.append(f"{where}: the long description is not README.md")
    if meta.summary != spec.get("description"):
        out.append(f"{where}: Summary is {meta.summary!r}, pyproject says {spec.get('description')!r}")
    return out


def check_names(sdist: Path, wheel: Path, spec: dict) -> list[str]:
    """The index wants normalised file names (``kbvqa_book-0.1.0.tar.gz``) of this name and version."""
    out = []
    for path, parse in ((sdist, parse_sdist_filename), (wheel, parse_wheel_filename)):
        try:
            name, version = parse(path.name)[:2]
        except Exception as error:
            out.append(f"{path.name}: not a valid file name for the index ({error})")
            continue
        expected = canonicalize_name(spec["name"]).replace("-", "_")
        if not path.name.startswith(f"{expected}-{Version(spec['version'])}"):
            out.append(f"{path.name}: the index expects {expected}-{Version(spec['version'])}...")
        if version != Version(spec["version"]):
            out.append(f"{path.name}: version {version}, pyproject says {spec['version']}")
    return out


def check_data(wheel: Path, tracked: list[str]) -> list[str]:
    """The wheel carries, as ``kbvqa/_data/...``, every tracked ``data/`` file (``NOT_SHIPPED`` aside)
    and nothing else there, and the prompts."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
    shipped = {n.removeprefix("kbvqa/_data/") for n in names if n.startswith("kbvqa/_data/")}
    wanted = {n.removeprefix("data/") for n in tracked if n.startswith("data/") and not n.startswith(NOT_SHIPPED)}
    out = [f"{wheel.name}: data/{n} is tracked but not in the wheel" for n in sorted(wanted - shipped)]
    out += [f"{wheel.name}: kbvqa/_data/{n} is in the wheel but not tracked" for n in sorted(shipped - wanted)]
    if not any(n.startswith("kbvqa/prompts/") for n in names):
        out.append(f"{wheel.name}: no kbvqa/prompts/")
    return out


def check_sizes(paths, limit: int = UPLOAD_LIMIT) -> list[str]:
    return [f"{p.name}: {p.stat().st_size / 1e6:.1f} MB, over the index's default limit of {limit / 1e6:.0f} MB "
            "(ask the index for a larger limit, or ship less data)" for p in paths if p.stat().st_size > limit]


def twine_check(paths) -> list[str]:
    """``twine check`` where twine is installed (it is not a dependency); ``[]`` otherwise."""
    if importlib.util.find_spec("twine") is None:
        return []
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, paths)],
                          capture_output=True, text=True)
    return [] if done.returncode == 0 else [f"twine check: {done.stdout[-2000:]}{done.stderr[-2000:]}"]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.dist", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="folder for the sdist and the wheel")
    args = parser.parse_args(argv)
    spec, readme = project(), (ROOT / "README.md").read_text()
    stem = f"{canonicalize_name(spec['name']).replace('-', '_')}-{Version(spec['version'])}"
    for old in args.out.glob(f"{stem}*"):          # this version's files only: others stay
        old.unlink()
    tracked = tracked_files()
    with tempfile.TemporaryDirectory(prefix="kbvqa-dist-") as work:
        tree = Path(work) / "tree"
        clean_tree(ROOT, tree, tracked)
        sdist, wheel = build(tree, args.out.resolve(), Path(work))
    problems = (check_metadata(sdist_metadata(sdist), spec, readme, sdist.name)
                + check_metadata(wheel_metadata(wheel), spec, readme, wheel.name)
                + check_names(sdist, wheel, spec) + check_data(wheel, tracked)
                + check_sizes((sdist, wheel)) + twine_check((sdist, wheel)))
    for path in (sdist, wheel):
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}  {path.stat().st_size / 1e6:.1f} MB")
    if problems:
        print("\n".join(["the distribution would not publish as it is:"] + [f"  {p}" for p in problems]))
        return 1
    changed = uncommitted()
    if changed:
        print(f"note: {len(changed)} tracked file(s) differ from the last commit and are in the distribution "
              f"as they are ({', '.join(changed[:5])}{', ...' if len(changed) > 5 else ''}): commit, then "
              "make dist again, before publishing")
    checker = "twine check and " if importlib.util.find_spec("twine") else ""
    print(f"checked ({checker}packaging.metadata): name, version, Requires-Python, licence, README, data, sizes.\n"
          f"to publish (a maintainer with the index's token): python -m twine upload {args.out.name}/{stem}*")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
