"""RCTS on the toy world: the experiment script behind chapter 14 (Tab. 2, 4, 5 and Fig. 5b analogues).

The runner of ``python -m kbvqa.experiments.rcts_toy``: ``run_to_file`` appends one row's records
to ``runs/<run>.jsonl`` under its fingerprint and skips the questions already there; ``main``
parses the command line, loads (or computes) the retrieval cache, runs the groups' rows and writes
the tables with their provenance.

Leaves out: what the experiment is, its rows and folder (this package's ``__init__``), how a row
runs (``kbvqa.rcts.runs``), retrieval and the toy ``Setting`` (``kbvqa.rcts.settings``), the tables
(``kbvqa.rcts.results``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from kbvqa.config import progress_enabled, seed_everything
from kbvqa.data import get_world
from kbvqa.experiments.plans import apply_plan, check_counted_run
from kbvqa.experiments.runs import model_fingerprint, non_negative_int, positive_int, provenance, read_run
from kbvqa.models.checkpoints import load_vlm
from kbvqa.rcts.context_kb import contexts_of, reasoning_kb_meta
from kbvqa.rcts.diagnostics import answer_text_table
from kbvqa.rcts.mcts_hr import REWARD_DECODINGS, RCTSConfig
from kbvqa.rcts.results import RESULTS_DIR, print_tables, read_runs, summarise
from kbvqa.rcts.rewards import MUTUAL_MODES
from kbvqa.rcts.runs import ROWS, Setting, run_row, runs_of, spec_fingerprint
from kbvqa.rcts.settings import load_retrieval, retrieval_diagnostics, toy_setting


# ------------------------------------------------------------------------------ incremental runs
def run_to_file(name: str, setting: Setting, vlm, out: Path, seed: int, fresh: bool = False,
                progress: bool = True) -> list[dict]:
    """Run ``name`` on ``setting``, appending records to ``out/runs/<name>.jsonl``; returns all records
    of the file that belong to ``setting``'s queries."""
    from tqdm.auto import tqdm

    spec = ROWS[name]
    path = Path(out) / "runs" / f"{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    fingerprint = {**spec_fingerprint(spec, setting, seed), "model": model_fingerprint(vlm)}
    header, records = read_run(path)
    if fresh or header is None or header["fingerprint"] != fingerprint:
        header, records = {"run": name, "fingerprint": fingerprint}, []
        path.write_text(json.dumps(header) + "\n")
    done = {r["id"] for r in records}
    todo = sum(q.id not in done for q in setting.queries)
    with path.open("a") as f, tqdm(total=todo, desc=name, disable=not progress_enabled(progress) or todo == 0) as bar:
        for record in run_row(spec, setting, vlm, seed=seed, skip=done):
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
            f.flush()
            records.append(record)
            bar.update(1)
    wanted = {q.id for q in setting.queries}
    return [r for r in records if r["id"] in wanted]


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--groups", nargs="+", default=["all"],
                        help="main ablation alpha rollouts diagnostics, or all (default)")
    parser.add_argument("--rows", nargs="+", default=None,
                        help="run only these of the groups' runs (e.g. zero_shot vanilla_rag: the cheap rows on "
                             "a large --limit, RCTS on a smaller one); the tables read every run in --out")
    parser.add_argument("--limit", type=positive_int, default=None, help="first n test questions (default: all 320)")
    parser.add_argument("--sweep-limit", type=positive_int, default=20,
                        help="questions of the alpha/rollout sweeps (no early stop: ~20 s per question each)")
    parser.add_argument("--seed", type=non_negative_int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--threads", type=positive_int, default=1)
    parser.add_argument("--fresh", action="store_true", help="discard earlier records of the runs")
    parser.add_argument("--recompute-retrieval", action="store_true")
    parser.add_argument("--contexts", type=Path, default=None,
                        help="a reasoner's KB (rcts_contexts --for-queries: kb_rcts.jsonl) whose contexts the "
                             "with-context rows show (RCTS §3.2); default: the toy worked solutions")
    parser.add_argument("--plain-kb", action="store_true",
                        help="examples without worked solutions, every row (the paper's premise, issue 52); "
                             "needs --contexts")
    parser.add_argument("--reward-decoding", choices=REWARD_DECODINGS, default="line",
                        help="RCTSConfig.reward_decoding of every RCTS row: 'answer' samples with-context rewards "
                             "up to the FINAL ANSWER line (issue 52); 'line' (default) is the committed runs'")
    parser.add_argument("--mutual", choices=MUTUAL_MODES, default="paper",
                        help="RCTSConfig.mutual of every RCTS row: 'official' = one set of top-retrieved "
                             "references for every branch (issue 52)")
    args = parser.parse_args(argv)
    if args.plain_kb and args.contexts is None:
        parser.error("--plain-kb needs --contexts: a plain knowledge base has no worked solution to show")
    apply_plan(args, args.out, parser)                # a committed plan.json holds a counted run's sizes
    runs = runs_of(args.groups)
    if args.rows is not None:
        unknown = sorted(set(args.rows) - set(runs))
        if unknown:
            raise ValueError(f"--rows {unknown} not among the runs of --groups {args.groups}: {runs}")
        runs = [r for r in runs if r in args.rows]
    import torch

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    t0 = time.perf_counter()
    world = get_world(0)
    retrieval = load_retrieval(world, args.out, args.recompute_retrieval)
    vlm = load_vlm("generator")
    contexts = contexts_of(args.contexts) if args.contexts else None
    made_contexts = reasoning_kb_meta(args.contexts) if args.contexts else {}
    roles = {"generator": model_fingerprint(vlm), **({"reasoner": made_contexts.get("model", "unknown")}
                                                     if contexts else {})}
    for name in runs:
        limit = args.sweep_limit if ROWS[name].sweep else args.limit
        setting = toy_setting(world, retrieval, limit, contexts=contexts, plain_kb=args.plain_kb)
        setting.rcts_defaults.update({k: v for k, v in (("reward_decoding", args.reward_decoding),
                                                        ("mutual", args.mutual))
                                      if v != getattr(RCTSConfig, k)})   # defaults keep the fingerprint
        run_to_file(name, setting, vlm, args.out, args.seed, args.fresh)
    check_counted_run(args.out, RESULTS_DIR, read_runs(args.out), provenance(args.seed, vlm))   # plan.json
    results = summarise(args.out, limits={"limit": args.limit, "sweep_limit": args.sweep_limit},
                        provenance=provenance(args.seed, vlm, wall_seconds=round(time.perf_counter() - t0, 1),
                                              roles=roles,
                                              contexts={"file": str(args.contexts or "toy worked solutions"),
                                                        "examples": len(contexts or {}), **made_contexts},
                                              command="python -m kbvqa.experiments.rcts_toy "
                                              + " ".join(argv if argv is not None else sys.argv[1:])),
                        diagnostics=retrieval_diagnostics(world, retrieval),
                        answer_text=answer_text_table({q.id: q for q in world.mc_test}, read_runs(args.out)))
    print_tables(results)
    return results


if __name__ == "__main__":
    main()
