"""The experiments too big for a chapter: one folder per experiment (``python -m``, ``make experiments``).

Each experiment ``kbvqa.experiments.<name>`` is a package of three files, run as
``python -m kbvqa.experiments.<name>``: ``__init__.py`` says what the experiment is, what it writes
and what it leaves out, and holds its spec (the rows it runs and the folder it writes, by name
from the paper package that defines them) with the runner functions other code imports;
``run.py`` is the runner (``main(argv=None)`` and its helpers); ``__main__.py`` calls ``run.main``.
The experiments: ``rcts_contexts``, ``rcts_toy``, ``serts_experiment``, ``reag_ladder``,
``molt_candidates``, ``molt_training``, ``pipeline_ablation``, ``assoc_recall`` (chapter 01's
go/no-go stage, with its synthetic sequences in ``data.py``) and ``rescore`` (re-judges committed
answers with the official scorers).

Each writes a small table with its provenance into ``data/experiments/`` (``runs.py``, a module:
provenance, the one run-file format, the shared command line). The runners hold only what runs and
writes: the settings, evaluators, loaders and row definitions they use live in the paper packages
(``kbvqa.rcts.settings`` / ``runs`` / ``results`` / ``context_kb``, ``kbvqa.serts.experiment`` /
``results``, ``kbvqa.reag.ladder`` / ``results``, ``kbvqa.molt.candidates`` / ``experiment`` /
``results``), in ``kbvqa.pipeline.results`` for chapter 30 and ``kbvqa.models.from_scratch`` for
chapter 01, and the chapters import them from there, never an experiment's package.
"""
