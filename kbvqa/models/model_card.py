"""The model card of the tiny VLM: every metric of the issue on the toy world's TEST split, and plots.

``evaluate_card(vlm, world, n=...)`` runs the fixed evaluation sets of ``pretrain_mix.eval_examples``
(the first ``n`` queries of each test split) and returns a flat dict:

- KB-VQA (E-VQA-style prompt, greedy answers scored by the official scorer of each kind,
  ``kbvqa.metrics.toy_kbvqa_correct``: InfoSeek's pointwise score, E-VQA's multi-answer IoU; the
  tiny model's committed rows were judged again with it, ``python -m kbvqa.experiments.rescore``):
  ``kbvqa_gold_passage_acc`` (target >= 0.85), ``kbvqa_no_passage_acc`` (should be low; ReAG's
  no-passage prompt, so its ``<answer>`` is read with ``parse_think_answer``),
  ``kbvqa_10_passages_acc``, ``no_passage_refusal_rate`` ("I don't know"), and the mean gold-answer
  log-probability with the gold passage and without any (``gold_logprob_with_passage`` /
  ``gold_logprob_no_passage``: the same E-VQA prompt with "None" as retrieved section; summed over
  the answer's tokens).
- ReAG critic (Eq. 4): ``critic_roc_auc`` of P(Yes) (target >= 0.85; ties count half), plus
  ``critic_acc`` at P(Yes) > 0.5 and the AUC against hard negatives alone.
- RCTS multiple choice: ``mc_zero_shot_acc``, ``mc_3_random_acc``, ``mc_3_same_rule_acc`` (letter
  from ``parse_rcts_answer``; the same-family examples should be clearly best).
- MOLT: ``pairwise_acc`` (``<winner>`` id), ``box_iou`` (mean IoU; 0 when no box parses) and
  ``box_iou50`` (share with IoU >= 0.5).

``teacher_forced_accuracy(vlm, examples)`` (``kbvqa.models.scoring``): the share of examples whose
every completion token is the argmax (= greedy exact match, cheap: one forward pass; ``tiny.pretrain``
logs it on small sets).

``write_card(vlm_dir, evaluation, ...)`` writes ``card.json`` (commit, seed, toy-world version,
config, steps, wall time, machine, evaluation); ``kbvqa.viz.reader.draw_tiny_training_curves(curves)``
draws ``curves.json``.

Leaves out: training (``tiny.py``), SeRTS literature metrics (their chapters score them).
"""
from __future__ import annotations

import datetime
import json
import math
import platform
import re
from pathlib import Path

import torch

from kbvqa.data import TOYWORLD_VERSION, get_world
from kbvqa.experiments.runs import git_commit, positive_int
from kbvqa.metrics.ranking import roc_auc
from kbvqa.metrics.toy_kbvqa import toy_kbvqa_correct
from kbvqa.models.pretrain_mix import PretrainMixConfig, eval_examples
from kbvqa.models.strict_checkpoint import weights_fingerprint
from kbvqa.models.tiny import load_tiny_vlm
from kbvqa.parsers import parse_box, parse_rcts_answer, parse_think_answer, parse_winner
from kbvqa.prompts.formats import kbvqa_prompt
from kbvqa.retrieval.subject import box_iou

REFUSAL = re.compile(r"don'?t know|unknown|cannot|can't", re.IGNORECASE)
__all__ = ["evaluate_card", "write_card"]


def _generate(vlm, examples, max_new_tokens: int, batch_size: int) -> list[str]:
    if not examples:
        return []
    out = vlm.generate([e.prompt for e in examples], n=1, max_new_tokens=max_new_tokens, temperature=0,
                       batch_size=batch_size)
    return [samples[0] for samples in out]


def _kbvqa_correct(text: str, meta: dict) -> bool:
    prediction = parse_think_answer(text).answer
    try:
        return toy_kbvqa_correct(prediction, meta["answers"], meta["answer_type"], meta.get("answer_range"))
    except ValueError:   # no usable ground truth: count as wrong
        return False


def _mean(values) -> float:
    values = list(values)
    return float(sum(values) / len(values)) if values else float("nan")


def _gold_logprob(vlm, examples, batch_size: int) -> float:
    totals = []
    with torch.no_grad():
        for i in range(0, len(examples), batch_size):
            chunk = examples[i:i + batch_size]
            scored = vlm.completion_logprobs([e.prompt for e in chunk], [e.completion for e in chunk])
            totals += scored.logprobs.sum(dim=1).tolist()
    return _mean(totals)


def _no_passage_prompt(world, example):
    """The same E-VQA-style prompt as ``example`` with no retrieved section ("None")."""

    query = next(q for q in world.kbvqa_test if q.id == example.meta["query_ids"][0])
    return kbvqa_prompt(world, query, [], "evqa", PretrainMixConfig())


KBVQA_ROWS = ("kbvqa_gold_passage", "kbvqa_no_passage", "kbvqa_10_passages")


def kbvqa_rows(vlm, sets: dict, max_new_tokens: int = 32, batch_size: int = 16) -> tuple[dict, dict]:
    """``({"<task>_acc": accuracy}, {task: greedy texts})`` of the three KB-VQA sets in ``sets``
    (``eval_examples``), answers judged by the official scorers (``toy_kbvqa_correct``)."""
    rows, texts = {}, {}
    for task in KBVQA_ROWS:
        texts[task] = _generate(vlm, sets[task], max_new_tokens, batch_size)
        rows[f"{task}_acc"] = _mean(_kbvqa_correct(t, e.meta) for t, e in zip(texts[task], sets[task]))
    return rows, texts


def evaluate_card(vlm, world, n: int = 200, batch_size: int = 16, max_new_tokens: int = 32) -> dict:
    """Every model-card metric on the first ``n`` test queries of each set (see the docstring)."""

    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    was_training = vlm.model.training
    vlm.model.eval()
    sets = {t: eval_examples(world, t, n=n) for t in
            ("kbvqa_gold_passage", "kbvqa_no_passage", "kbvqa_10_passages", "critic", "mc_zero_shot",
             "mc_3_random", "mc_3_same_rule", "pairwise", "grounding")}
    card: dict = {"n_queries": n, "sizes": {t: len(ex) for t, ex in sets.items()}}
    rows, texts = kbvqa_rows(vlm, sets, max_new_tokens, batch_size)
    card.update(rows)
    card["no_passage_refusal_rate"] = _mean(bool(REFUSAL.search(parse_think_answer(t).answer or t))
                                            for t in texts["kbvqa_no_passage"])
    card["gold_logprob_with_passage"] = _gold_logprob(vlm, sets["kbvqa_gold_passage"], batch_size)
    no_passage_gold = [type(e)(_no_passage_prompt(world, e), e.completion, e.task, meta=e.meta)
                       for e in sets["kbvqa_gold_passage"]]
    card["gold_logprob_no_passage"] = _gold_logprob(vlm, no_passage_gold, batch_size)
    critic = sets["critic"]
    p = vlm.p_yes([e.prompt for e in critic], batch_size=batch_size).tolist()
    labels = [e.completion == "Yes" for e in critic]
    card["critic_roc_auc"] = roc_auc(p, labels)
    hard = [(s, y) for s, y, e in zip(p, labels, critic) if y or e.meta.get("negative_kind") == "hard"]
    card["critic_roc_auc_hard"] = roc_auc([s for s, _ in hard], [y for _, y in hard])
    card["critic_acc"] = _mean((s > 0.5) == y for s, y in zip(p, labels))
    card["critic_mean_p_yes"] = _mean(p)
    for task in ("mc_zero_shot", "mc_3_random", "mc_3_same_rule"):
        outs = _generate(vlm, sets[task], max_new_tokens, batch_size)
        golds = [parse_rcts_answer(e.completion).letter for e in sets[task]]
        card[f"{task}_acc"] = _mean(parse_rcts_answer(t).letter == g for t, g in zip(outs, golds))
    outs = _generate(vlm, sets["pairwise"], 64, batch_size)
    card["pairwise_acc"] = _mean(parse_winner(t) == e.meta["winner"] for t, e in zip(outs, sets["pairwise"]))
    outs = _generate(vlm, sets["grounding"], 24, batch_size)
    ious = [box_iou(parse_box(t), e.meta["box"]) for t, e in zip(outs, sets["grounding"])]
    card["box_iou"], card["box_iou50"] = _mean(ious), _mean(i >= 0.5 for i in ious)
    card["examples"] = {t: {"target": sets[t][0].completion, "output": texts[t][0]} for t in texts}
    vlm.model.train(was_training)
    return card


def _finite(value):
    """``value`` with every NaN float replaced by ``None`` (valid JSON)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return None if isinstance(value, float) and math.isnan(value) else value


def write_card(vlm_dir, evaluation: dict, curves: dict | None = None, world=None, extra: dict | None = None) -> Path:
    """Write ``card.json`` next to the checkpoint in ``vlm_dir``; returns its path."""

    vlm_dir = Path(vlm_dir)
    curves = curves if curves is not None else json.loads((vlm_dir / "curves.json").read_text())
    now = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    card = {"commit": git_commit(), "date": now,
            "seed": curves["config"]["seed"], "world_seed": curves["config"]["world_seed"],
            "toyworld_version": getattr(world, "version", TOYWORLD_VERSION), "config": curves["config"],
            "steps_done": curves["steps_done"], "wall_minutes": round(curves["wall_s"] / 60, 1),
            "parameters": curves.get("parameters"), "vocab": curves.get("vocab"),
            "machine": {"platform": platform.platform(), "torch": torch.__version__,
                        "threads": curves["config"]["threads"]},
            "evaluation": evaluation, "fingerprint": weights_fingerprint(vlm_dir), **(extra or {})}
    path = vlm_dir / "card.json"
    path.write_text(json.dumps(_finite(card), indent=1, default=str))
    return path


def stages(curves: dict) -> list[dict]:
    """The training stages behind a checkpoint, oldest first (``previous_stages`` + itself), with
    ``offset``: the steps done before each stage."""
    out, offset = [], 0
    for stage in curves.get("previous_stages", []) + [curves]:
        out.append({**stage, "offset": offset})
        offset += stage["steps_done"]
    return out


def main(argv=None) -> None:
    """``python -m kbvqa.models.model_card DIR [--n 200]``: evaluate the checkpoint in DIR on the
    toy world's test split and write DIR/card.json."""
    import argparse

    parser = argparse.ArgumentParser(description="Evaluate a tiny checkpoint and write its card.json")
    parser.add_argument("directory")
    parser.add_argument("--n", type=positive_int, default=200, help="test queries per set")
    parser.add_argument("--threads", type=positive_int, default=1)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    curves = json.loads((Path(args.directory) / "curves.json").read_text())
    world = get_world(curves["config"]["world_seed"])
    evaluation = evaluate_card(load_tiny_vlm(args.directory), world, n=args.n)
    print(json.dumps({k: v for k, v in evaluation.items() if k != "examples"}, indent=1, default=str))
    extra = {"stages": [{"steps": st["steps_done"], "wall_minutes": round(st["wall_s"] / 60, 1),
                         "init_from": st["config"].get("init_from", "")} for st in stages(curves)]}
    init = curves["config"].get("init_from")
    if init and (Path(init) / "card.json").exists():  # the earlier stage's card, for before/after
        extra["init_evaluation"] = json.loads((Path(init) / "card.json").read_text())["evaluation"]
    print(write_card(args.directory, evaluation, curves, world, extra=extra))


if __name__ == "__main__":
    main()
