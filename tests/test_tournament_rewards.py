"""MOLT's composite reward (kbvqa.molt.rewards, Eq. 8-11) by hand, the consistency check that
zeroes every later step, App. D's difficulty table, and robustness on truncated, reordered and
invented rounds (hypothesis)."""
from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kbvqa.molt.rewards import (
    MOLTRewardConfig,
    chain_validity,
    difficulty_table,
    format_reward,
    molt_reward,
    perfect_transcript,
    process_reward,
    result_reward,
)

SCHEDULE = ["5", "4", "3", "2", "1"]     # weak to strong over c_1..c_5 with ids "1".."5"


def xml(rounds, evidence) -> str:
    body = "".join(f"<round><compare>[{a}] vs [{b}]</compare><think>t</think><winner>[{w}]</winner></round>\n"
                   for a, b, w in rounds)
    return body + f"<evidence>[{evidence}]</evidence>"


GOOD = xml([("5", "4", "4"), ("4", "3", "3"), ("3", "2", "3"), ("3", "1", "3")], "3")


def test_equations_8_to_11_by_hand():
    r = molt_reward(GOOD, SCHEDULE, "3")
    # R_proc = 4 valid steps * 0.1 + 3 rounds won by the ground truth * 0.2 = 1.0
    assert r.valid == (1, 1, 1, 1) and r.gt_won == (0, 1, 1, 1)
    assert r.proc == pytest.approx(1.0) and r.fmt == 1.0 and r.res == 1.0
    assert r.total == pytest.approx(0.2 * 1 + 0.5 * 1.0 + 1.0 * 1)
    # the same chain judged against another ground truth: no bonus, wrong evidence
    other = molt_reward(GOOD, SCHEDULE, "1")
    assert other.proc == pytest.approx(0.4) and other.res == 0.0 and other.total == pytest.approx(0.2 + 0.2)


def test_a_winner_not_carried_forward_zeroes_every_later_step():
    broken = xml([("5", "4", "4"), ("4", "3", "3"), ("4", "2", "4"), ("4", "1", "4")], "4")
    r = molt_reward(broken, SCHEDULE, "3")
    assert r.valid == (1, 1, 0, 0)               # round 3 should have carried "3"
    assert r.proc == pytest.approx(0.1 + (0.1 + 0.2)) and r.res == 0.0
    assert r.total == pytest.approx(0.2 * 1 + 0.5 * 0.4)
    # round 4 is "consistent" with round 3, but the chain was already broken: still zero
    assert chain_validity(broken, SCHEDULE)[3] == 0


def test_a_challenger_not_scheduled_breaks_the_chain():
    skipped = xml([("5", "4", "4"), ("4", "2", "4"), ("4", "3", "4"), ("4", "1", "4")], "4")
    assert chain_validity(skipped, SCHEDULE) == [1, 0, 0, 0]
    assert process_reward(skipped, SCHEDULE, "4") == pytest.approx(0.1 + 0.2)   # only round 1 counts


def test_extra_rounds_and_a_winner_outside_the_pair_get_nothing():
    extra = xml([("5", "4", "4"), ("4", "3", "4"), ("4", "2", "4"), ("4", "1", "4"), ("4", "9", "4")], "4")
    assert chain_validity(extra, SCHEDULE) == [1, 1, 1, 1, 0]
    outside = xml([("5", "4", "7"), ("7", "3", "7")], "7")
    assert chain_validity(outside, SCHEDULE) == [0, 0]


def test_compare_order_is_not_checked():
    swapped = xml([("4", "5", "4"), ("3", "4", "3"), ("2", "3", "3"), ("1", "3", "3")], "3")
    assert molt_reward(swapped, SCHEDULE, "3").proc == pytest.approx(1.0)


def test_format_reward_and_result_reward():
    assert format_reward(GOOD) == 1.0
    assert format_reward("Sure! " + GOOD) == 0.0
    assert format_reward(GOOD.replace("</round>", "", 1)) == 0.0
    assert result_reward(GOOD, "3") == 1.0 and result_reward(GOOD, "2") == 0.0
    assert result_reward("the answer is 3", "3") == 0.0


@pytest.mark.parametrize("field", ["lambda_fmt", "lambda_proc", "lambda_res", "r_step", "r_bonus"])
def test_negative_weights_raise(field):
    with pytest.raises(ValueError):
        MOLTRewardConfig(**{field: -0.1})


@pytest.mark.parametrize("schedule", [[], ["1"], ["1", "1"]])
def test_fewer_than_two_candidates_raise(schedule):
    with pytest.raises(ValueError):
        molt_reward(GOOD, schedule, "1")
    with pytest.raises(ValueError):
        difficulty_table(1)


def test_weights_scale_the_parts():
    cfg = MOLTRewardConfig(lambda_fmt=1.0, lambda_proc=0.0, lambda_res=2.0, r_step=0.5, r_bonus=1.0)
    r = molt_reward(GOOD, SCHEDULE, "3", cfg)
    assert r.proc == pytest.approx(4 * 0.5 + 3 * 1.0) and r.total == pytest.approx(1.0 + 2.0)


# --- App. D -----------------------------------------------------------------------------------------
def test_difficulty_table_matches_eq_17_and_grows_with_rank():
    rows = difficulty_table(5)
    assert [r["wins_needed"] for r in rows] == [1, 2, 3, 4, 4]          # Eq. 17: r* for r* < N, N-1 for r* = N
    assert [r["max_process_reward"] for r in rows] == pytest.approx([0.6, 0.8, 1.0, 1.2, 1.2])
    assert [r["max_total_reward"] for r in rows] == pytest.approx([1.5, 1.6, 1.7, 1.8, 1.8])
    assert rows[0]["enters_round"] == 4 and rows[-1]["enters_round"] == 1
    reverse = difficulty_table(5, order="strong_to_weak")
    assert [r["wins_needed"] for r in reverse] == [4, 4, 3, 2, 1]        # the scaling flips: easy samples pay most


@given(st.integers(2, 9))
@settings(max_examples=8, deadline=None)
def test_difficulty_formula_for_any_n(n):
    rows = difficulty_table(n)
    assert [r["wins_needed"] for r in rows] == [min(r, n - 1) for r in range(1, n + 1)]
    cfg = MOLTRewardConfig()
    for row in rows:    # Eq. 18: (N-1) r_step + K r_bonus, times lambda_2, plus lambda_1 + lambda_3
        proc = (n - 1) * cfg.r_step + row["wins_needed"] * cfg.r_bonus
        assert row["max_total_reward"] == pytest.approx(cfg.lambda_fmt + cfg.lambda_proc * proc + cfg.lambda_res)


# --- robustness --------------------------------------------------------------------------------------
@given(st.text(max_size=300))
@settings(max_examples=150, deadline=None)
def test_any_string_gets_a_defined_bounded_reward(text):
    r = molt_reward(text, SCHEDULE, "3")
    best = molt_reward(perfect_transcript(SCHEDULE, "5"), SCHEDULE, "5").total
    assert 0.0 <= r.total <= best + 1e-9 and not math.isnan(r.total)
    assert len(r.valid) == len(r.gt_won)


ROUNDS = [("5", "4", "4"), ("4", "3", "3"), ("3", "2", "3"), ("3", "1", "3")]


@given(st.integers(0, 4))
@settings(max_examples=10, deadline=None)
def test_truncated_transcripts_keep_the_rounds_they_have(k):
    text = xml(ROUNDS[:k], "3") if k else "<evidence>[3]</evidence>"
    r = molt_reward(text, SCHEDULE, "3")
    assert r.valid == (1,) * k
    assert r.proc == pytest.approx(0.1 * k + 0.2 * max(0, k - 1))
    cut = GOOD[:len(GOOD) // 2]                                       # cut mid-tag: defined, format invalid
    assert molt_reward(cut, SCHEDULE, "3").fmt == 0.0


@given(st.permutations(ROUNDS))
@settings(max_examples=30, deadline=None)
def test_reordered_rounds_are_valid_only_up_to_the_first_misplaced_one(rounds):
    v = chain_validity(xml(list(rounds), "3"), SCHEDULE)
    first_bad = next((i for i, r in enumerate(rounds) if r != ROUNDS[i]), len(rounds))
    assert v == [1] * first_bad + [0] * (len(rounds) - first_bad)


@given(st.lists(st.tuples(st.sampled_from(["1", "2", "3", "4", "5", "9", "x", ""]),
                          st.sampled_from(["1", "2", "3", "4", "5", "9", "x", ""]),
                          st.sampled_from(["1", "2", "3", "4", "5", "9", "x", ""])), max_size=7))
@settings(max_examples=120, deadline=None)
def test_invented_rounds_and_ids_never_raise_and_validity_is_a_prefix(rounds):
    v = chain_validity(xml(rounds, "9"), SCHEDULE)
    assert v == sorted(v, reverse=True)                                # 1s then 0s: nothing revives
    assert sum(v) <= len(SCHEDULE) - 1
    assert 0 <= process_reward(xml(rounds, "9"), SCHEDULE, "9") <= 0.1 * 4 + 0.2 * 4 + 1e-9
