"""Tables and figure of the end-to-end ablation: per-query records -> one row per pipeline setting.

- ``summarise(records)``: per row (``ROWS`` order; every row cut to the queries all rows answered):
  n, accuracy (official scorers, ``kbvqa.metrics.official_correct``) with its 95 % Wilson interval
  (``kbvqa.metrics.intervals.wilson_interval``), InfoSeek's split score with its within-split
  bootstrap interval (``kbvqa.metrics.records_split_score``; records carry ``split``), the paired
  bootstrap against the row it adds to (``Row.versus``), mean passages read, the evidence recall
  after each stage (``STAGES``: retrieved, after the critic, among the ladder's candidates, in the
  reader's context = a perfect reader's accuracy), the ladder's valid-reply rate and model calls.
  Diagnostic rows (perfect ladder, evidence alone) are flagged: they are ceilings, not settings one
  could run.
- ``write_results`` / ``load_results`` / ``load_records``, ``table_rows`` (plain dicts for a
  DataFrame), ``print_table``, ``kbvqa.viz.pipeline.draw_ablation`` (accuracy with intervals beside the recall after
  each stage), ``live_agreement`` (ReAG's: a live rerun against the committed records),
  ``where_lost(records)``: per query, the first stage that lost the evidence (or the answer).
- ``ROWS`` (one ``kbvqa.pipeline.PipelineConfig`` per row, ``LIVE_ROWS`` the cheap ones),
  ``load_stage_inputs`` (retrieval and the critic's P(Yes) from ReAG's committed ``evidence.json``),
  ``run_rows`` (the records of some rows, the ``reag_generator`` role's model as reader and ladder
  judge: the runner's and the chapter's live rerun).

Leaves out: the pipeline (``kbvqa.pipeline.stages``), the resumable run that writes
``data/experiments/pipeline/`` (``python -m kbvqa.experiments.pipeline_ablation``).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import read_json, read_run, write_json_and_csv
from kbvqa.metrics.intervals import paired_bootstrap, wilson_interval
from kbvqa.metrics.toy_kbvqa import split_score_fields
from kbvqa.models.checkpoints import load_vlm
from kbvqa.pipeline import PipelineConfig, run_pipeline
from kbvqa.reag.results import live_agreement, split_columns

RESULTS_DIR = DATA_DIR / "experiments" / "pipeline"


EVIDENCE_FILE = DATA_DIR / "experiments" / "reag" / "evidence.json"


@dataclass(frozen=True)
class Row:
    name: str                 # file and row name
    label: str                # printed label
    config: PipelineConfig
    versus: str | None = None  # the row it is compared with (paired bootstrap); None: none
    diagnostic: bool = False   # not a pipeline setting: a ceiling


_OFF = {"critic": False, "rerank": "none"}


ROWS = (
    Row("reader_alone", "reader alone (question + image)", PipelineConfig(retrieval="none", **_OFF)),
    Row("coarse", "coarse retrieval (every passage)", PipelineConfig(retrieval="coarse", **_OFF), "reader_alone"),
    Row("coarse_fine", "+ fine retrieval (subject crop)", PipelineConfig(retrieval="coarse_fine", **_OFF), "coarse"),
    Row("critic", "+ critic (P(Yes) > 0.1)", PipelineConfig(rerank="none"), "coarse_fine"),
    Row("critic_top1", "+ rerank by P(Yes), keep 1", PipelineConfig(rerank="critic", keep=1), "critic"),
    Row("ladder", "+ ladder, one pass (N = 5)", PipelineConfig(rerank="ladder"), "critic_top1"),
    Row("ladder_no_critic", "ladder without the critic (retrieval order)",
        PipelineConfig(critic=False, rerank="ladder"), "ladder"),
    Row("iterative", "ladder, iterative pairwise (N = 5)", PipelineConfig(rerank="iterative"), "ladder"),
    Row("oracle_ladder", "perfect ladder (evidence if among the 5)", PipelineConfig(rerank="oracle"), "ladder", True),
    Row("evidence_alone", "evidence passage alone (reader ceiling)", PipelineConfig(retrieval="evidence", **_OFF),
        None, True),
)


ROW_BY_NAME = {r.name: r for r in ROWS}


LIVE_ROWS = ("reader_alone", "critic_top1", "ladder", "oracle_ladder")   # cheap: one passage or none


__all__ = ["LOSSES", "STAGES", "live_agreement", "load_records", "load_results", "load_stage_inputs", "print_table",
           "run_rows", "summarise", "table_rows", "where_lost", "write_results"]

STAGES = (("ev_retrieved", "retrieved"), ("ev_critic", "after critic"), ("ev_candidates", "ladder candidates"),
          ("ev_context", "reader's context"))


LOSSES = ("not retrieved", "dropped by the critic", "not among the ladder's candidates", "not picked by the ladder",
          "read, answered wrong", "answered right")


def where_lost(records: list[dict]) -> dict[str, int]:
    """How many queries lost the evidence first at each stage (``LOSSES`` order), how many read
    it and answered wrong, how many answered right (with or without the evidence)."""
    counts = dict.fromkeys(LOSSES, 0)
    for r in records:
        if r["correct"]:
            key = "answered right"
        else:
            flags = [r["ev_retrieved"], r["ev_critic"], r["ev_candidates"], r["ev_context"]]
            key = LOSSES[flags.index(False)] if False in flags else "read, answered wrong"
        counts[key] += 1
    return counts


def _mean(values) -> float | None:
    values = [float(v) for v in values if v is not None]
    return round(sum(values) / len(values), 4) if values else None


def summarise(records: dict[str, list[dict]], **extra) -> dict:
    """The ablation table from ``{row: records}``; ``extra`` (provenance, seconds) stored as is."""
    names = [r.name for r in ROWS if records.get(r.name)]
    if not names:
        raise ValueError("no row has records")
    common = set.intersection(*({r["id"] for r in records[n]} for n in names))
    rows, correct_of = [], {}
    for name in names:
        spec = ROW_BY_NAME[name]
        recs = sorted((r for r in records[name] if r["id"] in common), key=lambda r: r["id"])
        correct = [bool(r["correct"]) for r in recs]
        k, n = sum(correct), len(correct)
        low, high = wilson_interval(k, n)
        row = {"row": name, "label": spec.label, "diagnostic": spec.diagnostic, "n": n, "correct": k,
               "accuracy": round(k / n, 4), "low": round(low, 4), "high": round(high, 4),
               **split_score_fields(recs), "passages": _mean(r["passages"] for r in recs),
               **{key: _mean(r[key] for r in recs) for key, _ in STAGES},
               "ladder_valid": _mean(r["ladder_valid"] for r in recs),
               "ladder_calls": _mean(r["ladder_calls"] for r in recs),
               "by_type": {t: _mean(r["correct"] for r in recs if r["answer_type"] == t)
                           for t in sorted({r["answer_type"] for r in recs})}}
        correct_of[name] = correct
        if spec.versus in correct_of:
            d = paired_bootstrap(correct, correct_of[spec.versus])
            row["versus"] = {"row": spec.versus, "diff": round(d.diff, 4), "low": round(d.low, 4),
                             "high": round(d.high, 4), "significant": d.significant}
        rows.append(row)
    return {"n": len(common), "rows": rows, **extra}


def write_results(results: dict, out) -> None:
    """``results.json`` and ``results.csv`` (one line per row) under ``out``."""

    header = (["row", "label", "diagnostic", "n", "accuracy", "wilson_low", "wilson_high", "split_score",
               "split_low", "split_high", "passages"] + [k for k, _ in STAGES] + ["ladder_valid"])
    write_json_and_csv(out, results, header, (
        [r["row"], r["label"], r["diagnostic"], r["n"], r["accuracy"], r["low"], r["high"], r.get("split_score"),
         r.get("split_low"), r.get("split_high"), r["passages"]]
        + [r[k] for k, _ in STAGES] + [r["ladder_valid"]] for r in results["rows"]))


def load_results(out=None) -> dict:
    path = Path(out or RESULTS_DIR) / "results.json"
    if not path.exists():
        raise ValueError(f"{path} is missing: run `python -m kbvqa.experiments.pipeline_ablation`")
    return read_json(path)


def load_records(out=None) -> dict[str, list[dict]]:
    """{row: committed records} from ``out/runs/*.jsonl``."""
    runs = Path(out or RESULTS_DIR) / "runs"
    return {n: read_run(runs / f"{n}.jsonl")[1] for n in ROW_BY_NAME if (runs / f"{n}.jsonl").exists()}


def table_rows(results: dict) -> list[dict]:
    """Plain rows for a DataFrame: accuracy, interval, passages and the recall after each stage."""
    return [{"setting": ("(diagnostic) " if r["diagnostic"] else "") + r["label"], "accuracy": r["accuracy"],
             "95% Wilson": f"[{r['low']:.3f}, {r['high']:.3f}]", **split_columns(r), "passages": r["passages"],
             **{f"recall: {label}": r[key] for key, label in STAGES}} for r in results["rows"]]


def print_table(results: dict) -> None:
    print(f"\nEnd-to-end ablation on the toy world ({results['n']} test queries)")
    print(f"{'setting':44} {'acc':>6} {'95% Wilson':>15} {'pass.':>6} " + " ".join(f"{k[3:]:>10}" for k, _ in STAGES))
    for r in results["rows"]:
        label = ("(diag.) " if r["diagnostic"] else "") + r["label"]
        recall = " ".join(f"{r[k]:10.3f}" for k, _ in STAGES)
        print(f"{label[:44]:44} {r['accuracy']:6.3f} [{r['low']:.3f}, {r['high']:.3f}] {r['passages']:6.1f} {recall}")


def load_stage_inputs(queries, path: Path = EVIDENCE_FILE) -> dict:
    """{query id: coarse / fine passage ids and P(Yes)} from ReAG's committed ``evidence.json``;
    a missing file or query raises ``ValueError`` naming it."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path} is missing: run `python -m kbvqa.experiments.reag_ladder` first")
    stored = json.loads(path.read_text())["queries"]
    missing = [q.id for q in queries if q.id not in stored]
    if missing:
        raise ValueError(f"{path} has no retrieval for {len(missing)} queries (e.g. {missing[:3]}); "
                         "rerun reag_ladder with a larger --limit")
    return {q.id: stored[q.id] for q in queries}


def run_rows(world, queries, stage_inputs: dict, names=None, model=None, on_records=None) -> dict[str, list[dict]]:
    """{row: records} for ``names`` (default all rows); ``model`` defaults to ``load_vlm("reag_generator")``."""

    names = list(names or ROW_BY_NAME)
    unknown = [n for n in names if n not in ROW_BY_NAME]
    if unknown:
        raise ValueError(f"unknown rows {unknown}; expected some of {list(ROW_BY_NAME)}")
    model = model or load_vlm("reag_generator")
    out = {}
    for name in names:
        config = ROW_BY_NAME[name].config
        t0 = time.perf_counter()
        records = run_pipeline(world, queries, stage_inputs, config, reader=model, judge=model)
        out[name] = records
        if on_records is not None:
            on_records(name, records, round(time.perf_counter() - t0, 1))
    return out
