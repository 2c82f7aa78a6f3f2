"""kbvqa: knowledge-based visual question answering with retrieval, rebuilt step by step.

Subpackages follow the data flow every chapter shares (see the book's introduction):
``data`` (schema, toy world, real loaders) -> ``retrieval`` -> ``search``/``critic``/``kbvqa.molt.ladder``
-> ``models`` (one VLM interface) -> ``metrics``/``rewards`` -> ``rl`` -> ``viz``.
"""
import os as _os

from kbvqa.config import get_profile, seed_everything, short_warning_paths

if _os.environ.get("KBVQA_PROGRESS") == "0":     # the book's build: pages show no machine's paths
    short_warning_paths()

__all__ = ["get_profile", "seed_everything"]
__version__ = "0.1.0"
