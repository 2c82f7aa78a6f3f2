"""What every experiment shares: provenance, one run-file format, the command line and results files.

Provenance: ``git_commit()`` (the one place the book asks git), ``model_fingerprint(vlm)`` (the cpu
checkpoint's SHA-256 prefix or a hub id) and ``provenance(seed, vlm, **extra)`` (commit, seed, date,
machine, model), stored in every results file. The run format: ``runs/<row>.jsonl``, a header line
with the row's ``fingerprint`` then one JSON record per query (``read_run`` reads one back).

``resumable_parser`` gives the options every resumable experiment takes (first ``--limit`` queries,
a subset of its named rows, ``--seed``, ``--threads``, ``--out``, ``--fresh`` to rerun finished
rows); ``write_json_and_csv`` writes ``results.json`` (everything, for the chapters) and
``results.csv`` (one line per row, for a spreadsheet); ``resumed_run`` reads back a row's records
when a previous run already finished it. ``committed_models`` lists the model behind every committed
table, ``foreign_reader_tables`` the ones made with a reader other than the shipped one (a test holds
the repository to it). Leaves out: what each experiment runs (its runner).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import json
import os
import platform
import re
import subprocess
from pathlib import Path

from kbvqa.config import DATA_DIR, REPO_ROOT


def _checked(text: str, convert, ok, expected: str):
    """``convert(text)`` when it parses and ``ok`` holds, else an ``argparse`` usage error (exit 2)
    saying ``expected ...``."""
    try:
        value = convert(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {value}")
    return value


def positive_int(text: str) -> int:
    """An ``argparse`` type: an int >= 1 (a limit, a count)."""
    return _checked(text, int, lambda v: v >= 1, "a positive int")


def non_negative_int(text: str) -> int:
    """An ``argparse`` type: an int >= 0 (a seed)."""
    return _checked(text, int, lambda v: v >= 0, "an int >= 0")


def positive_float(text: str) -> float:
    """An ``argparse`` type: a finite number > 0 (minutes, a budget)."""
    return _checked(text, float, lambda v: 0 < v < float("inf"), "a positive number")


def read_json(path) -> dict:
    """A committed JSON file (results, cards, plans); a corrupt one raises ``ValueError`` naming the file,
    the line and the fix, never a bare ``JSONDecodeError``."""
    path = Path(path)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}); restore it "
                         f"with `git checkout {path}` or re-run what writes it") from None


def resumable_parser(description: str, rows_flag: str, row_names, limit: int, limit_help: str,
                     out: Path, what: str = "rows") -> argparse.ArgumentParser:
    """An ``ArgumentParser`` with the options of a resumable experiment; ``rows_flag`` names the
    option that picks a subset of ``row_names`` (``--rows``, ``--rungs``)."""
    parser = argparse.ArgumentParser(description=description,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=positive_int, default=limit, help=limit_help)
    parser.add_argument(rows_flag, nargs="+", default=None, help=f"some of {list(row_names)}")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--fresh", action="store_true", help=f"rerun {what} that already have records")
    return parser


def write_json_and_csv(out, results: dict, header: list[str], lines) -> None:
    """``results.json`` (the whole ``results``) and ``results.csv`` (``header`` then ``lines``)
    under ``out``, created if missing."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    with (out / "results.csv").open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(lines)


def resumed_run(path, fingerprint: str, ids: list[str], fresh: bool = False):
    """``(header, records)`` of a finished row in ``path`` (a ``runs/<row>.jsonl``) when it was run
    with this ``fingerprint`` on at least the queries ``ids`` (records cut to them), else ``None``:
    a changed setting, a shorter run or ``fresh`` means the row runs again."""
    if fresh:
        return None
    header, records = read_run(Path(path))
    if not header or header.get("fingerprint") != fingerprint or [r["id"] for r in records][:len(ids)] != ids:
        return None
    return header, records[:len(ids)]


def git_commit(dirty_paths=()) -> str:
    """HEAD's commit, with ``-dirty`` when one of ``dirty_paths`` (paths relative to the repository)
    has uncommitted changes; outside a git checkout (a ``git archive`` snapshot a long run imports,
    a copied tree) the ``KBVQA_COMMIT`` environment variable, else "unknown"."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=20).stdout.strip()
    outside = os.environ.get("KBVQA_COMMIT") or "unknown"
    try:
        head = git("rev-parse", "HEAD")
        dirty = git("status", "--porcelain", "--", *dirty_paths) if head and dirty_paths else ""
        return head + ("-dirty" if dirty else "") if head else outside
    except (OSError, subprocess.SubprocessError):
        return outside


UNKNOWN_COMMIT = "unknown"


def unknown_commits(root: Path | None = None) -> list[str]:
    """The committed JSON files under ``root`` (``data/experiments`` by default) whose provenance
    records no commit (``git_commit`` or ``commit`` is "unknown"): a test holds the list empty, since
    the book promises a commit beside every result."""
    root = Path(root or DATA_DIR / "experiments")

    def unknown(node) -> bool:
        if isinstance(node, dict):
            return any((k in ("git_commit", "commit") and v == UNKNOWN_COMMIT) or unknown(v)
                       for k, v in node.items())
        return isinstance(node, list) and any(unknown(v) for v in node)

    out = []
    for path in sorted(root.rglob("*.json")):
        try:
            data = read_json(path)
        except (OSError, ValueError):
            continue
        if unknown(data):
            out.append(str(path.relative_to(root)))
    return out


def commit_from_git(path: Path) -> dict:
    """``path``'s (a results file, its ``provenance`` holding ``git_commit``) provenance with the commit
    recovered from git where the run recorded "unknown" (a checkout without .git): the first commit
    whose version of the file holds this run's provenance ``date``, i.e. the commit that added these
    results. Marked ``git_commit_from: "git"`` (as ``benchmarks/report.py --backfill-reader`` marks
    ``reader_from``): the code that made them is that commit's or an earlier one, never a later one.
    Returns the provenance unchanged when it records a commit or git finds none."""
    path = Path(path)
    prov = read_json(path).get("provenance", {})
    if prov.get("git_commit") != UNKNOWN_COMMIT or not prov.get("date"):
        return prov
    relative = path.resolve().relative_to(REPO_ROOT)
    found = subprocess.run(["git", "log", "--reverse", "--format=%H", "-S", f'"date": "{prov["date"]}"',
                            "--", str(relative)], cwd=REPO_ROOT, capture_output=True, text=True,
                           timeout=60).stdout.split()
    if not found:
        return prov
    return {**prov, "git_commit": found[0], "git_commit_from": "git",
            "git_commit_note": "the run recorded \"unknown\" (git gave it no commit); recovered as "
                               "the commit that added these results: the code that made them is at "
                               "or before it"}


def precision_suffix(precision: str | None) -> str:
    """What a model string gains for an inference precision (``kbvqa.models.precision``): nothing for
    fp32, so every table made before the switch keeps its string; ``+bf16`` / ``+int8w`` otherwise."""
    return "" if precision in (None, "fp32") else f"+{precision}"


def model_fingerprint(vlm=None) -> str:
    """Which model made a run: ``reader:<fingerprint>`` for the shipped reader (``load_reader``
    sets it; ``+bf16`` / ``+int8w`` appended at another precision than fp32, so a table made at one
    precision is flagged beside another's), the tiny checkpoint's SHA-256 (first 16 hex digits), or
    the hub id of a hub model."""
    if getattr(vlm, "fingerprint", None):
        return f"reader:{vlm.fingerprint}" + precision_suffix(getattr(vlm, "precision", None))
    weights = DATA_DIR / "tiny_vlm" / "model.safetensors"
    name = getattr(getattr(vlm, "core", None), "name_or_path", "") if vlm is not None else ""
    if name and "tiny_vlm" not in str(name):
        return str(name)
    if not weights.exists():
        return "unknown"
    return "tiny_vlm:" + hashlib.sha256(weights.read_bytes()).hexdigest()[:16]


def same_model(vlm, provenance: dict) -> bool:
    """Whether ``vlm`` is the model that made a committed run (its provenance's ``model``): a live
    rerun can only be expected to agree with committed records of the same model. In the gpu
    profile a chapter's hub model is not the cpu model that made the committed tables."""
    return model_fingerprint(vlm) == provenance.get("model")


def committed_models(root: Path | None = None) -> dict[str, str]:
    """{results file relative to ``root``: the model in its provenance} for every committed
    ``results.json`` (and card) under ``root`` (``data/experiments`` by default) that names one."""
    root = Path(root or DATA_DIR / "experiments")
    out = {}
    for path in sorted(root.rglob("*.json")):
        try:
            data = read_json(path)
        except (OSError, ValueError):
            continue
        model = data.get("provenance", {}).get("model") if isinstance(data, dict) else None
        if isinstance(model, str):
            out[str(path.relative_to(root))] = model
    return out


def foreign_reader_tables(models: dict[str, str], fingerprint: str) -> dict[str, str]:
    """The tables of ``models`` (``committed_models``) made with a reader other than ``fingerprint``
    (the shipped one, ``kbvqa.reader.reader_fingerprint``): each must be re-run before it is shown.
    Other weights, that is: a table of the same reader at another precision (``+bf16``) is not foreign;
    ``stale_tables`` flags it where the role now loads another precision."""
    return {path: m for path, m in models.items()
            if m.startswith("reader:") and m.split("+")[0] != f"reader:{fingerprint}"}


# The roles whose models made each committed table, the first the one its provenance's ``model`` names
# (the others, where a run loads several, in its ``roles``): a table whose provenance names another model
# than ``kbvqa.models.role_model(role)`` gives today is stale (its part must run again before a chapter
# shows it), e.g. every table of a role just moved onto the reader (``CPU_READER_ROLES``). Each part has
# roles of its own, so that parts move one at a time.
TABLE_ROLES = {"rcts/results.json": ("generator", "reasoner"), "rcts_contexts/results.json": ("reasoner",),
               "serts/results.json": ("searcher",), "serts_ppo/results.json": ("searcher",),
               "reag/results.json": ("rl_policy", "critic", "reag_generator"),
               "molt/results.json": ("judge",),
               "pipeline/results.json": ("reag_generator", "critic")}   # the critic's scores: ReAG's evidence.json


def table_role_models(root: Path | None = None) -> dict[str, dict[str, str]]:
    """{table: {role: the model its provenance records for it}} for the committed tables of
    ``TABLE_ROLES`` under ``root`` (``data/experiments`` by default): the first role's model is the
    provenance's ``model``, the others' come from its ``roles`` (absent: the ``model``)."""
    root = Path(root or DATA_DIR / "experiments")
    out = {}
    for table, roles in TABLE_ROLES.items():
        path = root / table
        if not path.exists():
            continue
        prov = read_json(path).get("provenance", {})
        if isinstance(prov.get("model"), str):
            recorded = prov.get("roles") or {}
            out[table] = {role: prov["model"] if i == 0 else recorded.get(role, prov["model"])
                          for i, role in enumerate(roles)}
    return out


def stale_tables(made_by: dict[str, dict[str, str]], role_model) -> dict[str, tuple[str, str]]:
    """{table: (the model that made it, the model its role gives now)} for each table of ``made_by``
    (``table_role_models``) with a role whose recorded model differs from what ``role_model(role)``
    gives now (the first such role); ``role_model`` is ``kbvqa.models.role_model`` (passed in: this
    module sits below ``kbvqa.models``)."""
    out = {}
    for table, recorded in made_by.items():
        for role, model in recorded.items():
            if role_model(role) != model:
                out[table] = (model, role_model(role))
                break
    return out


def relative_command(command: str) -> str:
    """``command`` with every absolute path into the repository's folders written from the repository
    root (``--out /home/me/kbvqa/data/x`` -> ``--out data/x``): a record names no machine's folders."""
    return re.sub(r"(?<![\w.])/[^\s'\"]*?/((?:data|notebooks|kbvqa|benchmarks|tools)/)", r"\1", str(command))


def provenance(seed: int, vlm=None, model: str | None = None, **extra) -> dict:
    """Commit, seed, date, machine and ``model``: the given name (``kbvqa.models.role_model``, for a
    run that loads its models itself) or ``model_fingerprint(vlm)``. A ``command`` is recorded with
    ``relative_command``."""
    import torch

    if "command" in extra:
        extra["command"] = relative_command(extra["command"])

    return {"git_commit": git_commit(), "seed": seed,
            "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "machine": {"platform": platform.platform(), "python": platform.python_version(),
                        "torch": torch.__version__, "threads": torch.get_num_threads()},
            "model": model or model_fingerprint(vlm), **extra}


def read_run(path: Path, drop_torn: bool | None = None) -> tuple[dict | None, list[dict]]:
    """(header, records) of a ``runs/<run>.jsonl`` file; (None, []) when it does not exist. A line that
    is not JSON raises ``ValueError`` naming the file and the line; a torn *last* line (a run stopped
    while appending) is dropped only when asked: ``drop_torn`` or ``KBVQA_DROP_TORN_LINE=1``."""
    path = Path(path)
    if not path.exists():
        return None, []
    drop = drop_torn if drop_torn is not None else os.environ.get("KBVQA_DROP_TORN_LINE") == "1"
    raw = [(i + 1, x) for i, x in enumerate(path.read_text().splitlines()) if x.strip()]
    lines = []
    for k, (number, text) in enumerate(raw):
        try:
            lines.append(json.loads(text))
        except json.JSONDecodeError as err:
            if k == len(raw) - 1 and drop:
                print(f"{path}: dropped its torn last line {number}")
                break
            last = " (its last: a run stopped while writing; drop it with KBVQA_DROP_TORN_LINE=1)" \
                if k == len(raw) - 1 else ""
            raise ValueError(f"{path}: line {number} is not JSON ({err.msg}){last}") from None
    if not lines or "fingerprint" not in lines[0]:
        return None, []
    return lines[0], lines[1:]


def committed_for(live: list[dict], committed: list[dict], key=lambda r: r["id"], what: str = "",
                  hint: str = "") -> list[dict]:
    """The committed record of each live record (same ``key``, in live order): the pairing every
    chapter's live rerun makes before it checks agreement with the committed table. Raises
    ``ValueError`` naming the first missing ids (``what`` goes in front, ``hint`` after), and when
    ``live`` is empty."""
    by_key = {key(r): r for r in committed}
    missing = [r.get("id", key(r)) for r in live if key(r) not in by_key]
    if missing or not live:
        raise ValueError(f"{what}no committed record for {missing[:3] or 'any query (no live records)'}{hint}")
    return [by_key[key(r)] for r in live]

