"""What the RCTS rows run on: the toy world's and ScienceQA's ``Setting``, with their retrieved candidates.

- Toy world (chapters 13 and 14, ``python -m kbvqa.experiments.rcts_toy``): ``compute_retrieval``
  takes the top-N hybrid candidates (§3.3, MaxSim) of every ``mc_test`` question in ``mc_kb``;
  ``load_retrieval`` keeps them in ``retrieval.json`` under the experiment's folder
  (``kbvqa.rcts.results.RESULTS_DIR``), computed once on first use, so reruns and chapters reuse the
  same candidates; ``retrieval_diagnostics`` says how many answer-showing examples the top k hold;
  ``toy_setting`` builds the ``Setting`` with ``MCPromptBuilder(world)`` prompts. The similarity s_i
  of Eq. 5-6 is the MaxSim score divided by the query's token count (the mean per-token cosine),
  our reading of "normalised similarity".
- Real data (gpu profile): ``real_setting(queries, kb, encoders)`` retrieves the top-N
  knowledge-base examples of every query with the hybrid index of §3.3 (the profile's encoders:
  CLIP in the gpu profile) and builds a ``Setting`` with ``MCPromptBuilder(None)`` prompts (images
  from ``Query.image``; reasoning contexts from ``KBExample.reasoning_context`` when the RCTS §3.2
  step has filled them, else the dataset's lecture and explanation in ``solution``).
  ``scienceqa_rows(vlm, n_queries, n_kb)`` loads ScienceQA (its train/val split as knowledge base)
  with ``kbvqa.data.load_dataset`` / ``load_knowledge_base`` and runs the chosen rows; with
  ``n_queries = 0`` it returns ``{}`` without touching any dataset, so a chapter can call it in
  every profile and choose only the size (``kbvqa.rcts.results.accuracy_table`` puts the records
  next to Tab. 2).

Leaves out: the rows and how they run (``kbvqa.rcts.runs``), the run files and the command line
(``kbvqa.experiments.rcts_toy``), tables (``kbvqa.rcts.results``).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from pathlib import Path

from kbvqa.data import load_dataset, load_knowledge_base
from kbvqa.experiments.runs import provenance
from kbvqa.models.encoders import get_encoders
from kbvqa.models.pretrain_mix import role_mix_config
from kbvqa.rcts.diagnostics import kb_ceiling, retrieval_hit_rate
from kbvqa.rcts.prompts import MCPromptBuilder
from kbvqa.rcts.results import RESULTS_DIR
from kbvqa.rcts.runs import ROWS, Setting, run_row
from kbvqa.retrieval.hybrid import HybridIndex, encode_items

RETRIEVAL_N = 20            # candidates kept per question (paper N = 20)


# ------------------------------------------------------------------------------ toy world
def compute_retrieval(world, n: int = RETRIEVAL_N) -> dict:
    """Top-n hybrid candidates of every ``mc_test`` question in ``mc_kb`` (slow: ~1 min on 1 core)."""

    encoders = get_encoders()
    index = HybridIndex.build(encoders, world.mc_kb)
    queries = encode_items(encoders, world.mc_test)
    results = index.search_encoded(queries, k=n)
    lengths = [len(t) for t in queries.tokens(index.config.mode)]
    return {"mode": index.config.mode, "n": n, "score": "MaxSim / query tokens",
            "candidates": {qid: [[i, round(s / length, 6)] for i, s in zip(r.ids, r.scores)]
                           for qid, r, length in zip(queries.ids, results, lengths)}}


def load_retrieval(world, out: Path = RESULTS_DIR, recompute: bool = False) -> dict:
    """``retrieval.json`` under ``out``; computed (``compute_retrieval``) and written when missing."""
    path = Path(out) / "retrieval.json"
    if path.exists() and not recompute:
        return json.loads(path.read_text())
    t0 = time.perf_counter()
    data = compute_retrieval(world)
    data["provenance"] = provenance(0, seconds=round(time.perf_counter() - t0, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, separators=(",", ":")))
    return data


def retrieval_diagnostics(world, retrieval: dict) -> dict:
    """Retrieval quality for the chapter's "why" section: answer-showing examples in the top k."""

    kb = {e.id: e for e in world.mc_kb}
    queries = [q for q in world.mc_test if q.id in retrieval["candidates"]]
    lists = [[kb[i] for i, _ in retrieval["candidates"][q.id]] for q in queries]
    hits = retrieval_hit_rate(queries, lists, ks=(1, 3, 5, 10, 20))
    return {"n": len(queries), "hit_rate": {str(k): v for k, v in hits.items()},
            "kb_ceiling": kb_ceiling(queries, world.mc_kb)}


def toy_setting(world, retrieval: dict, limit: int | None = None, ids=None, k: int = 3,
                contexts: dict[str, str] | None = None, plain_kb: bool = False) -> Setting:
    """The toy world's ``Setting``: ``mc_test`` (first ``limit``, or the given ``ids``), ``mc_kb``,
    the cached candidates and ``MCPromptBuilder(world)`` prompts. ``contexts`` (KB example id ->
    reasoning context C_i, RCTS §3.2: ``contexts_of`` a reasoner's knowledge base) replace the worked
    solutions in the with-context prompts; every candidate of the chosen questions must have one.
    ``plain_kb``: every row's examples answer without a worked solution (the paper's premise, issue
    52), so the with-context rows get the rule only from ``contexts``, which it then requires."""
    if plain_kb and contexts is None:
        raise ValueError("plain_kb=True needs the reasoner's contexts (contexts=contexts_of(...)): a plain "
                         "knowledge base has no worked solution to show as a reasoning context")

    kb = {e.id: e for e in world.mc_kb}
    queries = list(world.mc_test)
    if ids is not None:
        wanted = set(ids)
        queries = [q for q in queries if q.id in wanted]
    queries = queries[:limit] if limit is not None else queries
    candidates = {q.id: [(kb[i], s) for i, s in retrieval["candidates"].get(q.id, [])] for q in queries}
    if contexts is not None:
        missing = sorted({e.id for cands in candidates.values() for e, _ in cands} - set(contexts))
        if missing:
            raise ValueError(f"no reasoning context for {len(missing)} candidate examples ({missing[:3]}...): build "
                             "them with python -m kbvqa.experiments.rcts_contexts --for-queries N")
    cfg = role_mix_config("generator")     # the prompts and pictures of the model that answers them
    builders = {False: MCPromptBuilder(world, cfg, with_context=False, plain_kb=plain_kb),
                True: MCPromptBuilder(world, cfg, with_context=True, contexts=contexts, plain_kb=plain_kb)}
    contexts_id = "" if contexts is None else hashlib.sha256(
        json.dumps(contexts, sort_keys=True).encode()).hexdigest()[:12]
    return Setting(queries, list(world.mc_kb), candidates, builders.__getitem__, k=k, contexts_id=contexts_id,
                   plain_kb=plain_kb)


# ------------------------------------------------------------------------------ real data
def real_setting(queries: Sequence, kb: Sequence, encoders, k: int = 3, n: int = RETRIEVAL_N) -> Setting:
    """Hybrid top-``n`` candidates (score = MaxSim / query tokens) and multiple-choice prompts."""

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

    queries = [q for q in load_dataset("scienceqa", split="eval", root=root, limit=n_queries) if q.options]
    kb = [e for e in load_knowledge_base("scienceqa", root=root, max_docs=n_kb) if e.options]
    setting = real_setting(queries, kb, get_encoders())
    return {name: list(run_row(ROWS[name], setting, vlm, seed=seed)) for name in runs}
