"""The baselines MCTS-HR is compared with (RCTS Tab. 2-4): zero-shot, ICL with K random knowledge-
base examples, and Vanilla-RAG with the top-K retrieved examples -- each one greedy K-shot prompt
per query, parsed like the search's answers (``parse_rcts_answer`` through the prompt builder) --
and a control of ours, ``verify_once``: a draft's reasoning re-answered once in App. C.1's prompt
(verification without search, issue 52).

Every function answers a list of queries with ONE batched ``vlm.generate`` call (rows split into
``batch_size`` forward passes inside it) and can share a ``CallCounter`` with the search, so costs
are counted the same way. Vanilla-RAG orders its examples as retrieved (top-1 first), which is also
the greedy reference path of the search's early stop.

What this file leaves out: retrieval (``kbvqa.retrieval``), scoring (``kbvqa.metrics``).
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kbvqa.rcts.prompts import CallCounter, MCPromptBuilder, PromptBuilder, generate_batched


@dataclass
class BaselineAnswer:
    query_id: str
    answer: str | None          # parsed option letter, None when unparsable
    response: str
    example_ids: list[str]      # the in-context examples, in prompt order


def _answer(vlm, queries, example_lists, builder, counter, purpose, max_new_tokens, seed,
            batch_size) -> list[BaselineAnswer]:
    builder = builder or MCPromptBuilder()
    counter = counter if counter is not None else CallCounter()
    requests = [(builder.kshot(q, list(exs)), 1) for q, exs in zip(queries, example_lists)]
    texts = generate_batched(vlm, requests, counter, purpose, temperature=0.0,
                             max_new_tokens=max_new_tokens, seed=seed, batch_size=batch_size)
    return [BaselineAnswer(str(getattr(q, "id", i)), builder.parse(t[0], q), t[0],
                           [str(getattr(e, "id", "")) for e in exs])
            for i, (q, exs, t) in enumerate(zip(queries, example_lists, texts))]


def _check_k(k: int) -> None:
    if not isinstance(k, int) or isinstance(k, bool) or k < 0:
        raise ValueError(f"k must be an int >= 0, got {k!r}")


def zero_shot(vlm, queries: Sequence[Any], builder: PromptBuilder | None = None, *,
              counter: CallCounter | None = None, max_new_tokens: int = 64, seed: int = 0,
              batch_size: int = 16) -> list[BaselineAnswer]:
    """Each query alone (RCTS "Zero-Shot")."""
    return _answer(vlm, queries, [[] for _ in queries], builder, counter, "zero_shot",
                   max_new_tokens, seed, batch_size)


def random_examples(query: Any, kb: Sequence[Any], k: int, rng: random.Random) -> list[Any]:
    """``k`` knowledge-base examples drawn without replacement, never the query itself."""
    _check_k(k)
    pool = [e for e in kb if getattr(e, "id", None) != getattr(query, "id", object())]
    if k > len(pool):
        raise ValueError(f"k = {k} exceeds the {len(pool)} knowledge-base examples available")
    return rng.sample(pool, k)


def icl_random(vlm, queries: Sequence[Any], kb: Sequence[Any], k: int = 3,
               builder: PromptBuilder | None = None, *, counter: CallCounter | None = None,
               max_new_tokens: int = 64, seed: int = 0, batch_size: int = 16) -> list[BaselineAnswer]:
    """ICL with ``k`` random examples per query ("ICL (random retrieval)"); seeded."""
    rng = random.Random(seed)
    examples = [random_examples(q, kb, k, rng) for q in queries]
    return _answer(vlm, queries, examples, builder, counter, "icl_random", max_new_tokens, seed, batch_size)


def top_k(candidates: Sequence[tuple[Any, float]], k: int) -> list[Any]:
    """The ``k`` best-scored examples of ``[(example, score), ...]``, best first (stable on ties);
    fewer when fewer are given."""
    _check_k(k)
    order = sorted(range(len(candidates)), key=lambda i: -float(candidates[i][1]))
    return [candidates[i][0] for i in order[:k]]


def vanilla_rag(vlm, queries: Sequence[Any], candidates: Sequence[Sequence[tuple[Any, float]]],
                k: int = 3, builder: PromptBuilder | None = None, *, counter: CallCounter | None = None,
                max_new_tokens: int = 64, seed: int = 0, batch_size: int = 16) -> list[BaselineAnswer]:
    """Vanilla-RAG: the top-``k`` retrieved examples per query, top-1 first."""
    if len(candidates) != len(queries):
        raise ValueError(f"one candidate list per query: {len(queries)} queries, {len(candidates)} lists")
    examples = [top_k(c, k) for c in candidates]
    return _answer(vlm, queries, examples, builder, counter, "vanilla_rag", max_new_tokens, seed, batch_size)


@dataclass
class VerifiedAnswer(BaselineAnswer):
    draft: str = ""             # the first call's response (its reasoning is what the re-answer reads)
    draft_answer: str | None = None


def verify_once(vlm, queries: Sequence[Any], drafts: Sequence[BaselineAnswer], builder: PromptBuilder, *,
                counter: CallCounter | None = None, max_new_tokens: int = 16, seed: int = 0,
                batch_size: int = 16) -> list[VerifiedAnswer]:
    """The two-call verifier control of issue 52: each draft's reasoning is handed back once in RCTS
    App. C.1's "answer with the reasoning context" prompt (``builder.self_check``, Eq. 7's prompt),
    greedy, and that re-answer is the answer. A draft without reasoning keeps its own answer (no
    request). It verifies like Q_S does, without any search or re-ranking: beside RCTS, it says how
    much of a gain verification alone buys. All re-answers go in ONE batched call."""
    if len(drafts) != len(queries):
        raise ValueError(f"one draft per query: {len(queries)} queries, {len(drafts)} drafts")
    counter = counter if counter is not None else CallCounter()
    checks = [builder.self_check(q, d.response) for q, d in zip(queries, drafts)]
    asked = [i for i, c in enumerate(checks) if c is not None]
    texts = generate_batched(vlm, [(checks[i], 1) for i in asked], counter, "verify", temperature=0.0,
                             max_new_tokens=max_new_tokens, seed=seed, batch_size=batch_size)
    again = {i: t[0] for i, t in zip(asked, texts)}
    out = []
    for i, (q, d) in enumerate(zip(queries, drafts)):
        response = again.get(i, d.response)
        answer = builder.parse(response, q) if i in again else d.answer
        out.append(VerifiedAnswer(d.query_id, answer, response, d.example_ids, draft=d.response,
                                  draft_answer=d.answer))
    return out
