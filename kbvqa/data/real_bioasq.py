"""BioASQ Task 11b golden batches (SeRTS §4.1) read into ``Query`` and ``LiteratureItem``.

SeRTS evaluates on the 2023 Task 11b test set, batch 1 (``11B1_golden.json``: 73 questions) and
measures retrieval "by indexing the ground truth documents" (SeRTS §4.2): the corpus is the union of
the gold PubMed abstracts of the batch.

Questions -> ``Query``:
- ``answer_type`` = the BioASQ type (yesno / factoid / list / summary);
- ``answers`` = the exact answer flattened (yes/no string; every synonym of every factoid/list item,
  in order, deduplicated); summary questions have no exact answer, so their ``answers`` are the
  ideal answers (what ROUGE compares against);
- ``meta['exact_answer']`` keeps the official nesting (list of synonym lists) for the official
  factoid (strict/lenient accuracy, MRR) and list (P/R/F1) scorers;
- ``solution`` = the first ideal answer, ``meta['ideal_answers']`` all of them;
- ``gold_doc_ids`` = PubMed ids parsed from the ``documents`` URLs.

Corpus -> ``LiteratureItem`` ("snippets as abstracts"): the golden files carry snippets, not
abstracts, and PubMed cannot be fetched offline. Each document that has snippets becomes one item:
id = PubMed id, title = its title-section snippet (if any), text = its abstract snippets joined in
offset order. This is a stand-in: items are shorter than abstracts, and gold documents without any
snippet are absent from it (``corpus_coverage`` counts them). Pass ``abstracts`` (pmid -> (title,
text), e.g. from PubMed E-utilities in Colab) to replace the stand-in texts.

Leaves out: the BioASQ scorers (``kbvqa.metrics``), PubMed download, and the 11b training set.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from kbvqa.data.real_common import SourceInfo, check_limit, find_file, missing, read_json, resolve_root, take
from kbvqa.data.schema import LiteratureItem, Query

BIOASQ = SourceInfo(
    "bioasq", None,
    (("http://participants-area.bioasq.org/datasets/ (Task 11b golden batches; registration, "
     "NLM/BioASQ terms of use)"),
     "mirror: github.com/Teddy-XiongGZ/MIRAGE rawdata/bioasq/Task11BGoldenEnriched/11B1_golden.json"),
    "<batch>_golden.json | <batch>.json | <batch>*.json   e.g. 11B1_golden.json\n"
    "   {questions: [{id, type, body, documents, snippets, ideal_answer, exact_answer}]}")

BIOASQ_TYPES = ("yesno", "factoid", "list", "summary")
_PMID = re.compile(r"(\d+)\s*/?\s*$")


def pubmed_id(url: str) -> str:
    """'http://www.ncbi.nlm.nih.gov/pubmed/34687634' -> '34687634' (a bare id is returned as is)."""
    m = _PMID.search(str(url))
    return m.group(1) if m else str(url).strip()


def nested_exact_answer(exact) -> list[list[str]]:
    """Official exact answers as a list of synonym lists, whatever the batch's nesting: "yes" ->
    [["yes"]]; ["a", "b"] (old factoid form) -> [["a"], ["b"]]; [["a", "a2"], ["b"]] unchanged."""
    if exact is None:
        return []
    if isinstance(exact, str):
        return [[exact]]
    return [[str(x) for x in item] if isinstance(item, list) else [str(item)] for item in exact]


def _dedup(items: Iterable[str]) -> list[str]:
    seen, out = set(), []
    for x in items:
        x = x.strip()
        if x and x not in seen:
            seen.add(x)
            out.append(x)
    return out


def bioasq_query(q: dict, split: str = "") -> Query:
    """One golden-batch question as a Query (see the module docstring for the mapping)."""
    kind = q["type"]
    if kind not in BIOASQ_TYPES:
        raise ValueError(f"{q.get('id')}: unknown BioASQ type {kind!r}")
    ideal = q.get("ideal_answer") or []
    ideal = [ideal] if isinstance(ideal, str) else [str(x) for x in ideal]
    nested = nested_exact_answer(q.get("exact_answer"))
    answers = _dedup(s for item in nested for s in item) if kind != "summary" else _dedup(ideal)
    if kind == "yesno":
        answers = [a.lower() for a in answers]
    docs = [str(d) for d in q.get("documents") or []]
    meta = {"exact_answer": nested, "ideal_answers": ideal, "documents": docs,
            "snippet_doc_ids": _dedup(pubmed_id(s["document"]) for s in q.get("snippets") or [])}
    return Query(id=str(q["id"]), question=q["body"], answers=answers, answer_type=kind,
                 gold_doc_ids=_dedup(pubmed_id(d) for d in docs), split=split,
                 solution=ideal[0] if ideal else "", meta=meta)


def _batch_file(split: str, root, offline) -> Path:
    path = resolve_root(root, BIOASQ)
    if path is None:  # no hub copy: BioASQ needs registration
        raise missing(BIOASQ, "offline" if offline else "BioASQ has no public hub copy")
    return find_file(path, [f"{split}_golden.json", f"{split}.json"], BIOASQ, [f"{split}*.json"])


def load_bioasq(split: str = "11B1", root=None, limit: int | None = None,
                offline: bool | None = None, types: tuple[str, ...] = BIOASQ_TYPES) -> list[Query]:
    """Questions of one golden batch (``split`` names the batch, e.g. "11B1"), optionally only
    some ``types``. ``root`` may also be the JSON file itself."""
    limit = check_limit(limit)
    bad = set(types) - set(BIOASQ_TYPES)
    if bad:
        raise ValueError(f"unknown BioASQ types {sorted(bad)}; expected {BIOASQ_TYPES}")
    data = read_json(_batch_file(split, root, offline))
    rows = (q for q in data["questions"] if q["type"] in types)
    return take((bioasq_query(q, split) for q in rows), limit)


def snippet_corpus(questions: Iterable[dict],
                   abstracts: dict[str, tuple[str, str]] | None = None) -> list[LiteratureItem]:
    """The "snippets as abstracts" corpus of raw golden-batch questions (module docstring)."""
    by_doc: dict[str, dict] = {}
    for q in questions:
        for s in q.get("snippets") or []:
            pmid = pubmed_id(s["document"])
            entry = by_doc.setdefault(pmid, {"url": s["document"], "title": {}, "abstract": {},
                                             "questions": []})
            section = "title" if str(s.get("beginSection", "")).startswith("title") else "abstract"
            key = (int(s.get("offsetInBeginSection") or 0), s["text"].strip())
            entry[section][key] = s["text"].strip()
            if q["id"] not in entry["questions"]:
                entry["questions"].append(q["id"])
    items = []
    for pmid, e in by_doc.items():
        title = " ".join(e["title"][k] for k in sorted(e["title"]))
        text = " ".join(e["abstract"][k] for k in sorted(e["abstract"]))
        source = "snippets"
        if abstracts and pmid in abstracts:
            title, text = abstracts[pmid]
            source = "abstract"
        items.append(LiteratureItem(id=pmid, title=title, text=text or title, meta={
            "url": e["url"], "source": source, "question_ids": e["questions"],
            "n_snippets": len(e["title"]) + len(e["abstract"])}))
    return items


def load_bioasq_corpus(split: str = "11B1", root=None, offline: bool | None = None,
                       abstracts: dict[str, tuple[str, str]] | None = None) -> list[LiteratureItem]:
    """The literature corpus of one golden batch (snippets as abstracts unless ``abstracts``)."""
    data = read_json(_batch_file(split, root, offline))
    return snippet_corpus(data["questions"], abstracts)


def corpus_coverage(queries: list[Query], corpus: list[LiteratureItem]) -> dict[str, int]:
    """How many gold documents the corpus holds: the recall ceiling of any retriever over it."""
    ids = {item.id for item in corpus}
    gold = {d for q in queries for d in q.gold_doc_ids}
    return {"gold_docs": len(gold), "in_corpus": len(gold & ids), "missing": len(gold - ids),
            "corpus_size": len(ids)}
