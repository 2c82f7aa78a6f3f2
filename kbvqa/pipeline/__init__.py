"""One KB-VQA pipeline from the four papers' parts (chapter 30): retrieve -> critic -> ladder -> read.

Modules: ``stages`` (``PipelineConfig``, one switch per stage, and ``run_pipeline``, the stages run
batched over the queries), ``results`` (the end-to-end ablation: its rows, the stage inputs read
from ReAG's committed ``evidence.json``, a live rerun of some rows, the table, its loaders and
``where_lost``). Leaves out: the run that writes ``data/experiments/pipeline/``
(``python -m kbvqa.experiments.pipeline_ablation``).
"""
from kbvqa.pipeline.stages import (
    READERS,
    RERANKS,
    RETRIEVALS,
    PipelineConfig,
    candidate_objects,
    ladder_candidates,
    ladder_choice,
    run_pipeline,
    stage_passages,
)

__all__ = ["READERS", "RERANKS", "RETRIEVALS", "PipelineConfig", "candidate_objects", "ladder_candidates",
           "ladder_choice", "run_pipeline", "stage_passages"]

# Shared pieces chapter 30 uses with the pipeline, re-exported so that it imports one package (issue #16);
# their home stays where it is: the ladder's schedule and prompt (``kbvqa.molt``), noise bars (``kbvqa.metrics``).
from kbvqa.metrics import wilson_interval  # noqa: E402
from kbvqa.molt import ladder_schedule, student_prompt  # noqa: E402

__all__ += ["ladder_schedule", "student_prompt", "wilson_interval"]
