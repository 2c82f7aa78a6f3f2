"""kbvqa: knowledge-based visual question answering with retrieval, rebuilt step by step.

Subpackages follow the data flow every chapter shares (see the book's introduction):
``data`` (schema, toy world, real loaders) -> ``retrieval`` -> ``search``/``critic``/``kbvqa.molt.ladder``
-> ``models`` (one VLM interface) -> ``metrics``/``rewards`` -> ``rl`` -> ``viz``.
"""
from kbvqa.config import get_profile, seed_everything

__all__ = ["get_profile", "seed_everything"]
__version__ = "0.1.0"
