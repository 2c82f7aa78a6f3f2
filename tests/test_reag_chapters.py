"""kbvqa.viz.reag: the AUC, the score scales and the two figures of the ReAG chapters."""
from types import SimpleNamespace

import matplotlib
import pytest
from PIL import Image

from kbvqa.metrics.ranking import separation_auc
from kbvqa.retrieval.multilevel import score_scales
from kbvqa.viz.reag import draw_boxes_and_crops, draw_recall_by_k

matplotlib.use("Agg")


def test_separation_auc_counts_pairs_and_ties():
    scores = [0.9, 0.6, 0.5, 0.7, 0.1, 0.6]
    kinds = ["relevant", "relevant", "hard", "hard", "soft", "soft"]
    # relevant {0.9, 0.6} vs hard {0.5, 0.7}: 0.9>0.5, 0.9>0.7, 0.6>0.5, 0.6<0.7 -> 3/4
    # vs soft {0.1, 0.6}: 0.9>0.1, 0.9>0.6, 0.6>0.1, 0.6=0.6 (one half) -> 3.5/4
    assert separation_auc(scores, kinds) == {"hard": 0.75, "soft": 0.875}


def test_separation_auc_is_symmetric_in_the_labels_and_nan_without_positives():
    assert separation_auc([0.1, 0.9], ["relevant", "hard"]) == {"hard": 0.0}
    auc = separation_auc([0.3, 0.4], ["hard", "soft"])
    assert all(v != v for v in auc.values())
    with pytest.raises(ValueError):
        separation_auc([0.1], ["relevant", "hard"])


def test_score_scales_reports_which_stage_wins_the_merge():
    coarse = [[("a", 0.5), ("b", 0.4)], [("c", 0.8)], []]
    fine = [[("b", 0.7)], [("c", 0.9)], [("d", 0.3)]]
    out = score_scales(coarse, fine)
    assert out["coarse_top1"] == pytest.approx(0.65)
    assert out["fine_top1"] == pytest.approx(0.6333, abs=1e-4)
    assert out["fine_takes_top1"] == 0.5     # query 0: b overtakes a; query 1: same document


def test_draw_recall_by_k_draws_one_line_per_run():
    rows = [{"k": 1, "coarse": 0.8, "coarse_fine": 0.7}, {"k": 3, "coarse": 0.95, "coarse_fine": 0.97}]
    fig = draw_recall_by_k(rows, runs=("coarse", "coarse_fine"))
    ax = fig.axes[0]
    assert len(ax.lines) == 2 and list(ax.lines[1].get_ydata()) == [0.7, 0.97]
    with pytest.raises(ValueError):
        draw_recall_by_k(rows, runs=("oracle",))
    with pytest.raises(ValueError):
        draw_recall_by_k([])


def test_draw_boxes_and_crops_titles_the_iou_and_handles_no_box():
    image = Image.new("RGB", (100, 100), "white")
    queries = [SimpleNamespace(image=image, box=(10, 10, 50, 50))] * 2
    fig = draw_boxes_and_crops(queries, [(10, 10, 50, 30), None], subjects=["fish", "fish"])
    titles = [ax.get_title() for ax in fig.axes]
    assert "'fish'\nIoU 0.50" in titles and "'fish'\nIoU 0.00" in titles
    assert "no box: whole image" in titles
    assert fig.axes[3].images[0].get_array().shape[:2] == (100, 100)    # the whole image, uncropped
    assert fig.axes[2].images[0].get_array().shape[0] < 100             # the crop is smaller
    with pytest.raises(ValueError):
        draw_boxes_and_crops(queries, [None])
