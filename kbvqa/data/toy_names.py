"""Invented words and fixed vocabularies of the toy world, plus the stable per-item seed.

Every random choice in the toy world comes from a ``random.Random`` or a NumPy ``Generator``
seeded with ``stable_seed(world_seed, item_id, ...)``: a SHA-256 of the parts, so a seed never
depends on Python's salted ``hash()`` nor on global RNG state, and one item's randomness does not
shift when another item is added.

Names come from a small syllable generator (consonant-vowel-consonant pieces) so they are
pronounceable, unknown to any pretrained model and tokenise as a few word pieces. Family nouns are
compounds of two English-looking parts ("glimmerfin", "thornback").

Leaves out: what the words are used for (entities, documents, literature build on this file).
"""
from __future__ import annotations

import hashlib
import random

# --- stable seeds ------------------------------------------------------------------------------


def stable_seed(*parts: object) -> int:
    """A 64-bit seed from any printable parts; identical across processes and machines."""
    text = "\x1f".join(str(p) for p in parts)
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def item_rng(*parts: object) -> random.Random:
    """A private ``random.Random`` for one item (see ``stable_seed``)."""
    return random.Random(stable_seed(*parts))


# --- syllable names ----------------------------------------------------------------------------

_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
           "bl", "br", "dr", "gl", "gr", "kr", "pl", "sk", "sn", "st", "tr", "th", "sh", "qu")
_VOWELS = ("a", "e", "i", "o", "u", "a", "e", "o", "ai", "oo", "ea")
_CODAS = ("", "", "", "n", "r", "l", "k", "m", "x", "sh", "rn", "lt", "nd", "sk")


def syllable_word(rng: random.Random, n_syllables: int) -> str:
    """A pronounceable invented word such as 'zorvel' or 'quimbak' (lower case)."""
    parts = []
    for i in range(n_syllables):
        coda = rng.choice(_CODAS) if i == n_syllables - 1 else rng.choice(_CODAS[:8])
        parts.append(rng.choice(_ONSETS) + rng.choice(_VOWELS) + coda)
    return "".join(parts)


def unique_words(rng: random.Random, n: int, taken: set[str], syllables=(2, 2), min_len=4,
                 max_len=9) -> list[str]:
    """``n`` new invented words, none in ``taken`` (which is updated)."""
    out = []
    while len(out) < n:
        w = syllable_word(rng, rng.randint(*syllables))
        if min_len <= len(w) <= max_len and w not in taken:
            taken.add(w)
            out.append(w)
    return out


_FAMILY_HEADS = ("glimmer", "thorn", "puff", "moss", "reed", "ember", "frost", "dusk", "pebble",
                 "bramble", "cinder", "ripple", "fern", "silt", "amber", "hollow", "quill",
                 "marsh", "willow", "flint", "drift", "bristle", "tangle", "lumen")
_FAMILY_TAILS = ("fin", "back", "wing", "tail", "hopper", "crawler", "horn", "snout", "paw",
                 "shell", "whisker", "strider", "gill", "crest", "burrower", "skipper")


def family_nouns(rng: random.Random, n: int) -> list[str]:
    """``n`` distinct compound nouns such as 'glimmerfin' (head and tail each used once if possible)."""
    pairs = [(h, t) for h in _FAMILY_HEADS for t in _FAMILY_TAILS]
    rng.shuffle(pairs)
    out, heads, tails = [], set(), set()
    for h, t in pairs:  # first pass: every head and tail at most once, for distinct-looking words
        if len(out) == n:
            break
        if h not in heads and t not in tails:
            out.append(h + t)
            heads.add(h)
            tails.add(t)
    for h, t in pairs:  # larger worlds: allow repeats of parts
        if len(out) == n:
            break
        if h + t not in out:
            out.append(h + t)
    if len(out) < n:
        raise ValueError(f"at most {len(pairs)} family nouns are available, asked for {n}")
    return out


def plural(noun: str) -> str:
    """English plural of an invented noun ('zorvel' -> 'zorvels', 'quimbash' -> 'quimbashes')."""
    if noun.endswith(("s", "x", "sh", "ch", "z")):
        return noun + "es"
    return noun + "s"


def join_names(names: list[str], article: str = "the") -> str:
    """'the blick, the quorn and the tiv' (an English list)."""
    items = [f"{article} {n}" if article else n for n in names]
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


# --- fixed vocabularies for entity facts -------------------------------------------------------

HABITATS = ("salt marshes", "pine forests", "coral reefs", "sand dunes", "mountain streams",
            "bamboo groves", "mangrove swamps", "alpine meadows", "limestone caves", "kelp beds",
            "peat bogs", "river deltas", "cloud forests", "tidal flats", "volcanic slopes",
            "birch woods", "reed beds", "desert canyons", "moss-covered rocks", "flooded grasslands")
REGIONS = ("the Vel Isles", "the Ostmark Plains", "the Carran Coast", "the Tesh Highlands",
           "the Morrow Basin", "the Ilvane Archipelago", "the Dunmere Valley", "the Quarry Hills",
           "the Saltreach Fens", "the Orvik Peninsula", "the Ambry Lowlands", "the Kesh Plateau")
DIETS = ("reed seeds", "water beetles", "kelp fronds", "fallen figs", "pond snails", "moss spores",
         "tree sap", "river shrimp", "mushroom caps", "grass roots", "moth larvae", "wild berries",
         "algae mats", "acorns", "earthworms", "flower nectar", "pine nuts", "small crabs",
         "lichen", "cactus fruit")
NATURALISTS = ("Orla Venn", "Tomas Brake", "Ines Calloway", "Piet Marrow", "Selma Hoyt",
               "Anders Quill", "Maren Esk", "Lucien Farrow", "Hedda Stroom", "Emil Dace",
               "Rosa Lindqvist", "Caspar Wode", "Nell Ashby", "Jorin Tallis", "Ada Pennick",
               "Viktor Sallow")
