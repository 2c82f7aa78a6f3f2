"""VQA accuracy, InfoSeek and Encyclopedic-VQA scorers (kbvqa.metrics.vqa).

Expected values are worked out by hand in the comments, from the official formulas.
"""
from __future__ import annotations

import pytest

from kbvqa.metrics import (
    evqa_normalize,
    evqa_score,
    harmonic_mean,
    infoseek_evaluate,
    infoseek_normalize,
    infoseek_score,
    mean_vqa_accuracy,
    numeric_range_correct,
    parse_numeric_prediction,
    range_iou,
    vqa_accuracy,
    vqa_normalize,
)
from kbvqa.metrics.evqa import mean_evqa_score

# ------------------------------------------------------------------ VQA accuracy (10 annotators)


@pytest.mark.parametrize("matching, expected", [
    # m of 10 annotators say "2". Leaving out one of the m matching annotators leaves m-1 matches,
    # leaving out one of the 10-m others leaves m; acc = [m*min(1,(m-1)/3) + (10-m)*min(1,m/3)]/10.
    (0, 0.0),
    (1, 0.3),   # [1*0 + 9*(1/3)] / 10 = 3/10
    (2, 0.6),   # [2*(1/3) + 8*(2/3)] / 10 = (2/3 + 16/3) / 10 = 6/10
    (3, 0.9),   # [3*(2/3) + 7*1] / 10 = (2 + 7) / 10  -- not 1.0: one leave-out subset has 2 matches
    (4, 1.0),   # [4*1 + 6*1] / 10
    (10, 1.0),
])
def test_vqa_accuracy_leave_one_out(matching, expected):
    gts = ["2"] * matching + ["3"] * (10 - matching)
    assert vqa_accuracy("2", gts) == pytest.approx(expected)


def test_vqa_normalisation_of_the_prediction():
    gts = ["2"] * 4 + ["3"] * 6
    assert vqa_accuracy("Two.", gts) == 1.0                 # number word, period, case
    assert vqa_accuracy("  two\n", gts) == 1.0
    assert vqa_normalize("A black-and-white dog!") == "black and white dog"
    assert vqa_normalize("ice - cream") == "ice cream"      # a dash touching a space is deleted
    assert vqa_normalize("1,000 dollars.") == "1000 dollars"
    assert vqa_normalize("dont know") == "don't know"
    assert vqa_normalize("3.5") == "3.5"                     # a period before a digit stays


def test_vqa_2016_takes_human_answers_as_stored():
    # vqaEval.py of 2016: human answers are assumed normalised already; when all ten agree they
    # are not touched at all, so a raw "two" never equals the normalised prediction "2" ...
    assert vqa_accuracy("two", ["two"] * 10, version="2016") == 0.0
    # ... unless the answers are normalised too (for raw answer lists such as the toy world).
    assert vqa_accuracy("two", ["two"] * 10, normalize_gt=True, version="2016") == 1.0
    # When they disagree, only punctuation is processed: "1,000" -> "1000" matches the prediction,
    assert vqa_accuracy("1,000", ["1,000"] * 4 + ["1000 dollars"] * 6, version="2016") == 1.0
    # but ten identical "1,000" stay as they are and miss the normalised "1000".
    assert vqa_accuracy("1,000", ["1,000"] * 10, version="2016") == 0.0
    # processPunctuation alone turns "yes!" into "yes " (a space, no strip): no match either.
    assert vqa_accuracy("Yes", ["yes!"] * 4 + ["no"] * 6, version="2016") == 0.0


def test_vqa_2021_normalises_both_sides_or_neither():
    # Current vqaEval.py: ten identical answers -> neither side is normalised (only stripped),
    assert vqa_accuracy("two", ["two"] * 10) == 1.0
    assert vqa_accuracy("1,000", ["1,000"] * 10) == 1.0
    assert vqa_accuracy("Two.", ["two"] * 10) == 0.0
    # disagreeing answers -> punctuation AND digits/articles on every answer and the prediction.
    assert vqa_accuracy("Yes", ["yes!"] * 4 + ["no"] * 6) == 1.0        # "yes!" -> "yes " -> "yes"
    assert vqa_accuracy("1,000", ["1,000"] * 4 + ["1000 dollars"] * 6) == 1.0
    assert vqa_accuracy("two", ["two"] * 10, normalize_gt=True) == 1.0


def test_vqa_mean_and_errors():
    assert mean_vqa_accuracy(["2", "3"], [["2"] * 10, ["2"] * 9 + ["3"]]) == pytest.approx(
        (1.0 + 0.3) / 2)
    with pytest.raises(ValueError):
        vqa_accuracy("2", [])
    with pytest.raises(ValueError):
        mean_vqa_accuracy(["2"], [])


# ------------------------------------------------------------------ InfoSeek

@pytest.mark.parametrize("text, parsed", [
    ("about 1,200 meters", 1200.0),
    ("9-10", (9.0, 10.0)),                  # "9-10" is spread to "9 - 10": a range
    ("1990-1995", (1990.0, 1995.0)),
    ("-5 to -3", (-5.0, -3.0)),             # a leading minus is a sign, not a range dash
    ("between 10 and 5", 10.0),             # first > second: only the first counts
    ("3.5e2 km", 350.0),
    ("1.2.3", (1.2, 3.0)),                  # the pattern reads "1.2" and ".3"
    ("7 or 3", 7.0),
    ("no idea", (0.0, 0.0)),                # no number: the official code scores [0, 0]
])
def test_infoseek_numeric_parsing(text, parsed):
    assert parse_numeric_prediction(text) == parsed


@pytest.mark.parametrize("prediction, correct", [
    ("10", True),          # inside [9, 11]
    ("12", False),
    ("9-10", True),        # range inside the gold range
    ("9-12", True),        # overlap 2, union 3 + 2 - 2 = 3: IoU 2/3
    ("8-10", False),       # overlap 1, union 2 + 2 - 1 = 3: IoU 1/3
    ("10-13", False),      # overlap 1, union 3 + 2 - 1 = 4: IoU 1/4
    ("7-12", False),       # contains the gold range, but overlap 2, union 5: IoU 2/5
])
def test_infoseek_numeric_ranges(prediction, correct):
    assert infoseek_score(prediction, "Numerical", answer_range=(9.0, 11.0)) == int(correct)


def test_infoseek_iou_threshold_is_inclusive_and_scalar_gold_gets_ten_percent():
    assert range_iou((9, 11), (10, 12)) == pytest.approx(1 / 3)
    assert range_iou((7, 12), (9, 11)) == pytest.approx(2 / 5)
    assert numeric_range_correct((10.0, 12.0), (11.0, 12.0))        # IoU exactly 0.5
    assert numeric_range_correct(105.0, 100.0)                       # [90, 110]
    assert not numeric_range_correct(111.0, 100.0)
    assert numeric_range_correct(-95.0, -100.0)                      # [-110, -90], sorted


def test_infoseek_strings_and_time():
    assert infoseek_normalize("The Eiffel Tower!") == "eiffel tower"
    aliases = ["United States of America", "USA"]
    assert infoseek_score("the U.S.A.", "String", aliases) == 1     # "usa" after normalising
    assert infoseek_score("America", "String", aliases) == 0
    assert infoseek_score("1911", "Time", ["1911"]) == 1
    assert infoseek_score("in 1911", "Time", ["1911"]) == 0         # exact match, no +/- a year
    with pytest.raises(ValueError):
        infoseek_score("x", "colour", ["red"])


def test_infoseek_final_score_is_harmonic_mean_of_splits():
    records = [
        {"prediction": "Paris", "question_type": "String", "answers": ["Paris"],
         "split": "val_unseen_question"},
        {"prediction": "Rome", "question_type": "String", "answers": ["Paris"],
         "split": "val_unseen_question"},
        {"prediction": "10", "question_type": "Numerical", "answer_range": [9, 11],
         "split": "val_unseen_entity"},
    ]
    out = infoseek_evaluate(records)
    assert out["unseen_question"] == 0.5 and out["unseen_entity"] == 1.0
    # harmonic mean of the split percentages 50.00 and 100.00 = 66.666..., rounded as officially
    assert out["final"] == pytest.approx(0.6667)
    assert out["type_string"] == 0.5 and out["type_numerical"] == 1.0
    assert out["unseen_question_string"] == 0.5 and out["unseen_entity_numerical"] == 1.0
    assert out["unseen_entity_time"] == 0.0                            # empty bucket: 0, as officially
    assert harmonic_mean(0.0, 1.0) == pytest.approx(2e-12)            # zero -> 1e-12


# ------------------------------------------------------------------ Encyclopedic-VQA

def test_evqa_readme_example_and_normalisation():
    # The one real E-VQA example (official README): reference "the Menger family".
    assert evqa_score("The Menger family.", "the Menger family") == 1.0
    assert evqa_normalize("The answer is: Two") == "2"
    assert evqa_normalize("It's TRUE") == "its yes"               # "its" is no contraction key
    assert evqa_normalize("dont") == "don't"
    assert evqa_normalize("<extra_id_0> Giraffe") == "giraffe"


def test_evqa_alternatives_and_multi_answer():
    assert evqa_score("giraffe", "Giraffa camelopardalis|giraffe") == 1.0
    ref = "red&&blue&&green"
    assert evqa_score("red and blue", ref, "multi_answer") == 1.0            # IoU 2/3
    assert evqa_score("red", ref, "multi_answer") == 0.0                     # IoU 1/3
    assert evqa_score("red, blue, yellow", ref, "multi_answer") == 1.0       # IoU 2/4
    assert evqa_score("red, blue, yellow & pink", ref, "multi_answer") == 0.0  # IoU 2/5
    assert evqa_score("red and blue", ref, "automatic") == 0.0               # single answer


def test_evqa_bem_fallback_hook():
    calls = []

    def bem(question, reference, candidate):
        calls.append((question, reference, candidate))
        return 0.7 if candidate == "a black bird" else 0.2

    assert evqa_score("a black bird", "raven", question="What is it?", bem=bem) == 1.0
    assert evqa_score("a cat", "raven", bem=bem) == 0.0
    assert evqa_score("red", "red&&blue&&green", "multi_answer", bem=bem) == 0.0
    assert calls[-1][1] == "red,blue,green"             # BEM sees '&&' as ','
    assert evqa_score("raven", "raven", bem=bem) == 1.0 and len(calls) == 3   # EM first


def test_evqa_errors_and_mean():
    with pytest.raises(ValueError):
        evqa_score("x", "the")                          # empty after normalisation
    with pytest.raises(ValueError):
        evqa_score("x", "y", "riddle")
    assert mean_evqa_score(["x", "y"], ["x", "z"], ["automatic", "templated"]) == 0.5
