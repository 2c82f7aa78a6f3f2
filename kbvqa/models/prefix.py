"""Prefix reuse: prompts that open with the same tokens prefill them once (issue 49, item 2).

ReAG's critic asks one question per passage: system prompt, query image and question are the same
for the 40 passages of a query, only the passage and the answer cue differ. ``shared_prefix_logits``
returns the same next-token logits as ``scoring.next_token_logits`` (up to floating-point noise), but

1. encodes every prompt on its own and groups *consecutive* prompts whose token ids share a leading
   run of at least ``min_shared`` tokens and whose pictures are the same (every image token of a
   prompt must lie inside the shared run, so the suffixes are text only);
2. prefills each group's shared run once (``use_cache=True``), with its pictures;
3. runs the suffixes of the group, shortest first, in chunks of ``batch_size`` on a copy of that cache repeated along
   the batch (``DynamicCache.batch_repeat_interleave``). Suffixes are *left*-padded, so the pads sit
   between the prefix and the suffix: they are masked out of attention, the position ids skip them
   (prefix length + the count of real suffix tokens before each one), and the last position is each
   row's last real token, so one logit per row is kept (``logits_to_keep=1``).

The split is made on token ids, never on text, so no BPE merge across the boundary can differ from the
unshared encoding. A prompt that shares too little with its neighbours is scored alone, with its whole
sequence as the "prefix" (one forward pass, as without reuse).

Where a paper's prompt order puts the variable part first (RCTS's mutual reward: the example's image
and question come before the shared response), the shared run is short and the saving small; the
prompts are never reordered to share more.

Leaves out: generation from a shared prefix (sampling continues each prompt's own cache in
``generation.py``), gradients (scoring only), Qwen's 3-D M-RoPE positions (``supports_prefix_reuse``
is False for those families and callers fall back to ``next_token_logits``).
"""
from __future__ import annotations

import copy

import torch

from kbvqa.models.chat import normalise_prompts

MIN_SHARED = 8            # tokens: a shorter common run is not worth a separate prefill


def supports_prefix_reuse(vlm) -> bool:
    """Prefix reuse needs 1-D positions (Llama-style RoPE): Idefics3 / SmolVLM and the text models."""
    return getattr(vlm, "family", "") not in ("qwen2_vl", "qwen2_5_vl", "qwen3_vl")


def _common(a: torch.Tensor, b: torch.Tensor) -> int:
    n = min(len(a), len(b))
    diff = (a[:n] != b[:n]).nonzero()
    return int(diff[0]) if len(diff) else n


def _image_token_ids(vlm) -> set[int]:
    tok = vlm.tokenizer
    ids = set()
    for name in ("<image>", "<fake_token_around_image>", "<global-img>"):
        tid = tok.convert_tokens_to_ids(name)
        if isinstance(tid, int) and tid != tok.unk_token_id:
            ids.add(tid)
    return ids


def _pictures(item: dict) -> list[torch.Tensor]:
    return [v for k, v in item.items() if k.startswith("pixel") and isinstance(v, torch.Tensor)]


def _image_blocks(ids: list[int], image_ids: set[int]) -> list[tuple[int, int]]:
    """``[(first, last)]`` token positions of each picture's run of image tokens, in order."""
    blocks, start = [], None
    for k, t in enumerate(ids):
        if t in image_ids and start is None:
            start = k
        elif t not in image_ids and start is not None:
            blocks.append((start, k - 1))
            start = None
    if start is not None:
        blocks.append((start, len(ids) - 1))
    return blocks


def _same_picture(mine: list[torch.Tensor], theirs: list[torch.Tensor], k: int) -> bool:
    """Whether picture ``k`` of two encoded prompts has the same pixels (and pixel mask)."""
    return all(k < a.shape[1] and k < b.shape[1] and torch.equal(a[:, k], b[:, k]) for a, b in zip(mine, theirs))


def _cut_before_block(shared: int, blocks: list[tuple[int, int]]) -> tuple[int, int]:
    """(the shared length moved back so no picture is cut, the pictures inside it)."""
    inside = 0
    for first, last in blocks:
        if last < shared:
            inside += 1
        elif first < shared:
            return first, inside
    return shared, inside


def prefix_groups(items: list[dict], image_ids: set[int], min_shared: int = MIN_SHARED,
                  suffix_pictures: bool = False) -> list[tuple[int, list[int]]]:
    """``[(prefix length, [prompt indices])]`` over encoded prompts (each ``{"input_ids": [1, L], ...}``),
    in order: consecutive prompts whose ids share at least ``min_shared`` leading tokens, whose
    pictures inside that run are the same, and with at least one token after it. The run never cuts
    a picture's tokens. ``suffix_pictures=False`` (scoring) also needs every picture inside the run;
    with True (generation) the suffixes may hold pictures of their own, the same number in each."""
    groups: list[tuple[int, list[int]]] = []
    for i, item in enumerate(items):
        ids = item["input_ids"][0]
        if groups:
            length, members = groups[-1]
            first = items[members[0]]
            shared = min(length, _common(first["input_ids"][0], ids), len(ids) - 1)
            blocks = _image_blocks(ids.tolist(), image_ids)
            shared, inside = _cut_before_block(shared, blocks)
            mine, theirs = _pictures(item), _pictures(first)
            same_pictures = len(mine) == len(theirs) and all(
                a.shape[:1] == b.shape[:1] and a.shape[2:] == b.shape[2:] for a, b in zip(mine, theirs))
            differ = next((k for k in range(inside) if same_pictures and not _same_picture(mine, theirs, k)), None)
            if differ is not None:                   # same image tokens, other pixels: cut before that picture
                shared, inside = blocks[differ][0], differ
            rest_ok = (inside == len(blocks)) if not suffix_pictures else all(
                a.shape[1] == b.shape[1] for a, b in zip(mine, theirs))
            if shared >= min_shared and same_pictures and rest_ok:
                groups[-1] = (shared, members + [i])
                continue
        groups.append((len(ids) - 1 if len(ids) > 1 else len(ids), [i]))
    return groups


def pictures_in(item: dict, ids_until: int, image_ids: set[int]) -> int:
    """How many of ``item``'s pictures lie in its first ``ids_until`` tokens."""
    return sum(last < ids_until for _, last in _image_blocks(item["input_ids"][0].tolist(), image_ids))


def _prefill(vlm, item: dict, length: int, pictures: int | None = None):
    """The cache of ``item``'s first ``length`` tokens, with its first ``pictures`` pictures (all by default)."""
    batch = {k: v for k, v in item.items() if k not in ("input_ids", "attention_mask")}
    if pictures is not None:
        batch = {k: v[:, :pictures] for k, v in batch.items()} if pictures else {}
    ids = item["input_ids"][:, :length]
    out = vlm.model(input_ids=ids, attention_mask=torch.ones_like(ids),
                    position_ids=torch.arange(length, device=ids.device)[None], use_cache=True,
                    logits_to_keep=1, **batch)
    return out.past_key_values


def _suffix_logits(vlm, cache, length: int, suffixes: list[torch.Tensor]) -> torch.Tensor:
    """Next-token logits after prefix + each suffix: left-padded suffixes on a copy of ``cache``."""
    pad = vlm.tokenizer.pad_token_id if vlm.tokenizer.pad_token_id is not None else 0
    width, device = max(len(s) for s in suffixes), suffixes[0].device
    ids = torch.full((len(suffixes), width), pad, dtype=torch.long, device=device)
    mask = torch.zeros((len(suffixes), width), dtype=torch.long, device=device)
    for row, s in enumerate(suffixes):
        ids[row, width - len(s):] = s
        mask[row, width - len(s):] = 1
    positions = length + (mask.cumsum(-1) - 1).clamp(min=0)
    full_mask = torch.cat([torch.ones((len(suffixes), length), dtype=torch.long, device=device), mask], dim=1)
    past = copy.deepcopy(cache)
    past.batch_repeat_interleave(len(suffixes))
    out = vlm.model(input_ids=ids, attention_mask=full_mask, position_ids=positions, past_key_values=past,
                    use_cache=True, logits_to_keep=1)
    from kbvqa.models.finite import check_finite

    return check_finite(out.logits[:, -1].float().cpu(), "shared-prefix logits", out.logits.dtype)


def shared_prefix_logits(vlm, prompts, batch_size: int = 16, min_shared: int = MIN_SHARED) -> torch.Tensor:
    """Float32 logits ``[B, V]`` (CPU) of the next token after each prompt, each group of consecutive
    prompts with a common prefix prefilling it once (module docstring); no gradients."""
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    if not supports_prefix_reuse(vlm):
        raise ValueError(f"prefix reuse needs 1-D positions; {vlm.family!r} uses M-RoPE: use next_token_logits")
    chats = normalise_prompts(prompts)
    vocab = vlm.core.get_output_embeddings().weight.shape[0]
    if not chats:
        return torch.zeros(0, vocab)
    items = [vlm.encode([c]) for c in chats]
    out: list[torch.Tensor | None] = [None] * len(chats)
    with torch.no_grad():
        for length, members in prefix_groups(items, _image_token_ids(vlm), min_shared):
            cache = _prefill(vlm, items[members[0]], length)
            members = sorted(members, key=lambda i: items[i]["input_ids"].shape[1])   # less padding per chunk
            for start in range(0, len(members), batch_size):
                chunk = members[start:start + batch_size]
                logits = _suffix_logits(vlm, cache, length, [items[i]["input_ids"][0, length:] for i in chunk])
                for i, row in zip(chunk, logits):
                    out[i] = row
    return torch.stack(out)
