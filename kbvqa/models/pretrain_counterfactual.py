"""Counterfactual KB-VQA examples: the passage, not memory, must give the answer.

Why this task exists (model card, chapter 01): the first tiny checkpoint answered every KB-VQA
question with a typical value of the asked attribute ("What is the weight ...?" -> "8.7") whatever
the passage said. In the training split each creature's facts never change, so answering from
memory (the question's wording + the creature's look) lowers the loss as well as reading does,
and memorising is the easier path for a 1.45M-parameter model. Counterfactual augmentation, the
standard remedy for "parametric knowledge wins over context" (e.g. Longpre et al. 2021,
knowledge conflicts), removes that path: the gold passage's value is swapped for the value that
*another* training creature has for the same attribute, consistently in the passage, in the
worked rationale and in the target, so only the passage predicts the answer.

- ``swap_values(text, mapping)``: replace whole-value occurrences (never inside a longer number
  or word: "45" is not replaced in "145" or "4.5").
- ``counterfactual_query(world, q, rng)``: ``(q', gold passage')`` with a donor's values, or
  ``None`` when the value cannot be found verbatim in the passage (the caller then falls back to
  the real example).
- ``kbvqa_counterfactual(world, rng, cfg)``: a ``kbvqa_with_passages`` example built on it (same
  prompt styles, distractors and "I don't know" rate); task name ``"kbvqa_counterfactual"``.

Only the training split is used (donors included). Leaves out: the mixture (``pretrain_mix``).
"""
from __future__ import annotations

import dataclasses
import re

from kbvqa.data.schema import Passage, Query
from kbvqa.prompts.formats import (
    KBVQA_STYLES,
    Example,
    distractor_passages,
    kbvqa_meta,
    kbvqa_prompt,
    kbvqa_target,
)

__all__ = ["counterfactual_query", "kbvqa_counterfactual", "swap_values", "value_mapping"]


def swap_values(text: str, mapping: dict[str, str]) -> str:
    """``text`` with every whole occurrence of each key replaced by its value (one pass, so a
    replacement is never replaced again; longer keys first)."""
    if not mapping:
        return text
    keys = sorted(mapping, key=len, reverse=True)
    pattern = "|".join(re.escape(k) for k in keys)
    return re.sub(rf"(?<![\w.])({pattern})(?![\w]|\.\d)", lambda m: mapping[m.group(1)], text)


def value_mapping(q: Query, donor: Query) -> dict[str, str] | None:
    """Old value -> donor value for the answer items of ``q`` (``None`` if they do not line up)."""
    if q.answer_type != donor.answer_type:
        return None
    if q.answer_type == "multi":
        if len(q.answers) != len(donor.answers):
            return None
        pairs = list(zip(q.answers, donor.answers))
    else:
        pairs = [(q.answers[0], donor.answers[0])]
    mapping = {old: new for old, new in pairs if old != new}
    if len(mapping) != len(pairs) or len(set(mapping.values())) != len(mapping):
        return None
    return mapping


def _donors(world) -> dict[str, list[Query]]:
    cache = world.__dict__.setdefault("_cf_donors", {})
    if not cache:
        for d in world.kbvqa_train:
            cache.setdefault(d.meta["attribute"], []).append(d)
    return cache


def counterfactual_query(world, q: Query, rng) -> tuple[Query, Passage] | None:
    """``q`` and its gold passage with another creature's values of the same attribute."""
    gold = world.passage(q.evidence_ids[0])
    pool = [d for d in _donors(world)[q.meta["attribute"]] if d.meta["entity_id"] != q.meta["entity_id"]]
    for _ in range(8):
        if not pool:
            return None
        donor = rng.choice(pool)
        mapping = value_mapping(q, donor)
        if mapping is None or any(swap_values(gold.text, {k: "\0"}) == gold.text for k in mapping):
            continue  # the value is not written verbatim in the passage: try another donor
        text = swap_values(gold.text, mapping)
        meta = {**q.meta, "rationale": swap_values(q.meta.get("rationale", ""), mapping),
                "counterfactual_of": list(q.answers)}
        meta.pop("answer_sets", None)
        answers = [swap_values(a, mapping) for a in q.answers]
        new_q = dataclasses.replace(q, answers=answers, answer_range=donor.answer_range, meta=meta)
        return new_q, dataclasses.replace(gold, text=text)
    return None


def kbvqa_counterfactual(world, rng, cfg) -> Example:
    """``kbvqa_with_passages`` on a counterfactual copy of a training query (see the docstring)."""
    q = rng.choice(world.kbvqa_train)
    style = rng.choices(KBVQA_STYLES, weights=cfg.kbvqa_style_weights)[0]
    n_total = rng.randint(1, cfg.max_passages)
    with_gold = rng.random() >= cfg.gold_missing_rate
    swapped = counterfactual_query(world, q, rng)
    passages = distractor_passages(world, q, rng, n_total - with_gold, cfg.distractor_mix)
    if swapped is not None:
        q, gold = swapped
    else:
        gold = world.passage(q.evidence_ids[0])
    if with_gold:
        passages.insert(rng.randint(0, len(passages)), gold)
    meta = kbvqa_meta(q, passages, style=style, gold_included=with_gold, counterfactual=swapped is not None)
    return Example(kbvqa_prompt(world, q, passages, style, cfg), kbvqa_target(q, style, with_gold),
                   "kbvqa_counterfactual", meta=meta)
