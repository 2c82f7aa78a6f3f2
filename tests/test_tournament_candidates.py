"""MOLT's candidate pipeline (kbvqa.molt.candidates): grounding crops with the full-image
fallback, the Table 11 / Table 13 model wrappers on fake models, and coarse -> fusion -> passage on
the toy world with the shipped toy encoders (Recall per stage)."""
from __future__ import annotations

import pytest
from PIL import Image

from kbvqa.molt.candidates import (
    CandidateConfig,
    CandidatePipeline,
    format_wiki,
    ground_crop,
    model_extractor,
    model_grounder,
    oracle_extractor,
    stage_recall,
    valid_box,
)


class Reply:
    def __init__(self, text):
        self.text, self.prompts = text, []

    def generate(self, prompts, n=1, **kwargs):
        self.prompts += list(prompts)
        return [[self.text] for _ in prompts]


def picture():
    im = Image.new("RGB", (100, 80), (0, 0, 0))
    im.paste((255, 0, 0), (20, 20, 40, 40))
    return im


def test_valid_box_rules():
    assert valid_box((10, 10, 20, 20), (100, 80))
    for box in [None, (), (20, 10, 10, 20), (10, 10, 10, 20), (200, 10, 300, 20), (-30, -30, -1, -1), (1, 2, 3)]:
        assert not valid_box(box, (100, 80))


def test_ground_crop_pads_and_falls_back_to_the_full_image():
    out = ground_crop(picture(), [20, 20, 40, 40], padding=0.0)
    assert out.image.size == (20, 20) and out.image.getpixel((5, 5)) == (255, 0, 0)
    padded = ground_crop(picture(), [20, 20, 40, 40], padding=0.5)
    assert padded.image.size == (40, 40) and padded.region == (10, 10, 50, 50)
    for bad in (None, [], [40, 40, 20, 20], [500, 500, 600, 600]):
        full = ground_crop(picture(), bad)
        assert full.image.size == (100, 80) and full.box is None and full.region is None


def test_model_grounder_parses_table_11_answers():
    fake = Reply("[20, 20, 40, 40]")
    assert model_grounder(fake)(picture(), "what is red ?") == [20.0, 20.0, 40.0, 40.0]
    user = [p["text"] for m in fake.prompts[0] if m["role"] == "user" for p in m["content"] if p["type"] == "text"]
    assert "100x80" in "".join(user)                    # the image size goes into the prompt
    assert model_grounder(Reply("[]"))(picture(), "q") is None


def test_model_extractor_reads_a_section_id_or_falls_back_to_zero():
    from kbvqa.data.schema import Document, Passage

    doc = Document("d", "D", "s", [Passage(f"d:{i}", "d", f"text {i}") for i in range(3)])
    assert format_wiki(doc).splitlines() == ["[0] text 0", "[1] text 1", "[2] text 2"]
    assert model_extractor(Reply("2"))("q", picture(), doc) == 2
    for text in ("7", "banana", "", "-1"):
        assert model_extractor(Reply(text))("q", picture(), doc) == 0


@pytest.mark.parametrize("kwargs", [{"k": 0}, {"n": 0}, {"k": 3, "n": 5}, {"padding": -0.1}, {"k": 2.5}])
def test_bad_configs_raise(kwargs):
    with pytest.raises(ValueError):
        CandidateConfig(**kwargs)


@pytest.fixture(scope="module")
def toy():
    import torch

    from kbvqa.data import get_world
    from kbvqa.models.encoders import get_encoders
    from kbvqa.prompts.formats import view_ref

    torch.set_num_threads(1)
    world = get_world(0)
    pipeline = CandidatePipeline(world.documents, get_encoders("cpu"), CandidateConfig(k=8, n=4),
                                 doc_image=lambda d: view_ref(world, d.meta["image_id"], 56))
    return world, pipeline


def test_pipeline_on_the_toy_world(toy):
    world, pipeline = toy
    queries = world.kbvqa_test[:12]
    sets = [pipeline.run(q, oracle_extractor(world, q)) for q in queries]
    for q, s in zip(queries, sets):
        assert len(s.coarse) == 8 and len(s.fused) == 4 and len(s.candidates) == 4
        assert {d for d, _ in s.fused} <= {d for d, _ in s.coarse}
        assert [x for _, x in s.fused] == sorted((x for _, x in s.fused), reverse=True)
        assert [c.id for c in s.candidates] == ["1", "2", "3", "4"]       # ids = fusion rank by default
        section = world.passage(q.evidence_ids[0]).section
        assert all(world.passage(c.passage_id).section == section for c in s.candidates)
    recall = stage_recall(queries, sets)
    # the oracle extractor finds the gold passage whenever the gold page survives fusion
    assert recall["passage_recall"] == recall["fused_recall"]
    assert recall["fused_recall"] <= recall["coarse_recall"] and recall["fused_top1"] <= recall["fused_recall"]
    assert recall["coarse_recall"] >= 0.75                 # the shipped encoders find the page in the top-8


def test_pipeline_without_an_extractor_takes_section_zero_and_random_ids_repeat(toy):
    world, pipeline = toy
    q = world.kbvqa_test[0]
    s = pipeline.run(q)
    assert all(c.passage_id == world.document(c.doc_id).passages[0].id for c in s.candidates)
    shuffled = CandidatePipeline.__new__(CandidatePipeline)
    shuffled.__dict__.update(pipeline.__dict__)
    shuffled.config = CandidateConfig(k=8, n=4, random_ids=True, seed=3)
    ids = [c.id for c in shuffled.run(q).candidates]
    assert sorted(ids) == ["1", "2", "3", "4"] and ids == [c.id for c in shuffled.run(q).candidates]


def test_grounder_falls_back_to_the_full_document_image(toy):
    world, pipeline = toy
    grounded = CandidatePipeline.__new__(CandidatePipeline)
    grounded.__dict__.update(pipeline.__dict__)
    grounded.grounder = lambda image, question: None            # an invalid box for every image
    c = grounded.run(world.kbvqa_test[1]).candidates[0]
    assert c.meta["box"] is None and c.image.size == (56, 56)
    grounded.grounder = lambda image, question: [0, 0, 28, 28]
    c = grounded.run(world.kbvqa_test[1]).candidates[0]
    assert c.meta["box"] == (0, 0, 28, 28) and c.image.size[0] < 56


def test_stage_recall_by_hand():
    from kbvqa.data.schema import Query
    from kbvqa.molt.candidates import CandidateSet
    from kbvqa.molt.ladder import Candidate

    q = Query("q", "?", ["a"], gold_doc_ids=["g"], evidence_ids=["g:1"])
    hit = CandidateSet([("x", 1.0), ("g", 0.5)], [("g", 2.0)], [Candidate("1", "t", None, "g", "g:1")])
    miss = CandidateSet([("x", 1.0)], [("x", 1.0)], [Candidate("1", "t", None, "x", "x:1")])
    assert stage_recall([q, q], [hit, miss]) == {"coarse_recall": 0.5, "coarse_top1": 0.0, "fused_recall": 0.5,
                                                 "fused_top1": 0.5, "passage_recall": 0.5}
    with pytest.raises(ValueError):
        stage_recall([q], [])


def test_eq12_coarse_and_eq13_fusion_by_hand(toy):
    """MOLT Eq. 12: top-K by <v_q, s_i> over every summary; Eq. 13: the top-K re-scored by MaxSim of
    [E(T_q); E(I_q)] against [E(S_i); E(I_i)], best N kept."""
    from kbvqa.data.schema import open_image
    from kbvqa.retrieval.late_interaction import maxsim_loop

    world, pipeline = toy
    enc, q = pipeline.encoders, world.kbvqa_test[3]
    v = enc.pooled(images=[open_image(q.image)]).float()[0]
    s = enc.pooled(texts=[d.summary or d.title for d in world.documents]).float()
    by_hand = sorted(zip((d.id for d in world.documents), (s @ v).tolist()), key=lambda x: -x[1])[:8]
    coarse = pipeline.coarse(q.image)
    assert [d for d, _ in coarse] == [d for d, _ in by_hand]
    assert all(abs(a - b) < 1e-4 for (_, a), (_, b) in zip(coarse, by_hand))
    query = enc.encode_queries([open_image(q.image)], [q.question])[0]
    docs = {d.id: d for d in world.documents}
    scores = {d: float(maxsim_loop(query, enc.encode_queries([open_image(pipeline.doc_image(docs[d]))],
                                                             [docs[d].summary or docs[d].title])[0]))
              for d, _ in coarse}
    fused = pipeline.fuse(q.image, q.question, coarse)
    assert [d for d, _ in fused] == sorted(scores, key=lambda d: -scores[d])[:4]
    assert all(abs(x - scores[d]) < 1e-3 for d, x in fused)


class SectionOf:
    """A fake extractor model that names, for each Table 13 prompt, the section ``pick(prompt)`` gives."""

    def __init__(self, pick):
        self.pick, self.calls = pick, []

    def generate(self, prompts, n=1, batch_size=16, **kwargs):
        self.calls.append(len(prompts))
        return [[str(self.pick(p))] for p in prompts]


def test_a_model_extractor_reads_every_querys_documents_in_batched_calls(toy):
    """``candidate_sets(..., extractor_model=m)``: one batched generate for every (query, document);
    each candidate is the section the model named; a model that names the gold section everywhere
    gives the oracle's candidates, and ``model_extraction`` measures the agreement."""
    from kbvqa.experiments.molt_candidates.run import model_extraction
    from kbvqa.molt.candidates import candidate_sets, model_sections, pipeline_for

    world, pipeline = toy
    queries = world.kbvqa_test[:5]
    always_one = SectionOf(lambda prompt: 1)
    sets = candidate_sets(world, pipeline, queries, extractor_model=always_one)
    assert always_one.calls == [5 * 4]                       # 5 queries x 4 documents, one call
    assert all(c.passage_id == world.document(c.doc_id).passages[1].id for s in sets for c in s.candidates)

    section_of_text = {p.text: p.section for d in world.documents for p in d.passages}

    def gold_section(prompt):      # the numbered section whose passage is in the gold passage's section
        text = "\n".join(p.get("text", "") for m in prompt for p in m["content"] if p["type"] == "text")
        q = next(q for q in queries if q.question in text)
        gold = world.passage(q.evidence_ids[0]).section
        lines = [line.split("] ", 1) for line in text.splitlines() if line.startswith("[") and "] " in line]
        return next((int(m[1:]) for m, body in lines if section_of_text.get(body) == gold), 0)

    def passages(sets):
        return [[c.passage_id for c in s.candidates] for s in sets]
    oracle = candidate_sets(world, pipeline, queries)
    assert passages(candidate_sets(world, pipeline, queries, extractor_model=SectionOf(gold_section))) == \
        passages(oracle)
    assert model_sections(always_one, []) == []

    measured = model_extraction(world, always_one, every=len(world.kbvqa_test) // 3, n=2, k=4)
    assert measured["queries"] == 3 or measured["queries"] == 4
    assert measured["documents"] == 2 * measured["queries"] and 0 <= measured["section_agreement"] <= 1
    assert measured["passage_recall_model"] <= measured["passage_recall_oracle"]
    with pytest.raises(ValueError):
        model_extraction(world, always_one, every=0)
    assert pipeline_for(world, k=4).config.n == 4
