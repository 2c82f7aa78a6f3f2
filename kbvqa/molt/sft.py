"""MOLT's cold-start SFT data (§3.2.1): teacher transcripts with the positive forced to win.

For one training query: the top-4 retrieved paragraphs of *other* documents are the negatives,
the annotated evidence paragraph the positive, each paired with its document image (five
multimodal candidates). The five are shuffled and get random ids 1..5; on this shuffled order a
fixed four-round ladder runs (Table 14: the last listed is the seed, then each earlier one
challenges). Round by round a teacher sees the query and only the two candidates of that round
and writes ``<think>...</think><winner>[id]</winner>`` (Table 12); when the positive plays, its
win is forced; otherwise the teacher chooses freely. The four rounds are concatenated into the
student's XML (four ``<round>`` blocks and ``<evidence>``), the SFT target for the Table 14 prompt.

Teachers:
- ``oracle_teacher`` (cpu profile): the toy world's oracle comparison, NOT a model. Between two
  negatives it prefers a page of the query creature's family (a look-alike), then the higher
  retrieval score; its reasoning is a template naming the creature's look.
- ``model_teacher`` (gpu profile): a VLM (the paper: Qwen3-VL-235B; ours: the profile's judge)
  asked with the pairwise prompt; when the positive plays, the winner is overwritten with it
  (the think text is kept: the teacher-forced constraint acts on the winner tag only).

Negatives: the passage of the gold passage's section in each negative document (the oracle
extractor's choice; a real extractor would pick its own). Leaves out: training
(``kbvqa.rl.sft``), the candidate pipeline (``kbvqa.molt.candidates``).
"""
from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from kbvqa.config import PROFILE_DEFAULT, resolve_profile_fields
from kbvqa.data.toy_shapes import with_look
from kbvqa.molt.ladder import Candidate, listing_order, pairwise_prompt, random_ids, student_prompt
from kbvqa.molt.run import pairwise_winner, transcript_text
from kbvqa.parsers import TournamentRound, parse_tournament
from kbvqa.prompts.formats import Example, view_ref

__all__ = ["SFTDataConfig", "build_sft_example", "build_sft_set", "model_teacher", "oracle_teacher",
           "sft_candidates", "teacher_transcript"]

Teacher = Callable[[Candidate, Candidate], tuple[str, str]]   # (first, second) -> (winner id, think)


@dataclass(frozen=True)
class SFTDataConfig:
    """How the SFT set is built (§3.2.1; the paper: 12K E-VQA queries, 4 negatives)."""

    n_negatives: int = 4          # top-4 retrieved paragraphs of other documents
    image_size: int | None | str = PROFILE_DEFAULT  # cpu: 56 px (the tiny VLM); gpu: None (native)
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's
    seed: int = 0                 # shuffles and ids repeat exactly

    def __post_init__(self):
        resolve_profile_fields(self)
        if not isinstance(self.n_negatives, int) or self.n_negatives < 1:
            raise ValueError(f"n_negatives must be an int >= 1 (N = n_negatives + 1 >= 2), got {self.n_negatives!r}")


def sft_candidates(world, query, ranking: Sequence[str], config: SFTDataConfig, rng: random.Random) -> list[Candidate]:
    """The positive and the first ``n_negatives`` other documents of ``ranking`` (document ids in
    retrieval order; look-alikes, then any page, fill a short ranking), shuffled, random ids."""
    gold = world.passage(query.evidence_ids[0])
    pool = [d for d in ranking if d != gold.doc_id]
    pool += [world.document_of(e.id).id for e in world.lookalikes(query.meta["entity_id"])]
    pool += [d.id for d in world.documents]
    docs = list(dict.fromkeys(d for d in pool if d != gold.doc_id))[:config.n_negatives]
    if len(docs) < config.n_negatives:
        raise ValueError(f"the world has only {len(docs)} other documents; need {config.n_negatives}")
    n = len(docs) + 1
    score = {d: float(n - i - 1) for i, d in enumerate(docs)}   # ranking order as a score (positive: n)
    entries = [(gold, float(n))] + [(_section(world.document(d), gold.section), score[d]) for d in docs]
    rng.shuffle(entries)
    ids = random_ids(n, rng)
    return [Candidate(cid, p.text, view_ref(world, world.document(p.doc_id).meta["image_id"], config.image_size),
                      p.doc_id, p.id, s) for cid, (p, s) in zip(ids, entries)]


def _section(document, section: str):
    return next((p for p in document.passages if p.section == section), document.passages[0])


def oracle_teacher(world, query, positive_id: str) -> Teacher:
    """The cpu teacher: the positive always wins; between negatives, a look-alike page (same
    family as the query creature) beats another page, then the higher score, then the first."""
    entity = world.entity(query.meta["entity_id"])
    look = with_look(entity.family, entity.colour, entity.pattern)

    def name(c: Candidate) -> str:
        return world.document(c.doc_id).title.lower()

    def compare(first: Candidate, second: Candidate) -> tuple[str, str]:
        if positive_id in (first.id, second.id):
            win = first if first.id == positive_id else second
            return win.id, f"The creature in the query image is {look}, as the {name(win)} of candidate [{win.id}]."
        family = {c.id: world.document(c.doc_id).meta.get("family") == query.meta.get("family")
                  for c in (first, second)}
        win = max((first, second), key=lambda c: (family[c.id], c.score, c is first))
        return win.id, (f"The creature in the query image is {look}; neither page shows it, the {name(win)} of "
                        f"candidate [{win.id}] is closer.")
    return compare


def model_teacher(model, question: str, query_image, positive_id: str, short: bool = False,
                  max_new_tokens: int = 256) -> Teacher:
    """The gpu teacher: ``model`` compares the two candidates (pairwise prompt); a positive's
    win is forced, an invalid winner falls back to the first candidate (the defender)."""

    def compare(first: Candidate, second: Candidate) -> tuple[str, str]:
        prompt = pairwise_prompt(question, query_image, first, second, short=short)
        out = model.generate([prompt], n=1, max_new_tokens=max_new_tokens, temperature=0.0, seed=0)
        text = str(out[0][0]) if out and out[0] else ""
        think = parse_tournament(f"<round><compare>a vs b</compare>{text}").rounds[0].think
        if positive_id in (first.id, second.id):
            return positive_id, think
        return pairwise_winner(text, first.id, second.id) or first.id, think
    return compare


def teacher_transcript(candidates: Sequence[Candidate], teacher: Teacher) -> tuple[str, list[str]]:
    """(the student-format XML, the schedule) of the fixed ladder over the listed ``candidates``:
    the last listed is the seed, each earlier one challenges in turn."""
    by_id = {c.id: c for c in candidates}
    schedule = listing_order([c.id for c in candidates])     # reverse of the listing = order of play
    rounds, defender = [], schedule[0]
    for challenger in schedule[1:]:
        winner, think = teacher(by_id[defender], by_id[challenger])
        winner = winner if winner in (defender, challenger) else defender
        rounds.append(TournamentRound((defender, challenger), think, winner, True))
        defender = winner
    return transcript_text(rounds, defender), schedule


def build_sft_example(world, query, ranking: Sequence[str], config: SFTDataConfig | None = None,
                      rng: random.Random | None = None, teacher: Teacher | None = None) -> Example:
    """One SFT example: the Table 14 prompt over the shuffled candidates and the teacher's XML."""
    config = config or SFTDataConfig()
    rng = rng or random.Random(f"molt-sft:{config.seed}:{query.id}")
    candidates = sft_candidates(world, query, ranking, config, rng)
    positive = next(c.id for c in candidates if c.passage_id == query.evidence_ids[0])
    teacher = teacher or oracle_teacher(world, query, positive)
    completion, schedule = teacher_transcript(candidates, teacher)
    query_image = view_ref(world, query.meta["view_id"], config.image_size)
    prompt = student_prompt(query.question, query_image, candidates, schedule, short=config.short_prompts)
    meta = {"query_ids": [query.id], "gold_id": positive, "schedule": schedule,
            "candidate_ids": [c.id for c in candidates], "doc_ids": [c.doc_id for c in candidates],
            "passage_ids": [c.passage_id for c in candidates]}
    return Example(prompt, completion, "molt_sft", meta=meta)


def build_sft_set(world, queries: Sequence, rankings: Sequence[Sequence[str]] | None = None,
                  config: SFTDataConfig | None = None) -> list[Example]:
    """SFT examples for ``queries`` (``rankings``: retrieved document ids per query; default: none,
    so the negatives are look-alike pages -- the hardest the toy world has)."""
    config = config or SFTDataConfig()
    rankings = rankings if rankings is not None else [[] for _ in queries]
    if len(rankings) != len(queries):
        raise ValueError(f"{len(queries)} queries but {len(rankings)} rankings")
    rng = random.Random(f"molt-sft:{config.seed}")
    return [build_sft_example(world, q, r, config, rng) for q, r in zip(queries, rankings)]
