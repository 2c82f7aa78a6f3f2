"""The package's layer order, as data: which module may import which (``tests/test_layers.py`` holds it).

A module imports only modules of its own rank or a lower one, and no import cycle exists at any
rank. Ranks, lowest first (``RANKS``: module or package prefix -> rank; the longest prefix wins):

0. ``config``, ``layers``, ``experiments.runs`` (provenance: git commit, seed, machine; the one
   run-file format) and ``experiments.plans`` (pre-registered plans): plain Python, read by everything above.
1. ``data``: one schema, the toy world, the real datasets.
2. ``prompts`` (the papers' prompt files and formats) and ``parsers`` (model output -> answers).
3. ``models``: the one VLM interface, its processors, encoders and the tiny model's task mixture.
4. shared machinery by role: ``retrieval``, ``search`` (UCT, bandits), ``rl`` (SFT, GRPO with reward
   functions passed in, PPO), ``metrics`` (official scorers, the answer judge, AUC, intervals),
   ``experiments.work`` (the work folder a long run resumes from: finished rows, trained weights,
   SFT checkpoints).
5. the cpu profile's checkpoints: ``reader``, the tiny model (``models.tiny``, ``models.tiny_recipe``,
   ``models.model_card``) and ``load_vlm`` by role (``models.checkpoints``, re-exported by
   ``kbvqa.models``, with ``models.gpu_budget``, the gpu profile's memory plan over those roles):
   they train and evaluate with everything below.
6. the paper packages ``rcts``, ``serts``, ``reag``, ``molt``: each paper's method, rewards, numbers
   and results loaders, on the shared layers.
7. ``pipeline``: one KB-VQA pipeline from the four papers' parts.
8. ``experiments``: the runners (``python -m``) that write ``data/experiments/``.
9. ``paper_vs_ours``: every part's effects next to the papers', read from the experiments.
10. ``viz``: pure ``draw_*`` functions over everything above.

``EXCEPTIONS`` lists the upward imports that are allowed, each inside a function and with its
reason; nothing else may point up.
"""
from __future__ import annotations

RANKS = {
    "kbvqa": 0, "kbvqa.config": 0, "kbvqa.layers": 0, "kbvqa.experiments.runs": 0, "kbvqa.experiments.plans": 0,
    "kbvqa.data": 1,
    "kbvqa.prompts": 2, "kbvqa.parsers": 2,
    "kbvqa.models": 3,
    "kbvqa.retrieval": 4, "kbvqa.search": 4, "kbvqa.rl": 4, "kbvqa.metrics": 4, "kbvqa.experiments.work": 4,
    "kbvqa.reader": 5, "kbvqa.models.tiny": 5, "kbvqa.models.tiny_recipe": 5, "kbvqa.models.model_card": 5,
    "kbvqa.models.checkpoints": 5, "kbvqa.models.gpu_budget": 5, "kbvqa.models.t4_time": 5,
    "kbvqa.rcts": 6, "kbvqa.serts": 6, "kbvqa.reag": 6, "kbvqa.molt": 6,
    "kbvqa.pipeline": 7,
    "kbvqa.experiments": 8,
    "kbvqa.paper_vs_ours": 9,
    "kbvqa.viz": 10,
}
# Package __init__ files whose rank differs from their modules' (they re-export a higher module).
PACKAGE_RANKS = {"kbvqa.models": 5}

# (importer, imported) -> why this import may point up (or close a cycle); each is inside a function.
EXCEPTIONS = {
    ("kbvqa.models.pretrain_mc_lit", "kbvqa.retrieval.bm25"):
        "the toy literature's search is the book's one BM25 (BM25Index); imported lazily, when a SeRTS "
        "task first searches",
    ("kbvqa.reader.tasks", "kbvqa.molt.sft"):
        "the reader learns MOLT's ladder format (Table 14 transcripts); imported lazily, only when the "
        "reader's task mixture is built",
    ("kbvqa.reader.card_rows", "kbvqa.molt.sft"):
        "the reader's card checks MOLT ladder transcripts it writes; only when the card is evaluated",
    ("kbvqa.reader.card_rows", "kbvqa.molt.rewards"):
        "the card's ladder validity is MOLT Eq. 9-10; only when the card is evaluated",
    ("kbvqa.reader.card", "kbvqa.molt.rewards"):
        "the reader's card scores ladder validity with MOLT Eq. 9-11; only when the card is evaluated",
    ("kbvqa.retrieval.subject_grounding", "kbvqa.models.checkpoints"):
        "the grounder of the active profile is loaded by role (``load_vlm``), which may build the reader "
        "(transformers' Idefics3 and the GGUF base, heavy); only when no grounder model is passed in",
}


def rank_of(module: str) -> int:
    """The rank of a module (dotted name), by its longest prefix in ``RANKS``."""
    if module in PACKAGE_RANKS:
        return PACKAGE_RANKS[module]
    parts = module.split(".")
    for i in range(len(parts), 0, -1):
        prefix = ".".join(parts[:i])
        if prefix in RANKS:
            return RANKS[prefix]
    raise KeyError(f"{module} has no rank: add it (or its package) to kbvqa.layers.RANKS")
