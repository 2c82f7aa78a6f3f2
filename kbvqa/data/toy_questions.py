"""KB-VQA questions of the toy world (Encyclopedic-VQA / InfoSeek style) and their query views.

A question asks about one fact of the creature in a cluttered query view and never names it:
"What does this glimmerfin eat?", "In which year was this creature first described?". The subject
noun phrase follows "this" (ReAG's subject extraction keys on it, §4.1 and appendix A,
"Retrieval Details").
Four answer types, as in InfoSeek / E-VQA:

- string    habitat, region, diet, describer        answers = [value, aliases]
- numerical length (cm), weight (kg), lifespan (y)  answers = [value, value + unit], +-10 % range
- time      year of first description               answers = [year]
- multi     predators, prey, companions (2-4 each)  answers = the items (E-VQA '&&' string in meta)

Each answer is copied from one passage of the entity's page (``evidence_ids``), and
``meta["rationale"]`` walks from the image to that passage to the answer.

Splits (InfoSeek): entities marked ``unseen`` appear only in the test split ("unseen_entity");
for every other entity a few facts are held out of training and asked only in test
("unseen_question"). Views (pictures) belong to one split; a view carries ``questions_per_view``
questions about different facts.

Leaves out: multiple-choice questions (``toy_mc.py``) and literature (``toy_literature.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from kbvqa.data.schema import Query
from kbvqa.data.toy_documents import doc_id_of, entity_fields, passage_id
from kbvqa.data.toy_entities import Entity, Family, format_weight
from kbvqa.data.toy_images import ViewSpec, layout_view, renderer, subject_box
from kbvqa.data.toy_names import item_rng, join_names


@dataclass(frozen=True)
class Attribute:
    name: str
    answer_type: str
    section: str            # the document section holding the answer
    templates: tuple[str, ...]
    clause: str             # what the passage says, for the rationale


ATTRIBUTES = (
    Attribute("habitat", "string", "habitat", (
        "Where does this {noun} live?", "What is the natural habitat of this {noun}?",
        "In what kind of place can this {noun} be found?"), "it lives in {habitat}"),
    Attribute("region", "string", "habitat", (
        "Which region is this {noun} native to?", "In which region does this {noun} live?"),
        "its range is {region}"),
    Attribute("diet", "string", "diet", (
        "What does this {noun} eat?", "What is the main food of this {noun}?"), "it eats {diet}"),
    Attribute("described_by", "string", "discovery", (
        "Who first described this {noun}?", "Which naturalist first described this {noun}?"),
        "it was first described by {describer}"),
    Attribute("length", "numerical", "size", (
        "How long is this {noun} in centimetres?", "What is the length of this {noun} in cm?"),
        "it measures about {length} cm"),
    Attribute("weight", "numerical", "size", (
        "How much does this {noun} weigh in kilograms?", "What is the weight of this {noun} in kg?"),
        "it weighs around {weight} kg"),
    Attribute("lifespan", "numerical", "lifespan", (
        "How many years does this {noun} live?", "What is the lifespan of this {noun} in years?"),
        "it lives for about {lifespan} years"),
    Attribute("year", "time", "discovery", (
        "In which year was this {noun} first described?", "When was this {noun} first described?"),
        "it was first described in {year}"),
    Attribute("predators", "multi", "relations", (
        "Which animals prey on this {noun}?", "What creatures hunt this {noun}?"),
        "it is hunted by {predators}"),
    Attribute("prey", "multi", "relations", (
        "Which animals does this {noun} hunt?", "What creatures are hunted by this {noun}?"),
        "it hunts {prey}"),
    Attribute("companions", "multi", "companions", (
        "Which animals is this {noun} often seen with?",
        "What creatures are often seen together with this {noun}?"), "it is often seen with {companions}"),
)
ATTRIBUTE_BY_NAME = {a.name: a for a in ATTRIBUTES}
GENERIC_NOUNS = ("creature", "animal")


def answer_of(attr: Attribute, e: Entity, names: dict[str, str]):
    """(answers, answer_range, answer text for the rationale) or None if the fact is unusable."""
    if attr.answer_type == "multi":
        items = [names[i] for i in getattr(e, attr.name)]
        if not 2 <= len(items) <= 4:
            return None
        return items, None, join_names(items)
    if attr.answer_type == "numerical":
        value = {"length": e.length_cm, "weight": e.weight_kg, "lifespan": e.lifespan_years}[attr.name]
        unit = {"length": "cm", "weight": "kg", "lifespan": "years"}[attr.name]
        text = format_weight(value) if attr.name == "weight" else str(value)
        return [text, f"{text} {unit}"], (round(value * 0.9, 6), round(value * 1.1, 6)), f"{text} {unit}"
    if attr.name == "year":
        return [str(e.year_described)], None, str(e.year_described)
    value = {"habitat": e.habitat, "region": e.region, "diet": e.diet,
             "described_by": e.described_by}[attr.name]
    aliases = [value]
    if value.startswith("the "):
        aliases.append(value[4:])
    if attr.name == "described_by":
        aliases.append(value.split()[-1])
    return aliases, None, value


def valid_attributes(e: Entity, names: dict[str, str]) -> list[str]:
    return [a.name for a in ATTRIBUTES if answer_of(a, e, names) is not None]


def make_view(seed: int, view_id: str, e: Entity, entities: list[Entity], cfg) -> ViewSpec:
    """A query view of ``e`` with 1..max distractor creatures from *other* families."""
    rng = item_rng(seed, "view", view_id)
    others = [o for o in entities if o.family_id != e.family_id]
    k = rng.randint(cfg.min_distractor_objects, cfg.max_distractor_objects)
    looks = [o.look for o in rng.sample(others, min(k, len(others)))]
    return layout_view(rng, e.look, looks, cfg.image_size, cfg.noise_std)


def make_question(seed, qid, split, attr: Attribute, e: Entity, view_id: str, spec: ViewSpec,
                  names, families: dict[str, Family], split_kind: str = "") -> Query:
    rng = item_rng(seed, "question", qid)
    t = rng.randrange(len(attr.templates))
    noun = e.family if rng.random() < 0.5 else rng.choice(GENERIC_NOUNS)
    answers, answer_range, answer_text = answer_of(attr, e, names)
    fields = entity_fields(e, names, families)
    doc_id = doc_id_of(e.id)
    rationale = (f"The image shows the {e.name}, {fields['a_look']}. Its {attr.section} passage "
                 f"says {attr.clause.format(**fields)}. So the answer is {answer_text}.")
    meta = {"entity_id": e.id, "family": e.family_id, "family_name": e.family,
            "attribute": attr.name, "template_id": f"{attr.name}/{t}", "view_id": view_id,
            "noun": noun, "rationale": rationale}
    if attr.answer_type == "multi":
        meta["evqa_answer"] = "&&".join(answers)
    if split_kind:
        meta["split_kind"] = split_kind
    return Query(qid, attr.templates[t].format(noun=noun), answers, attr.answer_type,
                 image=renderer(spec), answer_range=answer_range, gold_doc_ids=[doc_id],
                 evidence_ids=[passage_id(doc_id, attr.section)], box=subject_box(spec),
                 split=split, meta=meta)


def _cycle(rng, items: list[str], n: int) -> list[str]:
    """``n`` items drawn by walking reshuffled copies of ``items`` (balanced coverage)."""
    out: list[str] = []
    while len(out) < n:
        batch = list(items)
        rng.shuffle(batch)
        out.extend(batch)
    return out[:n]


def build_kbvqa(seed: int, entities: list[Entity], families: dict[str, Family], cfg,
                views: dict[str, ViewSpec]) -> tuple[list[Query], list[Query]]:
    """(train, test) KB-VQA questions; every view made is added to ``views``."""
    names = {e.id: e.name for e in entities}
    train: list[Query] = []
    test: list[Query] = []
    per_view = cfg.kbvqa_questions_per_view

    def emit(out, split, e, n_views, attrs, kind=""):
        rng = item_rng(seed, "kbvqa-plan", split, e.id)
        picks = _cycle(rng, attrs, n_views * per_view)
        for v in range(n_views):
            view_id = f"{split}-{e.id}-{v:02d}"
            spec = views[view_id] = make_view(seed, view_id, e, entities, cfg)
            chosen = []
            for a in picks[v * per_view:(v + 1) * per_view]:  # distinct facts on one view
                chosen.append(a if a not in chosen else next(x for x in attrs if x not in chosen))
            for a in chosen:
                qid = f"{split}-{len(out):05d}"
                out.append(make_question(seed, qid, split, ATTRIBUTE_BY_NAME[a], e, view_id, spec,
                                         names, families, kind))

    for e in entities:
        if e.distractor:
            continue
        attrs = valid_attributes(e, names)
        if e.unseen:
            emit(test, "kbvqa_test", e, cfg.kbvqa_test_views_unseen, attrs, "unseen_entity")
            continue
        rng = item_rng(seed, "held-out-facts", e.id)
        held = rng.sample(attrs, cfg.unseen_question_attributes)
        kept = [a for a in attrs if a not in held]
        emit(train, "kbvqa_train", e, cfg.kbvqa_train_views_per_entity, kept)
        emit(test, "kbvqa_test", e, cfg.kbvqa_test_views_seen, held, "unseen_question")
    return train, test
