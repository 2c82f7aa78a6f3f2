"""RCTS's letter-binding adapter (issue 52, item 3): the data train on training rules only, the gate
reads mc_kb and never mc_test, options stay shuffled, and the gate's letter read agrees with the
model's own completion log-probs."""
import dataclasses
import random

import pytest

from kbvqa.data import get_world
from kbvqa.data.schema import option_letters
from kbvqa.rcts.letter_binding import (
    ANSWER_LEAD,
    LetterBindingConfig,
    gate_items,
    response_text,
    same_rule_prompts,
    shuffled_options,
    training_examples,
)


@pytest.fixture(scope="module")
def world():
    return get_world()


def _texts(chat):
    return [part["text"] for turn in chat for part in turn["content"] if part.get("type") == "text"]


def _gold_text(q):
    return q.options[option_letters(len(q.options)).index(q.answers[0])]


def test_shuffled_options_move_the_answer_letter_with_its_text(world):
    moved = 0
    for i, q in enumerate(world.mc_train[:50]):
        s = shuffled_options(q, random.Random(i))
        assert sorted(s.options) == sorted(q.options) and _gold_text(s) == _gold_text(q)
        moved += s.answers != q.answers
    assert moved > 20                      # the letter is not left where it was
    with pytest.raises(ValueError, match="options"):
        shuffled_options(dataclasses.replace(world.mc_train[0], options=[]), random.Random(0))


def test_response_names_the_text_then_the_letter(world):
    q = shuffled_options(world.mc_kb[0], random.Random(3))
    text = response_text(q)
    assert text.endswith(f"So the answer is {_gold_text(q)}. {ANSWER_LEAD} {q.answers[0]}.")
    bare = dataclasses.replace(q, solution="Look at the pattern.")
    assert response_text(bare) == f"Look at the pattern. So the answer is {_gold_text(q)}. {ANSWER_LEAD} {q.answers[0]}."


def test_training_uses_the_training_rules_only_and_replays_the_mixture(world):
    config = LetterBindingConfig(n_examples=120, replay_share=0.25)
    examples = training_examples(world, config)
    binding = [e for e in examples if e.task == "letter_binding"]
    assert 60 < len(binding) < 110 and len(examples) == 120                # about 3/4 binding, the rest replay
    held_rules = {q.meta["rule_id"] for q in world.mc_kb + world.mc_test}
    rule = {q.id: q.meta["rule_id"] for q in world.mc_train}
    for e in binding:
        ids = [e.meta["query_id"]] + e.meta["example_ids"]
        assert all(i.startswith("mc_train") for i in ids) and not {rule[i] for i in ids} & held_rules
        assert "BECAUSE" not in " ".join(_texts(e.prompt))              # a plain knowledge base
        letters = option_letters(len(e.meta["options"]))
        text = e.meta["options"][letters.index(e.meta["answer"])]
        assert e.completion.endswith(f"So the answer is {text}. The answer is {e.meta['answer']}.")
    assert {e.meta["with_context"] for e in binding} == {False, True}
    assert training_examples(world, config)[5].completion == examples[5].completion      # seeded


def test_gate_reads_mc_kb_with_examples_from_the_rest_of_it(world):
    items = gate_items(world, 12, LetterBindingConfig(), seed=1)
    kb = {q.id for q in world.mc_kb}
    assert [e.meta["query_id"] for e, _ in items] == [q.id for q in world.mc_kb[:12]]
    for e, prefix in items:
        assert set(e.meta["example_ids"]) <= kb and e.meta["query_id"] not in e.meta["example_ids"]
        assert prefix.endswith(ANSWER_LEAD) and e.completion == f"{prefix} {e.meta['answer']}."
    original = [q.answers[0] for q in world.mc_kb[:12]]
    assert [e.meta["answer"] for e, _ in items] != original              # options reshuffled, not the dataset's
    with pytest.raises(ValueError, match="mc_kb"):
        gate_items(world, 0, LetterBindingConfig())


def test_card_prompts_ask_mc_test_over_the_plain_knowledge_base(world):
    examples = same_rule_prompts(world, 5)
    kb = {q.id for q in world.mc_kb}
    for e, q in zip(examples, world.mc_test[:5]):
        assert e.meta["query_id"] == q.id and e.meta["options"] == q.options and set(e.meta["example_ids"]) <= kb
        answers = [t for turn in e.prompt if turn["role"] == "assistant" for t in _texts([turn])]
        assert answers and all(a.startswith("The answer is ") and "BECAUSE" not in a for a in answers)


def test_config_refuses_bad_values():
    with pytest.raises(ValueError, match="replay_share"):
        LetterBindingConfig(replay_share=1.5)
    with pytest.raises(ValueError, match="example_mix"):
        LetterBindingConfig(example_mix=(1, 0))
    with pytest.raises(ValueError, match="k must"):
        LetterBindingConfig(k=0)


def test_gate_letter_read_agrees_with_completion_logprobs(world):
    """The letter the gate reads at the position after the prefix is the letter whose completion the
    model scores highest (an off-by-one in the position would read the wrong logits)."""
    import torch

    from kbvqa.models.checkpoints import load_vlm
    from kbvqa.models.scoring import completion_logprobs
    from kbvqa.rcts.letter_binding import letter_given_rationale

    try:
        vlm = load_vlm("generator")
    except FileNotFoundError as err:          # a bare checkout without the reader's base
        pytest.skip(str(err))
    config = LetterBindingConfig()
    out = letter_given_rationale(vlm, world, 3, config, batch_size=3)
    for (e, prefix), rec in zip(gate_items(world, 3, config), out["records"]):
        letters = option_letters(len(e.meta["options"]))
        scores = completion_logprobs(vlm, [e.prompt] * len(letters), [f"{prefix} {x}" for x in letters]).logprobs
        last = torch.stack([row[row != 0][-1] for row in scores])
        assert rec["pick"] == letters[int(last.argmax())]


def test_the_card_gets_the_adapter_rows_and_keeps_everything_else(tmp_path):
    import json

    from kbvqa.config import DATA_DIR
    from kbvqa.experiments.rcts_letter_binding.run import write_card

    card = tmp_path / "card.json"
    card.write_text((DATA_DIR / "reader" / "card.json").read_text())
    before = json.loads(card.read_text())
    before.pop("role_adapters", None)              # the committed card may carry an earlier entry
    row = {"accuracy": 0.5, "n": 4, "interval95": [0.1, 0.9], "text_accuracy": 0.75}
    results = {"rows": {k: dict(row, accuracy=a) for k, a in (
        ("card_before", 0.25), ("card_after", 0.75), ("gate_plain_after", 0.95), ("gate_context_after", 0.85))},
        "gate_met": {"gate_plain_after": True, "gate_context_after": False},
        "provenance": {"git_commit": "abc", "date": "2026-12-07"}, "part": "rcts_letter_binding"}
    write_card(results, card)
    after = json.loads(card.read_text())
    entry = after.pop("role_adapters")["rcts_generator"]
    assert after == before
    assert entry["mc_3_same_rule_acc"] == 0.75 and entry["mc_3_same_rule_acc_without_adapter"] == 0.25
    assert entry["letter_given_rationale"] == 0.95 and entry["gate_met"] is False
    assert entry["adapter"] == "data/experiments/rcts_letter_binding/models/generator.pt"


def test_the_letter_weight_splits_the_response_at_its_closing_letter():
    """``letter_weight``: Eq. 5's answer part is the closing "The answer is X." (SFTConfig.answer_marker),
    the rationale before it the trace; without it every token is the answer (the first pilot)."""
    from transformers import AutoTokenizer

    from kbvqa.reader import base as reader_base
    from kbvqa.rl.sft import split_tokens

    try:
        tok = AutoTokenizer.from_pretrained(reader_base.base_dir(), local_files_only=True)
    except FileNotFoundError as err:
        pytest.skip(str(err))
    text = "Look: it has dots. So the answer is a hum. The answer is B."
    ids, flags = split_tokens(tok, text, marker=ANSWER_LEAD)
    answer = tok.decode([i for i, f in zip(ids, flags) if f])
    assert answer.strip() == "The answer is B." and not all(flags) and any(flags)
    assert all(split_tokens(tok, text)[1])                                # no marker: all answer
    assert split_tokens(tok, "<think>x</think><answer>y</answer>", marker=ANSWER_LEAD) == split_tokens(
        tok, "<think>x</think><answer>y</answer>")                          # absent marker: ReAG's tags
    with pytest.raises(ValueError, match="letter_weight"):
        LetterBindingConfig(letter_weight=0)


def test_copied_letters_counts_a_pick_that_is_the_answer_text_s_letter_in_an_example(world):
    from kbvqa.rcts.letter_binding import copied_letters

    config = LetterBindingConfig()
    items = gate_items(world, 20, config)
    records, expected = [], 0
    for ex, _ in items:
        letters = option_letters(len(ex.meta["options"]))
        text = ex.meta["options"][letters.index(ex.meta["answer"])]
        users = [p["text"] for turn in ex.prompt[:-1] if turn["role"] == "user" for p in turn["content"]
                 if p.get("type") == "text"]
        elsewhere = [x for x in letters if x != ex.meta["answer"] and any(f"({x}) {text}" in u for u in users)]
        pick = elsewhere[0] if elsewhere else next(x for x in letters if x != ex.meta["answer"])
        expected += bool(elsewhere)
        records.append({"query_id": ex.meta["query_id"], "pick": pick, "correct": False})
    out = copied_letters(world, records, config)
    assert out["wrong"] == 20 and out["copied"] == expected > 0 and out["chance"] < expected
    right = [dict(r, correct=True) for r in records]
    assert copied_letters(world, right, config) == {"wrong": 0, "copied": 0, "chance": 0.0}
    with pytest.raises(ValueError, match="not gate item"):
        copied_letters(world, records[1:], config)
