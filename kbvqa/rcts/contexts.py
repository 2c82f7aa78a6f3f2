"""Reasoning contexts with self-consistent evaluation (RCTS §3.2, Fig. 3, App. C.1).

For every knowledge-base pair (image I, question Q_kb, gold answer A_kb) the model writes N_c
candidate reasoning contexts {C_i} with the "Get Reasoning Context" prompt (Fig. 3a); each C_i is
checked by N_p answer predictions with the "Get Predicted Answer by Reasoning Context" prompt
(Fig. 3b), scored against A_kb, and the best-scoring candidate becomes the pair's C_i (§3.1:
x_i = (I_i, Q_i, A_i, C_i)):

    Score_i = (1 / N_p) * sum_j 1[ prediction_ij == A_kb ]        (paper, §3.2)
    C* = C_{argmax_i Score_i}   (first maximum on ties, as ``np.argmax`` in the official code)

Batching. Candidates are produced and checked in *waves* of ``wave_size`` candidates: one
``vlm.generate(prompts, n=wave)`` call writes a wave's candidates of every pair of a call group,
one more call draws all N_p checks of all of them (many prompts x n). ``wave_size=None`` is one
wave (2 calls per group); ``wave_size=1`` is the official loop (CoT_construct.py: one candidate,
then its N_p checks). Early stop: a pair leaves after the wave in which a candidate is right N_p
times out of N_p, as the official loop stops at the first perfect candidate; with one wave the
stop saves nothing but the choice is the same.

Paper versus official code (``yannqi/RCTS-RAG``, module/kg_construct), behind switches
(default = paper):
- ``answer_slot``: the paper fills {Answer} with A_kb; the code passes ScienceQA's whole answer
  string, "The answer is X.\\nBECAUSE: <lecture> <solution>", so the writer sees the gold rationale.
- ``check_system``: App. C.1 gives "You are a helpful assistant."; the code uses the dataset's
  zero-shot answer system prompt (``get_system_prompt('woRAG')``).
- ``scoring``: the code adds +1 per right, 0 per wrong and -1 per unparseable answer ("Bad");
  we divide by N_p so both rules live on one scale.
- sampling: the code's CoT_Pred configs use temperature 0.7, top-p 0.9, repetition penalty 1.05,
  512 new tokens; they are our defaults (the cpu profile shortens the outputs).

Leaves out: saving/loading, the oracle baseline and the Tab. 6 accuracy (``kbvqa.rcts.context_kb``),
pictures (``kbvqa.viz.contexts``).
"""
from __future__ import annotations

import functools
import random
from dataclasses import asdict, dataclass, field

from kbvqa.config import get_profile, progress_enabled
from kbvqa.data.schema import Query, open_image, option_letters
from kbvqa.metrics.mathvision import mathvision_is_equal
from kbvqa.parsers import parse_rcts_answer, parse_rcts_free_answer
from kbvqa.prompts import load_prompt, render_chat, render_prompt, system_name

VARIANTS = ("paper", "official")
VERDICTS = ("correct", "wrong", "unparsed")


@dataclass
class ReasoningContextConfig:
    """How reasoning contexts are generated and checked. Paper and official code: N_c = N_p = 10."""

    n_candidates: int = 10            # N_c: candidate contexts per KB pair
    n_predictions: int = 10           # N_p: answer predictions that check one candidate
    wave_size: int | None = None      # candidates written + checked per round; None: all N_c at once
    early_stop: bool = True           # stop a pair after the wave with a perfect candidate (code)
    scoring: str = "paper"            # "paper": share right; "official": (right - unparseable) / N_p
    answer_slot: str = "paper"        # "paper": "The answer is X."; "official": + "BECAUSE: <solution>"
    check_system: str = "paper"       # "paper": "You are a helpful assistant."; "official": zero-shot one
    temperature: float = 0.7          # sampling of both stages (official CoT_Pred configs)
    top_p: float = 0.9
    repetition_penalty: float = 1.05
    max_context_tokens: int = 512     # length of a candidate context
    max_answer_tokens: int = 512      # length of one check answer ("The answer is X. ...")
    short_prompts: bool = False       # cpu profile: the prompts' _short renderings
    image_size: int | None = None     # resize images to this square side (cpu profile: 56 px)
    pairs_per_call: int = 1           # KB pairs whose prompts share one generate call
    batch_size: int = 16              # prompts per forward pass inside one call
    seed: int = 0                     # every call's sampling seed derives from it

    def __post_init__(self):
        for name in ("n_candidates", "n_predictions", "max_context_tokens", "max_answer_tokens",
                     "pairs_per_call", "batch_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.wave_size is not None and (not isinstance(self.wave_size, int) or self.wave_size < 1):
            raise ValueError(f"wave_size must be None or a positive int, got {self.wave_size!r}")
        for name in ("scoring", "answer_slot", "check_system"):
            if getattr(self, name) not in VARIANTS:
                raise ValueError(f"{name} must be one of {VARIANTS}, got {getattr(self, name)!r}")
        if not self.temperature > 0:
            raise ValueError(f"temperature must be > 0 (candidates are sampled), got {self.temperature!r}")
        if not 0 < self.top_p <= 1 or not self.repetition_penalty > 0:
            raise ValueError("need 0 < top_p <= 1 and repetition_penalty > 0")
        if self.image_size is not None and (not isinstance(self.image_size, int) or self.image_size < 1):
            raise ValueError(f"image_size must be None or a positive int, got {self.image_size!r}")
        if not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {self.seed!r}")

    @property
    def waves(self) -> list[int]:
        """Candidates per wave, e.g. N_c = 10, wave_size = 4 -> [4, 4, 2]."""
        size = self.wave_size or self.n_candidates
        return [min(size, self.n_candidates - s) for s in range(0, self.n_candidates, size)]

    @classmethod
    def for_profile(cls, profile=None, **overrides) -> ReasoningContextConfig:
        """The paper's sizes in the gpu profile (the cpu sizes below at ``KBVQA_SIZES=cpu``); in the cpu
        profile N_c = N_p = 4, short prompts,
        the reasoner's picture size (56 px for the tiny model, 112 px for the reader), short outputs
        and 8 pairs per call (the cpu models' training format)."""

        profile = profile or get_profile()
        sizes = {} if profile.full_sizes else dict(n_candidates=4, n_predictions=4, max_context_tokens=64,
                                                   max_answer_tokens=16)
        if not profile.is_gpu:
            sizes.update(short_prompts=True, image_size=profile.image_size_of("reasoner"), pairs_per_call=8,
                         batch_size=32)
        return cls(**{**sizes, **overrides})

    @classmethod
    def official(cls, base: ReasoningContextConfig | None = None, **overrides) -> ReasoningContextConfig:
        """``base`` (default: the defaults) switched to the official code: its answer slot, check
        system prompt and -1 scoring, and its loop of one candidate per wave."""
        values = asdict(base or cls())
        values.update(scoring="official", answer_slot="official", check_system="official", wave_size=1)
        return cls(**{**values, **overrides})


# --- prompts -------------------------------------------------------------------------------------
def _resized(ref, size: int):
    from PIL import Image

    image = open_image(ref)
    return image if image.size == (size, size) else image.resize((size, size), Image.Resampling.BILINEAR)


def query_image(q: Query, size: int | None = None):
    """The pair's image as a lazy reference (resized to ``size`` px if given), or None."""
    if q.image is None:
        return None
    return q.image if size is None else functools.partial(_resized, q.image, size)


def question_text(q: Query) -> str:
    """The {Question} slot: RCTS's ScienceQA form (question, "Context:", "Choices: (A) ...") for
    multiple choice, the question (and its context line, if any) otherwise."""
    if q.options:
        choices = " ".join(f"({letter}) {text}" for letter, text in zip(option_letters(len(q.options)), q.options))
        return render_prompt("rcts_mc", question=q.question, context=q.context or "N/A", choices=choices)
    return f"{q.question}\nContext: {q.context}" if q.context else q.question


def answer_text(q: Query, slot: str = "paper") -> str:
    """The {Answer} slot: "The answer is X." (paper); the official code appends "BECAUSE: " and the
    pair's worked solution (ScienceQA: lecture + solution)."""
    if slot not in VARIANTS:
        raise ValueError(f"slot must be one of {VARIANTS}, got {slot!r}")
    if slot == "official" and q.solution:
        return render_prompt("rcts_mc_answer", letter=q.answer, reason=q.solution)
    return f"The answer is {q.answer}."


def _images(q: Query, config: ReasoningContextConfig) -> list:
    image = query_image(q, config.image_size)
    return [] if image is None else [image]


def context_prompt(q: Query, config: ReasoningContextConfig) -> list[dict]:
    """App. C.1 "Get Reasoning Context" for pair ``q`` (Fig. 3a)."""
    return render_chat("rcts_reasoning_context", images=_images(q, config), short=config.short_prompts,
                       question=question_text(q), answer=answer_text(q, config.answer_slot))


def check_prompt(q: Query, context: str, config: ReasoningContextConfig) -> list[dict]:
    """App. C.1 "Get Predicted Answer by Reasoning Context" for ``q`` and one candidate (Fig. 3b).
    ``check_system="official"`` swaps the system turn for the zero-shot answer prompt (choice items)."""
    chat = render_chat("rcts_answer_with_context", images=_images(q, config), short=config.short_prompts,
                       question=question_text(q), thought_process=context)
    if config.check_system == "official" and q.options:
        text = load_prompt(system_name("rcts_mc", short=config.short_prompts))
        chat = [{"role": "system", "content": [{"type": "text", "text": text}]}] + chat[1:]
    return chat


# --- scoring -------------------------------------------------------------------------------------
def judge_prediction(q: Query, text: str) -> str:
    """"correct", "wrong" or "unparsed" for one predicted answer (any string; never raises).
    Choice: the letter of "The answer is X" (``parse_rcts_answer``); otherwise the free answer
    (``parse_rcts_free_answer``) equal to a gold answer (MATH-Vision's ``is_equal``)."""
    if q.options:
        letter = parse_rcts_answer(text, option_letters(len(q.options))).letter
        return "unparsed" if letter is None else ("correct" if letter == q.answer else "wrong")

    answer = parse_rcts_free_answer(text)[0]
    if answer is None:
        return "unparsed"
    return "correct" if any(mathvision_is_equal(answer, gold) for gold in q.answers) else "wrong"


def score_verdicts(verdicts: list[str], scoring: str = "paper") -> float:
    """Score_i of one candidate from its N_p verdicts: the share of "correct" (paper), or
    (correct - unparsed) / N_p (official: +1 / 0 / -1 per answer)."""
    if not verdicts:
        raise ValueError("a candidate needs at least one verdict to be scored")
    if scoring not in VARIANTS or any(v not in VERDICTS for v in verdicts):
        raise ValueError(f"scoring must be one of {VARIANTS} and verdicts in {VERDICTS}")
    right = verdicts.count("correct")
    return (right - (scoring == "official") * verdicts.count("unparsed")) / len(verdicts)


def choose_best(scores: list[float | None]) -> int:
    """Index of the best checked candidate (``None`` = never checked); the first on ties."""
    checked = [(s, i) for i, s in enumerate(scores) if s is not None]
    if not checked:
        raise ValueError("no checked candidate to choose from")
    best = max(s for s, _ in checked)
    return next(i for s, i in checked if s == best)


# --- records -------------------------------------------------------------------------------------
@dataclass
class CandidateContext:
    text: str                                             # the candidate C_i
    predictions: list[str] = field(default_factory=list)  # its N_p raw answers ([] if unchecked)
    verdicts: list[str] = field(default_factory=list)     # judge_prediction of each
    score: float | None = None                            # Score_i (None: skipped by early stop)


@dataclass
class ReasoningRecord:
    """What the KB keeps of one pair: the chosen context and how it was found."""

    query_id: str
    answer: str                     # A_kb
    context: str                    # the chosen C_i
    score: float | None             # its Score_i (None for an unchecked oracle context)
    best_index: int                 # position of the chosen candidate (-1 for the oracle)
    candidates: list[CandidateContext] = field(default_factory=list)
    model_calls: int = 0            # generate calls this pair took part in
    completions: int = 0            # completions sampled for it (candidates + checks)
    stopped_early: bool = False     # fewer than N_c candidates were written
    source: str = "generated"       # "generated" | "oracle" (the toy world's worked solution)

    @property
    def perfect(self) -> bool:
        best = self.candidates[self.best_index] if 0 <= self.best_index < len(self.candidates) else None
        return best is not None and bool(best.verdicts) and all(v == "correct" for v in best.verdicts)

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> ReasoningRecord:
        d = dict(d)
        d["candidates"] = [CandidateContext(**c) for c in d.get("candidates", [])]
        return cls(**d)


def _call_seed(seed: int, group: int, wave: int, stage: str) -> int:
    return random.Random(f"reasoning:{seed}:{group}:{wave}:{stage}").randrange(2**31)


def _sample(vlm, prompts, n, max_new_tokens, config, seed):
    return vlm.generate(prompts, n=n, max_new_tokens=max_new_tokens, temperature=config.temperature,
                        top_p=config.top_p, repetition_penalty=config.repetition_penalty, seed=seed,
                        batch_size=config.batch_size)


def _build_group(vlm, group: list[Query], config: ReasoningContextConfig, g: int) -> list[ReasoningRecord]:
    cands: list[list[CandidateContext]] = [[] for _ in group]
    calls, done = [0] * len(group), [False] * len(group)
    for w, size in enumerate(config.waves):
        active = [i for i in range(len(group)) if not done[i]]
        if not active:
            break
        written = _sample(vlm, [context_prompt(group[i], config) for i in active], size,
                          config.max_context_tokens, config, _call_seed(config.seed, g, w, "write"))
        new = [(i, CandidateContext(text)) for i, texts in zip(active, written) for text in texts]
        answers = _sample(vlm, [check_prompt(group[i], c.text, config) for i, c in new], config.n_predictions,
                          config.max_answer_tokens, config, _call_seed(config.seed, g, w, "check"))
        for (i, cand), preds in zip(new, answers):
            cand.predictions = list(preds)
            cand.verdicts = [judge_prediction(group[i], p) for p in preds]
            cand.score = score_verdicts(cand.verdicts, config.scoring)
            cands[i].append(cand)
        for i in active:
            calls[i] += 2
            done[i] = config.early_stop and any(c.verdicts.count("correct") == config.n_predictions
                                                for c in cands[i])
    records = []
    for i, q in enumerate(group):
        best = choose_best([c.score for c in cands[i]])
        records.append(ReasoningRecord(
            q.id, q.answer, cands[i][best].text, cands[i][best].score, best, cands[i], calls[i],
            len(cands[i]) * (1 + config.n_predictions), len(cands[i]) < config.n_candidates))
    return records


def build_reasoning_kb(vlm, examples: list[Query], config: ReasoningContextConfig | None = None,
                       progress: bool = True) -> list[ReasoningRecord]:
    """One ``ReasoningRecord`` per KB pair, in order (RCTS §3.2). ``vlm`` needs only
    ``generate(prompts, n=, max_new_tokens=, temperature=, top_p=, repetition_penalty=, seed=,
    batch_size=)``; the same config and examples give the same records."""
    from tqdm.auto import tqdm

    config = config or ReasoningContextConfig()
    examples = list(examples)
    for q in examples:
        if not q.answers:
            raise ValueError(f"{q.id}: a KB pair needs its gold answer")
    records: list[ReasoningRecord] = []
    step = config.pairs_per_call
    with tqdm(total=len(examples), desc="reasoning contexts", disable=not progress_enabled(progress)) as bar:
        for g, start in enumerate(range(0, len(examples), step)):
            records += _build_group(vlm, examples[start:start + step], config, g)
            bar.update(len(examples[start:start + step]))
    return records
