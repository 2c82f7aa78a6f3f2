"""The model card's evaluation sets for the tiny VLM, and the token-length report of the mixture.

``eval_examples(world, task, split="test", n=None)`` builds a fixed, seeded list of ``Example``
for one of ``EVAL_TASKS`` from the TEST splits (``split="train"``: the same construction on the
training splits, to compare fit and generalisation):

- ``kbvqa_gold_passage`` / ``kbvqa_no_passage`` / ``kbvqa_10_passages``: every KB-VQA question with
  its gold passage alone, with no passage (ReAG's j = 0 prompt), or with the gold among 10 passages
  (9 distractors drawn as in training: look-alikes' same section, same page, random). The target is
  always the gold answer (``meta["answers"]`` for the official scorers): no-passage accuracy
  *should* be low, knowledge must come from retrieval.
- ``critic``: per question, the gold passage ("Yes"), a hard and a soft negative ("No").
- ``mc_zero_shot`` / ``mc_3_random`` / ``mc_3_same_rule``: ``mc_test`` with no example, 3 random
  ``mc_kb`` examples, or 3 ``mc_kb`` examples of the query's rule (one of them with its key value,
  so the answer can be read off; the others may be look-alikes with another key value).
- ``pairwise``: gold page versus a look-alike's page (70 %) or another family's (30 %).
- ``grounding``: the subject's box in every test view.
- ``serts_query`` / ``serts_grade`` / ``serts_answer``: the held-out literature questions.

``token_length_report(world, tokenizer)`` measures prompt + completion tokens per pretraining
task, counting each image as ``tokens_per_image`` placeholders (4 for a 56 px tiny Qwen2-VL).

Leaves out: running a model and scoring (the model-card stage, ``kbvqa.metrics``).
"""
from __future__ import annotations

import random

import numpy as np

from kbvqa.models import pretrain_mc_lit as mc_lit
from kbvqa.models import pretrain_tasks as tasks
from kbvqa.models.pretrain_tasks import Example

EVAL_TASKS = ("kbvqa_gold_passage", "kbvqa_no_passage", "kbvqa_10_passages", "critic", "mc_zero_shot",
              "mc_3_random", "mc_3_same_rule", "pairwise", "grounding", "serts_query", "serts_grade",
              "serts_answer")


def _splits(world, split: str) -> dict:
    if split == "test":
        return {"kbvqa": world.kbvqa_test, "mc": world.mc_test, "mc_pool": world.mc_kb,
                "lit": mc_lit.lit_question_split(world)[1]}
    if split == "train":
        return {"kbvqa": world.kbvqa_train, "mc": world.mc_train, "mc_pool": world.mc_train,
                "lit": mc_lit.lit_question_split(world)[0]}
    raise ValueError(f"split must be 'test' or 'train', got {split!r}")


def _kbvqa_eval(world, q, rng, task: str, style: str, cfg) -> list[Example]:
    gold = world.passage(q.evidence_ids[0])
    if task == "kbvqa_no_passage":
        passages = []
    elif task == "kbvqa_gold_passage":
        passages = [gold]
    else:
        passages = tasks.distractor_passages(world, q, rng, 9, cfg.distractor_mix)
        passages.insert(rng.randint(0, len(passages)), gold)
    style = "reag" if task == "kbvqa_no_passage" else style
    meta = tasks._kbvqa_meta(q, passages, style=style, gold_included=bool(passages),
                             split_kind=q.meta.get("split_kind", ""))
    return [Example(tasks.kbvqa_prompt(world, q, passages, style, cfg), tasks.kbvqa_target(q, style, True),
                    task, meta=meta)]


def _one(world, item, rng, task: str, pools: dict, style: str, cfg) -> list[Example]:
    if task.startswith("kbvqa_"):
        return _kbvqa_eval(world, item, rng, task, style, cfg)
    if task == "critic":
        hard = tasks.distractor_passages(world, item, rng, 1, mix=(1.0, 0.0, 0.0))[0]
        soft = tasks.distractor_passages(world, item, rng, 1, mix=(0.0, 0.5, 0.5))[0]
        return [tasks.critic_example(world, item, world.passage(item.evidence_ids[0]), "Yes", "", cfg, task),
                tasks.critic_example(world, item, hard, "No", "hard", cfg, task),
                tasks.critic_example(world, item, soft, "No", "soft", cfg, task)]
    if task.startswith("mc_"):
        if task == "mc_zero_shot":
            examples = []
        elif task == "mc_3_random":
            examples = rng.sample([e for e in pools["mc_pool"] if e.id != item.id], 3)
        else:
            examples = mc_lit.pick_mc_examples(world, item, 3, rng, (1.0, 1.0, 0.0), pool=pools["mc_pool"])
        return [Example(mc_lit.mc_chat(world, item, examples, cfg), mc_lit.mc_answer_text(item), task,
                        meta=mc_lit._mc_meta(item, examples, k=len(examples)))]
    if task == "pairwise":
        if rng.random() < 0.7:
            other = world.document_of(rng.choice(world.lookalikes(item.meta["entity_id"])).id)
        else:
            other = rng.choice([d for d in world.documents if d.meta["family"] != item.meta["family"]])
        return [tasks.pairwise_example(world, item, other, rng, cfg)]
    if task == "grounding":
        return [tasks.grounding_example(world, item, cfg)]
    fn = {"serts_query": mc_lit.serts_query, "serts_grade": mc_lit.serts_grade,
          "serts_answer": mc_lit.serts_answer}[task]
    return [fn(world, rng, cfg, questions=[item])]


def eval_examples(world, task: str, split: str = "test", n: int | None = None, config=None,
                  style: str = "evqa", seed: int = 0) -> list[Example]:
    """The evaluation set ``task`` (one of ``EVAL_TASKS``) on ``split``: for the first ``n``
    queries of the split (all when ``None``); ``style`` is the KB-VQA prompt ("reag", "evqa",
    "infoseek"); ``config`` gives image size and short prompts (default: the cpu profile's)."""
    from kbvqa.models.pretrain_mix import PretrainMixConfig

    if task not in EVAL_TASKS:
        raise ValueError(f"unknown eval task {task!r}; expected one of {EVAL_TASKS}")
    if style not in tasks.KBVQA_STYLES:
        raise ValueError(f"unknown style {style!r}; expected one of {tasks.KBVQA_STYLES}")
    if n is not None and n < 0:
        raise ValueError(f"n must be None or >= 0, got {n}")
    cfg = config or PretrainMixConfig()
    pools = _splits(world, split)
    source = {"mc": pools["mc"], "serts": pools["lit"]}.get(task.split("_")[0], pools["kbvqa"])
    out: list[Example] = []
    for item in source[:n]:
        rng = random.Random(f"eval:{task}:{split}:{seed}:{item.id}")
        out += _one(world, item, rng, task, pools, style, cfg)
    return out


def example_length(example: Example, tokenizer, tokens_per_image: int = 4) -> tuple[int, int]:
    """(tokens, unknown tokens) of prompt + completion + EOS as the chat template renders them."""
    bare = [{"role": m["role"], "content": [{"type": "image"} if p["type"] == "image" else p
                                            for p in m["content"]]} for m in example.prompt]
    text = tokenizer.apply_chat_template(bare, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(text + example.completion, add_special_tokens=False).input_ids
    n_images = sum(p["type"] == "image" for m in example.prompt for p in m["content"])
    return len(ids) + 1 + n_images * (tokens_per_image - 1), ids.count(tokenizer.unk_token_id)


def token_length_report(world, tokenizer, config=None, n: int = 200, tokens_per_image: int = 4,
                        task_names=None) -> dict[str, dict]:
    """Per pretraining task: p50, p95 and max tokens of ``n`` examples, and the unknown-token rate."""
    from kbvqa.models.pretrain_mix import TASKS, make_example

    report = {}
    for task in task_names or TASKS:
        lengths, unknown = [], 0
        for i in range(n):
            length, unk = example_length(make_example(world, task, random.Random(f"lengths:{task}:{i}"),
                                                      config), tokenizer, tokens_per_image)
            lengths.append(length)
            unknown += unk
        arr = np.array(lengths)
        report[task] = {"p50": int(np.percentile(arr, 50)), "p95": int(np.percentile(arr, 95)),
                        "max": int(arr.max()), "unk_rate": round(float(unknown / max(1, arr.sum())), 4)}
    return report
