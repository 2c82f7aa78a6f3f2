"""Sizes and knobs of the toy world: one commented, validated, frozen dataclass.

The defaults are the cpu-profile world (64 asked creatures in 16 look-alike families, 2,000+
KB-VQA training questions, 2,000+ multiple-choice knowledge-base examples, 2,000+ abstracts);
``scaled(factor)`` grows every count for the gpu profile (``Profile.scale``); ``small()`` is a
world for fast unit tests. Invalid values raise ``ValueError`` naming the field.

Leaves out: building (``toyworld.py``).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from kbvqa.data.toy_mc import MC_TEMPLATES, MIN_POOL
from kbvqa.data.toy_shapes import COLOURS, PATTERNS


@dataclass(frozen=True)
class ToyWorldConfig:
    # --- entities ---------------------------------------------------------------------------
    n_families: int = 16                   # look-alike families whose members are asked about
    members_per_family: int = 4            # asked members per family (share one silhouette)
    distractor_members_per_family: int = 1  # extra look-alikes in the KB, never asked about
    n_distractor_families: int = 4        # whole families in the KB, never asked about
    unseen_entities_per_family: int = 1    # asked members held out of KB-VQA train (unseen_entity)
    # --- images -----------------------------------------------------------------------------
    image_size: int = 112                  # side of every picture, pixels
    noise_std: float = 8.0                 # Gaussian pixel noise of query views (0 = none)
    min_distractor_objects: int = 1        # other creatures drawn in a query view, smaller
    max_distractor_objects: int = 3
    # --- KB-VQA questions (InfoSeek / E-VQA style) ------------------------------------------
    kbvqa_train_views_per_entity: int = 24  # training views of each seen entity
    kbvqa_test_views_seen: int = 3         # test views of each seen entity (unseen_question)
    kbvqa_test_views_unseen: int = 8       # test views of each unseen entity (unseen_entity)
    kbvqa_questions_per_view: int = 2      # questions (about different facts) per view
    unseen_question_attributes: int = 3    # facts per seen entity asked only in test
    # --- multiple-choice reasoning (ScienceQA style, RCTS) ----------------------------------
    mc_templates: int = 6                  # question templates used (each has hidden rules)
    mc_options: int = 4                    # options per question
    mc_kb_size: int = 2048                 # knowledge base of solved examples (rule variant 0)
    mc_test_size: int = 320                # test questions (rule variant 0)
    mc_train_size: int = 2400              # pretraining questions (rule variants 1..V)
    mc_train_rule_variants: int = 3        # V: different rule mappings used by mc_train
    mc_hint_rate: float = 0.5              # share of MC questions with a hint in ``context``
    # --- literature (BioASQ style, SeRTS) ----------------------------------------------------
    n_conditions: int = 70
    n_compounds: int = 100
    n_genes: int = 70                      # >= n_conditions (each condition has its own gene)
    abstracts_per_fact_min: int = 2
    abstracts_per_fact_max: int = 4
    n_lit_questions: int = 360
    abstract_alias_share: float = 0.0      # abstracts that introduce a second name, "X (Y)" (issue 55)

    def __post_init__(self):
        def need(ok: bool, msg: str):
            if not ok:
                raise ValueError(f"ToyWorldConfig: {msg}")

        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            kind = int if f.type == "int" else (int, float)
            need(isinstance(v, kind) and not isinstance(v, bool), f"{f.name} must be of type {f.type}")
            need(v >= 0, f"{f.name} must be >= 0, got {v}")
        per_family = self.members_per_family + self.distractor_members_per_family
        need(self.n_families >= 2, "n_families must be >= 2")
        need(self.members_per_family >= 2, "members_per_family must be >= 2 (look-alikes)")
        need(per_family <= len(COLOURS), f"at most {len(COLOURS)} creatures per family")
        need(self.unseen_entities_per_family < self.members_per_family,
             "unseen_entities_per_family must leave at least one seen member")
        need(32 <= self.image_size <= 512, "image_size must be in 32..512")
        need(self.noise_std <= 64, "noise_std must be <= 64")
        need(1 <= self.min_distractor_objects <= self.max_distractor_objects <= 6,
             "need 1 <= min_distractor_objects <= max_distractor_objects <= 6")
        need(self.kbvqa_train_views_per_entity >= 1 and self.kbvqa_test_views_seen >= 1
             and self.kbvqa_test_views_unseen >= 1, "every KB-VQA views count must be >= 1")
        need(1 <= self.kbvqa_questions_per_view <= self.unseen_question_attributes <= 5,
             "need 1 <= kbvqa_questions_per_view <= unseen_question_attributes <= 5")
        need(1 <= self.mc_templates <= len(MC_TEMPLATES), f"mc_templates must be in 1..{len(MC_TEMPLATES)}")
        need(2 <= self.mc_options <= MIN_POOL, f"mc_options must be in 2..{MIN_POOL}")
        need(min(self.mc_kb_size, self.mc_test_size, self.mc_train_size) >= 1, "MC sizes must be >= 1")
        need(self.mc_train_rule_variants >= 1, "mc_train_rule_variants must be >= 1")
        need(self.mc_hint_rate <= 1, "mc_hint_rate must be in [0, 1]")
        need(self.n_conditions >= 2 and self.n_compounds >= 5, "need >= 2 conditions and >= 5 compounds")
        need(self.n_genes >= self.n_conditions, "n_genes must be >= n_conditions")
        need(1 <= self.abstracts_per_fact_min <= self.abstracts_per_fact_max <= 10,
             "need 1 <= abstracts_per_fact_min <= abstracts_per_fact_max <= 10")
        need(self.n_lit_questions >= 4, "n_lit_questions must be >= 4")
        need(self.abstract_alias_share <= 1, "abstract_alias_share must be in [0, 1]")
        need(len(PATTERNS) >= 2, "internal: too few patterns")

    def scaled(self, factor: float) -> ToyWorldConfig:
        """A bigger (or smaller) world: every count multiplied by ``factor`` (gpu profile: 4).

        Families grow, not family size (look-alike groups stay the same); literature concepts grow.
        """
        if not factor > 0:
            raise ValueError(f"factor must be positive, got {factor}")

        def s(v: int, lo: int = 1) -> int:
            return max(lo, round(v * factor))

        return dataclasses.replace(
            self, n_families=s(self.n_families, 2), n_distractor_families=s(self.n_distractor_families, 0),
            mc_kb_size=s(self.mc_kb_size), mc_test_size=s(self.mc_test_size),
            mc_train_size=s(self.mc_train_size), n_conditions=s(self.n_conditions, 2),
            n_compounds=s(self.n_compounds, 5), n_genes=s(self.n_genes, 2),
            n_lit_questions=s(self.n_lit_questions, 4))

    @classmethod
    def small(cls) -> ToyWorldConfig:
        """A tiny world for unit tests (builds and renders in about a second)."""
        return cls(n_families=4, members_per_family=3, n_distractor_families=1,
                   kbvqa_train_views_per_entity=3, kbvqa_test_views_seen=1, kbvqa_test_views_unseen=2,
                   mc_templates=3, mc_kb_size=40, mc_test_size=12, mc_train_size=40,
                   n_conditions=10, n_compounds=16, n_genes=12, n_lit_questions=24)

    def to_dict(self) -> dict:
        """The fields, as the manifest records them; ``abstract_alias_share`` only when set, so the
        worlds built before the option keep their manifest (and its hash) byte for byte."""
        out = dataclasses.asdict(self)
        if not out["abstract_alias_share"]:
            del out["abstract_alias_share"]
        return out
