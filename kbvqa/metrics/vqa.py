"""VQA accuracy with ten annotators (VQA v2 / VizWiz), as the official ``vqaEval.py`` computes it.

A prediction is compared with the human answers; with ``m`` of them matching, the naive score is
``min(1, m / 3)`` ("right if at least three people said it"). The official scorer averages that
score over the ten leave-one-annotator-out subsets of nine answers, so a single question scores

    acc = 1/10 * sum_i min(1, #matches among the answers other than i / 3)

which gives 0.3, 0.6, 0.9, 1.0 for 1, 2, 3, >= 4 matching annotators out of 10 (not 1/3, 2/3, 1, 1).

Mirrors GT-Vision-Lab/VQA ``PythonEvaluationTools/vqaEvaluation/vqaEval.py`` (``VQAEval.evaluate``):
the prediction gets the full normalisation (``vqa_normalize``); the human answers are taken as
stored (the official annotation files are already normalised) and only get
``processPunctuation`` when the annotators disagree. ``normalize_gt=True`` applies the full
normalisation to the human answers as well, for raw answer lists (toy world, hand-made data).

What this file leaves out: InfoSeek (``infoseek.py``) and Encyclopedic-VQA (``evqa.py``) scoring.
"""
from __future__ import annotations

from collections.abc import Sequence

from kbvqa.metrics.normalize import vqa_normalize, vqa_process_punctuation


def vqa_accuracy(prediction: str, gt_answers: Sequence[str], normalize_gt: bool = False) -> float:
    """VQA accuracy of one prediction against its human answers (usually 10), in [0, 1].

    Any ``prediction`` string is accepted; an empty ``gt_answers`` raises ``ValueError``.
    """
    if isinstance(gt_answers, str) or len(gt_answers) == 0:
        raise ValueError("gt_answers must be a non-empty list of answer strings")
    pred = vqa_normalize(str(prediction))
    if normalize_gt:
        gts = [vqa_normalize(str(a)) for a in gt_answers]
    elif len(set(gt_answers)) > 1:
        gts = [vqa_process_punctuation(str(a)) for a in gt_answers]
    else:
        gts = [str(a) for a in gt_answers]
    matches = [g == pred for g in gts]
    total = sum(matches)
    # Leaving annotator i out removes one match exactly when annotator i matched.
    per_subset = [min(1.0, (total - left_out) / 3.0) for left_out in matches]
    return sum(per_subset) / len(per_subset)


def mean_vqa_accuracy(predictions: Sequence[str], gt_answer_lists: Sequence[Sequence[str]],
                      normalize_gt: bool = False) -> float:
    """Mean per-question VQA accuracy (the ``overall`` number of vqaEval.py, as a fraction)."""
    if len(predictions) != len(gt_answer_lists):
        raise ValueError(f"{len(predictions)} predictions for {len(gt_answer_lists)} questions")
    if not predictions:
        raise ValueError("no questions to score")
    scores = [vqa_accuracy(p, g, normalize_gt) for p, g in zip(predictions, gt_answer_lists)]
    return sum(scores) / len(scores)
