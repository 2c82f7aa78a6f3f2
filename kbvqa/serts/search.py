"""Self-Rewarding Tree Search (SeRTS §3.1, Alg. 1) and the self-reflection baseline (App. C.3, Alg. 2).

A tree over *queries*: each node holds the state [Q, A_i, D_i, R_i, F_i, O_i] (question, query,
BM25 documents, rubric score, evaluator feedback, the observation its proposer saw). One simulation:

1. Selection (Eq. 1): from the root, stop at the first node with fewer than b children; otherwise
   descend to the child maximising UCB(s) = R(s)/N(s) + C sqrt(2 ln(N(p)/N(s))) (policy "ucb"),
   the mean alone ("greedy", C = 0) or a uniformly random child ("random"), Tab. 6's three policies.
   A node at depth >= Depth cannot be expanded: the simulation is spent (Alg. 1 lines 8-9, 16-17).
2. Expansion: the proposer (Tab. 2) sees the queries and abstracts of the path root -> C
   (O_q^anc, O_d^anc) and the queries and feedback of C's existing children (O_q^sib, O_f^sib).
3. Evaluation: BM25 top-k for the query gives D; the evaluator (Tab. 1) grades D u O_d^anc -> R, F.
4. Backpropagation: the new node gets N = 1, R = scaled score; every ancestor N += 1, R += it.
   Early stop when the score is 5; the answer is D u O_d^anc of the node with the highest score.

Where we choose (the pseudo-code read literally is degenerate or silent):

- Alg. 1 checks "fewer than b children" only *after* moving to a child, so the root would never get a
  second child; we test the current node first ("down to a not-fully-expanded node").
- Line 29 breaks *before* creating the score-5 child, so get_best_node could not return it; we add the
  node, back it up, then stop, and it is the best node.
- "Siblings" are the new node's siblings (C's children), which is what §3.1.2 describes.
- Rewards are scaled to [0, 1] (``reward_scale = 1/5``) so C = 0.1 (Tab. 6) explores noticeably.
- Alg. 2 sets C <- root every iteration (every proposal from the same empty observation); our default
  ``reflection="chain"`` expands the last node instead (a reflection chain, restarting at the root
  after Depth levels), which is what Tab. 11's "previous query proposals" needs; "root" is literal.

Defined behaviour: a proposal with no query searches with the question (``kbvqa.serts.prompts``); an
unreadable score is ``missing_score``; an empty D u O_d^anc gets score 0 without an evaluator call;
a query already issued in the tree, or a document set already graded, reuses the cached BM25 result /
grade (no new BM25 or evaluator call) and the node is marked ``repeated``.
Several questions run in lock step, so each simulation is one batched proposer call and one batched
evaluator call over all questions still searching. Leaves out: metrics (``kbvqa.serts.evaluate``), PPO
(``kbvqa.rl.ppo``), drawing (``kbvqa.viz.serts``).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from kbvqa.config import PROFILE_DEFAULT, resolve_profile_fields
from kbvqa.search.uct import select_index, uct_score
from kbvqa.serts.prompts import (
    Generator,
    evaluator_prompt,
    parse_evaluator_output,
    parse_proposer_output,
    proposer_prompt,
)

__all__ = ["POLICIES", "REFLECTION_MODES", "SeRTSConfig", "SeRTSNode", "SeRTSResult", "run_search",
           "run_self_reflection", "run_serts"]

POLICIES = ("ucb", "greedy", "random")
REFLECTION_MODES = ("chain", "root")
MAX_SCORE = 5


@dataclass(frozen=True)
class SeRTSConfig:
    sim: int = 12                 # Sim: simulations per question (App. C.2: 12)
    branching: int = 3            # b: most children per node (App. C.2: 3)
    depth: int = 3                # Depth: nodes at this depth are not expanded (App. C.2: 3)
    c: float = 0.1                # C of Eq. 1 (Tab. 6: 0.1; "greedy" forces 0)
    policy: str = "ucb"           # "ucb" | "greedy" (C = 0) | "random" (Tab. 6)
    top_k: int = 5                # abstracts BM25 returns per query (the tiny model's training value)
    reward_scale: float = 0.2     # R backed up = score * reward_scale (score 5 -> 1.0)
    missing_score: int = 0        # score of an evaluator output without a valid <score>
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's
    max_prompt_abstracts: int | None = None  # keep only the last n of O_d^anc in proposer prompts
    reflection: str = "chain"     # Alg. 2: "chain" (expand the last node) or "root" (literal)
    seed: int = 0                 # random policy's generator (generation seeds are the generator's)

    def __post_init__(self):
        resolve_profile_fields(self, role="searcher")
        if not isinstance(self.sim, int) or self.sim < 1:
            raise ValueError(f"sim must be an int >= 1, got {self.sim!r}")
        if not isinstance(self.branching, int) or self.branching < 1:
            raise ValueError(f"branching must be an int >= 1, got {self.branching!r}")
        if not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"depth must be an int >= 1, got {self.depth!r}")
        if not self.c >= 0:
            raise ValueError(f"c must be >= 0 (Eq. 1's exploration weight), got {self.c!r}")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}, got {self.policy!r}")
        if self.reflection not in REFLECTION_MODES:
            raise ValueError(f"reflection must be one of {REFLECTION_MODES}, got {self.reflection!r}")
        if self.top_k < 1 or not self.reward_scale > 0 or not 0 <= self.missing_score <= MAX_SCORE:
            raise ValueError("need top_k >= 1, reward_scale > 0 and 0 <= missing_score <= 5")


@dataclass(eq=False)
class SeRTSNode:
    """One node: state [Q, A_i, D_i, R_i, F_i, O_i] plus visit statistics and what the models said."""

    id: int
    parent: SeRTSNode | None
    depth: int
    query: str | None = None              # A_i (None at the root)
    docs: list[str] = field(default_factory=list)          # D_i
    context_docs: list[str] = field(default_factory=list)  # D_i u O_d^anc (what was graded)
    score: int | None = None              # R_i on the 0..5 rubric (None at the root)
    feedback: str = ""                    # F_i
    observation: dict = field(default_factory=dict)        # O_i: anc/sib queries, feedback, docs
    proposer_prompt: object = None        # the chat the proposer saw (a PPO observation)
    proposer_output: str = ""             # its raw text (a PPO action)
    evaluator_output: str = ""
    well_formed: bool = True              # proposer wrote <query>...</query>
    score_parsed: bool = True
    repeated: bool = False                # the query was already issued in this tree
    visits: int = 0                       # N(s)
    value_sum: float = 0.0                # R(s) of Eq. 1 (sum of scaled rewards backed up)
    children: list[SeRTSNode] = field(default_factory=list)

    @property
    def mean_value(self) -> float:
        return self.value_sum / self.visits if self.visits else 0.0

    def path(self) -> list[SeRTSNode]:
        """Root ... self."""
        node, out = self, []
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]


@dataclass
class SeRTSResult:
    question: str
    root: SeRTSNode
    nodes: list[SeRTSNode]                # creation order, root first
    best: SeRTSNode
    docs: list[str]                       # D u O_d^anc of the best node (Alg. 1 line 39)
    stopped_early: bool                   # a score of 5 ended the search
    simulations: int                      # simulations used (spent ones included)
    proposer_calls: int = 0
    evaluator_calls: int = 0
    retriever_calls: int = 0
    proposer_tokens: int = 0
    evaluator_tokens: int = 0

    @property
    def generated_tokens(self) -> int:
        return self.proposer_tokens + self.evaluator_tokens


def _norm(query: str) -> str:
    return " ".join(query.lower().split())


def _union(*lists: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(x for lst in lists for x in lst))


class _Search:
    """The bookkeeping of one question's tree (selection, caches, backpropagation)."""

    def __init__(self, question: str, cfg: SeRTSConfig, reflection: bool, rng: np.random.Generator):
        self.question, self.cfg, self.reflection, self.rng = question, cfg, reflection, rng
        self.root = SeRTSNode(id=0, parent=None, depth=0)
        self.nodes = [self.root]
        self.sims, self.done, self.stopped_early = 0, False, False
        self.query_cache: dict[str, list[str]] = {}
        self.grade_cache: dict[tuple, tuple[int, str, bool, str]] = {}   # graded set -> R, F, ok, text
        self.result = SeRTSResult(question, self.root, self.nodes, self.root, [], False, 0)

    def _child(self, node: SeRTSNode) -> SeRTSNode:
        kids = node.children
        if self.cfg.policy == "random":
            return kids[int(self.rng.integers(len(kids)))]
        c = 0.0 if self.cfg.policy == "greedy" else self.cfg.c
        scores = uct_score([k.mean_value for k in kids], [k.visits for k in kids], node.visits, c, "serts")
        return kids[select_index(np.atleast_1d(scores), "argmax")]

    def select(self) -> SeRTSNode | None:
        """The node to expand in this simulation, or None when the simulation is spent."""
        if self.reflection:
            node = self.nodes[-1] if self.cfg.reflection == "chain" else self.root
            return self.root if node.depth >= self.cfg.depth else node
        node = self.root
        while True:
            if node.depth >= self.cfg.depth:
                return None
            if len(node.children) < self.cfg.branching:
                return node
            node = self._child(node)

    def next_node(self) -> SeRTSNode | None:
        """Run selection until a node is found or the simulations run out (then ``done``)."""
        while not self.done and self.sims < self.cfg.sim:
            self.sims += 1
            node = self.select()
            if node is not None:
                return node
        self.done = True
        return None

    def observation(self, node: SeRTSNode) -> dict:
        path = node.path()[1:]
        sibs = [] if self.reflection else node.children
        return {"anc_queries": [n.query for n in path], "anc_docs": _union(*(n.docs for n in path)),
                "sib_queries": [k.query for k in sibs], "sib_feedback": [k.feedback for k in sibs]}

    def add(self, parent: SeRTSNode, **state) -> SeRTSNode:
        child = SeRTSNode(id=len(self.nodes), parent=parent, depth=parent.depth + 1, **state)
        parent.children.append(child)
        self.nodes.append(child)
        reward = child.score * self.cfg.reward_scale
        for node in child.path():                       # backpropagation: the new node and ancestors
            node.visits += 1
            node.value_sum += reward
        if child.score >= MAX_SCORE:
            self.done = self.stopped_early = True
        return child

    def finish(self) -> SeRTSResult:
        graded = self.nodes[1:]
        best = max(graded, key=lambda n: (n.score, -n.id)) if graded else self.root
        r = self.result
        r.best, r.docs, r.stopped_early, r.simulations = best, list(best.context_docs), self.stopped_early, self.sims
        return r


def run_search(questions: Sequence[str], proposer: Generator, evaluator: Generator,
               retrieve: Callable[[str, int], list[str]], doc_text: Callable[[str], str],
               cfg: SeRTSConfig = SeRTSConfig(), reflection: bool = False) -> list[SeRTSResult]:
    """Alg. 1 (``reflection=False``) or Alg. 2 for each question, in lock step (batched model calls).

    ``proposer`` / ``evaluator``: ``prompts -> [(text, tokens)]`` (``kbvqa.serts.prompts.vlm_generator``);
    ``retrieve(query, k)``: document ids best first; ``doc_text(id)``: the abstract shown in prompts."""
    searches = [_Search(q, cfg, reflection, np.random.default_rng([cfg.seed, i]))
                for i, q in enumerate(questions)]
    while True:
        step = [(s, s.next_node()) for s in searches if not s.done]
        step = [(s, node) for s, node in step if node is not None]
        if not step:
            break
        observations = [s.observation(node) for s, node in step]
        prompts = [proposer_prompt(s.question, o["anc_queries"], [doc_text(d) for d in o["anc_docs"]],
                                   o["sib_queries"], o["sib_feedback"], reflection=reflection,
                                   short=cfg.short_prompts, max_abstracts=cfg.max_prompt_abstracts)
                   for (s, _), o in zip(step, observations)]
        proposals = proposer(prompts)
        expansions, grade_prompts, grade_owners = [], [], []
        for (s, node), o, prompt, (text, tokens) in zip(step, observations, prompts, proposals):
            s.result.proposer_calls += 1
            s.result.proposer_tokens += int(tokens)
            parsed = parse_proposer_output(text, s.question)
            key = _norm(parsed.query)
            repeated = key in s.query_cache
            if not repeated:                               # a repeated query reuses its BM25 result
                s.query_cache[key] = list(retrieve(parsed.query, cfg.top_k))
                s.result.retriever_calls += 1
            docs = s.query_cache[key]
            context = _union(o["anc_docs"], docs)
            grade_key = tuple(sorted(context))
            if not context:                                # nothing to grade: score 0, no model call
                s.grade_cache[grade_key] = (0, "No abstracts were retrieved for this query.", True, "")
            elif grade_key not in s.grade_cache:           # one search expands one node per step
                grade_prompts.append(evaluator_prompt(s.question, [doc_text(d) for d in context],
                                                      short=cfg.short_prompts))
                grade_owners.append((s, grade_key))
            expansions.append((s, node, grade_key, dict(
                query=parsed.query, docs=docs, context_docs=context, observation=o, proposer_prompt=prompt,
                proposer_output=text, well_formed=parsed.well_formed, repeated=repeated)))
        grades = evaluator(grade_prompts) if grade_prompts else []
        for (s, key), (text, tokens) in zip(grade_owners, grades):
            s.result.evaluator_calls += 1
            s.result.evaluator_tokens += int(tokens)
            g = parse_evaluator_output(text, cfg.missing_score)
            s.grade_cache[key] = (g.score, g.feedback, g.score_parsed, text)
        for s, node, key, state in expansions:
            score, feedback, parsed_ok, text = s.grade_cache[key]
            s.add(node, score=score, feedback=feedback, score_parsed=parsed_ok, evaluator_output=text, **state)
    return [s.finish() for s in searches]


def run_serts(questions, proposer, evaluator, retrieve, doc_text, cfg: SeRTSConfig = SeRTSConfig()):
    """Alg. 1 for each question (see ``run_search``)."""
    return run_search(questions, proposer, evaluator, retrieve, doc_text, cfg, reflection=False)


def run_self_reflection(questions, proposer, evaluator, retrieve, doc_text, cfg: SeRTSConfig = SeRTSConfig()):
    """Alg. 2 (Tab. 11 prompt, no siblings, no selection) for each question (see ``run_search``)."""
    return run_search(questions, proposer, evaluator, retrieve, doc_text, cfg, reflection=True)
