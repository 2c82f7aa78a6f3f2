"""Small generated fixtures of every real dataset the chapters read in the gpu profile, offline.

``write_fixtures(root)`` writes invented rows (never real data) in each source's own schema:

- ``root/hub/<hub id>/<config>/<split>.jsonl``: the five datasets the gpu profile streams from the
  Hugging Face hub, with the hub copies' column names and split names: ScienceQA
  (``derek-thomas/ScienceQA``: train / validation / test), MATH-Vision (``MathLLMs/MathVision``: test /
  testmini), MMMU (``MMMU/MMMU``: one config per subject, dev / validation), VizWiz
  (``lmms-lab/VizWiz-VQA``: val) and VSR (``cambridgeltl/vsr_random``: train / validation / test).
  They are read through ``tools/gpu_smoke_hub.py``, a stand-in ``datasets`` module copied to
  ``root/site/datasets/``;
- ``root/local/<name>/``: the three datasets that are on no hub, in their official file layouts
  (``kbvqa.data``'s ``$KBVQA_DATA``): BioASQ (``11B1_golden.json``), InfoSeek (``infoseek_val*.jsonl``,
  a ``Wiki6M_ver_1_0.jsonl`` subset, ``images/``) and E-VQA (``test.csv``, ``encyclopedic_kb_wiki.json``,
  ``images/``).

``fixture_env(root)`` is what makes ``kbvqa.data`` read them: ``KBVQA_DATA``, ``KBVQA_SMOKE_HUB``,
``PYTHONPATH`` (the stand-in ``datasets``) and ``KBVQA_SAMPLES`` (pointing nowhere, so chapter 02
takes the gpu profile's ``load_dataset`` path rather than the offline samples). ``CHAPTER_DATASETS``
lists the (dataset, split) pairs the chapters load. Pictures are seeded random shapes (PNG/JPEG,
written here). Leaves out: models (``gpu_smoke_models.py``) and running the book (``gpu_smoke.py``).
"""
from __future__ import annotations

import csv
import json
import random
import shutil
from pathlib import Path

# (dataset, split) the chapters load in the gpu profile: 02 (every dataset's eval split), 14
# (ScienceQA eval + kb), 24 (InfoSeek queries + knowledge base).
CHAPTER_DATASETS = (("scienceqa", "eval"), ("scienceqa", "kb"), ("mathvision", "eval"), ("mmmu", "eval"),
                    ("vizwiz", "eval"), ("vsr_mc", "eval"), ("bioasq", "eval"), ("infoseek", "eval"), ("evqa", "eval"))
KNOWLEDGE_BASES = ("scienceqa", "bioasq", "infoseek", "evqa")   # load_knowledge_base
WORDS = ("zorp", "quill", "bramble", "tessel", "marrow", "finch", "lumen", "copper", "vesper", "ridge", "saffron",
         "glint", "harrow", "pebble", "thistle", "orbit")
VSR_PAIRS = (("on top of", "cat", "suitcase"), ("under", "dog", "table"), ("left of", "cup", "laptop"),
             ("behind", "bicycle", "bench"), ("in front of", "horse", "fence"), ("next to", "chair", "bed"))


def picture(rng: random.Random, size: int = 64):
    """A seeded picture: a coloured background with one ellipse and one rectangle."""
    from PIL import Image, ImageDraw

    im = Image.new("RGB", (size, size), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(im)
    for shape in (draw.ellipse, draw.rectangle):
        x0, y0 = rng.randrange(size // 2), rng.randrange(size // 2)
        shape((x0, y0, x0 + rng.randrange(8, size // 2), y0 + rng.randrange(8, size // 2)),
              fill=tuple(rng.randrange(256) for _ in range(3)))
    return im


def _jsonl(path: Path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")


class _Hub:
    """Writes one hub dataset: rows per (config, split), images once under ``<dataset>/images``."""

    def __init__(self, root: Path, hub_id: str, rng: random.Random):
        self.folder, self.rng = root / hub_id, rng

    def image(self, name: str) -> dict:
        target = self.folder / "images" / f"{name}.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        picture(self.rng).save(target)
        return {"_image": f"images/{name}.png"}

    def write(self, split: str, rows, config: str = "default") -> None:
        _jsonl(self.folder / config / f"{split}.jsonl", rows)


def _scienceqa(hub: _Hub) -> None:
    for split, n in (("train", 12), ("validation", 4), ("test", 8)):
        rows = []
        for i in range(n):
            choices = hub.rng.sample(WORDS, 2 + i % 3)
            rows.append({"image": hub.image(f"{split}-{i}") if i % 2 == 0 else None,
                         "question": f"Which creature is the {choices[0]}?", "choices": choices,
                         "answer": 0, "hint": "Look at the picture." if i % 2 == 0 else "",
                         "task": "closed choice", "grade": f"grade{3 + i % 5}", "subject": "natural science",
                         "topic": "biology", "category": "Identify creatures", "skill": "Identify creatures",
                         "lecture": f"A {choices[0]} is a creature of the toy world.",
                         "solution": f"The picture shows a {choices[0]}."})
        hub.write(split, rows)


def _mathvision(hub: _Hub) -> None:
    rows = []
    for i in range(1, 11):
        choice = i % 2 == 1
        rows.append({"id": str(i), "question": f"<image1>\nHow many shapes are in picture {i}?",
                     "options": ["1", "2", "3", "4", "5"] if choice else [], "image": f"images/{i}.jpg",
                     "decoded_image": hub.image(str(i)), "answer": "B" if choice else "2",
                     "solution": "There is one ellipse and one rectangle.", "level": 1 + i % 5, "subject": "counting"})
    hub.write("test", rows)
    hub.write("testmini", rows[:4])


def _mmmu(hub: _Hub) -> None:
    from kbvqa.data.real_reasoning import MMMU_SUBJECTS

    image = hub.image("shared")
    for subject in MMMU_SUBJECTS:
        for split in ("dev", "validation"):
            open_q = subject in ("Math", "Physics")
            hub.write(split, [{
                "id": f"{split}_{subject}_1", "question": f"<image 1> Which {subject.replace('_', ' ')} term fits?",
                "options": "[]" if open_q else "['alpha', 'beta', 'gamma', 'delta']",
                "explanation": "", "image_1": image, **{f"image_{k}": None for k in range(2, 8)},
                "img_type": "['Diagrams']", "answer": "4" if open_q else "B", "topic_difficulty": "Easy",
                "question_type": "open" if open_q else "multiple-choice", "subfield": subject}], config=subject)


def _vizwiz(hub: _Hub) -> None:
    hub.write("val", [{"question_id": f"VizWiz_val_{i:08d}.jpg", "image": hub.image(f"val-{i}"),
                       "question": "What is in this picture?", "category": "other",
                       "answers": [WORDS[i]] * 6 + [WORDS[i + 1]] * 3 + ["unanswerable"]} for i in range(6)])


def _vsr(hub: _Hub) -> None:
    for split, n in (("train", 6), ("validation", 4), ("test", 10)):
        rows = []
        for i in range(n):
            relation, subj, obj = VSR_PAIRS[i % len(VSR_PAIRS)]
            image = f"{split}{i:09d}.jpg"
            rows.append({"image": image, "image_link": f"http://images.cocodataset.org/train2017/{image}",
                         "caption": f"The {subj} is {relation} the {obj}.", "label": int(i % 4 != 3),
                         "relation": relation, "subj": subj, "obj": obj, "annotator_id": i,
                         "vote_true_validator_id": "[]", "vote_false_validator_id": "[]"})
        hub.write(split, rows)


def _bioasq(folder: Path) -> None:
    kinds = {"yesno": "yes", "factoid": [["zorpase", "ZRP1"]], "list": [["quill"], ["bramble"]], "summary": None}
    questions = []
    for i, (kind, exact) in enumerate(list(kinds.items()) * 2):
        docs = [f"http://www.ncbi.nlm.nih.gov/pubmed/{3000 + i}", f"http://www.ncbi.nlm.nih.gov/pubmed/{3100 + i}"]
        q = {"id": f"{i:024x}", "type": kind, "body": f"Is {WORDS[i]} regulated by zorpase {i}?", "documents": docs,
             "snippets": [{"document": d, "text": f"Zorpase {i} regulates {WORDS[i]} in toy cells.",
                           "offsetInBeginSection": 0, "offsetInEndSection": 40, "beginSection": "abstract",
                           "endSection": "abstract"} for d in docs],
             "ideal_answer": [f"Yes, zorpase {i} regulates {WORDS[i]}."]}
        if exact is not None:
            q["exact_answer"] = exact
        questions.append(q)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "11B1_golden.json").write_text(json.dumps({"questions": questions}, indent=1) + "\n")


def _infoseek(folder: Path, rng: random.Random) -> None:
    kinds = [("String", lambda i: ([WORDS[i]], [WORDS[i]])),
             ("Numerical", lambda i: ([str(100 + i)], [{"wikidata": 100.0 + i, "range": [90.0 + i, 110.0 + i]}])),
             ("Time", lambda i: ([str(1900 + i)], [str(1900 + i)]))]
    rows, withkb, qtype = [], [], []
    for i in range(8):
        kind, answer = kinds[i % 3]
        data_id, entity = f"infoseek_val_{i:08d}", f"Q{1000 + i}"
        answers, answer_eval = answer(i)
        rows.append({"data_id": data_id, "image_id": f"oven_{i:08d}", "question": f"What is this {WORDS[i]} known for?",
                     "answer": answers, "answer_eval": answer_eval,
                     "data_split": "val_unseen_entity" if i % 2 else "val_unseen_question"})
        withkb.append({"data_id": data_id, "entity_id": entity, "entity_text": WORDS[i].title()})
        qtype.append({"data_id": data_id, "question_type": kind})
        (folder / "images").mkdir(parents=True, exist_ok=True)
        picture(rng).save(folder / "images" / f"oven_{i:08d}.jpg")
    _jsonl(folder / "infoseek_val.jsonl", rows)
    _jsonl(folder / "infoseek_val_withkb.jsonl", withkb)
    _jsonl(folder / "infoseek_val_qtype.jsonl", qtype)
    _jsonl(folder / "Wiki6M_ver_1_0.jsonl", [
        {"wikidata_id": f"Q{1000 + i}", "wikipedia_title": WORDS[i].title(),
         "wikipedia_content": f"{WORDS[i].title()} is a creature of the toy world.\nIt was first seen in "
                              f"{1900 + i} and grows to {100 + i} cm.\nIt is known for {WORDS[i]}.",
         "wikipedia_image_url": None, "wikipedia_url": f"https://en.wikipedia.org/wiki/{WORDS[i].title()}"}
        for i in range(12)])


def _evqa(folder: Path, rng: random.Random) -> None:
    fields = ["question", "answer", "dataset_image_ids", "dataset_category_id", "question_type", "wikipedia_url",
              "wikipedia_title", "evidence", "evidence_section_id", "evidence_section_title", "dataset_name",
              "question_original", "wikipedia_url_used_in_train"]
    kinds = ("templated", "automatic", "multi_answer", "2_hop")
    rows, kb = [], {}
    for i in range(8):
        url, image_id = f"https://en.wikipedia.org/wiki/{WORDS[i].title()}", f"{i:016x}"
        kind = kinds[i % 4]
        answer = f"{WORDS[i]}&&{WORDS[i + 1]}" if kind == "multi_answer" else f"{WORDS[i]}|{WORDS[i]}s"
        rows.append({"question": f"What does this {WORDS[i]} eat?", "answer": answer, "dataset_image_ids": image_id,
                     "dataset_category_id": str(i), "question_type": kind, "wikipedia_url": url,
                     "wikipedia_title": WORDS[i].title(), "evidence": f"It eats {WORDS[i]}.",
                     "evidence_section_id": "1", "evidence_section_title": "Diet", "dataset_name": "inaturalist",
                     "question_original": f"What does this {WORDS[i]} eat?", "wikipedia_url_used_in_train": "False"})
        kb[url] = {"title": WORDS[i].title(), "section_titles": ["Summary", "Diet"],
                   "section_texts": [f"{WORDS[i].title()} is a toy creature.", f"It eats {WORDS[i]}."],
                   "image_urls": [], "image_reference_descriptions": [], "image_section_indices": [], "url": url}
        (folder / "images" / "inaturalist").mkdir(parents=True, exist_ok=True)
        picture(rng).save(folder / "images" / "inaturalist" / f"{image_id}.jpg")
    with open(folder / "test.csv", "w", encoding="utf-8", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    (folder / "encyclopedic_kb_wiki.json").write_text(json.dumps(kb, indent=1) + "\n")


def write_fixtures(root, seed: int = 0) -> dict[str, str]:
    """Write every fixture under ``root`` (replacing an earlier one); returns ``fixture_env(root)``."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    root = Path(root).expanduser().resolve()
    for part in ("hub", "local", "site"):
        shutil.rmtree(root / part, ignore_errors=True)
    hub = root / "hub"
    for k, (hub_id, writer) in enumerate((("derek-thomas/ScienceQA", _scienceqa), ("MathLLMs/MathVision", _mathvision),
                                         ("MMMU/MMMU", _mmmu), ("lmms-lab/VizWiz-VQA", _vizwiz),
                                         ("cambridgeltl/vsr_random", _vsr))):
        writer(_Hub(hub, hub_id, random.Random(seed * 100 + k)))
    _bioasq(root / "local" / "bioasq")
    _infoseek(root / "local" / "infoseek", random.Random(seed * 100 + 10))
    _evqa(root / "local" / "evqa", random.Random(seed * 100 + 11))
    site = root / "site" / "datasets"
    site.mkdir(parents=True)
    shutil.copyfile(Path(__file__).with_name("gpu_smoke_hub.py"), site / "__init__.py")
    return fixture_env(root)


def fixture_env(root) -> dict[str, str]:
    """The variables under which ``kbvqa.data`` reads the fixtures of ``root`` (module docstring)."""
    root = Path(root).expanduser().resolve()
    if not (root / "site" / "datasets" / "__init__.py").is_file():
        raise ValueError(f"{root} holds no smoke fixtures: run write_fixtures({str(root)!r}) first")
    return {"KBVQA_DATA": str(root / "local"), "KBVQA_SMOKE_HUB": str(root / "hub"),
            "PYTHONPATH": str(root / "site"), "KBVQA_SAMPLES": str(root / "no-samples")}
