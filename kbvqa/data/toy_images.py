"""Scenes of the toy world: canonical document images and cluttered query views with boxes.

A ``ViewSpec`` is a frozen, picklable description of one picture (background texture, the subject's
placement, smaller distractor creatures of other families, pixel noise). ``render_view(spec)`` is a
pure function of it, so the world stores ``functools.partial(render_view, spec)`` as a lazy image
(the schema's zero-argument callable) and never keeps pixels in memory. ``subject_box(spec)`` is
the tight ground-truth box (x0, y0, x1, y1; x1/y1 exclusive) of the subject's non-transparent
pixels; the subject is pasted last, so it is never occluded, and always lies wholly in the frame.

- canonical image (documents): the subject alone, centred, 82 % of the frame, plain background.
- query view (questions): textured background, subject at 40-72 % of the frame and anywhere in it,
  optionally mirrored, 1-3 distractor creatures at 45-70 % of the subject's size, Gaussian noise.

Leaves out: the creatures' drawing (``toy_shapes.py``) and which entity appears where
(``toy_questions.py``, ``toy_mc.py``).
"""
from __future__ import annotations

import random
from dataclasses import dataclass
from functools import partial

import numpy as np
from PIL import Image, ImageDraw

from kbvqa.data.toy_shapes import Look, sprite

CANVAS_BG = (246, 244, 238)
BACKGROUNDS = {"sand": (222, 206, 168), "grass": (170, 196, 140), "sky": (186, 208, 226),
               "stone": (192, 188, 182), "moss": (150, 172, 130), "dusk": (204, 186, 204)}
TEXTURES = ("blades", "pebbles", "waves")


@dataclass(frozen=True)
class Placement:
    look: Look
    size: int      # sprite side in pixels
    x: int         # top-left corner
    y: int
    flip: bool = False


@dataclass(frozen=True)
class ViewSpec:
    image_size: int
    subject: Placement
    distractors: tuple[Placement, ...] = ()
    background: str = ""          # key of BACKGROUNDS; "" = plain canonical canvas
    texture: str = ""             # one of TEXTURES; "" = none
    noise_std: float = 0.0
    seed: int = 0                 # texture and noise randomness


def canonical_spec(look: Look, image_size: int) -> ViewSpec:
    """The document image of a creature: centred, large, plain background, no noise."""
    size = round(image_size * 0.82)
    off = (image_size - size) // 2
    return ViewSpec(image_size, Placement(look, size, off, off))


def layout_view(rng: random.Random, look: Look, distractor_looks: list[Look], image_size: int,
                noise_std: float, min_scale: float = 0.40, max_scale: float = 0.72) -> ViewSpec:
    """Draw a random query view of ``look`` with the given distractor creatures."""
    w = image_size
    size = round(w * rng.uniform(min_scale, max_scale))
    subject = Placement(look, size, rng.randint(0, w - size), rng.randint(0, w - size),
                        rng.random() < 0.5)
    distractors = []
    for dl in distractor_looks:
        ds = max(8, round(size * rng.uniform(0.45, 0.70)))
        distractors.append(Placement(dl, ds, rng.randint(0, w - ds), rng.randint(0, w - ds),
                                     rng.random() < 0.5))
    return ViewSpec(w, subject, tuple(distractors), rng.choice(sorted(BACKGROUNDS)),
                    rng.choice(TEXTURES), float(noise_std), rng.getrandbits(32))


def _texture(img: Image.Image, kind: str, base, rng: random.Random) -> None:
    draw = ImageDraw.Draw(img)
    w = img.width

    def tint(d):
        return tuple(max(0, min(255, c + d)) for c in base)

    if kind == "blades":
        for _ in range(70):
            x, y = rng.uniform(0, w), rng.uniform(0, w)
            draw.line([(x, y), (x + rng.uniform(-3, 3), y - rng.uniform(4, 10))],
                      fill=tint(rng.randint(-30, 20)), width=1)
    elif kind == "pebbles":
        for _ in range(40):
            x, y, r = rng.uniform(0, w), rng.uniform(0, w), rng.uniform(1.5, 4.5)
            draw.ellipse([x - r, y - r * 0.7, x + r, y + r * 0.7], fill=tint(rng.randint(-28, 22)))
    elif kind == "waves":
        for y in range(3, w, 9):
            amp, phase = rng.uniform(1, 3), rng.uniform(0, 8)
            pts = [(x, y + amp * ((x + phase) % 8 < 4)) for x in range(0, w + 4, 4)]
            draw.line(pts, fill=tint(rng.randint(-24, 16)), width=1)
    elif kind:
        raise ValueError(f"unknown texture {kind!r}; expected one of {TEXTURES}")


def _paste(img: Image.Image, p: Placement) -> None:
    sp = sprite(p.look, p.flip, p.size)
    img.paste(sp, (p.x, p.y), sp)


def render_view(spec: ViewSpec) -> Image.Image:
    """The RGB picture described by ``spec`` (deterministic)."""
    rng = random.Random(spec.seed)
    base = BACKGROUNDS[spec.background] if spec.background else CANVAS_BG
    img = Image.new("RGB", (spec.image_size, spec.image_size), base)
    _texture(img, spec.texture, base, rng)
    for d in spec.distractors:
        _paste(img, d)
    _paste(img, spec.subject)
    if spec.noise_std > 0:
        rng_np = np.random.default_rng(spec.seed)
        noise = rng_np.standard_normal((img.height, img.width, 3), dtype=np.float32) * spec.noise_std
        arr = np.clip(np.asarray(img, dtype=np.float32) + noise, 0, 255).astype(np.uint8)
        img = Image.fromarray(arr, "RGB")
    return img


def renderer(spec: ViewSpec) -> partial:
    """A zero-argument, picklable callable that renders ``spec`` (a lazy schema image)."""
    return partial(render_view, spec)


def subject_box(spec: ViewSpec) -> tuple[int, int, int, int]:
    """Tight box (x0, y0, x1, y1), x1/y1 exclusive, of the subject's visible pixels."""
    p = spec.subject
    bb = sprite(p.look, p.flip, p.size).getchannel("A").getbbox()
    if bb is None:  # cannot happen for a real look; keep the contract: a valid box
        return (p.x, p.y, p.x + p.size, p.y + p.size)
    return (p.x + bb[0], p.y + bb[1], p.x + bb[2], p.y + bb[3])


def subject_mask(spec: ViewSpec) -> np.ndarray:
    """Boolean (H, W) mask of the subject's pixels in the view (for tests and figures)."""
    p = spec.subject
    alpha = np.asarray(sprite(p.look, p.flip, p.size).getchannel("A")) > 0
    out = np.zeros((spec.image_size, spec.image_size), dtype=bool)
    out[p.y:p.y + p.size, p.x:p.x + p.size] = alpha
    return out


def foreground_mask(img: Image.Image, background=CANVAS_BG, tol: int = 24) -> np.ndarray:
    """Pixels of a canonical image that differ from the plain canvas (a binary silhouette)."""
    arr = np.asarray(img.convert("RGB"), dtype=np.int16)
    return np.abs(arr - np.array(background, dtype=np.int16)).sum(axis=2) > tol


def mask_iou(a: np.ndarray, b: np.ndarray) -> float:
    """Intersection over union of two boolean masks (0.0 when both are empty)."""
    union = np.logical_or(a, b).sum()
    return float(np.logical_and(a, b).sum() / union) if union else 0.0
