"""Every parser of model output on >= 10,000 arbitrary and >= 10,000 adversarial strings (and every
scorer that reads free text on 10,000 arbitrary and 3,000 adversarial ones): no exception, and a
result of the documented type and range.

Each generated string goes through all the parsers (``check_parsers``), so each parser sees every
string while hypothesis generates it only once. ``derandomize=True`` makes the runs repeatable.
"""
from __future__ import annotations

import random
from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kbvqa import metrics as M
from kbvqa import parsers as P
from kbvqa.reag import rewards as R

TAG_NAMES = ["think", "answer", "score", "query", "round", "compare", "winner", "evidence"]
FRAGMENTS = (
    [f"<{t}" for t in TAG_NAMES] + [f"</{t}" for t in TAG_NAMES]
    + ["\\boxed{", "//boxed{", "\\fbox{", "oxed{", "{", "}", "\\frac{", "\\sqrt", "^", "$", "\\\\",
       "The answer is ", "the answer is ", "answer is: ", "BECAUSE:", "BECASUE:", " vs ", "vs",
       "(A)", " A ", "B.", " (C).", "\n", "\n\n", '"', "\u201c", "\u201d", "'", "Query Here",
       "Corresponding Feedback:", "<|im_end|>", "<|", "|>", "&&", "|", ",", " and ", " & ", "-",
       "=", "\\approx", "1e999", "-1e-999", "9" * 400, "0" * 50 + "1", ".5.5.5", "1,000,000",
       "\x00", "\u202e", "\ufeff", "İ", "ß", "\U0001f600", "κ", "é", "\t", "\r\n", "**", ">",
       "<", " ", "Paris", "red", "blue", "1911", "3", "[4]", "Candidate 2", "x"]
)
_rng = random.Random(0)
NUMBER_POOL = ([str(_rng.randint(-10**k, 10**k)) for k in range(1, 40, 3)]
               + [repr(_rng.uniform(-1e6, 1e6)) for _ in range(8)]
               + [f"{n}-{n + _rng.randint(0, 9)}" for n in range(0, 40, 8)]
               + ["nan", "inf", "-inf", "1e308", "2^{5000}", "10^{-400}", "\\frac{1}{0}"])
POOL = FRAGMENTS + NUMBER_POOL
# A drawn seed is expanded into 0-24 "ops": open a tag (25 %), close the innermost open tag (20 %)
# or append a fragment / number (55 %). Replaying the ops gives nested, unclosed, stray and
# reordered tags; drawing one small seed per string keeps hypothesis fast.


def _build(seed: int, words: str) -> str:
    rng = random.Random(seed)
    out, stack = [], []
    for _ in range(rng.randint(0, 24)):
        u = rng.random()
        if u < 0.25:
            stack.append(rng.choice(TAG_NAMES))
            out.append(f"<{stack[-1]}>")
        elif u < 0.45 and stack:
            out.append(f"</{stack.pop(rng.randrange(len(stack)) if u < 0.28 else -1)}>")
        else:
            out.append(rng.choice(POOL))
    out.insert(rng.randint(0, len(out)), words)         # some truly arbitrary text too
    return "".join(out)


ADVERSARIAL = st.builds(_build, st.integers(0, 2**32), st.text(max_size=10))

CHOICES = ["A", "B", "C", "D"]
INDEX2ANS = {"A": "$6", "B": "Project B", "C": "", "D": "3.5"}   # "" is a real MMMU corner case


def check_parsers(text: str) -> None:
    letter, reason = P.parse_rcts_answer(text, letters="ABCD")
    assert letter is None or letter in "ABCD"
    assert isinstance(reason, str)
    answer, reason = P.parse_rcts_free_answer(text)
    assert (answer is None or (isinstance(answer, str) and answer)) and isinstance(reason, str)
    boxed = P.extract_boxed(text)
    assert boxed is None or isinstance(boxed, str)

    ta = P.parse_think_answer(text)
    assert isinstance(ta, P.ThinkAnswer) and isinstance(ta.format_ok, bool)
    assert ta.source in ("answer_tags", "after_answer", "after_think", "whole")
    for tag in ("<think>", "</think>", "<answer>", "</answer>"):
        assert tag not in ta.answer and tag not in ta.think
    assert P.check_think_answer_format(text) is ta.format_ok

    score = P.parse_score(text)
    assert score is None or (type(score) is int and 0 <= score <= 5)
    q = P.parse_query(text)
    assert isinstance(q, P.QueryProposal) and isinstance(q.well_formed, bool)
    assert q.query is None or (isinstance(q.query, str) and q.query.strip() == q.query and q.query)
    assert q.query is not None or not q.well_formed

    t = P.parse_tournament(text)
    assert isinstance(t, P.TournamentTranscript) and isinstance(t.format_valid, bool)
    assert t.evidence is None or (isinstance(t.evidence, str) and t.evidence)
    for r in t.rounds:
        assert isinstance(r, P.TournamentRound) and isinstance(r.think, str)
        assert r.pair is None or (len(r.pair) == 2 and all(isinstance(i, str) and i for i in r.pair))
        assert r.winner is None or (isinstance(r.winner, str) and r.winner)
    assert len(t.chain_consistent) == len(t.rounds)
    if t.format_valid:
        assert t.problems == () and t.evidence is not None and t.rounds
        assert all(r.pair and r.winner and r.closed for r in t.rounds)
    n = P.parse_candidate_number(text)
    assert n is None or 1 <= n <= 5


def check_scorers(text: str) -> None:
    """Scorers and rewards that read raw model text."""
    assert M.scienceqa_parse_choice(text, CHOICES) in (None, *CHOICES)
    assert M.mmmu_parse_choice(text, CHOICES, INDEX2ANS) in (None, *CHOICES)
    assert all(isinstance(x, (str, float, int)) for x in M.mmmu_parse_open(text))
    assert isinstance(M.mathvision_extract_answer(text), str)
    assert isinstance(M.mathvision_correct(text, "B", ["1", "2", "3", "4", "5"]), bool)
    value = M.evaluate_latex(text)
    assert value is None or isinstance(value, (Fraction, float))
    parsed = M.parse_numeric_prediction(text)
    assert isinstance(parsed, float) or (isinstance(parsed, tuple) and len(parsed) == 2)
    for norm in (M.vqa_normalize, M.evqa_normalize, M.infoseek_normalize):
        assert isinstance(norm(text), str)
    assert M.vqa_accuracy(text, ["2"] * 10) in (0.0, 1.0)
    assert M.evqa_score(text, "a && b|Paris", "multi_answer") in (0.0, 1.0)
    assert M.infoseek_score(text, "numerical", answer_range=(9.0, 11.0)) in (0, 1)
    assert all(isinstance(tok, str) and tok for tok in M.rouge_tokens(text, stemming=True))
    assert R.reag_reward(text, ["Paris", "the capital"]) in (0.0, 0.2, 1.0, 1.2)
    assert R.reag_reward(text, ["1,000"], "numerical") in (0.0, 0.2, 1.0, 1.2)
    assert R.reag_reward(text, ["red && blue"], "multi") in (0.0, 0.2, 1.0, 1.2)


FUZZ = settings(max_examples=10_000, deadline=None, derandomize=True, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@FUZZ
@given(st.text(max_size=120))
def test_every_parser_on_arbitrary_strings(text):
    check_parsers(text)
    check_scorers(text)


@FUZZ
@given(ADVERSARIAL)
def test_every_parser_on_adversarial_strings(text):
    check_parsers(text)


@settings(FUZZ, max_examples=3_000)
@given(ADVERSARIAL)
def test_every_scorer_on_adversarial_strings(text):
    check_scorers(text)


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), max_size=40),
       st.text(st.characters(blacklist_characters="<>", blacklist_categories=("Cs",)), max_size=40))
def test_reag_template_round_trip(reasoning, answer):
    """Whatever the model writes inside well-formed tags comes back unchanged (stripped)."""
    parsed = P.parse_think_answer(f"<think>{reasoning}</think><answer>{answer}</answer>")
    assert parsed.answer == answer.strip() and parsed.think == reasoning.strip()
    assert parsed.format_ok and parsed.source == "answer_tags"
