"""kbvqa.models.precision: the KBVQA_PRECISION switch, weight-only int8 against its reference, the model string."""
from __future__ import annotations

import pytest
import torch

from kbvqa.experiments.runs import model_fingerprint
from kbvqa.models import build_tiny_vlm, make_chat
from kbvqa.models import precision as P


def test_unknown_precision_lists_the_choices(monkeypatch):
    with pytest.raises(ValueError, match=r"unknown precision 'fp8'.*\['auto', 'fp32', 'bf16', 'int8w'\]"):
        P.requested_precision("fp8")
    monkeypatch.setenv("KBVQA_PRECISION", "half")
    with pytest.raises(ValueError, match="KBVQA_PRECISION"):
        P.requested_precision()
    monkeypatch.setenv("KBVQA_PRECISION", " BF16 ")
    assert P.requested_precision() == "bf16"
    monkeypatch.delenv("KBVQA_PRECISION")
    assert P.requested_precision() == P.DEFAULT_PRECISION == "fp32"


def test_auto_and_bf16_follow_the_hardware(monkeypatch):
    import kbvqa.models.loading as loading

    cpu = torch.device("cpu")
    monkeypatch.setattr(loading, "computes_bf16", lambda device: False)
    assert P.resolve_precision("auto", cpu) == "fp32" and P.resolve_precision("int8w", cpu) == "int8w"
    with pytest.raises(ValueError, match=r"computes_bf16\(cpu\) is False.*use fp32"):
        P.resolve_precision("bf16", cpu)
    monkeypatch.setattr(loading, "computes_bf16", lambda device: True)
    monkeypatch.setattr(P, "accepted_fast_paths", lambda card=None: {"bf16"})
    assert P.resolve_precision("auto", cpu) == "bf16" == P.resolve_precision("bf16", cpu)
    monkeypatch.setattr(P, "accepted_fast_paths", lambda card=None: set())   # the card refused it: not used
    assert P.resolve_precision("auto", cpu) == "fp32" and P.resolve_precision("bf16", cpu) == "bf16"


def test_the_card_says_which_fast_paths_passed(tmp_path):
    import json

    card = tmp_path / "card.json"
    assert P.accepted_fast_paths(card) == set()                             # no card: nothing accepted
    card.write_text("not json")
    assert P.accepted_fast_paths(card) == set()
    card.write_text(json.dumps({"evaluation_fast": {
        "bf16+shared_prefix": {"precision": "bf16", "accepted": True},
        "int8w": {"precision": "int8w", "accepted": False}}}))
    assert P.accepted_fast_paths(card) == {"bf16"}


def test_int8_weight_linear_equals_its_dequantised_reference():
    torch.manual_seed(0)
    linear = torch.nn.Linear(48, 40)
    q = P.Int8WeightLinear(linear)
    w = linear.weight.detach()
    scale = w.abs().amax(dim=1) / 127
    reference_w = torch.round(w / scale[:, None]).clamp(-127, 127) * scale[:, None]   # per-channel symmetric
    x = torch.randn(3, 5, 48)
    assert q.weight_int8.dtype == torch.int8 and q.weight_int8.abs().max() <= 127
    assert torch.allclose(q(x), x @ reference_w.T + linear.bias.detach(), atol=1e-4)
    assert torch.allclose(q(x), linear(x), atol=0.05)                                 # close to the float layer
    assert q(x).dtype == torch.float32                                                # activations stay float


def test_precision_travels_with_the_model_string():
    class Fake:
        fingerprint = "87914057b0c95a6e"

    fake = Fake()
    assert model_fingerprint(fake) == "reader:87914057b0c95a6e"                        # no precision: fp32
    fake.precision = "fp32"
    assert model_fingerprint(fake) == "reader:87914057b0c95a6e"                        # committed tables keep theirs
    fake.precision = "bf16"
    assert model_fingerprint(fake) == "reader:87914057b0c95a6e+bf16"
    assert P.precision_suffix("int8w") == "+int8w"


def test_int8w_on_a_tiny_idefics3_quantises_the_text_model_only():
    vlm = build_tiny_vlm("idefics3", seed=0, hidden_size=64, num_layers=2, intermediate_size=128, vision_width=32,
                         vision_depth=1, tie_embeddings=False)
    prompt = [make_chat("what colour is it ?")]
    before = vlm.next_token_logits(prompt)
    P.apply_precision(vlm, "int8w")
    text = vlm.core.model.text_model
    assert vlm.precision == "int8w"
    assert any(isinstance(m, P.Int8WeightLinear) for m in text.modules())
    assert not any(isinstance(m, torch.nn.Linear) for m in text.modules())
    assert not any(isinstance(m, P.Int8WeightLinear) for m in vlm.core.model.vision_model.modules())
    after = vlm.next_token_logits(prompt)
    assert torch.allclose(before, after, atol=0.05 * before.abs().max().item())


def test_a_policy_being_trained_stays_fp32():
    from kbvqa.reader import load_reader

    with pytest.raises(ValueError, match="merge=False: a policy being trained keeps fp32"):
        load_reader(merge=False, precision="int8w")
    assert load_reader(merge=False).precision == "fp32"


def test_a_table_at_another_precision_is_the_same_reader_but_stale(monkeypatch):
    from kbvqa.config import Profile
    from kbvqa.experiments.runs import foreign_reader_tables, stale_tables
    from kbvqa.models import checkpoints

    models = {"a/results.json": "reader:cafe+bf16", "b/results.json": "reader:beef", "c/results.json": "reader:cafe"}
    assert foreign_reader_tables(models, "cafe") == {"b/results.json": "reader:beef"}      # other weights only
    monkeypatch.setattr(checkpoints, "reader_fingerprint", lambda: "cafe")
    cpu = Profile("cpu", "cpu", 1.0, 10)
    made_by = {"a/results.json": {"reader": "reader:cafe+bf16"}, "c/results.json": {"reader": "reader:cafe"}}
    monkeypatch.setenv("KBVQA_PRECISION", "fp32")
    assert set(stale_tables(made_by, lambda r: checkpoints.role_model(r, cpu))) == {"a/results.json"}
    monkeypatch.setenv("KBVQA_PRECISION", "int8w")
    assert checkpoints.role_model("reader", cpu) == "reader:cafe+int8w"
    assert set(stale_tables(made_by, lambda r: checkpoints.role_model(r, cpu))) == {"a/results.json", "c/results.json"}


def test_the_reader_loads_strictly(tmp_path):
    """A half-shipped adapter, a foreign tensor or tensors other than the card's raise, naming the fix."""
    import shutil

    from safetensors.torch import load_file, save_file

    from kbvqa.reader import READER_DIR, load_reader

    copy = tmp_path / "reader"
    shutil.copytree(READER_DIR, copy)
    adapter = load_file(str(copy / "adapter.safetensors"))
    half = dict(list(adapter.items())[: len(adapter) // 2])
    save_file(half, str(copy / "adapter.safetensors"))
    with pytest.raises(ValueError, match=r"trained tensors missing.*git checkout"):
        load_reader(copy)
    save_file({**adapter, "model.extra.weight": torch.zeros(2)}, str(copy / "adapter.safetensors"))
    with pytest.raises(ValueError, match=r"unexpected \['model.extra.weight'\]"):
        load_reader(copy)
    name = next(iter(adapter))
    save_file({**adapter, name: adapter[name] * 2}, str(copy / "adapter.safetensors"))     # same keys, new values
    import json

    recorded = json.loads((copy / "card.json").read_text())["fingerprint"]
    with pytest.raises(ValueError, match=f"was measured on {recorded}.*git checkout"):
        load_reader(copy)
    assert load_reader(copy, check_card=False).fingerprint != recorded


def test_the_output_head_reads_dense_strides_and_the_same_numbers():
    """A last-position slice is a strided view that ``is_contiguous`` calls contiguous; the hook
    hands the head a dense copy (the bf16 ``bmm`` path copied the whole head for it) and changes
    no number."""
    vlm = build_tiny_vlm("idefics3", seed=0, hidden_size=64, num_layers=2, intermediate_size=128, vision_width=32,
                         vision_depth=1, tie_embeddings=True)
    head = vlm.core.lm_head
    hidden = torch.randn(1, 7, 64)[:, -1:, :]
    assert hidden.is_contiguous() and hidden.stride()[0] == 7 * 64
    before = head(hidden)
    seen = []
    P.contiguous_head_input(vlm.core)
    P.contiguous_head_input(vlm.core)                               # a second call adds no second hook
    assert len(head._forward_pre_hooks) == 1
    head.register_forward_pre_hook(lambda module, args: seen.append(args[0].stride()))
    assert torch.equal(head(hidden), before)
    assert seen == [(64, 64, 1)]


@pytest.mark.skipif(not P.onednn_packs_bf16(), reason="this PyTorch or this CPU cannot pre-pack bf16 weights "
                                                      "(oneDNN needs AVX512BW/VL/DQ or AVX-NE-CONVERT)")
def test_a_packed_bf16_linear_equals_the_plain_bf16_one():
    torch.manual_seed(0)
    plain = torch.nn.Linear(64, 96).to(torch.bfloat16)
    packed = P.PackedBF16Linear(plain)
    for x in (torch.randn(1, 1, 64), torch.randn(3, 5, 64), torch.randn(1, 9, 64)[:, -1:, :]):
        x = x.to(torch.bfloat16)
        ref, out = torch.nn.functional.linear(x, plain.weight, plain.bias).float(), packed(x).float()
        assert out.shape == ref.shape
        assert torch.allclose(out, ref, atol=0.05, rtol=0.02)
    module = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.Sequential(torch.nn.Linear(8, 4))).to(torch.bfloat16)
    assert P.pack_bf16_linears(module) == 2
    assert not any(isinstance(m, torch.nn.Linear) for m in module.modules())


def test_packing_is_offered_only_where_the_cpu_can_reorder():
    from types import SimpleNamespace

    def refuse(weight, rows):
        raise RuntimeError("mkldnn_reorder_linear_weight: bf16 path needs the cpu support avx_ne_convert or avx512bw")

    fine = SimpleNamespace(_reorder_linear_weight=lambda weight, rows: weight, _linear_pointwise=None)
    avx2_only = SimpleNamespace(_reorder_linear_weight=refuse, _linear_pointwise=None)
    assert P.can_pack_bf16(fine) is torch.backends.mkldnn.is_available()
    assert P.can_pack_bf16(avx2_only) is False
    assert P.can_pack_bf16(None) is False and P.can_pack_bf16(SimpleNamespace()) is False
