"""The cpu profile's image encoder: a small CNN whose last feature map is a grid of patch tokens.

``ToyVisionEncoder`` turns a batch of RGB pictures (``images_to_tensor``: resized to
``image_size``, scaled to [0, 1], standardised) into ``(image_size / 16) ** 2`` tokens of
``channels[-1]`` features: 112 px -> a 7 x 7 grid, the same grid CLIP ViT-B/32 gives PreFLMR-B at
224 px. A stride-2 stem and three stride-2 blocks (conv-BN-ReLU twice) halve the side four times,
so each token sees a wide neighbourhood (~100 px) and can tell silhouette, colour and body pattern
of a creature, while the grid keeps where things are for late interaction (RCTS Eq. 2:
E_I = F_I(I) in R^{l_I x d} once the linear map of ``encoders.py`` is applied). It has no position
embedding: a creature should match wherever it stands in the view.

``paste_augment`` makes view-like training pictures out of a knowledge-base image (the subject
shrunk and pasted at a random place on a random flat background, optionally mirrored, with pixel
noise): generic copy-paste augmentation, so entities that have no training views (the knowledge
base's distractors, InfoSeek-style unseen entities) still get looked at in clutter-like conditions.

Leaves out: the linear maps into the shared space and the text side (``encoders.py``), training
(``encoders_train.py``).
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from kbvqa.data.schema import open_image

PIXEL_MEAN = (0.5, 0.5, 0.5)    # simple standardisation; the toy world's pictures are bright
PIXEL_STD = (0.25, 0.25, 0.25)


@dataclass(frozen=True)
class VisionConfig:
    image_size: int = 112                          # input side in pixels (the toy world's size)
    channels: tuple[int, ...] = (16, 32, 64, 128)  # stem, then one stride-2 block per entry after it

    def __post_init__(self):
        if len(self.channels) < 2 or any(int(c) < 1 for c in self.channels):
            raise ValueError(f"channels must list >= 2 positive widths, got {self.channels}")
        if self.image_size % self.stride or self.image_size < self.stride:
            raise ValueError(f"image_size must be a positive multiple of {self.stride}, "
                             f"got {self.image_size}")

    @property
    def stride(self) -> int:
        return 2 ** len(self.channels)

    @property
    def grid(self) -> int:
        """Tokens per side of the output grid."""
        return self.image_size // self.stride

    @property
    def width(self) -> int:
        return self.channels[-1]


def _block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU(),
        nn.Conv2d(c_out, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


class ToyVisionEncoder(nn.Module):
    """Pixels [B, 3, S, S] -> patch tokens [B, (S/16)^2, width] (row-major grid)."""

    def __init__(self, config: VisionConfig | None = None):
        super().__init__()
        self.config = config or VisionConfig()
        ch = self.config.channels
        stem = nn.Sequential(nn.Conv2d(3, ch[0], 3, stride=2, padding=1), nn.ReLU())
        self.body = nn.Sequential(stem, *[_block(a, b) for a, b in zip(ch[:-1], ch[1:])])

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        size = self.config.image_size
        if pixels.ndim != 4 or pixels.shape[1:] != (3, size, size):
            raise ValueError(f"expected pixels of shape [B, 3, {size}, {size}], got {tuple(pixels.shape)}")
        return self.body(pixels).flatten(2).transpose(1, 2)


def images_to_tensor(images: Sequence, size: int) -> torch.Tensor:
    """PIL images (or anything ``open_image`` reads) -> standardised float tensor [B, 3, size, size]."""
    from PIL import Image

    arrays = []
    for ref in images:
        im = open_image(ref)
        if im is None:
            raise ValueError("images_to_tensor got None; pass only real images")
        if im.size != (size, size):
            im = im.resize((size, size), Image.BILINEAR)
        arrays.append(np.asarray(im, dtype=np.uint8))
    return uint8_to_tensor(torch.from_numpy(np.stack(arrays)) if arrays
                           else torch.zeros(0, size, size, 3, dtype=torch.uint8))


def uint8_to_tensor(batch: torch.Tensor) -> torch.Tensor:
    """uint8 [B, H, W, 3] -> standardised float [B, 3, H, W] (training keeps pictures as uint8)."""
    x = batch.permute(0, 3, 1, 2).float().div_(255.0)
    mean = torch.tensor(PIXEL_MEAN).view(1, 3, 1, 1)
    std = torch.tensor(PIXEL_STD).view(1, 3, 1, 1)
    return (x - mean) / std


def cutout(image):
    """The subject of a picture on a plain background as an RGBA sprite cropped to its pixels
    (pixels that differ from the median colour of the picture's border)."""
    from PIL import Image

    arr = np.asarray(open_image(image), dtype=np.int16)
    border = np.concatenate([arr[0], arr[-1], arr[:, 0], arr[:, -1]])
    mask = np.abs(arr - np.median(border, axis=0)).sum(axis=2) > 24
    rgba = Image.fromarray(np.dstack([arr.astype(np.uint8), (mask * 255).astype(np.uint8)]), "RGBA")
    return rgba.crop(rgba.getchannel("A").getbbox() or (0, 0, rgba.width, rgba.height))


def _place(canvas, sprite, side_px: int, rng: random.Random) -> None:
    from PIL import Image

    scale = side_px / max(sprite.size)
    sp = sprite.resize((max(4, round(sprite.width * scale)), max(4, round(sprite.height * scale))),
                       Image.BILINEAR)
    if rng.random() < 0.5:
        sp = sp.transpose(Image.FLIP_LEFT_RIGHT)
    canvas.paste(sp, (rng.randint(0, canvas.width - sp.width), rng.randint(0, canvas.height - sp.height)), sp)


def paste_augment(subject, rng: random.Random, size: int = 112, clutter: Sequence = (),
                  scale: tuple[float, float] = (0.4, 0.75), noise_std: float = 8.0) -> np.ndarray:
    """A view-like uint8 [size, size, 3] picture of the RGBA sprite ``subject`` (see ``cutout``).

    On a random flat colour with a few random blobs, the ``clutter`` sprites (other creatures) are
    pasted at 45-70 % of the subject's size, then the subject at ``scale`` of the side, each
    mirrored with probability 1/2 and placed anywhere; Gaussian pixel noise of ``noise_std`` is
    added. Deterministic in ``rng``.
    """
    from PIL import Image, ImageDraw

    bg = tuple(rng.randint(140, 235) for _ in range(3))
    canvas = Image.new("RGB", (size, size), bg)
    draw = ImageDraw.Draw(canvas)
    for _ in range(rng.randint(0, 30)):
        x, y, r = rng.uniform(0, size), rng.uniform(0, size), rng.uniform(1, 5)
        draw.ellipse([x - r, y - r, x + r, y + r], fill=tuple(max(0, min(255, c + rng.randint(-30, 30))) for c in bg))
    side = round(rng.uniform(*scale) * size)
    for sprite in clutter:
        _place(canvas, sprite, max(8, round(side * rng.uniform(0.45, 0.70))), rng)
    _place(canvas, subject, side, rng)
    noise = np.random.default_rng(rng.getrandbits(32)).standard_normal((size, size, 3)) * noise_std
    return np.clip(np.asarray(canvas, dtype=np.float32) + noise, 0, 255).astype(np.uint8)


def crop_box(image, box, margin: float = 0.15, size: int | None = None):
    """``image`` cropped to ``box`` (x0, y0, x1, y1) grown by ``margin`` of its side on every side,
    squared, clipped to the picture and resized to ``size`` (default: the picture's side)."""
    from PIL import Image

    im = open_image(image)
    x0, y0, x1, y1 = box
    half = max(x1 - x0, y1 - y0) * (0.5 + margin)
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    crop = tuple(round(v) for v in (max(0, cx - half), max(0, cy - half),
                                    min(im.width, cx + half), min(im.height, cy + half)))
    return im.crop(crop).resize((size or im.width, size or im.height), Image.BILINEAR)
