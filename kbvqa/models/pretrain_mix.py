"""The multi-task pretraining mixture of the tiny cpu-profile VLM, and its evaluation sets.

- ``PretrainMixConfig``: task weights and the knobs of every task (commented below).
- ``TASKS``: task name -> ``(world, rng, cfg) -> Example`` (``kbvqa.prompts.formats``, ``pretrain_mc_lit``).
- ``iter_pretrain_examples(world, config)``: an infinite, seeded stream; example ``i`` depends only
  on ``(config.seed, i)`` (its own ``random.Random``), so a run can resume at any step.
- ``pretrain_corpus_texts(world)``: the texts a word-level tokenizer is trained on (documents,
  training questions and solutions, literature, every prompt file rendered, sample examples).
- ``eval_examples(world, task, split="test")``: the model card's fixed sets (``EVAL_TASKS``) built
  from the TEST splits (``kbvqa_test``, ``mc_test`` with ``mc_kb`` as its examples, held-out
  literature questions); ``split="train"`` builds the same sets from the training splits.
- ``pretrain_batch(vlm, examples)``: one ``training_batch`` for a mixed batch (per-example loss).
- ``token_length_report(world, tokenizer)``: p50/p95/max tokens and the unknown-word rate per task.

Sources (and only these) feed the stream: ``kbvqa_train``, ``mc_train``, documents, literature,
the pretraining part of ``lit_questions``. Never ``kbvqa_test``, ``mc_test`` or ``mc_kb``.

Leaves out: the optimiser loop and checkpoints (the tiny-model stage), scoring (``kbvqa.metrics``).

Evaluation sets (the model card's):
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
"""
from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from kbvqa.config import get_profile
from kbvqa.models import pretrain_mc_lit as mc_lit
from kbvqa.models.pretrain_counterfactual import kbvqa_counterfactual
from kbvqa.prompts import formats as tasks
from kbvqa.prompts import list_prompts, load_prompt
from kbvqa.prompts.formats import Example

TASKS = {
    "kbvqa_with_passages": tasks.kbvqa_with_passages, "kbvqa_no_passage": tasks.kbvqa_no_passage,
    "mc_in_context": mc_lit.mc_in_context, "reasoning_context_write": mc_lit.reasoning_context_write,
    "reasoning_context_answer": mc_lit.reasoning_context_answer, "critic": tasks.critic_judgement,
    "serts_query": mc_lit.serts_query, "serts_grade": mc_lit.serts_grade,
    "serts_answer": mc_lit.serts_answer, "pairwise": tasks.pairwise_match,
    "grounding": tasks.grounding, "document_lm": tasks.document_lm, "lookup_drill": tasks.lookup_drill,
    "kbvqa_counterfactual": kbvqa_counterfactual,
}
DEFAULT_WEIGHTS = {
    "kbvqa_with_passages": 0.20, "kbvqa_no_passage": 0.02, "mc_in_context": 0.14,
    "reasoning_context_write": 0.04, "reasoning_context_answer": 0.04, "critic": 0.12,
    "serts_query": 0.04, "serts_grade": 0.04, "serts_answer": 0.02, "pairwise": 0.08,
    "grounding": 0.06, "document_lm": 0.08, "lookup_drill": 0.12,
    "kbvqa_counterfactual": 0.0,  # stage 2 only (the reading stage, ``tiny.READING_STAGE``)
}


@dataclass
class PretrainMixConfig:
    seed: int = 0                          # example i of the stream uses Random(f"pretrain:{seed}:{i}")
    weights: dict = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))  # task -> sampling weight
    short_prompts: bool = True             # cpu profile: the prompts' _short renderings
    image_size: int | None = 56            # px side of every image (112 px views downscaled); None: native
    # KB-VQA (ReAG generator, MOLT Tables 15/16)
    max_passages: int = 10                 # passages per prompt: 1..max (gold + 0..max-1 distractors)
    kbvqa_style_weights: tuple = (1.0, 1.0, 1.0)       # reag, evqa, infoseek prompt styles
    gold_missing_rate: float = 0.1         # share of passage prompts without the gold (-> "I don't know")
    distractor_mix: tuple = (0.5, 0.25, 0.25)          # look-alikes' same section, same page, random
    # ReAG critic (supp. C: 30 % soft / 70 % hard negatives)
    critic_positive_rate: float = 0.5      # share of "Yes" examples
    critic_hard_rate: float = 0.7          # share of hard negatives among the "No" examples
    # RCTS multiple choice
    mc_k_weights: dict = field(default_factory=lambda: {0: 1.0, 1: 1.0, 2: 1.0, 3: 1.0})  # K -> weight
    mc_example_mix: tuple = (0.4, 0.3, 0.3)            # same key value, look-alike, random rule
    mc_rc_rate: float = 0.25               # share of K >= 1 prompts whose examples carry C_i
    # MOLT pairwise, SeRTS, reading
    pairwise_lookalike_rate: float = 0.7   # the other candidate is a look-alike (else another family)
    serts_top_k: int = 5                   # abstracts retrieved by BM25 for the evaluator
    doc_lm_literature_rate: float = 0.25   # document_lm: share of literature abstracts (else pages)
    drill_entities: tuple = (2, 4)         # look-alikes per lookup drill (min, max)
    drill_attributes: tuple = (1, 3)       # facts per creature in a drill (min, max)

    def __post_init__(self):
        unknown = sorted(set(self.weights) - set(TASKS))
        if unknown:
            raise ValueError(f"unknown task(s) {unknown}; known: {sorted(TASKS)}")
        if any(w < 0 for w in self.weights.values()) or not sum(self.weights.values()) > 0:
            raise ValueError("task weights must be >= 0 with a positive sum")
        for name in ("gold_missing_rate", "critic_positive_rate", "critic_hard_rate", "mc_rc_rate",
                     "pairwise_lookalike_rate", "doc_lm_literature_rate"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} must be in [0, 1], got {getattr(self, name)}")
        if self.image_size is not None and (self.image_size < 28 or self.image_size % 28):
            raise ValueError(f"image_size must be None or a positive multiple of 28, got {self.image_size}")
        if not 1 <= self.max_passages <= 20 or self.serts_top_k < 1:
            raise ValueError("need 1 <= max_passages <= 20 and serts_top_k >= 1")
        if not self.mc_k_weights or any(k not in (0, 1, 2, 3) or w < 0 for k, w in self.mc_k_weights.items()):
            raise ValueError("mc_k_weights maps K in 0..3 to weights >= 0")
        for name, n in (("kbvqa_style_weights", 3), ("distractor_mix", 3), ("mc_example_mix", 3)):
            v = getattr(self, name)
            if len(v) != n or min(v) < 0 or not sum(v) > 0:
                raise ValueError(f"{name} needs {n} weights >= 0 with a positive sum, got {v}")
        for name in ("drill_entities", "drill_attributes"):
            lo, hi = getattr(self, name)
            if not 1 <= lo <= hi:
                raise ValueError(f"{name} must be (min, max) with 1 <= min <= max")


def role_mix_config(role: str | None, profile=None, **overrides) -> PretrainMixConfig:
    """The prompt format of the model that plays ``role`` in ``profile`` (default: the active one):
    the profile's prompt renderings and its picture size for that role (``Profile.image_size_of``:
    cpu, 112 px for the reader, 56 px for the tiny VLM; gpu, the papers' prompts at native size).
    The prompts a part builds for a model -- to ask it or to train it -- come from here, so they
    match what that model was trained on."""

    profile = profile if profile is not None else get_profile()
    fields = {"short_prompts": profile.short_prompts, "image_size": profile.image_size_of(role)}
    return PretrainMixConfig(**{**fields, **overrides})


def make_example(world, task: str, rng: random.Random, config: PretrainMixConfig | None = None) -> Example:
    """One example of ``task`` drawn with ``rng``."""
    if task not in TASKS:
        raise ValueError(f"unknown task {task!r}; known: {sorted(TASKS)}")
    return TASKS[task](world, rng, config or PretrainMixConfig())


def iter_pretrain_examples(world, config: PretrainMixConfig | None = None, start: int = 0) -> Iterator[Example]:
    """The infinite pretraining stream from example ``start`` on (deterministic in ``config.seed``)."""
    cfg = config or PretrainMixConfig()
    names = [t for t, w in cfg.weights.items() if w > 0]
    weights = [cfg.weights[t] for t in names]
    i = start
    while True:
        rng = random.Random(f"pretrain:{cfg.seed}:{i}")
        yield TASKS[rng.choices(names, weights=weights)[0]](world, rng, cfg)
        i += 1


def example_texts(example: Example) -> list[str]:
    """Every text of an example (prompt parts and completion)."""
    return [p["text"] for m in example.prompt for p in m["content"] if p["type"] == "text"] + [example.completion]


def pretrain_corpus_texts(world, samples_per_task: int = 20) -> list[str]:
    """Texts to train the tiny model's word-level tokenizer on (no test answers among them); every
    word in both its forms. About 4,800 distinct pieces for the default world: build the tokenizer
    with ``vocab_size=5000`` to keep them all (``token_length_report`` shows the unknown rate)."""

    texts = [t for d in world.documents for t in [d.title, d.summary] + [p.text for p in d.passages]]
    for q in world.kbvqa_train + world.mc_train:
        texts += [q.question, q.context, q.solution, q.meta.get("rationale", "")] + list(q.options or [])
    texts += [f"{item.title}. {item.text}" for item in world.literature]
    texts += [f"{q.question} {q.solution}" for q in mc_lit.lit_question_split(world)[0]]
    texts += [n[:1].upper() + n[1:] + " " + n for names in world.synonyms.values() for n in names]  # synonyms
    texts += [load_prompt(name) for name in list_prompts()]
    for short in (True, False):
        cfg = PretrainMixConfig(short_prompts=short)
        for task in TASKS:
            for i in range(samples_per_task):
                texts += example_texts(make_example(world, task, random.Random(f"corpus:{task}:{i}"), cfg))
    # A word-level piece is " word" or "word" (tokenizer.PIECE_PATTERN); a word seen only in one
    # form (mid-sentence) would be <unk> in the other (after a newline, at the start of an answer).
    words = sorted({w for t in texts for w in re.findall(r"[^\W\d_]+", t)})
    return [t for t in texts if t] + [" ".join(words), "\n".join(words)]


def pretrain_batch(vlm, examples: list[Example]):
    """``vlm.training_batch`` for a mixed batch: language-model loss over everything for examples
    with ``loss_on="all"``, completion-only loss for the others (the prompt part is the first
    ``P`` columns: prompts are left-padded, completions right-padded after them)."""
    batch = vlm.training_batch([e.prompt for e in examples], [e.completion for e in examples], loss_on="all")
    tok = vlm.tokenizer
    width = max(1, max(len(tok(e.completion, add_special_tokens=False).input_ids) + 1 for e in examples))
    prompt_len = batch["input_ids"].shape[1] - width
    for row, e in enumerate(examples):
        if e.loss_on == "completion":
            batch["labels"][row, :prompt_len] = -100
        elif e.loss_on != "all":
            raise ValueError(f"loss_on must be 'completion' or 'all', got {e.loss_on!r}")
    return batch


# --- the model card's evaluation sets --------------------------------------------------------
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
    meta = tasks.kbvqa_meta(q, passages, style=style, gold_included=bool(passages),
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


__all__ = [
    "DEFAULT_WEIGHTS",
    "EVAL_TASKS",
    "TASKS",
    "Example",
    "PretrainMixConfig",
    "eval_examples",
    "example_texts",
    "iter_pretrain_examples",
    "make_example",
    "pretrain_batch",
    "pretrain_corpus_texts",
    "token_length_report",
]
