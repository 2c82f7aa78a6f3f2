"""Seeded synthetic sequences for the associative-recall go/no-go stage (text only, word-level ids).

Two tasks, both with fresh random key->value assignments in every sequence (nothing to memorise:
the only way to answer is to find the key in the context and copy what follows it):

- ``mqar``  multi-query associative recall ("Zoology", Arora et al. 2023): ``<bos> k1 v1 k2 v2 ...
  kN vN | ka va kb vb ...`` -- N queries of keys drawn with replacement (``query_mode="random"``;
  ``"permutation"`` asks every key once, which a model exploits by elimination); the targets are
  the values of the query section.
- ``facts`` natural-ish toy-world passages: 3-6 facts about 2-3 made-up entities (``the zorp lives
  in the salt marsh . the blick eats reed seeds .``) followed by as many questions as facts (``where
  does the zorp live ? salt marsh .``). Values have 1-3 words; one entity carries several
  attributes and one attribute is shared by several entities, so the answer must be bound to
  *both* the entity and the attribute. The targets are the answer words and the closing ``.``.

Every batch is ``(input_ids, answer_mask)``: ``answer_mask[b, t]`` is True when token ``t`` is an
answer token, i.e. must be predicted from positions ``< t``. Right padding with ``<pad>`` keeps
causal attention exact without an attention mask.

Leaves out: the model, the training loop and the metrics (``run.py``); real tokenisers.
"""
from __future__ import annotations

import itertools

import numpy as np
import torch

SPECIALS = ("<pad>", "<bos>", "|", "?", ".", "the")
TASKS = ("mqar", "facts")
QUERY_MODES = ("random", "permutation")

# Attribute -> (fact template, question template, value word pools: optional adjectives, nouns).
# "{e}" is the entity, "{v}" the value. Value words of different attributes do not overlap.
ATTRIBUTES = {
    "habitat": ("the {e} lives in the {v} .", "where does the {e} live ? {v} .",
                ["salt", "dry", "cold", "deep", "high", "dark"],
                ["marsh", "dune", "forest", "cave", "lake", "reef", "valley", "steppe"]),
    "diet": ("the {e} eats {v} .", "what does the {e} eat ? {v} .",
             ["reed", "pine", "sea", "wild", "fresh", "tiny"],
             ["seeds", "bugs", "fish", "leaves", "roots", "berries", "worms", "moss"]),
    "colour": ("the {e} has {v} fur .", "what colour is the fur of the {e} ? {v} .",
               ["pale", "light", "bright", "dull", "striped", "spotted"],
               ["red", "blue", "green", "grey", "brown", "white", "black", "yellow"]),
    "size": ("the {e} is {v} long .", "how long is the {e} ? {v} .",
             ["about", "nearly", "over", "under", "almost", "roughly"],
             [str(n) for n in range(1, 13)] + ["cm", "m"]),
}
_SYLLABLES_A = ["zo", "bli", "kra", "mu", "fe", "da", "gli", "to", "sna", "ve", "pu", "ri"]
_SYLLABLES_B = ["rp", "ck", "x", "nt", "sh", "lm", "ff", "g", "zz", "rn"]
ENTITY_NAMES = [a + b for a, b in itertools.product(_SYLLABLES_A, _SYLLABLES_B)]  # 120 nonce names


def build_vocab(task: str, num_keys: int = 64, num_values: int = 64) -> list[str]:
    """The word list of ``task``; a word's index is its token id (``<pad>`` is 0)."""
    if task == "mqar":
        if num_keys < 2 or num_values < 2:
            raise ValueError(f"mqar needs num_keys, num_values >= 2, got {num_keys}, {num_values}")
        return [*SPECIALS, *(f"key{i}" for i in range(num_keys)), *(f"val{i}" for i in range(num_values))]
    if task == "facts":
        words = list(SPECIALS) + ENTITY_NAMES
        for fact, question, adjectives, nouns in ATTRIBUTES.values():
            for w in (fact + " " + question).split() + adjectives + nouns:
                if w not in words and "{" not in w:
                    words.append(w)
        return words
    raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")


def _query_order(rng: np.random.Generator, n: int, query_mode: str) -> np.ndarray:
    """Which pairs/facts the queries ask about: ``random`` draws n with replacement; ``permutation``
    asks each once, which lets a model answer late queries by elimination (a shortcut plateau)."""
    if query_mode == "permutation":
        return rng.permutation(n)
    if query_mode == "random":
        return rng.integers(0, n, size=n)
    raise ValueError(f"unknown query_mode {query_mode!r}; expected one of {QUERY_MODES}")


def _mqar_sequence(rng: np.random.Generator, num_pairs: int, num_keys: int, num_values: int,
                   ids: dict[str, int], query_mode: str) -> tuple[list[int], list[bool]]:
    keys = rng.choice(num_keys, size=num_pairs, replace=False)
    values = rng.integers(0, num_values, size=num_pairs)  # values may repeat, keys may not
    tokens, answer = [ids["<bos>"]], [False]
    for k, v in zip(keys, values):
        tokens += [ids[f"key{k}"], ids[f"val{v}"]]
        answer += [False, False]
    tokens.append(ids["|"])
    answer.append(False)
    for i in _query_order(rng, num_pairs, query_mode):
        tokens += [ids[f"key{keys[i]}"], ids[f"val{values[i]}"]]
        answer += [False, True]
    return tokens, answer


def _random_value(rng: np.random.Generator, adjectives: list[str], nouns: list[str]) -> list[str]:
    """1-3 words: up to two distinct adjectives (or qualifiers) and a noun (or number + unit)."""
    if nouns[-1] == "m":  # size: [qualifier] number unit
        words = [nouns[int(rng.integers(0, len(nouns) - 2))], nouns[-2 + int(rng.integers(0, 2))]]
        return ([adjectives[int(rng.integers(0, len(adjectives)))]] if rng.random() < 0.5 else []) + words
    n_adj = int(rng.integers(0, 3))
    picked = [adjectives[i] for i in rng.choice(len(adjectives), size=n_adj, replace=False)]
    return picked + [nouns[int(rng.integers(0, len(nouns)))]]


def _facts_sequence(rng: np.random.Generator, num_facts: int, ids: dict[str, int],
                    query_mode: str) -> tuple[list[int], list[bool]]:
    attrs = list(ATTRIBUTES)
    num_entities = 1 if num_facts == 1 else int(rng.integers(2, 4))
    entities = [ENTITY_NAMES[i] for i in rng.choice(len(ENTITY_NAMES), num_entities, replace=False)]
    grid = [(e, a) for e in entities for a in attrs]
    facts = [grid[i] for i in rng.choice(len(grid), size=min(num_facts, len(grid)), replace=False)]
    values = {f: _random_value(rng, *ATTRIBUTES[f[1]][2:]) for f in facts}
    words, answer = ["<bos>"], [False]
    for e, a in facts:  # the passage
        sentence = ATTRIBUTES[a][0].format(e=e, v=" ".join(values[(e, a)])).split()
        words += sentence
        answer += [False] * len(sentence)
    for i in _query_order(rng, len(facts), query_mode):  # as many questions as facts
        e, a = facts[i]
        prompt = ATTRIBUTES[a][1].split("{v}")[0].format(e=e).split()
        target = values[(e, a)] + ["."]
        words += prompt + target
        answer += [False] * len(prompt) + [True] * len(target)
    return [ids[w] for w in words], answer


def make_batch(task: str, rng: np.random.Generator, batch_size: int, num_pairs: int,
               vocab: list[str], num_keys: int = 64, num_values: int = 64,
               min_pairs: int | None = None, query_mode: str = "random") -> tuple[torch.Tensor, torch.Tensor]:
    """A right-padded batch ``(input_ids [B, T] long, answer_mask [B, T] bool)``.

    ``num_pairs`` is the number of key-value pairs (mqar) or facts (facts) per sequence; with
    ``min_pairs`` each sequence draws its own count uniformly from ``[min_pairs, num_pairs]``.
    """
    if batch_size < 1 or num_pairs < 1:
        raise ValueError(f"batch_size and num_pairs must be >= 1, got {batch_size}, {num_pairs}")
    if task == "mqar" and num_pairs > num_keys:
        raise ValueError(f"num_pairs={num_pairs} > num_keys={num_keys}: keys must be distinct")
    ids = {w: i for i, w in enumerate(vocab)}
    lo = num_pairs if min_pairs is None else max(1, min(min_pairs, num_pairs))
    rows = []
    for _ in range(batch_size):
        n = int(rng.integers(lo, num_pairs + 1))
        if task == "mqar":
            rows.append(_mqar_sequence(rng, n, num_keys, num_values, ids, query_mode))
        elif task == "facts":
            rows.append(_facts_sequence(rng, n, ids, query_mode))
        else:
            raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
    length = max(len(t) for t, _ in rows)
    input_ids = torch.zeros(batch_size, length, dtype=torch.long)  # 0 is <pad>
    answer_mask = torch.zeros(batch_size, length, dtype=torch.bool)
    for b, (tokens, answer) in enumerate(rows):
        input_ids[b, : len(tokens)] = torch.tensor(tokens)
        answer_mask[b, : len(answer)] = torch.tensor(answer)
    return input_ids, answer_mask


def decode(input_ids: torch.Tensor, vocab: list[str]) -> str:
    """Words of one sequence, padding dropped (for eyeballing and tests)."""
    return " ".join(vocab[i] for i in input_ids.tolist() if i != 0)
