"""The rows of the RCTS experiments and how one row is run, one question record at a time.

A *row* is one method with one configuration (``RowSpec``); ``GROUPS`` lists the rows of each table:

- ``main``        RCTS Tab. 2: zero-shot, ICL with K random examples, Vanilla-RAG (top-K retrieved),
                  RCTS (MCTS-HR + reasoning contexts, the paper's defaults of §4.2 incl. early stop);
- ``ablation``    RCTS Tab. 4: MCTS on/off x reasoning context on/off (rows (0,0) and (1,1) *are*
                  Vanilla-RAG and RCTS of ``main``: Tab. 4's first and last rows equal Tab. 2's);
- ``alpha``       RCTS Tab. 5: alpha in {0, 0.2, 0.5, 0.8, 1} of Eq. 9, run WITHOUT early stop on the
                  sweep subset, so that every question goes through the search the weight steers;
- ``rollouts``    RCTS Fig. 5b: accuracy after P = 1..10 rollouts, read off the alpha = 0.2 sweep
                  run (``answer_after``): a search with P rollouts is exactly the first P rollouts of
                  a longer one with the same seed, so no extra model call is needed;
- ``diagnostics`` oracle example sets (``kbvqa.rcts.diagnostics.oracle_examples``), with and without
                  reasoning contexts: what the model does with the best examples the KB holds.
- ``controls``    top-K + reasoning context, the same re-answered once in App. C.1's prompt
                  (``verifier_rc``, ``kbvqa.rcts.baselines.verify_once``: verification without
                  search; its records keep the first call's ``draft``) and RCTS, on the questions all
                  three answered: does RCTS's gain come from its search or from verifying (issue 52)?

``Setting`` holds what a row runs on (queries, knowledge base, candidates per query, a prompt
builder per reasoning-context switch), so the same code serves the toy world and ScienceQA
(``kbvqa.rcts.settings`` builds both).
``run_row`` yields one JSON-ready record per question (answer, correctness, model calls, time,
examples used, the response text, and for RCTS the rollouts and, on sweep rows, the compact tree).
A record is scored as RCTS's release scores it (``scored_answer``): the letter of ScienceQA's
"The answer is X" parse of the final response (``kbvqa.metrics.scienceqa_parse_choice``, the regex
of the release's ``ScienceQA_evaluate_acc.py``); the search itself reads answers with
``parse_rcts_answer`` (its ``search_answer`` is kept when the two differ).
Toy-world reasoning contexts are the worked ``solution`` of each KB example unless the setting is
given a reasoner's (``toy_setting(..., contexts=)``: RCTS §3.2, ``rcts_toy --contexts``; its
fingerprint then names them). Leaves out: the CLI, files (``kbvqa.experiments.rcts_toy``),
tables (``kbvqa.rcts.results``).
"""
from __future__ import annotations

import dataclasses
import json
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kbvqa.data.schema import option_letters
from kbvqa.metrics.choice import scienceqa_parse_choice
from kbvqa.rcts.baselines import random_examples, top_k, vanilla_rag, verify_once
from kbvqa.rcts.diagnostics import oracle_examples
from kbvqa.rcts.mcts_hr import RCTSConfig, rcts_search
from kbvqa.rcts.paper import ablation_row, alpha_row, rollouts_row
from kbvqa.rcts.prompts import CallCounter
from kbvqa.rcts.tree import BACKPROP_RULES, Node, best_leaf, best_path_official, tree_to_records

METHODS = ("zero_shot", "icl_random", "vanilla_rag", "oracle", "rcts", "verifier")
ALPHAS = (0.0, 0.2, 0.5, 0.8, 1.0)
ROLLOUTS = (1, 2, 3, 4, 6, 8, 10)


@dataclass(frozen=True)
class RowSpec:
    name: str
    method: str                      # one of METHODS
    with_context: bool = False       # examples carry their reasoning context C_i (Tab. 4 "Rea. Con.")
    rcts: tuple = ()                 # RCTSConfig overrides as (field, value) pairs
    sweep: bool = False              # run on the sweep subset and keep each question's tree
    label: str = ""                  # a reader's name for the row

    def __post_init__(self):
        if self.method not in METHODS:
            raise ValueError(f"unknown method {self.method!r}; expected one of {METHODS}")


def _rows() -> dict[str, RowSpec]:
    rows = [RowSpec("zero_shot", "zero_shot", label="Zero-Shot"),
            RowSpec("icl_random", "icl_random", label="ICL (random)"),
            RowSpec("vanilla_rag", "vanilla_rag", label="Vanilla-RAG (top-K)"),
            RowSpec("rcts", "rcts", True, label="RCTS"),
            RowSpec("vanilla_rag_rc", "vanilla_rag", True, label="top-K + reasoning context"),
            RowSpec("rcts_no_rc", "rcts", False, label="MCTS-HR without reasoning context"),
            RowSpec("oracle", "oracle", False, label="oracle examples"),
            RowSpec("oracle_rc", "oracle", True, label="oracle examples + reasoning context"),
            RowSpec("verifier_rc", "verifier", True, label="top-K + reasoning context, re-answered once")]
    rows += [RowSpec(f"rcts_sweep_{alpha_row(a)}", "rcts", True, (("alpha", a), ("early_stop", False)),
                     sweep=True, label=f"RCTS, alpha = {a:g}, no early stop") for a in ALPHAS]
    return {r.name: r for r in rows}


ROWS = _rows()
SWEEP_BASE = f"rcts_sweep_{alpha_row(0.2)}"   # the run Fig. 5b is read from
GROUPS: dict[str, dict[str, str]] = {          # group -> {table row name: run name}
    "main": {"zero_shot": "zero_shot", "icl_random": "icl_random", "vanilla_rag": "vanilla_rag", "rcts": "rcts"},
    "ablation": {ablation_row(False, False): "vanilla_rag", ablation_row(False, True): "vanilla_rag_rc",
                 ablation_row(True, False): "rcts_no_rc", ablation_row(True, True): "rcts"},
    "alpha": {alpha_row(a): f"rcts_sweep_{alpha_row(a)}" for a in ALPHAS},
    "rollouts": {rollouts_row(p): SWEEP_BASE for p in ROLLOUTS},
    "diagnostics": {"zero_shot": "zero_shot", "vanilla_rag": "vanilla_rag", "oracle": "oracle",
                    "oracle_rc": "oracle_rc"},
    "controls": {"vanilla_rag_rc": "vanilla_rag_rc", "verifier_rc": "verifier_rc", "rcts": "rcts"},
}


def runs_of(groups: Sequence[str]) -> list[str]:
    """The runs the given groups need, each once, in a stable order; ``"all"`` means every group."""
    groups = list(GROUPS) if "all" in groups else list(groups)
    unknown = [g for g in groups if g not in GROUPS]
    if unknown:
        raise ValueError(f"unknown group(s) {unknown}; expected some of {list(GROUPS)} or 'all'")
    return list(dict.fromkeys(run for g in groups for run in GROUPS[g].values()))


@dataclass
class Setting:
    """What rows run on: queries, knowledge base, top-N candidates per query id, prompt builders."""

    queries: list
    kb: list
    candidates: dict[str, list[tuple[Any, float]]]    # query id -> [(example, similarity), ...]
    builder: Callable[[bool], Any]                    # with_context -> PromptBuilder
    k: int = 3                                        # examples per prompt (paper K = 3)
    rcts_defaults: dict = field(default_factory=dict)  # RCTSConfig fields shared by every RCTS row
    contexts_id: str = ""                             # hash of the reasoning contexts the with-context
                                                      # prompts use ("": the examples' own solutions)
    plain_kb: bool = False                            # examples without worked solutions (issue 52)


def _gold(q) -> str | None:
    return q.answers[0] if q.answers else None


def scored_answer(response: str, parsed: str | None, q) -> str | None:
    """The answer a record is scored on: for a multiple-choice query, the option letter of the
    release's ScienceQA parse of ``response`` (``scienceqa_parse_choice``; None when it finds none
    or a letter beyond the options); for other answer kinds, ``parsed`` (the builder's parse)."""
    if getattr(q, "answer_type", None) != "choice":
        return parsed
    n = len(q.options or [])
    return scienceqa_parse_choice(response or "", option_letters(n) if 1 <= n <= 26 else None)


def _scored(q, response: str, parsed: str | None) -> dict:
    pred = scored_answer(response, parsed, q)
    out = {"pred": pred, "correct": pred is not None and pred == _gold(q), "response": str(response or "")[:400]}
    if pred != parsed:
        out["search_answer"] = parsed
    return out


def _answer_with(vlm, queries, example_lists, builder, counter, seed):
    """Greedy K-shot answers with the given examples in the given order (Vanilla-RAG's prompt)."""

    ranked = [[(e, float(len(exs) - i)) for i, e in enumerate(exs)] for exs in example_lists]
    k = max((len(x) for x in example_lists), default=0)
    return vanilla_rag(vlm, queries, ranked, k=k, builder=builder, counter=counter, seed=seed)


def _examples_for(spec: RowSpec, q, setting: Setting, seed: int) -> list:
    if spec.method == "zero_shot":
        return []
    if spec.method == "icl_random":
        return random_examples(q, setting.kb, setting.k, random.Random(f"icl:{seed}:{q.id}"))
    if spec.method == "oracle":
        return oracle_examples(q, setting.kb, setting.k, seed)
    return top_k(setting.candidates.get(q.id, []), setting.k)


def rcts_config(spec: RowSpec, setting: Setting, seed: int):

    return RCTSConfig(**{"K": setting.k, **setting.rcts_defaults, **dict(spec.rcts), "seed": seed})


def compact_tree(root) -> list[dict]:
    """The node fields a rollout prefix or a tree figure needs (floats rounded)."""

    keep = ("node_id", "parent_id", "depth", "example_ids", "created_at", "rollouts", "answer", "n_children")
    out = []
    for rec in tree_to_records(root):
        row = {k: rec[k] for k in keep}
        row.update(Q=round(rec["Q"], 6), N=rec["N"], rewards=[round(r, 6) for r in rec["rewards"]])
        out.append(row)
    return out


def run_row(spec: RowSpec, setting: Setting, vlm, seed: int = 0, skip: Sequence[str] = (),
            chunk: int = 16) -> Iterator[dict]:
    """Yield one record per query of ``setting`` (not in ``skip``); baselines answer ``chunk``
    queries per model call, RCTS searches one query at a time (seeded by ``seed``)."""

    todo = [q for q in setting.queries if q.id not in set(skip)]
    builder = setting.builder(spec.with_context)
    if spec.method != "rcts":
        for start in range(0, len(todo), chunk):
            batch, counter, t0 = todo[start:start + chunk], CallCounter(), time.perf_counter()
            examples = [_examples_for(spec, q, setting, seed) for q in batch]
            answers = _answer_with(vlm, batch, examples, builder, counter, seed)
            if spec.method == "verifier":
                answers = verify_once(vlm, batch, answers, builder, counter=counter, seed=seed)
            seconds = (time.perf_counter() - t0) / len(batch)
            completions = counter.completions / len(batch) if spec.method == "verifier" else 1
            for q, exs, a in zip(batch, examples, answers):
                record = {"id": q.id, "gold": _gold(q), **_scored(q, a.response, a.answer),
                          "calls": counter.calls / len(batch), "completions": completions,
                          "seconds": round(seconds, 4), "examples": [e.id for e in exs]}
                if spec.method == "verifier":
                    record.update(draft=str(a.draft)[:400], draft_answer=a.draft_answer)
                yield record
        return

    config = rcts_config(spec, setting, seed)
    for q in todo:
        t0 = time.perf_counter()
        result = rcts_search(vlm, q, setting.candidates.get(q.id, []), config, builder)
        record = {"id": q.id, "gold": _gold(q), **_scored(q, result.response, result.answer),
                  "calls": result.calls, "completions": result.completions,
                  "seconds": round(time.perf_counter() - t0, 4), "examples": [e.id for e in result.examples],
                  "stop": result.stop_reason, "zero_shot": result.zero_shot_answer,
                  "rollouts": [[r.answer, round(r.reward, 6)] for r in result.rollouts],
                  "rollout_rewards": [[round(r.q_self, 6), round(r.q_mutual, 6)] for r in result.rollouts]}
        if spec.sweep:
            record["tree"] = compact_tree(result.root)
        yield record


def answer_after(tree: list[dict], upto: int, backprop: str = "paper", final: str = "path_sum") -> str | None:
    """The answer a search would have returned after its first ``upto`` rollouts (Fig. 5b), from its
    compact tree: rebuild the nodes created by then, replay the backups in rollout order, apply the
    final rule. None when no leaf had been simulated yet."""

    if upto < 1:
        raise ValueError(f"upto must be >= 1, got {upto}")
    built: dict[str, Any] = {}
    events = []
    for rec in tree:
        if rec["parent_id"] is None:
            built[rec["node_id"]] = Node(origin="root")
            continue
        if rec["created_at"] >= upto or rec["parent_id"] not in built:
            continue
        node = built[rec["parent_id"]].add_child(int(rec["node_id"].rsplit(".", 1)[1]))
        node.answer = rec.get("answer")
        built[rec["node_id"]] = node
        if not rec.get("n_children"):
            events += [(r, node, v) for r, v in zip(rec["rollouts"], rec["rewards"]) if r < upto]
    for r, node, v in sorted(events, key=lambda e: e[0]):
        BACKPROP_RULES[backprop](node, v, r)
    root = built.get("root")
    if root is None or not root.children:
        return None
    if final == "path_sum":
        return best_path_official(root)[-1].answer
    leaf = best_leaf(root)
    return leaf.answer if leaf is not None else None


def spec_fingerprint(spec: RowSpec, setting: Setting, seed: int) -> dict:
    """What a record depends on besides the question (written next to the records, for resuming)."""
    out = {"row": dataclasses.asdict(spec), "seed": seed, "k": setting.k}
    if spec.method == "rcts":
        out["rcts"] = dataclasses.asdict(rcts_config(spec, setting, seed))
        # the runs made before these options keep their fingerprint while the options keep their defaults
        for name, default in (("share_prefix", False), ("reward_decoding", "line"),
                              ("reward_answer_max_new_tokens", 96), ("reward_answer_stop", ("BECAUSE",))):
            if out["rcts"][name] == default:
                del out["rcts"][name]
    if spec.with_context and setting.contexts_id:
        out["contexts"] = setting.contexts_id
    if setting.plain_kb:                  # every row's examples change, with or without a context
        out["plain_kb"] = True
    return json.loads(json.dumps(out))    # as it reads back from a file (tuples -> lists)
