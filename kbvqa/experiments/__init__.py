"""The experiments too big for a chapter: one runner per experiment (``python -m``, ``make experiments``).

Each runner writes a small table with its provenance into ``data/experiments/`` (``runs.py``:
provenance, the one run-file format, the shared command line). The runners hold only what runs and
writes: the settings, evaluators and loaders they use live in the paper packages
(``kbvqa.rcts.settings`` / ``results`` / ``context_kb``, ``kbvqa.serts.experiment`` / ``results``,
``kbvqa.reag.ladder`` / ``results``, ``kbvqa.molt.candidates`` / ``experiment`` / ``results``), in
``kbvqa.pipeline.results`` for chapter 30 and ``kbvqa.models.from_scratch`` for chapter 01, and the
chapters import them from there, never a runner.
"""
