"""MOLT's ladder (§3.1, Eq. 6-7): candidates, schedules and the three reranking prompts.

- ``Candidate``: one evidence candidate (an id shown to the model, its paragraph, its image, where
  it came from and its retrieval score).
- ``ladder_schedule(ids, order, scores, seed)``: the order of play. Element 0 is the seed
  w_1 (Eq. 6), element t the challenger of round t (Eq. 7: w_{t+1} = Select(Q, w_t, c_{N-t})).
  With the candidates sorted by score, descending, C = [c_1, ..., c_N] (c_1 strongest):
  ``"weak_to_strong"`` (MOLT) plays c_N, c_{N-1}, ..., c_1, so the strongest candidates enter last
  as "defenders"; ``"strong_to_weak"`` plays c_1, c_2, ..., c_N; ``"random"`` is a seeded
  permutation (the three rows of the schedule ablation). One seed gives one permutation: code that
  plays many queries gives each its own, ``query_seed(seed, query_id)``, so that "random" shuffles
  every query anew (the paper's Random Shuffle), repeatably.
- ``scheduled_pairs(schedule, winners)``: the pair each round must compare given the winners so far.
- Prompts: ``student_prompt`` (Table 14, one pass), ``pairwise_prompt`` (Table 12 system turn with
  the two-candidate user turn of §3.2.1, the iterative baseline and the teacher) and
  ``one_shot_prompt`` (Table 17, exactly five candidates).

How the student prompt encodes the schedule. Table 14 says "Initialize Current Best = Candidate [N].
For i = N-1..1, compare Current Best vs. Candidate [i]": the ladder runs over *list positions*, from
the last listed candidate to the first. The prompt therefore lists the candidates in the reverse
order of play (the seed last), whatever ids they carry. For weak-to-strong this is the retrieval
order c_1 ... c_N, as in the paper; the ids themselves are the random ids of §3.2.1 (ours: 1..N).

Leaves out: running the model (``kbvqa.molt.run``), rewards (``kbvqa.molt.rewards``), the
candidate pipeline (``kbvqa.molt.candidates``), parsing (``kbvqa.parsers.parse_tournament``).
"""
from __future__ import annotations

import random
import zlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbvqa.prompts import render_chat
from kbvqa.prompts.formats import molt_candidates

__all__ = ["ORDERS", "Candidate", "ladder_schedule", "listing_order", "one_shot_prompt", "pairwise_prompt",
           "query_seed", "random_ids", "scheduled_pairs", "student_prompt"]

ORDERS = ("weak_to_strong", "strong_to_weak", "random")


@dataclass(frozen=True)
class Candidate:
    """One evidence candidate (P_i^para, I_i^crop) of §3.1 / App. A.4."""

    id: str                      # the id the model sees ("[3]" in the prompt -> "3")
    text: str                    # the extracted paragraph P_i^para
    image: Any = None            # the (grounded) document image, any image reference
    doc_id: str = ""             # the document D_i it came from
    passage_id: str = ""         # the passage P_{i,k_i}
    score: float = 0.0           # retrieval score (the fusion score s_qf, Eq. 13)
    meta: dict = field(default_factory=dict, compare=False)


def _check_ids(ids: Sequence[str]) -> list[str]:
    ids = [str(i) for i in ids]
    if len(ids) < 2:
        raise ValueError(f"a ladder tournament needs N >= 2 candidates, got {len(ids)}")
    if len(set(ids)) != len(ids):
        raise ValueError(f"candidate ids must be distinct, got {ids}")
    return ids


def ladder_schedule(ids: Sequence[str], order: str = "weak_to_strong", scores: Sequence[float] | None = None,
                    seed: int = 0) -> list[str]:
    """The order of play of ``ids`` (element 0: the seed w_1; element t: round t's challenger).

    ``scores``: one retrieval score per id (higher = stronger); without them ``ids`` are taken as
    already sorted strongest first (c_1 ... c_N). Ties keep the given order. ``order`` is one of
    ``ORDERS``; ``seed`` fixes the ``"random"`` permutation. N < 2, repeated ids, a wrong number of
    scores or an unknown order raise ``ValueError``.

    Appendix: MOLT | Eq. 6-7 |
        tests/test_tournament.py::test_weak_to_strong_starts_from_the_weakest_and_ends_with_the_strongest | molt-eq6
    """
    ids = _check_ids(ids)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    if scores is not None:
        scores = [float(s) for s in scores]
        if len(scores) != len(ids):
            raise ValueError(f"{len(ids)} ids but {len(scores)} scores")
        ranked = [ids[i] for i in sorted(range(len(ids)), key=lambda i: -scores[i])]
    else:
        ranked = list(ids)
    if order == "weak_to_strong":
        return ranked[::-1]
    if order == "strong_to_weak":
        return ranked
    shuffled = list(ranked)
    random.Random(f"ladder:{seed}").shuffle(shuffled)
    return shuffled


def query_seed(seed: int, query_id: str) -> int:
    """The seed of one query's schedule: ``ladder_schedule(ids, "random", scores, query_seed(seed, q.id))``
    draws a permutation per query (one seed for every query would play all of them in the same
    order of ranks), the same one in every run with the same ``seed``."""
    return zlib.crc32(f"ladder:{seed}:{query_id}".encode())


def listing_order(schedule: Sequence[str]) -> list[str]:
    """The order in which the student prompt lists the candidates: the reverse order of play, so
    "Candidate [N]" of Table 14 (the last listed) is the seed."""
    return list(schedule)[::-1]


def scheduled_pairs(schedule: Sequence[str], winners: Sequence[str | None]) -> list[tuple[str | None, str]]:
    """(defender, challenger) that round t must compare, for t = 1..N-1, given the winners of the
    rounds before it: round 1 is (schedule[0], schedule[1]); round t+1 is (winner of round t,
    schedule[t+1]). A missing winner gives a ``None`` defender from then on."""
    schedule = _check_ids(schedule)
    pairs, defender = [], schedule[0]
    for t in range(1, len(schedule)):
        pairs.append((defender, schedule[t]))
        defender = winners[t - 1] if t - 1 < len(winners) else None
    return pairs


def random_ids(n: int, rng: random.Random) -> list[str]:
    """``n`` distinct ids "1".."n" in a random order (§3.2.1: "assign random IDs")."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    ids = [str(i) for i in range(1, n + 1)]
    rng.shuffle(ids)
    return ids


def _by_id(candidates: Sequence[Candidate]) -> dict[str, Candidate]:
    by_id = {c.id: c for c in candidates}
    _check_ids([c.id for c in candidates])
    return by_id


def student_prompt(question: str, query_image: Any, candidates: Sequence[Candidate], schedule: Sequence[str],
                   short: bool = False) -> list[dict]:
    """Table 14's chat: the query image and question, then the candidates listed in the reverse
    order of ``schedule`` (``listing_order``), each "[id] Image: <image> / Paragraph: ...".
    Images: the query first, then one per candidate (N + 1 images in ONE prompt)."""
    by_id = _by_id(candidates)
    if sorted(schedule) != sorted(by_id):
        raise ValueError(f"the schedule {list(schedule)} must hold each candidate id once: {sorted(by_id)}")
    listed = [by_id[i] for i in listing_order(schedule)]
    return render_chat("molt_student_ladder", images=[query_image] + [c.image for c in listed], short=short,
                       question=question, candidates=molt_candidates([(c.id, c.text) for c in listed]))


def pairwise_prompt(question: str, query_image: Any, first: Candidate, second: Candidate,
                    short: bool = False) -> list[dict]:
    """One pairwise comparison (Table 12 system turn; the user turn holds only these two
    candidates, §3.2.1). Images: the query, ``first``, ``second`` (3 images per call)."""
    if first.id == second.id:
        raise ValueError(f"a comparison needs two different candidates, got {first.id!r} twice")
    return render_chat("molt_pairwise", images=[query_image, first.image, second.image], short=short,
                       question=question, id_a=first.id, paragraph_a=first.text, id_b=second.id,
                       paragraph_b=second.text)


def one_shot_prompt(question: str, query_image: Any, candidates: Sequence[Candidate],
                    short: bool = False) -> list[dict]:
    """Table 17's 5-way prompt: the candidates numbered 1-5 in the given order (the paper's
    template is written for exactly five, so other N raise ``ValueError``)."""
    if len(candidates) != 5:
        raise ValueError(f"the one-shot prompt (Table 17) takes exactly 5 candidates, got {len(candidates)}")
    _by_id(candidates)
    paras = {f"para_{i + 1}": c.text for i, c in enumerate(candidates)}
    return render_chat("molt_oneshot", images=[query_image] + [c.image for c in candidates], short=short,
                       question=question, **paras)
