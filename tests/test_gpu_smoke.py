"""The CPU-side checks of ``make gpu-smoke`` (``tools/gpu_smoke*.py``), which itself needs CUDA.

Here, without CUDA and without notebooks: the tiny random stand-ins of every gpu-profile checkpoint
load from their hub-layout folders through the same overrides the smoke run sets (every role through
``load_vlm`` with the gpu profile moved onto the CPU, then a few generated tokens; CLIP through
``get_encoders``; GroundingDINO through ``get_grounder``), the generated dataset fixtures load
through ``kbvqa.data`` for every dataset the chapters read in the gpu profile, the kernel start-up
file records a chapter's peak, and the report has its documented schema. Nothing is downloaded.
"""
from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from PIL import Image

from tools import gpu_smoke
from tools.gpu_smoke_data import CHAPTER_DATASETS, KNOWLEDGE_BASES, write_fixtures
from tools.gpu_smoke_models import CLIP_ID, GROUNDER_ID, build, family_of_checkpoint, smoke_env

ROOT = Path(__file__).resolve().parents[1]
IMAGE = Image.new("RGB", (96, 72), (200, 30, 30))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)          # the book's runs share two cores
    yield build(tmp_path_factory.mktemp("smoke_models"))
    torch.set_num_threads(threads)


@pytest.fixture
def gpu_on_cpu(monkeypatch):
    """The gpu profile as ``get_profile("gpu")`` makes it, with its device moved onto the CPU."""
    import kbvqa.config as config

    with monkeypatch.context() as m:
        m.setattr(config, "cuda_available", lambda: True)
        profile = config.get_profile("gpu")
    return dataclasses.replace(profile, device="cpu")


def test_every_role_loads_its_tiny_folder_and_generates(built, gpu_on_cpu, monkeypatch):
    from kbvqa.models.checkpoints import GPU_CHECKPOINTS, load_vlm

    assert set(built["roles"]) == set(GPU_CHECKPOINTS)
    monkeypatch.setenv("KBVQA_CHECKPOINTS", smoke_env(Path(built["checkpoints"]).parent)["KBVQA_CHECKPOINTS"])
    for role, hub_id in GPU_CHECKPOINTS.items():
        folder = Path(built["roles"][role])
        assert folder.as_posix().endswith(hub_id)                        # the hub's layout: <org>/<name>
        assert {"config.json", "model.safetensors", "tokenizer.json", "processor_config.json"} <= {
            p.name for p in folder.iterdir()}
        vlm = load_vlm(role, profile=gpu_on_cpu)
        assert vlm.family == family_of_checkpoint(hub_id) and vlm.device.type == "cpu"
        out = vlm.generate([(IMAGE, "What is this creature?"), "Is it red? Answer Yes or No."], max_new_tokens=3,
                           temperature=0)
        assert len(out) == 2 and all(isinstance(o[0], str) for o in out)
    assert {family_of_checkpoint(h) for h in GPU_CHECKPOINTS.values()} == {"idefics3", "qwen2_vl", "qwen2_5_vl",
                                                                           "qwen3_vl"}
    with pytest.raises(ValueError, match="no tiny architecture"):
        family_of_checkpoint("meta-llama/Llama-3.2-11B-Vision")


def test_clip_and_grounding_dino_load_from_their_folders(built, gpu_on_cpu, monkeypatch):
    from kbvqa.models.encoders import ClipEncoders, get_encoders
    from kbvqa.retrieval.subject_grounding import GroundingDinoGrounder, get_grounder

    env = smoke_env(Path(built["checkpoints"]).parent)
    assert env["KBVQA_ENCODER"].endswith(CLIP_ID) and env["KBVQA_GROUNDER"].endswith(GROUNDER_ID)
    monkeypatch.setenv("KBVQA_ENCODER", env["KBVQA_ENCODER"])
    monkeypatch.setenv("KBVQA_GROUNDER", env["KBVQA_GROUNDER"])
    encoders = get_encoders(gpu_on_cpu)
    assert isinstance(encoders, ClipEncoders) and encoders.dim == 512
    query = encoders.encode_query(IMAGE, "What does this red zorp eat?")
    assert query.shape[1] == 512 and len(query) > 49                 # text tokens + 7 x 7 patch tokens
    grounder = get_grounder(gpu_on_cpu)
    assert isinstance(grounder, GroundingDinoGrounder) and grounder.checkpoint == env["KBVQA_GROUNDER"]
    assert len(grounder.ground([IMAGE], ["What does this red zorp eat?"], ["red zorp"])) == 1
    (box,) = GroundingDinoGrounder(device="cpu", box_threshold=0, text_threshold=0).ground(
        [IMAGE], ["What does this red zorp eat?"], ["red zorp"])
    assert len(box) == 4 and box[0] <= box[2] and box[1] <= box[3]   # random weights: anywhere near the picture


def test_encoder_and_grounder_overrides(monkeypatch, tmp_path):
    from kbvqa.models.encoders import GPU_ENCODER, gpu_encoder
    from kbvqa.retrieval.subject_grounding import GPU_GROUNDER, gpu_grounder

    monkeypatch.delenv("KBVQA_ENCODER", raising=False)
    monkeypatch.delenv("KBVQA_GROUNDER", raising=False)
    assert (gpu_encoder(), gpu_grounder()) == (GPU_ENCODER, GPU_GROUNDER)
    monkeypatch.setenv("KBVQA_ENCODER", "someone/clip-copy")            # another hub id passes through
    monkeypatch.setenv("KBVQA_GROUNDER", str(tmp_path))
    assert (gpu_encoder(), gpu_grounder()) == ("someone/clip-copy", str(tmp_path))
    monkeypatch.setenv("KBVQA_ENCODER", str(tmp_path / "missing"))
    with pytest.raises(ValueError, match="KBVQA_ENCODER.*not a folder"):
        gpu_encoder()


def _fake_datasets(env: dict):
    spec = importlib.util.spec_from_file_location("datasets", Path(env["PYTHONPATH"]) / "datasets" / "__init__.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fixtures_load_through_kbvqa_data_on_the_gpu_profiles_path(tmp_path, monkeypatch):
    import kbvqa.config as config
    from kbvqa.data import find_samples, load_dataset, load_knowledge_base, pick_source
    from kbvqa.data.real_common import network_allowed

    env = write_fixtures(tmp_path)
    fake = _fake_datasets(env)
    monkeypatch.setitem(sys.modules, "datasets", fake)
    for name in ("KBVQA_DATA", "KBVQA_SMOKE_HUB", "KBVQA_SAMPLES"):
        monkeypatch.setenv(name, env[name])
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "KBVQA_OFFLINE", "CI"):   # as in the smoke kernels
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KBVQA_PROFILE", "gpu")
    monkeypatch.setattr(config, "cuda_available", lambda: True)
    assert network_allowed() and find_samples() is None                # the gpu profile's hub path
    for name, split in CHAPTER_DATASETS:
        queries = load_dataset(name, split, limit=20)
        assert queries and all(q.question and q.answers for q in queries), (name, split)
    assert isinstance(load_dataset("scienceqa", "eval")[0].image, Image.Image)   # hub images arrive decoded
    for name in KNOWLEDGE_BASES:
        assert load_knowledge_base(name, max_docs=50), name
    for name in ("scienceqa", "mathvision", "mmmu", "vizwiz", "vsr_mc", "bioasq", "infoseek", "evqa"):
        assert pick_source(name, find_samples(), limit=20).source == "load_dataset", name   # chapter 02
    assert fake.get_dataset_split_names("derek-thomas/ScienceQA") == ["test", "train", "validation"]
    with pytest.raises(ValueError, match="Bad split"):
        next(iter(fake.load_dataset("MathLLMs/MathVision", split="train", streaming=True)))
    with pytest.raises(FileNotFoundError):
        fake.load_dataset("nobody/nothing", split="test", streaming=True)


def test_kernel_startup_records_the_peak_and_moves_the_gpu_profile_onto_the_cpu(tmp_path, monkeypatch):
    import kbvqa.config as config

    hooks, record = [], tmp_path / "record.json"
    events = SimpleNamespace(register=lambda event, function: hooks.append((event, function)))
    namespace = {"get_ipython": lambda: SimpleNamespace(events=events)}
    monkeypatch.setenv("KBVQA_SMOKE_RECORD", str(record))
    monkeypatch.setenv("KBVQA_SMOKE_CPU", "1")
    monkeypatch.setattr(config, "get_profile", config.get_profile)    # restored after the test
    monkeypatch.setattr(config, "cuda_available", lambda: False)
    exec(compile((ROOT / "tools" / "gpu_smoke_kernel.py").read_text(), "gpu_smoke_kernel.py", "exec"), namespace)
    assert set(namespace) <= {"get_ipython", "__builtins__", "__doc__"}   # nothing leaks into the notebook
    assert [e for e, _ in hooks] == ["post_run_cell"]
    hooks[0][1](None)
    data = json.loads(record.read_text())
    assert data["peak_memory_gib"] == 0.0 and data["cells"] == 1 and data["kbvqa"].endswith("__init__.py")
    profile = config.get_profile("gpu")
    assert profile.is_gpu and profile.device == "cpu"


def test_report_schema_and_writer(tmp_path):
    record = tmp_path / "01.json"
    record.write_text(json.dumps({"peak_memory_gib": 1.23456, "kbvqa": None}))
    ok = gpu_smoke.chapter_record("01_models", 12.34, "", record, None)
    failed = gpu_smoke.chapter_record("02_data_and_scoring", 3.0, "KeyError: 'x'", tmp_path / "absent.json", None)
    assert ok == {"name": "01_models", "seconds": 12.3, "peak_memory_gib": 1.235, "passed": True, "error": ""}
    assert failed["passed"] is False and failed["peak_memory_gib"] is None
    report = {"device": "NVIDIA H100", "chapters": [ok, failed], "provenance": {"git_commit": "abc"}}
    path = gpu_smoke.write_report(report, tmp_path / "benchmarks" / "gpu_smoke.json")
    assert json.loads(path.read_text()) == report
    for bad in ({**report, "device": ""}, {**report, "chapters": []}, {**report, "provenance": None},
                {**report, "chapters": [{**ok, "passed": "yes"}]}, {**report, "chapters": [{"name": "x"}]}):
        with pytest.raises(ValueError):
            gpu_smoke.check_report(bad)


def test_the_run_refuses_without_cuda(monkeypatch, capsys):
    monkeypatch.setattr(gpu_smoke, "cuda_device", lambda: None)
    assert gpu_smoke.main([]) == 2
    assert "needs a CUDA device" in capsys.readouterr().err
    with pytest.raises(ValueError, match="--cpu"):
        gpu_smoke.run()


def test_make_target_and_what_the_book_claims():
    makefile = (ROOT / "Makefile").read_text()
    assert "\ngpu-smoke:" in makefile and "make gpu-smoke" in makefile and "tools.gpu_smoke" in makefile
    report = gpu_smoke.check_report(json.loads(gpu_smoke.REPORT.read_text()))   # the committed run
    assert not report["device"].startswith("cpu") and report["provenance"]["sizes"].startswith("the cpu profile's")
    failed = {c["name"][:2] for c in report["chapters"] if not c["passed"]}
    for page in ("README.md", "book/intro.md"):
        text = " ".join((ROOT / page).read_text().split())
        assert "unit-tested on CPU only" in text and "data/benchmarks/gpu_smoke.json" in text, page
        assert "not that the full-size models fit" in text and "H200" in report["device"] and "H200" in text, page
        assert failed == {"25", "26"} and "except 25 and 26" in text, f"{page}: say which chapters failed on the GPU"


def test_chapters_at_once_needs_at_least_one(tmp_path):
    with pytest.raises(ValueError, match="jobs"):
        gpu_smoke.execute_chapters([], {}, tmp_path, tmp_path, jobs=0)
    assert gpu_smoke.execute_chapters([], {}, tmp_path, tmp_path, jobs=2) == []


def test_provenance_names_the_commit_of_a_copied_tree(monkeypatch):
    monkeypatch.setattr(gpu_smoke, "ROOT", Path("/"))       # no repository there
    monkeypatch.delenv("KBVQA_COMMIT", raising=False)
    assert gpu_smoke.provenance()["git_commit"] == "unknown"
    monkeypatch.setenv("KBVQA_COMMIT", "abc1234")
    assert gpu_smoke.provenance()["git_commit"] == "abc1234"
    monkeypatch.setattr(gpu_smoke, "ROOT", ROOT)            # a stale .git beside the copied tree loses
    assert gpu_smoke.provenance()["git_commit"] == "abc1234"


def test_the_kernels_keep_the_machines_own_pythonpath(monkeypatch):
    monkeypatch.delenv("PYTHONPATH", raising=False)
    assert gpu_smoke.kernel_pythonpath("/fixtures/site") == "/fixtures/site"
    monkeypatch.setenv("PYTHONPATH", "/tmp/site")      # wheels carried to a machine without an index
    assert gpu_smoke.kernel_pythonpath("/fixtures/site").split(os.pathsep) == ["/fixtures/site", "/tmp/site"]


def test_the_minilm_stand_in_feeds_the_toy_encoders(built, monkeypatch):
    """Chapters 25-26 use the toy encoders in every profile; their text side reads MiniLM from
    ``KBVQA_MINILM`` when set (the smoke run's random stand-in), and the shipped projection fits it."""
    from kbvqa.models import encoders

    monkeypatch.setenv("KBVQA_MINILM", built["minilm"])
    monkeypatch.setattr(encoders, "_MINILM", {})
    tok, model = encoders.load_minilm()
    assert Path(tok.name_or_path).resolve() == Path(built["minilm"]).resolve() and model.config.hidden_size == 384
    enc = encoders.load_encoders()
    assert enc.pooled(texts=["a red fox", "a blue whale"]).shape == (2, enc.config.dim)
    assert smoke_env(Path(built["minilm"]).parents[1])["KBVQA_MINILM"] == built["minilm"]
    monkeypatch.setenv("KBVQA_MINILM", str(Path(built["minilm"]) / "missing"))
    with pytest.raises(ValueError, match="KBVQA_MINILM.*not a folder"):
        encoders.load_minilm()


def test_a_rerun_updates_its_chapters_and_says_so():
    ok = {"name": "a", "seconds": 1.0, "peak_memory_gib": 0.1, "passed": True, "error": ""}
    bad = {**ok, "name": "b", "passed": False, "error": "boom"}
    report = {"device": "NVIDIA H200", "chapters": [ok, bad], "provenance": {"git_commit": "abc"}}
    rerun = {"device": "NVIDIA H200", "chapters": [{**bad, "passed": True, "error": ""}],
             "provenance": {"git_commit": "def"}}
    merged = gpu_smoke.merge_rerun(report, rerun)
    assert [c["passed"] for c in merged["chapters"]] == [True, True] and merged["chapters"][0] is ok
    assert merged["provenance"]["git_commit"] == "abc"
    assert merged["provenance"]["reruns"] == [{"git_commit": "def", "chapters": ["b"]}]
    with pytest.raises(ValueError, match="cannot update"):
        gpu_smoke.merge_rerun(report, {**rerun, "device": "NVIDIA T4"})
    with pytest.raises(ValueError, match="lacks"):
        gpu_smoke.merge_rerun(report, {**rerun, "chapters": [{**ok, "name": "c"}]})
    with pytest.raises(ValueError, match="--update"):
        gpu_smoke.run(cpu=True, update=True, only=["00_toy_world"])
