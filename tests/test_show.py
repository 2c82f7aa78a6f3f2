"""kbvqa.data.show: the source order of ``pick_source``, the hand-made official rows, printing.

No test touches the network (HF_HUB_OFFLINE is set); the samples are faked in tmp_path, except one
check on the real samples that skips when ../shared/data-samples is absent.
"""
from __future__ import annotations

import json

import pytest

from kbvqa.data import DatasetNotAvailable, Query
from kbvqa.data import show as S


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("KBVQA_DATA", raising=False)


def test_find_samples_order(tmp_path, monkeypatch):
    monkeypatch.setenv("KBVQA_SAMPLES", str(tmp_path))
    assert S.find_samples() == tmp_path
    assert S.find_samples(tmp_path / "x") is None                   # an explicit path wins
    monkeypatch.setenv("KBVQA_SAMPLES", str(tmp_path / "missing"))
    assert S.find_samples() is None


def test_pick_source_prefers_samples_then_handmade_then_fallback(tmp_path):
    (tmp_path / "mathvision").mkdir()
    rows = [{"id": str(i), "question": f"<image1> q{i}", "options": [], "answer": str(i)} for i in range(4)]
    (tmp_path / "mathvision" / "testmini.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    picked = S.pick_source("MATH-Vision", tmp_path, limit=3)
    assert (picked.source, picked.root, [q.id for q in picked.queries]) == \
        ("sample", tmp_path / "mathvision", ["0", "1", "2"])
    hand = S.pick_source("mathvision", None)                      # no samples, network off
    assert hand.source == "hand-made" and [q.answer_type for q in hand.queries] == ["choice", "free"]
    assert "no samples folder" in str(hand)
    toy = [Query(id="t", question="toy?", answers=["x"])]
    fb = S.pick_source("scienceqa", tmp_path, fallback=lambda: toy)   # samples lack scienceqa
    assert fb.source == "toy world" and fb.queries == toy and "do not hold scienceqa" in str(fb)
    with pytest.raises(DatasetNotAvailable):
        S.pick_source("scienceqa", None)


def test_unreachable_hub_falls_through_with_its_reason(monkeypatch):
    def offline_hub(*args, **kwargs):
        raise ConnectionError("Couldn't reach 'MathLLMs/MathVision' on the Hub")
    monkeypatch.setattr(S, "load_dataset", offline_hub)
    picked = S.pick_source("mathvision", None)
    assert picked.source == "hand-made" and "Couldn't reach" in str(picked)
    monkeypatch.setattr(S, "load_dataset", lambda *a, **k: 1 / 0)    # other errors are not hidden
    with pytest.raises(ZeroDivisionError):
        S.pick_source("mathvision", None)


def test_mmmu_samples_carry_the_model_response(tmp_path):
    (tmp_path / "mmmu").mkdir()
    rec = {"id": "validation_Art_1", "question_type": "multiple-choice", "answer": "B",
           "all_choices": ["A", "B"], "index2ans": {"A": "Monet", "B": "Manet"}, "response": "(B)"}
    (tmp_path / "mmmu" / S.MMMU_LLAVA_FILE).write_text(json.dumps([rec, {**rec, "id": "x"}]))
    picked = S.pick_source("mmmu", tmp_path, limit=1)
    q = picked.queries[0]
    assert len(picked.queries) == 1 and q.meta["response"] == "(B)" and q.answer_text == "Manet"


def test_handmade_rows_follow_the_official_rules():
    info = {q.id: q for q in S.handmade_queries("infoseek")}
    assert [q.answer_type for q in info.values()] == ["string", "numerical", "time"]
    assert info["infoseek_val_h2"].answer_range == (342.9, 419.1)
    assert info["infoseek_val_h1"].meta["split_kind"] == "unseen_question"
    evqa = S.handmade_queries("evqa")
    assert evqa[1].answers == ["purple", "violet"] and evqa[2].answer_type == "multi"
    assert evqa[2].answers == ["France", "Italy", "Spain"]
    (viz,) = S.handmade_queries("vizwiz")
    assert len(viz.meta["annotator_answers"]) == 10 and viz.answers[0] == "soup"
    (vsr,) = S.handmade_queries("vsr")
    assert vsr.question == "The cat is ___ the suitcase." and vsr.answer_text == "on top of"
    with pytest.raises(ValueError):
        S.handmade_queries("bioasq")


def test_show_query_and_table_cut_long_text():
    q = Query(id="q1", question="word " * 200, answers=["A"], answer_type="choice",
              options=["yes", "no"], solution="s" * 500)
    text = S.show_query(q, width=60)
    assert all(len(line) <= 75 for line in text.splitlines()) and "…" in text
    assert "(A) yes (B) no" in text and "solution" in text and "context" not in text
    table = S.query_table([q, Query(id="q2", question="short?", answers=["2"], answer_range=(1, 3))])
    assert list(table["type"]) == ["choice", "string"] and list(table["options"]) == [2, 0]
    assert len(table.loc[0, "question"]) == 48
    # a choice shows its letter and its option's text; another type, its answer alone
    assert list(table["answer"]) == ["A", "2"] and list(table["option text"]) == ["yes", ""]


def test_real_samples_when_present():
    samples = S.find_samples()
    if samples is None:
        from _samples import missing_samples

        missing_samples("offline samples not found (set KBVQA_SAMPLES)")
    bio = S.pick_source("bioasq", samples, limit=4)
    assert bio.source == "sample" and [q.answer_type for q in bio.queries] == ["yesno", "factoid", "list", "list"]
    mmmu = S.pick_source("mmmu", samples)
    assert len(mmmu.queries) == 30 and all(q.meta["response"] for q in mmmu.queries)


def test_a_cut_fallback_shows_every_answer_type():
    """Chapter 02 in the gpu profile cuts to 20 queries; the toy literature lists yes/no first."""
    lit = [Query(id=f"{t}{i}", question="?", answers=["x"], answer_type=t)
           for t in ("yesno", "factoid", "list", "summary") for i in range(6)]
    picked = S.pick_source("bioasq", None, limit=6, fallback=lambda: lit)
    assert [q.id for q in picked.queries] == ["yesno0", "factoid0", "list0", "summary0", "yesno1", "factoid1"]
    assert S.spread_by_type(lit, None) == lit and S.spread_by_type(lit, 100) == lit
    assert S.spread_by_type(lit[:7], 3) == [lit[0], lit[6], lit[1]]
    assert S.spread_by_type(lit, 0) == []


def test_hub_rows_stream_instead_of_downloading_the_split(monkeypatch):
    import sys
    import types

    from kbvqa.data import real_common
    from kbvqa.data.datasets import dataset_info

    calls, pulled = [], []

    def rows():
        for i in range(10**6):
            pulled.append(i)
            yield {"i": i}

    fake = types.SimpleNamespace(load_dataset=lambda *a, **k: calls.append(k) or rows())
    monkeypatch.setitem(sys.modules, "datasets", fake)
    monkeypatch.setattr(real_common, "network_allowed", lambda offline=None: True)
    got = real_common.take(real_common.hub_rows(dataset_info("vizwiz"), "validation"), 3)
    assert got == [{"i": 0}, {"i": 1}, {"i": 2}] and calls[0]["streaming"] is True and len(pulled) == 3
