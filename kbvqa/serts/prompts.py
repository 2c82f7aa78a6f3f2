"""SeRTS's model calls: the prompts of Tables 1, 2, 10 and 11 filled from a node's observation, the
parsing of the proposer's and evaluator's outputs with defined fall-backs, and the text generator.

Observation O of Alg. 1 (lines 21-25) -> prompt slots:

- ``sibling_proposals`` (Tab. 2 only): "i. <query> Corresponding Feedback: <feedback>" per sibling
  (O_q^sib, O_f^sib), "None" when there is none.
- ``ancestor_queries``: the ancestors' queries (O_q^anc) joined by " | ", "None" at the root.
- ``ancestor_abstracts``: the ancestors' retrieved abstracts (O_d^anc), one per line, "None" at the root.
- Table 1 gets ``retrieved_knowledge`` = D u O_d^anc.

Defined behaviour on bad outputs (never an exception):

- proposer output with no ``<query>`` tag: ``kbvqa.parsers.parse_query`` tries an unclosed tag and a
  quoted string; when nothing is found the node searches with the *question itself* and is marked
  ``well_formed=False`` (the "manual template" fall-back SeRTS mentions for Llama2's failures, Tab. 7).
- evaluator output with no score: the score is ``SeRTSConfig.missing_score`` (0 by default: an
  unreadable grade counts as the worst), ``score_parsed=False``.

The generator is any callable ``prompts -> list[(text, num_generated_tokens)]``; ``vlm_generator``
wraps ``VLM.generate`` with a seed that advances by one per call, so a run repeats exactly.
Leaves out: the tree (``serts``), metrics (``kbvqa.serts.evaluate``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbvqa.parsers import parse_query, parse_score
from kbvqa.prompts import render_chat

__all__ = ["Generator", "ProposerOutput", "EvaluatorOutput", "answer_prompt", "evaluator_prompt",
           "parse_evaluator_output", "parse_proposer_output", "proposer_prompt", "vlm_generator"]

Generator = Callable[[list], list[tuple[str, int]]]


@dataclass(frozen=True)
class ProposerOutput:
    query: str          # the query actually searched (the question when none could be parsed)
    well_formed: bool   # a proper <query>...</query> pair (Tab. 7 "success")
    fallback: bool      # True when no query at all was found and the question was used


@dataclass(frozen=True)
class EvaluatorOutput:
    score: int          # 0..5 (missing_score when unparsable)
    feedback: str       # the text before <score>: justification + suggestion (F of Alg. 1)
    score_parsed: bool


def _lines(items: Sequence[str], limit: int | None) -> str:
    items = list(items)[-limit:] if limit else list(items)
    return "\n".join(items) if items else "None"


def sibling_block(sibling_queries: Sequence[str], sibling_feedback: Sequence[str]) -> str:
    pairs = [f"{i}. {q} Corresponding Feedback: {f}"
             for i, (q, f) in enumerate(zip(sibling_queries, sibling_feedback), start=1)]
    return "\n".join(pairs) if pairs else "None"


def proposer_prompt(question: str, ancestor_queries: Sequence[str], ancestor_abstracts: Sequence[str],
                    sibling_queries: Sequence[str] = (), sibling_feedback: Sequence[str] = (),
                    reflection: bool = False, short: bool = True, max_abstracts: int | None = None):
    """Tab. 2 (SeRTS) or Tab. 11 (``reflection=True``, no siblings) as a chat.

    ``max_abstracts`` keeps only the last ones of O_d^anc in the prompt (None: all, as the paper)."""
    slots = {"question": question,
             "ancestor_queries": " | ".join(ancestor_queries) if ancestor_queries else "None",
             "ancestor_abstracts": _lines(ancestor_abstracts, max_abstracts)}
    if reflection:
        return render_chat("serts_self_reflection", short=short, **slots)
    return render_chat("serts_proposer", short=short,
                       sibling_proposals=sibling_block(sibling_queries, sibling_feedback), **slots)


def evaluator_prompt(question: str, abstracts: Sequence[str], short: bool = True):
    """Tab. 1 with the App. A rubric: grade D u O_d^anc for Q."""
    return render_chat("serts_evaluator", short=short, question=question,
                       retrieved_knowledge=_lines(abstracts, None))


def answer_prompt(question: str, abstracts: Sequence[str], short: bool = True):
    """Tab. 10 (the answering prompt of App. C.1; it has no short rendering, so both are the paper's)."""
    return render_chat("serts_answer", short=short, question=question, context=_lines(abstracts, None))


def parse_proposer_output(text: str, question: str) -> ProposerOutput:
    """The query to search; the question itself when the output holds none (module docstring)."""
    proposal = parse_query(str(text))
    if proposal.query is None:
        return ProposerOutput(str(question), False, True)
    return ProposerOutput(proposal.query, proposal.well_formed, False)


def parse_evaluator_output(text: str, missing_score: int = 0) -> EvaluatorOutput:
    """Score (0..5) and feedback of a Tab. 1 answer; ``missing_score`` when no valid score is found."""
    text = str(text)
    score = parse_score(text)
    cut = text.lower().rfind("<score>")
    feedback = " ".join((text[:cut] if cut != -1 else text).split())
    if score is None:
        return EvaluatorOutput(int(missing_score), feedback, False)
    return EvaluatorOutput(score, feedback, True)


def vlm_generator(vlm, max_new_tokens: int = 96, temperature: float = 0.7, seed: int = 0,
                  batch_size: int = 8, share_prefix: bool = False) -> Generator:
    """``prompts -> [(text, tokens)]`` with ``vlm.generate``; call i uses seed ``seed + i`` (repeatable).

    Temperature 0.7 as SeRTS App. C.2; ``temperature=0`` means greedy decoding here. ``share_prefix``:
    consecutive prompts with a common opening (the grader's rubric and the proposer's instructions come
    before the question) prefill it once; the same text up to floating-point noise."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
    if temperature < 0:
        raise ValueError(f"temperature must be >= 0, got {temperature}")
    calls = [0]

    def generate(prompts: list) -> list[tuple[str, int]]:
        if not prompts:
            return []
        kwargs = ({"temperature": temperature} if temperature > 0 else {"top_k": 1})
        if share_prefix:
            kwargs["share_prefix"] = True
        out = vlm.generate(list(prompts), n=1, max_new_tokens=max_new_tokens, seed=seed + calls[0],
                           batch_size=batch_size, details=True, **kwargs)
        calls[0] += 1
        return [(texts[0], int(tokens[0])) for texts, tokens in zip(out.texts, out.num_tokens)]

    return generate
