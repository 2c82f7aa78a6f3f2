"""The runner of ``python -m kbvqa.experiments.serts_ppo``: trajectories, PPO, the proposer's recall.

Three stages, each kept in a work folder (``kbvqa.experiments.work``) as it ends, so a rerun goes on
from the first one missing:

1. ``collect``: SeRTS (Sim ``sim``, C = 0.1, seed ``seed``) with the ``searcher`` role's model as proposer
   and evaluator on the first ``n_train`` pretraining-split literature questions, ``chunk`` questions at
   a time (``map_in_chunks``). Every non-root node is a trajectory (O, A, R) of SeRTS §3.2: the chat the
   proposer saw, its output, and two rewards for it -- the evaluator's 0-5 score (the paper's R) and
   the toy world's App. A rubric score of the same documents (an oracle grader, only a labelled
   illustration). Each trajectory also keeps the BM25 recall of its own query.
2. ``ppo_<reward>`` for each reward in ``rewards``: named LoRA adapters on a fresh copy of the model
   (App. C.4: r 16, alpha 32, dropout 0.05 on q/v), ``epochs`` passes of ``ppo_step`` over the
   trajectories in seeded random order, batches of ``batch_size``; a checkpoint (adapters, AdamW
   state, step statistics) every ``checkpoint_every`` steps.
3. rows ``base`` and ``ppo_<reward>``: the proposer's root query (Tab. 2 with no ancestors or
   siblings) for the first ``n_test`` held-out questions, greedy and ``n_samples`` samples at
   temperature 0.7, scored by BM25 recall@``k`` against the question's gold abstracts.

``summarise`` gives each row's means and each PPO row's paired bootstrap difference from ``base``
over the same questions (2,000 resamples). Leaves out: the search (``kbvqa.serts.search``), Eq. 2 and
the step (``kbvqa.rl.ppo``), the chapter's figures (chapter 18 reads ``results.json``).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from kbvqa.config import DATA_DIR, seed_everything
from kbvqa.data.toyworld import get_world
from kbvqa.experiments.runs import provenance
from kbvqa.experiments.work import WorkFolder, default_work_root, map_in_chunks, work_fingerprint
from kbvqa.metrics import paired_bootstrap
from kbvqa.models.checkpoints import load_vlm, role_model
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
                                  # tokens, and chapter 17's 48 cut 42 % of its root proposals (measured)
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

    def ppo_config(self) -> PPOConfig:
        return PPOConfig(learning_rate=self.learning_rate, batch_size=self.batch_size,
                         mini_batch_size=self.mini_batch_size, ppo_epochs=self.ppo_epochs, seed=self.seed)


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


def run_experiment(config: PPORunConfig, work: WorkFolder | None = None, log=print) -> dict:
    """The three stages; returns ``{"trajectories": summary, "steps": {...}, "rows": {...}, "records": {...}}``."""
    world = get_world(0)
    train_qs = lit_question_split(world)[0][:config.n_train]
    test_qs = lit_question_split(world)[1][:config.n_test]
    vlm = load_vlm("searcher")
    per_question, seconds = map_in_chunks(work, "trajectories", train_qs,
                                          lambda part: collect(world, vlm, part, config), config.chunk)
    trajectories = [t for nodes in per_question for t in nodes]
    log(f"collect: {len(trajectories)} trajectories from {len(train_qs)} questions, {seconds:.0f} s")
    rows, steps = {}, {}
    rows["base"] = (work.rows("base") if work is not None else None) or root_queries(world, vlm, test_qs, config)
    if work is not None:
        work.save_rows("base", rows["base"])
    for reward in config.rewards:
        name = f"ppo_{reward}"
        policy, steps[name] = train_ppo(trajectories, reward, config, work, log)
        rows[name] = (work.rows(name) if work is not None else None) or root_queries(world, policy, test_qs, config)
        if work is not None:
            work.save_rows(name, rows[name])
        log(f"{name}: greedy recall {np.mean([r['greedy_recall'] for r in rows[name]]):.3f}")
    kept = ("question_id", "depth", "evaluator", "rubric", "recall", "well_formed")   # no prompts: they stay in work
    return {"trajectories": trajectory_summary(trajectories), "steps": steps, "rows": summarise(rows),
            "records": rows, "trajectory_records": [{k: t[k] for k in kept} for t in trajectories],
            "collect_seconds": round(seconds, 1)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n-train", type=int, default=PPORunConfig.n_train)
    parser.add_argument("--n-test", type=int, default=PPORunConfig.n_test)
    parser.add_argument("--sim", type=int, default=PPORunConfig.sim)
    parser.add_argument("--rewards", nargs="+", default=list(REWARDS), choices=REWARDS)
    parser.add_argument("--seed", type=int, default=PPORunConfig.seed)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS_DIR)
    parser.add_argument("--work", type=Path, default=default_work_root("serts_ppo"))
    parser.add_argument("--fresh", action="store_true", help="redo every stage (empties this run's work folder)")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    seed_everything(args.seed)
    config = PPORunConfig(n_train=args.n_train, n_test=args.n_test, sim=args.sim, rewards=tuple(args.rewards),
                          seed=args.seed)
    model = role_model("searcher")
    work = WorkFolder(args.work, work_fingerprint({"config": asdict(config), "model": model}), fresh=args.fresh)
    print(f"work folder: {work.dir}", flush=True)
    t0 = time.perf_counter()
    result = run_experiment(config, work)
    command = "python -m kbvqa.experiments.serts_ppo " + " ".join(argv if argv is not None else sys.argv[1:])
    result.update(config=asdict(config), provenance=provenance(args.seed, model=model, command=command.strip(),
                                                               wall_seconds=round(time.perf_counter() - t0, 1)))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1) + "\n")
    for name, row in result["rows"].items():
        print(name, {k: v for k, v in row.items() if not isinstance(v, dict)}, row.get("sample_recall_diff"))
    return result
