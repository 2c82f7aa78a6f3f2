"""Hybrid retrieval of knowledge-base examples (RCTS §3.3): FAISS first stage + exact MaxSim.

RCTS indexes every knowledge-base example by the *same* inputs a user query has, its question
text and its image, never its answer (§3.3): E_i = [E_T_i; E_I_i] (Eq. 3), token rows from the
text and image encoders (Eq. 2); a query E_u = [E_T_u; E_I_u] is scored against each by MaxSim
(Eq. 4) and the top N examples are the candidate actions of the tree search (§3.4, Eq. 5).

Two stages, as in ColBERT-style late-interaction engines:

1. first stage: one pooled, L2-normalised vector per item (``encoders.pooled``) in a FAISS
   inner-product index; the ``first_stage`` nearest by cosine become candidates;
2. re-scoring: exact Eq. 4 MaxSim of the query tokens against each candidate's tokens
   (``late_interaction.maxsim``); sorted by score, ties broken by knowledge-base position.

``first_stage=0`` skips stage 1 and scores the whole knowledge base with MaxSim (the exact Eq. 4
ranking; fine for a few thousand items); ``rescore=False`` stops after stage 1 (the pooled-vector
baseline, scores are cosines). Modes pick the tokens (and pooled vector) of an item:
``"text"`` = E_T only, ``"image"`` = E_I only, ``"hybrid"`` = [E_T; E_I] (Eq. 3; pooled: the
normalised sum of the text and image vectors). Like the official code (yannqi/RCTS-RAG), a search
retrieves k + len(excluded) items and drops the query itself when it is in the knowledge base.

Differences from the official code: it uses PreFLMR (ViT-L) through ColBERT's PLAID engine, whose
first stage is token-level centroid search over 8-bit compressed residuals; ours is a pooled-vector
FAISS search over uncompressed tokens, the same two-stage idea in a form one can read whole. The
official code prefixes query text with "Question:" and falls back to text-only FAISS (MiniLM) for a
query without an image; here an item without an image simply has no image tokens.

Leaves out: MaxSim itself (``late_interaction.py``), Recall@K on the toy world
(``hybrid_eval.py``), the encoders (``kbvqa.models.encoders``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from kbvqa.data.schema import open_image
from kbvqa.retrieval.late_interaction import PaddedTokens, maxsim, maxsim_matrix

MODES = ("text", "image", "hybrid")


def _check_mode(mode: str) -> str:
    if mode not in MODES:
        raise ValueError(f"unknown retrieval mode {mode!r}; expected one of {MODES}")
    return mode


@dataclass
class EncodedItems:
    """Token matrices and pooled vectors of items (queries or knowledge-base examples)."""

    ids: list[str]
    text_tokens: list[torch.Tensor]    # E_T per item, [l_T, d] (Eq. 2)
    image_tokens: list[torch.Tensor]   # E_I per item, [l_I, d] ([0, d] without an image)
    text_pooled: torch.Tensor          # [N, d], normalised
    image_pooled: torch.Tensor         # [N, d], normalised (zeros without an image)

    def __len__(self) -> int:
        return len(self.ids)

    def tokens(self, mode: str) -> list[torch.Tensor]:
        """E_T, E_I or [E_T; E_I] (Eq. 3) of every item."""
        _check_mode(mode)
        if mode == "text":
            return list(self.text_tokens)
        if mode == "image":
            return list(self.image_tokens)
        return [torch.cat([t, i]) for t, i in zip(self.text_tokens, self.image_tokens)]

    def pooled(self, mode: str) -> torch.Tensor:
        """[N, d] first-stage vectors: text, image, or the normalised sum of both (hybrid)."""
        _check_mode(mode)
        if mode == "text":
            return self.text_pooled
        if mode == "image":
            return self.image_pooled
        return F.normalize(self.text_pooled + self.image_pooled, dim=-1)


@torch.no_grad()
def _tokens_and_pooled(encoders, kind: str, inputs: list) -> tuple[list[torch.Tensor], torch.Tensor]:
    """Normalised token matrices and pooled vectors of texts or images. Encoders built on
    ``LateInteractionAPI`` give both from one forward pass (``_text_batch`` / ``_image_batch``,
    its documented primitives); any other encoder is asked twice through the public API."""
    primitive = getattr(encoders, f"_{kind}_batch", None)
    if primitive is None or not hasattr(encoders, "_chunks"):
        tokens = encoders.encode_text(inputs) if kind == "text" else encoders.encode_image(inputs)
        pooled = encoders.pooled(texts=inputs) if kind == "text" else encoders.pooled(images=inputs)
        return tokens, pooled
    tokens, pooled = [], []
    for chunk in encoders._chunks(inputs):
        out = primitive(chunk)
        tok, pool = (out[0], out[2]) if kind == "text" else out
        mask = out[1].bool() if kind == "text" else torch.ones(tok.shape[:2], dtype=torch.bool)
        tok = F.normalize(tok.float(), dim=-1).cpu()
        tokens += [t[m] for t, m in zip(tok, mask.cpu())]
        pooled.append(F.normalize(pool.float(), dim=-1).cpu())
    return tokens, torch.cat(pooled)


def encode_items(encoders, items: Sequence) -> EncodedItems:
    """Encode the question text and image of each item (a ``Query`` / ``KBExample``; the answer is
    never used, §3.3): E_T and E_I, one vector per token (Eq. 2), and the item as [E_T, E_I]
    (``EncodedItems.tokens("hybrid")``, Eq. 3). Identical question texts are encoded once (toy
    questions repeat a lot).

    Appendix: RCTS | Eq. 2-3 |
        tests/test_retrieval_hybrid.py::test_encode_items_dedups_texts_and_handles_items_without_image | rcts-eq2
    """

    items = list(items)
    if not items:
        raise ValueError("encode_items needs at least one item")
    texts = [it.question or "" for it in items]
    unique = sorted(set(texts))
    u_tokens, u_pooled = _tokens_and_pooled(encoders, "text", unique)
    row = {t: i for i, t in enumerate(unique)}
    images = [open_image(it.image) for it in items]
    with_image = [i for i, im in enumerate(images) if im is not None]
    image_tokens = [torch.zeros(0, encoders.dim)] * len(items)
    image_pooled = torch.zeros(len(items), encoders.dim)
    if with_image:
        tokens, pooled = _tokens_and_pooled(encoders, "image", [images[i] for i in with_image])
        for i, t in zip(with_image, tokens):
            image_tokens[i] = t
        image_pooled[with_image] = pooled
    return EncodedItems([it.id for it in items], [u_tokens[row[t]] for t in texts], image_tokens,
                        u_pooled[[row[t] for t in texts]], image_pooled)


@dataclass(frozen=True)
class HybridConfig:
    mode: str = "hybrid"       # item tokens: "text" (E_T), "image" (E_I), "hybrid" ([E_T; E_I], Eq. 3)
    first_stage: int = 64      # FAISS candidates re-scored by MaxSim; 0 = MaxSim over every item
    max_elements: int | None = None   # similarities per MaxSim block (memory bound); None = device default
    rescore: bool = True       # False: stop after stage 1 and rank by pooled cosine (a baseline)

    def __post_init__(self):
        _check_mode(self.mode)
        if not isinstance(self.first_stage, int) or self.first_stage < 0:
            raise ValueError(f"first_stage must be an int >= 0, got {self.first_stage!r}")
        if not self.rescore and self.first_stage == 0:
            raise ValueError("rescore=False ranks by the first stage alone; it needs first_stage > 0")
        if self.max_elements is not None and (not isinstance(self.max_elements, int) or self.max_elements < 1):
            raise ValueError(f"max_elements must be an int >= 1 or None, got {self.max_elements!r}")


@dataclass(frozen=True)
class SearchResult:
    """The top items of one query, best first: knowledge-base ids, positions and scores (Eq. 4;
    pooled cosines when ``rescore`` is off)."""

    ids: list[str]
    indices: list[int]
    scores: list[float]


class HybridIndex:
    """Knowledge-base examples indexed for two-stage late-interaction search (module docstring)."""

    def __init__(self, items: EncodedItems, config: HybridConfig | None = None):
        from kbvqa.retrieval.faiss_index import inner_product_index

        self.config = config or HybridConfig()
        self.items = items
        self.ids = list(items.ids)
        self._position = {item_id: i for i, item_id in enumerate(self.ids)}
        if len(self._position) != len(self.ids):
            raise ValueError("knowledge-base ids must be unique")
        self.docs = PaddedTokens.from_list(items.tokens(self.config.mode), dim=items.text_pooled.shape[1])
        pooled = items.pooled(self.config.mode).float().contiguous().numpy()
        self.faiss_index = inner_product_index(pooled)   # inner product = cosine (normalised); GPU if it can

    @classmethod
    def build(cls, encoders, kb_items: Sequence, config: HybridConfig | None = None) -> HybridIndex:
        """Encode ``kb_items`` (question + image, Eq. 3) and index them."""
        return cls(encode_items(encoders, kb_items), config)

    def __len__(self) -> int:
        return len(self.ids)

    def _candidates(self, pooled: torch.Tensor, k: int) -> list[tuple[list[int], torch.Tensor]]:
        """Stage 1 per row of ``pooled`` [B, d]: FAISS top max(first_stage, k) (top k alone when
        ``rescore`` is off) as (positions, cosines)."""
        n = min(len(self), max(self.config.first_stage, k) if self.config.rescore else k)
        cos, idx = self.faiss_index.search(pooled.float().contiguous().numpy(), n)
        return [([int(i) for i in row if i >= 0], torch.from_numpy(c[row >= 0]).double()) for c, row in zip(cos, idx)]

    def _rescored(self, query: torch.Tensor, positions: list[int], cosines: torch.Tensor) -> torch.Tensor:
        """Stage 2: exact Eq. 4 scores of the candidates (or their cosines when ``rescore`` is off)."""
        if not self.config.rescore:
            return cosines
        return maxsim(query, self.docs.select(positions), self.config.max_elements)

    def _top(self, scores: torch.Tensor, positions: list[int], k: int, exclude: set[int]) -> SearchResult:
        """Sort by score (desc), ties by knowledge-base position (asc); drop ``exclude``; keep k."""
        order = sorted(range(len(positions)), key=lambda j: (-float(scores[j]), positions[j]))
        kept = [j for j in order if positions[j] not in exclude][:k]
        return SearchResult([self.ids[positions[j]] for j in kept], [positions[j] for j in kept],
                            [float(scores[j]) for j in kept])

    def search(self, query_tokens: torch.Tensor, k: int, query_pooled: torch.Tensor | None = None,
               exclude_ids: Sequence[str] = ()) -> SearchResult:
        """Top ``k`` items for one query token matrix [l_u, d] (in this index's mode). Stage 1 uses
        ``query_pooled`` [d] (default: the normalised mean of the query tokens). ``exclude_ids`` (e.g.
        the query's own id) are retrieved and then dropped: k + len(excluded) are fetched."""
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        query = torch.as_tensor(query_tokens).float()
        if query.dim() != 2 or len(query) == 0:
            raise ValueError(f"query_tokens must be a non-empty [l_u, d] matrix, got {tuple(query.shape)}")
        exclude = {self._position[i] for i in exclude_ids if i in self._position}
        if self.config.first_stage == 0:
            positions = list(range(len(self)))
            return self._top(maxsim(query, self.docs, self.config.max_elements), positions, k, exclude)
        pooled = F.normalize(query.mean(0) if query_pooled is None else torch.as_tensor(query_pooled).float(), dim=-1)
        positions, cosines = self._candidates(pooled.view(1, -1), k + len(exclude))[0]
        return self._top(self._rescored(query, positions, cosines), positions, k, exclude)

    def search_encoded(self, queries: EncodedItems, k: int, exclude_self: bool = True) -> list[SearchResult]:
        """Top ``k`` for every encoded query (in this index's mode), dropping a knowledge-base item
        with the query's own id when ``exclude_self`` (the official retrieve-k+1 rule)."""
        if not isinstance(k, int) or k < 1:
            raise ValueError(f"k must be a positive int, got {k!r}")
        mode = self.config.mode
        tokens = queries.tokens(mode)
        if any(len(t) == 0 for t in tokens):
            raise ValueError(f"a query has no {mode} tokens (no image for mode 'image'?)")
        excludes = [{self._position[q]} if exclude_self and q in self._position else set() for q in queries.ids]
        if self.config.first_stage == 0:
            scores = maxsim_matrix(tokens, self.docs, self.config.max_elements)
            everything = list(range(len(self)))
            return [self._top(s, everything, k, ex) for s, ex in zip(scores, excludes)]
        candidates = self._candidates(queries.pooled(mode), k + (1 if exclude_self else 0))
        return [self._top(self._rescored(q_tokens, positions, cosines), positions, k, ex)
                for q_tokens, (positions, cosines), ex in zip(tokens, candidates, excludes)]
