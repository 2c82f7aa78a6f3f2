"""Profiles, seeds and paths: the only place the book decides *where* and *how big*.

Two profiles share one code path:

- ``cpu``: a tiny checkpoint of a real ``transformers`` VLM architecture pretrained on the toy
  world and shipped in ``data/``; used in CI and whenever no CUDA device is present.
- ``gpu``: hub checkpoints (Qwen2-VL, Qwen2.5-VL, SmolVLM) and real datasets, for one Colab GPU.

The profile is chosen automatically (CUDA present -> gpu), ``KBVQA_PROFILE`` overrides it, and CI
(``CI`` set to a true value) is always ``cpu``. Notebooks call ``get_profile()`` and pick sizes from
``Profile``; they never branch on anything else.

The profile also decides how prompts and pictures look (``Profile.short_prompts``,
``Profile.image_size_of(role)``): the cpu profile's short prompt renderings are what both cpu models
were trained on, and its pictures are shown at the size of the model that plays the role -- 112 px
for the reader (the roles in ``CPU_READER_ROLES``), 56 px for the tiny VLM (every other role until
its part moves onto the reader, issue #18); the gpu profile gives hub checkpoints the papers' own
prompts and images at their own size. A config field left at ``PROFILE_DEFAULT`` takes the active
profile's value for the config's role when the config is made (``resolve_profile_fields``), so one
config serves both profiles and both cpu models.

Leaves out: model loading (``kbvqa.models``) and dataset loading (``kbvqa.data``).
"""
from __future__ import annotations

import os
import random
import warnings
from dataclasses import dataclass
from pathlib import Path

PROFILES = ("cpu", "gpu")

#: The roles the shipped reader plays in the cpu profile (``kbvqa.models.load_vlm``); every other
#: role loads the tiny checkpoint. Issue #18 moved them part by part (RCTS generator + reasoner, SeRTS
#: searcher, ReAG rl_policy + critic + reag_generator, MOLT judge), each with its re-run tables; only
#: ``rl_policy_large``, which no chapter loads, is still the tiny model's. It lives here, below the
#: models, because it also sets the picture size.
CPU_READER_ROLES = frozenset({"reader", "judge", "searcher", "generator", "reasoner", "critic", "rl_policy",
                              "reag_generator"})
READER_IMAGE_SIZE = 112   # the reader's vision tower input (the toy world's own size): pixels a side
TINY_IMAGE_SIZE = 56      # the tiny VLM's views: the 112-px view downscaled, boxes scaled with it

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

    name: str            # "cpu" or "gpu": which code path (models, prompts, pictures, data sources)
    device: str          # torch device string
    scale: float         # multiply toy-world sizes / sample counts by this
    max_eval: int        # evaluation queries a chapter runs live
    sizes: str = ""      # whose sample sizes a chapter picks (``size``): "" = the profile's own; "cpu" in
                         # the gpu smoke run (KBVQA_SIZES=cpu: the gpu code path at the cpu profile's sizes)

    def __post_init__(self):
        if self.name not in PROFILES:
            raise ValueError(f"unknown profile {self.name!r}; expected one of {PROFILES}")
        if self.sizes not in ("", *PROFILES):
            raise ValueError(f"sizes must be '' (the profile's own) or one of {PROFILES}, got {self.sizes!r}")
        if self.scale <= 0:
            raise ValueError(f"scale must be positive, got {self.scale}")
        if self.max_eval < 1:
            raise ValueError(f"max_eval must be >= 1, got {self.max_eval}")

    @property
    def is_gpu(self) -> bool:
        return self.name == "gpu"

    @property
    def full_sizes(self) -> bool:
        """Whether chapters run the gpu profile's sample sizes (gpu, unless ``sizes`` says cpu)."""
        return (self.sizes or self.name) == "gpu"

    def size(self, cpu, gpu):
        """A chapter's choice of a size (samples, steps, candidates): ``gpu`` at full sizes, else ``cpu``."""
        return gpu if self.full_sizes else cpu

    @property
    def short_prompts(self) -> bool:
        """cpu: the prompts' short renderings the tiny VLM knows; gpu: the papers' own prompts."""
        return not self.is_gpu

    @property
    def image_size(self) -> int | None:
        """The picture size of a role the tiny VLM plays: ``image_size_of(None)``."""
        return self.image_size_of(None)

    def image_size_of(self, role: str | None) -> int | None:
        """Pixels a side of the pictures shown to the model that plays ``role``: gpu, None (images at
        their own size; the hub processors resize them); cpu, ``READER_IMAGE_SIZE`` for a role the
        reader plays (``plays_reader``), else the tiny VLM's ``TINY_IMAGE_SIZE``."""
        if self.is_gpu:
            return None
        return READER_IMAGE_SIZE if plays_reader(role) else TINY_IMAGE_SIZE


def plays_reader(role: str | None) -> bool:
    """Whether the shipped reader plays ``role`` in the cpu profile (``role in CPU_READER_ROLES``,
    read when called, so a test may patch the set)."""
    return role is not None and role in CPU_READER_ROLES


PROFILE_DEFAULT = "profile"     # a config's short_prompts / image_size left at this: the active profile's


PROFILE_FIELDS = ("short_prompts", "image_size")


def profile_value(name: str, value, profile: Profile | None = None, role: str | None = None):
    """``value``, or the profile's ``short_prompts`` / ``image_size`` (``name``) for the model that
    plays ``role`` when ``value`` is ``PROFILE_DEFAULT``: the rule of ``resolve_profile_fields``, for
    a function's argument."""
    if name not in PROFILE_FIELDS:
        raise ValueError(f"profile field must be one of {PROFILE_FIELDS}, got {name!r}")
    if isinstance(value, str) and value == PROFILE_DEFAULT:
        profile = profile if profile is not None else get_profile()
        return profile.image_size_of(role) if name == "image_size" else profile.short_prompts
    return value


def resolve_profile_fields(config, profile: Profile | None = None, role: str | None = None) -> None:
    """Give the ``short_prompts`` and ``image_size`` fields of ``config`` (a dataclass, frozen or not;
    call it first in ``__post_init__``) that are left at ``PROFILE_DEFAULT`` the value of ``profile``
    (default: the active one, ``get_profile()``) for the model that plays ``role`` (the config's
    part's role, e.g. ``"critic"``; None: the tiny VLM's sizes)."""
    for name in PROFILE_FIELDS:
        value = getattr(config, name, None)
        if isinstance(value, str) and value == PROFILE_DEFAULT:
            object.__setattr__(config, name, profile_value(name, value, profile, role))


def get_profile(name: str | None = None) -> Profile:
    """The active profile.

    Order: explicit ``name`` > CI (always cpu) > ``KBVQA_PROFILE`` > CUDA present -> gpu > cpu.
    An unknown name raises ``ValueError``; asking for ``gpu`` without CUDA raises too.
    ``KBVQA_SIZES=cpu`` keeps the gpu code path at the cpu profile's sizes (``Profile.sizes``; the
    gpu smoke run's tiny random models never stop generating, so full sizes would take hours).
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
        sizes = os.environ.get("KBVQA_SIZES", "").strip().lower()
        if sizes not in ("", *PROFILES):
            raise ValueError(f"KBVQA_SIZES must be empty, 'cpu' or 'gpu', got {sizes!r}")
        small = sizes == "cpu"
        return Profile("gpu", "cuda", scale=1.0 if small else 4.0, max_eval=100 if small else 500, sizes=sizes)
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


def short_path(path: str) -> str:
    """``path`` without the machine's part: after ``site-packages/``, relative to the repository,
    ``../``-relative beside it (the shared samples and papers), or the file name alone."""
    text = str(path)
    if "site-packages/" in text:
        return text.rsplit("site-packages/", 1)[1]
    try:
        resolved = Path(text).resolve()
    except (OSError, RuntimeError):
        return Path(text).name
    for base, prefix in ((REPO_ROOT, ""), (REPO_ROOT.parent, "../")):
        try:
            return prefix + str(resolved.relative_to(base))
        except ValueError:
            continue
    return Path(text).name


def short_warning_paths() -> None:
    """Print warnings with ``short_path`` instead of the absolute path of the file that raised them,
    so a rendered page shows no machine's folders. ``kbvqa`` calls it on import in the book's build
    (``KBVQA_PROGRESS=0``); idempotent."""
    if getattr(warnings.formatwarning, "_kbvqa_short", False):
        return
    original = warnings.formatwarning

    def formatwarning(message, category, filename, lineno, line=None):
        return original(message, category, short_path(filename), lineno, line)

    formatwarning._kbvqa_short = True
    warnings.formatwarning = formatwarning


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
