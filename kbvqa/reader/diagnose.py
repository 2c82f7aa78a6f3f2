"""Why the reader is right or wrong: what its rationales and naming sentences say about the picture.

- ``named_creature`` / ``naming_breakdown``: split a think-then-answer KB-VQA row of the card by
  the creature its rationale names (the pictured one, another one, none) and give the accuracy of
  each part. With ten passages a wrong name means the answer is read from a look-alike's passage.
  ``named_right_by_split``: how often the pictured creature is named, per InfoSeek split kind, bare
  and with passages (held-out creatures are never the subject of a training rationale).
- ``parse_naming_sentence`` / ``score_naming`` / ``naming_attributes``: the reader's answer to
  "Which creature is this?" ("The image shows the <name>, a <family> with <colour> <pattern>.")
  scored part by part on test views: the name, the family (the silhouette), the colour and the
  pattern, and whether a wrong family is that of a clutter creature in the same picture. A reader
  that gets the colour right but not the family sees colour and not shape: the next training
  budget goes to the silhouette, not to reading.
- ``look_recall``: for description-first rationales ("a driftfin with pink zigzags: the desnusk"),
  was the written look the pictured creature's, and is the name the one that look belongs to? It
  tells *seeing* wrong from *recalling* the name wrong after seeing right;
  ``look_name_acc`` asks the same recall in words alone ("Which creature is a driftfin with pink
  zigzags?"), for every knowledge-base creature: does the reader *know* the name it fails to *use*?

Every parser returns a defined result on any string. Leaves out: the card itself (``card.py``).
"""
from __future__ import annotations

import re
from typing import NamedTuple

from kbvqa.prompts.formats import view_ref
from kbvqa.reader.tasks import naming_example

_NAMED = re.compile(r"image shows (?:the |a |an )?([a-z]+)", re.IGNORECASE)
_SENTENCE = re.compile(r"image shows (?:the |a |an )?([a-z]+),? (?:an? )?([a-z]+) with ([a-z]+) ([a-z]+)",
                       re.IGNORECASE)
# description first (tasks.RATIONALE_ORDERS): "a driftfin with pink zigzags: the desnusk" or
# "a plain pink driftfin: the maikkresh"
_DESCRIBED = re.compile(r"image shows an? (?:plain ([a-z]+) ([a-z]+)|([a-z]+) with ([a-z]+) ([a-z]+)): the ([a-z]+)",
                        re.IGNORECASE)
_NAMED_LAST = re.compile(r"the ([a-z]+)\.?\s*$", re.IGNORECASE)     # "...: the desnusk." -> desnusk
_DESCRIBED_NAME = re.compile(r"image shows an? [^.:]*: the ([a-z]+)", re.IGNORECASE)
PARTS = ("name", "family", "colour", "pattern")
# New tokens for a naming sentence: the longest is 21 in either order (a test holds the margin).
# Cards before the description-first round used 20 (the name comes early there, so at most the
# last token of a sentence was lost); 16 in the training quick check would cut the name that a
# description-first sentence puts last.
NAMING_TOKENS = 32


def named_creature(output: str) -> str | None:
    """The creature a ReAG-style rationale names ("The image shows the desnusk, ..." or, description
    first, "The image shows a driftfin with pink zigzags: the desnusk. ..."), or ``None``."""
    m = _DESCRIBED_NAME.search(output or "") or _NAMED.search(output or "")
    return m.group(1).lower() if m else None


def naming_breakdown(evaluation: dict, world, task: str = "kbvqa_10_passages", by: str | None = None):
    """Why a think-then-answer KB-VQA row is right or wrong: for each of its records, did the
    rationale name the pictured creature (right name / another name / no name), and was the answer
    right? Returns a table of counts and the answer accuracy per naming outcome; with ``by`` (a key
    of the query's ``meta``, e.g. "split_kind": InfoSeek's unseen question / unseen entity) one
    block per value, each share taken within its block."""
    import pandas as pd

    queries = {q.id: q for q in world.kbvqa_test}
    rows = []
    for r in evaluation["records"][task]:
        q = queries[r["query_id"]]
        truth = world.entity(q.meta["entity_id"]).name.lower()
        named = named_creature(r["output"])
        kind = "no name" if named is None else ("right name" if named == truth else "another name")
        rows.append({"naming": kind, "correct": bool(r["correct"]), "group": q.meta.get(by) if by else ""})
    frame = pd.DataFrame(rows)
    table = frame.groupby(["group", "naming"])["correct"].agg(queries="count", answers_right="sum", accuracy="mean")
    table["share of queries"] = table["queries"] / table.groupby(level="group")["queries"].transform("sum")
    rank = {"right name": 0, "another name": 1, "no name": 2}
    table = table.sort_index(key=lambda index: index.map(rank) if index.name == "naming" else index)
    if not by:
        table = table.droplevel("group")
    else:
        table.index = table.index.set_names([by, "naming"])
    return table.round(3)


def named_right_by_split(evaluation: dict, world):
    """Share of the card's records that name the pictured creature, per InfoSeek split kind
    (questions about creatures with training questions: ``unseen_question``; about held-out
    creatures: ``unseen_entity``), in three settings: the bare "Which creature is this?" (the
    ``naming`` row), the gold passage alone and the gold among ten passages (ReAG's rationale)."""
    import pandas as pd

    kinds = {q.id: q.meta["split_kind"] for q in world.kbvqa_test}
    view_kinds = {q.meta["view_id"]: q.meta["split_kind"] for q in world.kbvqa_test}
    truth = {q.id: world.entity(q.meta["entity_id"]).name.lower() for q in world.kbvqa_test}
    rows = [{"split_kind": view_kinds[r["view_id"]], "setting": "which creature is this?", "right": bool(r["name"])}
            for r in evaluation["records"].get("naming", [])]          # older cards have no naming records
    settings = (("kbvqa_gold_passage", "gold passage alone"), ("kbvqa_10_passages", "gold among 10 passages"))
    for task, setting in settings:
        rows += [{"split_kind": kinds[r["query_id"]], "setting": setting,
                  "right": named_creature(r["output"]) == truth[r["query_id"]]}
                 for r in evaluation["records"][task]]
    frame = pd.DataFrame(rows)
    table = frame.pivot_table(index="split_kind", columns="setting", values="right", aggfunc="mean")
    table = table.reindex(columns=["which creature is this?", "gold passage alone", "gold among 10 passages"])
    table["queries (10 passages)"] = frame[frame.setting == "gold among 10 passages"].groupby("split_kind").size()
    return table.rename_axis(columns="named right").round(3)


LOOK_OUTCOMES = ("look right, its name", "look right, another name", "look wrong, its name",
                 "look wrong, another name", "no description")


def look_outcome(output: str, entity, names_by_look: dict) -> str:
    """One of ``LOOK_OUTCOMES`` for a rationale about a picture of ``entity``; ``names_by_look`` maps
    (family, colour, pattern) to the name of the creature with that look ("its name": the name is
    the one the written look belongs to, whether or not the look is the pictured creature's)."""
    said = parse_naming_sentence(output)
    if said.family is None or said.colour is None or said.pattern is None:
        return "no description"
    look = (said.family, said.colour, said.pattern)
    seen = "look right" if look == (entity.family, entity.colour, entity.pattern) else "look wrong"
    return f"{seen}, {'its name' if names_by_look.get(look) == said.name else 'another name'}"


def look_recall(evaluation: dict, world, task: str = "kbvqa_10_passages", examples=None):
    """Split a think-then-answer row's records by ``look_outcome``: counts, share and answer accuracy.
    "look right, another name" counts the rationales that described the pictured creature and then
    named a creature of another look: recall from the description, not perception, failed. With the
    row's ``examples`` (``card_sets_kbvqa``; same order as the records) a column says how often the
    named creature's page had a passage in the prompt (a name copied from the context)."""
    import pandas as pd

    queries = {q.id: q for q in world.kbvqa_test}
    names_by_look = {(e.family, e.colour, e.pattern): e.name for e in world.entities}
    doc_of_name = {e.name.lower(): world.document_of(e.id).id for e in world.entities}
    rows = []
    for i, r in enumerate(evaluation["records"][task]):
        row = {"outcome": look_outcome(r["output"], world.entity(queries[r["query_id"]].meta["entity_id"]),
                                       names_by_look), "correct": bool(r["correct"])}
        if examples is not None:
            docs = {world.passage(p).doc_id for p in examples[i].meta["passage_ids"]}
            row["named in context"] = doc_of_name.get(parse_naming_sentence(r["output"]).name or "") in docs
        rows.append(row)
    frame = pd.DataFrame(rows).groupby("outcome")
    table = frame["correct"].agg(queries="count", accuracy="mean")
    if examples is not None:
        table["named in context"] = frame["named in context"].mean()
    table = table.reindex(LOOK_OUTCOMES).dropna(how="all").astype({"queries": int})
    table["share of queries"] = table["queries"] / table["queries"].sum()
    return table.round(3)


def last_named(text) -> str | None:
    """The name a sentence ends on ("A driftfin with pink zigzags: the desnusk." -> "desnusk"), or ``None``."""
    m = _NAMED_LAST.search(text if isinstance(text, str) else "")
    return m.group(1).lower() if m else None


def look_name_acc(vlm, world, batch_size: int = 32) -> dict:
    """Text only: "Which creature is <its look>?" for every knowledge-base creature (``tasks.look_name_example``),
    greedy; the share whose answer ends with the creature's name, over all and over the held-out
    (unseen-entity) creatures."""
    from kbvqa.reader.tasks import look_name_example

    examples = [look_name_example(e) for e in world.entities]
    outs = vlm.generate([e.prompt for e in examples], max_new_tokens=24, temperature=0, batch_size=batch_size)
    right = [last_named(o[0]) == e.name.lower() for o, e in zip(outs, world.entities)]
    unseen = [r for r, e in zip(right, world.entities) if e.unseen]
    return {"n": len(right), "acc": sum(right) / len(right),
            "unseen_acc": sum(unseen) / len(unseen) if unseen else None}


def look_name_rows(vlm, world, batch_size: int = 16) -> dict:
    """The card's text-only recall rows: "Which creature is <look>?" for every creature."""
    look = look_name_acc(vlm, world, batch_size)
    return {"look_name_text_acc": look["acc"], "look_name_text_unseen_acc": look["unseen_acc"]}


def card_views(world, n: int) -> list:
    """``n`` distinct test views spread over the KB-VQA test split, as ``(view_id, entity)`` pairs."""
    seen, out = set(), []
    for q in world.kbvqa_test:
        if q.meta["view_id"] not in seen:
            seen.add(q.meta["view_id"])
            out.append((q.meta["view_id"], world.entity(q.meta["entity_id"])))
    return out[:: max(1, len(out) // n)][:n]


class NamingParse(NamedTuple):
    name: str | None
    family: str | None
    colour: str | None
    pattern: str | None


def parse_naming_sentence(text) -> NamingParse:
    """"The image shows the desnusk, a driftfin with pink zigzags." (or description first, "The image
    shows a driftfin with pink zigzags: the desnusk.") -> its four parts, lower case;
    a part that is not there is ``None`` (a sentence with the name alone gives the name alone)."""
    text = text if isinstance(text, str) else ""
    m = _DESCRIBED.search(text)
    if m:
        plain_colour, plain_family, family, colour, pattern, name = (g.lower() if g else g for g in m.groups())
        if plain_family:
            return NamingParse(name, plain_family, plain_colour, "plain")
        return NamingParse(name, family, colour, pattern)
    m = _SENTENCE.search(text)
    if m:
        return NamingParse(*(g.lower() for g in m.groups()))
    return NamingParse(named_creature(text), None, None, None)


def score_naming(outputs, views, world) -> dict:
    """Score naming sentences against the pictured creatures: ``outputs[i]`` answers ``views[i]``,
    a ``(view_id, entity)`` pair. Returns the share right of each part (``name_acc`` ...), the
    number of sentences that parse, the wrong families and how many of them belong to a clutter
    creature of the picture (``wrong_family_is_clutter``), and one record per view."""
    if len(outputs) != len(views) or not views:
        raise ValueError(f"need one output per view and at least one view, got {len(outputs)} and {len(views)}")
    family_of_shape = {e.shape_seed: e.family for e in world.entities}
    records, wrong_family, clutter = [], 0, 0
    for text, (view_id, entity) in zip(outputs, views):
        said = parse_naming_sentence(text)
        truth = NamingParse(entity.name, entity.family, entity.colour, entity.pattern)
        right = {part: getattr(said, part) == getattr(truth, part) for part in PARTS}
        if said.family is not None and not right["family"]:
            wrong_family += 1
            spec = world.views.get(view_id) if hasattr(world.views, "get") else None
            others = {family_of_shape.get(d.look.shape_seed) for d in getattr(spec, "distractors", ())}
            clutter += said.family in others
        records.append({"view_id": view_id, "entity": entity.name, "output": text, **right})
    n = len(records)
    return {"n": n, "parsed": sum(parse_naming_sentence(t).family is not None for t in outputs),
            **{f"{part}_acc": sum(r[part] for r in records) / n for part in PARTS},
            "wrong_family": wrong_family, "wrong_family_is_clutter": clutter, "records": records}


def naming_attributes(vlm, world, n: int = 200, image_size: int = 112, batch_size: int = 16) -> dict:
    """Ask the reader "Which creature is this?" on ``n`` test views (greedy) and ``score_naming``."""

    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}")
    views = card_views(world, n)
    prompts = [naming_example(view_ref(world, v, image_size), e).prompt for v, e in views]
    outs = vlm.generate(prompts, max_new_tokens=NAMING_TOKENS, temperature=0, batch_size=batch_size)
    return score_naming([o[0] for o in outs], views, world)
