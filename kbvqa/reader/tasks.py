"""The reader's training data: fresh views of every creature, naming, and the task mixture.

Three sources, all from the toy world's knowledge base and TRAINING splits (never a test view):

- ``ViewBank``: ``views_per_entity`` freshly rendered query-style views of every knowledge-base
  creature (random size, place, flip, background, texture, noise and 1-3 creatures of other
  families as clutter, exactly as the world draws its query views, but from the seed namespace
  ``"reader-view"``, disjoint from the world's), plus its document picture. InfoSeek's unseen
  entities still have a knowledge-base entry with pictures; so do ours: the vision stage sees every
  creature's page picture and fresh renders of it, never a question about an unseen creature.
- ``creature_name``: "Which creature is this?" -> "The image shows the <name>, a <family> with
  <colour> <pattern>." (the first sentence of ReAG-style rationales): it binds image tokens to names,
  for every knowledge-base creature (training views, page pictures, fresh renders);
  ``in_rationale_order`` puts that sentence (here and in every rationale) description first.
- ``look_name`` (text only): "Which creature is a driftfin with pink zigzags?" -> "A driftfin with pink
  zigzags: the desnusk." for every knowledge-base creature: the recall half of a description-first
  rationale, learnt from words alone, so the name follows from what was written about the picture.
- ``kbvqa_ten_passages``: a training question in ReAG's style with its gold passage among 10, the
  distractors drawn as the card draws them (``ten_passage_config``: look-alikes' same section).
- ``ten_passage_naming``: "Which creature is this <family>?" in that layout for ANY knowledge-base
  creature -> its naming sentence and name (no fact asked, so held-out creatures are named too).
- ``molt_ladder``: MOLT Table 14's one-pass ladder over five candidates with the toy world's oracle
  teacher (MOLT §3.2.1 with the positive forced to win), as the MOLT SFT data builds it.
- every task of the tiny model's mixture (``kbvqa.models.pretrain_mix.TASKS``) at the reader's
  image size; ``READER_WEIGHTS`` is the reader's mixture (commented).

Leaves out: the optimiser loops (``train.py``), evaluation (``card.py``).
"""
from __future__ import annotations

import dataclasses
import random
import re
from collections.abc import Iterator

import numpy as np

from kbvqa.data.toy_images import layout_view, render_view
from kbvqa.data.toy_shapes import with_look
from kbvqa.models.pretrain_mix import TASKS, PretrainMixConfig
from kbvqa.prompts import formats, render_chat
from kbvqa.prompts.formats import Example, view_ref

# The reader's mixture. KB-VQA reading dominates (the card's blocking rows), the counterfactual
# copy keeps answers tied to the passage rather than to memory, and every paper's format keeps a
# share. document_lm is left out: SmolLM2 already reads English, and memorising pages would raise
# no-passage accuracy, which must stay low (knowledge comes from retrieval).
READER_WEIGHTS = {
    "kbvqa_with_passages": 0.30, "kbvqa_counterfactual": 0.11, "kbvqa_no_passage": 0.03,
    "critic": 0.10, "mc_in_context": 0.09, "reasoning_context_write": 0.02,
    "reasoning_context_answer": 0.02, "serts_query": 0.03, "serts_grade": 0.03, "serts_answer": 0.02,
    "pairwise": 0.05, "grounding": 0.04, "lookup_drill": 0.03, "creature_name": 0.09, "molt_ladder": 0.04,
}


# Where the rationale names the creature. "name_first" (rounds 0-3): "The image shows the desnusk,
# a driftfin with pink zigzags." -- the name is guessed from the picture before anything is said
# about it. "describe_first": "The image shows a driftfin with pink zigzags: the desnusk." -- the
# family (which the question often gives), the colour and the pattern are written first, each read
# from the picture, and the name is then recalled from what was written (perception before recall).
RATIONALE_ORDERS = ("name_first", "describe_first")
_NAME_FIRST = re.compile(r"The image shows the ([a-z]+), (an? [^.]+?)\.")


def naming_sentence(entity, order: str = "name_first") -> str:
    if order == "describe_first":
        return f"The image shows {with_look(entity.family, entity.colour, entity.pattern)}: the {entity.name}."
    if order != "name_first":
        raise ValueError(f"rationale order must be one of {RATIONALE_ORDERS}, got {order!r}")
    return f"The image shows the {entity.name}, a {entity.family} with {entity.colour} {entity.pattern}."


def in_rationale_order(example: Example, order: str, world) -> Example:
    """``example`` with its naming sentence in ``order`` (name_first: unchanged). A naming example is
    rebuilt from its creature; in any other completion the rationale's first sentence is rewritten."""
    if order == "name_first":
        return example
    if order not in RATIONALE_ORDERS:
        raise ValueError(f"rationale order must be one of {RATIONALE_ORDERS}, got {order!r}")
    if example.task == "creature_name":
        completion = naming_sentence(world.entity(example.meta["entity_id"]), order)
    else:
        completion = _NAME_FIRST.sub(r"The image shows \2: the \1.", example.completion)
    return dataclasses.replace(example, completion=completion)


def naming_example(image, entity, task: str = "creature_name") -> Example:
    prompt = [{"role": "system", "content": [{"type": "text", "text": "Name the creature in the image."}]},
              {"role": "user", "content": [{"type": "image", "image": image},
                                           {"type": "text", "text": "Which creature is this?"}]}]
    return Example(prompt, naming_sentence(entity), task, meta={"entity_id": entity.id})


def fresh_view(world, entity, rng, image_size: int | None):
    """A lazily rendered query-style view of ``entity`` (1-3 creatures of other families as clutter),
    drawn from ``rng``: a knowledge-base picture of the creature, never one of the world's views."""
    import functools

    others = [o for o in world.entities if o.family_id != entity.family_id]
    looks = [o.look for o in rng.sample(others, rng.randint(1, 3))]
    spec = layout_view(rng, entity.look, looks, 112, 8.0)
    return functools.partial(_resized, spec, image_size)


def _resized(spec, size):

    image = render_view(spec)
    return image if size is None or image.size == (size, size) else image.resize((size, size))


def kb_picture(world, entity, rng, image_size: int | None):
    """A knowledge-base picture of ``entity``: its page picture (30 %) or a ``fresh_view``; never
    one of the world's query views, so held-out creatures can be shown without a test picture."""
    if rng.random() < 0.3:
        return view_ref(world, world.document_of(entity.id).meta["image_id"], image_size)
    return fresh_view(world, entity, rng, image_size)


def creature_name(world, rng, cfg) -> Example:
    """A picture of a creature and its naming sentence: half the time a training view of an asked
    creature, otherwise a knowledge-base picture of ANY creature (its page picture or a fresh render),
    so that every creature -- the unseen-entity ones too -- is named from pictures."""
    q = None
    if rng.random() < 0.5:
        q = rng.choice(world.kbvqa_train)
        entity = world.entity(q.meta["entity_id"])
        image = view_ref(world, q.meta["view_id"], cfg.image_size)
    else:
        entity = rng.choice(world.entities)
        image = kb_picture(world, entity, rng, cfg.image_size)
    example = naming_example(image, entity)
    example.meta.update(query_ids=[q.id] if q else [], image_ids=[])
    return example


def molt_ladder(world, rng, cfg) -> Example:
    """MOLT Table 14 one-pass ladder over a training query's positive and 4 look-alike pages."""
    from kbvqa.molt.sft import SFTDataConfig, build_sft_example

    q = rng.choice(world.kbvqa_train)
    config = SFTDataConfig(image_size=cfg.image_size, short_prompts=cfg.short_prompts)
    example = build_sft_example(world, q, [], config, rng=rng)
    example.task = "molt_ladder"
    return example


def look_name(world, rng, cfg) -> Example:
    """Text only: a creature's look, as its page describes it, -> its name, for ANY knowledge-base
    creature. The diagnosis of the fifth round's card: in 61 of 200 ten-passage answers the
    rationale described the picture right and then named a creature of another look."""
    return look_name_example(rng.choice(world.entities))


def look_name_example(entity) -> Example:
    """``look_name`` for one given creature (the card asks every creature in turn)."""
    look = with_look(entity.family, entity.colour, entity.pattern)
    prompt = [{"role": "system", "content": [{"type": "text", "text": "Name the creature described."}]},
              {"role": "user", "content": [{"type": "text", "text": f"Which creature is {look}?"}]}]
    return Example(prompt, f"{look[0].upper()}{look[1:]}: the {entity.name}.", "look_name",
                   meta={"entity_id": entity.id, "query_ids": [], "image_ids": []})


# The card's ten-passage layout: every distractor is a look-alike's passage of the gold's section
# (random pages only when look-alikes run out), so each of the ten names appears once and only the
# picture says which passage is the creature's. The mixture's own draw (``cfg.distractor_mix``) also
# takes other sections of the gold page, which repeat the gold name: a shortcut the card never offers.
TEN_PASSAGE_MIX = (1.0, 0.0, 0.0)


def ten_passage_config(cfg: PretrainMixConfig) -> PretrainMixConfig:
    """``cfg`` with the card's ten-passage layout (the card's row, the in-training check)."""
    return dataclasses.replace(cfg, distractor_mix=TEN_PASSAGE_MIX)


def kbvqa_ten_passages(world, rng, cfg) -> Example:
    """ReAG-style KB-VQA with the gold passage among ``cfg.max_passages`` (10): the card's
    ten-passage row (``TEN_PASSAGE_MIX``) built from a TRAINING question (the mixture's own KB-VQA
    draws 1..10 passages of mixed kinds)."""
    q = rng.choice(world.kbvqa_train)
    passages = formats.distractor_passages(world, q, rng, cfg.max_passages - 1, TEN_PASSAGE_MIX)
    passages.insert(rng.randint(0, len(passages)), world.passage(q.evidence_ids[0]))
    return Example(formats.kbvqa_prompt(world, q, passages, "reag", cfg), formats.kbvqa_target(q, "reag", True),
                   "kbvqa_ten_passages", meta=formats.kbvqa_meta(q, passages, style="reag", gold_included=True))


def ten_passage_naming(world, rng, cfg) -> Example:
    """"Which creature is this <family>?" in ReAG's prompt, with one section of the creature's page
    among its look-alikes' (the card's ten-passage layout) -> the naming sentence and the name, for
    ANY knowledge-base creature (``kb_picture``, as ``creature_name`` draws them). Until round 7 of
    ``data/reader/rounds.json`` the rationales among ten passages named held-out creatures far less
    often than the others (its ``named_among_ten_*`` columns): every ten-passage rationale trained
    named a creature with training questions, while the held-out creatures' passages stood beside
    them as distractors, never as the answer. This task names every creature in that context; it
    asks no question about a fact, so no held-out answer is trained."""
    entity = rng.choice(world.entities)
    image = kb_picture(world, entity, rng, cfg.image_size)
    own = rng.choice(world.document_of(entity.id).passages)
    passages = formats.passages_around(world, entity, own, rng, cfg.max_passages - 1, TEN_PASSAGE_MIX)
    passages.insert(rng.randint(0, len(passages)), own)
    prompt = render_chat("reag_generator", images=[image], short=cfg.short_prompts,
                         question=f"Which creature is this {entity.family}?",
                         paragraphs=formats.reag_paragraphs([p.text for p in passages]))
    return Example(prompt, f"<think>{naming_sentence(entity)}</think><answer>{entity.name}</answer>",
                   "ten_passage_naming", meta={"entity_id": entity.id, "query_ids": [], "image_ids": [],
                                               "passage_ids": [p.id for p in passages]})


READER_TASKS = {**TASKS, "creature_name": creature_name, "molt_ladder": molt_ladder, "look_name": look_name,
                "kbvqa_ten_passages": kbvqa_ten_passages, "ten_passage_naming": ten_passage_naming}


# KB-VQA prompt styles (reag, evqa, infoseek). ReAG's style thinks before it answers, and its
# rationale starts by naming the creature ("The image shows the desnusk, ..."): the answer is then a
# copy from the passage that carries that name, a text skill SmolLM2 already has. Half the KB-VQA
# examples use it; the direct-answer styles share the other half.
READER_STYLE_WEIGHTS = (2.0, 1.0, 1.0)


def mix_config(image_size: int, seed: int) -> PretrainMixConfig:
    """The tiny mixture's knobs at the reader's image size (short prompts: CPU sequence lengths)."""
    known = {t: w for t, w in READER_WEIGHTS.items() if t in TASKS}
    return PretrainMixConfig(seed=seed, weights=known, image_size=image_size, short_prompts=True,
                             kbvqa_style_weights=READER_STYLE_WEIGHTS)


def iter_reader_examples(world, cfg: PretrainMixConfig, weights: dict, start: int = 0,
                         rationale_order: str = "name_first") -> Iterator[Example]:
    """The infinite, seeded stream of the reader's mixture; example ``i`` depends on (seed, i) only;
    naming sentences in ``rationale_order`` (``in_rationale_order``)."""
    unknown = sorted(set(weights) - set(READER_TASKS))
    if unknown:
        raise ValueError(f"unknown task(s) {unknown}; known: {sorted(READER_TASKS)}")
    names = [t for t, w in weights.items() if w > 0]
    probs = [weights[t] for t in names]
    i = start
    while True:
        rng = random.Random(f"reader:{cfg.seed}:{i}")
        example = READER_TASKS[rng.choices(names, weights=probs)[0]](world, rng, cfg)
        yield in_rationale_order(example, rationale_order, world)
        i += 1


class ViewBank:
    """uint8 pictures ``[N, S, S, 3]`` of every creature with labels (entity, family, colour, pattern)."""

    def __init__(self, world, views_per_entity: int, image_size: int, seed: int = 0):
        self.entities = list(world.entities)
        self.families = sorted({e.family_id for e in self.entities})
        self.colours = sorted({e.colour for e in self.entities})
        self.patterns = sorted({e.pattern for e in self.entities})
        pics, labels = [], []
        noise = world.config.noise_std if hasattr(world, "config") else 8.0
        for e in self.entities:
            others = [o for o in self.entities if o.family_id != e.family_id]
            page = world.image_of(world.document_of(e.id).meta["image_id"])
            pics.append(np.asarray(page.resize((image_size, image_size))))
            for k in range(views_per_entity):
                rng = random.Random(f"reader-view:{seed}:{e.id}:{k}")
                looks = [o.look for o in rng.sample(others, rng.randint(1, 3))]
                spec = layout_view(rng, e.look, looks, image_size, noise)
                pics.append(np.asarray(render_view(spec)))
            labels += [self.label(e)] * (views_per_entity + 1)
        self.pixels = np.stack(pics)
        self.labels = np.array(labels)

    def label(self, e) -> tuple[int, int, int, int]:
        return (self.entities.index(e), self.families.index(e.family_id), self.colours.index(e.colour),
                self.patterns.index(e.pattern))

    def heads(self) -> tuple[int, int, int, int]:
        return len(self.entities), len(self.families), len(self.colours), len(self.patterns)


def to_pixels(uint8):
    """uint8 ``[B, S, S, 3]`` -> float ``[B, 3, S, S]`` normalised as Idefics3's processor does."""
    return (uint8.permute(0, 3, 1, 2).float() / 255.0 - 0.5) / 0.5
