"""RCTS's reasoning datasets (RCTS Tab. 1, App. B.1-B.3) read into ``Query`` / ``KBExample``.

- ScienceQA: KB = trainval (16,967), eval = test (4,241); ``context`` = hint, ``solution`` =
  lecture + " " + solution, as the official RCTS code builds its "BECAUSE:" text.
- MATH-Vision ("MathV"): KB = test minus testmini (3,040 - 304 = 2,736, RCTS's "deduplicated test
  set"), eval = testmini (304); options present -> "choice", else "free".
- MMMU: KB = validation (900), eval = dev (150); "multiple-choice" -> "choice" with options parsed
  from the official string form, "open" -> "free". The GitHub repository holds only answers (no
  question text, no images), so ``load_mmmu_answer_dict`` / ``load_mmmu_example_outputs`` read those
  for scorer tests, and ``load_mmmu`` needs the hub copy (or its parquet snapshot under ``root``).

Passing ``kb=True`` builds ``KBExample`` (``reasoning_context`` None, filled later by RCTS §3.2).

Leaves out: prompt formatting (the RCTS code's "Choices: (A) ..." strings), answer extraction and
scoring (``kbvqa.reag.rewards`` / ``kbvqa.metrics``), and VizWiz / VSR-MC (``real_nonreasoning.py``).
"""
from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from kbvqa.data.real_common import (
    SourceInfo,
    check_limit,
    existing,
    find_file,
    hub_rows,
    missing,
    read_json,
    read_jsonl,
    resolve_root,
    take,
)
from kbvqa.data.schema import KBExample, Query, option_letters

SCIENCEQA = SourceInfo(
    "scienceqa", "derek-thomas/ScienceQA",
    ("https://github.com/lupantech/ScienceQA (data/scienceqa/problems.json, pid_splits.json)",
     "https://scienceqa.github.io (images: tools/download.sh or the Google Drive folder)"),
    "problems.json                  pid -> problem (question, choices, answer, hint, ...)\n"
    "pid_splits.json                train / val / test / trainval / mini* -> [pid]\n"
    "images/<split>/<pid>/image.png optional")
MATHVISION = SourceInfo(
    "mathvision", "MathLLMs/MathVision",
    ("https://github.com/mathllm/MATH-V (data/test.jsonl, data/testmini.jsonl, images/)",),
    "testmini.jsonl | data/testmini.jsonl   eval split (304 rows)\n"
    "test.jsonl | data/test.jsonl           needed for the KB split (3,040 rows)\n"
    "images/<id>.jpg                        optional")
MMMU = SourceInfo(
    "mmmu", "MMMU/MMMU",
    ("https://huggingface.co/datasets/MMMU/MMMU (question text and images exist only there)",
     "https://github.com/MMMU-Benchmark/MMMU (answers only: mmmu/answer_dict_val.json)"),
    "<Subject>/<split>-*.parquet    the hub snapshot (huggingface-cli download MMMU/MMMU\n"
    "                               --repo-type dataset --local-dir <root>), 30 subjects")

MMMU_SUBJECTS = (
    "Accounting", "Agriculture", "Architecture_and_Engineering", "Art", "Art_Theory",
    "Basic_Medical_Science", "Biology", "Chemistry", "Clinical_Medicine", "Computer_Science",
    "Design", "Diagnostics_and_Laboratory_Medicine", "Economics", "Electronics", "Energy_and_Power",
    "Finance", "Geography", "History", "Literature", "Manage", "Marketing", "Materials", "Math",
    "Mechanical_Engineering", "Music", "Pharmacy", "Physics", "Psychology", "Public_Health",
    "Sociology")


def _cls(kb: bool):
    return KBExample if kb else Query


# ---------------------------------------------------------------- ScienceQA (RCTS App. B.1)

def scienceqa_query(pid: str, p: dict, image: Any, kb: bool = False) -> Query:
    """One ScienceQA problem (official ``problems.json`` fields) as a Query/KBExample."""
    choices = [str(c) for c in p["choices"]]
    letters = option_letters(len(choices))
    lecture, explanation = p.get("lecture") or "", p.get("solution") or ""
    meta = {k: p.get(k) for k in ("subject", "topic", "category", "skill", "grade", "task")}
    meta.update(lecture=lecture, explanation=explanation, has_image=bool(p.get("image")))
    return _cls(kb)(
        id=str(pid), question=p["question"], answers=[letters[int(p["answer"])]],
        answer_type="choice", options=choices, image=image, split=p.get("split", ""),
        context=p.get("hint") or "", solution=f"{lecture} {explanation}".strip(), meta=meta)


def load_scienceqa(split: str = "test", root=None, limit: int | None = None,
                   offline: bool | None = None, kb: bool = False) -> list[Query]:
    """ScienceQA problems of one official split, in ``pid_splits.json`` order.

    Local: pids listed for the split but absent from ``problems*.json`` are skipped, so a partial
    copy (the 150-problem test sample) loads its own pids only. Hub (derek-thomas/ScienceQA): splits
    train / validation / test (``val``/``trainval`` mapped), ids ``<split>-<row>`` (no pid there)."""
    limit = check_limit(limit)
    path = resolve_root(root, SCIENCEQA)
    if path is None:
        return take(_scienceqa_hub(split, offline, kb), limit)
    problems = read_json(find_file(path, ["problems.json"], SCIENCEQA, ["problems*.json"]))
    splits = read_json(find_file(path, ["pid_splits.json"], SCIENCEQA, ["pid_splits*.json"]))
    if split not in splits:
        raise ValueError(f"unknown ScienceQA split {split!r}; expected one of {sorted(splits)}")
    base = path.parent if path.is_file() else path

    def rows() -> Iterator[Query]:
        for pid in splits[split]:
            p = problems.get(str(pid))
            if p is None:
                continue
            image = None
            if p.get("image"):
                image = (existing(base / "images" / p["split"] / str(pid) / p["image"])
                         or existing(base / p["split"] / str(pid) / p["image"]))
            yield scienceqa_query(str(pid), p, image, kb)

    return take(rows(), limit)


def _scienceqa_hub(split: str, offline, kb: bool) -> Iterator[Query]:
    hub_splits = {"train": ["train"], "val": ["validation"], "validation": ["validation"],
                  "test": ["test"], "trainval": ["train", "validation"]}
    if split not in hub_splits:
        raise ValueError(f"split {split!r} is not on the hub copy; use one of {sorted(hub_splits)}")
    for hub_split in hub_splits[split]:
        name = "val" if hub_split == "validation" else hub_split
        for i, row in enumerate(hub_rows(SCIENCEQA, hub_split, offline=offline)):
            yield scienceqa_query(f"{name}-{i}", {**row, "split": name}, row.get("image"), kb)


# ---------------------------------------------------------------- MATH-Vision (RCTS App. B.3)

def mathvision_query(row: dict, image: Any, kb: bool = False, split: str = "") -> Query:
    """One MATH-V row (id, question, options, answer, solution, level, subject, image)."""
    options = [str(o) for o in (row.get("options") or [])]
    answer = str(row["answer"]).strip()
    meta = {"level": row.get("level"), "subject": row.get("subject"),
            "image_placeholders": sorted(set(re.findall(r"<image\d+>", row["question"])))}
    kind = "choice" if len(options) >= 2 and answer in option_letters(len(options)) else "free"
    if options and kind == "free":
        meta["malformed_choice"] = True
    return _cls(kb)(
        id=str(row["id"]), question=row["question"], answers=[answer], answer_type=kind,
        options=options if kind == "choice" else None, image=image, split=split,
        solution=row.get("solution") or "", meta=meta)


def load_mathvision(split: str = "testmini", root=None, limit: int | None = None,
                    offline: bool | None = None, kb: bool = False) -> list[Query]:
    """MATH-Vision ``test`` / ``testmini``, or ``test_minus_testmini`` (RCTS's knowledge base)."""
    limit = check_limit(limit)
    if split not in ("test", "testmini", "test_minus_testmini"):
        raise ValueError(f"unknown MATH-Vision split {split!r}; expected test, testmini or "
                         "test_minus_testmini")
    path = resolve_root(root, MATHVISION)
    source = "test" if split == "test_minus_testmini" else split
    if path is None:
        rows = ((r, r.get("decoded_image")) for r in hub_rows(MATHVISION, source, offline=offline))
        drop = ({str(r["id"]) for r in hub_rows(MATHVISION, "testmini", offline=offline)}
                if split == "test_minus_testmini" else set())
    else:
        base = path.parent if path.is_file() else path

        def local(name: str):
            f = find_file(path, [f"{name}.jsonl", f"data/{name}.jsonl"], MATHVISION)
            return ((r, existing(base / r["image"]) if r.get("image") else None) for r in read_jsonl(f))

        rows = local(source)
        drop = {str(r["id"]) for r, _ in local("testmini")} if split == "test_minus_testmini" else set()
    kept = (mathvision_query(r, img, kb, split) for r, img in rows if str(r["id"]) not in drop)
    return take(kept, limit)


# ---------------------------------------------------------------- MMMU (RCTS App. B.2)

def parse_mmmu_options(text: Any) -> list[str]:
    """MMMU stores options as the string of a Python list (``"['$6', '$7']"``); never raises."""
    if isinstance(text, (list, tuple)):
        return [str(o) for o in text]
    try:
        value = ast.literal_eval(str(text))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return []
    return [str(o) for o in value] if isinstance(value, (list, tuple)) else []


def _mmmu_answers(answer: Any) -> list[str]:
    if isinstance(answer, (list, tuple)):
        return [str(a) for a in answer]
    text = str(answer).strip()
    if text.startswith("["):
        parsed = parse_mmmu_options(text)
        if parsed:
            return parsed
    return [text]


def mmmu_query(row: dict, kb: bool = False, split: str = "") -> Query:
    """One MMMU hub row: id, question, options, answer, question_type, image_1..image_7, ..."""
    options = parse_mmmu_options(row.get("options", "[]"))
    answers = _mmmu_answers(row.get("answer", ""))
    images = [row[f"image_{i}"] for i in range(1, 8) if row.get(f"image_{i}") is not None]
    images = [im.get("bytes") if isinstance(im, dict) else im for im in images]
    meta = {k: row.get(k) for k in ("question_type", "subfield", "img_type", "topic_difficulty")}
    if len(images) > 1:
        meta["images"] = images  # image refs, not JSON-serialisable: drop before json.dumps
    is_choice = (row.get("question_type") == "multiple-choice" and len(options) >= 2
                 and answers[0] in option_letters(len(options)))
    return _cls(kb)(
        id=str(row["id"]), question=row.get("question", ""), answers=answers,
        answer_type="choice" if is_choice else "free", options=options if is_choice else None,
        image=images[0] if images else None, split=split, solution=row.get("explanation") or "",
        meta=meta)


def load_mmmu(split: str = "dev", root=None, limit: int | None = None, offline: bool | None = None,
              kb: bool = False, subjects: tuple[str, ...] = MMMU_SUBJECTS) -> list[Query]:
    """MMMU ``dev`` / ``validation`` over ``subjects`` (hub, or its parquet snapshot under root)."""
    limit = check_limit(limit)
    if split not in ("dev", "validation", "test"):
        raise ValueError(f"unknown MMMU split {split!r}; expected dev, validation or test")
    unknown = set(subjects) - set(MMMU_SUBJECTS)
    if unknown:
        raise ValueError(f"unknown MMMU subjects {sorted(unknown)}")
    path = resolve_root(root, MMMU)

    def rows() -> Iterator[dict]:
        for subject in subjects:
            if path is None:
                yield from hub_rows(MMMU, split, config=subject, offline=offline)
                continue
            files = sorted((path / subject).glob(f"{split}-*.parquet"))
            if not files:
                raise missing(MMMU, f"no {subject}/{split}-*.parquet under {path}; a GitHub copy "
                              "holds answers only: use load_mmmu_answer_dict / "
                              "load_mmmu_example_outputs for those")
            import pyarrow.parquet as pq

            for f in files:
                yield from pq.read_table(f).to_pylist()

    return take((mmmu_query(r, kb, split) for r in rows()), limit)


def load_mmmu_answer_dict(path: str | Path) -> dict[str, dict]:
    """Official ``answer_dict_val.json``: id -> {"question_type", "ground_truth"}; ground_truth is
    always returned as a list (a few short-answer items list several accepted answers)."""
    raw = read_json(Path(path))
    return {qid: {"question_type": v["question_type"],
                  "ground_truth": list(v["ground_truth"]) if isinstance(v["ground_truth"], list)
                  else [v["ground_truth"]]} for qid, v in raw.items()}


def load_mmmu_example_outputs(path: str | Path) -> list[tuple[Query, str]]:
    """Official example outputs (``example_outputs/<model>/<Subject>/output.json``): pairs of a
    Query built from ``index2ans`` (real option texts; the question text is not in the file, so it
    is empty and ``meta['question_missing']`` is True) and the model's raw ``response``."""
    out = []
    for row in read_json(Path(path)):
        letters = list(row.get("all_choices") or [])
        options = [str(row.get("index2ans", {}).get(x, "")) for x in letters]
        kind = "choice" if row.get("question_type") == "multiple-choice" and len(options) >= 2 else "free"
        q = Query(id=str(row["id"]), question="", answers=_mmmu_answers(row.get("answer", "")),
                  answer_type=kind, options=options if kind == "choice" else None,
                  meta={"question_type": row.get("question_type"), "question_missing": True,
                        "all_choices": letters})
        out.append((q, str(row.get("response", ""))))
    return out
