"""The prompts MCTS-HR sends to the model (RCTS §3.4, App. C), behind one pluggable builder, and a
counted ``generate`` that sends many (prompt, n) requests in one batched model call.

A prompt builder turns the search's objects into chats and the model's text back into answers:

- ``kshot(query, examples)``        the K-shot prompt of a branch (zero-shot with no examples):
                                    one (user, assistant) turn pair per example, then the query
                                    (RCTS App. C.2, as the official code builds its messages);
- ``self_check(query, response)``   Eq. 7's [I_u; Q_u; C~_i]: the query and the branch's reasoning
                                    context, asking for the answer (App. C.1 "Get Predicted Answer
                                    by Reasoning Context"); None when the response holds no
                                    reasoning (the reward is then 0, as the official code returns);
- ``mutual(query, response, ref)``  Eq. 8's [I_u; Q_u; y~_i; I_n; Q_n]: the query answered by the
                                    branch's response, then a reference question;
- ``parse(text, query)``            the option letter, or None (``parse_rcts_answer``; never raises);
- ``gold(example)``                 a reference's gold answer.

``MCPromptBuilder`` implements it for multiple choice: with a toy ``world`` it calls
``kbvqa.models.pretrain_mc_lit.mc_chat`` (the format the tiny model was trained on, 56 px views);
without one it builds the same chats from ``Query.image`` (ScienceQA in the gpu profile). With
``with_context`` an example's answer turn carries its reasoning context C_i: ``contexts[example id]``
(a reasoner's, RCTS §3.2) or a ``KBExample``'s ``reasoning_context``, else its worked solution.

What this file leaves out: the search (``rcts``), the reward arithmetic (``kbvqa.rcts.rewards``).
"""
from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field
from typing import Any, Protocol

from kbvqa.data.schema import Query, option_letters
from kbvqa.models.pretrain_mc_lit import mc_answer_text, mc_chat, mc_choices, mc_question_text
from kbvqa.models.pretrain_mix import role_mix_config
from kbvqa.parsers import parse_rcts_answer
from kbvqa.prompts import render_chat
from kbvqa.prompts.formats import view_ref


class PromptBuilder(Protocol):
    def kshot(self, query: Any, examples: list[Any]) -> Any: ...
    def self_check(self, query: Any, response: str) -> Any | None: ...
    def mutual(self, query: Any, response: str, reference: Any) -> Any: ...
    def parse(self, text: str, query: Any) -> str | None: ...
    def gold(self, example: Any) -> str | None: ...


_THOUGHT = re.compile(r"THOUGHT PROCESS:?\**:?(.*?)(?:\**\s*FINAL ANSWER|$)", re.IGNORECASE | re.DOTALL)


_LAST_LETTER = re.compile(r"\s*The answer is \(?[A-Z]\)?\.?\s*$")


def reasoning_of(response: str) -> str:
    """C~_i of a response: the text between THOUGHT PROCESS and FINAL ANSWER if present, else the
    reason after BECAUSE, else (the rationale-first format over a plain knowledge base, "<reasoning>
    So the answer is <text>. The answer is X.") the text before a closing "The answer is X."; "" when
    none holds any text. Never raises."""
    text = response if isinstance(response, str) else ""
    m = _THOUGHT.search(text)
    if m and m.group(1).strip(" *\n"):
        return m.group(1).strip(" *\n")
    reason = parse_rcts_answer(text).reason.strip()
    if reason:
        return reason
    closing = _LAST_LETTER.search(text)
    return text[:closing.start()].strip() if closing else ""


def _text_turn(role: str, text: str) -> dict:
    return {"role": role, "content": [{"type": "text", "text": text}]}


@dataclass
class MCPromptBuilder:
    """Multiple-choice prompts in RCTS's format (App. C.2); see the module docstring."""

    world: Any = None            # toy world: use ``mc_chat`` and its rendered views; None: Query.image
    cfg: Any = None              # PretrainMixConfig (image size, short prompts); default: the format of
                                 # the model playing "generator" (kbvqa.models.pretrain_mix.role_mix_config)
    with_context: bool = False   # examples carry their reasoning context C_i (the RCTS knowledge base)
    contexts: dict | None = None  # C_i by example id (RCTS §3.2, a reasoner's: kbvqa.rcts.context_kb);
                                  # None: each example's own (the toy worked solution, a KBExample's)
    plain_kb: bool = False       # examples answer "The answer is X." with no worked solution, the paper's
                                 # premise (§3.2, issue 52); with a context, only ``contexts``' (a reasoner's)

    def __post_init__(self):
        if self.cfg is None:
            self.cfg = role_mix_config("generator")

    def _image(self, q: Query):
        if self.world is not None:
            return view_ref(self.world, q.meta["view_id"], self.cfg.image_size)
        return q.image

    def _user(self, q: Query) -> list[dict]:
        name = "rcts_mc_rc" if self.with_context else "rcts_mc"
        images = [] if self._image(q) is None else [self._image(q)]
        return render_chat(name, images=images, short=self.cfg.short_prompts, question=q.question,
                           context=q.context or "N/A", choices=mc_choices(q))

    def kshot(self, query: Query, examples: list[Query]) -> list[dict]:
        if self.world is not None:
            return mc_chat(self.world, query, list(examples), self.cfg, self.with_context, self.contexts,
                           self.plain_kb)
        chat, turns = self._user(query), []
        for ex in examples:
            context = (self.contexts or {}).get(ex.id) or getattr(ex, "reasoning_context", None) or None
            turns += [self._user(ex)[-1],
                      _text_turn("assistant", mc_answer_text(ex, self.with_context, context, self.plain_kb))]
        return chat[:-1] + turns + chat[-1:]

    def self_check(self, query: Query, response: str) -> list[dict] | None:
        context = reasoning_of(response)
        if not context:
            return None
        images = [] if self._image(query) is None else [self._image(query)]
        return render_chat("rcts_answer_with_context", images=images, short=self.cfg.short_prompts,
                           question=mc_question_text(query), thought_process=context)

    def mutual(self, query: Query, response: str, reference: Query) -> list[dict]:
        # the query as a solved example whose answer is the branch's response (never its gold)
        chat = self.kshot(reference, [query])
        chat[-2] = _text_turn("assistant", response if isinstance(response, str) else "")
        return chat

    def parse(self, text: str, query: Query) -> str | None:
        n = len(query.options or [])
        letters = option_letters(n) if 1 <= n <= 26 else None
        return parse_rcts_answer(text if isinstance(text, str) else "", letters).letter

    def gold(self, example: Query) -> str | None:
        return example.answers[0] if example.answers else None


# ------------------------------------------------------------------------------ counted calls
@dataclass
class CallCounter:
    """Model cost of a search: ``calls`` to ``vlm.generate``, ``prompts`` sent, ``completions``
    returned (prompts x samples), and the wall seconds of those calls per purpose (where the time
    goes: simulation, rewards, the zero-shot answer)."""

    calls: int = 0
    prompts: int = 0
    completions: int = 0
    log: list[tuple[str, int, int]] = field(default_factory=list)   # (purpose, prompts, completions)
    seconds_by_purpose: dict[str, float] = field(default_factory=dict)

    def add(self, purpose: str, prompts: int, completions: int, seconds: float = 0.0) -> None:
        self.calls += 1
        self.prompts += prompts
        self.completions += completions
        self.log.append((purpose, prompts, completions))
        self.seconds_by_purpose[purpose] = self.seconds_by_purpose.get(purpose, 0.0) + seconds

    @property
    def seconds(self) -> float:
        """Wall seconds spent inside ``vlm.generate``, all purposes."""
        return sum(self.seconds_by_purpose.values())


def generate_batched(vlm, requests: list[tuple[Any, int]], counter: CallCounter, purpose: str,
                     **kwargs) -> list[list[str]]:
    """Send every ``(prompt, n)`` request in ONE ``vlm.generate`` call; returns n texts per request.

    Unequal ``n`` are served by repeating each prompt ``n_i / g`` times with ``n = g`` (g their
    greatest common divisor), so nothing is sampled only to be thrown away. No requests: no call.
    """
    if not requests:
        return []
    counts = [int(n) for _, n in requests]
    if min(counts) < 1:
        raise ValueError(f"every request needs n >= 1, got {counts}")
    g = math.gcd(*counts)
    prompts = [p for p, n in requests for _ in range(n // g)]
    start = time.perf_counter()
    out = vlm.generate(prompts, n=g, **kwargs)
    counter.add(purpose, len(prompts), len(prompts) * g, time.perf_counter() - start)
    texts, row = [], 0
    for n in counts:
        group = []
        for _ in range(n // g):
            group += list(out[row])
            row += 1
        texts.append(group)
    return texts
