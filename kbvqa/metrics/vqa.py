"""VQA accuracy (VizWiz, VQA v2) as GT-Vision-Lab/VQA
``PythonEvaluationTools/vqaEvaluation/vqaEval.py`` computes it.

With ``m`` of the human answers matching, the naive score ``min(1, m/3)`` is averaged over the ten
leave-one-annotator-out subsets of nine answers:

    acc = 1/10 * sum_i min(1, #matches among the answers other than i / 3)

which gives 0.3, 0.6, 0.9, 1.0 for 1, 2, 3, >= 4 matching annotators out of 10. The prediction gets
the full normalisation (``vqa_normalize``); the human answers are taken as stored (the official
files are normalised already) and only get ``processPunctuation`` when the annotators disagree;
``normalize_gt=True`` normalises them fully, for raw answer lists (toy world, hand-made data).

What this file leaves out: the normalisations (``normalize.py``). InfoSeek (``infoseek.py``) and
Encyclopedic-VQA (``evqa.py``) used to live here; their names are re-exported below so that old
imports keep working.
"""
from __future__ import annotations

from collections.abc import Sequence

from kbvqa.metrics.evqa import (  # noqa: F401  (re-exported: these used to live here)
    BEM_THRESHOLD,
    EVQA_QUESTION_TYPES,
    IOU_THRESHOLD,
    MULTI_ANSWER_TYPES,
    BEMScorer,
    evqa_exact_match,
    evqa_score,
    list_iou,
    mean_evqa_score,
    multi_answer_exact_match,
    single_answer_exact_match,
    split_candidate_items,
    split_references,
)
from kbvqa.metrics.infoseek import (  # noqa: F401  (re-exported: these used to live here)
    NUMERIC_TOLERANCE,
    RANGE_IOU_THRESHOLD,
    harmonic_mean,
    infoseek_evaluate,
    infoseek_evaluate_official,
    infoseek_exact_match,
    infoseek_score,
    numeric_range_correct,
    parse_numeric_prediction,
    range_iou,
)
from kbvqa.metrics.normalize import (
    vqa_normalize,
    vqa_process_punctuation,
)


# --- VQA accuracy ----------------------------------------------------------------------------
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
