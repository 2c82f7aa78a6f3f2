"""Where the tests find ``../shared/data-samples`` (real data, never copied into the repo).

``sample("scienceqa")`` returns the path, or skips the calling test when the folder is absent, so
``make test`` passes with and without the samples (every skip is listed with its reason in the test
summary: ``-rs`` in ``pyproject.toml``). ``KBVQA_SAMPLES`` overrides the location;
``KBVQA_REQUIRE_SAMPLES=1`` turns a missing folder into a failure, as ``KBVQA_REQUIRE_BOOK`` does for
the browser check, so a machine that has the samples cannot silently test without them.
"""
import os
from pathlib import Path

import pytest

from kbvqa.config import REPO_ROOT

SAMPLES = Path(__import__("os").environ.get("KBVQA_SAMPLES") or REPO_ROOT.parent / "shared" / "data-samples")


def missing_samples(reason: str) -> None:
    """Skip with ``reason``, or fail when ``KBVQA_REQUIRE_SAMPLES=1``."""
    if os.environ.get("KBVQA_REQUIRE_SAMPLES") == "1":
        pytest.fail(f"{reason}, and KBVQA_REQUIRE_SAMPLES=1 requires them")
    pytest.skip(reason)


def sample(sub: str) -> Path:
    """``SAMPLES / sub``, or a skip (a failure with ``KBVQA_REQUIRE_SAMPLES=1``) naming the path."""
    path = SAMPLES / sub
    if not path.exists():
        missing_samples(f"offline samples not found at {path} (set KBVQA_SAMPLES)")
    return path
