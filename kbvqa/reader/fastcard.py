"""The accuracy condition of the reader's fast path (issue 49, item 4): the whole card on both paths.

A fast path (another precision, prefix reuse) is used only if it keeps the reader's answers:

- for every card row, the 95 % paired-bootstrap interval of (fast - fp32) over the same queries lies
  within ±``ROW_TOLERANCE`` (3 points);
- the three KB-VQA rows (gold passage, ten passages, no passage) each move by at most
  ``KBVQA_TOLERANCE`` (1.5 points);
- the critic's mean |ΔP(Yes)| over the card's critic prompts is at most ``CRITIC_TOLERANCE`` (0.02).

``compare_outcomes`` checks that on two ``evaluate_card`` results (their per-query ``outcomes``);
``python -m kbvqa.reader.fastcard [--precision auto] [--n 200] [--work DIR]`` evaluates the card on
the fast path (first: bf16 needs a machine where ``computes_bf16``) and on fp32 (the committed path,
with per-query outcomes), each finished evaluation kept in ``--work`` (``data/reader/fastcard/``,
committed) and, while one runs, each finished model pass in ``<evaluation>.steps.json`` (commit it
too when a session ends mid-evaluation), so that a stopped run, in this session or a later one,
resumes at the pass it had not finished, and writes
``evaluation_fast`` into ``data/reader/card.json`` (``evaluation``, fp32, is kept): the fast path's
rows, the comparison, ``accepted``, the precision and the machine. Every path measured is reported,
the ones that fail too.

Leaves out: switching the default (``kbvqa.models.precision.DEFAULT_PRECISION`` stays fp32 until a
machine's ``evaluation_fast`` is accepted and committed).
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import time
from pathlib import Path

import numpy as np

ROW_TOLERANCE = 0.03
KBVQA_TOLERANCE = 0.015
CRITIC_TOLERANCE = 0.02
KBVQA_ROWS = ("kbvqa_gold_passage_acc", "kbvqa_10_passages_acc", "kbvqa_no_passage_acc")
N_BOOT = 2000


def _paired_interval(a: list[float], b: list[float], seed: int = 0) -> tuple[float, float, float]:
    """(mean of a - b, 2.5 % and 97.5 % bootstrap quantiles), seeded."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    means = d[np.random.default_rng(seed).integers(0, len(d), size=(N_BOOT, len(d)))].mean(axis=1)
    return float(d.mean()), float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def compare_outcomes(reference: dict, fast: dict) -> dict:
    """``{"rows": {row: {...}}, "critic_mean_abs_dp": x, "accepted": bool, "failed": [...]}`` for two
    ``evaluate_card`` results' ``outcomes`` (the same queries in the same order). A row whose
    outcomes differ in length raises ``ValueError`` naming it."""
    ref, new = reference.get("outcomes") or {}, fast.get("outcomes") or {}
    if not ref or not new:
        raise ValueError("both evaluations need per-query 'outcomes' (kbvqa.reader.card.evaluate_card)")
    rows, failed = {}, []
    for row in sorted(set(ref) & set(new)):
        if len(ref[row]) != len(new[row]):
            raise ValueError(f"row {row!r}: {len(ref[row])} fp32 outcomes against {len(new[row])} on the fast path")
        if row == "critic_p_yes":
            continue
        diff, low, high = _paired_interval(new[row], ref[row])
        tolerance = KBVQA_TOLERANCE if row in KBVQA_ROWS else ROW_TOLERANCE
        ok = -ROW_TOLERANCE <= low and high <= ROW_TOLERANCE and (row not in KBVQA_ROWS or abs(diff) <= tolerance)
        rows[row] = {"fp32": float(np.mean(ref[row])), "fast": float(np.mean(new[row])), "diff": round(diff, 4),
                     "low": round(low, 4), "high": round(high, 4), "ok": ok}
        if not ok:
            failed.append(row)
    dp = None
    if "critic_p_yes" in ref and "critic_p_yes" in new:
        dp = float(np.mean(np.abs(np.asarray(new["critic_p_yes"]) - np.asarray(ref["critic_p_yes"]))))
        if dp > CRITIC_TOLERANCE:
            failed.append("critic_p_yes")
    return {"rows": rows, "critic_mean_abs_dp": dp, "failed": failed, "accepted": not failed}


def _pair(a: float, b: float) -> str:
    """``"a -> b"`` with the fewest decimals (3 to 8) at which the two differ, so that a real
    difference never prints as ``0.631 -> 0.631``."""
    for digits in range(3, 9):
        left, right = f"{a:.{digits}f}", f"{b:.{digits}f}"
        if left != right:
            break
    return f"{left} -> {right}"


def comparison_markdown(card: dict) -> str:
    """The accuracy condition of every fast path in ``card["evaluation_fast"]`` as Markdown (the
    benchmarks page includes it): per row fp32, fast, the difference and its 95 % paired-bootstrap
    interval, then the critic's mean |ΔP(Yes)|, the verdict, the whole card's time on each path and
    the provenance."""
    out = []
    for name, entry in sorted((card.get("evaluation_fast") or {}).items()):
        comparison, seconds = entry["comparison"], entry.get("seconds") or {}
        verdict = "accepted" if entry["accepted"] else f"refused (fails {', '.join(comparison['failed'])})"
        out += [f"**{name}**: {verdict}. {entry['n_queries']} queries a row; made at commit "
                f"`{str(entry.get('commit'))[:10]}` on {entry.get('date')}, {entry['machine'].get('platform')}, "
                f"{entry['machine'].get('threads')} threads, computes_bf16 {entry['machine'].get('computes_bf16')}.",
                "", "| row | fp32 | fast | fast - fp32 | 95 % interval | within the condition |",
                "|---|---:|---:|---:|---|---|"]
        for row, r in comparison["rows"].items():
            out.append(f"| {row} | {r['fp32']:.3f} | {r['fast']:.3f} | {r['diff']:+.3f} | "
                       f"[{r['low']:+.3f}, {r['high']:+.3f}] | {'yes' if r['ok'] else '**no**'} |")
        dp = comparison.get("critic_mean_abs_dp")
        out += ["", rf"Critic mean \|ΔP(Yes)\| {dp:.4f} (condition <= {CRITIC_TOLERANCE})." if dp is not None
                else "", ""]
        if seconds.get("fast") and seconds.get("fp32"):
            out += [f"The whole card took {seconds['fp32']:.0f} s on fp32 and {seconds['fast']:.0f} s on this "
                    f"path: {seconds['fp32'] / seconds['fast']:.2f}x.", ""]
        drift = entry.get("fp32_rerun_differs_from_evaluation")
        if drift is not None:
            out += ["The fp32 rerun reproduces the committed `evaluation` on every row." if not drift else
                    f"The fp32 rerun differs from the committed `evaluation` on {len(drift)} rows: "
                    + ", ".join(f"{k} {_pair(a, b)}" for k, (a, b) in sorted(drift.items())) + ".", ""]
    return "\n".join(out) if out else "No fast path has been measured on the whole card yet.\n"


def _finished(path: Path, precision: str, share_prefix: bool, n: int) -> bool:
    """Whether ``path`` holds a finished evaluation of that path and size (a committed bf16 evaluation
    is read back on a machine that could not compute it: only fp32 is left to run there)."""
    if not path.exists():
        return False
    cached = json.loads(path.read_text())
    return cached.get("n_queries") == n and cached.get("path") == [precision, share_prefix]


def _evaluation(path: Path, precision: str, share_prefix: bool, n: int, threads: int) -> dict:
    """The card evaluated on one path, read back from ``path`` when a previous run finished it."""
    import torch

    from kbvqa.data import get_world
    from kbvqa.experiments.runs import git_commit
    from kbvqa.models.loading import computes_bf16
    from kbvqa.reader.card import evaluate_card
    from kbvqa.reader.ship import load_reader

    if _finished(path, precision, share_prefix, n):
        return json.loads(path.read_text())
    torch.set_num_threads(threads)
    start = time.perf_counter()
    partial = path.with_suffix(".steps.json")       # the passes a stopped run finished
    saved = json.loads(partial.read_text()) if partial.exists() else {}
    steps = saved.get("steps", {}) if saved.get("path") == [precision, share_prefix, n] else {}
    before = saved.get("seconds", 0.0) if steps else 0.0

    def keep(done):
        partial.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(partial, {"path": [precision, share_prefix, n], "steps": done,
                                "seconds": before + time.perf_counter() - start})

    vlm = load_reader(precision=precision)
    evaluation = evaluate_card(vlm, get_world(0), n=n, share_prefix=share_prefix, steps=steps, on_step=keep)
    evaluation["path"] = [vlm.precision, share_prefix]
    evaluation["provenance"] = {"commit": git_commit(), "seconds": round(before + time.perf_counter() - start, 1),
                                "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
                                "platform": platform.platform(), "torch": torch.__version__, "threads": threads,
                                "computes_bf16": computes_bf16(torch.device("cpu"))}
    path.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(path, evaluation)
    partial.unlink(missing_ok=True)
    return evaluation


def _plain(value):
    """JSON for numpy scalars and arrays (a resumed pass must read back numbers, not strings)."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    return str(value)


def _write_atomic(path: Path, data: dict) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, default=_plain))
    tmp.replace(path)


def main(argv=None) -> dict:
    from kbvqa.experiments.runs import git_commit, positive_int
    from kbvqa.models.precision import PRECISIONS, resolve_precision
    from kbvqa.reader.ship import READER_DIR

    parser = argparse.ArgumentParser(prog="python -m kbvqa.reader.fastcard", description=__doc__.split("\n")[0])
    parser.add_argument("--precision", default="auto", choices=PRECISIONS, help="the fast path's precision")
    parser.add_argument("--no-share-prefix", action="store_true", help="measure the precision alone")
    parser.add_argument("--n", type=positive_int, default=200, help="test queries per row (the card's 200)")
    parser.add_argument("--threads", type=positive_int, default=2)
    parser.add_argument("--work", type=Path, default=READER_DIR / "fastcard",
                        help="where each finished evaluation is kept (committed with the card, so that a "
                             "later session resumes at the evaluation this one had not finished)")
    parser.add_argument("--card", type=Path, default=READER_DIR / "card.json")
    args = parser.parse_args(argv)
    if args.n < 1 or args.threads < 1:
        parser.error("--n and --threads must be positive")
    import torch

    share = not args.no_share_prefix
    from kbvqa.models.loading import computes_bf16

    # auto: the path this hardware could use (auto's own choice waits for this very comparison)
    hardware = "bf16" if computes_bf16(torch.device("cpu")) else "fp32"
    precision = args.precision if args.precision != "auto" else hardware
    if not _finished(args.work / f"{precision}{'-shared' if share else ''}-n{args.n}.json", precision, share, args.n):
        precision = resolve_precision(precision, torch.device("cpu"))    # bf16 needs the hardware to run it
    # The fast path first: it may need this machine (bf16 only where computes_bf16); fp32 runs anywhere.
    fast = _evaluation(args.work / f"{precision}{'-shared' if share else ''}-n{args.n}.json", precision, share,
                       args.n, args.threads)
    reference = _evaluation(args.work / f"fp32-n{args.n}.json", "fp32", False, args.n, args.threads)
    comparison = compare_outcomes(reference, fast)
    card = json.loads(args.card.read_text())
    rows = {k: v for k, v in fast.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    committed = card.get("evaluation", {})
    drift = {k: [committed[k], v] for k, v in reference.items()
             if isinstance(v, float) and isinstance(committed.get(k), float) and abs(committed[k] - v) > 1e-9}
    card.setdefault("evaluation_fast", {})[f"{precision}{'+shared_prefix' if share else ''}"] = {
        "precision": precision, "share_prefix": share, "n_queries": args.n, "rows": rows,
        "comparison": comparison, "accepted": comparison["accepted"], "commit": git_commit(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "seconds": {"fast": fast.get("provenance", {}).get("seconds"),
                    "fp32": reference.get("provenance", {}).get("seconds")},
        "fp32_rerun_differs_from_evaluation": drift,
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "threads": args.threads,
                    "computes_bf16": fast.get("provenance", {}).get("computes_bf16")}}
    args.card.write_text(json.dumps(card, indent=1, default=str))
    (args.work / "comparison.md").write_text(comparison_markdown(card))
    print(json.dumps({"accepted": comparison["accepted"], "failed": comparison["failed"],
                      "critic_mean_abs_dp": comparison["critic_mean_abs_dp"]}, indent=1))
    return comparison


if __name__ == "__main__":
    main()
