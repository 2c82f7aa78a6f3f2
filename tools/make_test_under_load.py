"""``make test`` on fresh clones beside a background load, recorded (issue 50: "passes twice in a row on
a fresh clone under that load. State the times.").

Each run clones this repository's ``HEAD`` into a new folder, starts ``tools.chapter_times.background_load``
(single-threaded numpy matmul loops), and runs ``.ci/run`` there, as CI does (``CI=true``, the cpu
profile, its own new ``.venv``). A thread samples the load average every ``--sample`` seconds. After
the run the clone's executed chapters (``_build/jupyter_execute``, written by the build itself) give
each chapter's time and its slowest cells (``summarise_build``). Every run is appended to
``data/benchmarks/make_test_under_load.json`` with its commit, date, machine, exit code and log tail.

Run: ``python -m tools.make_test_under_load [--runs 2] [--background 2] [--keep]``; it exits 1 when any
run failed. The clones are removed unless ``--keep``. Leaves out: installing system packages (``.ci/run``
does), and any retry: a failed run is recorded as failed.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "data" / "benchmarks" / "make_test_under_load.json"


EXECUTED = re.compile(r"notebooks/([\w.-]+)\.ipynb: Executed notebook in ([\d.]+) seconds")


def summarise_build(folder: Path, limit: float, log: str = "") -> dict:
    """Per chapter of a built clone (``folder/_build/jupyter_execute/notebooks/*.ipynb``): its seconds and
    its three slowest cells; and the cells over ``limit`` seconds. The seconds are myst-nb's own
    ("Executed notebook in ... seconds" in the build's ``log``) where it printed them, else the sum of
    the cells' times; cell times exist only where the executor recorded timestamps (myst-nb does not)."""
    import nbformat

    from tools.nb_execute import cell_seconds

    executed = {name: float(seconds) for name, seconds in EXECUTED.findall(log)}
    chapters = []
    for path in sorted((Path(folder) / "_build" / "jupyter_execute" / "notebooks").glob("*.ipynb")):
        cells = cell_seconds(nbformat.read(path, as_version=4))
        seconds = executed.get(path.stem, sum(t for _, t in cells))
        chapters.append({"name": path.stem, "seconds": round(seconds, 1),
                         "slowest_cells": [list(c) for c in cells[:3]]})
    over = [[c["name"], i, t] for c in chapters for i, t in c["slowest_cells"] if t > limit]
    return {"chapters": chapters, "cells_over_limit": over}


class LoadSampler(threading.Thread):
    """Samples ``os.getloadavg()[0]`` every ``every`` seconds until ``stop()``."""

    def __init__(self, every: float):
        super().__init__(daemon=True)
        self.every, self.samples, self._stop_event = every, [], threading.Event()

    def run(self):
        while not self._stop_event.wait(self.every):
            self.samples.append(round(os.getloadavg()[0], 2))

    def stop(self) -> list[float]:
        self._stop_event.set()
        self.join()
        return self.samples


def one_run(background: int, sample_s: float, keep: bool, limit: float) -> dict:
    """Clone ``HEAD``, run ``.ci/run`` beside ``background`` loops, and return the run's record."""
    from tools.chapter_times import LOAD_LOOP, background_load

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    folder = Path(tempfile.mkdtemp(prefix="kbvqa-loaded-"))
    subprocess.run(["git", "clone", "-q", str(ROOT), str(folder)], check=True)
    env = {**os.environ, "CI": "true", "KBVQA_PROFILE": "cpu"}
    env.pop("VIRTUAL_ENV", None)
    log = folder / "make_test.log"
    sampler = LoadSampler(sample_s)
    start = time.perf_counter()
    with background_load(background), log.open("w") as out:
        sampler.start()
        # its own process group, so that a stopped run takes make, pip and the kernels with it
        proc = subprocess.Popen([str(folder / ".ci" / "run")], cwd=folder, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = proc.wait()
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    seconds = time.perf_counter() - start
    samples = sampler.stop()
    record = {"commit": commit, "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
              "platform": platform.platform(), "cpus": os.cpu_count(), "passed": rc == 0, "exit_code": rc,
              "seconds": round(seconds), "background": {"processes": background, "loop": LOAD_LOOP},
              "load_average_1min": {"samples": len(samples), "mean": round(sum(samples) / max(1, len(samples)), 2),
                                    "max": max(samples, default=None)},
              **summarise_build(folder, limit, log.read_text(errors="replace")),
              "log_tail": log.read_text(errors="replace").splitlines()[-15:]}
    if not keep:
        shutil.rmtree(folder, ignore_errors=True)
    else:
        record["folder"] = str(folder)
    return record


def main(argv=None) -> int:
    from tools.chapter_times import CELL_LIMIT_UNDER_LOAD

    ap = argparse.ArgumentParser(description="make test on fresh clones beside a background load (issue 50)")
    ap.add_argument("--runs", type=int, default=2, help="runs in a row (default 2)")
    ap.add_argument("--background", type=int, default=2, help="single-threaded numpy loops beside each run")
    ap.add_argument("--sample", type=float, default=30.0, help="seconds between load-average samples")
    ap.add_argument("--keep", action="store_true", help="keep the clones (their paths are recorded)")
    args = ap.parse_args(argv)
    if args.runs < 1 or args.background < 0 or args.sample <= 0:
        ap.error("--runs must be >= 1, --background >= 0 and --sample > 0")
    # a SIGTERM unwinds like Ctrl-C: the loops and the run's process group are stopped on the way out
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    runs = json.loads(RECORD.read_text())["runs"] if RECORD.exists() else []
    failed = 0
    for i in range(args.runs):
        record = one_run(args.background, args.sample, args.keep, CELL_LIMIT_UNDER_LOAD)
        runs.append(record)
        RECORD.write_text(json.dumps({"runs": runs}, indent=1) + "\n")
        failed += not record["passed"]
        print(f"run {i + 1}: {'passed' if record['passed'] else 'FAILED'} in {record['seconds']} s, "
              f"load average mean {record['load_average_1min']['mean']}, max {record['load_average_1min']['max']}; "
              f"cells over {CELL_LIMIT_UNDER_LOAD} s: {record['cells_over_limit']}", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
