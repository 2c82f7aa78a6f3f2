"""Tables and figures of the SeRTS experiments: per-question records -> Tab. 3/4/6/9 analogues.

- ``PAPER_TAB3`` / ``PAPER_TAB4`` / ``PAPER_TAB6`` / ``PAPER_TAB9``: SeRTS's tables transcribed (BioASQ
  Task 11b batch 1, mean of seeds 42-44; percentages; Tab. 9 in total generated tokens).
  ``PAPER_MODEL_OF``: our scripted models stand for GPT-3.5-Turbo (competent parts), the model setup
  for Llama2-7B-Chat (the weaker model); Tab. 6 was run with GPT-3.5 (its C = 0.1 row equals Tab. 4's
  GPT-3.5 SeRTS row), Tab. 9 with Llama2.
- ``summarise(runs)``: per setup and method, the mean over questions for each seed, then mean and
  spread (max - min) over seeds of P, R, F1, hit, ROUGE-2/SU4 recall and F, generated tokens per
  question, and the share of well-formed proposals and parsed scores. ``write_results`` /
  ``load_results`` / ``load_records`` (JSON + CSV + the committed runs), ``table`` (plain rows with
  the paper's numbers for a DataFrame), ``print_tables``.
- ``kbvqa.viz.serts.draw_retrieval`` / ``draw_policies``: figures (ours with the seed spread, next to the paper).
- ``live_agreement(live, committed)``: a live rerun of chunk 0 against the committed records.

Leaves out: running anything (``kbvqa.serts.experiment``, ``python -m kbvqa.experiments.serts_experiment``).
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import committed_for
from kbvqa.metrics.intervals import check_agreement, same_answers
from kbvqa.serts.paper import PAPER_KEY, PAPER_MODEL_OF, PAPER_TAB3, PAPER_TAB4, PAPER_TAB6, PAPER_TAB9

RESULTS_DIR = DATA_DIR / "experiments" / "serts"


@dataclass(frozen=True)
class Method:
    name: str             # record and row name
    label: str            # printed label
    kind: str             # "bm25" | "gold" | "reflection" | "serts"
    sim: int = 0          # Sim of Alg. 1 / 2 (0: no search)
    policy: str = "ucb"   # SeRTS selection (Tab. 6): "ucb" (C = 0.1) | "greedy" (C = 0) | "random"


METHODS = (
    Method("bm25", "BM25 (question as query)", "bm25"),
    Method("ground_truth", "gold abstracts (ceiling)", "gold"),
    Method("reflection_6", "self-reflection (Sim 6)", "reflection", 6),
    Method("serts_6", "SeRTS (Sim 6, MAX UCB)", "serts", 6),
    Method("reflection_12", "self-reflection (Sim 12)", "reflection", 12),
    Method("serts_12", "SeRTS (Sim 12, MAX UCB C = 0.1)", "serts", 12),
    Method("serts_random_12", "SeRTS (Sim 12, RANDOM)", "serts", 12, "random"),
    Method("serts_greedy_12", "SeRTS (Sim 12, MAX UCB C = 0)", "serts", 12, "greedy"),
)


RETRIEVAL_KEYS = ("precision", "recall", "f1", "hit")
ANSWER_KEYS = ("rouge2_r", "rouge2_f", "rougesu4_r", "rougesu4_f")
SEARCH_KEYS = ("generated_tokens", "proposer_calls", "evaluator_calls", "nodes", "stopped_early",
               "well_formed_share", "score_parsed_share")


def _per_question(rec: dict) -> dict:
    out = {k: float(rec[k]) for k in RETRIEVAL_KEYS + ANSWER_KEYS}
    if "nodes" in rec:
        nodes = max(rec["nodes"], 1)
        out.update(generated_tokens=rec["proposer_tokens"] + rec["evaluator_tokens"],
                   proposer_calls=rec["proposer_calls"], evaluator_calls=rec["evaluator_calls"],
                   nodes=rec["nodes"], stopped_early=float(rec["stopped_early"]),
                   well_formed_share=rec["well_formed"] / nodes, score_parsed_share=rec["score_parsed"] / nodes)
    return out


def _paper(name: str, setup: str) -> dict:
    model = PAPER_MODEL_OF[setup]
    t3, t4 = PAPER_TAB3.get(name, {}), PAPER_TAB4.get(name, {})
    t3, t4 = t3.get("any", t3.get(model)), t4.get("any", t4.get(model))
    out = {}
    if t3:
        out.update(zip(("paper_" + k for k in RETRIEVAL_KEYS), t3))
    if t4:
        out.update(zip(("paper_" + k for k in ANSWER_KEYS), t4))
    if setup == "scripted" and name in PAPER_TAB6:
        out.update(zip(("paper_tab6_" + k for k in ANSWER_KEYS), PAPER_TAB6[name]))
    if setup == "model" and name in PAPER_TAB9:
        out["paper_tokens"] = PAPER_TAB9[name]
    return out


def summarise(runs: dict[str, list[dict]], **extra) -> dict:
    """``{setup: records}`` -> per setup, one row per method (``METHODS`` order): n, per-seed means,
    and ``{metric: [mean, spread]}`` over seeds, next to the paper's numbers. ``extra`` is stored."""
    setups = {}
    for setup, records in runs.items():
        if not records:
            raise ValueError(f"setup {setup!r} has no records")
        rows = []
        for m in METHODS:
            mine = [r for r in records if r["method"] == m.name]
            if not mine:
                continue
            seeds = sorted({r["seed"] for r in mine})
            per_seed = []
            for seed in seeds:
                qs = [_per_question(r) for r in mine if r["seed"] == seed]
                per_seed.append({"seed": seed, "n": len(qs), **{k: float(np.mean([q[k] for q in qs])) for k in qs[0]}})
            keys = [k for k in per_seed[0] if k not in ("seed", "n")]
            stats = {k: [round(float(np.mean([s[k] for s in per_seed])), 4),
                         round(float(np.ptp([s[k] for s in per_seed])), 4)] for k in keys}
            rows.append({"method": m.name, "label": m.label, "sim": m.sim, "policy": m.policy,
                         "n": per_seed[0]["n"], "seeds": seeds, **stats, **_paper(m.name, setup),
                         "per_seed": [{k: round(v, 4) if isinstance(v, float) else v for k, v in s.items()}
                                      for s in per_seed]})
        setups[setup] = {"n": rows[0]["n"], "paper_model": PAPER_MODEL_OF[setup], "rows": rows}
    return {"paper_key": PAPER_KEY, "setups": setups, **extra}


def write_results(results: dict, out) -> None:
    """``results.json`` and ``results.csv`` (one line per setup and method, means and spreads)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    keys = RETRIEVAL_KEYS + ANSWER_KEYS + ("generated_tokens",)
    with (out / "results.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["setup", "method", "n", "seeds"] + [f"{k}_{s}" for k in keys for s in ("mean", "spread")])
        for setup, block in results["setups"].items():
            for r in block["rows"]:
                w.writerow([setup, r["method"], r["n"], len(r["seeds"])]
                           + [v for k in keys for v in (r.get(k) or [None, None])])


def load_results(out=None) -> dict:
    return json.loads((Path(out or RESULTS_DIR) / "results.json").read_text())


def load_records(setup: str, out=None) -> list[dict]:
    return read_run(Path(out or RESULTS_DIR) / "runs" / f"{setup}.jsonl")[1]


def _fmt(pair, scale=100.0, digits=1) -> str:
    return "" if pair is None else f"{pair[0] * scale:.{digits}f} ± {pair[1] * scale:.{digits}f}"


def table(results: dict, setup: str, which: str = "tab3") -> list[dict]:
    """Plain rows (ours as "mean ± spread" in %, the paper's beside) for ``tab3``, ``tab4``, ``tab6``, ``tab9``;
    a method the run left out (``--methods``) has no row."""
    names = {"tab3": ("bm25", "reflection_6", "serts_6", "reflection_12", "serts_12"),
             "tab4": ("ground_truth", "bm25", "reflection_6", "serts_6", "reflection_12", "serts_12"),
             "tab6": ("bm25", "reflection_12", "serts_random_12", "serts_greedy_12", "serts_12"),
             "tab9": ("reflection_6", "serts_6", "reflection_12", "serts_12")}
    if which not in names:
        raise ValueError(f"which must be one of {tuple(names)}, got {which!r}")
    rows = {r["method"]: r for r in results["setups"][setup]["rows"]}
    out = []
    for name in names[which]:
        r = rows.get(name)
        if r is None:
            continue
        row = {"method": r["label"]}
        if which == "tab3":
            keys, paper = RETRIEVAL_KEYS, "paper_"
        elif which == "tab9":
            base = rows["reflection_6"]["generated_tokens"][0] if "reflection_6" in rows else None  # a subset run
            row.update({"tokens / question": _fmt(r["generated_tokens"], 1, 0),
                        "vs reflection Sim 6": round(r["generated_tokens"][0] / base, 2) if base else None,
                        "paper total": PAPER_TAB9[name], "paper vs reflection Sim 6":
                        round(PAPER_TAB9[name] / PAPER_TAB9["reflection_6"], 2)})
            out.append(row)
            continue
        else:
            keys, paper = ANSWER_KEYS, "paper_tab6_" if which == "tab6" else "paper_"
        row.update({k: _fmt(r[k]) for k in keys})
        row.update({f"paper {k}": r.get(paper + k) for k in keys})
        out.append(row)
    return out


def print_tables(results: dict) -> None:
    for setup, block in results["setups"].items():
        print(f"\n== {setup} (n = {block['n']}, paper rows: {block['paper_model']})")
        for which in ("tab3", "tab4", "tab6", "tab9"):
            print(f"-- {which}")
            for row in table(results, setup, which):
                print("  " + " | ".join(f"{k}: {v}" for k, v in row.items()))


def live_agreement(live: list[dict], committed: list[dict]) -> list[dict]:
    """Per method of ``live`` records: the live and committed means (same questions and seed) of
    recall and ROUGE-SU4 F, the hit rate's agreement (``kbvqa.metrics.intervals.check_agreement``: the committed
    rate inside the live Wilson interval) and the share of identical abstract sets and answers."""

    out = []
    for method in dict.fromkeys(r["method"] for r in live):
        recs = [r for r in live if r["method"] == method]
        ref = committed_for(recs, committed, key=lambda r: (r["method"], r["seed"], r["id"]),
                            what=f"method {method!r}: ")
        agreement = check_agreement([bool(r["hit"]) for r in recs], float(np.mean([r["hit"] for r in ref])))
        out.append({"method": method, "n": len(recs),
                    "recall live": round(float(np.mean([r["recall"] for r in recs])), 3),
                    "recall committed": round(float(np.mean([r["recall"] for r in ref])), 3),
                    "R-SU4 F live": round(float(np.mean([r["rougesu4_f"] for r in recs])), 3),
                    "R-SU4 F committed": round(float(np.mean([r["rougesu4_f"] for r in ref])), 3),
                    "hit agrees": agreement.agrees,
                    "same abstracts": same_answers([r["docs"] for r in recs], [r["docs"] for r in ref]),
                    "same answers": same_answers([r["answer"] for r in recs], [r["answer"] for r in ref])})
    return out


def read_run(path: Path) -> tuple[dict, list[dict]]:
    lines = Path(path).read_text().splitlines()
    return json.loads(lines[0])["header"], [json.loads(x) for x in lines[1:] if x.strip()]
