"""MOLT's candidate pipeline on the whole toy test split: Recall@K per stage (Tab. 2/3 analogue).

``run(world, encoders, config)`` runs ``CandidatePipeline`` (coarse top-K over the summaries,
fusion re-scoring kept at length K so that every Recall@K <= K is read off one run, the oracle
passage extractor) over every ``kbvqa_test`` query and returns the recall curves, the gold ranks
per query (chapter 26 draws its schedule analysis from the fused ranks) and provenance.
``write_results`` / ``load_results`` keep it as ``data/experiments/molt/candidates.json``.

Run: ``python -m kbvqa.experiments.molt_candidates`` (about a minute on one thread).
Leaves out: the model's passage extractor and grounder (model calls: chapter 25 runs them live on
a few queries), the tournament.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "data" / "experiments" / "molt" / "candidates.json"
KS = tuple(range(1, 21))


def doc_image_of(world, size: int = 56):
    """The document image the candidates carry: the page's main picture at the tiny model's size."""
    from kbvqa.prompts.formats import view_ref

    return lambda d: view_ref(world, d.meta["image_id"], size)


def pipeline_for(world, encoders=None, k: int = 20, n: int | None = None):
    """``CandidatePipeline`` over the toy knowledge base; ``n`` defaults to ``k`` (a full fused list)."""
    from kbvqa.models.encoders import get_encoders
    from kbvqa.molt.candidates import CandidateConfig, CandidatePipeline

    return CandidatePipeline(world.documents, encoders or get_encoders("cpu"), CandidateConfig(k=k, n=n or k),
                             doc_image=doc_image_of(world))


def candidate_sets(world, pipeline, queries, n: int | None = None):
    """One ``CandidateSet`` per query with the oracle passage extractor; ``n`` overrides the
    pipeline's fused length (the index and the token cache are shared, nothing is rebuilt)."""
    from kbvqa.molt.candidates import oracle_extractor

    if n is not None:
        pipeline = copy.copy(pipeline)
        pipeline.config = dataclasses.replace(pipeline.config, n=n)
    return [pipeline.run(q, oracle_extractor(world, q)) for q in queries]


def run(seed: int = 0, k: int = 20, every: int = 1) -> dict:
    """Recall curves and gold ranks over ``world.kbvqa_test[::every]``."""
    from kbvqa.data import get_world
    from kbvqa.experiments.runs import provenance
    from kbvqa.molt.analysis import gold_ranks, recall_curves

    start = time.perf_counter()
    world = get_world(seed)
    queries = world.kbvqa_test[::every]
    pipeline = pipeline_for(world, k=k)
    sets = candidate_sets(world, pipeline, queries)
    ks = [x for x in KS if x <= k]
    return {"ks": ks, "recall": recall_curves(queries, sets, ks),
            "gold_ranks": {"query_ids": [q.id for q in queries], **gold_ranks(queries, sets)},
            "config": {"k": k, "n": k, "extractor": "oracle", "encoders": "cpu (toy)", "image_px": 56,
                       "split": "kbvqa_test", "every": every, "queries": len(queries)},
            "provenance": provenance(seed, None, wall_seconds=round(time.perf_counter() - start, 1),
                                     command=f"python -m kbvqa.experiments.molt_candidates --k {k} --every {every}")}


def write_results(results: dict, path: Path = RESULTS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    return path


def load_results(path: Path = RESULTS) -> dict:
    """The committed results (``FileNotFoundError`` with the command to make them if absent)."""
    if not Path(path).exists():
        raise FileNotFoundError(f"{path} is missing: run `python -m kbvqa.experiments.molt_candidates`")
    return json.loads(Path(path).read_text())


def main(argv=None) -> dict:
    import torch

    ap = argparse.ArgumentParser(description="MOLT candidate pipeline: Recall@K per stage on the toy test split.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--k", type=int, default=20, help="coarse top-K (the fused list is kept at length K)")
    ap.add_argument("--every", type=int, default=1, help="use every n-th test query")
    ap.add_argument("--out", type=Path, default=RESULTS)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    results = run(args.seed, args.k, args.every)
    print(json.dumps({s: [round(v, 3) for v in r] for s, r in results["recall"].items()}))
    print("wrote", write_results(results, args.out))
    return results


if __name__ == "__main__":
    main()
