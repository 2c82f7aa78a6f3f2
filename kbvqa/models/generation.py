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

Leaves out: beam search, streaming, prefix sharing *across* different prompts.
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
                              past_key_values=cache, generation_config=single, **extra)


def generate(vlm, prompts, n=1, max_new_tokens=64, temperature=1.0, top_p=1.0, top_k=0,
             repetition_penalty=1.0, stop=None, include_stop=False, seed=None, batch_size=8,
             details=False):
    """See ``VLM.generate``. Returns texts[prompt][sample], or ``Generations`` if ``details``."""
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
                out = vlm.model.generate(**batch, generation_config=config, **extra)
            rows = out[:, batch["input_ids"].shape[1]:].tolist()
            for i in range(len(rows) // per_call):
                group = rows[i * per_call:(i + 1) * per_call] * (n if greedy else 1)
                ends = [_end(r, set(eos), stops, decode) for r in group]
                token_ids.append([r[:e] for r, (e, _) in zip(group, ends)])
                finished.append([f for _, f in ends])
                texts.append([_cut(decode(r[:e]), stops, include_stop) for r, (e, _) in zip(group, ends)])
    if not details:
        return texts
    return Generations(texts=texts, token_ids=token_ids,
                       num_tokens=[[len(ids) for ids in row] for row in token_ids], finished=finished)
