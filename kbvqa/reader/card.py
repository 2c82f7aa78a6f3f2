"""The reader's checks during training (``quick_checks``), on the toy world's TEST split.

- vision stage: the creature classifier's accuracy on the test views (``vision_entity_acc``);
- connector stage: greedy naming of test views (``naming_acc``: the creature's name in the answer);
- mixture stage: naming, and teacher-forced exact match of KB-VQA answers with the gold passage
  alone and among 10 passages (``tf_gold_passage``, ``tf_10_passages``; one forward pass each).

Leaves out: the full model card (``evaluate_card``), which is generated and scored officially.
"""
from __future__ import annotations

import numpy as np
import torch


def _test_views(world, n: int):
    seen, out = set(), []
    for q in world.kbvqa_test:
        if q.meta["view_id"] not in seen:
            seen.add(q.meta["view_id"])
            out.append((q.meta["view_id"], world.entity(q.meta["entity_id"])))
    return out[:: max(1, len(out) // n)][:n]


def vision_entity_acc(trainer, n: int = 200) -> float:
    from kbvqa.reader.train import to_pixels

    views = _test_views(trainer.world, n)
    size = trainer.config.image_size
    pics = np.stack([np.asarray(trainer.world.image_of(v).resize((size, size))) for v, _ in views])
    states = trainer.vlm.core.model.vision_model(pixel_values=to_pixels(torch.from_numpy(pics))).last_hidden_state
    pred = trainer.heads(states)[0].argmax(-1).tolist()
    return float(np.mean([p == trainer.bank.entities.index(e) for p, (_, e) in zip(pred, views)]))


def naming_acc(vlm, world, n: int, image_size: int) -> float:
    from kbvqa.models.pretrain_tasks import view_ref
    from kbvqa.reader.tasks import naming_example

    views = _test_views(world, n)
    prompts = [naming_example(view_ref(world, v, image_size), e).prompt for v, e in views]
    outs = vlm.generate(prompts, max_new_tokens=16, temperature=0, batch_size=16)
    return float(np.mean([f" {e.name}" in f" {o[0]}".lower() for o, (_, e) in zip(outs, views)]))


def quick_checks(trainer, n: int = 32) -> dict:
    from kbvqa.models.model_card import teacher_forced_accuracy
    from kbvqa.models.pretrain_eval import eval_examples
    from kbvqa.reader.tasks import mix_config

    stage = trainer.state["stage"]
    if stage == "vision":
        return {"vision_entity_acc": vision_entity_acc(trainer)}
    size = trainer.config.image_size
    out = {"naming_acc": naming_acc(trainer.vlm, trainer.world, n, size)}
    if stage == "mixture":
        cfg = mix_config(size, trainer.config.seed)
        for task in ("kbvqa_gold_passage", "kbvqa_10_passages"):
            examples = eval_examples(trainer.world, task, n=n, config=cfg)
            out["tf_" + task.removeprefix("kbvqa_")] = teacher_forced_accuracy(trainer.vlm, examples, batch_size=8)
    return out


# ---------------------------------------------------------------------------------- the model card
CARD_TARGETS = {  # key -> (comparison, target); the three kbvqa_* rows are the blocking ones
    "kbvqa_gold_passage_acc": (">=", 0.90), "kbvqa_10_passages_acc": (">=", 0.75),
    "kbvqa_no_passage_acc": ("<=", 0.05), "critic_roc_auc": (">=", 0.90), "critic_roc_auc_hard": (">=", 0.80),
    "mc_3_same_rule_acc": (">=", 0.70), "pairwise_acc": (">=", 0.85), "box_iou": (">=", 0.60),
    "ladder_valid_rate": (">=", 0.90), "serts_query_recall_gain": (">", 0.0),
}
BLOCKING = ("kbvqa_gold_passage_acc", "kbvqa_10_passages_acc", "kbvqa_no_passage_acc")


def kbvqa_official_correct(prediction: str | None, meta: dict) -> bool:
    """A toy KB-VQA answer scored by the official scorers: InfoSeek's pointwise score for
    string / time / numerical questions (numbers against the ``answer_range``), E-VQA's
    multi-answer IoU >= 0.5 for list questions. No prediction is wrong."""
    from kbvqa.metrics import evqa_score, infoseek_score

    if not prediction:
        return False
    if meta["answer_type"] == "multi":
        return evqa_score(prediction, "&&".join(meta["answers"]), "multi_answer") == 1.0
    return bool(infoseek_score(prediction, meta["answer_type"], meta["answers"], meta.get("answer_range")))


def card_sets(world, n: int, image_size: int) -> dict:
    """The card's evaluation sets on the TEST split (first ``n`` queries of each)."""
    import dataclasses

    from kbvqa.models.pretrain_eval import eval_examples
    from kbvqa.reader.tasks import mix_config

    cfg = mix_config(image_size, 0)
    ten = dataclasses.replace(cfg, distractor_mix=(1.0, 0.0, 0.0))  # the look-alikes' same section, then random
    sets = {t: eval_examples(world, t, n=n, config=cfg) for t in
            ("kbvqa_gold_passage", "kbvqa_no_passage", "critic", "mc_zero_shot", "mc_3_random", "mc_3_same_rule",
             "pairwise", "grounding", "serts_query")}
    sets["kbvqa_10_passages"] = eval_examples(world, "kbvqa_10_passages", n=n, config=ten)
    sets["ladder"] = ladder_set(world, n, image_size)
    return sets


def ladder_set(world, n: int, image_size: int) -> list:
    """MOLT Table 14 prompts for the first ``n`` test queries (gold + 4 look-alike pages)."""
    from kbvqa.tournament_sft import SFTDataConfig, build_sft_example

    config = SFTDataConfig(image_size=image_size)
    return [build_sft_example(world, q, [], config) for q in world.kbvqa_test[:n]]


def ladder_valid(text: str, schedule) -> bool:
    """Table 14 output parses (MOLT Eq. 9) and its chain is consistent in every round (Eq. 10)."""
    from kbvqa.tournament_rewards import chain_validity, format_reward

    valid = chain_validity(text, schedule)
    return format_reward(text) == 1.0 and len(valid) == len(schedule) - 1 and all(valid)


def serts_recall(world, examples, outputs, k: int = 5) -> tuple[float, float]:
    """Mean BM25 recall@k of the reader's parsed query and of the question itself."""
    from kbvqa.models.pretrain_mc_lit import bm25_search
    from kbvqa.parsers import parse_query

    def recall(query, gold):
        return len(set(bm25_search(world, query, k)) & set(gold)) / len(gold) if query else 0.0

    questions = {q.id: q for q in world.lit_questions}
    ours, base = [], []
    for e, out in zip(examples, outputs):
        q, gold = questions[e.meta["query_ids"][0]], e.meta["doc_ids"]
        ours.append(recall(parse_query(out).query, gold))
        base.append(recall(q.question, gold))
    return float(np.mean(ours)), float(np.mean(base))


def evaluate_card(vlm, world, n: int = 200, image_size: int = 112, batch_size: int = 16) -> dict:
    """Every card row on the first ``n`` test queries of each set; answers generated greedily."""
    from kbvqa.models.model_card import box_iou, parse_box, parse_winner, roc_auc
    from kbvqa.parsers import parse_rcts_answer, parse_think_answer
    from kbvqa.tournament_rewards import result_reward

    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    sets = card_sets(world, n, image_size)
    vlm.model.eval()

    def generate(examples, max_new_tokens):
        outs = vlm.generate([e.prompt for e in examples], max_new_tokens=max_new_tokens, temperature=0,
                            batch_size=batch_size)
        return [o[0] for o in outs]

    card: dict = {"n_queries": n, "sizes": {t: len(s) for t, s in sets.items()}, "examples": {}}
    for task in ("kbvqa_gold_passage", "kbvqa_no_passage", "kbvqa_10_passages"):
        outs = generate(sets[task], 32)
        card[f"{task}_acc"] = float(np.mean([kbvqa_official_correct(parse_think_answer(o).answer, e.meta)
                                             for o, e in zip(outs, sets[task])]))
        card["examples"][task] = {"target": sets[task][0].completion, "output": outs[0]}
    p = vlm.p_yes([e.prompt for e in sets["critic"]], batch_size=batch_size).tolist()
    labels = [e.completion == "Yes" for e in sets["critic"]]
    card["critic_roc_auc"] = roc_auc(p, labels)
    hard = [(s, y) for s, y, e in zip(p, labels, sets["critic"]) if y or e.meta.get("negative_kind") == "hard"]
    card["critic_roc_auc_hard"] = roc_auc([s for s, _ in hard], [y for _, y in hard])
    for task in ("mc_zero_shot", "mc_3_random", "mc_3_same_rule"):
        outs = generate(sets[task], 32)
        golds = [parse_rcts_answer(e.completion).letter for e in sets[task]]
        card[f"{task}_acc"] = float(np.mean([parse_rcts_answer(o).letter == g for o, g in zip(outs, golds)]))
    outs = generate(sets["pairwise"], 64)
    card["pairwise_acc"] = float(np.mean([parse_winner(o) == e.meta["winner"] for o, e in zip(outs, sets["pairwise"])]))
    outs = generate(sets["grounding"], 24)
    ious = [box_iou(parse_box(o), e.meta["box"]) for o, e in zip(outs, sets["grounding"])]
    card["box_iou"], card["box_iou50"] = float(np.mean(ious)), float(np.mean([i >= 0.5 for i in ious]))
    outs = generate(sets["ladder"], 320)
    ladder = sets["ladder"]
    card["ladder_valid_rate"] = float(np.mean([ladder_valid(o, e.meta["schedule"]) for o, e in zip(outs, ladder)]))
    card["ladder_acc"] = float(np.mean([result_reward(o, e.meta["gold_id"]) for o, e in zip(outs, sets["ladder"])]))
    card["examples"]["ladder"] = {"target": sets["ladder"][0].completion, "output": outs[0]}
    outs = generate(sets["serts_query"], 96)
    ours, base = serts_recall(world, sets["serts_query"], outs)
    card["serts_query_recall"], card["serts_question_recall"] = ours, base
    card["serts_query_recall_gain"] = ours - base
    card["targets_met"] = {k: _meets(card[k], *CARD_TARGETS[k]) for k in CARD_TARGETS}
    return card


def _meets(value: float, op: str, target: float) -> bool:
    return {">=": value >= target, "<=": value <= target, ">": value > target}[op]
