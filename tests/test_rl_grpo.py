"""GRPO (ReAG Eq. 6-9): advantages, the clipped token loss, TRL equality, a few steps on a tiny model.

Checks: Eq. 8 against TRL's formula, zero-spread groups give 0 (never NaN); on-policy loss and its
gradient (-A / tokens); clipping stops the gradient; the three normalisations and when they agree;
our loss equals TRL 1.16 ``GRPOTrainer._compute_loss`` (``loss_type="dapo"``, beta = 0) on the same
batch -- once with given log-probs (ratios far from 1, clipping active) and once end to end on a
tiny Qwen2-VL with an image (TRL computes its own log-probs), loss and gradients -- and a perturbed
batch differs; config errors; micro-batches give the gradient of one pass; GRPO steps on a tiny
model change the weights, repeat exactly with a seed, and raise the rewarded answer's probability.
"""
from __future__ import annotations

import copy
import warnings

import pytest
import torch
from PIL import Image

from kbvqa.data.schema import Query
from kbvqa.models import build_tiny_vlm
from kbvqa.reag.rewards import reag_grpo_rewards
from kbvqa.rl import GRPOConfig, Rollouts, SFTConfig, group_advantages, grpo_loss, grpo_train, policy_update, sft_train

TEXTS = ["what colour is the zorp ? the zorp is red . is the blick blue ?",
         "<think> </think> <answer> </answer> Yes No red blue", "red", "blue"]
SIZES = {"hidden_size": 64, "num_layers": 2, "intermediate_size": 128, "vision_width": 32, "vision_depth": 1,
         "tie_embeddings": False}


def tiny():
    torch.set_num_threads(1)
    return build_tiny_vlm("qwen2_vl", texts=TEXTS, seed=0, **SIZES)


def red():
    return Image.new("RGB", (56, 56), (200, 20, 20))


# --- Eq. 8 ----------------------------------------------------------------------------------------
def test_advantages_match_trl_formula_and_zero_spread_is_zero():
    nanstd = pytest.importorskip("trl.trainer.utils").nanstd

    rewards = torch.tensor([1.2, 0.0, 0.2, 1.0, 0.2, 0.2, 0.2, 0.2, 0.0, 1.0, 1.0, 1.0])
    ours = group_advantages(rewards, 4)
    grouped = rewards.view(-1, 4)
    trl = (grouped - grouped.mean(1, keepdim=True)) / (nanstd(grouped, dim=1).unsqueeze(1) + 1e-4)
    assert torch.allclose(ours, trl.reshape(-1), atol=1e-6)
    assert torch.equal(ours[4:8], torch.zeros(4))           # zero spread -> exactly zero
    no_eps = group_advantages(rewards, 4, eps=0.0)
    assert torch.isfinite(no_eps).all() and torch.equal(no_eps[4:8], torch.zeros(4))
    assert torch.allclose(no_eps.view(-1, 4).sum(1), torch.zeros(3), atol=1e-6)   # centred per group
    assert torch.allclose(group_advantages(rewards, 4, std="none"), (grouped - grouped.mean(1, keepdim=True)).reshape(-1))
    assert not torch.allclose(group_advantages(rewards, 4, std="biased"), ours)


@pytest.mark.parametrize("kwargs", [{"group_size": 1}, {"group_size": 0}, {"group_size": True},
                                    {"group_size": 5}, {"group_size": 4, "eps": -1.0},
                                    {"group_size": 4, "std": "mad"}])
def test_advantages_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        group_advantages(torch.arange(8.0), **kwargs)
    with pytest.raises(ValueError):
        group_advantages(torch.tensor([0.0, float("nan")]), 2)


# --- Eq. 6-7 --------------------------------------------------------------------------------------
def batch(seed=0, rows=4, width=6):
    g = torch.Generator().manual_seed(seed)
    lengths = [6, 2, 4, 5][:rows]
    mask = torch.zeros(rows, width, dtype=torch.bool)
    for i, n in enumerate(lengths):
        mask[i, :n] = True
    logprobs = (-torch.rand(rows, width, generator=g) * 3).masked_fill(~mask, 0.0)
    old = (logprobs + 0.5 * torch.randn(rows, width, generator=g)).masked_fill(~mask, 0.0)
    adv = torch.tensor([1.0, -0.5, 0.8, -1.3][:rows])
    return logprobs, old, adv, mask


def test_on_policy_loss_and_gradient_are_minus_advantage_over_tokens():
    logprobs, _, adv, mask = batch()
    lp = logprobs.clone().requires_grad_(True)
    out = grpo_loss(lp, lp.detach(), adv, mask)
    n = mask.sum()
    assert out.loss.item() == pytest.approx(float(-(adv[:, None] * mask).sum() / n), abs=1e-6)
    out.loss.backward()
    assert torch.allclose(lp.grad, -(adv[:, None] * mask) / n, atol=1e-7)
    assert out.clip_fraction == 0 and out.mean_ratio == pytest.approx(1.0)


def test_clipping_stops_the_gradient_where_the_ratio_left_the_trust_region():
    lp = torch.zeros(1, 3, requires_grad=True)
    old = torch.log(torch.tensor([[1 / 1.5, 1 / 1.1, 1 / 0.5]]))   # ratios 1.5, 1.1, 0.5
    grpo_loss(lp, old, torch.tensor([1.0]), torch.ones(1, 3, dtype=torch.bool)).loss.backward()
    assert lp.grad[0, 0] == 0 and lp.grad[0, 1] < 0 and lp.grad[0, 2] < 0   # A > 0: only the top clips
    lp.grad = None
    grpo_loss(lp, old, torch.tensor([-1.0]), torch.ones(1, 3, dtype=torch.bool)).loss.backward()
    assert lp.grad[0, 2] == 0 and lp.grad[0, 0] > 0                         # A < 0: only the bottom
    lp.grad = None
    grpo_loss(lp, old, torch.tensor([1.0]), torch.ones(1, 3, dtype=torch.bool), clip_eps_high=0.6).loss.backward()
    assert lp.grad[0, 0] < 0                                                # clip-higher widens the top


def test_normalisations_agree_only_when_groups_have_equal_token_counts():
    logprobs, old, adv, mask = batch()
    by = {n: grpo_loss(logprobs, old, adv, mask, normalise=n, group_size=2).loss.item()
          for n in ("batch", "group", "sequence")}
    per_token = -torch.min(torch.exp(logprobs - old) * adv[:, None],
                           torch.exp(logprobs - old).clamp(0.8, 1.2) * adv[:, None]) * mask
    groups = per_token.sum(1).view(2, 2).sum(1) / mask.sum(1).view(2, 2).sum(1)
    assert by["group"] == pytest.approx(groups.mean().item(), abs=1e-6)
    assert by["sequence"] == pytest.approx((per_token.sum(1) / mask.sum(1)).mean().item(), abs=1e-6)
    assert abs(by["batch"] - by["group"]) > 1e-3          # groups of 8 and 9 tokens
    equal = mask.clone()
    equal[1, :] = False
    equal[1, :4] = True
    equal[2, :] = False
    equal[2, :5] = True                                   # now 6+4 = 10 and 5+5 = 10 tokens
    assert grpo_loss(logprobs, old, adv, equal, normalise="batch").loss.item() == pytest.approx(
        grpo_loss(logprobs, old, adv, equal, normalise="group", group_size=2).loss.item(), abs=1e-6)
    with pytest.raises(ValueError):
        grpo_loss(logprobs, old, adv, mask, normalise="group", group_size=3)
    with pytest.raises(ValueError):
        grpo_loss(logprobs, old, adv, mask, normalise="tokens")


# --- TRL 1.16 GRPOTrainer._compute_loss, loss_type="dapo", beta = 0 -------------------------------
@pytest.fixture(scope="module")
def trl_trainer(tmp_path_factory):
    pytest.importorskip("trl")
    datasets = pytest.importorskip("datasets")
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer

    vlm = tiny()
    warnings.filterwarnings("ignore", "`gradient_checkpointing` is deprecated", FutureWarning)  # TRL's own default
    args = TRLConfig(output_dir=str(tmp_path_factory.mktemp("trl")), loss_type="dapo", beta=0.0, epsilon=0.2,
                     num_generations=2, per_device_train_batch_size=2, max_completion_length=8, use_cpu=True,
                     bf16=False, gradient_checkpointing=False, report_to="none", save_strategy="no")
    trainer = GRPOTrainer(model=vlm.model, reward_funcs=[lambda completions, **kw: [0.0] * len(completions)],
                          args=args, train_dataset=datasets.Dataset.from_dict({"prompt": ["what colour ?"] * 2}),
                          processing_class=vlm.processor)
    trainer.current_gradient_accumulation_steps = 1   # set by the training loop; 1 = no accumulation
    vlm.model.train()   # TRL's normaliser reads model.training; dropout is 0 in the tiny model
    return trainer, vlm


def trl_loss_on(trainer, logprobs, old, adv, mask, loss_type="dapo"):
    """TRL's loss on given per-token log-probs (its model forward replaced by them)."""
    rows, width = logprobs.shape
    original, trainer.loss_type = trainer.loss_type, loss_type
    trainer._get_per_token_logps_and_entropies = lambda *a, **k: (logprobs, torch.zeros_like(logprobs), None)
    try:
        inputs = {"prompt_ids": torch.ones(rows, 2, dtype=torch.long), "prompt_mask": torch.ones(rows, 2),
                  "completion_ids": torch.ones(rows, width, dtype=torch.long), "completion_mask": mask.long(),
                  "advantages": adv, "old_per_token_logps": old, "num_items_in_batch": mask.sum()}
        return trainer._compute_loss(trainer.model, inputs)
    finally:
        trainer.loss_type = original
        del trainer._get_per_token_logps_and_entropies


def test_loss_equals_trl_dapo_on_given_logprobs(trl_trainer):
    trainer, _ = trl_trainer
    logprobs, old, adv, mask = batch()
    lp_ours, lp_trl = logprobs.clone().requires_grad_(True), logprobs.clone().requires_grad_(True)
    ours = grpo_loss(lp_ours, old, adv, mask, clip_eps=0.2)
    theirs = trl_loss_on(trainer, lp_trl, old, adv, mask)
    assert ours.clip_fraction > 0.2                      # the clip is really exercised
    assert abs(ours.loss.item() - theirs.item()) < 1e-5
    ours.loss.backward()
    theirs.backward()
    assert torch.allclose(lp_ours.grad, lp_trl.grad, atol=1e-6)
    sequence = grpo_loss(logprobs, old, adv, mask, normalise="sequence").loss.item()
    assert abs(sequence - trl_loss_on(trainer, logprobs, old, adv, mask, "grpo").item()) < 1e-5
    perturbed = old.clone()
    perturbed[0, 0] += 0.5                                # the same check must fail on another batch
    assert abs(ours.loss.item() - trl_loss_on(trainer, logprobs, perturbed, adv, mask).item()) > 1e-3
    assert abs(ours.loss.item() - trl_loss_on(trainer, logprobs, old, adv.flip(0), mask).item()) > 1e-3


def test_loss_and_gradients_equal_trl_end_to_end_on_a_tiny_vlm(trl_trainer):
    from kbvqa.models.scoring import join_completions

    trainer, vlm = trl_trainer
    prompts = [(red(), "what colour is the zorp ?")] * 2 + [(red(), "is the blick blue ?")] * 2
    completions = ["<think> the zorp is red </think> <answer> red </answer>", "red", "Yes", "<think> No"]
    adv = group_advantages(torch.tensor([1.2, 0.0, 1.0, 0.2]), 2)
    inputs, comp, mask, prompt_len = join_completions(vlm, prompts, completions, add_eos=True)
    with torch.no_grad():   # an "old" policy that differs from the current one, so ratios != 1
        old = vlm.completion_logprobs(prompts, completions, add_eos=True).logprobs
        old = old + 0.3 * torch.randn(old.shape, generator=torch.Generator().manual_seed(1)) * mask

    def trl_inputs(old_logprobs):
        return {"prompt_ids": inputs["input_ids"][:, :prompt_len], "prompt_mask": inputs["attention_mask"][:, :prompt_len],
                "completion_ids": comp, "completion_mask": mask.long(), "advantages": adv,
                "old_per_token_logps": old_logprobs, "num_items_in_batch": mask.sum(), "num_images": [1] * 4,
                "pixel_values": inputs["pixel_values"], "image_grid_thw": inputs["image_grid_thw"],
                "mm_token_type_ids": inputs["mm_token_type_ids"]}

    params = [p for p in vlm.model.parameters() if p.requires_grad]
    vlm.model.zero_grad()
    theirs = trainer._compute_loss(vlm.model, trl_inputs(old))
    theirs.backward()
    grads_trl = [p.grad.clone() for p in params]
    vlm.model.zero_grad()
    scored = vlm.completion_logprobs(prompts, completions, grad=True, add_eos=True)
    ours = grpo_loss(scored.logprobs, old, adv, scored.mask)
    ours.loss.backward()
    assert 0 < ours.clip_fraction < 1
    assert abs(ours.loss.item() - theirs.item()) < 1e-5
    worst = max(float((p.grad - g).abs().max()) for p, g in zip(params, grads_trl))
    assert worst < 1e-5
    with torch.no_grad():
        shifted = trainer._compute_loss(vlm.model, trl_inputs(old + 0.2 * mask))
    assert abs(ours.loss.item() - shifted.item()) > 1e-3


# --- config, micro-batches, steps on a tiny model -------------------------------------------------
@pytest.mark.parametrize("kwargs", [{"group_size": 1}, {"group_size": 0}, {"group_size": 2.0},
                                    {"clip_eps": -0.1}, {"clip_eps": 1.0}, {"clip_eps_high": -0.2},
                                    {"normalise": "token"}, {"temperature": 0.0}, {"lr": 0.0},
                                    {"steps": 0}, {"normalise": "group", "micro_batch_size": 2},
                                    {"advantage_std": "iqr"}, {"warmup_steps": -1}, {"num_iterations": 0}])
def test_config_rejects_bad_values(kwargs):
    with pytest.raises(ValueError):
        GRPOConfig(**kwargs)


def query(answer: str) -> Query:
    return Query(id=f"q-{answer}", question="what colour ?", answers=[answer])


def hand_rollouts(vlm, config):
    prompts = [(red(), "what colour is the zorp ?")] * 2 + [(red(), "is the blick blue ?")] * 2
    texts = ["<think> red </think><answer>red</answer>", "blue", "Yes", "No blue red"]
    ids = [vlm.tokenizer(t, add_special_tokens=False).input_ids + [vlm.tokenizer.eos_token_id] for t in texts]
    rewards = torch.tensor([1.2, 0.0, 1.0, 0.0])
    return Rollouts(prompts, [query("red")] * 2 + [query("yes")] * 2, texts, ids,
                    {"accuracy_reward": rewards.round(), "format_reward": torch.zeros(4)}, rewards,
                    group_advantages(rewards, config.group_size))


@pytest.mark.parametrize("normalise", ["batch", "sequence"])
def test_micro_batches_give_the_gradient_of_one_pass(normalise):
    grads = []
    for micro in (None, 1):
        vlm = tiny()
        config = GRPOConfig(group_size=2, micro_batch_size=micro, normalise=normalise, max_grad_norm=0.0)
        params = [p for p in vlm.model.parameters() if p.requires_grad]
        opt = torch.optim.SGD(params, lr=0.0)   # keep the gradient, leave the weights
        policy_update(vlm, opt, hand_rollouts(vlm, config), config, params)
        grads.append(torch.cat([p.grad.reshape(-1) for p in params]))
    assert grads[0].abs().sum() > 0
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


@pytest.fixture(scope="module")
def warm_vlm():
    """A tiny model taught by a few SFT steps to answer "red" or "blue" (so groups have spread)."""
    vlm = tiny()
    prompt = (red(), "what colour is the zorp ?")
    sft_train(vlm, [(prompt, "red"), (prompt, "blue")] * 4,
              SFTConfig(steps=25, batch_size=8, lr=1e-2, warmup_steps=0, seed=0, progress=False))
    return vlm, prompt


def red_logprob(vlm, prompt) -> float:
    with torch.no_grad():
        return float(vlm.completion_logprobs([prompt], ["red"], add_eos=True).logprobs.sum())


def test_grpo_steps_change_the_weights_repeat_with_a_seed_and_raise_the_rewarded_answer(warm_vlm):
    base, prompt = warm_vlm
    config = GRPOConfig(group_size=8, prompts_per_step=2, steps=3, lr=3e-3, max_new_tokens=4, seed=0,
                        progress=False)
    runs = []
    for _ in range(2):
        vlm = copy.deepcopy(base)
        before = {n: p.detach().clone() for n, p in vlm.model.named_parameters()}
        curves = grpo_train(vlm, [prompt, prompt], [query("red"), query("red")], config, **reag_grpo_rewards())
        changed = [n for n, p in vlm.model.named_parameters() if not torch.equal(p, before[n])]
        runs.append((curves, vlm, changed))
    (c1, v1, changed), (c2, v2, _) = runs
    assert len(c1.accuracy_reward) == 3 and c1.accuracy_reward == c2.accuracy_reward and c1.loss == c2.loss
    assert 0 < sum(c1.accuracy_reward) < 3                # groups had spread: a learning signal
    assert c1.format_reward == [0.0, 0.0, 0.0]
    assert changed and not any(".visual." in n and ".merger." not in n for n in changed)   # vision frozen
    assert all(torch.equal(p, q) for p, q in zip(v1.model.parameters(), v2.model.parameters()))
    assert red_logprob(v1, prompt) > red_logprob(base, prompt)


def test_grpo_train_resumed_from_a_checkpoint_ends_as_the_uninterrupted_run(warm_vlm):
    """A GRPO run cut off after a checkpoint and resumed on a fresh copy of the model gives the same
    curves and weights (prompt order, per-step samples, Adam's moments and the schedule carried)."""
    base, prompt = warm_vlm
    config = GRPOConfig(group_size=4, prompts_per_step=1, steps=5, lr=3e-3, max_new_tokens=4, seed=2,
                        warmup_steps=1, schedule="cosine", progress=False, checkpoint_every=2)
    prompts, tasks = [prompt, (red(), "is the blick blue ?")], [query("red"), query("yes")]
    states, full = [], copy.deepcopy(base)
    whole = grpo_train(full, prompts, tasks, config, **reag_grpo_rewards(), on_checkpoint=states.append)
    assert [s["step"] for s in states] == [2, 4]                 # none after the last step
    for state in states:
        resumed = copy.deepcopy(base)
        rest = grpo_train(resumed, prompts, tasks, config, **reag_grpo_rewards(), resume=state)
        assert rest.curves == whole.curves and len(rest.loss) == 5
        assert all(torch.allclose(p, q, atol=1e-6) for p, q in zip(resumed.model.parameters(), full.model.parameters()))
    with pytest.raises(ValueError, match="trainable weights"):
        grpo_train(copy.deepcopy(base), prompts, tasks, GRPOConfig(steps=5, lora={"r": 2}, progress=False),
                   **reag_grpo_rewards(), resume=states[0])
    with pytest.raises(ValueError, match="checkpoint_every"):
        GRPOConfig(checkpoint_every=-2)


def test_losses_move_advantages_and_masks_to_the_logprobs_device(monkeypatch):
    """Advantages and masks built on the CPU meet log-probabilities from a GPU model (issue: mixed
    devices raised in chapters 18, 22, 23). The meta device stands in for the GPU here: arithmetic
    between a meta and a CPU tensor raises, exactly as CUDA and CPU do."""
    import importlib

    from kbvqa.rl.ppo import ppo_objective

    gl = importlib.import_module("kbvqa.rl.grpo_loss")     # the module (kbvqa.rl.grpo_loss is also the function)

    on_gpu = torch.zeros(2, 3, device="meta")
    with pytest.raises(RuntimeError):
        on_gpu * torch.ones(2, 1)
    loss, ratio = gl.clipped_token_loss(on_gpu, torch.zeros(2, 3), torch.ones(2))
    assert loss.device.type == ratio.device.type == "meta"
    objective, _ = ppo_objective(on_gpu, torch.zeros(2, 3), torch.ones(2), torch.ones(2, 3))
    assert objective.device.type == "meta"
    seen = []
    real = gl.to_device_of
    monkeypatch.setattr(gl, "to_device_of", lambda ref, *ts: seen.append((ref, ts)) or real(ref, *ts))
    lp, adv, mask = torch.zeros(2, 3), torch.ones(2), torch.ones(2, 3)
    gl.grpo_loss(lp, torch.zeros(2, 3), adv, mask)
    assert seen[0][0] is lp and any(t is adv for t in seen[0][1]) and any(t is mask for t in seen[0][1])


def test_models_of_a_billion_parameters_train_lora_not_all_weights():
    """The gpu profile's 2-3B critic and judge must not train in full on one 16 GB GPU."""
    from kbvqa.rl.common import DEFAULT_LORA, prepare_trainable

    class FakeVLM:
        def __init__(self):
            self.model, self.added = torch.nn.Linear(8, 8), []

        def add_lora(self, **kwargs):
            self.added.append(kwargs)
            for p in self.model.parameters():
                p.requires_grad_(False)
            self.model.lora = torch.nn.Linear(8, 1)        # stands in for the adapters
            self.model.peft_config = {}

    small = FakeVLM()
    assert len(prepare_trainable(small, None, freeze_vision=False)) == 2 and not small.added
    big = FakeVLM()
    with pytest.warns(UserWarning, match="LoRA"):
        params = prepare_trainable(big, None, freeze_vision=False, full_finetune_limit=50)   # 72 >= 50
    assert big.added == [DEFAULT_LORA] and [p.shape for p in params] == [(1, 8), (1,)]
    chosen = FakeVLM()
    prepare_trainable(chosen, {"r": 4, "alpha": 8}, freeze_vision=False, full_finetune_limit=50)
    assert chosen.added == [{"r": 4, "alpha": 8}]
    # the default limit: the tiny model (1.45M) trains all its weights, the reader (SmolLM2-135M and
    # its tower) and every hub checkpoint train LoRA adapters
    from kbvqa.rl.common import FULL_FINETUNE_LIMIT
    assert 1_450_000 < FULL_FINETUNE_LIMIT <= 135_000_000


def test_the_lora_notice_is_ignored_unless_asked_for():
    """Chapters 21-24 and 27 printed the LoRA notice in stderr on every training run and every load
    of a committed model: LoRA above FULL_FINETUNE_LIMIT is the design, so its category is ignored by
    default (a fresh interpreter: pytest's own warning capture would show it) and shown on request."""
    import subprocess
    import sys

    script = """
import warnings, torch
from kbvqa.rl.common import LoRAInsteadOfFullWeights, prepare_trainable

class Big:
    def __init__(self):
        self.model = torch.nn.Linear(8, 8)
    def add_lora(self, **kwargs):
        self.model.peft_config = {}

prepare_trainable(Big(), None, freeze_vision=False, full_finetune_limit=50)
print("quiet")
warnings.warn("another UserWarning still shows")
warnings.simplefilter("default", LoRAInsteadOfFullWeights)
prepare_trainable(Big(), None, freeze_vision=False, full_finetune_limit=50)
"""
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "quiet"
    shown = [line for line in run.stderr.splitlines() if "Warning:" in line or "Weights:" in line]
    assert len(shown) == 2, run.stderr
    assert "another UserWarning still shows" in shown[0]
    assert "LoRAInsteadOfFullWeights: 0.0B parameters: training LoRA adapters" in shown[1]


def test_checkpointing_recomputes_in_eval_mode_and_keeps_the_gradient():
    """Issue 56: grpo_step updates in eval mode (dropout off); gradient checkpointing still recomputes
    each decoder layer in the backward (its MLP runs twice), dropout stays off, the gradient is the
    plain one, and the model leaves in eval mode."""
    from transformers.modeling_layers import GradientCheckpointingLayer

    from kbvqa.rl.common import gradient_checkpointing

    grads, calls = [], []
    for on in (False, True):
        vlm = tiny()
        vlm.model.eval()
        layer = next(m for m in vlm.core.modules() if isinstance(m, GradientCheckpointingLayer)
                     and "Decoder" in type(m).__name__)
        count, mlp_forward = [], layer.mlp.forward

        def counted(*args, mlp_forward=mlp_forward, count=count, **kwargs):   # hooks do not see a recompute
            count.append(1)
            return mlp_forward(*args, **kwargs)

        layer.mlp.forward = counted
        config = GRPOConfig(group_size=2, max_grad_norm=0.0, gradient_checkpointing=on)
        params = [p for p in vlm.model.parameters() if p.requires_grad]
        with gradient_checkpointing(vlm, config.gradient_checkpointing) as active:
            assert active == on
            assert not any(m.training for m in vlm.core.modules() if not isinstance(m, GradientCheckpointingLayer))
            policy_update(vlm, torch.optim.SGD(params, lr=0.0), hand_rollouts(vlm, config), config, params)
        assert not any(m.training for m in vlm.model.modules())
        grads.append(torch.cat([p.grad.reshape(-1) for p in params]))
        calls.append(len(count))
    assert calls[1] == 2 * calls[0] > 0, calls
    assert torch.allclose(grads[0], grads[1], atol=1e-6)


def test_auto_micro_batches_only_on_cuda(monkeypatch):
    """micro_batch_size="auto" (the default): the whole batch on the CPU (the committed runs), the
    trainer's AUTO_MICRO_BATCH size on a CUDA model; normalise="group" keeps whole groups."""
    import kbvqa.rl.common as common

    vlm = tiny()
    assert GRPOConfig().micro_batch_size == "auto"
    assert common.resolve_micro_batch("auto", vlm, "grpo") is None
    assert common.resolve_micro_batch(3, vlm, "grpo") == 3
    monkeypatch.setattr(common, "on_cuda", lambda _: True)
    assert common.resolve_micro_batch("auto", vlm, "grpo") == common.AUTO_MICRO_BATCH["grpo"]
    assert common.resolve_micro_batch(None, vlm, "sft") is None
    GRPOConfig(normalise="group")                     # "auto" resolves to whole groups
    for bad in ("always", 0, 1.5):
        with pytest.raises(ValueError):
            GRPOConfig(micro_batch_size=bad)
