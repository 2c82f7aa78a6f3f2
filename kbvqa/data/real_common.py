"""Plumbing shared by the real-dataset loaders: where data comes from, and a clear error when not.

Every loader in ``real_*.py`` follows one rule for its source:

1. ``root`` given (or ``$KBVQA_DATA/<name>`` exists) -> read the official files under it, offline;
2. otherwise, if the network is allowed -> read the Hugging Face hub copy (``datasets``, imported
   lazily; it is in the ``gpu`` extra, not a core dependency);
3. otherwise -> raise ``DatasetNotAvailable`` (a ``FileNotFoundError``) that names the hub id, the
   official URLs and the local layout expected under ``root``.

The network is allowed only when ``offline=False`` is passed, or when nothing forbids it (no
``HF_HUB_OFFLINE`` / ``HF_DATASETS_OFFLINE`` / ``KBVQA_OFFLINE``, not CI) and the active profile is
``gpu``. The Makefile sets ``HF_HUB_OFFLINE=1``, so tests and the cpu book never touch the network.

Also here: JSON/JSONL readers (gzip aware), a streaming reader for one huge top-level JSON object
(E-VQA's 2M-page knowledge base), text packing into passages, and a seeded RNG keyed by strings.

Leaves out: dataset-specific parsing (see ``real_reasoning.py``, ``real_nonreasoning.py``,
``real_bioasq.py``, ``real_infoseek.py``, ``real_evqa.py``) and the registry (``datasets.py``).
"""
from __future__ import annotations

import gzip
import json
import os
import random
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbvqa.config import get_profile, is_ci

_TRUE = ("1", "true", "yes", "on")


class DatasetNotAvailable(FileNotFoundError):
    """A dataset's files are not where the loader looked, and it may not download them."""


@dataclass(frozen=True)
class SourceInfo:
    """Where a dataset lives: what the missing-source error and the registry print."""

    name: str                      # registry key, e.g. "scienceqa"
    hub_id: str | None             # Hugging Face dataset id read in Colab, None if not on the hub
    urls: tuple[str, ...]          # official download pages / files
    layout: str                    # the files expected under ``root``, one per line


def network_allowed(offline: bool | None = None) -> bool:
    """Whether a loader may read the hub. Explicit ``offline`` wins; then env flags and CI; then
    only the ``gpu`` profile reads the network by default."""
    if offline is not None:
        return not offline
    for var in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "KBVQA_OFFLINE"):
        if os.environ.get(var, "").strip().lower() in _TRUE:
            return False
    if is_ci():
        return False
    try:
        return get_profile().is_gpu
    except ValueError:  # KBVQA_PROFILE=gpu without CUDA: stay offline rather than crash here
        return False


def missing(info: SourceInfo, detail: str = "") -> DatasetNotAvailable:
    """The error every loader raises when it cannot find or fetch its source."""
    lines = [(f"{info.name}: no local copy found{(' (' + detail + ')') if detail else ''} and "
             "network access is off (pass offline=False, or root=<folder>).")]
    if info.hub_id:
        lines.append(f"  Hugging Face hub: {info.hub_id}  (pip install 'kbvqa-book[gpu]' for `datasets`)")
    for url in info.urls:
        lines.append(f"  official source: {url}")
    lines.append("  expected layout under root:")
    lines += ["    " + line for line in info.layout.strip().splitlines()]
    lines.append(f"  or set KBVQA_DATA so that $KBVQA_DATA/{info.name} holds those files.")
    return DatasetNotAvailable("\n".join(lines))


def resolve_root(root: str | Path | None, info: SourceInfo) -> Path | None:
    """``root`` as a Path (must exist), else ``$KBVQA_DATA/<name>`` if present, else None."""
    if root is not None:
        path = Path(root).expanduser()
        if not path.exists():
            raise missing(info, f"root {path} does not exist")
        return path
    env = os.environ.get("KBVQA_DATA", "").strip()
    if env and (Path(env).expanduser() / info.name).is_dir():
        return Path(env).expanduser() / info.name
    return None


def find_file(root: Path, names: Iterable[str], info: SourceInfo, globs: Iterable[str] = ()) -> Path:
    """The first of ``root/name`` that exists, else the first sorted match of a glob; else raise."""
    if root.is_file():
        return root
    names, globs = list(names), list(globs)
    for name in names:
        if (root / name).is_file():
            return root / name
    for pattern in globs:
        hits = sorted(p for p in root.glob(pattern) if p.is_file())
        if hits:
            return hits[0]
    raise missing(info, f"none of {names + globs} under {root}")


def hub_rows(info: SourceInfo, split: str, config: str | None = None,
             offline: bool | None = None) -> Iterator[dict]:
    """Rows of a hub dataset as dicts. Raises ``DatasetNotAvailable`` when the network is off."""
    if not info.hub_id or not network_allowed(offline):
        raise missing(info)
    try:
        import datasets
    except ImportError as exc:
        raise missing(info, "the `datasets` package is not installed") from exc
    # streaming: a chapter that wants 20 rows reads 20 rows, not the whole split (VizWiz: ~6 GB)
    yield from datasets.load_dataset(info.hub_id, config, split=split, streaming=True)


def check_limit(limit: int | None) -> int | None:
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 0):
        raise ValueError(f"limit must be a non-negative int or None, got {limit!r}")
    return limit


def take(items: Iterable, limit: int | None) -> list:
    """The first ``limit`` items (all when None), without consuming more of a generator."""
    out = []
    if limit == 0:
        return out
    for item in items:
        out.append(item)
        if limit is not None and len(out) >= limit:
            break
    return out


def _open_text(path: Path):
    if str(path).endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_json(path: Path) -> Any:
    with _open_text(path) as f:
        return json.load(f)


def read_jsonl(path: Path) -> Iterator[dict]:
    """Records of a JSON-lines file (``.gz`` too), skipping blank lines."""
    with _open_text(path) as f:
        for line_no, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{path}:{line_no}: not valid JSON ({exc.msg})") from exc


def iter_json_object(path: Path, chunk_chars: int = 1 << 20) -> Iterator[tuple[str, Any]]:
    """Stream the (key, value) pairs of one top-level JSON object without loading it whole.

    E-VQA's ``encyclopedic_kb_wiki.json`` is one object of ~2M pages (tens of GB once parsed);
    reading a ``max_docs`` subset must not parse the rest."""
    decoder = json.JSONDecoder()
    with _open_text(path) as f:
        buf, pos, eof = "", 0, False

        def more() -> bool:
            nonlocal buf, pos, eof
            chunk = f.read(chunk_chars)
            if not chunk:
                eof = True
                return False
            buf, pos = buf[pos:] + chunk, 0
            return True

        def skip(chars: str) -> str:
            nonlocal pos
            while True:
                while pos < len(buf) and buf[pos] in chars:
                    pos += 1
                if pos < len(buf) or not more():
                    return buf[pos] if pos < len(buf) else ""

        def value() -> Any:
            nonlocal pos
            while True:
                try:
                    obj, end = decoder.raw_decode(buf, pos)
                    if end < len(buf) or eof:   # a number cut at the buffer's end must not pass
                        pos = end
                        return obj
                    more()
                except json.JSONDecodeError:
                    if eof or not more():
                        raise ValueError(f"{path}: truncated or invalid JSON object") from None

        if skip(" \t\r\n") != "{":
            raise ValueError(f"{path}: expected a JSON object")
        pos += 1
        while True:
            ch = skip(" \t\r\n,")
            if ch in ("}", ""):
                return
            key = value()
            if skip(" \t\r\n") != ":":
                raise ValueError(f"{path}: expected ':' after key {key!r}")
            pos += 1
            skip(" \t\r\n")
            yield key, value()


def pack_passages(text: str, max_words: int) -> list[str]:
    """Split text into paragraphs (non-empty lines) and pack neighbours up to ``max_words`` words;
    a paragraph longer than that is cut into ``max_words`` slices."""
    if max_words < 1:
        raise ValueError(f"max_words must be >= 1, got {max_words}")
    chunks, current = [], []
    for para in (p.strip() for p in text.splitlines()):
        words = para.split()
        while len(words) > max_words:
            if current:
                chunks.append(" ".join(current))
                current = []
            chunks.append(" ".join(words[:max_words]))
            words = words[max_words:]
        if current and len(current) + len(words) > max_words:
            chunks.append(" ".join(current))
            current = []
        current += words
    if current:
        chunks.append(" ".join(current))
    return chunks


def keyed_rng(seed: int, *keys: str) -> random.Random:
    """A ``random.Random`` fixed by ``seed`` and string keys: the same row gets the same draw in any
    process and any order (string seeds are hashed with SHA-512, not ``hash()``)."""
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise ValueError(f"seed must be an int, got {seed!r}")  # noqa: TRY004 - house style: ValueError
    return random.Random("|".join([str(seed), *keys]))


def existing(path: Path) -> Path | None:
    """``path`` if it is a file, else None (images absent from a partial copy)."""
    return path if path.is_file() else None


def select_records(records: Iterable[dict], key, max_docs: int | None,
                   required: Iterable[str] = ()) -> list[dict]:
    """A ``max_docs`` subset of a knowledge base: every record whose key is in ``required`` (the
    gold pages of the loaded queries, so retrieval stays answerable), then the first other records
    in file order. One pass; stops early once all required records are found and the rest is full.

    This mirrors how ReAG/MOLT's 100k InfoSeek KB was cut from the 6M pages (all gold entities plus
    others); which others differs from theirs."""
    if max_docs is not None and (not isinstance(max_docs, int) or max_docs < 1):
        raise ValueError(f"max_docs must be a positive int or None, got {max_docs!r}")
    need = set(required)
    if max_docs is not None and len(need) > max_docs:
        raise ValueError(f"max_docs={max_docs} is smaller than the {len(need)} required documents")
    found: dict[str, dict] = {}
    others: list[dict] = []
    for rec in records:
        k = key(rec)
        if k in need:
            found.setdefault(k, rec)
        elif max_docs is None or len(others) < max_docs:
            others.append(rec)
        if max_docs is not None and len(found) == len(need) and len(others) >= max_docs - len(need):
            break
    room = None if max_docs is None else max_docs - len(found)
    return list(found.values()) + others[:room]
