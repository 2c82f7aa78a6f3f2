"""Scripted stand-ins for SeRTS's two models on the toy literature, to see the search work when its
parts are competent (the shipped 1.45M-parameter model's grades hardly correlate with the rubric).

- ``rubric_evaluator(world)``: a Generator for Tab. 1 prompts that reads the question and the graded
  abstracts back from the prompt text and answers with the toy world's App. A rubric
  (``pretrain_mc_lit.rubric_score`` / ``grade_text``): the evaluator the tiny model was trained to imitate.
- ``noisy_reformulator(world, include_prob, off_topic_prob, seed)``: a Generator for Tab. 2 / Tab. 11
  prompts that proposes the question plus each of the other names its gold abstracts use
  (``gold_synonyms``) with probability ``include_prob``; with probability ``off_topic_prob`` it
  proposes another question instead (a bad proposal). It ignores the feedback, so any gain over a
  single proposal comes from the search (selection, accumulation of D u O_d^anc, best node).

Both are plain functions of their inputs and a seeded generator: runs repeat. Token counts are word
counts. Leaves out: anything a chapter would call a model.
"""
from __future__ import annotations

import re

import numpy as np

from kbvqa.models.pretrain_mc_lit import gold_synonyms, grade_text
from kbvqa.serts.prompts import Generator

__all__ = ["noisy_reformulator", "rubric_evaluator"]

_EVAL_QUESTION = re.compile(r"<question>\s*(.*?)\s*</question>", re.DOTALL)
_KNOWLEDGE = re.compile(r"<retrieved_knowledge>\n(.*?)\n</retrieved_knowledge>", re.DOTALL)
_PROPOSER_QUESTION = re.compile(r"(?:The question is stated as follows: |abstracts that answer: )(.*?)\n")


def _text(chat) -> str:
    return " ".join(p.get("text", "") for turn in chat for p in turn["content"] if p.get("type") == "text")


def _questions_by_text(world) -> dict:
    return {q.question: q for q in world.lit_questions}


def rubric_evaluator(world) -> Generator:
    """Tab. 1 answered by the toy rubric; an unknown question or no abstracts grade 0."""

    by_text = _questions_by_text(world)
    by_abstract = {f"{x.title}. {x.text}": x.id for x in world.literature}

    def generate(prompts: list) -> list[tuple[str, int]]:
        out = []
        for chat in prompts:
            text = _text(chat)
            question, block = _EVAL_QUESTION.search(text), _KNOWLEDGE.search(text)
            q = by_text.get(question.group(1)) if question else None
            ids = [by_abstract[line] for line in (block.group(1).split("\n") if block else []) if line in by_abstract]
            grade = grade_text(world, q, "", ids) if q is not None else "Unknown question. <score>0</score>"
            out.append((grade, len(grade.split())))
        return out

    return generate


def noisy_reformulator(world, include_prob: float = 0.5, off_topic_prob: float = 0.2, seed: int = 0) -> Generator:
    """Tab. 2 / 11 answered by a noisy query writer (module docstring); repeatable by ``seed``."""

    if not (0 <= include_prob <= 1 and 0 <= off_topic_prob <= 1):
        raise ValueError("include_prob and off_topic_prob must lie in [0, 1]")
    by_text = _questions_by_text(world)
    others = [q.question for q in world.lit_questions]
    rng = np.random.default_rng(seed)

    def generate(prompts: list) -> list[tuple[str, int]]:
        out = []
        for chat in prompts:
            match = _PROPOSER_QUESTION.search(_text(chat))
            q = by_text.get(match.group(1).strip()) if match else None
            if q is None or rng.random() < off_topic_prob:
                query = others[int(rng.integers(len(others)))].rstrip("?. ")
            else:
                names = [n for n in gold_synonyms(world, q) if rng.random() < include_prob]
                query = " ".join([q.question.rstrip("?. ")] + names)
            text = f"Other names may help. <query>{query}</query>"
            out.append((text, len(text.split())))
        return out

    return generate
