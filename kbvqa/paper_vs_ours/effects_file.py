"""``data/experiments/effects.json``: every effect of chapter 31 as one committed file.

``write_effects`` (``python -m kbvqa.paper_vs_ours``, the last step of ``make experiments``) writes
one row per effect (``effect_record``: the paper's numbers and ours, our interval, n, the strict and
the lenient verdict, evidence, whether it counts, comparable, mechanism, reference, n needed, plan)
with the models of the tables it read and the strict count; ``stale_effect_rows`` says
which committed rows the committed tables no longer give (a test holds the file to them).

Leaves out: computing the effects (``parts.py``).
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import git_commit
from kbvqa.paper_vs_ours.effect import (
    N_BOOT,
    PAPER_FLAT,
    PARTS,
    Effect,
    counted,
    lenient_verdict,
    load_results,
    strict_count,
    verdict,
)
from kbvqa.paper_vs_ours.parts import all_effects

EFFECTS_FILE = DATA_DIR / "experiments" / "effects.json"


def effect_record(e: Effect) -> dict:
    """One row of ``effects.json``: the paper's numbers and ours, our interval, n, the strict verdict
    and the lenient one, evidence, whether it counts, and issue 48's accounting (comparable, mechanism,
    the untrained reference, n needed, the plan)."""
    return {"part": e.part, "effect": e.name, "source": e.source, "metric": e.metric,
            "paper_before": e.paper[0], "paper_after": e.paper[1], "ours_before": e.ours[0], "ours_after": e.ours[1],
            "ours_interval": None if e.ours_interval is None else list(e.ours_interval), "n": e.n,
            "verdict": verdict(e), "verdict_lenient": lenient_verdict(e), "evidence": e.evidence,
            "counted": counted(e), "comparable": e.comparable, "why_not_comparable": e.why_not_comparable,
            "mechanism": e.mechanism, "paper_mechanism": e.paper_mechanism, "reference": e.reference,
            "n_needed": e.n_needed, "plan": e.plan, "plan_status": e.plan_status,
            "interval_method": e.interval_method, "why": e.why}


def table_models() -> dict[str, str]:
    """{part: the model in its committed table's provenance}, for ``effects.json``'s header."""
    out = {}
    for part in PARTS:
        path = DATA_DIR / "experiments" / part.lower() / "results.json"
        if path.exists():
            out[part] = json.loads(path.read_text()).get("provenance", {}).get("model", "none")
    return out


def write_effects(path: Path = EFFECTS_FILE, effects=None, verify_git: bool = True) -> dict:
    """Write every effect (``all_effects(verify_git=...)`` unless given) to ``path`` with provenance;
    returns it. ``counted`` / ``same``: the strict count (``strict_count``); ``same_lenient``: the count
    under the rule before issue 48; ``paper_mechanism``: the strict "same" rows the records show
    produced by the paper's mechanism."""
    effects = all_effects(verify_git=verify_git) if effects is None else effects
    rows = [effect_record(e) for e in effects]
    strict = strict_count(effects)
    data = {"provenance": {"git_commit": git_commit(), "command": "python -m kbvqa.paper_vs_ours",
                           "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                           "n_boot": N_BOOT, "paper_flat": PAPER_FLAT, "tables": table_models()},
            "rule": "strict: 'same' only when the paper moves beyond paper_flat points and ours moves its way "
                    "with a 95 % interval that excludes 0; counted rows are comparable, not scripted, paper not flat",
            "counted": strict["counted"], "same": strict["same"], "paper_mechanism": strict["paper_mechanism"],
            "same_lenient": sum(r["evidence"] != "scripted" and r["verdict_lenient"] == "same" for r in rows),
            "rows": rows}
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return data


def load_effects(path: Path = EFFECTS_FILE) -> dict:
    """The committed ``effects.json`` (``write_effects``)."""
    return load_results(path)


def stale_effect_rows(committed: dict, effects=None) -> list[str]:
    """Effects whose committed row differs from the one the committed tables give now (empty: up to date).
    A row's ``plan_status`` is not compared: where git cannot verify a plan (a wheel) it reads "plan not
    verifiable" for a row the command line wrote as "pre-registered"."""
    def key(r):
        return {k: v for k, v in r.items() if k != "plan_status"}

    fresh = {r["effect"]: key(r) for r in map(effect_record, all_effects() if effects is None else effects)}
    old = {r["effect"]: key(r) for r in committed["rows"]}
    return sorted(set(fresh) ^ set(old)) + [k for k in fresh if k in old and fresh[k] != old[k]]
