"""VQA accuracy (VizWiz, VQA v2) as GT-Vision-Lab/VQA
``PythonEvaluationTools/vqaEvaluation/vqaEval.py`` computes it, in its two versions.

With ``m`` of the human answers matching, the naive score ``min(1, m/3)`` is averaged over the ten
leave-one-annotator-out subsets of nine answers:

    acc = 1/10 * sum_i min(1, #matches among the answers other than i / 3)

which gives 0.3, 0.6, 0.9, 1.0 for 1, 2, 3, >= 4 matching annotators out of 10. The versions
differ only in what is normalised before answers are compared:

- ``version="2021"`` (default): the current file, since the 2021 commit "Fixed processing answers
  bug" (read at a013f00). Every human answer and the prediction lose newlines, tabs and surrounding spaces. When
  the answers are *not* all identical, ``processPunctuation`` and ``processDigitArticle``
  (``vqa_process_punctuation``, ``vqa_process_digit_article``) run on every answer *and* on the
  prediction; when all of them are identical, nothing else is normalised on either side, so
  "Yes" against ten "yes" scores 0 (by design: such questions are often about written text).
- ``version="2016"``: the 2016 file, used until that commit (read at c4e6a0e). The prediction is
  always fully normalised (``vqa_normalize``); the human answers are taken as stored (the
  official annotation files are normalised already) and only get ``processPunctuation``, not
  stripped, when the annotators disagree.

``normalize_gt=True`` is a convenience for raw answer lists (toy world, hand-made rows): both sides
are fully normalised (``vqa_normalize``) whatever the version, so the two versions agree.

What this file leaves out: the normalisations (``normalize.py``), InfoSeek (``infoseek.py``) and
Encyclopedic-VQA (``evqa.py``); ``kbvqa.metrics`` exports all three.
"""
from __future__ import annotations

from collections.abc import Sequence

from kbvqa.metrics.normalize import (
    vqa_normalize,
    vqa_process_digit_article,
    vqa_process_punctuation,
)

VQA_VERSIONS = ("2021", "2016")
_VERSION_ALIASES = {"2021": "2021", "current": "2021", "2016": "2016", "legacy": "2016"}


def _vqa_version(version: str | int) -> str:
    try:
        return _VERSION_ALIASES[str(version).lower()]
    except KeyError:
        raise ValueError(f"unknown vqaEval.py version {version!r}; expected one of {VQA_VERSIONS}") from None


def _strip(text: str) -> str:
    return str(text).replace("\n", " ").replace("\t", " ").strip()


def _process(text: str) -> str:
    return vqa_process_digit_article(vqa_process_punctuation(text))


def vqa_compared_answers(prediction: str, answers: Sequence[str], normalize_gt: bool = False,
                         version: str = "2021") -> tuple[str, list[str]]:
    """The prediction and human answers exactly as ``vqaEval.py`` compares them (module docstring)."""
    if isinstance(answers, str) or len(answers) == 0:
        raise ValueError("answers must be a non-empty list of answer strings")
    version = _vqa_version(version)
    if normalize_gt:
        return vqa_normalize(str(prediction)), [vqa_normalize(str(a)) for a in answers]
    if version == "2021":
        pred, gts = _strip(prediction), [_strip(a) for a in answers]
        if len(set(gts)) > 1:
            pred, gts = _process(pred), [_process(g) for g in gts]
        return pred, gts
    raw = [str(a) for a in answers]
    gts = [vqa_process_punctuation(a) for a in raw] if len(set(raw)) > 1 else raw
    return vqa_normalize(str(prediction)), gts


def vqa_accuracy(prediction: str, answers: Sequence[str], normalize_gt: bool = False,
                 version: str = "2021") -> float:
    """VQA accuracy of one prediction against its human answers (usually 10), in [0, 1].

    ``version``: "2021" (default: the current ``vqaEval.py``, after the 2021 commit "Fixed
    processing answers bug") or "2016" (the 2016 file before it); see the module docstring. Any
    ``prediction`` string is accepted; an empty ``answers`` raises ``ValueError``.
    """
    pred, gts = vqa_compared_answers(prediction, answers, normalize_gt, version)
    matches = [g == pred for g in gts]
    total = sum(matches)
    # Leaving annotator i out removes one match exactly when annotator i matched.
    per_subset = [min(1.0, (total - left_out) / 3.0) for left_out in matches]
    return sum(per_subset) / len(per_subset)


def mean_vqa_accuracy(predictions: Sequence[str], gt_answer_lists: Sequence[Sequence[str]],
                      normalize_gt: bool = False, version: str = "2021") -> float:
    """Mean per-question VQA accuracy (the ``overall`` number of vqaEval.py, as a fraction)."""
    if len(predictions) != len(gt_answer_lists):
        raise ValueError(f"{len(predictions)} predictions for {len(gt_answer_lists)} questions")
    if not predictions:
        raise ValueError("no questions to score")
    scores = [vqa_accuracy(p, g, normalize_gt, version) for p, g in zip(predictions, gt_answer_lists)]
    return sum(scores) / len(scores)
