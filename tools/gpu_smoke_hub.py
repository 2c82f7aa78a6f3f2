"""A stand-in for the ``datasets`` package that serves the gpu smoke run's local hub fixtures.

``tools/gpu_smoke.py`` copies this file to ``<fixtures>/site/datasets/__init__.py`` and puts that
folder first on the notebook kernels' ``PYTHONPATH``, so ``kbvqa.data.real_common.hub_rows`` (the gpu
profile's path to the Hugging Face hub) reads the rows ``tools/gpu_smoke_data.py`` wrote, with no
network and without the real ``datasets`` package. Standalone on purpose: it imports neither
``kbvqa`` nor ``tools`` (the kernel sees only the installed wheel).

``load_dataset(path, name=None, split=None, streaming=False)`` reads
``$KBVQA_SMOKE_HUB/<path>/<name or "default">/<split>.jsonl``; a value ``{"_image": "file.png"}``
(relative to the dataset's folder) becomes a PIL image, as ``datasets``' ``Image`` feature decodes
it. An unknown dataset raises ``DatasetNotFoundError`` (a ``FileNotFoundError``, as in
``datasets``); an unknown config or split raises ``ValueError`` naming those that exist.

Leaves out: everything else of ``datasets`` (features, map, caching, non-streaming ``Dataset``s:
``streaming=False`` returns the same iterable).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

__version__ = "0+kbvqa.gpu_smoke"   # not the real package: transformers' availability check ignores it
HUB_VARIABLE = "KBVQA_SMOKE_HUB"
IMAGE_KEY = "_image"
DEFAULT_CONFIG = "default"


class DatasetNotFoundError(FileNotFoundError):
    """No fixture for this dataset id (``datasets`` raises its own subclass of FileNotFoundError)."""


def _root() -> Path:
    value = os.environ.get(HUB_VARIABLE, "").strip()
    if not value or not Path(value).is_dir():
        raise DatasetNotFoundError(f"${HUB_VARIABLE} must name the smoke run's hub fixtures folder, got {value!r}")
    return Path(value)


def _decode(value, folder: Path):
    if isinstance(value, dict) and set(value) == {IMAGE_KEY}:
        from PIL import Image

        with Image.open(folder / value[IMAGE_KEY]) as im:
            return im.convert("RGB")
    return value


class IterableDataset:
    """The rows of one split of one config, read lazily (``streaming=True``'s return type)."""

    def __init__(self, file: Path, folder: Path, split: str):
        self.file, self.folder, self.split = file, folder, split

    def __iter__(self):
        with open(self.file, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    yield {k: _decode(v, self.folder) for k, v in json.loads(line).items()}

    def __repr__(self) -> str:
        return f"IterableDataset(split={self.split!r}, file={str(self.file)!r})"


def get_dataset_split_names(path: str, name: str | None = None) -> list[str]:
    """The splits a fixture holds for ``path`` / ``name``."""
    return sorted(p.stem for p in _config_folder(path, name).glob("*.jsonl"))


def _config_folder(path: str, name: str | None) -> Path:
    dataset = _root() / str(path)
    if not dataset.is_dir():
        raise DatasetNotFoundError(f"Dataset {path!r} doesn't exist in the smoke run's hub fixtures ({_root()})")
    folder = dataset / (name or DEFAULT_CONFIG)
    if not folder.is_dir():
        configs = sorted(p.name for p in dataset.iterdir() if p.is_dir() and p.name != "images")
        raise ValueError(f"BuilderConfig {name!r} not found for {path!r}. Available: {configs}")
    return folder


def load_dataset(path: str, name: str | None = None, split: str | None = None, streaming: bool = False, **kwargs):
    """One split (``split`` given) or ``{split: IterableDataset}`` of a fixture dataset."""
    folder = _config_folder(path, name)
    splits = get_dataset_split_names(path, name)
    if split is None:
        return {s: IterableDataset(folder / f"{s}.jsonl", folder.parent, s) for s in splits}
    if split not in splits:
        raise ValueError(f'Bad split: {split}. Available splits: {splits}')
    return IterableDataset(folder / f"{split}.jsonl", folder.parent, split)
