"""MCTS-HR, the re-ranking search of RCTS (§3.4, App. A; Eq. 5-11), on retrieved candidates.

``rcts_search(vlm, query, candidates, config, prompt_builder)``: ``candidates`` are the top-N
retrieved knowledge-base examples with their similarity scores -- the action space of Eq. 5,
``A = {[x_i, s_i]}`` -- however they were retrieved. One search:

1. Early stop (``config.early_stop``, App. A; the official code): ONE model call simulates the
   zero-shot root, a greedy reference path (the top-K in retrieval order, = Vanilla-RAG) and a
   sampled one (Eq. 6). If the three parsed answers agree, the greedy answer is returned. Else both
   reference leaves are rewarded (one call) and backed up; they count as 2 of the P rollouts (the
   official code: 2 reference paths + 8 rollouts = 10 simulated leaves).
2. Each rollout: *selection* among every node that is not fully expanded (depth < K, fewer than
   ``width`` children, an unused action left), by UCT (Eq. 11 or the official variant; the root
   scores ``OFFICIAL_ROOT_UCT``, as in the code) with argmax or the official sampling; *expansion*
   down to depth K, each step drawing an action from A_valid = A minus the path minus the
   siblings' actions by Eq. 6, P(a_i) = s_i / sum_{valid} s_j; *simulation* of the K-shot prompt
   (one call); *rewards* Q_S, Q_M, Q (Eq. 7-9, one call); *backup* (Eq. 10, mean or official).
   ``rollouts_per_step = B > 1`` selects and expands B leaves in turn (each selection sees the nodes
   the previous ones added, unvisited; no backup between them) and simulates / rewards them in one
   call each: leaf-parallel MCTS, B times fewer calls, a slightly different search.
3. Stop after P simulated leaves or when every combination (within ``width``) has been tried;
   then the final choice: the path with the largest sum of Q (official) or the best leaf.

Defined edge cases: an empty retrieval answers zero-shot (one call); fewer than K candidates use
them all (depth = their number). Siblings never repeat an action (the official code may, which
wastes a simulation on an identical prompt).

What this file leaves out: the node structure and backups (``tree``), UCT (``uct``), the prompts
(``kbvqa.rcts.prompts``), the rewards (``kbvqa.rcts.rewards``), the baselines (``kbvqa.rcts.baselines``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kbvqa.rcts.prompts import CallCounter, MCPromptBuilder, PromptBuilder, generate_batched
from kbvqa.rcts.rewards import MUTUAL_MODES, score_leaves
from kbvqa.rcts.tree import BACKPROP_RULES, Node, best_leaf, best_path_official, iter_nodes, tree_to_records
from kbvqa.search.uct import OFFICIAL_ROOT_UCT, SELECTION_RULES, UCT_VARIANTS, select_index, uct_score

EXPANSION_RULES = ("paper", "official")
REWARD_DECODINGS = ("line", "answer")
FINAL_RULES = ("path_sum", "max_leaf")


@dataclass(frozen=True)
class RCTSConfig:
    """MCTS-HR hyper-parameters; defaults are the paper's (§4.2), official-code values noted."""

    K: int = 3                   # examples per prompt = tree depth (paper 3)
    N: int = 20                  # retrieved candidates kept as actions (Eq. 5; paper 20)
    width: int = 3               # max children per node (paper and code 3)
    P: int = 10                  # simulated leaves, reference paths included (paper 10; code 2 + 8)
    c: float = 0.5               # UCT exploration constant (paper: unstated; code 0.5)
    alpha: float = 0.2           # Eq. 9 weight of Q_S (paper 0.2; code self 0.2 / mutual 0.8)
    n_self: int = 5              # N_s samples for Eq. 7 (paper 5)
    n_mutual: int = 5            # N_m samples for Eq. 8 ("official": samples per reference)
    n_mutual_refs: int = 5       # "official" mutual: top retrieved references used (code 5)
    mutual: str = "paper"        # "paper" (the path's examples) | "official" (top retrieved)
    backprop: str = "paper"      # "paper" (Eq. 10) | "mean" | "official"
    selection: str = "argmax"    # "argmax" (paper) | "sample" (official: prob. proportional to UCT)
    uct: str = "paper"           # Eq. 11 "paper" | "official" (see kbvqa.search.uct)
    expansion: str = "paper"     # Eq. 6 on the scores as given | "official": min-max + 1e-3 first
    final: str = "path_sum"      # "path_sum" (official) | "max_leaf" (the paper names no rule)
    early_stop: bool = True      # zero-shot + greedy + sampled reference paths agree -> stop
    temperature: float = 0.7     # sampling temperature of the reward samples (Eq. 7-8)
    sim_temperature: float = 0.0  # the branch simulation (0: greedy, one response per prompt)
    max_new_tokens: int = 64     # tokens of a simulated response (answer + reasoning)
    reward_max_new_tokens: int = 8   # tokens of a reward sample (only "The answer is X." is read)
    reward_stop: tuple[str, ...] = ("\n",)  # cut reward samples here; () when answers follow a
                                 # reasoning part (prompt builder with_context=True; raise the tokens)
    reward_decoding: str = "line"  # "line": every reward sample as above (the committed runs; issue 52
                                 # found it cuts each with-context sample at "**THOUGHT PROCESS:**", before
                                 # any letter, so Q_M = 0) | "answer": with-context prompts sample
                                 # reward_answer_max_new_tokens tokens up to reward_answer_stop, enough to
                                 # reach the FINAL ANSWER line; prompts without context keep the line
    reward_answer_max_new_tokens: int = 96   # "answer": a reasoning + "The answer is X." fits (issue 52)
    reward_answer_stop: tuple[str, ...] = ("BECAUSE",)  # "answer": stop after the letter, at the reason
    rollouts_per_step: int = 1   # leaves selected+expanded before one batched simulate/reward pair
                                 # (1: the paper's sequential search; >1: leaf-parallel, fewer calls)
    batch_size: int = 16         # rows per forward pass inside one generate call
    share_prefix: bool = False   # prompts with a common opening prefill it once (kbvqa.models.prefix): a leaf's
                                 # mutual prompts, sibling paths; greedy answers unchanged, samples other draws
    seed: int = 0                # expansion/selection draws and model sampling

    def __post_init__(self):
        for name in ("K", "N", "width", "P", "n_self", "n_mutual", "n_mutual_refs", "max_new_tokens",
                     "reward_max_new_tokens", "reward_answer_max_new_tokens", "batch_size", "rollouts_per_step"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"RCTSConfig.{name} must be an int >= 1, got {value!r}")
        if self.K > self.N:
            raise ValueError(f"K (examples per prompt, {self.K}) cannot exceed N (candidates, {self.N})")
        if not 0.0 <= self.alpha <= 1.0:
            raise ValueError(f"alpha must lie in [0, 1], got {self.alpha}")
        if not (np.isfinite(self.c) and self.c >= 0):
            raise ValueError(f"c must be a finite number >= 0, got {self.c}")
        for name, value in (("temperature", self.temperature), ("sim_temperature", self.sim_temperature)):
            if not value >= 0:
                raise ValueError(f"{name} must be >= 0, got {value}")
        for name, allowed in (("mutual", MUTUAL_MODES), ("backprop", tuple(BACKPROP_RULES)),
                              ("selection", SELECTION_RULES), ("uct", UCT_VARIANTS),
                              ("expansion", EXPANSION_RULES), ("final", FINAL_RULES)):
            if getattr(self, name) not in allowed:
                raise ValueError(f"RCTSConfig.{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.reward_decoding not in REWARD_DECODINGS:
            raise ValueError(f"RCTSConfig.reward_decoding must be one of {REWARD_DECODINGS}, "
                             f"got {self.reward_decoding!r}")
        if self.reward_decoding == "answer" and any("\n" in stop for stop in self.reward_answer_stop):
            raise ValueError("RCTSConfig.reward_answer_stop must not hold a newline: with a reasoning context "
                             "the answer comes lines after the sample starts (issue 52); use e.g. ('BECAUSE',)")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")


@dataclass
class RolloutRecord:
    """One simulated leaf: which rollout, how it was made, its rewards."""

    index: int
    origin: str                 # "greedy" | "sampled" (reference paths) | "rollout"
    node_id: str
    actions: tuple[int, ...]
    selected_id: str            # the node selection picked before expanding ("root" for references)
    answer: str | None
    q_self: float
    q_mutual: float
    reward: float


@dataclass
class RCTSResult:
    answer: str | None                 # the final answer (option letter) or None if unparsable
    response: str                      # the chosen leaf's (or zero-shot / greedy) response text
    examples: list[Any]                # the re-ranked examples of the chosen path
    actions: tuple[int, ...]           # their candidate indices
    root: Node
    rollouts: list[RolloutRecord] = field(default_factory=list)
    calls: int = 0                     # vlm.generate calls
    completions: int = 0               # texts generated (prompts x samples)
    early_stopped: bool = False
    stop_reason: str = ""              # early_stop | rollouts | exhausted | empty_retrieval
    zero_shot_answer: str | None = None
    counter: CallCounter | None = None
    config: RCTSConfig | None = None

    @property
    def tree_records(self) -> list[dict]:
        """``tree_to_records`` of the tree with a UCT column (the config's variant and c)."""
        cfg = self.config or RCTSConfig()
        return tree_to_records(self.root, uct=lambda n: float(uct_score(n.Q, n.N, n.parent.N, cfg.c, cfg.uct)))


def expansion_probabilities(scores: Sequence[float], rule: str = "paper") -> np.ndarray:
    """Eq. 6 over the valid actions' similarity scores. "paper": s_i / sum_j s_j on the scores as
    given (negative ones count as 0; all zero -> uniform); "official": min-max normalised over the
    valid set plus 1e-3 first (``_min_max_normalize``), which favours the top candidates.

    Appendix: RCTS | Eq. 6 | tests/test_search_rcts.py::test_eq6_sampling_follows_similarity_proportions | rcts-eq6"""
    s = np.asarray(scores, dtype=float).ravel()
    if s.size == 0:
        raise ValueError("no valid action to expand")
    if not np.isfinite(s).all():
        raise ValueError("similarity scores must be finite")
    if rule == "official":
        s = (s - s.min()) / (s.max() - s.min() + 1e-3) + 1e-3
    elif rule != "paper":
        raise ValueError(f"expansion rule must be one of {EXPANSION_RULES}, got {rule!r}")
    w = np.clip(s, 0.0, None)
    return w / w.sum() if w.sum() > 0 else np.full(s.size, 1.0 / s.size)


def reward_generation(config: RCTSConfig, with_context: bool, rationale_first: bool = False) -> dict:
    """``max_new_tokens`` and ``stop`` of the reward samples (Eq. 7-8) for prompts with or without a
    reasoning context, by ``config.reward_decoding`` (see ``RCTSConfig``). ``rationale_first``: the
    response format over a plain knowledge base ("<reasoning> ... The answer is X.", issue 52) puts the
    letter last with or without a context, so "answer" decoding then applies to every prompt."""
    if config.reward_decoding == "answer" and (with_context or rationale_first):
        return {"max_new_tokens": config.reward_answer_max_new_tokens, "stop": list(config.reward_answer_stop) or None}
    return {"max_new_tokens": config.reward_max_new_tokens, "stop": list(config.reward_stop) or None}


class SearchState:
    """One search's state, with each MCTS-HR step as a method a reader can call in turn:
    ``select()`` -> a node, ``expand(node, "sample" | "greedy", origin, index)`` -> a new leaf,
    ``simulate([leaf.actions, ...])`` -> responses (one call), ``reward_and_backup([(leaf,
    response)], [selected_id])`` -> Eq. 7-10 (one call). ``rcts_search`` chains them."""

    def __init__(self, vlm, query, candidates, config: RCTSConfig, builder: PromptBuilder):
        pairs = [(ex, float(s)) for ex, s in candidates]
        order = sorted(range(len(pairs)), key=lambda i: -pairs[i][1])   # stable: ties keep order
        pairs = [pairs[i] for i in order][: config.N]
        self.examples = [ex for ex, _ in pairs]
        self.scores = np.array([s for _, s in pairs], dtype=float)
        self.vlm, self.query, self.cfg, self.builder = vlm, query, config, builder
        self.depth = min(config.K, len(pairs))
        self.rng = np.random.default_rng(config.seed)
        self.counter = CallCounter()
        self.root = Node(origin="root")
        self.records: list[RolloutRecord] = []
        self.backup = BACKPROP_RULES[config.backprop]

    # -------------------------------------------------------------------------- model calls
    def _seed(self) -> int:
        return self.cfg.seed * 1_000 + self.counter.calls

    def simulate(self, paths: list[list[int]], zero_shot: bool = False) -> list[str]:
        prompts = [(self.builder.kshot(self.query, []), 1)] if zero_shot else []
        prompts += [(self.builder.kshot(self.query, [self.examples[a] for a in p]), 1) for p in paths]
        shared = {"share_prefix": True} if self.cfg.share_prefix else {}
        texts = generate_batched(self.vlm, prompts, self.counter, "simulate",
                                 temperature=self.cfg.sim_temperature, max_new_tokens=self.cfg.max_new_tokens,
                                 seed=self._seed(), batch_size=self.cfg.batch_size, **shared)
        return [t[0] for t in texts]

    def reward_and_backup(self, leaves: list[tuple[Node, str]], selected: list[str]) -> None:
        cfg = self.cfg
        scores = score_leaves(
            self.vlm, self.builder, self.query,
            [(resp, [self.examples[a] for a in leaf.actions]) for leaf, resp in leaves], self.examples,
            alpha=cfg.alpha, n_self=cfg.n_self, n_mutual=cfg.n_mutual, mutual=cfg.mutual,
            n_refs=cfg.n_mutual_refs, counter=self.counter, temperature=cfg.temperature,
            **reward_generation(cfg, getattr(self.builder, "with_context", False),
                                getattr(self.builder, "plain_kb", False)), seed=self._seed(),
            batch_size=cfg.batch_size, share_prefix=cfg.share_prefix)
        for (leaf, resp), score, sel in zip(leaves, scores, selected):
            index = len(self.records)
            leaf.response, leaf.answer = resp, score.answer
            leaf.q_self, leaf.q_mutual = score.q_self, score.q_mutual
            self.backup(leaf, score.reward, index)
            self.records.append(RolloutRecord(index, leaf.origin, leaf.node_id, leaf.actions, sel,
                                              score.answer, score.q_self, score.q_mutual, score.reward))

    # ----------------------------------------------------------------------- tree operations
    def valid_actions(self, node: Node) -> list[int]:
        used = set(node.actions) | {c.action for c in node.children}
        return [a for a in range(len(self.examples)) if a not in used]

    def expandable(self) -> list[Node]:
        return [n for n in iter_nodes(self.root) if n.depth < self.depth
                and len(n.children) < self.cfg.width and self.valid_actions(n)]

    def selection_scores(self) -> tuple[list[Node], list[float]]:
        """The nodes selection chooses among and their UCT (the root: ``OFFICIAL_ROOT_UCT``)."""
        nodes = self.expandable()
        return nodes, [OFFICIAL_ROOT_UCT if n.is_root else
                       float(uct_score(n.Q, n.N, n.parent.N, self.cfg.c, self.cfg.uct)) for n in nodes]

    def select(self) -> Node | None:
        """Argmax or sampling over ``selection_scores``; None when every combination was tried."""
        nodes, scores = self.selection_scores()
        return nodes[select_index(scores, self.cfg.selection, self.rng)] if nodes else None

    def expand(self, node: Node, how: str = "sample", origin: str = "rollout", index: int | None = None) -> Node:
        """Add one child per level down to depth K; ``how`` is "greedy" or "sample" (Eq. 6)."""
        index = len(self.records) if index is None else index
        while node.depth < self.depth:
            valid = self.valid_actions(node)
            if how == "greedy":
                action = valid[int(np.argmax(self.scores[valid]))]
            else:
                p = expansion_probabilities(self.scores[valid], self.cfg.expansion)
                action = valid[int(self.rng.choice(len(valid), p=p))]
            node = node.add_child(action, str(getattr(self.examples[action], "id", action)), origin, index)
        return node


def rcts_search(vlm, query: Any, candidates: Sequence[tuple[Any, float]], config: RCTSConfig | None = None,
                prompt_builder: PromptBuilder | None = None) -> RCTSResult:
    """Run MCTS-HR for ``query`` over ``candidates`` = [(example, similarity), ...] (see module doc).

    ``prompt_builder`` defaults to ``MCPromptBuilder()`` (multiple choice from ``Query.image``);
    pass ``MCPromptBuilder(world)`` for the toy world.
    """

    cfg = config or RCTSConfig()
    s = SearchState(vlm, query, candidates, cfg, prompt_builder or MCPromptBuilder())
    root = s.root
    if s.depth == 0:                                    # empty retrieval: answer zero-shot
        root.response = s.simulate([], zero_shot=True)[0]
        root.answer = s.builder.parse(root.response, query)
        return _result(s, root.answer, root.response, [root], "empty_retrieval", early=False)
    if cfg.early_stop:
        greedy = s.expand(root, "greedy", "greedy", 0)
        sampled = s.expand(root, "sample", "sampled", 1) if s.valid_actions(root) and cfg.P > 1 else None
        refs = [greedy] + ([sampled] if sampled is not None else [])
        texts = s.simulate([list(n.actions) for n in refs], zero_shot=True)
        root.response, root.answer = texts[0], s.builder.parse(texts[0], query)
        answers = [root.answer] + [s.builder.parse(t, query) for t in texts[1:]]
        if sampled is not None and answers[0] is not None and len(set(answers)) == 1:
            greedy.response, greedy.answer = texts[1], answers[1]
            return _result(s, answers[1], texts[1], greedy.path(), "early_stop", early=True)
        s.reward_and_backup(list(zip(refs, texts[1:])), ["root"] * len(refs))
    while len(s.records) < cfg.P:
        leaves, selected_ids = [], []
        for _ in range(min(cfg.rollouts_per_step, cfg.P - len(s.records))):
            selected = s.select()
            if selected is None:
                break
            leaves.append(s.expand(selected, "sample", "rollout", len(s.records) + len(leaves)))
            selected_ids.append(selected.node_id)
        if not leaves:
            return _finish(s, "exhausted")
        responses = s.simulate([list(leaf.actions) for leaf in leaves])
        s.reward_and_backup(list(zip(leaves, responses)), selected_ids)
    return _finish(s, "rollouts")


def _finish(s: SearchState, reason: str) -> RCTSResult:
    if s.cfg.final == "path_sum":
        path = best_path_official(s.root)
    else:
        leaf = best_leaf(s.root, s.depth)
        path = leaf.path() if leaf is not None else [s.root]
    leaf = path[-1]
    return _result(s, leaf.answer, leaf.response or "", path, reason, early=False)


def _result(s: SearchState, answer, response, path: list[Node], reason: str, early: bool) -> RCTSResult:
    actions = path[-1].actions
    return RCTSResult(answer=answer, response=response, examples=[s.examples[a] for a in actions],
                      actions=actions, root=s.root, rollouts=s.records, calls=s.counter.calls,
                      completions=s.counter.completions, early_stopped=early, stop_reason=reason,
                      zero_shot_answer=s.root.answer, counter=s.counter, config=s.cfg)
