"""Cold-start data for ReAG's generator (Sec. 3.3): (image, question, passage, relevance) + a trace.

ReAG extends every critic tuple (I_q, q, p, y) with a reasoning trace ``tr`` written by a larger
MLLM (Qwen2.5-VL-7B) that is told the answer and the relevance label y and must say whether p is
relevant (supp. D, ``kbvqa/prompts/reag_trace*.txt``). In the cpu profile no larger model exists,
so the traces are templated from the toy world's worked rationales (``query.meta["rationale"]``):

- relevant passage (the evidence):  "<what the image shows> The passage is relevant: <how it
  answers>"  -> ``<answer>gold</answer>``;
- irrelevant passage (30 % soft / 70 % hard negatives, ``kbvqa.prompts.formats.critic_negative``, as for
  the critic): "<what the image shows> The passage is about <something else>, so it is not
  relevant. <no evidence>" -> ``<answer>I don't know</answer>``.

The second target departs from ReAG, whose traces keep the gold answer for an irrelevant passage
(the big model may know it). The toy facts are invented, so answering without evidence could only
be memorised; the tiny model's pretraining used the same "I don't know" convention
(``kbvqa.prompts.formats.kbvqa_target``). Prompts are the generator's (``reag_generator``, one passage).

``kept_set_examples(world, queries, kept)`` (issue 53) trains the generator on what it will read at
test: the passages the critic keeps for a training question, the gold answer with its worked
rationale when the evidence is among them, and "I don't know" only when it is not. That departs
from ReAG, which trains on single-passage critic tuples; chapter 22 says so.

Leaves out: traces written by a model (gpu profile: render ``reag_trace`` and call ``generate``),
the loss and the loop (``sft.py``), scoring the training questions' passages with the critic
(``kbvqa.reag.critic.Critic.filter_many``, whose kept lists this module reads).
"""
from __future__ import annotations

import random

from kbvqa.data.schema import Passage, Query
from kbvqa.models.pretrain_mix import role_mix_config
from kbvqa.prompts.formats import (
    NO_EVIDENCE_THOUGHT,
    UNKNOWN,
    Example,
    critic_negative,
    kbvqa_answer_text,
    kbvqa_meta,
    kbvqa_prompt,
    kbvqa_target,
)

SOFT_HARD_NEGATIVES = (0.3, 0.7)   # ReAG supp. C: 30 % soft and 70 % hard negatives


def _sentences(rationale: str) -> tuple[str, str]:
    """(first sentence, the rest) of a worked rationale."""
    head, _, rest = rationale.partition(". ")
    return (head + "." if rest else head), rest


def cold_start_trace(world, q: Query, passage: Passage, relevant: bool) -> str:
    """The templated reasoning trace of ``q`` read with ``passage`` (states the relevance)."""
    seen, rest = _sentences(q.meta["rationale"])
    if relevant:
        return f"{seen} The passage is relevant: {rest}".strip()
    name = world.entity(q.meta["entity_id"]).name
    if passage.doc_id in q.gold_doc_ids:
        about = f"the {name}'s {passage.section or 'page'}, which does not answer the question"
    else:
        about = f"the {passage.title or 'another creature'}, not the {name}"
    return f"{seen} The passage is about {about}, so it is not relevant. {NO_EVIDENCE_THOUGHT}"


def cold_start_example(world, q: Query, passage: Passage, relevant: bool, cfg,
                       negative_kind: str = "") -> Example:
    """One SFT example: generator prompt with ``passage``, target ``<think>tr</think><answer>..</answer>``."""
    answer = kbvqa_answer_text(q) if relevant else UNKNOWN
    completion = f"<think>{cold_start_trace(world, q, passage, relevant)}</think><answer>{answer}</answer>"
    meta = {"query_ids": [q.id], "passage_ids": [passage.id], "relevant": relevant,
            "negative_kind": negative_kind, "answers": list(q.answers), "answer_type": q.answer_type}
    return Example(kbvqa_prompt(world, q, [passage], "reag", cfg), completion, "cold_start", meta=meta)


def cold_start_examples(world, n: int, seed: int = 0, positive_rate: float = 0.5, cfg=None,
                        queries: list[Query] | None = None) -> list[Example]:
    """``n`` cold-start examples from the training queries (``world.kbvqa_train`` by default).

    A share ``positive_rate`` reads the evidence passage; the others a negative (70 % hard: the same
    section of a look-alike's page; 30 % soft). Deterministic for a given ``seed``.
    """

    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if not 0 <= positive_rate <= 1:
        raise ValueError(f"positive_rate must be in [0, 1], got {positive_rate!r}")
    cfg = cfg or role_mix_config("rl_policy")   # the format of the generator it trains
    pool = list(queries if queries is not None else world.kbvqa_train)
    if n and not pool:
        raise ValueError("no queries to build examples from")
    rng = random.Random(f"cold_start:{seed}")
    out = []
    for _ in range(n):
        q = rng.choice(pool)
        if rng.random() < positive_rate:
            out.append(cold_start_example(world, q, world.passage(q.evidence_ids[0]), True, cfg))
        else:
            passage, kind = critic_negative(world, q, rng, SOFT_HARD_NEGATIVES[1])
            out.append(cold_start_example(world, q, passage, False, cfg, negative_kind=kind))
    return out


def kept_set_examples(world, queries: list[Query], kept: list[list[Passage]], cfg=None) -> list[Example]:
    """One SFT example per training query and the passages the critic kept for it (``kept[i]``, in
    the critic's order): the generator's prompt over those passages (none: the no-passage prompt),
    the target ``kbvqa_target`` -- the gold answer and its rationale when the evidence is among them,
    "I don't know" only when it is not (issue 53). A test query raises ``ValueError``: the kept sets
    must come from training questions."""
    if len(kept) != len(queries):
        raise ValueError(f"one kept list per query: {len(queries)} queries, {len(kept)} lists")
    test_ids = {q.id for q in world.kbvqa_test}
    leaked = [q.id for q in queries if q.id in test_ids]
    if leaked:
        raise ValueError(f"kept_set_examples trains on training questions only; got test queries {leaked[:3]}")
    cfg = cfg or role_mix_config("rl_policy")
    out = []
    for q, passages in zip(queries, kept):
        passages = list(passages)
        evidence = set(q.evidence_ids) & {p.id for p in passages}
        out.append(Example(kbvqa_prompt(world, q, passages, "reag", cfg), kbvqa_target(q, "reag", bool(evidence)),
                           "kept_set", meta=kbvqa_meta(q, passages, style="reag", gold_included=bool(evidence))))
    return out
