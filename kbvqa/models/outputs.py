"""What the VLM interface returns from sampling (``Generations``), apart from the code that samples."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Generations:
    """What ``generate(..., details=True)`` returns; every field is indexed [prompt][sample]."""

    texts: list[list[str]]             # decoded completions (stop string removed unless include_stop)
    token_ids: list[list[list[int]]]   # generated ids up to and including EOS / the stop token
    num_tokens: list[list[int]]        # len(token_ids[i][j])
    finished: list[list[bool]]         # True if EOS or a stop string ended it (not max_new_tokens)
