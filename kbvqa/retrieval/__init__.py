"""Retrieval: late-interaction MaxSim and the hybrid (text + image token) index of RCTS §3.3.

- ``late_interaction``: MaxSim (RCTS Eq. 4) written with loops (``maxsim_loop``), for one query
  against many items (``maxsim``) and for many x many in bounded memory (``maxsim_matrix``);
  ``PaddedTokens`` holds ragged token matrices as one tensor + mask.
- ``hybrid``: ``encode_items`` (E_T, E_I and pooled vectors of question + image, Eq. 2-3),
  ``HybridIndex`` (FAISS first stage on pooled vectors, exact MaxSim re-scoring, modes text /
  image / hybrid, the query itself dropped as in the official code).
- ``hybrid_eval``: Recall@K / Precision@K of the three modes on the toy world.
- ``multilevel``, ``subject``, ``subject_grounding``: ReAG §3.1 coarse (image -> document) and fine
  (subject rule, grounding, crop) retrieval merged by max score per document.

Leaves out: encoders (``kbvqa.models.encoders``), metrics (``kbvqa.metrics.retrieval``), plots
(``kbvqa.viz.retrieval``).
"""
from kbvqa.retrieval.hybrid import MODES, EncodedItems, HybridConfig, HybridIndex, SearchResult, encode_items
from kbvqa.retrieval.hybrid_eval import (
    RELEVANCE,
    RetrievalEvaluation,
    evaluate_rcts_retrieval,
    precision_at_k,
    relevant_ids,
)
from kbvqa.retrieval.late_interaction import PaddedTokens, as_padded, maxsim, maxsim_loop, maxsim_matrix
from kbvqa.retrieval.multilevel import (
    DocumentIndex,
    MultilevelConfig,
    MultilevelRetriever,
    evaluate_multilevel,
    merge_by_max,
    score_scales,
)
from kbvqa.retrieval.subject import box_iou, crop_to_box, expand_box, extract_subject, subject_rule
from kbvqa.retrieval.subject_grounding import GroundingDinoGrounder, VLMGrounder, get_grounder

__all__ = ["EncodedItems", "HybridConfig", "HybridIndex", "MODES", "PaddedTokens", "RELEVANCE",
           "RetrievalEvaluation", "SearchResult", "as_padded", "encode_items", "evaluate_rcts_retrieval",
           "maxsim", "maxsim_loop", "maxsim_matrix", "precision_at_k", "relevant_ids",
           "DocumentIndex", "MultilevelConfig", "MultilevelRetriever", "evaluate_multilevel", "merge_by_max",
           "score_scales", "box_iou", "crop_to_box", "expand_box", "extract_subject", "subject_rule",
           "GroundingDinoGrounder", "VLMGrounder", "get_grounder"]
