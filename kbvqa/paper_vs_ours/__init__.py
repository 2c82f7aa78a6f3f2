"""Paper vs ours (chapter 31): every part's effects, the paper's number beside ours, and the verdict.

An ``Effect`` is one comparison a paper makes ("RCTS beats Vanilla-RAG", "the critic lifts
InfoSeek"): the paper's (baseline, treatment) numbers with their table, ours from the committed
results of the same comparison on the toy world, the interval of our difference, and why ours
differs. ``direction`` calls a difference up / down / flat; ``verdict`` compares the paper's
direction with ours under the strict rule of issue 48: ``same`` only when the paper moves beyond
``PAPER_FLAT`` points and ours moves its way with an interval that excludes 0, ``opposite`` (ours
excludes 0 the other way), ``flat`` (ours holds 0), ``n/a (paper flat)`` (never counted);
``lenient_verdict`` keeps the rule before (flat against flat was "same").

Every row also carries what produced our difference (``mechanism``, a line computed from the records
by ``mechanisms.py``, and ``paper_mechanism``, whether that is the paper's mechanism), whether the toy
world allows the paper's premise (``comparable``), the untrained rung beside trained ones
(``reference``), the queries the paper's difference needs (``n_needed``) and the plan its run was
registered under (``kbvqa.experiments.plans``; tables from before plans are "not pre-registered").
``accounting.py`` attaches these; ``strict_count`` gives "same" over counted rows.

Our intervals: a paired bootstrap of the row's own statistic over the same query ids (2,000
resamples, seeded: ``kbvqa.metrics.intervals.paired_bootstrap``) wherever per-query records are
committed: accuracy (RCTS, ReAG, MOLT), passages read (ReAG Fig. 7), a SeRTS metric averaged over
its seeds per question. Rows without records fall back, and say so in ``interval_method``: MOLT's
scripted-judge rows (the unpaired normal interval of a difference of two proportions) and SeRTS
results without runs (the seed spread of both means, added). The papers report no intervals; a
paper difference under ``PAPER_FLAT`` points is called flat.

``evidence`` says what produced our numbers: ``reader`` (the shipped reader, by its fingerprint in
the table's provenance), ``tiny`` (the 1.45M-parameter model of the first edition), ``hub`` (a hub
checkpoint, gpu profile), ``scripted`` (a scripted stand-in that knows the answer: an illustration
of a mechanism, never counted as a reproduction) or ``retrieval`` (no model). ``write_effects``
writes every row to ``data/experiments/effects.json`` (``python -m kbvqa.paper_vs_ours``).

- ``rcts_effects()`` / ``reag_effects()`` / ``serts_effects()`` / ``molt_effects()`` (``parts.py``): the effects of
  one part, read from ``data/experiments/<part>/``; a missing results file raises ``ValueError``
  naming it. ``all_effects(parts)``, ``effect_rows(effects)`` (plain dicts for a DataFrame),
  ``verdict_counts``, ``kbvqa.viz.effects.draw_effects`` (paper difference against ours, one marker per effect).

Modules: ``effect`` (one effect, its verdicts and evidence), ``parts`` (each paper's effects from its
committed results), ``mechanisms`` (one diagnostic per row), ``whys`` (the RCTS rows' and the reader-judged
MOLT training rows' reasons, read from the run), ``accounting`` (the fields of issue 48),
``effects_file`` (``effects.json``). The paper numbers live in each paper
package's ``paper.py``; this package only pairs them with ours. Leaves out: running anything.
"""
from kbvqa.paper_vs_ours.effect import (
    COUNTED,
    EVIDENCE,
    N_BOOT,
    PAPER_FLAT,
    PAPER_FLAT_VERDICT,
    PARTS,
    Effect,
    counted,
    direction,
    effect_rows,
    evidence_of,
    lenient_verdict,
    mechanism_lines,
    n_needed_continuous,
    n_needed_paired,
    paired_effect,
    paired_spread,
    strict_count,
    verdict,
    verdict_counts,
)
from kbvqa.paper_vs_ours.effects_file import EFFECTS_FILE, effect_record, load_effects, stale_effect_rows, write_effects
from kbvqa.paper_vs_ours.parts import all_effects, molt_effects, rcts_effects, reag_effects, serts_effects

__all__ = ["COUNTED", "EVIDENCE", "N_BOOT", "PAPER_FLAT", "PAPER_FLAT_VERDICT", "PARTS", "Effect", "all_effects",
           "counted", "direction", "effect_rows", "lenient_verdict", "mechanism_lines", "n_needed_continuous",
           "n_needed_paired",
           "paired_spread", "strict_count",
           "molt_effects", "rcts_effects", "reag_effects", "serts_effects", "verdict", "verdict_counts",
           "EFFECTS_FILE", "effect_record", "evidence_of", "load_effects", "paired_effect", "stale_effect_rows",
           "write_effects"]
