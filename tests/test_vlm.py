"""The VLM interface on tiny random models of every family, reloaded through ``from_pretrained``.

Checks: generation shapes and counts, n samples, greedy determinism, seeded sampling, stop strings,
P(Yes) against a manual softmax, completion log-probs against a manual gather, left padding equal
to one-by-one, one vision-tower call for n samples, sampling defaults not inherited from a
checkpoint's generation config.
"""
from __future__ import annotations

import pytest
import torch
from PIL import Image

from kbvqa.models import FAMILIES, VLM, build_tiny_vlm, make_chat

TEXTS = ["what colour is the zorp ? the zorp is red .", "the blick lives in a marsh . the mass is 3.5 kg .",
         "is the passage relevant ? Yes No <think> </think> <answer> </answer>"]
SIZES = {"hidden_size": 64, "num_layers": 2, "intermediate_size": 128, "vision_width": 32, "vision_depth": 1,
             "tie_embeddings": False}  # untied: a random tied model greedily repeats its last token


@pytest.fixture(scope="module", params=FAMILIES)
def vlm(request, tmp_path_factory) -> VLM:
    torch.set_num_threads(1)
    built = build_tiny_vlm(request.param, texts=TEXTS, seed=0, **SIZES)
    directory = tmp_path_factory.mktemp(request.param)
    built.save_pretrained(directory)
    return VLM.from_pretrained(directory, device="cpu")


def red():
    return Image.new("RGB", (56, 56), (200, 20, 20))


def tall():
    return Image.new("RGB", (60, 90), (20, 200, 20))


def prompts():
    return [(red(), "what colour is the zorp ?"), (tall(), "where does the blick live ? the blick lives in a marsh ."),
            make_chat("is the mass 3.5 kg ?", image=red(), system="the zorp is red .")]


def test_generate_shapes_and_counts(vlm):
    out = vlm.generate(prompts(), n=3, max_new_tokens=5, seed=0, details=True)
    assert len(out.texts) == 3 and all(len(row) == 3 for row in out.texts)
    assert all(isinstance(t, str) for row in out.texts for t in row)
    for ids_row, counts, done in zip(out.token_ids, out.num_tokens, out.finished):
        assert counts == [len(ids) for ids in ids_row]
        assert all(1 <= c <= 5 for c in counts)
        assert all(f or c == 5 for f, c in zip(done, counts))  # unfinished means max_new_tokens
    assert vlm.generate([(red(), "hi")], max_new_tokens=2) != []


def test_greedy_is_deterministic_and_repeated_n_times(vlm):
    a = vlm.generate(prompts(), n=3, temperature=0, max_new_tokens=6)
    b = vlm.generate(prompts(), n=1, temperature=0, max_new_tokens=6)
    assert all(len(set(row)) == 1 for row in a)
    assert [row[0] for row in a] == [row[0] for row in b]


def test_seeded_sampling_repeats_and_leaves_global_rng_alone(vlm):
    torch.manual_seed(123)
    expected = torch.rand(3)
    torch.manual_seed(123)
    a = vlm.generate(prompts(), n=4, max_new_tokens=6, seed=7)
    assert torch.equal(torch.rand(3), expected)
    assert vlm.generate(prompts(), n=4, max_new_tokens=6, seed=7) == a
    assert vlm.generate(prompts(), n=4, max_new_tokens=6, seed=8) != a
    assert len({s for row in a for s in row}) > 1  # samples differ from each other


def test_checkpoint_sampling_defaults_are_not_inherited(vlm):
    # Qwen2-VL-Instruct ships top_k=1, top_p=0.001: inherited, they would make sampling greedy.
    config = vlm.core.generation_config
    saved = (config.do_sample, config.top_k, config.top_p, config.temperature)
    config.do_sample, config.top_k, config.top_p, config.temperature = True, 1, 0.001, 0.01
    try:
        out = vlm.generate([(red(), "what colour is the zorp ?")], n=8, max_new_tokens=6, seed=0)
    finally:
        config.do_sample, config.top_k, config.top_p, config.temperature = saved
    assert len(set(out[0])) > 1


def test_stop_string_cuts_text_and_counts(vlm):
    prompt = [(red(), "what colour is the zorp ?")]
    full = vlm.generate(prompt, temperature=0, max_new_tokens=16, details=True)
    ids = full.token_ids[0][0]
    def decode(x):
        return vlm.tokenizer.decode(x, skip_special_tokens=True)
    cut = next(k for k in range(1, len(ids)) if decode(ids[k:k + 1]).strip()
               and decode(ids[k:k + 1]) not in decode(ids[:k]))
    stop = decode(ids[cut:cut + 1])
    out = vlm.generate(prompt, temperature=0, max_new_tokens=16, stop=[stop], details=True)
    assert out.texts[0][0] == decode(ids[:cut])
    assert out.num_tokens[0][0] == cut + 1 and out.finished[0][0]
    kept = vlm.generate(prompt, temperature=0, max_new_tokens=16, stop=stop, include_stop=True)
    assert kept[0][0] == decode(ids[:cut]) + stop


def test_p_yes_is_a_softmax_over_the_two_answer_logits(vlm):
    batch = prompts()
    p = vlm.p_yes(batch)
    assert p.shape == (3,) and bool(((p >= 0) & (p <= 1)).all())
    yes, no = vlm.answer_token_id("Yes"), vlm.answer_token_id("No")
    expected_yes = "Yes" if vlm.family.startswith("qwen") else " Yes"  # Idefics3: "Assistant: Yes"
    assert vlm.tokenizer.convert_ids_to_tokens(yes) == expected_yes
    with torch.no_grad():  # one full forward pass, read by hand
        logits = vlm.model(**vlm.forward_inputs(vlm.encode(batch))).logits[:, -1].float()
    manual = torch.exp(logits[:, yes]) / (torch.exp(logits[:, yes]) + torch.exp(logits[:, no]))
    assert torch.allclose(p, manual, atol=1e-6)
    vocab = vlm.p_yes(batch, normalise="vocab")
    assert torch.allclose(vocab, torch.softmax(logits, -1)[:, yes], atol=1e-6)
    assert bool((vocab <= p + 1e-7).all())
    with pytest.raises(ValueError):
        vlm.p_yes(batch, normalise="softmax")
    assert vlm.p_yes([]).shape == (0,) and vlm.generate([]) == []


def test_completion_logprobs_equal_a_manual_gather(vlm):
    batch = prompts()
    completions = ["red", "in a marsh .", [vlm.tokenizer.eos_token_id]]
    out = vlm.completion_logprobs(batch, completions)
    lengths = [len(vlm.tokenizer("red", add_special_tokens=False).input_ids),
               len(vlm.tokenizer("in a marsh .", add_special_tokens=False).input_ids), 1]
    assert out.mask.sum(1).tolist() == lengths
    assert out.logprobs.shape == out.mask.shape == (3, max(lengths))
    assert out.input_ids.shape[1] == out.prompt_length + max(lengths)
    assert not out.logprobs.requires_grad
    assert torch.equal(out.logprobs[~out.mask], torch.zeros_like(out.logprobs[~out.mask]))
    inputs = vlm.encode(batch)
    full = dict(inputs, input_ids=out.input_ids, attention_mask=out.attention_mask)
    if "mm_token_type_ids" in inputs:
        full["mm_token_type_ids"] = torch.cat(
            [inputs["mm_token_type_ids"], torch.zeros_like(out.completion_ids)], 1)
    with torch.no_grad():
        logits = vlm.model(**vlm.forward_inputs(full)).logits.float()
    logp = torch.log_softmax(logits, -1)
    for row, n in enumerate(lengths):
        for t in range(n):
            position = out.prompt_length + t
            target = out.input_ids[row, position]
            assert target == out.completion_ids[row, t]
            assert abs(logp[row, position - 1, target].item() - out.logprobs[row, t].item()) < 1e-5


def test_left_padding_matches_one_by_one(vlm):
    batch = prompts() + ["a text-only prompt about the blick ?"]
    completions = ["red", "marsh", "Yes", "the blick"]
    p_batch = vlm.p_yes(batch)
    p_single = torch.cat([vlm.p_yes([p]) for p in batch])
    assert torch.allclose(p_batch, p_single, atol=1e-4)
    lp_batch = vlm.completion_logprobs(batch, completions)
    for row, (p, c) in enumerate(zip(batch, completions)):
        single = vlm.completion_logprobs([p], [c])
        width = single.logprobs.shape[1]
        assert torch.allclose(lp_batch.logprobs[row, :width], single.logprobs[0], atol=1e-4)
    greedy_batch = vlm.generate(batch, temperature=0, max_new_tokens=6)
    assert greedy_batch == [vlm.generate([p], temperature=0, max_new_tokens=6)[0] for p in batch]


def test_vision_tower_runs_once_for_n_samples(vlm):
    calls = []

    def count(module, args, kwargs, output):  # records how many patches / images went in
        pixels = args[0] if args else kwargs.get("hidden_states", kwargs.get("pixel_values"))
        calls.append(pixels.shape[0])

    hook = vlm.vision_tower.register_forward_hook(count, with_kwargs=True)
    try:
        single = vlm.generate([(red(), "what colour is the zorp ?")], n=1, max_new_tokens=4, seed=0)
        once = len(calls), list(calls)
        calls.clear()
        vlm.generate([(red(), "what colour is the zorp ?")], n=8, max_new_tokens=4, seed=0)
    finally:
        hook.remove()
    assert single and once[0] == 1
    assert len(calls) == 1 and calls == once[1]  # same input size: one image's patches, not eight


def test_gradient_path(vlm):
    out = vlm.completion_logprobs([(red(), "what colour ?")], ["red ."], grad=True)
    assert out.logprobs.requires_grad
    out.logprobs.sum().backward()
    grads = [p.grad for p in vlm.model.parameters() if p.grad is not None]
    assert grads and any(float(g.abs().sum()) > 0 for g in grads)
    vlm.model.zero_grad(set_to_none=True)


def test_bad_arguments_raise_value_error(vlm):
    for kwargs in ({"n": 0}, {"temperature": -1.0}, {"top_p": 0.0}, {"max_new_tokens": 0},
                   {"stop": [""]}, {"seed": -1}, {"top_k": -1}):
        with pytest.raises(ValueError):
            vlm.generate([(red(), "hi")], **kwargs)
    with pytest.raises(ValueError):
        vlm.generate((red(), "hi"))  # a single prompt, not a list
    with pytest.raises(ValueError):
        vlm.completion_logprobs([(red(), "hi")], ["a", "b"])
    with pytest.raises(ValueError):
        vlm.answer_token_id("qwertyuiopasdf")  # not a word of the tiny vocabulary


def test_training_batch_loss_matches_completion_logprobs(vlm):
    batch_prompts, completions = prompts(), ["red", "in a marsh .", "Yes"]
    answer_only = vlm.training_batch(batch_prompts, completions)
    with torch.no_grad():
        loss = vlm.model(**answer_only).loss
    scored = vlm.completion_logprobs(batch_prompts, completions, add_eos=True)
    assert torch.allclose(loss, -scored.logprobs.sum() / scored.mask.sum(), atol=1e-5)
    everything = vlm.training_batch(batch_prompts, completions, loss_on="all")
    labelled = everything["labels"] != -100
    assert int(labelled.sum()) > int((answer_only["labels"] != -100).sum())
    image_id = vlm.core.config.image_token_id
    assert not bool(((everything["input_ids"] == image_id) & labelled).any())
    assert not bool(((everything["attention_mask"] == 0) & labelled).any())
    with pytest.raises(ValueError):
        vlm.training_batch(batch_prompts, completions, loss_on="prompt")


def critic_like(image, question, passages):
    """ReAG-critic-shaped prompts: same system, picture and question; only the passage differs."""
    return [make_chat(f"{question} passage : {p} is the passage relevant ?", image=image, system="answer Yes or No")
            for p in passages]


def test_shared_prefix_logits_equal_the_plain_forward(vlm):
    from kbvqa.models.prefix import prefix_groups, supports_prefix_reuse

    passages = ["the zorp is red .", "the blick lives in a marsh .", "the mass is 3.5 kg .", "red", "what ? Yes"]
    batch = critic_like(red(), "what colour is the zorp ?", passages) + \
        critic_like(tall(), "where does the blick live ?", passages[:2]) + ["a text-only prompt about the blick ?"]
    plain = vlm.next_token_logits(batch, batch_size=3)
    shared = vlm.next_token_logits(batch, batch_size=3, share_prefix=True)        # chunks split a group, too
    assert torch.allclose(shared, plain, atol=1e-4)
    assert torch.allclose(vlm.p_yes(batch, share_prefix=True), vlm.p_yes(batch), atol=1e-5)
    if not supports_prefix_reuse(vlm):
        return                                                                   # M-RoPE: the plain path ran
    items = [vlm.encode([c]) for c in batch]
    from kbvqa.models.prefix import _image_token_ids

    groups = prefix_groups(items, _image_token_ids(vlm))
    assert [len(m) for _, m in groups] == [5, 2, 1]                              # one prefill per picture
    first, members = groups[0]
    image = max(k for k, t in enumerate(items[0]["input_ids"][0].tolist()) if t in _image_token_ids(vlm))
    assert image < first < min(items[i]["input_ids"].shape[1] for i in members)  # pictures inside, a suffix after


def test_shared_prefix_prefills_the_picture_once(vlm):
    from kbvqa.models.prefix import supports_prefix_reuse

    if not supports_prefix_reuse(vlm):
        with pytest.raises(ValueError, match="M-RoPE"):
            __import__("kbvqa.models.prefix", fromlist=["x"]).shared_prefix_logits(vlm, ["x"])
        return
    calls = []
    handle = vlm.vision_tower.register_forward_hook(lambda *_: calls.append(1))
    try:
        vlm.next_token_logits(critic_like(red(), "what colour is the zorp ?", ["a", "b", "c", "d"]), share_prefix=True)
    finally:
        handle.remove()
    assert len(calls) == 1
    with pytest.raises(ValueError, match="batch_size"):
        vlm.next_token_logits(["x"], batch_size=0, share_prefix=True)


def test_shared_prefix_generation_is_the_plain_greedy_generation(vlm):
    """Prompts shaped as RCTS's mutual reward: a common opening (system, a solved example with its
    picture, the response), then each reference's own question and picture."""
    def mutual(ref_image, ref_question):
        return [{"role": "system", "content": [{"type": "text", "text": "answer with a colour"}]},
                {"role": "user", "content": [{"type": "image", "image": red()},
                                             {"type": "text", "text": "what colour is the zorp ?"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "the zorp is red ."}]},
                {"role": "user", "content": [{"type": "image", "image": ref_image},
                                             {"type": "text", "text": ref_question}]}]

    batch = [mutual(tall(), "where does the blick live ?"), mutual(red(), "is the mass 3.5 kg ?"),
             mutual(tall(), "what colour ?"), "a text-only prompt about the blick ?",
             critic_like(red(), "what colour is the zorp ?", ["red"])[0]]
    plain = vlm.generate(batch, temperature=0, max_new_tokens=6, batch_size=2)
    shared = vlm.generate(batch, temperature=0, max_new_tokens=6, batch_size=2, share_prefix=True)
    assert shared == plain
    stops = vlm.generate(batch, temperature=0, max_new_tokens=6, stop=["."], share_prefix=True)
    assert stops == vlm.generate(batch, temperature=0, max_new_tokens=6, stop=["."])
    sampled = vlm.generate(batch[:3], n=3, temperature=1.0, max_new_tokens=4, seed=0, share_prefix=True,
                           details=True)
    assert [len(t) for t in sampled.texts] == [3, 3, 3]
    assert sampled.texts == vlm.generate(batch[:3], n=3, temperature=1.0, max_new_tokens=4, seed=0,
                                         share_prefix=True, details=True).texts      # seeded: repeatable


def test_fp16_runs_on_the_cpu_and_non_finite_logits_raise_naming_the_fix(vlm):
    """Issue 56: the same code path in float16 (a CPU test of what a T4 runs), and a model whose
    logits overflow raises ``NonFiniteLogitsError`` in generation and scoring instead of returning
    garbage."""
    import copy

    from kbvqa.models.finite import NonFiniteLogitsError, check_finite

    half = copy.copy(vlm)
    half.model = copy.deepcopy(vlm.model).to(torch.float16)
    texts = half.generate(prompts()[:1], max_new_tokens=3, temperature=0)
    assert len(texts) == 1 and isinstance(texts[0][0], str)
    assert torch.isfinite(half.p_yes(prompts()[:1])).all()
    broken = copy.copy(vlm)
    broken.model = copy.deepcopy(vlm.model)
    with torch.no_grad():
        broken.core.get_output_embeddings().weight.fill_(float("nan"))
    with pytest.raises(NonFiniteLogitsError, match="float32"):
        broken.generate(prompts()[:1], max_new_tokens=2, temperature=0)
    with pytest.raises(NonFiniteLogitsError, match="next_token_logits"):
        broken.p_yes(prompts()[:1])
    with pytest.raises(NonFiniteLogitsError, match="completion_logprobs"):
        broken.completion_logprobs(prompts()[:1], ["red"])
    assert check_finite(torch.tensor([[0.0, -float("inf")]]), "x") is not None     # a masked token is fine
    with pytest.raises(NonFiniteLogitsError, match="1 row"):
        check_finite(torch.tensor([[-float("inf"), -float("inf")]]), "x")


def test_training_an_fp16_model_trains_fp32_weights(vlm):
    """Issue 56: a T4 loads fp16; AdamW's updates vanish in fp16 weights, so the trainable ones are
    float32: the adapters of a LoRA model (its base stays fp16), or a small model trained in full."""
    import copy

    from kbvqa.rl.common import prepare_trainable

    lora = copy.copy(vlm)
    lora.model = copy.deepcopy(vlm.model).to(torch.float16)
    params = prepare_trainable(lora, lora={"r": 4, "alpha": 8})
    assert params and all(p.dtype == torch.float32 for p in params)
    assert any(p.dtype == torch.float16 for p in lora.model.parameters() if not p.requires_grad)
    out = lora.completion_logprobs(prompts()[:1], ["red"], grad=True)
    out.logprobs.sum().backward()
    assert all(p.grad is not None and torch.isfinite(p.grad).all() for p in params if p.grad is not None)
    full = copy.copy(vlm)
    full.model = copy.deepcopy(vlm.model).to(torch.float16)
    assert prepare_trainable(full, freeze_vision=False)
    assert all(p.dtype == torch.float32 for p in full.model.parameters())
