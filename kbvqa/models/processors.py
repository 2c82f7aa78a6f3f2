"""Processors for the supported VLM families that work without torchvision.

Why this file exists (transformers 5.23): ``Qwen2VLProcessor``, ``Qwen2_5_VLProcessor`` and
``Qwen3VLProcessor`` take a *video* processor, and every video processor of those families imports
torchvision; ``AutoProcessor.from_pretrained`` therefore fails on a Qwen checkpoint when torchvision
is absent ("Can't load video processor"), and passing ``video_processor=None`` is refused by the
processor's type check. The book never feeds videos and must not install torchvision, so:

- ``Qwen2VLImageOnlyProcessor`` (and the 2.5 / 3 siblings) subclass the official processor with an
  ``__init__`` that has no ``video_processor`` argument. ``ProcessorMixin`` derives a processor's
  parts from that signature, so loading, saving and calling all skip the video part; image and
  text handling are the official code, unchanged. They are registered with ``AutoProcessor`` for
  their configs, so ``AutoProcessor.from_pretrained(dir)`` works on directories they saved.
- Image processors are the PIL/numpy ones (``Qwen2VLImageProcessorPil``,
  ``Idefics3ImageProcessorPil``); ``AutoImageProcessor`` also picks them when torchvision is missing.
  (Where torchvision *is* installed, e.g. Colab, ``load_processor`` lets it pick the fast one.)
- Idefics3 (SmolVLM-256M/500M) has no video part and uses the official ``Idefics3Processor``.

``build_processor(family, tokenizer, image_size)`` makes the processor of a tiny model: a square
image of any size becomes ``image_size`` x ``image_size`` pixels, i.e. ``(image_size / 14)**2 / 4``
image tokens (56 -> 4). Other shapes keep their aspect ratio within that pixel budget (Qwen: a 2:1
image -> 56 x 28 pixels -> 2 tokens; Idefics3 pads to the square and always spends 4).
``load_processor(path_or_id)`` loads the processor of a saved or hub checkpoint.

Leaves out: tokenizers (``tokenizer.py``), model configs (``families.py``), videos.
"""
from __future__ import annotations

from pathlib import Path

from transformers import (
    AutoConfig,
    AutoProcessor,
    Idefics3Processor,
    Qwen2_5_VLConfig,
    Qwen2_5_VLProcessor,
    Qwen2VLConfig,
    Qwen2VLProcessor,
    Qwen3VLConfig,
    Qwen3VLProcessor,
)

from kbvqa.models.tokenizer import canonical_family

PATCH_SIZE = 14   # vision patch side of every tiny model (pixels)
MERGE_SIZE = 2    # 2x2 patches -> one image token (Qwen spatial merge, Idefics3 pixel shuffle)


class Qwen2VLImageOnlyProcessor(Qwen2VLProcessor):
    """``Qwen2VLProcessor`` without a video processor (no torchvision needed)."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        # The parent passes video_processor=None positionally; ProcessorMixin pairs positional
        # parts with get_attributes() (image_processor, tokenizer), so the None is dropped.
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


class Qwen2_5_VLImageOnlyProcessor(Qwen2_5_VLProcessor):
    """``Qwen2_5_VLProcessor`` without a video processor (no torchvision needed)."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


class Qwen3VLImageOnlyProcessor(Qwen3VLProcessor):
    """``Qwen3VLProcessor`` without a video processor (no torchvision needed)."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(image_processor, tokenizer, None, chat_template=chat_template, **kwargs)


PROCESSOR_CLASSES = {
    "qwen2_vl": Qwen2VLImageOnlyProcessor,
    "qwen2_5_vl": Qwen2_5_VLImageOnlyProcessor,
    "qwen3_vl": Qwen3VLImageOnlyProcessor,
    "idefics3": Idefics3Processor,
}

for _config, _cls in ((Qwen2VLConfig, Qwen2VLImageOnlyProcessor), (Qwen2_5_VLConfig, Qwen2_5_VLImageOnlyProcessor),
                      (Qwen3VLConfig, Qwen3VLImageOnlyProcessor)):
    AutoProcessor.register(_config, _cls, exist_ok=True)


def image_tokens_per_image(image_size: int) -> int:
    """Image tokens a tiny model spends on one ``image_size`` x ``image_size`` image."""
    return (image_size // PATCH_SIZE) ** 2 // MERGE_SIZE**2


def _check_image_size(image_size: int) -> None:
    step = PATCH_SIZE * MERGE_SIZE
    if not isinstance(image_size, int) or image_size < step or image_size % step:
        raise ValueError(f"image_size must be a positive multiple of {step} pixels, got {image_size!r}")


def build_image_processor(family: str, image_size: int = 56):
    """The PIL image processor of a tiny ``family`` model: every image -> ``image_size``**2 pixels."""
    family = canonical_family(family)
    _check_image_size(image_size)
    if family == "idefics3":
        from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

        edge = {"longest_edge": image_size}
        return Idefics3ImageProcessorPil(do_image_splitting=False, size=edge, max_image_size=edge)
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    pixels = image_size * image_size
    return Qwen2VLImageProcessorPil(size={"shortest_edge": pixels, "longest_edge": pixels},
                                    patch_size=PATCH_SIZE, merge_size=MERGE_SIZE, temporal_patch_size=2)


def build_processor(family: str, tokenizer, image_size: int = 56):
    """The processor of a tiny ``family`` model around ``tokenizer`` (from ``build_tokenizer``)."""
    family = canonical_family(family)
    image_processor = build_image_processor(family, image_size)
    cls = PROCESSOR_CLASSES[family]
    kwargs = {"image_seq_len": image_tokens_per_image(image_size)} if family == "idefics3" else {}
    return cls(image_processor=image_processor, tokenizer=tokenizer,
               chat_template=tokenizer.chat_template, **kwargs)


def family_of(config) -> str:
    """The family of a model config (``model_type``), or ``ValueError`` for an unsupported one."""
    model_type = getattr(config, "model_type", None)
    if model_type not in PROCESSOR_CLASSES:
        raise ValueError(f"unsupported model type {model_type!r}; kbvqa.models supports "
                         f"{sorted(PROCESSOR_CLASSES)} (SmolVLM-256M/500M are 'idefics3')")
    return model_type


def one_tile(processor):
    """Turn off an Idefics3 (SmolVLM) processor's image splitting, in place, and return it.

    SmolVLM's hub processors split a picture into tiles of ``max_image_size`` (512 px) after scaling
    its longest edge up to ``size`` (2,048 px): a 112-px picture becomes 16 tiles plus the whole
    image, 17 x 64 = 1,088 image tokens (issue 56). Without splitting the picture is resized to one
    512-px tile, 64 tokens, which holds every picture a SmolVLM role reads (chapters 01, 22, 23:
    the toy world's pictures, ``READER_IMAGE_SIZE`` = 112 px a side) above its own resolution, so
    nothing the picture shows is lost. The tiny models' processors are built without splitting already
    (``build_image_processor``), so this changes nothing in the cpu profile."""
    image_processor = getattr(processor, "image_processor", None)
    if image_processor is not None and getattr(image_processor, "do_image_splitting", False):
        image_processor.do_image_splitting = False
    return processor


def load_processor(path_or_id: str | Path, family: str | None = None, **kwargs):
    """Load the processor saved with a checkpoint (local directory or hub id), left-padding.

    A local directory is read with ``local_files_only=True``: no network is touched. An Idefics3
    (SmolVLM) processor comes back with image splitting off (``one_tile``).
    """
    path = str(path_or_id)
    if Path(path).is_dir():
        kwargs.setdefault("local_files_only", True)
    if family is None:
        family = family_of(AutoConfig.from_pretrained(path, **kwargs))
    processor = PROCESSOR_CLASSES[canonical_family(family)].from_pretrained(path, **kwargs)
    if canonical_family(family) == "idefics3":
        one_tile(processor)
    processor.tokenizer.padding_side = "left"
    if processor.tokenizer.pad_token_id is None:  # some hub tokenizers ship without one
        processor.tokenizer.pad_token = processor.tokenizer.eos_token
    return processor
