"""MOLT's training experiment (kbvqa.molt.experiment / kbvqa.molt.results): evaluation sets with
simulated scores, the scripted judges' ladders and Eq. 8 scores, the tables next to the paper's
Tab. 5/6, the live-agreement check, the reward-curve figure and the committed table."""
from __future__ import annotations

import math

import pytest

from kbvqa.molt.experiment import MOLTExperimentConfig, eval_sets, item_schedule, noisy_comparator, scripted_records
from kbvqa.molt.paper import PAPER_TAB5, PAPER_TAB6
from kbvqa.molt.results import (
    RESULTS_DIR,
    live_agreement,
    load_results,
    moving_average,
    summarise,
    summarise_row,
    tab5,
    tab6,
)
from kbvqa.molt.rewards import difficulty_table
from kbvqa.viz.molt import draw_reward_curves, draw_schedule_accuracy


@pytest.fixture(scope="module")
def items():
    from kbvqa.data import get_world

    world = get_world(0)
    return eval_sets(world, world.kbvqa_test[:120], gap=1.0, seed=0)


def test_eval_sets_repeat_and_rank_the_gold_mostly_first(items):
    from kbvqa.data import get_world

    world = get_world(0)
    again = eval_sets(world, world.kbvqa_test[:120], gap=1.0, seed=0)
    assert [(i.gold_id, i.gold_rank, [c.score for c in i.candidates]) for i in items] == \
           [(i.gold_id, i.gold_rank, [c.score for c in i.candidates]) for i in again]
    for it in items:
        gold = next(c for c in it.candidates if c.id == it.gold_id)
        assert gold.passage_id == it.query.evidence_ids[0] and len(it.candidates) == 5
        assert it.gold_rank == 1 + sum(c.score > gold.score for c in it.candidates)
    ranks = [i.gold_rank for i in items]
    assert ranks.count(1) > len(ranks) / 3 and len(set(ranks)) >= 4     # skewed to the top, not fixed
    flat = eval_sets(world, world.kbvqa_test[:120], gap=0.0, seed=0)
    assert sum(i.gold_rank == 1 for i in flat) < ranks.count(1)


def test_scripted_judges_follow_the_schedule(items):
    perfect = {o: scripted_records(items, o, 0.0) for o in ("weak_to_strong", "strong_to_weak", "random")}
    for recs in perfect.values():
        assert all(r["correct"] and r["chain_valid"] and r["fmt"] == 1.0 for r in recs)
    wins = {row["gt_rank"]: row["wins_needed"] for row in difficulty_table(5)}
    for r in perfect["weak_to_strong"]:       # App. D: rounds won by the gold = wins needed by its rank
        assert r["gt_rounds"] == wins[r["gold_rank"]]
    assert not any(r["correct"] for r in scripted_records(items, "weak_to_strong", 1.0))
    acc = {o: sum(r["correct"] for r in scripted_records(items, o, 0.2)) for o in ("weak_to_strong", "strong_to_weak")}
    assert acc["weak_to_strong"] > acc["strong_to_weak"]      # fewer rounds for a mostly top-ranked gold
    with pytest.raises(ValueError):
        noisy_comparator("1", 1.5, None)


def test_random_schedule_shuffles_each_query_anew(items):
    """The paper's Random Shuffle: each query its own order of play. One seed for all queries once
    played every query in one order of ranks (the rank-1 candidate always the seed)."""
    from collections import Counter

    def seed_rank(it, order):
        schedule = item_schedule(it, order, seed=0)
        ranked = sorted(it.candidates, key=lambda c: -c.score)
        return 1 + [c.id for c in ranked].index(schedule[0])

    assert {seed_rank(it, "weak_to_strong") for it in items} == {5} and {seed_rank(it, "strong_to_weak") for it in items} == {1}
    counts = Counter(seed_rank(it, "random") for it in items)
    assert set(counts) == {1, 2, 3, 4, 5} and max(counts.values()) < 0.35 * len(items)      # ~uniform, 120 queries
    assert [item_schedule(it, "random", 0) for it in items] == [item_schedule(it, "random", 0) for it in items]
    assert [item_schedule(it, "random", 0) for it in items] != [item_schedule(it, "random", 1) for it in items]


def test_scripted_random_row_matches_the_closed_form(items):
    from kbvqa.molt.analysis import ladder_survival

    eps = 0.2
    shares = [sum(it.gold_rank == r for it in items) / len(items) for r in range(1, 6)]
    for order in ("weak_to_strong", "strong_to_weak", "random"):
        acc = sum(r["correct"] for r in scripted_records(items, order, eps)) / len(items)
        assert abs(acc - ladder_survival(shares, eps, order)) < 0.12, order      # 120 queries: ~3 standard errors


def test_summaries_tables_and_agreement():
    recs = [{"id": f"q{i}", "gold_rank": 1 + i % 2, "correct": i < 3, "fmt": 1.0, "chain_valid": i < 2,
             "proc": 0.3, "total": 1.0} for i in range(4)]
    row = summarise_row(recs)
    assert row["accuracy"] == 0.75 and row["chain_valid"] == 0.5 and row["low"] < 0.75 < row["high"]
    assert row["by_gold_rank"] == {"1": 1.0, "2": 0.5}
    results = summarise({"zero_shot_tournament": recs, "grpo_full_weak_to_strong": recs[:2]})
    t5 = tab5(results)
    assert [r["paper_acc_%"] for r in t5] == [PAPER_TAB5[1][2], PAPER_TAB5[4][2]]
    assert t5[1]["ours_acc_%"] == 100.0
    t6 = tab6(results)
    assert [r["paper_acc_%"] for r in t6] == [PAPER_TAB6[o] for o in ("random", "strong_to_weak", "weak_to_strong")]
    assert t6[2]["judge_acc_%"] == 100.0 and t6[0]["judge_acc_%"] is None and t6[0]["judge_95%_ci"] is None
    assert t6[2]["judge_95%_ci"] == t5[1]["ours_95%_ci"]
    agreement = live_agreement(recs[:2], recs)
    assert agreement["same_outcome"] == 1.0 and agreement["agrees"]
    flipped = [{**r, "correct": not r["correct"]} for r in recs]
    assert live_agreement(flipped, recs)["same_outcome"] == 0.0
    with pytest.raises(ValueError):
        live_agreement([{"id": "nope", "correct": True}], recs)
    with pytest.raises(ValueError):
        summarise({})


def test_moving_average_figures_and_config():
    import matplotlib.pyplot as plt

    assert moving_average([0, 2, 4, 6], 2) == [0, 1, 3, 5]
    with pytest.raises(ValueError):
        moving_average([1], 0)
    curves = {"process_reward": [0.1, 0.2, 0.3], "result_reward": [0.0, 0.5, 1.0]}
    fig = draw_reward_curves(curves, live={"process_reward": [0.1], "result_reward": [0.0]}, window=2)
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 3
    plt.close(fig)
    for bad in ({"limit": 0}, {"group_size": 1}, {"gap": -1.0}, {"teacher": "gpt"}, {"teacher_tokens": 0}):
        with pytest.raises(ValueError):
            MOLTExperimentConfig(**bad)


def test_committed_results_hold_every_row():
    path = RESULTS_DIR / "results.json"
    if not path.exists():
        pytest.skip("no committed MOLT results yet")
    import matplotlib.pyplot as plt

    results = load_results()
    rows = results["rows"]
    for name in ("zero_shot_one_shot", "zero_shot_tournament", "sft_tournament", "grpo_no_proc_tournament",
                 "grpo_full_weak_to_strong", "grpo_full_strong_to_weak", "grpo_full_random",
                 "scripted_0.1_weak_to_strong"):
        assert name in rows and 0 <= rows[name]["accuracy"] <= 1
    assert rows["scripted_0.1_weak_to_strong"]["n"] == 544
    assert {"git_commit", "seed", "date", "machine"} <= set(results["provenance"])
    assert len(results["training"]["grpo_full"]["process_reward"]) == results["config"]["grpo_steps"]
    fig = draw_schedule_accuracy(results)
    assert fig.axes[0].lines
    plt.close(fig)


def test_the_cold_start_can_learn_from_the_judge_as_its_own_teacher():
    """``teacher="model"``: the untrained judge writes every round (its thinking; the positive's wins
    forced) before SFT trains it on the transcripts; the log says who taught and how long it took."""
    import torch

    from kbvqa.data import get_world
    from kbvqa.experiments.molt_training.run import train_cold_start
    from kbvqa.models import build_tiny_vlm

    torch.set_num_threads(1)
    world = get_world(0)
    judge = build_tiny_vlm("qwen2_vl", texts=["[1] [2] [3] [4] [5] <think> </think> <winner> </winner> the"],
                           seed=0, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                           intermediate_size=64, vision_width=32, vision_depth=1)
    log = {}
    config = MOLTExperimentConfig(sft_queries=2, sft_steps=1, teacher="model", teacher_tokens=4)
    trained = train_cold_start(world, config, vlm=judge, log=log)
    assert trained is judge and log["sft"]["teacher"] == "model" and log["sft"]["teacher_seconds"] >= 0
    assert math.isfinite(log["sft"]["loss_start"])


def test_an_interrupted_training_run_resumes_where_it_stopped(tmp_path, monkeypatch):
    """Every finished row and trained judge is kept in the work folder: a rerun trains only what is
    missing, and a judge read back answers exactly as the one that was trained."""
    import torch

    import kbvqa.experiments.molt_training.run as run
    from kbvqa.data import get_world
    from kbvqa.experiments.molt_training.work import WorkFolder, run_fingerprint
    from kbvqa.models import build_tiny_vlm

    torch.set_num_threads(1)

    def judge():
        return build_tiny_vlm("qwen2_vl", texts=["[1] [2] [3] [4] [5] <think> </think> <winner> </winner> the"],
                              seed=0, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                              intermediate_size=64, vision_width=32, vision_depth=1)

    calls = []
    real_cold, real_grpo = run.train_cold_start, run.train_grpo

    def cold_start(world, config, log=None, work=None):
        calls.append("cold")
        return real_cold(world, config, vlm=judge(), log=log, work=work)

    def grpo(cold, world, config, with_proc, log=None, work=None):
        calls.append("full" if with_proc else "no_proc")
        if with_proc and len(calls) == 3:
            raise KeyboardInterrupt("the session ended")
        return real_grpo(cold, world, config, with_proc, log=log, work=work)

    monkeypatch.setattr(run, "load_vlm", lambda role: judge())
    monkeypatch.setattr(run, "train_cold_start", cold_start)
    monkeypatch.setattr(run, "train_grpo", grpo)
    config = MOLTExperimentConfig(limit=2, sft_queries=2, sft_steps=1, grpo_steps=1, group_size=2,
                                  prompts_per_step=1, max_new_tokens=8, teacher="model", teacher_tokens=4)
    work = WorkFolder(tmp_path, run_fingerprint(config, "test-judge"))
    with pytest.raises(KeyboardInterrupt):
        run.run_experiment(config, work)
    assert calls == ["cold", "no_proc", "full"]
    share = work.log()["sft"]["teacher_defender_share"]
    assert work.log()["sft"]["teacher_rounds"] <= 2 * 4 and (share is None or 0 <= share <= 1)
    older = work.log()                             # a run whose cold start predates the share: filled in
    for key in ("teacher_defender_share", "teacher_defender_wins", "teacher_rounds"):
        del older["sft"][key]
    work.save_log(older)
    assert work.rows("sft_tournament") is not None and work.rows("grpo_full_weak_to_strong") is None
    assert work.has_model("cold") and work.has_model("grpo_no_proc") and not work.has_model("grpo_full")

    rows, log = run.run_experiment(config, work)
    assert calls == ["cold", "no_proc", "full", "full"], "the rerun trains only the missing judge"
    judge_rows = [n for n in rows if not n.startswith("scripted_")]
    assert judge_rows[:4] == ["zero_shot_one_shot", "zero_shot_tournament", "sft_tournament",
                              "grpo_no_proc_tournament"] and len(judge_rows) == 7
    assert {"sft", "grpo_no_proc", "grpo_full", "row_seconds"} <= set(log)
    assert log["sft"]["teacher_defender_share"] == share
    restored = work.load_model("cold", judge())
    items = eval_sets(get_world(0), get_world(0).kbvqa_test, config.gap, config.seed)[: config.limit]
    again = run.evaluate_one_pass(restored, items, "weak_to_strong", config, config.seed)
    assert [r["output"] for r in again] == [r["output"] for r in rows["sft_tournament"]]
    assert WorkFolder(tmp_path, run_fingerprint(config, "test-judge"), fresh=True).rows("sft_tournament") is None
    assert run_fingerprint(config, "another judge") != run_fingerprint(config, "test-judge")


def test_an_interrupted_cold_start_keeps_its_teacher_transcripts_and_its_sft_checkpoint(tmp_path, monkeypatch,
                                                                                        session_ends_at_checkpoint):
    """On the reader the model teacher writes for about an hour and the SFT takes longer: a run cut
    off inside the cold start keeps both, and the rerun asks the teacher nothing and ends with the
    weights of an uninterrupted cold start."""
    import torch

    import kbvqa.experiments.molt_training.run as run
    from kbvqa.data import get_world
    from kbvqa.experiments.molt_training.work import WorkFolder
    from kbvqa.models import build_tiny_vlm

    torch.set_num_threads(1)

    def judge():
        return build_tiny_vlm("qwen2_vl", texts=["[1] [2] [3] [4] [5] <think> </think> <winner> </winner> the"],
                              seed=0, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                              intermediate_size=64, vision_width=32, vision_depth=1)

    def trainable(vlm):
        return {n: p.detach().clone() for n, p in vlm.model.named_parameters() if p.requires_grad}

    world = get_world(0)
    config = MOLTExperimentConfig(sft_queries=3, sft_steps=12, teacher="model", teacher_tokens=4)
    whole = trainable(run.train_cold_start(world, config, vlm=judge(), log={}))
    work = WorkFolder(tmp_path, "run")
    with pytest.raises(KeyboardInterrupt):
        run.train_cold_start(world, config, vlm=judge(), log={}, work=work)
    assert len(work.data("sft_transcripts")["transcripts"]) == 3 and work.checkpoint("cold")["step"] == 10
    session_ends_at_checkpoint()                   # the rerun saves its checkpoints
    again, asked = judge(), []
    generate = again.generate
    monkeypatch.setattr(again, "generate", lambda *a, **k: asked.append(1) or generate(*a, **k))
    log = {}
    resumed = trainable(run.train_cold_start(world, config, vlm=again, log=log, work=work))
    assert not asked, "the rerun reads the teacher's transcripts back"
    assert set(resumed) == set(whole) and all(torch.allclose(resumed[n], whole[n], atol=1e-6) for n in whole)
    assert log["sft"]["seconds"] >= log["sft"]["teacher_seconds"] >= 0
    with pytest.raises(ValueError, match="other queries"):
        run.build_sft_set(world, world.kbvqa_train[:2], transcripts=work.data("sft_transcripts")["transcripts"])


def test_an_interrupted_grpo_stage_and_row_go_on_from_their_last_checkpoint(tmp_path, session_ends_at_checkpoint):
    """GRPO on the reader runs longer than a session's remainder: a run cut off inside it keeps a
    checkpoint every 2 steps and the rerun ends with the weights and curves of an uninterrupted
    run; a row is kept 80 queries at a time and a rerun evaluates only the queries not done."""
    import torch

    import kbvqa.experiments.molt_training.run as run
    from kbvqa.data import get_world
    from kbvqa.experiments.work import WorkFolder, map_in_chunks
    from kbvqa.models import build_tiny_vlm

    torch.set_num_threads(1)
    cold = build_tiny_vlm("qwen2_vl", texts=["[1] [2] [3] [4] [5] <think> </think> <winner> </winner> the"],
                          seed=0, hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1,
                          intermediate_size=64, vision_width=32, vision_depth=1)
    world = get_world(0)
    config = MOLTExperimentConfig(grpo_steps=3, group_size=2, prompts_per_step=1, max_new_tokens=6)
    whole_log = {}
    whole = run.train_grpo(cold, world, config, with_proc=True, log=whole_log)
    work = WorkFolder(tmp_path, "run")
    with pytest.raises(KeyboardInterrupt):
        run.train_grpo(cold, world, config, with_proc=True, log={}, work=work)
    assert work.checkpoint("grpo_full")["step"] == 2
    session_ends_at_checkpoint()
    log = {}
    resumed = run.train_grpo(cold, world, config, with_proc=True, log=log, work=work)
    assert log["grpo_full"]["reward"] == whole_log["grpo_full"]["reward"] and log["grpo_full"]["seconds"] > 0
    assert all(torch.allclose(p, q, atol=1e-6) for p, q in zip(resumed.model.parameters(), whole.model.parameters()))

    items = eval_sets(world, world.kbvqa_test, config.gap, config.seed)[:5]
    evaluated = []

    def evaluate(part, stop_after=None):
        evaluated.extend(it.query.id for it in part)
        if stop_after is not None and len(evaluated) > stop_after:
            raise KeyboardInterrupt("the session ended")
        return run.evaluate_one_pass(cold, part, "weak_to_strong", config, config.seed)

    reference = run.evaluate_one_pass(cold, items, "weak_to_strong", config, config.seed)
    with pytest.raises(KeyboardInterrupt):
        map_in_chunks(work, "row_x", items, lambda part: evaluate(part, stop_after=2), chunk=2)
    assert len(work.data("row_x")["done"]) == 2
    evaluated.clear()
    records, seconds = map_in_chunks(work, "row_x", items, evaluate, chunk=2)
    assert evaluated == [it.query.id for it in items[2:]] and seconds > 0
    assert [r["output"] for r in records] == [r["output"] for r in reference]
    assert map_in_chunks(None, "row_x", items, lambda part: [len(part)], chunk=2)[0] == [5]
    with pytest.raises(ValueError, match="chunk"):
        map_in_chunks(work, "row_x", items, evaluate, chunk=0)
    with pytest.raises(ValueError, match="kept for"):
        map_in_chunks(work, "row_x", items[:3], evaluate, chunk=2)


def test_train_slices_keep_sft_gate_and_grpo_apart():
    """Issue 54's split of the 2,304 train queries: SFT [:1792], the gate [1792:2048], GRPO [-256:]."""
    from kbvqa.data import get_world
    from kbvqa.molt.experiment import GRPO_QUERIES, grpo_tasks, train_slices

    world = get_world(0)
    train = world.kbvqa_train
    parts = train_slices(world, MOLTExperimentConfig(sft_queries=1792, gate_queries=256))
    assert [q.id for q in parts["sft"]] == [q.id for q in train[:1792]]
    assert [q.id for q in parts["gate"]] == [q.id for q in train[1792:2048]]
    assert [q.id for q in parts["grpo"]] == [q.id for q in train[-GRPO_QUERIES:]]
    ids = [q.id for part in parts.values() for q in part]
    assert len(ids) == len(set(ids)) == len(train)
    assert {t.gold_id for t in grpo_tasks(world, MOLTExperimentConfig(), n=4)}          # GRPO reads its own part
    assert train_slices(world, MOLTExperimentConfig())["gate"] == []                    # no gate: the committed run
    with pytest.raises(ValueError, match="use at most 1792"):
        train_slices(world, MOLTExperimentConfig(sft_queries=1793, gate_queries=256))
    with pytest.raises(ValueError, match="gate_queries"):
        MOLTExperimentConfig(gate_queries=-1)


def test_a_failed_role_gate_stops_the_run_before_any_table_row(tmp_path, monkeypatch):
    """The gate runs on held-out train queries right after the cold start; when the judge keeps the
    incumbent it fails, no Tab. 5/6 row after it runs, and the log says why."""
    import kbvqa.experiments.molt_training.run as run
    from kbvqa.experiments.molt_training.work import WorkFolder, run_fingerprint

    def keep_the_defender(judge, items, order, config, seed):
        # every round goes to the defender: the gold wins only when it is the seed
        out = []
        for it in items:
            seed_first = it.gold_rank == 5                    # weak-to-strong: the weakest (rank 5) is the seed
            out.append({"query_id": it.query.id, "gold_rank": it.gold_rank, "chain_valid": True,
                        "gt_rounds": 4 if seed_first else 0, "correct": seed_first, "output": ""})
        return out

    evaluated = []
    monkeypatch.setattr(run, "load_vlm", lambda role: object())
    monkeypatch.setattr(run, "train_cold_start", lambda world, config, log=None, work=None: object())
    monkeypatch.setattr(run, "trained_model", lambda work, name, train, base, on_saved=None, **kw: train())
    monkeypatch.setattr(run, "inference_copy", lambda vlm: vlm)
    monkeypatch.setattr(run, "evaluate_one_shot", lambda *a: evaluated.append("one_shot") or [])
    monkeypatch.setattr(run, "evaluate_one_pass",
                        lambda judge, items, order, config, seed: evaluated.append(len(items)) or keep_the_defender(
                            judge, items, order, config, seed))
    config = MOLTExperimentConfig(limit=2, sft_queries=8, gate_queries=60)
    work = WorkFolder(tmp_path, run_fingerprint(config, "test-judge"))
    rows, log = run.run_experiment(config, work)
    gate = log["gates"]["gate_sft"]
    assert not gate["passed"] and gate["challenger"] == 0.0 and gate["defender"] == 1.0
    assert "gate_sft failed" in log["stopped"] and "sft_tournament" not in rows
    assert evaluated[-1] == 60 and work.rows("gate_sft") is not None
    assert run_fingerprint(config, "j") != run_fingerprint(MOLTExperimentConfig(limit=2, sft_queries=8), "j")
