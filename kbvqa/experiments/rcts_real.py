"""The same RCTS rows on real data (gpu profile): ScienceQA with its train/val split as knowledge base.

``real_setting(queries, kb, encoders)`` retrieves the top-N knowledge-base examples of every query
with the hybrid index of §3.3 (the profile's encoders: CLIP in the gpu profile) and builds a
``Setting`` with ``MCPromptBuilder(None)`` prompts (images from ``Query.image``; reasoning contexts
from ``KBExample.reasoning_context`` when the RCTS §3.2 step has filled them, else the dataset's
lecture and explanation in ``solution``). ``scienceqa_rows(vlm, n_queries, n_kb)`` loads the data
with ``kbvqa.data.load_dataset`` / ``load_knowledge_base`` and runs the chosen rows; with
``n_queries = 0`` it returns ``{}`` without touching any dataset, so a chapter can call it in
every profile and choose only the size. ``accuracy_table`` puts the records next to Tab. 2.

Leaves out: the toy world (``rcts_toy``), writing files (the chapter shows the table live).
"""
from __future__ import annotations

from collections.abc import Sequence

from kbvqa.metrics.intervals import wilson_interval
from kbvqa.rcts.paper import paper_rows
from kbvqa.rcts.runs import ROWS, Setting, run_row

RETRIEVAL_N = 20


def real_setting(queries: Sequence, kb: Sequence, encoders, k: int = 3, n: int = RETRIEVAL_N) -> Setting:
    """Hybrid top-``n`` candidates (score = MaxSim / query tokens) and multiple-choice prompts."""
    from kbvqa.rcts.prompts import MCPromptBuilder
    from kbvqa.retrieval.hybrid import HybridIndex, encode_items

    if not queries or not kb:
        raise ValueError("real_setting needs at least one query and one knowledge-base example")
    index = HybridIndex.build(encoders, list(kb))
    encoded = encode_items(encoders, list(queries))
    results = index.search_encoded(encoded, k=min(n, len(kb)))
    by_id = {e.id: e for e in kb}
    lengths = [max(len(t), 1) for t in encoded.tokens(index.config.mode)]
    candidates = {qid: [(by_id[i], s / length) for i, s in zip(r.ids, r.scores)]
                  for qid, r, length in zip(encoded.ids, results, lengths)}
    builders = {b: MCPromptBuilder(None, with_context=b) for b in (False, True)}
    return Setting(list(queries), list(kb), candidates, builders.__getitem__, k=k)


def scienceqa_rows(vlm, n_queries: int, n_kb: int = 2000, runs: Sequence[str] = ("zero_shot", "vanilla_rag", "rcts"),
                   seed: int = 0, root=None) -> dict[str, list[dict]]:
    """Records of ``runs`` on the first ``n_queries`` ScienceQA test questions (``{}`` when 0)."""
    if n_queries < 0 or n_kb < 1:
        raise ValueError(f"need n_queries >= 0 and n_kb >= 1, got {n_queries}, {n_kb}")
    unknown = [r for r in runs if r not in ROWS]
    if unknown:
        raise ValueError(f"unknown runs {unknown}; expected some of {sorted(ROWS)}")
    if n_queries == 0:
        return {}
    from kbvqa.data import load_dataset, load_knowledge_base
    from kbvqa.models.encoders import get_encoders

    queries = [q for q in load_dataset("scienceqa", split="eval", root=root, limit=n_queries) if q.options]
    kb = [e for e in load_knowledge_base("scienceqa", root=root, max_docs=n_kb) if e.options]
    setting = real_setting(queries, kb, get_encoders())
    return {name: list(run_row(ROWS[name], setting, vlm, seed=seed)) for name in runs}


def accuracy_table(records: dict[str, list[dict]], dataset: str = "ScienceQA",
                   model: str = "Qwen2-VL-2B") -> list[dict]:
    """One row per run: n, accuracy (%) with its Wilson interval, and the paper's Tab. 2 number."""
    paper = paper_rows("main", dataset, model)
    rows = []
    for name, recs in records.items():
        k, n = sum(bool(r["correct"]) for r in recs), len(recs)
        low, high = wilson_interval(k, n)
        rows.append({"run": name, "n": n, "accuracy %": round(100 * k / n, 1) if n else None,
                     "95% interval": f"[{100 * low:.1f}, {100 * high:.1f}]", "paper %": paper.get(name)})
    return rows
