"""Evaluating ReAG's critic: recall and specificity (Tab. 6), passages kept (Fig. 7, "128.6 -> 5.7"),
the threshold sweep (Fig. 8) and the P(Yes) separation of relevant, hard and soft passages.

- ``critic_items(world, n, k)``: what the critic sees in the pipeline: for the first ``n`` test
  queries, every passage of the top-``k`` pages of coarse retrieval (``multilevel``), or of a given
  retriever. A passage is relevant when its id is in ``query.evidence_ids``.
- ``heldout_critic_items(world, n)``: balanced labelled pairs from the TEST split, built like the
  training data (evidence / hard / soft negatives), for a training-independent check.
- ``naming_gate_items(world)`` / ``naming_gate(items, splits, scores)``: issue 53's gate, from fresh
  renders of the creatures (never a test view): does the critic tell a creature's page from its
  look-alikes' (AUC >= 0.8), for the creatures with training questions and for those without?
- ``filtering_stats(items, scores, threshold)``: passage-level recall (relevant kept / relevant),
  specificity (irrelevant dropped / irrelevant), precision, passages per query before/after, the
  share of queries whose evidence survives, the share with every passage filtered (j = 0).
- ``critic_table(items, scores, thresholds)``: a "no critic" row and one row per threshold.
- ``evidence_items(world, queries, evidence)``: the same items and the P(Yes) a ladder run kept
  (``evidence.json``), for the tables above without a model.
- ``pipeline_kinds`` / ``pipeline_separation(world, queries, evidence)``: the same separation on
  the passages retrieval really returned (a ladder's ``evidence`` records): the evidence against
  the same section of the other retrieved creatures (hard), the right creature's other sections
  (soft) and the rest, and how often the evidence outscores every hard one (chance: 1 / (1 + hard)).
- ``threshold_sweep(items, scores, thresholds, judge)``: the same per threshold and, given a
  ``judge``, the generator's accuracy on the kept passages (Fig. 8). A judge maps a list of
  ``(query, kept passages)`` to one bool each; the sweep asks it once, for the distinct kept sets
  only (many thresholds keep the same passages). ``generator_judge(vlm)`` builds one from a VLM.

Leaves out: scoring (``critic.Critic``), training (``kbvqa.reag.critic_train``), plots (``kbvqa.viz.critic``).
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence

from kbvqa.config import PROFILE_DEFAULT, profile_value
from kbvqa.metrics import official_correct, roc_auc, separation_auc
from kbvqa.parsers import parse_think_answer
from kbvqa.prompts.formats import critic_negative
from kbvqa.reag.critic import CLI_THRESHOLD, REAG_THRESHOLD, check_threshold, generator_prompt, passage_id
from kbvqa.retrieval.multilevel import MultilevelConfig, MultilevelRetriever

__all__ = ["NAMING_GATE_AUC", "critic_items", "critic_table", "evidence_items", "filtering_stats", "generator_judge",
           "heldout_critic_items", "labels_of", "naming_gate", "naming_gate_items", "pipeline_kinds",
           "pipeline_separation", "threshold_sweep"]
SWEEP = (0.0, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)


def critic_items(world, n: int | None = 50, k: int = 3, retriever=None, split: str = "kbvqa_test") -> list[tuple]:
    """``(query, passages)`` for the first ``n`` queries: every passage of the top-``k`` pages that
    ``retriever`` (default: coarse ``MultilevelRetriever`` over ``world.documents``) returns."""

    queries = list(getattr(world, split))[:n]
    retriever = retriever or MultilevelRetriever(world.documents, config=MultilevelConfig(k=k, use_fine=False))
    results = retriever.retrieve(queries)
    return [(q, [p.passage for p in r.passages]) for q, r in zip(queries, results)]


def heldout_critic_items(world, n: int = 100, seed: int = 0, hard_rate: float = 0.7,
                         split: str = "kbvqa_test") -> tuple[list[tuple], list[str]]:
    """(items, kinds): ``(query, [passage])`` pairs from the test split, the evidence for even i
    (kind "relevant"), a negative for odd i (kind "hard" with probability ``hard_rate``, else "soft")."""

    queries, rng, items, kinds = list(getattr(world, split)), random.Random(f"critic-eval:{seed}"), [], []
    for i in range(n):
        q = queries[(i // 2) % len(queries)]
        passage, kind = ((world.passage(q.evidence_ids[0]), "relevant") if i % 2 == 0
                         else critic_negative(world, q, rng, hard_rate))
        items.append((q, [passage]))
        kinds.append(kind)
    return items, kinds


NAMING_GATE_AUC = 0.8   # issue 53: the critic separates a creature's page from its look-alikes' this well


def naming_gate_items(world, n_per_split: int = 100, seed: int = 0, image_size: int | None = 112
                      ) -> tuple[list[tuple], list[str], list[str]]:
    """(items, kinds, splits) for issue 53's gate: "Which creature is this <family>?" over a FRESH
    render of a creature (``kbvqa.reader.tasks.fresh_view``, in the seed namespace
    ``critic-naming-gate``: never a test view, never a training tuple's draw), with a section of its
    own page (kind "relevant", even i) or the same section of a look-alike's page ("hard", odd i).
    ``n_per_split`` items for the creatures with training questions (split "seen") and as many for
    those without ("unseen"). Each query is a ``Query`` whose ``evidence_ids`` hold the own page's
    passage, so ``labels_of`` and ``Critic.score_many`` read the items as any others."""
    from kbvqa.data.schema import Query
    from kbvqa.reader.tasks import fresh_view
    from kbvqa.reag.critic_train import NAMING_QUESTION

    if n_per_split < 1:
        raise ValueError(f"n_per_split must be >= 1, got {n_per_split}")
    asked = {q.meta["entity_id"] for q in world.kbvqa_train}
    groups = {"seen": [e for e in world.entities if e.id in asked],
              "unseen": [e for e in world.entities if e.id not in asked]}
    items, kinds, splits = [], [], []
    for split, entities in groups.items():
        if not entities:
            raise ValueError(f"the world has no {split} creature to gate on")
        for i in range(n_per_split):
            rng = random.Random(f"critic-naming-gate:{seed}:{split}:{i}")
            entity = entities[(i // 2) % len(entities)]
            own = rng.choice(world.document_of(entity.id).passages)
            passage, kind = own, "relevant"
            if i % 2:
                other = world.document_of(rng.choice(world.lookalikes(entity.id)).id)
                passage = next((x for x in other.passages if x.section == own.section), other.passages[0])
                kind = "hard"
            query = Query(id=f"naming-gate-{split}-{i}", question=NAMING_QUESTION.format(family=entity.family),
                          answers=[entity.name], image=fresh_view(world, entity, rng, image_size),
                          evidence_ids=[own.id], split=split, meta={"entity_id": entity.id})
            items.append((query, [passage]))
            kinds.append(kind)
            splits.append(split)
    return items, kinds, splits


def naming_gate(items: Sequence[tuple], splits: Sequence[str], scores: Sequence[Sequence[float]],
                min_auc: float = NAMING_GATE_AUC) -> dict:
    """Per split of ``naming_gate_items``: the AUC of the own page's P(Yes) against the look-alikes'
    and whether it reaches ``min_auc``; ``passed`` when every split does (issue 53: before any
    passage is re-scored)."""
    _check(items, scores)
    if len(splits) != len(items):
        raise ValueError(f"one split per item: {len(items)} items, {len(splits)} splits")
    labels = labels_of(items)
    out = {}
    for split in dict.fromkeys(splits):
        pos = [s for (sc, lab, sp) in zip(scores, labels, splits) if sp == split for s, y in zip(sc, lab) if y]
        neg = [s for (sc, lab, sp) in zip(scores, labels, splits) if sp == split for s, y in zip(sc, lab) if not y]
        auc = roc_auc(pos + neg, [True] * len(pos) + [False] * len(neg)) if pos and neg else None
        out[split] = {"auc": auc, "relevant": len(pos), "lookalike": len(neg),
                      "passed": auc is not None and auc >= min_auc}
    return {"splits": out, "min_auc": min_auc, "passed": bool(out) and all(v["passed"] for v in out.values())}


def labels_of(items: Sequence[tuple]) -> list[list[bool]]:
    """Relevance of every passage: its id is one of the query's ``evidence_ids``."""
    return [[passage_id(p) in set(q.evidence_ids) for p in passages] for q, passages in items]


def _check(items, scores):
    if len(items) != len(scores) or any(len(p) != len(s) for (_, p), s in zip(items, scores)):
        raise ValueError("scores must hold one P(Yes) per passage of every item")


def _ratio(num: float, den: float) -> float:
    return round(num / den, 4) if den else float("nan")


def filtering_stats(items: Sequence[tuple], scores: Sequence[Sequence[float]], threshold: float | None) -> dict:
    """Passage-level filtering statistics at ``threshold`` (``None``: no critic, keep everything)."""
    _check(items, scores)
    t = None if threshold is None else check_threshold(threshold)
    tp = fn = tn = fp = kept_total = all_filtered = evidence_queries = evidence_kept = 0
    for labels, row in zip(labels_of(items), scores):
        keep = [True] * len(row) if t is None else [s > t for s in row]
        tp += sum(k and y for k, y in zip(keep, labels))
        fn += sum(not k and y for k, y in zip(keep, labels))
        fp += sum(k and not y for k, y in zip(keep, labels))
        tn += sum(not k and not y for k, y in zip(keep, labels))
        kept_total += sum(keep)
        all_filtered += not any(keep)
        if any(labels):
            evidence_queries += 1
            evidence_kept += any(k and y for k, y in zip(keep, labels))
    n = len(items)
    return {"threshold": t, "recall": _ratio(tp, tp + fn), "specificity": _ratio(tn, tn + fp),
            "precision": _ratio(tp, tp + fp), "accuracy": _ratio(tp + tn, tp + tn + fp + fn),
            "passages_before": _ratio(sum(len(p) for _, p in items), n), "passages_after": _ratio(kept_total, n),
            "evidence_kept": _ratio(evidence_kept, evidence_queries), "all_filtered": _ratio(all_filtered, n),
            "relevant": tp + fn, "irrelevant": tn + fp}


def evidence_items(world, queries, evidence: dict, stage: str = "coarse") -> tuple[list[tuple], list[list[float]]]:
    """``(items, scores)`` for ``critic_table`` / ``threshold_sweep`` from a ladder's ``evidence``
    records ({query id: record}, ``kbvqa.reag.ladder.retrieve_evidence``): each query's ``stage``
    passages and the P(Yes) the run's critic gave them, so the tables need no model."""
    if stage not in ("coarse", "fine"):
        raise ValueError(f"stage must be 'coarse' or 'fine', got {stage!r}")
    items, scores = [], []
    for q in queries:
        record = evidence[q.id]
        if any(s is None for s in record[f"{stage}_scores"]):
            raise ValueError(f"{q.id}: the {stage} passages were not scored by a critic")
        items.append((q, [world.passage(p) for p in record[stage]]))
        scores.append(list(record[f"{stage}_scores"]))
    _check(items, scores)
    return items, scores


def pipeline_kinds(world, query, passage_ids: Sequence[str]) -> list[str]:
    """The kind of each retrieved passage for ``query``: "relevant" (an evidence id), "hard" (an
    evidence passage's section on another page: reads just like it), "soft" (another section of an
    evidence page) or "other"."""
    evidence = [world.passage(p) for p in query.evidence_ids]
    docs, sections = {p.doc_id for p in evidence}, {p.section for p in evidence}
    kinds = []
    for pid in passage_ids:
        p = world.passage(pid)
        kinds.append("relevant" if pid in query.evidence_ids else "soft" if p.doc_id in docs
                     else "hard" if p.section in sections else "other")
    return kinds


def pipeline_separation(world, queries, evidence: dict, stage: str = "coarse") -> dict:
    """How the critic's P(Yes) separates the passages ``stage`` retrieval returned (``evidence``:
    {query id: record} as ``kbvqa.reag.ladder.retrieve_evidence`` writes them): ``auc`` of the
    evidence against each ``pipeline_kinds`` kind over every scored passage, ``top_of_hard``
    (queries whose evidence outscores every hard passage) beside ``chance`` (its mean under random
    scores, 1 / (1 + hard)), over the ``queries`` whose evidence was retrieved (``n``)."""
    if stage not in ("coarse", "fine"):
        raise ValueError(f"stage must be 'coarse' or 'fine', got {stage!r}")
    scores, kinds, top, chance, n = [], [], 0, 0.0, 0
    for q in queries:
        record = evidence[q.id]
        ids, row = record[stage], record[f"{stage}_scores"]
        if len(ids) != len(row) or any(s is None for s in row):
            raise ValueError(f"{q.id}: the {stage} passages need one P(Yes) each")
        kind = pipeline_kinds(world, q, ids)
        if "relevant" not in kind:
            continue
        n += 1
        scores += row
        kinds += kind
        best = max(s for s, k in zip(row, kind) if k == "relevant")
        hard = [s for s, k in zip(row, kind) if k == "hard"]
        top += all(best > s for s in hard)
        chance += 1 / (1 + len(hard))
    return {"n": n, "auc": separation_auc(scores, kinds) if n else {}, "top_of_hard": _ratio(top, n),
            "chance": _ratio(chance, n)}


def critic_table(items: Sequence[tuple], scores: Sequence[Sequence[float]],
                 thresholds: Sequence[float] = (REAG_THRESHOLD, CLI_THRESHOLD)) -> list[dict]:
    """Tab. 6 / Fig. 7 analogue: a "no critic" row, then one row per threshold."""
    return [filtering_stats(items, scores, None)] + [filtering_stats(items, scores, t) for t in thresholds]


def threshold_sweep(items: Sequence[tuple], scores: Sequence[Sequence[float]], thresholds: Sequence[float] = SWEEP,
                    judge: Callable[[list[tuple]], Sequence[bool]] | None = None) -> list[dict]:
    """Fig. 8 analogue: ``filtering_stats`` per threshold plus, with a ``judge``, ``answer_accuracy``
    (the share of queries answered right from the kept passages) and ``judged`` (distinct kept
    sets the judge saw in total)."""
    _check(items, scores)
    rows = [filtering_stats(items, scores, t) for t in thresholds]
    if judge is None:
        return rows
    kept = {t: [tuple(i for i, s in enumerate(row) if s > t) for row in scores] for t in thresholds}
    distinct = sorted({(qi, ks) for t in thresholds for qi, ks in enumerate(kept[t])})
    verdicts = list(judge([(items[qi][0], [items[qi][1][i] for i in ks]) for qi, ks in distinct]))
    if len(verdicts) != len(distinct):
        raise ValueError(f"the judge returned {len(verdicts)} verdicts for {len(distinct)} inputs")
    right = dict(zip(distinct, verdicts))
    for row, t in zip(rows, thresholds):
        row["answer_accuracy"] = _ratio(sum(bool(right[(qi, ks)]) for qi, ks in enumerate(kept[t])), len(items))
        row["judged"] = len(distinct)
    return rows


def generator_judge(vlm, short: bool | str = PROFILE_DEFAULT, image_size: int | None | str = PROFILE_DEFAULT,
                    max_new_tokens: int = 48, batch_size: int = 16,
                    role: str = "rl_policy") -> Callable[[list[tuple]], list[bool]]:
    """A judge for ``threshold_sweep``: ``vlm`` answers ReAG's generator prompt greedily (no
    passage -> question and image alone); the answer, extracted by supp. B's chain
    (``parse_think_answer``), is scored by the official scorer of its kind
    (``kbvqa.metrics.official_correct``). ``short`` and ``image_size`` default to the profile's for
    the model that plays ``role`` (the generator, ``rl_policy``)."""

    short = profile_value("short_prompts", short, role=role)
    image_size = profile_value("image_size", image_size, role=role)

    def judge(pairs: list[tuple]) -> list[bool]:
        if not pairs:
            return []
        prompts = [generator_prompt(q, kept, short=short, image_size=image_size) for q, kept in pairs]
        outs = vlm.generate(prompts, n=1, max_new_tokens=max_new_tokens, temperature=0, batch_size=batch_size)
        verdicts = []
        for (q, _), out in zip(pairs, outs):
            try:
                verdicts.append(official_correct(parse_think_answer(out[0]).answer, q))
            except ValueError:   # no usable gold: wrong
                verdicts.append(False)
        return verdicts

    return judge
