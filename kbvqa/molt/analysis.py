"""Small helpers of the MOLT chapters 25-26: recall curves, a comparator posing as a model, and the
exact effect of the schedule on a noisy comparator.

- ``PAPER_RECALL``: MOLT Tab. 2 (E-VQA) and Tab. 3 (InfoSeek), R@1/5/10/20 in %, the rows the
  chapters set next to ours ("Ours (Doc sel.)" = the candidate pipeline, "Ours (+MOLT)" = after the
  tournament, OMGM the strongest baseline).
- ``recall_curves(queries, sets, ks)``: Recall@K of the gold document (hit@K: a toy query has one
  gold page) after the coarse stage (Eq. 12) and after the fusion stage (Eq. 13), and of the gold
  passage among the extracted passages, from ``CandidateSet``s whose fused list was kept long
  (``CandidateConfig(n=k)``), so every K <= n can be read off one run.
- ``gold_ranks(queries, sets)``: the 1-based rank of the gold page per query and stage (None: missed).
- ``ComparatorVLM(candidates, compare)``: anything with ``compare(first, second) -> (winner id,
  think)`` (e.g. ``kbvqa.molt.sft.oracle_teacher``) behind the ``generate`` interface, so that the
  package's ``run_one_pass`` / ``run_iterative`` / ``run_one_shot`` can be driven by a perfect
  comparator: it reads the candidate ids (Tables 12/14) or paragraphs (Table 17) from each prompt
  and answers in that prompt's format (the one-pass answer plays Eq. 6-7 over the listed ids).
- ``rounds_played(schedule, gold)`` and ``ladder_survival(rank_probs, eps, order)``: how many
  comparisons the ground truth must win under a schedule, and the exact probability that it is the
  final evidence when every comparison it plays goes wrong with probability ``eps`` (the toy model
  of §3.1's "error accumulation" argument for weak-to-strong).
- ``comparison_error(records, order)``: a model judge's ``eps`` measured from its one-pass records,
  and the accuracy ``ladder_survival`` predicts from it next to the observed one.
- ``role_survival(rank_probs, challenger_win, defender_win, order)``: ``ladder_survival`` for a judge
  whose verdicts depend on the ground truth's side of the pair (the rates ``gold_win_rates`` measures).
- ``gold_win_rates(records, order)``: the same records split by the ground truth's role -- the
  challenger in the round it enters (per round) or the defender of every later round -- which shows
  a judge that keeps the incumbent; ``defender_win_share(transcripts)``: how often the defender wins
  in transcripts (e.g. a cold start's training set), the prior such a judge may have learnt;
  ``role_gate(records)``: issue 54's gate on those rates (challenger minus defender, with a bootstrap
  interval): does the judge read the candidates or keep the incumbent?

Leaves out: running the pipeline and loading the committed full-split recall (``kbvqa.molt.candidates``),
the full-split experiment's runner (``kbvqa.experiments.molt_candidates``), rewards and training.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from kbvqa.molt.ladder import ORDERS, Candidate, ladder_schedule, listing_order
from kbvqa.molt.run import transcript_text
from kbvqa.parsers import TournamentRound

__all__ = ["ComparatorVLM", "comparison_error", "defender_win_share", "gold_ranks", "gold_win_rates", "ladder_survival",
           "recall_curves", "role_gate", "role_survival", "rounds_played"]

STAGES = ("coarse", "fused", "passage")


def _check_ks(ks: Sequence[int]) -> list[int]:
    ks = list(ks)
    if not ks or any(not isinstance(k, int) or isinstance(k, bool) or k < 1 for k in ks):
        raise ValueError(f"ks must be positive ints, got {ks}")
    return ks


def gold_ranks(queries: Sequence, sets: Sequence) -> dict[str, list[int | None]]:
    """1-based rank of the gold page per query after the coarse and fusion stages, and of the gold
    passage among the candidates (None when it is missing)."""
    if len(queries) != len(sets):
        raise ValueError(f"{len(queries)} queries but {len(sets)} candidate sets")

    def rank(ids, gold):
        return next((i + 1 for i, d in enumerate(ids) if d in gold), None)

    out = {stage: [] for stage in STAGES}
    for q, s in zip(queries, sets):
        gold_docs, gold_passages = set(q.gold_doc_ids), set(q.evidence_ids)
        out["coarse"].append(rank([d for d, _ in s.coarse], gold_docs))
        out["fused"].append(rank([d for d, _ in s.fused], gold_docs))
        out["passage"].append(rank([c.passage_id for c in s.candidates], gold_passages))
    return out


def recall_curves(queries: Sequence, sets: Sequence, ks: Sequence[int] = (1, 5, 10, 20)) -> dict[str, list[float]]:
    """Recall@K per stage (``STAGES``) for each K in ``ks``: the share of queries whose gold is
    within the stage's first K. A K longer than a stage's list counts the whole list."""
    ks = _check_ks(ks)
    ranks = gold_ranks(queries, sets)
    n = max(1, len(queries))
    return {stage: [sum(r is not None and r <= k for r in ranks[stage]) / n for k in ks] for stage in STAGES}


# ------------------------------------------------------------------------------ comparator model
_LISTED_ID = re.compile(r"\[([^\]\n]+)\] Image:")
_ONE_SHOT = re.compile(r"^\s*([1-5])\) Image:", re.MULTILINE)
_PARAGRAPH = re.compile(r"Paragraph: (.*)")


def _chat_text(chat) -> str:
    return "\n".join(p.get("text", "") for m in chat for p in m["content"] if p["type"] == "text")


class ComparatorVLM:
    """A stand-in model that answers MOLT's three prompts with ``compare`` (see the module doc).

    ``calls`` counts generate calls, ``comparisons`` the comparator's decisions."""

    def __init__(self, candidates: Sequence[Candidate], compare: Callable[[Candidate, Candidate], tuple[str, str]]):
        self.by_id = {c.id: c for c in candidates}
        self.by_text = {c.text: c for c in candidates}
        self.compare, self.calls, self.comparisons = compare, 0, 0

    def _select(self, first: Candidate, second: Candidate) -> tuple[str, str]:
        self.comparisons += 1
        winner, think = self.compare(first, second)
        return (winner if winner in (first.id, second.id) else first.id), think

    def _ladder(self, schedule: Sequence[str]) -> tuple[list[TournamentRound], str]:
        """Eq. 6-7: w_1 = schedule[0]; w_{t+1} = Select(w_t, schedule[t])."""
        rounds, winner = [], schedule[0]
        for challenger in schedule[1:]:
            new, think = self._select(self.by_id[winner], self.by_id[challenger])
            rounds.append(TournamentRound((winner, challenger), think, new, True))
            winner = new
        return rounds, winner

    def _answer(self, chat) -> str:
        text = _chat_text(chat)
        if _ONE_SHOT.search(text):                          # Table 17: answer a position 1-5
            listed = [self.by_text.get(p.strip()) for p in _PARAGRAPH.findall(text)]
            if not listed or any(c is None for c in listed):
                return ""
            _, best = self._ladder(listing_order([c.id for c in listed]))
            return str(1 + [c.id for c in listed].index(best))
        ids = [i for i in _LISTED_ID.findall(text) if i in self.by_id]
        if len(ids) < 2:
            return ""
        if "<evidence>" in text:                            # Table 14: the whole ladder, one pass
            rounds, best = self._ladder(listing_order(ids))
            return transcript_text(rounds, best)
        winner, think = self._select(self.by_id[ids[0]], self.by_id[ids[1]])   # Table 12: one pair
        return f"<think>{think}</think><winner>[{winner}]</winner>"

    def generate(self, prompts, n: int = 1, **_) -> list[list[str]]:
        self.calls += 1
        return [[self._answer(chat)] * n for chat in prompts]


# ------------------------------------------------------------------------------ schedules
def rounds_played(schedule: Sequence[str], gold: str) -> int:
    """Comparisons the ground truth must win to be the final evidence: N - 1 for the seed
    (schedule[0]), else N - p for the challenger of round p (it defends every later round)."""
    schedule = [str(s) for s in schedule]
    if len(schedule) < 2:
        raise ValueError(f"a ladder tournament needs N >= 2 candidates, got {len(schedule)}")
    if str(gold) not in schedule:
        raise ValueError(f"gold id {gold!r} is not in the schedule {schedule}")
    position = schedule.index(str(gold))
    return len(schedule) - 1 if position == 0 else len(schedule) - position


def ladder_survival(rank_probs: Sequence[float], eps: float, order: str = "weak_to_strong") -> float:
    """P(the final evidence is the ground truth) when the ground truth sits at retrieval rank r
    (1 = strongest) with probability ``rank_probs[r - 1]`` (their sum may be < 1: the gold missed
    the top N) and loses each comparison it plays with probability ``eps``. ``"random"`` averages
    over the N positions a uniformly shuffled gold can take (exact)."""
    n = len(rank_probs)
    if n < 2:
        raise ValueError(f"a ladder tournament needs N >= 2 candidates, got {n}")
    if not 0.0 <= eps <= 1.0:
        raise ValueError(f"eps must be in [0, 1], got {eps}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    ids = [str(r) for r in range(1, n + 1)]                 # "1" strongest ... "n" weakest
    if order == "random":
        per_position = [(1 - eps) ** (n - 1 if p == 0 else n - p) for p in range(n)]
        return sum(rank_probs) * sum(per_position) / n
    schedule = ladder_schedule(ids, order)
    return sum(p * (1 - eps) ** rounds_played(schedule, gold) for p, gold in zip(rank_probs, ids))


def role_survival(rank_probs: Sequence[float], challenger_win, defender_win: float,
                  order: str = "weak_to_strong") -> float:
    """``ladder_survival`` for a judge whose verdicts depend on the ground truth's side of the pair:
    it wins the round it enters as the challenger with probability ``challenger_win`` (one float, or
    one per round ``{p: probability}`` for p = 1 .. N - 1, e.g. ``gold_win_rates``' shares) and every
    round it defends (the seed's rounds included) with ``defender_win``. A ground truth at position p
    of the schedule is the evidence with probability ``challenger_win[p] * defender_win ** (N - 1 - p)``,
    the seed with ``defender_win ** (N - 1)``. Equal to ``ladder_survival(rank_probs, 1 - w, order)``
    when both are ``w``."""
    n = len(rank_probs)
    if n < 2:
        raise ValueError(f"a ladder tournament needs N >= 2 candidates, got {n}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    rounds = range(1, n)
    wins = {p: challenger_win for p in rounds} if isinstance(challenger_win, (int, float)) else dict(challenger_win)
    if set(wins) != set(rounds):
        raise ValueError(f"challenger_win needs one probability per round 1..{n - 1}, got rounds {sorted(wins)}")
    if not all(0.0 <= w <= 1.0 for w in [*wins.values(), defender_win]):
        raise ValueError("win probabilities must be in [0, 1]")
    per_position = [defender_win ** (n - 1)] + [wins[p] * defender_win ** (n - 1 - p) for p in rounds]
    if order == "random":
        return sum(rank_probs) * sum(per_position) / n
    schedule = ladder_schedule([str(r) for r in range(1, n + 1)], order)
    return sum(prob * per_position[schedule.index(str(r))] for r, prob in zip(range(1, n + 1), rank_probs))


def comparison_error(records: Sequence[dict], order: str = "weak_to_strong", n: int = 5) -> dict:
    """A judge's error per comparison the ground truth plays, measured from its one-pass records
    (``kbvqa.molt.experiment.evaluate_one_pass``: ``gold_rank``, ``gt_rounds`` = rounds it played
    and won, ``chain_valid``, ``correct``) under a deterministic ``order``, and what it predicts.

    On a consistent chain the ground truth plays from the round it enters until it loses, so it lost
    exactly once when it won fewer rounds than its rank needs (``rounds_played``), else never:
    ``eps = lost / played`` over the records with a consistent chain. ``predicted`` is
    ``ladder_survival`` at that ``eps`` with the records' gold-rank shares: the accuracy of a judge
    that keeps every chain and errs alike at every rank; ``observed`` is the records' accuracy. The
    gap between them is what broken chains and rank-dependent errors cost. ``eps`` and ``predicted``
    are None when no record has a consistent chain; ``"random"`` raises ``ValueError`` (a record
    does not say where the shuffle put the ground truth)."""
    if order not in ("weak_to_strong", "strong_to_weak"):
        raise ValueError(f"order must be 'weak_to_strong' or 'strong_to_weak' (the gold's rounds follow its rank), "
                         f"got {order!r}")
    records = list(records)
    if not records:
        raise ValueError("no records")
    schedule = ladder_schedule([str(r) for r in range(1, n + 1)], order)
    played = lost = consistent = 0
    for rec in records:
        rank = rec["gold_rank"]
        if not (isinstance(rank, int) and 1 <= rank <= n):
            raise ValueError(f"gold_rank must be in 1..{n}, got {rank!r}")
        if not rec["chain_valid"]:
            continue
        needed = rounds_played(schedule, str(rank))
        wins = min(int(rec["gt_rounds"]), needed)
        consistent += 1
        lost += wins < needed
        played += wins + (wins < needed)
    shares = [sum(r["gold_rank"] == k for r in records) / len(records) for k in range(1, n + 1)]
    eps = lost / played if played else None
    return {"records": len(records), "consistent": consistent, "played": played, "lost": lost, "eps": eps,
            "predicted": ladder_survival(shares, eps, order) if eps is not None else None,
            "observed": sum(bool(r["correct"]) for r in records) / len(records)}


def gold_win_rates(records: Sequence[dict], order: str = "weak_to_strong", n: int = 5) -> dict:
    """Where a judge loses the ground truth, from the one-pass records ``comparison_error`` reads.

    On a consistent chain the ground truth enters as round p's challenger (its position p in the
    schedule; the seed, p = 0, defends from round 1) and, once it has won, defends every later round.
    Returns ``{"challenger": {p: [won, played]}, "defender": [won, played], "broken": [correct, n]}``:
    the challenger's wins in the round it enters, per round; the defender's wins over all rounds it
    defended; and the records whose chain broke (not counted above) with how many still ended on the
    ground truth. A judge that mostly keeps the incumbent shows challenger rates far below defender."""
    if order not in ("weak_to_strong", "strong_to_weak"):
        raise ValueError(f"order must be 'weak_to_strong' or 'strong_to_weak', got {order!r}")
    schedule = ladder_schedule([str(r) for r in range(1, n + 1)], order)
    challenger, defender, broken = {}, [0, 0], [0, 0]
    for rec in records:
        rank = rec["gold_rank"]
        if not (isinstance(rank, int) and 1 <= rank <= n):
            raise ValueError(f"gold_rank must be in 1..{n}, got {rank!r}")
        if not rec["chain_valid"]:
            broken[0] += bool(rec["correct"])
            broken[1] += 1
            continue
        position, needed = schedule.index(str(rank)), rounds_played(schedule, str(rank))
        wins = min(int(rec["gt_rounds"]), needed)
        defended = wins
        if position > 0:                       # round ``position``: it enters as the challenger
            won_entry = challenger.setdefault(position, [0, 0])
            won_entry[0] += wins >= 1
            won_entry[1] += 1
            if wins == 0:
                continue
            defended = wins - 1
        defender[0] += defended
        defender[1] += defended + (wins < needed)
    return {"challenger": dict(sorted(challenger.items())), "defender": defender, "broken": broken}


def defender_win_share(transcripts: Sequence[str]) -> dict:
    """``{"defender": wins, "rounds": n, "share": wins / n}`` over the rounds of one-pass transcripts
    (Tab. 14 text) whose winner is one of the pair. The defender of round 1 is the pair's first id
    (the seed, as ``student_prompt`` lists it); of a later round, the previous round's winner (a round
    whose pair lacks it, a broken chain, is not counted). ``share`` is None without such rounds."""
    from kbvqa.parsers import parse_tournament

    wins = rounds = 0
    for text in transcripts:
        previous = None
        for k, r in enumerate(parse_tournament(str(text)).rounds):
            defender = r.pair[0] if k == 0 and r.pair else previous
            if r.winner_in_pair and defender in r.pair:
                rounds += 1
                wins += r.winner == defender
            previous = r.winner
    return {"defender": wins, "rounds": rounds, "share": wins / rounds if rounds else None}


def role_gate(records: Sequence[dict], order: str = "weak_to_strong", n: int = 5, max_gap: float = 0.10,
              resamples: int = 2000, seed: int = 0) -> dict:
    """Issue 54's gate on a judge's one-pass records (``gold_win_rates``' fields): the ground truth's
    win rate as the challenger (every entry round pooled) minus its win rate as the defender, with a
    95 % percentile-bootstrap interval over the records (``resamples``, seeded). ``passed`` when
    |difference| <= ``max_gap`` and the interval holds 0: a judge that reads the candidates rather
    than their roles. Rates and the difference are None where a role was never played."""
    import numpy as np

    records = list(records)
    if not records:
        raise ValueError("role_gate needs at least one record")

    def rates(recs) -> tuple[float | None, float | None]:
        w = gold_win_rates(recs, order, n)
        won, played = (sum(v[i] for v in w["challenger"].values()) for i in (0, 1))
        d_won, d_played = w["defender"]
        return (won / played if played else None), (d_won / d_played if d_played else None)

    challenger, defender = rates(records)
    gap = None if challenger is None or defender is None else challenger - defender
    rng = np.random.default_rng(seed)
    diffs = []
    for _ in range(resamples):
        c, d = rates([records[i] for i in rng.integers(0, len(records), len(records))])
        if c is not None and d is not None:
            diffs.append(c - d)
    low, high = (float(np.percentile(diffs, 2.5)), float(np.percentile(diffs, 97.5))) if diffs else (None, None)
    passed = gap is not None and low is not None and abs(gap) <= max_gap and low <= 0.0 <= high
    return {"records": len(records), "challenger": challenger, "defender": defender, "difference": gap,
            "low": low, "high": high, "max_gap": max_gap, "passed": passed}
