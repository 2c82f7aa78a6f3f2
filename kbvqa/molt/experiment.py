"""MOLT's training experiment on the toy world: its settings, evaluation sets, scripted judges and
the tiny model's evaluations, which the runner repeats and chapters 27-28 rerun live.

Two kinds of judges play the same ladders (Tab. 5 training ablation, Tab. 6 schedule ablation):

1. **Scripted comparators** (the mechanism, cheap): ``noisy_comparator`` lets the ground truth win
   a round it plays with probability 1 - error and otherwise lets the higher retrieval score win;
   ``scripted_records`` plays it over every test query and each schedule (``ORDERS``) for a few error
   rates (``ERRORS``). With this judge a ladder is right exactly when the ground truth survives every
   round it plays, so the schedule decides accuracy through the number of rounds the ground truth plays.
2. **The tiny model** (honesty): the shipped cpu judge zero-shot (``evaluate_one_shot``: one-shot
   5-way, Table 17; ``evaluate_one_pass``: the one-pass tournament, Table 14), after the SFT cold
   start on §3.2.1 data (``teacher``: the oracle, or the judge itself, ``kbvqa.molt.sft``), and after
   GRPO from that cold start with and without R_proc (Eq. 8 with lambda_2 = 0.5 or 0); the full model
   is also evaluated under the three schedules. ``MOLTExperimentConfig`` holds every setting.

Evaluation candidates (``eval_sets``): the gold paragraph and four look-alike pages (the same five
as the SFT data), random ids, and a *simulated* retrieval score: gold ``gap`` + N(0, 1), each
negative N(0, 1) (seeded). The toy world has no trained fusion reranker, so this stands in for its
scores; with ``gap = 1`` the gold is ranked first about half of the time, as "the ground truth is
typically high-ranked" (§4.4) assumes. The schedule sorts by these scores. GRPO trains on the same
kind of sets built from TRAIN queries with the weak-to-strong schedule (what inference uses:
``grpo_tasks``).

Leaves out: the training runs and writing ``data/experiments/molt/``
(``python -m kbvqa.experiments.molt_training``), tables, paper numbers, figures
(``kbvqa.molt.results``, ``kbvqa.viz.molt``); real data (gpu only, not run here).
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace

from kbvqa.config import get_profile
from kbvqa.data import get_world
from kbvqa.molt.grpo import MOLTTask
from kbvqa.molt.ladder import ladder_schedule, listing_order, one_shot_prompt, query_seed, student_prompt
from kbvqa.molt.rewards import molt_reward
from kbvqa.molt.sft import SFTDataConfig, sft_candidates, teacher_transcript
from kbvqa.parsers import parse_candidate_number
from kbvqa.prompts.formats import view_ref

__all__ = ["ERRORS", "EvalItem", "MOLTExperimentConfig", "eval_sets", "evaluate_one_pass", "evaluate_one_shot",
           "grpo_tasks", "item_schedule", "noisy_comparator", "scripted_records", "train_slices"]

ERRORS = (0.05, 0.1, 0.2, 0.3)   # scripted comparators' error per round the ground truth plays
TEACHERS = ("oracle", "model")   # who writes the cold start's transcripts (kbvqa.molt.sft)


@dataclass(frozen=True)
class MOLTExperimentConfig:
    limit: int = 40               # first N test queries for the tiny model (scripted: all 544)
    seed: int = 0                 # scores, ids, training batches, sampling
    gap: float = 1.0              # simulated retrieval: gold score mean (negatives 0, both sd 1)
    sft_queries: int = 512        # train queries of the §3.2.1 SFT set (paper: 12K)
    sft_steps: int = 100          # cold-start steps, batch 8 (loss on every completion token)
    sft_lr: float = 3e-4          # (paper: not stated for the 4B/8B students)
    grpo_steps: int = 12          # GRPO steps per variant (paper: 500+, Fig. 3)
    group_size: int = 4           # G
    prompts_per_step: int = 2     # prompts per GRPO step
    grpo_lr: float = 2e-5
    max_new_tokens: int = 300     # one-pass transcript cap (a teacher transcript: ~280 tokens)
    teacher: str = "oracle"       # SFT transcripts: "oracle" (oracle_teacher) | "model" (the judge
                                  # itself before training writes each round, the positive's wins forced)
    teacher_tokens: int = 96      # a model teacher's tokens per pairwise round
    sft_roles: str = "teacher"    # SFTDataConfig.roles: "balanced" = the challenger wins the rounds between
                                  # negatives, so neither role wins more often (issue 54)
    sft_pairwise_per_query: int = 0  # SFTDataConfig.pairwise_per_query: pairwise examples, random order
    gate_queries: int = 0         # issue 54's role gate on train queries no stage trains on (0: no gate, the
                                  # committed run); the train split is cut into SFT | gate | GRPO (``train_slices``)

    def __post_init__(self):
        for name in ("limit", "sft_queries", "sft_steps", "grpo_steps", "prompts_per_step", "max_new_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.group_size, int) or self.group_size < 2:
            raise ValueError(f"group_size must be an int >= 2, got {self.group_size!r}")
        if self.teacher not in TEACHERS:
            raise ValueError(f"teacher must be one of {TEACHERS}, got {self.teacher!r}")
        if not isinstance(self.teacher_tokens, int) or self.teacher_tokens < 1:
            raise ValueError(f"teacher_tokens must be a positive int, got {self.teacher_tokens!r}")
        if not self.gap >= 0 or not self.sft_lr > 0 or not self.grpo_lr > 0:
            raise ValueError("need gap >= 0, sft_lr > 0 and grpo_lr > 0")
        self.sft_data()                 # validates sft_roles and sft_pairwise_per_query
        if not isinstance(self.gate_queries, int) or isinstance(self.gate_queries, bool) or self.gate_queries < 0:
            raise ValueError(f"gate_queries must be an int >= 0, got {self.gate_queries!r}")

    def sft_data(self):
        """The ``SFTDataConfig`` of the cold-start set."""
        from kbvqa.molt.sft import SFTDataConfig

        return SFTDataConfig(seed=self.seed, roles=self.sft_roles, pairwise_per_query=self.sft_pairwise_per_query)


@dataclass(frozen=True)
class EvalItem:
    query: object                 # the toy-world Query
    candidates: tuple             # five Candidates with simulated scores
    gold_id: str                  # the ground-truth candidate id
    gold_rank: int                # 1 = highest simulated score


def eval_sets(world, queries, gap: float = 1.0, seed: int = 0) -> list[EvalItem]:
    """One ``EvalItem`` per query: the §3.2.1 five (gold + four look-alikes), random ids, simulated
    scores (module docstring). Repeats exactly for a seed."""

    items = []
    for q in queries:
        rng = random.Random(f"molt-eval:{seed}:{q.id}")
        cands = sft_candidates(world, q, [], SFTDataConfig(seed=seed), rng)
        cands = [replace(c, score=round(rng.gauss(0.0, 1.0) + (gap if c.passage_id == q.evidence_ids[0] else 0.0), 4))
                 for c in cands]
        gold = next(c.id for c in cands if c.passage_id == q.evidence_ids[0])
        rank = 1 + sum(c.score > next(x.score for x in cands if x.id == gold) for c in cands)
        items.append(EvalItem(q, tuple(cands), gold, rank))
    return items


def noisy_comparator(gold_id: str, error: float, rng: random.Random):
    """A scripted judge: the ground truth wins a round it plays with probability 1 - ``error``;
    otherwise (and between two negatives) the higher retrieval score wins."""
    if not 0 <= error <= 1:
        raise ValueError(f"error must be in [0, 1], got {error!r}")

    def compare(first, second):
        if gold_id in (first.id, second.id):
            other = second if first.id == gold_id else first
            win = gold_id if rng.random() >= error else other.id
            return win, "scripted: the ground truth plays"
        win = max((first, second), key=lambda c: c.score)
        return win.id, "scripted: higher retrieval score"
    return compare


def item_schedule(item: EvalItem, order: str, seed: int = 0) -> list[str]:
    """The order of play of one evaluation item: by retrieval score, or for ``"random"`` a
    permutation of its own (``query_seed``: each query shuffled anew, as the paper's Random Shuffle)."""
    scores = [c.score for c in item.candidates]
    return ladder_schedule([c.id for c in item.candidates], order, scores, query_seed(seed, item.query.id))


def scripted_records(items, order: str, error: float, seed: int = 0) -> list[dict]:
    """The scripted judge's ladder on every item under ``order``, scored with Eq. 8."""

    records = []
    for it in items:
        schedule = item_schedule(it, order, seed)
        by_id = {c.id: c for c in it.candidates}
        rng = random.Random(f"scripted:{seed}:{error}:{order}:{it.query.id}")
        listing = [by_id[i] for i in listing_order(schedule)]
        text, _ = teacher_transcript(listing, noisy_comparator(it.gold_id, error, rng))
        records.append(_record(it, text, schedule, molt_reward(text, schedule, it.gold_id)))
    return records


def _record(it: EvalItem, text: str, schedule, reward) -> dict:
    return {"id": it.query.id, "gold_rank": it.gold_rank, "correct": bool(reward.res), "fmt": reward.fmt,
            "proc": round(reward.proc, 4), "total": round(reward.total, 4), "rounds": len(reward.valid),
            "chain_valid": bool(reward.valid) and all(reward.valid) and len(reward.valid) == len(schedule) - 1,
            "gt_rounds": sum(reward.gt_won), "output": text[:300]}


# ------------------------------------------------------------------------------ the tiny model
def evaluate_one_pass(vlm, items, order: str, config: MOLTExperimentConfig, seed: int = 0) -> list[dict]:
    """Greedy one-pass ladders (Table 14) of ``vlm`` under ``order``, batched, scored with Eq. 8."""

    schedules = [item_schedule(it, order, seed) for it in items]
    world = _world()
    prompts = [student_prompt(it.query.question, _query_image(world, it), it.candidates, s,
                              short=_judge_short()) for it, s in zip(items, schedules)]
    outs = vlm.generate(prompts, n=1, max_new_tokens=config.max_new_tokens, temperature=0.0, seed=seed,
                        stop="</evidence>", include_stop=True, batch_size=16)
    return [_record(it, str(o[0]), s, molt_reward(str(o[0]), s, it.gold_id))
            for it, s, o in zip(items, schedules, outs)]


def evaluate_one_shot(vlm, items, seed: int = 0) -> list[dict]:
    """Greedy one-shot 5-way choices (Table 17) with the candidates in retrieval order."""

    world, records = _world(), []
    ordered = [sorted(it.candidates, key=lambda c: -c.score) for it in items]
    prompts = [one_shot_prompt(it.query.question, _query_image(world, it), c, short=_judge_short())
               for it, c in zip(items, ordered)]
    outs = vlm.generate(prompts, n=1, max_new_tokens=8, temperature=0.0, seed=seed, batch_size=16)
    for it, cands, o in zip(items, ordered, outs):
        number = parse_candidate_number(str(o[0]), 1, 5)
        chosen = cands[number - 1].id if number else None
        records.append({"id": it.query.id, "gold_rank": it.gold_rank, "correct": chosen == it.gold_id,
                        "fmt": float(number is not None), "output": str(o[0])[:60]})
    return records


def _world():

    return get_world(0)


def judge_view(world, query):
    """The query's view as the tournament's judge sees it: at the picture size of the model that
    plays ``judge`` (``Profile.image_size_of``: 56 px for the tiny model, 112 px for the reader)."""

    return view_ref(world, query.meta["view_id"], get_profile().image_size_of("judge"))


def _query_image(world, item):
    return judge_view(world, item.query)


def _judge_short() -> bool:
    return get_profile().short_prompts


GRPO_QUERIES = 256                # the last train queries: GRPO's prompts (``grpo_tasks``)


def train_slices(world, config: MOLTExperimentConfig) -> dict[str, list]:
    """The train queries each stage reads, disjoint (issue 54): ``sft`` = the first ``sft_queries``,
    ``gate`` = the ``gate_queries`` just before GRPO's (with 2,304: ``kbvqa_train[1792:2048]``), ``grpo``
    = the last ``GRPO_QUERIES``. A split whose parts would overlap raises ``ValueError`` naming the sizes."""
    train = list(world.kbvqa_train)
    free = len(train) - GRPO_QUERIES - config.gate_queries
    if config.sft_queries > free:
        raise ValueError(f"sft_queries = {config.sft_queries} overlaps the gate's {config.gate_queries} and GRPO's "
                         f"{GRPO_QUERIES} queries of the {len(train)} train queries: use at most {max(free, 0)}")
    gate_end = len(train) - GRPO_QUERIES
    return {"sft": train[: config.sft_queries], "gate": train[gate_end - config.gate_queries: gate_end],
            "grpo": train[gate_end:]}


def grpo_tasks(world, config: MOLTExperimentConfig, n: int = GRPO_QUERIES) -> list:
    """GRPO prompts: train queries' candidate sets with the weak-to-strong schedule (as inference)."""

    items = eval_sets(world, world.kbvqa_train[-n:], config.gap, config.seed)
    tasks = []
    for it in items:
        s = ladder_schedule([c.id for c in it.candidates], "weak_to_strong", [c.score for c in it.candidates])
        prompt = student_prompt(it.query.question, _query_image(world, it), it.candidates, s,
                                short=_judge_short())
        tasks.append(MOLTTask(prompt, tuple(s), it.gold_id))
    return tasks
