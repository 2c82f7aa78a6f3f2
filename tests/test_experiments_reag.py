"""Tests of the ReAG ablation ladder (kbvqa.reag.ladder, kbvqa.experiments.reag_ladder): rung definitions, the passages
each rung reads, evaluation with a fake generator, aggregation, the live agreement check and the
committed table. No model is trained or loaded here."""
from __future__ import annotations

import json

import pytest

from kbvqa.experiments.reag_ladder import rung_fingerprint
from kbvqa.reag import ladder
from kbvqa.reag import results as res
from kbvqa.reag.ladder import LadderConfig, rung_passages
from kbvqa.reag.results import RUNGS, Rung


def _text_of(chat) -> str:
    return "\n".join(p.get("text", "") for turn in chat for p in turn["content"] if isinstance(p, dict))


class OracleGenerator:
    """Answers the gold answer when the query's evidence passage is in the prompt, else "I don't know"."""

    def __init__(self, world, queries):
        self.cases = [(q.question, world.passage(q.evidence_ids[0]).text, q.answers[0]) for q in queries]
        self.calls = 0

    def generate(self, prompts, n=1, **kwargs):
        self.calls += 1
        out = []
        for chat in prompts:
            text = _text_of(chat)
            answer = next((a for question, evidence, a in self.cases if question in text and evidence in text),
                          "I don't know")
            out.append([f"<think>t</think><answer>{answer}</answer>"] * n)
        return out


@pytest.fixture(scope="module")
def world():
    from kbvqa.data import get_world

    return get_world(0)


def _evidence(q, coarse, fine, coarse_scores, fine_scores, threshold=0.1):
    return {"coarse": coarse, "fine": fine, "coarse_scores": coarse_scores, "fine_scores": fine_scores,
            "threshold": threshold, "evidence": list(q.evidence_ids)}


# ------------------------------------------------------------------------------ rung definitions
def test_each_rung_adds_one_component_in_the_papers_order():
    generators = ("zero_shot", "sft", "cold_start", "rl")

    def level(r: Rung):
        return (r.coarse, r.critic, r.fine, generators.index(r.generator))

    assert [r.name for r in RUNGS] == list(res.PAPER_ROW_OF)
    for before, after in zip(RUNGS, RUNGS[1:]):
        changed = sum(a != b for a, b in zip(level(before), level(after)))
        assert changed == 1 and level(after) > level(before), (before.name, after.name)
    assert set(res.CHEAP_RUNGS) == {r.name for r in RUNGS if r.generator == "zero_shot"}


def test_rungs_match_the_retrieval_flags_of_their_paper_rows():
    rows = res.paper_rows()
    assert len(rows) == 11 and rows[-1]["infoseek_all"] == 47.2 and rows[7]["infoseek_all"] == 43.3
    for rung in RUNGS:
        row = rows[res.PAPER_ROW_OF[rung.name]]
        assert row["generator"] == "Qwen2.5-VL-3B"
        assert (row["coarse"], row["fine"], row["critic"]) == (rung.coarse, rung.fine, rung.critic)
        assert row["sft"] == (rung.generator != "zero_shot") and row["rl"] == (rung.generator == "rl")


def test_rung_passages_follow_the_flags(world):
    q = world.kbvqa_test[0]
    ev = _evidence(q, ["a", "b", "c"], ["a", "d"], [0.05, 0.1, 0.9], [0.2, 0.0])
    by_name = {r.name: rung_passages(r, ev) for r in RUNGS}
    assert by_name["no_retrieval"] == []
    assert by_name["coarse"] == ["a", "b", "c"]
    assert by_name["coarse_critic"] == ["c"]            # Eq. 4 is strict: 0.1 is not kept
    assert by_name["fine_critic"] == by_name["rl"] == ["a"]
    assert rung_passages(RUNGS[2], _evidence(q, ["a"], [], [0.0], [])) == []   # all filtered
    assert rung_passages(res.ORACLE_RUNGS[0], ev) == [q.evidence_ids[0]]


def test_config_validation_and_fingerprints():
    for bad in (dict(limit=0), dict(group_size=1), dict(threshold=1.5), dict(threshold=0.0), dict(threshold=1.0),
                dict(alpha=2.0), dict(k=0), dict(sft_steps=True), dict(traces="gpt"), dict(trace_tokens=0)):
        with pytest.raises(ValueError):
            LadderConfig(**bad)
    base, more_sft = LadderConfig(), LadderConfig(sft_steps=7)
    by_name = {r.name: r for r in RUNGS}
    assert rung_fingerprint(by_name["sft"], base) != rung_fingerprint(by_name["sft"], more_sft)
    assert rung_fingerprint(by_name["coarse"], base) == rung_fingerprint(by_name["coarse"], more_sft)
    assert rung_fingerprint(by_name["coarse"], base) != rung_fingerprint(by_name["coarse"], LadderConfig(seed=1))
    written = LadderConfig(traces="model")                  # model-written traces: the trained rungs rerun
    assert rung_fingerprint(by_name["traces"], base) != rung_fingerprint(by_name["traces"], written)
    assert rung_fingerprint(by_name["sft"], base) == rung_fingerprint(by_name["sft"], written)
    with pytest.raises(ValueError):
        ladder.run_rungs(None, [], {}, base, rungs=["no_such_rung"])


def test_the_evidence_follows_the_critic_model(monkeypatch):
    """``evidence.json`` (retrieval and P(Yes), read by chapters 24 and 30) is reused only while the
    critic role's model is the one that scored it: moving the critic recomputes it, and every pipeline
    row (which reads it) runs again."""
    import json

    import kbvqa.config as kbvqa_config
    from kbvqa.experiments.pipeline_ablation.run import evidence_models, row_fingerprint
    from kbvqa.pipeline.results import EVIDENCE_FILE, ROWS

    committed = json.loads(EVIDENCE_FILE.read_text())
    assert committed["fingerprint"] == ladder.evidence_fingerprint(LadderConfig()), "committed evidence is current"
    assert evidence_models() == (committed["fingerprint"], committed["critic_model"])
    before, row_before = ladder.evidence_fingerprint(LadderConfig()), row_fingerprint(ROWS[0])
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", kbvqa_config.CPU_READER_ROLES - {"critic"})
    assert ladder.evidence_fingerprint(LadderConfig()) != before
    assert row_fingerprint(ROWS[0]) == row_before, "the rows change with the evidence file, not the role alone"
    monkeypatch.setattr("kbvqa.experiments.pipeline_ablation.run.evidence_models", lambda *a: ("new-evidence", "x"))
    assert row_fingerprint(ROWS[0]) != row_before


def test_a_chapter_reading_the_committed_evidence_never_rewrites_it(tmp_path, world, monkeypatch):
    """In the gpu profile the critic role's model differs, so the fingerprint does too: the chapter
    computes its queries' evidence live (``write=False``) and leaves the committed file as it is."""
    import json

    path = tmp_path / "evidence.json"
    path.write_text(json.dumps({"fingerprint": "another critic", "critic_model": "x", "queries": {}}))
    before = path.read_text()
    monkeypatch.setattr(ladder, "train_ladder_critic", lambda world, config, **kw: "critic")
    monkeypatch.setattr(ladder, "ladder_retriever", lambda world, config: "retriever")
    monkeypatch.setattr(ladder, "retrieve_evidence", lambda world, qs, critic, config, retriever=None:
                        {q.id: {"live": 1} for q in qs})
    queries = world.kbvqa_test[:2]
    got = ladder.load_evidence(world, queries, LadderConfig(), path, write=False)
    assert got == {q.id: {"live": 1} for q in queries} and path.read_text() == before
    ladder.load_evidence(world, queries, LadderConfig(), path)          # the experiment's runner writes
    assert set(json.loads(path.read_text())["queries"]) == {q.id for q in queries}


def test_evidence_is_written_chunk_by_chunk_and_an_interrupted_run_scores_only_the_rest(tmp_path, world,
                                                                                       monkeypatch):
    """On the reader the critic scores ~50 passages per query (an hour for the ladder's queries): the
    file is written every ``chunk`` queries, and a rerun scores only the queries it lacks."""
    import json

    path, scored = tmp_path / "evidence.json", []

    def retrieve(world, qs, critic, config, retriever=None):
        if len(scored) == 2:
            raise KeyboardInterrupt("the session ended")
        scored.append([q.id for q in qs])
        return {q.id: {"live": q.id} for q in qs}

    monkeypatch.setattr(ladder, "train_ladder_critic", lambda world, config, **kw: "critic")
    monkeypatch.setattr(ladder, "ladder_retriever", lambda world, config: "retriever")
    monkeypatch.setattr(ladder, "retrieve_evidence", retrieve)
    queries = world.kbvqa_test[:5]
    with pytest.raises(KeyboardInterrupt):
        ladder.load_evidence(world, queries, LadderConfig(), path, chunk=2)
    kept = json.loads(path.read_text())
    assert sorted(kept["queries"]) == sorted(q.id for q in queries[:4]) and kept["seconds"] >= 0
    scored.clear()
    log = {}
    got = ladder.load_evidence(world, queries, LadderConfig(), path, log=log, chunk=2)
    assert scored == [[queries[4].id]] and got == {q.id: {"live": q.id} for q in queries}
    assert log["critic"]["seconds"] >= kept["seconds"]
    with pytest.raises(ValueError, match="chunk"):
        ladder.load_evidence(world, queries, LadderConfig(), path, chunk=0)


# ------------------------------------------------------------------------------ evaluation
def test_evaluate_scores_with_the_task_reward(world):
    queries = world.kbvqa_test[:6]
    ev = {}
    for i, q in enumerate(queries):      # evidence retrieved for the even queries only
        other = [p.id for p in world.documents[-1].passages[:2]]
        ids = other + ([q.evidence_ids[0]] if i % 2 == 0 else [])
        ev[q.id] = _evidence(q, ids, ids, [0.9] * len(ids), [0.9] * len(ids))
    gen = OracleGenerator(world, queries)
    recs = ladder.evaluate(gen, world, queries, ev, RUNGS[1], LadderConfig(batch_size=4))
    assert gen.calls == 1 and [r["id"] for r in recs] == [q.id for q in queries]
    assert [r["correct"] for r in recs] == [r["evidence_in"] for r in recs] == [i % 2 == 0 for i in range(6)]
    assert all(r["format"] == 1.0 for r in recs)
    none = ladder.evaluate(gen, world, queries, ev, RUNGS[0], LadderConfig())
    assert not any(r["correct"] for r in none) and all(r["passages"] == 0 for r in none)


def test_run_rungs_cheap_rungs_with_a_fake_generator(world, monkeypatch):
    queries = world.kbvqa_test[:4]
    noise = [p.id for p in world.documents[-1].passages[:3]]
    ev = {q.id: _evidence(q, noise + [q.evidence_ids[0]], [q.evidence_ids[0]] + noise,
                          [0.9, 0.9, 0.9, 0.05], [0.9, 0.0, 0.0, 0.0]) for q in queries}
    monkeypatch.setattr(ladder, "load_vlm", lambda role="generator", **kw: OracleGenerator(world, queries))
    seen = []
    out = ladder.run_rungs(world, queries, ev, LadderConfig(), rungs=res.CHEAP_RUNGS, done={"coarse": []},
                           on_records=lambda name, recs: seen.append(name))
    assert seen == ["no_retrieval", "coarse_critic", "fine_critic"]
    acc = {name: sum(r["correct"] for r in recs) / len(recs) for name, recs in out.items()}
    assert acc == {"no_retrieval": 0.0, "coarse_critic": 0.0, "fine_critic": 1.0}   # critic drops, fine keeps
    assert [r["passages"] for r in out["fine_critic"]] == [1] * 4


def test_run_rungs_uses_given_generators_instead_of_training(world, monkeypatch):
    queries = world.kbvqa_test[:2]
    ev = {q.id: _evidence(q, [q.evidence_ids[0]], [q.evidence_ids[0]], [0.9], [0.9]) for q in queries}
    monkeypatch.setattr(ladder, "trained_generator", lambda *a, **k: pytest.fail("a given generator is not trained"))
    out = ladder.run_rungs(world, queries, ev, LadderConfig(), rungs=["rl"],
                           generators={"rl": OracleGenerator(world, queries)})
    assert [r["correct"] for r in out["rl"]] == [True, True]


# ------------------------------------------------------------------------------ aggregation
def _records(correct_by_rung: dict[str, list[bool]]) -> dict[str, list[dict]]:
    return {name: [{"id": f"q{i}", "answer_type": "string" if i % 2 else "numerical", "answer": str(c),
                    "correct": c, "format": 1.0, "passages": 3 * (name != "no_retrieval"), "evidence_in": c}
                   for i, c in enumerate(values)] for name, values in correct_by_rung.items()}


def test_summarise_accuracy_intervals_and_paired_differences():
    n = 40
    recs = _records({r.name: [i < 4 * (j + 1) for i in range(n)] for j, r in enumerate(RUNGS)})
    recs["coarse"] = recs["coarse"][:-1]                   # one query missing: every row is cut to 39
    out = res.summarise(recs, config={"limit": n})
    rows = {r["rung"]: r for r in out["rows"]}
    assert out["n"] == 39 and all(r["n"] == 39 for r in rows.values())
    assert rows["no_retrieval"]["accuracy"] == pytest.approx(4 / 39, abs=1e-4)
    assert rows["rl"]["accuracy"] == pytest.approx(28 / 39, abs=1e-4)
    for r in rows.values():
        assert r["low"] <= r["accuracy"] <= r["high"]
    assert "vs_previous" not in rows["no_retrieval"]
    assert rows["coarse"]["vs_previous"]["diff"] == pytest.approx(4 / 39, abs=1e-4)
    assert rows["rl"]["paper_infoseek"] == 43.3 and rows["traces"]["paper_evqa"] == 38.1
    assert rows["coarse"]["all_filtered"] is None and rows["coarse_critic"]["all_filtered"] == 0.0
    assert rows["rl"]["accuracy_with_evidence"] == 1.0       # evidence_in == correct in these records
    assert set(rows["sft"]["by_type"]) == {"string", "numerical"}
    with pytest.raises(ValueError):
        res.summarise({})
    with_oracle = res.summarise({**recs, "oracle_zero_shot": recs["rl"]})
    assert [r["rung"] for r in with_oracle["rows"]] == [r.name for r in RUNGS]
    assert with_oracle["diagnostics"][0]["accuracy"] == rows["rl"]["accuracy"]
    assert with_oracle["diagnostics"][0]["paper_infoseek"] is None


def test_split_rows_step_the_ladder_within_each_split():
    recs = _records({"coarse": [True, True, False, False], "coarse_critic": [True, True, True, False]})
    for name in recs:
        for i, r in enumerate(recs[name]):
            r["split"] = "unseen_question" if i < 2 else "unseen_entity"
    rows = {(r["split"], r["rung"]): r for r in res.split_rows(recs)}
    assert rows["unseen_question", "coarse"]["accuracy"] == 1.0 and rows["unseen_entity", "coarse"]["accuracy"] == 0.0
    assert "vs_previous" not in rows["unseen_entity", "coarse"]
    assert rows["unseen_question", "coarse_critic"]["vs_previous"]["diff"] == 0.0
    assert rows["unseen_entity", "coarse_critic"]["vs_previous"]["diff"] == 0.5
    assert rows["unseen_entity", "coarse_critic"]["n"] == 2 and res.split_rows({}) == []


def test_results_round_trip_and_figure(tmp_path):
    recs = _records({r.name: [True, False, True] for r in RUNGS})
    out = res.summarise(recs, provenance={"seed": 0})
    res.write_results(out, tmp_path)
    assert res.load_results(tmp_path)["rows"] == json.loads(json.dumps(out["rows"]))
    lines = (tmp_path / "results.csv").read_text().splitlines()
    assert len(lines) == 1 + len(RUNGS) and lines[1].startswith("no_retrieval,")
    assert len(res.table_rows(out)) == len(RUNGS)
    from kbvqa.viz.reag import draw_ladder

    fig = draw_ladder(out)
    assert len(fig.axes) == 2 and len(fig.axes[0].patches) == len(RUNGS)


def test_live_agreement_uses_wilson_intervals():
    committed = _records({"coarse": [True] * 4 + [False] * 4})
    same = res.live_agreement(committed, committed)[0]
    assert same["agrees"] and same["same_answers"] == 1.0 and same["committed"] == 0.5
    flipped = _records({"coarse": [False] * 8})
    committed_all = _records({"coarse": [True] * 8})
    other = res.live_agreement(flipped, committed_all)[0]
    assert not other["agrees"] and other["same_answers"] == 0.0
    with pytest.raises(ValueError):
        res.live_agreement(_records({"coarse": [True]}), {"coarse": []})


# ------------------------------------------------------------------------------ the committed table
def test_committed_table_matches_its_records():
    path = res.RESULTS_DIR / "results.json"
    if not path.exists():
        pytest.skip("no committed ladder results yet")
    committed = res.load_results()
    assert [r["rung"] for r in committed["rows"]] == [r.name for r in RUNGS]
    assert committed["n"] >= 100 and {"git_commit", "seed", "model", "wall_seconds"} <= set(committed["provenance"])
    again = res.summarise(res.load_records())
    assert [r["accuracy"] for r in again["rows"]] == [r["accuracy"] for r in committed["rows"]]


def test_real_subset_is_a_no_op_at_n_zero_and_checks_its_arguments():
    from kbvqa.reag.ladder import real_subset_ladder

    assert real_subset_ladder("infoseek", 0) == {}
    for bad in (dict(name="scienceqa"), dict(n=-1)):
        with pytest.raises(ValueError):
            real_subset_ladder(**{"name": "evqa", "n": 0, **bad})


def test_knowledge_base_looks_passages_up(world):
    from kbvqa.reag.ladder import KnowledgeBase

    kb = KnowledgeBase(world.documents[:3])
    p = world.documents[2].passages[1]
    assert kb.passage(p.id) is p and len(kb.documents) == 3
    with pytest.raises(KeyError):
        kb.passage(world.documents[5].passages[0].id)


def test_real_subset_ladder_says_why_it_is_skipped(monkeypatch):
    from kbvqa.data import DatasetNotAvailable
    from kbvqa.reag.ladder import real_subset_ladder

    def unavailable(name, **kwargs):
        raise DatasetNotAvailable(f"{name}: the official annotation files are not under ~/data\nmore")

    monkeypatch.setattr(ladder, "load_dataset", unavailable)
    with pytest.warns(UserWarning, match="skipped: infoseek: the official annotation files"):
        assert real_subset_ladder("infoseek", 5) == {}
    assert real_subset_ladder("infoseek", 0) == {}


def test_real_subset_ladder_frees_the_critic_before_the_generator_loads(monkeypatch):
    """Issue 56: the 3B critic (gpu profile) is handed back (free_memory) before the generator loads."""
    from kbvqa.reag.ladder import real_subset_ladder

    calls = []
    monkeypatch.setattr(ladder, "load_dataset", lambda name, limit: ["q"])
    monkeypatch.setattr(ladder, "load_knowledge_base", lambda name, max_docs, queries: [])
    monkeypatch.setattr(ladder, "load_vlm", lambda role: calls.append(("load", role)) or role)
    monkeypatch.setattr(ladder, "retrieve_evidence", lambda kb, queries, critic, config: calls.append(
        ("retrieve", critic)) or {})
    monkeypatch.setattr(ladder, "free_memory", lambda: calls.append(("free",)))
    monkeypatch.setattr(ladder, "evaluate", lambda model, kb, queries, evidence, rung, config: [model])
    out = real_subset_ladder("infoseek", 1)
    assert calls == [("load", "critic"), ("retrieve", "critic"), ("free",), ("load", "rl_policy")]
    assert out and all(records == ["rl_policy"] for records in out.values())


def test_the_pipeline_rows_follow_the_evidence_they_read_wherever_it_lies(tmp_path):
    """Chapter 30's rows can run on a ladder run's evidence still in progress (``--evidence``): the
    rows' fingerprint names the evidence's fingerprint, not its path, so they stay valid once the
    file lands in ``data/experiments/reag/``; other evidence reruns them."""
    import shutil

    from kbvqa.experiments.pipeline_ablation import EVIDENCE_FILE, ROWS, row_fingerprint

    moved = tmp_path / "evidence.json"
    shutil.copy(EVIDENCE_FILE, moved)
    assert row_fingerprint(ROWS[0], moved) == row_fingerprint(ROWS[0])
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"fingerprint": "another critic", "critic_model": "x", "queries": {}}))
    assert row_fingerprint(ROWS[0], other) != row_fingerprint(ROWS[0])


def test_heldout_train_queries_reach_no_training_stage():
    """Issue 53: the last ``heldout_train`` train queries feed no critic tuple, no SFT or cold-start
    example and no GRPO prompt; 0 keeps the committed streams."""
    from kbvqa.data import get_world
    from kbvqa.reag import cold_start_examples
    from kbvqa.reag.critic_train import CriticTrainConfig, critic_training_examples
    from kbvqa.reag.ladder import LadderConfig, heldout_queries, trained_on

    world = get_world(0)
    config = LadderConfig(heldout_train=200)
    held = {q.id for q in heldout_queries(world, config)}
    assert len(held) == 200 and held == {q.id for q in world.kbvqa_train[-200:]}
    assert not held & {q.id for q in trained_on(world, config)}
    asked = {e.meta.get("query_ids", [None])[0] for e in critic_training_examples(
        world, 400, CriticTrainConfig(heldout_train=200))}
    assert asked and not asked & held
    everyone = {e.meta.get("query_ids", [None])[0] for e in critic_training_examples(world, 3000, CriticTrainConfig())}
    assert everyone & held                                       # without it the stream does ask about them
    cold = cold_start_examples(world, 300, queries=trained_on(world, config))
    assert not {e.meta["query_ids"][0] for e in cold} & held
    assert heldout_queries(world, LadderConfig()) == [] and len(trained_on(world, LadderConfig())) == 2304
    with pytest.raises(ValueError, match="use at most"):
        trained_on(world, LadderConfig(heldout_train=2000))
    with pytest.raises(ValueError, match="heldout_train"):
        LadderConfig(heldout_train=-1)


def test_retrieval_depth_switches_only_when_the_generator_drowns(monkeypatch):
    """k = 20 is taken only when accuracy given the evidence falls by >= 5 points with an interval
    below 0; a flat result keeps the smaller k."""
    import kbvqa.reag.ladder as ladder
    from kbvqa.reag.ladder import LadderConfig, retrieval_depth

    class Q:
        def __init__(self, i):
            self.id = f"q{i}"

    queries = [Q(i) for i in range(40)]

    def run(correct_at):
        def fake_retrieve(world, qs, critic, cfg, retriever=None):
            return {"k": cfg.k}

        def fake_evaluate(generator, world, qs, evidence, rung, cfg):
            assert rung.name == "coarse" and not rung.critic
            return [{"correct": correct_at(evidence["k"], i), "evidence_in": i % 10 != 0,
                     "passages": 8 * evidence["k"]} for i in range(len(qs))]
        monkeypatch.setattr(ladder, "retrieve_evidence", fake_retrieve)
        monkeypatch.setattr(ladder, "evaluate", fake_evaluate)
        return retrieval_depth(None, None, queries, LadderConfig(), retriever_for=lambda k: None)["summary"]

    drowns = run(lambda k, i: k == 5 or i % 2 == 0)               # k = 20 loses half of them
    assert drowns["evidence_in_all"] == 36 and drowns["switch"] is True
    assert drowns["given_evidence"][5] == 1.0 and drowns["difference"]["high"] < 0
    assert drowns["passages"] == {5: 40, 20: 160}
    flat = run(lambda k, i: i % 3 != 0)
    assert flat["switch"] is False and flat["difference"]["mean"] == 0
    with pytest.raises(ValueError, match="two or more"):
        retrieval_depth(None, None, queries, LadderConfig(), ks=(5,))
