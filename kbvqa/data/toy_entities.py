"""Families of look-alike creatures and their facts: the toy world's ground truth.

Each family has one silhouette and a noun ("glimmerfin"); its members take the cells of a small
colour x pattern grid (2 colours x 2 patterns for 4 members, 3 x 2 for 5 ...), so every member has
a look-alike that differs in colour only and one that differs in pattern only. Facts are drawn so
that a look-alike always gives a *wrong* answer: habitats, regions, diets and describers are
distinct within a family, numbers follow a family ladder (x1.3 for length, x1.35 for lifespan,
so any two members differ by more than the +-10 % numerical tolerance) and years differ.

Some members ("distractor members") and some whole families ("distractor families") get documents
in the knowledge base but are never asked about; some asked members are "unseen": held out of the
KB-VQA training split (InfoSeek's unseen-entity split).

Leaves out: texts (``toy_documents.py``) and pictures (``toy_shapes.py``, ``toy_images.py``).
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from kbvqa.data.toy_names import (
    DIETS,
    HABITATS,
    NATURALISTS,
    REGIONS,
    family_nouns,
    item_rng,
    plural,
    stable_seed,
    unique_words,
)
from kbvqa.data.toy_shapes import COLOURS, PATTERNS, Look, silhouette


@dataclass(frozen=True)
class Family:
    id: str                  # "fam03"
    name: str                # "glimmerfin"
    plural: str              # "glimmerfins"
    shape_seed: int          # the shared silhouette
    body_words: str          # "an oval body and a forked tail"
    member_ids: tuple[str, ...]
    distractor: bool         # the whole family is never asked about

    @classmethod
    def from_dict(cls, d: dict) -> Family:
        return cls(**{**d, "member_ids": tuple(d["member_ids"])})


@dataclass(frozen=True)
class Entity:
    id: str                  # the lower-case name, e.g. "zorvel"
    name: str
    family_id: str
    family: str              # family noun
    shape_seed: int
    colour: str
    pattern: str
    habitat: str
    region: str
    diet: str
    length_cm: int
    weight_kg: float
    lifespan_years: int
    year_described: int
    described_by: str
    predators: tuple[str, ...]    # entity ids of creatures that hunt it
    prey: tuple[str, ...]         # entity ids it hunts
    companions: tuple[str, ...]   # entity ids it is often seen with (symmetric)
    distractor: bool              # in the knowledge base, never asked about
    unseen: bool                  # asked only in the KB-VQA test split (unseen entity)

    @property
    def look(self) -> Look:
        return Look(self.shape_seed, self.colour, self.pattern)

    @classmethod
    def from_dict(cls, d: dict) -> Entity:
        kw = dict(d)
        for key in ("predators", "prey", "companions"):
            kw[key] = tuple(kw[key])
        return cls(**kw)

    def to_dict(self) -> dict:
        return asdict(self)


def format_weight(kg: float) -> str:
    """Two significant figures, plain decimal: 0.052, 1.9, 45, 510."""
    if kg <= 0:
        raise ValueError(f"weight must be positive, got {kg}")
    digits = max(0, 1 - math.floor(math.log10(kg)))
    text = f"{round(kg, digits):.{digits}f}"
    return text


def _grid(rng, n: int) -> list[tuple[str, str]]:
    """``n`` distinct (colour, pattern) cells from a near-square colour x pattern grid."""
    n_c = math.ceil(math.sqrt(n))
    n_p = math.ceil(n / n_c)
    colours = rng.sample(sorted(COLOURS), n_c)
    patterns = rng.sample(PATTERNS, n_p)
    cells = [(c, p) for c in colours for p in patterns]
    rng.shuffle(cells)
    return cells[:n]


def build_entities(seed: int, n_families: int, members: int, distractor_members: int,
                   distractor_families: int, unseen_per_family: int) -> tuple[list[Family], list[Entity]]:
    """All families and entities of a world (families in order, members in order)."""
    rng = item_rng(seed, "entities")
    n_fam = n_families + distractor_families
    per_family = members + distractor_members
    nouns = family_nouns(rng, n_fam)
    names = unique_words(rng, n_fam * per_family, set(nouns))
    raw = []  # (family index, dict of fields) before relations
    families = []
    for f in range(n_fam):
        frng = item_rng(seed, "family", f)
        fam_id = f"fam{f:02d}"
        shape_seed = stable_seed(seed, "shape", f)
        is_distractor_family = f >= n_families
        ids = names[f * per_family:(f + 1) * per_family]
        order = list(range(per_family))
        frng.shuffle(order)
        distractor_idx = set(order[:distractor_members])
        unseen_idx = set(order[distractor_members:distractor_members + unseen_per_family])
        cells = _grid(frng, per_family)
        habitats = frng.sample(HABITATS, per_family)
        regions = frng.sample(REGIONS, per_family)
        diets = frng.sample(DIETS, per_family)
        describers = frng.sample(NATURALISTS, per_family)
        base_len = math.exp(frng.uniform(math.log(12), math.log(90)))
        density = frng.uniform(0.6, 1.4)
        base_life = frng.uniform(3, 20)
        base_year = frng.randint(1760, 1950)
        len_steps = frng.sample(range(per_family), per_family)
        life_steps = frng.sample(range(per_family), per_family)
        year_offsets = frng.sample(range(0, 3 * max(per_family, 20), 3), per_family)
        for m, eid in enumerate(ids):
            length = round(base_len * 1.3 ** len_steps[m] * frng.uniform(0.97, 1.03))
            weight = float(format_weight(density * 30 * (length / 100) ** 3))
            raw.append((f, {
                "id": eid, "name": eid, "family_id": fam_id, "family": nouns[f], "shape_seed": shape_seed,
                "colour": cells[m][0], "pattern": cells[m][1], "habitat": habitats[m], "region": regions[m],
                "diet": diets[m], "length_cm": length, "weight_kg": weight,
                "lifespan_years": round(base_life * 1.35 ** life_steps[m]),
                "year_described": base_year + year_offsets[m] + frng.randint(0, 2),
                "described_by": describers[m],
                "distractor": is_distractor_family or m in distractor_idx,
                "unseen": (not is_distractor_family) and m in unseen_idx}))
        families.append(Family(fam_id, nouns[f], plural(nouns[f]), shape_seed,
                               silhouette(shape_seed).words, tuple(ids), is_distractor_family))
    predators, companions = _relations(item_rng(seed, "relations"), [(f, d["id"]) for f, d in raw])
    prey: dict[str, list[str]] = {d["id"]: [] for _, d in raw}
    for eid, hunters in predators.items():
        for h in hunters:
            prey[h].append(eid)
    order = {d["id"]: i for i, (_, d) in enumerate(raw)}
    entities = [Entity(**d, predators=tuple(predators[d["id"]]),
                       prey=tuple(sorted(prey[d["id"]], key=order.get)),
                       companions=tuple(sorted(companions[d["id"]], key=order.get)))
                for _, d in raw]
    return families, entities


def _relations(rng, members: list[tuple[int, str]]):
    """Predators (2-3 from other families) and symmetric companions (about 2 each)."""
    predators = {}
    for f, eid in members:
        others = [e for g, e in members if g != f]
        predators[eid] = rng.sample(others, rng.choice((2, 2, 3)))
    companions: dict[str, set[str]] = {eid: set() for _, eid in members}
    for _ in range(2):  # two rounds of greedy pairing: each picks the least-connected stranger
        for f, eid in members:
            if len(companions[eid]) >= 2:
                continue
            options = [e for g, e in members if g != f and e not in companions[eid]]
            fewest = min(len(companions[e]) for e in options)
            pick = rng.choice([e for e in options if len(companions[e]) == fewest])
            companions[eid].add(pick)
            companions[pick].add(eid)
    return predators, companions
