"""A built reasoning-context KB: files, baselines and the reasoning-context accuracy (RCTS Tab. 6).

- ``save_reasoning_kb`` / ``append_reasoning_kb`` / ``load_reasoning_kb`` / ``load_reasoning_kb_config``
  / ``reasoning_kb_meta``: JSONL, one header line (kind "header": format version, the config, meta)
  then one line per ``ReasoningRecord``, so the RCTS chapters reuse a KB built once.
- ``oracle_records``: the toy world's worked solution (``Query.solution``) as each pair's context.
  It is the *gold* rationale, written by the world's generator, not by a model: an upper reference
  for what a perfect reasoning context gives, never a result of §3.2.
- ``attach_contexts``: ``Query`` + record -> ``KBExample`` (x_i = (I_i, Q_i, A_i, C_i), §3.1);
  ``contexts_of``: {example id: chosen C_i} of a saved KB, what the RCTS rows' prompts read
  (``kbvqa.rcts.settings.toy_setting(..., contexts=)``).
- ``reasoning_context_accuracy``: Tab. 6's measure, the share of pairs whose context leads the
  model to the gold answer, from a fresh answer per pair (greedy by default) with the "Get
  Predicted Answer by Reasoning Context" prompt; one batched call. ``compare_context_sources``
  runs it for several contexts per pair (none, first candidate, chosen, oracle) in one call.
- ``summarize_build``: mean chosen score, share of perfect pairs, early-stop rate, cost per pair.
- ``toy_context_checks``: does a context name the gold option's text, another option's text, the
  image's key value (toy world only: ``meta["answer_text"]``, ``meta["key_value"]``)?
- ``PAPER_TABLE6``: the paper's Tab. 6 (accuracy % of the reasoning context per KB).
- The committed Tab. 6 run (``python -m kbvqa.experiments.rcts_contexts``, in ``RESULTS_DIR``):
  ``load_results`` reads its ``results.json``; ``answer_letters`` and ``toy_check_summary`` are
  the summaries it writes there, which a chapter recomputes on live answers.

Leaves out: generation and selection (``kbvqa.rcts.contexts``), figures (``kbvqa.viz.contexts``),
running the committed build (``kbvqa.experiments.rcts_contexts``).
"""
from __future__ import annotations

import dataclasses
import json
import math
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path

from kbvqa.config import DATA_DIR
from kbvqa.data.schema import KBExample, Query, option_letters
from kbvqa.parsers import parse_rcts_answer
from kbvqa.rcts.contexts import (
    ReasoningContextConfig,
    ReasoningRecord,
    check_prompt,
    judge_prediction,
)

FORMAT_VERSION = 1
RESULTS_DIR = DATA_DIR / "experiments" / "rcts_contexts"   # the committed Tab. 6 run

# RCTS Tab. 6: "The accuracy (%) of the reasoning context on different knowledge bases."


# --- files ---------------------------------------------------------------------------------------
def save_reasoning_kb(path, records: list[ReasoningRecord], config: ReasoningContextConfig | None = None,
                      meta: dict | None = None) -> Path:
    """Write the header and one JSON line per record; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    header = {"kind": "header", "version": FORMAT_VERSION,
              "config": asdict(config) if config is not None else None, "meta": meta or {}}
    with path.open("w", encoding="utf-8") as f:
        f.write(json.dumps(header) + "\n")
    return append_reasoning_kb(path, records)


def append_reasoning_kb(path, records: list[ReasoningRecord]) -> Path:
    """Append records to a file ``save_reasoning_kb`` started (a build in chunks resumes from it)."""
    with Path(path).open("a", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps({"kind": "record", **r.to_dict()}, ensure_ascii=False) + "\n")
    return Path(path)


def reasoning_kb_meta(path) -> dict:
    """The header's ``meta`` of a KB file (provenance: commit, model, ...)."""
    return _lines(path)[0].get("meta") or {}


def _lines(path) -> list[dict]:
    rows = [json.loads(line) for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows or rows[0].get("kind") != "header":
        raise ValueError(f"{path}: not a reasoning KB file (no header line)")
    if rows[0].get("version") != FORMAT_VERSION:
        raise ValueError(f"{path}: format version {rows[0].get('version')}, expected {FORMAT_VERSION}")
    return rows


def load_reasoning_kb(path) -> list[ReasoningRecord]:
    """The records of a file written by ``save_reasoning_kb``."""
    return [ReasoningRecord.from_dict({k: v for k, v in row.items() if k != "kind"})
            for row in _lines(path)[1:]]


def load_reasoning_kb_config(path) -> ReasoningContextConfig | None:
    """The config the file was built with (None if it was saved without one)."""
    config = _lines(path)[0]["config"]
    return None if config is None else ReasoningContextConfig(**config)


# --- baselines and KB examples ---------------------------------------------------------------------
def oracle_records(examples: list[Query]) -> list[ReasoningRecord]:
    """Each pair's worked solution as its context (source "oracle", unscored)."""
    missing = [q.id for q in examples if not q.solution]
    if missing:
        raise ValueError(f"no worked solution for {missing[:3]}{'...' if len(missing) > 3 else ''}")
    return [ReasoningRecord(q.id, q.answer, q.solution, None, -1, source="oracle") for q in examples]


def attach_contexts(examples: list[Query], records: list[ReasoningRecord]) -> list[KBExample]:
    """``KBExample`` per pair with ``reasoning_context`` = the record's chosen context."""
    by_id = {r.query_id: r for r in records}
    missing = [q.id for q in examples if q.id not in by_id]
    if missing:
        raise ValueError(f"no reasoning context for {missing[:3]}{'...' if len(missing) > 3 else ''}")
    names = [f.name for f in dataclasses.fields(Query)]
    return [KBExample(**{f: getattr(q, f) for f in names}, reasoning_context=by_id[q.id].context)
            for q in examples]


def contexts_of(path) -> dict[str, str]:
    """{example id: its chosen reasoning context} of a KB file written by ``save_reasoning_kb``."""
    return {r.query_id: r.context for r in load_reasoning_kb(path)}


# --- Tab. 6 ----------------------------------------------------------------------------------------
@dataclass
class ContextAccuracy:
    accuracy: float            # share of pairs whose answer with the context is the gold one
    correct: list[bool]        # per pair
    predictions: list[str]     # per pair: the (first) answer drawn


def _contexts(examples, contexts) -> list[str]:
    out = [c.context if isinstance(c, ReasoningRecord) else c for c in contexts]
    if len(out) != len(examples) or any(not isinstance(c, str) for c in out):
        raise ValueError("contexts must hold one str (or ReasoningRecord) per example")
    return out


def compare_context_sources(vlm, examples: list[Query], sources: dict[str, list],
                            config: ReasoningContextConfig | None = None, temperature: float = 0.0,
                            seed: int = 0) -> dict[str, ContextAccuracy]:
    """``reasoning_context_accuracy`` of several context sources (name -> one context per pair)
    over the same pairs, in ONE generate call. ``temperature=0``: one greedy answer per pair."""
    config = config or ReasoningContextConfig()
    if not examples or not sources:
        raise ValueError("need at least one example and one source")
    table = {name: _contexts(examples, ctx) for name, ctx in sources.items()}
    prompts = [check_prompt(q, c, config) for ctx in table.values() for q, c in zip(examples, ctx)]
    answers = vlm.generate(prompts, n=1, max_new_tokens=config.max_answer_tokens, temperature=temperature,
                           top_p=config.top_p if temperature > 0 else 1.0, seed=seed,
                           batch_size=config.batch_size)
    out, k = {}, 0
    for name in table:
        preds = [a[0] for a in answers[k:k + len(examples)]]
        k += len(examples)
        correct = [judge_prediction(q, p) == "correct" for q, p in zip(examples, preds)]
        out[name] = ContextAccuracy(sum(correct) / len(correct), correct, preds)
    return out


def reasoning_context_accuracy(vlm, examples: list[Query], contexts: list,
                               config: ReasoningContextConfig | None = None, temperature: float = 0.0,
                               seed: int = 0) -> ContextAccuracy:
    """RCTS Tab. 6 on ``examples``: question + context -> answer, compared with the gold answer."""
    return compare_context_sources(vlm, examples, {"contexts": contexts}, config, temperature, seed)["contexts"]


def summarize_build(records: list[ReasoningRecord]) -> dict:
    """Mean chosen Score, share of pairs with a perfect candidate, early-stop rate, mean calls,
    completions and checked candidates per pair."""
    generated = [r for r in records if r.source == "generated"]
    if not generated:
        raise ValueError("no generated records to summarise")
    n = len(generated)
    return {"pairs": n,
            "mean_chosen_score": sum(r.score for r in generated) / n,
            "mean_candidate_score": _mean([c.score for r in generated for c in r.candidates if c.score is not None]),
            "perfect_rate": sum(r.perfect for r in generated) / n,
            "early_stop_rate": sum(r.stopped_early for r in generated) / n,
            "calls_per_pair": sum(r.model_calls for r in generated) / n,
            "completions_per_pair": sum(r.completions for r in generated) / n,
            "candidates_per_pair": sum(len(r.candidates) for r in generated) / n}


def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else math.nan


def toy_context_checks(q: Query, context: str) -> dict:
    """Toy-world reading of a context (case-insensitive substring tests, a diagnostic): does its
    first sentence -- the look at the image, "this rippleshell is brown" -- name the image's key
    value, and does it name the gold option's text, or another option's text?"""
    text = str(context).lower()
    gold = str(q.meta.get("answer_text", q.answer_text)).lower()
    others = [o.lower() for o in (q.options or []) if o.lower() != gold]
    key = str(q.meta.get("key_value", "")).lower()
    return {"reads_key_value": bool(key) and key in text.split(". ")[0],
            "names_gold_answer": bool(gold) and gold in text,
            "names_other_option": any(o and o in text for o in others)}


# --- the committed Tab. 6 run ----------------------------------------------------------------------
def answer_letters(pairs, predictions: list[str]) -> dict:
    """How often each option letter (or None: unparsed) was answered: a model that ignores its
    context answers the same letter whatever the context says."""
    counts = Counter(str(parse_rcts_answer(p, option_letters(len(q.options))).letter)
                     for q, p in zip(pairs, predictions))
    return dict(sorted(counts.items()))


def toy_check_summary(pairs, records) -> dict:
    """Shares of chosen / all candidates that read the key value, name the gold option or another
    option, and the mean Score_i of candidates that do or do not name the gold option."""
    rows = [(toy_context_checks(q, c.text), c.score, k == r.best_index)
            for q, r in zip(pairs, records) for k, c in enumerate(r.candidates) if c.score is not None]
    out = {}
    for name, keep in (("all", lambda chosen: True), ("chosen", lambda chosen: chosen)):
        sel = [checks for checks, _, chosen in rows if keep(chosen)]
        out[name] = {k: sum(c[k] for c in sel) / len(sel) for k in sel[0]} if sel else {}
    for flag in (True, False):
        scores = [s for checks, s, _ in rows if checks["names_gold_answer"] is flag]
        out[f"mean_score_names_gold_{str(flag).lower()}"] = sum(scores) / len(scores) if scores else None
        out[f"candidates_names_gold_{str(flag).lower()}"] = len(scores)
    return out


def load_results(folder=RESULTS_DIR) -> dict:
    """``results.json`` of a committed run (``FileNotFoundError`` if it was never run)."""
    return json.loads((Path(folder) / "results.json").read_text(encoding="utf-8"))
