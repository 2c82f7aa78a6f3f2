"""Tests of the toy literature: synonym sets, gold documents, exact and ideal answers, and the
property SeRTS needs: adding a question's synonyms lets BM25 find gold abstracts it missed."""
from __future__ import annotations

import itertools
import re

import bm25s
import numpy as np
import pytest

from kbvqa.data.toyworld import get_world


@pytest.fixture(scope="module")
def world():
    return get_world(0)


def _recall_at(world, queries: list[str], k: int) -> np.ndarray:
    corpus = [f"{x.title} {x.text}" for x in world.literature]
    retriever = bm25s.BM25()
    retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    hits, _ = retriever.retrieve(bm25s.tokenize(queries, stopwords="en", show_progress=False), k=k,
                                 show_progress=False)
    ids = [x.id for x in world.literature]
    out = []
    for q, row in zip(world.lit_questions, hits):
        gold = set(q.gold_doc_ids)
        out.append(len(gold & {ids[i] for i in row}) / len(gold))
    return np.array(out)


def test_synonyms_help_bm25(world):
    plain = [q.question for q in world.lit_questions]
    expanded = [q.question + " " + " ".join(n for c in q.meta["concepts"] for n in world.synonyms[c])
                for q in world.lit_questions]
    r_plain, r_expanded = _recall_at(world, plain, 10), _recall_at(world, expanded, 10)
    print(f"\nBM25 recall@10: question {r_plain.mean():.3f}, question + synonyms {r_expanded.mean():.3f}")
    assert r_expanded.mean() >= r_plain.mean() + 0.15
    assert (r_expanded > r_plain).mean() >= 0.3      # many questions gain
    assert (r_plain < 1).mean() >= 0.5               # the question alone often misses gold abstracts


def test_concepts_have_two_to_four_disjoint_names(world):
    seen = {}
    for c in world.concepts:
        assert 2 <= len(c.names) <= 4 and world.synonyms[c.name] == list(c.names)
        for n in c.names:
            assert n.lower() not in seen, (n, c.id, seen.get(n.lower()))
            seen[n.lower()] = c.id
        if c.kind != "symptom":  # invented names share no word with each other
            words = [set(re.findall(r"\w\w+", n.lower())) for n in c.names]  # BM25's tokens
            assert all(not (a & b) for a, b in itertools.combinations(words, 2)), c.names


def test_questions_gold_documents_and_answers(world):
    by_id = {x.id: x for x in world.literature}
    kinds = set()
    for q in world.lit_questions:
        kinds.add(q.answer_type)
        assert q.image is None and q.solution and len(q.gold_doc_ids) >= 2
        assert len(set(q.gold_doc_ids)) == len(q.gold_doc_ids)
        subject = q.meta["concept_ids"][-1]
        for doc_id in q.gold_doc_ids:  # every gold abstract is about the question's subject
            assert subject in by_id[doc_id].meta["concepts"]
            assert all(n.lower() in by_id[doc_id].text.lower() for n in by_id[doc_id].meta["names"])
        exact = q.meta["exact_answer"]
        if q.answer_type == "yesno":
            assert q.answers == [exact] and exact in ("yes", "no")
            assert q.solution.lower().startswith(exact)
        elif q.answer_type == "summary":
            assert q.answers == [] and exact is None
        else:
            assert [names[0] for names in exact] == q.answers
            assert all(world.synonyms[a] == names for a, names in zip(q.answers, exact))
            assert all(a in q.solution for a in q.answers)
            if q.answer_type == "factoid":
                assert len(q.answers) == 1
            gold_text = " ".join(by_id[d].text for d in q.gold_doc_ids)
            for names in exact:  # each exact answer is stated by some gold abstract, in some name
                assert any(n.lower() in gold_text.lower() for n in names), names
    assert kinds == {"yesno", "factoid", "list", "summary"}
    assert {q.meta["exact_answer"] for q in world.lit_questions if q.answer_type == "yesno"} == {"yes", "no"}


def test_question_wording_often_differs_from_the_gold_abstracts(world):
    by_id = {x.id: x for x in world.literature}
    differs = 0
    for q in world.lit_questions:
        wording = q.meta["question_names"][-1]
        assert wording in q.question
        differs += any(wording not in by_id[d].text for d in q.gold_doc_ids)
    assert differs / len(world.lit_questions) >= 0.6
