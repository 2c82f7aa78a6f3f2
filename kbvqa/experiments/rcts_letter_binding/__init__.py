"""RCTS's generator adapter (issue 52, item 3): letter binding trained on the training rules, its gate.

``python -m kbvqa.experiments.rcts_letter_binding`` (``run.py``) measures the gate (letter given a
correct rationale, on ``mc_kb``) and the card row ``mc_3_same_rule_acc`` in the plain-knowledge-base
format before training, trains the LoRA adapter (``kbvqa.rcts.letter_binding``), measures both again
and writes ``data/experiments/rcts_letter_binding/results.json`` with the adapter's weights
(``models/generator.pt``). Sizes come from the part's committed ``plan.json``.
"""
