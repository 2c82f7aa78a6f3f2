"""ReAG's teacher traces (supp. D), GRPO prompts and the relevance check of chapters 22-23.

- ``trace_writer_prompt``: ReAG's supplementary "reasoning traces generation" prompt
  (``kbvqa/prompts/reag_trace*.txt``) for one (I_q, q, p, y) tuple; the two worked examples the paper
  leaves as placeholders are filled with templated toy traces (``cold_start_trace``).
- ``write_traces``: replace the templated trace of cold-start examples by the teacher's ``<think>``
  (the target answer is kept: the teacher is told it). A trace that does not state the relevance
  of its label, as supp. D's prompt says it must (``trace_follows_label``), keeps the template
  (``checked_trace``), and ``meta["trace_source"]`` says which one each example got.
- ``load_trace_writer``: the teacher of the active profile, the ``reag_generator`` role's model: the
  reader in the cpu profile (no larger model exists there: the student's own base model writes,
  told each answer), the Qwen2.5-VL-3B checkpoint in the gpu profile (ReAG used Qwen2.5-VL-7B);
  ``None`` where that role is the tiny model (the toy world's templated traces are used).
- ``grpo_prompts``: generator prompts (I_q, q, p) with the evidence passage, one per query.
- ``stated_relevance``, ``relevance_eval``: does a generated trace say the passage is relevant, and
  does the answer follow (gold answer with the evidence, "I don't know" with a negative passage)?

Leaves out: the losses and loops (``kbvqa.rl``), the critic, the figures (``kbvqa.viz.reag``).
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kbvqa.config import get_profile, plays_reader
from kbvqa.data.schema import Query
from kbvqa.metrics import official_correct
from kbvqa.models.checkpoints import load_vlm
from kbvqa.models.pretrain_mix import role_mix_config
from kbvqa.parsers import parse_think_answer
from kbvqa.prompts import render_chat
from kbvqa.prompts.formats import UNKNOWN, Example, kbvqa_answer_text, kbvqa_prompt
from kbvqa.reag.cold_start import cold_start_examples, cold_start_trace
from kbvqa.reag.rewards import format_reward


def _prompt_image(chat: list[dict]):
    """The (lazy) image reference of a one-image chat, or ``None``."""
    for turn in chat:
        for part in turn.get("content", []):
            if isinstance(part, dict) and part.get("type") == "image":
                return part.get("image")
    return None


def _worked_example(world, relevant: bool) -> dict:
    """Slots of one worked example for the trace prompt (first training query, evidence or a look-alike)."""
    q = world.kbvqa_train[0]
    passage = world.passage(q.evidence_ids[0])
    if not relevant:
        other = next(d for d in world.documents if d.id not in q.gold_doc_ids)
        passage = other.passages[0]
    answer = kbvqa_answer_text(q) if relevant else UNKNOWN
    return {"question": q.question, "passage": passage.text, "answer": answer,
            "trace": cold_start_trace(world, q, passage, relevant)}


def trace_writer_prompt(world, q: Query, passage, relevant: bool, answer: str, cfg=None) -> list[dict]:
    """ReAG supp. D's trace-generation chat for (I_q, q, p, y) with the target ``answer`` (``cfg``:
    the writer's format, ``role_mix_config("reag_generator")`` by default)."""

    cfg = cfg or role_mix_config("reag_generator")
    image = _prompt_image(kbvqa_prompt(world, q, [passage], "reag", cfg))
    slots = {}
    for k, ex in ((1, _worked_example(world, True)), (2, _worked_example(world, False))):
        slots.update({f"example_{k}_{name}": value for name, value in ex.items()})
    return render_chat("reag_trace", images=[image] if image is not None else [], question=q.question,
                       relevance="Relevant" if relevant else "Irrelevant", passage=passage.text,
                       answer=answer, **slots)


def write_traces(teacher, world, examples: Sequence[Example], max_new_tokens: int = 256,
                 seed: int = 0, batch_size: int = 8, cfg=None, check: bool = True) -> list[Example]:
    """Cold-start examples whose traces the ``teacher`` VLM wrote (greedy); the answers are kept.
    ``teacher=None`` (cpu profile) keeps the templated traces. ``cfg`` (a ``PretrainMixConfig``) is
    the format of the teacher's own prompt (``role_mix_config`` of its role); the examples' prompts,
    which the student trains on, are kept as they are. ``check=False`` keeps every trace the teacher
    wrote, unchecked (a run that keeps them and applies ``checked_trace`` later)."""
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens!r}")
    if teacher is None:
        return [Example(e.prompt, e.completion, e.task, meta={**e.meta, "trace_source": "template"})
                for e in examples]
    by_id = {q.id: q for q in world.kbvqa_train}
    chats, answers = [], []
    for ex in examples:
        q = by_id.get(ex.meta["query_ids"][0]) or next(q for q in world.kbvqa_test if q.id == ex.meta["query_ids"][0])
        answer = parse_think_answer(ex.completion).answer
        answers.append(answer)
        chats.append(trace_writer_prompt(world, q, world.passage(ex.meta["passage_ids"][0]),
                                         ex.meta["relevant"], answer, cfg))
    outputs = teacher.generate(chats, n=1, max_new_tokens=max_new_tokens, temperature=0.0, seed=seed,
                               batch_size=batch_size) if chats else []
    out = []
    for ex, answer, texts in zip(examples, answers, outputs):
        think = parse_think_answer(texts[0]).think.strip()
        completion = f"<think>{think}</think><answer>{answer}</answer>" if think else ""
        if check:
            out.append(checked_trace(ex, completion))
        else:
            out.append(Example(ex.prompt, completion or ex.completion, ex.task,
                               meta={**ex.meta, "trace_source": "teacher" if think else "template"}))
    return out


def trace_follows_label(think: str, relevant: bool) -> bool:
    """Does a teacher's trace do what supp. D's system prompt says it MUST: "explicitly state, within
    your reasoning trace, whether the passage is relevant or not" as labelled (``stated_relevance``)?"""
    return stated_relevance(f"<think>{think}</think>") == ("relevant" if relevant else "irrelevant")


def checked_trace(example: Example, completion: str) -> Example:
    """``example`` (its templated completion) with the teacher's ``completion`` when that holds a trace
    that states the relevance of its label (``trace_follows_label``: a rejection filter, as
    DeepSeek-R1 filters its cold-start data), else with its template; ``meta["trace_source"]`` says
    which."""
    think = parse_think_answer(completion).think.strip() if completion else ""
    ok = bool(think) and trace_follows_label(think, example.meta["relevant"])
    return Example(example.prompt, completion if ok else example.completion, example.task,
                   meta={**example.meta, "trace_source": "teacher" if ok else "template"})


def load_trace_writer(profile=None):
    """The teacher that writes traces: the ``reag_generator`` role's model (gpu: a larger MLLM; cpu:
    the reader, told each answer as supp. D's teacher is), or ``None`` where the cpu profile's role is
    the tiny model (use templated traces)."""

    profile = profile or get_profile()
    return load_vlm("reag_generator", profile=profile) if profile.is_gpu or plays_reader("reag_generator") else None


def grpo_prompts(world, queries: Sequence[Query], cfg=None) -> list[list[dict]]:
    """ReAG generator prompts (I_q, q, p) with each query's evidence passage (``cfg``: the policy's
    format, ``role_mix_config("rl_policy")`` by default)."""

    cfg = cfg or role_mix_config("rl_policy")
    return [kbvqa_prompt(world, q, [world.passage(q.evidence_ids[0])], "reag", cfg) for q in queries]


def stated_relevance(text: str) -> str:
    """"irrelevant", "relevant" or "unstated": what the trace of a completion says about the passage."""
    think = parse_think_answer(str(text)).think.lower()
    if "not relevant" in think or "irrelevant" in think:
        return "irrelevant"
    return "relevant" if "relevant" in think else "unstated"


def relevance_eval(vlm, world, n: int = 8, seed: int = 0, max_new_tokens: int = 80) -> dict:
    """Greedy answers on ``n`` test queries read with their evidence and ``n`` with a negative passage.

    Returns the shares of traces that state the right relevance, of well-formatted outputs, of right
    answers with the evidence (the official scorer of their kind, ``kbvqa.metrics.official_correct``)
    and of "I don't know" with a negative.
    """

    examples = cold_start_examples_for(world, n, seed)
    outs = vlm.generate([e.prompt for e in examples], n=1, max_new_tokens=max_new_tokens, temperature=0.0,
                        seed=seed, batch_size=len(examples))
    by_id = {q.id: q for q in world.kbvqa_test}
    rows = {"relevance stated right": [], "format reward": [], "answer right (evidence)": [],
            "\"I don't know\" (negative)": []}
    for e, (text,) in zip(examples, outs):
        relevant, q = e.meta["relevant"], by_id[e.meta["query_ids"][0]]
        rows["relevance stated right"].append(stated_relevance(text) == ("relevant" if relevant else "irrelevant"))
        rows["format reward"].append(format_reward(text))
        if relevant:
            rows["answer right (evidence)"].append(official_correct(parse_think_answer(text).answer, q))
        else:
            rows["\"I don't know\" (negative)"].append(parse_think_answer(text).answer == UNKNOWN)
    return {k: float(np.mean(v)) if v else float("nan") for k, v in rows.items()}


def cold_start_examples_for(world, n: int, seed: int = 0) -> list[Example]:
    """``n`` evidence and ``n`` negative cold-start examples of TEST queries (for evaluation)."""

    pos = cold_start_examples(world, n, seed=seed, positive_rate=1.0, queries=world.kbvqa_test)
    neg = cold_start_examples(world, n, seed=seed + 1, positive_rate=0.0, queries=world.kbvqa_test)
    return pos + neg


