"""Profiles, seeds and paths: the only place the book decides *where* and *how big*.

Two profiles share one code path:

- ``cpu``: a tiny checkpoint of a real ``transformers`` VLM architecture pretrained on the toy
  world and shipped in ``data/``; used in CI and whenever no CUDA device is present.
- ``gpu``: hub checkpoints (Qwen2-VL, Qwen2.5-VL, SmolVLM) and real datasets, for one Colab GPU.

The profile is chosen automatically (CUDA present -> gpu), ``KBVQA_PROFILE`` overrides it, and CI
(``CI`` set to a true value) is always ``cpu``. Notebooks call ``get_profile()`` and pick sizes from
``Profile``; they never branch on anything else.

The profile also decides how prompts and pictures look (``Profile.short_prompts``,
``Profile.image_size``): the cpu profile's short prompt renderings and 56-px views are what the tiny
VLM was trained on; the gpu profile gives hub checkpoints the papers' own prompts and images at
their own size. A config field left at ``PROFILE_DEFAULT`` takes the active profile's value when the
config is made (``resolve_profile_fields``), so one config serves both.

Leaves out: model loading (``kbvqa.models``) and dataset loading (``kbvqa.data``).
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

PROFILES = ("cpu", "gpu")

REPO_ROOT = Path(__file__).resolve().parent.parent


def data_dir() -> Path:
    """Where the shipped artefacts are (the reader, the tiny checkpoint, encoders, result tables).

    ``data/`` stays at the repository's top level; ``kbvqa/_data`` is a symbolic link to it, listed
    as package data, so that a built wheel carries the files themselves (setuptools copies what the
    link points to) and one path serves both installs: in a checkout or an editable install it
    resolves to ``<repo>/data``, in a wheel it is ``site-packages/kbvqa/_data``. A checkout without
    symbolic links (the link is then a small text file) falls back to ``<repo>/data``."""
    packaged = Path(__file__).resolve().parent / "_data"
    return packaged.resolve() if packaged.is_dir() else REPO_ROOT / "data"


DATA_DIR = data_dir()


def is_ci() -> bool:
    """True when running under CI (the ``CI`` environment variable is set to a true value)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes", "on")


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:  # the package imports without torch for data-only use
        return False
    return bool(torch.cuda.is_available())


@dataclass(frozen=True)
class Profile:
    """Sizes a notebook may choose from. Everything else follows from ``name``."""

    name: str            # "cpu" or "gpu"
    device: str          # torch device string
    scale: float         # multiply toy-world sizes / sample counts by this
    max_eval: int        # evaluation queries a chapter runs live

    def __post_init__(self):
        if self.name not in PROFILES:
            raise ValueError(f"unknown profile {self.name!r}; expected one of {PROFILES}")
        if self.scale <= 0:
            raise ValueError(f"scale must be positive, got {self.scale}")
        if self.max_eval < 1:
            raise ValueError(f"max_eval must be >= 1, got {self.max_eval}")

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    @property
    def short_prompts(self) -> bool:
        """cpu: the prompts' short renderings the tiny VLM knows; gpu: the papers' own prompts."""
        return not self.is_gpu

    @property
    def image_size(self) -> int | None:
        """cpu: the tiny VLM's 56-px views; gpu: None, images at their own size (the hub processors
        resize them)."""
        return None if self.is_gpu else 56


PROFILE_DEFAULT = "profile"     # a config's short_prompts / image_size left at this: the active profile's


def profile_value(name: str, value, profile: Profile | None = None):
    """``value``, or the profile's ``short_prompts`` / ``image_size`` (``name``) when ``value`` is
    ``PROFILE_DEFAULT``: the same rule as ``resolve_profile_fields``, for a function's argument."""
    if isinstance(value, str) and value == PROFILE_DEFAULT:
        return getattr(profile if profile is not None else get_profile(), name)
    return value


def resolve_profile_fields(config, profile: Profile | None = None) -> None:
    """Give the ``short_prompts`` and ``image_size`` fields of ``config`` (a dataclass, frozen or not;
    call it first in ``__post_init__``) that are left at ``PROFILE_DEFAULT`` the value of ``profile``
    (default: the active one, ``get_profile()``)."""
    for name in ("short_prompts", "image_size"):
        if isinstance(getattr(config, name, None), str) and getattr(config, name) == PROFILE_DEFAULT:
            profile = profile if profile is not None else get_profile()
            object.__setattr__(config, name, getattr(profile, name))


def get_profile(name: str | None = None) -> Profile:
    """The active profile.

    Order: explicit ``name`` > CI (always cpu) > ``KBVQA_PROFILE`` > CUDA present -> gpu > cpu.
    An unknown name raises ``ValueError``; asking for ``gpu`` without CUDA raises too.
    """
    if name is None:
        if is_ci():
            name = "cpu"
        else:
            name = os.environ.get("KBVQA_PROFILE", "").strip().lower() or (
                "gpu" if cuda_available() else "cpu"
            )
    name = name.strip().lower()
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; expected one of {PROFILES} "
                         "(set KBVQA_PROFILE=cpu or KBVQA_PROFILE=gpu)")
    if name == "gpu":
        if not cuda_available():
            raise ValueError("profile 'gpu' needs a CUDA device; none is available (use 'cpu')")
        return Profile("gpu", "cuda", scale=4.0, max_eval=500)
    return Profile("cpu", "cpu", scale=1.0, max_eval=100)


def cache_dir() -> Path:
    """Where generated artefacts (rendered worlds, indexes) are cached: ``KBVQA_CACHE`` or
    ``~/.cache/kbvqa``. Created on first use."""
    root = Path(os.environ.get("KBVQA_CACHE", Path.home() / ".cache" / "kbvqa")).expanduser()
    root.mkdir(parents=True, exist_ok=True)
    return root


def progress_enabled(progress: bool = True) -> bool:
    """Whether a loop shows its tqdm bar: ``progress``, unless ``KBVQA_PROGRESS=0``. The book's build
    sets it (``make book``, ``tools/nb_execute``), so the rendered chapters carry no progress bars
    while a student running a notebook sees them."""
    return bool(progress) and os.environ.get("KBVQA_PROGRESS", "1") != "0"


def seed_everything(seed: int) -> int:
    """Seed ``random``, NumPy and torch (CPU and CUDA) so a run repeats exactly; returns ``seed``."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0:
        raise ValueError(f"seed must be a non-negative int, got {seed!r}")
    random.seed(seed)
    os.environ["PYTHONHASHSEED"] = str(seed)
    try:
        import numpy as np

        np.random.seed(seed % 2**32)
    except ImportError:
        pass
    try:
        import torch

        torch.manual_seed(seed)
        if torch.cuda.is_available():
            torch.cuda.manual_seed_all(seed)
    except ImportError:
        pass
    return seed
