"""Committed KB-VQA answers re-judged by the official scorers (``kbvqa.experiments.rescore``), and
the RCTS rows' letter scored as RCTS's release scores it (``kbvqa.rcts.runs.scored_answer``)."""
from __future__ import annotations

import json
import shutil

import pytest

from kbvqa.config import DATA_DIR


@pytest.mark.parametrize("kind", ["reag", "pipeline"])
def test_rescore_rejudges_committed_answers_and_keeps_provenance(tmp_path, kind):
    from kbvqa.experiments.rescore import rescore_table
    from kbvqa.experiments.runs import read_run

    out = tmp_path / kind
    shutil.copytree(DATA_DIR / "experiments" / kind, out)
    before = json.loads((out / "results.json").read_text())
    row = "coarse"
    path = out / "runs" / f"{row}.jsonl"
    header, recs = read_run(path)
    wrong = next(r for r in recs if not r["correct"])
    wrong["correct"] = True                              # a verdict the official scorer must undo
    path.write_text("\n".join([json.dumps(header)] + [json.dumps(r) for r in recs]) + "\n")

    results = rescore_table(kind, out)
    assert results["provenance"]["rescored"]["verdicts_changed"][row] == 1
    assert results["provenance"]["git_commit"] == before["provenance"]["git_commit"]   # the run that made the answers
    _, recs = read_run(path)
    assert not next(r for r in recs if r["id"] == wrong["id"])["correct"]
    assert {r["split"] for r in recs} == {"unseen_question", "unseen_entity"}
    for r in results["rows"]:
        assert r["split_score"] is not None and r["split_low"] <= r["split_score"] <= r["split_high"]
    # the committed table is what the rescore writes: rescoring it again changes nothing
    committed = json.loads((DATA_DIR / "experiments" / kind / "results.json").read_text())
    assert [r["accuracy"] for r in committed["rows"]] == [r["accuracy"] for r in results["rows"]]
    assert [r.get("split_score") for r in committed["rows"]] == [r["split_score"] for r in results["rows"]]


def test_rcts_records_are_scored_by_the_scienceqa_release_regex():
    from kbvqa.data.schema import Query
    from kbvqa.rcts.runs import scored_answer

    q = Query(id="mc-1", question="q", answers=["B"], answer_type="choice", options=["x", "y", "z"])
    assert scored_answer("The answer is (B).", "B", q) == "B"
    assert scored_answer("the answer is B", "B", q) is None          # the release's regex is case-sensitive
    assert scored_answer("The answer is Bees", None, q) == "B"       # and has no word boundary
    assert scored_answer("The answer is D.", None, q) is None        # not an option
    free = Query(id="mv-1", question="q", answers=["3"], answer_type="string")
    assert scored_answer("anything", "3", free) == "3"               # other kinds: the builder's parse


def test_tiny_card_judges_a_multi_answer_as_one_set():
    # The card's first judge took each item of the set as an alternative answer, so naming one
    # right item among two (IoU 1/3 against the set) counted as right.
    from kbvqa.models.model_card import _kbvqa_correct

    meta = {"answers": ["vearthoo", "glubream"], "answer_type": "multi"}
    assert not _kbvqa_correct("<think>t</think><answer>vearthoo, bumgraind</answer>", meta)
    assert _kbvqa_correct("<think>t</think><answer>glubream and vearthoo</answer>", meta)


def test_committed_tiny_card_rows_are_what_the_shipped_checkpoint_answers(tmp_path):
    from kbvqa.experiments.rescore import rescore_tiny_card

    shutil.copytree(DATA_DIR / "tiny_vlm", tmp_path / "tiny_vlm")
    committed = json.loads((DATA_DIR / "tiny_vlm" / "card.json").read_text())
    card = rescore_tiny_card(tmp_path / "tiny_vlm")
    rows = committed["rescored"]["before"].keys()
    assert {k: card["evaluation"][k] for k in rows} == {k: committed["evaluation"][k] for k in rows}
    assert card["rescored"]["before"] == {k: committed["evaluation"][k] for k in rows}
