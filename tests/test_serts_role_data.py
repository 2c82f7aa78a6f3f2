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


class CannedVLM:
    """Answers every prompt with ``reply(prompt_index)``."""

    def __init__(self, reply):
        self.reply = reply

    def generate(self, prompts, **kwargs):
        return [[self.reply(i)] for i in range(len(prompts))]


def test_the_card_measures_reward_a_proposer_that_carries_the_shown_name(world):
    from kbvqa.serts.role_data import evaluate_proposer, heldout_examples

    examples = heldout_examples(world, "proposer", 30)
    heldout = {q.id for q in lit_question_split(world)[1]}
    assert all(e.meta["query_ids"][0] in heldout for e in examples)
    by_id = {q.id: q for q in world.lit_questions}

    def carry(i):
        e = examples[i]
        return f"x <query>{' '.join([by_id[e.meta['query_ids'][0]].question] + e.meta['names'])}</query>"
    carried = evaluate_proposer(CannedVLM(carry), world, examples)
    plain = evaluate_proposer(CannedVLM(lambda i: "no tag at all"), world, examples)
    assert plain["well_formed"] == 0 and plain["recall_gain"] == 0          # the question itself is searched
    assert carried["well_formed"] == 1 and carried["names_carried"] == 1
    assert carried["recall_gain"] > 0


def test_the_grader_measure_is_the_rank_correlation_with_the_rubric(world):
    from kbvqa.serts.role_data import evaluate_grader, heldout_examples, spearman

    examples = heldout_examples(world, "grader", 30)
    exact = evaluate_grader(CannedVLM(lambda i: f"ok <score>{examples[i].meta['score']}</score>"), world, examples)
    assert exact["spearman"] == pytest.approx(1.0) and exact["exact"] == 1 and exact["parsed"] == 1
    flat = evaluate_grader(CannedVLM(lambda i: "<score>3</score>"), world, examples)
    assert flat["spearman"] is None and flat["parsed"] == 1
    assert spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    with pytest.raises(ValueError):
        spearman([1], [1])
