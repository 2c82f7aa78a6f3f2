"""A part that moves onto the reader (``kbvqa.config.CPU_READER_ROLES``) shows its model pictures at
the reader's size everywhere it builds a prompt, to ask the model or to train it (issue #18).

The tiny VLM saw 56-px views, the reader 112-px ones; a prompt built at the wrong size would be
upscaled by the reader's processor and its boxes would be in the wrong pixels. Each case below
builds one of a part's prompts twice: with the role on the tiny model, then on the reader."""
from __future__ import annotations

import pytest

import kbvqa.config as kbvqa_config
from kbvqa.data import get_world
from kbvqa.models.chat import chat_images


@pytest.fixture(autouse=True)
def _cpu(monkeypatch):
    monkeypatch.setenv("CI", "true")


@pytest.fixture(scope="module")
def world():
    return get_world(0)


def picture_sides(chat) -> set[int]:
    return {(im() if callable(im) else im).size[0] for im in chat_images(chat)}


def _rcts_answer(world):
    from kbvqa.rcts import MCPromptBuilder

    q = world.mc_test[0]
    return picture_sides(MCPromptBuilder(world).kshot(q, list(world.mc_kb[:2])))


def _rcts_setting(world):
    from kbvqa.rcts.settings import toy_setting

    q = world.mc_test[0]
    setting = toy_setting(world, {"candidates": {q.id: [(world.mc_kb[0].id, 1.0)]}}, limit=1)
    return picture_sides(setting.builder(True).kshot(q, [world.mc_kb[0]]))


def _rcts_reasoner(world):
    from kbvqa.rcts.contexts import ReasoningContextConfig

    return {ReasoningContextConfig.for_profile().image_size}


def _reag_cold_start(world):
    from kbvqa.reag import cold_start_examples

    return picture_sides(cold_start_examples(world, 1, seed=0)[0].prompt)


def _reag_grpo(world):
    from kbvqa.reag.traces import grpo_prompts

    return picture_sides(grpo_prompts(world, world.kbvqa_train[:1])[0])


def _reag_trace_writer(world):
    from kbvqa.reag.traces import trace_writer_prompt

    q = world.kbvqa_train[0]
    return picture_sides(trace_writer_prompt(world, q, world.passage(q.evidence_ids[0]), True, q.answers[0]))


def _reag_critic(world):
    from kbvqa.reag.critic import CriticConfig
    from kbvqa.reag.critic_train import CriticTrainConfig
    from kbvqa.retrieval.subject_grounding import GroundingConfig

    return {CriticConfig().image_size, CriticConfig.for_profile().image_size, CriticTrainConfig().image_size,
            GroundingConfig().image_size}


def _molt_judge(world):
    from kbvqa.molt import MOLTExperimentConfig, doc_image_of, grpo_tasks, judge_view
    from kbvqa.molt.sft import SFTDataConfig

    q = world.kbvqa_test[0]
    task = grpo_tasks(world, MOLTExperimentConfig(), n=1)[0]
    return ({judge_view(world, q)().size[0], doc_image_of(world)(world.documents[0])().size[0],
             SFTDataConfig().image_size} | picture_sides(task.prompt))


def _pipeline(world):
    from kbvqa.pipeline import PipelineConfig

    return {PipelineConfig().image_size}


CASES = {"rcts answers": ("generator", _rcts_answer), "rcts setting": ("generator", _rcts_setting),
         "rcts reasoner": ("reasoner", _rcts_reasoner), "reag cold start": ("rl_policy", _reag_cold_start),
         "reag grpo": ("rl_policy", _reag_grpo), "reag trace writer": ("reag_generator", _reag_trace_writer),
         "reag critic and grounder": ("critic", _reag_critic), "molt judge": ("judge", _molt_judge),
         "pipeline": ("reag_generator", _pipeline)}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_part_on_the_reader_shows_pictures_at_the_readers_size(case, world, monkeypatch):
    role, sides = CASES[case]
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", frozenset({"reader"}))
    assert sides(world) == {kbvqa_config.TINY_IMAGE_SIZE}, "on the tiny model: its 56-px views"
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", frozenset({"reader", role}))
    assert sides(world) == {kbvqa_config.READER_IMAGE_SIZE}, f"{role} on the reader: 112-px views"
