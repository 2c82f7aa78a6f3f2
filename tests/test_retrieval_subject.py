"""Subject extraction (ReAG supp. A), box arithmetic and grounders (kbvqa.retrieval.subject*).

Checks: the rule-based extractor on many phrasings (this/these, preposition objects, last noun,
verbs and predicates after the subject, possessives, image words, empty input), on every question
of the toy world (it must find the noun the generator put after "this"), and on the real questions
of the offline samples (never raises, returns words of the question); the spaCy path over a fake
parse; expand_box / crop_to_box clamping; the VLM grounder's parsing and rescaling with a fake model.
"""
from __future__ import annotations

import json

import pytest
from _samples import sample  # noqa: E402
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from kbvqa.retrieval.subject import (
    RULES,
    crop_to_box,
    expand_box,
    extract_subject,
    scale_box,
    subject_from_spacy,
    subject_rule,
)
from kbvqa.retrieval.subject_grounding import GroundingConfig, VLMGrounder

PHRASINGS = [
    ("What does this glimmerfin eat?", "glimmerfin", "demonstrative"),
    ("How much does this creature weigh in kilograms?", "creature", "demonstrative"),
    ("Which region is this animal native to?", "animal", "demonstrative"),
    ("When was this driftfin first described?", "driftfin", "demonstrative"),
    ("At what time of day is this lumenhorn most active?", "lumenhorn", "demonstrative"),
    ("Where does this duskgill build its nest?", "duskgill", "demonstrative"),
    ("Which country is this building located in?", "building", "demonstrative"),
    ("In which year was this building completed?", "building", "demonstrative"),
    ("Where does this hotel derive its name from?", "hotel", "demonstrative"),     # unknown verb
    ("What colour are the flowers of this plant?", "plant", "demonstrative"),
    ("How many floors does this building have?", "building", "demonstrative"),
    ("Is this red bird dangerous?", "red bird", "demonstrative"),
    ("What is this bird's wingspan?", "bird", "demonstrative"),
    ("What is the species of these flowers?", "flowers", "demonstrative"),
    ("What is this can?", "can", "demonstrative"),
    ("What is the name of the mountain in this photo?", "mountain", "preposition"),  # "this photo" = the picture
    ("What type of dog is this?", "dog", "preposition"),
    ("What is the capital of South Carolina?", "South Carolina", "preposition"),
    ("What color is this?", "color", "last_noun"),
    ("Which shape is largest?", "shape", "last_noun"),
    ("How many different digits can you find in this picture?\n<image1>", "digits", "last_noun"),
    ("Who painted it?", "", "none"),
    ("", "", "none"),
    ("?!", "", "none"),
]


@pytest.mark.parametrize("question,subject,rule", PHRASINGS)
def test_rule_on_phrasings(question, subject, rule):
    assert subject_rule(question).__dict__ == {"text": subject, "rule": rule}
    assert extract_subject(question) == subject


def test_every_toy_question_gives_its_noun():
    from kbvqa.data import get_world

    world = get_world(0)
    queries = world.kbvqa_train + world.kbvqa_test + world.mc_train + world.mc_test + world.mc_kb
    assert len({q.question for q in queries}) > 400     # many distinct phrasings
    wrong = [(q.question, extract_subject(q.question)) for q in queries if extract_subject(q.question) != q.meta["noun"]]
    assert wrong == []


def _real_questions() -> list[str]:
    problems = json.loads((sample("scienceqa") / "problems_150.json").read_text())
    questions = [p["question"] for p in problems.values()]
    with open(sample("mathvision") / "testmini.jsonl") as f:
        questions += [json.loads(line)["question"] for line in f]
    return questions


def test_real_questions_give_words_of_the_question():
    questions = _real_questions()
    assert len(questions) > 400
    found = 0
    for q in questions:
        match = subject_rule(q)
        assert match.rule in RULES
        words = q.lower().replace("'s", "").split()
        assert all(any(w.lower() in word for word in words) for w in match.text.split()), (q, match)
        found += bool(match.text)
    assert found / len(questions) > 0.9


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=80))
def test_any_string_gives_a_defined_result(text):
    match = subject_rule(text)
    assert match.rule in RULES and isinstance(match.text, str)
    assert (match.text == "") == (match.rule == "none")
    assert subject_rule(None).rule == "none"


class _Tok:
    def __init__(self, i, text, pos, dep=""):
        self.i, self.text, self.lower_, self.pos_, self.dep_ = i, text, text.lower(), pos, dep


class _Doc(list):
    """Just what subject_from_spacy reads of a spaCy Doc: tokens and noun_chunks (lists of tokens)."""

    def __init__(self, tagged, chunks):
        super().__init__(_Tok(i, *t) for i, t in enumerate(tagged))
        self.noun_chunks = [self[a:b] for a, b in chunks]


def test_spacy_rule_over_a_parse():
    doc = _Doc([("What", "PRON"), ("does", "AUX"), ("this", "DET"), ("red", "ADJ"), ("bird", "NOUN"), ("eat", "VERB")],
               [(2, 5)])
    assert subject_from_spacy(doc) == subject_rule("What does this red bird eat?")
    doc = _Doc([("What", "PRON"), ("is", "AUX"), ("the", "DET"), ("capital", "NOUN"), ("of", "ADP", "prep"),
                ("Utah", "PROPN", "pobj")], [(2, 4), (5, 6)])
    assert subject_from_spacy(doc).__dict__ == {"text": "Utah", "rule": "preposition"}
    doc = _Doc([("What", "PRON"), ("color", "NOUN"), ("is", "AUX"), ("this", "PRON")], [(1, 2)])
    assert subject_from_spacy(doc).__dict__ == {"text": "color", "rule": "last_noun"}
    assert subject_from_spacy(_Doc([("Who", "PRON")], [])).rule == "none"
    with pytest.raises(ValueError):
        extract_subject("What is this?", method="nltk")


def test_expand_box_grows_squares_and_clamps():
    assert expand_box((10, 10, 20, 20), (100, 100), margin=0.0) == (10, 10, 20, 20)
    assert expand_box((10, 10, 20, 20), (100, 100), margin=0.5) == (5, 5, 25, 25)
    assert expand_box((10, 10, 30, 20), (100, 100), margin=0.0, square=True) == (10, 5, 30, 25)
    assert expand_box((10, 10, 30, 20), (100, 100), margin=0.0, square=False) == (10, 10, 30, 20)
    assert expand_box((0, 0, 20, 20), (100, 50), margin=0.5) == (0, 0, 30, 30)          # clamped at 0
    assert expand_box((80, 40, 100, 50), (100, 50), margin=0.5) == (70, 25, 100, 50)    # clamped at the size
    assert expand_box((-50, -50, 500, 500), (100, 50)) == (0, 0, 100, 50)
    assert expand_box((20, 20, 10, 10), (100, 100), margin=0.0) == (10, 10, 20, 20)     # corners sorted
    for bad in [(5, 5, 5, 9), (200, 200, 300, 300), (-9, -9, -1, -1), None, ("a", 1, 2, 3), (1, 2)]:
        assert expand_box(bad, (100, 100)) is None
    with pytest.raises(ValueError):
        expand_box((1, 1, 5, 5), (10, 10), margin=-0.1)


def test_crop_to_box_and_scale_box():
    image = Image.new("RGB", (112, 112), (0, 0, 0))
    assert crop_to_box(image, (100, 100, 112, 112), margin=0.5).size == (18, 18)   # clamped, square
    assert crop_to_box(image, None).size == (112, 112)
    assert crop_to_box(image, (500, 500, 600, 600)).size == (112, 112)             # unusable: whole picture
    assert scale_box((1, 2, 28, 30), (56, 56), (112, 224)) == (2, 8, 56, 120)
    with pytest.raises(ValueError):
        scale_box((1, 2, 3, 4), (0, 56), (112, 112))


class _FakeVLM:
    def __init__(self, answers):
        self.answers, self.prompts = answers, None

    def generate(self, prompts, **kwargs):
        self.prompts = prompts
        return [[a] for a in self.answers]


def test_vlm_grounder_parses_and_rescales():
    images = [Image.new("RGB", (112, 112)), Image.new("RGB", (112, 112)), Image.new("RGB", (224, 112))]
    fake = _FakeVLM(["[1, 2, 28, 30]", "no box here", "[28, 0, 0, 28]"])
    boxes = VLMGrounder(fake, GroundingConfig(image_size=56)).ground(images, ["What does this zorp eat?"] * 3)
    assert boxes == [(2, 4, 56, 60), None, (0, 0, 112, 56)]       # shown at 56 px, boxes scaled back
    texts = [part["text"] for chat in fake.prompts for m in chat for part in m["content"] if part["type"] == "text"]
    assert any("56x56" in t for t in texts) and any("What does this zorp eat?" in t for t in texts)
    fake = _FakeVLM(["[]"])
    assert VLMGrounder(fake, GroundingConfig(text="subject")).ground(images[:1], ["What does this zorp eat?"],
                                                                    ["zorp"]) == [None]
    with pytest.raises(ValueError):
        VLMGrounder(fake).ground(images, ["one question"])
    with pytest.raises(ValueError):
        GroundingConfig(text="caption")
