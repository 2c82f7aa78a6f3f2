"""MOLT's training data and RL plumbing (kbvqa.molt.sft, kbvqa.molt.grpo): SFT
examples as §3.2.1 builds them (positive wins wherever it plays, shuffled candidates, random ids,
four rounds), the forced winner of a model teacher, and one GRPO step whose rewards are Eq. 8."""
from __future__ import annotations

import random
import re

import pytest

from kbvqa.molt.rewards import molt_reward
from kbvqa.molt.sft import (
    SFTDataConfig,
    build_sft_example,
    build_sft_set,
    model_teacher,
    sft_candidates,
    teacher_transcript,
)
from kbvqa.parsers import parse_tournament


@pytest.fixture(scope="module")
def world():
    from kbvqa.data import get_world

    return get_world(0)


def listed_ids(example) -> list[str]:
    user = "".join(p.get("text", "") for m in example.prompt if m["role"] == "user" for p in m["content"])
    return re.findall(r"\[([^\]]+)\] Image:", user)


def test_sft_examples_are_valid(world):
    examples = build_sft_set(world, world.kbvqa_train[:25])
    positions = set()
    for e in examples:
        t = parse_tournament(e.completion)
        gold, schedule = e.meta["gold_id"], e.meta["schedule"]
        assert t.format_valid and len(t.rounds) == 4 and t.evidence == gold
        assert sorted(e.meta["candidate_ids"]) == ["1", "2", "3", "4", "5"]
        assert listed_ids(e) == e.meta["candidate_ids"] == schedule[::-1]   # the seed is listed last
        for r in t.rounds:                          # the positive wins every round it plays
            if gold in r.pair:
                assert r.winner == gold
        reward = molt_reward(e.completion, schedule, gold)
        assert reward.valid == (1, 1, 1, 1) and reward.res == 1.0
        assert len(set(e.meta["doc_ids"])) == 5      # paragraphs of five different documents
        q = next(q for q in world.kbvqa_train if q.id == e.meta["query_ids"][0])
        assert e.meta["passage_ids"][e.meta["candidate_ids"].index(gold)] == q.evidence_ids[0]
        assert len(e.prompt[-1]["content"]) and sum(p["type"] == "image" for p in e.prompt[-1]["content"]) == 6
        positions.add(e.meta["candidate_ids"].index(gold))
    assert len(positions) >= 4                       # shuffled: the positive is not always in one place


def test_sft_set_repeats_and_uses_the_ranking_first(world):
    q = world.kbvqa_train[3]
    a = build_sft_set(world, [q])[0]
    assert a.completion == build_sft_set(world, [q])[0].completion
    ranking = [d.id for d in world.documents[-6:]]
    cands = sft_candidates(world, q, ranking, SFTDataConfig(), random.Random(0))
    negatives = {c.doc_id for c in cands if c.passage_id != q.evidence_ids[0]}
    assert negatives == set([d for d in ranking if d != q.gold_doc_ids[0]][:4])
    with pytest.raises(ValueError):
        SFTDataConfig(n_negatives=0)
    with pytest.raises(ValueError):
        build_sft_set(world, [q], rankings=[])


def test_model_teacher_is_forced_when_the_positive_plays(world):
    q = world.kbvqa_train[5]

    class SaysOne:
        def generate(self, prompts, n=1, **kw):
            ids = re.findall(r"\[([^\]]+)\] Image:", "".join(p.get("text", "") for p in prompts[0][-1]["content"]))
            return [[f"<think>first looks right</think><winner>[{ids[0]}]</winner>"]]

    cfg = SFTDataConfig()
    cands = sft_candidates(world, q, [], cfg, random.Random(1))
    positive = next(c.id for c in cands if c.passage_id == q.evidence_ids[0])
    e = build_sft_example(world, q, [], cfg, random.Random(1),
                          teacher=model_teacher(SaysOne(), q.question, None, positive, short=True))
    t = parse_tournament(e.completion)
    assert t.evidence == positive and all(r.think == "first looks right" for r in t.rounds)
    for r in t.rounds:
        assert r.winner == (positive if positive in r.pair else r.pair[0])


def test_a_model_teacher_plays_every_ladder_round_by_round_in_batched_calls(world):
    """``build_sft_set(teacher_model=...)``: the oracle's candidates and prompts, the model's rounds
    (one batched call per round for all queries), the positive's wins forced; the same transcripts
    as ``model_teacher`` one query at a time."""
    queries = world.kbvqa_train[:6]

    class SaysSecond:
        calls = 0

        def generate(self, prompts, n=1, **kw):
            SaysSecond.calls += 1
            out = []
            for p in prompts:
                ids = re.findall(r"\[([^\]]+)\] Image:", "".join(x.get("text", "") for x in p[-1]["content"]))
                out.append([f"<think>the second, {ids[1]}</think><winner>[{ids[1]}]</winner>"])
            return out

    oracle = build_sft_set(world, queries)
    taught = build_sft_set(world, queries, teacher_model=SaysSecond())
    assert SaysSecond.calls == 4                                   # N = 5 candidates: four rounds
    for o, t in zip(oracle, taught):
        assert o.meta == t.meta                     # the same candidates, ids and schedule
        gold, tour = t.meta["gold_id"], parse_tournament(t.completion)
        assert tour.evidence == gold and len(tour.rounds) == 4
        for r in tour.rounds:
            assert r.winner == (gold if gold in r.pair else r.pair[1]) and r.think == f"the second, {r.pair[1]}"
    chunks = []                                          # 4 queries at a time, as a resumable run writes them
    assert [e.completion for e in build_sft_set(world, queries, teacher_model=SaysSecond(), chunk=4,
                                                 on_transcripts=chunks.append)] == [e.completion for e in taught]
    assert [len(c) for c in chunks] == [4, 6] and SaysSecond.calls == 12
    resumed = build_sft_set(world, queries, teacher_model=SaysSecond(), transcripts=chunks[0], chunk=4)
    assert [e.completion for e in resumed] == [e.completion for e in taught] and SaysSecond.calls == 16
    assert [e.meta for e in build_sft_set(world, queries, transcripts=chunks[1])] == [e.meta for e in taught]
    with pytest.raises(ValueError, match="no teacher_model"):
        build_sft_set(world, queries, transcripts=chunks[0])
    with pytest.raises(ValueError, match="chunk"):
        build_sft_set(world, queries, teacher_model=SaysSecond(), chunk=0)
    assert build_sft_set(world, [], teacher_model=SaysSecond()) == []
    cfg = SFTDataConfig()
    rng = random.Random("molt-sft:0")
    for q, t in zip(queries, taught):                   # one query at a time, the same rng stream
        cands = sft_candidates(world, q, [], cfg, rng)
        positive = next(c.id for c in cands if c.passage_id == q.evidence_ids[0])
        one = build_sft_example(world, q, [], cfg, random.Random(0),
                                teacher=model_teacher(SaysSecond(), q.question, None, positive, short=True))
        assert parse_tournament(one.completion).evidence == positive
        assert teacher_transcript(cands, model_teacher(SaysSecond(), q.question, None, positive))[0] == t.completion


def test_balanced_roles_let_the_challenger_win_as_often_as_the_defender(world):
    """Issue 54: with the positive forced to win, the teacher's ladders reward the defender (10 of
    the positive's 14 rounds, N = 5); ``roles="balanced"`` gives the rounds between two negatives to
    the challenger, so over all rounds the two roles win about equally, with the entry positions
    still uniform and the positive still winning wherever it plays."""
    from kbvqa.molt.analysis import defender_win_share

    queries = world.kbvqa_train[:200]
    teacher = build_sft_set(world, queries)
    balanced = build_sft_set(world, queries, config=SFTDataConfig(roles="balanced"))
    before = defender_win_share([e.completion for e in teacher])["share"]
    after = defender_win_share([e.completion for e in balanced])
    assert before > 0.6 and abs(after["share"] - 0.5) < 0.08 and after["rounds"] == 4 * len(queries)
    assert [e.meta["candidate_ids"] for e in teacher] == [e.meta["candidate_ids"] for e in balanced]  # same shuffles
    for e in balanced:
        gold = e.meta["gold_id"]
        assert all(r.winner == gold for r in parse_tournament(e.completion).rounds if gold in r.pair)
    with pytest.raises(ValueError, match="roles must be one of"):
        SFTDataConfig(roles="defender")


def test_pairwise_examples_show_each_round_in_random_order(world):
    queries = world.kbvqa_train[:60]
    plain = build_sft_set(world, queries, config=SFTDataConfig(roles="balanced"))
    mixed = build_sft_set(world, queries, config=SFTDataConfig(roles="balanced", pairwise_per_query=2))
    assert [(e.completion, e.meta) for e in mixed[:len(plain)]] == [(e.completion, e.meta) for e in plain]
    extra = mixed[len(plain):]
    assert len(extra) == 2 * len(queries) and all(e.task == "molt_sft_pairwise" for e in extra)
    firsts = []
    for e in extra:
        shown = listed_ids(e)
        assert shown == e.meta["pair"] and e.meta["winner"] in shown
        assert e.completion.endswith(f"<winner>[{e.meta['winner']}]</winner>")
        firsts.append(shown[0] == e.meta["defender"])
    assert 0.35 < sum(firsts) / len(firsts) < 0.65         # no side carries the defender
    with pytest.raises(ValueError, match="pairwise_per_query"):
        SFTDataConfig(pairwise_per_query=5)


def test_one_molt_grpo_step_scores_with_eq_8():
    import torch

    from kbvqa.models import build_tiny_vlm
    from kbvqa.molt.grpo import MOLTTask
    from kbvqa.molt.rewards import molt_grpo_rewards
    from kbvqa.rl import GRPOConfig, grpo_train, sample_groups

    torch.set_num_threads(1)
    vlm = build_tiny_vlm("qwen2_vl", texts=["<round> <compare> [1] vs [2] </compare> <think> </think> <winner> "
                                            "</winner> </round> <evidence> </evidence> q ?"],
                         seed=0, hidden_size=32, num_layers=1, intermediate_size=64, vision_width=32, vision_depth=1)
    tasks = [MOLTTask("q ?", ("2", "1"), "1"), MOLTTask("q ?", ("1", "2"), "2")]
    cfg = GRPOConfig(group_size=3, prompts_per_step=2, steps=2, max_new_tokens=6, lr=1e-3, progress=False)
    r = sample_groups(vlm, [t.prompt for t in tasks], tasks, cfg, **molt_grpo_rewards(), seed=0)
    for i, text in enumerate(r.texts):
        task = tasks[i // 3]
        expected = molt_reward(text, task.schedule, task.gold_id)
        assert r.rewards[i].item() == pytest.approx(expected.total)
        assert r.rewards_by_key["process_reward"][i].item() == pytest.approx(expected.proc)
        assert r.rewards_by_key["result_reward"][i].item() == expected.res
        assert r.rewards_by_key["format_reward"][i].item() == expected.fmt
    assert r.advantages.shape == (6,)
    before = {n: p.detach().clone() for n, p in vlm.model.named_parameters()}
    curves = grpo_train(vlm, [t.prompt for t in tasks], tasks, cfg, **molt_grpo_rewards())
    assert len(curves.reward) == len(curves.process_reward) == len(curves.loss) == 2
    assert all(0 <= x <= 1 for x in curves.result_reward)
    changed = any(not torch.equal(before[n], p) for n, p in vlm.model.named_parameters())
    # a step moves the weights exactly when some group's rewards differ (non-zero advantages)
    assert changed == any(z < 1 for z in curves.zero_spread_groups)
