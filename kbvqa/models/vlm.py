"""The one VLM interface every chapter uses: generate, P(Yes), completion log-probabilities.

``VLM`` wraps a ``transformers`` image-text-to-text model and its processor; the same code drives a
tiny random/pretrained model on CPU and a hub checkpoint on one GPU. Prompts use the format of
``kbvqa.models.chat`` (chats of text and image parts; a str or an ``(image, text)`` pair also works).

- ``generate(prompts, n=...)``: a list (per prompt) of lists (per sample) of strings; left padding,
  temperature/top-p/top-k, stop strings, ``temperature=0`` is greedy, ``seed`` makes sampling
  repeatable. With ``details=True`` a ``Generations`` record adds token ids and counts.
- ``p_yes(prompts)``: ReAG Eq. 4, Pr(Yes | C, q, I_q, p), from one forward pass (``scoring.py``).
- ``completion_logprobs(prompts, completions)``: per-token log-probabilities ``[B, T]`` with a mask
  of completion tokens, with gradients when ``grad=True`` (GRPO/PPO), see ``scoring.py``.
- ``training_batch(prompts, completions)``: inputs with labels for ``vlm.model(**batch).loss``
  (answer-only or whole-sequence language-model loss; SFT and tiny-model pretraining).

Prefix reuse: ``generate`` asks for ``n`` samples with ``num_return_sequences=n``. In transformers
5.23 ``generate`` runs the vision tower once on the batch's images *before* expanding the batch, and
expands the resulting image features n times (``mm_encoder_outputs``), so the image of a prompt is
encoded once however many samples are drawn (tests count vision-tower calls). For Idefics3 (the
reader) the whole prompt is prefilled once and its KV cache shared by the n samples
(``generation._generate_shared_prefix``); Qwen families still prefill the text once per sample.
Greedy decoding with ``n > 1`` runs once and repeats the answer.

Leaves out: loading options (``loading.py``), the scoring maths (``scoring.py``), tiny models
(``families.py``).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from kbvqa.models import adapters, generation, loading, scoring
from kbvqa.models.chat import chat_images, normalise_prompts
from kbvqa.models.processors import family_of


class VLM:
    """A chat VLM with the book's three operations. Build with ``from_pretrained`` / ``from_model``."""

    def __init__(self, model, processor):
        self.model = model
        self.processor = processor
        self.family = family_of(self.core.config)
        self.tokenizer.padding_side = "left"
        self._answer_ids: dict[str, int] = {}

    # ----------------------------------------------------------------------------- construction
    @classmethod
    def from_model(cls, model, processor) -> VLM:
        """Wrap an already built model (e.g. a tiny random one) and its processor."""
        return cls(model, processor)

    @classmethod
    def from_pretrained(cls, path_or_id: str, device: str | None = None, dtype: Any = None,
                        load_in_4bit: bool = False, lora: dict | None = None, **kwargs) -> VLM:
        """Load a saved directory or a hub checkpoint (see ``loading.load_model``); a local
        directory is read without any network access. ``lora`` adds LoRA adapters (``add_lora``)."""
        model, processor = loading.load_model(path_or_id, device=device, dtype=dtype,
                                              load_in_4bit=load_in_4bit, **kwargs)
        vlm = cls(model, processor)
        if lora is not None:
            vlm.add_lora(**lora)
        return vlm

    def add_lora(self, r: int = 16, alpha: int = 32, dropout: float = 0.05,
                 target_modules: Sequence[str] = ("q_proj", "v_proj"), vision: bool = False) -> VLM:
        """Wrap the model with LoRA adapters (peft); only adapter weights stay trainable."""
        self.model = loading.wrap_lora(self.model, r=r, alpha=alpha, dropout=dropout,
                                       target_modules=target_modules, vision=vision)
        return self

    def adapter(self, name: str | None):
        """This model with the LoRA adapter ``name`` on (``None``: every adapter off), as a view that
        behaves as the VLM (``adapters.AdapterView``); adapters are added with ``add_named_adapter``."""
        return adapters.AdapterView(self, name)

    def without_adapters(self):
        """The base model: this VLM with every adapter off (``adapter(None)``)."""
        return adapters.AdapterView(self, None)

    def save_pretrained(self, directory) -> None:
        """Save model (adapters only for a LoRA model) and processor so ``from_pretrained`` reloads."""
        with loading.quiet_progress():
            self.model.save_pretrained(directory)
        self.processor.save_pretrained(directory)

    # ----------------------------------------------------------------------------- accessors
    @property
    def core(self):
        """The ``transformers`` model under any peft wrapper."""
        return self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model

    @property
    def tokenizer(self):
        return self.processor.tokenizer

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @property
    def vision_tower(self) -> torch.nn.Module:
        """The image encoder module (hook it to count image encodings)."""
        inner = self.core.model
        return inner.visual if hasattr(inner, "visual") else inner.vision_model

    def num_parameters(self, trainable_only: bool = False) -> int:
        return sum(p.numel() for p in self.model.parameters() if p.requires_grad or not trainable_only)

    # ----------------------------------------------------------------------------- encoding
    def render(self, prompts) -> list[str]:
        """The chat-template text of each prompt, ending with the assistant generation prompt."""
        chats = normalise_prompts(prompts)
        return [self._render(c) for c in chats]

    def _render(self, chat) -> str:
        bare = [{"role": m["role"], "content": [{"type": "image"} if p["type"] == "image" else p
                                                 for p in m["content"]]} for m in chat]
        return self.processor.apply_chat_template(bare, tokenize=False, add_generation_prompt=True)

    def encode(self, prompts) -> dict[str, torch.Tensor]:
        """Tokenised, left-padded batch (input ids, attention mask, pixels...) on the model's device."""
        chats = normalise_prompts(prompts)
        if not chats:
            raise ValueError("prompts is empty")
        texts = [self._render(c) for c in chats]
        images = [chat_images(c) for c in chats]
        kwargs: dict[str, Any] = {}
        if any(images):
            if self.family == "idefics3":  # nested per prompt; a text-only prompt gets a padding image
                kwargs["images"] = images
            else:  # Qwen processors take one flat list, in placeholder order
                kwargs["images"] = [im for group in images for im in group]
        batch = self.processor(text=texts, return_tensors="pt", padding=True, **kwargs)
        dtype = self.core.dtype  # first floating-point parameter (4-bit weights are uint8)
        out = {}
        for key, value in batch.items():
            if not isinstance(value, torch.Tensor):
                continue
            value = value.to(self.device)
            out[key] = value.to(dtype) if value.is_floating_point() else value
        return out

    def forward_inputs(self, batch: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """``batch`` plus the position ids ``generate`` would use: for Idefics3 (Llama) positions
        that skip left padding (a plain forward would count the pads; rotary attention only sees
        position differences, so this changes rounding, not results). Qwen families derive their
        3-D M-RoPE positions from the attention mask themselves."""
        if self.family == "idefics3" and "position_ids" not in batch:
            mask = batch["attention_mask"].long()
            batch = {**batch, "position_ids": (mask.cumsum(-1) - 1).clamp(min=0)}
        return batch

    # ----------------------------------------------------------------------------- operations
    def generate(self, prompts, n: int = 1, max_new_tokens: int = 64, temperature: float = 1.0,
                 top_p: float = 1.0, top_k: int = 0, repetition_penalty: float = 1.0,
                 stop: Sequence[str] | str | None = None, include_stop: bool = False,
                 seed: int | None = None, batch_size: int = 8, details: bool = False, share_prefix: bool = False):
        """Sample ``n`` completions per prompt (see ``generation.generate``; ``share_prefix``: prompts with a
        common opening prefill it once)."""
        return generation.generate(self, prompts, n=n, max_new_tokens=max_new_tokens, temperature=temperature,
                        top_p=top_p, top_k=top_k, repetition_penalty=repetition_penalty, stop=stop,
                        include_stop=include_stop, seed=seed, batch_size=batch_size, details=details,
                        share_prefix=share_prefix)

    def next_token_logits(self, prompts, batch_size: int = 16, share_prefix: bool = False) -> torch.Tensor:
        """Float32 logits ``[B, V]`` of the token after each prompt's generation prompt."""
        return scoring.next_token_logits(self, prompts, batch_size=batch_size, share_prefix=share_prefix)

    def p_yes(self, prompts, yes: str = "Yes", no: str = "No", normalise: str = "pair",
              batch_size: int = 16, share_prefix: bool = False) -> torch.Tensor:
        """ReAG Eq. 4: Pr(Yes) per prompt, float32 ``[B]`` on CPU (see ``scoring.p_yes``); ``share_prefix``:
        consecutive prompts with a common opening prefill it once (``kbvqa.models.prefix``)."""
        return scoring.p_yes(self, prompts, yes=yes, no=no, normalise=normalise, batch_size=batch_size,
                             share_prefix=share_prefix)

    def completion_logprobs(self, prompts, completions, grad: bool = False, temperature: float = 1.0,
                            add_eos: bool = False):
        """Per-token log-probabilities of ``completions`` (see ``scoring.completion_logprobs``)."""
        return scoring.completion_logprobs(self, prompts, completions, grad=grad, temperature=temperature,
                                   add_eos=add_eos)

    def training_batch(self, prompts, completions, loss_on: str = "completion", add_eos: bool = True):
        """Inputs with ``labels`` for ``self.model(**batch).loss`` (see ``scoring.training_batch``)."""
        return scoring.training_batch(self, prompts, completions, loss_on=loss_on, add_eos=add_eos)

    def answer_token_id(self, word: str) -> int:
        """The id the model emits first when its answer is ``word`` (see ``scoring``)."""
        if word not in self._answer_ids:
            self._answer_ids[word] = scoring.answer_token_id(self, word)
        return self._answer_ids[word]

    def __repr__(self) -> str:
        return (f"VLM(family={self.family!r}, parameters={self.num_parameters():,}, "
                f"device={self.device}, lora={hasattr(self.model, 'peft_config')})")
