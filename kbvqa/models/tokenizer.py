"""Small tokenizers for tiny VLMs: each family's special tokens and chat template, trained on texts.

``build_tokenizer(texts, family, vocab_size=..., kind="word")`` returns a ``transformers`` fast
tokenizer (``TokenizersBackend``) that the family's processor accepts:

- the family's special tokens come first, at fixed ids (``special_tokens(family)``), so that a tiny
  config can name its image/video/vision ids before any tokenizer exists;
- the pre-tokenizer splits text into pieces ``" word"``, ``"word"``, one digit, one punctuation
  mark, one whitespace character; the decoder concatenates pieces, so decoding is lossless
  (``"3.5 kg"`` -> ``" 3"`` ``"."`` ``"5"`` ``" kg"`` -> ``"3.5 kg"``);
- ``kind="word"``: one id per piece (the most frequent ``vocab_size`` pieces of ``texts``, plus
  every digit and ASCII punctuation mark, the template's own words and ``Yes``/``No``); an unseen
  word becomes ``<unk>``. This is what the book's measured tiny Qwen2-VL (1.45M parameters, chapter 01) used.
  ``kind="bpe"``: byte-pair merges over the same pieces with every printable ASCII character in
  the alphabet, so unseen ASCII words are spelled out instead of lost.
- the chat template is the family's, simplified: Qwen families use ChatML with
  ``<|vision_start|><|image_pad|><|vision_end|>`` for an image (no default system prompt, to keep
  sequences short); Idefics3/SmolVLM uses ``User:<image>...<end_of_utterance>\\nAssistant:``.

Leaves out: hub tokenizers (loaded with the checkpoint) and the processors (``processors.py``).
"""
from __future__ import annotations

import string
from collections import Counter
from collections.abc import Iterable

QWEN_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
                 "<|image_pad|>", "<|video_pad|>", "<|vision_pad|>", "<unk>")
IDEFICS3_SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<end_of_utterance>",
                     "<fake_token_around_image>", "<image>", "<global-img>", "<unk>") + tuple(
    f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7))

QWEN_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}"
    "<|vision_start|><|image_pad|><|vision_end|>{% elif part['type'] == 'text' %}{{ part['text'] }}"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
IDEFICS3_TEMPLATE = (
    "<|im_start|>{% for message in messages %}{{ message['role'] | capitalize }}"
    "{% if message['content'] is string %}: {{ message['content'] }}{% else %}"
    "{% if message['content'][0]['type'] == 'image' %}:{% else %}: {% endif %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<end_of_utterance>\n{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}"
)

# family -> (special tokens in id order, chat template, eos token)
_TOKEN_SPECS = {
    "qwen2_vl": (QWEN_SPECIALS, QWEN_TEMPLATE, "<|im_end|>"),
    "qwen2_5_vl": (QWEN_SPECIALS, QWEN_TEMPLATE, "<|im_end|>"),
    "qwen3_vl": (QWEN_SPECIALS, QWEN_TEMPLATE, "<|im_end|>"),
    "idefics3": (IDEFICS3_SPECIALS, IDEFICS3_TEMPLATE, "<end_of_utterance>"),
}
PAD_TOKEN = "<|endoftext|>"
UNK_TOKEN = "<unk>"
# One piece = optional space + a run of letters | optional space + one digit | optional space + one
# other symbol | one whitespace character. Oniguruma syntax (the `tokenizers` regex engine).
PIECE_PATTERN = r" ?\p{L}+| ?\p{N}| ?[^\s\p{L}\p{N}]|\s"
# Pieces every tiny tokenizer has: digits, punctuation, roles, the critic's answers (ReAG Eq. 4).
_ALWAYS_WORDS = ["Yes", "No", "yes", "no", "system", "user", "assistant", "System", "User", "Assistant"]
_SYMBOLS = list(string.digits + string.punctuation)
_ALWAYS = [p for w in _ALWAYS_WORDS + _SYMBOLS for p in (w, " " + w)] + ["\n", " ", "\t"]


def canonical_family(family: str) -> str:
    """``"smolvlm"`` is Idefics3 (SmolVLM-256M/500M ship as ``idefics3``); others pass through."""
    name = str(family).strip().lower().replace("-", "_").replace(".", "_")
    name = {"smolvlm": "idefics3", "qwen25_vl": "qwen2_5_vl", "qwen2vl": "qwen2_vl"}.get(name, name)
    if name not in _TOKEN_SPECS:
        raise ValueError(f"unknown VLM family {family!r}; expected one of {sorted(_TOKEN_SPECS)} or 'smolvlm'")
    return name


def special_tokens(family: str) -> tuple[str, ...]:
    """The family's special tokens; token ``i`` of this tuple has id ``i`` in a tiny tokenizer."""
    return _TOKEN_SPECS[canonical_family(family)][0]


def special_token_id(family: str, token: str) -> int:
    return special_tokens(family).index(token)


def chat_template(family: str) -> str:
    return _TOKEN_SPECS[canonical_family(family)][1]


def _pre_tokenizer():
    from tokenizers import Regex, pre_tokenizers

    return pre_tokenizers.Split(Regex(PIECE_PATTERN), behavior="isolated")


def _strip_specials(text: str, specials: Iterable[str]) -> str:
    for token in specials:
        text = text.replace(token, "\n")
    return text


def build_tokenizer(texts: Iterable[str], family: str, vocab_size: int = 4000, kind: str = "word",
                    min_frequency: int = 1, model_max_length: int = 2048):
    """Train a tiny tokenizer for ``family`` on ``texts`` (see the module docstring).

    ``vocab_size`` caps the vocabulary including special tokens; ``min_frequency`` drops rarer
    pieces (word-level) or merges (BPE). Deterministic: same texts -> same ids.
    """
    from tokenizers import Tokenizer, decoders, models, trainers
    from transformers import PreTrainedTokenizerFast

    family = canonical_family(family)
    specials, template, eos = _TOKEN_SPECS[family]
    if kind not in ("word", "bpe"):
        raise ValueError(f"kind must be 'word' or 'bpe', got {kind!r}")
    if isinstance(texts, str):
        raise ValueError("texts must be an iterable of strings, not one string")  # noqa: TRY004
    texts = [_strip_specials(t, specials) for t in texts]
    floor = len(specials) + len(set(_ALWAYS))
    if vocab_size < floor:
        raise ValueError(f"vocab_size must be >= {floor} for {family} (special tokens + digits/punctuation)")
    pre = _pre_tokenizer()
    if kind == "word":
        counts = Counter(piece for t in texts for piece, _ in pre.pre_tokenize_str(t))
        vocab = {tok: i for i, tok in enumerate(specials)}
        for piece in _ALWAYS:
            vocab.setdefault(piece, len(vocab))
        ranked = sorted((c, p) for p, c in counts.items() if c >= min_frequency and p not in vocab)
        for _, piece in sorted(ranked, key=lambda cp: (-cp[0], cp[1]))[: vocab_size - len(vocab)]:
            vocab[piece] = len(vocab)
        tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK_TOKEN))
        tok.pre_tokenizer = pre
    else:
        tok = Tokenizer(models.BPE(unk_token=UNK_TOKEN))
        tok.pre_tokenizer = pre
        alphabet = sorted(set(string.printable) - set("\r\x0b\x0c"))
        trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                      special_tokens=list(specials), initial_alphabet=alphabet,
                                      show_progress=False)
        tok.train_from_iterator(texts + _ALWAYS, trainer)
    tok.decoder = decoders.Fuse()
    hf = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token=UNK_TOKEN, pad_token=PAD_TOKEN,
                                 eos_token=eos, padding_side="left", chat_template=template,
                                 model_max_length=model_max_length)
    hf.add_special_tokens({"additional_special_tokens": [s for s in specials if s not in (UNK_TOKEN, PAD_TOKEN, eos)]})
    for i, token in enumerate(specials):  # the fixed-id promise tiny configs rely on
        if hf.convert_tokens_to_ids(token) != i:
            raise RuntimeError(f"special token {token} got id {hf.convert_tokens_to_ids(token)}, expected {i}")
    return hf
