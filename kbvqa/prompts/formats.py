"""Pretraining tasks on the toy world's creatures: answer, judge, match, ground, read, recall.

Every task is a function ``(world, rng, cfg) -> Example`` that draws from the TRAINING splits only
(``kbvqa_train``, ``mc_train`` views, the knowledge-base documents) and renders the papers' prompts
(``kbvqa.prompts``; the ``_short`` renderings when ``cfg.short_prompts``):

- ``kbvqa_with_passages``  E-VQA/InfoSeek answer from a shuffled mix of the gold passage and 0-9
  distractors (look-alikes' same section, the gold page's other sections, random passages); three
  prompt styles: ReAG's generator (``<think>`` rationale + ``<answer>``), MOLT Tables 15 and 16.
  With probability ``cfg.gold_missing_rate`` the gold passage is left out and the target is
  ``UNKNOWN``: the model answers only from evidence.
- ``kbvqa_no_passage``  ReAG's j = 0 prompt (question and image alone) -> ``UNKNOWN``. Why: the
  model card expects no-passage accuracy to be low (knowledge comes from retrieval); training the
  answer here would teach the tiny model to memorise entity facts instead of reading passages.
- ``critic_judgement``  ReAG critic (supp. D) -> "Yes"/"No"; negatives 30 % soft (the gold page's
  other sections, "semantically related but unhelpful", or a random passage) and 70 % hard (the
  same section of a look-alike's page), as ReAG supp. C.
- ``pairwise_match``  MOLT Table 12: query image + question and two candidates (document image,
  summary + the asked section); target ``<think>..</think><winner>id</winner>``.
- ``grounding``  MOLT Table 11: the subject's box ``[x1, y1, x2, y2]`` in pixels of the image as
  shown (``cfg.image_size``, 56 for the tiny model: the 112 px view downscaled, box scaled).
- ``document_lm``  a whole page (its picture, title, summary, sections) or a literature abstract,
  language-model loss over everything (``loss_on="all"``).
- ``lookup_drill``  several facts about look-alikes, then questions about them (associative
  recall, the skill a 1.45M-parameter model trained from scratch never left its first plateau
  on). Values are permuted among the drill's creatures, so only the context answers (a memorised
  fact is usually wrong); sentences follow the passages' wording.

Every example's ``meta`` lists the ids it used (``query_ids``, ``image_ids``, ``doc_ids``) so that
tests can prove no test item leaks in. Multiple choice and literature tasks: ``pretrain_mc_lit``.

Leaves out: the mixture and its config (``pretrain_mix``), training (the tiny-model stage).
"""
from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass, field
from typing import Any

from kbvqa.data.schema import Passage, Query
from kbvqa.data.toy_documents import entity_fields
from kbvqa.data.toy_questions import ATTRIBUTE_BY_NAME
from kbvqa.data.toy_shapes import with_look
from kbvqa.prompts import render_chat

UNKNOWN = "I don't know"
NO_EVIDENCE_THOUGHT = "No passage tells this about the creature in the image."
KBVQA_STYLES = ("reag", "evqa", "infoseek")


@dataclass
class Example:
    """One training (or evaluation) item: a chat prompt and the target completion."""

    prompt: list[dict]                 # chat in kbvqa.models.chat format; images are lazy callables
    completion: str                    # the target the model must produce
    task: str                          # task name (a key of pretrain_mix.TASKS or an eval task)
    loss_on: str = "completion"        # "completion" (answer-only loss) or "all" (LM loss everywhere)
    meta: dict[str, Any] = field(default_factory=dict)   # ids used and gold facts for scoring


# --- images ----------------------------------------------------------------------------------
def _scaled_view(world, view_id: str, size: int | None):
    image = world.image_of(view_id)
    if size is None or image.size == (size, size):
        return image
    from PIL import Image

    return image.resize((size, size), Image.Resampling.BILINEAR)


def view_ref(world, view_id: str, size: int | None):
    """A lazy image reference: ``view_id`` rendered and downscaled to ``size`` px on first use."""
    return functools.partial(_scaled_view, world, view_id, size)


def scale_box(box, from_size: int, to_size: int | None) -> list[int]:
    """A pixel box ``(x0, y0, x1, y1)`` of a ``from_size`` image in a ``to_size`` image (outward
    rounding, clipped); ``to_size=None`` keeps it."""
    if to_size is None:
        return [int(v) for v in box]
    f = to_size / from_size
    x0, y0, x1, y1 = box
    return [max(0, math.floor(x0 * f)), max(0, math.floor(y0 * f)),
            min(to_size, math.ceil(x1 * f)), min(to_size, math.ceil(y1 * f))]


def _query_image(world, q: Query, cfg):
    return view_ref(world, q.meta["view_id"], cfg.image_size)


def _doc_image(world, doc, cfg):
    return view_ref(world, doc.meta["image_id"], cfg.image_size)


# --- passages ------------------------------------------------------------------------------------
def reag_paragraphs(texts: list[str]) -> str:
    """ReAG's generator context: one ``<paragraph>...</paragraph>`` per passage, one per line."""
    return "\n".join(f"<paragraph>{t}</paragraph>" for t in texts)


def molt_candidates(entries: list[tuple[Any, str]]) -> str:
    """MOLT's candidate list: ``[id] Image: <image>`` then ``Paragraph: ...`` per (id, paragraph)."""
    return "\n".join(f"[{cid}] Image: <image>\nParagraph: {para}" for cid, para in entries)


def _mentions(text: str, name: str) -> bool:
    return re.search(rf"\b{re.escape(name)}s?\b", text, re.IGNORECASE) is not None


def distractor_passages(world, q: Query, rng, n: int, mix=(0.5, 0.25, 0.25)) -> list[Passage]:
    """``n`` passages that do not answer ``q``: the same section of look-alikes' pages (hard),
    other sections of the gold page, random passages of other pages (weights ``mix``). Passages of
    other pages that name the subject are skipped, so the gold passage is the only evidence."""
    return passages_around(world, world.entity(q.meta["entity_id"]), world.passage(q.evidence_ids[0]), rng, n, mix)


def passages_around(world, entity, gold: Passage, rng, n: int, mix=(0.5, 0.25, 0.25)) -> list[Passage]:
    """``distractor_passages`` for any creature ``entity`` and its passage ``gold`` (no question needed)."""
    section = gold.section
    hard = [world.document_of(e.id).passage(section) for e in world.lookalikes(entity.id)]
    same_doc = [p for p in world.document_of(entity.id).passages if p.section != section]
    pools = [[p for p in hard if not _mentions(p.text, entity.name)], same_doc]
    chosen: list[Passage] = []
    for _ in range(max(0, n)):
        kind = rng.choices((0, 1, 2), weights=mix)[0]
        pool = [p for p in pools[kind] if p not in chosen] if kind < 2 else []
        if pool:
            chosen.append(rng.choice(pool))
            continue
        for _ in range(50):  # random passage of another page that does not name the subject
            doc = rng.choice(world.documents)
            p = rng.choice(doc.passages)
            if doc.id != gold.doc_id and p not in chosen and not _mentions(p.text, entity.name):
                chosen.append(p)
                break
    return chosen


def kbvqa_answer_text(q: Query) -> str:
    """The target answer: the first gold answer; the items joined by ", " for multi-answer."""
    return ", ".join(q.answers) if q.answer_type == "multi" else q.answers[0]


def kbvqa_meta(q: Query, passages: list[Passage], **extra) -> dict:
    return {"query_ids": [q.id], "image_ids": [q.meta["view_id"]],
            "doc_ids": sorted({p.doc_id for p in passages}), "passage_ids": [p.id for p in passages],
            "answers": list(q.answers), "answer_type": q.answer_type, "answer_range": q.answer_range,
            **extra}


def kbvqa_prompt(world, q: Query, passages: list[Passage], style: str, cfg) -> list[dict]:
    """The KB-VQA prompt of ``style`` ("reag", "evqa", "infoseek") for ``q`` and ``passages``."""
    image, texts = _query_image(world, q, cfg), [p.text for p in passages]
    if style == "reag":
        if not passages:
            return render_chat("reag_generator_no_passage", images=[image], short=cfg.short_prompts,
                               question=q.question)
        return render_chat("reag_generator", images=[image], short=cfg.short_prompts,
                           question=q.question, paragraphs=reag_paragraphs(texts))
    if style not in KBVQA_STYLES:
        raise ValueError(f"unknown KB-VQA style {style!r}; expected one of {KBVQA_STYLES}")
    return render_chat(f"{style}_answer", images=[image], short=cfg.short_prompts, question=q.question,
                       retrieved_section_text="\n".join(texts) if texts else "None")


def kbvqa_target(q: Query, style: str, answerable: bool) -> str:
    answer = kbvqa_answer_text(q) if answerable else UNKNOWN
    if style != "reag":
        return answer
    thought = q.meta["rationale"] if answerable else NO_EVIDENCE_THOUGHT
    return f"<think>{thought}</think><answer>{answer}</answer>"


def kbvqa_with_passages(world, rng, cfg) -> Example:
    q = rng.choice(world.kbvqa_train)
    style = rng.choices(KBVQA_STYLES, weights=cfg.kbvqa_style_weights)[0]
    n_total = rng.randint(1, cfg.max_passages)
    with_gold = rng.random() >= cfg.gold_missing_rate
    passages = distractor_passages(world, q, rng, n_total - with_gold, cfg.distractor_mix)
    if with_gold:
        passages.insert(rng.randint(0, len(passages)), world.passage(q.evidence_ids[0]))
    return Example(kbvqa_prompt(world, q, passages, style, cfg), kbvqa_target(q, style, with_gold),
                   "kbvqa_with_passages", meta=kbvqa_meta(q, passages, style=style, gold_included=with_gold))


def kbvqa_no_passage(world, rng, cfg) -> Example:
    q = rng.choice(world.kbvqa_train)
    return Example(kbvqa_prompt(world, q, [], "reag", cfg), kbvqa_target(q, "reag", False),
                   "kbvqa_no_passage", meta=kbvqa_meta(q, [], style="reag", gold_included=False))


# --- critic, pairwise, grounding --------------------------------------------------------------
def critic_negative(world, q: Query, rng, hard_rate: float) -> tuple[Passage, str]:
    """(a passage that does not answer ``q``, "hard" | "soft")."""
    if rng.random() < hard_rate:
        got = distractor_passages(world, q, rng, 1, mix=(1.0, 0.0, 0.0))
        return got[0], "hard"
    return distractor_passages(world, q, rng, 1, mix=(0.0, 0.5, 0.5))[0], "soft"


def critic_example(world, q: Query, passage: Passage, label: str, kind: str, cfg, task: str) -> Example:
    prompt = render_chat("reag_critic", images=[_query_image(world, q, cfg)], short=cfg.short_prompts,
                         question=q.question, passage=passage.text)
    return Example(prompt, label, task, meta=kbvqa_meta(q, [passage], label=label, negative_kind=kind))


def critic_judgement(world, rng, cfg) -> Example:
    q = rng.choice(world.kbvqa_train)
    if rng.random() < cfg.critic_positive_rate:
        return critic_example(world, q, world.passage(q.evidence_ids[0]), "Yes", "", cfg, "critic")
    passage, kind = critic_negative(world, q, rng, cfg.critic_hard_rate)
    return critic_example(world, q, passage, "No", kind, cfg, "critic")


def pairwise_example(world, q: Query, other_doc, rng, cfg, task: str = "pairwise") -> Example:
    """MOLT pairwise comparison of the gold page and ``other_doc`` for ``q`` (random ids 1-5)."""
    gold_doc = world.document(q.gold_doc_ids[0])
    section = world.passage(q.evidence_ids[0]).section
    docs = [gold_doc, other_doc]
    rng.shuffle(docs)
    ids = rng.sample(range(1, 6), 2)
    paras = [f"{d.summary} {d.passage(section).text}" for d in docs]
    prompt = render_chat("molt_pairwise", short=cfg.short_prompts, question=q.question,
                         images=[_query_image(world, q, cfg)] + [_doc_image(world, d, cfg) for d in docs],
                         id_a=ids[0], paragraph_a=paras[0], id_b=ids[1], paragraph_b=paras[1])
    win = ids[docs.index(gold_doc)]
    e = world.entity(q.meta["entity_id"])
    look = with_look(e.family, e.colour, e.pattern)
    completion = (f"<think>The creature in the query image is {look}, as the {e.name} of candidate "
                  f"[{win}].</think><winner>{win}</winner>")
    meta = {"query_ids": [q.id], "image_ids": [q.meta["view_id"]] + [d.meta["image_id"] for d in docs],
            "doc_ids": [d.id for d in docs], "winner": str(win), "candidate_ids": [str(i) for i in ids]}
    return Example(prompt, completion, task, meta=meta)


def pairwise_match(world, rng, cfg) -> Example:
    q = rng.choice(world.kbvqa_train)
    entity_id = q.meta["entity_id"]
    if rng.random() < cfg.pairwise_lookalike_rate:
        other = world.document_of(rng.choice(world.lookalikes(entity_id)).id)
    else:
        other = rng.choice([d for d in world.documents if d.meta["family"] != q.meta["family"]])
    return pairwise_example(world, q, other, rng, cfg)


def grounding_example(world, q: Query, cfg, task: str = "grounding") -> Example:
    side = cfg.image_size or world.config.image_size
    prompt = render_chat("molt_grounding", images=[_query_image(world, q, cfg)], short=cfg.short_prompts,
                         question=q.question, img_width=side, img_height=side)
    box = scale_box(q.box, world.config.image_size, cfg.image_size)
    return Example(prompt, "[" + ", ".join(map(str, box)) + "]", task,
                   meta={"query_ids": [q.id], "image_ids": [q.meta["view_id"]], "doc_ids": [], "box": box,
                         "image_size": side})


def grounding(world, rng, cfg) -> Example:
    return grounding_example(world, rng.choice(world.kbvqa_train + world.mc_train), cfg)


# --- reading and recall -------------------------------------------------------------------------
def document_text(doc) -> str:
    return "\n".join([doc.summary] + [p.text for p in doc.passages])


def document_lm(world, rng, cfg) -> Example:
    if rng.random() < cfg.doc_lm_literature_rate:
        item = rng.choice(world.literature)
        return Example([{"role": "user", "content": [{"type": "text", "text": item.title}]}], item.text,
                       "document_lm", loss_on="all", meta={"query_ids": [], "image_ids": [],
                                                             "doc_ids": [item.id]})
    doc = rng.choice(world.documents)
    prompt = [{"role": "user", "content": [{"type": "image", "image": _doc_image(world, doc, cfg)},
                                           {"type": "text", "text": doc.title}]}]
    return Example(prompt, document_text(doc), "document_lm", loss_on="all",
                   meta={"query_ids": [], "image_ids": [doc.meta["image_id"]], "doc_ids": [doc.id]})


DRILL_ATTRIBUTES = {"habitat": "habitat", "region": "region", "diet": "diet",
                    "described_by": "describer", "length": "length", "weight": "weight",
                    "lifespan": "lifespan", "year": "year"}   # attribute -> field of entity_fields


def _fact_sentence(name: str, clause: str) -> str:
    """"it eats moss" -> "The zorvel eats moss."; "its range is ..." -> "The zorvel's range is ..."."""
    if clause.startswith("its "):
        return f"The {name}'s {clause[4:]}."
    return f"The {name} {clause.removeprefix('it ')}."


def lookup_drill(world, rng, cfg) -> Example:
    """Facts "The X lives in ..." about 2-4 look-alikes, then "Q: ... A: value." questions."""
    family = rng.choice([f for f in world.families if len(f.member_ids) >= 2])
    n_entities = min(len(family.member_ids), rng.randint(*cfg.drill_entities))
    members = [world.entity(m) for m in rng.sample(list(family.member_ids), n_entities)]
    names = {e.id: e.name for e in world.entities}
    families = {f.id: f for f in world.families}
    fields = [entity_fields(e, names, families) for e in members]
    attrs = rng.sample(sorted(DRILL_ATTRIBUTES), rng.randint(*cfg.drill_attributes))
    for a in attrs:  # permute values among the drill's creatures: only the context knows them
        key = DRILL_ATTRIBUTES[a]
        values = [f[key] for f in fields]
        rng.shuffle(values)
        for f, v in zip(fields, values):
            f[key] = v
    facts = [(e, a, f) for e, f in zip(members, fields) for a in attrs]
    rng.shuffle(facts)
    text = " ".join(_fact_sentence(e.name, ATTRIBUTE_BY_NAME[a].clause.format(**f)) for e, a, f in facts)
    lines = []
    for _ in range(len(facts)):  # queries drawn with replacement (a permutation can be gamed)
        e, a, f = rng.choice(facts)
        template = rng.choice(ATTRIBUTE_BY_NAME[a].templates).replace("this {noun}", "the {noun}")
        lines.append(f"Q: {template.format(noun=e.name)} A: {f[DRILL_ATTRIBUTES[a]]}.")
    return Example([{"role": "user", "content": [{"type": "text", "text": text}]}], "\n".join(lines),
                   "lookup_drill", meta={"query_ids": [], "image_ids": [], "doc_ids": [],
                                         "entities": [e.id for e in members], "attributes": attrs})

