"""Train the cpu-profile retrieval encoders on the toy world, evaluate them, ship them.

``python -m kbvqa.models.encoders_train [--steps N] [--seed S] [--out DIR]`` rebuilds
``data/encoders/`` on one CPU thread; the card records the time and the evaluation. MiniLM stays
frozen; the CNN, both linear maps and the pooling scores learn with symmetric InfoNCE (rows and
columns of each score matrix) on batches made of whole look-alike families, so look-alikes are the
in-batch hard negatives (PreFLMR-style training for RCTS Eq. 2-4). Score matrices: picture ->
document text (MaxSim and pooled cosine), query [question; picture] (Eq. 3) -> document text
(MaxSim), picture -> another picture of the entity (MaxSim and pooled). A second InfoNCE over the
*wrong* items (``info_nce``) puts look-alikes right after the entity itself.

Training data: the views of ``kbvqa_train`` and of the first ``mc_views`` ``mc_train`` items (with a
crop to the subject's box), and the knowledge base itself: every document's title + summary and
canonical picture, also pasted into clutter (``paste_augment``) so that distractors and unseen
entities, which have no training views, take part. No test or ``mc_kb`` view is used.
``evaluate_documents``: kbvqa_test view -> its document among all (Recall@1/5, family@5);
``evaluate_examples``: mc_test query -> mc_kb examples by text, image and hybrid tokens.

Leaves out: the encoders (``encoders.py``, ``vision_encoder.py``) and any retrieval index.
"""
from __future__ import annotations

import argparse
import random
import time
from dataclasses import asdict, dataclass

import numpy as np
import torch
import torch.nn.functional as F

from kbvqa.config import seed_everything
from kbvqa.data import TOYWORLD_VERSION, ToyWorldConfig, get_world, open_image
from kbvqa.experiments.runs import git_commit, non_negative_int, positive_int
from kbvqa.models.encoders import ENCODERS_DIR, EncoderConfig, ToyEncoders, document_text
from kbvqa.models.vision_encoder import VisionConfig, crop_box, cutout, paste_augment, uint8_to_tensor

CODE_FILES = ("encoders", "encoders_train", "vision_encoder")   # their state is recorded in the card
CODE_PATHS = tuple(f"kbvqa/models/{f}.py" for f in CODE_FILES)


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0                   # model init, batch order and augmentation
    world_seed: int = 0             # toy world seed (get_world)
    small_world: bool = False       # ToyWorldConfig.small(): the unit tests' world
    dim: int = 128                  # d of the shared space
    channels: tuple[int, ...] = (16, 32, 64, 128)  # CNN widths (stem, blocks)
    steps: int = 300                # optimiser steps (about 5 minutes on one thread)
    families_per_batch: int = 12    # batch = every member of this many families
    lr: float = 3e-3                # AdamW, cosine decay to 0 after 5 % warm-up
    weight_decay: float = 0.01
    temperature: float = 0.05       # InfoNCE temperature on cosine / mean-MaxSim scores
    mc_views: int = 1200            # mc_train views used besides every kbvqa_train view
    augment_per_entity: int = 8     # paste_augment pictures made per knowledge-base picture
    augment_rate: float = 0.25      # chance a picture of an entity with views is an augmented one
    canonical_rate: float = 0.3     # chance an item's second picture is the canonical one
    family_weight: float = 1.0      # weight of the look-alikes-next InfoNCE (see info_nce)
    threads: int = 1                # torch threads (the book's machines share 2 cores)

    def __post_init__(self):
        if not (self.steps >= 1 and self.families_per_batch >= 2 and self.temperature > 0 and self.lr > 0
                and 0 <= self.canonical_rate <= 1 and 0 <= self.augment_rate <= 1 and self.mc_views >= 0
                and self.augment_per_entity >= 1 and self.family_weight >= 0 and self.dim >= 1):
            raise ValueError(f"TrainConfig: need steps >= 1, families_per_batch >= 2, temperature > 0, "
                             f"lr > 0, rates in [0, 1], mc_views >= 0, augment_per_entity >= 1, "
                             f"family_weight >= 0, dim >= 1; got {self}")


def world_for(cfg: TrainConfig):

    return get_world(cfg.world_seed, ToyWorldConfig.small() if cfg.small_world else None)


def _pad(states: list[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """List of [l_i, w] -> ([N, L, w] zero-padded, bool mask [N, L])."""
    n, length = len(states), max(len(s) for s in states)
    out = states[0].new_zeros(n, length, states[0].shape[-1])
    mask = torch.zeros(n, length, dtype=torch.bool)
    for i, s in enumerate(states):
        out[i, :len(s)], mask[i, :len(s)] = s, True
    return out, mask


def _states(enc: ToyEncoders, texts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    """Frozen MiniLM states of ``texts``, padded to one length: ([N, T, 384], mask)."""
    parts = []
    for i in range(0, len(texts), 64):
        h, m = enc.text_states(texts[i:i + 64])
        parts += [s[mm.bool()] for s, mm in zip(h, m)]
    return _pad(parts)


class TrainingData:
    """Pictures (uint8), frozen text states and, per entity, which pictures / questions it has."""

    def __init__(self, world, enc: ToyEncoders, cfg: TrainConfig):
        rng = random.Random(cfg.seed)
        self.world, self.entities = world, list(world.entities)
        self.family = torch.tensor([[f.id for f in world.families].index(e.family_id) for e in self.entities])
        self.families = [[i for i, e in enumerate(self.entities) if e.family_id == f.id] for f in world.families]
        index = {e.id: i for i, e in enumerate(self.entities)}
        canon = [world.image_of(world.document_of(e.id).meta["image_id"]) for e in self.entities]
        sprites = [cutout(c) for c in canon]
        pics, self.canon = [np.asarray(c) for c in canon], list(range(len(canon)))
        self.augs, self.views = [[] for _ in self.entities], [[] for _ in self.entities]
        for i, e in enumerate(self.entities):       # knowledge-base pictures, pasted into clutter
            others = [j for j, o in enumerate(self.entities) if o.family_id != e.family_id]
            for _ in range(cfg.augment_per_entity):
                clutter = [sprites[j] for j in rng.sample(others, rng.randint(1, 3))]
                self.augs[i].append(len(pics))
                pics.append(paste_augment(sprites[i], rng, clutter=clutter))
        seen, questions, self.view_questions, self.family_questions = {}, [], {}, {}
        views = world.kbvqa_train + world.mc_train[:cfg.mc_views]
        for q in views:
            vid, i = q.meta["view_id"], index[q.meta["entity_id"]]
            if vid not in seen:
                image = world.image_of(vid)
                seen[vid] = len(pics)
                pics += [np.asarray(image), np.asarray(crop_box(image, q.box, rng.uniform(0.05, 0.4)))]
                self.views[i] += [seen[vid], seen[vid] + 1]     # the view and a crop to its box
            for p in (seen[vid], seen[vid] + 1):
                self.view_questions.setdefault(p, []).append(len(questions))
            self.family_questions.setdefault(q.meta["family"], []).append(len(questions))
            questions.append(q.question)
        self.generic = [i for i, q in enumerate(views) if q.meta["noun"] in ("creature", "animal")]
        self.pics = torch.from_numpy(np.stack(pics))
        self.doc_states = _states(enc, [document_text(world.document_of(e.id)) for e in self.entities])
        unique = sorted(set(questions))
        u_index = {t: k for k, t in enumerate(unique)}
        self.question_ids = [u_index[t] for t in questions]
        self.question_states = _states(enc, unique)

    def _picture(self, i: int, rng: random.Random, cfg: TrainConfig, avoid: int = -1) -> int:
        use_views = self.views[i] and rng.random() >= cfg.augment_rate
        pool = [p for p in (self.views[i] if use_views else self.augs[i]) if p != avoid]
        return rng.choice(pool) if pool else self.canon[i]

    def batch(self, rng: random.Random, cfg: TrainConfig) -> dict:
        fams = rng.sample(self.families, min(cfg.families_per_batch, len(self.families)))
        ents = [i for f in fams for i in f]
        first = [self._picture(i, rng, cfg) for i in ents]
        second = [self.canon[i] if rng.random() < cfg.canonical_rate else self._picture(i, rng, cfg, a)
                  for i, a in zip(ents, first)]
        qs = []
        for i, a in zip(ents, first):
            pool = (self.view_questions.get(a) or self.family_questions.get(self.entities[i].family_id)
                    or self.generic)
            qs.append(self.question_ids[rng.choice(pool)])
        flip = torch.tensor([rng.random() < 0.5 for _ in range(2 * len(ents))])
        pix = self.pics[first + second]
        pix = torch.where(flip.view(-1, 1, 1, 1), pix.flip(2), pix)
        docs, doc_mask = self.doc_states
        qst, q_mask = self.question_states
        return {"pixels": uint8_to_tensor(pix), "docs": (docs[ents], doc_mask[ents]),
                "questions": (qst[qs], q_mask[qs]), "family": self.family[ents]}


def maxsim_matrix(q: torch.Tensor, q_mask: torch.Tensor, d: torch.Tensor, d_mask: torch.Tensor) -> torch.Tensor:
    """[B, N] late-interaction scores (RCTS Eq. 4 divided by the query's token count) of normalised
    tokens q [B, Lq, d] against d [N, Ld, d]."""
    (b, lq, c), (n, ld, _) = q.shape, d.shape
    s = (q.reshape(b * lq, c) @ d.reshape(n * ld, c).T).view(b, lq, n, ld)
    s = s.masked_fill_(~d_mask.view(1, 1, n, ld), -2.0).max(-1).values  # best document token
    qm = q_mask.to(s.dtype).unsqueeze(-1)
    return (s * qm).sum(1) / qm.sum(1)


def info_nce(scores: torch.Tensor, temperature: float, family: torch.Tensor | None = None,
             family_weight: float = 0.0) -> torch.Tensor:
    """Symmetric InfoNCE: item i of the rows matches item i of the columns. With ``family``, add
    ``family_weight`` x a multi-positive InfoNCE over the *other* items, whose positives are the same
    family's: among the wrong answers, look-alikes should come first (the gold item is left out,
    else a confident gold would satisfy it without ordering the rest)."""
    target = torch.arange(len(scores))
    logits = scores / temperature
    loss = (F.cross_entropy(logits, target) + F.cross_entropy(logits.T, target)) / 2
    if family is not None and family_weight > 0:
        eye = torch.eye(len(scores), dtype=torch.bool)
        same = (family[:, None] == family[None, :]) & ~eye
        rows = same.any(1)
        for lg in (logits, logits.T):
            lg = lg.masked_fill(eye, float("-inf"))
            term = lg.logsumexp(1) - lg.masked_fill(~same, float("-inf")).logsumexp(1)
            loss = loss + family_weight / 2 * term[rows].mean()
    return loss


def contrastive_loss(enc: ToyEncoders, batch: dict, cfg: TrainConfig) -> torch.Tensor:
    img_tokens, img_pooled = enc.project_image(batch["pixels"])
    img_tokens, img_pooled = F.normalize(img_tokens, dim=-1), F.normalize(img_pooled, dim=-1)
    n = len(img_tokens) // 2
    doc_tokens, doc_mask, doc_pooled = enc.project_text(*batch["docs"])
    doc_tokens, doc_pooled = F.normalize(doc_tokens, dim=-1), F.normalize(doc_pooled, dim=-1)
    q_tokens, q_mask, _ = enc.project_text(*batch["questions"])
    ones = torch.ones(n, img_tokens.shape[1], dtype=torch.bool)
    t1, t2, p1, p2 = img_tokens[:n], img_tokens[n:], img_pooled[:n], img_pooled[n:]
    query = torch.cat([F.normalize(q_tokens, dim=-1), t1], 1)
    query_mask = torch.cat([q_mask.bool(), ones], 1)
    terms = [maxsim_matrix(t1, ones, doc_tokens, doc_mask), maxsim_matrix(query, query_mask, doc_tokens, doc_mask),
             maxsim_matrix(t1, ones, t2, ones), p1 @ doc_pooled.T, p2 @ doc_pooled.T, p1 @ p2.T]
    return sum(info_nce(s, cfg.temperature, batch["family"], cfg.family_weight) for s in terms) / len(terms)


def train(cfg: TrainConfig, world=None, log_every: int = 50, verbose: bool = True):
    """Train from scratch; returns (encoders in eval mode, losses per step, seconds per stage)."""
    torch.set_num_threads(cfg.threads)
    seed_everything(cfg.seed)
    world = world or world_for(cfg)
    enc = ToyEncoders(EncoderConfig(dim=cfg.dim, vision=VisionConfig(channels=tuple(cfg.channels))))
    t0 = time.perf_counter()
    data = TrainingData(world, enc, cfg)
    t1 = time.perf_counter()
    opt = torch.optim.AdamW(enc.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    warm = max(1, cfg.steps // 20)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (
        1 + np.cos(np.pi * min(1.0, s / cfg.steps))))
    rng, losses = random.Random(cfg.seed), []
    enc.train()
    for step in range(cfg.steps):
        loss = contrastive_loss(enc, data.batch(rng, cfg), cfg)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
        if verbose and (step % log_every == 0 or step == cfg.steps - 1):
            print(f"step {step:4d}  loss {np.mean(losses[-log_every:]):.3f}  "
                  f"{time.perf_counter() - t1:.0f}s", flush=True)
    enc.eval()
    return enc, losses, {"data_s": round(t1 - t0, 1), "train_s": round(time.perf_counter() - t1, 1)}


# --- evaluation -----------------------------------------------------------------------------------
def maxsim_scores(queries: list[torch.Tensor], docs: list[torch.Tensor], chunk: int = 64) -> torch.Tensor:
    """[Q, N] RCTS Eq. 4 scores (sum over query tokens) of token lists, computed in chunks."""
    d, d_mask = _pad(docs)
    rows = []
    for i in range(0, len(queries), chunk):
        q, q_mask = _pad(queries[i:i + chunk])
        rows.append(maxsim_matrix(q, q_mask, d, d_mask) * q_mask.sum(1, keepdim=True))
    return torch.cat(rows)


def _rank_metrics(scores: torch.Tensor, relevant: torch.Tensor, name: str = "R") -> dict:
    """``name``@1/5: share of rows with a relevant item in the top 1/5 (Recall@K for one gold item,
    hit@K for many); P@5: share of the top 5 that is relevant."""
    hits = relevant.gather(1, scores.topk(5, dim=1).indices).float()
    return {f"{name}@1": round(float(hits[:, 0].mean()), 4), f"{name}@5": round(float(hits.amax(1).mean()), 4),
            "P@5": round(float(hits.mean()), 4)}


def evaluate_documents(enc, world, max_views: int | None = None) -> dict:
    """kbvqa_test view -> its entity's document among every KB document, per test kind. family@5:
    share of the top 5 from the entity's look-alike family (5 members: 1.0 at best, 0.05 by chance)."""

    views = {}
    for q in world.kbvqa_test:
        views.setdefault(q.meta["view_id"], q)
    qs, docs = list(views.values())[:max_views], world.documents
    images, canon = [open_image(q.image) for q in qs], [open_image(d.image) for d in docs]
    crops, texts = [crop_box(im, q.box) for im, q in zip(images, qs)], [document_text(d) for d in docs]
    gold = torch.tensor([[d.meta["entity_id"] == q.meta["entity_id"] for d in docs] for q in qs])
    family = torch.tensor([[d.meta["family"] == q.meta["family"] for d in docs] for q in qs])
    v_tok, d_tok, c_tok = enc.encode_image(images), enc.encode_text(texts), enc.encode_image(canon)
    t_tok = enc.encode_text([q.question for q in qs])
    v_pool, d_pool, c_pool = enc.pooled(images=images), enc.pooled(texts=texts), enc.pooled(images=canon)
    runs = {"pooled": v_pool @ d_pool.T, "maxsim": maxsim_scores(v_tok, d_tok),
            "maxsim_question_only": maxsim_scores(t_tok, d_tok),
            "maxsim_with_question": maxsim_scores([torch.cat(p) for p in zip(t_tok, v_tok)], d_tok),
            "pooled_box_crop": enc.pooled(images=crops) @ d_pool.T,
            "maxsim_box_crop": maxsim_scores(enc.encode_image(crops), d_tok),
            "image_to_canonical_pooled": v_pool @ c_pool.T, "image_to_canonical_maxsim": maxsim_scores(v_tok, c_tok)}
    kinds = {"all": torch.ones(len(qs), dtype=torch.bool)}
    for kind in ("unseen_question", "unseen_entity"):
        kinds[kind] = torch.tensor([q.meta.get("split_kind") == kind for q in qs])
    out = {"n_views": len(qs), "n_documents": len(docs)}
    for name, s in runs.items():
        out[name] = {}
        for kind, sel in ((k, v) for k, v in kinds.items() if v.any()):
            m = _rank_metrics(s[sel], gold[sel])
            del m["P@5"]
            m["family@5"] = round(float(family[sel].gather(1, s[sel].topk(5, dim=1).indices).float().mean()), 4)
            out[name][kind] = m
    return out


def evaluate_examples(enc, world, max_queries: int | None = None, max_kb: int | None = None) -> dict:
    """mc_test query -> mc_kb examples by text, image and hybrid [E_T; E_I] MaxSim (+ pooled hybrid).
    Relevant: ``useful`` = same hidden rule and key value (its answer is the query's answer);
    ``entity`` = same entity."""

    qs, kb = world.mc_test[:max_queries], world.mc_kb[:max_kb]
    q_im, k_im = [open_image(q.image) for q in qs], [open_image(k.image) for k in kb]
    q_t, k_t = enc.encode_text([q.question for q in qs]), enc.encode_text([k.question for k in kb])
    q_i, k_i = enc.encode_image(q_im), enc.encode_image(k_im)
    runs = {"text": maxsim_scores(q_t, k_t), "image": maxsim_scores(q_i, k_i),
            "hybrid": maxsim_scores([torch.cat(p) for p in zip(q_t, q_i)], [torch.cat(p) for p in zip(k_t, k_i)]),
            "hybrid_pooled": enc.pooled([q.question for q in qs], q_im) @ enc.pooled([k.question for k in kb], k_im).T}
    same = {key: torch.tensor([[k.meta[key] == q.meta[key] for k in kb] for q in qs])
            for key in ("rule_id", "key_value", "entity_id")}
    relevant = {"useful": same["rule_id"] & same["key_value"], "entity": same["entity_id"]}
    out = {"n_queries": len(qs), "n_kb": len(kb)}
    for name, s in runs.items():
        out[name] = {r: _rank_metrics(s, rel, "hit") for r, rel in relevant.items()}
    return out


# --- command line ---------------------------------------------------------------------------------
def main(argv=None) -> dict:

    ap = argparse.ArgumentParser(description="Train, evaluate and save the cpu-profile retrieval encoders.")
    ap.add_argument("--steps", type=positive_int, default=TrainConfig.steps)
    ap.add_argument("--seed", type=non_negative_int, default=TrainConfig.seed)
    ap.add_argument("--out", default=str(ENCODERS_DIR), help="output folder (default: data/encoders)")
    args = ap.parse_args(argv)
    cfg = TrainConfig(steps=args.steps, seed=args.seed)
    world = world_for(cfg)
    enc, losses, seconds = train(cfg, world)
    t0 = time.perf_counter()
    evaluation = {"documents": evaluate_documents(enc, world), "examples": evaluate_examples(enc, world)}
    seconds["eval_s"] = round(time.perf_counter() - t0, 1)
    card = {"train_config": asdict(cfg), "seed": cfg.seed, "commit": git_commit(CODE_PATHS),
            "toyworld_version": TOYWORLD_VERSION, "world_seed": cfg.world_seed, "torch": torch.__version__,
            "torch_threads": cfg.threads, "seconds": seconds, "created": time.strftime("%Y-%m-%d %H:%M:%S"),
            "loss_first_10": round(float(np.mean(losses[:10])), 4),
            "loss_last_10": round(float(np.mean(losses[-10:])), 4), "evaluation": evaluation}
    enc.save(args.out, card)
    pooled, maxsim = evaluation["documents"]["pooled"]["all"], evaluation["documents"]["maxsim"]["all"]
    print(f"saved to {args.out}; trained in {seconds['train_s']} s; image -> document R@1/R@5: pooled "
          f"{pooled['R@1']}/{pooled['R@5']}, MaxSim {maxsim['R@1']}/{maxsim['R@5']}")
    return card


if __name__ == "__main__":
    main()
