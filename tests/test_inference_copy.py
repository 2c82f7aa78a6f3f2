"""kbvqa.models.inference: a trained role merged into a copy gives the unmerged policy's numbers."""
from __future__ import annotations

import torch

from kbvqa.models import build_tiny_vlm, make_chat
from kbvqa.models.adapters import add_named_adapter
from kbvqa.models.inference import inference_copy

PROMPT = [make_chat("what colour is it ?"), make_chat("name the creature")]


def _tiny():
    return build_tiny_vlm("idefics3", seed=0, hidden_size=64, num_layers=2, intermediate_size=128, vision_width=32,
                          vision_depth=1)


def _train_adapters(vlm, seed):
    torch.manual_seed(seed)
    for name, tensor in vlm.model.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(tensor, std=0.5)


def test_a_merged_copy_equals_the_policy_and_leaves_it_as_it_was():
    vlm = _tiny()
    vlm.add_lora(r=4, alpha=8, dropout=0.0)
    _train_adapters(vlm, 0)
    vlm.model.train()
    before = vlm.next_token_logits(PROMPT)
    merged = inference_copy(vlm, "fp32")
    assert not hasattr(merged.model, "peft_config") and not merged.model.training
    assert torch.allclose(merged.next_token_logits(PROMPT), before, atol=1e-5)
    assert hasattr(vlm.model, "peft_config") and vlm.model.training              # the policy goes on training
    assert torch.equal(vlm.next_token_logits(PROMPT), before)


def test_each_role_view_merges_its_own_adapter():
    vlm = _tiny()
    add_named_adapter(vlm, "proposer", r=4, alpha=8, dropout=0.0)
    add_named_adapter(vlm, "evaluator", r=4, alpha=8, dropout=0.0)
    _train_adapters(vlm, 1)
    expected = {name: vlm.adapter(name).next_token_logits(PROMPT) for name in ("proposer", "evaluator", None)}
    assert not torch.allclose(expected["proposer"], expected["evaluator"])
    for name, logits in expected.items():
        copy = inference_copy(vlm.adapter(name), "fp32")
        assert torch.allclose(copy.next_token_logits(PROMPT), logits, atol=1e-5), name
