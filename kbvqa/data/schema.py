"""One schema for every source the book reads: the toy world and the real datasets.

Five record types cover the four papers:

- ``Passage``          a retrievable piece of text inside a document (a wiki section, an abstract).
- ``Document``         a knowledge-base entry: title, summary, image, passages (E-VQA/InfoSeek
                       Wikipedia pages, toy-world entity pages, BioASQ abstracts with no image).
- ``Query``            something a system must answer: image (or none), question, gold answers,
                       answer type, options for multiple choice, gold documents / evidence.
- ``KBExample``        a solved query kept in an RCTS knowledge base, with its reasoning context
                       (RCTS §3.1: x_i = (I_i, Q_i, A_i, C_i)).
- ``LiteratureItem``   a text-only literature abstract (SeRTS / BioASQ corpus).

Images are referenced, not embedded: a field may hold a ``PIL.Image.Image``, a path, raw bytes,
or a zero-argument callable that renders one (the toy world renders lazily). ``open_image``
turns any of those into a PIL image. Records serialise to plain dicts (``to_dict``/``from_dict``)
without their images; image payloads are the loader's business.

What this file leaves out: any loading or generation logic (see ``toyworld.py``, ``datasets.py``).
"""
from __future__ import annotations

import dataclasses
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ANSWER_TYPES = (
    "string",      # E-VQA/InfoSeek free-form string, exact match after normalisation
    "numerical",   # InfoSeek numeric: gold value(s) plus an acceptable range
    "time",        # a year / date, exact match after normalisation
    "multi",       # several answers; E-VQA '&&' style, set IoU >= 0.5
    "choice",      # multiple choice: answers[0] is the correct option letter, options holds texts
    "free",        # free-form math / short answer (MATH-Vision, MMMU open)
    "yesno",       # BioASQ yes/no
    "factoid",     # BioASQ factoid (list of synonym lists)
    "list",        # BioASQ list
    "summary",     # BioASQ summary (ideal answer only)
)

Box = tuple[int, int, int, int]  # (x0, y0, x1, y1) in pixels, x1/y1 exclusive


def open_image(ref: Any):
    """Return a ``PIL.Image.Image`` (RGB) for any image reference, or ``None`` for ``None``."""
    from PIL import Image

    if ref is None:
        return None
    if isinstance(ref, Image.Image):
        return ref if ref.mode == "RGB" else ref.convert("RGB")
    if callable(ref):
        return open_image(ref())
    if isinstance(ref, (bytes, bytearray)):
        return Image.open(io.BytesIO(ref)).convert("RGB")
    if isinstance(ref, (str, Path)):
        with Image.open(ref) as im:
            return im.convert("RGB")
    raise ValueError(f"cannot open an image from {type(ref).__name__}")


def _check_box(box: Box | None) -> None:
    if box is None:
        return
    if len(box) != 4 or not (box[0] < box[2] and box[1] < box[3]):
        raise ValueError(f"box must be (x0, y0, x1, y1) with x0 < x1 and y0 < y1, got {box}")


class _Record:
    """Dict round-trip shared by all records; image fields are dropped from dicts."""

    _image_fields: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        out = {}
        for f in dataclasses.fields(self):
            if f.name in self._image_fields:
                continue
            v = getattr(self, f.name)
            if f.name == "passages":
                v = [p.to_dict() for p in v]
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def from_dict(cls, d: dict):
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - names
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
        kw = dict(d)
        if "passages" in kw:
            kw["passages"] = [Passage.from_dict(p) for p in kw["passages"]]
        for key in ("box", "answer_range"):
            if kw.get(key) is not None:
                kw[key] = tuple(kw[key])
        return cls(**kw)


@dataclass
class Passage(_Record):
    id: str
    doc_id: str
    text: str
    title: str = ""        # the document title, repeated so a passage can be shown alone
    section: str = ""      # e.g. "habitat", "Background"

    def __post_init__(self):
        if not self.id or not self.doc_id:
            raise ValueError("Passage needs a non-empty id and doc_id")


@dataclass
class Document(_Record):
    id: str
    title: str
    summary: str = ""
    passages: list[Passage] = field(default_factory=list)
    image: Any = None
    meta: dict = field(default_factory=dict)
    _image_fields = ("image",)

    def __post_init__(self):
        if not self.id:
            raise ValueError("Document needs a non-empty id")
        for p in self.passages:
            if p.doc_id != self.id:
                raise ValueError(f"passage {p.id} belongs to {p.doc_id}, not {self.id}")

    def passage(self, section: str) -> Passage:
        for p in self.passages:
            if p.section == section:
                return p
        raise KeyError(f"{self.id} has no section {section!r}")


@dataclass
class Query(_Record):
    id: str
    question: str
    answers: list[str]   # gold answers / aliases; 'choice': the letter; 'multi': the items of one set
    answer_type: str = "string"
    image: Any = None
    options: list[str] | None = None            # multiple-choice option texts, in order A, B, ...
    answer_range: tuple[float, float] | None = None   # numerical questions: accepted [lo, hi]
    gold_doc_ids: list[str] = field(default_factory=list)
    evidence_ids: list[str] = field(default_factory=list)   # gold passage ids
    box: Box | None = None                      # the subject's box in ``image``
    split: str = ""
    context: str = ""                           # ScienceQA hint / extra text shown with the question
    solution: str = ""                          # worked solution (ScienceQA), ideal answer (BioASQ)
    meta: dict = field(default_factory=dict)
    _image_fields = ("image",)

    def __post_init__(self):
        if self.answer_type not in ANSWER_TYPES:
            raise ValueError(f"unknown answer_type {self.answer_type!r}; expected one of {ANSWER_TYPES}")
        if not isinstance(self.answers, list):
            raise ValueError("answers must be a list of strings")
        if self.answer_type == "choice":
            if not self.options or len(self.options) < 2:
                raise ValueError(f"{self.id}: a 'choice' query needs at least two options")
            letters = option_letters(len(self.options))
            if not self.answers or self.answers[0] not in letters:
                raise ValueError(f"{self.id}: answer must be one of {letters}, got {self.answers}")
        if self.answer_range is not None and self.answer_range[0] > self.answer_range[1]:
            raise ValueError(f"{self.id}: answer_range lo > hi: {self.answer_range}")
        _check_box(self.box)

    @property
    def answer(self) -> str:
        """The first gold answer (for 'choice', the correct letter)."""
        return self.answers[0] if self.answers else ""

    @property
    def answer_text(self) -> str:
        """For multiple choice, the text of the correct option; else ``answer``."""
        if self.answer_type == "choice" and self.options:
            return self.options[option_letters(len(self.options)).index(self.answer)]
        return self.answer


@dataclass
class KBExample(Query):
    """A knowledge-base entry for in-context retrieval (RCTS): a solved query plus C_i."""

    reasoning_context: str | None = None


@dataclass
class LiteratureItem(_Record):
    id: str
    title: str
    text: str
    meta: dict = field(default_factory=dict)

    def __post_init__(self):
        if not self.id:
            raise ValueError("LiteratureItem needs a non-empty id")


def option_letters(n: int) -> list[str]:
    """['A', 'B', ...] for ``n`` options (at most 26)."""
    if not 1 <= n <= 26:
        raise ValueError(f"number of options must be in 1..26, got {n}")
    return [chr(ord("A") + i) for i in range(n)]


ImageRef = Any  # PIL image | path | bytes | zero-argument callable returning one | None
