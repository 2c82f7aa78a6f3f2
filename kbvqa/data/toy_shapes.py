"""Silhouettes, colours and patterns of toy-world creatures, drawn as RGBA sprites.

A *family* owns one silhouette: a wobbly body outline (a radial curve with a few harmonics and a
family-specific aspect ratio) plus one or two appendages (forked tail, back fin, legs, ears, row of
spikes, snout). Every member of the family reuses that exact outline and differs only in body colour
and surface pattern, so members are visual look-alikes (the hard negatives of MOLT and ReAG) and
their canonical images have near-identical binary masks (MOLT §1: "visually near-duplicate
images, e.g. look-alike species"; ReAG §3.2 / appendix A: hard negatives). A ``Look`` (silhouette seed, colour,
pattern) fully determines a sprite; sprites are cached per (look, flip, size).

Leaves out: backgrounds, clutter, noise and boxes (``toy_images.py``).
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass
from functools import cache, lru_cache

from PIL import Image, ImageDraw, ImageFilter

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (214, 72, 66), "orange": (238, 142, 46), "yellow": (232, 198, 54),
    "green": (88, 168, 82), "teal": (42, 160, 158), "blue": (62, 112, 208),
    "purple": (142, 84, 188), "pink": (230, 116, 170), "brown": (150, 102, 62),
    "grey": (132, 134, 146),
}
PATTERNS = ("stripes", "dots", "rings", "checks", "bands", "zigzags", "spots", "plain")
APPENDAGES = ("forked tail", "back fin", "legs", "ears", "spikes", "snout")
OUTLINE = (44, 42, 52)
MASTER = 128     # side of the cached master sprite (rendered at 2x and downsampled)
_SS = 2          # supersampling factor


@dataclass(frozen=True)
class Look:
    """Everything that decides how one creature looks."""

    shape_seed: int   # the family silhouette
    colour: str       # key of COLOURS
    pattern: str      # one of PATTERNS


@dataclass(frozen=True)
class Silhouette:
    polygons: tuple[tuple[tuple[float, float], ...], ...]   # in [0, 1]^2 sprite coordinates
    eye: tuple[float, float, float]                          # centre x, centre y, radius
    words: str                                               # e.g. "an oval body and a forked tail"


def _poly(points) -> tuple[tuple[float, float], ...]:
    return tuple((float(x), float(y)) for x, y in points)


@cache
def silhouette(shape_seed: int) -> Silhouette:
    """The family outline for ``shape_seed`` (deterministic, cached)."""
    rng = random.Random(shape_seed)
    aspect = rng.uniform(0.45, 1.0)
    rx = 0.34
    ry = rx * aspect
    cx, cy = 0.5, 0.5
    harmonics = [(k, rng.uniform(0.0, 0.11), rng.uniform(0, 2 * math.pi)) for k in range(2, 6)]
    body = []
    for i in range(72):
        t = 2 * math.pi * i / 72
        r = 1.0 + sum(a * math.cos(k * t + ph) for k, a, ph in harmonics)
        body.append((cx + rx * r * math.cos(t), cy + ry * r * math.sin(t)))
    kinds = rng.sample(APPENDAGES, rng.choice((1, 2, 2)))
    polys = [_poly(body)]
    for kind in kinds:
        polys.extend(_appendage(kind, rng, cx, cy, rx, ry))
    eye = (cx + 0.55 * rx, cy - 0.3 * ry, 0.045)
    polys, eye = _normalise(polys, eye)
    shape_word = "round" if aspect > 0.85 else ("oval" if aspect > 0.62 else "long, low")
    words = f"a {shape_word} body with " + " and ".join(_APPENDAGE_WORDS[k] for k in kinds)
    return Silhouette(tuple(polys), eye, words)


_APPENDAGE_WORDS = {"forked tail": "a forked tail", "back fin": "a tall back fin",
                    "legs": "short stubby legs", "ears": "two pointed ears",
                    "spikes": "a row of spikes", "snout": "a long snout"}


def _appendage(kind: str, rng: random.Random, cx, cy, rx, ry) -> list:
    """Polygons of one appendage, attached to the body ellipse (front = +x, back = -x)."""
    if kind == "forked tail":
        s = rng.uniform(0.18, 0.28)
        bx = cx - rx * 0.85
        return [_poly([(bx, cy - 0.03), (bx - s, cy - s * 0.8), (bx - s * 0.7, cy),
                       (bx - s, cy + s * 0.8), (bx, cy + 0.03)])]
    if kind == "back fin":
        h, w = rng.uniform(0.16, 0.26), rng.uniform(0.12, 0.22)
        top = cy - ry * 0.8
        return [_poly([(cx - w, top + 0.04), (cx - w * 0.6, top - h), (cx + w * 0.5, top + 0.04)])]
    if kind == "legs":
        n = rng.choice((2, 3, 4))
        h, w = rng.uniform(0.10, 0.18), 0.045
        xs = [cx - rx * 0.6 + i * (1.2 * rx) / max(n - 1, 1) for i in range(n)]
        base = cy + ry * 0.7
        return [_poly([(x - w, base), (x + w, base), (x + w, base + h), (x - w, base + h)]) for x in xs]
    if kind == "ears":
        h = rng.uniform(0.12, 0.2)
        top = cy - ry * 0.75
        return [_poly([(x - 0.05, top + 0.05), (x + 0.01, top - h), (x + 0.06, top + 0.05)])
                for x in (cx + rx * 0.25, cx + rx * 0.6)]
    if kind == "spikes":
        n, h = rng.choice((3, 4, 5)), rng.uniform(0.07, 0.12)
        top = cy - ry * 0.85
        xs = [cx - rx * 0.6 + i * (1.2 * rx) / (n - 1) for i in range(n)]
        return [_poly([(x - 0.045, top + 0.05), (x, top - h), (x + 0.045, top + 0.05)]) for x in xs]
    # snout
    length = rng.uniform(0.14, 0.24)
    fx = cx + rx * 0.8
    return [_poly([(fx, cy - ry * 0.35), (fx + length, cy + 0.01), (fx, cy + ry * 0.35)])]


def _normalise(polys, eye):
    """Scale and centre all polygons so their joint box fills [0.04, 0.96] on its longer side."""
    xs = [x for p in polys for x, _ in p]
    ys = [y for p in polys for _, y in p]
    x0, x1, y0, y1 = min(xs), max(xs), min(ys), max(ys)
    s = 0.92 / max(x1 - x0, y1 - y0)
    ox = 0.5 - s * (x0 + x1) / 2
    oy = 0.5 - s * (y0 + y1) / 2
    out = [tuple((round(ox + s * x, 5), round(oy + s * y, 5)) for x, y in p) for p in polys]
    return out, (round(ox + s * eye[0], 5), round(oy + s * eye[1], 5), round(s * eye[2], 5))


def shade(rgb: tuple[int, int, int], f: float) -> tuple[int, int, int]:
    """Darken (f < 1) or lighten towards white (f > 1) a colour."""
    if f <= 1:
        return tuple(int(c * f) for c in rgb)
    return tuple(int(c + (255 - c) * (f - 1)) for c in rgb)


def _draw_pattern(draw: ImageDraw.ImageDraw, pattern: str, ink, n: int, seed: int) -> None:
    """Draw ``pattern`` in colour ``ink`` over an n x n canvas (sprite coordinates)."""
    u = n / 128  # pattern unit: the pattern scales with the sprite
    if pattern == "stripes":
        for x in range(0, n, int(22 * u)):
            draw.rectangle([x, 0, x + int(9 * u), n], fill=ink)
    elif pattern == "bands":
        for y in range(int(6 * u), n, int(22 * u)):
            draw.rectangle([0, y, n, y + int(9 * u)], fill=ink)
    elif pattern == "dots":
        step = int(20 * u)
        for j, y in enumerate(range(0, n + step, step)):
            for x in range((j % 2) * step // 2, n + step, step):
                draw.ellipse([x - 5 * u, y - 5 * u, x + 5 * u, y + 5 * u], fill=ink)
    elif pattern == "rings":
        c = n / 2
        for r in range(int(8 * u), n, int(18 * u)):
            draw.ellipse([c - r, c - r, c + r, c + r], outline=ink, width=int(6 * u))
    elif pattern == "checks":
        step = int(16 * u)
        for j, y in enumerate(range(0, n, step)):
            for x in range((j % 2) * step, n, 2 * step):
                draw.rectangle([x, y, x + step - 1, y + step - 1], fill=ink)
    elif pattern == "zigzags":
        step = int(12 * u)
        for y in range(int(8 * u), n, int(24 * u)):
            pts = [(x, y + (step if (x // step) % 2 else 0)) for x in range(0, n + step, step)]
            draw.line(pts, fill=ink, width=int(5 * u))
    elif pattern == "spots":
        rng = random.Random(seed)
        for _ in range(9):
            x, y, r = rng.uniform(0.2, 0.8) * n, rng.uniform(0.2, 0.8) * n, rng.uniform(7, 13) * u
            draw.ellipse([x - r, y - r * 0.8, x + r, y + r * 0.8], fill=ink)
    elif pattern != "plain":
        raise ValueError(f"unknown pattern {pattern!r}; expected one of {PATTERNS}")


@lru_cache(maxsize=512)
def master_sprite(look: Look, flip: bool = False) -> Image.Image:
    """The creature as a MASTER x MASTER RGBA sprite (transparent outside its outline)."""
    if flip:
        return master_sprite(look, False).transpose(Image.Transpose.FLIP_LEFT_RIGHT)
    if look.colour not in COLOURS:
        raise ValueError(f"unknown colour {look.colour!r}")
    n = MASTER * _SS
    sil = silhouette(look.shape_seed)
    mask = Image.new("L", (n, n), 0)
    mdraw = ImageDraw.Draw(mask)
    for poly in sil.polygons:
        mdraw.polygon([(x * n, y * n) for x, y in poly], fill=255)
    outline_mask = mask.filter(ImageFilter.MaxFilter(5))
    body = Image.new("RGB", (n, n), COLOURS[look.colour])
    _draw_pattern(ImageDraw.Draw(body), look.pattern, shade(COLOURS[look.colour], 0.55), n,
                  seed=look.shape_seed % 1000)
    ex, ey, er = (v * n for v in sil.eye)
    bdraw = ImageDraw.Draw(body)
    bdraw.ellipse([ex - er, ey - er, ex + er, ey + er], fill=(250, 250, 245), outline=OUTLINE,
                  width=2)
    bdraw.ellipse([ex - er * 0.45, ey - er * 0.45, ex + er * 0.45, ey + er * 0.45], fill=OUTLINE)
    sprite = Image.new("RGBA", (n, n), OUTLINE + (0,))
    sprite.paste(Image.new("RGBA", (n, n), OUTLINE + (255,)), (0, 0), outline_mask)
    sprite.paste(body, (0, 0), mask)
    return sprite.resize((MASTER, MASTER), Image.Resampling.BOX)


@lru_cache(maxsize=2048)
def sprite(look: Look, flip: bool, size: int) -> Image.Image:
    """The sprite resized to ``size`` x ``size`` pixels (cached: boxes and renders share it)."""
    if size < 4:
        raise ValueError(f"sprite size must be >= 4 pixels, got {size}")
    img = master_sprite(look, flip)
    return img if size == MASTER else img.resize((size, size), Image.Resampling.BILINEAR)


def look_words(colour: str, pattern: str) -> str:
    """'blue stripes' / 'plain blue': the words for a look, as used in texts."""
    return f"plain {colour}" if pattern == "plain" else f"{colour} {pattern}"


def with_look(family: str, colour: str, pattern: str) -> str:
    """'a glimmerfin with blue stripes' / 'a plain blue glimmerfin'."""
    if pattern == "plain":
        return f"a plain {colour} {family}"
    return f"a {family} with {colour} {pattern}"
