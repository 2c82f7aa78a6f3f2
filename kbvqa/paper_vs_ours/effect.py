"""One effect: a paper's comparison beside ours, its direction, verdict and evidence (chapter 31).

``Effect`` holds the paper's (baseline, treatment) numbers, ours and the 95 % interval of our
difference; ``direction`` calls a difference up / down / flat, ``verdict`` compares the paper's
direction with ours, ``evidence_of`` says what made our numbers, ``paired_effect`` computes our
side from per-query records (a paired bootstrap, ``kbvqa.metrics.intervals.paired_bootstrap``).
``effect_rows`` and ``verdict_counts`` turn effects into tables.

Leaves out: reading each part's results (``parts.py``), the committed file (``effects_file.py``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kbvqa.metrics.intervals import paired_bootstrap

PAPER_FLAT = 0.5          # points: a smaller paper difference counts as flat
PARTS = ("RCTS", "SeRTS", "ReAG", "MOLT")
N_BOOT = 2000             # paired bootstrap resamples of every interval we compute
EVIDENCE = ("reader", "tiny", "hub", "scripted", "retrieval")
COUNTED = ("reader", "tiny", "hub", "retrieval")      # scripted rows illustrate, they do not count
PAIRED = f"paired bootstrap over the same query ids, {N_BOOT} resamples"


@dataclass(frozen=True)
class Effect:
    part: str                         # "RCTS", "SeRTS", "ReAG", "MOLT"
    name: str                         # what is compared, treatment vs baseline
    source: str                       # the paper's table / figure
    metric: str                       # what the numbers are (percent unless said)
    paper: tuple[float, float]        # (baseline, treatment), as printed
    ours: tuple[float, float]         # (baseline, treatment), same unit
    ours_interval: tuple[float, float] | None   # 95 % interval of our treatment - baseline
    n: int                            # our queries (paired: the ids both sides answered)
    why: str                          # where we differ and why
    evidence: str = "tiny"            # what made our numbers (``EVIDENCE``)
    interval_method: str = PAIRED     # how ``ours_interval`` was computed

    @property
    def paper_diff(self) -> float:
        return self.paper[1] - self.paper[0]

    @property
    def ours_diff(self) -> float:
        return self.ours[1] - self.ours[0]


def direction(diff: float, interval: tuple[float, float] | None = None, flat: float = 0.0) -> str:
    """"up" / "down" / "flat": by the interval when given (flat when it holds 0), else by the sign
    of ``diff`` beyond ``flat``."""
    if interval is not None:
        low, high = interval
        return "up" if low > 0 else "down" if high < 0 else "flat"
    return "up" if diff > flat else "down" if diff < -flat else "flat"


def verdict(effect: Effect) -> str:
    paper = direction(effect.paper_diff, flat=PAPER_FLAT)
    ours = direction(effect.ours_diff, effect.ours_interval)
    if ours == paper:
        return "same"
    if ours == "flat":
        return "flat"
    return "differs" if paper == "flat" else "opposite"


def load_results(path: Path) -> dict:
    """A part's committed ``results.json``; a clear ``ValueError`` when the part has not committed one."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path} is missing: the part's experiment has not committed its results yet")
    return json.loads(path.read_text())


def as_percent(x: float) -> float:
    """A fraction as a percentage rounded to 2 decimals, the unit of every effect row."""
    return round(100 * float(x), 2)


def evidence_of(provenance: dict | None, scripted: bool = False) -> str:
    """``EVIDENCE`` of a table from its provenance's ``model`` (``kbvqa.experiments.runs.model_fingerprint``)."""
    if scripted:
        return "scripted"
    model = (provenance or {}).get("model") or "none"
    if model == "none":
        return "retrieval"
    if model.startswith("reader:"):
        return "reader"
    return "tiny" if model.startswith("tiny_vlm:") or model == "unknown" else "hub"


def paired_effect(before: dict, after: dict, scale: float = 100.0):
    """(ours before, ours after, interval, n) of two {query id: value} maps on their common ids:
    the means and the paired bootstrap interval of after - before, times ``scale``."""
    ids = sorted(set(before) & set(after))
    if not ids:
        raise ValueError("the two rows share no query id")
    a, b = [float(after[i]) for i in ids], [float(before[i]) for i in ids]
    d = paired_bootstrap(a, b, n_boot=N_BOOT)
    return (round(scale * sum(b) / len(b), 2), round(scale * sum(a) / len(a), 2),
            (round(scale * d.low, 2), round(scale * d.high, 2)), len(ids))


def effect_rows(effects) -> list[dict]:
    """Plain rows: the paper's numbers, ours, both differences, both directions and the verdict."""
    def fmt(pair):
        return f"{pair[0]:g} → {pair[1]:g}"

    return [{"part": e.part, "effect": e.name, "source": e.source, "metric": e.metric, "paper": fmt(e.paper),
             "ours": fmt(e.ours), "paper Δ": round(e.paper_diff, 2), "ours Δ": round(e.ours_diff, 2),
             "ours 95% interval": "" if e.ours_interval is None
             else f"[{e.ours_interval[0]:g}, {e.ours_interval[1]:g}]",
             "direction (paper / ours)": f"{direction(e.paper_diff, flat=PAPER_FLAT)} / "
             f"{direction(e.ours_diff, e.ours_interval)}", "verdict": verdict(e), "n": e.n, "why": e.why}
            for e in effects]


def verdict_counts(effects) -> dict[str, dict[str, int]]:
    """{part: {verdict: count}}."""
    out: dict[str, dict[str, int]] = {}
    for e in effects:
        counts = out.setdefault(e.part, {})
        counts[verdict(e)] = counts.get(verdict(e), 0) + 1
    return out
