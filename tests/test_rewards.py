"""ReAG rewards (kbvqa.reag.rewards): Eq. 9 and the per-type task rewards of ReAG supplement B."""
from __future__ import annotations

import pytest

from kbvqa.data.schema import Query
from kbvqa.metrics.answers import ReAGRewardConfig, answer_correct, psi_num
from kbvqa.reag.rewards import format_reward, reag_reward, reag_reward_for_query, reag_rewards, task_reward

# ReAG Fig. 9 (InfoSeek): the ReAG trace and the zero-shot answer for "What is the genus of this
# plant?" (the ✓/✗ marks of the figure dropped).
REAG_TRACE = ("<think> The image shows a plant that matches the description of Schefflera "
              "actinophylla in the retrieved passage. The question specifically asks for the genus "
              "of this particular plant in the image and Schefflera actinophylla. </think> "
              "<answer> Heptapleurum </answer>")
ZERO_SHOT = "Not enough information is provided to determine the genus in question"


def test_eq9_weights():
    assert reag_reward(REAG_TRACE, ["Heptapleurum"]) == pytest.approx(1.2)      # 1 + 0.2
    assert reag_reward("<answer>Heptapleurum</answer>", ["Heptapleurum"]) == 1.0   # no <think>
    assert reag_reward(REAG_TRACE, ["Schefflera"]) == pytest.approx(0.2)          # format only
    assert reag_reward(ZERO_SHOT, ["Heptapleurum"]) == 0.0
    cfg = ReAGRewardConfig(gamma=2.0, delta=0.5)
    assert reag_reward(REAG_TRACE, ["Heptapleurum"], config=cfg) == pytest.approx(2.5)


def test_string_rewards_normalise_and_take_the_best_alternative():
    done = "<think>It is the Albert Dock.</think><answer>The Royal Albert Dock.</answer>"
    assert task_reward(done, ["Royal Albert Dock"]) == 1.0       # article, case, period
    assert task_reward(done, ["Albert Dock|Royal Albert Dock"]) == 1.0
    assert task_reward(done, ["Albert Dock", "royal albert dock"]) == 1.0
    assert task_reward(done, ["Albert Dock"]) == 0.0              # exact match, not containment
    assert task_reward("<answer>two</answer>", ["2"]) == 1.0      # digits standardised
    assert task_reward("<answer>1911</answer>", ["in 1911"], "time") == 0.0


@pytest.mark.parametrize("prediction, gold, ok", [
    ("1911", 1911.0, True),
    ("1911.05", 1911.0, True),          # |o - o*| <= 0.1 (absolute, as Psi_num is written)
    ("1911.2", 1911.0, False),
    ("about 4,500 m", 4500.0, True),
    ("1900-1920", 1911.0, False),       # an interval is not a scalar gold
    ("1911-1911", 1911.0, True),        # ... unless it is the gold point itself
    ("1911", (1900.0, 1920.0), True),   # scalar inside the gold interval
    ("1921", (1900.0, 1920.0), False),
    ("1905-1915", (1900.0, 1920.0), True),    # overlap 10, union 20 + 10 - 10 = 20: IoU 1/2
    ("1890-1910", (1900.0, 1920.0), False),   # overlap 10, union 20 + 20 - 10 = 30: IoU 1/3
    ("no idea", (-5.0, 5.0), False),    # no digit: 0 (InfoSeek's parser would say [0, 0])
])
def test_psi_num(prediction, gold, ok):
    assert psi_num(prediction, gold) is ok


def test_numerical_task_reward_with_range_and_alternatives():
    done = "<think>The tower is about 330 m tall.</think><answer>330 metres</answer>"
    assert task_reward(done, [], "numerical", answer_range=(300, 340)) == 1.0
    assert task_reward(done, ["324", "330"], "numerical") == 1.0      # max over alternatives
    assert task_reward(done, ["324"], "numerical") == 0.0
    with pytest.raises(ValueError):
        task_reward(done, ["tall"], "numerical")


def test_multi_answer_iou():
    gold = ["red && blue"]
    assert answer_correct("blue and red", gold, "multi")              # IoU 1
    assert answer_correct("red", gold, "multi")                       # IoU 1/2 >= 0.5
    assert not answer_correct("red, green, yellow", gold, "multi")    # IoU 1/4
    assert answer_correct("Red, Blue & Green", gold, "multi")         # IoU 2/3


def test_format_reward():
    assert format_reward(REAG_TRACE) == 1.0
    assert format_reward(REAG_TRACE + "<|im_end|>") == 1.0
    assert format_reward(ZERO_SHOT) == 0.0
    assert format_reward("<answer>x</answer><think>y</think>") == 0.0


def test_rewards_from_queries():
    q_num = Query(id="q1", question="How tall is this tower?", answers=["330"],
                  answer_type="numerical", answer_range=(300.0, 340.0))
    q_str = Query(id="q2", question="What genus is this plant?", answers=["Heptapleurum"])
    completions = ["<think>t</think><answer>320</answer>", REAG_TRACE]
    assert reag_rewards(completions, [q_num, q_str]) == [pytest.approx(1.2), pytest.approx(1.2)]
    assert reag_reward_for_query("<answer>350</answer>", q_num) == 0.0
    with pytest.raises(ValueError):
        reag_rewards(completions, [q_num])


def test_bad_configs_and_gold():
    with pytest.raises(ValueError):
        ReAGRewardConfig(delta=-0.2)
    with pytest.raises(ValueError):
        ReAGRewardConfig(iou_threshold=0.0)
    with pytest.raises(ValueError):
        task_reward("<answer>x</answer>", [" | "])


def test_multi_answer_query_needs_the_whole_set():
    """A multi-answer Query keeps one set's items in ``answers``: the reward must score the set,
    not each item as an alternative (regression: "France" alone used to earn the full reward)."""
    from kbvqa.data.schema import Query
    from kbvqa.metrics.answers import query_gold
    from kbvqa.reag.rewards import reag_reward_for_query

    q = Query(id="m", question="Which countries?", answers=["France", "Italy", "Spain"],
              answer_type="multi")
    assert query_gold(q) == ["France&&Italy&&Spain"]
    full = "<think>ok</think><answer>France, Italy, Spain</answer>"
    one = "<think>ok</think><answer>France</answer>"
    assert reag_reward_for_query(full, q) == pytest.approx(1.2)
    assert reag_reward_for_query(one, q) == pytest.approx(0.2)
    alt = Query(id="a", question="?", answers=["x", "y"], answer_type="multi",
                meta={"answer_sets": [["x", "y"], ["z"]]})
    assert query_gold(alt) == ["x&&y", "z"]
    assert reag_reward_for_query("<answer>z</answer>", alt) == pytest.approx(1.0)  # no <think>: no format bonus
