"""ReAG's critic (§3.2, Eq. 4, supp. C.3 and D): keep a retrieved passage when P(Yes) > threshold.

    P^relevant = { p in P^noisy | Pr(Yes | C, q, I_q, p) > thresh }                          (Eq. 4)

- ``critic_prompt(image, question, passage)``: supp. D's critic prompt (``reag_critic`` and its
  system turn; ``short=True`` is the cpu-profile rendering the tiny model was pretrained on).
- ``Critic(vlm, config)``: P(Yes) of every (query, passage) pair from one forward pass per batch
  (``vlm.p_yes``: the next-token logits after the prompt, softmax over {Yes, No} or, as the
  official code, over the whole vocabulary). ``score_many`` flattens many queries into one
  batched call; ``filter`` applies Eq. 4 (a strict ">").
- ``keep_passages(scores, passages, threshold)``: Eq. 4 alone, for any scores.
- ``generator_prompt(query, kept)``: the generator's input; when the critic keeps nothing (j = 0)
  the generator sees the question and image alone (supp. D; ReflectiVA inserts a random passage
  instead, ReAG none).

Thresholds: ReAG's shipped scripts use 0.1 (``REAG_THRESHOLD``, our default: "filter
only what the critic is confident is irrelevant", supp. C.3 and Fig. 8); 0.5 is the command-line
default of the official code (``CLI_THRESHOLD``, "let the model decide"). Any threshold outside
[0, 1] raises ``ValueError``.

Leaves out: training the critic (``kbvqa.reag.critic_train``), its evaluation (``kbvqa.reag.critic_eval``), plots
(``kbvqa.viz.critic``), retrieval (``kbvqa.retrieval.multilevel``).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from kbvqa.config import PROFILE_DEFAULT, get_profile, resolve_profile_fields
from kbvqa.data.schema import open_image
from kbvqa.prompts import render_chat
from kbvqa.prompts.formats import reag_paragraphs

REAG_THRESHOLD = 0.1   # the official inference scripts (supp. A: "a yes-probability threshold equal to 0.1")
CLI_THRESHOLD = 0.5    # the official command-line default
__all__ = ["CLI_THRESHOLD", "REAG_THRESHOLD", "Critic", "CriticConfig", "CriticResult", "check_threshold",
           "critic_prompt", "generator_prompt", "keep_passages", "passage_text"]


def check_threshold(threshold) -> float:
    """``threshold`` as a float in [0, 1], else ``ValueError``."""
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or math.isnan(threshold) \
            or not 0.0 <= threshold <= 1.0:
        raise ValueError(f"critic threshold must be a number in [0, 1], got {threshold!r} "
                         f"(ReAG ships {REAG_THRESHOLD}; {CLI_THRESHOLD} is the CLI default)")
    return float(threshold)


@dataclass(frozen=True)
class CriticConfig:
    threshold: float = REAG_THRESHOLD   # keep p when P(Yes) > threshold (Eq. 4)
    batch_size: int = 16                # prompts per forward pass
    normalise: str = "pair"             # "pair": softmax over {Yes, No}; "vocab": over the vocabulary (official)
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's
    image_size: int | None | str = PROFILE_DEFAULT  # cpu: 56 px (tiny) or 112 (reader), by role; gpu: native
    share_prefix: bool = True           # prefill a query's system, picture and question once (kbvqa.models.prefix)

    def __post_init__(self):
        resolve_profile_fields(self, role="critic")
        check_threshold(self.threshold)
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be a positive int, got {self.batch_size!r}")
        if self.normalise not in ("pair", "vocab"):
            raise ValueError(f"normalise must be 'pair' or 'vocab', got {self.normalise!r}")
        if self.image_size is not None and (not isinstance(self.image_size, int) or self.image_size < 1):
            raise ValueError(f"image_size must be None or a positive int, got {self.image_size!r}")

    @classmethod
    def for_profile(cls, profile=None, **overrides) -> CriticConfig:
        """The config of ``profile`` (a ``Profile``, a name, or None: the active one): cpu, the short
        prompt at the critic's picture size (56 px for the tiny model, 112 px for the reader); gpu, the
        paper's prompt and native images."""

        prof = profile if hasattr(profile, "is_gpu") else get_profile(profile)
        return cls(**{"short_prompts": prof.short_prompts, "image_size": prof.image_size_of("critic"), **overrides})


def passage_text(passage) -> str:
    """The text of a ``Passage``, a retrieved passage (``.passage``) or a plain string."""
    if isinstance(passage, str):
        return passage
    inner = getattr(passage, "passage", passage)
    return str(getattr(inner, "text", inner))


def passage_id(passage) -> str | None:
    return getattr(getattr(passage, "passage", passage), "id", None)


def shown_image(image, size: int | None):
    """``image`` (any reference) as the PIL image the model is shown: ``size`` x ``size`` (bilinear,
    as the pretraining views) or unchanged when ``size`` is None."""
    from PIL import Image

    im = open_image(image)
    if im is not None and size is not None and im.size != (size, size):
        im = im.resize((size, size), Image.Resampling.BILINEAR)
    return im


def critic_prompt(image, question: str, passage, short: bool = True) -> list[dict]:
    """Supp. D's critic chat for one (I_q, q, p); ``image`` may be None (text-only)."""

    return render_chat("reag_critic", images=[image] if image is not None else [], short=short,
                       question=question, passage=passage_text(passage))


def keep_passages(scores: Sequence[float], passages: Sequence, threshold: float) -> list:
    """Eq. 4: the passages whose P(Yes) is strictly above ``threshold``, in their order.

    Appendix: ReAG | Eq. 4 | tests/test_critic.py::test_eq4_keeps_strictly_above_the_threshold | reag-eq4
    """
    threshold = check_threshold(threshold)
    if len(scores) != len(passages):
        raise ValueError(f"{len(scores)} scores for {len(passages)} passages")
    return [p for s, p in zip(scores, passages) if float(s) > threshold]


@dataclass
class CriticResult:
    """One query's filtering: what was kept (P^relevant), dropped, and every P(Yes)."""

    kept: list
    dropped: list
    scores: list[float]           # P(Yes) per input passage, in input order
    threshold: float
    meta: dict = field(default_factory=dict)

    @property
    def all_filtered(self) -> bool:
        """True when the critic kept nothing: the generator then sees question + image alone."""
        return not self.kept

    def kept_ids(self) -> list:
        return [passage_id(p) for p in self.kept]


class Critic:
    """P(Yes) scoring and Eq. 4 filtering over a VLM (anything with ``p_yes(prompts, ...)``)."""

    def __init__(self, vlm, config: CriticConfig | None = None):
        self.vlm, self.config = vlm, config or CriticConfig()

    def prompts(self, query, passages: Sequence) -> list[list[dict]]:
        """One critic chat per passage; the query image is opened and resized once."""
        image = shown_image(query.image, self.config.image_size) if query.image is not None else None
        return [critic_prompt(image, query.question, p, short=self.config.short_prompts) for p in passages]

    def score_many(self, items: Sequence[tuple]) -> list[list[float]]:
        """P(Yes) for every passage of every ``(query, passages)`` item, in batched forward passes
        over all items together (a query with no passages gets [])."""
        prompts, sizes = [], []
        for query, passages in items:
            prompts += self.prompts(query, passages)
            sizes.append(len(passages))
        if not prompts:
            return [[] for _ in items]
        extra = {"share_prefix": True} if self.config.share_prefix else {}   # same scores, fewer tokens computed
        flat = self.vlm.p_yes(prompts, normalise=self.config.normalise, batch_size=self.config.batch_size, **extra)
        flat = [float(v) for v in (flat.tolist() if hasattr(flat, "tolist") else flat)]
        if len(flat) != len(prompts):
            raise ValueError(f"p_yes returned {len(flat)} scores for {len(prompts)} prompts")
        out, start = [], 0
        for n in sizes:
            out.append(flat[start:start + n])
            start += n
        return out

    def score(self, query, passages: Sequence) -> list[float]:
        return self.score_many([(query, passages)])[0]

    def filter_many(self, items: Sequence[tuple], threshold: float | None = None) -> list[CriticResult]:
        """Eq. 4 for each ``(query, passages)`` (``threshold`` overrides the config's)."""
        t = check_threshold(self.config.threshold if threshold is None else threshold)
        results = []
        for (_, passages), scores in zip(items, self.score_many(items)):
            kept = keep_passages(scores, passages, t)
            kept_set = {id(p) for p in kept}
            results.append(CriticResult(kept, [p for p in passages if id(p) not in kept_set], scores, t))
        return results

    def filter(self, query, passages: Sequence, threshold: float | None = None) -> CriticResult:
        return self.filter_many([(query, passages)], threshold)[0]


def generator_prompt(query, passages: Sequence, short: bool = True, image_size: int | None = 56) -> list[dict]:
    """ReAG's generator chat (supp. D): the question and the kept passages as ``<paragraph>``
    blocks; with no passage (j = 0, every passage filtered) the question and image alone."""

    image = shown_image(query.image, image_size) if query.image is not None else None
    images = [image] if image is not None else []
    if not passages:
        return render_chat("reag_generator_no_passage", images=images, short=short, question=query.question)
    return render_chat("reag_generator", images=images, short=short, question=query.question,
                       paragraphs=reag_paragraphs([passage_text(p) for p in passages]))
