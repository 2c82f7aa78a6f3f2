"""Letter binding for the RCTS generator (issue 52, item 3): name the option letter of an answer.

RCTS's base model (Qwen2-VL) maps the answer its reasoning reaches to that answer's option letter.
The reader does not: given a correct rationale in the K-shot format its letter is at chance (card
``mc_3_same_rule_acc`` 0.255 on 4 options), so a letter-accuracy row measures letter binding, not
the examples the search picked. This module restores that premise, for baseline and treatment
alike (every RCTS row loads the same ``generator``):

- ``binding_example(world, q, rng, config)``: one training chat on the *training rules only*
  (``world.mc_train``, whose rule ids are disjoint from ``mc_kb`` / ``mc_test``): K examples from the
  same rule (one with the query's key value, the rest same-key, look-alike or other-rule), each with
  its options shuffled, answering as a plain knowledge base does ("The answer is X.", §3.2's premise)
  or, for ``context_share`` of the chats, with a reasoning context before the letter; the target is
  the response format of every row, ``<rationale> So the answer is <text>. The answer is X.``
  (``response_text``; rationale first, a departure from App. C.2's letter-first order that chapter
  14 states). The query's options are shuffled too, so no letter can be copied from an example.
- ``training_examples(world, config)``: the binding chats mixed with the reader's own task mixture
  (``replay_share``, mixture replay, so the adapter keeps the reader's other skills).
- ``letter_given_rationale(vlm, world, n, config)``: the gate. On ``mc_kb`` questions (never
  ``mc_test``), K-shot prompts with same-rule examples from the *rest* of ``mc_kb``, the correct
  rationale teacher-forced, then the argmax over the option letters' logits. Goal >= 0.9.
- ``train_letter_binding(vlm, config, ...)``: LoRA via ``kbvqa.rl.sft_train`` (resumable).
- ``copied_letters``: a diagnostic on the gate's records: how many wrong picks are the letter the
  gold answer's text carries in one of the *examples* (a letter copied from the wrong turn), beside
  the count a uniform wrong pick would give.
- ``same_rule_prompts`` / ``same_rule_accuracy``: the card row ``mc_3_same_rule_acc`` in this format:
  ``mc_test`` questions (options as the dataset lists them) with 3 examples from ``mc_kb`` (same rule,
  plain answers), the response generated greedily and its letter parsed (``parse_rcts_answer``).

Leaves out: the search and its rows (``kbvqa.experiments.rcts_toy``), the reasoner's contexts.
"""
from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

import torch

from kbvqa.data.schema import Query, option_letters
from kbvqa.models.pretrain_mc_lit import mc_chat, pick_mc_examples
from kbvqa.models.pretrain_mix import role_mix_config
from kbvqa.prompts.formats import Example

__all__ = ["LetterBindingConfig", "binding_example", "copied_letters", "gate_items", "letter_given_rationale",
           "response_text", "same_rule_accuracy", "same_rule_prompts", "shuffled_options", "train_letter_binding",
           "training_examples"]

ANSWER_LEAD = "The answer is"


@dataclass(frozen=True)
class LetterBindingConfig:
    k: int = 3                         # in-context examples per chat (the card's mc_3 rows, RCTS's K)
    example_mix: tuple = (0.3, 0.5, 0.2)   # after one same-key example: same key, look-alike, other rule
    context_share: float = 0.5         # chats whose examples carry a reasoning context (the "+ context" rows)
    replay_share: float = 0.5          # share of the reader's own mixture in the training examples
    n_examples: int = 3200             # binding chats + replay examples
    steps: int = 300                   # optimiser steps
    batch_size: int = 8
    lr: float = 2e-4                   # LoRA, cosine after warm-up
    lora_r: int = 16
    seed: int = 0
    checkpoint_every: int = 25
    letter_weight: float | None = None  # Eq. 5's alpha on the closing "The answer is X." (the rationale gets
                                        # 1 - alpha; ``SFTConfig.answer_marker``); None: one token mean over the
                                        # whole response (the first pilot, where the letter is 1 token of ~45)

    def __post_init__(self):
        for name in ("context_share", "replay_share"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"LetterBindingConfig.{name} must be in [0, 1], got {value!r}")
        if not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"LetterBindingConfig.k must be an int >= 1, got {self.k!r}")
        if self.letter_weight is not None and not 0 < self.letter_weight <= 1:
            raise ValueError(f"LetterBindingConfig.letter_weight must be None or in (0, 1], got {self.letter_weight!r}")
        if len(self.example_mix) != 3 or min(self.example_mix) < 0 or sum(self.example_mix) <= 0:
            raise ValueError(f"LetterBindingConfig.example_mix needs three weights >= 0, got {self.example_mix!r}")

    @property
    def lora(self) -> dict:
        return {"r": self.lora_r, "alpha": 2 * self.lora_r}


def shuffled_options(q: Query, rng: random.Random) -> Query:
    """``q`` with its options in a new random order and its answer letter moved with them."""
    if not q.options or not q.answers:
        raise ValueError(f"{q.id}: a multiple-choice query needs options and an answer letter")
    letters = option_letters(len(q.options))
    gold_text = q.options[letters.index(q.answers[0])]
    options = list(q.options)
    rng.shuffle(options)
    return dataclasses.replace(q, options=options, answers=[letters[options.index(gold_text)]])


def response_text(q: Query) -> str:
    """The response format of every row: ``<rationale> So the answer is <text>. The answer is X.``
    The toy world's worked solution already ends with "So the answer is <text>."."""
    letters = option_letters(len(q.options))
    text = q.options[letters.index(q.answers[0])]
    rationale = q.solution.strip()
    if not rationale.rstrip(".").endswith(f"So the answer is {text}"):
        rationale = f"{rationale.rstrip('.')}. So the answer is {text}."
    return f"{rationale} {ANSWER_LEAD} {q.answers[0]}."


def binding_example(world, q: Query, rng: random.Random, config: LetterBindingConfig, pool=None,
                    with_context: bool | None = None) -> Example:
    """One K-shot chat for ``q`` (module docstring); ``pool`` the examples' source (default: ``q``'s split
    in the world's caches, i.e. ``mc_train`` for training items)."""
    cfg = role_mix_config("generator")
    if with_context is None:
        with_context = rng.random() < config.context_share
    examples = [shuffled_options(e, rng) for e in pick_mc_examples(world, q, config.k, rng, config.example_mix, pool)]
    query = shuffled_options(q, rng)
    contexts = {e.id: e.solution for e in examples} if with_context else None
    chat = mc_chat(world, query, examples, cfg, with_context=with_context, contexts=contexts, plain=True)
    return Example(chat, response_text(query), "letter_binding",
                   meta={"query_id": q.id, "answer": query.answers[0], "options": list(query.options),
                         "example_ids": [e.id for e in examples], "with_context": with_context})


def training_examples(world, config: LetterBindingConfig) -> list[Example]:
    """``n_examples`` examples: binding chats on ``mc_train`` and, for ``replay_share`` of them, the
    reader's own mixture (``kbvqa.reader.tasks``), interleaved by a seeded draw."""
    from kbvqa.reader import tasks

    rng = random.Random(f"letter_binding:{config.seed}")
    train = [q for q in world.mc_train if q.solution and q.options]
    mix_cfg = tasks.mix_config(role_mix_config("generator").image_size, config.seed)
    replay = tasks.iter_reader_examples(world, mix_cfg, tasks.READER_WEIGHTS)
    out = []
    for _ in range(config.n_examples):
        out.append(next(replay) if rng.random() < config.replay_share
                   else binding_example(world, rng.choice(train), rng, config))
    return out


def _letter_ids(tokenizer, letters: str) -> list[int]:
    ids = []
    for letter in letters:
        tokens = tokenizer(f" {letter}", add_special_tokens=False).input_ids
        if len(tokens) != 1:
            raise ValueError(f"the letter {letter!r} is not one token after a space for this tokenizer: {tokens}")
        ids.append(tokens[0])
    return ids


def gate_items(world, n: int, config: LetterBindingConfig, with_context: bool = False,
               seed: int = 1) -> list[tuple[Example, str]]:
    """(chat, teacher-forced prefix) for ``mc_kb[:n]``: examples from the rest of ``mc_kb``, options
    shuffled by ``random.Random(f"letter_gate:{seed}:{id}")``; the prefix is the response up to and
    including "The answer is"."""
    kb = list(world.mc_kb)
    if not isinstance(n, int) or not 1 <= n <= len(kb):
        raise ValueError(f"n must be an int in [1, {len(kb)}] (mc_kb's size), got {n!r}")
    items = []
    for q in kb[:n]:
        rng = random.Random(f"letter_gate:{seed}:{q.id}")
        pool = [e for e in kb if e.id != q.id]
        ex = binding_example(world, q, rng, config, pool=pool, with_context=with_context)
        items.append((ex, ex.completion[: ex.completion.rindex(ANSWER_LEAD) + len(ANSWER_LEAD)]))
    return items


def letter_given_rationale(vlm, world, n: int = 200, config: LetterBindingConfig | None = None,
                           batch_size: int = 8, with_context: bool = False, seed: int = 1) -> dict:
    """The gate (goal >= 0.9): the first ``n`` ``mc_kb`` questions in K-shot chats whose examples come
    from the rest of ``mc_kb`` (the same rule; plain answers, or with their contexts), options shuffled
    by a seeded draw, the correct rationale teacher-forced ("... So the answer is <text>. The answer
    is"), then the option letter with the highest logit. Returns accuracy, per-question records."""
    from kbvqa.models.scoring import join_completions

    config = config or LetterBindingConfig()
    items = gate_items(world, n, config, with_context, seed)
    records, was_training = [], vlm.model.training
    vlm.model.eval()
    try:
        for start in range(0, len(items), batch_size):
            chunk = items[start:start + batch_size]
            inputs, comp, mask, _ = join_completions(vlm, [e.prompt for e, _ in chunk], [p for _, p in chunk])
            lengths = mask.sum(1)
            with torch.no_grad():
                logits = vlm.model(**inputs, logits_to_keep=comp.shape[1] + 1, use_cache=False).logits
            for row, (ex, _) in enumerate(chunk):
                letters = option_letters(len(ex.meta["options"]))
                scores = logits[row, int(lengths[row])].float()[_letter_ids(vlm.tokenizer, letters)]
                pick = letters[int(scores.argmax())]
                records.append({"query_id": ex.meta["query_id"], "answer": ex.meta["answer"], "pick": pick,
                                "correct": pick == ex.meta["answer"]})
    finally:
        vlm.model.train(was_training)
    acc = sum(r["correct"] for r in records) / len(records)
    return {"accuracy": acc, "n": len(records), "with_context": with_context, "records": records}


def train_letter_binding(vlm, config: LetterBindingConfig | None = None, world=None, resume=None, on_checkpoint=None):
    """LoRA on ``vlm`` (in place) over ``training_examples``; returns ``kbvqa.rl.sft.SFTResult``. The
    loss is next-token prediction on the whole response, or with ``config.letter_weight`` Eq. 5's split
    with the closing "The answer is X." as the answer part (``SFTConfig.answer_marker``)."""
    from kbvqa.data import get_world
    from kbvqa.rl.sft import SFTConfig, sft_train

    config = config or LetterBindingConfig()
    world = world or get_world()
    weighted = config.letter_weight is not None
    sft = SFTConfig(alpha=config.letter_weight if weighted else 1.0, answer_marker=ANSWER_LEAD if weighted else None,
                    steps=config.steps, batch_size=config.batch_size, lr=config.lr,
                    warmup_steps=max(1, config.steps // 20), lora=config.lora, freeze_vision=True,
                    seed=config.seed, checkpoint_every=config.checkpoint_every, gradient_checkpointing=False)
    return sft_train(vlm, training_examples(world, config), sft, resume=resume, on_checkpoint=on_checkpoint)


def same_rule_prompts(world, n: int = 200, config: LetterBindingConfig | None = None, seed: int = 1) -> list[Example]:
    """``mc_test[:n]`` as K-shot chats over the plain knowledge base: examples from ``mc_kb`` picked by
    ``pick_mc_examples`` (one with the query's rule and key value, as the card's ``mc_3_same_rule``),
    every option list as the dataset gives it; the target is ``response_text``."""
    config = config or LetterBindingConfig()
    test = list(world.mc_test)
    if not 1 <= n <= len(test):
        raise ValueError(f"n must be in [1, {len(test)}] (mc_test's size), got {n!r}")
    cfg, out = role_mix_config("generator"), []
    for q in test[:n]:
        rng = random.Random(f"letter_card:{seed}:{q.id}")
        examples = pick_mc_examples(world, q, config.k, rng, config.example_mix, list(world.mc_kb))
        out.append(Example(mc_chat(world, q, examples, cfg, plain=True), response_text(q), "mc_3_same_rule",
                           meta={"query_id": q.id, "answer": q.answers[0], "options": list(q.options),
                                 "answer_text": q.meta.get("answer_text"), "example_ids": [e.id for e in examples]}))
    return out


def same_rule_accuracy(vlm, examples: list[Example], max_new_tokens: int = 80, batch_size: int = 8) -> dict:
    """Greedy responses to ``same_rule_prompts``; letter accuracy (the last "The answer is X"'s letter,
    parsed by ``parse_rcts_answer`` on the text after the rationale) and text accuracy (the response
    says "So the answer is <gold text>")."""
    from kbvqa.parsers import parse_rcts_answer

    outs = [o[0] for o in vlm.generate([e.prompt for e in examples], temperature=0, max_new_tokens=max_new_tokens,
                                       batch_size=batch_size)]
    records = []
    for e, o in zip(examples, outs):
        letters = option_letters(len(e.meta["options"]))
        letter = parse_rcts_answer(o, letters).letter
        text = e.meta["options"][letters.index(e.meta["answer"])]
        records.append({"query_id": e.meta["query_id"], "output": o, "letter": letter,
                        "correct": letter == e.meta["answer"], "text_correct": f"answer is {text}" in o})
    n = max(1, len(records))
    return {"accuracy": sum(r["correct"] for r in records) / n,
            "text_accuracy": sum(r["text_correct"] for r in records) / n, "n": len(records), "records": records}


def copied_letters(world, records: list[dict], config: LetterBindingConfig | None = None, with_context: bool = False,
                   seed: int = 1) -> dict:
    """On ``letter_given_rationale``'s records (rebuilt prompts: ``gate_items`` is deterministic): the
    wrong picks, how many of them are a letter that the gold option's text has in an example's option
    list, and the expected count if each wrong pick were uniform over the wrong letters."""
    items = gate_items(world, len(records), config or LetterBindingConfig(), with_context, seed)
    wrong = copied = 0
    chance = 0.0
    for (ex, _), rec in zip(items, records):
        if rec["query_id"] != ex.meta["query_id"]:
            raise ValueError(f"record {rec['query_id']} is not gate item {ex.meta['query_id']}: other records or seed")
        if rec["correct"]:
            continue
        letters = option_letters(len(ex.meta["options"]))
        text = ex.meta["options"][letters.index(ex.meta["answer"])]
        users = ["".join(c.get("text", "") for c in turn["content"] if c.get("type") == "text")
                 for turn in ex.prompt if turn["role"] == "user"]
        in_examples = {x for x in letters for u in users[:-1] if f"({x}) {text}" in u} - {ex.meta["answer"]}
        wrong += 1
        copied += rec["pick"] in in_examples
        chance += len(in_examples) / (len(letters) - 1)
    return {"wrong": wrong, "copied": copied, "chance": chance}
