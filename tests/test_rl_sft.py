"""Cold start (ReAG Sec. 3.3, Eq. 5): trace/answer split, the alpha-weighted loss, the loop, the data.

Checks: where the answer starts for well-formed and broken completions; on ANY string the token
split never raises, puts every trace token before every answer token and (with a lossless tokenizer)
decodes back to the two parts; the answer mask lines up with ``completion_logprobs``; Eq. 5 equals
its hand computation, weighs each answer token by alpha / n_answer and each trace token by
(1 - alpha) / n_trace, and stays finite without trace tokens; ``sft_train`` lowers the loss,
repeats exactly with a seed, keeps the vision encoder frozen and with LoRA trains only adapters;
bad configs raise; cold-start examples are well formed, state relevance and use training queries.
"""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from kbvqa.models import build_tiny_vlm
from kbvqa.parsers import check_think_answer_format, parse_think_answer
from kbvqa.reag import cold_start_examples
from kbvqa.rl import SFTConfig, answer_start, answer_token_mask, sft_batch_loss, sft_loss, sft_train, split_tokens

TEXTS = ["what colour is the zorp ? the zorp is red . is the blick blue ?",
         "<think> </think> <answer> </answer> Yes No red blue the passage is relevant", "red", "blue"]
SIZES = {"hidden_size": 64, "num_layers": 2, "intermediate_size": 128, "vision_width": 32, "vision_depth": 1,
         "tie_embeddings": False}


def tiny(tokenizer_kind: str = "word"):
    torch.set_num_threads(1)
    return build_tiny_vlm("qwen2_vl", texts=TEXTS, seed=0, tokenizer_kind=tokenizer_kind, **SIZES)


@pytest.fixture(scope="module")
def bpe_tokenizer():
    return tiny("bpe").tokenizer


def red():
    return Image.new("RGB", (56, 56), (200, 20, 20))


# --- which token is trace, which is answer --------------------------------------------------------
@pytest.mark.parametrize("text, start", [
    ("<think>t</think><answer>a</answer>", 16),
    ("<think>t</think>\n<answer>a</answer>", 16),
    ("<think>t<answer>a</answer>", 8),          # unclosed trace: the answer tag starts the answer
    ("<think>still thinking", 21),               # only a trace
    ("plain answer", 0),                         # no tags: all answer
    ("", 0),
    ("x</think>y</think>z", 9),                  # the first closing tag counts
])
def test_answer_start(text, start):
    assert answer_start(text) == start


TAGGED = st.lists(st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", " the", " zorp", " red", "red",
                                   " .", "\n", " x", "é", "<", ">", "/", "think", " 3"]), max_size=25).map("".join)


@settings(max_examples=150, deadline=None)
@given(text=st.one_of(TAGGED, st.text(max_size=60)))
def test_split_is_defined_ordered_and_lossless_on_any_string(bpe_tokenizer, text):
    ids, flags = split_tokens(bpe_tokenizer, text)
    assert len(ids) == len(flags)
    assert flags == sorted(flags)                     # all trace tokens come before all answer tokens
    if all(32 <= ord(c) < 127 or c == "\n" for c in text):   # the bpe alphabet: printable ASCII
        trace = [i for i, f in zip(ids, flags) if not f]
        answer = [i for i, f in zip(ids, flags) if f]
        assert bpe_tokenizer.decode(trace) + bpe_tokenizer.decode(answer) == text
        assert bpe_tokenizer.decode(answer) == text[answer_start(text):]


def test_answer_mask_lines_up_with_completion_logprobs():
    vlm = tiny()
    completions = ["<think>the zorp is red</think><answer>red</answer>", "blue", "<think>the zorp"]
    ids, mask = answer_token_mask(vlm.tokenizer, completions, add_eos=True)
    scored = vlm.completion_logprobs([(red(), "what colour ?")] * 3, ids, add_eos=True)
    assert mask.shape == scored.mask.shape and not (mask & ~scored.mask).any()
    lengths = scored.mask.sum(1).tolist()
    assert mask.sum(1).tolist() == [len(vlm.tokenizer("<answer>red</answer>", add_special_tokens=False).input_ids) + 1,
                                    lengths[1], 1]   # answer+EOS | all answer | only the EOS
    assert all(mask[i, lengths[i] - 1] for i in range(3))   # the closing EOS belongs to the answer
    assert answer_token_mask(vlm.tokenizer, [], add_eos=True)[1].shape == (0, 1)


# --- Eq. 5 ------------------------------------------------------------------------------------------
def test_sft_loss_weighs_answer_by_alpha_and_trace_by_one_minus_alpha():
    lp = torch.tensor([[-1.0, -2.0, -3.0, -4.0], [-0.5, -1.5, 0.0, 0.0]], requires_grad=True)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]], dtype=torch.bool)
    answer = torch.tensor([[0, 0, 1, 1], [0, 1, 1, 1]], dtype=torch.bool)   # padding flagged: must not count
    out = sft_loss(lp, mask, answer, alpha=0.8)
    assert (out.answer_tokens, out.trace_tokens) == (3, 3)
    assert out.answer_loss == pytest.approx((3 + 4 + 1.5) / 3) and out.trace_loss == pytest.approx((1 + 2 + 0.5) / 3)
    assert out.loss.item() == pytest.approx(0.8 * 8.5 / 3 + 0.2 * 3.5 / 3)
    out.loss.backward()
    expected = -torch.tensor([[0.2 / 3, 0.2 / 3, 0.8 / 3, 0.8 / 3], [0.2 / 3, 0.8 / 3, 0, 0]])
    assert torch.allclose(lp.grad, expected)
    swapped = sft_loss(lp, mask, answer, alpha=0.2).loss.item()
    assert swapped != pytest.approx(out.loss.item())     # alpha multiplies the answer side, not the trace
    no_trace = sft_loss(lp, mask, mask.clone(), alpha=0.8)
    assert no_trace.trace_tokens == 0 and no_trace.trace_loss == 0 and torch.isfinite(no_trace.loss)
    with pytest.raises(ValueError):
        sft_loss(lp, mask, answer, alpha=1.5)


# --- the loop -----------------------------------------------------------------------------------------
def examples():
    prompt_a, prompt_b = (red(), "what colour is the zorp ?"), (red(), "is the blick blue ?")
    return [(prompt_a, "<think>the zorp is red</think><answer>red</answer>"),
            (prompt_b, "<think>the passage is relevant</think><answer>blue</answer>")]


def test_sft_train_lowers_the_loss_repeats_with_a_seed_and_keeps_vision_frozen():
    config = SFTConfig(steps=12, batch_size=2, lr=5e-3, warmup_steps=2, seed=3, progress=False)
    runs = []
    for _ in range(2):
        vlm = tiny()
        before = {n: p.detach().clone() for n, p in vlm.model.named_parameters()}
        start = sft_batch_loss(vlm, *zip(*examples())).loss.item()
        result = sft_train(vlm, examples(), config)
        end = sft_batch_loss(vlm, *zip(*examples())).loss.item()
        changed = {n for n, p in vlm.model.named_parameters() if not torch.equal(p, before[n])}
        runs.append((result, start, end, changed, vlm))
    (r1, start, end, changed, vlm), (r2, *_rest) = runs
    assert end < 0.5 * start and r1.loss[-1] < r1.loss[0]
    assert r1.loss == r2.loss and r1.answer_loss == r2.answer_loss
    assert len(r1.steps) == 12 and r1.lr[0] == pytest.approx(5e-3 / 2)    # warm-up
    assert any(".visual.merger." in n for n in changed)
    assert not any(".visual." in n and ".merger." not in n for n in changed)
    assert not vlm.model.training


def test_sft_train_with_lora_trains_only_adapters():
    vlm = tiny()
    base = {n: p.detach().clone() for n, p in vlm.model.named_parameters()}
    sft_train(vlm, examples(), SFTConfig(steps=3, batch_size=2, lr=1e-2, lora={"r": 4, "dropout": 0.0},
                                         progress=False))
    assert hasattr(vlm.model, "peft_config")
    trained = [n for n, p in vlm.model.named_parameters() if "lora_B" in n and p.abs().sum() > 0]
    assert trained                                     # lora_B starts at zero: it moved
    for name, p in vlm.model.named_parameters():
        if "lora_" not in name:
            original = name.replace("base_model.model.", "").replace(".base_layer", "")
            assert torch.equal(p, base[original]), name


def test_sft_train_resumed_from_a_checkpoint_ends_as_the_uninterrupted_run():
    """A run cut off after a checkpoint and resumed on a fresh model gives the same weights and curves
    (batches, schedule, AdamW moments and LoRA dropout's RNG all carried)."""
    config = SFTConfig(steps=8, batch_size=1, lr=5e-3, warmup_steps=2, seed=1, progress=False,
                       lora={"r": 4, "dropout": 0.3}, checkpoint_every=3)

    def trained(vlm):
        return {n: p.detach().clone() for n, p in vlm.model.named_parameters() if p.requires_grad}

    states, full = [], tiny()
    whole = sft_train(full, examples() * 2, config, on_checkpoint=states.append)
    assert [s["step"] for s in states] == [3, 6]                 # none after the last step
    for state in states:
        resumed = tiny()
        rest = sft_train(resumed, examples() * 2, config, resume=state)
        assert rest.loss == whole.loss and rest.steps == whole.steps and rest.lr == whole.lr
        ours, ref = trained(resumed), trained(full)
        assert set(ours) == set(ref) and all(torch.allclose(ours[n], ref[n], atol=1e-6) for n in ref)
    with pytest.raises(ValueError, match="trainable weights"):
        sft_train(tiny(), examples(), SFTConfig(steps=8, lora={"r": 2}, progress=False), resume=states[0])
    with pytest.raises(ValueError, match="checkpoint_every"):
        SFTConfig(checkpoint_every=-1)


@pytest.mark.parametrize("kwargs", [{"alpha": -0.1}, {"alpha": 1.2}, {"steps": 0}, {"batch_size": 0},
                                    {"lr": 0.0}, {"schedule": "linear"}, {"warmup_steps": -1}, {"lora": 4}])
def test_bad_sft_config_raises(kwargs):
    with pytest.raises(ValueError):
        config = SFTConfig(**kwargs)
        sft_train(tiny(), examples(), config)   # lora=4 only fails when the loop prepares the model


def test_sft_train_rejects_empty_and_malformed_examples():
    with pytest.raises(ValueError):
        sft_train(tiny(), [], SFTConfig(progress=False))
    with pytest.raises(ValueError):
        sft_train(tiny(), ["just a string"], SFTConfig(progress=False))


# --- cold-start data -------------------------------------------------------------------------------
def test_cold_start_examples_are_well_formed_and_state_relevance():
    from kbvqa.data import get_world

    world = get_world(0)
    got = cold_start_examples(world, 40, seed=1)
    assert [e.completion for e in got] == [e.completion for e in cold_start_examples(world, 40, seed=1)]
    assert [e.completion for e in got] != [e.completion for e in cold_start_examples(world, 40, seed=2)]
    train = {q.id: q for q in world.kbvqa_train}
    relevant = [e for e in got if e.meta["relevant"]]
    assert 10 <= len(relevant) <= 30
    for e in got:
        assert check_think_answer_format(e.completion)
        assert set(e.meta["query_ids"]) <= set(train)
        parsed = parse_think_answer(e.completion)
        if e.meta["relevant"]:
            assert "is relevant" in parsed.think and parsed.answer in ", ".join(e.meta["answers"])
            assert e.meta["passage_ids"] == [train[e.meta["query_ids"][0]].evidence_ids[0]]
        else:
            assert "not relevant" in parsed.think and parsed.answer == "I don't know"
            assert e.meta["negative_kind"] in ("hard", "soft")
    with pytest.raises(ValueError):
        cold_start_examples(world, 3, positive_rate=1.5)


def test_micro_batches_and_gradient_checkpointing_give_the_batch_gradient():
    """Issue 56: micro-batches normalised by the whole batch's token counts, and activations
    recomputed in the backward pass, leave the gradient (and the loss) of the one-pass step."""
    from kbvqa.rl.common import gradient_checkpointing, is_checkpointing
    from kbvqa.rl.sft import sft_backward

    completions = ["<think>the zorp is red</think><answer>red</answer>", "blue", "<think>the zorp",
                   "<think>it lives in a marsh</think><answer>marsh</answer>"]
    prompts = [(red(), "what colour ?")] * 4

    def grads(micro, checkpointing):
        vlm = tiny()
        vlm.model.train()
        with gradient_checkpointing(vlm, checkpointing) as on:
            out = sft_backward(vlm, prompts, completions, 0.8, micro)
        assert on == checkpointing and not is_checkpointing(vlm.core)
        return out, {n: p.grad.clone() for n, p in vlm.model.named_parameters() if p.grad is not None}

    (full, g_full), (micro, g_micro), (ckpt, g_ckpt) = grads(None, False), grads(1, False), grads(3, True)
    for out in (micro, ckpt):
        assert out.loss.item() == pytest.approx(full.loss.item(), rel=1e-5)
        assert (out.answer_tokens, out.trace_tokens) == (full.answer_tokens, full.trace_tokens)
    for g in (g_micro, g_ckpt):
        assert g.keys() == g_full.keys()
        assert all(torch.allclose(g[n], g_full[n], atol=1e-5, rtol=1e-4) for n in g)
    with pytest.raises(ValueError, match="gradient_checkpointing"):
        SFTConfig(gradient_checkpointing="always")
    with pytest.raises(ValueError):
        SFTConfig(micro_batch_size=0)
