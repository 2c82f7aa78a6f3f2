"""The cheap rungs of ReAG's ablation ladder on a small real subset (gpu profile only; chapter 24).

``real_subset_ladder(name, n)`` loads ``n`` queries of InfoSeek or E-VQA (``kbvqa.data.load_dataset``)
and a small Wikipedia knowledge base around them (``load_knowledge_base``: ``max_docs`` pages that
always include the gold pages), then runs the four zero-shot rungs (no retrieval, coarse, + critic,
+ fine) with the profile's models: ``load_vlm("critic")`` scores the passages as is (no
fine-tuning here), ``load_vlm("generator")`` answers. Scores are the task rewards of ReAG Eq. 9,
as on the toy world. The trained rungs need ReAG's training data and budget and are left out.

It needs the official annotation files and network access for the images and pages, so the book
never calls it in the cpu profile (the chapter passes ``n = 0`` there, which returns ``{}``).

Leaves out: the toy-world ladder and its training (``reag_ladder``, ``reag_ladder_train``).
"""
from __future__ import annotations

from collections.abc import Sequence


class KnowledgeBase:
    """The two things the ladder asks of a world: ``documents`` and ``passage(id)``."""

    def __init__(self, documents: Sequence):
        self.documents = list(documents)
        self._passages = {p.id: p for d in self.documents for p in d.passages}

    def passage(self, passage_id: str):
        if passage_id not in self._passages:
            raise KeyError(f"no passage {passage_id!r} in the knowledge base")
        return self._passages[passage_id]


def real_subset_ladder(name: str = "infoseek", n: int = 50, max_docs: int = 2000, config=None) -> dict:
    """{rung: records} of the cheap rungs on the first ``n`` queries of dataset ``name``
    ("infoseek" or "evqa"); ``{}`` when ``n == 0``."""
    from kbvqa.data import load_dataset
    from kbvqa.data.datasets import load_knowledge_base
    from kbvqa.experiments.reag_ladder import LadderConfig, evaluate, retrieve_evidence
    from kbvqa.models.checkpoints import load_vlm
    from kbvqa.reag.results import CHEAP_RUNGS, RUNG_BY_NAME

    if name not in ("infoseek", "evqa"):
        raise ValueError(f"the ReAG ladder runs on 'infoseek' or 'evqa', got {name!r}")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if n == 0:
        return {}
    config = config or LadderConfig(limit=n)
    queries = load_dataset(name, limit=n)
    kb = KnowledgeBase(load_knowledge_base(name, max_docs=max_docs, queries=queries))
    evidence = retrieve_evidence(kb, queries, load_vlm("critic"), config)
    generator = load_vlm("generator")
    return {rung: evaluate(generator, kb, queries, evidence, RUNG_BY_NAME[rung], config) for rung in CHEAP_RUNGS}
