"""kbvqa.reader.fastcard: the accuracy condition of a fast path, on hand-made outcomes."""
from __future__ import annotations

import pytest

from kbvqa.reader.fastcard import compare_outcomes


def outcomes(**rows):
    return {"outcomes": rows}


def test_identical_paths_are_accepted():
    same = outcomes(kbvqa_gold_passage_acc=[True] * 150 + [False] * 50, pairwise_acc=[True, False] * 100,
                    critic_p_yes=[0.2] * 600)
    result = compare_outcomes(same, same)
    assert result["accepted"] and result["failed"] == [] and result["critic_mean_abs_dp"] == 0
    assert result["rows"]["pairwise_acc"]["diff"] == 0 and result["rows"]["pairwise_acc"]["ok"]


def test_a_row_that_moves_more_than_its_tolerance_fails():
    ref = [True] * 100 + [False] * 100
    two = [True] * 104 + [False] * 96                      # +2 points: outside KB-VQA's 1.5
    one = [True] * 102 + [False] * 98                      # +1 point, its interval inside ±3
    result = compare_outcomes(outcomes(kbvqa_10_passages_acc=ref, mc_3_random_acc=ref),
                              outcomes(kbvqa_10_passages_acc=two, mc_3_random_acc=one))
    assert result["failed"] == ["kbvqa_10_passages_acc"] and not result["accepted"]
    assert result["rows"]["mc_3_random_acc"]["ok"] and result["rows"]["kbvqa_10_passages_acc"]["diff"] == 0.02


def test_a_noisy_row_whose_interval_reaches_past_three_points_fails():
    ref = [True, False] * 50
    flipped = [False, True] * 50                           # mean equal, every query changed: a wide interval
    result = compare_outcomes(outcomes(pairwise_acc=ref), outcomes(pairwise_acc=flipped))
    row = result["rows"]["pairwise_acc"]
    assert row["diff"] == 0 and (row["low"] < -0.03 or row["high"] > 0.03) and result["failed"] == ["pairwise_acc"]


def test_the_critic_condition_and_bad_input():
    result = compare_outcomes(outcomes(critic_p_yes=[0.1, 0.5]), outcomes(critic_p_yes=[0.15, 0.55]))
    assert result["critic_mean_abs_dp"] == pytest.approx(0.05) and result["failed"] == ["critic_p_yes"]
    with pytest.raises(ValueError, match="'pairwise_acc': 2 fp32 outcomes against 3"):
        compare_outcomes(outcomes(pairwise_acc=[1, 0]), outcomes(pairwise_acc=[1, 0, 1]))
    with pytest.raises(ValueError, match="per-query 'outcomes'"):
        compare_outcomes({}, outcomes(pairwise_acc=[1]))


def test_the_comparison_page_shows_every_row_the_verdict_and_the_times():
    from kbvqa.reader.fastcard import comparison_markdown

    reference = {"outcomes": {"kbvqa_gold_passage_acc": [1, 1, 0, 1], "pairwise_acc": [1, 0, 1, 1],
                              "critic_p_yes": [0.2, 0.9, 0.4, 0.5]}}
    fast = {"outcomes": {"kbvqa_gold_passage_acc": [1, 1, 0, 1], "pairwise_acc": [1, 1, 1, 1],
                         "critic_p_yes": [0.2, 0.9, 0.4, 0.5]}}
    comparison = compare_outcomes(reference, fast)
    card = {"evaluation_fast": {"bf16+shared_prefix": {
        "n_queries": 4, "comparison": comparison, "accepted": comparison["accepted"], "commit": "abcdef0123456",
        "date": "2026-12-07", "seconds": {"fast": 50.0, "fp32": 100.0}, "fp32_rerun_differs_from_evaluation": {},
        "machine": {"platform": "linux", "threads": 2, "computes_bf16": True}}}}
    page = comparison_markdown(card)
    assert "refused (fails pairwise_acc)" in page and "| kbvqa_gold_passage_acc | 0.750 | 0.750 | +0.000 |" in page
    assert "| pairwise_acc | 0.750 | 1.000 | +0.250 |" in page and "**no**" in page
    assert "2.00x" in page and "reproduces the committed `evaluation`" in page and "abcdef0123" in page
    assert comparison_markdown({}).startswith("No fast path")


def test_a_stopped_card_evaluation_resumes_at_the_pass_it_had_not_finished():
    """Every model pass of ``evaluate_card`` lands in ``steps`` as it finishes; given those steps, a
    rerun computes nothing and writes the same card (here a model that may not be called at all)."""
    import json

    from kbvqa.data import get_world
    from kbvqa.models.tiny import load_tiny_vlm
    from kbvqa.reader.card import evaluate_card
    from kbvqa.reader.fastcard import _plain

    saved, world = [], get_world(0)
    first = evaluate_card(load_tiny_vlm(), world, n=2, image_size=56, steps={},
                          on_step=lambda s: saved.append(json.dumps(s, default=_plain)))
    assert len(saved) >= 10 and "critic" in json.loads(saved[-1]) and "ladder" in json.loads(saved[-1])

    class Unusable:
        def __getattr__(self, name):
            raise AssertionError(f"a resumed evaluation called the model ({name})")

    class Shell:                        # the attributes evaluate_card touches before any pass
        model = type("M", (), {"eval": lambda self: None})()

        def __getattr__(self, name):
            return getattr(Unusable(), name)

    again = evaluate_card(Shell(), world, n=2, image_size=56, steps=json.loads(saved[-1]))
    assert json.dumps(again, default=_plain, sort_keys=True) == json.dumps(first, default=_plain, sort_keys=True)


def test_a_committed_bf16_evaluation_is_compared_on_a_machine_without_bf16(tmp_path, monkeypatch):
    import json

    from kbvqa.models import loading
    from kbvqa.reader import fastcard

    monkeypatch.setattr(loading, "computes_bf16", lambda device: False)
    outcomes = {"kbvqa_gold_passage_acc": [True, True, False, True], "critic_p_yes": [0.1, 0.9, 0.5, 0.4]}
    for name, path in (("bf16-shared-n4.json", ["bf16", True]), ("fp32-n4.json", ["fp32", False])):
        (tmp_path / name).write_text(json.dumps({"n_queries": 4, "path": path, "outcomes": outcomes,
                                                 "kbvqa_gold_passage_acc": 0.75}))
    card = tmp_path / "card.json"
    card.write_text(json.dumps({"evaluation": {"kbvqa_gold_passage_acc": 0.75}}))
    comparison = fastcard.main(["--precision", "bf16", "--n", "4", "--work", str(tmp_path), "--card", str(card)])
    assert comparison["accepted"] and json.loads(card.read_text())["evaluation_fast"]["bf16+shared_prefix"]
    assert "accepted" in (tmp_path / "comparison.md").read_text()
    (tmp_path / "bf16-shared-n4.json").unlink()                # nothing finished: bf16 must run here
    with pytest.raises(ValueError, match="computes_bf16"):
        fastcard.main(["--precision", "bf16", "--n", "4", "--work", str(tmp_path), "--card", str(card)])
