"""ReAG's ablation ladder (Tab. 4), the pieces chapter 24 reruns live: settings, evidence, evaluation.

- ``LadderConfig``: the ladder's settings and training budgets (critic 150 steps x 16, SFT and cold
  start 150 steps x 8, GRPO 30 steps x 4 prompts x G = 4; CPU, one thread) and ``fingerprint``.
- ``rung_passages(rung, evidence)``: the passages the generator reads on a rung (none, every coarse
  passage, the critic-kept coarse ones, the critic-kept coarse + fine ones; an oracle rung: the
  evidence alone).
- ``retrieve_evidence``: coarse and coarse + fine retrieval (``ladder_retriever``: ``MultilevelRetriever``,
  the profile's grounder) and the critic's P(Yes) of every retrieved passage; ``load_evidence`` reads
  it from / writes it to ``evidence.json`` (passage ids and P(Yes), so the chapter reuses the committed
  critic scores without retraining the critic) under ``evidence_fingerprint`` (settings + critic
  model), chunk by chunk so that an interrupted run scores only the rest.
- ``evaluate``: greedy answers of a generator on one rung, scored by the official scorer of each
  question's kind (``kbvqa.metrics.official_correct``: InfoSeek pointwise, E-VQA multi-answer IoU;
  ReAG's task reward only trains); ``run_rungs``: the records of some rungs, the generators
  built in order (``kbvqa.reag.ladder_train``).
- ``real_subset_ladder(name, n)``: the four zero-shot rungs on ``n`` queries of InfoSeek or E-VQA
  with a small Wikipedia knowledge base (``KnowledgeBase``); gpu profile only: it needs the
  official annotation files and network access, so the cpu profile passes ``n = 0`` (``{}``).

Leaves out: the rung definitions and the tables (``kbvqa.reag.results``), training the critic and
generators (``kbvqa.reag.ladder_train``), the resumable run that writes ``data/experiments/reag/``
(``python -m kbvqa.experiments.reag_ladder``).
"""
from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from kbvqa.config import get_profile
from kbvqa.data import DatasetNotAvailable, load_dataset
from kbvqa.data.datasets import load_knowledge_base
from kbvqa.experiments.work import map_in_chunks, trained_model
from kbvqa.metrics import kbvqa_split_of, official_correct
from kbvqa.models.checkpoints import load_vlm, role_model
from kbvqa.models.inference import inference_copy
from kbvqa.models.loading import free_memory
from kbvqa.parsers import parse_think_answer
from kbvqa.reag.critic import Critic, CriticConfig, check_threshold, generator_prompt
from kbvqa.reag.ladder_train import (  # noqa: F401
    committed_model,
    copy_vlm,
    heldout_queries,
    shipped_generators,
    shipped_model,
    train_generator,
    train_ladder_critic,
    trained_on,
)
from kbvqa.reag.results import CHEAP_RUNGS, ORACLE_RUNGS, RUNG_BY_NAME, RUNGS, Rung
from kbvqa.reag.rewards import format_reward
from kbvqa.retrieval.multilevel import MultilevelConfig, MultilevelRetriever
from kbvqa.retrieval.subject_grounding import get_grounder

# the roles whose models the ladder loads: the generator of every rung, untrained (zero-shot) and the
# trained ones' start (ladder_train.train_generator), one base as in ReAG Tab. 4; the critic
# (ladder_train.train_ladder_critic), also the fine retrieval's grounder in the cpu profile; the trace
# writer of the cold start (LadderConfig.traces = "model")
LADDER_ROLES = ("rl_policy", "critic", "reag_generator")
TRACE_SOURCES = ("template", "model")


@dataclass(frozen=True)
class LadderConfig:
    limit: int = 200              # first N test queries (the split has 544)
    seed: int = 0                 # training data, batches, sampling
    k: int | None = None          # pages per retrieval stage; None: the profile's (cpu 5, gpu 20 as ReAG)
    threshold: float = 0.1        # critic threshold (ReAG's shipped 0.1)
    critic_steps: int = 150       # critic fine-tune (CriticTrainConfig's default; chapter 21: 60), batch 16
    sft_steps: int = 150          # answer-only SFT, batch 8
    cold_steps: int = 150         # cold start with traces, batch 8
    alpha: float = 0.8            # Eq. 5 answer weight
    traces: str = "template"      # cold-start traces: "template" (the toy world's) | "model" (written by
                                  # the reag_generator role's model, told the answer and relevance, supp. D)
    trace_tokens: int = 128       # a model trace writer's tokens per trace
    train_examples: int = 1024    # critic tuples the SFT / cold start read (50 % evidence)
    sft_lr: float = 1e-4          # both SFT runs (ReAG: 2e-6 on 3B/7B)
    grpo_steps: int = 30          # GRPO steps from the cold start
    group_size: int = 4           # G (ReAG: 8)
    prompts_per_step: int = 4     # prompts per GRPO step (ReAG: 128)
    grpo_lr: float = 2e-5         # (ReAG: 1e-6)
    max_new_tokens: int = 96      # generation cap, evaluation and GRPO
    batch_size: int = 16          # prompts per generate call
    heldout_train: int = 0        # the last train queries no stage trains on (issue 53: 200, for the cold-start
                                  # gate and the retrieval-depth check); 0: the committed run's data

    def __post_init__(self):
        ints = ("limit", "critic_steps", "sft_steps", "cold_steps", "train_examples", "grpo_steps",
                "prompts_per_step", "max_new_tokens", "batch_size", "trace_tokens")
        for name in ints:
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.k is not None and (not isinstance(self.k, int) or self.k < 1):
            raise ValueError(f"k must be None or a positive int, got {self.k!r}")
        if not isinstance(self.group_size, int) or self.group_size < 2:
            raise ValueError(f"group_size must be an int >= 2, got {self.group_size!r}")
        if not 0 <= self.alpha <= 1 or not self.sft_lr > 0 or not self.grpo_lr > 0:
            raise ValueError("need 0 <= alpha <= 1, sft_lr > 0 and grpo_lr > 0")
        if not 0.0 < check_threshold(self.threshold) < 1.0:
            raise ValueError(f"the ladder's critic threshold must lie in (0, 1), got {self.threshold!r}: 0 keeps "
                             "every passage (the coarse rung, no critic) and 1 none")
        if not isinstance(self.heldout_train, int) or isinstance(self.heldout_train, bool) or self.heldout_train < 0:
            raise ValueError(f"heldout_train must be an int >= 0, got {self.heldout_train!r}")
        if self.traces not in TRACE_SOURCES:
            raise ValueError(f"traces must be one of {TRACE_SOURCES}, got {self.traces!r}")

    def fingerprint(self, *fields: str) -> str:
        """Short hash of the given fields (all when none), the seed always included."""
        values = asdict(self)
        chosen = {f: values[f] for f in (fields or values)} | {"seed": self.seed}
        return hashlib.sha256(json.dumps(chosen, sort_keys=True).encode()).hexdigest()[:12]


def rung_passages(rung: Rung, evidence: dict) -> list:
    """The passages the generator reads on ``rung`` for one query's ``evidence`` record
    (``retrieve_evidence``): none, every coarse passage, the critic-kept coarse ones, or the
    critic-kept coarse + fine ones (an oracle rung: the evidence alone). Passages are ids; an
    all-filtered query reads none."""
    if rung.oracle:
        return list(evidence["evidence"][:1])
    if not rung.coarse:
        return []
    stage = "fine" if rung.fine else "coarse"
    ids, scores = evidence[stage], evidence[f"{stage}_scores"]
    if not rung.critic:
        return list(ids)
    return [p for p, s in zip(ids, scores) if s > evidence["threshold"]]


# ------------------------------------------------------------------------------ the pieces
def _round(score):
    return None if score is None else round(float(score), 4)


def ladder_retriever(world, config: LadderConfig, grounder=None) -> MultilevelRetriever:
    """The ladder's coarse + fine retriever over ``world.documents`` (the profile's k unless
    ``config.k``, the profile's grounder unless ``grounder``)."""
    overrides = {"k": config.k} if config.k else {}
    return MultilevelRetriever(world.documents, config=MultilevelConfig.for_profile(get_profile(), **overrides),
                               grounder=grounder or get_grounder(get_profile()))


def retrieve_evidence(world, queries, critic_vlm, config: LadderConfig, retriever=None, grounder=None) -> dict:
    """{query id: {coarse, fine (passage ids), coarse_scores, fine_scores (P(Yes)), threshold,
    evidence}} for ``queries``: coarse and coarse + fine retrieval (``MultilevelRetriever``, the
    profile's grounder) and the critic's P(Yes) of every retrieved passage (None without a critic)."""
    profile = get_profile()
    retriever = retriever or ladder_retriever(world, config, grounder)
    fine = retriever.retrieve(queries)
    coarse = [[p for d, _ in r.coarse for p in retriever.index.by_id[d].passages] for r in fine]
    fine = [[rp.passage for rp in r.passages] for r in fine]
    n = len(queries)
    if critic_vlm is None:          # retrieval alone (the chapter's live check)
        scores = [[None] * len(c) for c in coarse] + [[None] * len(f) for f in fine]
    else:
        critic = Critic(critic_vlm, CriticConfig.for_profile(profile, threshold=config.threshold))
        scores = critic.score_many([(q, c) for q, c in zip(queries, coarse)] + [(q, f) for q, f in zip(queries, fine)])
    return {q.id: {"coarse": [p.id for p in c], "fine": [p.id for p in f], "coarse_scores": [_round(s) for s in sc],
                   "fine_scores": [_round(s) for s in sf], "threshold": config.threshold,
                   "evidence": list(q.evidence_ids)}
            for q, c, f, sc, sf in zip(queries, coarse, fine, scores[:n], scores[n:])}


def evaluate(generator, world, queries, evidence: dict, rung: Rung, config: LadderConfig) -> list[dict]:
    """Greedy answers of ``generator`` on ``rung`` (ReAG generator prompt with the rung's passages),
    one record per query, its answer scored by the official scorer of its kind
    (``kbvqa.metrics.official_correct``) and tagged with its split."""
    profile = get_profile()   # the generator's prompt and pictures: those of the model playing rl_policy
    short, size = profile.short_prompts, profile.image_size_of("rl_policy")
    passages = [rung_passages(rung, evidence[q.id]) for q in queries]
    prompts = [generator_prompt(q, [world.passage(p) for p in ps], short, size)
               for q, ps in zip(queries, passages)]
    outputs = generator.generate(prompts, n=1, max_new_tokens=config.max_new_tokens, temperature=0.0,
                                 seed=config.seed, batch_size=config.batch_size) if prompts else []
    records = []
    for q, ps, out in zip(queries, passages, outputs):
        text = str(out[0])
        answer = parse_think_answer(text).answer
        records.append({"id": q.id, "answer_type": q.answer_type, "split": kbvqa_split_of(q), "answer": answer,
                        "gold": list(q.answers), "correct": official_correct(answer, q),
                        "format": float(format_reward(text)), "passages": len(ps),
                        "evidence_in": bool(set(ps) & set(q.evidence_ids)), "output": text[:400]})
    return records


DEPTH_SWITCH = 0.05                # issue 53: k = 20 only when accuracy given the evidence drops this much


def retrieval_depth(generator, world, queries, config: LadderConfig, ks: Sequence[int] = (5, 20),
                    retriever_for=None) -> dict:
    """Issue 53's check of the paper's k = 20: the coarse rung (every retrieved passage, no critic) at
    each ``k`` pages on ``queries`` (held-out train queries, never test ones), and, on the queries
    whose evidence is retrieved at every ``k``, the accuracy at the largest ``k`` minus the smallest
    with a paired 95 % bootstrap interval. ``switch`` is True when that difference is <= -DEPTH_SWITCH
    and its interval excludes 0 (the generator drowns in the extra passages); else the ladder keeps
    the smallest ``k``. ``retriever_for(k)`` builds the retriever (default ``ladder_retriever``)."""
    from dataclasses import replace

    from kbvqa.metrics.intervals import paired_bootstrap

    ks = sorted({int(k) for k in ks})
    if len(ks) < 2 or ks[0] < 1:
        raise ValueError(f"ks needs two or more depths >= 1, got {ks!r}")
    if not queries:
        raise ValueError("retrieval_depth needs at least one query")
    coarse = RUNG_BY_NAME["coarse"]
    by_k = {}
    for k in ks:
        cfg = replace(config, k=k)
        retriever = retriever_for(k) if retriever_for is not None else ladder_retriever(world, cfg)
        evidence = retrieve_evidence(world, queries, None, cfg, retriever=retriever)
        by_k[k] = evaluate(generator, world, queries, evidence, coarse, cfg)
    small, large = by_k[ks[0]], by_k[ks[-1]]
    both = [i for i in range(len(queries)) if all(by_k[k][i]["evidence_in"] for k in ks)]
    summary = {"ks": ks, "n": len(queries), "evidence_in_all": len(both),
               "passages": {k: sum(r["passages"] for r in by_k[k]) / len(queries) for k in ks},
               "recall": {k: sum(r["evidence_in"] for r in by_k[k]) / len(queries) for k in ks},
               "accuracy": {k: sum(bool(r["correct"]) for r in by_k[k]) / len(queries) for k in ks}}
    if both:
        diff = paired_bootstrap([bool(large[i]["correct"]) for i in both], [bool(small[i]["correct"]) for i in both],
                                seed=config.seed)
        summary["given_evidence"] = {k: sum(bool(by_k[k][i]["correct"]) for i in both) / len(both) for k in ks}
        summary["difference"] = {"mean": diff.diff, "low": diff.low, "high": diff.high}
        summary["switch"] = diff.diff <= -DEPTH_SWITCH and diff.high < 0
    else:
        summary["given_evidence"], summary["difference"], summary["switch"] = None, None, False
    return {"summary": summary, "records": {k: by_k[k] for k in ks}}


# ------------------------------------------------------------------------------ the run
def evidence_fingerprint(config: LadderConfig) -> str:
    """What ``evidence.json`` depends on: the retrieval and critic settings and the model of the
    ``critic`` role (it scores every passage, and grounds the query on the cpu), so moving the critic
    onto another model recomputes the evidence instead of reusing the old critic's scores."""
    return f"{config.fingerprint('k', 'threshold', 'critic_steps')}:{role_model('critic')}"


def load_evidence(world, queries, config: LadderConfig, path: Path | None = None, log: dict | None = None,
                  write: bool = True, work=None, chunk: int = 50) -> dict:
    """``retrieve_evidence`` of ``queries`` with the ladder's critic, read from / written to ``path``
    (``evidence.json`` of the results: passage ids and P(Yes), so the chapter reuses the committed
    critic scores without retraining the critic); recomputed when ``evidence_fingerprint`` changed.
    ``write=False`` (a chapter reading the committed file) computes what is missing without writing:
    in the gpu profile the fingerprint differs, and the committed run's file must stay as it is.
    ``work`` (a ``kbvqa.experiments.work.WorkFolder``) keeps the trained critic for a rerun, and the
    file is written every ``chunk`` queries (with the seconds spent so far), so a rerun of an
    interrupted run scores only the queries it lacks."""
    if not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1:
        raise ValueError(f"chunk must be a positive int, got {chunk!r}")
    key = evidence_fingerprint(config)     # chapter 30's pipeline rows depend on it too
    stored = json.loads(Path(path).read_text()) if path is not None and Path(path).exists() else {}
    current = stored.get("fingerprint") == key
    have = stored.get("queries", {}) if current else {}
    seconds = stored.get("seconds", 0.0) if current else 0.0
    missing = [q for q in queries if q.id not in have]
    if missing:
        t0 = time.perf_counter()
        critic_vlm = train_ladder_critic(world, config, work=work)
        retriever = ladder_retriever(world, config)
        for start in range(0, len(missing), chunk):      # written chunk by chunk: a rerun scores the rest
            have.update(retrieve_evidence(world, missing[start:start + chunk], critic_vlm, config, retriever))
            if path is not None and write:
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_text(json.dumps({"fingerprint": key, "critic_model": role_model("critic"),
                                                  "seconds": round(seconds + time.perf_counter() - t0, 1),
                                                  "queries": have}, separators=(",", ":")))
        seconds += time.perf_counter() - t0
    if log is not None and missing:
        log["critic"] = {"steps": config.critic_steps, "seconds": round(seconds, 1)}
    return {q.id: have[q.id] for q in queries}


def run_rungs(world, queries, evidence: dict, config: LadderConfig, rungs=None, log: dict | None = None,
              done: dict | None = None, on_records=None, work=None, generators: dict | None = None
              ) -> dict[str, list[dict]]:
    """Records of each rung in ``rungs`` (names; default all) for ``queries``. Rungs listed in
    ``done`` are skipped; ``on_records(rung, records)`` is called as each rung finishes. Trained
    generators are built in order and the cold start is reused as the start of GRPO. With a ``work``
    folder (``kbvqa.experiments.work.WorkFolder``) each trained generator is saved as it is made and
    read back by a rerun, the SFT stages checkpoint every 10 steps, a rung's records are kept three
    batches at a time (``map_in_chunks``) and ``log`` is saved beside them. ``generators`` ({kind:
    model}, e.g. ``{"rl": committed_model("rl")}``) are used as given instead of trained."""
    names = list(rungs or RUNG_BY_NAME)
    unknown = [n for n in names if n not in RUNG_BY_NAME]
    if unknown:
        raise ValueError(f"unknown rungs {unknown}; expected some of {list(RUNG_BY_NAME)}")
    done, log, out, models = done or {}, log if log is not None else {}, {}, dict(generators or {})
    readers = {}                     # each generator merged for inference (kbvqa.models.inference)
    for rung in (r for r in RUNGS + ORACLE_RUNGS if r.name in names and r.name not in done):
        kind = rung.generator
        if kind not in models:
            if kind == "zero_shot":
                models[kind] = load_vlm("rl_policy")
            else:
                if kind == "rl" and "cold_start" not in models:
                    models["cold_start"] = trained_generator("cold_start", world, config, log, work)
                base = copy_vlm(models["cold_start"]) if kind == "rl" else None
                models[kind] = trained_generator(kind, world, config, log, work, base=base)
        if kind not in readers:
            readers[kind] = inference_copy(models[kind])
        def answer(qs, model=readers[kind], rung=rung):
            return evaluate(model, world, qs, evidence, rung, config)
        out[rung.name], _ = map_in_chunks(work, f"rung_{rung.name}", list(queries), answer,
                                          chunk=3 * config.batch_size)     # the same batches as in one call
        if on_records is not None:
            on_records(rung.name, out[rung.name])
        if work is not None:
            work.drop_data(f"rung_{rung.name}")
    return out


def critic_agreement(world, queries, evidence: dict, config: LadderConfig, critic_model: str,
                     out: Path | None = None, stage: str = "coarse") -> dict:
    """A live rescoring of ``queries``' ``stage`` passages by the critic that made ``evidence`` (the
    shipped ``committed_model("critic")``), against the P(Yes) the run kept: the passages rescored,
    the share whose Eq. 4 decision at the run's threshold is the same, and the largest |P(Yes)
    difference| (bf16 on a GPU or another thread count moves the last digits). When the evidence
    was made by another model than this profile's critic (``critic_model`` differs from
    ``role_model("critic")``: the gpu profile scores it in the notebook) nothing is rescored."""
    if critic_model != role_model("critic"):
        return {"passages": 0, "same_decision": None, "max_difference": None,
                "skipped": f"the evidence was scored by {critic_model}, not by this profile's critic"}
    critic = Critic(committed_model("critic", out), CriticConfig.for_profile(threshold=config.threshold))
    pairs = [(q, [world.passage(p) for p in evidence[q.id][stage]]) for q in queries]
    live = [s for row in critic.score_many(pairs) for s in row]
    kept = [s for q in queries for s in evidence[q.id][f"{stage}_scores"]]
    same = [(a > config.threshold) == (b > config.threshold) for a, b in zip(live, kept)]
    return {"passages": len(live), "same_decision": round(sum(same) / len(same), 4) if same else None,
            "max_difference": round(max((abs(a - b) for a, b in zip(live, kept)), default=0.0), 4)}


def trained_generator(kind: str, world, config: LadderConfig, log: dict, work=None, base=None):
    """``train_generator(kind)`` (``base``: the model it starts from, a copy of the cold start for
    "rl"), or the generator a run saved in ``work`` read back into a fresh ``rl_policy`` model."""
    def save_log():
        work.save_log(log)
    return trained_model(work, kind, lambda: train_generator(kind, world, config, base=base, log=log, work=work),
                         lambda: load_vlm("rl_policy"), on_saved=save_log)


# ------------------------------------------------------------------------------ a real subset (gpu profile)
class KnowledgeBase:
    """The two things the ladder asks of a world: ``documents`` and ``passage(id)``."""

    def __init__(self, documents: Sequence):
        self.documents = list(documents)
        self._passages = {p.id: p for d in self.documents for p in d.passages}

    def passage(self, passage_id: str):
        if passage_id not in self._passages:
            raise KeyError(f"no passage {passage_id!r} in the knowledge base")
        return self._passages[passage_id]


def real_subset_ladder(name: str = "infoseek", n: int = 50, max_docs: int = 2000, config=None) -> dict:
    """{rung: records} of the cheap rungs on the first ``n`` queries of dataset ``name``
    ("infoseek" or "evqa"); ``{}`` when ``n == 0``, and ``{}`` with a warning that says why when the
    dataset or its knowledge base cannot be read here (``DatasetNotAvailable``)."""
    if name not in ("infoseek", "evqa"):
        raise ValueError(f"the ReAG ladder runs on 'infoseek' or 'evqa', got {name!r}")
    if not isinstance(n, int) or n < 0:
        raise ValueError(f"n must be an int >= 0, got {n!r}")
    if n == 0:
        return {}
    config = config or LadderConfig(limit=n)
    try:
        queries = load_dataset(name, limit=n)
        kb = KnowledgeBase(load_knowledge_base(name, max_docs=max_docs, queries=queries))
    except DatasetNotAvailable as err:        # InfoSeek's annotations are not on the hub: say so, go on
        import warnings

        warnings.warn(f"the real-data ladder is skipped: {str(err).splitlines()[0]}", stacklevel=2)
        return {}
    evidence = retrieve_evidence(kb, queries, load_vlm("critic"), config)
    free_memory()            # the critic (gpu: 3B) is held by no name: its memory goes back before the generator
    generator = load_vlm("rl_policy")
    return {rung: evaluate(generator, kb, queries, evidence, RUNG_BY_NAME[rung], config) for rung in CHEAP_RUNGS}
