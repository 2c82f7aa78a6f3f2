"""The MCTS-HR tree: node ids and paths, export, and the three backup rules by hand (RCTS Eq. 10,
plain mean, official code), plus the two final-choice rules."""
from __future__ import annotations

import json

import pytest

from kbvqa.rcts.tree import (
    BACKPROP_RULES,
    Node,
    backprop_mean,
    backprop_official,
    backprop_rcts,
    best_leaf,
    best_path_official,
    eq10_update,
    iter_nodes,
    leaves,
    tree_to_records,
)


def small_tree():
    root = Node(origin="root")
    a = root.add_child(3, "e3")
    return root, a, a.add_child(0, "e0"), a.add_child(1, "e1")


def test_ids_paths_and_repeated_actions():
    root, a, b, c = small_tree()
    assert [n.node_id for n in iter_nodes(root)] == ["root", "root.3", "root.3.0", "root.3.1"]
    assert b.path() == [root, a, b] and b.depth == 2 and b.action == 0 and root.action is None
    assert b.example_ids == ("e3", "e0")
    with pytest.raises(ValueError):
        a.add_child(0)          # a sibling already took it
    with pytest.raises(ValueError):
        b.add_child(3)          # already on the path
    with pytest.raises(ValueError):
        Node(origin="nowhere")
    assert leaves(root) == [b, c] and leaves(root, depth=1) == []


def test_eq10_by_hand():
    root, a, b, c = small_tree()
    backprop_rcts(b, 1.0, rollout=0)
    # fresh parents (Q=0, N=0) with one child: 1/2 * (1/1 + 1) = 1
    assert (b.Q, b.N, a.Q, a.N, root.Q, root.N) == (1.0, 1, 1.0, 1, 1.0, 1)
    backprop_rcts(c, 0.0, rollout=1)
    # a: 1/2 * ((1*1 + 0)/2 + max(1, 0)) = 0.75 ; root: 1/2 * ((1*1 + 0.75)/2 + 0.75) = 0.8125
    assert a.Q == pytest.approx(0.75) and root.Q == pytest.approx(0.8125)
    assert (c.N, a.N, root.N) == (1, 2, 2)
    assert root.rewards == [1.0, 0.0] and root.rollouts == [0, 1] and c.rewards == [0.0]
    assert eq10_update(0.5, 3, 1.0, 0.9) == pytest.approx(0.5 * ((1.5 + 1.0) / 4 + 0.9))


def test_mean_backup_by_hand():
    root, a, b, c = small_tree()
    backprop_mean(b, 1.0)
    backprop_mean(c, 0.0)
    assert (a.Q, root.Q, a.N, root.N, b.Q, c.Q) == (0.5, 0.5, 2, 2, 1.0, 0.0)


def test_official_backup_reuses_the_leaf_q_and_never_counts_leaf_visits():
    root, a, b, c = small_tree()
    backprop_official(b, 1.0)
    backprop_official(c, 0.0)
    assert (b.N, c.N) == (0, 0)
    assert a.Q == pytest.approx(0.75)                     # same as Eq. 10 one level up
    # root: 1/2 * ((1*1 + 0 [the leaf's Q, not a's 0.75]) / 2 + 0.75) = 0.625 (Eq. 10 gives 0.8125)
    assert root.Q == pytest.approx(0.625)
    backprop_official(c, 1.0)                             # second sample: Q = (min + mean)/2
    assert c.Q == pytest.approx(0.5 * (0.0 + 0.5)) and c.reward_samples == [0.0, 1.0]


@pytest.mark.parametrize("rule", sorted(BACKPROP_RULES))
def test_backups_reject_bad_rewards_and_the_root(rule):
    root, a, b, c = small_tree()
    with pytest.raises(ValueError):
        BACKPROP_RULES[rule](b, 1.5)
    with pytest.raises(ValueError):
        BACKPROP_RULES[rule](root, 0.5)


def test_final_choice_rules_can_differ():
    root = Node(origin="root")
    a, b = root.add_child(0), root.add_child(1)
    la, lb = a.add_child(1), b.add_child(0)
    a.Q, la.Q, b.Q, lb.Q = 0.2, 0.9, 0.8, 0.5
    assert best_path_official(root) == [root, b, lb]       # 0.8 + 0.5 > 0.2 + 0.9
    assert best_leaf(root) is la
    assert best_leaf(Node(origin="root")) is None


def test_export_is_json_ready_and_flat_records_link_parents():
    root, a, b, c = small_tree()
    backprop_rcts(b, 1.0, 0)
    b.response, b.answer, b.q_self, b.q_mutual = "The answer is A.", "A", 1.0, 1.0
    nested = json.loads(json.dumps(root.to_dict()))
    assert nested["children"][0]["children"][0]["answer"] == "A"
    records = tree_to_records(root, uct=lambda n: n.Q + 1)
    assert [r["parent_id"] for r in records] == [None, "root", "root.3", "root.3"]
    assert records[0]["uct"] is None and records[2]["uct"] == pytest.approx(2.0)
    assert records[1]["n_children"] == 2 and "children" not in records[1]
    assert "uct" not in tree_to_records(root)[0]
