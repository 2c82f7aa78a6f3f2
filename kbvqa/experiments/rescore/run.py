"""Re-judge committed KB-VQA answers with the official scorers, without running a model again.

The runner of ``python -m kbvqa.experiments.rescore``: ``rescore_runs`` rewrites a folder's run files
with official verdicts and splits, ``rescore_table`` does it for the ReAG or pipeline table and
rewrites the table (provenance gains ``rescored``), ``rescore_tiny_card`` regenerates and judges the
tiny model's card rows; ``main`` is the command line (``--tables``).

Leaves out: what the job is and why (this package's ``__init__``), the scorers
(``kbvqa.metrics``), the tables' summaries (each package's ``summarise``), the RCTS tables.
"""
from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.data import get_world
from kbvqa.experiments.runs import git_commit, read_run
from kbvqa.metrics import kbvqa_split_of, score_records
from kbvqa.models.model_card import kbvqa_rows
from kbvqa.models.pretrain_mix import eval_examples
from kbvqa.models.tiny import load_tiny_vlm
from kbvqa.pipeline import results as pipeline_results
from kbvqa.reag import results as reag_results

SCORER = "kbvqa.metrics.official_correct (InfoSeek pointwise; E-VQA multi-answer IoU)"
SUMMARY_KEYS = {"reag": ("paper_source", "paper_key", "n", "rows", "diagnostics", "paper_tab4"),
                "pipeline": ("n", "rows")}


def rescore_runs(runs_dir: Path, world, keep_verdict=()) -> tuple[dict[str, list[dict]], dict[str, int]]:
    """``({row: records}, {row: verdicts changed})`` for every ``runs_dir/*.jsonl``, rewritten in
    place with official verdicts and splits; rows in ``keep_verdict`` only get their split."""

    queries = world.kbvqa_test
    by_id = {q.id: q for q in queries}
    records, changed = {}, {}
    for path in sorted(Path(runs_dir).glob("*.jsonl")):
        header, recs = read_run(path)
        if header is None:
            continue
        before = [bool(r.get("correct")) for r in recs]
        if path.stem in keep_verdict:
            for r in recs:
                r["split"] = kbvqa_split_of(by_id[r["id"]])
        else:
            score_records(recs, queries)
        changed[path.stem] = sum(b != bool(r["correct"]) for b, r in zip(before, recs))
        lines = [json.dumps(header)] + [json.dumps(r, separators=(",", ":")) for r in recs]
        path.write_text("\n".join(lines) + "\n")
        records[path.stem] = recs
    return records, changed


def rescore_table(kind: str, out: Path | None = None, world=None) -> dict:
    """Rescore the committed runs of ``kind`` ("reag" or "pipeline") and rewrite its table."""

    if kind == "reag":
        package = reag_results
        oracle_rows = ()
    elif kind == "pipeline":
        package = pipeline_results
        oracle_rows = tuple(r.name for r in package.ROWS if r.config.reader == "oracle")
    else:
        raise ValueError(f"kind must be 'reag' or 'pipeline', got {kind!r}")
    out = Path(out or package.RESULTS_DIR)
    earlier = package.load_results(out)
    records, changed = rescore_runs(out / "runs", world or get_world(0), oracle_rows)
    extra = {k: v for k, v in earlier.items() if k not in SUMMARY_KEYS[kind]}
    extra["provenance"] = {**extra.get("provenance", {}), "rescored": {
        "scorer": SCORER, "git_commit": git_commit(("kbvqa/metrics", "kbvqa/experiments/rescore")),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "command": "python -m kbvqa.experiments.rescore", "verdicts_changed": changed}}
    results = package.summarise(records, **extra)
    package.write_results(results, out)
    return results


def rescore_tiny_card(vlm_dir: Path | None = None) -> dict:
    """The tiny model's card with its KB-VQA rows re-run greedily and judged officially; returns it."""
    import torch

    vlm_dir = Path(vlm_dir or DATA_DIR / "tiny_vlm")
    card = json.loads((vlm_dir / "card.json").read_text())
    evaluation, world = card["evaluation"], get_world(card.get("world_seed", 0))
    torch.set_num_threads(1)
    vlm = load_tiny_vlm(vlm_dir)
    vlm.model.eval()
    n = evaluation["n_queries"]
    rows, _ = kbvqa_rows(vlm, {t: eval_examples(world, t, n=n) for t in ("kbvqa_gold_passage", "kbvqa_no_passage",
                                                                        "kbvqa_10_passages")})
    card["rescored"] = {"scorer": "kbvqa.metrics.toy_kbvqa_correct (InfoSeek pointwise; E-VQA multi-answer IoU)",
                        "git_commit": git_commit(("kbvqa/metrics", "kbvqa/models/model_card.py")),
                        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                        "command": "python -m kbvqa.experiments.rescore --tables tiny_card",
                        "before": {k: evaluation[k] for k in rows}}
    evaluation.update({k: float(v) for k, v in rows.items()})
    (vlm_dir / "card.json").write_text(json.dumps(card, indent=1) + "\n")
    return card


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tables", nargs="*", default=["reag", "pipeline"], choices=["reag", "pipeline", "tiny_card"])
    args = parser.parse_args(argv)
    done = {}
    for kind in args.tables:
        if kind == "tiny_card":
            done[kind] = rescore_tiny_card()
            rows = done[kind]["rescored"]["before"]
            print("tiny card, before -> after:", {k: (v, done[kind]["evaluation"][k]) for k, v in rows.items()})
            continue
        done[kind] = rescore_table(kind)
        print(kind, "verdicts changed per row:", done[kind]["provenance"]["rescored"]["verdicts_changed"])
    return done


if __name__ == "__main__":
    main()
