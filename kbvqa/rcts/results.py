"""Tables of the RCTS experiments: per-question records -> accuracies with intervals, next to the paper.

``summarise(out)`` reads every ``runs/<run>.jsonl`` under ``out`` and builds, for each group of
``kbvqa.rcts.runs.GROUPS``, one row per table line: n, accuracy with its Wilson interval, the paper's
number (``kbvqa.rcts.paper.paper_rows``: Tab. 2 ScienceQA / Qwen2-VL-2B for ``main``, Tab. 4 and Tab. 5
ScienceQA / Qwen2-VL-7B for ``ablation`` and ``alpha``; Fig. 5b has no printed values), model
calls and completions per question (a baseline's batched call is shared by its questions, so it
counts fractionally), seconds per question and the early-stop rate. Every run answers the first n
test questions, and a row of ``main`` or ``ablation`` keeps all of its run's (the cheap baselines
can run on more questions than RCTS: its n is in the row); the sweep groups are computed on the
questions all their runs answered. Differences are paired over the questions both rows answered:
``paired`` holds the bootstrap of Vanilla-RAG minus zero-shot and of RCTS minus Vanilla-RAG (also
kept as ``rcts_minus_vanilla_rag``), beside the reward diagnostics (do rewards separate correct from
wrong branches?). It writes ``results.json`` and ``results.csv`` and returns the
dict; ``load_results`` reads it back (the committed toy run lives in ``RESULTS_DIR``),
``group_table`` gives plain rows for a DataFrame, ``live_agreement`` compares a live rerun with the
committed records of the same questions, and ``accuracy_table`` puts live records (ScienceQA:
``kbvqa.rcts.settings.scienceqa_rows``) next to Tab. 2.

Leaves out: running (``kbvqa.experiments.rcts_toy``, ``kbvqa.rcts.runs``, ``kbvqa.rcts.settings``),
figures (``kbvqa.viz.rcts``).
"""
from __future__ import annotations

import csv
import json
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import committed_for, read_run
from kbvqa.metrics.intervals import check_agreement, paired_bootstrap, same_answers, wilson_interval
from kbvqa.rcts.diagnostics import reward_correctness
from kbvqa.rcts.mcts_hr import RCTSConfig
from kbvqa.rcts.paper import PAPER_KEY, paper_rows
from kbvqa.rcts.runs import GROUPS, ROWS, answer_after

PAIRED = (("vanilla_rag", "zero_shot"), ("rcts", "vanilla_rag"))   # RCTS Tab. 2's two headline steps
RESULTS_DIR = DATA_DIR / "experiments" / "rcts"     # the committed toy run (python -m kbvqa.experiments.rcts_toy)
PAPER_SOURCE = {"main": "Tab. 2, ScienceQA, Qwen2-VL-2B", "ablation": "Tab. 4, ScienceQA, Qwen2-VL-7B",
                "alpha": "Tab. 5, ScienceQA, Qwen2-VL-7B", "rollouts": "Fig. 5b (values not printed)",
                "diagnostics": "none (our diagnostics)", "controls": "none (our controls, issue 52)"}


def read_runs(out) -> dict[str, list[dict]]:
    """{run name: records} of every ``runs/*.jsonl`` under ``out`` (header line dropped)."""
    runs = {}
    for path in sorted((Path(out) / "runs").glob("*.jsonl")):
        lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        if lines and "fingerprint" in lines[0]:
            runs[path.stem] = lines[1:]
    return runs


def _row(name: str, run: str, records: list[dict], kind: str, correct: list[bool] | None = None) -> dict:
    correct = [bool(r["correct"]) for r in records] if correct is None else correct
    k, n = sum(correct), len(correct)
    low, high = wilson_interval(k, n)
    paper = paper_rows(kind).get(name) if kind in ("main", "ablation", "alpha") else None
    stops = [r.get("stop") for r in records if "stop" in r]

    def mean(key):
        return sum(r[key] for r in records) / n if n else None
    parts = [q for r in records for q in r.get("rollout_rewards", [])]
    return {"row": name, "run": run, "label": ROWS[run].label, "n": n, "accuracy": k / n if n else None,
            "mutual_positive_share": (sum(q_mutual > 0 for _, q_mutual in parts) / len(parts)) if parts else None,
            "low": low, "high": high, "paper": paper, "calls": mean("calls"), "completions": mean("completions"),
            "seconds": mean("seconds"),
            "early_stop_rate": (sum(s == "early_stop" for s in stops) / len(stops)) if stops else None}


def _group(group: str, runs: dict[str, list[dict]]) -> list[dict]:

    present = {row: run for row, run in GROUPS[group].items() if runs.get(run)}
    if not present:
        return []
    common = set.intersection(*({r["id"] for r in runs[run]} for run in present.values()))
    own_n = group in ("main", "ablation")     # each row on all its run's questions (first-n prefixes)
    rows = []
    for row, run in present.items():
        records = sorted((r for r in runs[run] if own_n or r["id"] in common), key=lambda r: r["id"])
        if group == "rollouts":
            p = int(row.split("=")[1])
            cfg = RCTSConfig(**dict(ROWS[run].rcts))     # the run's backup and final-choice rules
            correct = [answer_after(r["tree"], p, cfg.backprop, cfg.final) == r["gold"] for r in records]
            # without early stop every rollout costs the same calls: scale the full run's cost
            scaled = [{**r, "calls": r["calls"] * min(p, len(r["rollouts"])) / max(len(r["rollouts"]), 1),
                       "seconds": r["seconds"] * min(p, len(r["rollouts"])) / max(len(r["rollouts"]), 1)}
                      for r in records]
            rows.append(_row(row, run, scaled, group, correct))
        else:
            rows.append(_row(row, run, records, group))
    return rows


def _paired(runs: dict, a: str, b: str) -> dict | None:
    if not runs.get(a) or not runs.get(b):
        return None
    by_b = {r["id"]: r for r in runs[b]}
    pairs = [(r["correct"], by_b[r["id"]]["correct"]) for r in runs[a] if r["id"] in by_b]
    if not pairs:
        return None
    diff = paired_bootstrap([x for x, _ in pairs], [y for _, y in pairs])
    return {"a": a, "b": b, "diff": diff.diff, "low": diff.low, "high": diff.high, "n": diff.n}


def reward_diagnostics(runs: dict) -> dict:
    """Per RCTS run: how well the rollout rewards separate correct from wrong branch answers."""
    out = {}
    for name, records in runs.items():
        pairs = [(reward, answer == r["gold"]) for r in records for answer, reward in r.get("rollouts", [])]
        if pairs:
            out[name] = reward_correctness([p for p, _ in pairs], [c for _, c in pairs])
    return out


def summarise(out, limits: dict | None = None, provenance: dict | None = None,
              diagnostics: dict | None = None, answer_text: dict | None = None) -> dict:
    """Build, write (``results.json``, ``results.csv``) and return the tables (module docstring)."""
    runs = read_runs(out)
    tables = {g: _group(g, runs) for g in GROUPS}
    results = {"paper_key": PAPER_KEY, "paper_source": PAPER_SOURCE, "limits": limits or {},
               "provenance": provenance or {}, "tables": tables,
               "rcts_minus_vanilla_rag": _paired(runs, "rcts", "vanilla_rag"),
               "paired": {f"{a} - {b}": _paired(runs, a, b) for a, b in PAIRED},
               "reward_diagnostics": reward_diagnostics(runs), "retrieval": diagnostics or {},
               # letter vs rationale text per run (kbvqa.rcts.diagnostics.answer_text_table)
               "answer_text": answer_text or {},
               # seconds spent on each run's records, over every (resumed) invocation
               "compute_seconds": {name: round(sum(r["seconds"] for r in recs), 1) for name, recs in runs.items()}}
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1))
    with (out / "results.csv").open("w", newline="") as f:
        fields = ["group", "row", "label", "n", "accuracy", "low", "high", "paper", "calls", "completions",
                  "seconds", "early_stop_rate"]
        writer = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        writer.writeheader()
        for group, rows in tables.items():
            for row in rows:
                writer.writerow({"group": group, **row})
    return results


def load_results(out) -> dict:
    """``results.json`` under ``out`` (raises ``FileNotFoundError`` naming the command to run)."""
    path = Path(out) / "results.json"
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python -m kbvqa.experiments.rcts_toy`")
    return json.loads(path.read_text())


def group_table(results: dict, group: str) -> list[dict]:
    """Plain rows of one table (accuracies in percent, the paper's beside them)."""
    def pct(v):
        return None if v is None else round(100 * v, 1)

    rows = []
    for r in results["tables"].get(group, []):
        rows.append({"row": r["row"], "method": r["label"], "n": r["n"], "toy acc. %": pct(r["accuracy"]),
                     "95% interval": f"[{pct(r['low'])}, {pct(r['high'])}]", "paper %": r["paper"],
                     "calls/q": None if r["calls"] is None else round(r["calls"], 2),
                     "early stop": pct(r["early_stop_rate"])})
    return rows


def print_tables(results: dict) -> None:
    for group, rows in results["tables"].items():
        if not rows:
            continue
        print(f"\n{group}  (paper: {results['paper_source'][group]})")
        print(f"  {'row':<22}{'n':>5}{'toy %':>8}{'interval':>16}{'paper %':>9}{'calls/q':>9}{'s/q':>7}")
        for r in rows:
            interval = f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}]"
            paper = "" if r["paper"] is None else f"{r['paper']:.2f}"
            print(f"  {r['row']:<22}{r['n']:>5}{100 * r['accuracy']:>8.1f}{interval:>16}{paper:>9}"
                  f"{r['calls']:>9.2f}{r['seconds']:>7.2f}")
    diff = results.get("rcts_minus_vanilla_rag")
    if diff:
        print(f"\nRCTS - Vanilla-RAG: {100 * diff['diff']:+.1f} points "
              f"[{100 * diff['low']:+.1f}, {100 * diff['high']:+.1f}] on {diff['n']} questions")


def live_agreement(live: list[dict], committed: list[dict]) -> dict:
    """A live rerun against the committed records of the same questions: the binomial agreement
    check (``check_agreement``) and the share of identical answers."""
    reference = committed_for(live, committed, hint=": rerun questions the script ran")
    rate = sum(bool(r["correct"]) for r in reference) / len(reference)
    return {"agreement": check_agreement([bool(r["correct"]) for r in live], rate),
            "same_answers": same_answers([r["pred"] for r in live], [r["pred"] for r in reference])}


def load_tree(out, run: str, index: int = 0) -> tuple[str, dict]:
    """(query id, ``{"nodes", "config"}``) of the ``index``-th question of a sweep run, ready for
    ``kbvqa.viz.trees.draw_rcts_tree``; raises ``ValueError`` when the run kept no trees."""

    header, records = read_run(Path(out) / "runs" / f"{run}.jsonl")
    kept = [r for r in records if r.get("tree")]
    if header is None or not kept:
        raise ValueError(f"run {run!r} under {out} kept no search trees (only sweep runs do)")
    record = kept[index]
    return record["id"], {"nodes": record["tree"], "config": header["fingerprint"].get("rcts", {})}


def accuracy_table(records: dict[str, list[dict]], dataset: str = "ScienceQA",
                   model: str = "Qwen2-VL-2B") -> list[dict]:
    """One row per run: n, accuracy (%) with its Wilson interval, and the paper's Tab. 2 number."""
    paper = paper_rows("main", dataset, model)
    rows = []
    for name, recs in records.items():
        k, n = sum(bool(r["correct"]) for r in recs), len(recs)
        low, high = wilson_interval(k, n)
        rows.append({"run": name, "n": n, "accuracy %": round(100 * k / n, 1) if n else None,
                     "95% interval": f"[{100 * low:.1f}, {100 * high:.1f}]", "paper %": paper.get(name)})
    return rows
