"""ReAG's critic (kbvqa.reag.critic, critic_train, critic_eval, viz.critic).

Checks: Eq. 4 filtering (strict ">") with a fake P(Yes); one batched scoring call for many queries;
the all-filtered case (the generator gets the question-and-image prompt); bad thresholds and
configs; our prompts equal the pretraining renderings; recall / specificity / passages kept and the
threshold sweep by hand (the judge sees each distinct kept set once); the training stream (train
split only, 30 % soft / 70 % hard negatives, seeded); a 20-step fine-tune of a tiny random model
whose loss falls (and whose source model is left untouched); the figures.
"""
from __future__ import annotations

import math

import pytest
import torch
from matplotlib.figure import Figure

from kbvqa.data.schema import Passage, Query
from kbvqa.reag.critic import (
    CLI_THRESHOLD,
    REAG_THRESHOLD,
    Critic,
    CriticConfig,
    check_threshold,
    critic_prompt,
    generator_prompt,
    keep_passages,
)
from kbvqa.reag.critic_eval import (
    critic_table,
    evidence_items,
    filtering_stats,
    heldout_critic_items,
    labels_of,
    pipeline_kinds,
    pipeline_separation,
    threshold_sweep,
)
from kbvqa.reag.critic_train import CriticTrainConfig, critic_loss, critic_training_examples, train_critic
from kbvqa.viz.critic import draw_critic_loss, draw_p_yes_by_kind, draw_passages_kept, draw_threshold_sweep


@pytest.fixture(scope="module")
def world():
    from kbvqa.data import get_world

    return get_world(0)


def chat_text(chat) -> str:
    return "\n".join(p["text"] for m in chat for p in m["content"] if p["type"] == "text")


class FakeVLM:
    """p_yes = the number written after "score=" in the passage; counts calls and prompts."""

    def __init__(self):
        self.calls, self.prompts = 0, 0

    def p_yes(self, prompts, normalise="pair", batch_size=16, share_prefix=False):
        self.calls, self.prompts = self.calls + 1, self.prompts + len(prompts)
        self.share_prefix = share_prefix
        return torch.tensor([float(chat_text(c).split("score=")[1].split()[0]) for c in prompts])


def passages(*scores):
    return [Passage(f"d:{i}", "d", f"fact {i} score={s} end") for i, s in enumerate(scores)]


def query(qid="q", evidence=("d:0",)):
    from PIL import Image

    return Query(qid, "What does this zorp eat?", ["moss"], image=Image.new("RGB", (112, 112), "red"),
                 evidence_ids=list(evidence))


def test_eq4_keeps_strictly_above_the_threshold():
    ps = passages(0.1, 0.1000001, 0.9, 0.0)
    assert keep_passages([0.1, 0.1000001, 0.9, 0.0], ps, 0.1) == ps[1:3]
    assert keep_passages([0.1, 0.2], ps[:2], 0.0) == ps[:2] and keep_passages([1.0], ps[:1], 1.0) == []
    with pytest.raises(ValueError):
        keep_passages([0.5], ps[:2], 0.1)


@pytest.mark.parametrize("bad", [-0.01, 1.01, float("nan"), "0.5", True, None, float("inf")])
def test_bad_thresholds_raise(bad):
    with pytest.raises(ValueError):
        check_threshold(bad)
    with pytest.raises(ValueError):
        CriticConfig(threshold=bad)
    with pytest.raises(ValueError):
        keep_passages([0.5], passages(0.5), bad)
    if bad is not None:   # None is filtering_stats' "no critic" row
        with pytest.raises(ValueError):
            filtering_stats([(query(), passages(0.5))], [[0.5]], bad)


@pytest.mark.parametrize("bad", [dict(batch_size=0), dict(normalise="softmax"), dict(image_size=0)])
def test_bad_critic_configs_raise(bad):
    with pytest.raises(ValueError):
        CriticConfig(**bad)


def test_defaults_are_reags_thresholds():
    assert CriticConfig().threshold == REAG_THRESHOLD == 0.1 and CLI_THRESHOLD == 0.5
    assert CriticConfig.for_profile("cpu") == CriticConfig()
    assert CriticConfig.for_profile("cpu", threshold=0.5).threshold == 0.5


def test_critic_filters_many_queries_in_one_batched_call():
    fake = FakeVLM()
    critic = Critic(fake)
    items = [(query("a"), passages(0.9, 0.05, 0.3)), (query("b"), passages(0.02, 0.08)), (query("c"), [])]
    results = critic.filter_many(items)
    assert fake.calls == 1 and fake.prompts == 5
    assert [p.id for p in results[0].kept] == ["d:0", "d:2"] and [p.id for p in results[0].dropped] == ["d:1"]
    assert results[0].scores == pytest.approx([0.9, 0.05, 0.3]) and not results[0].all_filtered
    assert results[1].all_filtered and results[1].kept_ids() == [] and len(results[1].dropped) == 2
    assert results[2].all_filtered and results[2].scores == []
    strict = critic.filter(*items[0], threshold=0.5)
    assert [p.id for p in strict.kept] == ["d:0"] and strict.threshold == 0.5
    assert Critic(FakeVLM()).score_many([(query(), [])]) == [[]]


def test_all_filtered_gives_the_question_and_image_alone():
    fake = FakeVLM()
    q = query()
    result = Critic(fake).filter(q, passages(0.01, 0.09))
    assert result.all_filtered
    alone, with_kept = generator_prompt(q, result.kept), generator_prompt(q, passages(0.5))
    assert "<paragraph>" not in chat_text(alone) and q.question in chat_text(alone)
    assert "<paragraph>fact 0 score=0.5 end</paragraph>" in chat_text(with_kept)
    images = [p for m in alone for p in m["content"] if p["type"] == "image"]
    assert len(images) == 1 and images[0]["image"].size == (56, 56)


def test_the_critic_asks_for_the_shared_prefix_unless_told_not_to():
    fake = FakeVLM()
    Critic(fake).score(query(), passages(0.5, 0.2))
    assert fake.share_prefix is True
    Critic(fake, CriticConfig(share_prefix=False)).score(query(), passages(0.5, 0.2))
    assert fake.share_prefix is False


def test_wrong_number_of_scores_raises():
    class Short(FakeVLM):
        def p_yes(self, prompts, **kw):
            return torch.zeros(len(prompts) - 1)

    with pytest.raises(ValueError):
        Critic(Short()).score(query(), passages(0.5, 0.5))


def test_prompts_equal_the_pretraining_rendering(world):
    from kbvqa.models.pretrain_mix import PretrainMixConfig
    from kbvqa.prompts.formats import critic_example

    q = world.kbvqa_test[0]
    p = world.passage(q.evidence_ids[0])
    ours = Critic(FakeVLM()).prompts(q, [p])[0]
    theirs = critic_example(world, q, p, "Yes", "", PretrainMixConfig(), "critic").prompt
    assert chat_text(ours) == chat_text(theirs)
    assert chat_text(critic_prompt(None, "Q?", "P.", short=False)).count("Yes") >= 2     # the paper's long text


def test_filtering_stats_by_hand():
    items = [(query("a", ["d:0"]), passages(0.9, 0.05, 0.3)), (query("b", ["d:1"]), passages(0.02, 0.08))]
    scores = [[0.9, 0.05, 0.3], [0.02, 0.08]]
    assert labels_of(items) == [[True, False, False], [False, True]]
    none, low, high = critic_table(items, scores, thresholds=(0.1, 0.5))
    assert none["recall"] == 1.0 and none["specificity"] == 0.0 and none["passages_after"] == 2.5
    assert (low["recall"], low["specificity"], low["passages_after"]) == (0.5, 0.6667, 1.0)
    assert low["evidence_kept"] == 0.5 and low["all_filtered"] == 0.5 and low["precision"] == 0.5
    assert (high["recall"], high["specificity"], high["passages_after"]) == (0.5, 1.0, 0.5)
    assert high["relevant"] == 2 and high["irrelevant"] == 3
    with pytest.raises(ValueError):
        filtering_stats(items, [[0.9]], 0.1)


def test_threshold_sweep_asks_the_judge_once_per_distinct_kept_set():
    items = [(query("a", ["d:0"]), passages(0.9, 0.05, 0.3)), (query("b", ["d:1"]), passages(0.02, 0.08))]
    scores = [[0.9, 0.05, 0.3], [0.02, 0.08]]
    seen = []

    def judge(pairs):   # right when the evidence is kept and at most 2 passages are
        seen.append(len(pairs))
        return [any(p.id in q.evidence_ids for p in kept) and len(kept) <= 2 for q, kept in pairs]

    rows = threshold_sweep(items, scores, thresholds=(0.0, 0.04, 0.1, 0.5, 0.95), judge=judge)
    assert len(seen) == 1
    assert [r["answer_accuracy"] for r in rows] == [0.5, 0.5, 0.5, 0.5, 0.0]
    assert [r["passages_after"] for r in rows] == [2.5, 2.0, 1.0, 0.5, 0.0]
    assert seen[0] == rows[0]["judged"] == 7     # of 10 (query, threshold) pairs
    assert "answer_accuracy" not in threshold_sweep(items, scores, thresholds=(0.1,))[0]
    with pytest.raises(ValueError):
        threshold_sweep(items, scores, thresholds=(0.1,), judge=lambda pairs: [])


def test_training_stream_uses_train_split_and_reags_mix(world):
    cfg = CriticTrainConfig(seed=3)
    examples = critic_training_examples(world, 400, cfg)
    assert [e.completion for e in examples[:20]] == [e.completion for e in critic_training_examples(world, 20, cfg)]
    assert [e.completion for e in critic_training_examples(world, 5, cfg, start=7)] == \
        [e.completion for e in examples[7:12]]
    train_ids = {q.id for q in world.kbvqa_train}
    assert all(e.meta["query_ids"][0] in train_ids for e in examples)
    yes = [e for e in examples if e.completion == "Yes"]
    no = [e for e in examples if e.completion == "No"]
    assert 0.4 < len(yes) / len(examples) < 0.6
    assert 0.6 < sum(e.meta["negative_kind"] == "hard" for e in no) / len(no) < 0.8
    for e in yes[:20]:
        q = next(q for q in world.kbvqa_train if q.id == e.meta["query_ids"][0])
        assert e.meta["passage_ids"] == q.evidence_ids
    items, kinds = heldout_critic_items(world, n=40)
    assert kinds[0::2] == ["relevant"] * 20 and set(kinds[1::2]) <= {"hard", "soft"}
    assert labels_of(items) == [[k == "relevant"] for k in kinds]


def test_naming_tuples_teach_every_creature_without_a_fact_or_a_test_view(world):
    """Issue 53: a share of the critic's tuples asks only which creature a knowledge-base picture
    shows, for ANY creature (those without training questions too); no fact question, no query view.
    At naming_rate 0 the stream is the committed one."""
    plain = critic_training_examples(world, 60, CriticTrainConfig(seed=3))
    assert [e.completion for e in plain] == [e.completion for e in
                                             critic_training_examples(world, 60, CriticTrainConfig(seed=3, naming_rate=0))]
    mixed = critic_training_examples(world, 400, CriticTrainConfig(seed=3, naming_rate=0.5))
    naming = [e for e in mixed if e.task == "critic_naming"]
    assert 0.4 < len(naming) / len(mixed) < 0.6
    asked = {q.meta["entity_id"] for q in world.kbvqa_train}
    assert any(e.meta["entity_id"] not in asked for e in naming)          # creatures no question asks about
    for e in naming:
        entity = world.entity(e.meta["entity_id"])
        assert f"Which creature is this {entity.family}?" in chat_text(e.prompt) and e.meta["query_ids"] == []
        own = {x.id for x in world.document_of(entity.id).passages}
        assert (e.meta["passage_ids"][0] in own) == (e.completion == "Yes")
        if e.meta["negative_kind"] == "hard":
            looks = {world.document_of(x.id).id for x in world.lookalikes(entity.id)}
            assert e.meta["doc_ids"][0] in looks
    test_views = {q.meta["view_id"] for q in world.kbvqa_test}
    shown = [p["image"] for e in naming for m in e.prompt for p in m["content"] if p["type"] == "image"]
    assert not any(getattr(im, "args", (None, None))[1:2] and im.args[1] in test_views for im in shown)


def test_naming_gate_uses_fresh_renders_of_both_splits_and_needs_both_to_pass(world):
    from kbvqa.reag.critic_eval import naming_gate, naming_gate_items

    items, kinds, splits = naming_gate_items(world, n_per_split=20, seed=0)
    assert splits.count("seen") == splits.count("unseen") == 20 and kinds[0::2] == ["relevant"] * 20
    assert labels_of(items) == [[k == "relevant"] for k in kinds]
    asked = {q.meta["entity_id"] for q in world.kbvqa_train}
    assert all((q.meta["entity_id"] in asked) == (sp == "seen") for (q, _), sp in zip(items, splits))
    again = naming_gate_items(world, n_per_split=20, seed=0)[0]
    assert [q.image.args for q, _ in items] == [q.image.args for q, _ in again]      # seeded renders
    perfect = [[1.0 if k == "relevant" else 0.0] for k in kinds]
    assert naming_gate(items, splits, perfect)["passed"]
    half = [[1.0 if k == "relevant" or sp == "unseen" else 0.0] for k, sp in zip(kinds, splits)]
    gate = naming_gate(items, splits, half)          # the unseen creatures not separated: the gate fails
    assert gate["splits"]["seen"]["auc"] == 1.0 and gate["splits"]["unseen"]["auc"] == 0.5 and not gate["passed"]


@pytest.mark.parametrize("bad", [dict(steps=0), dict(lr=0), dict(hard_rate=1.5), dict(positive_rate=-0.1),
                                 dict(seed=-1), dict(lora="yes"), dict(batch_size=2.5), dict(naming_rate=1.5)])
def test_bad_train_configs_raise(bad):
    with pytest.raises(ValueError):
        CriticTrainConfig(**bad)


def test_fine_tune_smoke_loss_falls_and_source_is_untouched(world):
    from kbvqa.models import build_tiny_vlm

    torch.set_num_threads(1)
    texts = [chat_text(e.prompt) for e in critic_training_examples(world, 48)] + ["Yes No"]
    base = build_tiny_vlm("qwen2_vl", texts=texts, seed=0, hidden_size=32, num_layers=1, num_heads=2,
                          num_kv_heads=1, intermediate_size=64, vision_width=32, vision_depth=1)
    before = {k: v.clone() for k, v in base.model.state_dict().items()}
    critic, curve = train_critic(base, CriticTrainConfig(steps=20, batch_size=8, lr=1e-2, warmup_steps=2),
                                 world=world, progress=False)
    losses = curve["loss"]
    assert len(losses) == 20 and sum(curve["labels"].values()) == 160
    assert losses[0] > math.log(len(base.tokenizer)) - 1.0          # starts near a uniform guess
    assert sum(losses[-5:]) / 5 < min(1.0, sum(losses[:2]) / 2 - 2.0)  # ends near the Yes/No coin flip or below
    assert all(torch.equal(before[k], v) for k, v in base.model.state_dict().items())
    assert critic.model is not base.model and not critic.model.training
    scores = Critic(critic).score(world.kbvqa_test[0], [world.passage(world.kbvqa_test[0].evidence_ids[0])])
    assert 0.0 <= scores[0] <= 1.0
    batch = critic_training_examples(world, 6)
    prompts, labels = [e.prompt for e in batch], [e.completion for e in batch]
    with torch.no_grad():   # the one-position loss equals the usual next-token loss on the answer
        full = critic.model(**critic.training_batch(prompts, labels, add_eos=False)).loss
        assert math.isclose(critic_loss(critic, prompts, labels).item(), full.item(), rel_tol=1e-4)
    with pytest.raises(ValueError):
        critic_loss(critic, prompts, labels[:-1])
    lora, _ = train_critic(base, CriticTrainConfig(steps=2, batch_size=4, lora={"r": 4, "alpha": 8}),
                           world=world, progress=False)
    assert 0 < lora.num_parameters(trainable_only=True) < lora.num_parameters() / 2


def test_critic_micro_batches_and_checkpointing_give_the_batch_gradient(world):
    """Issue 56: the critic's backward in micro-batches (each part weighted by its share of the
    batch), and with gradient checkpointing, gives the one-pass loss and gradient; "auto" (the
    default) is one pass without checkpointing on the CPU, as the committed runs trained."""
    from kbvqa.models import build_tiny_vlm
    from kbvqa.reag.critic_train import critic_backward
    from kbvqa.rl.common import gradient_checkpointing, resolve_micro_batch

    torch.set_num_threads(1)
    batch = critic_training_examples(world, 5)
    prompts, labels = [e.prompt for e in batch], [e.completion for e in batch]
    texts = [chat_text(p) for p in prompts] + ["Yes No"]

    def grads(micro, checkpointing):
        vlm = build_tiny_vlm("qwen2_vl", texts=texts, seed=0, hidden_size=32, num_layers=2, num_heads=2,
                             num_kv_heads=1, intermediate_size=64, vision_width=32, vision_depth=1)
        vlm.model.train()
        with gradient_checkpointing(vlm, checkpointing):
            loss = critic_backward(vlm, prompts, labels, micro)
        return loss, {n: p.grad.clone() for n, p in vlm.model.named_parameters() if p.grad is not None}

    (full, g_full), (micro, g_micro), (ckpt, g_ckpt) = grads(None, False), grads(2, False), grads(None, True)
    assert micro == pytest.approx(full, rel=1e-5) and ckpt == pytest.approx(full, rel=1e-5)
    for g in (g_micro, g_ckpt):
        assert g.keys() == g_full.keys()
        assert all(torch.allclose(g[n], g_full[n], atol=1e-6, rtol=1e-4) for n in g)
    config = CriticTrainConfig()
    assert (config.micro_batch_size, config.gradient_checkpointing) == ("auto", "auto")
    assert resolve_micro_batch(config.micro_batch_size, object(), "critic") is None      # no CUDA model
    for bad in (dict(micro_batch_size=0), dict(gradient_checkpointing="always")):
        with pytest.raises(ValueError):
            CriticTrainConfig(**bad)


def test_figures():
    curve = {"step": [0, 1, 2], "loss": [3.0, 1.0, 0.7], "smoothed": [3.0, 2.0, 1.6]}
    rows = [{"threshold": t, "recall": 1 - t, "specificity": t, "passages_after": 10 * (1 - t),
             "answer_accuracy": 0.3} for t in (0.0, 0.1, 0.5, 0.9)]
    table = [{"threshold": None, "recall": 1.0, "specificity": 0.0, "passages_after": 24.0}] + rows[1:3]
    figures = [draw_critic_loss(curve), draw_threshold_sweep(rows), draw_passages_kept(table),
               draw_p_yes_by_kind([0.9, 0.2, 0.05], ["relevant", "hard", "soft"])]
    assert all(isinstance(f, Figure) and f.axes for f in figures)
    for bad in (lambda: draw_critic_loss({"step": []}), lambda: draw_threshold_sweep([]),
                lambda: draw_passages_kept([]), lambda: draw_p_yes_by_kind([0.5], [])):
        with pytest.raises(ValueError):
            bad()


def _pipeline_record(world, q, evidence_score, hard_scores, soft_score):
    """A ladder evidence record for ``q``: its evidence, the same section on other pages (hard) and
    another section of its page (soft), with the given P(Yes)."""
    evidence = world.passage(q.evidence_ids[0])
    others = [d for d in world.documents if d.id != evidence.doc_id][: len(hard_scores)]
    hard = [d.passage(evidence.section).id for d in others]
    soft = next(p.id for p in world.document(evidence.doc_id).passages if p.section != evidence.section)
    ids = [evidence.id, *hard, soft]
    return {"coarse": ids, "coarse_scores": [evidence_score, *hard_scores, soft_score], "fine": [], "fine_scores": []}


def test_pipeline_separation_names_each_retrieved_passages_kind(world):
    q1, q2, q3 = world.kbvqa_test[:3]
    evidence = {q1.id: _pipeline_record(world, q1, 0.9, [0.5, 0.95], 0.1),     # one hard outscores it
                q2.id: _pipeline_record(world, q2, 0.8, [0.2, 0.3], 0.9),      # tops every hard one
                q3.id: {"coarse": [], "coarse_scores": [], "fine": [], "fine_scores": []}}  # nothing retrieved
    assert pipeline_kinds(world, q1, evidence[q1.id]["coarse"]) == ["relevant", "hard", "hard", "soft"]
    got = pipeline_separation(world, [q1, q2, q3], evidence)
    assert got["n"] == 2 and got["top_of_hard"] == 0.5 and got["chance"] == pytest.approx(1 / 3, abs=1e-4)
    # relevant {0.9, 0.8} vs hard {0.5, 0.95, 0.2, 0.3}: 6 of 8 pairs; vs soft {0.1, 0.9}: 2.5 of 4
    assert got["auc"] == {"hard": 0.75, "soft": 0.625}


def test_pipeline_separation_rejects_unscored_passages_and_bad_stages(world):
    q = world.kbvqa_test[0]
    record = _pipeline_record(world, q, 0.9, [0.5], 0.1)
    with pytest.raises(ValueError, match="stage"):
        pipeline_separation(world, [q], {q.id: record}, stage="final")
    record["coarse_scores"] = [None] * len(record["coarse"])
    with pytest.raises(ValueError, match="P\\(Yes\\)"):
        pipeline_separation(world, [q], {q.id: record})


def test_evidence_items_give_the_tables_the_runs_scores(world):
    q1, q2 = world.kbvqa_test[:2]
    evidence = {q1.id: _pipeline_record(world, q1, 0.9, [0.05, 0.3], 0.02),
                q2.id: _pipeline_record(world, q2, 0.08, [0.5], 0.2)}
    items, scores = evidence_items(world, [q1, q2], evidence)
    assert [p.id for p in items[0][1]] == evidence[q1.id]["coarse"] and scores[1] == [0.08, 0.5, 0.2]
    row = filtering_stats(items, scores, 0.1)
    assert row["evidence_kept"] == 0.5 and row["passages_after"] == 2.0      # q1 keeps 2 of 4, q2 keeps 2 of 3
    evidence[q2.id]["coarse_scores"] = [None] * 3
    with pytest.raises(ValueError, match="not scored"):
        evidence_items(world, [q1, q2], evidence)
    with pytest.raises(ValueError, match="stage"):
        evidence_items(world, [q1], evidence, stage="merged")
