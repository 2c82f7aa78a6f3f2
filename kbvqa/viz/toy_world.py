"""Pictures of the toy world for the book: a grid of look-alike families and a query with its box.

Pure functions returning ``PIL.Image.Image`` (display them in a notebook as they are, or with
``plt.imshow``). They take the world as their first argument and draw nothing else.

Leaves out: plots of statistics (the chapter plots ``ToyWorld.stats()`` with matplotlib) and the
general figure helpers of ``kbvqa.viz``. (Pure PIL, so ``kbvqa.data`` could hold it; it lives with
the other pictures, by role.)
"""
from __future__ import annotations

from PIL import Image, ImageDraw, ImageFont

from kbvqa.data.schema import open_image

_PAPER = (255, 255, 255)
_INK = (40, 40, 48)
_BOX = (230, 40, 60)


def _font(size: int):
    try:
        return ImageFont.load_default(size=size)
    except (TypeError, OSError):  # Pillow without FreeType: fixed bitmap font
        return ImageFont.load_default()


def family_grid(world, n_families: int = 6, cell: int = 112, include_distractors: bool = True,
                family_ids: list[str] | None = None) -> Image.Image:
    """One row per family: its noun, then each member's canonical picture captioned with its name,
    colour and pattern (distractor members marked with *)."""
    if n_families < 1:
        raise ValueError(f"n_families must be >= 1, got {n_families}")
    fams = ([world.family(f) for f in family_ids] if family_ids
            else [f for f in world.families if not f.distractor][:n_families])
    rows = []
    for fam in fams:
        members = [world.entity(m) for m in fam.member_ids]
        rows.append((fam, [m for m in members if include_distractors or not m.distractor]))
    label_w, cap_h = 120, 30
    n_cols = max(len(m) for _, m in rows)
    img = Image.new("RGB", (label_w + n_cols * cell, len(rows) * (cell + cap_h)), _PAPER)
    draw = ImageDraw.Draw(img)
    big, small = _font(15), _font(11)
    for r, (fam, members) in enumerate(rows):
        y = r * (cell + cap_h)
        draw.text((8, y + cell // 2 - 8), fam.name, fill=_INK, font=big)
        for c, e in enumerate(members):
            pic = open_image(world.document_of(e.id).image)
            if pic.size != (cell, cell):
                pic = pic.resize((cell, cell), Image.Resampling.LANCZOS)
            x = label_w + c * cell
            img.paste(pic, (x, y))
            star = "*" if e.distractor else ""
            draw.text((x + 4, y + cell + 1), f"{e.name}{star}", fill=_INK, font=small)
            draw.text((x + 4, y + cell + 14), f"{e.colour} {e.pattern}", fill=(110, 110, 120), font=small)
    return img


def _fit(text: str, font, width: int) -> list[str]:
    """``text`` wrapped at spaces into lines no wider than ``width`` pixels in ``font``; a word
    wider than that on its own is cut into pieces that fit."""
    lines: list[str] = []
    for word in text.split():
        pieces = []
        while len(word) > 1 and font.getlength(word) > width:
            cut = max((k for k in range(1, len(word)) if font.getlength(word[:k]) <= width), default=1)
            pieces.append(word[:cut])
            word = word[cut:]
        pieces.append(word)
        for i, piece in enumerate(pieces):
            if i == 0 and lines and font.getlength(f"{lines[-1]} {piece}") <= width:
                lines[-1] = f"{lines[-1]} {piece}"
            else:
                lines.append(piece)
    return lines or [""]


def draw_query(world, query, scale: int = 3, show_answer: bool = True) -> Image.Image:
    """The query's picture enlarged ``scale`` times with its subject box, the question below and,
    optionally, the gold answer. Every line of text is wrapped to the picture's width, so a long
    answer or option stays inside the image."""
    if scale < 1:
        raise ValueError(f"scale must be >= 1, got {scale}")
    pic = open_image(query.image)
    if pic is None:
        raise ValueError(f"query {query.id} has no image")
    w, h = pic.size
    pic = pic.resize((w * scale, h * scale), Image.Resampling.NEAREST)
    texts = [query.question]
    if query.options:
        letters = [chr(ord("A") + i) for i in range(len(query.options))]
        texts += [f"({letter}) {opt}" for letter, opt in zip(letters, query.options)]
    if show_answer:
        answer = query.answer_text if query.answer_type == "choice" else ", ".join(query.answers)
        texts.append(f"answer: {answer}")
        entity = query.meta.get("entity_id")
        if entity:
            texts.append(f"subject: {entity} ({world.entity(entity).family})")
    font, margin, line_h = _font(13), 6, 16
    lines = [line for text in texts for line in _fit(text, font, pic.width - 2 * margin)]
    img = Image.new("RGB", (pic.width, pic.height + 8 + line_h * len(lines)), _PAPER)
    img.paste(pic, (0, 0))
    draw = ImageDraw.Draw(img)
    if query.box is not None:
        x0, y0, x1, y1 = (v * scale for v in query.box)
        draw.rectangle([x0, y0, x1 - 1, y1 - 1], outline=_BOX, width=max(2, scale))
    for i, line in enumerate(lines):
        draw.text((margin, pic.height + 4 + i * line_h), line, fill=_INK, font=font)
    return img
