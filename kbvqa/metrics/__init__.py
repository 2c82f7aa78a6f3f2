"""Official scorers, re-implemented so that their numbers match the official tools.

Modules (each docstring names the official file it mirrors):

- ``normalize``   answer normalisation of VQA v2, InfoSeek and Encyclopedic-VQA
- ``vqa``         VQA accuracy with 10 annotators (VizWiz, VQA v2), current (2021) and 2016 versions
- ``infoseek``    InfoSeek string/time/numerical scoring and its split score (harmonic mean of the
                  unseen-question and unseen-entity splits), on the book's records or official rows
- ``evqa``        Encyclopedic-VQA exact match, multi-answer IoU and a BEM hook
- ``toy_kbvqa``   the toy world's KB-VQA answers scored by the two above, and the split score with a
                  bootstrap interval resampled within the splits
- ``choice``      MMMU multiple-choice / open parsing and ScienceQA letter accuracy
- ``mathvision``  MATH-Vision answer extraction and equality (``lexeval``: safe LaTeX arithmetic)
- ``retrieval``   BioASQ precision/recall/F1/hit rate, Recall@K, MRR, average precision
- ``rouge``       ROUGE-2 and ROUGE-SU4 as ROUGE-1.5.5.pl (``porter``: its Porter stemmer)

What this package leaves out: parsing of free model output into answers (``kbvqa.parsers``) and
training rewards (``kbvqa.metrics.answers`` judges answers for ReAG's reward, ``kbvqa.reag.rewards``).
"""
from kbvqa.metrics.choice import (
    choice_accuracy,
    mmmu_accuracy,
    mmmu_eval_choice,
    mmmu_eval_open,
    mmmu_official_rng,
    mmmu_parse_batch,
    mmmu_parse_choice,
    mmmu_parse_open,
    scienceqa_parse_choice,
)
from kbvqa.metrics.evqa import evqa_exact_match, evqa_score, mean_evqa_score
from kbvqa.metrics.infoseek import (
    harmonic_mean,
    infoseek_evaluate,
    infoseek_evaluate_official,
    infoseek_exact_match,
    infoseek_score,
    numeric_range_correct,
    parse_numeric_prediction,
    range_iou,
)
from kbvqa.metrics.lexeval import evaluate_latex
from kbvqa.metrics.mathvision import (
    mathvision_correct,
    mathvision_extract_answer,
    mathvision_is_equal,
)
from kbvqa.metrics.normalize import evqa_normalize, infoseek_normalize, vqa_normalize
from kbvqa.metrics.porter import porter_stem
from kbvqa.metrics.retrieval import (
    RetrievalScores,
    average_precision,
    hit_at_k,
    mean_over_queries,
    mean_reciprocal_rank,
    mean_retrieval_prf,
    pubmed_id,
    recall_at_k,
    reciprocal_rank,
    retrieval_prf,
)
from kbvqa.metrics.rouge import RougeScore, mean_rouge, rouge_n, rouge_su, rouge_tokens
from kbvqa.metrics.toy_kbvqa import (
    SplitDiff,
    SplitScore,
    kbvqa_split_of,
    kbvqa_split_score,
    official_correct,
    paired_split_bootstrap,
    records_split_score,
    score_records,
    split_score_fields,
    toy_kbvqa_correct,
)
from kbvqa.metrics.vqa import mean_vqa_accuracy, vqa_accuracy

__all__ = [
    "RetrievalScores", "RougeScore", "SplitDiff", "SplitScore", "average_precision",
    "choice_accuracy", "evaluate_latex", "evqa_exact_match", "evqa_normalize", "evqa_score",
    "harmonic_mean", "hit_at_k", "infoseek_evaluate", "infoseek_evaluate_official",
    "infoseek_exact_match", "infoseek_normalize", "infoseek_score", "kbvqa_split_of", "kbvqa_split_score",
    "mathvision_correct", "mathvision_extract_answer", "mathvision_is_equal", "mean_evqa_score",
    "mean_over_queries", "mean_reciprocal_rank", "mean_retrieval_prf", "mean_rouge",
    "mean_vqa_accuracy", "mmmu_accuracy", "mmmu_eval_choice", "mmmu_eval_open", "mmmu_official_rng",
    "mmmu_parse_batch", "mmmu_parse_choice", "mmmu_parse_open", "numeric_range_correct",
    "official_correct", "paired_split_bootstrap", "parse_numeric_prediction", "porter_stem", "pubmed_id", "range_iou",
    "recall_at_k", "reciprocal_rank", "records_split_score", "retrieval_prf", "rouge_n", "rouge_su", "rouge_tokens",
    "scienceqa_parse_choice", "score_records", "split_score_fields", "toy_kbvqa_correct", "vqa_accuracy",
    "vqa_normalize",
]

# Shared by every paper's chapters (issue #16): the judge of ReAG supp. B, ranking AUC, noise bars.
from kbvqa.metrics.answers import answer_correct, psi_num, query_gold  # noqa: E402
from kbvqa.metrics.intervals import (  # noqa: E402
    check_agreement,
    paired_bootstrap,
    paired_sample_size,
    same_answers,
    wilson_interval,
)
from kbvqa.metrics.ranking import roc_auc, separation_auc  # noqa: E402

__all__ += ["answer_correct", "check_agreement", "paired_bootstrap", "paired_sample_size", "psi_num",
            "query_gold", "roc_auc", "same_answers", "separation_auc", "wilson_interval"]
