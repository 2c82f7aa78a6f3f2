"""Benchmark of late interaction (issue #5, RCTS Eq. 4): MaxSim throughput as a ratio of plain
matrix-multiply throughput at the same FLOPs, measured in one run.

MaxSim of a query [l_u, d] against N padded items [N, L, d] costs one product [N*L, d] x [d, l_u]
(2 * N * L * l_u * d FLOPs) plus a masked max over L and a sum over l_u. The reference is
``torch.matmul`` of exactly that product, unchunked, with nothing after it; the ratio

    (matmul seconds) / (MaxSim seconds)  =  MaxSim pairs per second / matmul pairs per second

says how much of the machine's matrix-multiply speed the scoring keeps (goal >= 0.5). Two paths:
``maxsim`` (one query x the whole knowledge base, the search path) and ``maxsim_matrix`` (many
queries x many items in bounded-memory blocks, the evaluation path). Sizes mimic the toy world's
hybrid index: 2,048 items of 50-64 tokens ([E_T; E_I]: ~12 text + 49 image tokens), d = 128.
Timings are the best of several interleaved repeats; absolute numbers depend on the machine, the
ratio much less.

``rows()`` returns the ratios and throughputs, ``main`` prints them.
Run: ``python benchmarks/bench_maxsim.py [--threads 1] [--device cpu|cuda]``.
"""
from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F
from _timing import print_rows, row


def _best_of(fns: dict, repeats: int, sync) -> dict:
    """Best wall time of each function, repeats interleaved so load changes hit all of them."""
    best = {name: float("inf") for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            sync()
            t0 = time.perf_counter()
            fn()
            sync()
            best[name] = min(best[name], time.perf_counter() - t0)
    return best


def rows(argv=None) -> list[dict]:
    from kbvqa.retrieval.late_interaction import PaddedTokens, maxsim, maxsim_matrix

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (the book's runs use 1)")
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--items", type=int, default=2048)
    ap.add_argument("--queries", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    dev = torch.device(args.device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    gen = torch.Generator().manual_seed(0)
    d, l_u = 128, 60
    lengths = torch.randint(50, 65, (args.items,), generator=gen).tolist()
    docs = PaddedTokens.from_list([F.normalize(torch.randn(n, d, generator=gen), dim=-1) for n in lengths])
    docs = PaddedTokens(docs.tokens.to(dev), docs.mask.to(dev))
    queries = F.normalize(torch.randn(args.queries, l_u, d, generator=gen), dim=-1).to(dev)
    q_padded = PaddedTokens(queries, torch.ones(queries.shape[:2], dtype=torch.bool, device=dev))
    n, length = docs.tokens.shape[:2]
    flat = docs.tokens.reshape(-1, d)
    q0_t = queries[0].T.contiguous()
    q_flat = queries.reshape(-1, d)

    # MaxSim runs on the CPU tensors it is given; on cuda the same code runs on the device
    fns = {
        "maxsim (1 query x N items)": lambda: maxsim(queries[0], docs),
        "matmul [N*L, d] x [d, l_u]": lambda: flat @ q0_t,
        "maxsim_matrix (Q x N)": lambda: maxsim_matrix(q_padded, docs),
        "matmul [Q*l_u, d] x [d, N*L]": lambda: q_flat @ flat.T,
    }
    for fn in fns.values():   # warm-up
        fn()
    t = _best_of(fns, args.repeats, sync)
    pairs_one, pairs_many = n * length * l_u, args.queries * n * length * l_u
    measured = [
        ("maxsim, one query", pairs_one / t["maxsim (1 query x N items)"], pairs_one / t["matmul [N*L, d] x [d, l_u]"]),
        ("maxsim_matrix, many queries", pairs_many / t["maxsim_matrix (Q x N)"],
         pairs_many / t["matmul [Q*l_u, d] x [d, N*L]"]),
    ]
    setting = (f"{dev}, {torch.get_num_threads()} thread(s), N={n} items padded to L={length}, l_u={l_u}, d={d}, "
               f"Q={args.queries}; best of {args.repeats}")
    out = []
    for name, ms, mm in measured:
        out.append(row(f"{name}: MaxSim pairs/s", ms, "", note=f"matmul {mm:.3g} pairs/s", kind="time"))
        out.append(row(f"{name}: MaxSim / matmul throughput", ms / mm, "x", (">=", 0.5), setting))
    return out


def main(argv=None) -> None:
    print_rows(rows(argv), "late interaction (RCTS Eq. 4): MaxSim vs matrix multiply at the same FLOPs")


if __name__ == "__main__":
    main()
