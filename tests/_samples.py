"""Where the tests find ``../shared/data-samples`` (real data, never copied into the repo).

``sample("scienceqa")`` returns the path, or skips the calling test when the folder is absent, so
``make test`` passes with and without the samples. ``KBVQA_SAMPLES`` overrides the location.
"""
from pathlib import Path

import pytest

from kbvqa.config import REPO_ROOT

SAMPLES = Path(__import__("os").environ.get("KBVQA_SAMPLES") or REPO_ROOT.parent / "shared" / "data-samples")


def sample(sub: str) -> Path:
    """``SAMPLES / sub``, or ``pytest.skip`` with the reason when it does not exist."""
    path = SAMPLES / sub
    if not path.exists():
        pytest.skip(f"offline samples not found at {path} (set KBVQA_SAMPLES)")
    return path
