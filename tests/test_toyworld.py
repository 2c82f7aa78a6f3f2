"""Tests of the toy world: determinism, sizes, splits, answerability, images, rules, config.

Most tests use the small world (``ToyWorldConfig.small()``, about a second); the default world is
built once per session (``get_world`` memoises) for the size minimums, the split and answer checks
on every question, and the manifest hash that guards against accidental changes.
The literature's synonym property is tested in ``test_toy_literature.py``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import itertools
import pickle
import re
import time
from collections import Counter

import numpy as np
import pytest
from PIL import Image

from kbvqa.data.schema import KBExample, open_image
from kbvqa.data.toy_documents import SECTIONS, entity_fields
from kbvqa.data.toy_images import (
    canonical_spec,
    foreground_mask,
    mask_iou,
    render_view,
    subject_box,
    subject_mask,
)
from kbvqa.data.toy_io import manifest_bytes
from kbvqa.data.toy_shapes import sprite
from kbvqa.data.toyworld import (
    TOYWORLD_VERSION,
    ToyWorldConfig,
    build_world,
    get_world,
    load_world,
)
from kbvqa.viz.toy_world import draw_query, family_grid

# sha256 of manifest.json of the default world (seed 0). If a change to the generator alters the
# world on purpose, bump TOYWORLD_VERSION in kbvqa/data/toyworld.py and paste the new hash here.
DEFAULT_MANIFEST_SHA256 = "f2909224fc5783d122eab6819e06600e7fa65dde5d7315874313f5c86274036c"


@pytest.fixture(scope="module")
def small():
    return build_world(0, ToyWorldConfig.small())


@pytest.fixture(scope="module")
def world():
    t0 = time.perf_counter()
    w = get_world(0)
    print(f"\ndefault toy world built in {time.perf_counter() - t0:.2f} s")
    return w


def _tree_bytes(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_save_is_byte_identical_for_one_seed_and_differs_for_another(tmp_path):
    cfg = ToyWorldConfig.small()
    build_world(7, cfg).save(tmp_path / "a")
    build_world(7, cfg).save(tmp_path / "b")
    build_world(8, cfg).save(tmp_path / "c")
    a, b, c = (_tree_bytes(tmp_path / x) for x in "abc")
    assert a.keys() == b.keys() and any(k.endswith(".png") for k in a)
    assert all(a[k] == b[k] for k in a)
    assert a["manifest.json"] != c["manifest.json"]
    assert a["entities.jsonl"] != c["entities.jsonl"]


def test_load_world_round_trips(small, tmp_path):
    manifest_path = small.save(tmp_path / "w")
    loaded = load_world(tmp_path / "w")
    assert loaded.manifest() == small.manifest()
    assert manifest_bytes(loaded.manifest()) == manifest_path.read_bytes()
    q = loaded.kbvqa_test[0]
    assert open_image(q.image).tobytes() == open_image(small.kbvqa_test[0].image).tobytes()
    assert isinstance(loaded.mc_kb[0], KBExample) and loaded.lookalikes(q.meta["entity_id"])
    text = (tmp_path / "w" / "manifest.json").read_text().replace(TOYWORLD_VERSION, "0.0.0-old")
    (tmp_path / "w" / "manifest.json").write_text(text)
    with pytest.raises(ValueError, match="version"):
        load_world(tmp_path / "w")
    with pytest.raises(ValueError):
        load_world(tmp_path / "nothing-here")


@pytest.mark.slow
def test_default_world_manifest_hash_and_timing(world):
    t0 = time.perf_counter()
    digest = hashlib.sha256(manifest_bytes(world.manifest())).hexdigest()
    print(f"rendered and digested {len(world.view_ids())} pictures in {time.perf_counter() - t0:.2f} s")
    assert digest == DEFAULT_MANIFEST_SHA256, (
        "the default toy world changed: if on purpose, bump TOYWORLD_VERSION and update "
        f"DEFAULT_MANIFEST_SHA256 in tests/test_toyworld.py to {digest}")


def test_default_sizes_meet_the_minimums(world):
    s = world.stats()
    assert s["asked_entities"] >= 48 and s["distractor_entities"] >= 1
    big_families = [f for f in world.families if not f.distractor and len(f.member_ids) >= 3]
    assert len(big_families) >= 12
    assert s["kbvqa_train"] >= 2000 and s["kbvqa_test"] >= 500
    assert s["mc_kb"] >= 2000 and s["mc_test"] >= 300 and s["mc_train"] >= 1
    assert s["literature"] >= 2000 and s["lit_questions"] >= 300
    assert set(s["kbvqa_test_split_kind"]) == {"unseen_entity", "unseen_question"}
    for split in ("kbvqa_train", "kbvqa_test"):
        assert set(s["kbvqa_answer_types"][split]) == {"string", "numerical", "time", "multi"}
    assert set(s["lit_question_types"]) == {"yesno", "factoid", "list", "summary"}
    assert all(len(d.passages) >= 6 for d in world.documents)
    assert open_image(world.kbvqa_train[0].image).size == (112, 112)


def test_splits_do_not_overlap(world):
    splits = {n: world.split(n) for n in ("kbvqa_train", "kbvqa_test", "mc_train", "mc_kb", "mc_test",
                                          "lit_questions")}
    assert all(q.split == name for name, qs in splits.items() for q in qs)
    ids = [q.id for qs in splits.values() for q in qs]
    assert len(ids) == len(set(ids))
    views = {n: {q.meta["view_id"] for q in qs} for n, qs in splits.items() if n != "lit_questions"}
    for (n1, v1), (n2, v2) in itertools.combinations(views.items(), 2):
        assert not v1 & v2, f"{n1} and {n2} share views"
        pairs1 = {(q.meta["view_id"], q.question) for q in splits[n1]}
        assert not pairs1 & {(q.meta["view_id"], q.question) for q in splits[n2]}
    train_entities = {q.meta["entity_id"] for q in world.kbvqa_train}
    train_facts = {(q.meta["entity_id"], q.meta["attribute"]) for q in world.kbvqa_train}
    for q in world.kbvqa_test:
        if q.meta["split_kind"] == "unseen_entity":
            assert q.meta["entity_id"] not in train_entities
            assert world.document_of(q.meta["entity_id"]) in world.documents  # still in the KB
        else:
            assert q.meta["entity_id"] in train_entities
            assert (q.meta["entity_id"], q.meta["attribute"]) not in train_facts
    assert not any(world.entity(q.meta["entity_id"]).unseen for q in world.mc_train)
    rules_train = {q.meta["rule_id"] for q in world.mc_train}
    assert not rules_train & {q.meta["rule_id"] for q in world.mc_kb + world.mc_test}
    asked = {q.meta["entity_id"] for qs in splits.values() for q in qs if "entity_id" in q.meta}
    assert not asked & {e.id for e in world.entities if e.distractor}


def _value_in(text: str, value: str) -> bool:
    """``value`` occurs in ``text`` as a whole token sequence ('5' is not in '45', '3.3' not in '3.35')."""
    return re.search(rf"(?<![\w.]){re.escape(value)}(?!\w|\.\d)", text) is not None


def test_every_kbvqa_answer_is_in_its_evidence_and_not_in_lookalikes(world):
    for q in world.kbvqa_train + world.kbvqa_test:
        assert len(q.evidence_ids) == 1 and q.gold_doc_ids == [q.evidence_ids[0].split(":")[0]]
        passage = world.passage(q.evidence_ids[0])
        entity = world.entity(q.meta["entity_id"])
        assert entity.name in passage.text and entity.name in q.meta["rationale"]
        items = q.answers if q.answer_type == "multi" else q.answers[:1]
        assert all(_value_in(passage.text, a) for a in items), (q.id, q.answers, passage.text)
        assert q.answers[0].split()[0] in q.meta["rationale"]
        section = passage.section
        for other in world.lookalikes(entity.id):  # look-alikes give a different answer
            other_text = world.document_of(other.id).passage(section).text
            if q.answer_type in ("string", "time"):
                assert not _value_in(other_text, q.answers[0])
            elif q.answer_type == "multi":
                assert not all(_value_in(other_text, a) for a in q.answers)


def test_numeric_answers_lie_in_their_range_and_lookalikes_do_not(world):
    numeric = [q for q in world.kbvqa_train + world.kbvqa_test if q.answer_type == "numerical"]
    assert numeric
    for q in numeric:
        lo, hi = q.answer_range
        assert lo <= float(q.answers[0]) <= hi and q.answers[1].startswith(q.answers[0])
        field = {"length": "length_cm", "weight": "weight_kg", "lifespan": "lifespan_years"}[q.meta["attribute"]]
        for other in world.lookalikes(q.meta["entity_id"]):
            assert not lo <= getattr(other, field) <= hi, (q.id, other.id)


def test_questions_refer_to_the_subject_visually(world):
    for q in world.kbvqa_train[:300] + world.mc_kb[:300]:
        entity = world.entity(q.meta["entity_id"])
        assert f"this {q.meta['noun']}" in q.question
        assert entity.name not in q.question.lower()


def test_boxes_lie_inside_the_image_and_contain_the_subject(small):
    size = small.config.image_size
    for q in small.kbvqa_train + small.kbvqa_test + small.mc_kb + small.mc_test + small.mc_train:
        x0, y0, x1, y1 = q.box
        assert 0 <= x0 < x1 <= size and 0 <= y0 < y1 <= size
        spec = small.views[q.meta["view_id"]]
        ys, xs = np.nonzero(subject_mask(spec))
        assert (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1) == q.box  # tight and complete
    # the subject is pasted last: with the noise off, its opaque pixels are the sprite's own
    spec = dataclasses.replace(small.views[small.kbvqa_train[0].meta["view_id"]], noise_std=0.0)
    p = spec.subject
    sp = np.asarray(sprite(p.look, p.flip, p.size))
    img = np.asarray(render_view(spec))[p.y:p.y + p.size, p.x:p.x + p.size]
    opaque = sp[..., 3] == 255
    assert opaque.sum() > 100 and np.array_equal(img[opaque], sp[..., :3][opaque])


def test_images_are_lazy_deterministic_and_picklable(small):
    q = small.kbvqa_train[0]
    assert callable(q.image)
    again = pickle.loads(pickle.dumps(q.image))
    assert open_image(again).tobytes() == open_image(q.image).tobytes()
    other = small.kbvqa_train[-1]
    assert open_image(other.image).tobytes() != open_image(q.image).tobytes()


def test_lookalike_families_share_a_silhouette(world):
    masks = {}
    for f in world.families:
        masks[f.id] = [foreground_mask(open_image(world.document_of(m).image)) for m in f.member_ids]
    within = [mask_iou(a, b) for ms in masks.values() for a, b in itertools.combinations(ms, 2)]
    firsts = [ms[0] for ms in masks.values()]
    between = [mask_iou(a, b) for a, b in itertools.combinations(firsts, 2)]
    assert min(within) > 0.9
    assert np.mean(between) < 0.8 and max(between) < min(within)
    # ... while look-alikes differ in colour or pattern
    for f in world.families:
        looks = {(world.entity(m).colour, world.entity(m).pattern) for m in f.member_ids}
        assert len(looks) == len(f.member_ids)


def test_canonical_image_differs_from_the_query_views(small):
    e = small.asked_entities[0]
    canon = render_view(canonical_spec(e.look, small.config.image_size))
    assert canon.tobytes() == open_image(small.document_of(e.id).image).tobytes()
    view = next(q for q in small.kbvqa_train + small.kbvqa_test if q.meta["entity_id"] == e.id)
    assert open_image(view.image).tobytes() != canon.tobytes()
    assert subject_box(small.views[view.meta["view_id"]]) == view.box


def test_documents_name_their_entity_and_lookalikes_share_wording(world):
    names = {e.id: e.name for e in world.entities}
    fams = {f.id: f for f in world.families}

    def masked(e, text):
        for value in sorted(entity_fields(e, names, fams).values(), key=len, reverse=True):
            if value:
                text = text.replace(value, "<>")
        return text

    for f in world.families[:6]:
        docs = [(world.entity(m), world.document_of(m)) for m in f.member_ids]
        for (e1, d1), (e2, d2) in itertools.combinations(docs, 2):
            assert [p.section for p in d1.passages] == list(SECTIONS)
            assert all(e1.name in p.text for p in d1.passages)
            for p1, p2 in zip(d1.passages, d2.passages):
                assert p1.text != p2.text and masked(e1, p1.text) == masked(e2, p2.text)


def test_mc_answers_follow_the_rules(world):
    for q in world.mc_train + world.mc_kb + world.mc_test:
        rule = world.mc_rules[q.meta["rule_id"]]
        entity = world.entity(q.meta["entity_id"])
        assert rule["family"] == entity.family_id and rule["template"] == q.meta["template_id"]
        assert q.answer_text == rule["mapping"][getattr(entity, rule["key"])]
        assert (rule["variant"] == 0) == (q.split in ("mc_kb", "mc_test"))
        assert set(q.meta["lookalike_answers"]) <= set(q.options) or len(q.options) <= len(
            q.meta["lookalike_answers"])
        assert q.answer_text not in q.meta["lookalike_answers"] and q.solution.endswith(q.answer_text + ".")
    assert all(isinstance(q, KBExample) and q.reasoning_context is None for q in world.mc_kb)
    # a train variant never repeats the test rule over the family's members
    for rid, rule in world.mc_rules.items():
        if rule["variant"] == 0:
            continue
        test_rule = world.mc_rules[rid.rsplit("/", 1)[0] + "/v0"]
        members = [world.entity(m) for m in world.family(rule["family"]).member_ids
                   if not world.entity(m).distractor]
        outcome = [rule["mapping"][getattr(m, rule["key"])] for m in members]
        assert outcome != [test_rule["mapping"][getattr(m, test_rule["key"])] for m in members]


def test_mc_test_needs_the_right_in_context_examples(world):
    """Memorising mc_train does not help (its rules differ); same-key mc_kb examples give the
    answer, look-alikes that differ in the key attribute never do."""
    memory: dict[tuple, Counter] = {}
    for q in world.mc_train:
        e = world.entity(q.meta["entity_id"])
        memory.setdefault((q.meta["template_id"], e.id), Counter())[q.answer_text] += 1
    by_rule: dict[str, list] = {}
    for x in world.mc_kb:
        by_rule.setdefault(x.meta["rule_id"], []).append(x)
    memorised = 0
    for q in world.mc_test:
        seen = memory.get((q.meta["template_id"], q.meta["entity_id"]))
        memorised += bool(seen) and seen.most_common(1)[0][0] == q.answer_text
        key, value = q.meta["key_attribute"], q.meta["key_value"]
        examples = by_rule[q.meta["rule_id"]]
        same = [x for x in examples if x.meta["key_value"] == value]
        other = [x for x in examples if x.meta["key_value"] != value]
        assert same and other and all(x.meta["key_attribute"] == key for x in examples)
        assert all(x.answer_text == q.answer_text for x in same)
        assert all(x.answer_text != q.answer_text for x in other)
        assert {x.answer_text for x in other} <= set(q.options) or len(q.options) <= len(other)
    assert memorised / len(world.mc_test) < 1 / world.config.mc_options + 0.1


def test_helpers(world, small):
    e = world.asked_entities[0]
    assert all(o.family_id == e.family_id and o.id != e.id for o in world.lookalikes(e.id))
    doc = world.document_of(e.id)
    assert doc.meta["entity_id"] == e.id and world.passage(doc.passages[0].id) is doc.passages[0]
    assert get_world(0) is world
    canonical = world.concepts[0].name
    assert world.synonyms_of(world.synonyms[canonical][-1].upper()) == world.synonyms[canonical]
    assert world.synonyms_of("no such concept") == []
    grid = family_grid(small, n_families=3)
    assert isinstance(grid, Image.Image) and grid.width > 3 * small.config.image_size
    drawing = draw_query(small, small.kbvqa_test[0])
    assert drawing.height > 3 * small.config.image_size
    with pytest.raises(ValueError):
        world.split("validation")
    q = world.mc_test[0]
    same = world.rule_examples(q)
    assert same and all(x.split == "mc_kb" and x.meta["rule_id"] == q.meta["rule_id"] for x in same)
    assert all(x.id != world.mc_train[0].id for x in world.rule_examples(world.mc_train[0]))
    with pytest.raises(ValueError):
        world.rule_examples(world.kbvqa_test[0])


def test_draw_query_keeps_every_line_inside_the_picture(small):
    """A long answer (chapter 00's figure ran two answers off the panel) is wrapped to the width."""
    q = next(q for q in small.kbvqa_test if q.answer_type == "multi")
    long = dataclasses.replace(q, answers=["skonkend", "tesax", "shookand", "todern", "x" * 60])
    short = draw_query(small, q, scale=2)
    drawn = draw_query(small, long, scale=2)
    pic_h = open_image(q.image).height * 2
    assert drawn.width == short.width and drawn.height > short.height   # wrapped, not widened
    text = np.asarray(drawn)[pic_h:]
    assert (text[:, -4:] == 255).all(), "ink in the right margin: a line runs off the picture"
    assert (text != 255).any()


@pytest.mark.parametrize("bad", [
    {"n_families": 1}, {"members_per_family": 1}, {"image_size": 8}, {"mc_options": 9},
    {"unseen_entities_per_family": 4}, {"n_genes": 3}, {"mc_hint_rate": 1.5}, {"noise_std": -1.0},
    {"kbvqa_questions_per_view": 4}, {"n_families": 2.5}, {"max_distractor_objects": 0},
])
def test_bad_config_raises(bad):
    with pytest.raises(ValueError):
        ToyWorldConfig(**bad)


def test_bad_arguments_raise():
    with pytest.raises(ValueError):
        build_world(-1, ToyWorldConfig.small())
    with pytest.raises(ValueError):
        build_world(0, {"n_families": 4})
    with pytest.raises(ValueError):
        ToyWorldConfig().scaled(0)
    bigger = ToyWorldConfig().scaled(4)
    assert bigger.n_families == 64 and bigger.mc_kb_size == 4 * 2048 and bigger.members_per_family == 4


def test_abstract_aliases_change_only_the_literature(world):
    """Issue 55: a share of abstracts introduces a second name of its subject ("X (Y)") from an RNG
    stream of its own: creatures, KB-VQA and MC stay byte-identical, and so does every abstract's
    wording outside the bracket."""
    import dataclasses as dc

    aliased = build_world(0, dc.replace(ToyWorldConfig(), abstract_alias_share=0.3))
    for split in ("entities", "documents", "kbvqa_train", "kbvqa_test", "mc_kb", "mc_test", "mc_train",
                  "lit_questions"):
        assert [x.to_dict() for x in getattr(aliased, split)] == [x.to_dict() for x in getattr(world, split)], split
    assert len(aliased.literature) == len(world.literature)
    introduced = 0
    for a, b in zip(aliased.literature, world.literature):
        assert a.id == b.id and a.title == b.title and a.meta["names"] == b.meta["names"]
        if "alias" in a.meta:
            introduced += 1
            name = a.meta["names"][0].lower()        # the key sentence may open with it, capitalised
            assert a.text.lower() == b.text.lower().replace(name, f"{name} ({a.meta['alias'].lower()})", 1)
            assert a.meta["alias"] != a.meta["names"][0]
        else:
            assert a.text == b.text
    assert 0.2 < introduced / len(world.literature) < 0.4
    assert "abstract_alias_share" not in ToyWorldConfig().to_dict()          # the default manifest is unchanged
    with pytest.raises(ValueError, match="abstract_alias_share"):
        ToyWorldConfig(abstract_alias_share=1.5)
