"""Why RCTS does (not) beat Vanilla-RAG on the toy world: three diagnostics, one per suspect.

RCTS can only help if (1) retrieval puts a useful example among its N candidates, (2) the model
reads a useful example when it is in the prompt, and (3) the rewards of Eq. 7-9 are higher for
branches that answer correctly. Each function measures one of them:

- retrieval: ``shows_answer(query, example)`` is the toy world's ground truth of a useful example
  (same hidden rule *and* same key value: its answer is the query's); ``retrieval_hit_rate`` is the
  share of queries with such an example in the top k, for several k, and ``kb_ceiling`` the share
  for which the knowledge base holds one at all.
- model: ``oracle_examples`` builds the best K-shot set the knowledge base allows (answer-showing
  examples first, then same-rule look-alikes); accuracy with it bounds what any re-ranking of
  the knowledge base could reach with this model. If the oracle does not beat zero-shot, the
  model does not use examples, and no selection rule can help.
- rewards: ``reward_correctness(rewards, correct)`` -- the ROC AUC of rewards for separating correct
  from wrong branches (0.5: rewards carry no signal) and the mean reward of each group;
  ``leaf_rewards`` collects (reward, correct) pairs from a search's tree records.
- the letter: a response is "The answer is X. BECAUSE: ... So the answer is <text>." and only the
  letter X is scored (the release's ScienceQA regex). ``named_answer`` reads the <text> the
  rationale ends on, and ``answer_text_table`` scores it against the gold option's text beside the
  letter: a model that finds the right answer in its examples but names the wrong letter for it
  (options are shuffled per question) shows a text accuracy far above its letter accuracy.

All functions are pure and return defined values on empty inputs. Leaves out: running the model
(``kbvqa.rcts.runs``), intervals (``kbvqa.metrics.intervals``).
"""
from __future__ import annotations

import random
import re
from collections.abc import Sequence

from kbvqa.metrics.intervals import wilson_interval
from kbvqa.metrics.ranking import roc_auc

_NAMED = re.compile(r"so the answer is\s+(.*?)\s*(?:\.\s|\.$|$)", re.IGNORECASE | re.DOTALL)


def _meta(item) -> dict:
    meta = item.get("meta") if isinstance(item, dict) else getattr(item, "meta", None)
    return meta or {}


def shows_answer(query, example) -> bool:
    """True when ``example`` has the query's hidden rule and key value (so the query's answer);
    False for anything without toy-world metadata."""
    q, e = _meta(query), _meta(example)
    if "rule_id" not in q or "rule_id" not in e:
        return False
    return q["rule_id"] == e["rule_id"] and q.get("key_value") == e.get("key_value")


def is_lookalike(query, example) -> bool:
    """Same rule, other key value: a hard negative whose answer is wrong for the query."""
    q, e = _meta(query), _meta(example)
    return "rule_id" in q and q.get("rule_id") == e.get("rule_id") and q.get("key_value") != e.get("key_value")


def retrieval_hit_rate(queries: Sequence, candidates: Sequence[Sequence], ks: Sequence[int] = (1, 3, 5, 10, 20)
                       ) -> dict[int, float]:
    """{k: share of queries whose first k candidates include an answer-showing example}."""
    if len(queries) != len(candidates):
        raise ValueError(f"one candidate list per query: {len(queries)} vs {len(candidates)}")
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be >= 1, got {list(ks)}")
    if not queries:
        return {k: 0.0 for k in ks}
    return {k: sum(any(shows_answer(q, e) for e in c[:k]) for q, c in zip(queries, candidates)) / len(queries)
            for k in ks}


def kb_ceiling(queries: Sequence, kb: Sequence) -> float:
    """Share of queries for which the knowledge base holds at least one answer-showing example."""
    if not queries:
        return 0.0
    keys = {(_meta(e).get("rule_id"), _meta(e).get("key_value")) for e in kb if "rule_id" in _meta(e)}
    return sum((_meta(q).get("rule_id"), _meta(q).get("key_value")) in keys for q in queries) / len(queries)


def oracle_examples(query, kb: Sequence, k: int, seed: int = 0) -> list:
    """Up to ``k`` examples: answer-showing ones first, then same-rule look-alikes, drawn with a
    seeded ``random.Random`` from ``kb`` (never the query itself). Fewer when the KB has fewer."""
    if k < 0:
        raise ValueError(f"k must be >= 0, got {k}")
    rng = random.Random(f"oracle:{seed}:{getattr(query, 'id', '')}")
    qid = getattr(query, "id", None)
    good = [e for e in kb if shows_answer(query, e) and getattr(e, "id", None) != qid]
    near = [e for e in kb if is_lookalike(query, e)]
    rng.shuffle(good)
    rng.shuffle(near)
    return (good + near)[:k]


def reward_correctness(rewards: Sequence[float], correct: Sequence[bool]) -> dict:
    """How well rewards separate correct from wrong branches.

    Returns ``{"n", "n_correct", "auc", "mean_correct", "mean_wrong"}``; ``auc`` is P(reward of a
    random correct branch > that of a random wrong one) with ties counted 1/2, ``None`` when one of
    the groups is empty (and the means of an empty group are ``None``)."""
    if len(rewards) != len(correct):
        raise ValueError(f"one correctness flag per reward: {len(rewards)} vs {len(correct)}")
    pos = [float(r) for r, c in zip(rewards, correct) if c]
    neg = [float(r) for r, c in zip(rewards, correct) if not c]
    auc = roc_auc(rewards, correct) if pos and neg else None
    return {"n": len(rewards), "n_correct": len(pos), "auc": auc,
            "mean_correct": sum(pos) / len(pos) if pos else None,
            "mean_wrong": sum(neg) / len(neg) if neg else None}


def leaf_rewards(tree_records: Sequence[dict], gold: str | None) -> list[tuple[float, bool]]:
    """(reward, answer == gold) of every simulated leaf visit in a search's node records (a leaf is
    a node with no children that recorded rewards; the root's zero-shot answer is not a branch)."""
    out = []
    for rec in tree_records:
        if rec.get("parent_id") is None or rec.get("n_children", len(rec.get("children", []))) > 0:
            continue
        correct = gold is not None and rec.get("answer") == gold
        out += [(float(r), correct) for r in rec.get("rewards") or []]
    return out


def named_answer(response: str) -> str:
    """The answer text a rationale ends on: what follows its last "So the answer is", up to the
    sentence's full stop, lower-cased with spaces collapsed ("" when the response names none)."""
    found = _NAMED.findall(str(response or ""))
    return " ".join(found[-1].split()).lower() if found else ""


def answer_text_table(queries: dict, runs: dict[str, list[dict]]) -> dict[str, dict]:
    """Per run: the letter accuracy next to the *text* accuracy (``named_answer`` equals the gold
    option's text, with its Wilson interval), the share of responses naming any text, and how often
    the named text is the option at the scored letter (1.0: the model's letter and rationale agree).
    ``queries``: question id -> multiple-choice query (``options``, ``answers``); records without a
    stored response (older runs) or of unknown questions are skipped. A verifier's record names its
    text in its ``draft`` (the re-answer is a letter alone)."""
    table = {}
    for run, records in runs.items():
        rows = [(r, queries[r["id"]]) for r in records if "response" in r and r["id"] in queries]
        n = len(rows)
        named = [named_answer(r.get("draft", r["response"])) for r, _ in rows]   # a verifier's reasoning: its draft
        texts = [[" ".join(o.split()).lower() for o in q.options] for _, q in rows]
        gold = [t[ord(q.answers[0]) - 65] if len(q.answers[0]) == 1 and 0 <= ord(q.answers[0]) - 65 < len(t)
                else None for (_, q), t in zip(rows, texts)]
        right = sum(a != "" and a == g for a, g in zip(named, gold))
        at_letter = sum(bool(r.get("pred")) and len(r["pred"]) == 1 and 0 <= ord(r["pred"]) - 65 < len(t)
                        and a == t[ord(r["pred"]) - 65] for (r, _), a, t in zip(rows, named, texts))
        low, high = wilson_interval(right, n)
        table[run] = {"n": n, "letter_accuracy": sum(bool(r["correct"]) for r, _ in rows) / n if n else None,
                      "text_accuracy": right / n if n else None, "low": low, "high": high,
                      "names_text": sum(a != "" for a in named) / n if n else None,
                      "text_matches_letter": at_letter / n if n else None}
    return table
