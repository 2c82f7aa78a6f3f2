"""Answer normalisation exactly as the official VQA, InfoSeek and Encyclopedic-VQA scorers do it.

Three scorers, three slightly different normalisations; they are kept apart on purpose, because a
prediction can be right under one and wrong under another:

- ``vqa_normalize``      VQA v2 ``vqaEval.py`` (GT-Vision-Lab/VQA, PythonEvaluationTools): punctuation
                         rules that depend on the surrounding spaces, number words -> digits
                         (``manualMap``), articles dropped, contractions restored ("dont" -> "don't").
- ``infoseek_normalize`` InfoSeek ``infoseek_eval.py`` (edchengg/infoseek_eval): SQuAD-style lower-case,
                         drop ``string.punctuation``, drop articles, collapse spaces.
- ``evqa_normalize``     Encyclopedic-VQA ``evaluation_utils.py`` (google-research, encyclopedic_vqa):
                         ``preprocess_answer`` -- lower-case, drop punctuation (plus curly quotes and
                         underscore), drop articles *and* the phrase "the answer is", map number words
                         and entailment words (true/false -> yes/no), restore contractions.
                         ReAG (supplement B) applies this one before computing its rewards.

What this file leaves out: the scoring itself (``vqa.py``, ``infoseek.py``, ``evqa.py``).
"""
from __future__ import annotations

import re
import string

# Number words the VQA evaluation maps to digits (vqaEval.py ``manualMap``).
VQA_NUMBER_WORDS = {
    "none": "0", "zero": "0", "one": "1", "two": "2", "three": "3", "four": "4", "five": "5",
    "six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10",
}
# E-VQA extends the number map with entailment words (evaluation_utils.py ``_DIGIT_MAP``).
EVQA_DIGIT_MAP = {**VQA_NUMBER_WORDS, "entailment": "yes", "true": "yes",
                  "contradiction": "no", "false": "no"}
ARTICLES = ("a", "an", "the")

# Contractions written without apostrophe -> with apostrophe. The same table is used by vqaEval.py
# (current version, straight quotes) and by E-VQA. Entries with capitals ("Im", "Ive", ...) can never
# match because both scorers lower-case first; they are kept so the table is the official one.
_CONTRACTION_PAIRS = """
aint ain't | arent aren't | cant can't | couldve could've | couldnt couldn't |
couldn'tve couldn't've | couldnt've couldn't've | didnt didn't | doesnt doesn't | dont don't |
hadnt hadn't | hadnt've hadn't've | hadn'tve hadn't've | hasnt hasn't | havent haven't | hed he'd |
hed've he'd've | he'dve he'd've | hes he's | howd how'd | howll how'll | hows how's |
Id've I'd've | I'dve I'd've | Im I'm | Ive I've | isnt isn't | itd it'd | itd've it'd've |
it'dve it'd've | itll it'll | let's let's | maam ma'am | mightnt mightn't | mightnt've mightn't've |
mightn'tve mightn't've | mightve might've | mustnt mustn't | mustve must've | neednt needn't |
notve not've | oclock o'clock | oughtnt oughtn't | ow's'at 'ow's'at | 'ows'at 'ow's'at |
'ow'sat 'ow's'at | shant shan't | shed've she'd've | she'dve she'd've | she's she's |
shouldve should've | shouldnt shouldn't | shouldnt've shouldn't've | shouldn'tve shouldn't've |
somebody'd somebodyd | somebodyd've somebody'd've | somebody'dve somebody'd've |
somebodyll somebody'll | somebodys somebody's | someoned someone'd | someoned've someone'd've |
someone'dve someone'd've | someonell someone'll | someones someone's | somethingd something'd |
somethingd've something'd've | something'dve something'd've | somethingll something'll |
thats that's | thered there'd | thered've there'd've | there'dve there'd've | therere there're |
theres there's | theyd they'd | theyd've they'd've | they'dve they'd've | theyll they'll |
theyre they're | theyve they've | twas 'twas | wasnt wasn't | wed've we'd've | we'dve we'd've |
weve we've | werent weren't | whatll what'll | whatre what're | whats what's | whatve what've |
whens when's | whered where'd | wheres where's | whereve where've | whod who'd | whod've who'd've |
who'dve who'd've | wholl who'll | whos who's | whove who've | whyll why'll | whyre why're |
whys why's | wont won't | wouldve would've | wouldnt wouldn't | wouldnt've wouldn't've |
wouldn'tve wouldn't've | yall y'all | yall'll y'all'll | y'allll y'all'll | yall'd've y'all'd've |
y'alld've y'all'd've | y'all'dve y'all'd've | youd you'd | youd've you'd've | you'dve you'd've |
youll you'll | youre you're | youve you've
"""
CONTRACTIONS = dict(pair.split() for pair in _CONTRACTION_PAIRS.replace("\n", " ").split("|"))

# --- VQA v2 (vqaEval.py) -------------------------------------------------------------------------
VQA_PUNCTUATION = (";", "/", "[", "]", '"', "{", "}", "(", ")", "=", "+", "\\", "_", "-",
                   ">", "<", "@", "`", ",", "?", "!")
_COMMA_BETWEEN_DIGITS = re.compile(r"(\d)(,)(\d)")
# The official pattern is "(?!<=\d)(\.)(?!\d)": the first group is a (mistyped) look-ahead that
# almost never fires, so in effect every period that is not followed by a digit is removed.
_PERIOD_NOT_BEFORE_DIGIT = re.compile(r"(?!<=\d)(\.)(?!\d)")
_OFFICIAL_PERIOD_COUNT = int(re.UNICODE)  # 32: the flag lands in ``count`` in vqaEval.py


def vqa_process_punctuation(text: str) -> str:
    """``processPunctuation``: a mark touching a space (or any text with a digit,digit comma) is
    deleted, otherwise it becomes a space ("black-white" -> "black white", "ice - cream" ->
    "ice  cream"); then periods not followed by a digit go (the official call passes
    ``re.UNICODE`` as the ``count`` argument, so at most 32 of them: kept for fidelity)."""
    out = text
    digit_comma = _COMMA_BETWEEN_DIGITS.search(text) is not None
    for mark in VQA_PUNCTUATION:
        if (mark + " " in text or " " + mark in text) or digit_comma:
            out = out.replace(mark, "")
        else:
            out = out.replace(mark, " ")
    return _PERIOD_NOT_BEFORE_DIGIT.sub("", out, count=_OFFICIAL_PERIOD_COUNT)


def vqa_process_digit_article(text: str) -> str:
    """``processDigitArticle``: lower-case, number words -> digits, drop a/an/the, restore
    contractions, single spaces."""
    words = [VQA_NUMBER_WORDS.get(w, w) for w in text.lower().split()]
    words = [w for w in words if w not in ARTICLES]
    return " ".join(CONTRACTIONS.get(w, w) for w in words)


def vqa_normalize(text: str) -> str:
    """The full treatment vqaEval.py gives a *predicted* answer."""
    text = text.replace("\n", " ").replace("\t", " ").strip()
    return vqa_process_digit_article(vqa_process_punctuation(text))


# --- InfoSeek (infoseek_eval.py) -----------------------------------------------------------------
_ASCII_PUNCTUATION = frozenset(string.punctuation)
_ARTICLE_WORDS = re.compile(r"\b(a|an|the)\b")


def infoseek_normalize(text: str) -> str:
    """``normalize_answer``: lower-case, drop punctuation, drop articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in _ASCII_PUNCTUATION)
    return " ".join(_ARTICLE_WORDS.sub(" ", text).split())


# --- Encyclopedic-VQA (evaluation_utils.py) ------------------------------------------------------
EVQA_PUNCTUATION = frozenset(string.punctuation + "\u2018\u2019\u00b4`_")
_EVQA_ARTICLES = re.compile(r"\b(the answer is|a|an|the)\b")
_LLM_SPAN_PREFIX = "<extra_id_0> "


def evqa_normalize(text: str) -> str:
    """``preprocess_answer``: lower-case, drop a leading T5 span token, drop punctuation, drop
    articles and "the answer is", map digits/entailment words and contractions, collapse spaces.

    Punctuation is removed *before* contractions are looked up, so "don't" becomes "dont" and is
    then mapped back to "don't": the apostrophe survives only through the contraction table.
    """
    text = text.lower().replace("\n", " ").replace("\t", " ").strip()
    if text.startswith(_LLM_SPAN_PREFIX):
        text = text.replace(_LLM_SPAN_PREFIX, "")
    text = "".join(ch for ch in text if ch not in EVQA_PUNCTUATION)
    text = _EVQA_ARTICLES.sub(" ", text)
    words = []
    for word in text.split():
        word = EVQA_DIGIT_MAP.get(word, word)
        words.append(CONTRACTIONS.get(word, word))
    return " ".join(" ".join(words).split())
