"""The card's task helpers (``kbvqa.reader.card``): MOLT's ladder set and its validity (Eq. 9-10), and
the SeRTS query's BM25 recall. Split from ``card.py`` to keep it short; ``card`` re-exports them.

Leaves out: the card itself (``card.py``).
"""
from __future__ import annotations

import numpy as np

from kbvqa.models.pretrain_mc_lit import bm25_search
from kbvqa.parsers import parse_query


def ladder_set(world, n: int, image_size: int) -> list:
    """MOLT Table 14 prompts for the first ``n`` test queries (gold + 4 look-alike pages)."""
    from kbvqa.molt.sft import SFTDataConfig, build_sft_example

    config = SFTDataConfig(image_size=image_size)
    return [build_sft_example(world, q, [], config) for q in world.kbvqa_test[:n]]


def ladder_valid(text: str, schedule) -> bool:
    """Table 14 output parses (MOLT Eq. 9) and its chain is consistent in every round (Eq. 10)."""
    from kbvqa.molt.rewards import chain_validity, format_reward

    valid = chain_validity(text, schedule)
    return format_reward(text) == 1.0 and len(valid) == len(schedule) - 1 and all(valid)


def serts_recall(world, examples, outputs, k: int = 5, per_query: bool = False):
    """Mean BM25 recall@k of the reader's parsed query and of the question itself (``per_query``:
    the two lists instead of their means)."""
    def recall(query, gold):
        return len(set(bm25_search(world, query, k)) & set(gold)) / len(gold) if query else 0.0

    questions = {q.id: q for q in world.lit_questions}
    ours, base = [], []
    for e, out in zip(examples, outputs):
        q, gold = questions[e.meta["query_ids"][0]], e.meta["doc_ids"]
        ours.append(recall(parse_query(out).query, gold))
        base.append(recall(q.question, gold))
    return (ours, base) if per_query else (float(np.mean(ours)), float(np.mean(base)))
