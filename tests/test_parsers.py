"""Parsers of model output (kbvqa.parsers): documented behaviour on realistic outputs.

The robustness half (every parser on >= 10,000 arbitrary and adversarial strings) lives in
``test_parsers_fuzz.py``.
"""
from __future__ import annotations

import pytest

from kbvqa.parsers import (
    QueryProposal,
    RCTSAnswer,
    check_think_answer_format,
    extract_boxed,
    parse_candidate_number,
    parse_query,
    parse_rcts_answer,
    parse_rcts_free_answer,
    parse_score,
    parse_think_answer,
    parse_tournament,
    strip_special_tokens,
)

# ------------------------------------------------------------------ RCTS (App. C.2 formats)

RCTS_FEWSHOT_OUTPUT = """****THOUGHT PROCESS:****
The image shows two magnets with their north poles facing each other. Like poles repel.
****FINAL ANSWER:****
The answer is B.
BECAUSE: The magnets will repel because the same poles face each other."""


def test_rcts_answer_with_reasoning_context_format():
    letter, reason = parse_rcts_answer(RCTS_FEWSHOT_OUTPUT, letters="AB")
    assert letter == "B"
    assert reason == "The magnets will repel because the same poles face each other."


@pytest.mark.parametrize("text, letter", [
    ("The answer is A. BECAUSE: x", "A"),
    ("The answer is (C).", "C"),
    ("the answer is: **D**", "D"),
    ("The answer is \\boxed{E}. BECAUSE: y", "E"),
    ("The answer is //boxed{B}.", "B"),            # the RCTS prompt literally says //boxed
    ("The answer is Apple.", None),                 # a word, not an option letter
    ("I think it is B.", None),                     # no "answer is"
    ("The answer is b.", None),                     # lower case is not an option letter
    ("", None),
])
def test_rcts_answer_letters(text, letter):
    assert parse_rcts_answer(text).letter == letter


def test_rcts_answer_first_statement_wins_and_letters_are_checked():
    # As in the RCTS ScienceQA scorer, the first "The answer is X" counts ...
    assert parse_rcts_answer("The answer is A. Wait, the answer is C.").letter == "A"
    # ... and a letter outside the options is no answer at all.
    assert parse_rcts_answer("The answer is E. BECAUSE: z", letters="ABCD") == RCTSAnswer(None, "z")


def test_rcts_answer_reason_without_answer_and_typo():
    assert parse_rcts_answer("BECASUE: the RCTS code also accepts this typo") == RCTSAnswer(
        None, "the RCTS code also accepts this typo")


def test_rcts_free_answer_mathv():
    text = "The answer is \\boxed{\\frac{3}{4}}. BECAUSE: three of the four parts are shaded."
    assert parse_rcts_free_answer(text) == ("\\frac{3}{4}", "three of the four parts are shaded.")
    assert parse_rcts_free_answer("Step 1 ... so the answer is 42. Done") == ("42", "")
    assert parse_rcts_free_answer("no conclusion here") == (None, "")
    # A \boxed in the reason is not the answer: the text is cut at BECAUSE first.
    assert parse_rcts_free_answer("The answer is 7. BECAUSE: not \\boxed{8}") == ("7", "not \\boxed{8}")


# ------------------------------------------------------------------ \boxed{}

@pytest.mark.parametrize("text, content", [
    ("so $\\boxed{\\frac{1}{2}}$ cm", "\\frac{1}{2}"),            # nested braces
    ("\\boxed{3} and then \\boxed{\\sqrt{2}}", "\\sqrt{2}"),       # the last one
    ("first \\boxed{5} then a cut-off \\boxed{6", "5"),            # the last *closed* one
    ("\\fbox{12}", "12"),
    ("no box", None),
    ("\\boxed{", None),
    ("}}{{\\boxed{}", ""),
])
def test_extract_boxed(text, content):
    assert extract_boxed(text) == content


# ------------------------------------------------------------------ ReAG (supplement B chain)

@pytest.mark.parametrize("text, answer, source", [
    ("<think>The bird is a robin.</think><answer>Turdus</answer>", "Turdus", "answer_tags"),
    ("<think>x</think><answer>Willi Stoph</answer><answer>other</answer>", "Willi Stoph",
     "answer_tags"),                                                    # first pair
    ("<think>x</think> <answer> 1911 (truncated", "1911 (truncated", "after_answer"),
    ("<think>reasoning</think> The genus is Heptapleurum", "The genus is Heptapleurum",
     "after_think"),
    ("Not enough information is provided", "Not enough information is provided", "whole"),
    ("<answer>Paris</answer><|im_end|>", "Paris", "answer_tags"),      # special tokens removed
    ("<think>a</think><answer></answer>", "", "answer_tags"),
])
def test_reag_extraction_chain(text, answer, source):
    parsed = parse_think_answer(text)
    assert (parsed.answer, parsed.source) == (answer, source)


def test_reag_chain_order_and_tags_removed_everywhere():
    # An <answer> tag anywhere (even inside the reasoning) beats </think>: rule 2 before rule 3.
    parsed = parse_think_answer("<think>look at the <answer> tag</think>Paris<think>x")
    assert parsed.source == "after_answer"
    assert parsed.answer == "tag Paris x"          # tags become spaces, words are not glued
    assert parsed.think == "look at the   tag"


@pytest.mark.parametrize("text, ok", [
    ("<think>r</think><answer>a</answer>", True),
    ("\n<think>\nr\n</think>\n<answer>\na\n</answer>\n<|im_end|>", True),
    ("<think>r</think>", False),
    ("<answer>a</answer>", False),
    ("<answer>a</answer><think>r</think>", False),                      # reordered
    ("<think>r</think><answer>a</answer> extra", False),                # text outside
    ("<think>r <answer>x</answer></think><answer>a</answer>", False),   # tag inside think
    ("<think>r</think><answer>a</answer><answer>b</answer>", False),    # second answer
])
def test_reag_format_check(text, ok):
    assert check_think_answer_format(text) is ok
    assert parse_think_answer(text).format_ok is ok


def test_strip_special_tokens():
    assert strip_special_tokens("a<|im_end|>b<|endoftext|>") == "ab"
    assert strip_special_tokens("x <| not a token") == "x <| not a token"


# ------------------------------------------------------------------ SeRTS (Tab. 1, 2, 7)

@pytest.mark.parametrize("text, score", [
    ("The knowledge covers the question partially. <score>3</score>", 3),
    ("Justification ... Total: <score> 4 </score>", 4),
    ("<score>0</score>", 0),                    # additive rubric: 0 points is a score
    ("<score>5.0</score>", 5),
    ("<score>**2**</score>", 2),
    ("<score>4/5</score>", 4),
    ("For example, <score>3</score>. My rating: <score>5</score>", 5),   # the last one
    ("<score>6</score>", None),                  # out of range
    ("<score>3.5</score>", None),                # not an integer
    ("<score> Integer Score </score>", None),     # the placeholder echoed back
    ("Score: 4", None),                          # no tag
    ("<score>9" + "9" * 5000 + "</score>", None),  # huge number, no int() overflow error
    ("... final <score> 4", 4),                  # cut right after the number
    ("... final <score> 4 because", None),
])
def test_serts_score(text, score):
    assert parse_score(text) == score


def test_serts_score_custom_range():
    assert parse_score("<score>0</score>", low=1) is None
    assert parse_score("<score>1</score>", low=1) == 1


LOSARTAN = "Does losartan slow down brain atrophy in Alzheimer’s disease?"
META = "A systematic review and meta-analysis."
LEAD = "Based on the retrieved information, I would suggest the following query to "
TAB7 = [
    # (output of P_query, expected query, well formed): the five rows of SeRTS Tab. 7
    (f"{LEAD}search for more information:\n\n<query> {LOSARTAN} {META} </query>",
     f"{LOSARTAN} {META}", True),
    (("Based on the information retrieved, I would suggest the following query to further search"
      f" for relevant information:\n\n\"{LOSARTAN}\""), LOSARTAN, False),
    ((f"{LEAD}retrieve more abstracts:\n\n<query> {LOSARTAN} {META} Corresponding Feedback: "
      "Total Score: 40/50"), f"{LOSARTAN} {META}", False),
    ((f"{LEAD}further search for relevant information:\n\n\"Losartan and brain atrophy in "
      "Alzheimer’s disease\" Query Here"), "Losartan and brain atrophy in Alzheimer’s disease", False),
    ((f"{LEAD}further search for additional information on dermatillomania:\n\n"
      "\"<query> Causes of dermatillomania Query Here >\""), "Causes of dermatillomania", False),
]


@pytest.mark.parametrize("text, query, well_formed", TAB7)
def test_serts_query_table7_cases(text, query, well_formed):
    assert parse_query(text) == QueryProposal(query, well_formed)


def test_serts_query_other_cases():
    assert parse_query("<query>first</query> then <query>second</query>").query == "second"
    assert parse_query("<query> Query Here </query>") == QueryProposal(None, False)
    assert parse_query("<query>  </query> \"fallback words\"") == QueryProposal("fallback words", False)
    assert parse_query("no query at all") == QueryProposal(None, False)


# ------------------------------------------------------------------ MOLT (Tab. 14, 13, 17)

LADDER = """<round>
<compare>[5] vs [4]</compare>
<think>Candidate 4 describes a black jelly fungus like the one in the image.</think>
<winner>[4]</winner>
</round>
<round>
<compare>4 vs 3</compare>
<think>Candidate 3 gives the cap diameter the question asks for.</think>
<winner>3</winner>
</round>
<round>
<compare>3 vs 2</compare>
<think>3 is still better.</think>
<winner>3</winner>
</round>
<round>
<compare>3 vs 1</compare>
<think>1 describes a different species.</think>
<winner>3</winner>
</round>
<evidence>3</evidence>"""


def test_molt_well_formed_ladder():
    t = parse_tournament(LADDER)
    assert t.format_valid and t.problems == ()
    assert [r.pair for r in t.rounds] == [("5", "4"), ("4", "3"), ("3", "2"), ("3", "1")]
    assert [r.winner for r in t.rounds] == ["4", "3", "3", "3"]
    assert t.rounds[1].think == "Candidate 3 gives the cap diameter the question asks for."
    assert t.evidence == "3"
    assert t.chain_consistent == [True, True, True, True]
    assert all(r.winner_in_pair for r in t.rounds)


def test_molt_truncated_output_keeps_finished_rounds():
    cut = LADDER[:LADDER.index("<winner>3</winner>")]           # stops inside round 2
    t = parse_tournament(cut)
    assert not t.format_valid and t.evidence is None
    assert t.rounds[0].pair == ("5", "4") and t.rounds[0].closed
    assert t.rounds[1].pair == ("4", "3") and not t.rounds[1].closed and t.rounds[1].winner is None
    assert "no final <evidence> id" in t.problems


def test_molt_reordered_and_invented_rounds():
    reordered = ("<round><winner>2</winner><think>t</think><compare>1 vs 2</compare></round>"
                 "<evidence>2</evidence>")
    t = parse_tournament(reordered)
    assert t.rounds[0].pair == ("1", "2") and t.rounds[0].winner == "2"
    assert not t.format_valid and "tags are missing, extra or out of order" in t.problems
    # An invented round (ids the ladder never scheduled, a winner outside the pair, a broken
    # chain) is *syntactically* fine; the semantic flags expose it.
    invented = ("<round><compare>5 vs 4</compare><think>a</think><winner>4</winner></round>"
                "<round><compare>9 vs 7</compare><think>b</think><winner>2</winner></round>"
                "<evidence>2</evidence>")
    t = parse_tournament(invented)
    assert t.format_valid
    assert t.chain_consistent == [True, False]
    assert [r.winner_in_pair for r in t.rounds] == [True, False]


@pytest.mark.parametrize("text, problem", [
    ("Sure! " + LADDER, "text outside the XML blocks"),
    (LADDER.replace("3 vs 2", "3 against 2"), "a <compare> is not of the form 'a vs b'"),
    (LADDER.replace("<winner>[4]</winner>", "<winner> </winner>"), "a <winner> is missing or empty"),
    (LADDER.replace("<evidence>3</evidence>", ""), "no final <evidence> id"),
])
def test_molt_format_problems(text, problem):
    t = parse_tournament(text)
    assert not t.format_valid and problem in t.problems


def test_molt_without_round_tags_and_unclosed_evidence():
    t = parse_tournament("<compare>2 vs 1</compare><winner>1</winner>\n<evidence>Candidate 1")
    assert [r.pair for r in t.rounds] == [("2", "1")]
    assert t.evidence == "1" and not t.format_valid


@pytest.mark.parametrize("text, kwargs, value", [
    ("3", {}, 3),
    ("Candidate 4 is the most relevant.", {}, 4),
    ("6", {}, None),
    ("none of them", {}, None),
    ("0", {"low": 0, "high": None}, 0),          # Tab. 13 section ids start at 0
    ("Section 12", {"low": 0, "high": None}, 12),
    ("3.5", {}, None),
])
def test_candidate_number(text, kwargs, value):
    assert parse_candidate_number(text, **kwargs) == value


def test_tags_found_after_characters_that_change_length_when_lower_cased():
    # "İ".lower() is two characters long: positions must not come from text.lower().
    prefix = "İ" * 8
    assert parse_score(prefix + "<score>3") == 3
    assert parse_query(prefix + "<query> find this") == QueryProposal("find this", False)
    assert parse_tournament(prefix + "<evidence>3</evidence>").evidence == "3"
    assert parse_score("<SCORE>4</SCORE>") == 4
