"""SeRTS PPO on the searcher's own trajectories (SeRTS §3.2, App. C.4; a Tab. 5 analogue): the stages.

The pieces of ``python -m kbvqa.experiments.serts_ppo`` that chapter 18 uses too:

1. ``collect``: SeRTS (Sim ``sim``, C = 0.1, seed ``seed``) with the ``searcher`` role's model as
   proposer and evaluator on pretraining-split literature questions, ``chunk`` at a time. Every
   non-root node is a trajectory (O, A, R) of SeRTS §3.2: the chat the proposer saw, its output, and
   two rewards for it -- the evaluator's 0-5 score (the paper's R) and the toy world's App. A rubric
   score of the same documents (an oracle grader, only a labelled illustration). Each trajectory
   also keeps the BM25 recall of its own query.
2. ``train_ppo``: named LoRA adapters on a fresh copy of the model (App. C.4: r 16, alpha 32, dropout
   0.05 on q/v), ``epochs`` passes of ``ppo_step`` over the trajectories in seeded random order,
   batches of ``batch_size``; with a work folder, a checkpoint (adapters, AdamW state, step
   statistics) every ``checkpoint_every`` steps and the adapters kept at the end.
3. ``root_queries``: the proposer's root query (Tab. 2 with no ancestors or siblings) for held-out
   questions, greedy and ``n_samples`` samples at temperature 0.7, scored by BM25 recall@``k``.

``summarise`` gives each row's means and each PPO row's paired bootstrap difference from ``base``
over the same questions (2,000 resamples); ``trajectory_summary`` how each reward follows recall;
``load_ppo_results`` reads the committed ``data/experiments/serts_ppo/results.json``. Leaves out: the
run and its files (``kbvqa.experiments.serts_ppo``), the search (``kbvqa.serts.search``), Eq. 2 and the
step (``kbvqa.rl.ppo``).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from kbvqa.config import DATA_DIR
from kbvqa.experiments.runs import read_json
from kbvqa.experiments.work import WorkFolder
from kbvqa.metrics import paired_bootstrap
from kbvqa.models.checkpoints import load_vlm
from kbvqa.models.pretrain_mc_lit import bm25_search, lit_question_split, rubric_score
from kbvqa.rl.ppo import PPOConfig, Trajectory, ppo_step, prepare_ppo_policy
from kbvqa.serts.evaluate import toy_literature_task
from kbvqa.serts.prompts import parse_proposer_output, proposer_prompt, vlm_generator
from kbvqa.serts.search import SeRTSConfig, run_serts

RESULTS_DIR = DATA_DIR / "experiments" / "serts_ppo"
REWARDS = ("evaluator", "rubric")      # the evaluator's own score (the paper) | the App. A rubric (oracle)
ADAPTER = "proposer"


@dataclass(frozen=True)
class PPORunConfig:
    n_train: int = 32             # pretraining-split literature questions searched for trajectories (of 180)
    sim: int = 6                  # simulations per search (chapter 18's Tab. 5 rerun uses 6)
    chunk: int = 8                # questions searched together (the unit kept in the work folder)
    seed: int = 42                # search, PPO order and sampling
    max_new_tokens: int = 96      # per proposer / evaluator call: the reader's rationale + query is ~50
                                  # tokens; chapter 17's 48 left about half its proposals without </query>
    rewards: tuple = REWARDS      # which PPO runs to make
    epochs: int = 1               # passes over the trajectories (App. C.4: one epoch)
    learning_rate: float = 2e-4   # App. C.4: 1.41e-5 for a 7B model; LoRA on 135M parameters needs ~1e-4+
    batch_size: int = 8           # trajectories per ppo_step (App. C.4)
    mini_batch_size: int = 4      # trajectories per gradient step (App. C.4: 1; 4 halves the CPU time)
    ppo_epochs: int = 2           # passes over each batch (TRL's default 4)
    checkpoint_every: int = 4     # PPO steps between checkpoints
    n_test: int = 180             # held-out literature questions scored (all 180)
    n_samples: int = 2            # sampled root queries per question (temperature 0.7) beside the greedy one
    k: int = 5                    # BM25 abstracts per query (SeRTS top-k)
    baseline: str = "constant"    # PPOConfig.baseline: App. C.4's constant 3.75 | "batch_mean" | "normalised"

    def __post_init__(self):
        for name in ("n_train", "sim", "chunk", "epochs", "batch_size", "mini_batch_size", "ppo_epochs",
                     "checkpoint_every", "n_test", "k", "max_new_tokens"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if not isinstance(self.n_samples, int) or self.n_samples < 0:
            raise ValueError(f"n_samples must be an int >= 0, got {self.n_samples!r}")
        unknown = [r for r in self.rewards if r not in REWARDS]
        if unknown or not self.rewards:
            raise ValueError(f"rewards must be some of {REWARDS}, got {self.rewards!r}")
        if not self.learning_rate > 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate!r}")
        self.ppo_config()                # validates the baseline

    def ppo_config(self) -> PPOConfig:
        return PPOConfig(learning_rate=self.learning_rate, batch_size=self.batch_size,
                         mini_batch_size=self.mini_batch_size, ppo_epochs=self.ppo_epochs, seed=self.seed,
                         baseline=self.baseline)


def recall_at(world, query: str, gold, k: int) -> float:
    """BM25 recall@k of ``query`` against ``gold`` (0 for an empty query or gold set)."""
    gold = set(gold)
    return len(set(bm25_search(world, query, k)) & gold) / len(gold) if query and gold else 0.0


# ------------------------------------------------------------------------------ 1. trajectories
def collect(world, vlm, questions, config: PPORunConfig) -> list[list[dict]]:
    """Per question, one record per non-root node of its SeRTS tree (questions searched ``config.chunk``
    at a time, chunk i seeded ``seed + 1000 i`` by its place in the training list, so any chunking repeats)."""
    retrieve, doc_text = toy_literature_task(world)
    place = {q.id: i for i, q in enumerate(lit_question_split(world)[0])}
    out = []
    for start in range(0, len(questions), config.chunk):
        part = questions[start:start + config.chunk]
        seed = config.seed + 1000 * (place[part[0].id] // config.chunk)
        gen = vlm_generator(vlm, config.max_new_tokens, 0.7, seed=seed)
        results = run_serts([q.question for q in part], gen, gen, retrieve, doc_text,
                            SeRTSConfig(sim=config.sim, seed=seed, top_k=config.k, max_prompt_abstracts=3,
                                        short_prompts=True))
        for q, result in zip(part, results):
            out.append([])
            for node in result.nodes[1:]:
                if node.proposer_prompt is None:
                    continue
                out[-1].append({"question_id": q.id, "depth": node.depth, "observation": node.proposer_prompt,
                            "action": node.proposer_output, "evaluator": float(node.score or 0),
                            "rubric": float(rubric_score(world, q, list(node.context_docs))),
                            "recall": recall_at(world, node.query or "", q.gold_doc_ids, config.k),
                            "well_formed": bool(node.well_formed)})
    return out


# ------------------------------------------------------------------------------ 2. PPO
def _adapter_state(policy) -> dict:
    return {n: p.detach().cpu().clone() for n, p in policy.model.named_parameters() if p.requires_grad}


def _load_adapter_state(policy, state: dict) -> None:
    import torch

    params = dict(policy.model.named_parameters())
    missing = sorted(set(state) - set(params))
    if missing:
        raise ValueError(f"{len(missing)} saved adapter weights are not in this model ({missing[:2]}...)")
    with torch.no_grad():
        for n, value in state.items():
            params[n].copy_(value.to(params[n].device, params[n].dtype))


def proposer_policy(config: PPORunConfig):
    """A fresh ``searcher`` model with the proposer's LoRA adapters, and its AdamW optimiser."""
    return prepare_ppo_policy(load_vlm("searcher"), config.ppo_config(), adapter=ADAPTER)


def train_ppo(trajectories: list[dict], reward: str, config: PPORunConfig, work: WorkFolder | None = None,
              log=print):
    """``(policy, steps)``: PPO on ``trajectories`` rewarded by ``reward``; ``steps`` holds each step's
    statistics. With ``work`` the stage resumes from its last checkpoint and its adapters are kept."""
    import torch

    if reward not in REWARDS:
        raise ValueError(f"reward must be one of {REWARDS}, got {reward!r}")
    if not trajectories:
        raise ValueError("no trajectories to learn from")
    stage = f"ppo_{reward}"
    policy, optimizer = proposer_policy(config)
    saved = work.data(f"{stage}_steps") if work is not None else None
    if work is not None and work.has_model(stage) and saved is not None:
        _load_adapter_state(policy, torch.load(work.dir / "models" / f"{stage}.pt", map_location="cpu"))
        policy.model.eval()
        return policy, saved
    data = [Trajectory(t["observation"], t["action"], t[reward]) for t in trajectories]
    rng = np.random.default_rng(config.seed)
    order = [i for _ in range(config.epochs) for i in rng.permutation(len(data)).tolist()]
    batches = [order[s:s + config.batch_size] for s in range(0, len(order), config.batch_size)]
    state = work.checkpoint(stage) if work is not None else None
    steps, t0, before = [], time.perf_counter(), 0.0
    if state is not None:
        _load_adapter_state(policy, state["adapter"])
        optimizer.load_state_dict(state["optimizer"])
        steps, before = state["steps"], state["seconds"]
    cfg = config.ppo_config()
    for index in range(len(steps), len(batches)):
        s = ppo_step(policy, optimizer, [data[i] for i in batches[index]], cfg)
        steps.append({"step": index, "loss": float(np.mean(s.losses)), "mean_ratio": s.mean_ratio,
                      "clip_fraction": s.clip_fraction, "mean_advantage": s.mean_advantage})
        seconds = before + time.perf_counter() - t0
        if work is not None and ((index + 1) % config.checkpoint_every == 0 or index + 1 == len(batches)):
            work.save_checkpoint(stage, {"adapter": _adapter_state(policy), "optimizer": optimizer.state_dict(),
                                         "steps": steps, "seconds": seconds})
        log(f"{stage}: step {index + 1}/{len(batches)}, loss {steps[-1]['loss']:+.3f}, {seconds:.0f} s")
    policy.model.eval()
    if work is not None:
        work.save_model(stage, policy)
        work.save_data(f"{stage}_steps", steps)
        work.drop_checkpoint(stage)
    return policy, steps


# ------------------------------------------------------------------------------ 3. the proposer's recall
def root_queries(world, policy, questions, config: PPORunConfig) -> list[dict]:
    """The proposer's root query for each question, greedy and ``n_samples`` sampled, with their recall."""
    prompts = [proposer_prompt(q.question, [], [], short=True) for q in questions]
    greedy = vlm_generator(policy, config.max_new_tokens, 0.0, seed=config.seed, batch_size=16)(prompts)
    samples = [[] for _ in questions]
    if config.n_samples:
        out = policy.generate(prompts, n=config.n_samples, max_new_tokens=config.max_new_tokens,
                              temperature=0.7, seed=config.seed, batch_size=16)
        samples = [list(texts) for texts in out]
    records = []
    for q, (text, _), sampled in zip(questions, greedy, samples):
        parsed = [parse_proposer_output(t, q.question) for t in [text, *sampled]]
        recalls = [recall_at(world, p.query, q.gold_doc_ids, config.k) for p in parsed]
        records.append({"id": q.id, "query": parsed[0].query, "greedy_recall": recalls[0],
                        "sample_recall": float(np.mean(recalls[1:])) if sampled else None,
                        "question_recall": recall_at(world, q.question, q.gold_doc_ids, config.k),
                        "well_formed": float(np.mean([p.well_formed for p in parsed])), "output": text[:300]})
    return records


def summarise(rows: dict[str, list[dict]]) -> dict:
    """Per row: mean greedy / sampled recall and well-formed share; per PPO row: paired bootstrap
    differences from ``base`` on the same questions (``kbvqa.metrics.paired_bootstrap``, 2,000 resamples)."""
    out = {}
    for name, recs in rows.items():
        row = {"n": len(recs), "greedy_recall": float(np.mean([r["greedy_recall"] for r in recs])),
               "question_recall": float(np.mean([r["question_recall"] for r in recs])),
               "well_formed": float(np.mean([r["well_formed"] for r in recs]))}
        sampled = [r["sample_recall"] for r in recs if r["sample_recall"] is not None]
        row["sample_recall"] = float(np.mean(sampled)) if sampled else None
        if name != "base" and "base" in rows:
            base = {r["id"]: r for r in rows["base"]}
            for key in ("greedy_recall", "sample_recall"):
                pairs = [(r[key], base[r["id"]][key]) for r in recs if r["id"] in base and r[key] is not None]
                if pairs:
                    d = paired_bootstrap([a for a, _ in pairs], [b for _, b in pairs], n_boot=2000)
                    row[f"{key}_diff"] = {"diff": d.diff, "low": d.low, "high": d.high, "n": d.n}
        out[name] = row
    return out


def trajectory_summary(trajectories: list[dict]) -> dict:
    """What the PPO runs learned from: counts, mean rewards, and how each reward follows the query's recall."""
    if not trajectories:
        return {"n": 0}
    recall = np.array([t["recall"] for t in trajectories])
    out = {"n": len(trajectories), "well_formed": float(np.mean([t["well_formed"] for t in trajectories]))}
    for reward in REWARDS:
        values = np.array([t[reward] for t in trajectories])
        out[f"{reward}_mean"] = float(values.mean())
        out[f"{reward}_positive_advantage"] = float(np.mean(values > PPOConfig().reward_baseline))
        spread = values.std() > 0 and recall.std() > 0
        out[f"{reward}_recall_corr"] = float(np.corrcoef(values, recall)[0, 1]) if spread else None
    return out


def load_ppo_results(path=None) -> dict:
    """The committed ``results.json`` of ``python -m kbvqa.experiments.serts_ppo``."""
    return read_json(Path(path or RESULTS_DIR / "results.json"))
