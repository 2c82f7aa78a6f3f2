"""Encyclopedic-VQA (ReAG §4.1, MOLT §4.1) and its Wikipedia knowledge base, from the official files.

Questions (``<split>.csv``, one row per textual question, fields as in the official README:
question, answer, dataset_image_ids, dataset_name, dataset_category_id, question_type,
wikipedia_url, wikipedia_title, evidence, evidence_section_id, evidence_section_title,
encyclopedic_vqa_split, question_original, wikipedia_url_used_in_train):
- ``answer``: '|' separates alternatives from different annotators -> ``answers``; for
  ``multi_answer`` questions '&&' separates the items of one answer -> ``answer_type`` "multi",
  ``answers`` = the items of the first alternative, ``meta['answer_sets']`` = all alternatives'
  item lists (the official rule: correct if set IoU >= 0.5); other types -> "string";
- ``gold_doc_ids`` = the ``wikipedia_url`` (two for ``2_hop``, '|'-separated);
- ``evidence_ids`` = ``<url>#<evidence_section_id>``, the ids of the KB passages below;
- ``meta['question_type']`` in templated / automatic / multi_answer / 2_hop. ReAG and MOLT evaluate
  the single-hop test questions (4.75k), so ``single_hop=True`` (default) drops ``2_hop``.
One Query per CSV row with the first of its (up to 5) images; ``meta['image_ids']`` lists them all.

Knowledge base: ``encyclopedic_kb_wiki.json``, one JSON object url -> {title, section_titles,
section_texts, image_urls, image_reference_descriptions, image_section_indices, url} ->
``Document`` (id = url) with one ``Passage`` per section (id ``<url>#<i>``, section = its title;
section 0 is the lead, also used as the summary). The file is ~2M pages: it is streamed, and
``max_docs`` keeps every ``required`` url plus the first others.

Leaves out: BEM scoring (a model; ``kbvqa.metrics`` hooks it), iNaturalist/GLDv2 image download
(images are read from ``root/images/...`` when present), and InfoSeek (``real_infoseek.py``).
"""
from __future__ import annotations

import csv
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kbvqa.data.real_common import (
    SourceInfo,
    check_limit,
    existing,
    find_file,
    iter_json_object,
    missing,
    resolve_root,
    select_records,
    take,
)
from kbvqa.data.schema import Document, Passage, Query

_GCS = "https://storage.googleapis.com/encyclopedic-vqa"
EVQA = SourceInfo(
    "evqa", None,
    (f"{_GCS}/train.csv, {_GCS}/val.csv, {_GCS}/test.csv",
     f"{_GCS}/encyclopedic_kb_wiki.zip (4.9 GB; unzip to encyclopedic_kb_wiki.json)",
     ("images: iNaturalist 2021 (github.com/visipedia/inat_comp/tree/master/2021) and "
     "Google Landmarks v2 (github.com/cvdfoundation/google-landmark)")),
    "<split>.csv                     questions (split: train | val | test)\n"
    "encyclopedic_kb_wiki.json       knowledge base (or any *kb*.json subset in the same format)\n"
    "images/landmarks/a/b/c/<id>.jpg, images/inaturalist/<id>.jpg   optional")


def _split_bar(text: str) -> list[str]:
    return [t.strip() for t in str(text or "").split("|") if t.strip()]


def evqa_answers(answer: str, question_type: str) -> tuple[list[str], str, list[list[str]]]:
    """(answers, answer_type, answer_sets) of an E-VQA answer string; never raises."""
    alternatives = _split_bar(answer) or [str(answer or "").strip()]
    if question_type == "multi_answer":
        sets = [[x.strip() for x in alt.split("&&") if x.strip()] for alt in alternatives]
        sets = [s for s in sets if s] or [[]]
        return sets[0], "multi", sets
    return alternatives, "string", [[a] for a in alternatives]


def _image(base: Path, dataset_name: str, image_id: str):
    if not image_id:
        return None
    nested = base / "images" / dataset_name / image_id[:1] / image_id[1:2] / image_id[2:3]
    return existing(nested / f"{image_id}.jpg") or existing(base / "images" / dataset_name / f"{image_id}.jpg")


def evqa_query(row: dict, index: int, split: str, image: Any = None) -> Query:
    """One official CSV row (``index`` = its position in the file) as a Query."""
    qtype = str(row.get("question_type") or "").strip()
    answers, kind, sets = evqa_answers(row.get("answer", ""), qtype)
    urls = _split_bar(row.get("wikipedia_url", ""))
    sections = _split_bar(row.get("evidence_section_id", ""))
    evidence = [f"{u}#{int(float(s))}" for u, s in zip(urls, sections)
                if s.replace(".", "", 1).isdigit()]
    meta = {"question_type": qtype, "answer_sets": sets, "image_ids": _split_bar(row.get("dataset_image_ids")),
            "image_dataset": row.get("dataset_name"), "wikipedia_title": row.get("wikipedia_title"),
            "evidence": row.get("evidence") or "", "evidence_section_title": row.get("evidence_section_title"),
            "question_original": row.get("question_original"),
            "url_used_in_train": str(row.get("wikipedia_url_used_in_train", "")).strip().lower() == "true"}
    return Query(id=f"evqa-{split}-{index}", question=str(row["question"]), answers=answers,
                 answer_type=kind, image=image, gold_doc_ids=urls, evidence_ids=evidence,
                 split=split, meta=meta)


def load_evqa(split: str = "test", root=None, limit: int | None = None,
              offline: bool | None = None, single_hop: bool = True) -> list[Query]:
    """E-VQA questions of ``split`` (train | val | test); ``single_hop`` drops '2_hop' rows."""
    limit = check_limit(limit)
    if split not in ("train", "val", "test"):
        raise ValueError(f"unknown E-VQA split {split!r}; expected train, val or test")
    path = resolve_root(root, EVQA)
    if path is None:
        raise missing(EVQA, "offline" if offline else "E-VQA is read from local files")
    base = path.parent if path.is_file() else path
    csv_file = find_file(path, [f"{split}.csv"], EVQA)

    def rows() -> Iterator[Query]:
        with open(csv_file, encoding="utf-8", newline="") as f:
            for i, row in enumerate(csv.DictReader(f)):
                if single_hop and str(row.get("question_type", "")).strip() == "2_hop":
                    continue
                ids = _split_bar(row.get("dataset_image_ids"))
                img = _image(base, str(row.get("dataset_name") or ""), ids[0]) if ids else None
                yield evqa_query(row, i, split, img)

    return take(rows(), limit)


def evqa_document(url: str, entry: dict) -> Document:
    """One KB entry as a Document with one passage per section."""
    title = str(entry.get("title") or "")
    titles = list(entry.get("section_titles") or [])
    texts = [str(t or "") for t in entry.get("section_texts") or []]
    passages = [Passage(id=f"{url}#{i}", doc_id=url, text=text, title=title,
                        section=str(titles[i]) if i < len(titles) else "")
                for i, text in enumerate(texts)]
    meta = {k: entry.get(k) for k in ("image_urls", "image_reference_descriptions",
                                      "image_section_indices")}
    return Document(id=url, title=title, summary=texts[0] if texts else "", passages=passages,
                    meta={**meta, "url": entry.get("url", url)})


def load_evqa_kb(root=None, max_docs: int | None = None, required: Iterable[str] = (),
                 offline: bool | None = None) -> list[Document]:
    """The E-VQA knowledge base, streamed, cut to ``max_docs`` pages keeping every ``required`` url."""
    path = resolve_root(root, EVQA)
    if path is None:
        raise missing(EVQA, "offline" if offline else "the 4.9 GB KB is read from local files")
    kb_file = find_file(path, ["encyclopedic_kb_wiki.json"], EVQA, ["*kb*.json", "*kb*.json.gz"])
    pairs = ({"_url": url, **entry} for url, entry in iter_json_object(kb_file))
    records = select_records(pairs, lambda r: r["_url"], max_docs, required)
    return [evqa_document(r.pop("_url"), r) for r in records]
