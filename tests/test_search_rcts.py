"""MCTS-HR search logic with a scripted fake model (exact call counts, early stop, exhaustion,
Eq. 6 proportions, determinism, paper vs official switches), the baselines, and one smoke run on a
tiny random Qwen2-VL through the real prompt builder."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pytest

from kbvqa.rcts.baselines import icl_random, top_k, vanilla_rag, zero_shot
from kbvqa.rcts.mcts_hr import RCTSConfig, SearchState, expansion_probabilities, rcts_search
from kbvqa.rcts.prompts import CallCounter
from kbvqa.rcts.tree import Node, iter_nodes, tree_to_records


@dataclass
class Ex:
    id: str
    answers: list = field(default_factory=lambda: ["A"])


class FakeBuilder:
    """Prompts are tuples the fake model reads; a response "X because ..." has answer X."""

    def kshot(self, query, examples):
        return ("kshot", query.id, tuple(e.id for e in examples))

    def self_check(self, query, response):
        return ("self", response) if "because" in response else None

    def mutual(self, query, response, ref):
        return ("mutual", response, ref.id)

    def parse(self, text, query):
        return text[0] if text and text[0] in "ABCD" else None

    def gold(self, ex):
        return ex.answers[0]


class FakeVLM:
    """``policy(prompt, sample_index) -> text``; records every call."""

    def __init__(self, policy):
        self.policy, self.calls = policy, []

    def generate(self, prompts, n=1, **kwargs):
        self.calls.append((list(prompts), n, kwargs))
        return [[self.policy(p, i) for i in range(n)] for p in prompts]


def agree(prompt, i):            # every prompt answers A, with reasoning
    return "A because x"


def disagree(prompt, i):         # zero-shot says B; K-shot prompts say A; rewards all right
    if prompt[0] == "kshot":
        return "B because y" if not prompt[2] else "A because x"
    return "A"


QUERY = Ex("q")
CANDS = [(Ex(f"e{i}", ["A" if i % 2 == 0 else "B"]), 1.0 - 0.1 * i) for i in range(6)]


def test_config_rejects_bad_values():
    for bad in (dict(K=5, N=4), dict(alpha=1.5), dict(alpha=-0.1), dict(P=0), dict(width=0),
                dict(c=-1.0), dict(mutual="both"), dict(backprop="max"), dict(selection="best"),
                dict(uct="ucb"), dict(final="vote"), dict(seed=-1), dict(temperature=-1.0), dict(K=1.5)):
        with pytest.raises(ValueError):
            RCTSConfig(**bad)


def test_early_stop_costs_one_call_of_three_prompts():
    vlm = FakeVLM(agree)
    res = rcts_search(vlm, QUERY, CANDS, RCTSConfig(K=2, N=6), FakeBuilder())
    assert res.early_stopped and res.stop_reason == "early_stop" and res.answer == "A"
    assert (res.calls, res.completions, len(vlm.calls)) == (1, 3, 1)
    assert vlm.calls[0][0][0] == ("kshot", "q", ())                 # the zero-shot root
    assert vlm.calls[0][0][1] == ("kshot", "q", ("e0", "e1"))       # greedy = top-K in order
    assert res.actions == (0, 1) and [e.id for e in res.examples] == ["e0", "e1"]
    assert res.rollouts == []


def test_no_early_stop_counts_calls_and_batches_every_reward_sample():
    vlm = FakeVLM(disagree)
    cfg = RCTSConfig(K=2, N=6, P=4, n_self=5, n_mutual=5)
    res = rcts_search(vlm, QUERY, CANDS, cfg, FakeBuilder())
    assert not res.early_stopped and res.stop_reason == "rollouts" and res.zero_shot_answer == "B"
    # 1 (3 simulations) + 1 (rewards of both references) + 2 rollouts x (simulation + rewards)
    assert res.calls == 6 and [p for p, _, _ in res.counter.log] == ["simulate", "rewards"] * 3
    by = res.counter.seconds_by_purpose                       # where the time goes, per purpose
    assert set(by) == {"simulate", "rewards"} and all(v >= 0 for v in by.values())
    assert res.counter.seconds == pytest.approx(sum(by.values()))
    # completions: 3 + 2 x (5 self + 5 mutual) + 2 x (1 + 10)
    assert res.completions == 3 + 20 + 22
    assert [r.origin for r in res.rollouts] == ["greedy", "sampled", "rollout", "rollout"]
    assert all(r.q_self == 1.0 and r.reward == pytest.approx(0.2 + 0.8 * r.q_mutual) for r in res.rollouts)
    assert res.answer == "A" and len(res.examples) == 2


def test_mutual_paper_uses_the_path_and_official_the_top_retrieved():
    def policy(prompt, i):       # a reference is answered A; e0, e2, e4 have gold A, the others B
        return "A because x" if prompt[0] == "kshot" else "A"
    for mode, refs in (("paper", None), ("official", {"e0", "e1", "e2", "e3", "e4"})):
        vlm = FakeVLM(policy)
        res = rcts_search(vlm, QUERY, CANDS, RCTSConfig(K=2, N=6, P=3, early_stop=False, mutual=mode),
                          FakeBuilder())
        for record in res.rollouts:
            path_ids = [CANDS[a][0].id for a in record.actions]
            if mode == "paper":      # 5 samples cycle over the 2 path examples: 3 on the first, 2 on the second
                gold = [CANDS[record.actions[0]][0].answers[0]] * 3 + [CANDS[record.actions[1]][0].answers[0]] * 2
                assert record.q_mutual == pytest.approx(sum(g == "A" for g in gold) / 5), path_ids
            else:                    # e0..e4, 5 samples each, gold A for e0, e2, e4 -> 15 / 25
                assert record.q_mutual == pytest.approx(0.6)
        asked = {p[2] for prompts, _, _ in vlm.calls for p in prompts if p[0] == "mutual"}
        if refs is not None:
            assert asked == refs


def test_unparsable_answers_get_zero_reward_and_no_self_check():
    vlm = FakeVLM(lambda p, i: "??? nothing")
    res = rcts_search(vlm, QUERY, CANDS, RCTSConfig(K=2, N=6, P=3, early_stop=False), FakeBuilder())
    assert [r.reward for r in res.rollouts] == [0.0, 0.0, 0.0] and res.answer is None
    assert not any(p[0] == "self" for prompts, _, _ in vlm.calls for p in prompts)


def test_exhaustion_stops_when_every_combination_was_tried():
    cands = CANDS[:3]
    res = rcts_search(FakeVLM(disagree), QUERY, cands, RCTSConfig(K=2, N=3, width=3, P=50, early_stop=False),
                      FakeBuilder())
    assert res.stop_reason == "exhausted" and len(res.rollouts) == 6     # 3 x 2 ordered pairs
    leaves = {r.actions for r in res.rollouts}
    assert leaves == {(a, b) for a in range(3) for b in range(3) if a != b}
    narrow = rcts_search(FakeVLM(disagree), QUERY, cands, RCTSConfig(K=2, N=3, width=1, P=50, early_stop=False),
                         FakeBuilder())
    assert narrow.stop_reason == "exhausted" and len(narrow.rollouts) == 1


def test_empty_and_short_retrieval_are_defined():
    vlm = FakeVLM(agree)
    res = rcts_search(vlm, QUERY, [], RCTSConfig(), FakeBuilder())
    assert res.stop_reason == "empty_retrieval" and res.calls == 1 and res.answer == "A" and res.examples == []
    short = rcts_search(FakeVLM(disagree), QUERY, CANDS[:2], RCTSConfig(K=3, P=5, early_stop=False), FakeBuilder())
    assert all(len(r.actions) == 2 for r in short.rollouts) and short.stop_reason == "exhausted"


def test_eq6_sampling_follows_similarity_proportions():
    assert expansion_probabilities([3.0, 1.0]) == pytest.approx([0.75, 0.25])
    assert expansion_probabilities([-1.0, 0.0]) == pytest.approx([0.5, 0.5])
    official = expansion_probabilities([3.0, 2.0, 1.0], "official")
    assert official[0] > 0.6 and official[2] < 0.01
    cands = [(Ex("a"), 3.0), (Ex("b"), 2.0), (Ex("c"), 1.0)]
    s = SearchState(None, QUERY, cands, RCTSConfig(K=2, N=3, seed=1), FakeBuilder())
    first, second = Counter(), Counter()
    for _ in range(3000):
        s.root = Node(origin="root")
        leaf = s.expand(s.root, "sample", "rollout", 0)
        first[leaf.actions[0]] += 1
        if leaf.actions[0] == 0:
            second[leaf.actions[1]] += 1
    freq = np.array([first[i] for i in range(3)]) / 3000
    assert freq == pytest.approx([3 / 6, 2 / 6, 1 / 6], abs=0.03)
    assert second[1] / sum(second.values()) == pytest.approx(2 / 3, abs=0.04)   # A_valid drops the path


@pytest.mark.parametrize("selection", ["argmax", "sample"])
def test_same_seed_same_tree(selection):
    def run(seed):
        cfg = RCTSConfig(K=2, N=6, P=6, selection=selection, seed=seed, early_stop=False)
        res = rcts_search(FakeVLM(disagree), QUERY, CANDS, cfg, FakeBuilder())
        return tree_to_records(res.root)
    assert run(3) == run(3)
    assert any(run(s) != run(3) for s in (4, 5, 6))


@pytest.mark.parametrize("backprop", ["paper", "mean", "official"])
def test_every_backup_rule_runs_and_the_tree_is_consistent(backprop):
    cfg = RCTSConfig(K=2, N=6, P=5, backprop=backprop, selection="sample", uct="official", final="max_leaf")
    res = rcts_search(FakeVLM(disagree), QUERY, CANDS, cfg, FakeBuilder())
    assert len(res.rollouts) == 5 and res.root.rewards == [r.reward for r in res.rollouts]
    assert all(len(n.children) <= cfg.width for n in iter_nodes(res.root))
    assert len({n.node_id for n in iter_nodes(res.root)}) == len(list(iter_nodes(res.root)))


def test_baselines_one_batched_call_each():
    vlm = FakeVLM(lambda p, i: "B because" if p[2] else "C")
    counter = CallCounter()
    qs = [Ex("q1"), Ex("q2")]
    assert [a.answer for a in zero_shot(vlm, qs, FakeBuilder(), counter=counter)] == ["C", "C"]
    kb = [c for c, _ in CANDS]
    icl = icl_random(vlm, qs, kb, 3, FakeBuilder(), counter=counter, seed=1)
    assert icl == icl_random(vlm, qs, kb, 3, FakeBuilder(), seed=1) and len(icl[0].example_ids) == 3
    rag = vanilla_rag(vlm, qs, [CANDS[::-1], CANDS], 2, FakeBuilder(), counter=counter)
    assert rag[0].example_ids == ["e0", "e1"] == rag[1].example_ids and rag[0].answer == "B"
    assert counter.calls == 3 and counter.completions == 6
    assert [e.id for e in top_k(CANDS, 10)] == [f"e{i}" for i in range(6)]
    with pytest.raises(ValueError):
        icl_random(vlm, qs, kb[:2], 3, FakeBuilder())
    with pytest.raises(ValueError):
        vanilla_rag(vlm, qs, [CANDS], 2, FakeBuilder())


def test_smoke_on_a_tiny_random_model_with_the_real_prompts():
    import torch

    from kbvqa.data import ToyWorldConfig, get_world
    from kbvqa.models import build_tiny_vlm
    from kbvqa.rcts.prompts import MCPromptBuilder

    torch.set_num_threads(1)
    world = get_world(0, ToyWorldConfig.small())
    vlm = build_tiny_vlm("qwen2_vl", texts=["The answer is A . BECAUSE : the zorp is red ."], seed=0,
                         hidden_size=32, num_layers=1, intermediate_size=64, vision_width=16, vision_depth=1)
    query, kb = world.mc_test[0], world.mc_kb[:5]
    cfg = RCTSConfig(K=2, N=5, P=3, n_self=2, n_mutual=2, max_new_tokens=8, reward_max_new_tokens=4)
    res = rcts_search(vlm, query, [(e, 1.0 / (i + 1)) for i, e in enumerate(kb)], cfg, MCPromptBuilder(world))
    assert res.calls >= 1 and res.answer in (None, *query_letters(query))
    assert res.early_stopped or len(res.rollouts) == 3


def query_letters(query):
    return [chr(ord("A") + i) for i in range(len(query.options))]


def test_leaf_parallel_steps_cut_calls_and_keep_p_leaves():
    cfg = RCTSConfig(K=2, N=6, P=6, early_stop=False, rollouts_per_step=3)
    vlm = FakeVLM(disagree)
    res = rcts_search(vlm, QUERY, CANDS, cfg, FakeBuilder())
    assert res.calls == 4 and len(res.rollouts) == 6
    assert [len(prompts) for prompts, _, _ in vlm.calls][::2] == [3, 3]        # 3 simulations per call
    assert len({r.actions for r in res.rollouts}) == 6                            # distinct leaves
    assert all(kw.get("stop") == ["\n"] for _, _, kw in vlm.calls[1::2])        # reward samples cut


# --- issue 52: reward samples that reach the answer after a reasoning context ----------------------
RECORDED = ("**THOUGHT PROCESS:**\nLook at the colour of the creature: this duskgill is grey. Grey duskgills "
            "raise their young in autumn. So the answer is autumn.\n**FINAL ANSWER:**\nThe answer is D.\n"
            "BECAUSE: Grey duskgills raise their young in autumn.")   # mc_test-00001 of the committed rcts run


class ContextBuilder(FakeBuilder):
    """A with-context builder: responses are RECORDED-style, read with the release's parser."""

    with_context = True

    def self_check(self, query, response):
        from kbvqa.rcts.prompts import reasoning_of
        return ("self", response) if reasoning_of(response) else None

    def parse(self, text, query):
        from kbvqa.parsers import parse_rcts_answer
        return parse_rcts_answer(text, "ABCD").letter


class DecodingVLM:
    """Answers every prompt with RECORDED, decoded as ``generate`` would: cut at the first stop
    string, then at ``max_new_tokens`` whitespace-separated words."""

    def __init__(self):
        self.kwargs = []

    def generate(self, prompts, n=1, max_new_tokens=64, stop=None, **kwargs):
        import re
        self.kwargs.append({"max_new_tokens": max_new_tokens, "stop": stop})
        text = RECORDED
        for s in stop or []:
            text = text.split(s)[0]
        pieces, words, out = re.split(r"(\s+)", text), 0, ""
        for piece in pieces:
            words += bool(piece.strip())
            if words > max_new_tokens:
                break
            out += piece
        return [[out] * n for _ in prompts]


@pytest.mark.parametrize("decoding,positive", [("line", False), ("answer", True)])
def test_reward_samples_reach_the_answer_after_a_reasoning_context(decoding, positive):
    """The committed decoding (8 tokens, cut at "\\n") ends every with-context sample at
    "**THOUGHT PROCESS:**": no letter, so Q_S = Q_M = 0 although every answer agrees with the gold
    (issue 52). Decoding up to the reason reads the FINAL ANSWER line: Q_M > 0."""
    refs = [(Ex(f"e{i}", ["D"]), 1.0 - 0.1 * i) for i in range(4)]
    vlm = DecodingVLM()
    cfg = RCTSConfig(K=2, N=4, P=2, early_stop=False, reward_decoding=decoding)
    res = rcts_search(vlm, Ex("q", ["D"]), refs, cfg, ContextBuilder())
    assert res.rollouts and all(r.answer == "D" for r in res.rollouts)
    assert all((r.q_mutual > 0) == positive and (r.q_self > 0) == positive for r in res.rollouts)
    rewards = [k for k in vlm.kwargs if k["max_new_tokens"] != cfg.max_new_tokens]
    assert rewards and all(("\n" in (k["stop"] or [])) != positive for k in rewards)


def test_reward_decoding_keeps_the_line_without_a_context_and_refuses_a_newline_stop():
    from kbvqa.rcts.mcts_hr import reward_generation

    cfg = RCTSConfig(reward_decoding="answer")
    assert reward_generation(cfg, False) == {"max_new_tokens": 8, "stop": ["\n"]}
    assert reward_generation(cfg, True) == {"max_new_tokens": 96, "stop": ["BECAUSE"]}
    assert reward_generation(RCTSConfig(), True) == {"max_new_tokens": 8, "stop": ["\n"]}
    # over a plain knowledge base the letter comes last with or without a context (issue 52)
    assert reward_generation(cfg, False, rationale_first=True) == {"max_new_tokens": 96, "stop": ["BECAUSE"]}
    assert reward_generation(RCTSConfig(), False, rationale_first=True) == {"max_new_tokens": 8, "stop": ["\n"]}
    for bad in (dict(reward_decoding="answer", reward_answer_stop=("\n",)), dict(reward_decoding="all"),
                dict(reward_answer_max_new_tokens=0)):
        with pytest.raises(ValueError):
            RCTSConfig(**bad)
