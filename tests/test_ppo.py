"""PPO of SeRTS (Eq. 2, App. C.4): advantages with the 3.75 baseline, the clipped objective against a
hand-computed example (token and sequence ratios) and its gradient, config errors, trajectories from a
search, and a few PPO steps with LoRA on a tiny random model (weights move, repeatable, the rewarded
query becomes more likely and the punished one less)."""
from __future__ import annotations

import math

import pytest
import torch

from kbvqa.models import build_tiny_vlm
from kbvqa.rl.ppo import (
    PPOConfig,
    Trajectory,
    collect_trajectories,
    ppo_advantages,
    ppo_objective,
    ppo_step,
    prepare_ppo_policy,
)

TEXTS = ["Give one better BM25 query to find abstracts that answer : is zorp safe ? <query> </query>",
         "zorp fever marsh blick treatment"]
SIZES = {"hidden_size": 64, "num_layers": 2, "intermediate_size": 128, "vision_width": 32, "vision_depth": 1,
         "tie_embeddings": False}


def test_advantages_use_the_reward_baseline():
    assert torch.allclose(ppo_advantages([5, 2, 3.75]), torch.tensor([1.25, -1.75, 0.0]))
    assert torch.allclose(ppo_advantages([5], baseline=0.0, scale=0.2), torch.tensor([1.0]))
    with pytest.raises(ValueError):
        ppo_advantages([float("nan")])


def test_a_learned_baseline_centres_the_advantages_on_the_batch():
    """Issue 55: with App. C.4's constant 3.75 and a mean reward near 2, most advantages are
    negative; a batch-mean baseline centres them, the normalised one also scales them to unit spread."""
    rewards = [2.0, 1.0, 3.0, 2.0]
    assert (ppo_advantages(rewards) < 0).all()                                   # the constant: all negative
    assert torch.allclose(ppo_advantages(rewards, kind="batch_mean"), torch.tensor([0.0, -1.0, 1.0, 0.0]))
    normalised = ppo_advantages(rewards, kind="normalised")
    assert normalised.mean().abs() < 1e-6 and normalised.std(unbiased=False).item() == pytest.approx(1.0, abs=1e-5)
    assert torch.equal(ppo_advantages([3.0, 3.0], kind="normalised"), torch.zeros(2))   # no spread: no signal
    with pytest.raises(ValueError, match="constant"):
        ppo_advantages(rewards, kind="value_head")
    with pytest.raises(ValueError, match="batch_mean"):
        PPOConfig(baseline="median")
    from kbvqa.experiments.serts_ppo.run import main
    with pytest.raises(ValueError, match="normalised"):          # an unknown --baseline, before any model loads
        main(["--baseline", "median"])


def _example():
    lp = torch.log(torch.tensor([[0.5, 0.2], [0.3, 1.0]])).requires_grad_(True)
    old = torch.log(torch.tensor([[0.4, 0.2], [0.2, 1.0]]))
    mask = torch.tensor([[True, True], [True, False]])
    return lp, old, mask, ppo_advantages([5.0, 2.0])            # A = 1.25, -1.75


def test_objective_by_hand_token_level_and_gradient():
    lp, old, mask, adv = _example()
    # row 0: r = 1.25 clipped to 1.2 (A > 0) -> 1.5; r = 1 -> 1.25. row 1: r = 1.5, A < 0 -> 1.5 * -1.75.
    objective, ratios = ppo_objective(lp, old, adv, mask, clip_eps=0.2)
    assert objective.item() == pytest.approx((1.5 + 1.25 - 2.625) / 3, abs=1e-6)
    assert ratios[0, 0].item() == pytest.approx(1.25) and ratios[1, 0].item() == pytest.approx(1.5)
    objective.backward()
    assert lp.grad[0, 0].item() == 0.0                           # clipped: no gradient
    assert lp.grad[0, 1].item() == pytest.approx(1.25 / 3, abs=1e-6)
    assert lp.grad[1, 0].item() == pytest.approx(-1.75 * 1.5 / 3, abs=1e-6)
    assert lp.grad[1, 1].item() == 0.0                           # padding


def test_objective_by_hand_sequence_level():
    lp, old, mask, adv = _example()
    objective, ratios = ppo_objective(lp, old, adv, mask, clip_eps=0.2, ratio="sequence")
    assert torch.allclose(ratios, torch.tensor([1.25, 1.5]))
    assert objective.item() == pytest.approx((1.5 - 2.625) / 2, abs=1e-6)
    on_policy, _ = ppo_objective(old.clone(), old, adv, mask)    # r = 1: the mean advantage per token
    assert on_policy.item() == pytest.approx((1.25 * 2 - 1.75) / 3, abs=1e-6)


@pytest.mark.parametrize("kwargs", [{"clip_eps": 0.0}, {"clip_eps": 1.0}, {"ratio": "word"}, {"batch_size": 0},
                                    {"ppo_epochs": 0}, {"learning_rate": 0.0}])
def test_bad_config(kwargs):
    with pytest.raises(ValueError):
        PPOConfig(**kwargs)


def test_objective_shape_errors():
    lp, old, mask, adv = _example()
    with pytest.raises(ValueError):
        ppo_objective(lp, old[:1], adv, mask)
    with pytest.raises(ValueError):
        ppo_objective(lp, old, adv[:1], mask)


def test_collect_trajectories_from_a_search():
    from kbvqa.serts.search import SeRTSConfig, run_serts

    def proposer(prompts):
        return [(f"<query>q{i}</query>", 2) for i in range(len(prompts))]

    def evaluator(prompts):
        return [("<score>4</score>", 1) for _ in prompts]

    (r,) = run_serts(["Q?"], proposer, evaluator, lambda q, k: ["d1"], lambda d: "text", SeRTSConfig(sim=3))
    trajectories = collect_trajectories([r])
    assert len(trajectories) == 3 and all(t.reward == 4.0 and t.action == "<query>q0</query>" for t in trajectories)
    assert trajectories[0].observation is r.nodes[1].proposer_prompt


def _policy(seed=0):
    torch.set_num_threads(1)
    vlm = build_tiny_vlm("qwen2_vl", texts=TEXTS, seed=seed, **SIZES)
    return prepare_ppo_policy(vlm, PPOConfig(learning_rate=3e-3))


GOOD, BAD = "<query> zorp fever marsh </query>", "<query> blick </query>"
PROMPT = "Give one better BM25 query to find abstracts that answer : is zorp safe ?"


def _logp(vlm, action):
    vlm.model.eval()
    return float(vlm.completion_logprobs([PROMPT], [action], add_eos=True).logprobs.sum())


def test_ppo_steps_move_lora_weights_repeatably_and_follow_the_reward():
    cfg = PPOConfig(learning_rate=3e-3, batch_size=2, mini_batch_size=2, ppo_epochs=2, seed=0)
    batch = [Trajectory(PROMPT, GOOD, 5.0), Trajectory(PROMPT, BAD, 2.5)]     # A = +1.25, -1.25
    vlm, opt = _policy()
    assert vlm.num_parameters(trainable_only=True) < vlm.num_parameters() / 5        # only adapters
    before = {n: p.detach().clone() for n, p in vlm.model.named_parameters() if p.requires_grad}
    good0, bad0 = _logp(vlm, GOOD), _logp(vlm, BAD)
    stats = [ppo_step(vlm, opt, batch, cfg) for _ in range(3)]
    assert all(math.isfinite(x) for s in stats for x in s.losses) and len(stats[0].losses) == 2
    assert stats[0].mean_advantage == pytest.approx(0.0)
    moved = [n for n, p in vlm.model.named_parameters() if p.requires_grad and not torch.equal(p, before[n])]
    assert moved and all("lora" in n for n in moved)
    assert _logp(vlm, GOOD) - _logp(vlm, BAD) > good0 - bad0 + 0.5   # shared tokens move both
    vlm3, opt3 = _policy()
    ppo_step(vlm3, opt3, [Trajectory(PROMPT, GOOD, 5.0)], cfg)
    assert _logp(vlm3, GOOD) > good0                                  # same init: seed 0
    vlm2, opt2 = _policy()
    again = [ppo_step(vlm2, opt2, batch, cfg) for _ in range(3)]
    assert [s.losses for s in again] == [s.losses for s in stats]


def test_ppo_step_needs_trajectories():
    vlm, opt = _policy()
    with pytest.raises(ValueError):
        ppo_step(vlm, opt, [])


def test_named_adapters_share_one_base_and_match_deep_copies():
    """SeRTS's proposer and evaluator as two named LoRA adapters on one base (``adapter=``): each
    trains exactly as a LoRA deep copy would, neither moves the other, and the base with every
    adapter off is the original model."""
    import copy

    from kbvqa.models.adapters import AdapterView, adapter_names

    cfg = PPOConfig(learning_rate=3e-3, batch_size=2, mini_batch_size=2, ppo_epochs=2, seed=0)
    torch.set_num_threads(1)
    vlm = build_tiny_vlm("qwen2_vl", texts=TEXTS, seed=0, **SIZES)
    original = copy.deepcopy(vlm)
    copied, copied_opt = prepare_ppo_policy(copy.deepcopy(vlm), cfg)          # the old way: a copy each
    proposer, opt = prepare_ppo_policy(vlm, cfg, adapter="proposer")
    assert isinstance(proposer, AdapterView) and adapter_names(vlm) == ["proposer"]
    batch = [Trajectory(PROMPT, GOOD, 5.0), Trajectory(PROMPT, BAD, 2.5)]
    by_copy = [x for _ in range(2) for x in ppo_step(copied, copied_opt, batch, cfg).losses]
    by_adapter = [x for _ in range(2) for x in ppo_step(proposer, opt, batch, cfg).losses]
    assert by_adapter == pytest.approx(by_copy, abs=1e-6)
    trained = _logp(proposer, GOOD)
    assert trained == pytest.approx(_logp(copied, GOOD), abs=1e-5)
    base = vlm.without_adapters()
    assert _logp(base, GOOD) == pytest.approx(_logp(original, GOOD), abs=1e-5) != pytest.approx(trained, abs=1e-3)

    evaluator, ev_opt = prepare_ppo_policy(vlm, cfg, adapter="evaluator")
    assert adapter_names(vlm) == ["evaluator", "proposer"]
    assert {n for n, p in evaluator.model.named_parameters() if p.requires_grad} == \
        {n for n, p in vlm.model.named_parameters() if "lora_" in n and ".evaluator." in n}
    fresh = _logp(evaluator, BAD)
    assert fresh == pytest.approx(_logp(original, BAD), abs=1e-5)       # a new adapter starts as the base
    ppo_step(evaluator, ev_opt, [Trajectory(PROMPT, BAD, 5.0)], cfg)
    assert _logp(evaluator, BAD) > fresh
    assert _logp(proposer, GOOD) == pytest.approx(trained, abs=1e-6)    # the evaluator's step left it alone
    assert _logp(base, GOOD) == pytest.approx(_logp(original, GOOD), abs=1e-5)
    with pytest.raises(ValueError, match="already has an adapter"):
        prepare_ppo_policy(vlm, cfg, adapter="proposer")
    with pytest.raises(ValueError, match="no adapter called"):
        vlm.adapter("critic")


def test_gradient_checkpointing_leaves_the_ppo_step_unchanged():
    """Issue 56: PPOConfig.gradient_checkpointing (default "auto": on CUDA only) recomputes the
    layers in the backward; the step (LoRA dropout included, its RNG replayed) is the plain one."""
    batch = [Trajectory(PROMPT, GOOD, 5.0), Trajectory(PROMPT, BAD, 2.5)]
    runs = []
    for on in (False, True):
        cfg = PPOConfig(learning_rate=3e-3, batch_size=2, mini_batch_size=2, ppo_epochs=2, seed=0,
                        gradient_checkpointing=on)
        vlm, opt = _policy()
        stats = ppo_step(vlm, opt, batch, cfg)
        runs.append((stats.losses, {n: p.detach().clone() for n, p in vlm.model.named_parameters()
                                    if p.requires_grad}))
    (loss_plain, plain), (loss_ckpt, ckpt) = runs
    assert loss_ckpt == pytest.approx(loss_plain, rel=1e-5)
    assert all(torch.allclose(plain[n], ckpt[n], atol=1e-6) for n in plain)
    assert PPOConfig().gradient_checkpointing == "auto"
    with pytest.raises(ValueError, match="gradient_checkpointing"):
        PPOConfig(gradient_checkpointing="always")
