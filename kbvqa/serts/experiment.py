"""The SeRTS experiments on the toy literature (Tab. 3, 4, 6 and 9 analogues): the methods, the
models and one chunk of records, which the runner repeats and chapters 17 and 18 rerun live.

Held-out literature questions (``experiment_questions``: ``pretrain_mc_lit.lit_question_split``, never
seen in pretraining), three seeds (42, 43, 44, as the paper), eight retrieval methods
(``kbvqa.serts.results.METHODS``): BM25 with the question as query, the gold abstracts (Tab. 4's GROUND
TRUTH ceiling), self-reflection (Alg. 2) and SeRTS (Alg. 1, MAX UCB C = 0.1) at Sim 6 and 12, and SeRTS
at Sim 12 with the RANDOM and C = 0 selection policies (Tab. 6). Two setups (``SETUPS``) run the same
search with different models (``make_models``):

- ``scripted``: the mechanism. ``kbvqa.serts.oracle.noisy_reformulator`` proposes (adds each synonym of the
  gold abstracts with probability 0.5, goes off topic with probability 0.2, ignores the feedback) and
  ``kbvqa.serts.oracle.rubric_evaluator`` grades with the toy App. A rubric: competent parts, so the search
  itself is what is measured. Its "tokens" are words. The analogue of the paper's GPT-3.5 rows.
- ``model``: honesty. The model the ``searcher`` role gives (``kbvqa.models.load_vlm``: the cpu
  profile's tiny checkpoint until SeRTS moves onto the reader) is proposer and evaluator (temperature
  0.7, App. C.2). The analogue of the paper's Llama2-7B rows, on fewer questions (it is slow).

In both setups the answer (Tab. 10 prompt) is written by that model with greedy decoding, cached
per (question, abstracts), so the answer differs between methods only when the abstracts do; ROUGE-2
and ROUGE-SU4 (recall and F) are against the ideal answers. Questions run in chunks of ``chunk``
(4); ``run_chunk`` gives every (method, seed, chunk) fresh models seeded by ``seed * 1000 + chunk``,
so chapter 17 can rerun chunk 0 live and get the committed records back. A searching method's record
also keeps, per graded node, what its query found and how it was graded (``node_diagnostics``; read by
``kbvqa.serts.analysis``). ``ExperimentConfig`` holds every setting.

Leaves out: running every chunk and writing ``data/experiments/serts/``
(``python -m kbvqa.experiments.serts_experiment``), tables and figures (``kbvqa.serts.results``,
``kbvqa.viz.serts``), PPO (chapter 18, ``kbvqa.rl.ppo``).
"""
from __future__ import annotations

from dataclasses import dataclass

from kbvqa.metrics.retrieval import retrieval_prf
from kbvqa.metrics.rouge import rouge_n, rouge_su
from kbvqa.models.pretrain_mc_lit import lit_question_split, rubric_score
from kbvqa.serts.evaluate import toy_literature_task
from kbvqa.serts.oracle import noisy_reformulator, rubric_evaluator
from kbvqa.serts.prompts import answer_prompt, vlm_generator
from kbvqa.serts.results import METHODS, Method
from kbvqa.serts.search import SeRTSConfig, run_self_reflection, run_serts

SETUPS = ("scripted", "model")


METHOD_BY_NAME = {m.name: m for m in METHODS}


@dataclass(frozen=True)
class ExperimentConfig:
    scripted_n: int = 80          # held-out questions for the scripted setup (of 180)
    model_n: int = 8              # held-out questions for the model setup (tiny: ~60 s per chunk and seed)
    seeds: tuple = (42, 43, 44)   # the paper's three seeds
    chunk: int = 4                # questions searched together (the unit a live rerun repeats)
    top_k: int = 5                # BM25 abstracts per query
    c: float = 0.1                # C of Eq. 1 for MAX UCB rows
    max_prompt_abstracts: int = 3  # O_d^anc shown to the proposer (the tiny model's short context)
    temperature: float = 0.7      # proposer / evaluator sampling (App. C.2)
    max_new_tokens: int = 48      # per proposer / evaluator call (they write ~30)
    answer_tokens: int = 48       # per answer (greedy; ideal answers are ~15 words)
    include_prob: float = 0.5     # scripted proposer: chance to add each synonym
    off_topic_prob: float = 0.2   # scripted proposer: chance of an off-topic query
    short_prompts: bool = True    # the records' model is the cpu profile's in every profile, so are its prompts
    share_prefix: bool = False    # proposer / grader prompts prefill their common opening once (the rubric,
                                  # Tab. 1/2's instructions; kbvqa.models.prefix); off: the committed runs' path

    def __post_init__(self):
        if self.scripted_n < 1 or self.model_n < 0 or self.chunk < 1 or not self.seeds:
            raise ValueError("need scripted_n >= 1, model_n >= 0, chunk >= 1 and at least one seed")


def make_models(setup: str, world, vlm, seed: int, config: ExperimentConfig):
    """Fresh ``(proposer, evaluator)`` generators for one (method, seed, chunk)."""

    if setup == "scripted":
        return noisy_reformulator(world, config.include_prob, config.off_topic_prob, seed), rubric_evaluator(world)
    if setup == "model":
        gen = vlm_generator(vlm, config.max_new_tokens, config.temperature, seed=seed,
                            share_prefix=config.share_prefix)
        return gen, gen
    raise ValueError(f"setup must be one of {SETUPS}, got {setup!r}")


def search_config(method: Method, config: ExperimentConfig, seed: int) -> SeRTSConfig:
    """The search settings of one method: the experiment's own prompts (``config.short_prompts``),
    never the active profile's, since a live rerun must repeat the committed records in any profile."""
    return SeRTSConfig(sim=method.sim, c=config.c, policy=method.policy, top_k=config.top_k, seed=seed,
                       max_prompt_abstracts=config.max_prompt_abstracts, short_prompts=config.short_prompts)


def search_docs(method: Method, questions, proposer, evaluator, retrieve, doc_text, config: ExperimentConfig,
                seed: int):
    """(abstract ids per question, SeRTSResult per question or None) for one method."""

    if method.kind == "bm25":
        return [list(retrieve(q.question, config.top_k)) for q in questions], None
    if method.kind == "gold":
        return [list(q.gold_doc_ids) for q in questions], None
    cfg = search_config(method, config, seed)
    run = run_serts if method.kind == "serts" else run_self_reflection
    results = run([q.question for q in questions], proposer, evaluator, retrieve, doc_text, cfg)
    return [list(r.docs) for r in results], results


def answer_all(vlm, pairs, doc_text, config: ExperimentConfig, cache: dict) -> None:
    """Greedy Tab. 10 answers for every new (question, abstracts) pair, in batches of 8 (the batch
    composition is that of the chunk, so a live rerun of a chunk batches the same way)."""

    todo = list(dict.fromkeys(p for p in pairs if p not in cache))
    if not todo:
        return
    gen = vlm_generator(vlm, config.answer_tokens, temperature=0.0, seed=0, batch_size=8)
    for start in range(0, len(todo), 8):
        batch = todo[start:start + 8]
        out = gen([answer_prompt(q, [doc_text(d) for d in docs]) for q, docs in batch])
        for pair, (text, tokens) in zip(batch, out):
            cache[pair] = (text, int(tokens))


def run_chunk(setup: str, world, vlm, questions, seed: int, chunk: int, config: ExperimentConfig,
              methods=METHODS, answer_cache: dict | None = None) -> list[dict]:
    """One record per (method, question) for one chunk and seed (the unit a live rerun repeats)."""

    retrieve, doc_text = toy_literature_task(world)
    cache = {} if answer_cache is None else answer_cache
    found = []
    for method in methods:
        proposer, evaluator = make_models(setup, world, vlm, seed * 1000 + chunk, config)
        docs, results = search_docs(method, questions, proposer, evaluator, retrieve, doc_text, config, seed)
        found.append((method, docs, results))
    answer_all(vlm, [(q.question, tuple(d)) for _, docs, _ in found for q, d in zip(questions, docs)],
               doc_text, config, cache)
    records = []
    for method, docs, results in found:
        for i, (q, d) in enumerate(zip(questions, docs)):
            answer, answer_tokens = cache[(q.question, tuple(d))]
            s = retrieval_prf(d, q.gold_doc_ids)
            r2, su4 = rouge_n(answer, q.solution, 2), rouge_su(answer, q.solution, 4)
            rec = {"setup": setup, "method": method.name, "seed": seed, "chunk": chunk, "id": q.id, "docs": d,
                   "precision": s.precision, "recall": s.recall, "f1": s.f1, "hit": s.hit,
                   "rouge2_r": r2.recall, "rouge2_f": r2.f, "rougesu4_r": su4.recall, "rougesu4_f": su4.f,
                   "answer": answer, "answer_tokens": answer_tokens}
            if results is not None:
                r = results[i]
                graded = r.nodes[1:]
                rec.update(proposer_tokens=r.proposer_tokens, evaluator_tokens=r.evaluator_tokens,
                           proposer_calls=r.proposer_calls, evaluator_calls=r.evaluator_calls,
                           nodes=len(graded), stopped_early=r.stopped_early, best_score=r.best.score,
                           well_formed=sum(n.well_formed for n in graded),
                           score_parsed=sum(n.score_parsed for n in graded),
                           **node_diagnostics(world, q, r, retrieve(q.question, config.top_k)))
            records.append(_rounded(rec))
    return records


def node_diagnostics(world, q, result, question_docs) -> dict:
    """Per graded node of one search, in creation order (what chapter 17 reads to say why a search
    helps or not): ``node_depth``; ``node_docs``, what its own query retrieved (D_i); ``node_gold``,
    the gold abstracts among them; ``node_new_gold``, those the question's own BM25 top k
    (``question_docs``, the BM25 row) missed; ``node_score``, the evaluator's R_i (None: unparsed);
    ``node_rubric``, the toy world's rubric grade of what was graded (``rubric_score``: the score a
    perfect evaluator would give D_i u O_d^anc)."""
    gold, seen = set(q.gold_doc_ids), set(question_docs)
    graded = result.nodes[1:]
    return {"node_depth": [n.depth for n in graded],
            "node_docs": [list(n.docs) for n in graded],
            "node_gold": [len(set(n.docs) & gold) for n in graded],
            "node_new_gold": [len((set(n.docs) & gold) - seen) for n in graded],
            "node_score": [n.score if n.score_parsed else None for n in graded],
            "node_rubric": [rubric_score(world, q, n.context_docs) for n in graded]}


def _rounded(rec: dict) -> dict:
    return {k: round(v, 5) if isinstance(v, float) else v for k, v in rec.items()}


def experiment_questions(world, setup: str, config: ExperimentConfig):

    held = lit_question_split(world)[1]
    return held[: config.scripted_n if setup == "scripted" else config.model_n]
