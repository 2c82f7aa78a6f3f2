"""Tables and figure of ReAG's ablation ladder: per-query records -> accuracies next to Tab. 4.

- ``PAPER_TAB4``: ReAG Tab. 4 transcribed (accuracy in %, k = 20): each row's seven component
  flags (coarse, fine, critic, SFT, reasoning, traces, RL, in the printed column order), the
  generator, E-VQA single-hop and InfoSeek unseen-question / unseen-entity / all.
- ``PAPER_ROW_OF``: our rung -> the Qwen2.5-VL-3B row it corresponds to. Our "+ SFT" is the row
  with SFT alone (37.5), "+ traces" the row with SFT + reasoning (41.3), "+ RL" the full ReAG row
  (43.3). The paper's row "SFT + RL without reasoning" (39.6) has no rung here.
- ``summarise(records)``: one row per rung: n, accuracy with its Wilson interval
  (``kbvqa.metrics.intervals.wilson_interval``), accuracy by question type, the paired bootstrap
  against the previous rung (same queries), mean passages read, evidence-in-context rate, accuracy
  where the evidence was in context, all-filtered rate, format reward, and the paper's numbers;
  ``diagnostics``: the same for the oracle rungs (each generator with the evidence passage alone,
  not in the paper). ``write_results`` / ``load_results`` (JSON + CSV), ``print_table``,
  ``table_rows`` (plain dicts for a DataFrame), ``kbvqa.viz.reag.draw_ladder`` (figure).
- ``split_rows(records)``: the ladder per InfoSeek split (unseen question: creatures the critic and the
  generators were trained on; unseen entity: new ones), each step's paired difference within the split.
- ``live_agreement(live, results)``: a live rerun of some rungs on a few queries against the
  committed records of the same queries (``kbvqa.metrics.intervals.check_agreement``, ``same_answers``).

Leaves out: running the rungs (``kbvqa.reag.ladder``, ``python -m kbvqa.experiments.reag_ladder``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import committed_for, read_run, write_json_and_csv
from kbvqa.metrics.infoseek import INFOSEEK_SPLITS
from kbvqa.metrics.intervals import check_agreement, paired_bootstrap, same_answers, wilson_interval
from kbvqa.metrics.toy_kbvqa import split_score_fields
from kbvqa.reag.paper import PAPER_KEY, PAPER_ROW_OF, PAPER_SOURCE, paper_rows

RESULTS_DIR = DATA_DIR / "experiments" / "reag"


@dataclass(frozen=True)
class Rung:
    name: str            # file and row name
    label: str           # printed label
    coarse: bool         # coarse retrieval (image -> pages)
    fine: bool           # + fine retrieval (crop -> pages, merged by max)
    critic: bool         # Eq. 4 filter
    generator: str       # "zero_shot", "sft", "cold_start" or "rl"
    oracle: bool = False  # diagnostic: the evidence passage alone instead of the retrieved ones


RUNGS = (
    Rung("no_retrieval", "no retrieval (question + image)", False, False, False, "zero_shot"),
    Rung("coarse", "coarse retrieval", True, False, False, "zero_shot"),
    Rung("coarse_critic", "+ critic", True, False, True, "zero_shot"),
    Rung("fine_critic", "+ fine retrieval", True, True, True, "zero_shot"),
    Rung("sft", "+ SFT (answer only)", True, True, True, "sft"),
    Rung("traces", "+ traces (cold start, alpha = 0.8)", True, True, True, "cold_start"),
    Rung("rl", "+ RL (GRPO from the cold start)", True, True, True, "rl"),
)


ORACLE_RUNGS = (
    Rung("oracle_zero_shot", "evidence alone, zero-shot", False, False, False, "zero_shot", oracle=True),
    Rung("oracle_traces", "evidence alone, cold start", False, False, False, "cold_start", oracle=True),
    Rung("oracle_rl", "evidence alone, GRPO", False, False, False, "rl", oracle=True),
)


RUNG_BY_NAME = {r.name: r for r in RUNGS + ORACLE_RUNGS}


CHEAP_RUNGS = ("no_retrieval", "coarse", "coarse_critic", "fine_critic")   # no generator training


def _mean(values) -> float | None:
    values = list(values)
    return round(sum(values) / len(values), 4) if values else None


def summarise(records: dict[str, list[dict]], **extra) -> dict:
    """The ladder table from ``{rung: records}`` (rungs in ladder order). All rungs are cut to the
    queries every rung answered, so the rows compare pairwise. ``extra`` (config, training,
    provenance) is stored as is."""
    names = [r.name for r in RUNGS if records.get(r.name)]
    if not names:
        raise ValueError("no rung has records")
    common = set.intersection(*({r["id"] for r in records[n]} for n in names))
    rows, previous, paper = [], None, paper_rows()
    oracle = [r.name for r in ORACLE_RUNGS if records.get(r.name)]
    for name in names + oracle:
        recs = sorted((r for r in records[name] if r["id"] in common), key=lambda r: r["id"])
        correct = [bool(r["correct"]) for r in recs]
        k, n = sum(correct), len(correct)
        low, high = wilson_interval(k, n)
        types = sorted({r["answer_type"] for r in recs})
        p = paper[PAPER_ROW_OF[name]] if name in PAPER_ROW_OF else {"evqa_single_hop": None, "infoseek_all": None}
        row = {"rung": name, "label": RUNG_BY_NAME[name].label, "n": n, "correct": k,
               "accuracy": round(k / n, 4) if n else None, "low": round(low, 4), "high": round(high, 4),
               **split_score_fields(recs),
               "by_type": {t: _mean(r["correct"] for r in recs if r["answer_type"] == t) for t in types},
               "passages": _mean(r["passages"] for r in recs),
               "evidence_in_context": _mean(r["evidence_in"] for r in recs),
               "accuracy_with_evidence": _mean(r["correct"] for r in recs if r["evidence_in"]),
               "all_filtered": _mean(r["passages"] == 0 for r in recs) if RUNG_BY_NAME[name].critic else None,
               "format_reward": _mean(r["format"] for r in recs),
               "paper_evqa": p["evqa_single_hop"], "paper_infoseek": p["infoseek_all"]}
        if name in oracle:
            rows.append(row)
            continue
        if previous is not None:
            diff = paired_bootstrap(correct, previous)
            row["vs_previous"] = {"diff": round(diff.diff, 4), "low": round(diff.low, 4),
                                  "high": round(diff.high, 4), "significant": diff.significant}
        rows.append(row)
        previous = correct
    return {"paper_source": PAPER_SOURCE, "paper_key": PAPER_KEY, "n": len(common),
            "rows": [r for r in rows if r["rung"] not in oracle],
            "diagnostics": [r for r in rows if r["rung"] in oracle],
            "by_split": split_rows(records), "paper_tab4": paper, **extra}


def split_rows(records: dict[str, list[dict]]) -> list[dict]:
    """One row per ladder rung (in order) and split, on the queries every rung answered: n, accuracy,
    mean passages read, evidence-in-context rate and, from the second rung on, ``vs_previous``: the
    paired bootstrap difference with the previous rung on the same split's queries."""
    names = [r.name for r in RUNGS if records.get(r.name)]
    if not names:
        return []
    common = set.intersection(*({r["id"] for r in records[n]} for n in names))
    out = []
    for split in INFOSEEK_SPLITS:
        previous = None
        for name in names:
            recs = sorted((r for r in records[name] if r["id"] in common and r.get("split") == split),
                          key=lambda r: r["id"])
            if not recs:
                break
            correct = [bool(r["correct"]) for r in recs]
            row = {"split": split, "rung": name, "n": len(recs), "accuracy": _mean(correct),
                   "passages": _mean(r["passages"] for r in recs),
                   "evidence_in_context": _mean(r["evidence_in"] for r in recs)}
            if previous is not None:
                diff = paired_bootstrap(correct, previous)
                row["vs_previous"] = {"diff": round(diff.diff, 4), "low": round(diff.low, 4),
                                      "high": round(diff.high, 4)}
            out.append(row)
            previous = correct
    return out


def write_results(results: dict, out) -> None:
    """``results.json`` and ``results.csv`` (one line per rung) under ``out``."""

    header = ["rung", "label", "n", "accuracy", "wilson_low", "wilson_high", "split_score", "split_low",
              "split_high", "passages", "evidence_in_context", "paper_evqa_single_hop", "paper_infoseek_all"]
    write_json_and_csv(out, results, header, (
        [r["rung"], r["label"], r["n"], r["accuracy"], r["low"], r["high"], r.get("split_score"),
         r.get("split_low"), r.get("split_high"), r["passages"],
         r["evidence_in_context"], r["paper_evqa"], r["paper_infoseek"]]
        for r in results["rows"] + results.get("diagnostics", [])))


def load_results(out=None) -> dict:
    return json.loads((Path(out or RESULTS_DIR) / "results.json").read_text())


def load_records(out=None) -> dict[str, list[dict]]:
    """{rung: committed records} from ``out/runs/*.jsonl`` (header dropped)."""
    runs = Path(out or RESULTS_DIR) / "runs"
    return {name: read_run(runs / f"{name}.jsonl")[1] for name in RUNG_BY_NAME if (runs / f"{name}.jsonl").exists()}


def table_rows(results: dict) -> list[dict]:
    """Plain rows (ours next to the paper's) for a DataFrame."""
    return [{"rung": r["label"], "n": r["n"], "accuracy": r["accuracy"],
             "95% interval": f"[{r['low']:.2f}, {r['high']:.2f}]", **split_columns(r), "passages": r["passages"],
             "evidence in context": r["evidence_in_context"],
             "paper E-VQA": r["paper_evqa"], "paper InfoSeek": r["paper_infoseek"]} for r in results["rows"]]


def split_columns(row: dict) -> dict:
    """A row's InfoSeek split score (percent) and its within-split bootstrap interval, as two table
    columns ("–" for a table committed before rows carried splits)."""
    if row.get("split_score") is None:
        return {"split score (%)": "–", "split 95% interval": "–"}
    return {"split score (%)": row["split_score"],
            "split 95% interval": f"[{row['split_low']:.1f}, {row['split_high']:.1f}]"}


def print_table(results: dict) -> None:
    print(f"\nReAG ablation ladder on the toy world ({results['n']} test queries) vs {results['paper_source']}")
    print(f"{'rung':38} {'acc':>6} {'95% Wilson':>15} {'pass.':>6} {'ev.in':>6} | {'E-VQA':>6} {'InfoS.':>6}")
    for r in results["rows"]:
        print(f"{r['label']:38} {r['accuracy']:6.3f} [{r['low']:.3f}, {r['high']:.3f}] {r['passages']:6.1f} "
              f"{r['evidence_in_context']:6.2f} | {r['paper_evqa']:6.1f} {r['paper_infoseek']:6.1f}")
    for r in results.get("diagnostics", []):
        print(f"{'(diagnostic) ' + r['label']:38} {r['accuracy']:6.3f} [{r['low']:.3f}, {r['high']:.3f}] "
              f"{r['passages']:6.1f} {r['evidence_in_context']:6.2f} |")


def live_agreement(live: dict[str, list[dict]], committed: dict[str, list[dict]]) -> list[dict]:
    """Per rung of ``live``: the committed accuracy of the same queries, the live accuracy with its
    Wilson interval, whether they agree within noise, and the share of identical answers."""
    out = []
    for name, recs in live.items():
        ref = committed_for(recs, committed.get(name, []), what=f"rung {name!r}: ")
        agreement = check_agreement([r["correct"] for r in recs], sum(r["correct"] for r in ref) / len(ref))
        out.append({"rung": name, "n": agreement.n, "live": agreement.rate, "low": round(agreement.low, 3),
                    "high": round(agreement.high, 3), "committed": agreement.reference, "agrees": agreement.agrees,
                    "same_answers": same_answers([r["answer"] for r in recs], [r["answer"] for r in ref])})
    return out
