"""The runner of ``python -m kbvqa.experiments.rcts_letter_binding`` (see the package docstring).

Every stage is kept in a work folder (``kbvqa.experiments.work``) as soon as it is done: the rows
measured before training, the training checkpoints (every ``checkpoint_every`` steps), the adapter,
the rows after. A rerun with the same plan and model resumes where the last one stopped.

Leaves out: the examples, the gate and the training loop (``kbvqa.rcts.letter_binding``).
"""
from __future__ import annotations

import argparse
import json
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import torch

from kbvqa.config import DATA_DIR
from kbvqa.data import get_world
from kbvqa.experiments.plans import load_plan
from kbvqa.experiments.runs import provenance
from kbvqa.experiments.work import WorkFolder, default_work_root, stage_checkpointing, trained_model, work_fingerprint
from kbvqa.metrics.intervals import wilson_interval
from kbvqa.models.checkpoints import load_vlm, role_model
from kbvqa.rcts.letter_binding import (
    LetterBindingConfig,
    letter_given_rationale,
    same_rule_accuracy,
    same_rule_prompts,
    train_letter_binding,
)

PART = "rcts_letter_binding"
OUT = DATA_DIR / "experiments" / PART
GOAL = 0.9


def config_from_plan(plan: dict) -> LetterBindingConfig:
    """The training config in the plan's ``training`` block."""
    training = dict(plan.get("training", {}))
    if "example_mix" in training:
        training["example_mix"] = tuple(training["example_mix"])
    return LetterBindingConfig(**training)


def _row(work: WorkFolder, name: str, compute) -> dict:
    kept = work.rows(name)
    if kept is not None:
        return kept[0]
    t0 = time.perf_counter()
    value = compute()
    value["seconds"] = round(time.perf_counter() - t0, 1)
    work.save_rows(name, [value])
    print(f"{name}: {value['accuracy']:.3f} (n = {value['n']}, {value['seconds']} s)", flush=True)
    return value


def summary(row: dict) -> dict:
    lo, hi = wilson_interval(sum(r["correct"] for r in row["records"]), row["n"])
    out = {"accuracy": row["accuracy"], "n": row["n"], "interval95": [lo, hi], "seconds": row.get("seconds")}
    if "text_accuracy" in row:
        out["text_accuracy"] = row["text_accuracy"]
    return out


def run(plan: dict, out: Path, work_root: Path, threads: int) -> dict:
    torch.set_num_threads(threads)
    config = config_from_plan(plan)
    world = get_world()
    model = role_model("generator")
    work = WorkFolder(work_root, work_fingerprint({"plan": plan, "model": model}))
    print(f"work folder: {work.dir}", flush=True)
    rows, t0 = {}, time.perf_counter()
    n = plan["n"]
    card_prompts = {when: same_rule_prompts(world, n[f"card_{when}"], config) for when in ("before", "after")}

    def measure(vlm, when: str) -> None:
        rows[f"gate_plain_{when}"] = _row(work, f"gate_plain_{when}", lambda: letter_given_rationale(
            vlm(), world, n[f"gate_plain_{when}"], config))
        rows[f"gate_context_{when}"] = _row(work, f"gate_context_{when}", lambda: letter_given_rationale(
            vlm(), world, n[f"gate_context_{when}"], config, with_context=True))
        rows[f"card_{when}"] = _row(work, f"card_{when}", lambda: same_rule_accuracy(vlm(), card_prompts[when]))

    loaded = {}
    measure(lambda: loaded.setdefault("base", load_vlm("generator")), "before")
    loaded.clear()
    log = work.log()
    kwargs, before = stage_checkpointing(work, "generator")

    def train():
        vlm = load_vlm("generator")
        t = time.perf_counter()
        result = train_letter_binding(vlm, config, world, **kwargs)
        log["generator"] = {"seconds": round(before + time.perf_counter() - t, 1), "loss": result.loss,
                            "steps": result.steps}
        return vlm

    tuned = trained_model(work, "generator", train, lambda: load_vlm("generator"), on_saved=lambda: work.save_log(log),
                          lora=config.lora, freeze_vision=True)
    tuned.model.eval()
    measure(lambda: tuned, "after")
    log = work.log()
    results = {
        "part": out.name, "goal": {"gate": f"letter given a correct rationale >= {GOAL} on mc_kb (issue 52, item 3)"},
        "gate_met": {k: rows[k]["accuracy"] >= GOAL for k in ("gate_plain_after", "gate_context_after")},
        "rows": {k: summary(v) for k, v in rows.items()}, "training": asdict(config),
        "curve": log.get("generator", {}), "records": {k: v["records"] for k, v in rows.items()},
        "provenance": provenance(config.seed, model=model, threads=threads, precision="fp32",
                                 wall_seconds=round(time.perf_counter() - t0, 1),
                                 command=f"python -m kbvqa.experiments.{PART}"
                                         + ("" if out.name == PART else f" --out data/experiments/{out.name}")),
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "models").mkdir(exist_ok=True)
    shutil.copyfile(work.dir / "models" / "generator.pt", out / "models" / "generator.pt")
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    return results


def card_entry(results: dict) -> dict:
    """The adapter's rows for the reader's card (issue 52: "Report mc_3_same_rule_acc with this adapter
    in the card"), beside its fp32 ``evaluation``, which keeps the dataset's letter-first format."""
    rows = results["rows"]
    return {"adapter": f"data/experiments/{results['part']}/models/generator.pt", "role": "generator (RCTS)",
            "format": "plain knowledge base, '<rationale> So the answer is <text>. The answer is X.'",
            "mc_3_same_rule_acc": rows["card_after"]["accuracy"],
            "mc_3_same_rule_acc_without_adapter": rows["card_before"]["accuracy"],
            "mc_3_same_rule_text_acc": rows["card_after"].get("text_accuracy"),
            "letter_given_rationale": rows["gate_plain_after"]["accuracy"],
            "letter_given_rationale_with_context": rows["gate_context_after"]["accuracy"],
            "n": {"mc_3_same_rule": rows["card_after"]["n"], "letter_given_rationale": rows["gate_plain_after"]["n"]},
            "gate_met": all(results["gate_met"].values()), "git_commit": results["provenance"].get("git_commit"),
            "date": results["provenance"].get("date")}


def write_card(results: dict, card_path: Path) -> None:
    """``card["role_adapters"]["rcts_generator"]`` = ``card_entry(results)``; nothing else changes."""
    card = json.loads(card_path.read_text())
    card.setdefault("role_adapters", {})["rcts_generator"] = card_entry(results)
    card_path.write_text(json.dumps(card, indent=1) + "\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(prog=f"python -m kbvqa.experiments.{PART}", description=__doc__)
    parser.add_argument("--out", type=Path, default=OUT, help="folder with plan.json; results.json goes there")
    parser.add_argument("--work", type=Path, default=None, help="work folder root (default: the cache)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--card", type=Path, default=DATA_DIR / "reader" / "card.json",
                        help="the reader's card, given the adapter's rows (role_adapters.rcts_generator)")
    parser.add_argument("--card-only", action="store_true",
                        help="only copy the committed results' rows into the card (no model is loaded)")
    args = parser.parse_args(argv)
    if args.card_only:
        write_card(json.loads((args.out / "results.json").read_text()), args.card)
        return
    plan = load_plan(args.out)
    if plan is None:
        parser.exit(2, f"{args.out / 'plan.json'}: no plan; commit one first (kbvqa.experiments.plans)\n")
    results = run(plan, args.out, args.work or default_work_root(PART), args.threads)
    write_card(results, args.card)
    print(json.dumps({k: v["accuracy"] for k, v in results["rows"].items()}))
