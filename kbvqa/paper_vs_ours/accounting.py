"""The accounting of issue 48, attached to each part's effects: mechanism, comparability, the untrained
reference, the queries the paper's difference would need, and the plan the table ran under.

``account_rcts`` / ``account_reag`` / ``account_molt`` / ``account_serts`` take the effects that
``parts.py`` paired with the paper and the records they came from, and return them with the fields of
``Effect`` that say what a row is worth: ``mechanism`` and ``paper_mechanism`` (``mechanisms.py``,
read from the records), ``comparable`` with ``why_not_comparable`` (the toy world makes a premise
impossible by design), ``reference`` (the untrained rung beside two trained ones), ``n_needed``
(``n_needed_paired`` at ψ = max(our discordant share, |Δ_paper|) for right/wrong rows,
``n_needed_continuous`` with our per-query SD for the others) and ``plan`` / ``plan_status``
(``kbvqa.experiments.plans.plan_status``; ``verify_git`` checks the plan against the commit the run
recorded, which only the command line and the tests do).

Leaves out: pairing numbers (``parts.py``), the diagnostics themselves (``mechanisms.py``).
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from kbvqa.experiments.plans import plan_status
from kbvqa.experiments.runs import read_run
from kbvqa.paper_vs_ours import mechanisms as m
from kbvqa.paper_vs_ours.effect import Effect, n_needed_continuous, n_needed_paired, paired_spread


def _planned(effect: Effect, status: dict) -> dict:
    return {"plan": status["plan"], "plan_status": status["status"]}


def _need_paired(effect: Effect, before: dict | None, after: dict | None, independent: tuple | None = None):
    """``n_needed`` of a right/wrong row: ψ from the paired records, else (``independent``: the two
    accuracies as fractions) the discordant share two independent methods would have."""
    if before and after:
        psi = paired_spread(before, after, scale=1.0)["discordant"]
    elif independent:
        a, b = independent
        psi = a * (1 - b) + b * (1 - a)
    else:
        psi = None
    return n_needed_paired(effect.paper_diff, psi)


def rcts_alpha(out: Path, row: str) -> float:
    """α (Eq. 9) of one RCTS run, from its header (0.2, the paper's ScienceQA weight, for a run without search)."""
    header, _ = read_run(Path(out) / "runs" / f"{row}.jsonl")
    return float(((header or {}).get("fingerprint") or {}).get("rcts", {}).get("alpha", 0.2))


def per_question(records: list[dict], method: str, key: str) -> dict[str, float]:
    """{question id: ``key`` averaged over the seeds} of one SeRTS method."""
    values: dict[str, list[float]] = {}
    for r in records:
        if r.get("method") == method:
            values.setdefault(r["id"], []).append(float(r[key]))
    return {i: sum(v) / len(v) for i, v in values.items()}


def account_rcts(effects: list[Effect], out: Path, results: dict, runs: dict, specs: dict,
                 verify_git: bool = False) -> list[Effect]:
    """RCTS rows (``specs``: effect name -> (baseline row, treatment row)); α per row from its header."""
    alphas = {row: rcts_alpha(out, row) for row in runs}
    texts = results.get("answer_text") or {}
    status = plan_status(out, {k: [r["id"] for r in v] for k, v in runs.items()}, results.get("provenance"), verify_git)
    done = []
    for e in effects:
        base, treat = specs[e.name]
        if treat.startswith("rcts_sweep"):
            low = min((a, row) for row, a in alphas.items() if row.startswith("rcts_sweep"))
            line, paper = m.rcts_alpha_line(runs, low[1], treat, low[0])
        elif treat.startswith("rcts"):
            line, paper = m.rcts_search_line(texts, base, treat, runs, alphas.get(treat, 0.2),
                                             "vanilla_rag_rc" if treat == "rcts" else None)
        else:
            line, paper = m.rcts_letter_line(texts, base, treat, runs)
        b = {r["id"]: bool(r["correct"]) for r in runs[base]}
        t = {r["id"]: bool(r["correct"]) for r in runs[treat]}
        done.append(dataclasses.replace(e, mechanism=line, paper_mechanism=paper,
                                        n_needed=_need_paired(e, b, t), **_planned(e, status)))
    return done


WHY_INVENTED = ("the toy creatures are invented, so a question without retrieval cannot be answered (0 % by "
                "construction); ReAG's premise is a 3B backbone that answers part of InfoSeek from memory and "
                "is drowned by 128.6 retrieved passages")


def account_reag(effects: list[Effect], out: Path, results: dict, records: dict, pairs: dict,
                 verify_git: bool = False) -> list[Effect]:
    """ReAG rows (``pairs``: effect name -> (baseline rung, treatment rung, "accuracy" | "passages"))."""
    rows = {r["rung"]: r for r in results["rows"]}
    oracle = {r["rung"]: r for r in results.get("diagnostics", [])}
    threshold = (results.get("config") or {}).get("threshold", "?")
    untrained = rows.get("fine_critic") or rows.get("coarse_critic")
    reference = m.untrained_reference(untrained["label"], untrained["correct"], untrained["n"]) if untrained else None
    status = plan_status(out, {k: [r["id"] for r in v] for k, v in records.items()}, results.get("provenance"),
                         verify_git)
    trained = {"sft", "traces", "rl"}
    oracle_of = {"traces": "oracle_traces", "rl": "oracle_rl"}
    done = []
    for e in effects:
        base, treat, kind = pairs[e.name]
        b, t = rows[base], rows[treat]
        extra: dict = {}
        if kind == "passages":
            line, paper = m.reag_passages_line(b, t, threshold)
            if records.get(base) and records.get(treat):
                sd = paired_spread({r["id"]: r["passages"] for r in records[base]},
                                   {r["id"]: r["passages"] for r in records[treat]}, scale=1.0)["sd"]
                extra["n_needed"] = n_needed_continuous(e.paper_diff, sd)
        else:
            if treat == "coarse":
                line = (f"evidence in context {b['evidence_in_context']:.0%} -> {t['evidence_in_context']:.0%} of "
                        f"queries; without a passage the reader is right on {b['accuracy']:.0%} of them")
                paper = False
                extra.update(comparable=False, why_not_comparable=WHY_INVENTED)
            elif treat == "coarse_critic":
                line, paper = m.reag_critic_line(b, t, threshold)
            elif treat in trained:
                ref = reference if base in trained else None
                line, paper = m.reag_training_line(b, t, oracle, oracle_of.get(base), oracle_of.get(treat), ref)
                if ref:
                    extra["reference"] = ref
            else:
                line = (f"evidence in context {b['evidence_in_context']:.0%} -> {t['evidence_in_context']:.0%}, "
                        f"passages {b['passages']:.1f} -> {t['passages']:.1f}")
                paper = None
            before = {r["id"]: bool(r["correct"]) for r in records.get(base, [])}
            after = {r["id"]: bool(r["correct"]) for r in records.get(treat, [])}
            extra["n_needed"] = _need_paired(e, before or None, after or None, (b["accuracy"], t["accuracy"]))
        done.append(dataclasses.replace(e, mechanism=line, paper_mechanism=paper, **extra, **_planned(e, status)))
    return done


def account_molt(effects: list[Effect], out: Path, results: dict, records: dict, specs: dict,
                 verify_git: bool = False) -> list[Effect]:
    """MOLT rows (``specs``: effect name -> (baseline row, treatment row))."""
    rows = results["rows"]
    base_row = rows.get("zero_shot_tournament")
    reference = (m.untrained_reference("base tournament", base_row["correct"], base_row["n"])
                 if base_row and "correct" in base_row else None)
    status = plan_status(out, {k: [r["id"] for r in v] for k, v in records.items()}, results.get("provenance"),
                         verify_git)
    trained = ("sft", "grpo")
    done = []
    for e in effects:
        base, treat = specs[e.name]
        extra: dict = {}
        if base.startswith("scripted"):
            line, paper = m.molt_scripted_line(rows, base, treat)
        else:
            line, paper = m.molt_role_line(records, base, treat)
            if base.startswith(trained) and reference:
                extra["reference"] = reference
        before = {r["id"]: bool(r["correct"]) for r in records.get(base, [])}
        after = {r["id"]: bool(r["correct"]) for r in records.get(treat, [])}
        extra["n_needed"] = _need_paired(e, before or None, after or None,
                                         (rows[base]["accuracy"], rows[treat]["accuracy"]))
        done.append(dataclasses.replace(e, mechanism=line, paper_mechanism=paper, **extra, **_planned(e, status)))
    return done


def account_serts(effects: list[Effect], out: Path, results: dict, records: list[dict], specs: dict,
                  verify_git: bool = False) -> list[Effect]:
    """SeRTS rows (``specs``: effect name -> (baseline method, treatment method, metric key))."""
    from kbvqa.serts.analysis import search_diagnostics

    # the per-node diagnostics need each record's recall (the committed runs have it; hand-made ones may not)
    diagnostics = search_diagnostics(records) if records and all("recall" in r for r in records) else {}
    ids: dict[str, dict] = {}
    for r in records:                                 # one id per question, over its seeds
        ids.setdefault(r["method"], {})[r["id"]] = None
    status = plan_status(out, {k: list(v) for k, v in ids.items()}, results.get("provenance"), verify_git)
    done = []
    for e in effects:
        base, treat, key = specs[e.name]
        line, paper = m.serts_line(diagnostics.get(treat), records, base, treat)
        extra = {}
        if records:
            sd = paired_spread(per_question(records, base, key), per_question(records, treat, key))["sd"]
            extra["n_needed"] = n_needed_continuous(e.paper_diff, sd)
        done.append(dataclasses.replace(e, mechanism=line, paper_mechanism=paper, **extra, **_planned(e, status)))
    return done
