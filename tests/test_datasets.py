"""Real-dataset loaders: the offline samples in ../shared/data-samples and hand-made fixtures.

Sample tests skip when the samples folder is absent (override its location with KBVQA_SAMPLES).
InfoSeek, E-VQA and VizWiz have no offline samples: the fixtures below are invented rows written in
the official file formats (field names from the official READMEs), not real dataset content.
No test touches the network: every load is local or offline=True.
"""
from __future__ import annotations

import gzip
import json
import sys
import types

import pytest
from _samples import sample  # noqa: E402

from kbvqa.data import datasets as D
from kbvqa.data import real_bioasq as B
from kbvqa.data import real_common as C
from kbvqa.data import real_nonreasoning as NR
from kbvqa.data import real_reasoning as RR
from kbvqa.data.schema import KBExample, open_image, option_letters


@pytest.fixture(autouse=True)
def _no_network(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("KBVQA_DATA", raising=False)


# ------------------------------------------------------------------ ScienceQA (samples)

def test_scienceqa_splits_follow_official_pid_splits():
    root = sample("scienceqa")
    splits = json.loads((root / "pid_splits_official.json").read_text())
    problems = json.loads((root / "problems_150.json").read_text())
    test = D.load_dataset("scienceqa", "eval", root=root)
    kb = D.load_dataset("scienceqa", "kb", root=root)
    assert len(test) == 50 and len(kb) == 100
    assert {q.id for q in test} <= set(splits["test"])
    assert {q.id for q in kb} <= set(splits["train"]) | set(splits["val"])
    assert not {q.id for q in test} & {q.id for q in kb}
    assert all(isinstance(q, KBExample) and q.reasoning_context is None for q in kb)
    assert not any(isinstance(q, KBExample) for q in test)
    for q in test + kb:
        p = problems[q.id]
        assert q.answer == option_letters(len(p["choices"]))[p["answer"]]
        assert q.answer_text == p["choices"][p["answer"]] and q.context == p["hint"]
        assert q.solution.startswith(p["lecture"]) and q.solution.endswith(p["solution"])
        assert q.meta["subject"] == p["subject"] and q.split == p["split"]


def test_scienceqa_images_limit_and_bad_split():
    root = sample("scienceqa")
    test = D.load_dataset("scienceqa", "test", root=root)
    with_image = [q for q in test if q.meta["has_image"]]
    assert len(with_image) == 24 and all(q.image is None for q in test if not q.meta["has_image"])
    assert all(open_image(q.image).mode == "RGB" and min(open_image(q.image).size) > 1 for q in with_image)
    assert len(D.load_dataset("scienceqa", "test", root=root, limit=7)) == 7
    for bad in ({"split": "nope"}, {"split": "test", "limit": -1}):
        with pytest.raises(ValueError):
            D.load_dataset("scienceqa", root=root, **bad)


# ------------------------------------------------------------------ MATH-Vision (samples)

def test_mathvision_choice_vs_free():
    qs = D.load_dataset("mathvision", "eval", root=sample("mathvision"))
    choice, free = ([q for q in qs if q.answer_type == t] for t in ("choice", "free"))
    assert (len(qs), len(choice), len(free)) == (304, 190, 114)
    assert all(len(q.options) == 5 and q.answer in "ABCDE" for q in choice)
    assert all(q.options is None for q in free)
    assert sum("<image1>" in q.question for q in qs) == 303
    assert [q.id for q in qs if q.image is not None] == [q.id for q in qs[:40]]
    assert open_image(qs[0].image).size[0] > 1


def test_mathvision_kb_is_test_minus_testmini(tmp_path):
    root = sample("mathvision")
    with pytest.raises(C.DatasetNotAvailable):  # the sample has no test.jsonl
        D.load_dataset("mathvision", "kb", root=root)
    mini = [json.loads(x) for x in (root / "testmini.jsonl").read_text().splitlines()[:5]]
    extra = [{**mini[0], "id": f"x{i}"} for i in range(3)]
    (tmp_path / "test.jsonl").write_text("\n".join(json.dumps(r) for r in mini + extra))
    (tmp_path / "testmini.jsonl").write_text("\n".join(json.dumps(r) for r in mini))
    kb = D.load_dataset("mathvision", "kb", root=tmp_path)
    assert [q.id for q in kb] == ["x0", "x1", "x2"]
    assert len(D.load_dataset("mathvision", "test", root=tmp_path)) == 8


# ------------------------------------------------------------------ VSR-MC (samples)

def test_vsr_mc_only_true_captions_six_options():
    rows = [json.loads(x) for x in (sample("vsr") / "random_test_first50.jsonl").read_text().splitlines()]
    qs = D.load_dataset("vsr_mc", "eval", root=sample("vsr"))
    assert len(qs) == sum(r["label"] == 1 for r in rows) == 30
    for q in qs:
        rel = q.meta["relation"]
        assert len(q.options) == 6 == len(set(q.options)) and q.options.count(rel) == 1
        assert set(q.options) <= set(NR.VSR_RELATIONS) and q.answer_text == rel
        assert q.question.count(NR.VSR_MASK) == 1
        assert q.question.replace(NR.VSR_MASK, rel) == q.meta["caption"]
    assert len(D.load_dataset("vsr_mc", "test", root=sample("vsr"), variant="zeroshot")) == 19


def test_vsr_mc_options_are_deterministic_per_seed(tmp_path):
    a, b, c = (D.load_dataset("vsr_mc", "test", root=sample("vsr"), seed=s) for s in (3, 3, 4))
    assert [q.options for q in a] == [q.options for q in b] != [q.options for q in c]
    assert len({q.answer for q in a}) >= 3  # the true relation does not sit at one position
    lines = (sample("vsr") / "random_test_first50.jsonl").read_text().splitlines()
    (tmp_path / "test.jsonl").write_text("\n".join(reversed(lines)))  # keyed by row, not position
    reversed_rows = D.load_dataset("vsr_mc", "test", root=tmp_path, seed=3)
    assert {q.id: q.options for q in reversed_rows} == {q.id: q.options for q in a}
    assert NR.mask_relation("The cat is in the sink.", "in") == "The cat is ___ the sink."
    assert NR.mask_relation("The person is inside the car.", "in") is None
    assert NR.mask_relation("The cake consists of the dog.", "consists of") == "The cake ___ the dog."
    with pytest.raises(ValueError):
        NR.vsr_mc_options("levitating", 0)


# ------------------------------------------------------------------ MMMU (answers-only samples)

def test_mmmu_answer_dict_and_example_outputs():
    root = sample("mmmu")
    answers = RR.load_mmmu_answer_dict(root / "answer_dict_val.json")
    assert len(answers) == 900
    assert sum(v["question_type"] == "multiple-choice" for v in answers.values()) == 847
    assert answers["validation_Chemistry_30"]["ground_truth"] == ["$MgS$", "MgS"]
    assert answers["validation_Accounting_1"]["ground_truth"] == ["B"]
    outputs = RR.load_mmmu_example_outputs(root / "example_output_llava1.5_13b_Accounting.json")
    assert len(outputs) == 30
    q, response = outputs[0]
    assert q.options == ["$6", "$7", "$8", "$9"] and q.answer == "B" and q.answer_text == "$7"
    assert q.meta["question_missing"] and response == "D"
    assert all(q.answer == answers[q.id]["ground_truth"][0] for q, _ in outputs)
    with pytest.raises(C.DatasetNotAvailable, match="answer"):
        D.load_dataset("mmmu", "dev", root=sample("mmmu"), subjects=("Accounting",))
    assert RR.parse_mmmu_options("['$6', '$7']") == ["$6", "$7"]
    assert RR.parse_mmmu_options("not a list [") == [] and RR.parse_mmmu_options("3") == []


# ------------------------------------------------------------------ BioASQ (samples)

def test_bioasq_types_and_exact_answers():
    root = sample("bioasq")
    raw = {q["id"]: q for q in json.loads((root / "11B1_subset_20.json").read_text())["questions"]}
    qs = D.load_dataset("bioasq", "eval", root=root)
    assert len(qs) == 20 and sorted({q.answer_type for q in qs}) == ["factoid", "list", "summary", "yesno"]
    for q in qs:
        r = raw[q.id]
        assert q.question == r["body"] and q.solution == r["ideal_answer"][0]
        assert q.gold_doc_ids == [u.rsplit("/", 1)[1] for u in r["documents"]]
        if q.answer_type == "yesno":
            assert q.answers == [r["exact_answer"]] and q.answer in ("yes", "no")
        elif q.answer_type in ("factoid", "list"):
            assert q.meta["exact_answer"] == r["exact_answer"]
            assert set(q.answers) == {s.strip() for item in r["exact_answer"] for s in item}
        else:
            assert q.meta["exact_answer"] == [] and q.answers[0] == r["ideal_answer"][0].strip()
    lists = D.load_dataset("bioasq", "11B1", root=root, types=("list",))
    assert len(lists) == 5 and all(len(q.meta["exact_answer"]) >= 1 for q in lists)


def test_bioasq_snippet_corpus():
    root = sample("bioasq")
    qs = D.load_dataset("bioasq", root=root)
    corpus = D.load_knowledge_base("bioasq", root=root, queries=qs)
    assert len(corpus) == 129 and all(item.id.isdigit() for item in corpus)
    assert B.corpus_coverage(qs, corpus) == {"gold_docs": 134, "in_corpus": 128, "missing": 6,
                                           "corpus_size": 129}
    item = {i.id: i for i in corpus}["34687634"]
    assert "losartan was well tolerated" in item.text and item.meta["source"] == "snippets"
    gold = {d for q in qs for d in q.gold_doc_ids}
    top = D.load_knowledge_base("bioasq", root=root, queries=qs, max_docs=10)
    assert len(top) == 10 and all(i.id in gold for i in top)
    assert B.pubmed_id("http://www.ncbi.nlm.nih.gov/pubmed/34687634") == "34687634"
    assert B.nested_exact_answer("yes") == [["yes"]]
    assert B.nested_exact_answer(["a", ["b", "b2"]]) == [["a"], ["b", "b2"]]


# ------------------------------------------------------------------ missing sources, registry

def test_missing_source_is_a_clear_file_not_found(monkeypatch):
    assert not C.network_allowed(None) and C.network_allowed(False) and not C.network_allowed(True)
    for name in D.REGISTRY:
        with pytest.raises(FileNotFoundError) as err:
            D.load_dataset(name, offline=True)
        text = str(err.value)
        assert "expected layout" in text and (D.REGISTRY[name].hub_id or "official source") in text
    with pytest.raises(C.DatasetNotAvailable, match="does not exist"):
        D.load_dataset("scienceqa", root="/nonexistent/kbvqa")
    with pytest.raises(C.DatasetNotAvailable):
        D.download_official_files("infoseek", "/tmp/unused", offline=True)
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("CI", "true")
    assert not C.network_allowed(None)
    assert D.dataset_info("MATH-Vision").name == "mathvision" and D.dataset_info("vsr").name == "vsr_mc"
    with pytest.raises(ValueError):
        D.dataset_info("coco")
    with pytest.raises(ValueError, match="load_knowledge_base"):
        D.load_dataset("infoseek", "kb")
    for info in D.REGISTRY.values():
        assert info.hub_id or info.urls
        assert D.resolve_split(info, "eval") == info.eval_split
        assert info.kb_split is None or D.resolve_split(info, "kb") == info.kb_split


def test_hub_path_with_a_fake_datasets_module(monkeypatch):
    """The Colab path (root=None, network allowed) without a network: ``datasets`` is faked."""
    calls = []
    rows = {("derek-thomas/ScienceQA", "test"): [{"question": "Q?", "choices": ["a", "b"], "answer": 1,
                                                  "hint": "h", "image": None, "lecture": "L", "solution": "S"}],
            ("MathLLMs/MathVision", "test"): [{"id": "1", "question": "<image1>", "options": [], "answer": "7"},
                                              {"id": "2", "question": "x", "options": [], "answer": "3"}],
            ("MathLLMs/MathVision", "testmini"): [{"id": "1", "question": "<image1>", "options": [],
                                                   "answer": "7"}],
            ("MMMU/MMMU", "dev"): [{"id": "dev_Art_1", "question": "<image 1> Who?", "image_1": b"png",
                                    "options": "['Monet', 'Manet']", "answer": "B",
                                    "question_type": "multiple-choice"},
                                   {"id": "dev_Art_2", "question": "Ratio?", "options": "[]",
                                    "answer": "['24/7', '3.429']", "question_type": "open"}]}
    fake = types.SimpleNamespace(load_dataset=lambda hub, cfg, split, streaming=False: calls.append((hub, split))
                                 or iter(rows[(hub, split)]) if streaming else 1 / 0)   # streams: never the split
    monkeypatch.setitem(sys.modules, "datasets", fake)
    q = D.load_dataset("scienceqa", "test", offline=False)[0]
    assert (q.id, q.answer, q.solution, q.context) == ("test-0", "B", "L S", "h")
    assert [q.id for q in D.load_dataset("mathvision", "kb", offline=False)] == ["2"]
    assert ("MathLLMs/MathVision", "testmini") in calls
    mc, open_q = D.load_dataset("mmmu", "eval", offline=False, subjects=("Art",))
    assert (mc.answer_type, mc.options, mc.answer_text, mc.image) == ("choice", ["Monet", "Manet"], "Manet", b"png")
    assert (open_q.answer_type, open_q.answers, open_q.options) == ("free", ["24/7", "3.429"], None)
    with pytest.raises(C.DatasetNotAvailable):
        D.load_dataset("scienceqa", "test", offline=True)


# ------------------------------------------------------------------ VizWiz (fixture)

_SOUP = ["soup", "soup", "tomato soup", "soup", "tomato soup", "unanswerable", "soup", "tomato soup"]
VIZWIZ_VAL = [
    {"image": "VizWiz_val_00000000.jpg", "question": "What is this can?", "answer_type": "other",
     "answers": [{"answer": a, "answer_confidence": "yes"} for a in _SOUP + ["soup", "soup"]], "answerable": 1},
    {"image": "VizWiz_val_00000001.jpg", "question": "What color is this?", "answer_type": "unanswerable",
     "answers": [{"answer": "unanswerable", "answer_confidence": "maybe"}] * 10, "answerable": 0}]


def test_vizwiz_keeps_annotator_answers(tmp_path):
    (tmp_path / "Annotations").mkdir()
    (tmp_path / "Annotations" / "val.json").write_text(json.dumps(VIZWIZ_VAL))
    qs = D.load_dataset("vizwiz", "eval", root=tmp_path)
    assert [q.id for q in qs] == ["VizWiz_val_00000000", "VizWiz_val_00000001"]
    assert qs[0].answers == ["soup", "tomato soup", "unanswerable"]
    assert len(qs[0].meta["annotator_answers"]) == 10 and qs[0].meta["answerable"] == 1
    assert qs[1].answers == ["unanswerable"] and qs[1].meta["answerable"] == 0
    with pytest.raises(C.DatasetNotAvailable):
        D.load_dataset("vizwiz", "kb", root=tmp_path)  # no train.json here


# ------------------------------------------------------------------ InfoSeek (fixture)

INFOSEEK_VAL = """\
{"data_id": "infoseek_val_00000001", "image_id": "oven_90000001", "question": "Which country is this building located in?", "answer": ["United States of America"], "answer_eval": ["United States of America", "USA", "United States", "US"], "data_split": "val_unseen_question"}
{"data_id": "infoseek_val_00000002", "image_id": "oven_90000002", "question": "What is the height of this building in metre?", "answer": ["381"], "answer_eval": [{"wikidata": 381.0, "range": [342.9, 419.1]}], "data_split": "val_unseen_entity"}
{"data_id": "infoseek_val_00000003", "image_id": "oven_90000003", "question": "In which year was this building completed?", "answer": ["1931"], "answer_eval": ["1931"], "data_split": "val_unseen_entity"}
"""
INFOSEEK_QTYPE = "\n".join(json.dumps({"data_id": f"infoseek_val_0000000{i}", "question_type": t})
                           for i, t in ((1, "String"), (2, "Numerical"), (3, "Time")))
INFOSEEK_WITHKB = "\n".join(json.dumps({"data_id": f"infoseek_val_0000000{i}", "entity_id": "Q9188",
                                        "entity_text": "Empire State Building"}) for i in (1, 2, 3))
WIKI6M = [{"wikidata_id": f"Q{i}", "wikipedia_title": f"Page {i}", "wikipedia_summary": f"Summary {i}.",
           "wikipedia_content": f"Summary {i}.\nFirst paragraph of page {i}.\nSecond paragraph.",
           "wikipedia_image_url": f"https://upload.wikimedia.org/p{i}.jpg"} for i in (1, 2, 3)]
WIKI6M.append({"wikidata_id": "Q9188", "wikipedia_title": "Empire State Building",
               "wikipedia_summary": "The Empire State Building is a skyscraper in New York City.",
               "wikipedia_content": "The Empire State Building is a skyscraper.\nIt was completed in "
               "1931 and is 381 m tall.", "wikipedia_image_url": None})


@pytest.fixture
def infoseek_root(tmp_path):
    (tmp_path / "infoseek_val.jsonl").write_text(INFOSEEK_VAL)
    (tmp_path / "infoseek_val_qtype.jsonl").write_text(INFOSEEK_QTYPE)
    (tmp_path / "infoseek_val_withkb.jsonl").write_text(INFOSEEK_WITHKB)
    with gzip.open(tmp_path / "Wiki6M_ver_1_0.jsonl.gz", "wt") as f:
        f.write("\n".join(json.dumps(r) for r in WIKI6M))
    return tmp_path


def test_infoseek_types_ranges_and_split_kinds(infoseek_root):
    qs = D.load_dataset("infoseek", "eval", root=infoseek_root)
    assert [q.answer_type for q in qs] == ["string", "numerical", "time"]
    assert qs[0].answers[:3] == ["United States of America", "USA", "United States"]
    assert qs[1].answer_range == (342.9, 419.1) and qs[0].answer_range is None
    assert [q.meta["split_kind"] for q in qs] == ["unseen_question", "unseen_entity", "unseen_entity"]
    assert all(q.gold_doc_ids == ["Q9188"] for q in qs)
    only = D.load_dataset("infoseek", "val", root=infoseek_root, kinds=("unseen_entity",))
    assert [q.id for q in only] == ["infoseek_val_00000002", "infoseek_val_00000003"]
    (infoseek_root / "infoseek_val_qtype.jsonl").unlink()  # without the qtype file: inferred
    assert [q.answer_type for q in D.load_dataset("infoseek", root=infoseek_root)] == \
        ["string", "numerical", "string"]


def test_infoseek_kb_subset_keeps_gold_pages(infoseek_root):
    qs = D.load_dataset("infoseek", root=infoseek_root)
    kb = D.load_knowledge_base("infoseek", root=infoseek_root, max_docs=2, queries=qs,
                               passage_words=8)
    assert [d.id for d in kb] == ["Q9188", "Q1"]
    doc = kb[0]
    assert doc.summary.startswith("The Empire State Building") and len(doc.passages) >= 2
    assert all(p.doc_id == "Q9188" and len(p.text.split()) <= 8 for p in doc.passages)
    assert "1931" in " ".join(p.text for p in doc.passages)
    assert len(D.load_knowledge_base("infoseek", root=infoseek_root)) == 4
    with pytest.raises(ValueError):
        D.load_knowledge_base("infoseek", root=infoseek_root, max_docs=0)


# ------------------------------------------------------------------ E-VQA (fixture)

EVQA_HEADER = ("question,answer,dataset_image_ids,dataset_name,dataset_category_id,question_type,"
               "wikipedia_url,wikipedia_title,evidence,evidence_section_id,evidence_section_title,"
               "encyclopedic_vqa_split,question_original,wikipedia_url_used_in_train")
_W = "https://en.wikipedia.org/wiki/"
EVQA_TEST = "\n".join([EVQA_HEADER,
    (f"Where does this hotel derive its name from?,the Menger family,a1b2c3|d4e5f6,landmarks,101,automatic,"
    f"{_W}Menger_Hotel,Menger Hotel,,1,History,test,Where does the Menger Hotel derive its name from?,False"),
    (f'What colour are the flowers of this plant?,purple|violet,5120,inaturalist,5120,templated,'
    f'{_W}Salvia_pratensis,Salvia pratensis,"The flowers are violet.",2,Description,test,'
    f'What colour are the flowers of Salvia pratensis?,True'),
    (f"Which countries is this plant native to?,France&&Italy&&Spain,5120,inaturalist,5120,multi_answer,"
    f"{_W}Salvia_pratensis,Salvia pratensis,,3,Distribution,test,,True"),
    (f"Who designed the building this hotel is next to?,Hugo Leipziger,a1b2c3,landmarks,101,2_hop,"
    f"{_W}Menger_Hotel|{_W}The_Alamo,Menger Hotel|The Alamo,,1|2,History|Design,test,,False")]) + "\n"
EVQA_KB = {f"{_W}{name}": {"title": title, "section_titles": [title, *secs],
                          "section_texts": [f"{title} lead."] + [f"{title} {s} text." for s in secs],
                          "image_urls": [f"https://upload.wikimedia.org/{name}.jpg"],
                          "image_reference_descriptions": ["a photo"], "image_section_indices": [0],
                          "url": f"{_W}{name}"}
           for name, title, secs in (("Other_Page", "Other", ["History"]),
                                     ("Menger_Hotel", "Menger Hotel", ["History"]),
                                     ("Salvia_pratensis", "Salvia pratensis",
                                      ["Taxonomy", "Description", "Distribution"]))}


@pytest.fixture
def evqa_root(tmp_path):
    (tmp_path / "test.csv").write_text(EVQA_TEST)
    (tmp_path / "encyclopedic_kb_wiki.json").write_text(json.dumps(EVQA_KB, indent=1))
    return tmp_path


def test_evqa_answers_types_and_evidence(evqa_root):
    qs = D.load_dataset("evqa", "eval", root=evqa_root)
    assert [q.meta["question_type"] for q in qs] == ["automatic", "templated", "multi_answer"]
    assert qs[0].answers == ["the Menger family"] and qs[0].meta["image_ids"] == ["a1b2c3", "d4e5f6"]
    assert qs[1].answers == ["purple", "violet"] and qs[1].answer_type == "string"
    assert qs[2].answer_type == "multi" and qs[2].answers == ["France", "Italy", "Spain"]
    assert qs[1].evidence_ids == [f"{_W}Salvia_pratensis#2"]
    two_hop = D.load_dataset("evqa", "test", root=evqa_root, single_hop=False)[-1]
    assert two_hop.gold_doc_ids == [f"{_W}Menger_Hotel", f"{_W}The_Alamo"]
    assert two_hop.evidence_ids == [f"{_W}Menger_Hotel#1", f"{_W}The_Alamo#2"]
    kb = D.load_knowledge_base("evqa", root=evqa_root, max_docs=2, queries=qs)
    assert sorted(d.id for d in kb) == [f"{_W}Menger_Hotel", f"{_W}Salvia_pratensis"]
    passages = {p.id: p for d in kb for p in d.passages}
    assert all(e in passages for q in qs for e in q.evidence_ids)
    assert passages[qs[1].evidence_ids[0]].section == "Description"
    assert {d.id: d.summary for d in kb}[f"{_W}Menger_Hotel"] == "Menger Hotel lead."


def test_streaming_json_object_matches_json_load(evqa_root, tmp_path):
    path = evqa_root / "encyclopedic_kb_wiki.json"
    assert dict(C.iter_json_object(path, chunk_chars=7)) == EVQA_KB
    (tmp_path / "num.json").write_text('{"a": 12345678, "b": [1, 2]}')
    assert dict(C.iter_json_object(tmp_path / "num.json", chunk_chars=3)) == {"a": 12345678, "b": [1, 2]}
    (tmp_path / "bad.json").write_text('{"a": {"b": 1}, "c": [1, 2')
    with pytest.raises(ValueError):
        list(C.iter_json_object(tmp_path / "bad.json", chunk_chars=4))


def test_pack_passages_and_select_records():
    assert C.pack_passages("a b\nc d e\n\nf", 4) == ["a b", "c d e f"]
    assert C.pack_passages("w " * 10, 4) == ["w w w w", "w w w w", "w w"]
    recs = [{"k": str(i)} for i in range(10)]
    assert [r["k"] for r in C.select_records(recs, lambda r: r["k"], 3, ["9"])] == ["9", "0", "1"]
    with pytest.raises(ValueError):
        C.select_records(recs, lambda r: r["k"], 1, ["1", "2"])
