"""The end-to-end ablation (chapter 30): which stage of the pipeline buys how much.

The runner of ``python -m kbvqa.experiments.pipeline_ablation``: ``run_ablation`` resumes or runs
every row into ``runs/<row>.jsonl`` under its fingerprint (``row_fingerprint``: the row's
``PipelineConfig``, the reader's model and the evidence file it reads, ``evidence_models``);
``main`` parses the command line, runs the rows and writes the table with its provenance.

Leaves out: what the experiment is, its rows and folders (this package's ``__init__``), the
pipeline (``kbvqa.pipeline``), the rows' runs, stage inputs and the table (``kbvqa.pipeline.results``).
"""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from kbvqa.config import DATA_DIR, seed_everything
from kbvqa.data import get_world
from kbvqa.experiments.plans import apply_plan, check_counted_run
from kbvqa.experiments.runs import provenance, resumable_parser, resumed_run
from kbvqa.models.checkpoints import role_model
from kbvqa.pipeline.results import (
    EVIDENCE_FILE,
    RESULTS_DIR,
    ROW_BY_NAME,
    Row,
    load_stage_inputs,
    print_table,
    run_rows,
    summarise,
    write_results,
)


def evidence_models(path: Path = EVIDENCE_FILE) -> tuple[str, str]:
    """(fingerprint, critic model) of the stage inputs every row reads (ReAG's ``evidence.json``);
    an evidence file from before it named its critic was made by the ``model`` of ReAG's table."""
    stored = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    return stored.get("fingerprint", ""), stored.get("critic_model", "unknown")


def row_fingerprint(row: Row, evidence: Path = EVIDENCE_FILE) -> str:
    """What a row's records depend on: its settings, the model ``load_vlm("reag_generator")`` gives and
    the stage inputs (retrieval and P(Yes) in ``evidence``, by their fingerprint, ``evidence_models``:
    new evidence reruns every row; the same evidence moved elsewhere does not)."""
    return (f"{row.name}:{role_model('reag_generator')}:{evidence_models(evidence)[0]}:"
            + json.dumps(asdict(row.config), sort_keys=True))


def run_ablation(limit: int, out: Path = RESULTS_DIR, names=None, fresh: bool = False,
                 evidence: Path = EVIDENCE_FILE) -> tuple[dict, dict]:
    """Every row's records (resumed from ``out/runs`` unless ``fresh``) and seconds per row, with the
    stage inputs of ``evidence`` (ReAG's committed ``evidence.json``, or a ladder run's still in progress)."""

    world = get_world(0)
    queries = list(world.kbvqa_test)[:limit]
    ids = [q.id for q in queries]
    runs_dir = Path(out) / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    done, seconds = {}, {}
    for name in names or ROW_BY_NAME:
        finished = resumed_run(runs_dir / f"{name}.jsonl", row_fingerprint(ROW_BY_NAME[name], evidence), ids, fresh)
        if finished:
            done[name], seconds[name] = finished[1], finished[0].get("seconds")

    def write(name, records, secs):
        seconds[name] = secs
        header = {"row": name, "fingerprint": row_fingerprint(ROW_BY_NAME[name], evidence), "n": len(records),
                  "seconds": secs}
        lines = [json.dumps(header)] + [json.dumps(r, separators=(",", ":")) for r in records]
        (runs_dir / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"  {name}: {sum(r['correct'] for r in records)}/{len(records)} correct ({secs} s)", flush=True)

    pending = [n for n in (names or ROW_BY_NAME) if n not in done]
    new = run_rows(world, queries, load_stage_inputs(queries, evidence), pending, on_records=write) if pending else {}
    return {n: done.get(n) or new[n] for n in (names or ROW_BY_NAME)}, seconds


def main(argv=None) -> dict:

    parser = resumable_parser(__doc__.split("\n")[0], "--rows", ROW_BY_NAME, 200,
                              "first N test queries (evidence.json has 200)", RESULTS_DIR)
    parser.add_argument("--evidence", type=Path, default=EVIDENCE_FILE,
                        help="the stage inputs (a ReAG ladder run's evidence.json; default: the committed one)")
    args = parser.parse_args(argv)
    apply_plan(args, args.out, parser)                # a committed plan.json holds a counted run's sizes
    import torch

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    t0 = time.perf_counter()
    records, seconds = run_ablation(args.limit, args.out, args.rows, args.fresh, args.evidence)
    command = "python -m kbvqa.experiments.pipeline_ablation " + " ".join(argv if argv is not None else sys.argv[1:])
    fingerprint, critic = evidence_models(args.evidence)
    results = summarise(records, seconds=seconds, stage_inputs=str(EVIDENCE_FILE.relative_to(DATA_DIR.parent)),
                        stage_inputs_fingerprint=fingerprint,
                        provenance=provenance(args.seed, model=role_model("reag_generator"),
                                              roles={"reag_generator": role_model("reag_generator"),
                                                     "critic": critic},
                                              wall_seconds=round(time.perf_counter() - t0, 1),
                                              command=command.strip()))
    check_counted_run(args.out, RESULTS_DIR, records, results["provenance"])       # plan.json
    write_results(results, args.out)
    print_table(results)
    return results


if __name__ == "__main__":
    main()
