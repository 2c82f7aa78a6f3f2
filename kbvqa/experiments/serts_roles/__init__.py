"""SeRTS's proposer and grader adapters (issue 55, item 2), trained for the search they do.

``python -m kbvqa.experiments.serts_roles`` (``run.py``) builds the corpus in which a share of the
abstracts introduce a concept's other name (``ToyWorldConfig.abstract_alias_share``, fixed in the
plan), measures the card rows on held-out questions with the shipped reader
(``kbvqa.serts.role_data.evaluate_proposer`` / ``evaluate_grader``), trains one LoRA adapter per role
on training questions with mixture replay, measures again and writes
``data/experiments/serts_roles/results.json`` with the adapters (``models/<role>.pt``). Sizes come
from the part's committed ``plan.json``; every finished stage is kept for a rerun to resume.
"""
