import pytest

from kbvqa.models.checkpoints import GPU_CHECKPOINTS
from kbvqa.models.gpu_budget import PARAMS_B, budget_table, fits, memory_gib


def test_memory_follows_the_accounting():
    # 1B parameters in bf16: 2 GB of weights, x1.2 overhead
    assert memory_gib(1.0, "bf16") == pytest.approx(2e9 * 1.2 / 2 ** 30)
    assert memory_gib(1.0, "4bit") == pytest.approx(4.5 / 16 * memory_gib(1.0, "bf16"))
    assert memory_gib(1.0, "lora") == pytest.approx(3e9 / 2 ** 30)
    assert memory_gib(1.0, "full") == pytest.approx(8 * memory_gib(1.0, "bf16"))


def test_every_gpu_checkpoint_has_a_count_and_the_16gb_verdicts():
    assert set(GPU_CHECKPOINTS.values()) <= set(PARAMS_B)
    assert all(fits(c, 16) for c in GPU_CHECKPOINTS.values())          # every role runs inference
    assert not fits("Qwen/Qwen2.5-VL-7B-Instruct", 16)                  # the papers' 7B in bf16 does not
    assert fits("Qwen/Qwen2.5-VL-7B-Instruct", 16, mode="4bit")          # ... in 4-bit it does
    assert fits("HuggingFaceTB/SmolVLM-500M-Instruct", 16, mode="full")
    assert not fits("Qwen/Qwen2-VL-2B-Instruct", 16, mode="full")      # full AdamW on 2B: ~40 GB


def test_table_and_bad_arguments():
    table = budget_table(16, ["Qwen/Qwen2-VL-2B-Instruct"])
    assert table.loc["Qwen/Qwen2-VL-2B-Instruct", "fits 16 GB as"] == "bf16, 4bit, lora"
    for bad in [dict(params_b=0), dict(params_b=1, mode="fp8"), dict(params_b=1, overhead=0.5)]:
        with pytest.raises(ValueError):
            memory_gib(**bad)
    with pytest.raises(ValueError, match="no parameter count"):
        fits("nobody/model")
    with pytest.raises(ValueError):
        budget_table(16, ["nobody/model"])
