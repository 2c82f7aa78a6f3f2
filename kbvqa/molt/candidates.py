"""MOLT's candidates (§3.1, App. A, Eq. 3-5 / 12-15): coarse top-K, fusion top-N, passages, crops.

For a query Q = (I_q, T_q):

1. Coarse (Eq. 12): the pooled query-image vector against a FAISS inner-product index of the
   documents' *summaries* S_i (``DocumentIndex`` with ``texts=summaries``), top-K.
2. Fusion (Eq. 13): each of the K documents re-scored by late interaction (MaxSim, as the paper's
   Q-Former reranker "adopts late interaction") of the query tokens [E(T_q); E(I_q)] against the
   document tokens [E(S_i); E(I_i)], top-N. The paper's Q-Former is a trained fusion model; ours
   is the profile's encoders (toy encoders on cpu, CLIP on gpu) -- a stand-in, say so.
3. Passage extraction (Eq. 4-5 / 14-15, Table 13): each document's passages numbered 0..M-1 as the
   "Wiki Article", the model names one section id. An invalid reply falls back to section 0
   (ours). ``oracle_extractor`` is the toy world's perfect extractor (the gold passage's section).
4. Grounding (Table 11, App. B): the model returns ``[x1, y1, x2, y2]`` for the document image;
   the crop grows by a padding ratio; an invalid box (no box, ``[]``, x1 >= x2, outside the
   picture) falls back to the full image, as §3.1 says.

``CandidatePipeline.run(query)`` returns a ``CandidateSet`` (both rankings and the N ``Candidate``s,
ids "1".."N" in fusion order unless ``random_ids``); ``stage_recall`` is Recall@K per stage
(Tab. 2/3 analogue): gold document in the coarse top-K, in the fused top-N, gold passage among
the N extracted passages.

On the toy world (chapters 25-26 and the full-split experiment): ``pipeline_for(world)`` builds the
pipeline over the toy knowledge base (``doc_image_of``: each page's main picture at the judge's
size), ``candidate_sets`` runs it with the oracle extractor or a model's (``model_sections``,
batched), and ``load_results`` reads the committed Recall@K curves and gold ranks,
``data/experiments/molt/candidates.json``.

Leaves out: the ladder (``kbvqa.molt.ladder``), the encoders' training, the model's training, running
the full-split experiment and writing its table (``python -m kbvqa.experiments.molt_candidates``).
"""
from __future__ import annotations

import copy
import dataclasses
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbvqa.config import DATA_DIR, PROFILE_DEFAULT, profile_value, resolve_profile_fields
from kbvqa.data.schema import open_image
from kbvqa.models.encoders import get_encoders
from kbvqa.molt.ladder import Candidate, random_ids
from kbvqa.parsers import parse_box, parse_candidate_number
from kbvqa.prompts import render_chat
from kbvqa.prompts.formats import view_ref
from kbvqa.retrieval.late_interaction import maxsim
from kbvqa.retrieval.multilevel import DocumentIndex
from kbvqa.retrieval.subject import expand_box

__all__ = ["CandidateConfig", "CandidatePipeline", "CandidateSet", "GroundedImage", "candidate_sets", "doc_image_of",
           "extraction_prompt", "format_wiki", "ground_crop", "load_results", "model_extractor", "model_grounder",
           "model_sections", "oracle_extractor", "pipeline_for", "section_of", "stage_recall", "valid_box"]

Ranking = list[tuple[str, float]]
RESULTS = DATA_DIR / "experiments" / "molt" / "candidates.json"   # the resolver: a checkout or a wheel


@dataclass(frozen=True)
class CandidateConfig:
    """Sizes of the candidate pipeline (MOLT: CLIP top-K, then N = 5 for the tournament)."""

    k: int = 10                  # coarse top-K documents (ours; the toy KB has 100 pages)
    n: int = 5                   # fused top-N documents = tournament candidates (MOLT: 5)
    padding: float = 0.1         # crop padding ratio rho around the grounded box (App. B; value ours)
    random_ids: bool = False     # shuffle the ids 1..N (training data); False: id = fusion rank
    seed: int = 0                # random ids repeat exactly
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's

    def __post_init__(self):
        resolve_profile_fields(self, role="judge")
        for name in ("k", "n"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.n > self.k:
            raise ValueError(f"n ({self.n}) cannot exceed k ({self.k}): the fusion stage re-ranks the top-K")
        if not self.padding >= 0:
            raise ValueError(f"padding must be >= 0, got {self.padding}")


@dataclass
class CandidateSet:
    """One query's candidates and how they were found."""

    coarse: Ranking                      # top-K (doc id, inner product), Eq. 12
    fused: Ranking                       # top-N (doc id, MaxSim), Eq. 13
    candidates: list[Candidate]          # in fusion order
    sections: dict[str, int] = field(default_factory=dict)   # doc id -> extracted section index k_i


@dataclass(frozen=True)
class GroundedImage:
    image: Any                           # the crop, or the full image on fallback
    box: tuple | None                    # the model's box (None if invalid)
    region: tuple | None                 # the region cropped (padding, clamped); None: full image


def format_wiki(document) -> str:
    """Table 13's "Wiki Article": one "[m] passage" line per section, m = 0..M-1."""
    return "\n".join(f"[{m}] {p.text}" for m, p in enumerate(document.passages))


def valid_box(box, size: tuple[int, int]) -> bool:
    """True for a box with x1 < x2, y1 < y2 that overlaps the ``size`` (w, h) picture."""
    if box is None or len(box) != 4:
        return False
    x1, y1, x2, y2 = box
    return x1 < x2 and y1 < y2 and x2 > 0 and y2 > 0 and x1 < size[0] and y1 < size[1]


def ground_crop(image, box, padding: float = 0.1) -> GroundedImage:
    """Crop ``image`` to ``box`` grown by ``padding``; the full image when the box is invalid."""
    im = open_image(image)
    raw = tuple(box) if box is not None and len(box) == 4 else None
    region = expand_box(raw, im.size, padding, square=False) if raw and valid_box(raw, im.size) else None
    return GroundedImage(im.crop(region) if region else im, raw if region else None, region)


def _reply(model, prompt, max_new_tokens: int) -> str:
    out = model.generate([prompt], n=1, max_new_tokens=max_new_tokens, temperature=0.0, seed=0)
    first = out[0] if out else ""
    return str(first[0] if isinstance(first, (list, tuple)) and first else first or "")


def model_grounder(model, short: bool | str = PROFILE_DEFAULT, max_new_tokens: int = 24) -> Callable:
    """A grounder ``(image, question) -> box or None`` asking ``model`` with Table 11's prompt
    (``short``: the profile's rendering by default)."""
    short = profile_value("short_prompts", short)

    def ground(image, question: str):
        im = open_image(image)
        prompt = render_chat("molt_grounding", images=[im], short=short, question=question,
                             img_width=im.size[0], img_height=im.size[1])
        return parse_box(_reply(model, prompt, max_new_tokens))
    return ground


def extraction_prompt(question: str, query_image, document, short: bool) -> list[dict]:
    """Table 13's chat: the query image, the question and the document's sections numbered 0..M-1."""
    return render_chat("molt_passage_extraction", images=[query_image], short=short, question=question,
                       formatted_wiki_content=format_wiki(document))


def section_of(reply: str, document) -> int:
    """The section a Table 13 reply names; an invalid reply gives 0 (ours: the paper does not say)."""
    k = parse_candidate_number(str(reply), 0, len(document.passages) - 1)
    return 0 if k is None else k


def model_extractor(model, short: bool | str = PROFILE_DEFAULT, max_new_tokens: int = 6) -> Callable:
    """An extractor ``(question, query_image, document) -> section index`` (Table 13); an
    invalid reply gives 0 (``short``: the profile's rendering by default)."""
    short = profile_value("short_prompts", short)

    def extract(question: str, query_image, document) -> int:
        prompt = extraction_prompt(question, query_image, document, short)
        return section_of(_reply(model, prompt, max_new_tokens), document)
    return extract


def model_sections(model, requests: Sequence[tuple], short: bool | str = PROFILE_DEFAULT, max_new_tokens: int = 6,
                   batch_size: int = 16) -> list[int]:
    """``model_extractor``'s answers for many ``(question, query_image, document)`` at once: every
    Table 13 prompt in batched greedy calls (one section index per request, 0 for an invalid reply)."""
    short = profile_value("short_prompts", short)
    prompts = [extraction_prompt(q, image, d, short) for q, image, d in requests]
    outs = model.generate(prompts, n=1, max_new_tokens=max_new_tokens, temperature=0.0, seed=0,
                          batch_size=batch_size) if prompts else []
    return [section_of(o[0] if isinstance(o, (list, tuple)) and o else o, d) for o, (_, _, d) in zip(outs, requests)]


def oracle_extractor(world, query) -> Callable:
    """The toy world's perfect extractor: in every document, the section of the gold passage."""
    section = world.passage(query.evidence_ids[0]).section

    def extract(question: str, query_image, document) -> int:
        sections = [p.section for p in document.passages]
        return sections.index(section) if section in sections else 0
    return extract


class CandidatePipeline:
    """Coarse -> fusion -> passage -> crop over ``documents`` (see the module docstring).

    ``encoders``: ``pooled`` / ``encode_queries`` API (``kbvqa.models.encoders``);
    ``doc_image``: document -> its main image (default ``doc.image``); ``extractor(question,
    query_image, document) -> index`` (default: section 0); ``grounder(image, question) -> box``
    (default: none, full images)."""

    def __init__(self, documents: Sequence, encoders, config: CandidateConfig | None = None,
                 doc_image: Callable | None = None, grounder: Callable | None = None):
        self.config = config or CandidateConfig()
        self.encoders, self.grounder = encoders, grounder
        self.doc_image = doc_image or (lambda d: d.image)
        self.index = DocumentIndex(documents, encoders, texts=[d.summary or d.title for d in documents])
        self.by_id = self.index.by_id
        self._doc_tokens: dict[str, Any] = {}

    def coarse(self, query_image) -> Ranking:
        """Eq. 12: top-K documents by <v_q, s_i>."""
        vector = self.encoders.pooled(images=[open_image(query_image)]).float().numpy()
        return self.index.search(vector, self.config.k)[0]

    def _tokens(self, doc_id: str):
        if doc_id not in self._doc_tokens:
            d = self.by_id[doc_id]
            self._doc_tokens[doc_id] = self.encoders.encode_queries([open_image(self.doc_image(d))],
                                                                    [d.summary or d.title])[0]
        return self._doc_tokens[doc_id]

    def fuse(self, query_image, question: str, coarse: Ranking) -> Ranking:
        """Eq. 13: the top-K re-scored by MaxSim of [E(T_q); E(I_q)] vs [E(S_i); E(I_i)], top-N."""
        if not coarse:
            return []
        query = self.encoders.encode_queries([open_image(query_image)], [question])[0]
        scores = maxsim(query, [self._tokens(d) for d, _ in coarse]).tolist()
        ranked = sorted(zip((d for d, _ in coarse), scores), key=lambda x: -x[1])
        return [(d, float(s)) for d, s in ranked[:self.config.n]]

    def run(self, query, extractor: Callable | None = None) -> CandidateSet:
        """The N candidates of ``query`` (anything with ``image`` and ``question``)."""
        cfg = self.config
        coarse = self.coarse(query.image)
        fused = self.fuse(query.image, query.question, coarse)
        ids = (random_ids(len(fused), random.Random(f"ids:{cfg.seed}:{getattr(query, 'id', '')}"))
               if cfg.random_ids else [str(i) for i in range(1, len(fused) + 1)])
        candidates, sections = [], {}
        for cid, (doc_id, score) in zip(ids, fused):
            d = self.by_id[doc_id]
            k = extractor(query.question, query.image, d) if extractor else 0
            k = k if isinstance(k, int) and 0 <= k < len(d.passages) else 0
            sections[doc_id] = k
            image = self.doc_image(d)
            grounded = (ground_crop(image, self.grounder(image, query.question), cfg.padding)
                        if self.grounder else None)
            candidates.append(Candidate(cid, d.passages[k].text, grounded.image if grounded else image, doc_id,
                                        d.passages[k].id, score,
                                        {"box": grounded.box if grounded else None}))
        return CandidateSet(coarse, fused, candidates, sections)


def stage_recall(queries: Sequence, sets: Sequence[CandidateSet]) -> dict[str, float]:
    """Recall per stage over ``queries`` (Tab. 2/3 analogue): gold document in the coarse top-K
    (and at rank 1), in the fused top-N (and at rank 1: the "keep the retriever's first" baseline
    of the reranker), and gold passage among the extracted candidates."""
    if len(queries) != len(sets):
        raise ValueError(f"{len(queries)} queries but {len(sets)} candidate sets")
    if not sets:
        return dict.fromkeys(("coarse_recall", "coarse_top1", "fused_recall", "fused_top1", "passage_recall"),
                             float("nan"))

    def mean(hits) -> float:
        hits = list(hits)
        return sum(hits) / len(hits)

    gold_docs = [set(q.gold_doc_ids) for q in queries]
    return {"coarse_recall": mean(bool(g & {d for d, _ in s.coarse}) for g, s in zip(gold_docs, sets)),
            "coarse_top1": mean(bool(s.coarse) and s.coarse[0][0] in g for g, s in zip(gold_docs, sets)),
            "fused_recall": mean(bool(g & {d for d, _ in s.fused}) for g, s in zip(gold_docs, sets)),
            "fused_top1": mean(bool(s.fused) and s.fused[0][0] in g for g, s in zip(gold_docs, sets)),
            "passage_recall": mean(bool(set(q.evidence_ids) & {c.passage_id for c in s.candidates})
                                   for q, s in zip(queries, sets))}


# ------------------------------------------------------------------------------ the toy world
def doc_image_of(world, size: int | None | str = PROFILE_DEFAULT, role: str = "judge"):
    """The document image the candidates carry: the page's main picture at ``size`` px (default: the
    profile's for the model that plays ``role``, the tournament's judge: on the cpu 56 px for the
    tiny model, 112 px for the reader; native on the gpu)."""

    size = profile_value("image_size", size, role=role)
    return lambda d: view_ref(world, d.meta["image_id"], size)


def pipeline_for(world, encoders=None, k: int = 20, n: int | None = None):
    """``CandidatePipeline`` over the toy knowledge base; ``n`` defaults to ``k`` (a full fused list).

    ``encoders`` default to the shipped toy encoders in *both* profiles, by design: they are trained
    on the toy world (a hub CLIP has never seen its invented creatures) and they made the committed
    candidate table, whose ranks chapter 25's live subset must repeat exactly. They resize every
    image to their own size, so the profile's document-image size does not change their input."""

    return CandidatePipeline(world.documents, encoders or get_encoders("cpu"), CandidateConfig(k=k, n=n or k),
                             doc_image=doc_image_of(world))


def candidate_sets(world, pipeline, queries, n: int | None = None, extractor_model=None, batch_size: int = 16):
    """One ``CandidateSet`` per query with the oracle passage extractor, or with ``extractor_model``'s
    (Table 13; every query's documents asked in batched calls, ``model_sections``); ``n`` overrides
    the pipeline's fused length (the index and the token cache are shared, nothing is rebuilt)."""
    if n is not None:
        pipeline = copy.copy(pipeline)
        pipeline.config = dataclasses.replace(pipeline.config, n=n)
    if extractor_model is None:
        return [pipeline.run(q, oracle_extractor(world, q)) for q in queries]
    asked: list[tuple] = []                   # first pass: which documents each query's extractor sees
    for i, q in enumerate(queries):
        pipeline.run(q, lambda question, image, d, i=i: asked.append((i, question, image, d)) or 0)
    sections = model_sections(extractor_model, [a[1:] for a in asked], batch_size=batch_size)
    chosen = {(i, d.id): k for (i, _, _, d), k in zip(asked, sections)}
    return [pipeline.run(q, lambda question, image, d, i=i: chosen[(i, d.id)]) for i, q in enumerate(queries)]


def load_results(path: Path = RESULTS) -> dict:
    """The committed results (``FileNotFoundError`` with the command to make them if absent)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{path} is missing: run `python -m kbvqa.experiments.molt_candidates`")
    return json.loads(Path(path).read_text())
