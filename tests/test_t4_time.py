"""The estimated time of each chapter's live work on a free Colab T4 (issue 56, item 5)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from kbvqa.models import t4_time
from kbvqa.models.checkpoints import GPU_CHECKPOINTS
from kbvqa.models.gpu_budget import CHAPTER_RETRIEVAL, CHAPTER_ROLES, PARAMS_B, chapter_budget
from kbvqa.models.t4_time import (
    CHAPTER_WORK,
    KV_BYTES,
    T4_MINUTES_LIMIT,
    Generate,
    Score,
    Train,
    chapter_minutes,
    item_seconds,
)

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
WITH_MODELS = sorted(c for c in set(CHAPTER_ROLES) | set(CHAPTER_RETRIEVAL) if chapter_budget(c)["checkpoints"])


@pytest.mark.parametrize("chapter", WITH_MODELS)
def test_each_chapter_fits_a_free_session(chapter):
    """Every chapter that loads a model has its work listed, and its estimate is <= 20 minutes."""
    assert chapter in CHAPTER_WORK, f"{chapter}: list its live work in kbvqa.models.t4_time.CHAPTER_WORK"
    minutes = chapter_minutes(chapter)
    assert 0 < minutes["total"] <= T4_MINUTES_LIMIT, (chapter, minutes)


def test_the_work_table_names_only_what_each_chapter_loads():
    for chapter, work in CHAPTER_WORK.items():
        roles = {item.role for item in work.items}
        loaded = CHAPTER_ROLES.get(chapter, (set(), (), ()))[0]
        assert roles <= loaded, (chapter, roles - loaded)
        trained = {item.role for item in work.items if isinstance(item, Train)}
        _, copies, in_place = CHAPTER_ROLES.get(chapter, (set(), (), ()))
        assert trained <= set(copies) | set(in_place), (chapter, trained)
    assert set(KV_BYTES) >= {GPU_CHECKPOINTS[r] for w in CHAPTER_WORK.values() for r in {i.role for i in w.items}}


def test_the_accounting_by_hand():
    """Prefill and training are compute-bound at the assumed utilisation; a decoding step is the
    larger of reading the weights and KV cache and computing, plus the step overhead."""
    flops = t4_time.T4_PEAK_FLOPS * t4_time.UTILISATION
    params = PARAMS_B[GPU_CHECKPOINTS["judge"]] * 1e9
    assert item_seconds(Score("judge", 10, 100)) == pytest.approx(2 * params * 1000 / flops)
    assert item_seconds(Train("judge", 2, 4, 100)) == pytest.approx(8 * params * 800 / flops)
    one = item_seconds(Generate("judge", 1, 100, 10, batch=1))
    step = max((2 * params + 105 * KV_BYTES[GPU_CHECKPOINTS["judge"]]) / (t4_time.T4_BANDWIDTH * t4_time.BANDWIDTH_SHARE),
               2 * params / flops) + t4_time.STEP_OVERHEAD_S
    assert one == pytest.approx(2 * params * 100 / flops + 10 * step)
    # batching shares the weights' read: 16 sequences at once cost far less than 16 one by one
    assert item_seconds(Generate("judge", 16, 100, 10, batch=16)) < 16 * one / 4
    with pytest.raises(TypeError):
        item_seconds(object())
    assert chapter_minutes("00_toy_world") == {"load": 0.0, "work": 0.0, "total": 0.0}


# The gpu-profile sizes the work table assumes, as the cells write them (a change to a cell fails here).
CELL_SIZES = {
    "10_rcts_reasoning_contexts": ("profile.size(4, 24)", 24 * 10),
    "14_rcts_experiments": ("profile.size(6, 12)", 2 * 12),
    "18_serts_ppo": ('profile.size((2, 2), (8, made[\\"sim\\"]))', 8 * 6 * 2),
    "21_reag_critic": ("steps=profile.size(2, 40)", None),
    "22_reag_cold_start": ("n_train = profile.size(4, 256)", 256),
    "23_reag_grpo": ("steps = profile.size(1, 60)", 60 * 16),
    "27_molt_training": ("steps=profile.size(1, 12)", 12 * 8),
}


@pytest.mark.parametrize("chapter", sorted(CELL_SIZES))
def test_the_table_follows_the_cells(chapter):
    cell, sequences = CELL_SIZES[chapter]
    assert cell in (NOTEBOOKS / f"{chapter}.ipynb").read_text(), (chapter, cell)
    first = next(i for i in CHAPTER_WORK[chapter].items if isinstance(i, Generate)) if sequences else None
    if sequences:
        assert first.sequences == sequences, (chapter, first)
    else:
        assert next(i for i in CHAPTER_WORK[chapter].items if isinstance(i, Train)).steps == 40
    made = json.loads((Path(__file__).resolve().parents[1] / "data/experiments/serts_ppo/results.json").read_text())
    assert made["config"]["sim"] == 6                    # chapter 18's Sim, read from the committed experiment
