"""``make dist`` (``tools/dist.py``, issue 56 item 1): the checks that stand in for the package index's
and ``twine check``'s, each shown to fail on what it guards against, and (slow) the whole build: an
sdist and a wheel built from it, with the data, that pass them."""
from __future__ import annotations

import subprocess
import tarfile
import zipfile

import pytest

from tools import dist

SPEC = {"name": "kbvqa-book", "version": "0.1.0", "requires-python": ">=3.11", "license": "MIT",
        "description": "Knowledge-based VQA."}
README = "# kbvqa\n\nA book.\n"


def metadata(**fields) -> str:
    values = {"Metadata-Version": "2.4", "Name": "kbvqa-book", "Version": "0.1.0", "Summary": "Knowledge-based VQA.",
              "License-Expression": "MIT", "Requires-Python": ">=3.11", "Description-Content-Type": "text/markdown"}
    values.update(fields)
    head = "".join(f"{k}: {v}\n" for k, v in values.items() if v is not None)
    return head + "\n" + README


def test_metadata_that_says_what_pyproject_says_passes():
    assert dist.check_metadata(metadata(), SPEC, README, "w") == []


@pytest.mark.parametrize(("fields", "says"), [
    ({"Name": "kbvqa"}, "Name is kbvqa"),
    ({"Version": "0.2.0"}, "Version is 0.2.0"),
    ({"Requires-Python": ">=3.10"}, "Requires-Python"),
    ({"License-Expression": "Apache-2.0"}, "licence is 'Apache-2.0'"),
    ({"Description-Content-Type": None}, "not text/markdown"),
    ({"Summary": "something else"}, "Summary"),
    ({"Version": "not a version"}, "invalid metadata"),
    ({"Metadata-Version": "9.9"}, "invalid metadata"),
])
def test_metadata_check_names_each_problem(fields, says):
    problems = dist.check_metadata(metadata(**fields), SPEC, README, "w")
    assert any(says in p for p in problems), problems


def test_metadata_check_wants_the_readme_as_long_description():
    assert dist.check_metadata(metadata(), SPEC, README + "more\n", "w") == ["w: the long description is not README.md"]


def test_file_names_must_be_the_normalised_ones(tmp_path):
    good = tmp_path / "kbvqa_book-0.1.0.tar.gz", tmp_path / "kbvqa_book-0.1.0-py3-none-any.whl"
    assert dist.check_names(*good, SPEC) == []
    bad = dist.check_names(tmp_path / "kbvqa-book-0.1.0.tar.gz", tmp_path / "kbvqa_book-0.2.0-py3-none-any.whl", SPEC)
    assert len(bad) == 3 and "kbvqa-book-0.1.0.tar.gz" in bad[0] and "version 0.2.0" in bad[-1], bad


def test_data_check_sees_a_missing_and_an_extra_file(tmp_path):
    wheel = tmp_path / "w.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name in ("kbvqa/prompts/a.txt", "kbvqa/_data/reader/card.md", "kbvqa/_data/cache/x.bin"):
            archive.writestr(name, "x")
    tracked = ["data/reader/card.md", "data/experiments/t.json", "data/runs_in_progress/README.md", "kbvqa/x.py"]
    assert dist.check_data(wheel, tracked) == ["w.whl: data/experiments/t.json is tracked but not in the wheel",
                                               "w.whl: kbvqa/_data/cache/x.bin is in the wheel but not tracked"]


def test_size_check_uses_the_limit(tmp_path):
    path = tmp_path / "big.whl"
    path.write_bytes(b"x" * 2000)
    assert dist.check_sizes([path], limit=2000) == []
    assert "over the index's default limit" in dist.check_sizes([path], limit=1999)[0]


def test_uncommitted_tracked_files_are_named(tmp_path):
    def git(*args):
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                       capture_output=True)

    git("init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    git("add", "a.py", "b.py")
    git("commit", "-q", "-m", "one")
    assert dist.uncommitted(tmp_path) == []
    (tmp_path / "b.py").write_text("y = 2\n")
    (tmp_path / "new.py").write_text("")                # untracked: not in the distribution, not named
    assert dist.uncommitted(tmp_path) == ["b.py"]


@pytest.mark.slow
def test_make_dist_builds_an_sdist_and_a_wheel_from_it_that_pass(tmp_path, capsys):
    try:
        dist.tracked_files()
    except SystemExit:
        pytest.skip("not a git checkout: the clean tree comes from git ls-files")
    assert dist.main(["--out", str(tmp_path)]) == 0, capsys.readouterr().out
    spec = dist.project()
    stem = f"kbvqa_book-{spec['version']}"
    sdist, wheel = tmp_path / f"{stem}.tar.gz", tmp_path / f"{stem}-py3-none-any.whl"
    assert spec["name"] == "kbvqa-book" and sdist.is_file() and wheel.is_file()
    with tarfile.open(sdist) as archive:            # the sdist carries the data as files, not a link
        names = archive.getnames()
    assert any(n.startswith(f"{stem}/kbvqa/_data/reader/") for n in names)
    assert "twine upload" in capsys.readouterr().out
