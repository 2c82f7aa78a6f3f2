"""The real datasets of the four papers behind one call: ``load_dataset(name, split=...)``.

``REGISTRY`` lists each dataset with the paper that uses it, its knowledge-base and evaluation
splits as the papers set them (RCTS Tab. 1; SeRTS §4.1; ReAG/MOLT §4.1), the sizes the papers
report, and where the data lives (hub id / official URLs / local layout). ``split="eval"`` and
``split="kb"`` resolve to those splits; any official split name works too.

Sources (see ``real_common``): local files under ``root`` (or ``$KBVQA_DATA/<name>``) always work
offline; with no root, datasets on the Hugging Face hub are read through ``datasets`` when the
network is allowed (``offline=False``, or the gpu profile with no ``HF_HUB_OFFLINE``); otherwise a
``DatasetNotAvailable`` (a ``FileNotFoundError``) says where to get the files and how to lay them
out. ``download_official_files`` fetches the small official annotation files into a root folder.

Knowledge bases: for RCTS datasets the KB is solved queries (``KBExample``, split "kb"); for
BioASQ, InfoSeek and E-VQA it is a corpus of documents, read by ``load_knowledge_base``.

Leaves out: the parsing of each dataset (``real_*.py``) and any scoring (``kbvqa.metrics``).
"""
from __future__ import annotations

import urllib.request
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from kbvqa.data import real_bioasq, real_evqa, real_infoseek, real_nonreasoning, real_reasoning
from kbvqa.data.real_common import DatasetNotAvailable, SourceInfo, missing, network_allowed
from kbvqa.data.schema import Query


@dataclass(frozen=True)
class DatasetInfo:
    """One dataset as the papers use it."""

    name: str                       # registry key
    paper: str                      # which paper(s) evaluate on it
    loader: Callable[..., list]     # real_*.load_<name>(split, root, limit, offline, ...)
    source: SourceInfo              # hub id, official URLs, local layout
    eval_split: str                 # the evaluation split the paper reports
    eval_size: int                  # its size in the paper
    kb_split: str | None            # the split that becomes the RCTS knowledge base, if any
    kb_size: int | None             # its size in the paper (or the corpus size for document KBs)
    notes: str = ""

    @property
    def hub_id(self) -> str | None:
        return self.source.hub_id

    @property
    def urls(self) -> tuple[str, ...]:
        return self.source.urls


REGISTRY: dict[str, DatasetInfo] = {d.name: d for d in (
    DatasetInfo("scienceqa", "RCTS", real_reasoning.load_scienceqa, real_reasoning.SCIENCEQA,
                "test", 4241, "trainval", 16967, "RCTS Tab. 1, App. B.1"),
    DatasetInfo("mmmu", "RCTS", real_reasoning.load_mmmu, real_reasoning.MMMU,
                "dev", 150, "validation", 900,
                "RCTS Tab. 1, App. B.2; GitHub holds answers only (load_mmmu_answer_dict)"),
    DatasetInfo("mathvision", "RCTS", real_reasoning.load_mathvision, real_reasoning.MATHVISION,
                "testmini", 304, "test_minus_testmini", 2736,
                "RCTS Tab. 1, App. B.3 ('MathV': deduplicated test set as KB)"),
    DatasetInfo("vizwiz", "RCTS", real_nonreasoning.load_vizwiz, real_nonreasoning.VIZWIZ,
                "val", 4319, "train", 20523, "RCTS Tab. 1, Tab. 3, App. B.4"),
    DatasetInfo("vsr_mc", "RCTS", real_nonreasoning.load_vsr_mc, real_nonreasoning.VSR,
                "test", 1181, "trainval", 4440,
                "RCTS Tab. 1, Tab. 3, App. B.5; built from VSR's random split, label-1 rows only"),
    DatasetInfo("bioasq", "SeRTS", real_bioasq.load_bioasq, real_bioasq.BIOASQ,
                "11B1", 73, None, None,
                "SeRTS §4.1, Tab. 3-4: Task 11b batch 1; corpus = the batch's gold documents"),
    DatasetInfo("infoseek", "ReAG, MOLT", real_infoseek.load_infoseek, real_infoseek.INFOSEEK,
                "val", 71335, None, 100_000,
                "ReAG §4.1 (~73k) / MOLT Tab. 8 (71,335): validation, unseen question + unseen "
                "entity; KB of 100k Wikipedia pages cut from Wiki6M"),
    DatasetInfo("evqa", "ReAG, MOLT", real_evqa.load_evqa, real_evqa.EVQA,
                "test", 4750, None, 2_000_000,
                "ReAG §4.1 (4.8k) / MOLT Tab. 8 (4,750): single-hop test questions; KB of ~2M "
                "Wikipedia pages"),
)}

_KB_LOADERS = {"infoseek": real_infoseek.load_infoseek_kb, "evqa": real_evqa.load_evqa_kb}

# Small official annotation files ``download_official_files`` may fetch (url, path under root).
OFFICIAL_FILES: dict[str, tuple[tuple[str, str], ...]] = {
    "scienceqa": tuple((f"https://raw.githubusercontent.com/lupantech/ScienceQA/main/data/scienceqa/{f}", f)
                       for f in ("problems.json", "pid_splits.json")),
    "vizwiz": (("https://vizwiz.cs.colorado.edu/VizWiz_final/vqa_data/Annotations.zip",
                "Annotations.zip"),),
    "infoseek": tuple((f"http://storage.googleapis.com/gresearch/open-vision-language/infoseek/{f}", f)
                      for f in ("infoseek_val.jsonl", "infoseek_val_withkb.jsonl")),
    "evqa": tuple((f"https://storage.googleapis.com/encyclopedic-vqa/{f}", f)
                  for f in ("test.csv", "val.csv")),
}


def dataset_info(name: str) -> DatasetInfo:
    """The registry entry of ``name``; a clear ``ValueError`` for an unknown name."""
    key = str(name).strip().lower().replace("-", "_")
    key = {"math_vision": "mathvision", "mathv": "mathvision", "vsr": "vsr_mc",
           "encyclopedic_vqa": "evqa", "e_vqa": "evqa"}.get(key, key)
    if key not in REGISTRY:
        raise ValueError(f"unknown dataset {name!r}; expected one of {sorted(REGISTRY)}")
    return REGISTRY[key]


def resolve_split(info: DatasetInfo, split: str) -> str:
    """'eval' / 'kb' -> the paper's split name; any other name is passed through."""
    if split == "eval":
        return info.eval_split
    if split == "kb":
        if info.kb_split is None:
            raise ValueError(f"{info.name}: its knowledge base is a document corpus, not a split; "
                             "use load_knowledge_base")
        return info.kb_split
    return split


def load_dataset(name: str, split: str = "eval", root=None, limit: int | None = None,
                 offline: bool | None = None, **kwargs) -> list[Query]:
    """Queries of a real dataset in the book's schema.

    ``split``: "eval", "kb" (RCTS datasets: returns ``KBExample``) or an official split name.
    ``root``: folder with the official files (see ``REGISTRY[name].source.layout``).
    ``limit``: at most this many queries. ``offline``: True forbids the network, False allows it,
    None decides from the environment and profile. Other ``kwargs`` go to the loader (e.g.
    ``seed`` for VSR-MC, ``single_hop`` for E-VQA, ``subjects`` for MMMU, ``types`` for BioASQ)."""
    info = dataset_info(name)
    if split == "kb" and info.kb_split is not None:
        kwargs.setdefault("kb", True)
    return info.loader(resolve_split(info, split), root=root, limit=limit, offline=offline, **kwargs)


def load_knowledge_base(name: str, root=None, max_docs: int | None = None,
                        queries: Iterable[Query] = (), offline: bool | None = None, **kwargs) -> list:
    """The retrieval corpus the paper uses for ``name``.

    InfoSeek / E-VQA: Wikipedia ``Document`` pages, ``max_docs`` of them, always including the gold
    pages of ``queries``. BioASQ: ``LiteratureItem`` abstracts of the batch (``split`` kwarg, default
    "11B1"; snippets as abstracts, see ``real_bioasq``). RCTS datasets: the "kb" split as
    ``KBExample`` (``max_docs`` acts as ``limit``)."""
    info = dataset_info(name)
    required = sorted({d for q in queries for d in q.gold_doc_ids})
    if info.name in _KB_LOADERS:
        return _KB_LOADERS[info.name](root=root, max_docs=max_docs, required=required,
                                      offline=offline, **kwargs)
    if info.name == "bioasq":
        items = real_bioasq.load_bioasq_corpus(kwargs.pop("split", info.eval_split), root=root,
                                               offline=offline, **kwargs)
        keep = set(required)
        items.sort(key=lambda it: it.id not in keep)  # gold abstracts first, then the rest
        return items[:max_docs] if max_docs is not None else items
    return load_dataset(info.name, "kb", root=root, limit=max_docs, offline=offline, **kwargs)


def download_official_files(name: str, root, offline: bool | None = None,
                            overwrite: bool = False) -> list[Path]:
    """Fetch the small official annotation files of ``name`` into ``root`` (zips are extracted).

    Large files (knowledge bases, images) are only named in ``REGISTRY[name].urls``: fetch them by
    hand. Refuses (``DatasetNotAvailable``) when the network is not allowed."""
    info = dataset_info(name)
    if info.name not in OFFICIAL_FILES:
        raise ValueError(f"{info.name}: no small official files to fetch; the hub copy "
                         f"({info.hub_id}) or {info.urls} are the sources")
    if not network_allowed(offline):
        raise missing(info.source, "download refused: network access is off")
    root = Path(root).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    written = []
    for url, rel in OFFICIAL_FILES[info.name]:
        dest = root / rel
        if overwrite or not dest.exists():
            urllib.request.urlretrieve(url, dest)
        if dest.suffix == ".zip":
            with zipfile.ZipFile(dest) as zf:
                zf.extractall(root)
        written.append(dest)
    return written


__all__ = ["REGISTRY", "DatasetInfo", "DatasetNotAvailable", "dataset_info", "download_official_files",
           "load_dataset", "load_knowledge_base", "resolve_split"]
