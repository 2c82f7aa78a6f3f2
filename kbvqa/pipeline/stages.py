"""One KB-VQA pipeline built from the four parts: retrieve -> critic -> ladder -> read (chapter 30).

For each query (image, question):

1. retrieve (ReAG §3.1, chapter 20): every passage of the top-k pages of the image (``"coarse"``),
   or of the coarse and the subject-crop rankings merged by max (``"coarse_fine"``); ``"none"``
   reads nothing, ``"evidence"`` is a diagnostic that hands over the gold passage alone;
2. critic (ReAG Eq. 4, chapter 21): keep a passage when P(Yes) > threshold;
3. rerank: ``"none"`` keeps every passage left; ``"critic"`` keeps the ``keep`` passages with the
   largest P(Yes); ``"ladder"`` plays MOLT's one-pass ladder (Table 14, Eq. 6-7) over the top
   ``candidates`` passages (by P(Yes), else retrieval order) and keeps the winner;
   ``"iterative"`` plays the same schedule as N - 1 pairwise calls (App. C, Table 12);
   ``"oracle"`` is a perfect ladder (the evidence when it is among the candidates);
4. read: ``"model"`` is ReAG's generator prompt (supp. D) with the passages left, greedy, scored by
   the official scorer of the question's kind (``kbvqa.metrics.official_correct``); ``"oracle"``
   answers right exactly when the evidence passage is in its context (a perfect reader: its
   accuracy is the final evidence recall).

A ladder reply without a valid ``<evidence>`` id falls back to its last valid ``<winner>``, then to
the strongest candidate (ours; MOLT counts it wrong). With no candidate left the reader gets the
question and image alone (ReAG's all-filtered rule). RCTS's in-context examples are not a stage
here: they are worked solutions of multiple-choice reasoning questions, and the toy KB-VQA
queries are fact look-ups (chapter 30 says why).

Retrieval and critic scores come in as ``stage_inputs``: {query id: {"coarse", "fine" (passage
ids), "coarse_scores", "fine_scores" (P(Yes) or None)}}, the format of
``kbvqa.reag.ladder.retrieve_evidence`` (live) and of ReAG's committed
``evidence.json``. Every model call is batched over the queries (the reader in one ``generate``,
the one-pass ladder in one, the iterative ladder in one per round).

Leaves out: retrieval, the critic's training and scoring (``kbvqa.reag.ladder``, ``kbvqa.reag.critic``),
the ablation's rows, table and loaders (``kbvqa.pipeline.results``) and its run
(``python -m kbvqa.experiments.pipeline_ablation``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbvqa.config import PROFILE_DEFAULT, resolve_profile_fields
from kbvqa.metrics import kbvqa_split_of, official_correct
from kbvqa.molt.ladder import ORDERS, Candidate, ladder_schedule, pairwise_prompt, query_seed, student_prompt
from kbvqa.molt.run import pairwise_winner
from kbvqa.parsers import parse_think_answer, parse_tournament, winner_ids
from kbvqa.reag.critic import check_threshold, generator_prompt

__all__ = ["READERS", "RERANKS", "RETRIEVALS", "PipelineConfig", "candidate_objects", "ladder_candidates",
           "ladder_choice", "run_pipeline", "stage_passages"]

RETRIEVALS = ("none", "coarse", "coarse_fine", "evidence")
RERANKS = ("none", "critic", "ladder", "iterative", "oracle")
READERS = ("model", "oracle")
_LADDERS = ("ladder", "iterative", "oracle")


@dataclass(frozen=True)
class PipelineConfig:
    """One switch per stage; the defaults are the full pipeline."""

    retrieval: str = "coarse_fine"   # RETRIEVALS: which passages the reader may see
    critic: bool = True              # Eq. 4 filter on P(Yes)
    threshold: float = 0.1           # ReAG's shipped threshold (supp. A)
    rerank: str = "ladder"           # RERANKS
    candidates: int = 5              # N ladder candidates (MOLT: 5)
    keep: int = 1                    # passages kept by "critic" reranking (the ladders keep 1)
    order: str = "weak_to_strong"    # ladder schedule (MOLT Eq. 7); see kbvqa.molt.ladder.ORDERS
    reader: str = "model"            # READERS
    max_new_tokens: int = 96         # reader's generation cap
    ladder_tokens: int = 400         # one-pass ladder cap (96 per iterative call)
    batch_size: int = 16             # prompts per generate call
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's
    image_size: int | None | str = PROFILE_DEFAULT  # cpu: 56 px (tiny) or 112 (reader), by role; gpu: native
    seed: int = 0

    def __post_init__(self):
        resolve_profile_fields(self, role="reag_generator")   # the model every stage of the pipeline asks

        for name, value, allowed in (("retrieval", self.retrieval, RETRIEVALS), ("rerank", self.rerank, RERANKS),
                                     ("reader", self.reader, READERS), ("order", self.order, ORDERS)):
            if value not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {value!r}")
        for name in ("candidates", "keep", "max_new_tokens", "ladder_tokens", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.rerank in ("ladder", "iterative") and self.candidates < 2:
            raise ValueError("a ladder needs candidates >= 2")
        if self.rerank == "critic" and not self.critic:
            raise ValueError("rerank='critic' ranks by the critic's P(Yes): it needs critic=True")
        if self.retrieval in ("none", "evidence") and (self.critic or self.rerank != "none"):
            raise ValueError(f"retrieval={self.retrieval!r} leaves nothing to filter or rerank: "
                             "set critic=False and rerank='none'")
        check_threshold(self.threshold)


def stage_passages(inputs: dict, config: PipelineConfig, evidence: Sequence[str]) -> dict:
    """Passage ids after retrieval and after the critic, and their P(Yes) ({} without the critic:
    then nothing downstream ranks by it), for one query's ``inputs`` record."""
    if config.retrieval == "none":
        return {"retrieved": [], "kept": [], "scores": {}}
    if config.retrieval == "evidence":
        ids = list(evidence[:1])
        return {"retrieved": ids, "kept": ids, "scores": {}}
    stage = "fine" if config.retrieval == "coarse_fine" else "coarse"
    ids = list(inputs[stage])
    scores = list(inputs.get(f"{stage}_scores") or [None] * len(ids))
    if len(scores) != len(ids):
        raise ValueError(f"{len(ids)} passages but {len(scores)} scores in the {stage!r} stage")
    have = all(s is not None for s in scores)
    if config.critic and not have:
        raise ValueError("critic=True needs P(Yes) for every passage (stage_inputs without critic scores)")
    kept = [p for p, s in zip(ids, scores) if s > config.threshold] if config.critic else ids
    return {"retrieved": ids, "kept": kept, "scores": dict(zip(ids, scores)) if config.critic else {}}


def ladder_candidates(kept: Sequence[str], scores: dict, n: int) -> list[str]:
    """The ``n`` strongest passages: by P(Yes) (descending, ties in retrieval order) when scored,
    else the first ``n`` in retrieval order. Element 0 is the strongest (c_1 of Eq. 7)."""
    if scores:
        kept = sorted(kept, key=lambda p: -scores[p])
    return list(kept[:n])


def ladder_choice(text: str, ids: Sequence[str]) -> tuple[str | None, bool]:
    """(chosen id, valid) from a one-pass ladder reply: the ``<evidence>`` id when it is one of
    ``ids`` (valid), else the last ``<winner>`` among ``ids``, else None (both not valid)."""

    text = str(text)
    evidence = parse_tournament(text).evidence
    if evidence in ids:
        return evidence, True
    winners = [w for w in winner_ids(text) if w in ids]
    return (winners[-1] if winners else None), False


def candidate_objects(world, query, passage_ids: Sequence[str]):
    """MOLT ``Candidate``s for passage ids (strongest first): ids "1".."N", the passage text, its
    page's image, score = N - rank (so ``ladder_schedule`` keeps the given order)."""

    out = []
    for i, pid in enumerate(passage_ids):
        passage = world.passage(pid)
        out.append(Candidate(str(i + 1), passage.text, world.document(passage.doc_id).image, passage.doc_id, pid,
                             float(len(passage_ids) - i)))   # score = rank, c_1 strongest
    return out


def _first(outputs) -> list[str]:
    return [str(o[0] if isinstance(o, (list, tuple)) and o else o or "") for o in outputs]


def _one_pass(judge, world, queries, cands: list[list[str]], config: PipelineConfig) -> list[tuple]:

    todo = [i for i, c in enumerate(cands) if len(c) >= 2]
    prompts, objects = [], {}
    for i in todo:
        objs = objects[i] = candidate_objects(world, queries[i], cands[i])
        schedule = ladder_schedule([c.id for c in objs], config.order, [c.score for c in objs],
                                   query_seed(config.seed, queries[i].id))
        prompts.append(student_prompt(queries[i].question, queries[i].image, objs, schedule, config.short_prompts))
    texts = _first(judge.generate(prompts, n=1, max_new_tokens=config.ladder_tokens, temperature=0.0,
                                  seed=config.seed, batch_size=config.batch_size)) if prompts else []
    out = [(c[0] if c else None, len(c) == 1, 0, "") for c in cands]
    for i, text in zip(todo, texts):
        chosen, valid = ladder_choice(text, [c.id for c in objects[i]])
        pid = cands[i][int(chosen) - 1] if chosen else cands[i][0]
        out[i] = (pid, valid, 1, text[:300])
    return out


def _iterative(judge, world, queries, cands: list[list[str]], config: PipelineConfig) -> list[tuple]:

    objects = {i: {o.id: o for o in candidate_objects(world, queries[i], c)}
               for i, c in enumerate(cands) if len(c) >= 2}
    schedules = {i: ladder_schedule(list(o), config.order, [c.score for c in o.values()],
                                    query_seed(config.seed, queries[i].id)) for i, o in objects.items()}
    defender = {i: s[0] for i, s in schedules.items()}
    valid = {i: True for i in objects}
    for t in range(1, max((len(s) for s in schedules.values()), default=1)):
        live = [i for i, s in schedules.items() if t < len(s)]
        prompts = [pairwise_prompt(queries[i].question, queries[i].image, objects[i][defender[i]],
                                   objects[i][schedules[i][t]], config.short_prompts) for i in live]
        texts = _first(judge.generate(prompts, n=1, max_new_tokens=96, temperature=0.0, seed=config.seed + t,
                                      batch_size=config.batch_size)) if prompts else []
        for i, text in zip(live, texts):
            winner = pairwise_winner(text, defender[i], schedules[i][t])
            valid[i] = valid[i] and winner is not None
            defender[i] = winner or defender[i]     # a failed comparison changes nothing
    out = [(c[0] if c else None, len(c) == 1, 0, "") for c in cands]
    for i, s in schedules.items():
        out[i] = (cands[i][int(defender[i]) - 1], valid[i], len(s) - 1, "")
    return out


def _rerank(judge, world, queries, stages: list[dict], config: PipelineConfig) -> list[dict]:
    """Per query: the candidates, the passages the reader gets, the ladder's validity and calls."""
    if config.rerank == "none":
        return [{"candidates": [], "context": list(s["kept"]), "valid": None, "calls": 0, "ladder": ""}
                for s in stages]
    if config.rerank == "critic" and not all(s["scores"] or not s["kept"] for s in stages):
        raise ValueError("rerank='critic' needs P(Yes) scores in stage_inputs")
    n = config.keep if config.rerank == "critic" else config.candidates
    cands = [ladder_candidates(s["kept"], s["scores"], n) for s in stages]
    if config.rerank == "critic":
        picks = [(c, None, 0, "") for c in cands]
    elif config.rerank == "oracle":
        picks = [([next((p for p in c if p in q.evidence_ids), c[0])] if c else [], None, 0, "")
                 for c, q in zip(cands, queries)]
    else:
        if judge is None:
            raise ValueError(f"rerank={config.rerank!r} needs a judge model")
        run = _one_pass if config.rerank == "ladder" else _iterative
        picks = [([p] if p else [], v, k, t) for p, v, k, t in run(judge, world, queries, cands, config)]
    return [{"candidates": c, "context": p, "valid": v, "calls": k, "ladder": t}
            for c, (p, v, k, t) in zip(cands, picks)]


def run_pipeline(world, queries: Sequence, stage_inputs: dict | None, config: PipelineConfig, reader=None,
                 judge=None) -> list[dict]:
    """One record per query: passages and evidence recall after each stage, the ladder's pick,
    the reader's answer and whether it is right (the official scorer of its kind,
    ``kbvqa.metrics.official_correct``), and its split.

    ``reader`` / ``judge``: models with ``generate(prompts, n, max_new_tokens, temperature, seed,
    batch_size)`` (the judge only for ``rerank`` "ladder" / "iterative"; the reader only for
    ``reader="model"``). A query missing from ``stage_inputs`` raises ``ValueError``."""

    queries = list(queries)
    needs_inputs = config.retrieval in ("coarse", "coarse_fine")
    missing = [q.id for q in queries if needs_inputs and q.id not in (stage_inputs or {})]
    if missing:
        raise ValueError(f"no stage inputs (retrieval / critic scores) for queries {missing[:3]}")
    if config.reader == "model" and reader is None:
        raise ValueError("reader='model' needs a reader model")
    stages = [stage_passages((stage_inputs or {}).get(q.id, {}), config, q.evidence_ids) for q in queries]
    reranked = _rerank(judge, world, queries, stages, config)
    if config.reader == "model":
        prompts = [generator_prompt(q, [world.passage(p) for p in r["context"]], config.short_prompts,
                                    config.image_size) for q, r in zip(queries, reranked)]
        texts = _first(reader.generate(prompts, n=1, max_new_tokens=config.max_new_tokens, temperature=0.0,
                                       seed=config.seed, batch_size=config.batch_size)) if prompts else []
    records = []
    for i, (q, s, r) in enumerate(zip(queries, stages, reranked)):
        gold, inside = set(q.evidence_ids), bool(set(r["context"]) & set(q.evidence_ids))
        if config.reader == "model":
            text = texts[i]
            answer = parse_think_answer(text).answer
            correct = official_correct(answer, q)
        else:
            text, answer, correct = "", (q.answers[0] if inside and q.answers else None), inside
        records.append({"id": q.id, "answer_type": q.answer_type, "split": kbvqa_split_of(q),
                        "retrieved": len(s["retrieved"]), "kept": len(s["kept"]), "context": list(r["context"]),
                        "passages": len(r["context"]),
                        "ev_retrieved": bool(set(s["retrieved"]) & gold), "ev_critic": bool(set(s["kept"]) & gold),
                        "ev_candidates": bool(set(r["candidates"] or s["kept"]) & gold), "ev_context": inside,
                        "ladder_valid": r["valid"], "ladder_calls": r["calls"], "ladder_output": r["ladder"],
                        "answer": answer, "gold": list(q.answers), "correct": correct, "output": text[:300]})
    return records
