"""MCTS-HR heuristic rewards (RCTS Eq. 7-9) by hand, the mutual references of both readings, one
batched call per scoring step, and the multiple-choice prompt builder on the toy world."""
from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kbvqa.rcts.prompts import CallCounter, MCPromptBuilder, generate_batched, reasoning_of
from kbvqa.rcts.rewards import (
    mixed_reward,
    mutual_references,
    mutual_reward,
    rule_reward,
    score_leaves,
    self_consistency_reward,
)


def test_rule_reward_and_eq7_eq8_eq9_by_hand():
    assert rule_reward("A", "A") == 1.0 and rule_reward("A", "B") == 0.0
    assert rule_reward(None, None) == 0.0 and rule_reward("A", None) == 0.0
    assert self_consistency_reward(["A", "A", "B", None, "A"], "A") == pytest.approx(0.6)
    assert self_consistency_reward(["A", "A"], None) == 0.0 and self_consistency_reward([], "A") == 0.0
    assert mutual_reward(["A", "B", None, "C"], ["A", "C", "A", "C"]) == pytest.approx(0.5)
    assert mutual_reward([], []) == 0.0
    with pytest.raises(ValueError):
        mutual_reward(["A"], [])
    assert mixed_reward(1.0, 0.5, 0.2) == pytest.approx(0.2 + 0.4)
    assert mixed_reward(0.3, 0.9, 1.0) == pytest.approx(0.3) and mixed_reward(0.3, 0.9, 0.0) == pytest.approx(0.9)
    for bad in (-0.01, 1.01):
        with pytest.raises(ValueError):
            mixed_reward(0.5, 0.5, bad)


def test_mutual_references_paper_cycles_the_path_official_takes_the_top():
    assert mutual_references(["x", "y"], list("abcdefg"), "paper", 5) == [("x", 3), ("y", 2)]
    assert mutual_references(["x", "y", "z"], [], "paper", 2) == [("x", 1), ("y", 1)]
    assert mutual_references(["x"], list("abcdefg"), "official", 5) == [(c, 5) for c in "abcde"]
    assert mutual_references(["x"], list("ab"), "official", 5, n_refs=5) == [("a", 5), ("b", 5)]
    assert mutual_references([], [], "paper", 5) == [] and mutual_references(["x"], [], "official", 5) == []
    with pytest.raises(ValueError):
        mutual_references(["x"], [], "both", 5)
    with pytest.raises(ValueError):
        mutual_references(["x"], [], "paper", 0)


class Echo:
    """A fake model that cycles through ``script[p]`` for prompt p, across rows and samples."""

    def __init__(self, script):
        self.script, self.calls, self.seen = script, 0, {}

    def next(self, p):
        i = self.seen[p] = self.seen.get(p, -1) + 1
        return self.script[p][i % len(self.script[p])]

    def generate(self, prompts, n=1, **kwargs):
        self.calls += 1
        self.kwargs = kwargs
        return [[self.next(p) for _ in range(n)] for p in prompts]


def test_generate_batched_serves_unequal_n_in_one_call():
    vlm, counter = Echo({"a": ["a0", "a1", "a2", "a3"], "b": ["b0", "b1"]}), CallCounter()
    out = generate_batched(vlm, [("a", 4), ("b", 2)], counter, "x")
    assert vlm.calls == 1 and counter.completions == 6 and counter.prompts == 3
    assert out == [["a0", "a1", "a2", "a3"], ["b0", "b1"]]      # "a" sent twice with n = gcd = 2
    assert generate_batched(vlm, [], counter, "x") == [] and vlm.calls == 1
    with pytest.raises(ValueError):
        generate_batched(vlm, [("a", 0)], counter, "x")


@dataclass
class Ex:
    id: str
    answers: list = field(default_factory=lambda: ["A"])


class TupleBuilder:
    def kshot(self, q, exs):
        return ("k", tuple(e.id for e in exs))

    def self_check(self, q, response):
        return ("self", response) if "because" in response else None

    def mutual(self, q, response, ref):
        return ("mutual", response, ref.id)

    def parse(self, text, q):
        return text[:1] if text[:1] in ("A", "B", "C") else None

    def gold(self, ex):
        return ex.answers[0]


def test_score_leaves_puts_every_sample_of_every_leaf_in_one_call():
    refs = [Ex("r1", ["A"]), Ex("r2", ["B"])]
    script = {("self", "A because x"): ["A", "?"], ("self", "B because y"): ["B"],
              ("mutual", "A because x", "r1"): ["A"], ("mutual", "A because x", "r2"): ["A"],
              ("mutual", "B because y", "r1"): ["C"], ("mutual", "B because y", "r2"): ["B"],
              ("mutual", "C", "r1"): ["A"], ("mutual", "C", "r2"): ["B"]}
    vlm, counter = Echo(script), CallCounter()
    scores = score_leaves(vlm, TupleBuilder(), Ex("q"), [("A because x", refs), ("B because y", refs),
                                                         ("C", refs)], refs,
                          alpha=0.5, n_self=4, n_mutual=2, mutual="paper", counter=counter)
    assert vlm.calls == 1 and counter.calls == 1
    a, b, c = scores
    assert (a.answer, a.q_self, a.q_mutual) == ("A", 0.5, 0.5) and a.reward == pytest.approx(0.5)
    assert (b.q_self, b.q_mutual) == (1.0, 0.5)
    assert c.self_answers == [] and c.q_self == 0.0 and c.q_mutual == 1.0       # no reasoning, no Q_S
    assert counter.completions == 4 + 4 + 2 * 3
    assert "share_prefix" not in vlm.kwargs                   # the default sends what it always sent
    echo = Echo(script)
    again = score_leaves(echo, TupleBuilder(), Ex("q"), [("A because x", refs)], refs, alpha=0.5, n_self=4,
                         n_mutual=2, mutual="paper", counter=CallCounter(), share_prefix=True)
    assert again[0].reward == a.reward and echo.kwargs["share_prefix"] is True


@given(st.text(max_size=200))
def test_reasoning_of_never_raises(text):
    assert isinstance(reasoning_of(text), str)


def test_reasoning_of_reads_both_formats():
    assert reasoning_of("**THOUGHT PROCESS:**\nred means B.\n**FINAL ANSWER:**\nThe answer is B.") == "red means B."
    assert reasoning_of("The answer is C.\nBECAUSE: it is round.") == "it is round."
    assert reasoning_of("The answer is C.") == ""


@pytest.fixture(scope="module")
def world():
    from kbvqa.data import ToyWorldConfig, get_world
    return get_world(0, ToyWorldConfig.small())


def test_toy_prompt_builder_turns_and_no_gold_leak(world):
    b = MCPromptBuilder(world)
    q, exs = world.mc_test[0], world.mc_kb[:3]
    chat = b.kshot(q, exs)
    assert [t["role"] for t in chat] == ["system"] + ["user", "assistant"] * 3 + ["user"]
    response = "The answer is Z.\nBECAUSE: made up."
    mutual = b.mutual(q, response, exs[0])
    assert mutual[-2]["content"][0]["text"] == response and [t["role"] for t in mutual][-3:] == ["user", "assistant", "user"]
    assert b.self_check(q, "no answer at all") is None
    check = b.self_check(q, "The answer is A.\nBECAUSE: the zorp is red.")
    assert "the zorp is red." in check[-1]["content"][-1]["text"]
    assert b.parse("The answer is B.", q) == "B" and b.parse("", q) is None and b.gold(q) == q.answers[0]
    assert b.parse("The answer is Z.", q) is None                     # not an option letter
    plain = MCPromptBuilder(cfg=b.cfg)                                 # no world: Query.image
    assert [t["role"] for t in plain.kshot(q, exs[:1])] == ["system", "user", "assistant", "user"]


def test_a_plain_knowledge_base_shows_no_worked_solution(world):
    """Issue 52: the paper's knowledge base holds question-answer pairs "without detailed reasoning
    procedures". Plain examples answer "The answer is X." alone; with a context, only the reasoner's."""
    q, exs = world.mc_test[0], world.mc_kb[:2]
    answers = lambda chat: [t["content"][0]["text"] for t in chat if t["role"] == "assistant"]  # noqa: E731
    plain = MCPromptBuilder(world, plain_kb=True)
    assert answers(plain.kshot(q, exs)) == [f"The answer is {e.answer}." for e in exs]
    contexts = {e.id: f"the reasoner's context for {e.id}" for e in exs}
    with_context = MCPromptBuilder(world, with_context=True, contexts=contexts, plain_kb=True)
    for text, e in zip(answers(with_context.kshot(q, exs)), exs):
        assert contexts[e.id] in text and text.rstrip().endswith(f"The answer is {e.answer}.")
        assert "BECAUSE" not in text and e.solution not in text
    assert all("BECAUSE" in t for t in answers(MCPromptBuilder(world).kshot(q, exs)))   # the default keeps it
    with pytest.raises(ValueError, match="reasoner"):
        MCPromptBuilder(world, with_context=True, plain_kb=True).kshot(q, exs)


def test_a_plain_knowledge_base_setting_needs_contexts_and_changes_the_fingerprint(world):
    from kbvqa.rcts.runs import ROWS, spec_fingerprint
    from kbvqa.rcts.settings import toy_setting

    retrieval = {"candidates": {q.id: [[e.id, 1.0] for e in world.mc_kb[:3]] for q in world.mc_test[:2]}}
    with pytest.raises(ValueError, match="contexts"):
        toy_setting(world, retrieval, limit=2, plain_kb=True)
    contexts = {e.id: "a context" for e in world.mc_kb[:3]}
    plain = toy_setting(world, retrieval, limit=2, contexts=contexts, plain_kb=True)
    usual = toy_setting(world, retrieval, limit=2, contexts=contexts)
    assert spec_fingerprint(ROWS["zero_shot"], plain, 0)["plain_kb"] is True
    assert "plain_kb" not in spec_fingerprint(ROWS["zero_shot"], usual, 0)
    fingerprint = spec_fingerprint(ROWS["rcts"], usual, 0)["rcts"]
    assert "reward_decoding" not in fingerprint and fingerprint["reward_stop"] == ["\n"]  # committed runs' keys
