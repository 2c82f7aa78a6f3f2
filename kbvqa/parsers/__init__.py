"""Parsers of model output for the four papers. Every function returns a defined result on ANY
string -- truncated, reordered, empty, or full of stray tags -- and never raises.

- ``parse_rcts_answer``     RCTS App. C.2 "The answer is X. BECAUSE: ..." -> (letter | None, reason)
- ``parse_rcts_free_answer`` RCTS MathV "The answer is \\boxed{...}. BECAUSE: ..." -> (answer, reason)
- ``extract_boxed``         content of the last *closed* ``\\boxed{...}``, nested braces included
- ``parse_think_answer``    ReAG supplement B: the answer-extraction chain (``<answer>...</answer>``,
                            else text after the first ``<answer>``, else text after ``</think>``,
                            else everything; special tokens removed) and the format check of the
                            ``<think>...</think><answer>...</answer>`` template (R_fmt, Eq. 9)
- ``parse_score``           SeRTS Tab. 1 evaluator: ``<score>n</score>`` -> n in [0, 5] | None
- ``parse_query``           SeRTS Tab. 2 proposer: ``<query>...</query>``, with fall-backs for the
                            malformed outputs of SeRTS Tab. 7 (unclosed tag, bare quotes, leaked
                            "Query Here" placeholder or "Corresponding Feedback" text)
- ``parse_tournament``      MOLT Tab. 14: ``<round><compare>a vs b</compare><think>..</think>
                            <winner>w</winner></round>`` ... ``<evidence>id</evidence>``
- ``parse_candidate_number`` MOLT Tab. 13 / Tab. 17: "output only the number" -> int | None

Modules by paper: ``common`` (special tokens, ``\\boxed``), ``answers`` (RCTS, ReAG), ``serts``, ``molt``.
What this package leaves out: scoring (``kbvqa.metrics``) and rewards (``kbvqa.reag.rewards``).
"""
from kbvqa.parsers.answers import (
    RCTSAnswer,
    ThinkAnswer,
    check_think_answer_format,
    parse_rcts_answer,
    parse_rcts_free_answer,
    parse_think_answer,
)
from kbvqa.parsers.common import extract_boxed, strip_special_tokens
from kbvqa.parsers.molt import (
    TournamentRound,
    TournamentTranscript,
    parse_box,
    parse_candidate_number,
    parse_tournament,
    parse_winner,
    winner_ids,
)
from kbvqa.parsers.serts import QueryProposal, parse_query, parse_score

__all__ = [
    "QueryProposal", "RCTSAnswer", "ThinkAnswer", "TournamentRound", "TournamentTranscript",
    "check_think_answer_format", "extract_boxed", "parse_box", "parse_candidate_number", "parse_query",
    "parse_rcts_answer", "parse_rcts_free_answer", "parse_score", "parse_think_answer", "parse_tournament",
    "parse_winner", "strip_special_tokens", "winner_ids",
]
