"""The experiments too big for a chapter: one runner per experiment (``python -m``, ``make experiments``).

Each runner writes a small table with its provenance into ``data/experiments/`` (``runs.py``:
provenance, the one run-file format, the shared command line). Chapters read those tables through
the paper packages' loaders (``kbvqa.rcts.results``, ``kbvqa.serts.results``, ``kbvqa.reag.results``,
``kbvqa.molt.results``) and, for chapter 30, ``pipeline_results``.
"""
