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
- ``oracle_teacher`` (the default): the toy world's oracle comparison, NOT a model. Between two
  negatives it prefers a page of the query creature's family (a look-alike), then the higher
  retrieval score; its reasoning is a template naming the creature's look.
- ``model_teacher`` / ``model_teacher_many``: a VLM (the paper: Qwen3-VL-235B; ours: the judge
  itself, ``build_sft_set(..., teacher_model=judge)``) asked with the pairwise prompt, a round of
  every ladder in one batched call; when the positive plays, the winner is overwritten with it
  (the think text is kept: the teacher-forced constraint acts on the winner tag only).

Negatives: the passage of the gold passage's section in each negative document (the oracle
extractor's choice; a real extractor would pick its own).

Roles (issue 54). With the positive forced to win from a uniform entry position, the defender wins
10 of the positive's 14 rounds over the five entry positions (N = 5): a judge that ignores the
content learns "keep the incumbent". ``SFTDataConfig(roles="balanced")`` lets the challenger win
every round between two negatives (neither page is the evidence, so no content rule is broken; the
oracle's reasoning names the winner, a model teacher's winner is overwritten as a forced positive's
is): the other 6 rounds, so over all rounds the challenger wins as often as the defender (10 of 20),
and the entry positions stay uniform. ``pairwise_per_query = m`` adds m of each ladder's rounds as
pairwise examples (the Table 12 prompt) with the two candidates in random order, so no side carries
a role. ``roles="teacher"`` (the default) is the set the committed runs trained on.

Leaves out: training (``kbvqa.rl.sft``), the candidate pipeline (``kbvqa.molt.candidates``).
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

__all__ = ["ROLE_RULES", "SFTDataConfig", "build_sft_example", "build_sft_set", "model_teacher", "model_teacher_many",
           "oracle_teacher", "pairwise_examples", "sft_candidates", "teacher_transcript", "teacher_transcripts"]

Teacher = Callable[[Candidate, Candidate], tuple[str, str]]   # (first, second) -> (winner id, think)
# [(query index, first, second)] -> [(winner id, think)]: one round of many ladders at once
ManyTeacher = Callable[[Sequence[tuple[int, Candidate, Candidate]]], list[tuple[str, str]]]


ROLE_RULES = ("teacher", "balanced")


@dataclass(frozen=True)
class SFTDataConfig:
    """How the SFT set is built (§3.2.1; the paper: 12K E-VQA queries, 4 negatives)."""

    n_negatives: int = 4          # top-4 retrieved paragraphs of other documents
    roles: str = "teacher"        # "teacher": between two negatives the teacher chooses | "balanced":
                                  # the challenger wins them, so the roles win equally often (issue 54)
    pairwise_per_query: int = 0   # rounds of each ladder also given as a pairwise example, random order
    image_size: int | None | str = PROFILE_DEFAULT  # cpu: 56 px (tiny) or 112 (reader), by role; gpu: native
    short_prompts: bool | str = PROFILE_DEFAULT  # cpu: the short renderings; gpu: the paper's
    seed: int = 0                 # shuffles and ids repeat exactly

    def __post_init__(self):
        resolve_profile_fields(self, role="judge")    # the SFT set teaches the tournament's judge
        if not isinstance(self.n_negatives, int) or self.n_negatives < 1:
            raise ValueError(f"n_negatives must be an int >= 1 (N = n_negatives + 1 >= 2), got {self.n_negatives!r}")
        if self.roles not in ROLE_RULES:
            raise ValueError(f"roles must be one of {ROLE_RULES}, got {self.roles!r}")
        if (not isinstance(self.pairwise_per_query, int) or isinstance(self.pairwise_per_query, bool)
                or not 0 <= self.pairwise_per_query <= self.n_negatives):
            raise ValueError(f"pairwise_per_query must be an int in [0, n_negatives = {self.n_negatives}] (the "
                             f"rounds of one ladder), got {self.pairwise_per_query!r}")


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


def oracle_teacher(world, query, positive_id: str, negatives: str = "teacher") -> Teacher:
    """The cpu teacher: the positive always wins; between negatives, a look-alike page (same
    family as the query creature) beats another page, then the higher score, then the first
    (``negatives="balanced"``: the second of the pair, the challenger, wins; see the module docstring)."""
    if negatives not in ROLE_RULES:
        raise ValueError(f"negatives must be one of {ROLE_RULES}, got {negatives!r}")
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
        win = second if negatives == "balanced" else max((first, second), key=lambda c: (family[c.id], c.score,
                                                                                             c is first))
        return win.id, (f"The creature in the query image is {look}; neither page shows it, the {name(win)} of "
                        f"candidate [{win.id}] is closer.")
    return compare


def model_teacher(model, question: str, query_image, positive_id: str, short: bool = False,
                  max_new_tokens: int = 256) -> Teacher:
    """A model teacher for one query: ``model`` compares the two candidates (pairwise prompt); a
    positive's win is forced, an invalid winner falls back to the first candidate (the defender)."""
    many = model_teacher_many(model, [question], [query_image], [positive_id], short, max_new_tokens)

    def compare(first: Candidate, second: Candidate) -> tuple[str, str]:
        return many([(0, first, second)])[0]
    return compare


def model_teacher_many(model, questions: Sequence[str], query_images: Sequence, positive_ids: Sequence[str],
                       short: bool = False, max_new_tokens: int = 256, batch_size: int = 16,
                       negatives: str = "teacher") -> ManyTeacher:
    """``model_teacher`` for many queries at once: one batched greedy call answers a round of every
    ladder (``(query index, first, second)`` triples), the positive's win forced as there
    (``negatives="balanced"``: the second, the challenger, also wins every round between negatives)."""
    if negatives not in ROLE_RULES:
        raise ValueError(f"negatives must be one of {ROLE_RULES}, got {negatives!r}")

    def compare_many(pairs: Sequence[tuple[int, Candidate, Candidate]]) -> list[tuple[str, str]]:
        prompts = [pairwise_prompt(questions[i], query_images[i], a, b, short=short) for i, a, b in pairs]
        outs = model.generate(prompts, n=1, max_new_tokens=max_new_tokens, temperature=0.0, seed=0,
                              batch_size=batch_size) if prompts else []
        results = []
        for (i, first, second), out in zip(pairs, outs):
            text = str(out[0]) if out else ""
            think = parse_tournament(f"<round><compare>a vs b</compare>{text}").rounds[0].think
            forced = positive_ids[i] if positive_ids[i] in (first.id, second.id) else (
                second.id if negatives == "balanced" else None)
            results.append((forced or pairwise_winner(text, first.id, second.id) or first.id, think))
        return results
    return compare_many


def teacher_transcripts(ladders: Sequence[Sequence[Candidate]],
                        compare_many: ManyTeacher) -> list[tuple[str, list[str]]]:
    """(the student-format XML, the schedule) of the fixed ladder over each listing of candidates:
    the last listed is the seed, each earlier one challenges in turn. Round r of every ladder goes to
    ``compare_many`` together (a model teacher answers them in one batched call)."""
    schedules = [listing_order([c.id for c in cands]) for cands in ladders]   # reverse of the listing
    by_id = [{c.id: c for c in cands} for cands in ladders]
    defenders = [s[0] if s else None for s in schedules]
    rounds: list[list[TournamentRound]] = [[] for _ in ladders]
    for r in range(1, max((len(s) for s in schedules), default=0)):
        pairs = [(i, by_id[i][defenders[i]], by_id[i][s[r]]) for i, s in enumerate(schedules) if r < len(s)]
        for (i, first, second), (winner, think) in zip(pairs, compare_many(pairs)):
            winner = winner if winner in (first.id, second.id) else first.id
            rounds[i].append(TournamentRound((first.id, second.id), think, winner, True))
            defenders[i] = winner
    return [(transcript_text(rounds[i], defenders[i]), schedules[i]) for i in range(len(ladders))]


def teacher_transcript(candidates: Sequence[Candidate], teacher: Teacher) -> tuple[str, list[str]]:
    """``teacher_transcripts`` of one ladder with a one-pair ``teacher``."""
    return teacher_transcripts([candidates], lambda pairs: [teacher(a, b) for _, a, b in pairs])[0]


def _example(world, query, candidates: Sequence[Candidate], positive: str, completion: str, schedule: list[str],
             config: SFTDataConfig) -> Example:
    query_image = view_ref(world, query.meta["view_id"], config.image_size)
    prompt = student_prompt(query.question, query_image, candidates, schedule, short=config.short_prompts)
    meta = {"query_ids": [query.id], "gold_id": positive, "schedule": schedule,
            "candidate_ids": [c.id for c in candidates], "doc_ids": [c.doc_id for c in candidates],
            "passage_ids": [c.passage_id for c in candidates]}
    return Example(prompt, completion, "molt_sft", meta=meta)


def pairwise_examples(world, query, candidates: Sequence[Candidate], completion: str, count: int,
                      config: SFTDataConfig, rng: random.Random) -> list[Example]:
    """``count`` rounds of one ladder's teacher transcript as pairwise examples (the Table 12 prompt,
    §3.2.1): the rounds drawn at random, the two candidates of each in random order, the target the
    round's ``<think>`` and ``<winner>``. Shown in random order, the two carry no role."""
    rounds = [r for r in parse_tournament(completion).rounds if r.pair and r.winner in r.pair]
    by_id = {c.id: c for c in candidates}
    query_image = view_ref(world, query.meta["view_id"], config.image_size)
    out = []
    for r in rng.sample(rounds, min(count, len(rounds))):
        first, second = rng.sample(list(r.pair), 2)
        prompt = pairwise_prompt(query.question, query_image, by_id[first], by_id[second], short=config.short_prompts)
        out.append(Example(prompt, f"<think>{r.think}</think>\n<winner>[{r.winner}]</winner>", "molt_sft_pairwise",
                           meta={"query_ids": [query.id], "pair": [first, second], "winner": r.winner,
                                 "defender": r.pair[0]}))
    return out


def _with_pairwise(world, queries, ladders, examples: list[Example], config: SFTDataConfig) -> list[Example]:
    """``examples`` followed by ``pairwise_per_query`` pairwise examples of each (none when 0)."""
    if not config.pairwise_per_query:
        return examples
    rng = random.Random(f"molt-sft-pairwise:{config.seed}")
    extra = [e for q, cands, ex in zip(queries, ladders, examples)
             for e in pairwise_examples(world, q, cands, ex.completion, config.pairwise_per_query, config, rng)]
    return examples + extra


def _positive(query, candidates: Sequence[Candidate]) -> str:
    return next(c.id for c in candidates if c.passage_id == query.evidence_ids[0])


def build_sft_example(world, query, ranking: Sequence[str], config: SFTDataConfig | None = None,
                      rng: random.Random | None = None, teacher: Teacher | None = None) -> Example:
    """One SFT example: the Table 14 prompt over the shuffled candidates and the teacher's XML
    (default teacher: ``oracle_teacher``)."""
    config = config or SFTDataConfig()
    rng = rng or random.Random(f"molt-sft:{config.seed}:{query.id}")
    candidates = sft_candidates(world, query, ranking, config, rng)
    positive = _positive(query, candidates)
    completion, schedule = teacher_transcript(candidates,
                                              teacher or oracle_teacher(world, query, positive, config.roles))
    return _example(world, query, candidates, positive, completion, schedule, config)


def build_sft_set(world, queries: Sequence, rankings: Sequence[Sequence[str]] | None = None,
                  config: SFTDataConfig | None = None, teacher_model=None, max_new_tokens: int = 96,
                  batch_size: int = 16, transcripts: Sequence[tuple[str, Sequence[str]]] | None = None,
                  chunk: int | None = None, on_transcripts=None) -> list[Example]:
    """SFT examples for ``queries`` (``rankings``: retrieved document ids per query; default: none,
    so the negatives are look-alike pages -- the hardest the toy world has). The teacher is
    ``oracle_teacher``, or with ``teacher_model`` that model (``model_teacher_many``: its pairwise
    thinking and choices, ``max_new_tokens`` per round, the positive's wins forced); the candidates
    are the same either way. ``transcripts``, the (completion, schedule) of the first examples of an
    earlier call with the same queries and config, stand in for the teacher there (a model teacher's
    hour of generation is kept by a resumable run); a schedule that is not its ladder's raises. A
    model teacher writes the rest ``chunk`` queries at a time (default: all at once), and
    ``on_transcripts(all written so far)`` is called after each chunk."""
    config = config or SFTDataConfig()
    rankings = rankings if rankings is not None else [[] for _ in queries]
    if len(rankings) != len(queries):
        raise ValueError(f"{len(queries)} queries but {len(rankings)} rankings")
    rng = random.Random(f"molt-sft:{config.seed}")
    if teacher_model is None and transcripts is None:       # the oracle teacher (build_sft_example's steps)
        ladders, examples = [], []
        for q, r in zip(queries, rankings):
            cands = sft_candidates(world, q, r, config, rng)
            positive = _positive(q, cands)
            completion, schedule = teacher_transcript(cands, oracle_teacher(world, q, positive, config.roles))
            ladders.append(cands)
            examples.append(_example(world, q, cands, positive, completion, schedule, config))
        return _with_pairwise(world, queries, ladders, examples, config)
    ladders = [sft_candidates(world, q, r, config, rng) for q, r in zip(queries, rankings)]
    positives = [_positive(q, cands) for q, cands in zip(queries, ladders)]
    written = [(str(c), list(s)) for c, s in transcripts or []]
    if len(written) > len(queries) or any(s != listing_order([c.id for c in cands])
                                          for (_, s), cands in zip(written, ladders)):
        raise ValueError("the transcripts were written for other queries, candidates or settings")
    if len(written) < len(queries) and teacher_model is None:
        raise ValueError(f"{len(written)} transcripts for {len(queries)} queries and no teacher_model for the rest")
    if chunk is not None and (not isinstance(chunk, int) or isinstance(chunk, bool) or chunk < 1):
        raise ValueError(f"chunk must be None or a positive int, got {chunk!r}")
    step = chunk or max(len(queries), 1)
    for start in range(len(written), len(queries), step):
        part = slice(start, start + step)
        images = [view_ref(world, q.meta["view_id"], config.image_size) for q in queries[part]]
        teach = model_teacher_many(teacher_model, [q.question for q in queries[part]], images, positives[part],
                                   config.short_prompts, max_new_tokens, batch_size, negatives=config.roles)
        written += teacher_transcripts(ladders[part], teach)
        if on_transcripts is not None:
            on_transcripts(list(written))
    examples = [_example(world, q, cands, pos, completion, schedule, config)
                for q, cands, pos, (completion, schedule) in zip(queries, ladders, positives, written)]
    return _with_pairwise(world, queries, ladders, examples, config)
