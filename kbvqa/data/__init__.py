"""Data: one schema for every source, the procedural toy world, and loaders for real datasets."""
from kbvqa.data.schema import (
    ANSWER_TYPES,
    Document,
    KBExample,
    LiteratureItem,
    Passage,
    Query,
    open_image,
    option_letters,
)

__all__ = ["ANSWER_TYPES", "Document", "KBExample", "LiteratureItem", "Passage", "Query",
           "open_image", "option_letters"]
