"""``data/experiments/effects.json``: every effect of chapter 31 as one committed file.

``write_effects`` (``python -m kbvqa.paper_vs_ours``, the last step of ``make experiments``) writes
one row per effect (``effect_record``: the paper's numbers and ours, our interval, n, verdict,
evidence, whether it counts) with the models of the tables it read; ``stale_effect_rows`` says
which committed rows the committed tables no longer give (a test holds the file to them).

Leaves out: computing the effects (``parts.py``).
"""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import git_commit
from kbvqa.paper_vs_ours.effect import COUNTED, N_BOOT, PARTS, Effect, load_results, verdict
from kbvqa.paper_vs_ours.parts import all_effects

EFFECTS_FILE = DATA_DIR / "experiments" / "effects.json"


def effect_record(e: Effect) -> dict:
    """One row of ``effects.json``: the paper's numbers and ours, our interval, n, verdict, evidence."""
    return {"part": e.part, "effect": e.name, "source": e.source, "metric": e.metric,
            "paper_before": e.paper[0], "paper_after": e.paper[1], "ours_before": e.ours[0], "ours_after": e.ours[1],
            "ours_interval": None if e.ours_interval is None else list(e.ours_interval), "n": e.n,
            "verdict": verdict(e), "evidence": e.evidence, "counted": e.evidence in COUNTED,
            "interval_method": e.interval_method, "why": e.why}


def table_models() -> dict[str, str]:
    """{part: the model in its committed table's provenance}, for ``effects.json``'s header."""
    out = {}
    for part in PARTS:
        path = DATA_DIR / "experiments" / part.lower() / "results.json"
        if path.exists():
            out[part] = json.loads(path.read_text()).get("provenance", {}).get("model", "none")
    return out


def write_effects(path: Path = EFFECTS_FILE, effects=None) -> dict:
    """Write every effect (``all_effects()`` unless given) to ``path`` with provenance; returns it."""
    effects = all_effects() if effects is None else effects
    rows = [effect_record(e) for e in effects]
    data = {"provenance": {"git_commit": git_commit(), "command": "python -m kbvqa.paper_vs_ours",
                           "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                           "n_boot": N_BOOT, "tables": table_models()},
            "counted": sum(r["counted"] for r in rows),
            "same": sum(r["counted"] and r["verdict"] == "same" for r in rows), "rows": rows}
    Path(path).write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n")
    return data


def load_effects(path: Path = EFFECTS_FILE) -> dict:
    """The committed ``effects.json`` (``write_effects``)."""
    return load_results(path)


def stale_effect_rows(committed: dict, effects=None) -> list[str]:
    """Effects whose committed row differs from the one the committed tables give now (empty: up to date)."""
    fresh = {r["effect"]: r for r in map(effect_record, all_effects() if effects is None else effects)}
    old = {r["effect"]: r for r in committed["rows"]}
    return sorted(set(fresh) ^ set(old)) + [k for k in fresh if k in old and fresh[k] != old[k]]
