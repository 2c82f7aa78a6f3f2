"""Measuring SeRTS: retrieval P/R/F1/hit (Tab. 3), ROUGE-2/SU4 of Tab. 10 answers (Tab. 4), generated
tokens (Tab. 9), over seeds (the paper reports the mean of seeds 42, 43, 44), on the toy literature.

- ``toy_literature_task(world)``: the ``retrieve(query, k)`` / ``doc_text(id)`` pair over the toy
  world's abstracts, with the BM25 index the tiny model was trained with (bm25s, k1 = 1.5, b = 0.75,
  title + text; ``pretrain_mc_lit.bm25_search``).
- ``bm25_baseline``: the question itself as the one query (the RAG pipeline of App. C.1).
- ``retrieval_scores``: macro P/R/F1 and hit rate against the gold documents (``kbvqa.metrics.retrieval``).
- ``write_answers`` + ``answer_rouge``: Tab. 10 answers from the retrieved abstracts, scored with
  ROUGE-2 and ROUGE-SU4 F (``kbvqa.metrics.rouge``) against the ideal answers.
- ``compare_methods``: BM25 / self-reflection / SeRTS rows for one or several seeds, mean and spread.

Leaves out: the search itself (``serts``), training (``kbvqa.rl.ppo``), plots.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from kbvqa.metrics.retrieval import mean_retrieval_prf
from kbvqa.metrics.rouge import mean_rouge
from kbvqa.models.pretrain_mc_lit import abstracts_text, bm25_search
from kbvqa.serts.prompts import Generator, answer_prompt, vlm_generator
from kbvqa.serts.search import SeRTSConfig, SeRTSResult, run_self_reflection, run_serts

__all__ = ["answer_rouge", "bm25_baseline", "compare_methods", "mean_and_spread", "retrieval_scores",
           "token_counts", "toy_literature_task", "write_answers"]


def toy_literature_task(world) -> tuple[Callable[[str, int], list[str]], Callable[[str], str]]:
    """``(retrieve, doc_text)`` over ``world.literature`` (the BM25 index and text of the reader's training tasks)."""

    return (lambda query, k: bm25_search(world, query, k)), (lambda doc_id: abstracts_text(world, [doc_id]))


def bm25_baseline(questions: Sequence[str], retrieve: Callable[[str, int], list[str]], k: int = 5) -> list[list[str]]:
    return [list(retrieve(q, k)) for q in questions]


def retrieval_scores(doc_lists: Sequence[Sequence[str]], gold_lists: Sequence[Sequence[str]]) -> dict:
    s = mean_retrieval_prf(doc_lists, gold_lists)
    return {"precision": s.precision, "recall": s.recall, "f1": s.f1, "hit": s.hit}


def write_answers(generator: Generator, questions: Sequence[str], doc_lists: Sequence[Sequence[str]],
                  doc_text: Callable[[str], str], short: bool = True) -> tuple[list[str], int]:
    """Tab. 10 answers from each question's retrieved abstracts; (answers, generated tokens)."""
    prompts = [answer_prompt(q, [doc_text(d) for d in docs], short) for q, docs in zip(questions, doc_lists)]
    out = generator(prompts) if prompts else []
    return [text for text, _ in out], sum(int(t) for _, t in out)


def answer_rouge(answers: Sequence[str], references: Sequence[str]) -> dict:
    """Mean ROUGE-2 and ROUGE-SU4 F (and recall) of the answers against the ideal answers."""
    r2, su4 = mean_rouge(answers, references, "rouge-2"), mean_rouge(answers, references, "rouge-su4")
    return {"rouge2_f": r2.f, "rouge2_r": r2.recall, "rougesu4_f": su4.f, "rougesu4_r": su4.recall}


def token_counts(results: Sequence[SeRTSResult]) -> dict:
    """Generated tokens and model calls summed over questions (Tab. 9)."""
    return {"proposer_tokens": sum(r.proposer_tokens for r in results),
            "evaluator_tokens": sum(r.evaluator_tokens for r in results),
            "generated_tokens": sum(r.generated_tokens for r in results),
            "proposer_calls": sum(r.proposer_calls for r in results),
            "evaluator_calls": sum(r.evaluator_calls for r in results)}


def mean_and_spread(rows: Sequence[dict]) -> dict:
    """Per key: (mean, max - min) over seeds; keys present in every row."""
    keys = [k for k in rows[0] if all(k in r for r in rows)]
    return {k: (float(np.mean([r[k] for r in rows])), float(np.ptp([r[k] for r in rows]))) for k in keys}


def _method_row(name, docs, queries, gold, refs, answerer, doc_text, short, results=None) -> dict:
    row = {"method": name, **retrieval_scores(docs, gold), "docs_per_question": float(np.mean([len(d) for d in docs]))}
    if answerer is not None:
        answers, tokens = write_answers(answerer, [q.question for q in queries], docs, doc_text, short)
        row.update(answer_rouge(answers, refs))
        row["answer_tokens"] = tokens
    if results is not None:
        row.update(token_counts(results))
        row["stopped_early"] = float(np.mean([r.stopped_early for r in results]))
    return row


def compare_methods(vlm, queries, retrieve, doc_text, cfg: SeRTSConfig | None = None,
                    seeds: Sequence[int] = (42, 43, 44), sims: Sequence[int] = (6, 12), answers: bool = True,
                    max_new_tokens: int = 64, temperature: float = 0.7, methods=("reflection", "serts")) -> list[dict]:
    """Tab. 3/4/9 analogue: one row per (method, Sim, seed) for ``queries`` (``Query`` with
    ``gold_doc_ids`` and ``solution``); BM25 (the question as query) once per seed for its answers."""
    cfg = cfg or SeRTSConfig()
    gold = [list(q.gold_doc_ids) for q in queries]
    refs = [q.solution for q in queries]
    questions = [q.question for q in queries]
    rows = []
    for seed in seeds:
        answerer = vlm_generator(vlm, max_new_tokens, temperature, seed=seed + 1000) if answers else None
        rows.append({**_method_row("bm25", bm25_baseline(questions, retrieve, cfg.top_k), queries, gold, refs,
                                   answerer, doc_text, cfg.short_prompts), "sim": 0, "seed": seed})
        for sim in sims:
            for method in methods:
                run = run_serts if method == "serts" else run_self_reflection
                c = replace(cfg, sim=sim, seed=seed)
                gen = vlm_generator(vlm, max_new_tokens, temperature, seed=seed)
                results = run(questions, gen, gen, retrieve, doc_text, c)
                rows.append({**_method_row(method, [r.docs for r in results], queries, gold, refs, answerer,
                                           doc_text, cfg.short_prompts, results), "sim": sim, "seed": seed})
    return rows
