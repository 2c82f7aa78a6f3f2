"""The RCTS tree viewer: layout, rollout recovery and replay, frames, empty and one-node trees."""
import re

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from kbvqa.rcts.tree import BACKPROP_RULES, Node, tree_to_records  # noqa: E402
from kbvqa.viz.frames import figure_png, frames_html, legible_pt, page_dpi, text_px_at_page_width  # noqa: E402
from kbvqa.viz.trees import draw_rcts_tree, example_label, reward_label, tree_layout, tree_state, tree_view  # noqa: E402
from kbvqa.viz.trees_player import frame_rollouts, rcts_tree_html, render_frames  # noqa: E402

PATHS = [(0, 1), (0, 2), (3, 1), (0, 1), (3, 4)]
REWARDS = [0.2, 0.8, 0.5, 1.0, 0.0]


def build(rule="paper", paths=PATHS, rewards=REWARDS):
    """A hand-built search: returns the root and the (Q, N) of every node after each rollout."""
    root, snapshots = Node(origin="root"), []
    for r, (path, reward) in enumerate(zip(paths, rewards)):
        node = root
        for a in path:
            child = next((c for c in node.children if c.action == a), None)
            node = child or node.add_child(a, f"kb-{a}", created_at=r)
        node.answer = "AB"[r % 2]
        BACKPROP_RULES[rule](node, reward, r)
        snapshots.append({rec["node_id"]: (rec["Q"], rec["N"]) for rec in tree_to_records(root)})
    return root, snapshots


def test_layout_leaves_in_columns_parents_centred():
    parents = {"r": None, "a": "r", "b": "r", "a1": "a", "a2": "a", "b1": "b"}
    pos = tree_layout(parents)
    assert pos["a1"] == (0.0, -2) and pos["a2"] == (1.0, -2) and pos["b1"] == (2.0, -2)
    assert pos["a"] == (0.5, -1) and pos["b"] == (2.0, -1)
    assert pos["r"] == (1.25, 0)


def test_layout_forest_single_node_and_cycle():
    assert tree_layout({"only": None}) == {"only": (0.0, 0)}
    assert tree_layout({}) == {}
    pos = tree_layout({"x": None, "y": None})
    assert pos["x"][0] < pos["y"][0]
    with pytest.raises(ValueError):
        tree_layout({"r": None, "a": "b", "b": "a"})


def test_rollouts_recovered_from_records():
    root, _ = build()
    view = tree_view(tree_to_records(root))
    assert [r.index for r in view.rollouts] == list(range(len(PATHS)))
    assert [r.reward for r in view.rollouts] == REWARDS
    assert view.rollouts[2].path == ["root", "root.3", "root.3.1"]
    assert view.nodes["root.0.2"].example_id == "kb-2"


@pytest.mark.parametrize("rule", ["paper", "mean", "official"])
def test_replay_gives_the_values_after_each_rollout(rule):
    root, snapshots = build(rule)
    view = tree_view({"nodes": tree_to_records(root), "config": {"backprop": rule}})
    for r, snap in enumerate(snapshots):
        state = tree_state(view, r)
        assert not state["replayed"]
        assert set(state["nodes"]) == set(snap)
        for node_id, (q, n) in snap.items():
            assert state["values"][node_id]["q"] == pytest.approx(q)
            assert state["values"][node_id]["n"] == n


def test_wrong_rule_is_flagged_as_replayed():
    root, _ = build("paper")
    view = tree_view({"nodes": tree_to_records(root), "config": {"backprop": "mean"}})
    assert tree_state(view, 1)["replayed"]          # Eq. 10 values cannot come from mean backups
    assert not tree_state(view, None)["replayed"]   # the last frame shows the recorded values


def test_state_before_any_rollout_and_bad_index():
    root, _ = build()
    view = tree_view(tree_to_records(root))
    assert tree_state(view, -1)["nodes"] == ["root"]
    assert tree_state(view, 0)["path"] == ["root", "root.0", "root.0.1"]
    with pytest.raises(ValueError):
        tree_state(view, len(PATHS))
    with pytest.raises(ValueError):
        draw_rcts_tree(view, upto_rollout=99)


def test_draw_returns_a_closed_figure_with_the_current_path():
    root, _ = build()
    fig = draw_rcts_tree(tree_to_records(root), upto_rollout=1)
    assert not plt.fignum_exists(fig.number)
    tree_ax = fig.axes[0]
    assert "rollout 2 of 5" in tree_ax.get_title()
    red = [line for line in tree_ax.lines if line.get_color() == "#c0392b"]
    assert len(red) == 2                     # root -> root.0 -> root.0.2
    texts = " ".join(t.get_text() for t in tree_ax.texts)
    assert "Q 0.80  N 1" in texts and "UCT" in texts


def test_reward_labels_at_two_decimals_as_many_as_fit():
    """Chapter 13's node labels read 0.16 where its rollout table does (they read 0.2 at one decimal)."""
    assert reward_label([0.16]) == "r: 0.16"
    assert reward_label([0.16, 0.16, 0.08], chars=23) == "r: 0.16 0.16 0.08"
    assert reward_label([0.1, 0.16, 0.16, 0.08], chars=23) == "r: …0.16 0.16 0.08"
    assert reward_label([0.16, 0.16, 0.08], chars=15) == "r: …0.16 0.08"      # a P = 10 tree's column
    assert reward_label([0.5, 1.0], chars=4) == "r: …1.00"                      # always one
    root, _ = build()
    texts = [t.get_text() for t in draw_rcts_tree(tree_to_records(root)).axes[0].texts]
    labels = [t for t in texts if t.startswith("r: ")]
    assert labels and all(re.fullmatch(r"r: …?\d\.\d\d( \d\.\d\d)*", t) for t in labels), labels


def test_draw_into_a_given_axes_and_empty_trees():
    root, _ = build()
    fig, ax = plt.subplots()
    assert draw_rcts_tree(tree_to_records(root), ax=ax) is fig
    assert plt.fignum_exists(fig.number)      # the caller's figure stays open
    plt.close(fig)
    for empty in ([], None, {"nodes": []}):
        assert "empty tree" in draw_rcts_tree(empty).axes[0].texts[0].get_text()
    single = draw_rcts_tree(tree_to_records(Node(origin="root")))
    assert "root" in " ".join(t.get_text() for t in single.axes[0].texts)


def test_frames_one_per_rollout_and_small_html():
    root, _ = build()
    records = tree_to_records(root)
    frames = render_frames(records, max_frames=None, dpi=40)
    assert len(frames) == len(PATHS)
    assert all(f[:8] == b"\x89PNG\r\n\x1a\n" for f in frames)
    page = rcts_tree_html(records, dpi=40).data
    assert page.count("<img") == len(PATHS) and 'type="range"' in page
    assert len(page) < 3_000_000
    assert len(render_frames([], dpi=40)) == 1
    assert 'type="range"' not in frames_html(render_frames([], dpi=40))


def test_text_px_at_page_width_on_a_hand_made_figure():
    """size_pt / 72 * min(dpi, 760 / width_in) of the smallest visible text, by hand."""
    fig, (ax, hidden) = plt.subplots(1, 2, figsize=(10, 4))
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_title("title", fontsize=12)
    ax.set_xlabel("x", fontsize=9)
    ax.tick_params(labelsize=8)
    ax.text(0.5, 0.5, "inside", fontsize=7)
    ax.annotate("note", (0.2, 0.2), fontsize=6.5)
    ax.legend(fontsize=6)
    hidden.axis("off")                                   # its 3 pt tick labels are not drawn
    hidden.tick_params(labelsize=3)
    hidden.text(0.5, 0.5, "invisible", fontsize=2, visible=False)
    hidden.text(0.5, 0.5, "", fontsize=1)                # empty: nothing to read
    # 10 in wide: the page shows it at 760 / 10 = 76 px per inch at most
    assert text_px_at_page_width(fig, 50) == pytest.approx(6 / 72 * 50)        # the PNG is narrower
    assert text_px_at_page_width(fig, 100) == pytest.approx(6 / 72 * 76)       # scaled down to 760 px
    assert text_px_at_page_width(fig, 200, page_px=1000) == pytest.approx(6 / 72 * 100)
    ax.get_legend().remove()
    assert text_px_at_page_width(fig, 100) == pytest.approx(6.5 / 72 * 76)     # now the annotation
    ax.tick_params(labelsize=5)
    assert text_px_at_page_width(fig, 100) == pytest.approx(5 / 72 * 76)       # tick labels count
    plt.close(fig)
    assert text_px_at_page_width(plt.figure(figsize=(4, 3)), 100) == float("inf")
    plt.close("all")


def test_frames_are_at_least_as_wide_as_the_page():
    fig = plt.figure(figsize=(10, 2))
    assert page_dpi(fig, 50) == 76 and page_dpi(fig, 120) == 120 and page_dpi(fig) == 76
    assert legible_pt(10) == pytest.approx(7.6)          # 8 px * 72 * 10 in / 760 px = 7.58 pt
    import struct
    width = struct.unpack(">I", figure_png(fig, 50)[16:20])[0]
    assert width == 760
    assert struct.unpack(">I", figure_png(plt.figure(figsize=(10, 2)), 50, page_px=0)[16:20])[0] == 500


def test_frame_selection():
    assert frame_rollouts(0) == [-1]
    assert frame_rollouts(5) == [0, 1, 2, 3, 4]
    picked = frame_rollouts(100, max_frames=8)
    assert len(picked) == 8 and picked[0] == 0 and picked[-1] == 99
    with pytest.raises(ValueError):
        frame_rollouts(3, max_frames=0)


def test_example_label():
    toy = {"answers": ["C"], "meta": {"template_id": "nest", "key_value": "dots"}}
    assert example_label(toy) == "nest dots\n-> C"
    toy["meta"]["answer_text"] = "among the reeds of the marsh"
    assert example_label(toy) == "nest dots\n-> among the reeds of th…"
    assert example_label({"question": "x" * 50, "answers": ["B"]}).endswith("…\n-> B")
    assert example_label(None) == "" and example_label("kb-7") == "kb-7"


def test_widget_or_fallback():
    root, _ = build()
    from kbvqa.viz.trees_player import rcts_tree_widget

    box = rcts_tree_widget(tree_to_records(root), dpi=30)
    slider, image = box.children
    assert slider.value == len(PATHS) - 1 and image.value[:4] == b"\x89PNG"
    before = image.value
    slider.value = 0                                  # moving the slider redraws the tree
    assert image.value != before


class _LetterVLM:
    """A fake model: the letter depends on a hash of the prompt text, the seed and the sample."""

    def generate(self, prompts, n=1, seed=None, temperature=1.0, **kwargs):
        import hashlib

        def text(chat):
            return "|".join(p.get("text", "") for t in chat for p in t["content"] if isinstance(p, dict))
        return [[f"The answer is {'ABCD'[int(hashlib.md5(f'{text(c)}{seed}{j}'.encode()).hexdigest(), 16) % 4]}."
                 f" BECAUSE: r." for j in range(n)] for c in prompts]


def test_an_rcts_result_replays_exactly():
    from kbvqa.data.schema import Query
    from kbvqa.rcts.mcts_hr import RCTSConfig, rcts_search
    from kbvqa.rcts.prompts import MCPromptBuilder

    def item(i):
        return Query(id=f"q{i}", question=f"Question {i}?", answers=["ABCD"[i % 4]], answer_type="choice",
                     options=["w", "x", "y", "z"], solution="So the answer is x.")
    candidates = [(item(i), 1.0 - 0.05 * i) for i in range(1, 9)]
    config = RCTSConfig(N=8, P=6, early_stop=False, uct="official", backprop="mean")
    result = rcts_search(_LetterVLM(), item(0), candidates, config, MCPromptBuilder(None, with_context=True))
    view = tree_view(result)
    assert (view.backprop, view.uct, len(view.rollouts)) == ("mean", "official", 6)
    assert all(not tree_state(view, r)["replayed"] for r in range(6))
    assert len(render_frames(result, max_frames=3, dpi=30)) == 3
