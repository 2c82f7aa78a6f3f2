"""ReAG's ablation ladder on the toy world (Tab. 4): the experiment script behind chapter 24.

The runner of ``python -m kbvqa.experiments.reag_ladder``: ``run_ladder`` resumes or runs every rung
into ``runs/<rung>.jsonl`` under its fingerprint (``rung_fingerprint``: the settings its records
depend on); ``main`` parses the command line, runs the ladder and writes the table with its
provenance (``results.json``; a resumed run keeps the earlier invocations). On the reader the
training stages take hours: each trained model (critic, SFT, cold start, GRPO), the model-written
traces, the SFT stages' checkpoints and the training log are kept in a work folder
(``kbvqa.experiments.work``, ``--work``; named by ``work_name``) so that a rerun trains only what is missing.

Leaves out: what the experiment is, its rungs and folder (this package's ``__init__``), the
settings, evidence and the rungs' runs (``kbvqa.reag.ladder``), the tables (``kbvqa.reag.results``).
"""
from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path

from kbvqa.config import seed_everything
from kbvqa.data import get_world
from kbvqa.experiments.plans import apply_plan, check_counted_run
from kbvqa.experiments.runs import provenance, resumable_parser, resumed_run
from kbvqa.experiments.work import WorkFolder, default_work_root, work_fingerprint
from kbvqa.models.checkpoints import role_model
from kbvqa.reag.ladder import LADDER_ROLES, TRACE_SOURCES, LadderConfig, load_evidence, run_rungs
from kbvqa.reag.ladder_train import critic_heldout_auc
from kbvqa.reag.results import RESULTS_DIR, RUNG_BY_NAME, Rung, print_table, summarise, write_results

HELDOUT_PAIRS = 200     # held-out (query, passage) pairs of the critic's before / after AUC


# ------------------------------------------------------------------------------ the run
def ladder_models() -> dict[str, str]:
    """{role: the weights ``load_vlm(role)`` gives} for every role the ladder loads (``role_model``)."""
    return {role: role_model(role) for role in LADDER_ROLES}


def rung_fingerprint(rung: Rung, config: LadderConfig) -> str:
    """What a rung's records depend on: the models, retrieval/critic settings always, training budgets by kind."""
    fields = ["max_new_tokens"] if rung.oracle else ["k", "threshold", "critic_steps", "max_new_tokens"]
    if rung.generator in ("sft", "cold_start", "rl"):
        fields += ["sft_steps" if rung.generator == "sft" else "cold_steps", "alpha", "train_examples", "sft_lr"]
    if rung.generator in ("cold_start", "rl") and config.traces != "template":    # templated: as before
        fields += ["traces", "trace_tokens"]
    if rung.generator == "rl":
        fields += ["grpo_steps", "group_size", "prompts_per_step", "grpo_lr"]
    if config.heldout_train and not rung.oracle:             # 0: the committed runs' fingerprints
        fields += ["heldout_train"]
    return f"{rung.name}:{config.fingerprint(*fields)}:" + ",".join(sorted(set(ladder_models().values())))


def work_name(config: LadderConfig) -> str:
    """The work folder's name: every setting but the number of evaluated queries, and the roles' models."""
    return work_fingerprint({"config": {k: v for k, v in asdict(config).items()
                                        if k != "limit" and not (k == "heldout_train" and v == 0)},
                             "models": ladder_models()})


def run_ladder(config: LadderConfig, out: Path = RESULTS_DIR, rungs=None,
               fresh: bool = False, work: WorkFolder | None = None) -> tuple[dict[str, list[dict]], dict]:
    """The whole experiment: records of every rung in ``out/runs/`` (resumed unless ``fresh``) and a
    training log; returns ({rung: records}, log). With a ``work`` folder the trained models and the
    log are kept there and read back (the log starts from the one kept)."""

    world = get_world(0)
    queries = list(world.kbvqa_test)[: config.limit]
    ids = [q.id for q in queries]
    runs_dir = Path(out) / "runs"
    runs_dir.mkdir(parents=True, exist_ok=True)
    finished, log = {}, (work.log() if work is not None else {})
    for name in rungs or RUNG_BY_NAME:
        done = resumed_run(runs_dir / f"{name}.jsonl", rung_fingerprint(RUNG_BY_NAME[name], config), ids, fresh)
        if done:
            finished[name] = done[1]
    pending = len(finished) < len(rungs or RUNG_BY_NAME)
    evidence = load_evidence(world, queries, config, Path(out) / "evidence.json", log, work=work) if pending else {}
    if pending and "critic_heldout" not in log:       # chapter 21's check, on the ladder's critic
        log["critic_heldout"] = critic_heldout_auc(world, config, work=work, n=HELDOUT_PAIRS)
        if work is not None:
            work.save_log(log)

    def write(name, records):
        header = {"rung": name, "fingerprint": rung_fingerprint(RUNG_BY_NAME[name], config), "n": len(records)}
        lines = [json.dumps(header)] + [json.dumps(r, separators=(",", ":")) for r in records]
        (runs_dir / f"{name}.jsonl").write_text("\n".join(lines) + "\n")
        print(f"  {name}: {sum(r['correct'] for r in records)}/{len(records)} correct", flush=True)

    new = run_rungs(world, queries, evidence, config, rungs, log, done=finished, on_records=write, work=work)
    return {name: (finished.get(name) or new[name]) for name in (rungs or RUNG_BY_NAME)}, log


SHIPPED_MODELS = ("critic", "cold_start", "rl")   # what the chapters rerun with (``ladder.committed_model``)


def ship_models(work: WorkFolder, out: Path) -> list[str]:
    """Copy the trained critic, cold start and GRPO generator from the work folder into ``out/models/``
    (LoRA adapters, a few MB each): chapter 21 rescores with the committed critic, chapter 23 starts
    its live GRPO steps from the cold start and chapter 24 reruns the "+ RL" rung on a few queries.
    The model-written traces (``data/traces.json``, before the label check) go to ``out/traces.json``
    for chapter 22. Returns the names copied."""
    copied = []
    for name in SHIPPED_MODELS:
        if work.has_model(name):
            (Path(out) / "models").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(work.dir / "models" / f"{name}.pt", Path(out) / "models" / f"{name}.pt")
            copied.append(name)
    if (work.dir / "data" / "traces.json").exists():     # the traces as the writer wrote them (chapter 22)
        shutil.copyfile(work.dir / "data" / "traces.json", Path(out) / "traces.json")
        copied.append("traces")
    return copied


def main(argv=None) -> dict:

    parser = resumable_parser(__doc__.split("\n")[0], "--rungs", RUNG_BY_NAME, LadderConfig.limit,
                              "first N test queries", RESULTS_DIR, what="rungs")
    parser.add_argument("--traces", choices=TRACE_SOURCES, default=LadderConfig.traces,
                        help="who writes the cold start's traces (model: the reag_generator role's)")
    parser.add_argument("--work", type=Path, default=default_work_root("reag_ladder"),
                        help="where trained models and checkpoints are kept for a rerun to resume")
    args = parser.parse_args(argv)
    apply_plan(args, args.out, parser, rows_attr="rungs")     # a committed plan.json holds the sizes
    import torch

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    config = LadderConfig(limit=args.limit, seed=args.seed, traces=args.traces)
    work = WorkFolder(args.work, work_name(config), fresh=args.fresh)
    print(f"work folder: {work.dir}", flush=True)
    t0 = time.perf_counter()
    records, log = run_ladder(config, args.out, args.rungs, args.fresh, work=work)
    command = "python -m kbvqa.experiments.reag_ladder " + " ".join(argv if argv is not None else sys.argv[1:])
    earlier = json.loads((args.out / "results.json").read_text()) if (args.out / "results.json").exists() else {}
    earlier_prov = earlier.get("provenance", {})    # a resumed run keeps the earlier invocations' log and time
    invocations = earlier_prov.get("invocations", []) + ([{k: earlier_prov.get(k) for k in (
        "git_commit", "date", "command", "wall_seconds")}] if earlier_prov else [])
    results = summarise(records, config=asdict(config), training={**earlier.get("training", {}), **log},
                        provenance=provenance(args.seed, model=role_model("rl_policy"), roles=ladder_models(),
                                              wall_seconds=round(time.perf_counter() - t0, 1),
                                              command=command.strip(), invocations=invocations))
    check_counted_run(args.out, RESULTS_DIR, records, results["provenance"])       # plan.json
    write_results(results, args.out)
    ship_models(work, args.out)
    print_table(results)
    return results


if __name__ == "__main__":
    main()
