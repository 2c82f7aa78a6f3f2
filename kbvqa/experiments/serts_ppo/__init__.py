"""PPO on SeRTS trajectories with the reader (SeRTS §3.2, App. C.4; a Tab. 5 analogue): the script behind chapter 18.

Run ``python -m kbvqa.experiments.serts_ppo [--n-train 32] [--sim 6] [--n-test 180] [--threads 1]``.
It searches the pretraining split's literature questions with SeRTS, the ``searcher`` role's model as
proposer and evaluator, turns every node into a trajectory (O, A, R), fine-tunes the proposer's LoRA
adapters with PPO -- once on the evaluator's own scores (the paper's reward), once on the toy world's
App. A rubric (an oracle grader: a labelled illustration of what an informative reward does) -- and
scores the proposer's root query on the held-out questions before and after (BM25 recall@5,
greedy and sampled, paired bootstrap intervals). Each stage is kept in a work folder
(``--work``; ``kbvqa.experiments.work``), so an interrupted run resumes.

Output: ``data/experiments/serts_ppo/results.json`` (per-question records, row summaries, PPO step
statistics, the trajectories' reward summary, provenance). The stages are
``kbvqa.serts.ppo_experiment``'s (``collect``, ``train_ppo``, ``root_queries``, ``summarise``);
``run.py`` plays them (``run_experiment``, ``main``).

Leaves out: the search and its records (``kbvqa.experiments.serts_experiment``), a full Tab. 5 rerun of
the search with the tuned proposer (hours of CPU on the reader), the evaluator's PPO (chapter 18, live).
"""
from __future__ import annotations

from kbvqa.experiments.serts_ppo.run import run_experiment
from kbvqa.serts.ppo_experiment import RESULTS_DIR, REWARDS, PPORunConfig, summarise

__all__ = ["REWARDS", "RESULTS_DIR", "PPORunConfig", "run_experiment", "summarise"]
