"""Cost of MCTS-HR against Vanilla-RAG on the generator (issues #5 and #18, "Cost"), in one run.

The generator is the model the RCTS chapters search with: the reader (SmolLM2-135M + our vision
tower) in the cpu profile, the hub's Qwen2-VL in the gpu profile.

For the first ``--queries`` toy multiple-choice test questions and their top-20 hybrid candidates
it measures, per query, model calls, generated completions and wall time of

- Vanilla-RAG: the top-K examples, one greedy call per query (the unit of every ratio), and the
  same queries in one batched call (context: Vanilla-RAG's throughput when queries are pooled);
- RCTS (P = 10, N_s = N_m = 5) without early stop, the search's full price and the goal's row
  (<= 8x Vanilla-RAG), at its best batching: one, three or five leaves selected and expanded
  before each batched simulate/reward pair (``rollouts_per_step``, a deviation from the paper's
  one-leaf loop, stated in chapter 13), on the first ``--full`` queries;
- RCTS with early stop (the paper's settings, our defaults), and with the official code's mutual
  rewards (context).

Both sides decode with the same ``max_new_tokens`` (64) for an answer. Then it says where RCTS's
time goes: the share of its ``vlm.generate`` seconds per purpose (simulated responses, reward
samples, the zero-shot answer) and the seconds per completion against Vanilla-RAG's. A reward
sample stops after at most 8 tokens, yet on the reader the reward calls take most of the time: they
hold ~40 distinct prompts per query (a self-check and one mutual prompt per path example for each of
the 10 leaves), each prefilled with its own images (the rows measure the share, not the prefill /
decode split). A naive loop would make ~71
requests per query (the official code's count: 1 zero-shot + 10 leaves x (1 simulation + 1
self-check + 5 mutual references)); here every step's samples share one batched call, and the
reader's samples of one prompt share its prefill (the KV cache of the shared prefix,
``kbvqa.models.generation``). Across prompts: the mutual prompts of
one leaf (``MCPromptBuilder.mutual``) all open with the query shown as a solved example whose answer
is the branch's response, and differ only in the reference question that follows: the row "shared
prefix" runs the fastest batching with ``RCTSConfig(share_prefix=True)``, which prefills that opening
once (``kbvqa.models.prefix``; issue 49's goal is 2.5x less time per question).

Candidates come from the experiment's cached retrieval (``kbvqa.rcts.settings.load_retrieval``,
computed on first use, ~1 min). ``rows()`` returns the table's ratios and counts, ``main`` prints
them. Run: ``python benchmarks/bench_rcts.py [--queries 20] [--full 4]``. One thread, so the
numbers do not depend on what else runs on the machine's other core.
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
    table["Vanilla-RAG (K = 3)"] = (counter.calls, counter.completions, seconds, len(queries), None, counter)
    pooled = CallCounter()
    _, pooled_s = _timed(lambda: vanilla_rag(vlm, queries, [cands[q.id] for q in queries], 3, builder,
                                             counter=pooled))

    def run(name, cfg, qs):
        calls = completions = stops = 0
        total, spent = 0.0, CallCounter()
        for q in qs:
            res, dt = _timed(lambda q=q: rcts_search(vlm, q, cands[q.id], cfg, builder))
            calls, completions, total = calls + res.calls, completions + res.completions, total + dt
            stops += res.early_stopped
            for purpose, secs in res.counter.seconds_by_purpose.items():
                spent.seconds_by_purpose[purpose] = spent.seconds_by_purpose.get(purpose, 0.0) + secs
        table[name] = (calls, completions, total, len(qs), stops / len(qs) if cfg.early_stop else None, spent)

    full = queries[: args.full]
    for leaves in (1, 3, 5):
        run(f"RCTS P=10, no early stop, {leaves} leaves/step", RCTSConfig(early_stop=False, rollouts_per_step=leaves),
            full)
    fastest = min((n for n in table if "leaves/step" in n), key=lambda n: table[n][2] / table[n][3])
    fastest_leaves = int(fastest.split(", ")[-1].split()[0])
    run(f"RCTS P=10, no early stop, {fastest_leaves} leaves/step, shared prefix",
        RCTSConfig(early_stop=False, rollouts_per_step=fastest_leaves, share_prefix=True), full)
    run("RCTS P=10, Ns=Nm=5, early stop", RCTSConfig(), queries)
    run("RCTS P=10, no early stop, official mutual", RCTSConfig(early_stop=False, mutual="official"), full)

    base_calls, base_completions, base_s, base_n, _, _ = table["Vanilla-RAG (K = 3)"]
    base_calls, base_s = base_calls / base_n, base_s / base_n
    out = [row("Vanilla-RAG (K = 3): calls per query", base_calls, "", note=f"{base_s:.2f} s per query",
               kind="count"),
           row("Vanilla-RAG (K = 3), all queries in one call: time / one call per query",
               pooled_s / len(queries) / base_s, "x", note=f"{len(queries)} queries pooled")]
    no_stop = [n for n in table if "no early stop," in n and n.endswith("leaves/step")]
    best = min(no_stop, key=lambda n: table[n][2] / table[n][3])
    for name, (calls, completions, secs, n, stop_rate, _) in list(table.items())[1:]:
        stop = "" if stop_rate is None else f", early-stop rate {stop_rate:.0%}"
        goal = ("<=", 8) if name == best else None
        best_note = ", the best batching of the three (the goal's row)" if name == best else ""
        out.append(row(f"{name}: time / Vanilla-RAG", secs / n / base_s, "x", goal,
                       f"{n} queries, {calls / n:.1f} calls and {completions / n:.1f} completions per query "
                       f"({calls / n / base_calls:.1f}x the calls){stop}{best_note}"))
    shared = next(n for n in table if n.endswith("shared prefix"))
    out.append(row("RCTS, no early stop: today's path / shared prefix (issue 49)",
                   (table[best][2] / table[best][3]) / (table[shared][2] / table[shared][3]), "x", (">=", 2.5),
                   "a leaf's mutual prompts and sibling paths prefill their common opening once "
                   "(kbvqa.models.prefix); fp32 on both sides"))
    calls, completions, secs, n, _, spent = table[best]
    in_generate = sum(spent.seconds_by_purpose.values())
    for purpose, purpose_s in sorted(spent.seconds_by_purpose.items(), key=lambda kv: -kv[1]):
        out.append(row(f"where RCTS's time goes ({best.split(', ')[-1]}): {purpose}", purpose_s / secs, "",
                       note=f"share of its wall time; {purpose_s / n:.2f} s per query", kind="time"))
    out.append(row(f"where RCTS's time goes ({best.split(', ')[-1]}): outside vlm.generate",
                   1 - in_generate / secs, "", note="tree bookkeeping, prompt building, parsing", kind="time"))
    per_completion = (secs / completions) / (base_s * base_n / base_completions)
    out.append(row("seconds per completion: RCTS / Vanilla-RAG", per_completion, "x",
                   note=f"{completions / n:.0f} completions per query against {base_completions / base_n:.0f}: "
                   "the time ratio is about this times the completion ratio"))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "RCTS (MCTS-HR) cost against Vanilla-RAG, per query, the generator, 1 thread")


if __name__ == "__main__":
    main()
