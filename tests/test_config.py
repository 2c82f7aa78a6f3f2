"""kbvqa.config: profile selection, seeding, paths."""
import random

import numpy as np
import pytest
import torch

from kbvqa import config
from kbvqa.config import Profile, get_profile, seed_everything


def test_ci_is_always_cpu(monkeypatch):
    monkeypatch.setenv("CI", "true")
    monkeypatch.setenv("KBVQA_PROFILE", "gpu")
    assert get_profile().name == "cpu"


def test_env_override_and_auto(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("KBVQA_PROFILE", "cpu")
    assert get_profile().name == "cpu"
    monkeypatch.delenv("KBVQA_PROFILE")
    monkeypatch.setattr(config, "cuda_available", lambda: False)
    assert get_profile().name == "cpu"
    monkeypatch.setattr(config, "cuda_available", lambda: True)
    prof = get_profile()
    assert prof.name == "gpu" and prof.device == "cuda" and prof.is_gpu


def test_unknown_profile_raises(monkeypatch):
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("KBVQA_PROFILE", "tpu")
    with pytest.raises(ValueError, match="unknown profile"):
        get_profile()
    with pytest.raises(ValueError, match="unknown profile"):
        get_profile("quantum")


def test_gpu_without_cuda_raises(monkeypatch):
    monkeypatch.setattr(config, "cuda_available", lambda: False)
    with pytest.raises(ValueError, match="CUDA"):
        get_profile("gpu")


@pytest.mark.parametrize("kw", [dict(name="x", device="cpu", scale=1, max_eval=1),
                                dict(name="cpu", device="cpu", scale=0, max_eval=1),
                                dict(name="cpu", device="cpu", scale=1, max_eval=0),
                                dict(name="gpu", device="cuda", scale=1, max_eval=1, sizes="tiny")])
def test_bad_profile_settings(kw):
    with pytest.raises(ValueError):
        Profile(**kw)


def test_sizes_follow_the_profile_unless_the_smoke_run_asks_for_the_cpu_ones(monkeypatch):
    from kbvqa.rcts import ReasoningContextConfig
    from kbvqa.retrieval import MultilevelConfig

    monkeypatch.setattr(config, "cuda_available", lambda: True)
    monkeypatch.delenv("KBVQA_SIZES", raising=False)
    full, cpu = get_profile("gpu"), get_profile("cpu")
    assert (full.size(12, 200), cpu.size(12, 200)) == (200, 12) and full.full_sizes and not cpu.full_sizes
    monkeypatch.setenv("KBVQA_SIZES", "cpu")
    small = get_profile("gpu")
    assert small.is_gpu and small.device == "cuda" and small.size(12, 200) == 12
    assert (small.scale, small.max_eval) == (cpu.scale, cpu.max_eval)
    # the code path stays the gpu one (paper prompts, native pictures); only the sizes shrink
    assert not small.short_prompts and small.image_size is None
    paper, smoke = ReasoningContextConfig.for_profile(full), ReasoningContextConfig.for_profile(small)
    assert smoke.n_candidates == ReasoningContextConfig.for_profile(cpu).n_candidates < paper.n_candidates
    assert (smoke.short_prompts, smoke.image_size, smoke.pairs_per_call) == \
        (paper.short_prompts, paper.image_size, paper.pairs_per_call)
    assert MultilevelConfig.for_profile(small).k == MultilevelConfig.for_profile(cpu).k < MultilevelConfig.for_profile(full).k
    assert MultilevelConfig.for_profile(small).subject_method == MultilevelConfig.for_profile(full).subject_method
    monkeypatch.setenv("KBVQA_SIZES", "huge")
    with pytest.raises(ValueError, match="KBVQA_SIZES"):
        get_profile("gpu")


def test_seed_everything_repeats():
    def draw():
        return random.random(), float(np.random.rand()), float(torch.rand(1))

    seed_everything(123)
    a = draw()
    seed_everything(123)
    assert draw() == a
    seed_everything(124)
    assert draw() != a


@pytest.mark.parametrize("bad", [-1, 1.5, "3", True])
def test_seed_everything_rejects_bad_seeds(bad):
    with pytest.raises(ValueError):
        seed_everything(bad)


def test_cache_dir_env(tmp_path, monkeypatch):
    monkeypatch.setenv("KBVQA_CACHE", str(tmp_path / "c"))
    d = config.cache_dir()
    assert d == tmp_path / "c" and d.is_dir()


GPU = Profile("gpu", "cuda", scale=4.0, max_eval=500)   # made directly: get_profile would ask for CUDA


def test_profile_decides_prompts_and_pictures(monkeypatch):
    from kbvqa.config import PROFILE_DEFAULT, profile_value
    from kbvqa.molt.sft import SFTDataConfig
    from kbvqa.pipeline import PipelineConfig
    from kbvqa.reag.critic import CriticConfig
    from kbvqa.reag.critic_train import CriticTrainConfig
    from kbvqa.retrieval.subject_grounding import GroundingConfig
    from kbvqa.serts.search import SeRTSConfig

    monkeypatch.setenv("CI", "true")
    configs = (PipelineConfig, SFTDataConfig, CriticConfig, CriticTrainConfig, GroundingConfig)
    for cls in configs:                     # cpu: what the model of the config's role was trained on
        cfg = cls()
        assert (cfg.short_prompts, cfg.image_size) == (True, 112), cls      # every role's model: the reader
    assert SeRTSConfig().short_prompts is True
    assert PipelineConfig(image_size=None, short_prompts=False).image_size is None     # explicit values stay
    assert profile_value("image_size", 112) == 112 and profile_value("image_size", PROFILE_DEFAULT) == 56

    import kbvqa.config as config
    monkeypatch.setattr(config, "get_profile", lambda name=None: GPU)
    for cls in configs:                     # gpu: the papers' prompts, native images
        cfg = cls()
        assert (cfg.short_prompts, cfg.image_size) == (False, None), cls
    assert SeRTSConfig().short_prompts is False
    assert CriticConfig.for_profile(GPU) == CriticConfig(short_prompts=False, image_size=None)
    assert profile_value("short_prompts", PROFILE_DEFAULT) is False


def test_picture_size_follows_the_model_that_plays_the_role(monkeypatch):
    """cpu: 112 px for a role the reader plays, 56 px for the tiny VLM's; gpu: native for every role."""
    from kbvqa.config import PROFILE_DEFAULT, READER_IMAGE_SIZE, TINY_IMAGE_SIZE, plays_reader, profile_value

    cpu, gpu = Profile("cpu", "cpu", 1.0, 10), Profile("gpu", "cuda", 4.0, 10)
    assert plays_reader("reader") and plays_reader("critic") and not plays_reader("rl_policy_large")
    assert not plays_reader(None) and cpu.image_size_of("rl_policy_large") == TINY_IMAGE_SIZE
    assert cpu.image_size_of("reader") == READER_IMAGE_SIZE == 112
    assert cpu.image_size == TINY_IMAGE_SIZE and gpu.image_size_of("reader") is None
    monkeypatch.setattr(config, "CPU_READER_ROLES", frozenset({"reader"}))       # a part moved back to the tiny model
    assert not plays_reader("critic") and cpu.image_size_of("critic") == TINY_IMAGE_SIZE
    monkeypatch.setattr(config, "CPU_READER_ROLES", frozenset({"reader", "critic"}))
    assert plays_reader("critic") and cpu.image_size_of("critic") == 112 and cpu.image_size_of("judge") == 56
    assert profile_value("image_size", PROFILE_DEFAULT, cpu, role="critic") == 112
    assert profile_value("image_size", 84, cpu, role="critic") == 84        # an explicit value stays
    assert profile_value("short_prompts", PROFILE_DEFAULT, cpu, role="critic") is True   # both cpu models: short
    with pytest.raises(ValueError, match="profile field"):
        profile_value("batch_size", PROFILE_DEFAULT, cpu)


def test_reader_picture_size_is_the_shipped_readers_input():
    import json

    from kbvqa.config import DATA_DIR, READER_IMAGE_SIZE

    assert json.loads((DATA_DIR / "reader" / "reader.json").read_text())["architecture"]["image_size"] == READER_IMAGE_SIZE


def test_progress_bars_off_in_the_book_build(monkeypatch):
    from kbvqa.config import progress_enabled

    monkeypatch.delenv("KBVQA_PROGRESS", raising=False)
    assert progress_enabled() and progress_enabled(True) and not progress_enabled(False)
    monkeypatch.setenv("KBVQA_PROGRESS", "0")           # make book / tools.nb_execute set it
    assert not progress_enabled() and not progress_enabled(True)
    from tools.nb_execute import BOOK_ENV

    assert BOOK_ENV["KBVQA_PROGRESS"] == "0"


def test_the_book_prints_warnings_without_machine_paths(monkeypatch):
    import warnings

    from kbvqa.config import REPO_ROOT, short_path, short_warning_paths

    assert short_path("/opt/venv/lib/python3.11/site-packages/transformers/utils/x.py") == "transformers/utils/x.py"
    assert short_path(str(REPO_ROOT / "kbvqa" / "config.py")) == "kbvqa/config.py"
    assert short_path(str(REPO_ROOT.parent / "shared" / "data-samples" / "vsr")) == "../shared/data-samples/vsr"
    assert short_path("/somewhere/else/module.py") == "module.py"
    monkeypatch.setattr(warnings, "formatwarning", warnings.formatwarning)
    short_warning_paths()
    short_warning_paths()                                  # idempotent: wraps once
    text = warnings.formatwarning("slow", UserWarning, "/home/someone/.venv/lib/site-packages/torch/a.py", 3)
    assert text.startswith("torch/a.py:3: UserWarning: slow") and "/home/" not in text
