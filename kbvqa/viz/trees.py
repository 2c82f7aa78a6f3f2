"""The RCTS search tree as a picture: one pure ``draw_rcts_tree`` behind every front-end.

``draw_rcts_tree(tree_records, upto_rollout=r)`` draws the MCTS-HR tree (RCTS §3.4, App. A) as it
stood after rollout ``r``: per node its value Q, visits N and UCT (App. A Eq. 11, or the official
variant when the search's config names it; an unvisited node shows ">>1"), the example the node
adds to the K-shot prompt (a thumbnail of its image and a short text), the rewards (Eq. 9) of the
rollouts that passed through it (the last ones that fit its column, at two decimals:
``reward_label``), and the path of rollout ``r`` in red (not necessarily the search's final
choice); a strip below shows the reward of each rollout so far.

The input is the export of ``kbvqa.search`` (``RCTSResult.tree_records`` or ``tree_to_records``);
``tree_view`` reads it and ``tree_state`` gives the values at any rollout (earlier rollouts are
replayed with the search's backup rule, see ``trees_records.py``).

The layout (``tree_layout``) is a pure function of the parent links: leaves take consecutive
columns in child order, a parent sits above the middle of its children, depth is the row.
Front-ends (a kernel-free HTML slider and an ipywidgets slider) are in ``trees_player.py``.
Leaves out: the search itself (``kbvqa.search``), any file or network I/O.
"""
from __future__ import annotations

import math
import textwrap
from collections.abc import Callable, Mapping, Sequence

from kbvqa.data.schema import open_image
from kbvqa.viz.frames import legible_pt
from kbvqa.viz.trees_records import NodeView, TreeView, tree_state, tree_view

__all__ = ["NodeView", "TreeView", "draw_rcts_tree", "example_label", "reward_label", "tree_layout",
           "tree_state", "tree_view"]


def tree_layout(parents: Mapping) -> dict:
    """``{node: (x, y)}`` for a forest given as ``{node: parent or None}`` (child order = mapping order).

    Leaves get x = 0, 1, 2, ... left to right (depth first); a parent is centred over its first and
    last child; y = -depth. A parent missing from the mapping makes its child a root. A cycle raises
    ``ValueError``.
    """
    children: dict = {node: [] for node in parents}
    roots = []
    for node, parent in parents.items():
        if parent is None or parent not in parents:
            roots.append(node)
        else:
            children[parent].append(node)
    positions: dict = {}
    next_leaf = 0
    for root in roots:
        stack = [(root, 0, False)]
        while stack:
            node, depth, done = stack.pop()
            if done:
                kids = children[node]
                x = (positions[kids[0]][0] + positions[kids[-1]][0]) / 2
                positions[node] = (x, -depth)
                continue
            if not children[node]:
                positions[node] = (float(next_leaf), -depth)
                next_leaf += 1
                continue
            stack.append((node, depth, True))
            stack.extend((kid, depth + 1, False) for kid in reversed(children[node]))
    if len(positions) != len(parents):
        missing = [n for n in parents if n not in positions]
        raise ValueError(f"nodes {missing[:5]} are not reachable from a root: the links form a cycle")
    return positions


def example_label(example, max_chars: int = 22) -> str:
    """A short text for an in-context example: the toy world's ``template key value -> answer text``
    (the text, not the letter: options are shuffled per question), otherwise the start of the
    question and the answer. Works on a ``Query``/``KBExample``, a dict or an id."""
    if example is None:
        return ""
    if isinstance(example, (str, int)):
        return str(example)[-max_chars:]
    get = example.get if isinstance(example, dict) else lambda k, d=None: getattr(example, k, d)
    meta = get("meta") or {}
    answers = get("answers") or []
    answer = answers[0] if answers else "?"
    if "key_value" in meta and "template_id" in meta:
        text = str(meta.get("answer_text") or answer)
        text = text if len(text) <= max_chars else text[: max_chars - 1] + "…"
        return f"{meta['template_id']} {meta['key_value']}\n-> {text}"
    question = str(get("question") or get("id") or "")
    short = question if len(question) <= max_chars else question[: max_chars - 1] + "…"
    return f"{short}\n-> {answer}"


def _thumbnail(image_ref, size: int):

    try:
        image = open_image(image_ref)
    except (ValueError, OSError):  # an unreadable reference: draw the node without it
        return None
    if image is None:
        return None
    image = image.copy()
    image.thumbnail((size, size))
    return image


_BEHIND = dict(boxstyle="round,pad=0.1", fc="white", ec="none", alpha=0.8)   # keeps edges off the text


def _wrap_label(text: str, chars: int, max_lines: int = 4) -> str:
    """``text`` with each of its lines wrapped to ``chars`` characters, at most ``max_lines`` lines."""
    lines = [part for line in text.split("\n") for part in (textwrap.wrap(line, chars) or [""])]
    if len(lines) > max_lines:
        lines = lines[:max_lines]
        lines[-1] = lines[-1][: max(chars - 1, 1)] + "…"
    return "\n".join(lines)


def _draw_node(ax, xy, node: NodeView, state: dict, on_path: bool, example, good, thumb_px: int,
               cmap, show_rewards: bool, thumbs: dict, fontsize: float = 8.0, label_chars: int = 16):
    from matplotlib.offsetbox import AnnotationBbox, OffsetImage

    q, n, uct = state["q"], state["n"], state["uct"]
    colour = cmap(0.1 + 0.5 * min(max(q, 0.0), 1.0)) if n > 0 else (0.93, 0.93, 0.93, 1.0)
    text = "root\n" if node.parent is None else ""
    text += f"Q {q:.2f}  N {n}"
    if uct is not None:
        text += f"\nUCT {uct:.2f}" if math.isfinite(uct) and abs(uct) < 1e3 else "\nUCT >>1"
    ax.text(xy[0], xy[1], text, ha="center", va="center", fontsize=fontsize + 0.5, zorder=4,
            bbox=dict(boxstyle="round,pad=0.25", fc=colour, ec="#c0392b" if on_path else "#555555",
                      lw=2.0 if on_path else 0.6))
    if example is not None and node.parent is not None:
        key = (node.example_id or id(example), thumb_px)
        if key not in thumbs:
            thumbs[key] = _thumbnail(_get(example, "image"), thumb_px) if thumb_px else None
        image = thumbs[key]
        if image is not None:
            box = AnnotationBbox(OffsetImage(image, zoom=1.0), (xy[0], xy[1] - 0.31), frameon=True,
                                 pad=0.05, zorder=3,
                                 bboxprops=dict(ec="#2e8b57" if good else "#999999", lw=1.5 if good else 0.5))
            ax.add_artist(box)
        label = _wrap_label(example_label(example) + (" ✓" if good else ""), label_chars)
        ax.text(xy[0], xy[1] - 0.5, label, ha="center", va="top", fontsize=fontsize, zorder=3,
                color="#2e8b57" if good else "#333333", linespacing=1.1, bbox=_BEHIND)
    if show_rewards and state["rewards"]:
        ax.text(xy[0], xy[1] + 0.19, reward_label([r for _, r in state["rewards"]], label_chars), ha="center",
                va="bottom", fontsize=fontsize, color="#7f3c8d", zorder=4, bbox=_BEHIND)


def reward_label(rewards: Sequence[float], chars: int = 16, most: int = 3) -> str:
    """A node's rewards as its label writes them: "r: " and the last ones at two decimals (as the
    rollout tables print them), as many as fit in ``chars`` characters (at least one, at most
    ``most``), "…" before them when some are left out."""
    fit = max(1, min(most, (chars - len("r: …")) // len(" 0.00")))
    shown = " ".join(f"{r:.2f}" for r in rewards[-fit:])
    return "r: " + ("…" if len(rewards) > fit else "") + shown


def _get(obj, key):
    return obj.get(key) if isinstance(obj, dict) else getattr(obj, key, None)


def _draw_rewards(ax, view: TreeView, upto: int, fontsize: float = 8.0):
    rewards = [r.reward for r in view.rollouts]
    xs = list(range(1, len(rewards) + 1))
    colours = ["#c0392b" if i == upto else ("#7f3c8d" if i < upto else "#dddddd")
               for i in range(len(rewards))]
    heights = [r if i <= upto and r is not None else 0.0 for i, r in enumerate(rewards)]
    ax.bar(xs, heights, color=colours, width=0.7)
    ax.set_xlim(0.3, max(len(rewards), 1) + 0.7)
    ax.set_ylim(0, 1.05)
    ax.set_xticks(xs, [str(x) for x in xs], fontsize=fontsize)
    ax.tick_params(axis="y", labelsize=fontsize)
    ax.set_ylabel("reward Q_i", fontsize=fontsize + 0.5)
    ax.set_xlabel("rollout", fontsize=fontsize + 0.5)
    ax.spines[["top", "right"]].set_visible(False)


def draw_rcts_tree(tree_records, upto_rollout: int | None = None, ax=None, examples: Mapping | None = None,
                   good_example: Callable | None = None, thumb_px: int = 24, show_rewards: bool = True,
                   title: str | None = None, width_per_leaf: float = 0.85, dpi: int = 90,
                   thumbnails: dict | None = None):
    """Draw the search tree after rollout ``upto_rollout`` (0-based; ``None``: the last) and return the
    Figure (closed when this function created it, so a notebook shows it once).

    ``tree_records``: a ``kbvqa.search`` export (see ``tree_view``). ``examples``: id -> example
    (``Query``/``KBExample`` or dict with ``image``, ``question``, ``answers``, ``meta``) for the
    thumbnails and labels; node records may carry them too. ``good_example(example) -> bool`` marks
    examples worth having (e.g. same rule and key value as the query) with a green frame and ✓.
    ``ax``: draw the tree only, into this Axes (no reward strip, the figure is not closed).
    ``thumbnails``: a dict the caller keeps to reuse rendered thumbnails between frames.
    An empty tree draws a placeholder; ``upto_rollout`` outside the rollouts raises ``ValueError``.

    Legibility: the figure is ``width_per_leaf`` inches per leaf (0.85: the chapters' trees, P = 10
    rollouts so at most 10 leaves, are ~9.3 in wide) and no text is smaller than 7.5 pt nor than
    ``frames.legible_pt`` of the figure's width, so the smallest text is at least
    ``frames.MIN_TEXT_PX`` high once the book scales the picture to its content column; example
    labels are wrapped to the width of a leaf's column.
    """
    import matplotlib.pyplot as plt
    from matplotlib import colormaps

    view = tree_records if isinstance(tree_records, TreeView) else tree_view(tree_records)
    state = tree_state(view, upto_rollout)
    upto = state["upto"]
    created = ax is None
    # every frame of one search uses the final tree's layout, so nodes keep their place
    layout = tree_layout({n: node.parent for n, node in view.nodes.items()})
    if created:
        parents = {node.parent for node in view.nodes.values()}
        n_leaves = sum(n not in parents for n in view.nodes)
        width = min(max(4.5, width_per_leaf * max(n_leaves, 1) + 0.8), 12.0)
        depth = max((node.depth for node in view.nodes.values()), default=0)
        fig, (ax, strip) = plt.subplots(2, 1, figsize=(width, 1.8 * (depth + 1) + 1.7), dpi=dpi,
                                        gridspec_kw={"height_ratios": [1.8 * (depth + 1), 1.0]})
    fig = ax.figure
    fontsize = max(7.5, legible_pt(fig.get_size_inches()[0]))
    ax.axis("off")
    if not state["nodes"]:
        ax.text(0.5, 0.5, "empty tree: no nodes yet", ha="center", va="center", transform=ax.transAxes)
        if created:
            strip.axis("off")
            plt.close(fig)
        return fig
    positions = {n: layout[n] for n in state["nodes"]}
    path = set(state["path"])
    for node_id, (x, y) in positions.items():
        parent = view.nodes[node_id].parent
        if parent in positions:
            on_path = node_id in path and parent in path
            px, py = positions[parent]
            ax.plot([px, x], [py, y], color="#c0392b" if on_path else "#888888",
                    lw=2.2 if on_path else 0.8, zorder=1)
    cmap = colormaps["YlGn"]
    examples = examples or {}
    xs = [p[0] for p in layout.values()]
    ys = [p[1] for p in layout.values()]
    axes_width = 0.96 if created else ax.get_position().width   # tight_layout fills the width
    column_pt = 72.0 * fig.get_size_inches()[0] * axes_width / (max(xs) - min(xs) + 1.2)
    label_chars = max(8, int(column_pt / (0.55 * fontsize)))
    for node_id, xy in positions.items():
        node = view.nodes[node_id]
        example = examples.get(node.example_id, node.example) if node.example_id is not None else node.example
        good = bool(good_example(example)) if (good_example and example is not None) else False
        _draw_node(ax, xy, node, state["values"][node_id], node_id in path, example, good, thumb_px,
                   cmap, show_rewards, {} if thumbnails is None else thumbnails, fontsize, label_chars)
    ax.set_xlim(min(xs) - 0.6, max(xs) + 0.6)
    ax.set_ylim(min(ys) - 0.95, max(ys) + 0.45)
    if title is None:
        title = "empty search" if upto < 0 else f"after rollout {upto + 1} of {len(view.rollouts)}"
        rollout = view.rollouts[upto] if upto >= 0 else None
        if rollout is not None and rollout.reward is not None:
            title += f": reward {rollout.reward:.2f}"
        if rollout is not None and rollout.answer:
            title += f", answer {rollout.answer}"
        if state["replayed"]:
            title += "\n(Q of earlier rollouts replayed as mean backup)"
    ax.set_title(title, fontsize=fontsize + 2)
    if created:
        if view.rollouts:
            _draw_rewards(strip, view, upto, fontsize)
        else:
            strip.axis("off")
        fig.tight_layout()
        plt.close(fig)
    return fig
