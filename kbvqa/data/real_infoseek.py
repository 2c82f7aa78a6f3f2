"""InfoSeek (ReAG §4.1, MOLT §4.1) and its Wikipedia knowledge base, from the official files.

Queries (``infoseek_<split>.jsonl``: data_id, image_id, question, answer, answer_eval, data_split):
- ``answers`` = ``answer`` then the ``answer_eval`` aliases (deduplicated); the official scorer
  matches against ``answer_eval``, kept raw in ``meta['answer_eval']``;
- numerical questions: ``answer_eval`` holds ``{"wikidata": v, "range": [lo, hi]}`` (a dict or a
  list of them); the first range becomes ``answer_range`` as the official script reads it;
- ``answer_type`` comes from the data: the ``question_type`` of ``infoseek_<split>_qtype.jsonl``
  (String / Numerical / Time) or of the row itself; without either, a row with a range is
  "numerical" and any other "string" ("time" cannot be told apart from the text);
- ``meta['split_kind']``: "unseen_question" / "unseen_entity" (validation) or the raw split name;
  the official score is the harmonic mean of the two validation accuracies;
- ``gold_doc_ids`` = ``[entity_id]`` from ``infoseek_<split>_withkb.jsonl`` when present.
The papers evaluate on the validation set (the test answers are not public).

Knowledge base: OVEN's ``Wiki6M_ver_1_0.jsonl(.gz)`` (wikidata_id, wikipedia_title,
wikipedia_summary, wikipedia_content, wikipedia_image_url) -> ``Document`` (id = Wikidata id), with
the content packed into ~``passage_words``-word passages. The papers use a 100k-page subset;
``max_docs`` cuts one that keeps every ``required`` (gold) entity.

Leaves out: OVEN image download (images are read from ``root/images/<image_id>.jpg`` when there),
the scorer (``kbvqa.metrics``), and E-VQA (``real_evqa.py``).
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from kbvqa.data.real_common import (
    SourceInfo,
    check_limit,
    existing,
    find_file,
    missing,
    pack_passages,
    read_jsonl,
    resolve_root,
    select_records,
    take,
)
from kbvqa.data.schema import Document, Passage, Query

_GCS = "http://storage.googleapis.com/gresearch/open-vision-language"
INFOSEEK = SourceInfo(
    "infoseek", None,
    (f"{_GCS}/infoseek/infoseek_val.jsonl (and _train, _val_withkb, _train_withkb)",
     "question types: infoseek_val_qtype.jsonl (github.com/edchengg/infoseek_eval, Google Drive)",
     f"{_GCS}/Wiki6M_ver_1_0.jsonl.gz (6.9 GB knowledge base)",
     "images: OVEN, github.com/edchengg/oven_eval/tree/main/image_downloads"),
    "infoseek_<split>.jsonl            questions (split: val | train)\n"
    "infoseek_<split>_withkb.jsonl     optional: data_id -> entity_id (gold page)\n"
    "infoseek_<split>_qtype.jsonl      optional: data_id -> question_type\n"
    "Wiki6M_ver_1_0.jsonl[.gz]         knowledge base (or any *wiki*.jsonl[.gz] subset)\n"
    "images/<image_id>.jpg             optional")

INFOSEEK_TYPES = {"string": "string", "numerical": "numerical", "time": "time", "entity": "string"}


def split_kind(data_split: str) -> str:
    """'val_unseen_question' -> 'unseen_question'; 'val_unseen_entity' -> 'unseen_entity'."""
    for kind in ("unseen_question", "unseen_entity"):
        if str(data_split).endswith(kind):
            return kind
    return str(data_split)


def numeric_range(answer_eval: Any) -> tuple[float, float] | None:
    """The first ``range`` in an ``answer_eval`` (dict or list of dicts), as the official script."""
    first = answer_eval[0] if isinstance(answer_eval, list) and answer_eval else answer_eval
    if isinstance(first, dict) and isinstance(first.get("range"), (list, tuple)) and len(first["range"]) >= 2:
        lo, hi = float(first["range"][0]), float(first["range"][1])
        return (min(lo, hi), max(lo, hi))
    return None


def infoseek_query(row: dict, qtype: str | None = None, entity: dict | None = None,
                   image: Any = None) -> Query:
    """One InfoSeek row (+ its question type and withkb record) as a Query."""
    answer_eval = row.get("answer_eval")
    rng = numeric_range(answer_eval)
    raw_type = str(qtype or row.get("question_type") or ("numerical" if rng else "string")).lower()
    kind = INFOSEEK_TYPES.get(raw_type, "string")
    answers = [str(a) for a in (row.get("answer") or [])]
    if isinstance(row.get("answer"), str):
        answers = [row["answer"]]
    evals = answer_eval if isinstance(answer_eval, list) else [answer_eval]
    for a in evals:
        if isinstance(a, dict):
            if a.get("wikidata") is not None:
                answers.append(str(a["wikidata"]))
        elif a is not None:
            answers.append(str(a))
    answers = list(dict.fromkeys(a.strip() for a in answers if str(a).strip()))
    entity = entity or {}
    meta = {"split_kind": split_kind(row.get("data_split", "")), "image_id": row.get("image_id"),
            "answer_eval": answer_eval, "question_type": raw_type,
            "entity_text": entity.get("entity_text")}
    return Query(id=str(row["data_id"]), question=row["question"], answers=answers,
                 answer_type=kind, answer_range=rng if kind == "numerical" else None, image=image,
                 gold_doc_ids=[str(entity["entity_id"])] if entity.get("entity_id") else [],
                 split=str(row.get("data_split", "")), meta=meta)


def _image(base: Path, image_id: str | None):
    if not image_id:
        return None
    for ext in (".jpg", ".JPEG", ".jpeg", ".png"):
        hit = existing(base / "images" / f"{image_id}{ext}")
        if hit:
            return hit
    return None


def load_infoseek(split: str = "val", root=None, limit: int | None = None,
                  offline: bool | None = None, kinds: tuple[str, ...] | None = None) -> list[Query]:
    """InfoSeek questions of ``split`` (val | train | test | human), optionally only some
    ``kinds`` of ``meta['split_kind']`` (e.g. ("unseen_entity",))."""
    limit = check_limit(limit)
    path = resolve_root(root, INFOSEEK)
    if path is None:  # GCS files only, no hub copy: download them (datasets.download_official_files)
        raise missing(INFOSEEK, "offline" if offline else "InfoSeek is read from local files")
    base = path.parent if path.is_file() else path
    qfile = find_file(path, [f"infoseek_{split}.jsonl", f"infoseek_{split}.jsonl.gz"], INFOSEEK)
    qtypes, entities = {}, {}
    for name, target in ((f"infoseek_{split}_qtype.jsonl", "q"), (f"infoseek_{split}_withkb.jsonl", "e")):
        if (base / name).is_file():
            for r in read_jsonl(base / name):
                if target == "q":
                    qtypes[str(r["data_id"])] = r.get("question_type")
                else:
                    entities[str(r["data_id"])] = r

    def rows() -> Iterator[Query]:
        for r in read_jsonl(qfile):
            if kinds and split_kind(r.get("data_split", "")) not in kinds:
                continue
            qid = str(r["data_id"])
            yield infoseek_query(r, qtypes.get(qid), entities.get(qid), _image(base, r.get("image_id")))

    return take(rows(), limit)


def wiki6m_document(rec: dict, passage_words: int = 200) -> Document:
    """One Wiki6M record as a Document; passages ``<qid>#p<i>`` in reading order."""
    doc_id = str(rec["wikidata_id"])
    title = str(rec.get("wikipedia_title") or "")
    chunks = pack_passages(str(rec.get("wikipedia_content") or ""), passage_words)
    passages = [Passage(id=f"{doc_id}#p{i}", doc_id=doc_id, text=t, title=title, section=f"p{i}")
                for i, t in enumerate(chunks)]
    summary = str(rec.get("wikipedia_summary") or (chunks[0] if chunks else ""))
    return Document(id=doc_id, title=title, summary=summary, passages=passages, meta={
        "image_url": rec.get("wikipedia_image_url"), "url": rec.get("wikipedia_url")})


def load_infoseek_kb(root=None, max_docs: int | None = None, required: Iterable[str] = (),
                     passage_words: int = 200, offline: bool | None = None) -> list[Document]:
    """The InfoSeek knowledge base (Wiki6M or a subset file), cut to ``max_docs`` pages that keep
    every ``required`` Wikidata id."""
    path = resolve_root(root, INFOSEEK)
    if path is None:
        raise missing(INFOSEEK, "offline" if offline else "the 6.9 GB KB is read from local files")
    kb_file = find_file(path, ["Wiki6M_ver_1_0.jsonl", "Wiki6M_ver_1_0.jsonl.gz"], INFOSEEK,
                        ["*wiki*.jsonl", "*wiki*.jsonl.gz", "*Wiki*.jsonl*"])
    records = select_records(read_jsonl(kb_file), lambda r: str(r.get("wikidata_id")), max_docs,
                             required)
    return [wiki6m_document(r, passage_words) for r in records]
