"""Pre-registration: ``data/experiments/<part>/plan.json``, committed before a counted run (issue 48).

A plan names what a run will do before it runs, so that nothing about it can follow the results:

- ``part`` (the folder's name), ``date`` (the day it was registered, ISO ``YYYY-MM-DD``);
- ``rows``: the rows the run makes, each counted comparison built from them;
- ``n``: queries per row, and ``query_ids``: the ids themselves (a list of ``n``) or the rule that
  picks them, ``{"rule": "...", "seed": int}``;
- ``seeds``: the seeds of every stochastic step (a list of ints);
- ``stopping_rule``: when the run ends (fixed n; never "until the interval excludes 0");
- ``analysis``: what is computed from the records (the interval, the verdict rule);
- optional ``replaces``: ``{"commit": ..., "reason": ...}`` when this plan replaces an earlier one
  (both stay in git; a replacement without a reason is malformed).

``load_plan`` reads a plan (``None`` when the part has none), ``validate_plan`` names the missing or
malformed field, ``check_records`` compares a run's records with it (another count or other ids
raise), and ``plan_status`` is the whole check one table gets: runs made before plans were required
(``PLANS_REQUIRED_SINCE``) are "not pre-registered"; a later run without a plan raises; with
``verify_git`` the plan must be the one in the commit the run recorded (``git show``) and no newer
than the run. Without git (a wheel in Colab) that last check says "plan not verifiable" and does not
raise. Runners read their sizes from the plan (``planned_sizes``, ``apply_plan``), so the plan is the
one place a counted run's sizes live. Every error names the file and the field.

Leaves out: running anything, choosing sizes (each paper issue's plan does, with its power estimate).
"""
from __future__ import annotations

import argparse
import datetime
import json
import subprocess
from pathlib import Path

from kbvqa.config import DATA_DIR, REPO_ROOT

PLAN_FILE = "plan.json"
PLANS_REQUIRED_SINCE = "2026-12-07"       # a counted run that starts on or after this day needs a plan
REQUIRED = ("part", "date", "rows", "n", "query_ids", "seeds", "stopping_rule", "analysis")
NOT_PRE_REGISTERED = "not pre-registered"
PRE_REGISTERED = "pre-registered"
NOT_VERIFIABLE = "plan not verifiable"


def plan_path(part: str | Path) -> Path:
    """The plan of a part: a folder, or a part's name under ``data/experiments/``."""
    folder = Path(part) if isinstance(part, Path) or "/" in str(part) else DATA_DIR / "experiments" / str(part).lower()
    return folder / PLAN_FILE


def _fail(path, field: str, problem: str, fix: str = "") -> ValueError:
    return ValueError(f"{path}: field {field!r} {problem}" + (f"; {fix}" if fix else ""))


def _is_date(value) -> bool:
    try:
        datetime.date.fromisoformat(str(value)[:10])
        return True
    except ValueError:
        return False


def validate_plan(plan, path: str | Path = PLAN_FILE) -> dict:
    """``plan`` when it is well formed, else ``ValueError`` naming ``path`` and the first bad field."""
    if not isinstance(plan, dict):
        raise ValueError(f"{path}: a plan is a JSON object with the fields {list(REQUIRED)}")
    for field in REQUIRED:
        if field not in plan:
            raise _fail(path, field, "is missing", f"a plan names {list(REQUIRED)} (kbvqa.experiments.plans)")
    if not _is_date(plan["date"]):
        raise _fail(path, "date", f"must be an ISO date (YYYY-MM-DD), got {plan['date']!r}")
    rows = plan["rows"]
    named = isinstance(rows, list) and rows and all(isinstance(r, str) and r for r in rows)
    if not named or len(set(rows)) != len(rows):
        raise _fail(path, "rows", f"must be a non-empty list of distinct row names, got {rows!r}")
    n = plan["n"]
    if isinstance(n, dict):
        if not n or set(n) - set(rows) or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                                 for v in n.values()):
            raise _fail(path, "n", f"must map planned rows to positive ints, got {n!r}")
    elif not (isinstance(n, int) and not isinstance(n, bool) and n > 0):
        raise _fail(path, "n", f"must be a positive int (or {{row: int}}), got {n!r}")
    ids = plan["query_ids"]
    if isinstance(ids, list):
        if not all(isinstance(i, str) for i in ids) or len(set(ids)) != len(ids):
            raise _fail(path, "query_ids", "must be distinct strings")
        short = len(ids) < max(n.values()) if isinstance(n, dict) else len(ids) != n
        if short:
            raise _fail(path, "query_ids", f"lists {len(ids)} ids for n = {n}")
    elif not (isinstance(ids, dict) and isinstance(ids.get("rule"), str) and ids["rule"]
              and isinstance(ids.get("seed"), int)):
        raise _fail(path, "query_ids", f"must be a list of ids or {{'rule': str, 'seed': int}}, got {ids!r}")
    seeds = plan["seeds"]
    if not (isinstance(seeds, list) and seeds and all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)):
        raise _fail(path, "seeds", f"must be a non-empty list of ints, got {seeds!r}")
    for field in ("stopping_rule", "analysis"):
        if not (isinstance(plan[field], (str, dict)) and plan[field]):
            raise _fail(path, field, "must say what it is (a non-empty string or object)")
    if "extend" in str(plan["stopping_rule"]).lower() and "never" not in str(plan["stopping_rule"]).lower():
        raise _fail(path, "stopping_rule", "may not extend a run after looking at its interval")
    if "replaces" in plan:
        rep = plan["replaces"]
        if not (isinstance(rep, dict) and rep.get("commit") and isinstance(rep.get("reason"), str)
                and rep["reason"].strip()):
            raise _fail(path, "replaces", "must give the replaced plan's 'commit' and a 'reason'")
    return plan


def load_plan(part: str | Path) -> dict | None:
    """The validated plan of ``part`` (a folder, a part name or a ``plan.json`` path); ``None`` when
    there is none. Malformed JSON or a missing field raises ``ValueError`` naming the file."""
    path = Path(part) if str(part).endswith(".json") else plan_path(part)
    if not path.exists():
        return None
    try:
        plan = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}): {err.msg}") from None
    return validate_plan(plan, path)


def planned_n(plan: dict, row: str) -> int:
    """The queries ``plan`` gives ``row``."""
    return plan["n"][row] if isinstance(plan["n"], dict) else plan["n"]


def check_records(plan: dict, ids_by_row: dict[str, list[str]], path: str | Path = PLAN_FILE) -> None:
    """Raise ``ValueError`` naming ``path`` and the field when the records (``{row: [query id, ...]}``,
    in run order) are not what ``plan`` registered: a planned row missing, another count (``n``), or
    other ids (``query_ids``). Rows the plan does not name are not counted and not checked."""
    for row in plan["rows"]:
        if row not in ids_by_row:
            raise _fail(path, "rows", f"names {row!r}, which the records do not hold",
                        "run the planned row or register a new plan with its reason")
        ids, want = ids_by_row[row], planned_n(plan, row)
        if len(ids) != want:
            raise _fail(path, "n", f"says {want} for {row!r}; the records hold {len(ids)}",
                        "a run is never extended or cut after the plan (register a new plan with its reason)")
        if isinstance(plan["query_ids"], list):
            planned = set(plan["query_ids"][:want]) if isinstance(plan["n"], dict) else set(plan["query_ids"])
            other = sorted(set(ids) - planned)
            if other:
                raise _fail(path, "query_ids", f"does not list {other[:3]} that {row!r} answered",
                            "the records must be the planned queries")


def _git(*args: str) -> str | None:
    """git's stdout, or ``None`` where git or the repository's history is absent."""
    try:
        done = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def git_available() -> bool:
    return _git("rev-parse", "HEAD") is not None


def plan_at_commit(path: str | Path, commit: str) -> dict | None:
    """The plan as committed at ``commit`` (``git show``); ``None`` when that commit has none."""
    rel = Path(path).resolve().relative_to(REPO_ROOT.resolve()).as_posix()
    text = _git("show", f"{commit.removesuffix('-dirty')}:{rel}")
    return None if text is None else json.loads(text)


def plan_status(part: str | Path, ids_by_row: dict[str, list[str]], provenance: dict | None,
                verify_git: bool = False) -> dict:
    """``{"plan": plan or None, "status": ...}`` of one committed table (``part``: its folder).

    - A run that started before ``PLANS_REQUIRED_SINCE`` is "not pre-registered" (``plan: None``):
      those tables were committed before plans existed; a plan beside them is for the next run.
    - A later run needs a well-formed plan (else ``ValueError`` naming the file and the field) whose
      rows, n and ids its records match (``check_records``), registered no later than the run began.
    - ``verify_git``: the plan must also be the one in the commit the run recorded
      (``provenance["git_commit"]``), else ``ValueError``. Without git history the status is "plan
      not verifiable" and nothing raises. Without ``verify_git`` (the chapters) it is the same."""
    path = plan_path(part) if not str(part).endswith(".json") else Path(part)
    provenance = provenance or {}
    started = str(provenance.get("started") or provenance.get("date") or "")[:10]
    if not started or started < PLANS_REQUIRED_SINCE:
        return {"plan": None, "status": NOT_PRE_REGISTERED}
    plan = load_plan(path)
    if plan is None:
        raise ValueError(f"{path} is missing: the run in {path.parent} started on {started}, after plans were "
                         f"required ({PLANS_REQUIRED_SINCE}); commit a plan (kbvqa.experiments.plans) before a "
                         "counted run")
    if str(plan["date"])[:10] > started:
        raise _fail(path, "date", f"{plan['date']} is newer than the run, which started on {started}",
                    "a plan is committed before its run")
    check_records(plan, ids_by_row, path)
    if not verify_git or not git_available():
        return {"plan": plan, "status": NOT_VERIFIABLE}
    commit = str(provenance.get("git_commit") or "")
    if not commit or commit == "unknown":
        raise _fail(path, "date", "cannot be checked: the run recorded no git commit (provenance.git_commit)")
    try:
        committed = plan_at_commit(path, commit)
    except (ValueError, json.JSONDecodeError):
        committed = None
    if committed is None:
        raise _fail(path, "date", f"is not in the commit the run recorded ({commit[:12]}): the plan is newer "
                    "than the run", "commit the plan before the run")
    if committed != plan:
        diff = sorted(k for k in set(plan) | set(committed) if plan.get(k) != committed.get(k))
        raise _fail(path, diff[0], f"differs from the plan in the run's commit {commit[:12]} (fields {diff})",
                    "a plan is replaced only by a new plan with 'replaces' and its reason, and the run made again")
    return {"plan": plan, "status": PRE_REGISTERED}


def planned_sizes(part: str | Path) -> dict | None:
    """``{"rows", "n", "query_ids", "seeds"}`` of a part's plan, for a runner; ``None`` without one."""
    plan = load_plan(part)
    return None if plan is None else {k: plan[k] for k in ("rows", "n", "query_ids", "seeds")}


def apply_plan(args: argparse.Namespace, out: Path, parser: argparse.ArgumentParser,
               rows_attr: str = "rows", limit_attr: str = "limit") -> dict | None:
    """Make a runner's sizes the plan's when ``out`` holds a plan: ``rows_attr`` becomes its rows (or the
    planned rows the command names, to run them one command at a time), ``limit_attr`` (``--limit``)
    their n (the largest of them, for per-row sizes), ``--seed`` its first seed and
    ``--seeds`` all of them. An explicit value (one that is not the parser's default) that disagrees
    exits 2 through ``parser.error``, naming the plan: the plan is the one place a counted run's sizes
    live. Returns the plan, or ``None`` (the runner's own options stand) when ``out`` has none."""
    path = Path(out) / PLAN_FILE
    plan = load_plan(path)
    if plan is None:
        return None
    given_rows = getattr(args, rows_attr, None)
    if given_rows is not None and given_rows != parser.get_default(rows_attr):
        extra = [r for r in given_rows if r not in plan["rows"]]
        if extra:
            parser.error(f"--{rows_attr.replace('_', '-')} {extra} are not in {path} ({plan['rows']}): register a "
                         "new plan that names them")
        rows = list(given_rows)                     # a subset of the planned rows, one command at a time
    else:
        rows = list(plan["rows"])
    n = max(planned_n(plan, r) for r in rows)
    wanted = {limit_attr: n, rows_attr: rows, "seed": plan["seeds"][0], "seeds": list(plan["seeds"])}
    for attr, value in wanted.items():
        if not hasattr(args, attr):
            continue
        given = getattr(args, attr)
        if given is not None and given != parser.get_default(attr) and given != value:
            parser.error(f"--{attr.replace('_', '-')} {given} disagrees with {path} ({value!r}); the plan holds a "
                         "counted run's sizes: drop the option or register a new plan")
        setattr(args, attr, value)
    return plan


def ids_by_row(records) -> dict[str, list[str]]:
    """``{row: [query id, ...]}`` (one per question, in run order) of a run's records: a dict of record
    lists by row, or a flat list whose records name their ``row`` or ``method``."""
    if isinstance(records, dict):
        items = [(row, r) for row, recs in records.items() for r in recs]
    else:
        items = [(r.get("row") or r.get("method"), r) for r in records]
    out: dict[str, dict] = {}
    for row, r in items:
        out.setdefault(str(row), {})[str(r.get("id", r.get("query_id")))] = None
    return {row: list(ids) for row, ids in out.items()}


def check_counted_run(out: Path, committed: Path, records, provenance: dict) -> dict | None:
    """Before a runner writes its table: a run into the part's committed folder (``committed``) is a
    counted run and must match its plan (``plan_status`` with ``verify_git``; a run started after
    ``PLANS_REQUIRED_SINCE`` without a plan raises ``ValueError`` naming the file). A run written
    elsewhere (a test, a trial in a scratch folder) is not counted and is not checked: ``None``."""
    if Path(out).resolve() != Path(committed).resolve():
        return None
    return plan_status(Path(out), ids_by_row(records), provenance, verify_git=True)
