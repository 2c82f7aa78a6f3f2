"""Training data for SeRTS's proposer and grader in the prompts the search sends (issue 55, item 2).

The reader's pretraining task ``serts_query`` gives "None" for the ancestors, while the search's
proposer prompts (Tab. 2) carry the ancestors' queries O_q^anc and abstracts O_d^anc: training and test
did not match, and a better query could come only from memory. In a corpus where some abstracts
introduce a concept's other name ("kibekitabine (KZ-2018)", ``ToyWorldConfig.abstract_alias_share``),
an ancestor's abstracts can reveal the name the gold abstracts use. The examples here teach exactly
that, on the *training* questions only (``lit_question_split(world)[0]``):

- ``ancestor_path``: one or two ancestor nodes as the search builds them below the root
  (``SeRTSSearch.observation``: the path without the root): the first proposes the bare question or
  a random training question's words, a second (half the time) the first plus one name; each
  retrieves its BM25 top-k; O_d^anc is their union in path order.
- ``discoverable_names``: the question's gold synonyms (``gold_synonyms``) that the abstracts *shown*
  in the prompt name (the last ``max_abstracts`` of O_d^anc, as ``proposer_prompt`` shows them).
- ``proposer_example``: Tab. 2's prompt (``proposer_prompt``, siblings "None"); the target says what
  the shown abstracts reveal and proposes the question's words plus exactly those names: a name is
  never proposed from memory.
- ``grader_example``: Tab. 1's prompt over D u O_d^anc (the context the search grades), the target
  App. A's rubric on that set (``grade_text``), for queries of five kinds (bare, good, partial,
  discovered, unrelated).
- ``role_examples(world, role, n, config)``: ``n`` seeded examples of one role.
- ``evaluate_proposer`` / ``evaluate_grader``: the card rows on *held-out* questions, in the same
  prompts: ``serts_query_recall_gain_ancestors`` (BM25 recall@k of the parsed proposal minus the
  question's own) with the share well formed, and ``serts_grade_rubric_spearman`` (Spearman's rank
  correlation of the parsed grade with App. A's rubric on the graded set) with the share parsed.

Leaves out: training (``kbvqa.rl.sft_train`` on these), the search (``search.py``), the corpus (``kbvqa.data``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass

from kbvqa.models.pretrain_mc_lit import (
    abstracts_text,
    bm25_search,
    gold_synonyms,
    good_query,
    grade_text,
    lit_question_split,
    rubric_score,
)
from kbvqa.prompts.formats import Example
from kbvqa.serts.prompts import evaluator_prompt, proposer_prompt

__all__ = ["ROLES", "RoleDataConfig", "ancestor_path", "discoverable_names", "evaluate_grader", "evaluate_proposer",
           "grader_example", "proposer_example", "role_examples"]

ROLES = ("proposer", "grader")
GRADE_KINDS = ("bare", "good", "partial", "discovered", "unrelated")


@dataclass(frozen=True)
class RoleDataConfig:
    top_k: int = 5                   # BM25 abstracts per node (SeRTSConfig.top_k)
    max_abstracts: int | None = 3    # O_d^anc shown in proposer prompts (SeRTSConfig.max_prompt_abstracts, cpu)
    short_prompts: bool = True       # the cpu profile's renderings
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise ValueError(f"RoleDataConfig.top_k must be an int >= 1, got {self.top_k!r}")
        if self.max_abstracts is not None and (not isinstance(self.max_abstracts, int) or self.max_abstracts < 1):
            raise ValueError(f"RoleDataConfig.max_abstracts must be None or an int >= 1, got {self.max_abstracts!r}")


def _union(*lists) -> list[str]:
    out: list[str] = []
    for ids in lists:
        out += [i for i in ids if i not in out]
    return out


def shown(doc_ids: list[str], max_abstracts: int | None) -> list[str]:
    """The abstracts ``proposer_prompt`` shows: the last ``max_abstracts`` of O_d^anc (all when None)."""
    return list(doc_ids)[-max_abstracts:] if max_abstracts else list(doc_ids)


def discoverable_names(world, q, doc_ids: list[str]) -> list[str]:
    """The question's gold synonyms that the text of ``doc_ids`` names (in ``gold_synonyms`` order)."""
    text = abstracts_text(world, list(doc_ids)).lower() if doc_ids else ""
    return [name for name in gold_synonyms(world, q) if name.lower() in text]


def ancestor_path(world, q, rng: random.Random, config: RoleDataConfig, pool=None) -> tuple[list[str], list[str]]:
    """(O_q^anc, O_d^anc) of a node one or two levels below the root's first child (module docstring)."""
    bare = q.question.rstrip("?. ")
    first = bare if rng.random() < 0.75 else rng.choice(pool or lit_question_split(world)[0]).question.rstrip("?. ")
    queries, docs = [first], [bm25_search(world, first, config.top_k)]
    if rng.random() < 0.5:
        names = gold_synonyms(world, q)
        second = " ".join([bare] + ([rng.choice(names)] if names else []))
        queries.append(second)
        docs.append(bm25_search(world, second, config.top_k))
    return queries, _union(*docs)


def proposer_example(world, q, rng: random.Random, config: RoleDataConfig, pool=None) -> Example:
    anc_queries, anc_docs = ancestor_path(world, q, rng, config, pool)
    names = discoverable_names(world, q, shown(anc_docs, config.max_abstracts))
    bare = q.question.rstrip("?. ")
    why = (f"The retrieved abstracts also call it {', '.join(names)}." if names
           else "The retrieved abstracts use no other name for it.")
    prompt = proposer_prompt(q.question, anc_queries, [abstracts_text(world, [d]) for d in anc_docs],
                             short=config.short_prompts, max_abstracts=config.max_abstracts)
    return Example(prompt, f"{why}\n<query>{' '.join([bare] + names)}</query>", "serts_propose_from_ancestors",
                   meta={"query_ids": [q.id], "image_ids": [], "doc_ids": list(q.gold_doc_ids), "names": names,
                         "ancestor_queries": anc_queries, "ancestor_docs": anc_docs})


def grader_example(world, q, rng: random.Random, config: RoleDataConfig, pool=None) -> Example:
    anc_queries, anc_docs = ancestor_path(world, q, rng, config, pool)
    kind = rng.choice(GRADE_KINDS)
    bare = q.question.rstrip("?. ")
    names = discoverable_names(world, q, shown(anc_docs, config.max_abstracts))
    query = {"bare": bare, "good": good_query(world, q),
             "partial": " ".join([bare] + gold_synonyms(world, q)[:1]),
             "discovered": " ".join([bare] + names),
             "unrelated": rng.choice(pool or lit_question_split(world)[0]).question}[kind]
    context = _union(anc_docs, bm25_search(world, query, config.top_k))     # D u O_d^anc, as the search grades
    prompt = evaluator_prompt(q.question, [abstracts_text(world, [d]) for d in context], short=config.short_prompts)
    return Example(prompt, grade_text(world, q, query, context), "serts_grade_union",
                   meta={"query_ids": [q.id], "image_ids": [], "doc_ids": context, "query": query,
                         "query_kind": kind, "score": rubric_score(world, q, context)})


def role_examples(world, role: str, n: int, config: RoleDataConfig | None = None, questions=None) -> list[Example]:
    """``n`` examples of ``role`` ("proposer" or "grader"); example i depends on (seed, role, i) only.
    ``questions`` defaults to the training questions (never the held-out ones the experiments test)."""
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    config = config or RoleDataConfig()
    pool = list(questions) if questions is not None else lit_question_split(world)[0]
    if n and not pool:
        raise ValueError("no questions to build examples from")
    make = proposer_example if role == "proposer" else grader_example
    out = []
    for i in range(n):
        rng = random.Random(f"serts_role:{config.seed}:{role}:{i}")
        out.append(make(world, rng.choice(pool), rng, config, pool))
    return out


def heldout_examples(world, role: str, n: int, config: RoleDataConfig | None = None) -> list[Example]:
    """``role_examples`` on the first ``n`` held-out questions (``lit_question_split(world)[1]``), one each,
    seeded by the question's position: the evaluation set of the card rows."""
    config = config or RoleDataConfig()
    heldout = lit_question_split(world)[1]
    if not isinstance(n, int) or not 1 <= n <= len(heldout):
        raise ValueError(f"n must be an int in [1, {len(heldout)}] (the held-out questions), got {n!r}")
    make = proposer_example if role == "proposer" else grader_example
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")
    return [make(world, q, random.Random(f"serts_role_eval:{config.seed}:{role}:{i}"), config,
                 lit_question_split(world)[0]) for i, q in enumerate(heldout[:n])]


def _greedy(vlm, examples, max_new_tokens: int, batch_size: int) -> list[str]:
    return [o[0] for o in vlm.generate([e.prompt for e in examples], temperature=0, max_new_tokens=max_new_tokens,
                                       batch_size=batch_size)]


def evaluate_proposer(vlm, world, examples: list[Example], config: RoleDataConfig | None = None,
                      max_new_tokens: int = 64, batch_size: int = 8) -> dict:
    """Greedy proposals; recall@top_k of BM25 on the parsed query and on the question, their gain,
    the share well formed, the share that name a discoverable name, per-question records."""
    from kbvqa.serts.prompts import parse_proposer_output

    config = config or RoleDataConfig()
    by_id = {q.id: q for q in world.lit_questions}
    records = []
    for e, out in zip(examples, _greedy(vlm, examples, max_new_tokens, batch_size)):
        q = by_id[e.meta["query_ids"][0]]
        parsed = parse_proposer_output(out, q.question)
        gold = set(q.gold_doc_ids)
        ours = len(set(bm25_search(world, parsed.query, config.top_k)) & gold) / len(gold)
        base = len(set(bm25_search(world, q.question, config.top_k)) & gold) / len(gold)
        records.append({"query_id": q.id, "output": out, "query": parsed.query, "well_formed": parsed.well_formed,
                        "recall": ours, "question_recall": base,
                        "names_used": [n for n in e.meta["names"] if n.lower() in parsed.query.lower()],
                        "names_shown": e.meta["names"]})
    n = max(1, len(records))
    shown_any = [r for r in records if r["names_shown"]]
    return {"recall_gain": sum(r["recall"] - r["question_recall"] for r in records) / n,
            "recall": sum(r["recall"] for r in records) / n, "well_formed": sum(r["well_formed"] for r in records) / n,
            "names_carried": (sum(bool(r["names_used"]) for r in shown_any) / len(shown_any)) if shown_any else None,
            "n": len(records), "records": records}


def spearman(a: list[float], b: list[float]) -> float | None:
    """Spearman's rank correlation with average ranks for ties; None when either side is constant."""
    import numpy as np

    def ranks(x):
        x = np.asarray(x, dtype=float)
        order = x.argsort(kind="stable")
        r = np.empty(len(x))
        r[order] = np.arange(len(x), dtype=float)
        for value in np.unique(x):
            r[x == value] = r[x == value].mean()
        return r
    if len(a) != len(b) or len(a) < 2:
        raise ValueError(f"spearman needs two equal lists of >= 2 values, got {len(a)} and {len(b)}")
    ra, rb = ranks(a), ranks(b)
    if ra.std() == 0 or rb.std() == 0:
        return None
    return float(np.corrcoef(ra, rb)[0, 1])


def evaluate_grader(vlm, world, examples: list[Example], max_new_tokens: int = 64, batch_size: int = 8) -> dict:
    """Greedy grades; Spearman of the parsed score (unparsed: 0, SeRTSConfig.missing_score) against
    App. A's rubric on the graded set, the share parsed, per-question records."""
    from kbvqa.serts.prompts import parse_evaluator_output

    records = []
    for e, out in zip(examples, _greedy(vlm, examples, max_new_tokens, batch_size)):
        parsed = parse_evaluator_output(out)
        records.append({"query_id": e.meta["query_ids"][0], "output": out, "score": parsed.score,
                        "parsed": parsed.score_parsed, "rubric": e.meta["score"], "kind": e.meta["query_kind"]})
    n = max(1, len(records))
    rho = spearman([r["score"] for r in records], [r["rubric"] for r in records]) if len(records) > 1 else None
    return {"spearman": rho, "parsed": sum(r["parsed"] for r in records) / n,
            "exact": sum(r["score"] == r["rubric"] for r in records) / n, "n": len(records), "records": records}
