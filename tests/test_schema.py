"""kbvqa.data.schema: validation, round trips, image references."""
import io

import pytest
from PIL import Image

from kbvqa.data.schema import Document, KBExample, LiteratureItem, Passage, Query, open_image, option_letters


def _doc():
    ps = [Passage(id="d1#0", doc_id="d1", text="The zorp lives in marshes.", section="habitat")]
    return Document(id="d1", title="Zorp", summary="A small creature.", passages=ps)


def test_document_round_trip_and_lookup():
    d = _doc()
    again = Document.from_dict(d.to_dict())
    assert again == d
    assert d.passage("habitat").text.startswith("The zorp")
    with pytest.raises(KeyError):
        d.passage("diet")


def test_passage_must_belong_to_document():
    with pytest.raises(ValueError, match="belongs to"):
        Document(id="d2", title="x", passages=[Passage(id="p", doc_id="d1", text="t")])


def test_query_validation():
    with pytest.raises(ValueError, match="answer_type"):
        Query(id="q", question="?", answers=["a"], answer_type="essay")
    with pytest.raises(ValueError, match="two options"):
        Query(id="q", question="?", answers=["A"], answer_type="choice", options=["only"])
    with pytest.raises(ValueError, match="answer must be one of"):
        Query(id="q", question="?", answers=["C"], answer_type="choice", options=["x", "y"])
    with pytest.raises(ValueError, match="lo > hi"):
        Query(id="q", question="?", answers=["3"], answer_type="numerical", answer_range=(5, 1))
    with pytest.raises(ValueError, match="box"):
        Query(id="q", question="?", answers=["a"], box=(10, 10, 5, 20))


def test_choice_answer_text_and_round_trip():
    q = KBExample(id="k", question="Which?", answers=["B"], answer_type="choice",
                  options=["cat", "dog"], box=(1, 2, 3, 4), reasoning_context="Because.")
    assert q.answer == "B" and q.answer_text == "dog"
    d = q.to_dict()
    assert "image" not in d and d["box"] == [1, 2, 3, 4]
    assert KBExample.from_dict(d) == q
    with pytest.raises(ValueError, match="unknown fields"):
        Query.from_dict({**d, "bogus": 1})


def test_open_image_accepts_every_reference(tmp_path):
    im = Image.new("RGB", (8, 6), (10, 20, 30))
    path = tmp_path / "x.png"
    im.save(path)
    buf = io.BytesIO()
    im.save(buf, format="PNG")
    for ref in (im, str(path), path, buf.getvalue(), lambda: im, im.convert("L")):
        out = open_image(ref)
        assert out.size == (8, 6) and out.mode == "RGB"
    assert open_image(None) is None
    with pytest.raises(ValueError):
        open_image(3.5)


def test_option_letters_and_literature():
    assert option_letters(4) == ["A", "B", "C", "D"]
    with pytest.raises(ValueError):
        option_letters(0)
    assert LiteratureItem.from_dict(LiteratureItem("a1", "T", "text").to_dict()).id == "a1"
    with pytest.raises(ValueError):
        LiteratureItem("", "T", "x")
