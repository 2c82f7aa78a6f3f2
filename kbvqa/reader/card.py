"""The reader's model card (``evaluate_card``) and its quick checks during training (``quick_checks``).

``evaluate_card(vlm, world, n=200)`` measures every row on the toy world's TEST split, the query
image at the reader's 112 px and the question's "this <family noun>" (never the creature's name):

- KB-VQA with the gold passage alone, with no passage (ReAG's j = 0 prompt), and with the gold among
  10 passages (the look-alikes' passages of the same section, then random ones); answers scored by
  the official scorers (``kbvqa_official_correct``: InfoSeek's pointwise score for string / time /
  numerical, E-VQA's multi-answer IoU), never by the ReAG training reward;
- the ReAG critic's ROC-AUC (all negatives, and hard negatives alone), RCTS multiple choice with 0 /
  3 random / 3 same-rule examples, MOLT pairwise matching and grounding IoU;
- ``ladder_valid_rate``: MOLT Table 14 outputs that parse (Eq. 9) with a consistent chain (Eq. 10);
- ``serts_query_recall_gain``: BM25 recall@5 of the reader's SeRTS query minus the question's.

``CARD_TARGETS`` holds the targets (the three KB-VQA rows block); ``card_table`` shows a card with
Wilson intervals; ``live_kbvqa`` re-runs the KB-VQA rows on a small subset for a chapter's check.
During training ``quick_checks`` looks at the stage's skill: view classification, naming, or
teacher-forced KB-VQA exact match (one forward pass).

Leaves out: training (``train.py``), the tiny model's older card (``kbvqa.models.model_card``).
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from kbvqa.data import TOYWORLD_VERSION, get_world
from kbvqa.experiments.runs import git_commit, positive_int
from kbvqa.metrics import toy_kbvqa_correct
from kbvqa.metrics.intervals import check_agreement, same_answers, wilson_interval
from kbvqa.metrics.ranking import roc_auc
from kbvqa.models.pretrain_mix import eval_examples
from kbvqa.models.scoring import teacher_forced_accuracy
from kbvqa.parsers import parse_box, parse_rcts_answer, parse_think_answer, parse_winner
from kbvqa.prompts.formats import view_ref
from kbvqa.reader.card_rows import ladder_set, ladder_valid, serts_recall  # noqa: F401 (re-exported)
from kbvqa.reader.diagnose import NAMING_TOKENS, card_views, look_name_rows, naming_attributes
from kbvqa.reader.ship import READER_DIR, load_reader, reader_fingerprint
from kbvqa.reader.tasks import in_rationale_order, mix_config, naming_example, ten_passage_config, to_pixels
from kbvqa.retrieval.subject import box_iou


def vision_entity_acc(trainer, n: int = 200) -> float:

    views = card_views(trainer.world, n)
    size = trainer.config.image_size
    pics = np.stack([np.asarray(trainer.world.image_of(v).resize((size, size))) for v, _ in views])
    pixels = to_pixels(torch.from_numpy(pics)).to(trainer.device)
    states = trainer.vlm.core.model.vision_model(pixel_values=pixels).last_hidden_state
    pred = trainer.heads(states)[0].argmax(-1).tolist()
    return float(np.mean([p == trainer.bank.entities.index(e) for p, (_, e) in zip(pred, views)]))


def naming_acc(vlm, world, n: int, image_size: int) -> float:

    views = card_views(world, n)
    prompts = [naming_example(view_ref(world, v, image_size), e).prompt for v, e in views]
    outs = vlm.generate(prompts, max_new_tokens=NAMING_TOKENS, temperature=0, batch_size=16)
    return float(np.mean([f" {e.name}" in f" {o[0]}".lower() for o, (_, e) in zip(outs, views)]))


def quick_checks(trainer, n: int = 32) -> dict:

    stage = trainer.state["stage"]
    if stage == "vision":
        return {"vision_entity_acc": vision_entity_acc(trainer)}
    size = trainer.config.image_size
    out = {"naming_acc": naming_acc(trainer.vlm, trainer.world, n, size)}
    if stage == "mixture":
        cfg = mix_config(size, trainer.config.seed)
        order = trainer.config.rationale_order
        ten = ten_passage_config(cfg)      # the card's layout (quick checks before round 6 used the mixture's)
        for task in ("kbvqa_gold_passage", "kbvqa_10_passages"):
            examples = eval_examples(trainer.world, task, n=n, config=ten if task == "kbvqa_10_passages" else cfg)
            examples = [in_rationale_order(e, order, trainer.world) for e in examples]
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
KBVQA_ROWS = ("kbvqa_gold_passage", "kbvqa_no_passage", "kbvqa_10_passages")
# The card's KB-VQA prompt: ReAG's generator prompt, which thinks in <think> (naming the creature
# first, as the training rationales do) and answers in <answer>. The direct-answer prompt (E-VQA's
# style) is measured beside it as the *_direct rows. The caps cover the longest test target with a
# margin (rationale 93 tokens, a four-name "relations" answer; direct answer 15; a test holds this):
# rounds 0-3 were carded with 64, which cut 31 of 200 gold-passage rationales before </answer>.
# Generation stops at EOS, so a larger cap costs only the long answers.
KBVQA_STYLE, KBVQA_TOKENS = "reag", {"reag": 128, "evqa": 24}
DIRECT_ROWS = ("kbvqa_gold_passage_direct_acc", "kbvqa_10_passages_direct_acc")
# "Which creature is this?" on test views, part by part (``diagnose.score_naming``): reported rows
NAMING_ROWS = ("naming_name_acc", "naming_family_acc", "naming_colour_acc", "naming_pattern_acc")


def kbvqa_official_correct(prediction: str | None, meta: dict) -> bool:
    """A toy KB-VQA answer scored by the official scorers (``kbvqa.metrics.toy_kbvqa_correct``:
    InfoSeek's pointwise score for string / time / numerical, E-VQA's multi-answer IoU >= 0.5)."""
    return toy_kbvqa_correct(prediction, meta["answers"], meta["answer_type"], meta.get("answer_range"))


def card_sets(world, n: int, image_size: int) -> dict:
    """The card's evaluation sets on the TEST split (first ``n`` queries of each). The 10-passage
    row's 9 distractors are the look-alikes' passages of the same section, then random ones."""
    cfg = mix_config(image_size, 0)
    sets = card_sets_kbvqa(world, n, image_size)
    sets.update({t: eval_examples(world, t, n=n, config=cfg) for t in
                 ("critic", "mc_zero_shot", "mc_3_random", "mc_3_same_rule", "pairwise", "grounding", "serts_query")})
    sets["ladder"] = ladder_set(world, n, image_size)
    return sets


def evaluate_card(vlm, world, n: int = 200, image_size: int = 112, batch_size: int = 16,
                  share_prefix: bool = False, steps: dict | None = None, on_step=None) -> dict:
    """Every card row on the first ``n`` test queries of each set; answers generated greedily.
    ``outcomes`` holds each row's per-query values (right or wrong, P(Yes), IoU, recall) in set order,
    what ``kbvqa.reader.fastcard`` pairs between two paths; ``share_prefix``: the fast path's prefix
    reuse (``kbvqa.models.prefix``) in scoring and generation. ``steps``: each model pass's results by
    name, filled as they finish (``on_step(steps)`` after each, to save them) and read back instead of
    recomputed, so a stopped evaluation resumes at the pass it had not finished."""
    from kbvqa.molt.rewards import result_reward

    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    sets = card_sets(world, n, image_size)
    vlm.model.eval()

    def step(key, compute):
        if steps is not None and key in steps:
            return steps[key]
        value = compute()
        if steps is not None:
            steps[key] = value
            if on_step is not None:
                on_step(steps)
        return value

    def generate(examples, max_new_tokens, key):
        return step(key, lambda: [o[0] for o in vlm.generate([e.prompt for e in examples], temperature=0,
                                                             max_new_tokens=max_new_tokens, batch_size=batch_size,
                                                             **shared)])

    shared = {"share_prefix": True} if share_prefix else {}
    card: dict = {"n_queries": n, "sizes": {t: len(s) for t, s in sets.items()}, "examples": {}, "records": {},
                  "answer_tokens": dict(KBVQA_TOKENS), "outcomes": {}}
    outcomes = card["outcomes"]
    direct = {f"{t}_direct": s for t, s in card_sets_kbvqa(world, n, image_size, "evqa").items()
              if t != "kbvqa_no_passage"}        # ReAG's no-passage prompt is the same in both styles
    for task, examples in [(t, sets[t]) for t in KBVQA_ROWS] + list(direct.items()):
        outs = generate(examples, KBVQA_TOKENS["evqa" if task.endswith("_direct") else KBVQA_STYLE], task)
        right = [kbvqa_official_correct(parse_think_answer(o).answer, e.meta) for o, e in zip(outs, examples)]
        card[f"{task}_acc"] = float(np.mean(right))
        outcomes[f"{task}_acc"] = [bool(r) for r in right]
        card["sizes"][task] = len(examples)
        card["records"][task] = [{"query_id": e.meta["query_ids"][0], "correct": bool(r), "output": o}
                                 for e, r, o in zip(examples, right, outs)]
        card["examples"][task] = {"target": examples[0].completion, "output": outs[0]}
    p = step("critic", lambda: vlm.p_yes([e.prompt for e in sets["critic"]], batch_size=batch_size, **shared).tolist())
    outcomes["critic_p_yes"] = [round(float(x), 6) for x in p]
    labels = [e.completion == "Yes" for e in sets["critic"]]
    card["critic_roc_auc"] = roc_auc(p, labels)
    hard = [(s, y) for s, y, e in zip(p, labels, sets["critic"]) if y or e.meta.get("negative_kind") == "hard"]
    card["critic_roc_auc_hard"] = roc_auc([s for s, _ in hard], [y for _, y in hard])
    for task in ("mc_zero_shot", "mc_3_random", "mc_3_same_rule"):
        outs = generate(sets[task], 12, task)     # "The answer is B." comes first; the reason follows
        golds = [parse_rcts_answer(e.completion).letter for e in sets[task]]
        outcomes[f"{task}_acc"] = [parse_rcts_answer(o).letter == g for o, g in zip(outs, golds)]
        card[f"{task}_acc"] = float(np.mean(outcomes[f"{task}_acc"]))
    outs = generate(sets["pairwise"], 64, "pairwise")
    outcomes["pairwise_acc"] = [parse_winner(o) == e.meta["winner"] for o, e in zip(outs, sets["pairwise"])]
    card["pairwise_acc"] = float(np.mean(outcomes["pairwise_acc"]))
    outs = generate(sets["grounding"], 24, "grounding")
    ious = [box_iou(parse_box(o), e.meta["box"]) for o, e in zip(outs, sets["grounding"])]
    outcomes["box_iou"] = [round(float(i), 6) for i in ious]
    card["box_iou"], card["box_iou50"] = float(np.mean(ious)), float(np.mean([i >= 0.5 for i in ious]))
    outs = generate(sets["ladder"], 320, "ladder")
    ladder = sets["ladder"]
    outcomes["ladder_valid_rate"] = [ladder_valid(o, e.meta["schedule"]) for o, e in zip(outs, ladder)]
    outcomes["ladder_acc"] = [float(result_reward(o, e.meta["gold_id"])) for o, e in zip(outs, ladder)]
    card["ladder_valid_rate"] = float(np.mean(outcomes["ladder_valid_rate"]))
    card["ladder_acc"] = float(np.mean(outcomes["ladder_acc"]))
    card["examples"]["ladder"] = {"target": sets["ladder"][0].completion, "output": outs[0]}
    outs = generate(sets["serts_query"], 96, "serts_query")
    ours, base = serts_recall(world, sets["serts_query"], outs, per_query=True)
    outcomes["serts_query_recall"] = [round(float(x), 6) for x in ours]
    card["serts_query_recall"], card["serts_question_recall"] = float(np.mean(ours)), float(np.mean(base))
    card["serts_query_recall_gain"] = card["serts_query_recall"] - card["serts_question_recall"]
    naming = dict(step("naming", lambda: naming_attributes(vlm, world, n=n, image_size=image_size,
                                                           batch_size=batch_size)))
    card["records"]["naming"] = naming.pop("records")
    outcomes["naming_name_acc"] = [bool(r["name"]) for r in card["records"]["naming"]]
    card["naming"] = naming
    card.update({f"naming_{part}_acc": naming[f"{part}_acc"] for part in ("name", "family", "colour", "pattern")})
    card["sizes"]["naming"] = naming["n"]
    card.update(step("look_name", lambda: look_name_rows(vlm, world, batch_size)))
    card["targets_met"] = {k: _meets(card[k], *CARD_TARGETS[k]) for k in CARD_TARGETS}
    return card


def _meets(value: float, op: str, target: float) -> bool:
    return {">=": value >= target, "<=": value <= target, ">": value > target}[op]


def spread(n: int, total: int) -> list[int]:
    """``n`` indices spread evenly over ``range(total)`` (all of them when ``n >= total``): a live
    subset of a card's queries, which come a few views of one creature at a time, so the first
    ``n`` would be about one or two creatures only."""
    if n < 1 or total < 1:
        raise ValueError(f"need n >= 1 and total >= 1, got {n} and {total}")
    return list(range(total)) if n >= total else [i * total // n for i in range(n)]


def live_kbvqa(vlm, world, n: int, image_size: int = 112, batch_size: int = 16, of: int | None = None) -> dict:
    """The three KB-VQA rows on ``n`` test queries, per query: ``{task: [bool, ...]}``; the first
    ``n``, or with ``of`` (a card's ``n_queries``) ``n`` spread over the card's first ``of``."""
    sets = card_sets_kbvqa(world, of or n, image_size)
    if of:
        sets = {task: [examples[i] for i in spread(n, of)] for task, examples in sets.items()}
    out = {}
    for task, examples in sets.items():
        texts = vlm.generate([e.prompt for e in examples], max_new_tokens=KBVQA_TOKENS[KBVQA_STYLE], temperature=0,
                             batch_size=batch_size)
        out[task] = [kbvqa_official_correct(parse_think_answer(t[0]).answer, e.meta) for t, e in zip(texts, examples)]
    return out


def live_agreement(vlm, world, evaluation: dict, n: int, image_size: int = 112, batch_size: int = 16) -> dict:
    """The card's KB-VQA rows rerun live on ``n`` of its test queries spread over the card's
    (``live_kbvqa``), per row: the card's accuracy, the live one with its Wilson interval, whether
    the card's lies inside it (``check_agreement``) and the share of queries whose result repeats
    the card's record."""
    rows = {}
    total = evaluation["n_queries"]
    for task, right in live_kbvqa(vlm, world, n, image_size, batch_size, of=total).items():
        agree = check_agreement(right, evaluation[f"{task}_acc"])
        committed = [evaluation["records"][task][i]["correct"] for i in spread(n, total)]
        rows[task] = {f"card (n={evaluation['n_queries']})": round(evaluation[f"{task}_acc"], 3),
                      f"live (n={n})": round(agree.rate, 3),
                      "live 95 % interval": f"[{agree.low:.2f}, {agree.high:.2f}]",
                      "agrees": agree.agrees, "same per-query result": round(same_answers(right, committed), 3)}
    return rows


def card_sets_kbvqa(world, n: int, image_size: int, style: str = KBVQA_STYLE) -> dict:
    """The card's three KB-VQA sets alone (see ``card_sets``) in prompt ``style``: "reag" (think,
    then answer; the card's rows) or "evqa" (the answer alone; the ``*_direct`` rows). The
    no-passage prompt is ReAG's in both (its j = 0 prompt)."""

    cfg = mix_config(image_size, 0)
    ten = ten_passage_config(cfg)
    return {t: eval_examples(world, t, n=n, config=ten if t == "kbvqa_10_passages" else cfg, style=style)
            for t in KBVQA_ROWS}


BEFORE_COLUMN = "1.45M model (from scratch)"


def _before_value(value) -> float | str:
    """A row of the earlier card as ``card_table`` shows it: rounded to 3 decimals, "" if absent."""
    return "" if value is None or pd.isna(value) else round(float(value), 3)


def card_table(evaluation: dict, before: dict | None = None):
    """The card as a table: value (a Wilson 95 % interval for the accuracies), target, met; with
    ``before`` (the 1.45M from-scratch model's card) beside it, rounded as the reader's column and
    blank on a row that card did not measure."""

    n = evaluation["n_queries"]
    rows = {}
    for key, (op, target) in CARD_TARGETS.items():
        value = evaluation.get(key)
        interval = ""
        if value is not None and key.endswith("_acc"):
            size = evaluation["sizes"].get(key.removesuffix("_acc"), n)
            low, high = wilson_interval(round(value * size), size)
            interval = f"[{low:.2f}, {high:.2f}]"
        rows[key] = {"reader": None if value is None else round(value, 3), "95 % interval": interval,
                     "target": f"{op} {target}", "met": None if value is None else _meets(value, op, target)}
        if before is not None:
            rows[key][BEFORE_COLUMN] = _before_value(before.get(key))
    for key in DIRECT_ROWS + NAMING_ROWS:     # reported beside the card's rows, without targets of their own
        if evaluation.get(key) is not None:
            size = evaluation["sizes"].get("naming" if key in NAMING_ROWS else key.removesuffix("_acc"), n)
            low, high = wilson_interval(round(evaluation[key] * size), size)
            rows[key] = {"reader": round(evaluation[key], 3), "95 % interval": f"[{low:.2f}, {high:.2f}]",
                         "target": "(reported)", "met": None}
            if before is not None:
                rows[key][BEFORE_COLUMN] = _before_value(before.get(key))
    return pd.DataFrame(rows).T


def write_card(path, evaluation: dict, world=None) -> dict:
    """``card.json`` beside a shipped reader: the evaluation plus provenance (commit, seeds,
    toy-world version, steps and wall time per stage, machine, the reader's fingerprint)."""

    path = Path(path)
    state = json.loads((path / "curves.json").read_text())
    config = state["config"]
    stages = {}
    for point in state["curves"]:
        entry = stages.setdefault(point["stage"], {"steps": 0, "seconds": 0.0})
        entry["steps"] += 1                 # one point per step, in every round (Trainer.reopen)
        entry["seconds"] += point["seconds"]
    card = {"commit": git_commit(), "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            "seed": config["seed"], "world_seed": config["world_seed"],
            "toyworld_version": getattr(world, "version", TOYWORLD_VERSION),
            "stages": {k: {"steps": v["steps"], "minutes": round(v["seconds"] / 60, 1)} for k, v in stages.items()},
            "wall_minutes": round(state["wall_s"] / 60, 1), "fingerprint": reader_fingerprint(path),
            "machine": {"platform": platform.platform(), "processor": platform.processor() or platform.machine(),
                        "torch": torch.__version__, "threads": config["threads"]},
            "reopened": state.get("reopened", []), "config": config,
            "targets": {k: list(v) for k, v in CARD_TARGETS.items()}, "evaluation": evaluation}
    (path / "card.json").write_text(json.dumps(card, indent=1, default=str))
    return card


def main(argv=None) -> None:
    """``python -m kbvqa.reader.card [DIR] [--n 200]``: evaluate a shipped reader, write DIR/card.json."""

    parser = argparse.ArgumentParser(description="Evaluate the shipped reader and write its card.json")
    parser.add_argument("directory", nargs="?", default=str(READER_DIR))
    parser.add_argument("--n", type=positive_int, default=200, help="test queries per row")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--add-look-name", action="store_true",
                        help="add the text-only recall rows to an existing card (cards made before they existed)")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    world = get_world(0)
    if args.add_look_name:
        path = Path(args.directory) / "card.json"
        card = json.loads(path.read_text())
        card["evaluation"].update(look_name_rows(load_reader(args.directory, check_card=False), world))
        card.setdefault("added", []).append({"rows": ["look_name_text_acc", "look_name_text_unseen_acc"],
                                             "commit": git_commit(), "date": datetime.datetime.now(
                                                 datetime.UTC).isoformat(timespec="seconds")})
        path.write_text(json.dumps(card, indent=1, default=str))
        print({k: card["evaluation"][k] for k in card["added"][-1]["rows"]})
        return
    evaluation = evaluate_card(load_reader(args.directory, check_card=False), world, n=args.n)
    card = write_card(args.directory, evaluation, world)
    print(json.dumps({k: v for k, v in card["evaluation"].items() if k not in ("records", "examples")}, indent=1))


if __name__ == "__main__":
    main()
