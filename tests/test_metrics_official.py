"""The official tools' quirks, one hand-made case each (issue #17), and the toy KB-VQA helpers.

Each expected value is worked out by hand from the official code named in the module under test:
vqaEval.py (2021 and 2016), infoseek_eval.py ``evaluate``, E-VQA ``evaluate_example`` and MMMU
``eval_utils.py``.
"""
from __future__ import annotations

import random

import pytest

from kbvqa.metrics import (
    evqa_score,
    infoseek_evaluate,
    infoseek_evaluate_official,
    infoseek_score,
    kbvqa_split_score,
    mmmu_accuracy,
    mmmu_parse_batch,
    mmmu_parse_choice,
    paired_split_bootstrap,
    toy_kbvqa_correct,
    vqa_accuracy,
)

# ------------------------------------------------------------------ VQA: 2021 vs 2016


def test_vqa_ten_identical_answers_are_not_normalised_since_2021():
    assert vqa_accuracy("Yes", ["yes"] * 10) == 0.0                   # nothing normalised
    assert vqa_accuracy("Yes", ["yes"] * 10, version="2016") == 1.0   # prediction normalised
    assert vqa_accuracy(" yes\n", ["yes"] * 10) == 1.0                # but both are stripped


def test_vqa_2021_processes_disagreeing_answers_like_the_prediction():
    # "Two" -> "2" only in 2021 (processDigitArticle on the answers): 4 matches -> 1.0.
    answers = ["Two"] * 4 + ["three"] * 6
    assert vqa_accuracy("2", answers) == 1.0
    assert vqa_accuracy("2", answers, version="2016") == 0.0
    # "black-white" -> "black white" by processPunctuation on both sides in 2021 (2016 too: the
    # answers get processPunctuation there, the prediction the full treatment).
    answers = ["black-white"] * 3 + ["grey"] * 7
    assert vqa_accuracy("Black-White", answers) == pytest.approx(0.9)
    assert vqa_accuracy("Black-White", answers, version="2016") == pytest.approx(0.9)


def test_vqa_2021_strips_answers_before_checking_agreement():
    answers = [" yes"] * 9 + ["yes"]
    # 2021: stripped, all ten are "yes" -> identical -> 10 matches.
    assert vqa_accuracy("yes", answers) == 1.0
    # 2016: not stripped, they disagree; processPunctuation keeps " yes", so 1 match -> 0.3.
    assert vqa_accuracy("yes", answers, version="2016") == pytest.approx(0.3)


def test_vqa_versions_agree_with_normalize_gt_and_reject_unknown_versions():
    for version in ("2021", "2016"):
        assert vqa_accuracy("Two.", ["two"] * 10, normalize_gt=True, version=version) == 1.0
    with pytest.raises(ValueError):
        vqa_accuracy("2", ["2"] * 10, version="2019")


# ------------------------------------------------------------------ InfoSeek: official split score

def _ref(i, split, qtype, answer_eval):
    return {"data_id": f"q{i}", "data_split": split, "question_type": qtype, "answer_eval": answer_eval}


def test_infoseek_official_dict_buckets_and_units():
    refs = [_ref(1, "val_unseen_question", "String", ["Paris"]),
            _ref(2, "val_unseen_question", "Numerical", [{"wikidata": 10.0, "range": [9, 11]}]),
            _ref(3, "val_seen", "Time", ["1931"]),                       # -> entity bucket
            _ref(4, "val_unseen_entity", "Colour", ["red"]),             # unknown -> string bucket
            _ref(5, "val_unseen_entity", "Numerical", {"range": [1, 2]}),
            _ref(6, "val_unseen_entity", "String", ["never predicted"])]
    preds = [{"data_id": "q1", "prediction": "paris"}, {"data_id": "q2", "prediction": "12"},
             {"data_id": "q3", "prediction": "1931"}, {"data_id": "q4", "prediction": "Red."},
             {"data_id": "q5", "prediction": "about 1.5"}, {"data_id": "nope", "prediction": "x"}]
    out = infoseek_evaluate_official(preds, refs)
    # q6 is not predicted, so not scored; "nope" is not a reference. Question split: 1 of 2.
    assert out["unseen_question_score"] == {"score": 50.0, "score_time": 0, "score_num": 0.0,
                                            "score_string": 100.0}
    # Entity split: q3 (val_seen, time), q4 (colour -> string), q5 (numerical): 3 of 3.
    assert out["unseen_entity_score"] == {"score": 100.0, "score_time": 100.0, "score_num": 100.0,
                                          "score_string": 100.0}
    assert out["final_score"] == 66.67                              # 2 / (1/50 + 1/100) = 66.666...
    qtypes = [{"data_id": r["data_id"], "question_type": r.pop("question_type")} for r in refs]
    assert infoseek_evaluate_official(preds, refs, qtypes) == out   # types from the qtype rows
    assert "question_type" not in refs[0]                           # inputs left as they were


def test_infoseek_official_rounds_split_scores_before_the_harmonic_mean():
    # Question split 1/3 -> 33.33, entity split 3/5 -> 60.0. Unrounded: 2/(3 + 5/3) = 42.857 ->
    # 42.86; officially 2/(1/33.33 + 1/60) = 42.854 -> 42.85.
    refs = [_ref(i, "val_unseen_question", "String", ["a b"]) for i in range(3)]
    refs += [_ref(i, "val_unseen_entity", "String", ["a b"]) for i in range(3, 8)]
    right = {0, 3, 4, 5}
    preds = [{"data_id": f"q{i}", "prediction": "a b" if i in right else "c"} for i in range(8)]
    assert infoseek_evaluate_official(preds, refs)["final_score"] == 42.85
    records = [{"prediction": p["prediction"], "question_type": "string", "answers": ["a b"],
                "split": r["data_split"]} for p, r in zip(preds, refs)]
    assert infoseek_evaluate(records)["final"] == pytest.approx(0.4285)


def test_infoseek_official_counts_repeated_rows_and_empty_splits():
    refs = [_ref(1, "val_unseen_question", "String", ["x"]), _ref(2, "val_unseen_question", "String", ["y"])]
    preds = [{"data_id": "q1", "prediction": "x"}] * 2 + [{"data_id": "q2", "prediction": "no"}]
    out = infoseek_evaluate_official(preds, refs)
    assert out["unseen_question_score"]["score"] == 66.67           # q1 counted twice: 2 of 3
    assert out["unseen_entity_score"]["score"] == 0                 # empty split scores 0
    assert out["final_score"] == 0.0                                # 0 -> 1e-12 in the harmonic mean


def test_infoseek_official_errors():
    with pytest.raises(ValueError, match="question type"):
        infoseek_evaluate_official([], [{"data_id": "q1", "data_split": "val", "answer_eval": ["x"]}])
    with pytest.raises(ValueError, match="range"):
        infoseek_evaluate_official([], [_ref(1, "val_unseen_entity", "Numerical", [9, 11])])


def test_infoseek_evaluate_takes_val_seen_and_unknown_types():
    records = [{"prediction": "x", "question_type": "string", "answers": ["x"], "split": "val_seen"},
               {"prediction": "y", "question_type": "colour", "answers": ["y"], "split": "val_unseen_question"}]
    out = infoseek_evaluate(records)
    assert out["unseen_entity"] == 1.0 and out["unseen_question_string"] == 1.0


def test_infoseek_score_numeric_bounds_are_not_aliases():
    # Bounds passed as aliases would silently score against [8.1, 9.9] (10 % around "9").
    with pytest.raises(ValueError, match="answer_range"):
        infoseek_score("10", "numerical", ["9", "11"])
    with pytest.raises(ValueError, match="answer_range"):
        infoseek_score("10", "numerical", ["9-11"])
    assert infoseek_score("10", "numerical", answer_range=(9, 11)) == 1
    assert infoseek_score("3.5", "numerical", ["3.3", "3.3 kg"]) == 1     # one number: [2.97, 3.63]
    with pytest.raises(ValueError, match="list"):
        infoseek_score("Paris", "string", "Paris")                        # a str is not an alias list


# ------------------------------------------------------------------ E-VQA: every alternative checked

def test_evqa_checks_alternatives_after_the_match():
    with pytest.raises(ValueError):
        evqa_score("Paris", ["Paris", ""])                   # empty alternative after the match
    with pytest.raises(ValueError):
        evqa_score("Paris", "Paris|the")                     # article-only alternative
    with pytest.raises(ValueError):
        evqa_score("red, blue", ["red&&blue", "the&&an"], "multi_answer")
    with pytest.raises(ValueError):
        evqa_score("Paris", [])


@pytest.mark.parametrize("qtype", ["list", "multianswer", "multi", "string", "Automatic"])
def test_evqa_rejects_question_types_outside_the_official_four(qtype):
    with pytest.raises(ValueError, match="question type"):
        evqa_score("red and blue", "red&&blue&&green", qtype)


def test_evqa_type_aliases_are_an_explicit_option():
    assert evqa_score("red and blue", "red&&blue&&green", "list", type_aliases=True) == 1.0
    assert evqa_score("red and blue", "red&&blue&&green", "string", type_aliases=True) == 0.0
    assert evqa_score("Violet", "purple|violet", "2_hop") == 1.0


# ------------------------------------------------------------------ MMMU: the random fallback

def _official_batch(samples):
    """The official order of guesses: ``random.seed(42)`` at import, then ``random.choice``."""
    state = random.getstate()
    random.seed(42)
    try:
        return [mmmu_parse_choice(s["response"], s["all_choices"], s["index2ans"]) or random.choice(s["all_choices"])
                for s in samples]
    finally:
        random.setstate(state)


def test_mmmu_fallback_is_reproducible_per_batch_and_none_per_item():
    letters = ["A", "B", "C", "D"]
    samples = [{"response": r, "all_choices": letters, "index2ans": dict(zip(letters, "wxyz")),
                "answer": "C", "question_type": "multiple-choice"}
               for r in ["no idea", "(B)", "hmm", "it is C", "??", "not sure", "pass", "(A) or (D)"]]
    assert mmmu_parse_choice("no idea", letters, samples[0]["index2ans"]) is None
    assert mmmu_parse_batch(samples) == _official_batch(samples)
    assert mmmu_parse_batch(samples, seed=None)[0] is None
    right_without_guesses = mmmu_accuracy(samples, seed=None)
    assert right_without_guesses == 1 / 8                                  # only "it is C"
    assert mmmu_accuracy(samples) == sum(p == "C" for p in _official_batch(samples)) / 8


# ------------------------------------------------------------------ toy KB-VQA helpers

def test_toy_kbvqa_correct_uses_the_official_rule_of_each_kind():
    assert toy_kbvqa_correct("The River Deltas.", ["river deltas"], "string")
    assert not toy_kbvqa_correct("in 1817", ["1817"], "time")               # exact match
    assert toy_kbvqa_correct("about 3.5 kg", ["3.3", "3.3 kg"], "numerical", (2.97, 3.63))
    assert toy_kbvqa_correct("3.0-3.5", ["3.3"], "numerical", (2.97, 3.63))   # range inside
    assert not toy_kbvqa_correct("4", ["3.3"], "numerical", (2.97, 3.63))
    assert toy_kbvqa_correct("vanblosk", ["vanblosk", "stampin"], "multi")    # IoU 1/2
    assert not toy_kbvqa_correct("vanblosk", ["vanblosk", "stampin", "orel"], "multi")  # IoU 1/3
    with pytest.raises(ValueError):
        toy_kbvqa_correct("x", ["x"], "choice")


@pytest.mark.parametrize("missing", [None, "", "   "])
def test_toy_kbvqa_missing_answer_is_wrong(missing):
    # Officially "" parses as the range [0, 0], which would be right inside (-1, 1).
    assert not toy_kbvqa_correct(missing, ["0"], "numerical", (-1.0, 1.0))
    assert not toy_kbvqa_correct(missing, ["x"], "string")


def test_toy_world_gold_answers_score_right():
    from kbvqa.data import get_world

    for q in get_world().kbvqa_test:
        gold = ", ".join(q.answers) if q.answer_type == "multi" else q.answers[0]
        assert toy_kbvqa_correct(gold, q.answers, q.answer_type, q.answer_range), q.id


def test_split_score_official_rounding_and_interval():
    correct = [1, 0, 0, 1, 1, 1, 0, 0]
    splits = ["unseen_question"] * 3 + ["val_unseen_entity"] * 5
    s = kbvqa_split_score(correct, splits, n_boot=500, seed=1)
    assert (s.unseen_question, s.unseen_entity, s.final) == (33.33, 60.0, 42.85)
    assert (s.n_question, s.n_entity) == (3, 5)
    assert s.low <= s.final <= s.high
    assert s == kbvqa_split_score(correct, splits, n_boot=500, seed=1)      # seeded
    with pytest.raises(ValueError, match="unseen_entity"):
        kbvqa_split_score([1, 0], ["unseen_question"] * 2)


def test_split_bootstrap_resamples_within_each_split():
    # One question-split item (right) and 99 entity-split items (half right). Within the splits,
    # every replicate keeps that item: the question split is always 100 and the final ~67. A pooled
    # resample would miss it in (99/100)^100 = 37 % of replicates, scoring ~0 there.
    correct = [1] + [1, 0] * 49 + [1]
    splits = ["unseen_question"] + ["unseen_entity"] * 99
    s = kbvqa_split_score(correct, splits, n_boot=1000, seed=0)
    assert s.unseen_question == 100.0 and s.low > 50


def test_paired_split_bootstrap():
    a, b = [1, 0, 1, 1, 0, 1], [0, 0, 1, 0, 0, 1]
    splits = ["unseen_question", "unseen_entity"] * 3
    same = paired_split_bootstrap(a, a, splits, n_boot=200)
    assert (same.diff, same.low, same.high) == (0.0, 0.0, 0.0) and not same.significant
    d = paired_split_bootstrap(a, b, splits, n_boot=200)
    # a: 66.67 / 66.67 -> 66.67; b: 33.33 / 33.33 -> 33.33
    assert d.diff == pytest.approx(33.34) and d.low <= d.diff <= d.high


def _query(**kw):
    from kbvqa.data.schema import Query

    base = {"id": "kbvqa_test-1", "question": "q", "answers": ["3.3"], "answer_type": "numerical",
            "answer_range": (2.97, 3.63), "split": "kbvqa_test", "meta": {"split_kind": "unseen_entity"}}
    return Query(**{**base, **kw})


def test_official_correct_dispatches_by_source():
    from kbvqa.metrics import kbvqa_split_of, official_correct

    toy = _query()
    assert official_correct("3.5", toy) and not official_correct("4", toy)
    assert not official_correct(None, toy) and not official_correct(" ", toy)
    assert kbvqa_split_of(toy) == "unseen_entity"
    # An E-VQA answer set with two alternative sets: the second one matches (IoU 1); InfoSeek's
    # rule on the first set alone would not see it.
    evqa = _query(id="evqa-test-7", answers=["France", "Italy"], answer_type="multi", answer_range=None,
                  split="test", meta={"answer_sets": [["France", "Italy"], ["Spain"]]})
    assert official_correct("Spain", evqa) and not official_correct("Italy, Spain, Peru", evqa)
    assert kbvqa_split_of(evqa) == "unseen_entity"
    # E-VQA single answers: exact match after E-VQA's normalisation, articles dropped.
    single = _query(id="evqa-test-8", answers=["The Alps"], answer_type="string", answer_range=None)
    assert official_correct("alps", single)
    with pytest.raises(ValueError):   # a numerical query without any usable gold, as the official tool
        official_correct("3", _query(answers=["many"], answer_range=None))


def test_score_records_rejudges_committed_answers_and_tags_splits():
    from kbvqa.metrics import records_split_score, score_records

    qs = [_query(id=f"kbvqa_test-{i}", meta={"split_kind": "unseen_question" if i % 2 else "unseen_entity"})
          for i in range(6)]
    records = [{"id": q.id, "answer": a, "correct": None} for q, a in zip(qs, ["3.3", "9", "3.0-3.5", "", "3.4", "3"])]
    out = score_records(records, qs)
    assert out == records          # judged in place
    assert [r["correct"] for r in records] == [True, False, True, False, True, True]
    assert [r["split"] for r in records] == ["unseen_entity", "unseen_question"] * 3
    s = records_split_score(records, n_boot=200)
    assert (s.unseen_entity, s.unseen_question) == (100.0, 33.33)
    assert records_split_score(records[::2]) is None        # one split only
    with pytest.raises(ValueError, match="no query"):
        score_records([{"id": "other", "answer": "x"}], qs)
