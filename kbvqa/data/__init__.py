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

from kbvqa.data.datasets import (  # noqa: E402  (real datasets, after the schema they fill)
    REGISTRY,
    DatasetInfo,
    DatasetNotAvailable,
    dataset_info,
    download_official_files,
    load_dataset,
    load_knowledge_base,
)

__all__ += ["REGISTRY", "DatasetInfo", "DatasetNotAvailable", "dataset_info",
            "download_official_files", "load_dataset", "load_knowledge_base"]

from kbvqa.data.toyworld import (  # noqa: E402  (the toy world, built on the schema)
    TOYWORLD_VERSION,
    ToyWorld,
    ToyWorldConfig,
    build_world,
    get_world,
    load_world,
    timed_build,
)

__all__ += ["TOYWORLD_VERSION", "ToyWorld", "ToyWorldConfig", "build_world",
            "get_world", "load_world", "timed_build"]

# What the chapters use beyond the core API (chapter 02): the sample tables, BioASQ's corpus coverage.
from kbvqa.data.real_bioasq import corpus_coverage  # noqa: E402
from kbvqa.data.show import HANDMADE_ROWS, find_samples, pick_source, query_table, show_query  # noqa: E402

__all__ += ["HANDMADE_ROWS", "corpus_coverage", "find_samples", "pick_source", "query_table", "show_query"]
