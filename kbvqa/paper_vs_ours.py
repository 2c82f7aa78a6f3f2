"""Paper vs ours (chapter 31): every part's effects, the paper's number beside ours, and the verdict.

An ``Effect`` is one comparison a paper makes ("RCTS beats Vanilla-RAG", "the critic lifts
InfoSeek"): the paper's (baseline, treatment) numbers with their table, ours from the committed
results of the same comparison on the toy world, the interval of our difference, and why ours
differs. ``direction`` calls a difference up / down / flat; ``verdict`` compares the paper's
direction with ours: ``same``, ``opposite`` (ours significant the other way), ``flat`` (ours
indistinguishable from no effect), ``differs`` (the paper's is flat, ours is not).

Our intervals: a paired bootstrap over the same queries where the records allow it (RCTS, ReAG:
``kbvqa.metrics.intervals.paired_bootstrap``); MOLT: the unpaired normal interval of a difference of two
proportions; SeRTS: the seed spread (max - min over the three seeds) of both means, added. The
paper reports no intervals; a paper difference under ``PAPER_FLAT`` points is called flat.

- ``rcts_effects()`` / ``reag_effects()`` / ``serts_effects()`` / ``molt_effects()``: the effects of
  one part, read from ``data/experiments/<part>/``; a missing results file raises ``ValueError``
  naming it. ``all_effects(parts)``, ``effect_rows(effects)`` (plain dicts for a DataFrame),
  ``verdict_counts``, ``kbvqa.viz.effects.draw_effects`` (paper difference against ours, one marker per effect).

The paper numbers live next to each part's loader (``kbvqa.rcts.paper``, ``kbvqa.reag.results``,
``kbvqa.serts.results``, ``kbvqa.molt.results``); this module only pairs them. Leaves out: running anything.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.metrics.intervals import paired_bootstrap
from kbvqa.molt import paper as molt_paper
from kbvqa.rcts import paper as rcts_paper
from kbvqa.rcts.results import read_runs
from kbvqa.reag.results import RUNG_BY_NAME
from kbvqa.serts import paper as serts_paper

__all__ = ["PAPER_FLAT", "PARTS", "Effect", "all_effects", "direction", "effect_rows",
           "molt_effects", "rcts_effects", "reag_effects", "serts_effects", "verdict", "verdict_counts"]

PAPER_FLAT = 0.5          # points: a smaller paper difference counts as flat
PARTS = ("RCTS", "SeRTS", "ReAG", "MOLT")


@dataclass(frozen=True)
class Effect:
    part: str                         # "RCTS", "SeRTS", "ReAG", "MOLT"
    name: str                         # what is compared, treatment vs baseline
    source: str                       # the paper's table / figure
    metric: str                       # what the numbers are (percent unless said)
    paper: tuple[float, float]        # (baseline, treatment), as printed
    ours: tuple[float, float]         # (baseline, treatment), same unit
    ours_interval: tuple[float, float] | None   # 95 % interval of our treatment - baseline
    n: int                            # our queries (or questions x seeds)
    why: str                          # where we differ and why

    @property
    def paper_diff(self) -> float:
        return self.paper[1] - self.paper[0]

    @property
    def ours_diff(self) -> float:
        return self.ours[1] - self.ours[0]


def direction(diff: float, interval: tuple[float, float] | None = None, flat: float = 0.0) -> str:
    """"up" / "down" / "flat": by the interval when given (flat when it holds 0), else by the sign
    of ``diff`` beyond ``flat``."""
    if interval is not None:
        low, high = interval
        return "up" if low > 0 else "down" if high < 0 else "flat"
    return "up" if diff > flat else "down" if diff < -flat else "flat"


def verdict(effect: Effect) -> str:
    paper = direction(effect.paper_diff, flat=PAPER_FLAT)
    ours = direction(effect.ours_diff, effect.ours_interval)
    if ours == paper:
        return "same"
    if ours == "flat":
        return "flat"
    return "differs" if paper == "flat" else "opposite"


def _load(path: Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path} is missing: the part's experiment has not committed its results yet")
    return json.loads(path.read_text())


def _pct(x: float) -> float:
    return round(100 * float(x), 2)


# ------------------------------------------------------------------------------ RCTS
_RCTS_WHY = ("the tiny model answers every multiple-choice question with the same letter (C), so no context "
             "or example changes its answer; the paper's Qwen2-VL reads them")


def rcts_effects(out: Path | None = None) -> list[Effect]:
    """RCTS Tab. 2 (ScienceQA, Qwen2-VL-2B), Tab. 4 (7B) and Tab. 5 on the toy multiple-choice split."""
    out = Path(out or DATA_DIR / "experiments" / "rcts")
    _load(out / "results.json")
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
    effects = []
    for name, source, base, treat, paper in specs:
        if base not in runs or treat not in runs:
            raise ValueError(f"{out / 'runs'} lacks {base!r} or {treat!r}")
        b = {r["id"]: bool(r["correct"]) for r in runs[base]}
        t = {r["id"]: bool(r["correct"]) for r in runs[treat]}
        ids = sorted(set(b) & set(t))
        d = paired_bootstrap([t[i] for i in ids], [b[i] for i in ids])
        effects.append(Effect("RCTS", name, source, "accuracy %", paper,
                              (_pct(sum(b[i] for i in ids) / len(ids)), _pct(sum(t[i] for i in ids) / len(ids))),
                              (_pct(d.low), _pct(d.high)), len(ids), _RCTS_WHY))
    return effects


# ------------------------------------------------------------------------------ ReAG
_REAG_WHY = {
    "coarse": "the paper's generator loses accuracy when 128.6 passages drown the answer; ours answers nothing "
              "with or without them (it reads a fact only from few passages)",
    "coarse_critic": "our critic halves the passages (40 -> 22) but the tiny reader still fails among 22",
    "fine_critic": "the toy query images show one subject, so the crop adds little; the reader is the bottleneck",
    "sft": "150 SFT steps on 1,024 tuples of a 1.4 M-parameter model vs ReAG's SFT of a 3B model",
    "traces": "the cold start lowers the reader's ceiling with the evidence alone (0.39 -> 0.20)",
    "rl": "30 GRPO steps, G = 4; the paper: 128 prompts per step, G = 8, a 3B model",
}


def reag_effects(out: Path | None = None) -> list[Effect]:
    """ReAG Tab. 4 (InfoSeek all, Qwen2.5-VL-3B), one effect per rung against the previous one
    (the committed paired bootstrap), and Fig. 7's passages per query with and without the critic."""

    results = _load(Path(out or DATA_DIR / "experiments" / "reag") / "results.json")
    rows = results["rows"]
    effects = []
    for prev, row in zip(rows, rows[1:]):
        vs = row["vs_previous"]
        effects.append(Effect("ReAG", f"{RUNG_BY_NAME[row['rung']].label} vs {RUNG_BY_NAME[prev['rung']].label}",
                              "Tab. 4 InfoSeek 3B", "accuracy %", (prev["paper_infoseek"], row["paper_infoseek"]),
                              (_pct(prev["accuracy"]), _pct(row["accuracy"])), (_pct(vs["low"]), _pct(vs["high"])),
                              row["n"], _REAG_WHY.get(row["rung"], "")))
    by = {r["rung"]: r for r in rows}
    if "coarse" in by and "coarse_critic" in by:
        effects.append(Effect("ReAG", "passages read: + critic vs coarse", "Fig. 7 (k = 20)", "passages per query",
                              (128.6, 5.7), (by["coarse"]["passages"], by["coarse_critic"]["passages"]), None,
                              by["coarse"]["n"], "same direction, smaller cut: k = 5 pages of 8 passages and a "
                              "150-step tiny critic that keeps P(Yes) > 0.1 on about half"))
    return effects


# ------------------------------------------------------------------------------ SeRTS
def serts_effects(out: Path | None = None) -> list[Effect]:
    """SeRTS Tab. 3 (retrieval F1) and Tab. 6 (ROUGE-2 F1 of the answers), our scripted models
    standing for GPT-3.5 (``kbvqa.serts.results.PAPER_MODEL_OF``)."""
    tab3, tab6 = serts_paper.PAPER_TAB3, serts_paper.PAPER_TAB6
    results = _load(Path(out or DATA_DIR / "experiments" / "serts") / "results.json")
    setup = results["setups"].get("scripted")
    if setup is None:
        raise ValueError("SeRTS results have no 'scripted' setup")
    rows = {r["method"]: r for r in setup["rows"]}
    why = ("scripted proposer and evaluator on the toy literature corpus stand for GPT-3.5; answers are "
           "written by the tiny model (ROUGE against toy ideal answers)")
    specs = [("SeRTS (Sim 12) vs BM25", "Tab. 3 F1, GPT-3.5", "f1", "bm25", "serts_12",
              (tab3["bm25"]["any"][2], tab3["serts_12"]["gpt-3.5"][2])),
             ("SeRTS vs self-reflection (Sim 12)", "Tab. 3 F1, GPT-3.5", "f1", "reflection_12", "serts_12",
              (tab3["reflection_12"]["gpt-3.5"][2], tab3["serts_12"]["gpt-3.5"][2])),
             ("SeRTS vs BM25, answers", "Tab. 6 ROUGE-2 F1", "rouge2_f", "bm25", "serts_12",
              (tab6["bm25"][1], tab6["serts_12"][1])),
             ("MAX UCB vs RANDOM policy, answers", "Tab. 6 ROUGE-2 F1", "rouge2_f", "serts_random_12", "serts_12",
              (tab6["serts_random_12"][1], tab6["serts_12"][1]))]
    effects = []
    for name, source, key, base, treat, paper in specs:
        if base not in rows or treat not in rows:
            continue
        (mb, sb), (mt, st) = rows[base][key], rows[treat][key]
        d, noise = _pct(mt - mb), _pct(sb + st)
        effects.append(Effect("SeRTS", name, source, key.replace("_", " ") + " %", paper, (_pct(mb), _pct(mt)),
                              (round(d - noise, 2), round(d + noise, 2)) if noise > 0 else None,
                              rows[treat]["n"] * len(rows[treat].get("seeds", [0])), why))
    return effects


# ------------------------------------------------------------------------------ MOLT
_SCRIPTED_WHY = ("a scripted comparator that errs with probability 0.1 per round the gold candidate plays: "
                 "the schedule's mechanism without a trained judge")


def molt_effects(out: Path | None = None) -> list[Effect]:
    """MOLT Tab. 5 (evidence selection by stage) and Tab. 6 (schedules) on the toy candidates: the
    tiny judge's rows and, for Tab. 6, the scripted judge with error 0.1 per round."""
    results = _load(Path(out or DATA_DIR / "experiments" / "molt") / "results.json")
    rows = results["rows"]
    why = ("a 1.4 M-parameter judge trained for minutes on the toy world vs Qwen3-VL-4B/8B; "
           "5 candidates as the paper")
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
        b, t = rows[base], rows[treat]
        d = t["accuracy"] - b["accuracy"]
        se = math.sqrt(sum(r["accuracy"] * (1 - r["accuracy"]) / max(r["n"], 1) for r in (b, t)))
        interval = (_pct(d - 1.96 * se), _pct(d + 1.96 * se)) if se > 0 else (_pct(d), _pct(d))
        effects.append(Effect("MOLT", name, source, "evidence-selection accuracy %", paper,
                              (_pct(b["accuracy"]), _pct(t["accuracy"])), interval, t["n"],
                              _SCRIPTED_WHY if base.startswith("scripted") else why))
    return effects


_LOADERS = {"RCTS": rcts_effects, "SeRTS": serts_effects, "ReAG": reag_effects, "MOLT": molt_effects}


def all_effects(parts=PARTS) -> list[Effect]:
    """The effects of ``parts`` (unknown part names raise ``ValueError``)."""
    unknown = [p for p in parts if p not in _LOADERS]
    if unknown:
        raise ValueError(f"unknown parts {unknown}; expected some of {PARTS}")
    return [e for p in parts for e in _LOADERS[p]()]


def effect_rows(effects) -> list[dict]:
    """Plain rows: the paper's numbers, ours, both differences, both directions and the verdict."""
    def fmt(pair):
        return f"{pair[0]:g} → {pair[1]:g}"

    return [{"part": e.part, "effect": e.name, "source": e.source, "metric": e.metric, "paper": fmt(e.paper),
             "ours": fmt(e.ours), "paper Δ": round(e.paper_diff, 2), "ours Δ": round(e.ours_diff, 2),
             "ours 95% interval": "" if e.ours_interval is None
             else f"[{e.ours_interval[0]:g}, {e.ours_interval[1]:g}]",
             "direction (paper / ours)": f"{direction(e.paper_diff, flat=PAPER_FLAT)} / "
             f"{direction(e.ours_diff, e.ours_interval)}", "verdict": verdict(e), "n": e.n, "why": e.why}
            for e in effects]


def verdict_counts(effects) -> dict[str, dict[str, int]]:
    """{part: {verdict: count}}."""
    out: dict[str, dict[str, int]] = {}
    for e in effects:
        counts = out.setdefault(e.part, {})
        counts[verdict(e)] = counts.get(verdict(e), 0) + 1
    return out


