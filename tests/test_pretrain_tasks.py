"""The pretraining mixture: valid, deterministic, leak-free examples; evaluation sets; lengths; a
smoke step of a tiny Qwen2-VL on a mixed batch."""
from __future__ import annotations

import itertools
import random
import re
from collections import Counter

import pytest

from kbvqa.data import ToyWorldConfig, get_world
from kbvqa.models.chat import normalise_chat
from kbvqa.models.pretrain_counterfactual import swap_values
from kbvqa.models.pretrain_mc_lit import (
    bm25_search,
    good_query,
    heldout_lit_ids,
    lit_question_split,
    rubric_score,
)
from kbvqa.models.pretrain_mix import (
    EVAL_TASKS,
    TASKS,
    PretrainMixConfig,
    eval_examples,
    example_texts,
    iter_pretrain_examples,
    make_example,
    pretrain_batch,
    pretrain_corpus_texts,
    token_length_report,
)
from kbvqa.parsers import parse_think_answer
from kbvqa.prompts.formats import UNKNOWN


@pytest.fixture(scope="module")
def world():
    return get_world(0, ToyWorldConfig.small())


def _image_view_ids(example) -> list[str]:
    """The view ids behind the lazy images of a prompt (functools.partial(_, world, view_id, size))."""
    return [p["image"].args[1] for m in example.prompt for p in m["content"] if p["type"] == "image"]


def _signature(example) -> tuple:
    return (example.task, tuple(example_texts(example)), tuple(_image_view_ids(example)), example.loss_on)


def test_every_task_gives_valid_repeatable_examples(world):
    cfg = PretrainMixConfig()
    for task in TASKS:
        for seed in range(3):
            a = make_example(world, task, random.Random(seed), cfg)
            b = make_example(world, task, random.Random(seed), cfg)
            assert _signature(a) == _signature(b), task
            assert a.task == task and a.loss_on in ("completion", "all")
            assert isinstance(a.completion, str) and a.completion.strip(), task
            chat = normalise_chat(a.prompt)   # valid chat; renders the (downscaled) images
            assert chat[-1]["role"] == "user"
            for m in chat:
                for p in m["content"]:
                    if p["type"] == "image":
                        assert p["image"].size == (56, 56)
            assert set(a.meta) >= {"query_ids", "image_ids", "doc_ids"}
            assert sorted(a.meta["image_ids"]) == sorted(_image_view_ids(a)), task
    with pytest.raises(ValueError, match="unknown task"):
        make_example(world, "no_such_task", random.Random(0))


def test_stream_is_seeded_and_resumable(world):
    first = [_signature(e) for e in itertools.islice(iter_pretrain_examples(world, PretrainMixConfig(seed=3)), 40)]
    again = [_signature(e) for e in itertools.islice(iter_pretrain_examples(world, PretrainMixConfig(seed=3)), 40)]
    other = [_signature(e) for e in itertools.islice(iter_pretrain_examples(world, PretrainMixConfig(seed=4)), 40)]
    resumed = [_signature(e) for e in itertools.islice(iter_pretrain_examples(world, PretrainMixConfig(seed=3), start=25), 15)]
    assert first == again and first != other and first[25:] == resumed
    only = PretrainMixConfig(weights={"critic": 1.0, "grounding": 0.0})
    assert {e.task for e in itertools.islice(iter_pretrain_examples(world, only), 20)} == {"critic"}


def test_no_test_item_reaches_the_pretraining_stream(world):
    test_queries = {q.id for q in world.kbvqa_test + world.mc_test + world.mc_kb} | set(heldout_lit_ids(world))
    test_views = {q.meta["view_id"] for q in world.kbvqa_test + world.mc_test + world.mc_kb}
    heldout_texts = {q.question for q in lit_question_split(world)[1]} | {q.solution for q in lit_question_split(world)[1]}
    seen = Counter()
    for e in itertools.islice(iter_pretrain_examples(world), 600):
        seen[e.task] += 1
        assert not set(e.meta["query_ids"]) & test_queries, e.task
        assert not set(_image_view_ids(e)) & test_views, e.task
        text = "\n".join(example_texts(e))
        assert not any(t in text for t in heldout_texts), e.task
    assert set(seen) == {t for t, w in PretrainMixConfig().weights.items() if w > 0}
    reading = PretrainMixConfig(weights={"kbvqa_counterfactual": 1.0})
    for e in itertools.islice(iter_pretrain_examples(world, reading), 100):
        assert not set(e.meta["query_ids"]) & test_queries and not set(_image_view_ids(e)) & test_views


def test_kbvqa_answer_is_in_a_passage_when_the_gold_is_there(world):
    cfg = PretrainMixConfig(gold_missing_rate=0.3)
    styles, with_gold = Counter(), 0
    for seed in range(150):
        e = make_example(world, "kbvqa_with_passages", random.Random(seed), cfg)
        passages = [world.passage(pid).text for pid in e.meta["passage_ids"]]
        assert 1 <= len(passages) <= cfg.max_passages and len(set(e.meta["passage_ids"])) == len(passages)
        style = e.meta["style"]
        styles[style] += 1
        answer = parse_think_answer(e.completion).answer if style == "reag" else e.completion
        if e.meta["gold_included"]:
            with_gold += 1
            items = e.meta["answers"] if e.meta["answer_type"] == "multi" else [e.meta["answers"][0]]
            for item in items:
                assert any(item in p for p in passages), (item, passages)
                assert item in answer
        else:
            assert answer == UNKNOWN
            q = next(q for q in world.kbvqa_train if q.id == e.meta["query_ids"][0])
            assert q.evidence_ids[0] not in e.meta["passage_ids"]
    assert set(styles) == {"reag", "evqa", "infoseek"} and 0.55 < with_gold / 150 < 0.85
    e = make_example(world, "kbvqa_no_passage", random.Random(0), cfg)
    assert parse_think_answer(e.completion).answer == UNKNOWN and e.meta["passage_ids"] == []


def test_critic_labels_and_negative_kinds(world):
    cfg = PretrainMixConfig()
    examples = [make_example(world, "critic", random.Random(s), cfg) for s in range(400)]
    labels = Counter(e.completion for e in examples)
    assert set(labels) == {"Yes", "No"} and 0.42 < labels["Yes"] / 400 < 0.58
    negatives = [e for e in examples if e.completion == "No"]
    hard = sum(e.meta["negative_kind"] == "hard" for e in negatives) / len(negatives)
    assert 0.6 < hard < 0.8
    for e in examples:
        q = next(q for q in world.kbvqa_train if q.id == e.meta["query_ids"][0])
        pid = e.meta["passage_ids"][0]
        assert (pid == q.evidence_ids[0]) == (e.completion == "Yes")
        if e.meta.get("negative_kind") == "hard":
            p = world.passage(pid)
            lookalike_docs = {world.document_of(x.id).id for x in world.lookalikes(q.meta["entity_id"])}
            assert p.section == world.passage(q.evidence_ids[0]).section and p.doc_id in lookalike_docs


def test_mc_in_context_examples_show_the_answer(world):
    cfg = PretrainMixConfig(mc_k_weights={3: 1.0})
    for seed in range(30):
        e = make_example(world, "mc_in_context", random.Random(seed), cfg)
        roles = [m["role"] for m in e.prompt]
        assert roles == ["system"] + ["user", "assistant"] * 3 + ["user"]
        assert re.match(r"(\*\*THOUGHT PROCESS:\*\*\n.*\n\*\*FINAL ANSWER:\*\*\n)?The answer is [A-D]\.\nBECAUSE: ",
                        e.completion, re.DOTALL)
        assert f"The answer is {e.meta['answers'][0]}." in e.completion
        assert e.meta["answer_shown"] and len(e.meta["query_ids"]) == 4


def test_grounding_pairwise_and_drill_targets(world):
    cfg = PretrainMixConfig()
    for seed in range(20):
        g = make_example(world, "grounding", random.Random(seed), cfg)
        x0, y0, x1, y1 = map(int, re.fullmatch(r"\[(\d+), (\d+), (\d+), (\d+)\]", g.completion).groups())
        assert 0 <= x0 < x1 <= 56 and 0 <= y0 < y1 <= 56
        q = next(q for q in world.kbvqa_train + world.mc_train if q.id == g.meta["query_ids"][0])
        assert abs(x0 - q.box[0] / 2) <= 1 and abs(y1 - q.box[3] / 2) <= 1
        p = make_example(world, "pairwise", random.Random(seed), cfg)
        assert p.completion.endswith(f"<winner>{p.meta['winner']}</winner>") and p.meta["winner"] in p.meta["candidate_ids"]
        d = make_example(world, "lookup_drill", random.Random(seed), cfg)
        facts = d.prompt[0]["content"][0]["text"]
        for line in d.completion.split("\n"):
            value = re.fullmatch(r"Q: .+\? A: (.+)\.", line).group(1)
            assert value in facts


def test_literature_split_and_query_reformulation(world):
    pretrain, heldout = lit_question_split(world)
    assert lit_question_split(world) == (pretrain, heldout)
    ids = [q.id for q in pretrain + heldout]
    assert sorted(ids) == sorted(q.id for q in world.lit_questions) and len(set(ids)) == len(ids)
    assert abs(len(heldout) - len(world.lit_questions) / 2) <= 4
    gains = []
    for q in pretrain:
        bare = bm25_search(world, q.question, 5)
        good = bm25_search(world, good_query(world, q), 5)
        gains.append(len(set(good) & set(q.gold_doc_ids)) - len(set(bare) & set(q.gold_doc_ids)))
        assert rubric_score(world, q, list(q.gold_doc_ids)[:5]) >= 3
        assert rubric_score(world, q, []) == 0
    assert sum(gains) > 0


def test_eval_sets_use_test_splits(world):
    test_ids = {q.id for q in world.kbvqa_test + world.mc_test + world.mc_kb} | set(heldout_lit_ids(world))
    for task in EVAL_TASKS:
        examples = eval_examples(world, task, n=4)
        assert examples and all(e.task == task for e in examples)
        assert all(e.meta["query_ids"][0] in test_ids for e in examples), task
        assert [_signature(e) for e in examples] == [_signature(e) for e in eval_examples(world, task, n=4)]
    critic = eval_examples(world, "critic")
    assert Counter(e.completion for e in critic) == {"Yes": len(world.kbvqa_test), "No": 2 * len(world.kbvqa_test)}
    same_rule = eval_examples(world, "mc_3_same_rule")
    mc_kb_ids = {q.id for q in world.mc_kb}
    assert all(set(e.meta["query_ids"][1:]) <= mc_kb_ids for e in same_rule)
    assert all(e.completion.startswith(f"The answer is {e.meta['answers'][0]}.") for e in same_rule)
    train = eval_examples(world, "kbvqa_gold_passage", split="train", n=3)
    assert all(e.meta["query_ids"][0].startswith("kbvqa_train") for e in train)
    with pytest.raises(ValueError):
        eval_examples(world, "no_such_task")
    with pytest.raises(ValueError):
        eval_examples(world, "critic", split="validation")


def test_config_validation():
    for bad in ({"weights": {"nope": 1.0}}, {"weights": {"critic": -1.0}}, {"critic_hard_rate": 1.5},
                {"image_size": 50}, {"max_passages": 0}, {"mc_k_weights": {5: 1.0}},
                {"distractor_mix": (1.0, 0.0)}, {"drill_entities": (3, 2)}):
        with pytest.raises(ValueError):
            PretrainMixConfig(**bad)


def test_token_lengths_and_a_tiny_training_step(world):
    import torch

    from kbvqa.models import build_tiny_vlm

    texts = pretrain_corpus_texts(world, samples_per_task=5)
    vlm = build_tiny_vlm("qwen2_vl", texts=texts, vocab_size=5000)
    report = token_length_report(world, vlm.tokenizer, n=12)
    assert set(report) == set(TASKS)
    for row in report.values():
        assert 0 < row["p50"] <= row["p95"] <= row["max"] < 1500 and row["unk_rate"] < 0.01
    examples = list(itertools.islice(iter_pretrain_examples(world), 6))
    examples += [make_example(world, "document_lm", random.Random(1))]
    batch = pretrain_batch(vlm, examples)
    answer_only = [i for i, e in enumerate(examples) if e.loss_on == "completion"]
    reference = vlm.training_batch([examples[i].prompt for i in answer_only],
                                   [examples[i].completion for i in answer_only], loss_on="completion")
    for j, i in enumerate(answer_only):   # same labelled tokens as the library's answer-only batch
        assert (batch["labels"][i][batch["labels"][i] != -100].tolist()
                == reference["labels"][j][reference["labels"][j] != -100].tolist())
    lm_row = len(examples) - 1
    assert (batch["labels"][lm_row] != -100).sum() > len(vlm.tokenizer(examples[-1].completion).input_ids)
    with torch.no_grad():
        loss = vlm.model(**batch).loss
    assert torch.isfinite(loss) and 5 < loss.item() < 12   # about ln(vocabulary) for random weights


def test_swap_values_replaces_whole_values_only():
    assert swap_values("45 cm, 145 cm, 4.5 kg, 45.", {"45": "62"}) == "62 cm, 145 cm, 4.5 kg, 62."
    assert swap_values("the mox and the moxa", {"mox": "zub", "moxa": "kel"}) == "the zub and the kel"
    assert swap_values("a b", {"a": "b", "b": "a"}) == "b a"  # one pass: no chain replacement
    assert swap_values("text", {}) == "text"


def test_counterfactual_examples_can_only_be_answered_by_reading(world):
    cfg = PretrainMixConfig(gold_missing_rate=0.0, max_passages=3)
    real = {}
    for q in world.kbvqa_train:
        real.setdefault(q.meta["attribute"], set()).update(q.answers)
    swapped = 0
    for seed in range(120):
        e = make_example(world, "kbvqa_counterfactual", random.Random(seed), cfg)
        assert e.task == "kbvqa_counterfactual" and e.meta["gold_included"]
        if not e.meta["counterfactual"]:
            continue
        swapped += 1
        q = next(q for q in world.kbvqa_train if q.id == e.meta["query_ids"][0])
        prompt = "\n".join(example_texts(e)[:-1])
        items = e.meta["answers"] if e.meta["answer_type"] == "multi" else [e.meta["answers"][0]]
        answer = parse_think_answer(e.completion).answer if e.meta["style"] == "reag" else e.completion
        for item in items:
            assert item in prompt and item in answer
            assert item in real[q.meta["attribute"]]          # a real value of another training creature
        assert e.meta["answers"] != list(q.answers)           # ... but not this creature's
        gold_text = swap_values(world.passage(q.evidence_ids[0]).text, dict.fromkeys(q.answers, "@"))
        assert "@" in gold_text                                # the true value was in the real passage
    assert swapped >= 100
