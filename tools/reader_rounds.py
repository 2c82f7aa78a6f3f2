"""Write ``data/reader/rounds.json``: the card rows of every training round of the reader, shipped or not.

The appendix on the reader's training (``notebooks/A1_reader_training.ipynb``) shows the table, so
that a reader sees what each round tried and what it reached (issue #15 asks for "what was tried and
what it reached" where a row falls short). Rounds are numbered from 0, as the book names them. A round's card comes
from the commit that shipped it (``"commit"``: its ``data/reader/``), a folder committed elsewhere
(``"commit:folder"``), or its export folder (a round not shipped, or shipped in the same commit as
its entry); a folder this machine no longer holds keeps the entry ``rounds.json``
already records. Run by hand after a round's card: ``python -m tools.reader_rounds``; edit
``ROUNDS`` first, and mark a round shipped only in the commit that copies it into ``data/reader/``.
A test checks that the shipped entry is ``data/reader/card.json``.
"""
from __future__ import annotations

import json
import re
import subprocess
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "reader" / "rounds.json"
ROWS = ("kbvqa_gold_passage_acc", "kbvqa_10_passages_acc", "kbvqa_no_passage_acc", "naming_name_acc",
        "naming_family_acc", "critic_roc_auc", "pairwise_acc", "ladder_valid_rate", "look_name_text_acc")
# ten-passage rationales split by kbvqa.reader.diagnose.look_recall (shares of the row's queries)
LOOK_ROWS = {"look_right_its_name": "look right, its name", "look_right_another_name": "look right, another name"}
# share of ten-passage rationales that name the pictured creature, per InfoSeek split kind
# (kbvqa.reader.diagnose.named_right_by_split): creatures with training questions / held-out ones
SPLIT_ROWS = {"named_among_ten_unseen_question": "unseen_question", "named_among_ten_unseen_entity": "unseen_entity"}
# the vision tower's own classifier on test views at the end of its last vision stage (the run's curves)
TOWER_ROW = "tower_entity_acc"
CACHE = Path.home() / ".cache" / "kbvqa" / "reader"
# (round, what it changed, source of its card: a commit that shipped it, "commit:folder" or an export folder, shipped)
ROUNDS = [
    (0, "vision 3000, naming 400, mixture 500 steps (creature_name weight 0.09)", "a9673f2", False),
    (1, "naming reopened 400 -> 1200 steps, then the mixture again on fresh examples", "6a8b3ff", False),
    (2, "mixture reopened 500 -> 950 steps, re-warmed, creature_name weight 0.2", "781d7e8", False),
    (2, "the same reader carded again with the ReAG answer cap at 128 tokens", "3220c64", False),
    (3, "mixture reopened 950 -> 1450 steps, re-warmed, creature_name weight 0.3", str(CACHE / "round3_export"),
     False),
    (4, "from round 2: mixture reopened 950 -> 1350 steps, description-first rationales (rationale_order)",
     "c34dd7d", False),
    (5, "from round 4 (seed_run): mixture reopened 1350 -> 1700 steps, + 4 text-only look -> name examples "
        "a step (look_name_batch), kbvqa_ten_passages weight 0.15 (its distractors in the mixture's layout)",
     str(CACHE / "round5_export"), False),
    (6, "from round 5: mixture reopened 1700 -> 2100 steps, kbvqa_ten_passages in the card's layout "
        "(TEN_PASSAGE_MIX; until now it drew the mixture's) at weight 1.0 (half the mixture), look_name_batch 4",
     "f55e2d0", False),
    (7, "from round 6: mixture reopened 2100 -> 2400 steps, + ten_passage_naming at weight 0.4 (every knowledge-base "
        "creature named in the card's ten-passage layout, held-out ones included; no fact asked)",
     "87fa1b8", False),
    (8, "from round 7: mixture reopened 2400 -> 2800 steps, the same recipe", str(CACHE / "round9_export"), False),
    (9, "from round 7: naming reopened 1200 -> 2000 steps, then the tower reopened 3000 -> 6000 steps on 480 views "
        "per creature with the family head weighted as the creature's (vision_family_weight 1.0), naming 600 steps "
        "on the changed tower, the mixture again for 600 steps", str(CACHE / "round10_export"), False),
    (10, "round 9's recipe again from round 7's shipped export (round 9's weights were lost with the reader "
         "cache), in float32, carried over sessions with --carry/--from", "9416fd0:data/reader_in_training", True),
]


def answer_cap(card: dict) -> int | None:
    """The ReAG answer cap (new tokens) a card was measured with: its ``answer_tokens`` or, for a
    card made before cards recorded it, ``KBVQA_TOKENS`` in ``kbvqa/reader/card.py`` at its commit."""
    recorded = card["evaluation"].get("answer_tokens")
    if recorded:
        return recorded["reag"]
    try:
        code = subprocess.check_output(["git", "show", f"{card['commit']}:kbvqa/reader/card.py"], cwd=ROOT, text=True,
                                       stderr=subprocess.DEVNULL)
    except subprocess.CalledProcessError:
        return None
    m = re.search(r'KBVQA_TOKENS = .*?"reag": (\d+)', code)
    return int(m.group(1)) if m else None


def card_location(source: str) -> tuple[str, str]:
    """``(commit, folder)`` of a committed source: ``"commit"`` (its ``data/reader``) or ``"commit:folder"``."""
    commit, _, folder = source.partition(":")
    return commit, folder or "data/reader"


def load_card(source: str, name: str = "card.json") -> dict:
    if Path(source).is_dir():
        return json.loads((Path(source) / name).read_text())
    commit, folder = card_location(source)
    return json.loads(subprocess.check_output(["git", "show", f"{commit}:{folder}/{name}"], cwd=ROOT))


def tower_entity_acc(source: str) -> float | None:
    """The tower's ``vision_entity_acc`` quick check (creature from a test view, its own classifier
    head) at the last step of the vision stage, from the round's ``curves.json``; None if unrecorded."""
    try:
        curves = load_card(source, "curves.json")
    except (OSError, subprocess.CalledProcessError, ValueError):
        return None
    checks = [e for e in curves.get("evals", []) if e["stage"] == "vision" and "vision_entity_acc" in e]
    return checks[-1]["vision_entity_acc"] if checks else None


def round_entry(number: int, what: str, source: str, shipped: bool) -> dict:
    card = load_card(source)
    ev = card["evaluation"]
    return {"round": number, "what": what, "shipped": shipped, "fingerprint": card["fingerprint"],
            "card_date": card["date"],
            "card_source": ("{1}/card.json at {0}".format(*card_location(source)) if not Path(source).is_dir()
                            else "data/reader/card.json (shipped from its export folder)" if shipped
                            else "export folder (not shipped)"),
            "n": ev["n_queries"], "steps": {s: r["steps"] for s, r in card["stages"].items()},
            "answer_tokens": answer_cap(card),
            **{k: ev.get(k) for k in ROWS}, **look_shares(ev), **split_shares(ev),  # None: not measured
            TOWER_ROW: tower_entity_acc(source)}


def look_shares(evaluation: dict) -> dict:
    """``LOOK_ROWS`` of a card's ten-passage records; ``None`` for name-first rationales (no look written first)."""
    from kbvqa.data import get_world
    from kbvqa.reader.diagnose import look_recall

    table = look_recall(evaluation, get_world(0))
    if "no description" in table.index and table.loc["no description", "share of queries"] > 0.5:
        return dict.fromkeys(LOOK_ROWS)
    return {key: float(table["share of queries"].get(outcome, 0.0)) for key, outcome in LOOK_ROWS.items()}


def split_shares(evaluation: dict) -> dict:
    """``SPLIT_ROWS`` of a card: the pictured creature named among ten passages, per split kind."""
    from kbvqa.data import get_world
    from kbvqa.reader.diagnose import named_right_by_split

    table = named_right_by_split(evaluation, get_world(0))
    return {key: float(table.loc[kind, "gold among 10 passages"]) for key, kind in SPLIT_ROWS.items()}


def entry_or_recorded(number: int, what: str, source: str, shipped: bool, recorded: dict) -> dict:
    """``round_entry``, or, for a round carded in a reader cache that this machine never held (the
    cache lives outside the repository), the entry that ``rounds.json`` already records for it."""
    if source.startswith("/") and not Path(source).is_dir():
        if (number, what) not in recorded:
            raise FileNotFoundError(f"round {number}: no card in {source} and none recorded in {OUT}")
        return recorded[(number, what)]
    return round_entry(number, what, source, shipped)


def main(argv=None) -> None:
    """Parse the arguments first: ``--help`` prints and writes nothing."""
    import argparse

    argparse.ArgumentParser(prog="python -m tools.reader_rounds",
                            description=f"Rewrite {OUT.name}: the reader's training rounds, from the committed "
                            "runs (reads git history; writes that one file).").parse_args(argv)
    commit = subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True).strip()
    old = json.loads(OUT.read_text())["rounds"] if OUT.exists() else []
    recorded = {(r["round"], r["what"]): r for r in old}
    rounds = [entry_or_recorded(*r, recorded) for r in ROUNDS]
    provenance = {"commit": commit, "date": datetime.now(UTC).isoformat(timespec="seconds"),
                  "command": "python -m tools.reader_rounds"}
    derived = [*LOOK_ROWS, *SPLIT_ROWS, TOWER_ROW]
    OUT.write_text(json.dumps({"provenance": provenance, "rows": list(ROWS), "derived_rows": derived,
                               "rounds": rounds}, indent=1) + "\n")
    print(f"{OUT}: {len(rounds)} rounds")


if __name__ == "__main__":
    main()
