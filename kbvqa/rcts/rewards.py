"""Heuristic rewards of MCTS-HR (RCTS §3.4, Eq. 7-9): self-consistency Q_S, mutual Q_M, their mix.

- ``rule_reward(pred, target)``  the rule-based evaluator R: 1.0 when both answers parsed and are
  equal, else 0.0. An answer that parses to nothing (None) earns 0 -- on either side.
- Eq. 7 ``self_consistency_reward``: Q_S = mean_n R(A~^(n), A~), the N_s answers re-derived from the
  query and the branch's reasoning context C~ against the branch's own answer A~. A branch whose
  answer is unparsable or whose response carries no reasoning gets Q_S = 0 (the official code
  returns 0 when the response has no reasoning part).
- Eq. 8 ``mutual_reward``: Q_M = mean_n R(A~^(n), A^gt(n)), the answers to reference questions asked
  after the branch's (query, response) turn, against the references' gold answers. No reference
  (an empty retrieval) gives Q_M = 0.
- Eq. 9 ``mixed_reward``: Q = alpha * Q_S + (1 - alpha) * Q_M (alpha = 0.2 in the paper; the
  official configs weight self 0.2 / mutual 0.8, i.e. the same; MMMU 0.5 / 0.5).

Which references Eq. 8 uses (``mutual_references``):

- ``"paper"``    our reading of Eq. 8 as the issue states it: the branch's own K examples, N_m samples
                 in all, reference n being example n mod K (one sample each);
- ``"official"`` the official code (reverse_type "greedy"): the top ``n_refs`` (= 5) *retrieved*
                 candidates, whatever the branch, ``n_mutual`` (= 5) samples each. The paper's own
                 sentence ("we greedily pick N_m samples from the action space") reads close to it.

``score_leaves`` evaluates one or more simulated leaves with ONE batched model call: every self-check
and mutual prompt of those leaves, with all their samples, goes into a single ``vlm.generate``.

What this file leaves out: the prompts (``kbvqa.rcts.prompts``), the tree and search (``tree``, ``rcts``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbvqa.rcts.prompts import CallCounter, PromptBuilder, generate_batched

MUTUAL_MODES = ("paper", "official")


def rule_reward(pred: str | None, target: str | None) -> float:
    """R: 1.0 if both answers exist and agree, else 0.0 (None never matches, not even None)."""
    return 1.0 if pred is not None and target is not None and pred == target else 0.0


def self_consistency_reward(sampled: Sequence[str | None], predicted: str | None) -> float:
    """Eq. 7: Q_S = 1/N_s sum_n R(A~^(n), A~). No samples or no predicted answer: 0."""
    if predicted is None or not sampled:
        return 0.0
    return sum(rule_reward(a, predicted) for a in sampled) / len(sampled)


def mutual_reward(sampled: Sequence[str | None], gold: Sequence[str | None]) -> float:
    """Eq. 8: Q_M = 1/N_m sum_n R(A~^(n), A^gt(n)); one gold answer per sample. Empty: 0."""
    if len(sampled) != len(gold):
        raise ValueError(f"one gold answer per sample: {len(sampled)} samples, {len(gold)} golds")
    if not sampled:
        return 0.0
    return sum(rule_reward(a, g) for a, g in zip(sampled, gold)) / len(sampled)


def mixed_reward(q_self: float, q_mutual: float, alpha: float) -> float:
    """Eq. 9: Q = alpha * Q_S + (1 - alpha) * Q_M.

    Appendix: RCTS | Eq. 7-9 |
        tests/test_search_rcts_rewards.py::test_rule_reward_and_eq7_eq8_eq9_by_hand | rcts-rewards"""
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha must lie in [0, 1], got {alpha}")
    return alpha * q_self + (1.0 - alpha) * q_mutual


def mutual_references(path_examples: Sequence[Any], retrieved: Sequence[Any], mode: str,
                      n_mutual: int, n_refs: int = 5) -> list[tuple[Any, int]]:
    """(reference, samples) pairs for Eq. 8 (see the module docstring). Empty inputs: []."""
    if mode not in MUTUAL_MODES:
        raise ValueError(f"mutual must be one of {MUTUAL_MODES}, got {mode!r}")
    if n_mutual < 1 or n_refs < 1:
        raise ValueError(f"n_mutual and n_refs must be >= 1, got {n_mutual}, {n_refs}")
    if mode == "official":
        return [(ref, n_mutual) for ref in list(retrieved)[:n_refs]]
    path = list(path_examples)
    if not path:
        return []
    counts: dict[int, int] = {}
    for n in range(n_mutual):
        counts[n % len(path)] = counts.get(n % len(path), 0) + 1
    return [(path[i], counts[i]) for i in sorted(counts)]


@dataclass
class LeafScore:
    """The rewards of one simulated branch."""

    answer: str | None          # A~, parsed from the branch's response
    q_self: float               # Eq. 7
    q_mutual: float             # Eq. 8
    reward: float               # Eq. 9
    self_answers: list          # the N_s re-derived answers (empty when there was no reasoning)
    mutual_answers: list        # the reference answers, in reference order
    mutual_gold: list           # their gold answers


def score_leaves(vlm, builder: PromptBuilder, query: Any, leaves: Sequence[tuple[str, list[Any]]],
                 retrieved: Sequence[Any], *, alpha: float, n_self: int, n_mutual: int,
                 mutual: str = "paper", n_refs: int = 5, counter: CallCounter,
                 temperature: float = 0.7, max_new_tokens: int = 8, stop: list[str] | None = None,
                 seed: int | None = None, batch_size: int = 16, share_prefix: bool = False) -> list[LeafScore]:
    """Eq. 7-9 for each ``(response, path_examples)`` in ``leaves``, with one batched model call.

    ``retrieved`` are the candidates' examples in retrieval order (the official mutual references).
    Leaves whose self-check prompt is None (no reasoning) or whose references are empty simply
    send fewer requests; with nothing to ask at all no call is made.
    """
    mixed_reward(0.0, 0.0, alpha)   # validates alpha
    if n_self < 1:
        raise ValueError(f"n_self must be >= 1, got {n_self}")
    requests, plan = [], []
    for response, path_examples in leaves:
        answer = builder.parse(response, query)
        check = builder.self_check(query, response) if answer is not None else None
        refs = mutual_references(path_examples, retrieved, mutual, n_mutual, n_refs)
        self_slot = None
        if check is not None:
            self_slot = len(requests)
            requests.append((check, n_self))
        ref_slots = []
        for ref, n in refs:
            ref_slots.append((len(requests), ref, n))
            requests.append((builder.mutual(query, response, ref), n))
        plan.append((answer, self_slot, ref_slots))
    shared = {"share_prefix": True} if share_prefix else {}     # a leaf's mutual prompts share their opening
    texts = generate_batched(vlm, requests, counter, "rewards", temperature=temperature,
                             max_new_tokens=max_new_tokens, stop=stop, seed=seed, batch_size=batch_size, **shared)
    scores = []
    for answer, self_slot, ref_slots in plan:
        self_answers = [] if self_slot is None else [builder.parse(t, query) for t in texts[self_slot]]
        mutual_answers, gold = [], []
        for slot, ref, n in ref_slots:
            mutual_answers += [builder.parse(t, ref) for t in texts[slot]]
            gold += [builder.gold(ref)] * n
        q_self = self_consistency_reward(self_answers, answer)
        q_mutual = mutual_reward(mutual_answers, gold)
        scores.append(LeafScore(answer, q_self, q_mutual, mixed_reward(q_self, q_mutual, alpha),
                                self_answers, mutual_answers, gold))
    return scores
