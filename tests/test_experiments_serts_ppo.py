"""The SeRTS PPO experiment (``kbvqa.experiments.serts_ppo``): settings, stages, resume and summary.

The stages run on the tiny model (the ``searcher`` role is moved off the reader for these tests) with a
few questions, so each test takes seconds; what is checked is the bookkeeping, not an effect.
"""
from __future__ import annotations

import pytest
import torch

from kbvqa.data import get_world
from kbvqa.experiments.serts_ppo import run as ppo_run
from kbvqa.experiments.serts_ppo.run import run_experiment
from kbvqa.experiments.work import WorkFolder
from kbvqa.models.pretrain_mc_lit import bm25_search, lit_question_split
from kbvqa.serts import ppo_experiment as stages
from kbvqa.serts.ppo_experiment import PPORunConfig, recall_at, summarise


@pytest.fixture(autouse=True)
def searcher_on_the_tiny_model(monkeypatch):
    import kbvqa.config as kbvqa_config

    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", kbvqa_config.CPU_READER_ROLES - {"searcher"})


SMALL = dict(n_train=3, sim=2, chunk=2, n_test=4, n_samples=2, epochs=1, batch_size=2, mini_batch_size=1,
             checkpoint_every=1)


@pytest.mark.parametrize("bad", [dict(n_train=0), dict(rewards=()), dict(rewards=("gold",)), dict(n_samples=-1),
                                 dict(learning_rate=0.0), dict(chunk=True), dict(k=2.5)])
def test_bad_settings_raise(bad):
    with pytest.raises(ValueError):
        PPORunConfig(**bad)


def test_recall_at_counts_gold_in_the_top_k():
    world = get_world(0)
    q = lit_question_split(world)[1][0]
    top = bm25_search(world, q.question, 5)
    expected = len(set(top) & set(q.gold_doc_ids)) / len(q.gold_doc_ids)
    assert recall_at(world, q.question, q.gold_doc_ids, 5) == expected
    assert recall_at(world, "", q.gold_doc_ids, 5) == 0.0
    assert recall_at(world, q.question, [], 5) == 0.0


def test_summarise_pairs_rows_on_question_ids():
    rec = lambda i, g, s: {"id": i, "greedy_recall": g, "sample_recall": s, "question_recall": 0.5,  # noqa: E731
                           "well_formed": 1.0}
    rows = {"base": [rec("a", 0.0, 0.0), rec("b", 0.5, 0.5)],
            "ppo_rubric": [rec("b", 1.0, 0.5), rec("a", 0.5, 0.25)]}    # another order: paired by id
    out = summarise(rows)
    assert out["base"]["greedy_recall"] == 0.25 and out["ppo_rubric"]["greedy_recall"] == 0.75
    diff = out["ppo_rubric"]["greedy_recall_diff"]
    assert diff["diff"] == pytest.approx(0.5) and diff["low"] == pytest.approx(0.5) and diff["n"] == 2
    assert out["ppo_rubric"]["sample_recall_diff"]["diff"] == pytest.approx(0.125)
    assert "greedy_recall_diff" not in out["base"]


def test_the_run_scores_every_row_and_a_rerun_reads_every_stage_back(tmp_path, monkeypatch):
    config = PPORunConfig(**SMALL)
    first = run_experiment(config, WorkFolder(tmp_path, "run"), log=lambda *_: None)
    world = get_world(0)
    test_ids = [q.id for q in lit_question_split(world)[1][:4]]
    assert set(first["records"]) == {"base", "ppo_evaluator", "ppo_rubric"}
    assert all([r["id"] for r in recs] == test_ids for recs in first["records"].values())
    assert first["trajectories"]["n"] > 0 == len(first["trajectory_records"]) - first["trajectories"]["n"]
    assert set(first["trajectory_records"][0]) == {"question_id", "depth", "evaluator", "rubric", "recall", "well_formed"}
    assert len(first["steps"]["ppo_rubric"]) == -(-first["trajectories"]["n"] // 2)    # one epoch, batches of 2
    train_ids = {q.id for q in lit_question_split(world)[0]}
    kept = WorkFolder(tmp_path, "run").data("trajectories")["done"]
    assert len(kept) == 3 and all(t["question_id"] in train_ids for nodes in kept for t in nodes)

    def never(*_a, **_k):
        raise AssertionError("a finished stage was redone")
    monkeypatch.setattr(stages, "collect", never)
    monkeypatch.setattr(stages, "ppo_step", never)
    monkeypatch.setattr(ppo_run, "root_queries", never)
    again = run_experiment(config, WorkFolder(tmp_path, "run"), log=lambda *_: None)
    assert again["rows"] == first["rows"] and again["steps"] == first["steps"]


def test_ppo_interrupted_at_a_checkpoint_ends_with_the_uninterrupted_weights(tmp_path, session_ends_at_checkpoint):
    config = PPORunConfig(**{**SMALL, "rewards": ("rubric",)})
    world = get_world(0)
    vlm = stages.load_vlm("searcher")
    trajectories = [t for nodes in stages.collect(world, vlm, lit_question_split(world)[0][:3], config) for t in nodes]
    assert len(trajectories) >= 3, "the test needs at least two PPO steps"
    work = WorkFolder(tmp_path, "cut")
    with pytest.raises(KeyboardInterrupt):
        stages.train_ppo(trajectories, "rubric", config, work, log=lambda *_: None)
    assert len(work.checkpoint("ppo_rubric")["steps"]) == 1
    session_ends_at_checkpoint()
    resumed, resumed_steps = stages.train_ppo(trajectories, "rubric", config, work, log=lambda *_: None)
    whole, whole_steps = stages.train_ppo(trajectories, "rubric", config, None, log=lambda *_: None)
    assert [s["loss"] for s in resumed_steps] == pytest.approx([s["loss"] for s in whole_steps])
    a, b = stages._adapter_state(resumed), stages._adapter_state(whole)
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=1e-6) for k in a)
    assert work.checkpoint("ppo_rubric") is None and work.has_model("ppo_rubric")
    with pytest.raises(ValueError):
        stages.train_ppo(trajectories, "gold", config)
    with pytest.raises(ValueError):
        stages.train_ppo([], "rubric", config)
