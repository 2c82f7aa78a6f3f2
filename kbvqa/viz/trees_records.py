"""Read a ``kbvqa.search`` tree export into what the tree viewer draws, at any rollout.

``tree_view`` accepts the flat node records of ``kbvqa.rcts.tree.tree_to_records`` (a list of
dicts with ``node_id``, ``parent_id``, ``depth``, ``example_ids``, ``Q``, ``N``, ``rewards``,
``rollouts``, ``answer``, optional ``uct``), a dict holding them under ``"nodes"`` or
``"records"`` (plus an optional ``"config"`` with ``backprop``, ``uct`` and ``c``), a root
``Node``, or an object with a ``tree_records``/``records`` attribute and a ``config`` (an
``RCTSResult``). The rollouts are recovered from the nodes: rollout r's path is every node whose
``rollouts`` list holds r, its reward the one the deepest of them recorded for r.

``tree_state(view, r)`` gives the tree after rollout r: the nodes that existed (``created_at <= r``),
their Q and N, UCT (App. A Eq. 11, or the variant the config names) and the rewards seen so far.
Q and N of an earlier rollout are not in the export, so they are *replayed*: a fresh tree is
rebuilt from the node ids and the backup rule named in the config
(``kbvqa.rcts.tree.BACKPROP_RULES``; the paper's Eq. 10 by default) is applied rollout by
rollout. ``replayed`` is True only when that replay does not end in the recorded final values
(then the last frame shows the recorded ones). Leaves out: drawing.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from kbvqa.rcts.tree import BACKPROP_RULES, Node, tree_to_records
from kbvqa.search.uct import UCT_VARIANTS, uct_score


@dataclass
class NodeView:
    """One node as the viewer needs it (final recorded values)."""

    id: str
    parent: str | None
    depth: int
    example_id: str | None      # the example this node adds (last of the path's example ids)
    q: float
    n: int
    uct: float | None
    rewards: list[tuple[int, float]]    # (rollout index, reward) backed up through this node
    created_at: int                     # rollout that created it (-1: before any rollout)
    answer: str | None = None
    example: Any = None                 # an example object/dict when the record carries one


@dataclass
class RolloutView:
    index: int                  # the search's rollout index
    path: list[str]             # node ids root -> leaf
    reward: float | None
    answer: str | None


@dataclass
class TreeView:
    nodes: dict[str, NodeView]                   # in record order (children in creation order)
    rollouts: list[RolloutView] = field(default_factory=list)
    backprop: str = "paper"
    c: float = 0.5              # exploration constant of Eq. 11 used to recompute UCT
    uct: str = "paper"          # UCT variant (``kbvqa.search.uct.UCT_VARIANTS``)


def _uct(q: float, n: int, n_parent: int, c: float, variant: str) -> float:
    """UCT of a node as the search scored it; the paper's Eq. 11 when the variant is unknown."""

    if variant in UCT_VARIANTS:
        return float(uct_score(q, n, n_parent, c, variant))
    return q + c * math.sqrt((math.log(max(n_parent, 1)) + 1.0) / (n + 1e-6))


def _records_of(tree_records) -> tuple[list[dict], dict]:
    if tree_records is None:
        return [], {}
    if hasattr(tree_records, "children") and hasattr(tree_records, "actions"):   # a root Node

        return tree_to_records(tree_records), {}
    for attr in ("tree_records", "records"):
        if hasattr(tree_records, attr):
            config = getattr(tree_records, "config", None)
            config = vars(config) if config is not None and hasattr(config, "__dict__") else (config or {})
            return list(getattr(tree_records, attr)), dict(config)
    if isinstance(tree_records, dict):
        nodes = tree_records.get("nodes", tree_records.get("records"))
        if nodes is None:
            raise ValueError("a tree dict needs its node records under 'nodes' or 'records'")
        return list(nodes), dict(tree_records.get("config") or {})
    if isinstance(tree_records, (list, tuple)):
        return list(tree_records), {}
    raise ValueError(f"cannot read a search tree from {type(tree_records).__name__}")


def tree_view(tree_records) -> TreeView:
    """``TreeView`` of a search export (see the module docstring); ``None`` or ``[]``: an empty tree."""
    records, config = _records_of(tree_records)
    nodes: dict[str, NodeView] = {}
    for rec in records:
        if not isinstance(rec, dict) or "node_id" not in rec:
            raise ValueError("every node record must be a dict with a 'node_id'")
        ids = rec.get("example_ids") or []
        rewards = list(zip(rec.get("rollouts") or [], rec.get("rewards") or []))
        nodes[rec["node_id"]] = NodeView(
            id=rec["node_id"], parent=rec.get("parent_id"), depth=int(rec.get("depth", 0)),
            example_id=ids[-1] if ids else None, q=float(rec.get("Q", 0.0)), n=int(rec.get("N", 0)),
            uct=rec.get("uct"), rewards=[(int(r), float(v)) for r, v in rewards],
            created_at=int(rec.get("created_at", -1)), answer=rec.get("answer"), example=rec.get("example"))
    indices = sorted({r for node in nodes.values() for r, _ in node.rewards})
    rollouts = []
    for r in indices:
        path = sorted((n for n in nodes.values() if any(i == r for i, _ in n.rewards)), key=lambda n: n.depth)
        leaf = path[-1]
        reward = next(v for i, v in leaf.rewards if i == r)
        rollouts.append(RolloutView(index=r, path=[n.id for n in path], reward=reward, answer=leaf.answer))
    backprop = str(config.get("backprop", config.get("backprop_rule", "paper")))
    c = config.get("c", config.get("exploration", 0.5))
    return TreeView(nodes=nodes, rollouts=rollouts, backprop=backprop, c=float(c),
                    uct=str(config.get("uct", "paper")))


def _replay(view: TreeView, upto: int) -> dict[str, tuple[float, int]] | None:
    """(Q, N) of every node after rollout position ``upto``, by re-running the backup rule; None
    when the rule is unknown or the records cannot be rebuilt."""

    rule = BACKPROP_RULES.get(view.backprop)
    if rule is None:
        return None
    built: dict[str, Node] = {}
    try:
        for node in view.nodes.values():
            if node.parent is None:
                built[node.id] = Node(origin="root")
            else:
                action = int(node.id.rsplit(".", 1)[1])
                built[node.id] = built[node.parent].add_child(action)
        for rollout in view.rollouts[: upto + 1]:
            rule(built[rollout.path[-1]], rollout.reward, rollout.index)
    except (KeyError, ValueError, IndexError, TypeError):
        return None
    return {nid: (n.Q, n.N) for nid, n in built.items()}


def tree_state(view: TreeView, upto_rollout: int | None = None) -> dict:
    """The tree after rollout position ``upto_rollout`` (0-based over ``view.rollouts``; ``None``:
    the last; -1 or no rollouts: before any). Returns ``{"upto", "nodes", "children", "values",
    "path", "replayed"}`` where ``values[id] = {"q", "n", "uct", "rewards"}``."""
    last = len(view.rollouts) - 1
    upto = last if upto_rollout is None else upto_rollout
    if not isinstance(upto, int) or not -1 <= upto <= last:
        raise ValueError(f"upto_rollout must be an int in [-1, {last}] or None, got {upto_rollout!r}")
    index = view.rollouts[upto].index if upto >= 0 else -1
    visible = [nid for nid, n in view.nodes.items() if n.created_at <= index or n.parent is None
               or (upto == last)]
    visible = [nid for nid in visible if view.nodes[nid].parent is None or view.nodes[nid].parent in visible]
    replayed = False
    if upto == last:
        values = {nid: (n.q, n.n) for nid, n in view.nodes.items()}
    else:
        values = _replay(view, upto)
        final = _replay(view, last)
        recorded = {nid: (n.q, n.n) for nid, n in view.nodes.items()}
        if values is None or final is None or any(
                abs(final[k][0] - recorded[k][0]) > 1e-6 or final[k][1] != recorded[k][1] for k in recorded):
            replayed = True
            values = _mean_values(view, index) if values is None else values
    children: dict[str, list[str]] = {nid: [] for nid in visible}
    for nid in visible:
        parent = view.nodes[nid].parent
        if parent in children:
            children[parent].append(nid)
    out = {}
    for nid in visible:
        node = view.nodes[nid]
        q, n = values[nid]
        parent_n = values[node.parent][1] if node.parent in values else 0
        if node.parent is None:
            uct = None
        elif upto == last and node.uct is not None:
            uct = float(node.uct)
        else:
            uct = _uct(q, n, parent_n, view.c, view.uct)
        out[nid] = {"q": float(q), "n": int(n), "uct": uct,
                    "rewards": [(r, v) for r, v in node.rewards if r <= index]}
    path = view.rollouts[upto].path if upto >= 0 else []
    return {"upto": upto, "nodes": visible, "children": children, "values": out, "path": path,
            "replayed": replayed}


def _mean_values(view: TreeView, index: int) -> dict[str, tuple[float, int]]:
    """Fallback replay: N = rollouts through the node so far, Q = their mean reward."""
    values = {}
    for nid, node in view.nodes.items():
        seen = [v for r, v in node.rewards if r <= index]
        values[nid] = (sum(seen) / len(seen) if seen else 0.0, len(seen))
    return values
