"""The end-to-end ablation (chapter 30): which stage of the pipeline buys how much.

Run ``python -m kbvqa.experiments.pipeline_ablation [--limit 200] [--threads 1]``. Each row is a
``kbvqa.pipeline.PipelineConfig`` (``kbvqa.pipeline.results.ROWS``), run on the same first N queries
of the toy world's KB-VQA test split with the shipped tiny model as reader (and as ladder judge),
greedy decoding:

    reader alone -> coarse retrieval -> + fine -> + critic (Eq. 4) -> + critic top-1
    -> + ladder (MOLT one pass, N = 5) | the ladder without the critic (first 5 in retrieval order)
    | iterative pairwise ladder | perfect ladder (oracle)
    and the reader's ceiling: the evidence passage alone (diagnostic)

Retrieval passages and the critic's P(Yes) are ReAG's committed ``data/experiments/reag/
evidence.json`` (the 150-step critic of ``reag_ladder``; no critic weights are shipped, so reusing
its scores keeps both tables on one critic). The reader is the ``reag_generator`` role's model zero-shot: the
ReAG ladder found no trained generator better than it (its "evidence alone" diagnostic: zero-shot
0.39, cold start 0.20, GRPO 0.33), and none is shipped.

Per row the table gives accuracy (official scorers, ``kbvqa.metrics.official_correct``) with its
95 % Wilson interval, InfoSeek's split score with its within-split bootstrap interval, the paired
bootstrap against the row it adds to, mean passages read, and the evidence recall after each stage
(retrieved / after the critic / among the ladder's candidates / in the reader's context). The
last one is also the accuracy of a perfect reader (``reader="oracle"``), so a weak reader does
not hide what retrieval, critic and ladder buy. Records go to ``data/experiments/pipeline/
runs/<row>.jsonl``; ``results.json`` / ``results.csv`` hold the table and the provenance.

This package is the experiment's spec: the rows it runs (``ROWS``: ``kbvqa.pipeline.results``), the
stage inputs it reads (``EVIDENCE_FILE``) and the folder it writes (``RESULTS_DIR``:
``data/experiments/pipeline/``). ``run.py`` runs it (``run_ablation``, ``row_fingerprint``, ``main``);
``__main__.py`` is ``python -m kbvqa.experiments.pipeline_ablation``.

Leaves out: the pipeline (``kbvqa.pipeline``), the rows, their stage inputs, the live rerun and the
table (``kbvqa.pipeline.results``).
"""
from __future__ import annotations

from kbvqa.experiments.pipeline_ablation.run import row_fingerprint, run_ablation
from kbvqa.pipeline.results import EVIDENCE_FILE, RESULTS_DIR, ROWS

__all__ = ["EVIDENCE_FILE", "RESULTS_DIR", "ROWS", "row_fingerprint", "run_ablation"]
