"""Training the ladder's critic and generators (ReAG Tab. 4 rungs "+ critic", "+ SFT", "+ traces", "+ RL").

- ``train_ladder_critic``: the critic of chapter 21 (``kbvqa.reag.critic_train.train_critic``, 70 % hard /
  30 % soft negatives) with the ladder's budget, from the shipped model.
- ``training_examples``: the critic tuples (I_q, q, p) of the TRAIN split (50 % evidence, else a
  negative; ``rl.cold_start_examples``) with traces (cold start, Eq. 5: templated, or written by the
  ``reag_generator`` role's model told the answer and relevance, ``LadderConfig.traces``) or the
  answer alone (``<answer>y</answer>``: the "SFT" rung without reasoning).
- ``critic_heldout_auc``: the critic's separation of evidence from hard / soft negatives, before and
  after its training (chapter 21's held-out check).
- ``committed_model`` / ``shipped_model`` / ``shipped_generators``: the trained models a committed run
  shipped with its results (read back, no training); ``cold_started_policy``: GRPO's starting point
  for a chapter (the shipped cold start, or a short one).
- ``train_generator(kind)``: "sft" (Eq. 5 with alpha = 1, answer tokens only), "cold_start"
  (alpha = 0.8), "rl" (GRPO, Eq. 6-9, on evidence prompts of the train split, from a cold start);
  "zero_shot" returns the shipped model. ``copy_vlm`` copies a model before training it further.

Leaves out: the rung definitions and the tables (``kbvqa.reag.results``), evaluation and the rungs'
runs (``kbvqa.reag.ladder``, ``python -m kbvqa.experiments.reag_ladder``), the losses and loops
(``kbvqa.rl``).
"""
from __future__ import annotations

import copy
import time
from pathlib import Path

from kbvqa.experiments.work import load_saved_model, stage_checkpointing, trained_model
from kbvqa.models.checkpoints import load_vlm, role_model
from kbvqa.models.inference import inference_copy
from kbvqa.models.pretrain_mix import role_mix_config
from kbvqa.models.vlm import VLM
from kbvqa.parsers import parse_think_answer
from kbvqa.prompts.formats import Example
from kbvqa.reag import cold_start_examples
from kbvqa.reag.critic_train import CriticTrainConfig, train_critic
from kbvqa.reag.results import RESULTS_DIR
from kbvqa.reag.rewards import reag_grpo_rewards
from kbvqa.reag.traces import checked_trace, grpo_prompts, write_traces
from kbvqa.rl import GRPOConfig, SFTConfig, grpo_train, sft_train

GRPO_POOL = 400                   # GRPO's prompts: the first train queries (``train_generator``)


def trained_on(world, config) -> list:
    """The train queries the critic, the SFT and the cold start read: all but the ``heldout_train`` last."""
    train = list(world.kbvqa_train)
    if config.heldout_train > len(train) - GRPO_POOL:
        raise ValueError(f"heldout_train = {config.heldout_train} reaches GRPO's first {GRPO_POOL} of the "
                         f"{len(train)} train queries: use at most {len(train) - GRPO_POOL}")
    return train[: len(train) - config.heldout_train]


def heldout_queries(world, config) -> list:
    """The ``heldout_train`` last train queries, which no training stage reads (issue 53)."""
    trained_on(world, config)
    return list(world.kbvqa_train[len(world.kbvqa_train) - config.heldout_train:]) if config.heldout_train else []


def train_ladder_critic(world, config, vlm=None, work=None):
    """The critic of the ladder: ``config.critic_steps`` of ``kbvqa.reag.critic_train`` from the shipped
    model (or ``vlm``); with a ``work`` folder read back from it when a run saved it, else saved there
    (and a checkpoint every 10 steps that a rerun goes on from). Returned merged for inference
    (``kbvqa.models.inference``)."""

    cfg = CriticTrainConfig(steps=config.critic_steps, batch_size=16, seed=config.seed, hard_rate=0.7,
                            checkpoint_every=10 if work is not None else 0, heldout_train=config.heldout_train)

    def train():
        checkpointing, _ = stage_checkpointing(work, "critic")
        return train_critic(vlm or load_vlm("critic"), cfg, world=world, progress=False, in_place=vlm is None,
                            **checkpointing)[0]
    critic = trained_model(work, "critic", train, lambda: load_vlm("critic"), lora=cfg.lora, freeze_vision=False)
    return inference_copy(critic)              # it only scores from here on: merged, at KBVQA_PRECISION


def training_examples(world, config, traces: bool, work=None, log: dict | None = None) -> list:
    """Critic tuples of the train split as SFT examples: with traces (cold start; templated, or written
    by the ``reag_generator`` role's model when ``config.traces == "model"``: ``model_traces``) or the
    answer alone (``<answer>y</answer>``, the "SFT" rung)."""

    examples = cold_start_examples(world, config.train_examples, seed=config.seed, cfg=role_mix_config("rl_policy"),
                                   queries=trained_on(world, config) if config.heldout_train else None)
    if traces:
        if config.traces == "model":
            return model_traces(world, examples, config, work=work, log=log)
        return examples
    return [Example(e.prompt, f"<answer>{parse_think_answer(e.completion).answer}</answer>", "sft", meta=e.meta)
            for e in examples]


def model_traces(world, examples, config, work=None, log: dict | None = None, chunk: int = 128) -> list:
    """``write_traces`` by the ``reag_generator`` role's model for ``examples``, ``chunk`` at a time
    (a multiple of the generate batch, so the batches are those of one call). With a ``work`` folder
    each chunk's traces are kept as written (``data/traces.json``) and a rerun writes only the rest;
    traces kept for other examples raise ``ValueError``. A trace that does not follow its label keeps
    the template (``checked_trace``); when, after a chunk, under ``MIN_USABLE_TRACES`` of the traces
    written so far follow theirs, the writer is not asked again and the rest keep their templates
    (an hour of CPU saved on a writer that ignores the prompt). ``log["traces"]``: count, seconds,
    tuples asked, traces written and kept."""

    def key(e):
        return [list(e.meta["query_ids"]), list(e.meta["passage_ids"])]

    saved = (work.data("traces") if work is not None else None) or {"seconds": 0.0, "traces": []}
    done = saved["traces"]
    if [d["key"] for d in done] != [key(e) for e in examples[: len(done)]]:
        raise ValueError("the kept traces are for other examples (another seed or split): rerun with --fresh")
    writer, t0 = None, time.perf_counter()
    for start in range(len(done), len(examples), chunk):
        if done and _usable_share(examples, done) < MIN_USABLE_TRACES:
            break                      # the writer does not follow the prompt: the rest keep their templates
        writer = writer or load_vlm("reag_generator")
        new = write_traces(writer, world, examples[start:start + chunk], max_new_tokens=config.trace_tokens,
                           seed=config.seed, batch_size=config.batch_size, cfg=role_mix_config("reag_generator"),
                           check=False)                        # kept as written; checked below
        done += [{"key": key(e), "completion": e.completion, "source": e.meta["trace_source"]} for e in new]
        if work is not None:
            work.save_data("traces", {"seconds": round(saved["seconds"] + time.perf_counter() - t0, 1),
                                      "traces": done})
    out = [checked_trace(e, d["completion"]) if d["source"] == "teacher" else
           Example(e.prompt, e.completion, e.task, meta={**e.meta, "trace_source": "template"})
           for e, d in zip(examples, done)]
    out += [Example(e.prompt, e.completion, e.task, meta={**e.meta, "trace_source": "template"})
            for e in examples[len(done):]]            # not asked (see MIN_USABLE_TRACES)
    if log is not None:
        log["traces"] = {"n": len(out), "seconds": round(saved["seconds"] + time.perf_counter() - t0, 1),
                         "asked": len(done), "written": sum(d["source"] == "teacher" for d in done),
                         "from_model": sum(e.meta["trace_source"] == "teacher" for e in out),
                         "from_model_relevant": sum(e.meta["trace_source"] == "teacher" for e in out
                                                    if e.meta["relevant"])}
    return out


MIN_USABLE_TRACES = 0.05   # below this share of label-following traces the writer is not asked on


def _usable_share(examples, done) -> float:
    """The share of the traces written so far that state the relevance of their label."""
    ok = [d["source"] == "teacher" and checked_trace(e, d["completion"]).meta["trace_source"] == "teacher"
          for e, d in zip(examples, done)]
    return sum(ok) / len(ok)


def train_generator(kind: str, world, config, base=None, log: dict | None = None, work=None):
    """A fresh generator of ``kind`` ("zero_shot", "sft", "cold_start", "rl"), trained in this process
    from the shipped model; ``log[kind]`` gets its curve's start, end and seconds, and the per-step
    curves (SFT: loss, L_A, L_T; GRPO: every reward, the loss, groups with no spread, ...). With a ``work``
    folder an SFT stage saves a checkpoint every 10 steps and GRPO one every 2, each resuming from its
    last one, and model traces are kept as they are written (``model_traces``)."""

    if kind not in ("zero_shot", "sft", "cold_start", "rl"):
        raise ValueError(f"unknown generator kind {kind!r}")
    vlm = base if base is not None else load_vlm("rl_policy")
    t0, log = time.perf_counter(), log if log is not None else {}
    if kind in ("sft", "cold_start"):
        steps = config.cold_steps if kind == "cold_start" else config.sft_steps
        alpha = config.alpha if kind == "cold_start" else 1.0
        cfg = SFTConfig(alpha=alpha, steps=steps, batch_size=8, lr=config.sft_lr, warmup_steps=10,
                        seed=config.seed, progress=False, checkpoint_every=10 if work is not None else 0)
        examples = training_examples(world, config, traces=kind == "cold_start", work=work, log=log)
        checkpointing, before = stage_checkpointing(work, kind)
        t0 = time.perf_counter() - before      # the SFT's seconds, earlier runs' too (model traces: log["traces"])
        out = sft_train(vlm, examples, cfg, **checkpointing)
        log[kind] = {"steps": steps, "alpha": alpha, "loss_start": round(out.loss[0], 4),
                     "loss_end": round(sum(out.loss[-10:]) / len(out.loss[-10:]), 4),
                     "curve": {name: _rounded(getattr(out, name)) for name in ("steps", "loss", "answer_loss",
                                                                              "trace_loss")}}
    elif kind == "rl":
        if base is None:
            vlm = train_generator("cold_start", world, config, log=log)
        pool = trained_on(world, config)[:GRPO_POOL]
        cfg = GRPOConfig(group_size=config.group_size, prompts_per_step=config.prompts_per_step,
                         steps=config.grpo_steps, max_new_tokens=config.max_new_tokens, lr=config.grpo_lr,
                         seed=config.seed, progress=False, checkpoint_every=2 if work is not None else 0)
        checkpointing, before = stage_checkpointing(work, kind)
        t0 = time.perf_counter() - before
        out = grpo_train(vlm, grpo_prompts(world, pool, role_mix_config("rl_policy")), pool, cfg,
                         **reag_grpo_rewards(), **checkpointing)
        k = min(5, len(out.accuracy_reward))
        log[kind] = {"steps": config.grpo_steps, "accuracy_reward_first5": round(sum(out.accuracy_reward[:k]) / k, 4),
                     "accuracy_reward_last5": round(sum(out.accuracy_reward[-k:]) / k, 4),
                     "curves": {name: _rounded(values) for name, values in out.curves.items()}}
    if kind != "zero_shot":
        log[kind]["seconds"] = round(time.perf_counter() - t0, 1)
    return vlm


def critic_heldout_auc(world, config, work=None, n: int = 200) -> dict:
    """Chapter 21's check on the ladder's critic: ``separation_auc`` of the evidence against hard and
    soft negatives on ``n`` balanced held-out pairs of the test split (``heldout_critic_items``),
    scored by the shipped model ("before") and by the trained critic ("after"), over all pairs and
    within each InfoSeek split (``by_split``: creatures seen in training or new ones)."""
    from kbvqa.metrics import kbvqa_split_of, separation_auc
    from kbvqa.reag.critic import Critic, CriticConfig
    from kbvqa.reag.critic_eval import heldout_critic_items

    items, kinds = heldout_critic_items(world, n)
    splits = [kbvqa_split_of(q) for q, _ in items]
    out = {"n": n, "by_split": {}}
    for name, vlm in (("before", lambda: load_vlm("critic")), ("after", lambda: train_ladder_critic(world, config,
                                                                                                    work=work))):
        critic = Critic(vlm(), CriticConfig.for_profile(threshold=config.threshold))
        scores = [s[0] for s in critic.score_many(items)]
        out[name] = separation_auc(scores, kinds)
        for split in sorted(set(splits)):
            mine = [i for i, s in enumerate(splits) if s == split]
            out["by_split"].setdefault(split, {})[name] = separation_auc([scores[i] for i in mine],
                                                                         [kinds[i] for i in mine])
    return out


def _rounded(values) -> list[float]:
    return [round(float(v), 4) for v in values]


def committed_model(kind: str, out: Path | None = None):
    """The ladder's trained ``kind`` ("critic", "sft", "cold_start" or "rl") as the committed run saved
    it (``out/models/<kind>.pt``, ``out`` the results folder): the role's shipped model given the
    trained weights, so a chapter reruns a trained rung, or rescores with the trained critic,
    without training. A results folder without that model raises ``FileNotFoundError``."""
    if kind not in ("critic", "sft", "cold_start", "rl"):
        raise ValueError(f"kind must be 'critic', 'sft', 'cold_start' or 'rl', got {kind!r}")
    path = Path(out or RESULTS_DIR) / "models" / f"{kind}.pt"
    if not path.exists():
        raise FileNotFoundError(f"{path}: the committed run did not ship its {kind} model")
    if kind == "critic":      # trained as ``train_ladder_critic`` trains it
        return load_saved_model(path, load_vlm("critic"), lora=CriticTrainConfig().lora, freeze_vision=False)
    return load_saved_model(path, load_vlm("rl_policy"))


def shipped_model(kind: str, results: dict, out: Path | None = None):
    """The committed run's trained ``kind`` (``committed_model``) when it shipped it and made it with
    this profile's ``rl_policy`` (``results``' provenance), else None: the gpu profile's generator is
    another model, so a chapter there uses what it trained itself."""
    prov = results.get("provenance", {})
    made_by = (prov.get("roles") or {}).get("rl_policy", prov.get("model"))
    if made_by != role_model("rl_policy") or not (Path(out or RESULTS_DIR) / "models" / f"{kind}.pt").exists():
        return None
    return committed_model(kind, out)


def shipped_generators(results: dict, out: Path | None = None) -> dict:
    """{"rl": the committed GRPO generator} where ``shipped_model`` has it, else {}."""
    model = shipped_model("rl", results, out)
    return {} if model is None else {"rl": model}


def cold_started_policy(world, results: dict, steps: int, out: Path | None = None):
    """``(policy, curve)``: what GRPO starts from ("initialized from the SFT cold-start phase", §3.4):
    the committed ladder's cold start where ``shipped_model`` has it (curve None), else the
    ``rl_policy`` model after ``steps`` of a cold start on 128 templated tuples of the train split
    (chapter 22) and that run's ``SFTResult``."""
    shipped = shipped_model("cold_start", results, out)
    if shipped is not None:
        return shipped, None
    vlm = load_vlm("rl_policy")
    curve = sft_train(vlm, cold_start_examples(world, 128, seed=0),
                      SFTConfig(steps=steps, batch_size=8, warmup_steps=2, progress=False))
    return vlm, curve


def copy_vlm(vlm):
    """An independent copy of a VLM (its weights deep-copied), so training one leaves the other."""

    return VLM.from_model(copy.deepcopy(vlm.model), vlm.processor)
