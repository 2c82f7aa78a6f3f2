"""The SeRTS slider: snapshots replay backpropagation exactly; the HTML holds one frame per snapshot."""
import matplotlib
import pytest

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def result():
    from kbvqa.data.toyworld import get_world
    from kbvqa.models.pretrain_mc_lit import lit_question_split
    from kbvqa.serts.evaluate import toy_literature_task
    from kbvqa.serts.oracle import noisy_reformulator, rubric_evaluator
    from kbvqa.serts.search import SeRTSConfig, run_serts

    world = get_world(0)
    q = lit_question_split(world)[1][1]
    retrieve, doc_text = toy_literature_task(world)
    (r,) = run_serts([q.question], noisy_reformulator(world, include_prob=0.3, off_topic_prob=0.3, seed=2),
                     rubric_evaluator(world), retrieve, doc_text, SeRTSConfig(sim=8, branching=2, depth=3))
    return r


def test_last_snapshot_equals_the_search(result):
    from kbvqa.viz.serts_player import own_rewards, serts_snapshot

    n = len(result.nodes) - 1
    assert n >= 4
    snap = serts_snapshot(result, n)
    assert [(x.id, x.visits, round(x.value_sum, 9)) for x in snap.nodes] == \
        [(x.id, x.visits, round(x.value_sum, 9)) for x in result.nodes]
    assert snap.best.id == result.best.id and snap.stopped_early == result.stopped_early
    assert own_rewards(result)[2] == pytest.approx(result.nodes[2].score * 0.2)
    assert result.nodes[1].visits > 0 and result.nodes[1].parent is result.root   # original untouched


def test_partial_snapshots_replay_backpropagation(result):
    from kbvqa.viz.serts_player import serts_snapshot

    for k in range(len(result.nodes)):
        snap = serts_snapshot(result, k)
        assert len(snap.nodes) == k + 1 and snap.root.visits == k
        assert snap.root.value_sum == pytest.approx(sum(x.score for x in result.nodes[1:k + 1]) * 0.2)
        if k:
            assert snap.best.score == max(x.score for x in result.nodes[1:k + 1])
    assert serts_snapshot(result, 1).nodes[1].visits == 1 and not serts_snapshot(result, 0).nodes[0].children
    with pytest.raises(ValueError):
        serts_snapshot(result, len(result.nodes))


def test_html_slider_has_one_frame_per_snapshot(result):
    from kbvqa.viz.serts_player import serts_tree_html

    page = serts_tree_html(result, max_frames=3, dpi=30).data
    assert page.count("<img") == 3 and 'type="range"' in page
    assert f"after expansion {len(result.nodes) - 1} of {len(result.nodes) - 1}" in page


def test_viewer_labels_a_fallback_query_as_the_question():
    from kbvqa.viz.serts import short_query

    assert short_query("Is X safe?", question="Is X safe?") == "Q"           # the fall-back query
    assert short_query("is x safe", question="Is X safe?") == "Q"
    assert short_query("Is X safe? zorp", question="Is X safe?") == "Is X safe? zorp"[:28]
    assert short_query("Is X safe zorp", question="Is X safe?") == "Q + zorp"


def test_anytime_recall_grows_to_the_final_answer_and_is_drawn(result):
    from kbvqa.serts.evaluate import retrieval_scores
    from kbvqa.viz.serts import draw_anytime_recall
    from kbvqa.viz.serts_player import anytime_recall

    gold = [["none"]]
    assert anytime_recall([result], gold, 1) == 0.0
    gold = [list(result.docs)]
    final = anytime_recall([result], gold, 100)        # past the end: the search's own answer
    assert final == retrieval_scores([result.docs], gold)["recall"] == 1.0
    with pytest.raises(ValueError):
        anytime_recall([result], gold, 0)
    fig = draw_anytime_recall({"a": [[0.1, 0.5], [0.3, 0.7]]}, baseline=0.2)
    assert len(fig.axes[0].lines) >= 2
    with pytest.raises(ValueError):
        draw_anytime_recall({})
