"""ReAG's retrieval depth on held-out train queries (issue 53, item 3): is the paper's k = 20 needed?

``python -m kbvqa.experiments.reag_depth`` (``run.py``) answers the first ``n`` held-out train queries
(``kbvqa.reag.ladder.heldout_queries``: the last 200 train queries, which no training stage reads when
the ladder runs with ``heldout_train = 200``) on the coarse rung at k = 5 and k = 20 pages with the
zero-shot generator, and writes ``data/experiments/reag_depth/results.json``: recall, passages read,
accuracy, and on the queries whose evidence both depths retrieve the paired difference and the
switch rule (``kbvqa.reag.ladder.retrieval_depth``). Sizes come from the part's committed plan.
"""
