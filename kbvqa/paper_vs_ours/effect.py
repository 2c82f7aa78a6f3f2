"""One effect: a paper's comparison beside ours, its direction, verdict and evidence (chapter 31).

``Effect`` holds the paper's (baseline, treatment) numbers, ours and the 95 % interval of our
difference, and since issue 48 what the records say produced it (``mechanism``), whether the toy
world allows the paper's premise (``comparable``), the untrained rung beside trained ones
(``reference``), the queries the paper's difference would need (``n_needed``) and the plan it ran
under. ``direction`` calls a difference up / down / flat; ``verdict`` is the strict rule: "same" only
when the paper moves (beyond ``PAPER_FLAT``) and ours moves its way with an interval that excludes 0,
"n/a (paper flat)" when the paper does not move (never counted), else "opposite" or "flat";
``lenient_verdict`` is the rule before (flat against flat was "same"). ``counted`` says whether a row
counts, ``strict_count`` gives "same" over counted rows. ``evidence_of`` says what made our numbers;
``paired_effect`` and ``paired_spread`` compute our side from per-query records (a paired bootstrap,
``kbvqa.metrics.intervals.paired_bootstrap``; ψ and σ_d for ``n_needed_paired`` /
``n_needed_continuous``). ``effect_rows`` and ``verdict_counts`` turn effects into tables.

Leaves out: reading each part's results (``parts.py``), the committed file (``effects_file.py``).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

from kbvqa.experiments.runs import read_json
from kbvqa.metrics.intervals import paired_bootstrap, paired_sample_size

PAPER_FLAT = 0.5          # points: a smaller paper difference counts as flat
PARTS = ("RCTS", "SeRTS", "ReAG", "MOLT")
N_BOOT = 2000             # paired bootstrap resamples of every interval we compute
EVIDENCE = ("reader", "tiny", "hub", "scripted", "retrieval")
COUNTED = ("reader", "tiny", "hub", "retrieval")      # scripted rows illustrate, they do not count
PAIRED = f"paired bootstrap over the same query ids, {N_BOOT} resamples"


PAPER_FLAT_VERDICT = "n/a (paper flat)"
VERDICTS = ("same", "opposite", "flat", PAPER_FLAT_VERDICT)
LENIENT_VERDICTS = ("same", "opposite", "flat", "differs")
POWER = 0.8               # the power every ``n_needed`` is computed at (95 % two-sided level)


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
    comparable: bool = True           # False: the toy world makes the paper's premise impossible by design
    why_not_comparable: str = ""      # ... and why (the row is shown, never counted)
    mechanism: str = ""               # what produced our difference, from a diagnostic on the records
    paper_mechanism: bool | None = None   # does that diagnostic show the paper's mechanism? (None: not measured)
    reference: dict | None = None     # trained vs trained rung: the untrained rung {label, accuracy, low, high, n}
    n_needed: int | None = None       # queries for 80 % power at the paper's difference (None: paper flat)
    plan: dict | None = None          # the pre-registered plan the table was run under (None: not pre-registered)
    plan_status: str = "not pre-registered"

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
    """The strict verdict (issue 48). The paper flat (a difference under ``PAPER_FLAT`` points):
    ``"n/a (paper flat)"``, never counted. Else ``"same"`` only when ours moves the paper's way with
    an interval that excludes 0 (a row without an interval cannot), ``"opposite"`` when ours excludes
    0 the other way, and ``"flat"`` otherwise."""
    paper = direction(effect.paper_diff, flat=PAPER_FLAT)
    if paper == "flat":
        return PAPER_FLAT_VERDICT
    if effect.ours_interval is None:
        return "flat"
    ours = direction(effect.ours_diff, effect.ours_interval)
    return "same" if ours == paper else "flat" if ours == "flat" else "opposite"


def lenient_verdict(effect: Effect) -> str:
    """The verdict before issue 48 (kept beside the strict one): flat against flat is "same", a row
    without an interval goes by its sign, and a flat paper against a moving ours is "differs"."""
    paper = direction(effect.paper_diff, flat=PAPER_FLAT)
    ours = direction(effect.ours_diff, effect.ours_interval)
    if ours == paper:
        return "same"
    if ours == "flat":
        return "flat"
    return "differs" if paper == "flat" else "opposite"


def counted(effect: Effect) -> bool:
    """Whether a row counts toward "same over counted": made by a model or retrieval (not scripted),
    comparable (the toy world allows the paper's premise) and with a paper that is not flat."""
    return effect.evidence in COUNTED and effect.comparable and verdict(effect) != PAPER_FLAT_VERDICT


def n_needed_paired(paper_diff: float, discordant: float | None, power: float = POWER) -> int | None:
    """Queries a paired accuracy row needs (McNemar, ``paired_sample_size``) at the paper's difference
    (points) and ψ = max(our discordant share, |Δ_paper|); ``None`` when the paper is flat."""
    d = abs(paper_diff) / 100
    if abs(paper_diff) <= PAPER_FLAT or d > 1:
        return None
    psi = max(float(discordant or 0.0), d)
    return paired_sample_size(d, min(1.0, psi), power=power)


def n_needed_continuous(paper_diff: float, sd: float | None, power: float = POWER) -> int | None:
    """Queries a paired continuous row needs (the normal approximation, n = ((z_.975 + z_power) σ_d / Δ)²,
    σ_d the SD of our per-query differences, in the paper's unit); ``None`` when the paper is flat or
    σ_d is unknown."""
    if abs(paper_diff) <= PAPER_FLAT or sd is None:
        return None
    z = NormalDist().inv_cdf
    return max(2, math.ceil(((z(0.975) + z(power)) * float(sd) / abs(paper_diff)) ** 2))


def load_results(path: Path) -> dict:
    """A part's committed ``results.json``; a clear ``ValueError`` when the part has not committed one."""
    path = Path(path)
    if not path.exists():
        raise ValueError(f"{path} is missing: the part's experiment has not committed its results yet")
    return read_json(path)


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


def paired_spread(before: dict, after: dict, scale: float = 100.0) -> dict:
    """``{"discordant": ψ, "sd": σ_d}`` of two {query id: value} maps on their common ids: the share
    of queries whose values differ (ψ of McNemar's test, for right/wrong rows) and the SD of the
    per-query differences times ``scale`` (for continuous rows); what ``n_needed`` is computed from."""
    ids = sorted(set(before) & set(after))
    if len(ids) < 2:
        raise ValueError("need two or more common query ids")
    d = [scale * (float(after[i]) - float(before[i])) for i in ids]
    mean = sum(d) / len(d)
    return {"discordant": sum(x != 0 for x in d) / len(d),
            "sd": math.sqrt(sum((x - mean) ** 2 for x in d) / (len(d) - 1))}


def effect_rows(effects) -> list[dict]:
    """Plain rows: the paper's numbers, ours, both differences, both directions, the strict verdict
    and the one before it, whether the row counts, its mechanism and the n it would need."""
    def fmt(pair):
        return f"{pair[0]:g} → {pair[1]:g}"

    def ref(r):
        return "" if not r else f"{r['label']} {100 * r['accuracy']:.1f} [{100 * r['low']:.1f}, {100 * r['high']:.1f}]"

    return [{"part": e.part, "effect": e.name, "source": e.source, "metric": e.metric, "paper": fmt(e.paper),
             "ours": fmt(e.ours), "paper Δ": round(e.paper_diff, 2), "ours Δ": round(e.ours_diff, 2),
             "ours 95% interval": "" if e.ours_interval is None
             else f"[{e.ours_interval[0]:g}, {e.ours_interval[1]:g}]",
             "direction (paper / ours)": f"{direction(e.paper_diff, flat=PAPER_FLAT)} / "
             f"{direction(e.ours_diff, e.ours_interval)}", "verdict": verdict(e), "lenient verdict": lenient_verdict(e),
             "counted": counted(e), "comparable": e.comparable, "why not comparable": e.why_not_comparable,
             "mechanism": e.mechanism, "paper's mechanism": e.paper_mechanism, "untrained reference": ref(e.reference),
             "n": e.n, "n needed": e.n_needed, "plan": e.plan_status, "why": e.why}
            for e in effects]


def verdict_counts(effects, strict: bool = True) -> dict[str, dict[str, int]]:
    """{part: {verdict: count}} (the strict verdict, or ``lenient_verdict`` with ``strict=False``)."""
    rule = verdict if strict else lenient_verdict
    out: dict[str, dict[str, int]] = {}
    for e in effects:
        counts = out.setdefault(e.part, {})
        counts[rule(e)] = counts.get(rule(e), 0) + 1
    return out


def strict_count(effects) -> dict[str, int]:
    """``{"same": ..., "counted": ..., "paper_mechanism": ...}``: strict "same" over comparable,
    counted rows, and how many of those "same" rows the records show produced by the paper's mechanism."""
    rows = [e for e in effects if counted(e)]
    same = [e for e in rows if verdict(e) == "same"]
    return {"same": len(same), "counted": len(rows), "paper_mechanism": sum(e.paper_mechanism is True for e in same)}


def mechanism_lines(effects, part: str) -> str:
    """A Markdown list of one part's rows: name, strict verdict, whether the records show the paper's
    mechanism, the mechanism line, why the row is not comparable and the untrained reference (chapter 31
    prints it under each part's table, where a table cell would cut the line); symbols such as Q_M and
    R_proc are written as math."""
    tags = {True: "the paper's mechanism", False: "not the paper's mechanism", None: "not measured"}
    lines = []
    for e in effects:
        if e.part != part:
            continue
        extra = f" Not comparable: {e.why_not_comparable}." if not e.comparable else ""
        if e.reference:
            r = e.reference
            extra += (f" Untrained reference: {r['label']} {100 * r['accuracy']:.1f} % "
                      f"[{100 * r['low']:.1f}, {100 * r['high']:.1f}].")
        lines.append(f"- **{e.name}** ({verdict(e)}; {tags[e.paper_mechanism]}): {e.mechanism}.{extra}")
    return re.sub(r"\b([QR])_(\w+)", r"$\1_{\2}$", "\n".join(lines))     # Q_M, R_proc: symbols, as math
