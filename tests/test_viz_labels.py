"""Figure titles name the model of the table they draw (issue 51): derived from provenance.model."""
from __future__ import annotations

import matplotlib
import pytest

from kbvqa.viz.labels import model_label, results_model_label

matplotlib.use("Agg")


@pytest.mark.parametrize(("model", "label"), [
    ("reader:87914057b0c95a6e", "the reader"), ("reader:87914057b0c95a6e+bf16", "the reader (bf16)"),
    ("tiny_vlm:37886683d784606e", "the tiny VLM"), ("Qwen/Qwen2-VL-2B-Instruct", "Qwen2-VL-2B-Instruct"),
    ("", "unknown model"), (None, "unknown model"), ("unknown", "unknown model"),
])
def test_model_label(model, label):
    assert model_label(model) == label


def _titles(fig) -> str:
    return " | ".join(ax.get_title() for ax in fig.axes) + " | " + (fig._suptitle.get_text() if fig._suptitle else "")


def _figures():
    from kbvqa.molt.results import load_results as molt
    from kbvqa.pipeline.results import load_results as pipeline
    from kbvqa.rcts.results import RESULTS_DIR as RCTS_DIR
    from kbvqa.rcts.results import load_results as rcts
    from kbvqa.reag.results import load_results as reag
    from kbvqa.viz.molt import draw_schedule_accuracy
    from kbvqa.viz.pipeline import draw_ablation
    from kbvqa.viz.rcts import draw_rcts_main
    from kbvqa.viz.reag import draw_ladder

    return [(draw_rcts_main, rcts(RCTS_DIR)), (draw_ablation, pipeline()), (draw_ladder, reag()),
            (draw_schedule_accuracy, molt())]


def test_every_committed_figure_names_its_tables_model():
    import matplotlib.pyplot as plt

    for draw, results in _figures():
        out = draw(results)
        fig = out[0] if isinstance(out, tuple) else out
        fig = getattr(fig, "figure", fig)
        titles = _titles(fig)
        label = results_model_label(results)
        assert label in titles, (draw.__name__, titles)
        if "tiny" not in label:
            assert "tiny" not in titles.lower(), (draw.__name__, titles)
        plt.close("all")
