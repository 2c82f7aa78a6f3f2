"""The reader's architecture: SmolVLM's (Idefics3) around the pretrained SmolLM2-135M-Instruct.

SmolVLM-256M was built exactly so: SmolLM2-135M as the text model, a SigLIP vision encoder, and the
Idefics3 connector (pixel shuffle + one linear layer). Ours keeps every part and shrinks the
vision encoder to what the toy world needs (``ReaderConfig``, commented below):

    image 112 x 112 px --SigLIP-style ViT, patch 14--> 8 x 8 patches x 192
      --pixel shuffle (scale 2)--> 4 x 4 x 768 --linear--> 16 image tokens x 576 (SmolLM2's width)

The image size and the 16 tokens per view were chosen by measurement: at 112 px (the toy views'
native size) the subject's colour, pattern and silhouette survive; see chapter 01 and the card.

``build_reader(config)`` returns a ``kbvqa.models.VLM`` with the text weights of SmolLM2 (every key
matched), a freshly initialised vision tower and connector, and four new tokens
(``<fake_token_around_image>``, ``<image>``, ``<global-img>``, ``<end_of_utterance>``) whose
embedding rows are appended to SmolLM2's 49,152. The chat template is SmolLM2's ChatML (its default
system prompt when a chat has none) with ``<image>`` where an image part stands.

``architecture_table(vlm)`` lists the three parts with their shapes and sizes (chapter 01);
``VisionHeads`` are the classifier heads the tower is first trained with (``train.py``, stage 1).

Leaves out: the base weights (``base.py``), training (``train.py``), shipping (``ship.py``).
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import asdict, dataclass

import torch

from kbvqa.models.processors import build_image_processor
from kbvqa.models.vlm import VLM
from kbvqa.reader.base import base_dir

NEW_TOKENS = ("<fake_token_around_image>", "<image>", "<global-img>", "<end_of_utterance>")
PAD_TOKEN = "<|endoftext|>"   # SmolLM2 pads with <|im_end|> (its EOS); a separate pad keeps EOS learnable
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n"
    "{% endif %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}{% else %}"
    "{% for part in message['content'] %}{% if part['type'] == 'image' %}<image>"
    "{% elif part['type'] == 'text' %}{{ part['text'] }}{% endif %}{% endfor %}{% endif %}"
    "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class ReaderConfig:
    """The vision half of the reader (the text half is SmolLM2-135M-Instruct, fixed)."""

    image_size: int = 112          # px per side; the toy views are rendered at 112
    patch_size: int = 14           # ViT patch side -> (112 / 14)^2 = 64 patches
    scale_factor: int = 2          # Idefics3 pixel shuffle: 2x2 patches -> one token -> 16 tokens
    vision_width: int = 192        # vision transformer width
    vision_layers: int = 4         # vision transformer blocks
    vision_heads: int = 3          # attention heads (head dim 64)
    vision_mlp: int = 768          # vision MLP width

    def __post_init__(self):
        side, rem = divmod(self.image_size, self.patch_size)
        if rem or side % self.scale_factor:
            raise ValueError(f"image_size {self.image_size} must be a multiple of patch_size x scale_factor "
                             f"({self.patch_size} x {self.scale_factor})")
        if self.vision_width % self.vision_heads:
            raise ValueError(f"vision_width {self.vision_width} must be divisible by vision_heads {self.vision_heads}")

    @property
    def image_tokens(self) -> int:
        """Image tokens per view: (image_size / patch_size)^2 / scale_factor^2."""
        return (self.image_size // self.patch_size) ** 2 // self.scale_factor**2


def reader_tokenizer(base):
    """SmolLM2's tokenizer plus the four Idefics3 tokens, our pad token and the image-aware template."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base, local_files_only=True)
    tokenizer.add_special_tokens({"additional_special_tokens": list(NEW_TOKENS)})
    tokenizer.pad_token = PAD_TOKEN
    tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.padding_side = "left"
    return tokenizer


def reader_processor(tokenizer, config: ReaderConfig):
    """The official ``Idefics3Processor`` with the PIL image processor (no torchvision, no splitting)."""
    from transformers import Idefics3Processor

    image_processor = build_image_processor("idefics3", config.image_size)
    return Idefics3Processor(image_processor=image_processor, tokenizer=tokenizer,
                             image_seq_len=config.image_tokens, chat_template=tokenizer.chat_template)


def reader_model_config(text_config, tokenizer, config: ReaderConfig):
    """The ``Idefics3Config``: SmolLM2's text config (vocabulary grown by the new tokens) + our vision."""
    from transformers import Idefics3Config

    text = text_config.to_dict()
    text.pop("quantization_config", None)
    text.update(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id,
                eos_token_id=tokenizer.convert_tokens_to_ids("<|im_end|>"))
    vision = {"hidden_size": config.vision_width, "intermediate_size": config.vision_mlp,
              "num_hidden_layers": config.vision_layers, "num_attention_heads": config.vision_heads,
              "image_size": config.image_size, "patch_size": config.patch_size}
    return Idefics3Config(text_config=text, vision_config=vision, scale_factor=config.scale_factor,
                          image_token_id=tokenizer.convert_tokens_to_ids("<image>"),
                          pad_token_id=tokenizer.pad_token_id, tie_word_embeddings=True)


@contextmanager
def skipped_init():
    """Build modules without drawing their random initial weights, for a model whose every tensor is
    loaded next (``load_reader``: the base's text weights, the shipped vision tower, connector and
    adapters, all checked strictly). Drawing them cost about half of a reader load (~5 s of ~10 s on
    two cores) and was thrown away. The tensors hold whatever memory had until they are loaded."""
    try:
        from transformers.initialization import no_init_weights
    except ImportError:                                   # transformers 4.x keeps it here
        from transformers.modeling_utils import no_init_weights
    with no_init_weights():
        yield


def build_reader(config: ReaderConfig | None = None, seed: int = 0, base=None, initialise: bool = True):
    """A ``VLM``: SmolLM2-135M-Instruct's weights in an Idefics3 model with a new vision half.

    The new embedding rows start at the mean of SmolLM2's rows (a common, harmless initialisation);
    the vision tower and connector are random (seeded). ``base``: the converted SmolLM2 folder
    (default ``base.base_dir()``). ``initialise=False`` skips the random draws (``skipped_init``) for a
    caller that loads the vision tower and connector next; the global seed is still set to ``seed``."""
    from safetensors.torch import load_file
    from transformers import AutoConfig, Idefics3ForConditionalGeneration

    config = config or ReaderConfig()
    base = base or base_dir()
    tokenizer = reader_tokenizer(base)
    model_config = reader_model_config(AutoConfig.from_pretrained(base, local_files_only=True), tokenizer, config)
    torch.manual_seed(seed)
    if initialise:
        model = Idefics3ForConditionalGeneration(model_config)
    else:
        with skipped_init():
            model = Idefics3ForConditionalGeneration(model_config)
    weights = load_file(str(base / "model.safetensors"))
    embed = weights.pop("model.embed_tokens.weight")
    weights.pop("lm_head.weight", None)  # tied to the embeddings
    text = {k.removeprefix("model."): v for k, v in weights.items()}
    missing, unexpected = model.model.text_model.load_state_dict(text, strict=False)
    if unexpected or [k for k in missing if k != "embed_tokens.weight"]:
        raise RuntimeError(f"SmolLM2 weights did not fit the text model: missing {missing}, unexpected {unexpected}")
    with torch.no_grad():
        table = model.model.text_model.embed_tokens.weight
        table[: embed.shape[0]] = embed
        table[embed.shape[0]:] = embed.mean(0)
    model.tie_weights()
    model.config.use_cache = True
    model.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids("<|im_end|>")
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.bos_token_id = tokenizer.bos_token_id
    vlm = VLM.from_model(model.eval(), reader_processor(tokenizer, config))
    vlm.reader_config = asdict(config)
    return vlm


def base_vocab_size() -> int:
    """SmolLM2's own vocabulary (rows of the table below the new tokens)."""
    return 49152


def architecture_table(vlm):
    """One row per part of an Idefics3 model: what it is, its shape, parameters, trained or not here."""
    import pandas as pd

    core = vlm.core
    vision, connector, text = core.model.vision_model, core.model.connector, core.model.text_model
    vc, tc = core.config.vision_config, core.config.text_config
    scale = core.config.scale_factor
    side = vc.image_size // vc.patch_size

    def count(module):
        return sum(p.numel() for p in module.parameters())

    rows = [("vision tower (SigLIP-style ViT)", f"{vc.image_size} px, patch {vc.patch_size} -> {side}x{side} "
             f"patches, {vc.num_hidden_layers} layers x {vc.hidden_size}", count(vision), "ours, on the toy world"),
            ("connector (pixel shuffle + linear)", f"{scale}x{scale} patches -> 1 token: "
             f"{vc.hidden_size * scale**2} -> {tc.hidden_size}, {(side // scale) ** 2} tokens per image",
             count(connector), "ours, on the toy world"),
            ("language model (SmolLM2-135M-Instruct)", f"{tc.num_hidden_layers} layers x {tc.hidden_size}, "
             f"{tc.num_attention_heads} heads ({tc.num_key_value_heads} KV), vocabulary {tc.vocab_size}",
             count(text), "pretrained; LoRA adapters ours")]
    return pd.DataFrame(rows, columns=["part", "shape", "parameters", "weights"]).set_index("part")


class VisionHeads(torch.nn.Module):
    """Linear heads (creature, family, colour, pattern) on the mean-pooled vision states."""

    def __init__(self, width: int, sizes):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.heads = torch.nn.ModuleList(torch.nn.Linear(width, n) for n in sizes)

    def forward(self, states):
        pooled = self.norm(states.mean(1))
        return [h(pooled) for h in self.heads]
