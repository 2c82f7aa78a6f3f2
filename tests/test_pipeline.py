"""kbvqa.pipeline with a tiny fake world and scripted models: stages, ladders, reader, batching."""
from __future__ import annotations

import re

import pytest
from PIL import Image

from kbvqa.data.schema import Document, Passage, Query
from kbvqa.pipeline import PipelineConfig, ladder_candidates, ladder_choice, run_pipeline, stage_passages

IMG = Image.new("RGB", (8, 8))


class World:
    """Two queries; passage "qI-pJ" says "fact J"; the evidence of qI is passage qI-p3 ("GOLD")."""

    def __init__(self):
        self.passages = {}
        for i in range(2):
            for j in range(6):
                text = f"GOLD answer{i}" if j == 3 else f"fact {j}"
                self.passages[f"q{i}-p{j}"] = Passage(f"q{i}-p{j}", f"d{i}", text)
        self.queries = [Query(f"q{i}", f"What about {i}?", [f"answer{i}"], image=IMG, evidence_ids=[f"q{i}-p3"])
                        for i in range(2)]

    def passage(self, pid):
        return self.passages[pid]

    def document(self, doc_id):
        return Document(doc_id, doc_id, image=IMG)


def inputs(scores):
    """Stage inputs with the given P(Yes) for passages p0..p5 of each query (coarse = first 4)."""
    return {f"q{i}": {"coarse": [f"q{i}-p{j}" for j in range(4)], "coarse_scores": scores[:4],
                      "fine": [f"q{i}-p{j}" for j in range(6)], "fine_scores": scores} for i in range(2)}


def text_of(prompt):
    return "".join(part.get("text", "") for turn in prompt for part in turn["content"])


class Reader:
    """Answers with the value after GOLD when the gold passage is in the prompt, else "no idea"."""

    def __init__(self):
        self.calls = []

    def generate(self, prompts, n=1, max_new_tokens=8, temperature=0.0, seed=None, batch_size=16):
        self.calls.append(len(prompts))
        out = []
        for p in prompts:
            m = re.search(r"GOLD (\w+)", text_of(p))
            out.append([f"<think>x</think><answer>{m.group(1) if m else 'no idea'}</answer>"])
        return out


class Judge:
    """A one-pass / pairwise judge that names the candidate whose paragraph holds GOLD."""

    def __init__(self, reply=None):
        self.calls, self.reply = [], reply

    def generate(self, prompts, n=1, max_new_tokens=8, temperature=0.0, seed=None, batch_size=16):
        self.calls.append(len(prompts))
        out = []
        for p in prompts:
            ids = re.findall(r"\[(\d+)\] Image: \nParagraph: ([^\n]*)", text_of(p))
            gold = next((i for i, para in ids if "GOLD" in para), ids[0][0])
            out.append([self.reply if self.reply is not None else f"<winner>[{gold}]</winner><evidence>[{gold}]</evidence>"])
        return out


FLAT = [0.9, 0.8, 0.7, 0.2, 0.6, 0.05]    # the evidence (p3) is kept by the critic but ranked 5th of 5


def run(config, scores=FLAT, judge=None):
    world, reader = World(), Reader()
    return run_pipeline(world, world.queries, inputs(scores), config, reader=reader, judge=judge), reader


def test_stage_passages_critic_and_no_critic():
    cfg = PipelineConfig(rerank="none")
    s = stage_passages(inputs(FLAT)["q0"], cfg, ["q0-p3"])
    assert s["kept"] == ["q0-p0", "q0-p1", "q0-p2", "q0-p3", "q0-p4"]      # p5 has 0.05 <= 0.1
    assert s["scores"]["q0-p4"] == 0.6
    s = stage_passages(inputs(FLAT)["q0"], PipelineConfig(retrieval="coarse", critic=False, rerank="none"), [])
    assert s["kept"] == s["retrieved"] == [f"q0-p{j}" for j in range(4)] and s["scores"] == {}
    assert stage_passages({}, PipelineConfig(retrieval="evidence", critic=False, rerank="none"), ["e1"])["kept"] == ["e1"]


def test_candidates_by_score_else_retrieval_order():
    assert ladder_candidates(["a", "b", "c"], {"a": 0.1, "b": 0.9, "c": 0.5}, 2) == ["b", "c"]
    assert ladder_candidates(["a", "b", "c"], {}, 2) == ["a", "b"]


def test_ladder_choice_evidence_then_last_winner_then_none():
    assert ladder_choice("<round><compare>[1] vs [2]</compare><winner>[2]</winner></round><evidence>[2]</evidence>",
                         ["1", "2"]) == ("2", True)
    assert ladder_choice("<think>t</think><winner>3</winner> <winner>[1]</winner>", ["1", "3"]) == ("1", False)
    assert ladder_choice("<evidence>[9]</evidence>", ["1", "2"]) == (None, False)
    for junk in ("", "<<<", "<evidence>", "\x00" * 5, "<winner>[", "[1]"):
        chosen, valid = ladder_choice(junk, ["1", "2"])
        assert chosen in (None, "1", "2") and valid is False


def test_full_pipeline_with_a_perfect_judge_answers_both():
    judge = Judge()
    records, reader = run(PipelineConfig(), judge=judge)
    assert [r["context"] for r in records] == [["q0-p3"], ["q1-p3"]]
    assert all(r["correct"] and r["ev_context"] and r["ladder_valid"] for r in records)
    assert judge.calls == [2] and reader.calls == [2]          # one batched call per stage


def test_critic_top1_loses_the_evidence_the_ladder_recovers():
    records, _ = run(PipelineConfig(rerank="critic", keep=1))
    assert [r["context"] for r in records] == [["q0-p0"], ["q1-p0"]]
    assert not any(r["correct"] for r in records)
    assert all(r["ev_critic"] and not r["ev_context"] for r in records)


def test_invalid_ladder_reply_falls_back_to_the_strongest_candidate():
    records, _ = run(PipelineConfig(), judge=Judge(reply="I think so"))
    assert [r["context"] for r in records] == [["q0-p0"], ["q1-p0"]]
    assert all(r["ladder_valid"] is False for r in records)


def test_iterative_ladder_batches_one_call_per_round():
    judge = Judge()
    records, _ = run(PipelineConfig(rerank="iterative"), judge=judge)
    assert judge.calls == [2, 2, 2, 2]                         # N - 1 = 4 rounds, both queries each
    assert all(r["correct"] and r["ladder_calls"] == 4 for r in records)


def test_oracle_ladder_and_oracle_reader():
    records, _ = run(PipelineConfig(rerank="oracle"))
    assert all(r["context"] == [r["id"] + "-p3"] for r in records)
    low = [0.9, 0.8, 0.7, 0.05, 0.6, 0.5]                      # the critic drops the evidence
    records, _ = run(PipelineConfig(rerank="oracle", reader="oracle"), scores=low)
    assert all(not r["ev_critic"] and not r["correct"] and r["answer"] is None for r in records)
    records, _ = run(PipelineConfig(rerank="none", reader="oracle"))
    assert all(r["correct"] and r["answer"] == r["gold"][0] for r in records)


def test_all_filtered_reader_gets_no_passage():
    records, reader = run(PipelineConfig(rerank="none", threshold=0.95))
    assert all(r["passages"] == 0 and r["kept"] == 0 and not r["correct"] for r in records)


def test_reader_alone_and_evidence_alone():
    records, _ = run(PipelineConfig(retrieval="none", critic=False, rerank="none"))
    assert all(r["passages"] == 0 and not r["correct"] for r in records)
    records, _ = run(PipelineConfig(retrieval="evidence", critic=False, rerank="none"))
    assert all(r["correct"] for r in records)


@pytest.mark.parametrize("kwargs", [
    {"retrieval": "web"}, {"rerank": "bm25"}, {"reader": "human"}, {"order": "sideways"}, {"candidates": 1},
    {"keep": 0}, {"threshold": 1.5}, {"rerank": "critic", "critic": False}, {"retrieval": "none"},
    {"batch_size": True},
])
def test_bad_config_raises(kwargs):
    with pytest.raises(ValueError):
        PipelineConfig(**kwargs)


def test_bad_calls_raise():
    world = World()
    with pytest.raises(ValueError, match="stage inputs"):
        run_pipeline(world, world.queries, {}, PipelineConfig(), reader=Reader(), judge=Judge())
    with pytest.raises(ValueError, match="judge"):
        run_pipeline(world, world.queries, inputs(FLAT), PipelineConfig(), reader=Reader())
    with pytest.raises(ValueError, match="reader"):
        run_pipeline(world, world.queries, inputs(FLAT), PipelineConfig(rerank="oracle"))
    no_scores = {k: {**v, "fine_scores": [None] * 6} for k, v in inputs(FLAT).items()}
    with pytest.raises(ValueError, match="P\\(Yes\\)"):
        run_pipeline(world, world.queries, no_scores, PipelineConfig(rerank="none"), reader=Reader())


def test_ablation_rows_are_valid_and_summarised():
    from kbvqa.pipeline.results import ROW_BY_NAME, ROWS, summarise

    assert all(r.versus is None or r.versus in ROW_BY_NAME for r in ROWS)
    records = {"reader_alone": [{"id": "a", "answer_type": "string", "correct": False, "passages": 0,
                                 "ev_retrieved": False, "ev_critic": False, "ev_candidates": False,
                                 "ev_context": False, "ladder_valid": None, "ladder_calls": 0}],
               "coarse": [{"id": "a", "answer_type": "string", "correct": True, "passages": 40,
                           "ev_retrieved": True, "ev_critic": True, "ev_candidates": True,
                           "ev_context": True, "ladder_valid": None, "ladder_calls": 0}]}
    table = summarise(records)
    assert [r["row"] for r in table["rows"]] == ["reader_alone", "coarse"]
    assert table["rows"][1]["accuracy"] == 1.0 and table["rows"][1]["versus"]["diff"] == 1.0


def test_where_lost_names_the_first_stage_that_lost_the_evidence():
    from kbvqa.pipeline.results import LOSSES, where_lost

    def rec(flags, correct=False):
        return dict(zip(("ev_retrieved", "ev_critic", "ev_candidates", "ev_context"), flags), correct=correct)

    counts = where_lost([rec([False] * 4), rec([True, False, False, False]), rec([True, True, False, False]),
                         rec([True, True, True, False]), rec([True] * 4), rec([True] * 4, True),
                         rec([True, False, False, False], True)])
    assert list(counts) == list(LOSSES)
    assert list(counts.values()) == [1, 1, 1, 1, 1, 2]


def test_committed_table_matches_its_records():
    from kbvqa.pipeline.results import RESULTS_DIR, ROW_BY_NAME, load_records, load_results, summarise

    if not (RESULTS_DIR / "results.json").exists():
        pytest.skip("no committed pipeline ablation")
    results, records = load_results(), load_records()
    assert set(records) == set(ROW_BY_NAME)
    again = {r["row"]: r for r in summarise(records)["rows"]}
    for row in results["rows"]:
        assert again[row["row"]]["accuracy"] == row["accuracy"] and again[row["row"]]["ev_context"] == row["ev_context"]
    by = {r["row"]: r for r in results["rows"]}
    # stages can only lose the evidence: recall never grows along the pipeline
    for r in results["rows"]:
        assert r["ev_retrieved"] >= r["ev_critic"] >= r["ev_candidates"] >= r["ev_context"]
    assert by["evidence_alone"]["ev_context"] == 1.0 and by["reader_alone"]["ev_context"] == 0.0
    assert by["oracle_ladder"]["ev_context"] == by["ladder"]["ev_candidates"]   # a perfect pick keeps what it is given
