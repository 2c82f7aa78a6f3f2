"""Late interaction: the MaxSim relevance score of RCTS Eq. 4 (after ColBERT and FLMR).

A query E_u (l_u token rows) and a knowledge-base item E_i (l_i token rows), both in one space of
width d (RCTS Eq. 2-3), are scored by

    r(E_u, E_i) = sum_{j=1..l_u} max_{k=1..l_i} <E_u[j], E_i[k]>                  (Eq. 4)

every query token picks its best-matching item token, and the picks add up. Three versions:

- ``maxsim_loop``: Eq. 4 word for word, plain Python loops over tokens (for reading, and as the
  reference the tests compare against; float64).
- ``maxsim``: one query against many items held as a padded tensor ``PaddedTokens`` [N, L, d] +
  mask; one matrix product [N*L, d] x [d, l_u] per chunk, then max over L and sum over l_u.
- ``maxsim_matrix``: many queries x many items, chunked so that no intermediate holds more than
  ``max_elements`` similarities (memory stays bounded whatever Q and N are; default 4 MB blocks on
  CPU, 256 MB on CUDA). Both run on the device of the item tensor.

Padding: ``PaddedTokens.from_list`` pads an item by *repeating its first token*, so a padded row
can only tie with a real token and never wins a max on its own; the mask is still applied, so hand-
built padded tensors (zeros, anything) are safe too. Edge cases, one rule each: an item with no
tokens scores ``-inf`` (it can never be retrieved before an item with tokens); a query with no
tokens raises ``ValueError`` (there is nothing to score); widths that differ raise ``ValueError``.
Scores are not divided by l_u (the paper's Eq. 4); divide yourself to compare queries of different
lengths.

Leaves out: the encoders (``kbvqa.models.encoders``), the first-stage index and search
(``hybrid.py``), and ColBERT/PLAID's compressed residuals and centroid pruning.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch

NEG_INF = float("-inf")
DEFAULT_MAX_ELEMENTS = 1 << 20   # similarities per block on CPU: 1M floats = 4 MB (cache-sized)
GPU_MAX_ELEMENTS = 1 << 26       # on CUDA: 256 MB blocks (fewer kernel launches)


def _as_matrix(x, name: str) -> torch.Tensor:
    t = torch.as_tensor(x)
    if t.dim() != 2:
        raise ValueError(f"{name} must be a 2-D token matrix [tokens, d], got shape {tuple(t.shape)}")
    return t if t.is_floating_point() else t.float()


def maxsim_loop(query_tokens, doc_tokens) -> float:
    """Eq. 4 with explicit loops: for each query token, the best dot product with any document
    token; the sum of those maxima. Float64. Empty document -> ``-inf``; empty query -> ValueError.

    Appendix: RCTS | Eq. 4 |
        tests/test_retrieval_late_interaction.py::test_loop_matches_a_hand_computed_value | rcts-maxsim
    """
    query = _as_matrix(query_tokens, "query_tokens").double()
    doc = _as_matrix(doc_tokens, "doc_tokens").double()
    if len(query) == 0:
        raise ValueError("the query has no tokens: MaxSim is undefined")
    if len(doc) and doc.shape[1] != query.shape[1]:
        raise ValueError(f"token widths differ: query d={query.shape[1]}, document d={doc.shape[1]}")
    total = 0.0
    for q in query:                         # sum over query tokens j
        best = NEG_INF
        for d in doc:                       # max over document tokens k
            best = max(best, float(torch.dot(q, d)))
        total += best
    return total


@dataclass(frozen=True)
class PaddedTokens:
    """N token matrices of different lengths as one tensor: ``tokens`` [N, L, d] and ``mask``
    [N, L] (True = a real token). Build with ``from_list``."""

    tokens: torch.Tensor
    mask: torch.Tensor

    def __post_init__(self):
        if self.tokens.dim() != 3 or self.mask.shape != self.tokens.shape[:2]:
            raise ValueError(f"PaddedTokens needs tokens [N, L, d] and mask [N, L], got "
                             f"{tuple(self.tokens.shape)} and {tuple(self.mask.shape)}")
        if self.mask.dtype != torch.bool:
            object.__setattr__(self, "mask", self.mask.bool())

    @classmethod
    def from_list(cls, matrices: Sequence, dim: int | None = None) -> PaddedTokens:
        """Pad ragged [l_i, d] matrices to [N, max l_i, d]; padding repeats each item's first token
        (zeros for an empty item). ``dim`` is needed only when ``matrices`` is empty."""
        mats = [_as_matrix(m, f"matrices[{i}]") for i, m in enumerate(matrices)]
        widths = {m.shape[1] for m in mats if len(m)} | ({dim} if dim is not None else set())
        if len(widths) > 1:
            raise ValueError(f"token matrices of different widths: {sorted(widths)}")
        if not widths:
            if dim is None and not mats:
                raise ValueError("from_list([]) needs dim")
            widths = {dim if dim is not None else (mats[0].shape[1] if mats else 0)}
        d = widths.pop()
        length = max((len(m) for m in mats), default=0)
        dtype = torch.float64 if any(m.dtype == torch.float64 for m in mats) else torch.float32
        tokens = torch.zeros(len(mats), length, d, dtype=dtype)
        mask = torch.zeros(len(mats), length, dtype=torch.bool)
        for i, m in enumerate(mats):
            if len(m):
                tokens[i, :len(m)] = m
                tokens[i, len(m):] = m[0]          # repeat a real token: padding never wins alone
                mask[i, :len(m)] = True
        return cls(tokens, mask)

    def __len__(self) -> int:
        return self.tokens.shape[0]

    @property
    def dim(self) -> int:
        return self.tokens.shape[2]

    @property
    def lengths(self) -> torch.Tensor:
        return self.mask.sum(1)

    def select(self, rows) -> PaddedTokens:
        """The items at ``rows`` (indices), trimmed to their own longest length."""
        rows = torch.as_tensor(rows, dtype=torch.long)
        mask = self.mask[rows]
        length = int(mask.sum(1).max()) if len(rows) else 0
        return PaddedTokens(self.tokens[rows, :length], mask[:, :length])


def as_padded(items) -> PaddedTokens:
    """``PaddedTokens`` as is; a list of token matrices padded; a single [N, L, d] tensor with every
    row real."""
    if isinstance(items, PaddedTokens):
        return items
    if isinstance(items, torch.Tensor) and items.dim() == 3:
        return PaddedTokens(items, torch.ones(items.shape[:2], dtype=torch.bool))
    return PaddedTokens.from_list(list(items))


def _block_size(max_elements: int | None, device: torch.device) -> int:
    """Similarities per block: ``max_elements``, or the device's default when None."""
    if max_elements is None:
        return GPU_MAX_ELEMENTS if device.type == "cuda" else DEFAULT_MAX_ELEMENTS
    if not isinstance(max_elements, int) or max_elements < 1:
        raise ValueError(f"max_elements must be an int >= 1 (or None), got {max_elements!r}")
    return max_elements


def _common_dtype(a: torch.Tensor, b: torch.Tensor) -> torch.dtype:
    return torch.float64 if torch.float64 in (a.dtype, b.dtype) else torch.float32


def maxsim(query_tokens, docs, max_elements: int | None = None) -> torch.Tensor:
    """Eq. 4 of one query [l_u, d] against every item of ``docs`` (``PaddedTokens`` or a list of
    [l_i, d]): a tensor [N] of scores (``-inf`` for an item with no tokens)."""
    query = _as_matrix(query_tokens, "query_tokens")
    docs = as_padded(docs)
    if len(query) == 0:
        raise ValueError("the query has no tokens: MaxSim is undefined")
    n, length, d = docs.tokens.shape
    if n and length and d != query.shape[1]:
        raise ValueError(f"token widths differ: query d={query.shape[1]}, documents d={d}")
    dtype, device = _common_dtype(query, docs.tokens), docs.tokens.device
    out = torch.full((n,), NEG_INF, dtype=dtype, device=device)
    max_elements = _block_size(max_elements, device)
    if n == 0 or length == 0:
        return out
    q_t = query.to(device, dtype).T.contiguous()                    # [d, l_u]
    chunk = max(1, max_elements // (length * len(query)))
    for s in range(0, n, chunk):
        e = min(n, s + chunk)
        sim = (docs.tokens[s:e].to(dtype).reshape(-1, d) @ q_t).view(e - s, length, -1)
        sim.masked_fill_(~docs.mask[s:e, :, None], NEG_INF)         # padding never wins a max
        out[s:e] = sim.amax(1).sum(1)                                # max over item, sum over query
    return out


def maxsim_matrix(queries, docs, max_elements: int | None = None) -> torch.Tensor:
    """Eq. 4 for every (query, item) pair: [Q, N]. ``queries`` and ``docs`` are ``PaddedTokens``
    or lists of token matrices. Work is split into blocks of at most ``max_elements`` similarities
    (one block is [q_chunk * l_u, n_chunk * L]), so memory is bounded for any Q and N."""
    queries, docs = as_padded(queries), as_padded(docs)
    n_q, l_q, d = queries.tokens.shape
    n, length, d_doc = docs.tokens.shape
    if n_q and bool((queries.lengths == 0).any()):
        raise ValueError("a query has no tokens: MaxSim is undefined")
    if n_q and n and length and d != d_doc:
        raise ValueError(f"token widths differ: queries d={d}, documents d={d_doc}")
    dtype, device = _common_dtype(queries.tokens, docs.tokens), docs.tokens.device
    out = torch.full((n_q, n), NEG_INF, dtype=dtype, device=device)
    max_elements = _block_size(max_elements, device)
    if n_q == 0 or n == 0 or length == 0:
        return out
    n_chunk = min(n, max(1, max_elements // (l_q * length)))
    q_chunk = min(n_q, max(1, max_elements // (l_q * length * n_chunk)))
    for qs in range(0, n_q, q_chunk):
        qe = min(n_q, qs + q_chunk)
        q_flat = queries.tokens[qs:qe].to(device, dtype).reshape(-1, d)     # [b*l_q, d]
        q_pad = ~queries.mask[qs:qe, :, None].to(device)                    # [b, l_q, 1]
        for s in range(0, n, n_chunk):
            e = min(n, s + n_chunk)
            d_flat = docs.tokens[s:e].to(dtype).reshape(-1, d)               # [m*L, d]
            sim = (q_flat @ d_flat.T).view(qe - qs, l_q, e - s, length)
            sim.masked_fill_(~docs.mask[None, None, s:e], NEG_INF)
            best = sim.amax(3).masked_fill_(q_pad, 0.0)                     # [b, l_q, m]
            out[qs:qe, s:e] = best.sum(1)
    return out
