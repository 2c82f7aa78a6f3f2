"""Prefix reuse beyond the critic (issue 49, item 2): SeRTS's grades and proposals, MOLT's rounds.

``kbvqa.models.prefix`` prefills a common opening once for *consecutive* prompts whose token ids
agree and whose pictures lie inside that opening. How much that saves is bounded by the token
positions each path computes (``bench_fastpath._positions``: the plain path pads each batch of 16 to
its longest prompt). This benchmark prints that bound for the prompt families issue 49 names, built
as the experiments build them on the toy world, and times the one family the runners can batch with
a shared opening today:

- SeRTS's grader (Tab. 1: the App. A rubric, then the question and the abstracts) and proposer
  (Tab. 2: the instructions, then the question): one step of a chunk grades one node per question,
  so a step's prompts share the rubric, not the question; short prompts (the committed runs') and
  the paper's full ones. Timed: greedy ``generate`` of the grades, ``share_prefix`` off and on.
- MOLT's one-pass ladder (Table 14) puts the query's picture before everything that differs, so two
  queries share only the text before it; the three orders of one query share the picture and the
  question. The iterative baseline's pairwise rounds share the picture and question too, but they
  are sequential calls (each round's defender is the last round's winner), so a batch never holds
  two of them: the bound says what a cache kept across calls would save, not what the runner saves.

Run: ``python benchmarks/bench_prefix.py [--questions 8] [--tokens 16] [--threads 2]``.
Leaves out: the critic and RCTS (``bench_fastpath.py``, ``bench_rcts.py``), GPUs.
"""
from __future__ import annotations

import argparse

import torch
from _timing import best_of, print_rows, row
from bench_fastpath import _positions


def _bound(name: str, vlm, prompts, note: str = "") -> dict:
    plain, shared = _positions(vlm, prompts, 16, suffix_pictures=True)     # as generate() groups them
    return row(f"{name}: token positions, plain / shared prefix", plain / shared, "x", kind="count",
               note=f"{len(prompts)} prompts, {plain} vs {shared} positions" + (f"; {note}" if note else ""))


def _serts_prompts(world, n: int, short: bool):
    from kbvqa.models.pretrain_mc_lit import lit_question_split
    from kbvqa.serts.evaluate import toy_literature_task
    from kbvqa.serts.prompts import evaluator_prompt, proposer_prompt

    retrieve, doc_text = toy_literature_task(world)
    questions = [q.question for q in lit_question_split(world)[1][:n]]
    grades = [evaluator_prompt(q, [doc_text(d) for d in retrieve(q, 5)], short=short) for q in questions]
    proposals = [proposer_prompt(q, [], [], short=short) for q in questions]
    return grades, proposals


def _molt_prompts(n: int):
    from kbvqa.molt import experiment as ex
    from kbvqa.molt.ladder import pairwise_prompt, student_prompt

    world, short = ex._world(), ex._judge_short()
    items = ex.eval_sets(world, world.kbvqa_test[:n])
    first, image = items[0], ex._query_image(world, items[0])
    rounds, defender = [], first.candidates[0]
    for challenger in first.candidates[1:]:
        rounds.append(pairwise_prompt(first.query.question, image, defender, challenger, short=short))
    orders = [student_prompt(first.query.question, image, first.candidates, ex.item_schedule(first, order),
                             short=short) for order in ("weak_to_strong", "random", "strong_to_weak")]
    across = [student_prompt(it.query.question, ex._query_image(world, it), it.candidates,
                             ex.item_schedule(it, "weak_to_strong"), short=short) for it in items]
    return rounds, orders, across


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.reader.ship import load_reader
    from kbvqa.serts.prompts import vlm_generator

    ap = argparse.ArgumentParser(description="Prefix reuse: SeRTS grades and proposals, MOLT rounds.")
    ap.add_argument("--questions", type=int, default=8, help="SeRTS questions (one step's grades) and MOLT queries")
    ap.add_argument("--tokens", type=int, default=16, help="greedy tokens per timed grade")
    ap.add_argument("--threads", type=int, default=2, help="torch threads")
    args = ap.parse_args(argv)
    if min(args.questions, args.tokens, args.threads) < 1:
        ap.error("--questions, --tokens and --threads must be positive")
    torch.set_num_threads(args.threads)
    world, vlm = get_world(0), load_reader(precision="fp32")
    out = []
    for short in (True, False):
        grades, proposals = _serts_prompts(world, args.questions, short)
        kind = "short prompts (the committed runs')" if short else "the paper's full prompts"
        out += [_bound(f"SeRTS grades, {kind}", vlm, grades, "the rubric comes first"),
                _bound(f"SeRTS proposals, {kind}", vlm, proposals, "the instructions come first")]
    rounds, orders, across = _molt_prompts(args.questions)
    out += [_bound("MOLT one-pass, different queries", vlm, across, "the query's picture comes early"),
            _bound("MOLT one-pass, three orders of one query", vlm, orders,
                   "the runners evaluate one order at a time"),
            _bound("MOLT iterative, the pairwise rounds of one query", vlm, rounds,
                   "sequential calls: only a cache kept across calls could save this")]

    grades, _ = _serts_prompts(world, args.questions, True)
    plain_gen = vlm_generator(vlm, args.tokens, temperature=0.0)
    shared_gen = vlm_generator(vlm, args.tokens, temperature=0.0, share_prefix=True)
    plain_gen(grades[:2])                                                     # warm-up
    plain_s, plain = best_of(lambda: plain_gen(grades), 2)
    shared_s, shared = best_of(lambda: shared_gen(grades), 2)
    setting = f"{len(grades)} grades, {args.tokens} greedy tokens, {args.threads} thread(s)"
    out += [row("SeRTS grades, plain: seconds per step", plain_s, "s", kind="time", note=setting),
            row("SeRTS grades, shared prefix: seconds per step", shared_s, "s", kind="time"),
            row("SeRTS grades: plain / shared prefix", plain_s / shared_s, "x", (">", 1),
                "the bound is the short-prompt grades row above"),
            row("SeRTS grades: same greedy text", str(plain == shared), kind="check")]
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "prefix reuse beyond the critic (issue 49, item 2): SeRTS and MOLT")


if __name__ == "__main__":
    main()
