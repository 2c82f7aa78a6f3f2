"""What produced each difference: one diagnostic per effect, computed from the committed records.

A row reproduces a paper only when its difference comes from the paper's mechanism, so every row
carries a one-line ``mechanism`` read from its records and ``paper_mechanism``, whether that
diagnostic shows the paper's mechanism at work (issue 48). Each function returns
``(line, paper_mechanism)``; the rule behind the boolean is in its docstring.

- RCTS (``rcts_*``): the scored letter's spread against the answer text the rationale names
  (``letter_spread``), and for the search rows the share of leaves whose reward exceeds α, the
  leaves where the mutual reward Q_M (Eq. 8) is certainly > 0 (``mutual_alive``).
- ReAG (``reag_*``): evidence kept by the critic's cut, accuracy given the evidence, evidence-alone
  accuracy before and after training; ``untrained_reference`` is the untrained rung beside trained ones.
- MOLT (``molt_*``): how often the gold wins the rounds it enters as challenger against those it
  defends (``gold_roles``), and how often the one-shot answer is the retriever's rank 1.
- SeRTS (``serts_line``): nodes whose query found a gold abstract BM25 missed, and the grades'
  rank correlation with the rubric (``kbvqa.serts.analysis.search_diagnostics``).

Leaves out: the rows themselves (``parts.py``), the verdicts (``effect.py``).
"""
from __future__ import annotations

from collections import Counter

from kbvqa.metrics.intervals import wilson_interval

ROLE_FREE = 0.10          # a judge is role-free when the defender wins 50 % ± this of its rounds


# ------------------------------------------------------------------------------ RCTS
def letter_spread(records: list[dict]) -> tuple[str, float]:
    """(the most common scored letter, its share) of one RCTS row's records."""
    letters = Counter(str(r.get("pred")) for r in records)
    if not letters:
        return "none", 0.0
    letter, count = letters.most_common(1)[0]
    return letter, count / len(records)


def mutual_alive(records: list[dict], alpha: float) -> dict:
    """``{"leaves", "above_alpha", "share"}``: simulated leaves (each rollout's ``[letter, reward]``) and
    those whose reward R = α Q_S + (1 − α) Q_M (Eq. 9) exceeds α. Q_S ≤ 1, so R > α only when Q_M > 0:
    a share of 0 means the search ran on the self-consistency reward alone (the paper's α = 1)."""
    rewards = [float(leaf[1]) for r in records for leaf in (r.get("rollouts") or []) if len(leaf) > 1]
    above = sum(x > alpha + 1e-9 for x in rewards)
    return {"leaves": len(rewards), "above_alpha": above, "share": above / len(rewards) if rewards else None}


def rcts_letter_line(texts: dict, base: str, treat: str, runs: dict) -> tuple[str, bool | None]:
    """Scored letter vs named text for a row without search. The paper's mechanism (examples make the
    VLM answer better) shows when the scored letter follows the text: True when the treatment's text
    accuracy rises and its letter matches its text on at least half the queries."""
    b, t = texts.get(base) or {}, texts.get(treat) or {}
    if not (b and t and runs.get(base) and runs.get(treat)):
        return "no letter-vs-text diagnostic in the results", None
    lb, sb = letter_spread(runs[base])
    lt, st = letter_spread(runs[treat])
    line = (f"answer text its rationale names right {b['text_accuracy']:.0%} -> {t['text_accuracy']:.0%}, "
            f"scored letter right {b['letter_accuracy']:.0%} -> {t['letter_accuracy']:.0%} "
            f"(most common letter {lb} {sb:.0%} -> {lt} {st:.0%}; "
            f"letter holds the text {t['text_matches_letter']:.0%})")
    return line, bool(t["text_accuracy"] > b["text_accuracy"] and t["text_matches_letter"] >= 0.5)


def rcts_search_line(texts: dict, base: str, treat: str, runs: dict, alpha: float,
                     reference_text: str | None = None) -> tuple[str, bool | None]:
    """The search rows. The paper's mechanism is a search steered by Q_S *and* Q_M toward better
    examples: True when Q_M > 0 on some leaves and the final responses' answer text beats the
    ``reference_text`` row's (the same examples' answer without the search; ``base`` when not given)."""
    alive = mutual_alive(runs.get(treat, []), alpha)
    if not alive["leaves"]:
        return "no simulated leaves recorded", None
    t, ref = texts.get(treat) or {}, texts.get(reference_text or base) or {}
    text = (f"; final responses' answer text right {t['text_accuracy']:.0%} vs {ref['text_accuracy']:.0%} "
            f"without the search ({reference_text or base}), letter holds the text {t['text_matches_letter']:.0%}"
            if t and ref else "")
    verdict = "Q_S re-answer repairs letters" if alive["share"] == 0 else "Q_S and Q_M both steer the search"
    line = (f"{verdict}: leaf reward > α (Q_M > 0) on {alive['above_alpha']} of {alive['leaves']} leaves "
            f"({alive['share']:.0%}){text}")
    better = bool(t and ref and t["text_accuracy"] > ref["text_accuracy"])
    return line, bool(alive["share"] > 0 and better)


def rcts_alpha_line(runs: dict, low: str, high: str, alpha_low: float) -> tuple[str, bool | None]:
    """Eq. 9's α ends. The paper's mechanism is the mutual reward's weight: True only when Q_M > 0 on
    some leaves of the α < 1 end (else the two ends differ only in the reward's scale against c)."""
    alive = mutual_alive(runs.get(low, []), alpha_low)
    if not alive["leaves"]:
        return "no simulated leaves recorded", None
    line = (f"α = {alpha_low:g}: leaf reward > α (Q_M > 0) on {alive['above_alpha']} of {alive['leaves']} leaves "
            f"({alive['share']:.0%})" + (": both ends rank leaves by Q_S alone, at scales α and 1"
                                         if alive["share"] == 0 else ""))
    return line, bool(alive["share"] > 0)


# ------------------------------------------------------------------------------ ReAG and MOLT's trained rungs
def untrained_reference(label: str, correct: int, n: int) -> dict:
    """The untrained rung shown beside a trained-vs-trained row: label, accuracy, Wilson interval, n."""
    low, high = wilson_interval(int(correct), int(n))
    return {"label": f"{label} (untrained)", "accuracy": round(correct / n, 4), "low": round(low, 4),
            "high": round(high, 4), "n": int(n)}


def reag_critic_line(coarse: dict, critic: dict, threshold) -> tuple[str, bool]:
    """The critic's cut. ReAG's mechanism: it removes noise and keeps the evidence, so accuracy rises.
    True when it keeps the evidence for >= 90 % of the queries that had it and accuracy given the
    evidence rises."""
    kept = critic["evidence_in_context"] / coarse["evidence_in_context"] if coarse["evidence_in_context"] else 0.0
    line = (f"threshold cut (P(Yes) > {threshold}): passages {coarse['passages']:.1f} -> "
            f"{critic['passages']:.1f}, evidence in context {coarse['evidence_in_context']:.0%} -> "
            f"{critic['evidence_in_context']:.0%} of queries "
            f"(kept {kept:.0%}); accuracy given the evidence "
            f"{coarse['accuracy_with_evidence']:.0%} -> {critic['accuracy_with_evidence']:.0%}")
    return line, bool(kept >= 0.9 and critic["accuracy_with_evidence"] > coarse["accuracy_with_evidence"])


def reag_training_line(before: dict, after: dict, oracle: dict, oracle_before: str | None, oracle_after: str | None,
                       reference: dict | None) -> tuple[str, bool]:
    """A training rung. ReAG's mechanism: training makes the generator read its passages better. True
    when accuracy given the evidence rises, evidence-alone accuracy does not fall by more than 5 points
    from the untrained reader's, and the rung is at or above the untrained rung (``reference``)."""
    line = (f"accuracy given the evidence {before['accuracy_with_evidence']:.0%} -> "
            f"{after['accuracy_with_evidence']:.0%}, "
            f"think-then-answer format {before['format_reward']:.0%} -> {after['format_reward']:.0%}")
    ok = after["accuracy_with_evidence"] > before["accuracy_with_evidence"]
    zero = oracle.get("oracle_zero_shot")
    if oracle_after and oracle.get(oracle_after) and zero:
        was = oracle[oracle_before]["accuracy"] if oracle_before and oracle.get(oracle_before) else zero["accuracy"]
        now = oracle[oracle_after]["accuracy"]
        line += f"; evidence alone {was:.1%} -> {now:.1%} (untrained {zero['accuracy']:.1%})"
        ok = ok and now >= zero["accuracy"] - 0.05
    if reference:
        line += f"; the rung {after['accuracy']:.1%} vs the untrained rung {reference['accuracy']:.1%}"
        ok = ok and after["accuracy"] >= reference["accuracy"]
    return line, bool(ok)


def reag_passages_line(coarse: dict, critic: dict, threshold) -> tuple[str, bool]:
    """Fig. 7's passages read: the paper's mechanism is the critic's filter itself, so True whenever
    the critic reads fewer passages (any threshold does: the row is sound but mechanical)."""
    line = (f"threshold cut (P(Yes) > {threshold}): {coarse['passages']:.1f} -> {critic['passages']:.1f} passages per "
            f"query; evidence kept for {critic['evidence_in_context']:.0%} of queries")
    return line, bool(critic["passages"] < coarse["passages"])


# ------------------------------------------------------------------------------ MOLT
def gold_roles(records: list[dict], order: str) -> dict | None:
    """``{"challenger": (won, played), "defender": (won, played)}``: the gold's rounds on consistent
    chains (``kbvqa.molt.analysis.gold_win_rates``), summed over entry positions; ``None`` for a
    schedule drawn per query (``random``), whose roles the records do not fix."""
    from kbvqa.molt.analysis import gold_win_rates

    if order not in ("weak_to_strong", "strong_to_weak") or not records or "chain_valid" not in records[0]:
        return None
    rates = gold_win_rates(records, order)
    challenger = [sum(v[0] for v in rates["challenger"].values()), sum(v[1] for v in rates["challenger"].values())]
    return {"challenger": tuple(challenger), "defender": tuple(rates["defender"])}


def _rate(pair) -> float | None:
    return pair[0] / pair[1] if pair[1] else None


def molt_role_line(records: dict, base: str, treat: str) -> tuple[str, bool | None]:
    """A judge row. MOLT's mechanism needs a judge that reads the candidates, whose error does not
    depend on the gold's side: True when the treatment's gold wins as challenger and as defender at
    rates within ``ROLE_FREE`` of each other (the gate of the MOLT issue)."""
    parts, role_free = [], None
    for row in (base, treat):
        recs = records.get(row) or []
        if row.endswith("one_shot"):
            if not recs or "gold_rank" not in recs[0]:
                continue
            as_rank1 = sum(bool(r["correct"]) == (r["gold_rank"] == 1) for r in recs)
            share = as_rank1 / max(len(recs), 1)
            parts.append(f"one-shot answers as if it picked the retriever's rank 1 on {share:.0%}")
            continue
        roles = gold_roles(recs, "strong_to_weak" if row.endswith("strong_to_weak") else
                           "random" if row.endswith("random") else "weak_to_strong")
        if roles is None or None in (_rate(roles["challenger"]), _rate(roles["defender"])):
            continue
        c, d = _rate(roles["challenger"]), _rate(roles["defender"])
        parts.append(f"{row}: the gold wins {c:.0%} of {roles['challenger'][1]} rounds it enters as challenger, "
                     f"{d:.0%} of {roles['defender'][1]} it defends")
        if row == treat:
            role_free = abs(c - d) <= ROLE_FREE
    if not parts:
        return "no round records", None
    line = "; ".join(parts) + ("" if role_free is None else
                               " (a judge that keeps the incumbent)" if not role_free else " (role-free)")
    return line, role_free


def molt_scripted_line(rows: dict, base: str, treat: str) -> tuple[str, bool]:
    """The scripted judge errs with the same probability whatever the gold's role, so the schedule's
    mechanism (a likely gold plays fewer rounds) is all that moves it: True when its process reward
    (rounds the gold survives, Eq. 10) and accuracy both order the schedules as the paper."""
    b, t = rows[base], rows[treat]
    line = (f"scripted comparator, error 0.1 in every round the gold plays, either side; accuracy "
            f"{b['accuracy']:.1%} -> {t['accuracy']:.1%} over {t['n']} queries")
    return line, bool(t["accuracy"] > b["accuracy"])


# ------------------------------------------------------------------------------ SeRTS
def serts_line(diagnostics: dict | None, records: list[dict], base: str, treat: str) -> tuple[str, bool | None]:
    """SeRTS's mechanism: the search finds queries that retrieve gold BM25 missed, and the grades follow
    the rubric. True when such a query appears for >= 10 % of questions and ρ(grade, rubric) >= 0.3."""
    if not diagnostics:
        return "no per-node search records", None
    sizes = {}
    for method in (base, treat):
        sets = [len(r["docs"]) for r in records if r.get("method") == method and isinstance(r.get("docs"), list)]
        if sets:
            sizes[method] = sum(sets) / len(sets)
    rho = diagnostics.get("grade_rubric_rho")
    line = (f"queries found a gold abstract BM25's top 5 missed in {diagnostics['nodes_with_new_gold']:.1%} of "
            f"{diagnostics['nodes']} nodes ({diagnostics['questions_with_new_gold']:.0%} of questions); "
            f"grade-rubric rank correlation {'n/a' if rho is None else f'{rho:+.2f}'}")
    if len(sizes) == 2:
        line += f"; abstracts returned {sizes[base]:.2f} ({base}) vs {sizes[treat]:.2f} ({treat})"
    return line, bool(diagnostics["questions_with_new_gold"] >= 0.1 and rho is not None and rho >= 0.3)
