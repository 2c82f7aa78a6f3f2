"""The MCTS-HR search tree of RCTS (§3.4, App. A): nodes, their export, and the backup rules.

A node is a *sequence of in-context examples*: the root holds none (the zero-shot query), a child
appends one action -- the index of a retrieved candidate in the action space of Eq. 5 -- to its
parent's sequence, and a leaf at depth K holds the K examples of one K-shot prompt. Each node keeps
its value ``Q``, its visit count ``N``, the rewards of the rollouts that were backed up through it,
and, on a leaf, the simulated response, its parsed answer and the rewards Q_S, Q_M (Eq. 7-9).

Node ids are stable and readable: ``"root"``, ``"root.3"``, ``"root.3.0"`` -- the candidate indices
(retrieval ranks, 0-based) on the path. Siblings never repeat an action, so ids are unique.

Backup rules (``BACKPROP_RULES``), each called as ``rule(leaf, reward)``:

- ``backprop_rcts``      the paper's Eq. 10. The leaf takes Q = reward and N += 1; then for every
                         ancestor p, with c the child just updated (its *new* Q):
                         Q'(p) = 1/2 * ((Q(p) N(p) + Q(c)) / (N(p) + 1) + max_{i in Children(p)} Q(i)),
                         and N(p) += 1.
- ``backprop_mean``      the plain MCTS backup, for contrast: every node on the path gets N += 1 and
                         Q = the mean of the rewards backed up through it.
- ``backprop_official``  the official code (yannqi/RCTS-RAG, ``MCTSr_Reranking.backpropagate``): the
                         leaf's Q is the mean of min and mean of its reward samples (= the reward for
                         one sample) and its visits are never incremented; every ancestor uses
                         Eq. 10's form with the *leaf's* Q in place of Q(c) at every level.

What this file leaves out: selection (UCT, ``kbvqa.search.uct``), expansion and the search loop
(``kbvqa.rcts.mcts_hr``), rewards (``kbvqa.rcts.rewards``), drawing (``kbvqa.viz``).
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

ORIGINS = ("root", "greedy", "sampled", "rollout")   # what created a node (see ``Node.origin``)


@dataclass(eq=False)
class Node:
    """One node of the MCTS-HR tree. Compare nodes by identity; ``node_id`` is their stable name."""

    actions: tuple[int, ...] = ()          # candidate indices on the path, root -> this node
    example_ids: tuple[str, ...] = ()      # the ids of those candidates (KB example ids)
    parent: Node | None = field(default=None, repr=False)
    children: list[Node] = field(default_factory=list, repr=False)
    Q: float = 0.0                         # value
    N: int = 0                             # visits
    rewards: list[float] = field(default_factory=list)   # rewards backed up through this node
    rollouts: list[int] = field(default_factory=list)    # index of each of those rollouts
    origin: str = "rollout"                # root | greedy / sampled (early-stop reference paths) | rollout
    created_at: int = -1                   # rollout index that created the node (-1: before any)
    response: str | None = None            # simulated K-shot response (leaf) or zero-shot one (root)
    answer: str | None = None              # its parsed answer (option letter), None if unparsable
    q_self: float | None = None            # Q_S of the leaf (Eq. 7)
    q_mutual: float | None = None          # Q_M of the leaf (Eq. 8)
    reward_samples: list[float] = field(default_factory=list)  # official rule: the leaf's raw rewards

    def __post_init__(self):
        if self.origin not in ORIGINS:
            raise ValueError(f"origin must be one of {ORIGINS}, got {self.origin!r}")
        if len(self.example_ids) not in (0, len(self.actions)):
            raise ValueError("example_ids must be empty or one per action")

    # ---------------------------------------------------------------------------- structure
    @property
    def node_id(self) -> str:
        return ".".join(["root", *map(str, self.actions)])

    @property
    def depth(self) -> int:
        return len(self.actions)

    @property
    def is_root(self) -> bool:
        return self.parent is None

    @property
    def action(self) -> int | None:
        """The candidate index this node added (None at the root)."""
        return self.actions[-1] if self.actions else None

    def add_child(self, action: int, example_id: str = "", origin: str = "rollout",
                  created_at: int = -1) -> Node:
        """Append a child that adds candidate ``action``; a repeated action raises ``ValueError``."""
        if action in self.actions or any(c.action == action for c in self.children):
            raise ValueError(f"action {action} is already on the path or a sibling of {self.node_id}")
        ids = self.example_ids + (example_id,) if (example_id or self.example_ids) else ()
        child = Node(actions=self.actions + (action,), example_ids=ids, parent=self,
                     origin=origin, created_at=created_at)
        self.children.append(child)
        return child

    def path(self) -> list[Node]:
        """Nodes from the root down to this one (both included)."""
        out, node = [], self
        while node is not None:
            out.append(node)
            node = node.parent
        return out[::-1]

    def to_dict(self, recursive: bool = True) -> dict[str, Any]:
        """Plain-dict view (JSON-ready); ``recursive`` nests the children's dicts."""
        out = {"node_id": self.node_id, "parent_id": None if self.parent is None else self.parent.node_id,
               "depth": self.depth, "actions": list(self.actions), "example_ids": list(self.example_ids),
               "Q": float(self.Q), "N": int(self.N), "rewards": [float(r) for r in self.rewards],
               "rollouts": list(self.rollouts), "origin": self.origin, "created_at": self.created_at,
               "response": self.response, "answer": self.answer, "q_self": self.q_self,
               "q_mutual": self.q_mutual}
        if recursive:
            out["children"] = [c.to_dict() for c in self.children]
        return out


def iter_nodes(root: Node) -> Iterator[Node]:
    """Breadth-first, children in creation order."""
    todo = deque([root])
    while todo:
        node = todo.popleft()
        yield node
        todo.extend(node.children)


def leaves(root: Node, depth: int | None = None) -> list[Node]:
    """Childless nodes other than the root (``depth`` keeps only those at that depth)."""
    return [n for n in iter_nodes(root)
            if not n.children and not n.is_root and (depth is None or n.depth == depth)]


def tree_to_records(root: Node, uct: Callable[[Node], float] | None = None) -> list[dict[str, Any]]:
    """One flat dict per node (breadth-first), with ``parent_id`` links: the table a viewer draws.
    ``uct(node)`` -- e.g. ``lambda n: uct_score(...)`` -- adds a ``"uct"`` column (None at the root)."""
    records = []
    for node in iter_nodes(root):
        rec = node.to_dict(recursive=False)
        rec["n_children"] = len(node.children)
        if uct is not None:
            rec["uct"] = None if node.is_root else float(uct(node))
        records.append(rec)
    return records


# ------------------------------------------------------------------------------- backup rules
def _record(node: Node, reward: float, rollout: int) -> None:
    node.rewards.append(float(reward))
    node.rollouts.append(rollout)


def _check_leaf(leaf: Node, reward: float) -> float:
    if leaf.is_root:
        raise ValueError("backprop starts at a leaf, not at the root")
    reward = float(reward)
    if not 0.0 <= reward <= 1.0:
        raise ValueError(f"reward must lie in [0, 1], got {reward}")
    return reward


def eq10_update(q_parent: float, n_parent: int, q_child: float, best_child_q: float) -> float:
    """Eq. 10: Q'(p) = 1/2 * ((Q(p) N(p) + Q(c)) / (N(p) + 1) + max_i Q(i)).

    Appendix: RCTS | Eq. 10 | tests/test_search_tree.py::test_eq10_by_hand | rcts-eq10
    """
    return 0.5 * ((q_parent * n_parent + q_child) / (n_parent + 1) + best_child_q)


def backprop_rcts(leaf: Node, reward: float, rollout: int = -1) -> None:
    """Paper Eq. 10 (see the module docstring): the changed child's new Q climbs level by level."""
    reward = _check_leaf(leaf, reward)
    leaf.Q, leaf.N = reward, leaf.N + 1
    _record(leaf, reward, rollout)
    child = leaf
    while child.parent is not None:
        parent = child.parent
        best = max(c.Q for c in parent.children)
        parent.Q = eq10_update(parent.Q, parent.N, child.Q, best)
        parent.N += 1
        _record(parent, reward, rollout)
        child = parent


def backprop_mean(leaf: Node, reward: float, rollout: int = -1) -> None:
    """Plain MCTS backup: N += 1 and Q = running mean of the rewards, on every node of the path."""
    reward = _check_leaf(leaf, reward)
    for node in leaf.path()[::-1]:
        node.N += 1
        node.Q += (reward - node.Q) / node.N
        _record(node, reward, rollout)


def backprop_official(leaf: Node, reward: float, rollout: int = -1) -> None:
    """The official code: leaf Q = (min + mean)/2 of its reward samples, leaf N unchanged; each
    ancestor uses Eq. 10's form with the *leaf's* Q at every level."""
    reward = _check_leaf(leaf, reward)
    leaf.reward_samples.append(reward)
    samples = leaf.reward_samples
    leaf.Q = 0.5 * (min(samples) + sum(samples) / len(samples))
    _record(leaf, reward, rollout)
    parent = leaf.parent
    while parent is not None:
        best = max(c.Q for c in parent.children)
        parent.Q = eq10_update(parent.Q, parent.N, leaf.Q, best)
        parent.N += 1
        _record(parent, reward, rollout)
        parent = parent.parent


BACKPROP_RULES: dict[str, Callable[..., None]] = {
    "paper": backprop_rcts, "mean": backprop_mean, "official": backprop_official}


def best_path_official(root: Node) -> list[Node]:
    """Official final choice: the root-to-leaf path with the largest sum of Q (first found on ties)."""
    def walk(node: Node) -> tuple[float, list[Node]]:
        if not node.children:
            return node.Q, [node]
        best_score, best_path = float("-inf"), []
        for child in node.children:
            score, path = walk(child)
            if score > best_score:
                best_score, best_path = score, path
        return node.Q + best_score, [node] + best_path
    return walk(root)[1]


def best_leaf(root: Node, depth: int | None = None) -> Node | None:
    """The leaf with the largest Q (first created on ties): the plain reading of the paper, which
    names no final rule. None when the tree has no leaf."""
    found = leaves(root, depth)
    return max(found, key=lambda n: n.Q) if found else None
