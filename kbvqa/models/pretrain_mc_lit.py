"""Pretraining tasks on multiple choice (RCTS) and on the literature corpus (SeRTS).

Multiple choice, from ``mc_train`` only (its hidden rules differ from those of ``mc_kb``/``mc_test``,
``toy_mc``), in RCTS's format (App. C.2, "The answer is X.\\nBECAUSE: ..."):

- ``mc_in_context``  zero-shot or with K in-context examples as earlier chat turns (RCTS puts each
  example as a user turn with its image and an assistant turn with its answer). For K >= 1 one
  example has the query's rule *and key value* (its answer is the query's); the others are drawn
  from: more such examples, look-alikes (same rule, other key value: a wrong answer) and random
  examples (other rules). With ``cfg.mc_rc_rate`` the examples carry their reasoning context C_i
  (the toy ``solution``) in the "few-shot-with-reasoning-context" format.
- ``reasoning_context_write``  RCTS App. C.1 "Get Reasoning Context": (question, answer) -> C_i.
- ``reasoning_context_answer`` RCTS App. C.1 "Get Predicted Answer by Reasoning Context":
  (question, C_i) -> "The answer is X." (the self-consistency check of RCTS §3.2).

Literature, from the pretraining part of ``lit_questions`` (``lit_question_split``: per answer
type, the questions are ordered by SHA-256 of their id and the first half is held out for the
chapters; ``heldout_lit_ids`` lists them), with BM25 (bm25s, k1 = 1.5, b = 0.75) over all abstracts:

- ``serts_query``  SeRTS Table 2 / Table 11 proposer. The target query is the question plus the
  other names under which the gold abstracts mention its concepts (the synonym table), ending
  ``<query>...</query>``; half the prompts show a sibling proposal (the bare question) and its
  feedback.
- ``serts_grade``  SeRTS Table 1 evaluator on the top-k abstracts of a bare, good, partial or
  unrelated query -> justification, suggestion, ``<score>n</score>`` with n from ``rubric_score``.
- ``serts_answer``  SeRTS Table 10: question + gold abstracts -> the ideal answer.

Leaves out: the creature tasks (``kbvqa.prompts.formats``), the mixture (``pretrain_mix``).
"""
from __future__ import annotations

import hashlib

from kbvqa.data.schema import Query, option_letters
from kbvqa.prompts import load_prompt, render_chat, render_prompt, system_name
from kbvqa.prompts.formats import Example, view_ref

HELDOUT_LIT_FRACTION = 0.5
_CACHE: dict[int, tuple[object, dict]] = {}


def _cache(world) -> dict:
    """Per-world look-up tables (kept with the world, rebuilt for another world object)."""
    entry = _CACHE.get(id(world))
    if entry is None or entry[0] is not world:
        by_rule: dict[str, list[Query]] = {}
        for q in world.mc_train:
            by_rule.setdefault(q.meta["rule_id"], []).append(q)
        readable = [q for q in world.mc_train if any(  # items with a same-rule, same-key partner
            e.id != q.id and e.meta["key_value"] == q.meta["key_value"] for e in by_rule[q.meta["rule_id"]])]
        entry = _CACHE[id(world)] = (world, {"by_rule": by_rule, "readable": readable or world.mc_train})
    return entry[1]


# --- multiple choice (RCTS) ----------------------------------------------------------------------
def mc_choices(q: Query) -> str:
    return " ".join(f"({letter}) {text}" for letter, text in zip(option_letters(len(q.options)), q.options))


def mc_question_text(q: Query) -> str:
    """RCTS's user text for a multiple-choice item (question, context, choices)."""
    return render_prompt("rcts_mc", question=q.question, context=q.context or "N/A", choices=mc_choices(q))


def mc_answer_text(q: Query, with_context: bool = False, context: str | None = None, plain: bool = False) -> str:
    """The RCTS answer of ``q``; ``with_context`` adds its reasoning context C_i: ``context`` when
    given (a model's, RCTS §3.2), else the toy world's worked solution. The reason after BECAUSE is
    always the worked solution's (the dataset's explanation, as ScienceQA's in the official code).

    ``plain``: the paper's premise of a knowledge base of question-answer pairs "without detailed
    reasoning procedures" (§3.2; issue 52): "The answer is X." with no BECAUSE line, and with a
    context only the given one (a reasoner's), never the worked solution."""
    if plain:
        if not with_context:
            return f"The answer is {q.answer}."
        if context is None:
            raise ValueError(f"a plain knowledge base has no worked solution to show for {q.id}: pass the "
                             "reasoner's context (toy_setting(..., contexts=...), kbvqa.rcts.contexts_of)")
        return render_prompt("rcts_mc_rc_answer_plain", thought_process=context, letter=q.answer)
    sentences = q.solution.split(". ")
    reason = sentences[1].rstrip(".") + "." if len(sentences) > 2 else q.solution
    if with_context:
        return render_prompt("rcts_mc_rc_answer", thought_process=q.solution if context is None else context,
                             letter=q.answer, reason=reason)
    return render_prompt("rcts_mc_answer", letter=q.answer, reason=q.solution)


def mc_chat(world, q: Query, examples: list[Query], cfg, with_context: bool = False,
            contexts: dict[str, str] | None = None, plain: bool = False) -> list[dict]:
    """System turn, one (user, assistant) pair per example, then the query's user turn; with
    ``with_context`` each example's reasoning context is ``contexts[example id]`` where present,
    else its worked solution (``mc_answer_text``; ``plain``: the answers of a knowledge base without
    worked solutions, and the system turn asks for "<reasoning> So the answer is <text>. The answer is
    X.", issue 52)."""
    name = "rcts_mc_rc" if with_context else "rcts_mc"

    def user(item):
        return render_chat(name, images=[view_ref(world, item.meta["view_id"], cfg.image_size)],
                           short=cfg.short_prompts, question=item.question,
                           context=item.context or "N/A", choices=mc_choices(item))

    chat = user(q)
    if plain:   # the response format over a plain knowledge base: reasoning, the option's text, its letter
        system = load_prompt(system_name("rcts_mc_plain", cfg.short_prompts))
        chat = [{"role": "system", "content": [{"type": "text", "text": system}]}] + chat[1:]
    turns = []
    for ex in examples:
        turns += [user(ex)[-1], {"role": "assistant",
                                 "content": [{"type": "text", "text": mc_answer_text(
                                     ex, with_context, (contexts or {}).get(ex.id), plain)}]}]
    return chat[:-1] + turns + chat[-1:]


def _mc_meta(q: Query, examples: list[Query], **extra) -> dict:
    readable = any(e.meta["rule_id"] == q.meta["rule_id"] and e.meta["key_value"] == q.meta["key_value"]
                   for e in examples)   # an example shows the answer
    return {"answer_shown": readable, "query_ids": [q.id] + [e.id for e in examples],
            "image_ids": [q.meta["view_id"]] + [e.meta["view_id"] for e in examples], "doc_ids": [],
            "answers": list(q.answers), "options": list(q.options), "answer_type": "choice", **extra}


def pick_mc_examples(world, q: Query, k: int, rng, mix, pool=None) -> list[Query]:
    """``k`` in-context examples for ``q``: one with the same rule and key value (if the pool has
    one), the rest drawn by ``mix`` = (same key value, look-alike: same rule and other key value,
    random: other rule), shuffled."""
    if k == 0:
        return []
    rule = (_cache(world)["by_rule"].get(q.meta["rule_id"], []) if pool is None
            else [e for e in pool if e.meta["rule_id"] == q.meta["rule_id"]])
    rule = [e for e in rule if e.id != q.id]
    same = [e for e in rule if e.meta["key_value"] == q.meta["key_value"]]
    lookalike = [e for e in rule if e.meta["key_value"] != q.meta["key_value"]]
    others = pool if pool is not None else world.mc_train
    chosen = [rng.choice(same)] if same else []   # none: a pool too small (tiny test worlds)
    for _ in range(100 * k):
        if len(chosen) >= k:
            break
        taken = {e.id for e in chosen}
        kind = rng.choices((0, 1, 2), weights=mix)[0]
        candidates = [e for e in (same, lookalike)[kind] if e.id not in taken] if kind < 2 else []
        if not candidates:
            e = rng.choice(others)
            if e.meta["rule_id"] == q.meta["rule_id"] or e.id in taken or e.id == q.id:
                continue
            candidates = [e]
        chosen.append(rng.choice(candidates))
    rng.shuffle(chosen)
    return chosen


def mc_in_context(world, rng, cfg) -> Example:
    ks = sorted(cfg.mc_k_weights)
    k = rng.choices(ks, weights=[cfg.mc_k_weights[x] for x in ks])[0]
    q = rng.choice(world.mc_train if k == 0 else _cache(world)["readable"])
    examples = pick_mc_examples(world, q, k, rng, cfg.mc_example_mix)
    rc = bool(examples) and rng.random() < cfg.mc_rc_rate
    return Example(mc_chat(world, q, examples, cfg, rc), mc_answer_text(q, rc), "mc_in_context",
                   meta=_mc_meta(q, examples, k=k, reasoning_context=rc))


def reasoning_context_write(world, rng, cfg) -> Example:
    q = rng.choice(world.mc_train)
    prompt = render_chat("rcts_reasoning_context", images=[view_ref(world, q.meta["view_id"], cfg.image_size)],
                         short=cfg.short_prompts, question=mc_question_text(q), answer=f"The answer is {q.answer}.")
    return Example(prompt, q.solution, "reasoning_context_write", meta=_mc_meta(q, []))


def reasoning_context_answer(world, rng, cfg) -> Example:
    q = rng.choice(world.mc_train)
    prompt = render_chat("rcts_answer_with_context", images=[view_ref(world, q.meta["view_id"], cfg.image_size)],
                         short=cfg.short_prompts, question=mc_question_text(q), thought_process=q.solution)
    return Example(prompt, f"The answer is {q.answer}.", "reasoning_context_answer", meta=_mc_meta(q, []))


# --- literature (SeRTS) ------------------------------------------------------------------------
def lit_question_split(world) -> tuple[list[Query], list[Query]]:
    """(pretraining questions, held-out questions): per answer type, questions in SHA-256 order of
    their id; the first ``HELDOUT_LIT_FRACTION`` is held out."""
    cache = _cache(world)
    if "lit_split" in cache:
        return cache["lit_split"]
    pretrain, heldout = [], []
    for qtype in sorted({q.answer_type for q in world.lit_questions}):
        group = sorted((q for q in world.lit_questions if q.answer_type == qtype),
                       key=lambda q: hashlib.sha256(q.id.encode()).hexdigest())
        cut = round(len(group) * HELDOUT_LIT_FRACTION)
        heldout += group[:cut]
        pretrain += group[cut:]
    order = {q.id: i for i, q in enumerate(world.lit_questions)}
    cache["lit_split"] = (sorted(pretrain, key=lambda q: order[q.id]), sorted(heldout, key=lambda q: order[q.id]))
    return cache["lit_split"]


def heldout_lit_ids(world) -> list[str]:
    return [q.id for q in lit_question_split(world)[1]]


def bm25_search(world, query: str, k: int) -> list[str]:
    """Ids of the top-``k`` abstracts for ``query``: the book's one BM25 (``kbvqa.retrieval.bm25.
    BM25Index``, SeRTS Eq. 3-4 via bm25s, k1 = 1.5, b = 0.75, English stop words) over title + text,
    built once per world."""
    from kbvqa.retrieval.bm25 import BM25Index

    cache = _cache(world)
    if "bm25" not in cache:
        cache["bm25"] = BM25Index([f"{item.title}. {item.text}" for item in world.literature],
                                  ids=[item.id for item in world.literature])
    return [doc_id for doc_id, _ in cache["bm25"].search(str(query), k=max(1, int(k)))]


def _lit(world) -> dict:
    cache = _cache(world)
    if "lit" not in cache:
        cache["lit"] = {item.id: item for item in world.literature}
    return cache["lit"]


def gold_synonyms(world, q: Query) -> list[str]:
    """Names of the question's concepts used by its gold abstracts but absent from the question."""
    lit, question = _lit(world), q.question.lower()
    names: list[str] = []
    for aid in q.gold_doc_ids:
        item = lit[aid]
        for cid, name in zip(item.meta["concepts"], item.meta["names"]):
            if cid in q.meta["concept_ids"] and name.lower() not in question and name not in names:
                names.append(name)
    return names


def good_query(world, q: Query) -> str:
    return " ".join([q.question.rstrip("?. ")] + gold_synonyms(world, q))


def rubric_score(world, q: Query, retrieved: list[str]) -> int:
    """SeRTS App. A's additive 5-point rubric, read on the toy world (m = min(k, |gold|)):
    +1 relevant (a gold abstract retrieved); +1 substantial portion (>= half of the top-m recall);
    +1 basic elements (every fact the answer needs has a retrieved abstract); +1 direct and
    comprehensive (>= 3/4 of the top-m recall and every fact); +1 impeccable (the first m are gold)."""
    gold = set(q.gold_doc_ids)
    hits = [r in gold for r in retrieved]
    m = max(1, min(len(retrieved), len(gold)))
    recall = sum(hits) / m
    lit = _lit(world)
    covered = {lit[r].meta["fact"] for r in retrieved if r in gold} >= set(q.meta["facts"])
    return int(sum(hits) >= 1) + int(recall >= 0.5) + int(covered) + int(recall >= 0.75 and covered) \
        + int(bool(retrieved) and all(hits[:m]))


def abstracts_text(world, ids: list[str]) -> str:
    lit = _lit(world)
    return "\n".join(f"{lit[i].title}. {lit[i].text}" for i in ids) or "None"


def grade_text(world, q: Query, query: str, retrieved: list[str]) -> str:
    """The evaluator's target: justification, suggestion, ``<score>n</score>``."""
    n_gold = sum(r in set(q.gold_doc_ids) for r in retrieved)
    missing = [n for n in gold_synonyms(world, q) if n.lower() not in query.lower()]
    suggestion = (f"Add the other names {', '.join(missing)}." if missing else "Keep these query terms.")
    return (f"{n_gold} of the {len(retrieved)} abstracts report what the question needs. {suggestion} "
            f"<score>{rubric_score(world, q, retrieved)}</score>")


def serts_query(world, rng, cfg, questions=None) -> Example:
    q = rng.choice(questions if questions is not None else lit_question_split(world)[0])
    names = gold_synonyms(world, q)
    why = (f"The abstracts may use other names: {', '.join(names)}." if names
           else "The question already uses the names of the abstracts.")
    slots = {"question": q.question, "ancestor_queries": "None", "ancestor_abstracts": "None"}
    if rng.random() < 0.5:
        bare = q.question.rstrip("?. ")
        feedback = grade_text(world, q, bare, bm25_search(world, bare, cfg.serts_top_k))
        prompt = render_chat("serts_proposer", short=cfg.short_prompts, sibling_proposals=
                             f"1. {bare} Corresponding Feedback: {feedback}", **slots)
    elif rng.random() < 0.5:
        prompt = render_chat("serts_proposer", short=cfg.short_prompts, sibling_proposals="None", **slots)
    else:
        prompt = render_chat("serts_self_reflection", short=cfg.short_prompts, **slots)
    return Example(prompt, f"{why}\n<query>{good_query(world, q)}</query>", "serts_query",
                   meta={"query_ids": [q.id], "image_ids": [], "doc_ids": list(q.gold_doc_ids),
                         "synonyms": names})


def serts_grade(world, rng, cfg, questions=None) -> Example:
    pool = questions if questions is not None else lit_question_split(world)[0]
    q = rng.choice(pool)
    kind = rng.choice(("bare", "good", "partial", "unrelated"))
    query = {"bare": q.question, "good": good_query(world, q),
             "partial": " ".join([q.question] + gold_synonyms(world, q)[:1]),
             "unrelated": rng.choice(world.lit_questions).question}[kind]
    retrieved = bm25_search(world, query, cfg.serts_top_k)
    prompt = render_chat("serts_evaluator", short=cfg.short_prompts, question=q.question,
                         retrieved_knowledge=abstracts_text(world, retrieved))
    return Example(prompt, grade_text(world, q, query, retrieved), "serts_grade",
                   meta={"query_ids": [q.id], "image_ids": [], "doc_ids": retrieved, "query": query,
                         "query_kind": kind, "score": rubric_score(world, q, retrieved)})


def serts_answer(world, rng, cfg, questions=None) -> Example:
    q = rng.choice(questions if questions is not None else lit_question_split(world)[0])
    gold = list(q.gold_doc_ids)[: cfg.serts_top_k]
    prompt = render_chat("serts_answer", short=cfg.short_prompts, question=q.question,
                         context=abstracts_text(world, gold))
    return Example(prompt, q.solution, "serts_answer",
                   meta={"query_ids": [q.id], "image_ids": [], "doc_ids": gold, "answers": list(q.answers)})
