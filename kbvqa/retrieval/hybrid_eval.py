"""Recall@K of text-only, image-only and hybrid retrieval on the toy world (RCTS §3.3).

For each multiple-choice test query, the knowledge base (``world.mc_kb``) is searched in each mode
(``hybrid.HybridIndex``) and every retrieved example is judged by the toy world's hidden labels:

- ``answer``: same ``rule_id`` *and* ``key_value`` as the query, so the example's answer is the
  query's answer (the example an in-context learner should see);
- ``rule``: same ``rule_id`` (same question about the same look-alike family; the key value, read
  from the picture, may differ, and then the example's answer is a look-alike's, i.e. wrong).

Two numbers per cut-off K, averaged over queries:

- Recall@K: the share of queries with at least one relevant example in the top K (hit@K of
  ``kbvqa.metrics.retrieval``; the usual "Recall@K" of KB-VQA retrieval, since one relevant example
  is enough to carry the answer);
- Precision@K: the share of the top K that is relevant (what a K-shot prompt actually contains).

With ``pooled_baseline``, each mode gets a second row, ``"<mode> pooled"``: the first stage alone
(pooled cosine, no MaxSim), to see what late interaction adds over one vector per item.

Leaves out: the index (``hybrid.py``), plots (``kbvqa.viz.retrieval``), any model call.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from kbvqa.metrics.retrieval import hit_at_k, mean_over_queries
from kbvqa.retrieval.hybrid import MODES, EncodedItems, HybridConfig, HybridIndex, SearchResult, encode_items

RELEVANCE = ("answer", "rule")
DEFAULT_KS = (1, 3, 5, 10)


def relevant_ids(query, kb_items: Sequence, relevance: str = "answer") -> set[str]:
    """Ids of the knowledge-base examples relevant to ``query`` (module docstring)."""
    if relevance not in RELEVANCE:
        raise ValueError(f"unknown relevance {relevance!r}; expected one of {RELEVANCE}")
    rule, key = query.meta.get("rule_id"), query.meta.get("key_value")
    if relevance == "rule":
        return {e.id for e in kb_items if e.meta.get("rule_id") == rule}
    return {e.id for e in kb_items if e.meta.get("rule_id") == rule and e.meta.get("key_value") == key}


def precision_at_k(retrieved: Sequence[str], gold: set[str], k: int) -> float:
    """Share of the first k retrieved ids that are in ``gold`` (missing ranks count as misses)."""
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be a positive int, got {k!r}")
    return sum(1 for r in list(retrieved)[:k] if r in gold) / k


@dataclass
class RetrievalEvaluation:
    """``scores[row][relevance]["R@K" | "P@K"]`` (a row is a mode, or "<mode> pooled"), plus what
    produced them (for tables and figures)."""

    scores: dict
    ks: tuple[int, ...]
    n_queries: int
    n_kb: int
    first_stage: int
    results: dict = field(default_factory=dict)   # mode -> list[SearchResult], one per query
    query_ids: list[str] = field(default_factory=list)

    def table(self, relevance: str = "answer") -> str:
        """A plain-text table: one row per mode, Recall@K then Precision@K columns."""
        cols = [f"R@{k}" for k in self.ks] + [f"P@{k}" for k in self.ks]
        width = max(8, *(len(row) + 1 for row in self.scores))
        lines = [f"{'mode':<{width}}" + "".join(f"{c:>7}" for c in cols)]
        for row, by_rel in self.scores.items():
            lines.append(f"{row:<{width}}" + "".join(f"{by_rel[relevance][c]:>7.3f}" for c in cols))
        return "\n".join(lines)


def score_results(results: Sequence[SearchResult], golds: Sequence[set[str]], ks: Sequence[int]) -> dict:
    """{"R@K": mean hit@K, "P@K": mean precision@K} over queries."""
    retrieved = [r.ids for r in results]
    out = {}
    for k in ks:
        out[f"R@{k}"] = round(mean_over_queries(hit_at_k, retrieved, golds, k=k), 4)
    for k in ks:
        out[f"P@{k}"] = round(sum(precision_at_k(r, g, k) for r, g in zip(retrieved, golds)) / len(golds), 4)
    return out


def evaluate_rcts_retrieval(world, encoders, modes: Sequence[str] = MODES, ks: Sequence[int] = DEFAULT_KS,
                            n: int | None = None, first_stage: int = 64,
                            kb_encoded: EncodedItems | None = None,
                            pooled_baseline: bool = False) -> RetrievalEvaluation:
    """Recall@K and Precision@K of ``world.mc_test[:n]`` against ``world.mc_kb`` in each mode (and,
    with ``pooled_baseline``, of the first stage alone, rows "<mode> pooled").
    ``kb_encoded`` (from ``encode_items(encoders, world.mc_kb)``) skips re-encoding the knowledge
    base when a caller already has it."""
    ks = tuple(sorted(set(ks)))
    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"ks must be positive ints, got {ks!r}")
    if not modes or any(m not in MODES for m in modes):
        raise ValueError(f"modes must be a non-empty subset of {MODES}, got {modes!r}")
    if n is not None and n < 1:
        raise ValueError(f"n must be >= 1 (or None for every test query), got {n}")
    kb, queries = list(world.mc_kb), list(world.mc_test[:n])
    kb_encoded = kb_encoded if kb_encoded is not None else encode_items(encoders, kb)
    if list(kb_encoded.ids) != [e.id for e in kb]:
        raise ValueError("kb_encoded does not hold world.mc_kb in order")
    q_encoded = encode_items(encoders, queries)
    golds = {rel: [relevant_ids(q, kb, rel) for q in queries] for rel in RELEVANCE}
    scores, results = {}, {}
    rows = [(mode, mode, True) for mode in modes]
    rows += [(f"{mode} pooled", mode, False) for mode in modes] if pooled_baseline else []
    for row, mode, rescore in rows:
        config = HybridConfig(mode=mode, first_stage=max(first_stage, 1) if not rescore else first_stage,
                              rescore=rescore)
        results[row] = HybridIndex(kb_encoded, config).search_encoded(q_encoded, k=max(ks))
        scores[row] = {rel: score_results(results[row], golds[rel], ks) for rel in RELEVANCE}
    return RetrievalEvaluation(scores, ks, len(queries), len(kb), first_stage, results, [q.id for q in queries])
