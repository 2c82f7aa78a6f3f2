"""Looking at data in chapters: find a source for a dataset, print a Query, tabulate many.

``pick_source(name, samples, ...)`` returns queries of a real dataset from the first source that
works: the offline samples (``find_samples``: ``$KBVQA_SAMPLES`` or ``<repo>/../shared/
data-samples``), ``load_dataset`` (``$KBVQA_DATA``, or the hub when the network is allowed: the gpu
profile), rows invented in the dataset's official file format (``HANDMADE_ROWS``, not real data),
or a caller's fallback (the toy world); ``Picked`` says which one answered, for the chapter to
print. ``show_query`` / ``query_table`` cut long fields, so licensed texts are never printed whole.

Leaves out: loading itself (``datasets.py``, ``real_*.py``) and scoring (``kbvqa.metrics``).
"""
from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from kbvqa.config import REPO_ROOT, short_path
from kbvqa.data import real_evqa, real_infoseek, real_nonreasoning, real_reasoning
from kbvqa.data.datasets import dataset_info, load_dataset
from kbvqa.data.real_common import DatasetNotAvailable
from kbvqa.data.schema import Query

# Registry name -> folder of the offline samples (SOURCES.md there says what each holds).
SAMPLE_DIRS = {**{n: n for n in ("scienceqa", "mathvision", "bioasq", "mmmu")}, "vsr_mc": "vsr"}
MMMU_LLAVA_FILE = "example_output_llava1.5_13b_Accounting.json"   # the one MMMU sample file

# Invented rows in the official formats (field names from the official READMEs); not real data,
# except the E-VQA README's own example ("the Menger family").
_TEN = ["soup"] * 3 + ["tomato soup"] * 2 + ["chicken soup", "soup can", "unanswerable", "soup", "can"]
HANDMADE_ROWS: dict[str, list[dict]] = {
    "vizwiz": [{"image": "VizWiz_val_90000000.jpg", "question": "What is in this can?",
                "answers": [{"answer": a, "answer_confidence": "yes"} for a in _TEN],
                "answer_type": "other", "answerable": 1}],
    "mathvision": [
        {"id": "h1", "question": "<image1>\nWhich shape is largest?", "options": list("ABCDE"), "answer": "C"},
        {"id": "h2", "question": "<image1>\nHow many cubes are hidden?", "options": [], "answer": "7"}],
    "vsr_mc": [{"image": "000000000001.jpg", "caption": "The cat is on top of the suitcase.", "label": 1,
                "relation": "on top of"}],
    "infoseek": [
        {"data_id": "infoseek_val_h1", "image_id": "oven_h1", "data_split": "val_unseen_question",
         "question": "Which country is this building located in?", "answer": ["United States of America"],
         "answer_eval": ["United States of America", "USA", "United States"], "question_type": "String"},
        {"data_id": "infoseek_val_h2", "image_id": "oven_h2", "data_split": "val_unseen_entity",
         "question": "What is the height of this building in metre?", "answer": ["381"],
         "answer_eval": [{"wikidata": 381.0, "range": [342.9, 419.1]}], "question_type": "Numerical"},
        {"data_id": "infoseek_val_h3", "image_id": "oven_h3", "data_split": "val_unseen_entity",
         "question": "In which year was this building completed?", "answer": ["1931"],
         "answer_eval": ["1931"], "question_type": "Time"}],
    "evqa": [
        {"question": "Where does this hotel derive its name from?", "answer": "the Menger family",
         "question_type": "automatic", "wikipedia_url": "https://en.wikipedia.org/wiki/Menger_Hotel",
         "evidence_section_id": "1", "dataset_image_ids": "h1", "dataset_name": "landmarks"},
        {"question": "What colour are the flowers of this plant?", "answer": "purple|violet",
         "question_type": "templated", "wikipedia_url": "https://en.wikipedia.org/wiki/Salvia_pratensis",
         "evidence_section_id": "2", "dataset_image_ids": "h2", "dataset_name": "inaturalist"},
        {"question": "Which countries is this plant native to?", "answer": "France&&Italy&&Spain",
         "question_type": "multi_answer", "wikipedia_url": "https://en.wikipedia.org/wiki/Salvia_pratensis",
         "evidence_section_id": "3", "dataset_image_ids": "h2", "dataset_name": "inaturalist"}],
}


def handmade_queries(name: str) -> list[Query]:
    """The ``HANDMADE_ROWS`` of a dataset as queries (``ValueError`` if it has none)."""
    name, rows = dataset_info(name).name, HANDMADE_ROWS.get(dataset_info(name).name)
    if rows is None:
        raise ValueError(f"no hand-made rows for {name!r}; have {sorted(HANDMADE_ROWS)}")
    parse: dict[str, Callable[[int, dict], Query | None]] = {   # each loader's own row parser
        "vizwiz": lambda i, r: real_nonreasoning.vizwiz_query(r, None, "val"),
        "mathvision": lambda i, r: real_reasoning.mathvision_query(r, None, split="testmini"),
        "vsr_mc": lambda i, r: real_nonreasoning.vsr_mc_query(r, None, "test", seed=0),
        "infoseek": lambda i, r: real_infoseek.infoseek_query(r),
        "evqa": lambda i, r: real_evqa.evqa_query(r, i, "test")}
    return [q for i, r in enumerate(rows) if (q := parse[name](i, r)) is not None]


def find_samples(path: str | Path | None = None) -> Path | None:
    """The offline samples folder (``path``, else ``$KBVQA_SAMPLES``, else ``<repo>/../shared/
    data-samples``, as the tests look for it), or ``None`` when it does not exist."""
    chosen = Path(path or os.environ.get("KBVQA_SAMPLES") or REPO_ROOT.parent / "shared" / "data-samples")
    return chosen if chosen.is_dir() else None


@dataclass
class Picked:
    """Queries of one dataset and where they came from."""

    name: str
    queries: list[Query]
    source: str                     # "sample" | "load_dataset" | "hand-made" | the fallback's name
    root: Path | None               # the samples folder used, if any
    notes: list[str]                # why earlier sources were skipped

    def __str__(self) -> str:
        # the folder as the page may show it: no machine's part (kbvqa.config.short_path)
        why = f"{short_path(self.root.parent)}/{self.root.name}" if self.root else "; ".join(self.notes)
        return f"{self.name}: {len(self.queries)} queries from {self.source} ({why})"


def pick_source(name: str, samples: Path | None, limit: int | None = None, split: str = "eval",
                fallback: Callable[[], list[Query]] | None = None, fallback_name: str = "toy world",
                **kwargs) -> Picked:
    """Queries of ``name`` from the first source that works (module docstring); ``fallback_name``
    names the fallback. MMMU samples: real LLaVA responses in ``meta['response']``, no question."""
    name, notes = dataset_info(name).name, []
    root = samples / SAMPLE_DIRS[name] if samples is not None and name in SAMPLE_DIRS else None
    if root is not None and root.is_dir():
        if name != "mmmu":
            return Picked(name, load_dataset(name, split, root=root, limit=limit, **kwargs), "sample", root, notes)
        pairs = real_reasoning.load_mmmu_example_outputs(root / MMMU_LLAVA_FILE)[:limit]
        return Picked(name, [replace(q, meta={**q.meta, "response": r}) for q, r in pairs], "sample", root, notes)
    notes.append("no samples folder" if samples is None else f"the samples do not hold {name}")
    try:
        return Picked(name, load_dataset(name, split, limit=limit, **kwargs), "load_dataset", None, notes)
    except OSError as err:          # DatasetNotAvailable, or a hub that cannot be reached
        notes.append(str(err).splitlines()[0].split(" (pass offline")[0])
    if name in HANDMADE_ROWS:
        return Picked(name, handmade_queries(name)[:limit], "hand-made", None, notes)
    if fallback is None:
        raise DatasetNotAvailable(f"{name}: no source ({'; '.join(notes)}) and no fallback")
    return Picked(name, spread_by_type(list(fallback()), limit), fallback_name, None, notes)


def spread_by_type(queries: list[Query], limit: int | None) -> list[Query]:
    """The first ``limit`` queries taken round-robin over ``answer_type`` (in order of first
    appearance), so that a short cut of a list sorted by type (the toy literature: yes/no first)
    still shows every type; all of them, in their order, when ``limit`` is None or covers them."""
    if limit is None or limit >= len(queries):
        return list(queries)
    groups: dict = {}
    for q in queries:
        groups.setdefault(q.answer_type, []).append(q)
    out, depth = [], 0
    while len(out) < limit:
        out += [g[depth] for g in groups.values() if depth < len(g)][: limit - len(out)]
        depth += 1
    return out


def _cut(text, width: int) -> str:                         # one line, cut with an ellipsis
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[:width - 1] + "…"


def show_query(q: Query, width: int = 100) -> str:
    """A few lines describing a Query; every text field is cut to ``width`` characters."""
    lines = [f"{q.id}  [{q.answer_type}]  {_cut(q.question, width)}"]
    if q.options:
        lines.append("  options: " + _cut(" ".join(f"({chr(65 + i)}) {o}" for i, o in enumerate(q.options)), width))
    lines.append(f"  answers: {_cut(q.answers, width)}" + (f"  range {q.answer_range}" if q.answer_range else ""))
    for label, value in (("context", q.context), ("solution", q.solution),
                         ("gold docs", q.gold_doc_ids), ("evidence", q.evidence_ids)):
        if value:
            lines.append(f"  {label}: {_cut(value, width)}")
    image = type(q.image).__name__ if q.image is not None else None
    lines.append(f"  image: {image};  meta: {_cut(sorted(q.meta), width)}")
    return "\n".join(lines)


def query_table(queries: list[Query], width: int = 48):
    """A pandas DataFrame with one short row per query: ``answer`` is ``answers[0]`` as stored (the
    letter, for multiple choice) and ``option text`` the text of that option ("" for other types)."""
    import pandas as pd
    return pd.DataFrame([{"id": _cut(q.id, 24), "type": q.answer_type, "question": _cut(q.question, width),
                          "options": len(q.options or []), "answer": _cut(q.answer, 24),
                          "option text": _cut(q.answer_text, 24) if q.answer_type == "choice" and q.options else "",
                          "n answers": len(q.answers), "image": q.image is not None} for q in queries])
