import pytest

from kbvqa.models.checkpoints import GPU_CHECKPOINTS
from kbvqa.models.encoders import GPU_ENCODER
from kbvqa.models.gpu_budget import (
    CHAPTER_RETRIEVAL,
    CHAPTER_ROLES,
    CHAPTER_TRAINING,
    PARAMS_B,
    budget_table,
    chapter_budget,
    fits,
    memory_gib,
    retrieval_memory_gib,
    training_gib,
)
from kbvqa.models.gpu_budget import OVER_BUDGET as OVER_BUDGET_LIST
from kbvqa.retrieval.subject_grounding import GPU_GROUNDER


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


CHAPTERS, OVER_BUDGET = CHAPTER_ROLES, OVER_BUDGET_LIST


def test_the_chapter_table_matches_the_notebooks():
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[1] / "notebooks"
    for name, (roles, copies, _) in CHAPTERS.items():
        text = (root / f"{name}.ipynb").read_text()
        found = set(re.findall(r'load_vlm\(\\"(\w+)\\"\)', text)) | ({"generator"} if "load_vlm()" in text else set())
        assert found - {"reader"} <= roles, (name, found)
        assert copies or "deepcopy(" not in text, f"{name} deep-copies a model the table says it trains in place"
    uses = {"get_encoders()": {GPU_ENCODER}, "critic_items(": {GPU_ENCODER}, "get_grounder(": {GPU_GROUNDER},
            "scienceqa_rows(": {GPU_ENCODER},                          # ScienceQA's knowledge base, indexed live
            "retrieve_evidence(": {GPU_ENCODER, GPU_GROUNDER},      # the retrieval models each call loads
            "load_evidence(": {GPU_ENCODER, GPU_GROUNDER}}          # (it retrieves what the committed file lacks)
    for nb in root.glob("*.ipynb"):
        text = nb.read_text()
        needed = {c for call, checkpoints in uses.items() if call in text for c in checkpoints}
        assert needed == set(CHAPTER_RETRIEVAL.get(nb.stem, ())), (nb.stem, needed)
    listed = {p.stem for p in root.glob("*.ipynb") if re.search(r"load_vlm\(", p.read_text())}
    assert listed <= set(CHAPTERS), listed - set(CHAPTERS)


T4_GIB = 14.5      # a 16 GB T4's 15.1 GiB less the CUDA context's share the allocator cannot use (issue 56)


@pytest.mark.parametrize("chapter", sorted(set(CHAPTERS) | set(CHAPTER_RETRIEVAL)))
def test_each_chapter_fits_a_16_gb_t4(chapter):
    """Every model the chapter loads, its training's measured activations, the retrieval models beside."""
    budget = chapter_budget(chapter)
    gib = budget["peak_gib"]
    if chapter in OVER_BUDGET:
        pytest.xfail(f"{chapter}: {gib:.1f} GiB -- {OVER_BUDGET[chapter]}")
    assert (gib > 0) == bool(budget["checkpoints"]) and gib <= T4_GIB, f"{chapter}: {gib:.1f} GiB"


def test_over_budget_list_is_still_true():
    """When a chapter stops training a copy, it leaves OVER_BUDGET (this test then fails)."""
    from kbvqa.models.checkpoints import GPU_CHECKPOINTS
    from kbvqa.models.gpu_budget import chapter_memory_gib

    for chapter in OVER_BUDGET:
        roles, copies, in_place = CHAPTERS[chapter]
        assert chapter_memory_gib({r: GPU_CHECKPOINTS[r] for r in roles}, copies, in_place) > 0.9 * 16
    with pytest.raises(ValueError, match="not among the loaded"):
        chapter_memory_gib({"judge": GPU_CHECKPOINTS["judge"]}, ("critic",))


def test_chapter_budget_lists_downloads_and_memory():
    retrieval_only = chapter_budget("20_reag_retrieval")        # no VLM: CLIP (bf16) and GroundingDINO (fp32)
    assert retrieval_only["checkpoints"] == [GPU_ENCODER, GPU_GROUNDER] and retrieval_only["download_gb"] == 1.3
    assert 0.9 < retrieval_only["peak_gib"] < 1.5
    b = chapter_budget("21_reag_critic")     # the critic trained in place; the ladder's critic retrieves its evidence
    assert b["checkpoints"] == ["Qwen/Qwen2.5-VL-3B-Instruct", GPU_ENCODER, GPU_GROUNDER]
    assert b["download_gb"] == round(3.75 * 2 + retrieval_only["download_gb"], 1) and not b["over_budget"]
    critic = training_gib("Qwen/Qwen2.5-VL-3B-Instruct", CHAPTER_TRAINING["21_reag_critic"])
    peak = critic + retrieval_memory_gib(GPU_ENCODER) + retrieval_memory_gib(GPU_GROUNDER)
    assert b["peak_gib"] == round(peak, 1) <= T4_GIB
    ppo = chapter_budget("18_serts_ppo")        # two named adapters on one base: one 2B model in training mode
    assert ppo["peak_gib"] == round(training_gib("Qwen/Qwen2-VL-2B-Instruct", CHAPTER_TRAINING["18_serts_ppo"]), 1)
    assert not ppo["over_budget"]
    cold = chapter_budget("22_reag_cold_start")  # the 3B trace writer beside the student, then the student trains
    assert cold["checkpoints"] == ["HuggingFaceTB/SmolVLM-256M-Instruct", "Qwen/Qwen2.5-VL-3B-Instruct"]
    assert cold["peak_gib"] == round(memory_gib(3.75, "bf16") + memory_gib(0.256, "bf16"), 1)
    assert "Qwen/Qwen2.5-VL-3B-Instruct" in chapter_budget("24_reag_ablation")["checkpoints"]
    assert GPU_ENCODER in chapter_budget("14_rcts_experiments")["checkpoints"]


def test_training_memory_counts_the_measured_activations():
    """LoRA training = bf16 weights + the fixed allowance + rows x (tokens x body + completion x head)
    bytes, from the committed benchmark; recomputation keeps far fewer bytes a token than the plain pass."""
    from kbvqa.models.gpu_budget import (
        GIB,
        TRAINING_EXTRA_GIB,
        Training,
        activation_figures,
        activation_gib,
    )

    figures = activation_figures()
    assert set(figures) >= set(GPU_CHECKPOINTS.values()) - {"HuggingFaceTB/SmolVLM-500M-Instruct"}
    for name, f in figures.items():
        assert 0 < f["checkpointing"] < f["plain"] / 3, name         # recomputation: a fraction of the bytes
        assert f["head"] > 4 * 49000                                   # float32 logits over the vocabulary
    qwen = figures["Qwen/Qwen2-VL-2B-Instruct"]
    step = Training("sft", tokens=1000, completion=100, rows=2)
    assert activation_gib("Qwen/Qwen2-VL-2B-Instruct", step) == pytest.approx(
        2 * (1000 * qwen["checkpointing"] + 100 * qwen["head"]) / GIB)
    plain = Training("sft", tokens=1000, completion=100, rows=2, checkpointing=False)
    assert activation_gib("Qwen/Qwen2-VL-2B-Instruct", plain) > 3 * activation_gib("Qwen/Qwen2-VL-2B-Instruct", step)
    assert Training("critic", 10, 1).batch_rows == 4 and Training("grpo", 10, 1).batch_rows == 1
    assert training_gib("Qwen/Qwen2-VL-2B-Instruct", step) == pytest.approx(
        2.21e9 * 2 / GIB + TRAINING_EXTRA_GIB + activation_gib("Qwen/Qwen2-VL-2B-Instruct", step))
    with pytest.raises(ValueError, match="no activation figure"):
        activation_gib("Qwen/Qwen2.5-VL-7B-Instruct", step)


# Where a notebook loads a role other than by load_vlm("role"), and where it starts training a loaded one.
LOADERS = {"reag_generator": ("load_trace_writer(",)}
TRAINING_CALLS = ("sft_train(", "grpo_train(", "train_critic(", "ppo_step(", "cold_started_policy(")


def test_phased_chapters_free_one_model_before_the_next():
    """A chapter in CHAPTER_PHASES loads each phase's models (or starts its training) in order, with
    free_memory() between one phase and the next."""
    from pathlib import Path

    from kbvqa.models.gpu_budget import CHAPTER_PHASES

    root = Path(__file__).resolve().parents[1] / "notebooks"
    for chapter, phases in CHAPTER_PHASES.items():
        text = (root / f"{chapter}.ipynb").read_text()
        assert {r for roles, _, _ in phases for r in roles} == CHAPTERS[chapter][0]

        def start(prev, phase, text=text, chapter=chapter):
            roles, _, in_place = phase
            new = roles - prev
            if new:
                found = [text.find(s) for r in new for s in (f'load_vlm(\\"{r}\\")', *LOADERS.get(r, ()))]
            else:                                  # nothing new: the phase trains what is loaded
                assert in_place, (chapter, phase)
                found = [text.find(call) for call in TRAINING_CALLS]
            found = [i for i in found if i >= 0]
            assert found, (chapter, phase)
            return min(found)

        starts = [start(prev[0], phase) for prev, phase in zip(((set(), (), ()),) + phases, phases)]
        assert starts == sorted(starts), (chapter, starts)
        for before, after in zip(starts, starts[1:]):
            assert "free_memory()" in text[before:after], f"{chapter}: no free_memory() before a phase starts"
    assert chapter_budget("00_toy_world") == {"checkpoints": [], "download_gb": 0.0, "peak_gib": 0.0,
                                              "over_budget": ""}


# The committed hub configs (data/hub_configs, kbvqa.models.hub_configs): full-size shapes without a hub.
# Model cards round to three significant figures (2.21B, 3.75B: at most 0.25 % off), so 1 % is loose
# enough for rounding and tight enough to catch a wrong entry (a 7B count against a 3B config).
PARAMS_TOLERANCE = 0.01


def test_every_committed_config_builds_on_meta_and_matches_params_b():
    from kbvqa.models.hub_configs import committed_checkpoints, meta_model, param_count, params_b_disagreements

    committed = committed_checkpoints()
    assert committed, "data/hub_configs holds no config.json"
    for checkpoint in committed:
        model = meta_model(checkpoint)
        assert all(p.is_meta for p in model.parameters()), checkpoint      # shapes only, nothing allocated
        assert checkpoint in PARAMS_B, checkpoint
        exact_b = param_count(checkpoint) / 1e9
        assert exact_b == pytest.approx(PARAMS_B[checkpoint], rel=PARAMS_TOLERANCE), (checkpoint, exact_b)
    assert params_b_disagreements(PARAMS_B, PARAMS_TOLERANCE) == {}


def test_exact_counts_of_the_committed_configs():
    """Pinned, so a changed file (or a transformers release that builds it differently) is noticed."""
    from kbvqa.models.hub_configs import param_count

    assert param_count("Qwen/Qwen2-VL-2B-Instruct") == 2_208_985_600
    assert param_count("Qwen/Qwen2.5-VL-3B-Instruct") == 3_754_622_976


@pytest.mark.parametrize("checkpoint", sorted(set(GPU_CHECKPOINTS.values())))
def test_each_gpu_checkpoint_has_a_committed_config(checkpoint):
    from kbvqa.models.hub_configs import MISSING, committed_checkpoints, config_dir

    committed = set(committed_checkpoints())
    assert not committed & set(MISSING), "a committed config must leave hub_configs.MISSING"
    assert set(MISSING) <= set(GPU_CHECKPOINTS.values()), "MISSING names only gpu-profile checkpoints"
    if checkpoint in MISSING:
        assert MISSING[checkpoint].strip()
        pytest.xfail(f"{checkpoint}: no committed config.json -- {MISSING[checkpoint]}")
    assert checkpoint in committed
    assert (config_dir(checkpoint) / "config.json").is_file()


def test_hub_configs_refuse_unknown_checkpoints_and_bad_tolerance():
    from kbvqa.models.hub_configs import config_dir, params_b_disagreements

    with pytest.raises(ValueError, match="no committed config.json"):
        config_dir("nobody/model")
    with pytest.raises(ValueError, match="SmolVLM|not found"):
        config_dir("HuggingFaceTB/SmolVLM-256M-Instruct")
    with pytest.raises(ValueError, match="tolerance"):
        params_b_disagreements(PARAMS_B, -0.1)
    wrong = dict(PARAMS_B, **{"Qwen/Qwen2.5-VL-3B-Instruct": 8.29})            # a 7B count on the 3B
    assert set(params_b_disagreements(wrong, PARAMS_TOLERANCE)) == {"Qwen/Qwen2.5-VL-3B-Instruct"}
