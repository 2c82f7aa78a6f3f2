"""The ReAG ladder resumes from its work folder (``kbvqa.experiments.work``): on the reader its critic,
SFT, cold start and GRPO stages take hours, more than one sitting of the machines it runs on. A run
cut off mid-way keeps every trained model, the model-written traces and the SFT's or GRPO's last checkpoint,
and the rerun trains only what is missing and ends as an uninterrupted run. Tiny random models."""
from __future__ import annotations

import pytest

from kbvqa.experiments.work import WorkFolder
from kbvqa.reag import ladder, ladder_train
from kbvqa.reag.ladder import LadderConfig


def tiny(role="rl_policy", **kw):
    from kbvqa.models import build_tiny_vlm

    return build_tiny_vlm("qwen2_vl", texts=["<think> </think> <answer> </answer> Yes No the a"], seed=0,
                          hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64,
                          vision_width=32, vision_depth=1)


def trainable(vlm):
    return {n: p.detach().clone() for n, p in vlm.model.named_parameters() if p.requires_grad}


CONFIG = LadderConfig(limit=2, critic_steps=1, sft_steps=1, cold_steps=12, train_examples=4, grpo_steps=1,
                      group_size=2, prompts_per_step=1, max_new_tokens=4, batch_size=4, traces="model",
                      trace_tokens=4)


@pytest.fixture()
def world(monkeypatch):
    import torch

    from kbvqa.data import get_world

    torch.set_num_threads(1)
    monkeypatch.setattr(ladder, "load_vlm", tiny)
    monkeypatch.setattr(ladder_train, "load_vlm", tiny)
    return get_world(0)


def _evidence(world, queries):
    noise = [p.id for p in world.documents[-1].passages[:2]]
    return {q.id: {"coarse": noise, "fine": [q.evidence_ids[0]], "coarse_scores": [0.5, 0.5],
                   "fine_scores": [0.9], "threshold": 0.1, "evidence": list(q.evidence_ids)} for q in queries}


def test_an_interrupted_ladder_trains_only_what_is_missing(tmp_path, world, monkeypatch):
    queries = world.kbvqa_test[:2]
    evidence, work = _evidence(world, queries), WorkFolder(tmp_path, "run")
    calls, seen = [], {}
    real_sft, real_grpo, real_traces = ladder_train.sft_train, ladder_train.grpo_train, ladder_train.write_traces

    def sft(*a, **k):
        calls.append("sft")
        return real_sft(*a, **k)

    def grpo(*a, **k):
        calls.append("grpo")
        if calls.count("grpo") == 1:
            raise KeyboardInterrupt("the session ended")
        return real_grpo(*a, **k)

    def traces(*a, **k):
        calls.append("traces")
        return real_traces(*a, **k)

    monkeypatch.setattr(ladder_train, "sft_train", sft)
    monkeypatch.setattr(ladder_train, "grpo_train", grpo)
    monkeypatch.setattr(ladder_train, "write_traces", traces)
    log = {}
    with pytest.raises(KeyboardInterrupt):
        ladder.run_rungs(world, queries, evidence, CONFIG, rungs=["sft", "traces", "rl"], log=log, work=work,
                         on_records=lambda name, records: seen.setdefault(name, records))
    assert calls == ["sft", "traces", "sft", "grpo"] and set(seen) == {"sft", "traces"}
    assert work.has_model("sft") and work.has_model("cold_start") and not work.has_model("rl")
    assert len(work.data("traces")["traces"]) == CONFIG.train_examples and work.checkpoint("cold_start") is None
    assert {"sft", "cold_start", "traces"} <= set(work.log())

    out = ladder.run_rungs(world, queries, evidence, CONFIG, rungs=["sft", "traces", "rl"], log=work.log(),
                           work=work)
    assert calls[4:] == ["grpo"], "the rerun reads the SFT, the traces and the cold start back"
    assert work.has_model("rl") and "rl" in work.log()
    assert [r["output"] for r in out["traces"]] == [r["output"] for r in seen["traces"]], \
        "a generator read back answers as the one trained"


def test_an_interrupted_sft_stage_resumes_from_its_checkpoint(tmp_path, world, session_ends_at_checkpoint):
    whole = trainable(ladder_train.train_generator("cold_start", world, CONFIG, base=tiny(), log={}))
    work = WorkFolder(tmp_path, "run")
    with pytest.raises(KeyboardInterrupt):
        ladder_train.train_generator("cold_start", world, CONFIG, base=tiny(), log={}, work=work)
    assert work.checkpoint("cold_start")["step"] == 10
    session_ends_at_checkpoint()                   # the rerun saves its checkpoints
    log = {}
    resumed = trainable(ladder_train.train_generator("cold_start", world, CONFIG, base=tiny(), log=log, work=work))
    assert set(resumed) == set(whole)
    assert all(__import__("torch").allclose(resumed[n], whole[n], atol=1e-6) for n in whole)
    assert log["cold_start"]["seconds"] >= 0 and log["traces"]["n"] == CONFIG.train_examples


def test_an_interrupted_grpo_stage_resumes_from_its_checkpoint(tmp_path, world, session_ends_at_checkpoint):
    import dataclasses

    config = dataclasses.replace(CONFIG, grpo_steps=3)
    whole_log = {}
    whole = trainable(ladder_train.train_generator("rl", world, config, base=tiny(), log=whole_log))
    work = WorkFolder(tmp_path, "run")
    with pytest.raises(KeyboardInterrupt):
        ladder_train.train_generator("rl", world, config, base=tiny(), log={}, work=work)
    assert work.checkpoint("rl")["step"] == 2
    session_ends_at_checkpoint()
    log = {}
    resumed = trainable(ladder_train.train_generator("rl", world, config, base=tiny(), log=log, work=work))
    assert all(__import__("torch").allclose(resumed[n], whole[n], atol=1e-6) for n in whole)
    assert log["rl"]["accuracy_reward_last5"] == whole_log["rl"]["accuracy_reward_last5"] and log["rl"]["seconds"] > 0


def test_an_interrupted_rung_goes_on_from_its_last_kept_chunk(tmp_path, world, monkeypatch):
    import dataclasses

    config = dataclasses.replace(CONFIG, limit=7, batch_size=1)      # chunks of 3 queries
    queries = world.kbvqa_test[:7]
    evidence = _evidence(world, queries)
    whole = ladder.run_rungs(world, queries, evidence, config, rungs=["coarse"])["coarse"]
    real, asked = ladder.evaluate, []

    def evaluate(generator, world, qs, *a, **k):
        asked.append([q.id for q in qs])
        if len(asked) == 2 and interrupt:
            raise KeyboardInterrupt                 # the session ends in the second chunk
        return real(generator, world, qs, *a, **k)

    monkeypatch.setattr(ladder, "evaluate", evaluate)
    work, interrupt = WorkFolder(tmp_path, "run"), True
    with pytest.raises(KeyboardInterrupt):
        ladder.run_rungs(world, queries, evidence, config, rungs=["coarse"], work=work)
    assert len(work.data("rung_coarse")["done"]) == 3
    asked.clear()
    interrupt = False
    resumed = ladder.run_rungs(world, queries, evidence, config, rungs=["coarse"], work=work)["coarse"]
    assert asked == [[q.id for q in queries[3:6]], [queries[6].id]], "the rerun answers only the rest"
    assert resumed == whole and work.data("rung_coarse") is None


def test_kept_traces_for_other_examples_raise(tmp_path, world):
    work = WorkFolder(tmp_path, "run")
    examples = ladder_train.training_examples(world, CONFIG, traces=True, work=work)
    assert len(examples) == CONFIG.train_examples and work.data("traces")["seconds"] >= 0
    again = ladder_train.training_examples(world, CONFIG, traces=True, work=work)
    assert [e.completion for e in again] == [e.completion for e in examples]
    from dataclasses import replace

    with pytest.raises(ValueError, match="other examples"):
        ladder_train.training_examples(world, replace(CONFIG, seed=1), traces=True, work=work)


def test_the_ladder_critic_is_kept(tmp_path, world, monkeypatch):
    work, trained = WorkFolder(tmp_path, "run"), []
    real = ladder_train.train_critic
    monkeypatch.setattr(ladder_train, "train_critic", lambda *a, **k: trained.append(1) or real(*a, **k))
    first = trainable(ladder_train.train_ladder_critic(world, CONFIG, work=work))
    again = trainable(ladder_train.train_ladder_critic(world, CONFIG, work=work))
    assert trained == [1] and work.has_model("critic")
    assert set(first) == set(again) and all(bool((first[n] == again[n]).all()) for n in first)


def test_an_interrupted_critic_resumes_from_its_checkpoint(tmp_path, world, session_ends_at_checkpoint):
    """The critic trains for the better part of an hour on the reader: a run cut off inside it keeps a
    checkpoint every 10 steps, and the rerun ends with the weights of an uninterrupted critic."""
    import dataclasses

    import torch

    config = dataclasses.replace(CONFIG, critic_steps=12)
    whole = trainable(ladder_train.train_ladder_critic(world, config, vlm=tiny()))
    work = WorkFolder(tmp_path, "run")
    with pytest.raises(KeyboardInterrupt):
        ladder_train.train_ladder_critic(world, config, vlm=tiny(), work=work)
    state = work.checkpoint("critic")
    assert state["step"] == 10 and len(state["result"]["loss"]) == 10 and state["seconds"] > 0
    session_ends_at_checkpoint()
    resumed = trainable(ladder_train.train_ladder_critic(world, config, vlm=tiny(), work=work))
    assert set(resumed) == set(whole) and all(torch.allclose(resumed[n], whole[n], atol=1e-6) for n in whole)
    assert work.has_model("critic") and work.checkpoint("critic") is None
    with pytest.raises(ValueError, match="checkpoint_every"):
        ladder_train.CriticTrainConfig(checkpoint_every=-1)


def test_the_work_folder_is_named_by_what_training_depends_on():
    from dataclasses import replace

    from kbvqa.experiments.reag_ladder.run import work_name

    assert work_name(CONFIG) == work_name(replace(CONFIG, limit=50)), "evaluating more queries trains nothing anew"
    assert work_name(CONFIG) != work_name(replace(CONFIG, critic_steps=2))


def test_the_ladder_logs_the_critics_heldout_auc_and_each_stages_curves(tmp_path, world):
    import math

    work = WorkFolder(tmp_path, "run")
    got = ladder_train.critic_heldout_auc(world, CONFIG, work=work, n=8)
    assert got["n"] == 8 and work.has_model("critic")
    for when in ("before", "after"):
        assert set(got[when]) == {"hard", "soft"} and all(0 <= v <= 1 or math.isnan(v) for v in got[when].values())
        assert all(set(by[when]) <= {"hard", "soft"} for by in got["by_split"].values())
    log = {}
    ladder_train.train_generator("rl", world, CONFIG, base=tiny(), log=log)
    assert len(log["rl"]["curves"]["loss"]) == CONFIG.grpo_steps
    assert {"accuracy_reward", "zero_spread_groups", "reward"} <= set(log["rl"]["curves"])
    ladder_train.train_generator("cold_start", world, CONFIG, base=tiny(), log=log)
    curve = log["cold_start"]["curve"]
    assert curve["steps"] and len(curve["loss"]) == len(curve["steps"]) == len(curve["trace_loss"])


def test_a_committed_model_is_the_trained_one(tmp_path, world):
    import torch

    work = WorkFolder(tmp_path / "work", "run")
    trained = ladder_train.train_ladder_critic(world, CONFIG, work=work)
    out = tmp_path / "results"
    (out / "models").mkdir(parents=True)
    (out / "models" / "critic.pt").write_bytes((work.dir / "models" / "critic.pt").read_bytes())
    shipped = ladder.committed_model("critic", out)
    assert all(torch.equal(trainable(shipped)[n], p) for n, p in trainable(trained).items())
    with pytest.raises(FileNotFoundError, match="rl model"):
        ladder.committed_model("rl", out)
    with pytest.raises(ValueError, match="kind"):
        ladder.committed_model("zero_shot", out)


def test_the_shipped_critic_rescores_its_committed_evidence(tmp_path, world):
    from kbvqa.models.checkpoints import role_model

    work = WorkFolder(tmp_path / "work", "run")
    trained = ladder_train.train_ladder_critic(world, CONFIG, work=work)
    queries = world.kbvqa_test[:2]
    evidence = ladder.retrieve_evidence(world, queries, trained, CONFIG)
    out = tmp_path / "results"
    (out / "models").mkdir(parents=True)
    (out / "models" / "critic.pt").write_bytes((work.dir / "models" / "critic.pt").read_bytes())
    got = ladder.critic_agreement(world, queries, evidence, CONFIG, role_model("critic"), out)
    assert got["passages"] == sum(len(evidence[q.id]["coarse"]) for q in queries)
    assert got["same_decision"] == 1.0 and got["max_difference"] <= 1e-3     # P(Yes) kept to 4 digits
    skipped = ladder.critic_agreement(world, queries, evidence, CONFIG, "Qwen/another-critic", out)
    assert skipped["passages"] == 0 and "another-critic" in skipped["skipped"]


def test_shipped_generators_only_for_this_profiles_policy(tmp_path, world):
    from kbvqa.models.checkpoints import role_model

    work = WorkFolder(tmp_path / "work", "run")
    work.save_model("rl", ladder_train.train_generator("sft", world, CONFIG, base=tiny(), log={}))
    out = tmp_path / "results"
    results = {"provenance": {"model": role_model("rl_policy"), "roles": {"rl_policy": role_model("rl_policy")}}}
    assert ladder.shipped_generators(results, out) == {}, "no model shipped"
    (out / "models").mkdir(parents=True)
    (out / "models" / "rl.pt").write_bytes((work.dir / "models" / "rl.pt").read_bytes())
    assert set(ladder.shipped_generators(results, out)) == {"rl"}
    assert ladder.shipped_model("cold_start", results, out) is None, "the cold start was not shipped"
    other = {"provenance": {"model": "Qwen/Qwen2.5-VL-3B-Instruct"}}
    assert ladder.shipped_generators(other, out) == {}, "made by another model than this profile's"


def test_the_run_ships_its_critic_and_grpo_generator(tmp_path, world):
    from kbvqa.experiments.reag_ladder.run import ship_models

    work = WorkFolder(tmp_path / "work", "run")
    assert ship_models(work, tmp_path / "out") == []
    ladder_train.train_ladder_critic(world, CONFIG, work=work)
    assert ship_models(work, tmp_path / "out") == ["critic"]
    assert (tmp_path / "out" / "models" / "critic.pt").read_bytes() == (work.dir / "models" / "critic.pt").read_bytes()
    (work.dir / "data").mkdir(exist_ok=True)
    (work.dir / "data" / "traces.json").write_text('{"traces": []}')
    assert ship_models(work, tmp_path / "out") == ["critic", "traces"], "the written traces go along"
    assert (tmp_path / "out" / "traces.json").read_text() == '{"traces": []}'


def test_grpo_starts_from_the_shipped_cold_start_or_a_short_one(tmp_path, world, monkeypatch):
    from kbvqa.models.checkpoints import role_model

    results = {"provenance": {"model": role_model("rl_policy")}}
    policy, curve = ladder_train.cold_started_policy(world, results, steps=1, out=tmp_path)
    assert curve is not None and len(curve.loss) == 1, "nothing shipped: a short cold start"
    work = WorkFolder(tmp_path / "work", "run")
    work.save_model("cold_start", policy)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "cold_start.pt").write_bytes((work.dir / "models" / "cold_start.pt").read_bytes())
    shipped, curve = ladder_train.cold_started_policy(world, results, steps=1, out=tmp_path)
    assert curve is None and all(__import__("torch").equal(trainable(shipped)[n], p) for n, p in trainable(policy).items())
