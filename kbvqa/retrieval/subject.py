"""The question's subject (ReAG supp. A) and the box arithmetic of fine-grained retrieval (§3.1).

Subject extraction. ReAG supp. A ("Retrieval Details") runs spaCy (``en_core_web_sm``) and keeps,
in this order: (1) a noun phrase that starts with the demonstrative "this" / "these", (2) a noun
that is the object of a preposition ("of", "by", "in", "from", ...), (3) the last noun. Two
implementations of that one rule:

- ``extract_subject(q)`` / ``subject_rule(q)``: a deterministic rule-based extractor that needs no
  downloaded model (the cpu profile): a regex tokeniser, small closed word lists (determiners,
  prepositions, auxiliaries, pronouns, wh-words, a few adverbs and the verbs of KB-VQA questions)
  and two cues a tagger would use: a phrase after "does/is this" ends before its verb or
  predicate ("What does this glimmerfin *eat*?", "Is this tower *tall*?"), and a past participle
  before a preposition or the end ends it too ("this building *located* in").
- ``subject_from_spacy(doc)``: the same three steps over a spaCy ``Doc`` (noun chunks, ``pobj``
  dependencies, ``NOUN``/``PROPN`` tags); ``extract_subject(q, method="spacy")`` loads
  ``en_core_web_sm`` when spaCy is installed (the gpu profile; never installed here).

Both skip the words that name the picture itself ("this image", "this photo"): ours, not ReAG's.
Both return ``""`` when nothing qualifies (never raise), and the result is a span of the question.

Boxes. ``scale_box`` maps a box between image sizes (the tiny VLM answers in 56-px coordinates of
a 112-px view); ``expand_box`` grows a box by a margin, optionally squares it, and clamps it to the
image; ``crop_to_box`` cuts the region the retriever sees again (``multilevel``).

Leaves out: localising the subject (``subject_grounding.py``), retrieval (``multilevel.py``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from kbvqa.data.schema import open_image

__all__ = ["SubjectMatch", "crop_to_box", "expand_box", "extract_subject", "scale_box", "spacy_available",
           "subject_from_spacy", "subject_rule"]

DEMONSTRATIVES = frozenset({"this", "these"})
DETERMINERS = frozenset({"the", "a", "an", "its", "his", "her", "their", "our", "my", "your", "each",
                         "every", "some", "any", "all", "both", "that", "those", "this", "these"})
PREPOSITIONS = frozenset({"of", "by", "in", "from", "on", "at", "for", "with", "near", "about", "to", "into",
                          "onto", "over", "under", "between", "among", "across", "through", "during", "after",
                          "before", "since", "until", "against", "around", "behind", "beside", "within",
                          "without", "along", "toward", "towards", "upon", "via", "per", "like", "as", "than"})
AUXILIARIES = frozenset({"is", "are", "was", "were", "be", "been", "being", "am", "do", "does", "did", "has",
                         "have", "had", "can", "could", "will", "would", "shall", "should", "may", "might",
                         "must"})
WH_WORDS = frozenset({"what", "which", "who", "whom", "whose", "where", "when", "why", "how"})
OTHER_STOPS = frozenset({"and", "or", "but", "if", "so", "not", "no", "there", "it", "itself", "they", "them",
                         "he", "she", "we", "you", "i", "me", "us", "him", "one", "most", "more", "less",
                         "least", "very", "often", "usually", "mainly", "typically", "commonly", "generally",
                         "first", "also", "only", "just", "ever", "still", "else", "much", "many", "best",
                         "following", "true", "false", "each", "other", "same", "different", "main",
                         "largest", "smallest", "biggest", "highest", "lowest", "longest", "shortest",
                         "heaviest", "oldest", "farthest", "closest", "greatest", "fastest", "tallest"})
# verbs of KB-VQA questions (InfoSeek / E-VQA / the toy world); unknown verbs are caught by the
# "auxiliary before the demonstrative" cue instead
VERBS = frozenset({"eat", "eats", "live", "lives", "weigh", "weighs", "hunt", "hunts", "build", "make", "raise",
                   "defend", "look", "looks", "belong", "come", "grow", "feed", "use", "mean", "cross", "show",
                   "shows", "contain", "produce", "represent", "depict", "serve", "flow", "reach", "measure",
                   "cost", "stand", "originate", "become", "get", "go", "have", "has", "hold", "play",
                   "contains", "suggest", "describe", "indicate", "tell", "say", "find", "see", "know",
                   "help", "take", "shown", "given", "taken", "called", "named", "known", "located", "found",
                   "built", "made", "used", "seen", "described", "designed", "completed", "opened", "founded",
                   "painted", "written"})
IMAGE_WORDS = frozenset({"image", "images", "picture", "pictures", "photo", "photos", "photograph", "scene",
                         "figure", "figures", "diagram", "text", "passage"})
NOT_NOUNS = DETERMINERS | PREPOSITIONS | AUXILIARIES | WH_WORDS | OTHER_STOPS | VERBS | IMAGE_WORDS
_NP_STOPS = (DETERMINERS | PREPOSITIONS | AUXILIARIES | WH_WORDS | OTHER_STOPS) - {"this", "these"}
_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]*(?:'s|')?|[^\sA-Za-z0-9]")
_IMAGE_MARK = re.compile(r"<\s*image\s*_?\d*\s*>", re.IGNORECASE)
RULES = ("demonstrative", "preposition", "last_noun", "none")


@dataclass(frozen=True)
class SubjectMatch:
    """The subject phrase (a span of the question, "" if none) and which rule of supp. A found it."""

    text: str
    rule: str   # one of RULES


def _question_part(text: str) -> str:
    """The asking sentence: image markers removed; the first line/sentence ending in "?" if any."""
    text = _IMAGE_MARK.sub(" ", text)
    for piece in re.split(r"(?<=[?.!])\s+|\n+", text):
        if piece.strip().endswith("?"):
            return piece.strip()
    return text.strip()


def _word(token: str) -> str:
    """Lower-case word without a possessive ending."""
    return re.sub(r"('s|')$", "", token.lower())


def _is_word(token: str) -> bool:
    return token[0].isalnum()


def _participle_ends(tokens: list[str], j: int) -> bool:
    """``tokens[j]`` is a past participle that ends a phrase: "-ed" before a preposition or the end."""
    w = tokens[j].lower()
    if not (len(w) > 4 and w.endswith("ed")):
        return False
    nxt = tokens[j + 1].lower() if j + 1 < len(tokens) else ""
    return not nxt or not _is_word(nxt) or nxt in PREPOSITIONS


def _phrase(tokens: list[str], start: int, max_words: int = 4) -> tuple[list[str], bool]:
    """Words of the noun phrase starting at ``start`` and whether a verb/predicate word ended it."""
    words: list[str] = []
    for j in range(start, min(len(tokens), start + max_words)):
        tok = tokens[j]
        if not _is_word(tok):
            return words, False
        w = _word(tok)
        last = j + 1 >= len(tokens) or not _is_word(tokens[j + 1])
        if w in _NP_STOPS and not (w in AUXILIARIES and last and words == []):  # "What is this can?"
            return words, w in AUXILIARIES      # "does this building have": the verb was found
        if words and (w in VERBS or _participle_ends(tokens, j)):
            return words, True
        words.append(re.sub(r"('s|')$", "", tok))
        if tok.lower().endswith(("'s", "'")):   # "this bird's wingspan": the possessor is the subject
            return words, False
    return words, False


def subject_rule(question: str) -> SubjectMatch:
    """ReAG supp. A's subject with the rule that found it (see the module docstring); any string in,
    a defined ``SubjectMatch`` out."""
    if not isinstance(question, str):
        return SubjectMatch("", "none")
    tokens = _TOKEN.findall(_question_part(question))
    lower = [_word(t) for t in tokens]
    for i, w in enumerate(lower):                              # 1. "this / these" + noun phrase
        if w not in DEMONSTRATIVES:
            continue
        words, by_verb = _phrase(tokens, i + 1)
        if i > 0 and lower[i - 1] in AUXILIARIES and len(words) >= 2 and not by_verb:
            words = words[:-1]                                 # "does this hotel derive ...": drop the verb
        if words and _word(words[-1]) not in IMAGE_WORDS:
            return SubjectMatch(" ".join(words), "demonstrative")
    for i, w in enumerate(lower):                              # 2. object of a preposition
        if w not in PREPOSITIONS:
            continue
        j = i + 1
        while j < len(tokens) and lower[j] in DETERMINERS - DEMONSTRATIVES:
            j += 1
        words, _ = _phrase(tokens, j)
        if words and _word(words[-1]) not in IMAGE_WORDS and lower[j] not in DEMONSTRATIVES:
            return SubjectMatch(" ".join(words), "preposition")
    for tok in reversed(tokens):                               # 3. the last noun
        w = _word(tok)
        if _is_word(tok) and w not in NOT_NOUNS and not w.isdigit() and not w.endswith("ly"):
            return SubjectMatch(re.sub(r"('s|')$", "", tok), "last_noun")
    return SubjectMatch("", "none")


def subject_from_spacy(doc) -> SubjectMatch:
    """Supp. A over a spaCy ``Doc``: a noun chunk opened by this/these, else the first ``pobj``
    noun (with its chunk's modifiers), else the last noun; determiners are dropped."""
    def clean(span) -> str:
        return " ".join(t.text for t in span if t.lower_ not in DETERMINERS and t.pos_ != "DET").strip()

    chunks = list(getattr(doc, "noun_chunks", []))
    for chunk in chunks:
        if chunk[0].lower_ in DEMONSTRATIVES and chunk[-1].lower_ not in IMAGE_WORDS and clean(chunk):
            return SubjectMatch(clean(chunk), "demonstrative")
    for tok in doc:
        if tok.dep_ == "pobj" and tok.pos_ in ("NOUN", "PROPN") and tok.lower_ not in IMAGE_WORDS:
            chunk = next((c for c in chunks if c[-1].i == tok.i), None)
            return SubjectMatch(clean(chunk) if chunk is not None else tok.text, "preposition")
    nouns = [t for t in doc if t.pos_ in ("NOUN", "PROPN") and t.lower_ not in IMAGE_WORDS]
    return SubjectMatch(nouns[-1].text, "last_noun") if nouns else SubjectMatch("", "none")


_SPACY: dict[str, object] = {}


def _spacy_pipeline(model: str):
    if model not in _SPACY:
        try:
            import spacy
        except ImportError as err:
            raise ValueError("method='spacy' needs spaCy and its model (pip install spacy && python -m "
                             f"spacy download {model}); use method='rules' without them") from err
        try:
            _SPACY[model] = spacy.load(model)
        except OSError as err:
            raise ValueError(f"spaCy model {model!r} is not installed (python -m spacy download {model})") from err
    return _SPACY[model]


def spacy_available(model: str = "en_core_web_sm") -> bool:
    """True when spaCy and ``model`` load (the gpu profile then uses them, as ReAG does)."""
    try:
        _spacy_pipeline(model)
        return True
    except ValueError:
        return False


def extract_subject(question: str, method: str = "rules", spacy_model: str = "en_core_web_sm") -> str:
    """The subject phrase of ``question`` ("" if none). ``method``: "rules" (no model, the cpu
    profile), "spacy" (ReAG's tool; ``ValueError`` if unavailable) or "auto" (spaCy when it loads)."""
    if method not in ("rules", "spacy", "auto"):
        raise ValueError(f"method must be 'rules', 'spacy' or 'auto', got {method!r}")
    if method == "auto":
        method = "spacy" if spacy_available(spacy_model) else "rules"
    if method == "rules":
        return subject_rule(question).text
    if not isinstance(question, str):
        return ""
    return subject_from_spacy(_spacy_pipeline(spacy_model)(_question_part(question))).text


# --- boxes --------------------------------------------------------------------------------------
def scale_box(box, from_size: tuple[int, int], to_size: tuple[int, int]) -> tuple[float, float, float, float]:
    """A box ``(x0, y0, x1, y1)`` in pixels of a ``from_size`` (width, height) image, in pixels of a
    ``to_size`` image (float coordinates, no rounding)."""
    (fw, fh), (tw, th) = from_size, to_size
    if min(fw, fh, tw, th) <= 0:
        raise ValueError(f"image sizes must be positive, got {from_size} and {to_size}")
    sx, sy = tw / fw, th / fh
    return (box[0] * sx, box[1] * sy, box[2] * sx, box[3] * sy)


def expand_box(box, image_size: tuple[int, int], margin: float = 0.15, square: bool = True,
               min_side: int = 4) -> tuple[int, int, int, int] | None:
    """``box`` grown by ``margin`` x its side on every side (squared around its centre when
    ``square``), clamped to the ``image_size`` (width, height) picture, as integer pixels with
    x0 < x1 and y0 < y1. ``None`` for a box that misses the picture or has no area."""
    if margin < 0:
        raise ValueError(f"margin must be >= 0, got {margin}")
    width, height = image_size
    try:
        x0, y0, x1, y1 = (float(v) for v in box)
    except (TypeError, ValueError):
        return None
    x0, x1, y0, y1 = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
    if x1 - x0 <= 0 or y1 - y0 <= 0 or x1 <= 0 or y1 <= 0 or x0 >= width or y0 >= height:
        return None
    cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
    half_w, half_h = (x1 - x0) * (0.5 + margin), (y1 - y0) * (0.5 + margin)
    if square:
        half_w = half_h = max(half_w, half_h)
    half_w, half_h = max(half_w, min_side / 2), max(half_h, min_side / 2)
    out = (max(0, round(cx - half_w)), max(0, round(cy - half_h)),
           min(width, round(cx + half_w)), min(height, round(cy + half_h)))
    return out if out[0] < out[2] and out[1] < out[3] else None


def crop_to_box(image, box, margin: float = 0.15, square: bool = True):
    """The region of ``image`` (any image reference) inside ``expand_box(box, ...)``, as a PIL image;
    the whole picture when the box is unusable."""

    im = open_image(image)
    region = expand_box(box, im.size, margin, square) if box is not None else None
    return im.crop(region) if region is not None else im.copy()


def box_iou(a, b) -> float:
    """Intersection over union of two ``[x1, y1, x2, y2]`` boxes (0 for a missing box)."""
    if a is None or b is None:
        return 0.0
    w = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    h = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - w * h
    return w * h / union if union > 0 else 0.0
