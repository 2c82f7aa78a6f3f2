"""Batched chat generation for ``VLM.generate``: many prompts x n samples, left padding, seeds, stops.

One ``model.generate`` call per chunk of ``batch_size`` prompts asks for ``n`` return sequences;
the vision tower encodes each chunk's images once (see ``vlm.py`` on prefix reuse). The generation
config is built from the arguments alone: hub checkpoints ship their own sampling defaults (e.g.
Qwen2-VL-Instruct's ``top_k=1, top_p=0.001``, which would make "sampling" greedy), so every
sampling field is set explicitly and nothing is inherited from ``model.generation_config`` except
its EOS ids.

Where a completion ends: at the first EOS id (kept in ``token_ids``, dropped from the text), or at
the token that completes a stop string (``StopOnStrings`` ends the row there; the text is cut
before the stop string unless ``include_stop``), or after ``max_new_tokens``. Image
placeholder tokens are never generated (``suppress_tokens``).

Prefix sharing (Idefics3 / the reader): with ``n > 1`` samples the prompt is prefilled ONCE -- one
forward pass over every token but the last builds the KV cache, the cache is repeated ``n`` times
(``DynamicCache.batch_repeat_interleave``) and decoding continues from it -- instead of prefilling
the same prompt ``n`` times. Greedy outputs are identical either way (tested). Qwen families keep
``num_return_sequences``: their multimodal rotary positions (``rope_deltas``) are computed inside
``generate`` on the first step and do not survive an outside prefill.

Across prompts (``share_prefix=True``, Idefics3): consecutive prompts that open with the same tokens
(RCTS's mutual-reward prompts of one leaf: system, the query as a solved example and the branch's
response, then each reference's question and picture) prefill that run once; each prompt's suffix,
pictures included, is prefilled on a copy of the cache repeated for its rows (``_generate_group``).

Leaves out: beam search, streaming.
"""
from __future__ import annotations

import contextlib

import torch

from kbvqa.models.chat import normalise_prompts
from kbvqa.models.outputs import Generations


def _check(n, max_new_tokens, temperature, top_p, top_k, repetition_penalty, batch_size, seed):
    def positive_int(name, value):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive int, got {value!r}")

    positive_int("n", n)
    positive_int("max_new_tokens", max_new_tokens)
    positive_int("batch_size", batch_size)
    if not temperature >= 0:
        raise ValueError(f"temperature must be >= 0 (0 = greedy), got {temperature!r}")
    if not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p!r}")
    if not isinstance(top_k, int) or top_k < 0:
        raise ValueError(f"top_k must be an int >= 0 (0 = off), got {top_k!r}")
    if not repetition_penalty > 0:
        raise ValueError(f"repetition_penalty must be > 0, got {repetition_penalty!r}")
    if seed is not None and (not isinstance(seed, int) or seed < 0):
        raise ValueError(f"seed must be a non-negative int or None, got {seed!r}")


def eos_ids(vlm) -> list[int]:
    """Every id that ends a turn: the tokenizer's EOS, the checkpoint's EOS list, the turn-end tokens."""
    tok = vlm.tokenizer
    ids = {tok.eos_token_id}
    configured = vlm.core.generation_config.eos_token_id
    ids.update(configured if isinstance(configured, (list, tuple)) else [configured])
    for token in ("<|im_end|>", "<end_of_utterance>"):
        tid = tok.convert_tokens_to_ids(token)
        if tid is not None and tid != tok.unk_token_id:
            ids.add(tid)
    return sorted(i for i in ids if i is not None)


def placeholder_ids(vlm) -> list[int]:
    """Image/video placeholder ids the model must never generate."""
    config, tok = vlm.core.config, vlm.tokenizer
    ids = [getattr(config, k, None) for k in ("image_token_id", "video_token_id", "vision_start_token_id",
                                              "vision_end_token_id")]
    layout = ["<fake_token_around_image>", "<global-img>", "<image>"]  # Idefics3 / SmolVLM
    layout += [f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]
    ids += [tok.convert_tokens_to_ids(t) for t in layout]
    vocab = vlm.core.get_output_embeddings().weight.shape[0]
    return sorted({i for i in ids if isinstance(i, int) and 0 <= i < vocab and i != tok.unk_token_id})


def _seeded(seed, device):
    if seed is None:
        return contextlib.nullcontext()
    devices = [device.index or 0] if device.type == "cuda" else []

    @contextlib.contextmanager
    def ctx():
        with torch.random.fork_rng(devices=devices):
            torch.manual_seed(seed)
            yield
    return ctx()


class StopOnStrings:
    """A ``StoppingCriteria`` ending each row once its generated text contains a stop string.

    transformers' own ``stop_strings`` cannot be used: it probes the vocabulary by tokenising
    ``"abcdef"``, which a word-level tiny tokenizer maps to ``<unk>`` (ValueError). This decodes
    the last few generated tokens of each row instead; exact cutting happens after generation.
    """

    def __init__(self, tokenizer, stops: list[str], prompt_length: int):
        self.tokenizer, self.stops, self.prompt_length = tokenizer, stops, prompt_length
        self.window = max(len(s) for s in stops) + 2  # tokens; almost every token is >= 1 char

    def __call__(self, input_ids, scores, **kwargs):
        start = max(self.prompt_length, input_ids.shape[1] - self.window)
        tails = self.tokenizer.batch_decode(input_ids[:, start:], skip_special_tokens=True)
        return torch.tensor([any(s in t for s in self.stops) for t in tails], device=input_ids.device)


def _end(ids: list[int], eos: set[int], stops: list[str], decode) -> tuple[int, bool]:
    """(length of the real completion, finished?) for one generated row."""
    end, finished = len(ids), False
    for i, tid in enumerate(ids):
        if tid in eos:
            end, finished = i + 1, True
            break
    if stops and any(s in decode(ids[:end]) for s in stops):
        lo, hi = 1, end  # smallest prefix whose text contains a stop string
        while lo < hi:
            mid = (lo + hi) // 2
            if any(s in decode(ids[:mid]) for s in stops):
                hi = mid
            else:
                lo = mid + 1
        end, finished = lo, True
    return end, finished


def _cut(text: str, stops: list[str], include_stop: bool) -> str:
    hits = [(text.find(s), s) for s in stops if s in text]
    if not hits:
        return text
    pos, stop = min(hits)
    return text[: pos + len(stop)] if include_stop else text[:pos]


def _checked(vlm, extra: dict) -> dict:
    """``extra`` with the non-finite logits check (``kbvqa.models.finite``) as a logits processor."""
    from transformers import LogitsProcessorList

    from kbvqa.models.finite import FiniteLogitsCheck

    dtype = getattr(getattr(vlm, "core", None), "dtype", None)
    return {**extra, "logits_processor": LogitsProcessorList([FiniteLogitsCheck(dtype)])}


def _generate_shared_prefix(vlm, batch, config, n: int, extra: dict):
    """``n`` samples per prompt from ONE prefill: the KV cache of the prompt minus its last token,
    repeated ``n`` times; ``generate`` then runs the last prompt token and decodes."""
    import copy

    inputs = vlm.forward_inputs(batch)
    prefix = {k: (v[:, :-1] if k in ("input_ids", "attention_mask", "position_ids") else v)
              for k, v in inputs.items()}
    cache = vlm.model(**prefix, use_cache=True).past_key_values
    cache.batch_repeat_interleave(n)
    single = copy.deepcopy(config)
    single.num_return_sequences = 1
    return vlm.model.generate(input_ids=batch["input_ids"].repeat_interleave(n, 0),
                              attention_mask=batch["attention_mask"].repeat_interleave(n, 0),
                              past_key_values=cache, generation_config=single, **_checked(vlm, extra))


def _generate_group(vlm, items: list[dict], length: int, config, rep: int, stops, image_ids) -> list[list[int]]:
    """New token ids of each row (``rep`` per prompt) for prompts that share their first ``length``
    tokens: that run is prefilled once (with its pictures), the cache repeated for every prompt, each
    prompt's left-padded suffix (pads between prefix and suffix, masked; its own pictures, if any)
    prefilled but its last token, the cache repeated ``rep`` times, then ``generate`` continues every
    row from there."""
    import copy

    from transformers import StoppingCriteriaList

    from kbvqa.models.prefix import _prefill, pictures_in

    inside = pictures_in(items[0], length, image_ids)
    cache = _prefill(vlm, items[0], length, inside)
    suffixes = [it["input_ids"][0, length:] for it in items]
    pad = vlm.tokenizer.pad_token_id if vlm.tokenizer.pad_token_id is not None else 0
    width, device = max(len(x) for x in suffixes), suffixes[0].device
    ids = torch.full((len(items), width), pad, dtype=torch.long, device=device)
    mask = torch.zeros((len(items), width), dtype=torch.long, device=device)
    for row, x in enumerate(suffixes):
        ids[row, width - len(x):], mask[row, width - len(x):] = x, 1
    pictures = {k: torch.cat([it[k][:, inside:] for it in items])
                for k in items[0] if k.startswith("pixel") and items[0][k].shape[1] > inside}
    cache.batch_repeat_interleave(len(items))
    if width > 1:                        # each prompt's suffix once, then its cache repeated for its rows
        head = mask[:, :-1]
        vlm.model(input_ids=ids[:, :-1], attention_mask=torch.cat([torch.ones((len(items), length), dtype=torch.long,
                                                                              device=device), head], 1),
                  position_ids=length + (head.cumsum(-1) - 1).clamp(min=0), past_key_values=cache,
                  use_cache=True, logits_to_keep=1, **pictures)
    if rep > 1:
        cache.batch_repeat_interleave(rep)
    ids, mask = ids.repeat_interleave(rep, 0), mask.repeat_interleave(rep, 0)
    rows = len(ids)
    ones = torch.ones((rows, length), dtype=torch.long, device=device)
    full_ids = torch.cat([items[0]["input_ids"][:, :length].expand(rows, -1), ids], 1)
    extra = {}
    if stops:
        extra["stopping_criteria"] = StoppingCriteriaList([StopOnStrings(vlm.tokenizer, stops, full_ids.shape[1])])
    single = copy.deepcopy(config)
    single.num_return_sequences = 1
    out = vlm.model.generate(input_ids=full_ids, attention_mask=torch.cat([ones, mask], 1), past_key_values=cache,
                             generation_config=single, **_checked(vlm, extra))
    return out[:, full_ids.shape[1]:].tolist()


def _rows_shared(vlm, chats, config, per_call: int, batch_size: int, stops) -> list[list[int]]:
    """Every prompt's ``per_call`` rows of new token ids, consecutive prompts with a common opening
    sharing one prefill (``kbvqa.models.prefix.prefix_groups``); prompts sharing nothing run through
    the plain batched path together."""
    from kbvqa.models.prefix import _image_token_ids, prefix_groups

    items = [vlm.encode([c]) for c in chats]
    image_ids = _image_token_ids(vlm)
    rows: list[list[int] | None] = [None] * (len(chats) * per_call)
    alone = []
    for length, members in prefix_groups(items, image_ids, suffix_pictures=True):
        if len(members) == 1:
            alone += members
            continue
        for start in range(0, len(members), batch_size):
            chunk = members[start:start + batch_size]
            new = _generate_group(vlm, [items[i] for i in chunk], length, config, per_call, stops, image_ids)
            for k, i in enumerate(chunk):
                rows[i * per_call:(i + 1) * per_call] = new[k * per_call:(k + 1) * per_call]
    for start in range(0, len(alone), batch_size):
        chunk = alone[start:start + batch_size]
        batch = vlm.encode([chats[i] for i in chunk])
        extra = {}
        if stops:
            from transformers import StoppingCriteriaList

            extra["stopping_criteria"] = StoppingCriteriaList([StopOnStrings(vlm.tokenizer, stops,
                                                                              batch["input_ids"].shape[1])])
        if per_call > 1:
            out = _generate_shared_prefix(vlm, batch, config, per_call, extra)
        else:
            out = vlm.model.generate(**batch, generation_config=config, **_checked(vlm, extra))
        new = out[:, batch["input_ids"].shape[1]:].tolist()
        for k, i in enumerate(chunk):
            rows[i * per_call:(i + 1) * per_call] = new[k * per_call:(k + 1) * per_call]
    return rows


def generate(vlm, prompts, n=1, max_new_tokens=64, temperature=1.0, top_p=1.0, top_k=0,
             repetition_penalty=1.0, stop=None, include_stop=False, seed=None, batch_size=8,
             details=False, share_prefix=False):
    """See ``VLM.generate``. Returns texts[prompt][sample], or ``Generations`` if ``details``.
    ``share_prefix`` (Idefics3 only; ignored elsewhere): consecutive prompts that open with the same
    tokens prefill them once (``_rows_shared``). Greedy outputs equal the plain path's (tested);
    sampled ones are draws from the same distributions, not the same draws (rows are batched
    differently, so the random stream meets them in another order)."""
    from transformers import GenerationConfig

    _check(n, max_new_tokens, temperature, top_p, top_k, repetition_penalty, batch_size, seed)
    stops = [stop] if isinstance(stop, str) else list(stop or [])
    if any(not isinstance(s, str) or not s for s in stops):
        raise ValueError("stop strings must be non-empty str")
    chats = normalise_prompts(prompts)
    greedy = temperature == 0
    per_call = 1 if greedy else n
    tok = vlm.tokenizer
    eos = eos_ids(vlm)
    config = GenerationConfig(
        max_new_tokens=max_new_tokens, do_sample=not greedy, num_return_sequences=per_call,
        temperature=None if greedy else float(temperature), top_p=None if greedy else float(top_p),
        top_k=None if greedy else top_k, repetition_penalty=float(repetition_penalty), eos_token_id=eos,
        pad_token_id=tok.pad_token_id, suppress_tokens=placeholder_ids(vlm) or None)

    def decode(ids):
        return tok.decode(ids, skip_special_tokens=True)

    texts, token_ids, finished = [], [], []

    def collect(rows):
        for i in range(len(rows) // per_call):
            group = rows[i * per_call:(i + 1) * per_call] * (n if greedy else 1)
            ends = [_end(r, set(eos), stops, decode) for r in group]
            token_ids.append([r[:e] for r, (e, _) in zip(group, ends)])
            finished.append([f for _, f in ends])
            texts.append([_cut(decode(r[:e]), stops, include_stop) for r, (e, _) in zip(group, ends)])

    if share_prefix and vlm.family == "idefics3" and chats:
        with _seeded(seed, vlm.device), torch.no_grad():
            collect(_rows_shared(vlm, chats, config, per_call, batch_size, stops))
        chats = []
    with _seeded(seed, vlm.device), torch.no_grad():
        for start in range(0, len(chats), batch_size):
            batch = vlm.encode(chats[start:start + batch_size])
            extra = {}
            if stops:
                from transformers import StoppingCriteriaList

                criteria = StopOnStrings(tok, stops, batch["input_ids"].shape[1])
                extra["stopping_criteria"] = StoppingCriteriaList([criteria])
            if per_call > 1 and vlm.family == "idefics3":
                out = _generate_shared_prefix(vlm, batch, config, per_call, extra)
            else:
                out = vlm.model.generate(**batch, generation_config=config, **_checked(vlm, extra))
            collect(out[:, batch["input_ids"].shape[1]:].tolist())
    if not details:
        return texts
    return Generations(texts=texts, token_ids=token_ids,
                       num_tokens=[[len(ids) for ids in row] for row in token_ids], finished=finished)
