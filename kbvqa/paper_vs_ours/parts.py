"""Each paper's effects, read from its committed results in ``data/experiments/<part>/``.

``rcts_effects`` (RCTS Tab. 2, 4, 5), ``serts_effects`` (SeRTS Tab. 3, 6), ``reag_effects`` (ReAG
Tab. 4, Fig. 7), ``molt_effects`` (MOLT Tab. 5, 6) and ``all_effects(parts)``. A missing results
file raises ``ValueError`` naming it. The paper numbers live in each paper package's ``paper.py``;
this module only pairs them with ours, with each row's *why* (ReAG's and SeRTS's here, RCTS's and the
reader-judged MOLT training rows' in ``whys.py``).

Leaves out: running anything (``kbvqa.experiments``), the verdict rules (``effect.py``).
"""
from __future__ import annotations

import math
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.molt import paper as molt_paper
from kbvqa.molt.results import load_records as load_molt_records
from kbvqa.paper_vs_ours.accounting import account_molt, account_rcts, account_reag, account_serts, rcts_alpha
from kbvqa.paper_vs_ours.accounting import per_question as _per_question
from kbvqa.paper_vs_ours.effect import PARTS, Effect, as_percent, evidence_of, load_results, paired_effect
from kbvqa.paper_vs_ours.whys import molt_reader_whys, rcts_whys
from kbvqa.rcts import paper as rcts_paper
from kbvqa.rcts.results import read_runs
from kbvqa.reag.results import RUNG_BY_NAME
from kbvqa.reag.results import load_records as load_reag_records
from kbvqa.serts import paper as serts_paper
from kbvqa.serts.analysis import search_diagnostics
from kbvqa.serts.results import load_records as load_serts_records


# ------------------------------------------------------------------------------ RCTS
def rcts_effects(out: Path | None = None, verify_git: bool = False) -> list[Effect]:
    """RCTS Tab. 2 (ScienceQA, Qwen2-VL-2B), Tab. 4 (7B) and Tab. 5 on the toy multiple-choice split,
    with the accounting of ``accounting.account_rcts``."""
    out = Path(out or DATA_DIR / "experiments" / "rcts")
    results = load_results(out / "results.json")
    runs = read_runs(out)
    tab2 = rcts_paper.PAPER_TAB2["ScienceQA"]["Qwen2-VL-2B"]
    specs = [("Vanilla-RAG vs zero-shot", "Tab. 2 ScienceQA 2B", "zero_shot", "vanilla_rag",
              (tab2["zero_shot"], tab2["vanilla_rag"])),
             ("random ICL vs zero-shot", "Tab. 2 ScienceQA 2B", "zero_shot", "icl_random",
              (tab2["zero_shot"], tab2["icl_random"])),
             ("RCTS vs Vanilla-RAG", "Tab. 2 ScienceQA 2B", "vanilla_rag", "rcts", (tab2["vanilla_rag"], tab2["rcts"])),
             ("+ reasoning context (no MCTS)", "Tab. 4 ScienceQA 7B", "vanilla_rag", "vanilla_rag_rc",
              (rcts_paper.PAPER_TAB4[(False, False)]["ScienceQA"], rcts_paper.PAPER_TAB4[(False, True)]["ScienceQA"])),
             ("+ MCTS-HR (no reasoning context)", "Tab. 4 ScienceQA 7B", "vanilla_rag", "rcts_no_rc",
              (rcts_paper.PAPER_TAB4[(False, False)]["ScienceQA"], rcts_paper.PAPER_TAB4[(True, False)]["ScienceQA"])),
             ("alpha 0.2 vs 1 (Eq. 9)", "Tab. 5 ScienceQA 7B", "rcts_sweep_alpha=1", "rcts_sweep_alpha=0.2",
              (rcts_paper.PAPER_TAB5[1.0]["ScienceQA"], rcts_paper.PAPER_TAB5[0.2]["ScienceQA"]))]
    alphas = {row: rcts_alpha(out, row) for row in runs}
    effects, whys = [], rcts_whys(results, runs, alphas)
    for name, source, base, treat, paper in specs:
        if base not in runs or treat not in runs:
            raise ValueError(f"{out / 'runs'} lacks {base!r} or {treat!r}")
        b = {r["id"]: bool(r["correct"]) for r in runs[base]}
        t = {r["id"]: bool(r["correct"]) for r in runs[treat]}
        before, after, interval, n = paired_effect(b, t)
        why = whys.get(name, "the model's letter does not follow its context (chapter 14's diagnostics)")
        effects.append(Effect("RCTS", name, source, "accuracy %", paper, (before, after), interval, n, why,
                              evidence_of(results.get("provenance"))))
    return account_rcts(effects, out, results, runs, {s[0]: (s[2], s[3]) for s in specs}, verify_git)


# ------------------------------------------------------------------------------ ReAG
def _reag_why(results: dict, who: str) -> dict[str, str]:
    """Why each ReAG step is what it is, from the committed run's own numbers: the rows, the steps
    within each InfoSeek split (``by_split``), the diagnostic rungs and the training log; ``who``
    names the model that made them."""
    rows = {r["rung"]: r for r in results["rows"]}
    split = {(r["split"], r["rung"]): r for r in results.get("by_split", [])}
    oracle = {r["rung"]: r for r in results.get("diagnostics", [])}
    train, config = results.get("training", {}), results.get("config", {})
    why = {}
    if "coarse" in rows and "no_retrieval" in rows:
        why["coarse"] = (f"by design: the toy creatures are invented, so without a passage nothing is known "
                         f"(no retrieval {rows['no_retrieval']['accuracy']:.0%}); ReAG's 3B model falls back on what "
                         f"it memorised of InfoSeek's entities and is drowned by 128.6 passages, {who} reads "
                         f"{rows['coarse']['passages']:.0f} ({rows['coarse']['accuracy']:.0%})")
    seen, new = split.get(("unseen_question", "coarse_critic")), split.get(("unseen_entity", "coarse_critic"))
    if seen and new and "vs_previous" in seen:
        held = train.get("critic_heldout", {})
        auc = (f"; held-out hard-negative AUC {held['before']['hard']:.2f} before training, "
               f"{held['after']['hard']:.2f} after") if held.get("before") and held.get("after") else ""
        why["coarse_critic"] = (f"on creatures the critic trained on it keeps the evidence for "
                                f"{seen['evidence_in_context']:.0%} of queries with {seen['passages']:.1f} passages "
                                f"({seen['vs_previous']['diff']:+.0%} accuracy); on new ones for "
                                f"{new['evidence_in_context']:.0%} ({new['vs_previous']['diff']:+.0%}): it answers "
                                f"for a name it has seen, not for the pictured creature{auc} (chapter 21)"
                                + _kept_gain(rows))
    elif "coarse_critic" in rows and "coarse" in rows:
        why["coarse_critic"] = (f"the critic keeps the evidence for {rows['coarse_critic']['evidence_in_context']:.0%} "
                                f"of queries (coarse retrieval: {rows['coarse']['evidence_in_context']:.0%}) in "
                                f"{rows['coarse_critic']['passages']:.0f} passages (chapter 21)")
    if "fine_critic" in rows and "coarse_critic" in rows:
        why["fine_critic"] = (f"the crop's pages raise the evidence kept from "
                              f"{rows['coarse_critic']['evidence_in_context']:.0%} to "
                              f"{rows['fine_critic']['evidence_in_context']:.0%} of queries; the critic still "
                              "decides what the generator reads")
    if "sft" in train:
        why["sft"] = (f"{train['sft']['steps']} steps of 8 on {config.get('train_examples', '?')} one-passage tuples "
                      f"(LoRA) of {who}, loss {train['sft']['loss_start']} -> {train['sft']['loss_end']}"
                      + _answers_moved(rows, "fine_critic", "sft") + "; ReAG: a full fine-tune of a 3B model")
    if "traces" in rows and "oracle_traces" in oracle and "oracle_zero_shot" in oracle:
        written = train.get("traces", {})
        if config.get("traces") == "model" and written.get("from_model"):
            source = (f"{written['from_model']} of {written['n']} {who}'s own, told each answer (supp. D), "
                      "the rest templated")
        elif config.get("traces") == "model":
            source = (f"the toy world's templates ({who}, told each answer as supp. D says, wrote "
                      f"{written.get('written', 0)} traces that state no relevance; none kept)")
        else:
            source = "the toy world's templates"
        why["traces"] = (f"with the evidence alone the cold start moves {who} from "
                         f"{oracle['oracle_zero_shot']['accuracy']:.0%} to {oracle['oracle_traces']['accuracy']:.0%}; "
                         f"its traces are {source}" + _answers_moved(rows, "sft", "traces"))
    if "rl" in train:
        rl = train["rl"]
        spread = rl.get("curves", {}).get("zero_spread_groups")
        flat = f", groups with no spread {sum(spread) / len(spread):.0%}" if spread else ""
        why["rl"] = (f"{rl['steps']} GRPO steps of {config.get('prompts_per_step', '?')} prompts, G = "
                     f"{config.get('group_size', '?')} (ReAG: 128 prompts, G = 8); accuracy reward "
                     f"{rl['accuracy_reward_first5']} -> {rl['accuracy_reward_last5']}{flat}"
                     + _answers_moved(rows, "traces", "rl"))
    return why


def _kept_gain(rows: dict) -> str:
    """"; where the evidence survives, accuracy a -> b": the noise the critic removes."""
    a, b = (rows.get(r, {}).get("accuracy_with_evidence") for r in ("coarse", "coarse_critic"))
    return "" if a is None or b is None else f"; where the evidence survives, accuracy {a:.0%} -> {b:.0%}"


def _answers_moved(rows: dict, before: str, after: str) -> str:
    """", outputs in the think-then-answer template a -> b, accuracy where the evidence is in context
    c -> d" for two ladder rows (empty for rows without those fields)."""
    a, b = rows.get(before, {}), rows.get(after, {})
    keys = ("format_reward", "accuracy_with_evidence")
    if any(r.get(k) is None for r in (a, b) for k in keys):
        return ""
    return (f", outputs in the think-then-answer template {a['format_reward']:.0%} -> {b['format_reward']:.0%}, "
            f"accuracy where the evidence is in context {a['accuracy_with_evidence']:.0%} -> "
            f"{b['accuracy_with_evidence']:.0%}")


def reag_effects(out: Path | None = None, verify_git: bool = False) -> list[Effect]:
    """ReAG Tab. 4 (InfoSeek all, Qwen2.5-VL-3B), one effect per rung against the previous one
    (the committed paired bootstrap), and Fig. 7's passages per query with and without the critic,
    with the accounting of ``accounting.account_reag``."""
    out = Path(out or DATA_DIR / "experiments" / "reag")
    results = load_results(out / "results.json")
    rows, evidence = results["rows"], evidence_of(results.get("provenance"))
    effects, why = [], _reag_why(results, "the reader" if evidence == "reader" else f"the {evidence} model")
    pairs = {}
    for prev, row in zip(rows, rows[1:]):
        vs = row["vs_previous"]        # the ladder's own paired bootstrap (``kbvqa.reag.results.summarise``)
        name = f"{RUNG_BY_NAME[row['rung']].label} vs {RUNG_BY_NAME[prev['rung']].label}"
        pairs[name] = (prev["rung"], row["rung"], "accuracy")
        effects.append(Effect("ReAG", name,
                              "Tab. 4 InfoSeek 3B", "accuracy %", (prev["paper_infoseek"], row["paper_infoseek"]),
                              (as_percent(prev["accuracy"]), as_percent(row["accuracy"])),
                              (as_percent(vs["low"]), as_percent(vs["high"])),
                              row["n"], why.get(row["rung"], ""), evidence))
    by = {r["rung"]: r for r in rows}
    records = load_reag_records(out) if (out / "runs").is_dir() else {}
    if "coarse" in by and "coarse_critic" in by:
        pairs["passages read: + critic vs coarse"] = ("coarse", "coarse_critic", "passages")
        config, kept = results.get("config", {}), by["coarse_critic"]["passages"] / by["coarse"]["passages"]
        cut = ("same direction, smaller cut: the top 5 pages of 8 passages each (ReAG: 20 pages) and a "
               f"{config.get('critic_steps', '?')}-step critic that keeps P(Yes) > {config.get('threshold', '?')} "
               f"on {kept:.0%} of them")
        if records.get("coarse") and records.get("coarse_critic"):
            before, after, interval, n = paired_effect({r["id"]: r["passages"] for r in records["coarse"]},
                                                       {r["id"]: r["passages"] for r in records["coarse_critic"]},
                                                       scale=1.0)
            effects.append(Effect("ReAG", "passages read: + critic vs coarse", "Fig. 7 (k = 20)",
                                  "passages per query", (128.6, 5.7), (before, after), interval, n, cut, evidence))
        else:
            effects.append(Effect("ReAG", "passages read: + critic vs coarse", "Fig. 7 (k = 20)",
                                  "passages per query", (128.6, 5.7),
                                  (by["coarse"]["passages"], by["coarse_critic"]["passages"]), None,
                                  by["coarse"]["n"], cut, evidence, "none (no per-query records)"))
    return account_reag(effects, out, results, records, pairs, verify_git)


# ------------------------------------------------------------------------------ SeRTS
SERTS_SETUPS = ("model", "scripted")      # the model's search when the model is the reader (or a hub
                                          # checkpoint), else the scripted one: the tiny model's is not used


def _serts_why(records: list[dict], searcher: str) -> str:
    """Why the model's search ends where BM25 started, from its own node records
    (``kbvqa.serts.analysis.search_diagnostics``, chapter 17)."""
    d = search_diagnostics(records).get("serts_12") if records else None
    if not d:
        return f"the {searcher} model proposes and grades the queries on the toy literature corpus (BioASQ)"
    return (f"the {searcher} model proposes and grades the queries: its queries bring a gold abstract that BM25's "
            f"top five missed in {d['nodes_with_new_gold']:.1%} of the search's nodes "
            f"({d['questions_with_new_gold']:.0%} of questions), and its grades do not follow the rubric "
            f"(rank correlation {d['grade_rubric_rho']:+.2f}): "
            "it can neither find nor tell a better set than BM25's (chapter 17)")


def serts_effects(out: Path | None = None, verify_git: bool = False) -> list[Effect]:
    """SeRTS Tab. 3 (retrieval F1) and Tab. 6 (ROUGE-2 F1 of the answers), our scripted models
    standing for GPT-3.5 (``kbvqa.serts.results.PAPER_MODEL_OF``), with the accounting of
    ``accounting.account_serts``."""
    tab3, tab6 = serts_paper.PAPER_TAB3, serts_paper.PAPER_TAB6
    out = Path(out or DATA_DIR / "experiments" / "serts")
    results = load_results(out / "results.json")
    searcher = evidence_of(results.get("provenance"))        # tiny, reader or hub: proposes (model setup), answers
    model_counts = searcher in ("reader", "hub")
    name = next((n for n in SERTS_SETUPS if n in results["setups"] and (n != "model" or model_counts)), None)
    if name is None:
        raise ValueError(f"SeRTS results have none of the setups {SERTS_SETUPS}")
    rows = {r["method"]: r for r in results["setups"][name]["rows"]}
    evidence = evidence_of(results.get("provenance"), scripted=name == "scripted")
    records = load_serts_records(name, out) if (out / "runs" / f"{name}.jsonl").exists() else []
    why = ("scripted proposer and evaluator on the toy literature corpus stand for GPT-3.5; answers are "
           f"written by the {searcher} model (ROUGE against toy ideal answers)") if name == "scripted" else \
        _serts_why(records, searcher)
    specs = [("SeRTS (Sim 12) vs BM25", "Tab. 3 F1, GPT-3.5", "f1", "bm25", "serts_12",
              (tab3["bm25"]["any"][2], tab3["serts_12"]["gpt-3.5"][2])),
             ("SeRTS vs self-reflection (Sim 12)", "Tab. 3 F1, GPT-3.5", "f1", "reflection_12", "serts_12",
              (tab3["reflection_12"]["gpt-3.5"][2], tab3["serts_12"]["gpt-3.5"][2])),
             ("SeRTS vs BM25, answers", "Tab. 6 ROUGE-2 F1", "rouge2_f", "bm25", "serts_12",
              (tab6["bm25"][1], tab6["serts_12"][1])),
             ("MAX UCB vs RANDOM policy, answers", "Tab. 6 ROUGE-2 F1", "rouge2_f", "serts_random_12", "serts_12",
              (tab6["serts_random_12"][1], tab6["serts_12"][1]))]
    effects = []
    for label, source, key, base, treat, paper in specs:
        if base not in rows or treat not in rows:
            continue
        metric = key.replace("_", " ") + " %"
        if records:
            before, after, interval, n = paired_effect(_per_question(records, base, key),
                                                       _per_question(records, treat, key))
            effects.append(Effect("SeRTS", label, source, metric, paper, (before, after), interval, n, why, evidence))
            continue
        (mb, sb), (mt, st) = rows[base][key], rows[treat][key]
        d, noise = as_percent(mt - mb), as_percent(sb + st)
        effects.append(Effect("SeRTS", label, source, metric, paper, (as_percent(mb), as_percent(mt)),
                              (round(d - noise, 2), round(d + noise, 2)) if noise > 0 else None,
                              rows[treat]["n"] * len(rows[treat].get("seeds", [0])), why, evidence,
                              "seed spread of both means, added (no per-query records)"))
    return account_serts(effects, out, results, records, {s[0]: (s[3], s[4], s[2]) for s in specs},
                         verify_git)


# ------------------------------------------------------------------------------ MOLT
_SCRIPTED_WHY = ("a scripted comparator that errs with probability 0.1 per round the gold candidate plays: "
                 "the schedule's mechanism without a trained judge")
# Why a row differs when the reader judges: what chapters 27-28 measure on its records (the effect's name -> why);
# the two training rows' reasons are read from the run (``whys.molt_reader_whys``).
_READER_JUDGE_WHY = {
    "tournament vs one-shot 5-way (base)": "the one-shot answer is the first listed candidate (the retriever's "
    "rank 1), and the one-pass judge keeps the incumbent: the rank-1 gold, entering last, rarely wins (ch. 28)",
    "process reward R_proc (full vs w/o)": "a dozen GRPO steps each (the paper: 500+): too few for the reward's terms "
    "to part (ch. 27)",
    "weak-to-strong vs random schedule": "the judge keeps the incumbent: a schedule that makes a likely gold defend "
    "wins, and role_survival with its measured rates predicts the order (ch. 28)",
    "weak-to-strong vs strong-to-weak": "the judge keeps the incumbent: strong-to-weak makes the rank-1 gold the seed, "
    "which only defends; role_survival with its measured rates predicts the order (ch. 28)",
}


def molt_effects(out: Path | None = None, verify_git: bool = False) -> list[Effect]:
    """MOLT Tab. 5 (evidence selection by stage) and Tab. 6 (schedules) on the toy candidates: the
    tiny judge's rows and, for Tab. 6, the scripted judge with error 0.1 per round, with the accounting
    of ``accounting.account_molt``."""
    out = Path(out or DATA_DIR / "experiments" / "molt")
    results = load_results(out / "results.json")
    rows, evidence = results["rows"], evidence_of(results.get("provenance"))
    records = load_molt_records(out) if (out / "runs.jsonl").exists() else {}
    judge = {"reader": "the reader (SmolLM2-135M with a toy-world vision tower; SFT and GRPO as LoRA adapters)",
             "tiny": "a 1.45M-parameter judge trained for minutes on the toy world"}.get(evidence, "a hub VLM judge")
    why = f"{judge} vs Qwen3-VL-4B/8B; 5 candidates as the paper"
    reasons = {**_READER_JUDGE_WHY, **molt_reader_whys(results, records)} if evidence == "reader" else {}
    specs = [("tournament vs one-shot 5-way (base)", "Tab. 5", "zero_shot_one_shot", "zero_shot_tournament", (0, 1)),
             ("SFT cold start vs base tournament", "Tab. 5", "zero_shot_tournament", "sft_tournament", (1, 2)),
             ("GRPO (full) vs SFT", "Tab. 5", "sft_tournament", "grpo_full_weak_to_strong", (2, 4)),
             ("process reward R_proc (full vs w/o)", "Tab. 5", "grpo_no_proc_tournament", "grpo_full_weak_to_strong",
              (3, 4)),
             ("weak-to-strong vs random schedule", "Tab. 6", "grpo_full_random", "grpo_full_weak_to_strong", None),
             ("weak-to-strong vs strong-to-weak", "Tab. 6", "grpo_full_strong_to_weak", "grpo_full_weak_to_strong",
              None),
             ("weak-to-strong vs random (scripted judge, error 0.1)", "Tab. 6", "scripted_0.1_random",
              "scripted_0.1_weak_to_strong", None),
             ("weak-to-strong vs strong-to-weak (scripted judge, error 0.1)", "Tab. 6", "scripted_0.1_strong_to_weak",
              "scripted_0.1_weak_to_strong", None)]
    effects = []
    for name, source, base, treat, tab5 in specs:
        if base not in rows or treat not in rows:
            continue
        if tab5 is not None:
            paper = (molt_paper.PAPER_TAB5[tab5[0]][2], molt_paper.PAPER_TAB5[tab5[1]][2])
        else:
            other = "strong_to_weak" if base.endswith("strong_to_weak") else "random"
            paper = (molt_paper.PAPER_TAB6[other], molt_paper.PAPER_TAB6["weak_to_strong"])
        scripted = base.startswith("scripted")
        kind = evidence_of(None, scripted=True) if scripted else evidence
        if records.get(base) and records.get(treat):
            before, after, interval, n = paired_effect({r["id"]: bool(r["correct"]) for r in records[base]},
                                                       {r["id"]: bool(r["correct"]) for r in records[treat]})
            effects.append(Effect("MOLT", name, source, "evidence-selection accuracy %", paper, (before, after),
                                  interval, n, _SCRIPTED_WHY if scripted else _why(why, reasons.get(name)), kind))
            continue
        b, t = rows[base], rows[treat]
        d = t["accuracy"] - b["accuracy"]
        se = math.sqrt(sum(r["accuracy"] * (1 - r["accuracy"]) / max(r["n"], 1) for r in (b, t)))
        interval = (as_percent(d - 1.96 * se), as_percent(d + 1.96 * se)) if se > 0 else (as_percent(d), as_percent(d))
        effects.append(Effect("MOLT", name, source, "evidence-selection accuracy %", paper,
                              (as_percent(b["accuracy"]), as_percent(t["accuracy"])), interval, t["n"],
                              _SCRIPTED_WHY if scripted else _why(why, reasons.get(name)), kind,
                              "normal, difference of two proportions (no per-query records)"))
    return account_molt(effects, out, results, records, {s[0]: (s[2], s[3]) for s in specs}, verify_git)


def _why(model: str, measured: str | None) -> str:
    return f"{model}; {measured}" if measured else model


_LOADERS = {"RCTS": rcts_effects, "SeRTS": serts_effects, "ReAG": reag_effects, "MOLT": molt_effects}


def all_effects(parts=PARTS, verify_git: bool = False) -> list[Effect]:
    """The effects of ``parts`` (unknown part names raise ``ValueError``). ``verify_git`` also holds
    each counted table's plan to the commit its run recorded (``kbvqa.experiments.plans.plan_status``):
    the command line and the tests do, the chapter (a wheel without git in Colab) does not."""
    unknown = [p for p in parts if p not in _LOADERS]
    if unknown:
        raise ValueError(f"unknown parts {unknown}; expected some of {PARTS}")
    return [e for p in parts for e in _LOADERS[p](verify_git=verify_git)]
