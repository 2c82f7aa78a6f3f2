"""Tables and figures of MOLT's training experiment: records -> Tab. 5 / Tab. 6 analogues, Fig. 3 curves.

- ``PAPER_TAB5`` / ``PAPER_TAB6``: MOLT Tab. 5 (E-VQA evidence-selection accuracy, %, by prompt
  and training stage) and Tab. 6 (accuracy by schedule), transcribed; ``TAB5_ROWS`` maps our rows
  to theirs (SAPO has no row here).
- ``summarise(records)``: one row per experiment row: n, accuracy with its Wilson interval
  (``kbvqa.metrics.intervals.wilson_interval``), format-valid rate, full-chain-valid rate, mean R_proc and Eq. 8
  total, accuracy by gold rank; ``tab5`` / ``tab6`` / ``scripted_table`` pick the rows of each
  table (plain dicts for a DataFrame); ``print_table``.
- ``write_results`` / ``load_results``: ``results.json`` (summary, config, training curves,
  provenance) and ``runs.jsonl`` (the tiny model's per-query records, outputs cut to 160 chars);
  ``load_records`` reads the latter back.
- pictures of these results (``kbvqa.viz.molt``): ``draw_reward_curves``: process and result rewards
  over GRPO steps (Fig. 3 analogue; moving average), a live short run overlaid;
  ``draw_schedule_accuracy``: the scripted judges' accuracy by schedule and error rate with the tiny
  model's three schedules.
- ``live_agreement(live, committed)``: a live rerun of some queries against the committed records of
  the same queries (same choices share and ``kbvqa.metrics.intervals.check_agreement``).

Leaves out: the experiment's evaluation sets and judges (``kbvqa.molt.experiment``), running it
(``python -m kbvqa.experiments.molt_training``).
"""
from __future__ import annotations

import json
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import committed_for, read_json
from kbvqa.metrics.intervals import check_agreement, same_answers, wilson_interval
from kbvqa.molt.paper import PAPER_KEY, PAPER_TAB5, PAPER_TAB6

RESULTS_DIR = DATA_DIR / "experiments" / "molt"


TAB5_ROWS = {"zero_shot_one_shot": 0, "zero_shot_tournament": 1, "sft_tournament": 2,
             "grpo_no_proc_tournament": 3, "grpo_full_weak_to_strong": 4}
ORDER_LABEL = {"random": "Random Shuffle", "strong_to_weak": "Strong-to-Weak (start with c_1)",
               "weak_to_strong": "Weak-to-Strong (start with c_N)"}


def _mean(values):
    values = [float(v) for v in values]
    return round(sum(values) / len(values), 4) if values else None


def summarise_row(records: list[dict]) -> dict:
    """Accuracy (Wilson interval), format/chain rates, mean rewards and accuracy by gold rank."""
    k, n = sum(bool(r["correct"]) for r in records), len(records)
    low, high = wilson_interval(k, n)
    ranks = sorted({r["gold_rank"] for r in records})
    return {"n": n, "correct": k, "accuracy": round(k / n, 4) if n else None, "low": round(low, 4),
            "high": round(high, 4), "format_valid": _mean(r["fmt"] for r in records),
            "chain_valid": (_mean(r["chain_valid"] for r in records)
                            if records and "chain_valid" in records[0] else None),
            "process_reward": _mean(r["proc"] for r in records) if records and "proc" in records[0] else None,
            "total_reward": _mean(r["total"] for r in records) if records and "total" in records[0] else None,
            "by_gold_rank": {str(g): _mean(r["correct"] for r in records if r["gold_rank"] == g) for g in ranks}}


def summarise(records: dict[str, list[dict]], **extra) -> dict:
    """{row: summary} for every row of ``records``; ``extra`` (config, training, provenance) kept."""
    if not records:
        raise ValueError("no rows to summarise")
    return {"paper_key": PAPER_KEY, "rows": {name: summarise_row(recs) for name, recs in records.items()}, **extra}


def _pct(x):
    return None if x is None else round(100 * x, 1)


def tab5(results: dict) -> list[dict]:
    """Tab. 5 analogue: the judge's rows (the model that plays "judge") next to the paper's."""
    out = []
    for name, i in TAB5_ROWS.items():
        row = results["rows"].get(name)
        if row is None:
            continue
        setting, prompt, paper = PAPER_TAB5[i]
        out.append({"setting": setting, "prompt": prompt, "ours_acc_%": _pct(row["accuracy"]),
                    "ours_95%_ci": f"[{_pct(row['low'])}, {_pct(row['high'])}]",
                    "format_valid_%": _pct(row["format_valid"]),
                    "chain_valid_%": _pct(row["chain_valid"]), "paper_acc_%": paper, "n": row["n"]})
    return out


def tab6(results: dict) -> list[dict]:
    """Tab. 6 analogue: the three schedules, the judge after full GRPO and the scripted judge at error 0.1."""
    out = []
    for order, label in ORDER_LABEL.items():
        judge = results["rows"].get(f"grpo_full_{order}")
        scripted = results["rows"].get(f"scripted_0.1_{order}")
        out.append({"schedule": label, "judge_acc_%": _pct(judge["accuracy"]) if judge else None,
                    "judge_95%_ci": f"[{_pct(judge['low'])}, {_pct(judge['high'])}]" if judge else None,
                    "scripted_eps0.1_acc_%": _pct(scripted["accuracy"]) if scripted else None,
                    "paper_acc_%": PAPER_TAB6[order]})
    return out


def scripted_table(results: dict) -> list[dict]:
    """Scripted judges: accuracy (%) per error rate and schedule, with mean R_proc."""
    rows = {}
    for name, row in results["rows"].items():
        if name.startswith("scripted_"):
            _, error, order = name.split("_", 2)
            r = rows.setdefault(error, {"error": float(error)})
            r[f"{order}_acc_%"] = _pct(row["accuracy"])
            r[f"{order}_R_proc"] = row["process_reward"]
    return [rows[e] for e in sorted(rows, key=float)]


def print_table(results: dict) -> None:
    for title, rows in (("Tab. 5 analogue", tab5(results)), ("Tab. 6 analogue", tab6(results)),
                        ("scripted judges", scripted_table(results))):
        print(title)
        for r in rows:
            print("  " + " | ".join(f"{k}={v}" for k, v in r.items()))


def write_results(results: dict, records: dict[str, list[dict]], out) -> None:
    """``results.json`` and ``runs.jsonl`` (the judge's rows only: scripted rows rerun in a second)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    lines = [json.dumps({"row": name, **{**r, "output": r.get("output", "")[:160]}}, separators=(",", ":"))
             for name, recs in records.items() if not name.startswith("scripted_") for r in recs]
    (out / "runs.jsonl").write_text("\n".join(lines) + "\n")


def load_results(out=None) -> dict:
    return read_json(Path(out or RESULTS_DIR) / "results.json")


def load_records(out=None) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    for line in (Path(out or RESULTS_DIR) / "runs.jsonl").read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            rows.setdefault(r.pop("row"), []).append(r)
    return rows


def live_agreement(live: list[dict], committed: list[dict]) -> dict:
    """Live records against the committed records of the same query ids: share of identical
    outcomes (correct / wrong) and whether the committed rate lies in the live Wilson interval."""
    ref = [bool(r["correct"]) for r in committed_for(live, committed)]
    agreement = check_agreement([bool(r["correct"]) for r in live], sum(ref) / len(ref))
    return {"n": len(live), "same_outcome": same_answers([bool(r["correct"]) for r in live], ref),
            "live_accuracy": round(agreement.rate, 4), "committed_accuracy": round(agreement.reference, 4),
            "agrees": agreement.agrees}


def moving_average(values, window: int) -> list[float]:
    """Trailing moving average (the window shrinks at the start), as Fig. 3's smoothing."""
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    return [sum(values[max(0, i - window + 1): i + 1]) / len(values[max(0, i - window + 1): i + 1])
            for i in range(len(values))]
