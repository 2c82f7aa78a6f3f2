"""Pictures: pure ``draw_*`` functions that turn a pipeline, tree or tournament into a figure.

A static figure in the book, a kernel-free viewer in the HTML and a live widget in Jupyter all
call the same ``draw_*`` function, so there is one picture of each idea. The naming rule: every
function that returns a figure is ``draw_*`` and lives in ``viz/`` (one module per paper, plus
``plots``, ``pipeline``, ``effects``, ``reader``, ``toy_world``); ``frames.figure_png`` is the one place a figure
becomes PNG bytes and ``frames.frames_html`` the one kernel-free slider.
"""
from kbvqa.viz.pipeline import PIPELINE_STAGES, PIPELINE_SYSTEMS, draw_pipeline
from kbvqa.viz.plots import draw_world_stats, image_grid
from kbvqa.viz.toy_world import draw_query, family_grid

__all__ = ["PIPELINE_STAGES", "PIPELINE_SYSTEMS", "draw_pipeline", "draw_query", "draw_world_stats", "family_grid",
           "image_grid"]

# What the chapters draw, one line per paper's module (issue #16: a chapter imports the package).
from kbvqa.viz.contexts import draw_candidate_scores, draw_context_comparison  # noqa: E402
from kbvqa.viz.critic import draw_critic_loss, draw_p_yes_by_kind, draw_passages_kept, draw_threshold_sweep  # noqa: E402
from kbvqa.viz.molt import draw_reward_curves, draw_tournament, tournament_html, tournament_widget  # noqa: E402
from kbvqa.viz.pipeline import draw_ablation  # noqa: E402
from kbvqa.viz.rcts import (  # noqa: E402
    draw_rcts_ablations,
    draw_rcts_diagnostics,
    draw_rcts_letter_vs_text,
    draw_rcts_main,
)
from kbvqa.viz.reader import draw_image_tokens, draw_naming_parts, draw_reader_curves  # noqa: E402
from kbvqa.viz.reag import (  # noqa: E402
           draw_boxes_and_crops,
           draw_group_advantages,
           draw_grpo_curves,
           draw_ladder,
           draw_recall_by_k,
           draw_sft_curves,
)
from kbvqa.viz.serts import draw_anytime_recall, draw_serts_tree, serts_tree_records  # noqa: E402
from kbvqa.viz.serts_player import anytime_recall, serts_tree_html  # noqa: E402
from kbvqa.viz.trees import draw_rcts_tree  # noqa: E402
from kbvqa.viz.trees_player import rcts_tree_html, rcts_tree_widget  # noqa: E402

__all__ += ["anytime_recall", "draw_ablation", "draw_anytime_recall", "draw_boxes_and_crops", "draw_candidate_scores",
            "draw_context_comparison", "draw_critic_loss", "draw_group_advantages", "draw_grpo_curves",
            "draw_image_tokens", "draw_ladder", "draw_naming_parts", "draw_reader_curves",
            "draw_p_yes_by_kind", "draw_passages_kept", "draw_rcts_ablations", "draw_rcts_diagnostics",
            "draw_rcts_letter_vs_text",
            "draw_rcts_main", "draw_rcts_tree", "draw_recall_by_k", "draw_reward_curves", "draw_serts_tree",
            "draw_sft_curves", "draw_threshold_sweep", "draw_tournament", "rcts_tree_html", "rcts_tree_widget",
            "serts_tree_html", "serts_tree_records", "tournament_html", "tournament_widget"]
