"""ReAG's multi-level retrieval (§3.1, supp. A): coarse image -> document, fine crop -> document,
merged by the best score per document, then every passage of the top-k documents.

- Coarse: the whole query image I_q against the knowledge base; the documents are indexed by
  their text (``document_text``: "Title. summary", InfoSeek's image-to-text setup) as one pooled,
  normalised vector each in a FAISS inner-product index (inner product = cosine); the image's
  pooled vector is the query. P^cg = every passage of the top-k documents.
- Fine: the question's subject (``subject.extract_subject``), its box from a grounder
  (``subject_grounding``), the crop ``I_q^crop`` (margin, square, clamped: ``subject.crop_to_box``)
  retrieved the same way. No box -> no fine stage for that query.
- Merge: "the documents comprising P^cg and P^fg are merged and ranked by their relevance scores,
  and all passages contained in the top-k ranked documents are retained" -> P^noisy. A document
  found by both stages keeps its larger score (``merge_by_max``); both scores are cosines of one
  encoder, so they compare. Each passage carries its document's score and the stage(s) that
  found it.

ReAG uses EVA-CLIP-8B with k = 20 over ~2M pages; the cpu profile uses the toy encoders
(``get_encoders()``, 100 pages, so k is smaller), the gpu profile CLIP.
``evaluate_multilevel`` measures recall of the evidence passage (coarse vs coarse + fine, with the
grounder's box and with the ground-truth "oracle" box, which separates grounding quality from
retrieval quality) and the grounder's box IoU against the toy world's ground-truth boxes.

Leaves out: subject rules and boxes (``subject.py``), grounders (``subject_grounding.py``),
the critic that filters P^noisy (``kbvqa.reag.critic``), late-interaction retrieval (the package root).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from kbvqa.config import get_profile
from kbvqa.data.schema import Passage, open_image
from kbvqa.models.encoders import document_text, get_encoders
from kbvqa.retrieval.subject import box_iou, crop_to_box, expand_box, extract_subject, subject_rule

__all__ = ["DocumentIndex", "MultilevelConfig", "MultilevelResult", "MultilevelRetriever", "RetrievedPassage",
           "evaluate_multilevel", "evidence_recall", "merge_by_max", "passages_of"]

Ranking = list[tuple[str, float]]   # (document id, score), best first


@dataclass(frozen=True)
class MultilevelConfig:
    k: int = 5                      # documents per stage (ReAG: 20 of ~2M pages; the toy KB has 100)
    merged_k: int | None = None     # documents kept after the merge; None: k (ReAG §3.1)
    use_fine: bool = True           # run the fine-grained stage when a box is found
    margin: float = 0.15            # the crop grows by this share of the box side on every side
    square: bool = True             # square crops (the toy encoders were trained on square crops)
    subject_method: str = "rules"   # extract_subject method: "rules" (cpu), "spacy" or "auto" (gpu)

    def __post_init__(self):
        if not isinstance(self.k, int) or self.k < 1:
            raise ValueError(f"k must be a positive int, got {self.k!r}")
        if self.merged_k is not None and (not isinstance(self.merged_k, int) or self.merged_k < 1):
            raise ValueError(f"merged_k must be None or a positive int, got {self.merged_k!r}")
        if self.margin < 0:
            raise ValueError(f"margin must be >= 0, got {self.margin}")
        if self.subject_method not in ("rules", "spacy", "auto"):
            raise ValueError(f"subject_method must be 'rules', 'spacy' or 'auto', got {self.subject_method!r}")

    @classmethod
    def for_profile(cls, profile=None, **overrides) -> MultilevelConfig:
        """cpu: k = 5 of the toy world's 100 pages, the rule-based subject; gpu: ReAG's k = 20 and
        spaCy when it is installed."""

        prof = profile if hasattr(profile, "is_gpu") else get_profile(profile)
        base = dict(k=prof.size(5, 20), subject_method="auto" if prof.is_gpu else "rules")
        return cls(**{**base, **overrides})


@dataclass(frozen=True)
class RetrievedPassage:
    passage: Passage
    score: float     # its document's (merged) score
    stage: str       # "coarse", "fine" or "both": which stage's top-k held its document

    @property
    def id(self) -> str:
        return self.passage.id

    @property
    def doc_id(self) -> str:
        return self.passage.doc_id


@dataclass
class MultilevelResult:
    """Everything one query's retrieval produced (the book shows each part)."""

    coarse: Ranking                         # top-k of the whole image
    fine: Ranking                           # top-k of the crop ([] without a box)
    merged: Ranking                         # merge_by_max(coarse, fine)[:merged_k]
    passages: list[RetrievedPassage]        # P^noisy: every passage of the merged documents
    subject: str = ""                       # the question's subject ("" if none)
    box: tuple | None = None                # the grounded box in image pixels (None: no fine stage)
    crop_box: tuple | None = None           # the region actually cropped (margin, square, clamped)
    meta: dict = field(default_factory=dict)


def merge_by_max(*rankings: Sequence[tuple[str, float]], k: int | None = None) -> Ranking:
    """One ranking from several: each document keeps its largest score; sorted by score, ties in
    order of first appearance; the top ``k`` (all when ``None``)."""
    if k is not None and k < 0:
        raise ValueError(f"k must be >= 0 or None, got {k}")
    best: dict[str, float] = {}
    order: dict[str, int] = {}
    for ranking in rankings:
        for doc_id, score in ranking:
            score = float(score)
            if doc_id not in best:
                best[doc_id], order[doc_id] = score, len(order)
            elif score > best[doc_id]:
                best[doc_id] = score
    merged = sorted(best.items(), key=lambda item: (-item[1], order[item[0]]))
    return merged if k is None else merged[:k]


def passages_of(ranking: Ranking, documents_by_id: dict, coarse: Ranking = (),
                fine: Ranking = ()) -> list[RetrievedPassage]:
    """Every passage of the ranked documents, in rank order, each with its document's score and
    the stage(s) whose ranking holds the document."""
    in_coarse, in_fine = {d for d, _ in coarse}, {d for d, _ in fine}
    out = []
    for doc_id, score in ranking:
        stage = "both" if doc_id in in_coarse and doc_id in in_fine else "fine" if doc_id in in_fine else "coarse"
        out += [RetrievedPassage(p, float(score), stage) for p in documents_by_id[doc_id].passages]
    return out


class DocumentIndex:
    """FAISS inner-product index over one pooled, normalised text vector per document."""

    def __init__(self, documents: Sequence, encoders, texts: Sequence[str] | None = None):
        from kbvqa.retrieval.faiss_index import inner_product_index

        self.documents = list(documents)
        if not self.documents:
            raise ValueError("DocumentIndex needs at least one document")
        self.ids = [d.id for d in self.documents]
        self.by_id = {d.id: d for d in self.documents}
        texts = list(texts) if texts is not None else [document_text(d) for d in self.documents]
        vectors = encoders.pooled(texts=texts).float().numpy().astype(np.float32)
        self.index = inner_product_index(vectors)

    def __len__(self) -> int:
        return len(self.ids)

    def search(self, vectors, k: int) -> list[Ranking]:
        """Top-``k`` (document id, cosine) per row of ``vectors`` [B, d]."""
        vectors = np.ascontiguousarray(np.asarray(vectors, dtype=np.float32).reshape(len(vectors), -1))
        if len(vectors) == 0:
            return []
        scores, idx = self.index.search(vectors, min(k, len(self.ids)))
        return [[(self.ids[j], float(s)) for s, j in zip(row_s, row_i) if j >= 0] for row_s, row_i in zip(scores, idx)]


class MultilevelRetriever:
    """Coarse + fine retrieval over ``documents`` (see the module docstring).

    ``encoders``: any object with ``pooled(texts=..)`` / ``pooled(images=..)`` (default: the
    profile's ``get_encoders()``); ``grounder``: any object with ``ground(images, questions,
    subjects)`` (``subject_grounding``); without one, only explicit boxes give a fine stage.
    """

    def __init__(self, documents: Sequence, encoders=None, config: MultilevelConfig | None = None, grounder=None):
        if encoders is None:
            encoders = get_encoders()
        self.encoders, self.config, self.grounder = encoders, config or MultilevelConfig(), grounder
        self.index = DocumentIndex(documents, encoders)

    def search_images(self, images: Sequence, k: int | None = None) -> list[Ranking]:
        """Top-k documents of each image (pooled image vector against the document index)."""
        if len(images) == 0:
            return []
        vectors = self.encoders.pooled(images=[open_image(im) for im in images]).float().numpy()
        return self.index.search(vectors, k or self.config.k)

    def crops(self, images: Sequence, boxes: Sequence) -> tuple[list, list]:
        """(cropped PIL images, the regions cropped) for each (image, box); None where no box."""
        cfg, crops, regions = self.config, [], []
        for image, box in zip(images, boxes):
            im = open_image(image)
            region = expand_box(box, im.size, cfg.margin, cfg.square) if box is not None else None
            regions.append(region)
            crops.append(crop_to_box(im, box, cfg.margin, cfg.square) if region is not None else None)
        return crops, regions

    def retrieve(self, queries: Sequence, boxes: Sequence | None = None) -> list[MultilevelResult]:
        """P^noisy for each query (anything with ``image`` and ``question``). ``boxes``: one box (or
        None) per query in image pixels, e.g. the ground truth (the "oracle box"); without it the
        grounder is asked (when ``config.use_fine``)."""
        cfg = self.config
        queries = list(queries)
        images = [open_image(q.image) for q in queries]
        questions = [q.question for q in queries]
        subjects = [extract_subject(t, cfg.subject_method) for t in questions]
        if boxes is not None and len(boxes) != len(queries):
            raise ValueError(f"{len(boxes)} boxes for {len(queries)} queries")
        if not cfg.use_fine:
            boxes = [None] * len(queries)
        elif boxes is None:
            boxes = (self.grounder.ground(images, questions, subjects) if self.grounder is not None
                     else [None] * len(queries))
        coarse = self.search_images(images)
        crops, regions = self.crops(images, boxes)
        with_crop = [i for i, c in enumerate(crops) if c is not None]
        fine_found = dict(zip(with_crop, self.search_images([crops[i] for i in with_crop])))
        results = []
        for i in range(len(queries)):
            fine = fine_found.get(i, [])
            merged = merge_by_max(coarse[i], fine, k=cfg.merged_k or cfg.k)
            results.append(MultilevelResult(coarse=coarse[i], fine=fine, merged=merged,
                                            passages=passages_of(merged, self.index.by_id, coarse[i], fine),
                                            subject=subjects[i], box=boxes[i], crop_box=regions[i]))
        return results


# --- evaluation ---------------------------------------------------------------------------------
def evidence_recall(ranking: Ranking, evidence_ids: Sequence[str], documents_by_id: dict) -> float:
    """Share of ``evidence_ids`` among the passages of the ranked documents (NaN without evidence)."""
    if not evidence_ids:
        return float("nan")
    found = {p.id for doc_id, _ in ranking for p in documents_by_id[doc_id].passages}
    return sum(e in found for e in evidence_ids) / len(evidence_ids)


def _mean(values) -> float:
    values = [v for v in values if v == v]   # NaN-free
    return round(float(np.mean(values)), 4) if values else float("nan")


def evaluate_multilevel(world, retriever: MultilevelRetriever | None = None, grounder=None, n: int | None = 200,
                        ks: Sequence[int] = (1, 2, 3, 5), split: str = "kbvqa_test") -> dict:
    """Evidence recall of coarse vs coarse + fine on the first ``n`` queries of ``world.<split>``
    (queries with ``evidence_ids`` and a ground-truth ``box`` in image pixels), for each k in ``ks``.

    Returns ``{"n", "rows", "grounding", "subjects"}``; each row (one k): ``coarse``,
    ``coarse_fine`` (grounder's box), ``coarse_fine_oracle`` (ground-truth box), ``fine_oracle``
    (the crop alone), ``union`` (coarse + fine top-k, not cut back to k) and the mean passages per
    query of ``coarse`` and ``union``. ``grounding``: mean IoU (0 where no box), share with IoU >= 0.5,
    share of queries with a box. ``subjects``: how often each rule of supp. A fired, and the share
    equal to ``meta["noun"]`` where the queries have one.
    """

    if not ks or any(not isinstance(k, int) or k < 1 for k in ks):
        raise ValueError(f"ks must be positive ints, got {ks!r}")
    queries = list(getattr(world, split))[:n]
    if not queries:
        raise ValueError(f"world.{split} has no queries")
    k_max = max(ks)
    retriever = retriever or MultilevelRetriever(world.documents, config=MultilevelConfig(k=k_max))
    grounder = grounder or retriever.grounder
    by_id = retriever.index.by_id
    images = [open_image(q.image) for q in queries]
    questions = [q.question for q in queries]
    rules = [subject_rule(t) for t in questions]
    predicted = grounder.ground(images, questions, [r.text for r in rules]) if grounder else [None] * len(queries)
    coarse = retriever.search_images(images, k_max)

    def fine_rankings(boxes):
        crops, _ = retriever.crops(images, boxes)
        have = [i for i, c in enumerate(crops) if c is not None]
        found = dict(zip(have, retriever.search_images([crops[i] for i in have], k_max)))
        return [found.get(i, []) for i in range(len(queries))]

    fine_pred, fine_oracle = fine_rankings(predicted), fine_rankings([q.box for q in queries])
    rows = []
    for k in sorted(set(ks)):
        runs = {"coarse": [c[:k] for c in coarse],
                "coarse_fine": [merge_by_max(c[:k], f[:k], k=k) for c, f in zip(coarse, fine_pred)],
                "coarse_fine_oracle": [merge_by_max(c[:k], f[:k], k=k) for c, f in zip(coarse, fine_oracle)],
                "fine_oracle": [f[:k] for f in fine_oracle],
                "union": [merge_by_max(c[:k], f[:k]) for c, f in zip(coarse, fine_pred)]}
        row = {"k": k}
        for name, rankings in runs.items():
            row[name] = _mean(evidence_recall(r, q.evidence_ids, by_id) for r, q in zip(rankings, queries))
        for name in ("coarse", "union"):
            row[f"passages_{name}"] = _mean(sum(len(by_id[d].passages) for d, _ in r) for r in runs[name])
        rows.append(row)
    ious = [box_iou(list(b) if b is not None else None, list(q.box)) for b, q in zip(predicted, queries)]
    nouns = [q.meta.get("noun") for q in queries if isinstance(getattr(q, "meta", None), dict)]
    subjects = {rule: sum(r.rule == rule for r in rules) for rule in ("demonstrative", "preposition", "last_noun",
                                                                         "none")}
    if nouns and all(nouns):
        subjects["equals_noun"] = _mean(r.text == q.meta["noun"] for r, q in zip(rules, queries))
    return {"n": len(queries), "rows": rows, "subjects": subjects,
            "grounding": {"mean_iou": _mean(ious), "iou50": _mean(i >= 0.5 for i in ious),
                          "box_rate": _mean(b is not None for b in predicted)},
            "boxes": [(q.id, b, q.box) for q, b in zip(queries, predicted)]}


def score_scales(coarse: Sequence, fine: Sequence) -> dict[str, float]:
    """Mean top-1 cosine of the coarse and the fine rankings (lists of ``[(doc_id, score), ...]``;
    empty rankings are skipped) and the share of queries whose merged top-1 comes from the fine one."""
    top_c = [r[0][1] for r in coarse if r]
    top_f = [r[0][1] for r in fine if r]
    both = [(c, f) for c, f in zip(coarse, fine) if c and f]
    fine_wins = [f[0][1] > c[0][1] and f[0][0] != c[0][0] for c, f in both]

    def mean(v):
        return round(sum(v) / len(v), 4) if v else float("nan")

    return {"coarse_top1": mean(top_c), "fine_top1": mean(top_f), "fine_takes_top1": mean(fine_wins)}
