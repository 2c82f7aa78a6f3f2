"""Tiny-VLM pretraining (kbvqa.models.tiny) and its model card (kbvqa.models.model_card).

A 1-layer, width-32 model trains 20 steps on three short tasks (a few seconds on one core): the
loss must fall, the checkpoint must reload through ``VLM.from_pretrained`` with identical logits,
a resumed run must continue from the saved step, and ``evaluate_card`` must return every metric in
range on a random model.
"""
from __future__ import annotations

import json
import math

import pytest
import torch

from kbvqa.data import get_world
from kbvqa.metrics.ranking import roc_auc
from kbvqa.models.model_card import evaluate_card, write_card
from kbvqa.models.tiny import BatchStream, TinyTrainConfig, load_tiny_vlm, lr_at, pretrain
from kbvqa.models.vlm import VLM
from kbvqa.parsers import parse_box, parse_winner
from kbvqa.retrieval.subject import box_iou
from kbvqa.viz.reader import draw_tiny_training_curves

SMALL = dict(phases=[], hidden_size=32, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=64,
             vision_width=32, vision_depth=1, steps=20, batch_size=8, pool_batches=4, lr=1e-2,
             warmup_steps=2, log_every=2, eval_every=10, eval_n=2)
MIX = {"weights": {"critic": 1.0, "grounding": 1.0, "kbvqa_no_passage": 1.0}}


def small_config(**overrides) -> TinyTrainConfig:
    return TinyTrainConfig(**{**SMALL, "mix": MIX, **overrides})


@pytest.fixture(scope="module")
def world():
    return get_world(0)


@pytest.fixture(scope="module")
def trained(world, tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny") / "tiny_vlm"
    state_dir = out.parent / "state"
    torch.manual_seed(0)
    vlm, state = pretrain(small_config(), world=world, out_dir=out, resume=False, progress=False,
                          state_dir=state_dir)
    return vlm, state, out, state_dir


def test_loss_falls(trained):
    _, state, _, _ = trained
    losses = [p["loss"] for p in state["train"]]
    assert state["steps_done"] == 20 and len(losses) == 10
    assert math.log(state["vocab"]) - 0.5 < losses[0]             # starts near uniform
    assert sum(losses[-3:]) / 3 < sum(losses[:2]) / 2 - 1.0        # and falls by more than a nat


def test_save_load_round_trip(trained, world):
    vlm, _, out, _ = trained
    for name in ("config.json", "model.safetensors", "curves.json", "tokenizer.json"):
        assert (out / name).exists(), name
    assert not list(out.glob("*.pt"))                               # optimiser state is not shipped
    again = VLM.from_pretrained(str(out))
    loaded = load_tiny_vlm(out)
    prompt = [(world.image_of(world.kbvqa_test[0].meta["view_id"]), "What is this?")]
    a, b = vlm.next_token_logits(prompt), again.next_token_logits(prompt)
    assert torch.allclose(a, b, atol=1e-5)
    assert torch.allclose(a, loaded.next_token_logits(prompt), atol=1e-5)
    with pytest.raises(ValueError):
        load_tiny_vlm(out.parent / "missing")


def test_resume_continues_from_saved_step(trained, world):
    _, state, out, state_dir = trained
    resumed_dir = out.parent / "resumed"
    resumed_dir.mkdir()
    for f in out.iterdir():
        (resumed_dir / f.name).write_bytes(f.read_bytes())
    (state_dir / "resumed.pt").write_bytes((state_dir / "tiny_vlm.pt").read_bytes())
    curves = json.loads((resumed_dir / "curves.json").read_text())
    curves["config"]["steps"] = 24
    (resumed_dir / "curves.json").write_text(json.dumps(curves))
    _, again = pretrain(small_config(), world=world, out_dir=resumed_dir, resume=True, progress=False,
                        state_dir=state_dir)
    assert again["steps_done"] == 24
    assert [p["step"] for p in again["train"]][:10] == [p["step"] for p in state["train"]]
    assert again["train"][-1]["step"] == 24


def test_batch_stream_is_deterministic_and_bucketed(world, trained):
    vlm = trained[0]
    config = small_config(pool_batches=4, batch_size=4)
    a, b = BatchStream(world, config, vlm.tokenizer), BatchStream(world, config, vlm.tokenizer)
    assert [e.completion for e in a(5)] == [e.completion for e in b(5)]   # step 5 read first
    from kbvqa.models.pretrain_mix import example_length
    batches = [[example_length(e, vlm.tokenizer)[0] for e in a(s)] for s in range(4)]
    spans = sorted((min(x), max(x)) for x in batches)
    assert all(hi1 <= lo2 for (_, hi1), (lo2, _) in zip(spans, spans[1:]))  # disjoint length buckets
    phased = small_config(pool_batches=2, batch_size=4, phases=[[4, {"weights": {"pairwise": 1.0}}]])
    stream = BatchStream(world, phased, vlm.tokenizer)
    assert {e.task for e in stream(3)} <= set(MIX["weights"]) and {e.task for e in stream(4)} == {"pairwise"}
    weighted = small_config(phases=[[5, {"prompt_loss_weight": 0.5}]])
    assert weighted.prompt_weight(4) == 0.0 and weighted.prompt_weight(5) == 0.5
    assert weighted.mix_config(5).max_passages == weighted.mix_config(0).max_passages


def test_prompt_loss_weight_adds_the_prompt_loss(world, trained):
    from itertools import islice

    from kbvqa.models.pretrain_mix import PretrainMixConfig, iter_pretrain_examples
    from kbvqa.models.tiny import train_loss

    examples = list(islice(iter_pretrain_examples(world, PretrainMixConfig(**MIX)), 4))
    with torch.no_grad():
        answer, both = (train_loss(trained[0], examples, w).item() for w in (0.0, 1.0))
    prompt = 2 * both - answer                     # example norm: (answer + 1 x prompt) / 2
    assert prompt > 0 and abs(both - answer) > 1e-3


def test_lr_schedule():
    c = TinyTrainConfig(steps=100, warmup_steps=10, lr=1.0, decay_fraction=0.2, min_lr_ratio=0.1)
    assert lr_at(c, 0) == pytest.approx(0.1) and lr_at(c, 9) == pytest.approx(1.0)
    assert lr_at(c, 50) == 1.0 and lr_at(c, 99) == pytest.approx(0.1 + 0.9 / 20)
    cos = TinyTrainConfig(steps=100, warmup_steps=0, lr=1.0, schedule="cosine", min_lr_ratio=0.0)
    assert lr_at(cos, 50) == pytest.approx(0.5, abs=0.02) and lr_at(cos, 100) == pytest.approx(0.0)


@pytest.mark.parametrize("bad", [dict(steps=0), dict(batch_size=-1), dict(schedule="linear"), dict(lr=0),
                                 dict(loss_norm="sum"), dict(prompt_loss_weight=2.0), dict(minutes=0),
                                 dict(mix={"no_such_field": 1}), dict(mix={"weights": {"nope": 1.0}}),
                                 dict(attn_implementation="flash"), dict(decay_fraction=1.5),
                                 dict(phases=[[10, {"bad_field": 1}]]), dict(phases=[[-1, {}]])])
def test_bad_configs_raise(bad):
    with pytest.raises(ValueError):
        TinyTrainConfig(**bad)


def test_card_metrics_on_random_model(world, trained, tmp_path):
    vlm, state, out, _ = trained
    card = evaluate_card(vlm, world, n=2, max_new_tokens=8)
    rates = ["kbvqa_gold_passage_acc", "kbvqa_no_passage_acc", "kbvqa_10_passages_acc", "no_passage_refusal_rate",
             "critic_roc_auc", "critic_roc_auc_hard", "critic_acc", "critic_mean_p_yes", "mc_zero_shot_acc",
             "mc_3_random_acc", "mc_3_same_rule_acc", "pairwise_acc", "box_iou", "box_iou50"]
    for key in rates:
        assert 0.0 <= card[key] <= 1.0, (key, card[key])
    for key in ("gold_logprob_with_passage", "gold_logprob_no_passage"):
        assert card[key] < 0, key
    assert card["sizes"]["critic"] == 6 and card["sizes"]["kbvqa_gold_passage"] == 2
    path = write_card(out, card, world=world)
    written = json.loads(path.read_text())
    assert written["steps_done"] == 20 and written["toyworld_version"] == world.version
    assert len(written["commit"]) in (7, 40) or written["commit"] == "unknown"
    draw_tiny_training_curves(state).savefig(tmp_path / "curves.png")
    with pytest.raises(ValueError):
        evaluate_card(vlm, world, n=0)


def test_scorers():
    from sklearn.metrics import roc_auc_score

    scores, labels = [0.9, 0.8, 0.8, 0.3, 0.1, 0.5], [1, 1, 0, 0, 0, 1]
    assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    assert math.isnan(roc_auc([0.1, 0.2], [1, 1]))
    assert parse_box("box: [10, 20, 5, 40] done") == [5.0, 20.0, 10.0, 40.0]
    assert parse_box("no box") is None and parse_box("") is None
    assert box_iou([0, 0, 10, 10], [0, 0, 10, 10]) == 1.0
    assert box_iou([0, 0, 10, 10], [5, 0, 15, 10]) == pytest.approx(50 / 150)
    assert box_iou(None, [0, 0, 1, 1]) == 0.0
    assert parse_winner("<think>x</think><winner>3</winner>") == "3" and parse_winner("4") is None


def test_shipped_checkpoint_follows_the_two_stage_recipe():
    """``python -m kbvqa.models.tiny_recipe --stage 1`` then ``--stage 2`` retrains the shipped
    checkpoint: its config is stage 2's, and the stage it started from used stage 1's."""
    import dataclasses

    from kbvqa.config import DATA_DIR
    from kbvqa.models.tiny_recipe import stage_config

    path = DATA_DIR / "tiny_vlm" / "curves.json"
    if not path.exists():
        pytest.skip("no shipped tiny checkpoint")
    state = json.loads(path.read_text())

    def strip(config):
        return {k: v for k, v in config.items() if k not in ("minutes", "init_from")}

    assert strip(state["config"]) == strip(dataclasses.asdict(stage_config(2)))
    assert strip(state["previous_stages"][0]["config"]) == strip(dataclasses.asdict(stage_config(1)))
    assert state["previous_stages"][0]["steps_done"] == stage_config(1).steps
    assert state["steps_done"] == stage_config(2).steps


def test_recipe_rejects_unknown_stage():
    from kbvqa.models.tiny_recipe import stage_config

    with pytest.raises(ValueError):
        stage_config(3)
