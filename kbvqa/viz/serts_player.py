"""A kernel-free slider over a SeRTS search: the query tree after each expansion (SeRTS Alg. 1).

``serts_snapshot(result, upto)`` rebuilds the tree as it stood after its first ``upto`` expansions:
the same nodes in creation order, with the visits N(s) and backed-up sums R(s) of Eq. 1 recomputed
from only those nodes, and the best node among them. It needs no configuration: a node's own
backed-up reward is its R(s) minus its children's (backpropagation adds a new node's reward to the
node and to every ancestor, so R(s) = own reward + sum of the children's R). The early-stop flag
is set only on the last snapshot of a search that stopped early.

``serts_tree_html(result, ...)`` draws each snapshot with ``draw_serts_tree`` (at the final tree's
positions, so nodes keep their place and every frame has the same size) and puts the PNG frames,
as wide as the book's content column, behind the same kernel-free HTML slider the RCTS viewer uses
(``frames.frames_html``), so it works in the built book. ``anytime_recall(results, gold, upto)``
is the recall of the documents each search would return had it stopped after ``upto`` expansions
(chapter 16's curve over Sim).
Leaves out: the search itself, a live ipywidgets version.
"""
from __future__ import annotations

from dataclasses import replace

from kbvqa.serts.evaluate import retrieval_scores
from kbvqa.serts.search import SeRTSNode, SeRTSResult
from kbvqa.viz.frames import figure_png, frames_html
from kbvqa.viz.serts import draw_serts_tree
from kbvqa.viz.trees import tree_layout
from kbvqa.viz.trees_player import frame_rollouts

__all__ = ["own_rewards", "serts_snapshot", "serts_tree_html"]


def own_rewards(result: SeRTSResult) -> dict[int, float]:
    """Node id -> the scaled reward backed up when that node was created (0 for the root)."""
    return {n.id: (n.value_sum - sum(c.value_sum for c in n.children)) if n.parent is not None else 0.0
            for n in result.nodes}


def serts_snapshot(result: SeRTSResult, upto: int) -> SeRTSResult:
    """The search after its first ``upto`` expansions (0: the root alone), as a new ``SeRTSResult``."""
    expansions = len(result.nodes) - 1
    if not isinstance(upto, int) or not 0 <= upto <= expansions:
        raise ValueError(f"upto must be an int in [0, {expansions}], got {upto!r}")
    reward = own_rewards(result)
    copies: dict[int, SeRTSNode] = {}
    for node in result.nodes[: upto + 1]:
        parent = copies[node.parent.id] if node.parent is not None else None
        copy = replace(node, parent=parent, children=[], visits=0, value_sum=0.0)
        copies[node.id] = copy
        if parent is not None:
            parent.children.append(copy)
            for anc in copy.path():                      # backpropagation, replayed
                anc.visits += 1
                anc.value_sum += reward[node.id]
    nodes = list(copies.values())
    graded = nodes[1:]
    best = max(graded, key=lambda n: (n.score, -n.id)) if graded else nodes[0]
    last = upto == expansions
    return SeRTSResult(result.question, nodes[0], nodes, best, list(best.context_docs),
                       result.stopped_early and last, result.simulations if last else upto)


def serts_tree_html(result: SeRTSResult, max_frames: int | None = 12, dpi: float | None = None, title: str = "",
                    **draw_kwargs):
    """``IPython.display.HTML``: the tree after each expansion, behind a slider that needs no kernel.

    Frames are at ``dpi`` but never narrower than the content column (``frames.figure_png``).
    In every frame but the last, "sims" counts expansions (spent simulations are not replayed)."""
    from IPython.display import HTML

    expansions = len(result.nodes) - 1
    steps = [p + 1 for p in frame_rollouts(expansions, max_frames)] if expansions else [0]
    draw_kwargs.setdefault("positions", tree_layout({n.id: n.parent.id if n.parent is not None else None
                                                     for n in result.nodes}))
    frames = []
    for upto in steps:
        frames.append(figure_png(draw_serts_tree(serts_snapshot(result, upto), **draw_kwargs), dpi))
    labels = [f"after expansion {p} of {expansions}" for p in steps]
    return HTML(frames_html(frames, labels, title or "drag the slider to step through the expansions"))


def anytime_recall(results, gold_lists, upto: int) -> float:
    """Mean recall against ``gold_lists`` of the best node's documents after at most ``upto``
    expansions of each search (a search that stopped earlier keeps its final answer)."""

    if upto < 1:
        raise ValueError(f"upto must be >= 1, got {upto}")
    docs = [serts_snapshot(r, min(upto, len(r.nodes) - 1)).docs for r in results]
    return retrieval_scores(docs, gold_lists)["recall"]
