"""MOLT's candidate pipeline on the whole toy test split: Recall@K per stage (Tab. 2/3 analogue).

The runner of ``python -m kbvqa.experiments.molt_candidates``: ``run(seed, k, every)`` returns the
recall curves at every K in ``KS`` up to ``k``, the gold ranks and provenance (oracle extractor);
``model_extraction`` measures the judge role's model as the extractor (``--extractor model``); ``write_results``
writes them to ``data/experiments/molt/candidates.json``; ``main`` is the command line.

Leaves out: what the experiment is (this package's ``__init__``), the pipeline on the toy world and
the loader (``kbvqa.molt.candidates``), recall curves and gold ranks (``kbvqa.molt.analysis``).
"""
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from statistics import mean

from kbvqa.data import get_world
from kbvqa.experiments.runs import model_fingerprint, non_negative_int, positive_int, provenance
from kbvqa.models.checkpoints import load_vlm
from kbvqa.molt.analysis import gold_ranks, recall_curves
from kbvqa.molt.candidates import RESULTS, candidate_sets, pipeline_for

KS = tuple(range(1, 21))


def run(seed: int = 0, k: int = 20, every: int = 1) -> dict:
    """Recall curves and gold ranks over ``world.kbvqa_test[::every]``."""

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
            "provenance": provenance(seed, model="none (toy encoders, oracle extractor)",
                                     wall_seconds=round(time.perf_counter() - start, 1),
                                     command=f"python -m kbvqa.experiments.molt_candidates --k {k} --every {every}")}


def model_extraction(world, judge, every: int = 4, n: int = 5, k: int = 20) -> dict:
    """The judge as Table 13's passage extractor on every ``every``-th test query's fused top-``n``
    documents (all prompts batched): how often it names the section the oracle names, and the gold
    passage's recall among the ``n`` candidates with its sections against the oracle's."""

    if every < 1 or n < 1:
        raise ValueError(f"need every >= 1 and n >= 1, got {every}, {n}")
    start = time.perf_counter()
    queries = world.kbvqa_test[::every]
    pipeline = pipeline_for(world, k=k)
    by_model = candidate_sets(world, pipeline, queries, n=n, extractor_model=judge)
    by_oracle = candidate_sets(world, pipeline, queries, n=n)
    agree = [m.sections[d] == o.sections[d] for m, o in zip(by_model, by_oracle) for d in o.sections]

    def passage_recall(sets):
        return mean(bool(set(q.evidence_ids) & {c.passage_id for c in s.candidates}) for q, s in zip(queries, sets))

    return {"every": every, "n": n, "k": k, "queries": len(queries), "documents": len(agree),
            "section_agreement": round(mean(agree), 4), "passage_recall_model": round(passage_recall(by_model), 4),
            "passage_recall_oracle": round(passage_recall(by_oracle), 4), "model": model_fingerprint(judge),
            "seconds": round(time.perf_counter() - start, 1)}


def write_results(results: dict, path: Path = RESULTS) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1) + "\n")
    return path


def main(argv=None) -> dict:
    import torch

    ap = argparse.ArgumentParser(description="MOLT candidate pipeline: Recall@K per stage on the toy test split.")
    ap.add_argument("--seed", type=non_negative_int, default=0)
    ap.add_argument("--k", type=positive_int, default=20, help="coarse top-K (the fused list is kept at length K)")
    ap.add_argument("--every", type=positive_int, default=1, help="use every n-th test query")
    ap.add_argument("--out", type=Path, default=RESULTS)
    ap.add_argument("--extractor", choices=("oracle", "model"), default="oracle",
                    help="model: also measure the judge role's model as Table 13's extractor (model_extraction)")
    ap.add_argument("--extract-every", type=int, default=4, help="model extractor: every n-th test query")
    ap.add_argument("--extract-n", type=positive_int, default=5,
                    help="model extractor: the fused top-N documents it reads")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    results = run(args.seed, args.k, args.every)
    if args.extractor == "model":
        results["model_extraction"] = model_extraction(get_world(args.seed), load_vlm("judge"), args.extract_every,
                                                       args.extract_n, args.k)
        results["provenance"]["command"] += (f" --extractor model --extract-every {args.extract_every} "
                                             f"--extract-n {args.extract_n}")
        print("model extraction:", results["model_extraction"])
    print(json.dumps({s: [round(v, 3) for v in r] for s, r in results["recall"].items()}))
    print("wrote", write_results(results, args.out))
    return results


if __name__ == "__main__":
    main()
