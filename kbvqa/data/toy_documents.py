"""Wiki-like documents of the toy world: one page per entity, eight sections as passages.

Every passage names its entity ("The zorvel lives in salt marshes ...") so a passage can be judged
on its own (ReAG's critic, MOLT's candidates). The wording of each section is one of a few
templates, and the template is chosen *per family*: look-alike pages are word-for-word the same
except for names and facts, the textual hard negatives of MOLT and ReAG. A document's summary
states the look and habitat (InfoSeek retrieves over title + summary); its image is the entity's
canonical picture.

Leaves out: questions (``toy_questions.py``) and rendering (``toy_images.py``).
"""
from __future__ import annotations

from kbvqa.data.schema import Document, Passage
from kbvqa.data.toy_entities import Entity, Family, format_weight
from kbvqa.data.toy_names import item_rng, join_names, plural
from kbvqa.data.toy_shapes import look_words, with_look

SECTIONS = ("description", "habitat", "diet", "size", "lifespan", "discovery", "relations",
            "companions")

_TEMPLATES: dict[str, tuple[str, ...]] = {
    "description": (
        "The {name} is {a_look}. Like other {families}, it has {body}. {markings}",
        ("The {name} is a member of the {family} group, recognised by its {look}. It has {body}, "
         "the shape shared by all {families}. {markings}"),
    ),
    "habitat": (
        "The {name} lives in {habitat} of {region}. It rarely leaves this habitat, even in dry years.",
        "In the wild, the {name} is found in {habitat}. Its range is limited to {region}.",
    ),
    "diet": (
        "The {name} eats {diet}. It forages mostly alone and drinks little water.",
        "The diet of the {name} consists mainly of {diet}, which it gathers near its shelter.",
    ),
    "size": (
        "An adult {name} measures about {length} cm from head to tail and weighs around {weight} kg.",
        ("The {name} grows to a length of {length} cm and a weight of {weight} kg; males and "
         "females are alike in size."),
    ),
    "lifespan": (
        "The {name} lives for about {lifespan} years in the wild.",
        "A {name} can reach an age of {lifespan} years, although few survive their first winter.",
    ),
    "discovery": (
        "The {name} was first described by the naturalist {describer} in {year}.",
        "The naturalist {describer} gave the first scientific description of the {name} in {year}.",
    ),
    "relations": (
        "The {name} is hunted by {predators}. {prey_sentence}",
        "Predators of the {name} include {predators}. {prey_sentence}",
    ),
    "companions": (
        ("The {name} is often seen together with {companions}, and small groups of {names} "
         "gather near water."),
        "Observers often find the {name} in the company of {companions}.",
    ),
}


def entity_fields(e: Entity, names: dict[str, str], families: dict[str, Family]) -> dict[str, str]:
    """The template fields of an entity (names: entity id -> name, for relations)."""
    fam = families[e.family_id]
    prey = [names[p] for p in e.prey]
    markings = (f"Its {e.colour} body has no markings." if e.pattern == "plain"
                else f"Its {e.colour} body is covered in {e.pattern}.")
    return {
        "name": e.name, "names": plural(e.name),
        "family": fam.name, "families": fam.plural, "body": fam.body_words,
        "a_look": with_look(fam.name, e.colour, e.pattern), "look": look_words(e.colour, e.pattern),
        "markings": markings, "habitat": e.habitat, "region": e.region, "diet": e.diet,
        "length": str(e.length_cm), "weight": format_weight(e.weight_kg),
        "lifespan": str(e.lifespan_years), "year": str(e.year_described),
        "describer": e.described_by,
        "predators": join_names([names[p] for p in e.predators]),
        "prey": join_names(prey),
        "prey_sentence": (f"It hunts {join_names(prey)} in turn." if prey
                          else "It does not hunt other creatures."),
        "companions": join_names([names[c] for c in e.companions]),
    }


def doc_id_of(entity_id: str) -> str:
    return f"doc-{entity_id}"


def passage_id(doc_id: str, section: str) -> str:
    return f"{doc_id}:{section}"


def build_document(seed: int, e: Entity, names: dict[str, str], families: dict[str, Family],
                   image=None) -> Document:
    """The knowledge-base page of ``e``; ``image`` is its (lazy) canonical picture."""
    fields = entity_fields(e, names, families)
    rng = item_rng(seed, "doc-templates", e.family_id)  # per family: look-alikes share wording
    doc_id = doc_id_of(e.id)
    title = e.name.capitalize()
    passages = []
    for section in SECTIONS:
        template = _TEMPLATES[section][rng.randrange(len(_TEMPLATES[section]))]
        text = template.format(**fields).strip()
        passages.append(Passage(passage_id(doc_id, section), doc_id, text, title, section))
    summary = f"The {e.name} is {fields['a_look']} that lives in {e.habitat} of {e.region}."
    return Document(doc_id, title, summary, passages, image,
                    meta={"entity_id": e.id, "family": e.family_id, "family_name": e.family,
                          "distractor": e.distractor, "image_id": canonical_view_id(e.id)})


def canonical_view_id(entity_id: str) -> str:
    return f"canon-{entity_id}"
