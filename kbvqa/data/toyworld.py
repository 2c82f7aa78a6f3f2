"""The toy world: a small synthetic KB-VQA world on which every method of the book runs on a CPU.

``build_world(seed, config)`` returns a ``ToyWorld`` with, all deterministic in ``seed``:

- families of look-alike creatures (one silhouette, different colour/pattern; ``toy_entities``),
  distractor creatures that only sit in the knowledge base, and one wiki-like document per creature
  (eight passages; look-alike pages share wording; ``toy_documents``);
- KB-VQA questions about a creature in a cluttered query view with its box, answer types string /
  numerical / time / multi, InfoSeek-style unseen-question / unseen-entity test split
  (``toy_questions``);
- multiple-choice reasoning questions whose answers follow hidden per-family rules that only
  solved examples reveal (``mc_train`` / ``mc_kb`` / ``mc_test``; ``toy_mc`` explains the design);
- a text-only literature corpus with synonym-rich concepts and BioASQ-style questions
  (``toy_literature``).

Images are lazy: every ``image`` field holds ``functools.partial(render_view, spec)``; ``save``
renders each once to PNG. Why the world exists: no pretrained VLM can be downloaded in CI or
offline, so the cpu profile needs a world small enough to learn and see whole that still exercises
every mechanism of the papers (look-alike families as visual hard negatives, shared wording as
textual ones, cluttered views with a subject box, sectioned pages with numbers, units, years and
lists, and a literature corpus with synonyms), split into knowledge base / train / test.
Chapter figures (``family_grid``, ``draw_query``) live in ``kbvqa.viz.toy_world``.

Leaves out: real datasets (``datasets.py``), models and retrieval.
"""
from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from kbvqa.data.schema import Document, KBExample, LiteratureItem, Passage, Query, open_image
from kbvqa.data.toy_config import ToyWorldConfig
from kbvqa.data.toy_documents import build_document, canonical_view_id, doc_id_of
from kbvqa.data.toy_entities import Entity, Family, build_entities
from kbvqa.data.toy_images import ViewSpec, canonical_spec, render_view, renderer
from kbvqa.data.toy_io import load_parts, save_world
from kbvqa.data.toy_lit_concepts import Concept, build_concepts
from kbvqa.data.toy_literature import build_abstracts, build_lit_questions
from kbvqa.data.toy_mc import build_mc
from kbvqa.data.toy_questions import build_kbvqa

# Bump whenever the saved output of a world changes (tests hold the default manifest's hash).
TOYWORLD_VERSION = "1.0.0"

__all__ = ["TOYWORLD_VERSION", "ToyWorld", "ToyWorldConfig", "build_world", "get_world", "load_world"]


@dataclass(repr=False)
class ToyWorld:
    seed: int
    config: ToyWorldConfig
    families: list[Family]
    entities: list[Entity]
    documents: list[Document]             # the knowledge base, distractors included
    kbvqa_train: list[Query]
    kbvqa_test: list[Query]
    mc_train: list[Query]
    mc_kb: list[KBExample]
    mc_test: list[Query]
    mc_rules: dict[str, dict]             # rule id -> {template, family, variant, key, mapping}
    literature: list[LiteratureItem]
    lit_questions: list[Query]
    concepts: list[Concept]
    views: dict[str, ViewSpec] = field(default_factory=dict)      # built worlds: lazy pictures
    image_paths: dict[str, str] = field(default_factory=dict)     # loaded worlds: PNG files
    version: str = TOYWORLD_VERSION

    def __post_init__(self):
        if isinstance(self.config, dict):
            self.config = ToyWorldConfig(**self.config)
        self._entities = {e.id: e for e in self.entities}
        self._families = {f.id: f for f in self.families}
        self._docs = {d.id: d for d in self.documents}
        self.passages: dict[str, Passage] = {p.id: p for d in self.documents for p in d.passages}
        self.synonyms: dict[str, list[str]] = {c.name: list(c.names) for c in self.concepts}
        self._name_to_canonical = {n.lower(): c.name for c in self.concepts for n in c.names}

    def __repr__(self) -> str:
        sizes = ", ".join(f"{n}={len(getattr(self, n))}" for n in (
            "entities", "documents", "kbvqa_train", "kbvqa_test", "mc_train", "mc_kb", "mc_test",
            "literature", "lit_questions"))
        return f"ToyWorld(version={self.version!r}, seed={self.seed}, {sizes})"

    # --- look-ups ------------------------------------------------------------------------------
    def entity(self, entity_id: str) -> Entity:
        return self._entities[entity_id]

    def family(self, family_id: str) -> Family:
        return self._families[family_id]

    def family_of(self, entity_id: str) -> Family:
        return self._families[self.entity(entity_id).family_id]

    def lookalikes(self, entity_id: str) -> list[Entity]:
        """The other members of the entity's family (same silhouette), distractors included."""
        return [self._entities[m] for m in self.family_of(entity_id).member_ids if m != entity_id]

    def document_of(self, entity_id: str) -> Document:
        return self._docs[doc_id_of(entity_id)]

    def document(self, doc_id: str) -> Document:
        return self._docs[doc_id]

    def passage(self, passage_id: str) -> Passage:
        return self.passages[passage_id]

    def synonyms_of(self, name: str) -> list[str]:
        """All names of the concept called ``name`` (any of its names, any case); [] if unknown."""
        canonical = self._name_to_canonical.get(name.strip().lower())
        return list(self.synonyms[canonical]) if canonical else []

    @property
    def asked_entities(self) -> list[Entity]:
        return [e for e in self.entities if not e.distractor]

    def split(self, name: str) -> list[Query]:
        if name not in ("kbvqa_train", "kbvqa_test", "mc_train", "mc_kb", "mc_test", "lit_questions"):
            raise ValueError(f"unknown split {name!r}")
        return getattr(self, name)

    def rule_examples(self, query: Query, split: str | None = None) -> list[Query]:
        """Other MC items that follow the same hidden rule as ``query`` (same ``meta['rule_id']``),
        from ``split`` (default: ``mc_train`` for an mc_train item, else ``mc_kb``): the in-context
        examples an oracle retriever would pick."""
        rule_id = query.meta.get("rule_id")
        if rule_id is None:
            raise ValueError(f"{query.id} is not a multiple-choice toy question (no rule_id)")
        pool = self.split(split or ("mc_train" if query.split == "mc_train" else "mc_kb"))
        return [q for q in pool if q.meta["rule_id"] == rule_id and q.id != query.id]

    # --- images --------------------------------------------------------------------------------
    def view_ids(self) -> list[str]:
        """Every picture of the world: canonical images first, then query views, in build order."""
        return list(self.views) if self.views else list(self.image_paths)

    def image_of(self, view_id: str):
        """The RGB picture ``view_id`` (rendered, or read from a saved world)."""
        if view_id in self.views:
            return render_view(self.views[view_id])
        if view_id in self.image_paths:
            return open_image(self.image_paths[view_id])
        raise KeyError(f"unknown view {view_id!r}")

    def render_all(self) -> int:
        """Render every picture once (for timing); returns how many."""
        ids = self.view_ids()
        for v in ids:
            self.image_of(v)
        return len(ids)

    # --- statistics and saving -----------------------------------------------------------------
    def stats(self) -> dict:
        """Counts for the chapter's statistics plots (plain ints, floats and dicts)."""
        test_kinds = Counter(q.meta.get("split_kind", "") for q in self.kbvqa_test)
        rule_variants = Counter("kb_test" if r["variant"] == 0 else "train" for r in self.mc_rules.values())
        n_gold = [len(q.gold_doc_ids) for q in self.lit_questions]
        return {
            "families": sum(not f.distractor for f in self.families),
            "distractor_families": sum(f.distractor for f in self.families),
            "entities": len(self.entities), "asked_entities": len(self.asked_entities),
            "distractor_entities": sum(e.distractor for e in self.entities),
            "unseen_entities": sum(e.unseen for e in self.entities),
            "documents": len(self.documents), "passages": len(self.passages),
            "images": len(self.view_ids()),
            "kbvqa_train": len(self.kbvqa_train), "kbvqa_test": len(self.kbvqa_test),
            "kbvqa_test_split_kind": dict(sorted(test_kinds.items())),
            "kbvqa_answer_types": {s: dict(sorted(Counter(q.answer_type for q in getattr(self, s)).items()))
                                   for s in ("kbvqa_train", "kbvqa_test")},
            "kbvqa_attributes": dict(sorted(Counter(q.meta["attribute"] for q in
                                                    self.kbvqa_train + self.kbvqa_test).items())),
            "mc_train": len(self.mc_train), "mc_kb": len(self.mc_kb), "mc_test": len(self.mc_test),
            "mc_rules": dict(sorted(rule_variants.items())),
            "mc_templates": dict(sorted(Counter(q.meta["template_id"] for q in self.mc_kb).items())),
            "literature": len(self.literature), "lit_questions": len(self.lit_questions),
            "lit_question_types": dict(sorted(Counter(q.answer_type for q in self.lit_questions).items())),
            "concepts": dict(sorted(Counter(c.kind for c in self.concepts).items())),
            "mean_names_per_concept": round(sum(len(c.names) for c in self.concepts)
                                            / max(1, len(self.concepts)), 3),
            "mean_gold_docs_per_lit_question": round(sum(n_gold) / max(1, len(n_gold)), 3),
        }

    def save(self, directory) -> Path:
        """Write JSON/JSONL records and one PNG per picture; returns the manifest's path."""
        save_world(self, directory)
        return Path(directory) / "manifest.json"

    def manifest(self) -> dict:
        """The manifest ``save`` would write, computed without writing (renders every picture)."""
        return save_world(self, None)


def build_world(seed: int = 0, config: ToyWorldConfig | None = None) -> ToyWorld:
    """Build the toy world for ``seed`` (deterministic; images stay lazy)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    cfg = config if config is not None else ToyWorldConfig()
    if not isinstance(cfg, ToyWorldConfig):
        raise ValueError(f"config must be a ToyWorldConfig, got {type(cfg).__name__}")  # noqa: TRY004
    families, entities = build_entities(seed, cfg.n_families, cfg.members_per_family,
                                        cfg.distractor_members_per_family, cfg.n_distractor_families,
                                        cfg.unseen_entities_per_family)
    fam_by_id = {f.id: f for f in families}
    names = {e.id: e.name for e in entities}
    views: dict[str, ViewSpec] = {}
    documents = []
    for e in entities:
        spec = views[canonical_view_id(e.id)] = canonical_spec(e.look, cfg.image_size)
        documents.append(build_document(seed, e, names, fam_by_id, renderer(spec)))
    kbvqa_train, kbvqa_test = build_kbvqa(seed, entities, fam_by_id, cfg, views)
    mc_rules, mc_train, mc_kb, mc_test = build_mc(seed, entities, families, cfg, views)
    concepts = build_concepts(seed, cfg.n_conditions, cfg.n_compounds, cfg.n_genes)
    by_id = {c.id: c for c in concepts}
    literature, by_fact = build_abstracts(seed, by_id, (cfg.abstracts_per_fact_min,
                                                        cfg.abstracts_per_fact_max), cfg.abstract_alias_share)
    lit_questions = build_lit_questions(seed, by_id, by_fact, cfg.n_lit_questions)
    return ToyWorld(seed, cfg, families, entities, documents, kbvqa_train, kbvqa_test, mc_train,
                    mc_kb, mc_test, mc_rules, literature, lit_questions, concepts, views)


def load_world(directory) -> ToyWorld:
    """Read a world written by ``ToyWorld.save``; images become PNG paths.

    Raises ``ValueError`` if the directory holds no world or one of another ``TOYWORLD_VERSION``.
    """
    parts = load_parts(directory)
    if parts["version"] != TOYWORLD_VERSION:
        raise ValueError(f"{directory} holds toy world version {parts['version']}, this code makes "
                         f"{TOYWORLD_VERSION}; rebuild it with build_world(...).save(...)")
    return ToyWorld(**parts)


_MEMO: dict[tuple[int, ToyWorldConfig], ToyWorld] = {}


def get_world(seed: int = 0, config: ToyWorldConfig | None = None) -> ToyWorld:
    """``build_world`` memoised in this process (the same object for the same seed and config)."""
    key = (seed, config if config is not None else ToyWorldConfig())
    if key not in _MEMO:
        _MEMO[key] = build_world(seed, key[1])
    return _MEMO[key]


def timed_build(seed: int = 0, config: ToyWorldConfig | None = None) -> tuple[ToyWorld, float, float]:
    """(world, seconds to build, seconds to render every picture once): the chapter's timing."""
    t0 = time.perf_counter()
    world = build_world(seed, config)
    t1 = time.perf_counter()
    world.render_all()
    return world, t1 - t0, time.perf_counter() - t1
