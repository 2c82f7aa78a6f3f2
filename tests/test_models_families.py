"""Tiny tokenizers, tiny configs, the prompt format and the gpu checkpoint table."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from kbvqa.models import FAMILIES, GPU_CHECKPOINTS, build_tokenizer, gpu_checkpoint, make_chat, tiny_config
from kbvqa.models.chat import chat_images, normalise_chat, normalise_prompts
from kbvqa.models.families import TinySpec, model_class
from kbvqa.models.processors import build_processor, image_tokens_per_image
from kbvqa.models.tokenizer import special_token_id, special_tokens

TEXTS = ["The zorp lives in a marsh. Its mass is 3.5 kg (about 7.7 lb).", "What colour is the zorp? Red!"]
WORD = build_tokenizer(TEXTS, "qwen2_vl", vocab_size=500)
BPE = build_tokenizer(TEXTS, "qwen2_vl", vocab_size=300, kind="bpe")


@given(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=60))
@settings(max_examples=60, deadline=None)
def test_bpe_round_trips_any_ascii_text(text):
    assert BPE.decode(BPE(text, add_special_tokens=False).input_ids) == text


def test_word_level_round_trips_known_text_and_splits_numbers():
    text = "What colour is the zorp? Its mass is 3.5 kg.\nYes"
    ids = WORD(text, add_special_tokens=False).input_ids
    assert WORD.decode(ids) == text
    assert WORD.unk_token_id not in ids
    assert WORD.convert_ids_to_tokens(ids)[-7:] == [" 3", ".", "5", " kg", ".", "\n", "Yes"]
    unseen = WORD("a quokka", add_special_tokens=False).input_ids
    assert WORD.unk_token_id in unseen


@pytest.mark.parametrize("family", FAMILIES)
def test_special_tokens_have_fixed_ids_and_configs_agree(family):
    tok = build_tokenizer(TEXTS, family, vocab_size=400)
    for i, token in enumerate(special_tokens(family)):
        assert tok.convert_tokens_to_ids(token) == i
    config = tiny_config(family, vocab_size=len(tok))
    assert tok.convert_ids_to_tokens(config.image_token_id) in ("<|image_pad|>", "<image>")
    assert config.get_text_config().eos_token_id == tok.eos_token_id
    for word in ("Yes", "No", " Yes", " No"):
        assert tok.convert_tokens_to_ids(word) != tok.unk_token_id
    assert build_tokenizer(TEXTS, family, vocab_size=400).get_vocab() == tok.get_vocab()  # deterministic


@pytest.mark.parametrize("family", FAMILIES)
def test_tiny_models_are_small_and_image_tokens_as_designed(family):
    model = model_class(family)(tiny_config(family, vocab_size=1000))
    assert sum(p.numel() for p in model.parameters()) < 3_000_000
    tok = build_tokenizer(TEXTS, family, vocab_size=400)
    processor = build_processor(family, tok, image_size=56)
    text = processor.apply_chat_template([{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "hi"}]}],
                                         tokenize=False, add_generation_prompt=True)
    image_id = special_token_id(family, "<image>" if family == "idefics3" else "<|image_pad|>")

    def image_tokens(size):
        images = chat_images(normalise_chat(make_chat("hi", image=Image.new("RGB", size))))
        batch = processor(text=[text], images=[images], return_tensors="pt")
        return int((batch["input_ids"] == image_id).sum())

    assert image_tokens((200, 200)) == image_tokens((56, 56)) == image_tokens_per_image(56) == 4
    assert 1 <= image_tokens((200, 100)) <= 4  # Qwen keeps the aspect ratio (28x56 -> 2 tokens)


def test_tiny_config_rejects_bad_overrides():
    with pytest.raises(ValueError):
        tiny_config("qwen2_vl", hidden_sise=64)
    with pytest.raises(ValueError):
        tiny_config("qwen2_vl", hidden_size=60, num_heads=4)  # head_dim 15
    with pytest.raises(ValueError):
        tiny_config("qwen2_vl", image_size=50)
    with pytest.raises(ValueError):
        tiny_config("llava")
    with pytest.raises(ValueError):
        build_tokenizer("one string", "qwen2_vl")
    with pytest.raises(ValueError):
        build_tokenizer(TEXTS, "qwen2_vl", vocab_size=10)
    assert tiny_config("smolvlm").model_type == "idefics3"
    assert TinySpec().head_dim == 32


def test_prompt_shorthands_and_errors():
    image = Image.new("L", (10, 10))
    chat = normalise_chat((image, "what is it?"))
    assert chat[0]["role"] == "user" and [p["type"] for p in chat[0]["content"]] == ["image", "text"]
    assert chat_images(chat)[0].mode == "RGB"
    assert normalise_chat("hi") == make_chat("hi")
    assert normalise_chat((None, "hi")) == make_chat("hi")
    assert normalise_chat([{"role": "user", "content": "hi"}]) == make_chat("hi")
    assert make_chat("q", system="s")[0]["role"] == "system"
    for bad in ([], [{"role": "robot", "content": "x"}], [{"role": "user", "content": [{"type": "video"}]}],
                [{"role": "user", "content": [{"type": "image"}]}], (image,), 42):
        with pytest.raises(ValueError):
            normalise_chat(bad)
    with pytest.raises(ValueError):
        normalise_prompts(make_chat("hi"))  # one chat, not a batch


def test_gpu_checkpoints_name_every_role():
    assert gpu_checkpoint("critic") == GPU_CHECKPOINTS["critic"]
    assert "SmolVLM-256M" in gpu_checkpoint("rl_policy") and "SmolVLM-500M" in gpu_checkpoint("rl_policy_large")
    assert all("/" in repo for repo in GPU_CHECKPOINTS.values())
    with pytest.raises(ValueError):
        gpu_checkpoint("oracle")
