"""RCTS's non-reasoning datasets (RCTS Tab. 1, Tab. 3, App. B.4-B.5): VizWiz and VSR-MC.

- VizWiz: KB = train (20,523), eval = val (4,319). Each question keeps its 10 annotator answers in
  ``meta['annotator_answers']`` (VQA accuracy needs them); ``answers`` lists the distinct answers,
  most frequent first, so ``answers[0]`` is the majority answer. ``meta['answerable']`` is the
  official 0/1 flag; "unanswerable" is itself a gold answer string.
- VSR-MC (RCTS App. B.5): VSR's True/False captions turned into 6-way multiple choice. For each
  caption the true relation is masked ("The cat is ___ the sofa."), five other relations are drawn
  from the remaining 65 of VSR's 66, the true one is added and the six are shuffled. KB = train+dev
  (4,440), eval = test (1,181) of the *random* split.
  Label-0 (False) rows are dropped: their caption's relation is not what the image shows, and the
  true relation is unknown, so no correct option exists. The official script
  (yannqi/RCTS-RAG data/dataset_prepare/VSR_MC_make.py) drops them too; 1,181 is about the label-1
  share of the 2,195 random-split test rows.
  Differences from that script, said in the book: the draw is seeded per row (``seed`` + image +
  caption, repeatable in any order and process) where the script uses unseeded NumPy, so our option
  orders cannot equal the paper's; and the question masks the relation inside the caption (the
  paper's wording) where the script rebuilds "The {subj} (is) ___ the {obj}." from a string split.

Leaves out: VQA-accuracy scoring (``kbvqa.metrics``) and COCO image download (VSR ships links only;
images are read from ``root/images/<file>`` when present, else ``meta['image_url']``).
"""
from __future__ import annotations

import hashlib
import re
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import replace

from kbvqa.data.real_common import (
    SourceInfo,
    check_limit,
    existing,
    find_file,
    hub_rows,
    keyed_rng,
    read_json,
    read_jsonl,
    resolve_root,
    take,
)
from kbvqa.data.schema import KBExample, Query, option_letters

VIZWIZ = SourceInfo(
    "vizwiz", "lmms-lab/VizWiz-VQA",
    ("https://vizwiz.cs.colorado.edu/VizWiz_final/vqa_data/Annotations.zip",
     "https://vizwiz.cs.colorado.edu/VizWiz_final/images/train.zip (and val.zip)"),
    "Annotations/<split>.json | <split>.json   list of {image, question, answers[10], ...}\n"
    "<split>/VizWiz_<split>_XXXXXXXX.jpg         optional images\n"
    "(the hub copy lmms-lab/VizWiz-VQA has the val split only; train needs the official zip)")
VSR = SourceInfo(
    "vsr_mc", "cambridgeltl/vsr_random",
    ("https://github.com/cambridgeltl/visual-spatial-reasoning (data/splits/{random,zeroshot}/)",
     "COCO 2017 images: http://images.cocodataset.org/zips/train2017.zip"),
    "splits/<variant>/<split>.jsonl | <variant>/<split>.jsonl | <split>.jsonl\n"
    "   (or <variant>_<split>*.jsonl); variant random|zeroshot, split train|dev|test\n"
    "images/<image file>   optional COCO images")

# The 66 relations of VSR, in the order of the official VSR-MC script (RCTS App. B.5).
VSR_RELATIONS = (
    "inside", "away from", "right of", "over", "surrounding", "near", "far away from", "beside",
    "under", "contains", "off", "next to", "in front of", "in", "touching", "at the left side of",
    "on", "facing", "below", "left of", "at the right side of", "behind", "attached to",
    "on top of", "above", "at the side of", "perpendicular to", "far from", "beneath",
    "connected to", "facing away from", "parallel to", "across from", "at the edge of", "part of",
    "close to", "alongside", "at the back of", "has as a part", "consists of", "opposite to",
    "toward", "adjacent to", "into", "in the middle of", "beyond", "within", "around", "outside",
    "ahead of", "against", "across", "out of", "by", "enclosed by", "detached from", "between",
    "past", "down from", "with", "along", "at", "down", "among", "congruent", "through")
assert len(VSR_RELATIONS) == 66 == len(set(VSR_RELATIONS))
VSR_MASK = "___"


# ---------------------------------------------------------------- VizWiz (RCTS App. B.4)

def vizwiz_query(row: dict, image, split: str, kb: bool = False) -> Query:
    """One official VizWiz annotation (image, question, answers[{answer, answer_confidence}],
    answer_type, answerable) as a Query; hub rows carry plain answer strings instead."""
    raw = row.get("answers") or []
    answers = [a["answer"] if isinstance(a, dict) else str(a) for a in raw]
    counts = Counter(a.strip() for a in answers)
    first = {a: i for i, a in reversed(list(enumerate(a.strip() for a in answers)))}
    ranked = sorted(counts, key=lambda a: (-counts[a], first[a]))
    meta = {"annotator_answers": answers,
            "answer_confidence": [a.get("answer_confidence") for a in raw if isinstance(a, dict)],
            "vizwiz_answer_type": row.get("answer_type", row.get("category")),
            "answerable": int(row.get("answerable", int(ranked[:1] != ["unanswerable"])))}
    qid = str(row.get("question_id") or row["image"]).rsplit(".", 1)[0]
    return (KBExample if kb else Query)(id=qid, question=row["question"], answers=ranked,
                                        answer_type="string", image=image, split=split, meta=meta)


def load_vizwiz(split: str = "val", root=None, limit: int | None = None,
                offline: bool | None = None, kb: bool = False) -> list[Query]:
    """VizWiz-VQA ``train`` / ``val`` (the official test split has no public answers)."""
    limit = check_limit(limit)
    if split not in ("train", "val"):
        raise ValueError(f"unknown VizWiz split {split!r}; expected train or val")
    path = resolve_root(root, VIZWIZ)
    if path is None:
        rows = ((r, r.get("image")) for r in hub_rows(VIZWIZ, split, offline=offline))
    else:
        base = path.parent if path.is_file() else path
        data = read_json(find_file(path, [f"Annotations/{split}.json", f"{split}.json"], VIZWIZ))
        rows = ((r, existing(base / split / r["image"]) or existing(base / "images" / r["image"]))
                for r in data)
    return take((vizwiz_query(r, img, split, kb) for r, img in rows), limit)


# ---------------------------------------------------------------- VSR-MC (RCTS App. B.5)

def mask_relation(caption: str, relation: str) -> str | None:
    """The caption with its relation replaced by ``VSR_MASK``; None if the relation is not there.

    Whole-word match, first occurrence after "is " when there is one (so "in" never matches inside
    "inside", and a relation word in the subject is not masked)."""
    pattern = r"\b" + re.escape(relation) + r"\b"
    preferred = re.search(r"\bis " + re.escape(relation) + r"\b", caption)
    match = preferred or re.search(pattern, caption)
    if match is None:
        return None
    start = match.start() + (3 if preferred else 0)
    return caption[:start] + VSR_MASK + caption[match.end():]


def vsr_mc_options(relation: str, seed: int, *keys: str, n_options: int = 6) -> list[str]:
    """``n_options - 1`` distinct relations other than ``relation`` plus ``relation``, shuffled; the
    draw depends only on (seed, keys)."""
    if relation not in VSR_RELATIONS:
        raise ValueError(f"{relation!r} is not one of the 66 VSR relations")
    if not 2 <= n_options <= len(VSR_RELATIONS):
        raise ValueError(f"n_options must be in 2..{len(VSR_RELATIONS)}, got {n_options}")
    rng = keyed_rng(seed, relation, *keys)
    options = rng.sample([r for r in VSR_RELATIONS if r != relation], n_options - 1) + [relation]
    rng.shuffle(options)
    return options


def vsr_mc_query(row: dict, image, split: str, seed: int, kb: bool = False) -> Query | None:
    """One VSR row as a VSR-MC query, or None for a label-0 row or an unknown relation."""
    if int(row["label"]) != 1:
        return None
    relation, caption = row["relation"], row["caption"]
    question = mask_relation(caption, relation)
    if question is None or relation not in VSR_RELATIONS:
        warnings.warn(f"VSR row skipped: relation {relation!r} not usable in {caption!r}", stacklevel=2)
        return None
    options = vsr_mc_options(relation, seed, str(row["image"]), caption)
    digest = hashlib.sha1(caption.encode()).hexdigest()[:8]
    meta = {"caption": caption, "relation": relation, "image_url": row.get("image_link"),
            "subj": row.get("subj"), "obj": row.get("obj"), "seed": seed}
    return (KBExample if kb else Query)(
        id=f"{str(row['image']).rsplit('.', 1)[0]}-{digest}", question=question,
        answers=[option_letters(len(options))[options.index(relation)]], answer_type="choice",
        options=options, image=image, split=split, meta=meta)


def load_vsr_mc(split: str = "test", root=None, limit: int | None = None,
                offline: bool | None = None, kb: bool = False, seed: int = 0,
                variant: str = "random") -> list[Query]:
    """VSR-MC from VSR's ``variant`` split files; ``split`` is train, dev, test or trainval.

    ``limit`` counts VSR-MC queries (label-1 rows), not raw rows."""
    limit = check_limit(limit)
    if variant not in ("random", "zeroshot"):
        raise ValueError(f"unknown VSR variant {variant!r}; expected random or zeroshot")
    parts = {"train": ["train"], "dev": ["dev"], "test": ["test"], "trainval": ["train", "dev"]}
    if split not in parts:
        raise ValueError(f"unknown VSR split {split!r}; expected one of {sorted(parts)}")
    path = resolve_root(root, VSR)

    def rows() -> Iterator[tuple[dict, object, str]]:
        for part in parts[split]:
            if path is None:
                info = replace(VSR, hub_id=f"cambridgeltl/vsr_{variant}")
                hub_split = "validation" if part == "dev" else part
                for r in hub_rows(info, hub_split, offline=offline):
                    yield r, None, part
                continue
            base = path.parent if path.is_file() else path
            f = find_file(path, [f"splits/{variant}/{part}.jsonl", f"{variant}/{part}.jsonl",
                                 f"{part}.jsonl"], VSR, [f"{variant}_{part}*.jsonl"])
            for r in read_jsonl(f):
                yield r, existing(base / "images" / str(r["image"])), part

    queries = (vsr_mc_query(r, img, part, seed, kb) for r, img, part in rows())
    return take((q for q in queries if q is not None), limit)
