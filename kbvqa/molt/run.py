"""Running MOLT's reranker three ways, with their cost counted (§3.1, App. C, Tab. 7/10, Tab. 17).

- ``run_one_pass``: the whole ladder in ONE call (Table 14): N + 1 images in one prompt, the model
  writes every ``<round>`` and the final ``<evidence>``; the chosen id is the evidence id when it
  is one of the candidates (else ``None``: counted wrong).
- ``run_iterative``: the external loop of App. C: N - 1 pairwise calls (Table 12 prompt), the
  current winner re-sent with the next scheduled challenger each time. The two candidates of a
  call are shown in a seeded random order (``pair_order="random"``), and a reply whose winner is
  neither of the two is a seeded random pick between them (``unparsable="random"``): a judge
  cannot learn or be credited for a role (issue 54). ``"defender_first"`` / ``"defender"`` are the
  rules the book used before (the defender always first, and kept on an unparsable reply). Its
  transcript is assembled from the calls, with each round's pair in (defender, challenger) order,
  so rewards and the viewer treat it like a one-pass transcript; ``TournamentRun`` adds which
  candidate each call showed first and how many replies were unparsable.
- ``run_one_shot``: the 5-way baseline (Table 17): one call, one number 1-5.

Token budgets: a four-round transcript of the cpu teacher is ~280 tokens of the tiny model's
word-level tokenizer (~68 per round), hence 400 for one pass and 96 per pairwise call.

Every run returns a ``TournamentRun``: the chosen id, a ``TournamentTranscript``, the raw
outputs, the schedule, ``model_calls`` (generate calls) and ``images_sent`` (images in the prompts
sent, i.e. the images a vision encoder must encode without a cross-call cache: N + 1 for one
pass, 3 (N - 1) iterative, of which 2 (N - 1) are candidates). ``VisionCounter`` hooks a real
VLM's vision tower and counts its forward calls and the images it encoded.

The model is anything with ``generate(prompts, n=1, max_new_tokens=..., temperature=..., seed=...)``
returning one list of strings per prompt (``kbvqa.models.VLM``, or a fake in the tests).
Leaves out: prompts and schedules (``kbvqa.molt.ladder``), rewards, training, timing (``bench_molt``).
"""
from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from kbvqa.models.chat import chat_images
from kbvqa.molt.ladder import Candidate, ladder_schedule, one_shot_prompt, pairwise_prompt, student_prompt
from kbvqa.parsers import TournamentRound, TournamentTranscript, parse_candidate_number, parse_tournament

__all__ = ["PAIR_ORDERS", "UNPARSABLE_RULES", "TournamentRun", "VisionCounter", "pairwise_winner", "run_iterative",
           "run_one_pass", "run_one_shot", "transcript_text"]


@dataclass
class TournamentRun:
    """What one reranking of one query produced and cost."""

    method: str                          # "one_pass", "iterative" or "one_shot"
    chosen: str | None                   # the selected candidate id (None: no valid choice)
    transcript: TournamentTranscript     # rounds + evidence (one-shot: no rounds)
    outputs: list[str]                   # raw model output of each call
    schedule: list[str]                  # order of play (one-shot: the listing order)
    model_calls: int                     # generate calls
    images_sent: int                     # images in all prompts sent (vision-encoder inputs)
    shown_first: list[str] = field(default_factory=list)   # iterative: the id each call showed first
    unparsable: int = 0                  # iterative: replies that named neither candidate


class VisionCounter:
    """Context manager: counts forward calls of ``vlm.vision_tower``, the images they encoded and
    the seconds spent inside it (wall clock, for the benchmark's cost split; never asserted).

    Qwen vision towers take all patches of a batch in one call with ``grid_thw`` (one row per
    image); Idefics3's takes ``pixel_values`` [images, C, H, W]."""

    def __init__(self, vlm):
        self.module, self.calls, self.images, self.seconds = vlm.vision_tower, 0, 0, 0.0
        self._hooks, self._start = [], 0.0

    def _sync(self) -> None:
        """On a GPU, wait for the queued kernels: CUDA runs asynchronously, so a clock read without
        it measures the launch, not the work."""
        device = next(self.module.parameters()).device
        if device.type == "cuda":
            import torch

            torch.cuda.synchronize(device)

    def _begin(self, module, args, kwargs):
        self._sync()
        self._start = time.perf_counter()

    def _count(self, module, args, kwargs, output):
        self._sync()
        self.seconds += time.perf_counter() - self._start
        self.calls += 1
        grid = kwargs.get("grid_thw", args[1] if len(args) > 1 else None)
        if grid is not None and hasattr(grid, "shape"):
            self.images += int(grid.shape[0])
        else:
            pixels = args[0] if args else kwargs.get("pixel_values", kwargs.get("hidden_states"))
            self.images += int(pixels.shape[0]) if hasattr(pixels, "shape") else 1

    def __enter__(self) -> VisionCounter:
        self._hooks = [self.module.register_forward_pre_hook(self._begin, with_kwargs=True),
                       self.module.register_forward_hook(self._count, with_kwargs=True)]
        return self

    def __exit__(self, *exc) -> None:
        for hook in self._hooks:
            hook.remove()
        self._hooks = []


def _generate(model, prompt, max_new_tokens: int, temperature: float, seed: int | None) -> str:
    out = model.generate([prompt], n=1, max_new_tokens=max_new_tokens, temperature=temperature, seed=seed)
    first = out[0] if out else ""
    return str(first[0] if isinstance(first, (list, tuple)) and first else first or "")


def _n_images(prompt) -> int:
    return len(chat_images(prompt))


def run_one_pass(model, question: str, query_image: Any, candidates: Sequence[Candidate],
                 order: str = "weak_to_strong", seed: int = 0, max_new_tokens: int = 400,
                 temperature: float = 0.0, short: bool = False, schedule: Sequence[str] | None = None) -> TournamentRun:
    """MOLT inference: one Table 14 prompt, one call; ``schedule`` overrides ``order``/scores."""
    if schedule is None:
        schedule = ladder_schedule([c.id for c in candidates], order, [c.score for c in candidates], seed)
    prompt = student_prompt(question, query_image, candidates, schedule, short=short)
    text = _generate(model, prompt, max_new_tokens, temperature, seed)
    transcript = parse_tournament(text)
    ids = {c.id for c in candidates}
    chosen = transcript.evidence if transcript.evidence in ids else None
    return TournamentRun("one_pass", chosen, transcript, [text], list(schedule), 1, _n_images(prompt))


def pairwise_winner(text: str, first: str, second: str) -> str | None:
    """The winner id of one pairwise reply if it is ``first`` or ``second`` (else ``None``)."""
    rounds = parse_tournament(f"<compare>[{first}] vs [{second}]</compare>{text}").rounds
    winner = rounds[0].winner if rounds else None
    return winner if winner in (first, second) else None


def transcript_text(rounds: Sequence[TournamentRound], evidence: str | None) -> str:
    """The student-format XML of ``rounds`` and ``evidence`` (Table 14)."""
    blocks = [f"<round>\n<compare>[{r.pair[0] if r.pair else ''}] vs [{r.pair[1] if r.pair else ''}]</compare>\n"
              f"<think>{r.think}</think>\n<winner>[{r.winner or ''}]</winner>\n</round>" for r in rounds]
    return "\n".join(blocks + [f"<evidence>[{evidence or ''}]</evidence>"])


PAIR_ORDERS = ("random", "defender_first")
UNPARSABLE_RULES = ("random", "defender")


def run_iterative(model, question: str, query_image: Any, candidates: Sequence[Candidate],
                  order: str = "weak_to_strong", seed: int = 0, max_new_tokens: int = 96,
                  temperature: float = 0.0, short: bool = False,
                  schedule: Sequence[str] | None = None, pair_order: str = "random",
                  unparsable: str = "random") -> TournamentRun:
    """The iterative pairwise baseline: N - 1 calls, the current winner re-sent each time; the two
    candidates in a seeded random order and an unparsable reply a seeded random pick (see the module
    docstring; ``pair_order`` and ``unparsable`` name the older rules)."""
    if pair_order not in PAIR_ORDERS:
        raise ValueError(f"pair_order must be one of {PAIR_ORDERS}, got {pair_order!r}")
    if unparsable not in UNPARSABLE_RULES:
        raise ValueError(f"unparsable must be one of {UNPARSABLE_RULES}, got {unparsable!r}")
    if schedule is None:
        schedule = ladder_schedule([c.id for c in candidates], order, [c.score for c in candidates], seed)
    by_id = {c.id: c for c in candidates}
    rng = random.Random(f"iterative:{seed}")
    defender, rounds, outputs, images, shown, failed = schedule[0], [], [], 0, [], 0
    for t, challenger in enumerate(schedule[1:], start=1):
        swap = pair_order == "random" and rng.random() < 0.5
        first, second = (challenger, defender) if swap else (defender, challenger)
        prompt = pairwise_prompt(question, query_image, by_id[first], by_id[second], short=short)
        images += _n_images(prompt)
        text = _generate(model, prompt, max_new_tokens, temperature, None if seed is None else seed + t)
        outputs.append(text)
        shown.append(first)
        winner = pairwise_winner(text, first, second)
        if winner is None:
            failed += 1
            winner = rng.choice((defender, challenger)) if unparsable == "random" else defender
        think = parse_tournament(f"<round><compare>a vs b</compare>{text}").rounds[0].think
        rounds.append(TournamentRound((defender, challenger), think, winner, True))
        defender = winner
    transcript = parse_tournament(transcript_text(rounds, defender))
    return TournamentRun("iterative", defender, transcript, outputs, list(schedule), len(outputs), images,
                         shown, failed)


def run_one_shot(model, question: str, query_image: Any, candidates: Sequence[Candidate], max_new_tokens: int = 8,
                 temperature: float = 0.0, short: bool = False, seed: int = 0) -> TournamentRun:
    """The one-shot 5-way baseline (Table 17): the answer 1-5 picks the candidate at that position."""
    prompt = one_shot_prompt(question, query_image, candidates, short=short)
    text = _generate(model, prompt, max_new_tokens, temperature, seed)
    number = parse_candidate_number(text, 1, len(candidates))
    chosen = candidates[number - 1].id if number is not None else None
    transcript = TournamentTranscript((), chosen, chosen is not None, () if chosen else ("no number 1-5",))
    return TournamentRun("one_shot", chosen, transcript, [text], [c.id for c in candidates], 1, _n_images(prompt))
