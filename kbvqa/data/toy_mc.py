"""Multiple-choice reasoning questions (ScienceQA style) whose answers must be read from examples.

Design (why in-context examples matter). Each (question template, family) pair has a hidden
*rule*: one visual attribute of the creature, its body pattern or its colour, decides the answer
("glimmerfins with stripes raise their young in spring, those with dots in autumn"). The rule is
stated nowhere in the documents; the only way to know it is to look at solved examples of the same
family. Hence:

- ``mc_kb`` (the RCTS knowledge base of §3.1, x_i = (I_i, Q_i, A_i, C_i), as ``KBExample`` with
  ``reasoning_context=None``: C_i is generated later by §3.2's self-consistent evaluation) and
  ``mc_test`` follow the same rules (variant 0), on different views of the same creatures.
- ``mc_train`` (to pretrain the tiny model) uses rule variants 1..V with *different* mappings for
  the same (template, family) pairs, so the rule ids of ``mc_train`` and ``mc_kb``/``mc_test`` are
  disjoint: a model cannot memorise the test rules and, zero-shot, is at chance or worse (entities
  held out of KB-VQA training are left out of ``mc_train`` too). It must learn to copy the answer
  from retrieved examples that show the same family *and* the same key attribute: pair an
  ``mc_train`` item with other items of the same ``meta["rule_id"]`` (``ToyWorld.rule_examples``).
- A rule maps different key values to different answers, and the options always include the
  answers of the family's other key values, so a retrieved look-alike that differs in the key
  attribute (same silhouette, other pattern) argues for a wrong option: retrieval and re-ranking
  (RCTS MCTS-HR) have something to get right.

``context`` holds a hint that names the key attribute (not the mapping) for a share of items;
``solution`` is the worked reasoning (look at the key attribute, recall the family rule, answer).

Leaves out: the KB-VQA questions (``toy_questions.py``).
"""
from __future__ import annotations

from dataclasses import dataclass

from kbvqa.data.schema import KBExample, Query, option_letters
from kbvqa.data.toy_entities import Entity, Family
from kbvqa.data.toy_images import ViewSpec, renderer, subject_box
from kbvqa.data.toy_names import item_rng
from kbvqa.data.toy_questions import GENERIC_NOUNS, _cycle, make_view


@dataclass(frozen=True)
class MCTemplate:
    id: str
    question: str            # with {noun}
    pool: tuple[str, ...]    # possible answers
    fact: str                # "raise their young in {answer}" (plural subject)
    topic: str               # for the hint: "when they raise their young"


MC_TEMPLATES = (
    MCTemplate("season", "In which season does this {noun} raise its young?",
               ("spring", "summer", "autumn", "winter", "the rainy season"),
               "raise their young in {answer}", "when they raise their young"),
    MCTemplate("call", "What kind of call does this {noun} make?",
               ("a chirp", "a hum", "a click", "a whistle", "a croak", "a trill"),
               "make {answer}", "what call they make"),
    MCTemplate("defence", "How does this {noun} defend itself when threatened?",
               ("by hiding in burrows", "by raising spines", "by playing dead", "by fleeing at speed",
                "by hissing loudly", "by curling into a ball"),
               "defend themselves {answer}", "how they defend themselves"),
    MCTemplate("active", "At what time of day is this {noun} most active?",
               ("at dawn", "at midday", "at dusk", "at night"),
               "are most active {answer}", "when they are most active"),
    MCTemplate("social", "How does this {noun} usually live?",
               ("alone", "in pairs", "in small groups", "in large herds"),
               "usually live {answer}", "how they live"),
    MCTemplate("nest", "Where does this {noun} build its nest?",
               ("in tree hollows", "underground", "among reeds", "on cliff ledges", "in floating mats"),
               "build their nests {answer}", "where they nest"),
)
MIN_POOL = min(len(t.pool) for t in MC_TEMPLATES)


def key_words(key: str, value: str) -> str:
    """'stripes' / 'plain skin' for a pattern, 'blue' for a colour."""
    if key == "pattern":
        return "plain skin" if value == "plain" else value
    return value


def build_rules(seed: int, families: list[Family], entities: dict[str, Entity], n_templates: int,
                n_variants: int) -> dict[str, dict]:
    """rule_id -> {template, family, variant, key, mapping} for variants 0..n_variants."""
    rules: dict[str, dict] = {}
    for t in MC_TEMPLATES[:n_templates]:
        for fam in families:
            members = [entities[m] for m in fam.member_ids if not entities[m].distractor]
            if fam.distractor or not members:
                continue
            values = {k: sorted({getattr(m, k) for m in members}) for k in ("pattern", "colour")}
            keys = [k for k in ("pattern", "colour") if len(values[k]) >= 2]
            seen: list[tuple] = []
            rng = item_rng(seed, "mc-rule", t.id, fam.id)
            for v in range(n_variants + 1):
                for _ in range(200):  # redraw until this variant differs from the earlier ones
                    key = rng.choice(keys)
                    mapping = dict(zip(values[key], rng.sample(t.pool, len(values[key]))))
                    outcome = tuple(mapping[getattr(m, key)] for m in members)
                    if outcome not in seen:
                        break
                seen.append(outcome)
                rules[f"{t.id}/{fam.id}/v{v}"] = {"template": t.id, "family": fam.id, "variant": v,
                                                  "key": key, "mapping": mapping}
    return rules


def _item(seed, qid, split, t: MCTemplate, e: Entity, fam: Family, rule_id, rule, view_id,
          spec: ViewSpec, cfg):
    rng = item_rng(seed, "mc-item", qid)
    key, mapping = rule["key"], rule["mapping"]
    value = getattr(e, key)
    answer = mapping[value]
    lookalike_answers = sorted(set(mapping.values()) - {answer})
    n_opt = cfg.mc_options
    others = rng.sample(lookalike_answers, min(len(lookalike_answers), n_opt - 1))
    fillers = [a for a in t.pool if a != answer and a not in others]
    options = [answer] + others + rng.sample(fillers, n_opt - 1 - len(others))
    rng.shuffle(options)
    letter = option_letters(n_opt)[options.index(answer)]
    noun = fam.name if rng.random() < 0.5 else rng.choice(GENERIC_NOUNS)
    has = f"has {key_words(key, value)}" if key == "pattern" else f"is {value}"
    group = (f"{fam.plural.capitalize()} with {key_words(key, value)}" if key == "pattern"
             else f"{value.capitalize()} {fam.plural}")
    solution = (f"Look at the {key} of the creature: this {fam.name} {has}. "
                f"{group} {t.fact.format(answer=answer)}. So the answer is {answer}.")
    context = (f"Among {fam.plural}, the body {key} tells {t.topic}."
               if rng.random() < cfg.mc_hint_rate else "")
    meta = {"entity_id": e.id, "family": fam.id, "family_name": fam.name, "rule_id": rule_id,
            "template_id": t.id, "key_attribute": key, "key_value": value,
            "variant": rule["variant"], "view_id": view_id, "answer_text": answer, "noun": noun,
            "lookalike_answers": lookalike_answers}
    cls = KBExample if split == "mc_kb" else Query
    return cls(qid, t.question.format(noun=noun), [letter], "choice", image=renderer(spec),
               options=options, box=subject_box(spec), split=split, context=context,
               solution=solution, meta=meta)


def build_mc(seed: int, entities: list[Entity], families: list[Family], cfg,
             views: dict[str, ViewSpec]):
    """(rules, mc_train, mc_kb, mc_test); every view made is added to ``views``."""
    by_id = {e.id: e for e in entities}
    fam_by_id = {f.id: f for f in families}
    templates = MC_TEMPLATES[:cfg.mc_templates]
    rules = build_rules(seed, families, by_id, cfg.mc_templates, cfg.mc_train_rule_variants)
    asked = [e for e in entities if not e.distractor]
    splits = {}
    for split, n, variants in (("mc_kb", cfg.mc_kb_size, [0]), ("mc_test", cfg.mc_test_size, [0]),
                               ("mc_train", cfg.mc_train_size,
                                list(range(1, cfg.mc_train_rule_variants + 1)))):
        # unseen entities (InfoSeek's unseen-entity split) stay out of every training split
        pool = [e for e in asked if not (split == "mc_train" and e.unseen)]
        combos = [f"{e.id}|{t.id}|{v}" for e in pool for t in templates for v in variants]
        plan = _cycle(item_rng(seed, "mc-plan", split), combos, n)
        items = []
        for i, combo in enumerate(plan):
            eid, tid, v = combo.split("|")
            e, t = by_id[eid], next(x for x in templates if x.id == tid)
            rule_id = f"{tid}/{e.family_id}/v{v}"
            view_id = f"{split}-{i:05d}"
            spec = views[view_id] = make_view(seed, view_id, e, entities, cfg)
            items.append(_item(seed, f"{split}-{i:05d}", split, t, e, fam_by_id[e.family_id],
                               rule_id, rules[rule_id], view_id, spec, cfg))
        splits[split] = items
    return rules, splits["mc_train"], splits["mc_kb"], splits["mc_test"]
