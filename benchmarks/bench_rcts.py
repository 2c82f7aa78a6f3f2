"""Cost of MCTS-HR against Vanilla-RAG on the tiny model (issue #5, "Cost"), in one run.

For the first ``--queries`` toy multiple-choice test questions and their top-20 hybrid candidates
it measures, per query, model calls, generated completions and wall time of

- Vanilla-RAG: the top-K examples, one greedy call;
- RCTS (P = 10, N_s = N_m = 5, early stop on: the paper's settings, our defaults);
- RCTS without early stop (the search's full price), on the first ``--full`` queries;
- the same with ``rollouts_per_step = 3`` (leaf-parallel: fewer, fuller calls);

and prints the RCTS / Vanilla-RAG ratios (goal: RCTS <= 8x Vanilla-RAG in wall time) and the
early-stop rate. A naive loop would make ~71 requests per query (the official code's count:
1 zero-shot + 10 leaves x (1 simulation + 1 self-check + 5 mutual references)); here every step's
samples share one batched call. Candidates come from the experiment's cached retrieval
(``kbvqa.rcts.settings.load_retrieval``, computed on first use, ~1 min).

``rows()`` returns the table's ratios and counts, ``main`` prints them.
Run: ``python benchmarks/bench_rcts.py [--queries 20] [--full 4]``. One thread, so the numbers do
not depend on what else runs on the machine's other core.
"""
from __future__ import annotations

import argparse
import time

import torch
from _timing import print_rows, row


def _timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def rows(argv=None) -> list[dict]:
    from kbvqa.data import get_world
    from kbvqa.models.checkpoints import load_vlm
    from kbvqa.rcts.baselines import vanilla_rag
    from kbvqa.rcts.mcts_hr import RCTSConfig, rcts_search
    from kbvqa.rcts.prompts import CallCounter, MCPromptBuilder
    from kbvqa.rcts.settings import load_retrieval

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--queries", type=int, default=20, help="queries for Vanilla-RAG and RCTS")
    parser.add_argument("--full", type=int, default=4, help="queries for RCTS without early stop")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    world = get_world(0)
    vlm = load_vlm("generator")
    builder = MCPromptBuilder(world)
    kb = {e.id: e for e in world.mc_kb}
    retrieval = load_retrieval(world)
    queries = [q for q in world.mc_test if q.id in retrieval["candidates"]][: args.queries]
    cands = {q.id: [(kb[i], s) for i, s in retrieval["candidates"][q.id]] for q in queries}
    vanilla_rag(vlm, queries[:1], [cands[queries[0].id]], 3, builder)          # warm-up

    table = {}
    counter, seconds = CallCounter(), 0.0
    for q in queries:
        _, dt = _timed(lambda q=q: vanilla_rag(vlm, [q], [cands[q.id]], 3, builder, counter=counter))
        seconds += dt
    table["Vanilla-RAG (K = 3)"] = (counter.calls, counter.completions, seconds, len(queries), None)

    def run(name, cfg, qs):
        calls = completions = stops = 0
        total = 0.0
        for q in qs:
            res, dt = _timed(lambda q=q: rcts_search(vlm, q, cands[q.id], cfg, builder))
            calls, completions, total = calls + res.calls, completions + res.completions, total + dt
            stops += res.early_stopped
        table[name] = (calls, completions, total, len(qs), stops / len(qs) if cfg.early_stop else None)

    run("RCTS P=10, Ns=Nm=5, early stop", RCTSConfig(), queries)
    full = queries[: args.full]
    run("RCTS P=10, no early stop", RCTSConfig(early_stop=False), full)
    run("RCTS P=10, no early stop, 3 leaves/step", RCTSConfig(early_stop=False, rollouts_per_step=3), full)
    run("RCTS P=10, no early stop, official mutual", RCTSConfig(early_stop=False, mutual="official"), full)

    base_calls, _, base_s, base_n, _ = table["Vanilla-RAG (K = 3)"]
    base_calls, base_s = base_calls / base_n, base_s / base_n
    out = [row("Vanilla-RAG (K = 3): calls per query", base_calls, "", note=f"{base_s:.2f} s per query",
               kind="count")]
    for name, (calls, completions, secs, n, stop_rate) in list(table.items())[1:]:
        stop = "" if stop_rate is None else f", early-stop rate {stop_rate:.0%}"
        goal = ("<=", 8) if name == "RCTS P=10, Ns=Nm=5, early stop" else None
        out.append(row(f"{name}: time / Vanilla-RAG", secs / n / base_s, "x", goal,
                       f"{n} queries, {calls / n:.1f} calls and {completions / n:.1f} completions per query "
                       f"({calls / n / base_calls:.1f}x the calls){stop}"))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "RCTS (MCTS-HR) cost against Vanilla-RAG, per query, tiny generator, 1 thread")


if __name__ == "__main__":
    main()
