"""SeRTS's proposer and grader data (issue 55, item 2): the search's own prompts, training questions
only, and a proposed name always one that the shown ancestor abstracts reveal."""
import dataclasses

import pytest

from kbvqa.data.toy_config import ToyWorldConfig
from kbvqa.data.toyworld import build_world
from kbvqa.models.pretrain_mc_lit import abstracts_text, gold_synonyms, lit_question_split, rubric_score
from kbvqa.serts.prompts import evaluator_prompt, proposer_prompt
from kbvqa.serts.role_data import RoleDataConfig, discoverable_names, role_examples, shown


@pytest.fixture(scope="module")
def world():
    return build_world(0, dataclasses.replace(ToyWorldConfig(), abstract_alias_share=0.3))


def test_proposer_examples_carry_only_names_the_shown_ancestors_reveal(world):
    config = RoleDataConfig()
    examples = role_examples(world, "proposer", 120, config)
    train = {q.id for q in lit_question_split(world)[0]}
    by_id = {q.id: q for q in world.lit_questions}
    with_names = 0
    for e in examples:
        q = by_id[e.meta["query_ids"][0]]
        assert q.id in train
        visible = shown(e.meta["ancestor_docs"], config.max_abstracts)
        text = abstracts_text(world, visible).lower()
        names = e.meta["names"]
        assert all(n.lower() in text for n in names) and set(names) <= set(gold_synonyms(world, q))
        missing = [n for n in gold_synonyms(world, q) if n.lower() not in text]
        assert not any(n in e.completion for n in missing if n not in q.question)     # never from memory
        assert e.prompt == proposer_prompt(q.question, e.meta["ancestor_queries"],
                                           [abstracts_text(world, [d]) for d in e.meta["ancestor_docs"]],
                                           short=True, max_abstracts=config.max_abstracts)
        with_names += bool(names)
    assert 20 < with_names < 120                   # the corpus reveals some names, not all
    assert role_examples(world, "proposer", 3, config)[2].completion == examples[2].completion


def test_grader_examples_grade_the_union_the_search_grades(world):
    examples = role_examples(world, "grader", 60)
    by_id = {q.id: q for q in world.lit_questions}
    assert {e.meta["query_kind"] for e in examples} == {"bare", "good", "partial", "discovered", "unrelated"}
    for e in examples:
        q = by_id[e.meta["query_ids"][0]]
        assert e.completion.endswith(f"<score>{rubric_score(world, q, e.meta['doc_ids'])}</score>")
        assert e.prompt == evaluator_prompt(q.question, [abstracts_text(world, [d]) for d in e.meta["doc_ids"]],
                                            short=True)
    assert len({e.meta["score"] for e in examples}) >= 4       # the rubric's range, not one grade


def test_discoverable_names_and_bad_arguments(world):
    q = next(q for q in lit_question_split(world)[0] if gold_synonyms(world, q))
    assert discoverable_names(world, q, []) == []
    assert discoverable_names(world, q, list(q.gold_doc_ids)) == gold_synonyms(world, q)
    with pytest.raises(ValueError, match="role"):
        role_examples(world, "judge", 1)
    with pytest.raises(ValueError, match="max_abstracts"):
        RoleDataConfig(max_abstracts=0)
    assert shown(["a", "b", "c"], 2) == ["b", "c"] and shown(["a"], None) == ["a"]
