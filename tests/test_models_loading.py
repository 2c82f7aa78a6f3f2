"""Loading tiny VLMs without network or torchvision, LoRA adapters, and quantisation errors."""
from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from PIL import Image

from kbvqa.models import FAMILIES, VLM, build_tiny_vlm
from kbvqa.models.loading import lora_pattern, require_backend

SIZES = {"hidden_size": 64, "num_layers": 2, "intermediate_size": 128, "vision_width": 32, "vision_depth": 1,
             "tie_embeddings": False}
REPO = Path(__file__).resolve().parent.parent


def prompt():
    return [(Image.new("RGB", (56, 56), (30, 60, 200)), "what colour is the zorp ?")]


@pytest.fixture
def no_network(monkeypatch):
    """Record (and refuse) every attempt to open a network connection."""
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(args)
        raise OSError("network access is not allowed in this test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    return attempts


@pytest.mark.parametrize("family", FAMILIES)
def test_reload_without_network_gives_the_same_model(family, tmp_path, no_network):
    from transformers import AutoProcessor

    built = build_tiny_vlm(family, texts=["what colour is the zorp ? red blue"], **SIZES)
    built.save_pretrained(tmp_path)
    loaded = VLM.from_pretrained(tmp_path, device="cpu")
    assert no_network == []
    assert type(loaded.processor).__name__ == type(built.processor).__name__
    assert not hasattr(loaded.processor, "video_processor")
    assert loaded.tokenizer.get_vocab() == built.tokenizer.get_vocab()
    assert torch.allclose(loaded.next_token_logits(prompt()), built.next_token_logits(prompt()), atol=1e-6)
    assert loaded.render(prompt()) == built.render(prompt())
    # the registered image-only processors make AutoProcessor work on the saved directory too
    assert type(AutoProcessor.from_pretrained(tmp_path)).__name__ == type(built.processor).__name__
    assert "torchvision" not in sys.modules


def test_offline_subprocess_loads_every_family(tmp_path):
    for family in FAMILIES:
        build_tiny_vlm(family, texts=["what colour ? red"], **SIZES).save_pretrained(tmp_path / family)
    script = textwrap.dedent(f"""
        import sys
        from PIL import Image
        from kbvqa.models import VLM
        for family in {list(FAMILIES)!r}:
            vlm = VLM.from_pretrained({str(tmp_path)!r} + "/" + family, device="cpu")
            out = vlm.generate([(Image.new("RGB", (56, 56)), "what colour ?")], n=2, max_new_tokens=3, seed=0)
            assert len(out[0]) == 2, out
        assert "torchvision" not in sys.modules
        print("ok")
    """)
    env = dict(os.environ, HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", PYTHONPATH=str(REPO),
               OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().endswith("ok")


@pytest.mark.parametrize("family", FAMILIES)
def test_lora_trains_only_adapters_of_the_language_model(family):
    vlm = build_tiny_vlm(family, texts=["what colour ? red"], **SIZES)
    before = vlm.num_parameters()
    vlm.add_lora(r=4, alpha=8, dropout=0.0, target_modules=["q_proj", "v_proj"])
    trainable = [name for name, p in vlm.model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in name for name in trainable)
    assert not any(part in name for name in trainable for part in ("visual", "vision_model"))
    assert vlm.num_parameters(trainable_only=True) < 0.2 * before
    out = vlm.completion_logprobs(prompt(), ["red"], grad=True)
    out.logprobs.sum().backward()
    lora_b = [p.grad for n, p in vlm.model.named_parameters() if "lora_B" in n]
    assert any(g is not None and float(g.abs().sum()) > 0 for g in lora_b)
    assert all(p.grad is None for n, p in vlm.model.named_parameters() if "lora_" not in n)
    assert len(vlm.generate(prompt(), n=2, max_new_tokens=3, seed=0)[0]) == 2
    with pytest.raises(ValueError):
        vlm.add_lora()  # already wrapped


def test_lora_pattern_skips_the_vision_tower():
    pattern = lora_pattern(["q_proj", "v_proj"])
    import re

    assert re.fullmatch(pattern, "model.language_model.layers.0.self_attn.q_proj")
    assert re.fullmatch(pattern, "model.text_model.layers.1.self_attn.v_proj")
    assert not re.fullmatch(pattern, "model.vision_model.encoder.layers.0.self_attn.q_proj")
    assert not re.fullmatch(pattern, "model.visual.blocks.0.attn.q_proj")
    assert not re.fullmatch(pattern, "model.language_model.layers.0.self_attn.k_proj")
    assert re.fullmatch(lora_pattern(["q_proj"], vision=True), "model.vision_model.encoder.layers.0.self_attn.q_proj")
    with pytest.raises(ValueError):
        lora_pattern("q_proj")
    with pytest.raises(ValueError):
        build_tiny_vlm("qwen2_vl", **SIZES).add_lora(target_modules=["no_such_layer"])


def test_lora_adapter_saves_and_reloads(tmp_path):
    build_tiny_vlm("qwen2_vl", texts=["what colour ? red"], **SIZES).save_pretrained(tmp_path / "base")
    vlm = VLM.from_pretrained(tmp_path / "base", device="cpu", lora={"r": 4, "alpha": 8, "dropout": 0.0})
    base_logits = vlm.next_token_logits(prompt())
    with torch.no_grad():
        for name, p in vlm.model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    tuned = vlm.next_token_logits(prompt())
    assert not torch.allclose(tuned, base_logits, atol=1e-3)
    vlm.save_pretrained(tmp_path / "adapter")
    assert (tmp_path / "adapter" / "adapter_config.json").is_file()
    reloaded = VLM.from_pretrained(tmp_path / "adapter", device="cpu")
    assert torch.allclose(reloaded.next_token_logits(prompt()), tuned, atol=1e-5)


@pytest.mark.skipif(importlib.util.find_spec("bitsandbytes") is not None, reason="bitsandbytes is installed")
def test_4bit_without_bitsandbytes_says_what_to_install(tmp_path):
    build_tiny_vlm("qwen2_vl", **SIZES).save_pretrained(tmp_path)
    with pytest.raises(ImportError, match="bitsandbytes"):
        VLM.from_pretrained(tmp_path, load_in_4bit=True)


@pytest.mark.parametrize("method, package", [("awq", "gptqmodel"), ("gptq", "optimum")])
def test_quantised_checkpoint_without_backend_says_what_to_install(tmp_path, method, package):
    if importlib.util.find_spec(package) is not None:
        pytest.skip(f"{package} is installed")
    build_tiny_vlm("qwen2_vl", **SIZES).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config["quantization_config"] = {"quant_method": method, "bits": 4, "group_size": 128}
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ImportError, match=f"pip install .*{package}"):
        VLM.from_pretrained(tmp_path, device="cpu")


def test_bad_loading_arguments(tmp_path):
    with pytest.raises(ValueError):
        require_backend("int3-magic")
    build_tiny_vlm("idefics3", **SIZES).save_pretrained(tmp_path)
    with pytest.raises(ValueError):
        VLM.from_pretrained(tmp_path, dtype="float99")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError):
            VLM.from_pretrained(tmp_path, device="cuda")
    config = json.loads((tmp_path / "config.json").read_text())
    config["model_type"] = "llava"
    (tmp_path / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError):
        VLM.from_pretrained(tmp_path)


@pytest.mark.parametrize("family, processor_class", [("qwen2_5_vl", "Qwen2_5_VLProcessor"),
                                                     ("idefics3", "Idefics3Processor")])
def test_hub_style_layout_loads_without_torchvision(family, processor_class, tmp_path, no_network):
    """Hub repos keep the image processor in preprocessor_config.json, name the official processor
    class, ship a video processor config (Qwen) and a chat_template.json: emulate that layout."""
    built = build_tiny_vlm(family, texts=["what colour ? red"], **SIZES)
    built.save_pretrained(tmp_path)
    nested = json.loads((tmp_path / "processor_config.json").read_text())
    image = dict(nested.pop("image_processor"), processor_class=processor_class)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(image))
    (tmp_path / "processor_config.json").write_text(json.dumps(dict(nested, processor_class=processor_class)))
    if family.startswith("qwen"):
        (tmp_path / "processor_config.json").unlink()
        (tmp_path / "video_preprocessor_config.json").write_text(json.dumps(
            {"video_processor_type": "Qwen2VLVideoProcessor", "processor_class": processor_class}))
    template = (tmp_path / "chat_template.jinja").read_text()
    (tmp_path / "chat_template.jinja").unlink()
    (tmp_path / "chat_template.json").write_text(json.dumps({"chat_template": template}))
    loaded = VLM.from_pretrained(tmp_path, device="cpu")
    assert no_network == [] and "torchvision" not in sys.modules
    assert loaded.render(prompt()) == built.render(prompt())
    assert torch.allclose(loaded.next_token_logits(prompt()), built.next_token_logits(prompt()), atol=1e-6)


def test_load_vlm_picks_weights_by_profile(monkeypatch):
    """cpu profile -> the shipped tiny checkpoint for a role the reader does not play (``rl_policy_large``,
    which no chapter loads); gpu profile -> the hub id of the role."""
    import kbvqa.models.checkpoints as checkpoints
    from kbvqa.config import Profile
    from kbvqa.models import VLM, load_vlm

    calls = {}
    monkeypatch.setattr(checkpoints, "load_tiny_vlm", lambda **kw: calls.setdefault("tiny", kw) or "tiny")
    monkeypatch.setattr(VLM, "from_pretrained", classmethod(lambda cls, p, **kw: calls.setdefault("hub", (p, kw))))
    load_vlm("rl_policy_large", Profile("cpu", "cpu", 1.0, 10))
    assert "tiny" in calls and "hub" not in calls
    load_vlm("critic", Profile("gpu", "cuda", 4.0, 10))
    assert calls["hub"] == ("Qwen/Qwen2.5-VL-3B-Instruct", {"device": "cuda"})
    with pytest.raises(ValueError, match="unknown model role"):
        load_vlm("oracle", Profile("cpu", "cpu", 1.0, 10))


def test_load_vlm_reader_role(monkeypatch):
    """The reader's role: the shipped reader in the cpu profile, SmolVLM-256M-Instruct in the gpu profile."""
    import kbvqa.models.checkpoints as checkpoints
    from kbvqa.config import Profile
    from kbvqa.models import VLM, load_vlm

    calls = {}
    monkeypatch.setattr(checkpoints, "load_reader", lambda **kw: calls.setdefault("reader", kw) or "reader")
    monkeypatch.setattr(VLM, "from_pretrained", classmethod(lambda cls, p, **kw: calls.setdefault("hub", (p, kw))))
    load_vlm("reader", Profile("cpu", "cpu", 1.0, 10))
    assert "reader" in calls and "hub" not in calls
    load_vlm("reader", Profile("gpu", "cuda", 4.0, 10))
    assert calls["hub"] == ("HuggingFaceTB/SmolVLM-256M-Instruct", {"device": "cuda"})


def test_role_model_names_the_weights_load_vlm_gives_without_loading_them(monkeypatch):
    """A run that loads its models itself records them in its provenance by ``role_model``: the same
    string ``model_fingerprint`` gives of the loaded model, in each profile."""
    import kbvqa.config as kbvqa_config
    from kbvqa.config import Profile
    from kbvqa.experiments.runs import model_fingerprint, provenance
    from kbvqa.models import checkpoints
    from kbvqa.models.tiny import load_tiny_vlm
    from kbvqa.reader import reader_fingerprint

    cpu, gpu = Profile("cpu", "cpu", 1.0, 10), Profile("gpu", "cuda", 4.0, 10)
    tiny = model_fingerprint(load_tiny_vlm())
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", kbvqa_config.CPU_READER_ROLES - {"critic"})
    assert checkpoints.role_model("critic", cpu) == tiny and tiny.startswith("tiny_vlm:")
    assert checkpoints.role_model("reader", cpu) == f"reader:{reader_fingerprint()}"
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", frozenset({"reader", "critic"}))
    assert checkpoints.role_model("critic", cpu) == f"reader:{reader_fingerprint()}"
    assert checkpoints.role_model("judge", gpu) == checkpoints.gpu_checkpoint("judge")
    with pytest.raises(ValueError, match="unknown model role"):
        checkpoints.role_model("oracle", cpu)
    assert provenance(0, model="reader:abc")["model"] == "reader:abc"
    assert provenance(0)["model"] == tiny


@pytest.mark.parametrize("capability, expected", [((7, 5), torch.float16), ((8, 0), torch.bfloat16),
                                                  ((9, 0), torch.bfloat16)])
def test_half_precision_follows_native_bf16_not_emulation(monkeypatch, capability, expected):
    """A T4 (7.5) emulates bfloat16 (``is_bf16_supported()`` says True there): it computes in float16."""
    from kbvqa.models.loading import half_dtype, resolve_dtype

    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    cuda = torch.device("cuda")
    assert half_dtype(cuda) == resolve_dtype(None, cuda) == expected
    assert resolve_dtype(None, torch.device("cpu")) == torch.float32
    assert resolve_dtype("float16", cuda) == torch.float16


@pytest.mark.parametrize("device, avx512_bf16, amx, capability, expected",
                         [("cpu", False, False, None, False), ("cpu", True, False, None, True),
                          ("cpu", False, True, None, True), ("cuda", True, True, (7, 5), False),
                          ("cuda", False, False, (8, 0), True)])
def test_training_autocasts_bf16_only_where_the_hardware_computes_it(monkeypatch, device, avx512_bf16, amx,
                                                                    capability, expected):
    """An AVX2 CPU emulates bfloat16 matmuls (~100x slower than float32): the reader trains in float32 there."""
    from kbvqa.models.loading import computes_bf16

    monkeypatch.setattr(torch.cpu, "_is_avx512_bf16_supported", lambda: avx512_bf16, raising=False)
    monkeypatch.setattr(torch.cpu, "_is_amx_tile_supported", lambda: amx, raising=False)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda device=None: capability)
    assert computes_bf16(torch.device(device)) is expected


def test_checkpoint_override_points_roles_at_local_folders(monkeypatch, tmp_path):
    """KBVQA_CHECKPOINTS: a machine without the hub points roles at local folders; others keep hub ids."""
    import json

    from kbvqa.config import Profile
    from kbvqa.models import VLM, load_vlm
    from kbvqa.models.checkpoints import GPU_CHECKPOINTS, checkpoint_overrides, gpu_checkpoint

    calls = []
    monkeypatch.setattr(VLM, "from_pretrained", classmethod(lambda cls, p, **kw: calls.append(p)))
    monkeypatch.setenv("KBVQA_CHECKPOINTS", f"critic={tmp_path / 'critic'}, judge = /models/judge")
    load_vlm("critic", Profile("gpu", "cuda", 4.0, 10))
    assert calls == [str(tmp_path / "critic")] and gpu_checkpoint("judge") == "/models/judge"
    assert gpu_checkpoint("generator") == GPU_CHECKPOINTS["generator"]
    file = tmp_path / "roles.json"
    file.write_text(json.dumps({"reader": str(tmp_path / "reader")}))
    monkeypatch.setenv("KBVQA_CHECKPOINTS", str(file))
    assert gpu_checkpoint("reader") == str(tmp_path / "reader")
    assert checkpoint_overrides("") == {} and checkpoint_overrides("  ") == {}
    for bad, match in [("oracle=/x", "unknown roles"), ("critic=", "not role=value"), ("=x", "not role=value"),
                       (str(tmp_path / "missing.json"), "neither"), ]:
        with pytest.raises(ValueError, match=match):
            checkpoint_overrides(bad)
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="JSON object"):
        checkpoint_overrides(str(tmp_path / "list.json"))


def test_smolvlm_processor_loads_with_one_tile(tmp_path, no_network):
    """A hub-style SmolVLM processor (image splitting on: 17 tiles for a 112-px picture) loads with
    splitting off, one 512-px tile (issue 56); a tiny model's processor is unchanged."""
    from kbvqa.models.processors import load_processor

    built = build_tiny_vlm("idefics3", texts=["what colour ? red"], **SIZES)
    built.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "processor_config.json").read_text())
    assert config["image_processor"]["do_image_splitting"] is False          # the tiny models never split
    config["image_processor"].update(do_image_splitting=True, size={"longest_edge": 2048},
                                     max_image_size={"longest_edge": 512})   # SmolVLM-256M's hub values
    (tmp_path / "processor_config.json").write_text(json.dumps(config))
    from transformers import AutoProcessor

    hub_like = AutoProcessor.from_pretrained(tmp_path)
    image = Image.new("RGB", (112, 112), (30, 60, 200))
    split = hub_like.image_processor(images=[[image]])["pixel_values"]
    processor = load_processor(tmp_path)
    assert processor.image_processor.do_image_splitting is False
    one = processor.image_processor(images=[[image]])["pixel_values"]
    assert split.shape[1] == 17 and one.shape[1] == 1, (split.shape, one.shape)
    assert one.shape[-1] == 512
