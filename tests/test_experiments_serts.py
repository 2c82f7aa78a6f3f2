"""Tests of the SeRTS experiments (kbvqa.serts.experiment / results, the runner's run file): methods and the
paper's tables, one chunk with the scripted models and a FAKE answerer (records, repeatability),
aggregation over seeds, the live agreement check, files, figures and the committed table. No model is
loaded here."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from kbvqa.experiments.serts_experiment import write_run
from kbvqa.serts import experiment as ex
from kbvqa.serts import results as res


class FakeAnswerer:
    """A VLM stand-in for Tab. 10 answers: names the first abstract's title (or 'nothing')."""

    def __init__(self):
        self.calls = 0

    def generate(self, prompts, n=1, max_new_tokens=8, seed=0, batch_size=8, details=True, **kwargs):
        self.calls += 1
        texts = []
        for chat in prompts:
            text = " ".join(p.get("text", "") for turn in chat for p in turn["content"] if p.get("type") == "text")
            context = text.split("### Input:", 1)[-1].strip().split(".")[0]
            texts.append([f"about {context}" if context and context != "None" else "nothing"])
        return SimpleNamespace(texts=texts, num_tokens=[[len(t[0].split())] for t in texts])


@pytest.fixture(scope="module")
def world():
    from kbvqa.data.toyworld import get_world

    return get_world(0)


@pytest.fixture(scope="module")
def chunk(world):
    qs = ex.experiment_questions(world, "scripted", ex.ExperimentConfig())[:3]
    return qs, ex.run_chunk("scripted", world, FakeAnswerer(), qs, 42, 0, ex.ExperimentConfig())


def test_methods_cover_the_papers_rows():
    names = [m.name for m in res.METHODS]
    assert len(set(names)) == len(names)
    for table in (res.PAPER_TAB3, res.PAPER_TAB4, res.PAPER_TAB6, res.PAPER_TAB9):
        assert set(table) <= set(names)
    policies = {m.policy for m in res.METHODS if m.kind == "serts" and m.sim == 12}
    assert policies == {"ucb", "greedy", "random"}                       # Tab. 6
    assert res.PAPER_TAB6["serts_12"] == res.PAPER_TAB4["serts_12"]["gpt-3.5"]   # Tab. 6 is GPT-3.5
    assert res.PAPER_TAB3["serts_12"]["llama2-7b"][3] == 85.55 and res.PAPER_TAB9["serts_12"] == 679_584


def test_bad_config_and_setup(world):
    for kwargs in ({"scripted_n": 0}, {"chunk": 0}, {"seeds": ()}, {"model_n": -1}):
        with pytest.raises(ValueError):
            ex.ExperimentConfig(**kwargs)
    with pytest.raises(ValueError):
        ex.make_models("gpt", world, None, 0, ex.ExperimentConfig())
    with pytest.raises(ValueError):
        res.table({"setups": {}}, "scripted", "tab5")


def test_chunk_records(world, chunk):
    from kbvqa.metrics.retrieval import retrieval_prf
    from kbvqa.serts.evaluate import toy_literature_task

    qs, records = chunk
    assert len(records) == len(qs) * len(res.METHODS)
    by = {(r["method"], r["id"]): r for r in records}
    retrieve, _ = toy_literature_task(world)
    for q in qs:
        gold, bm25 = by[("ground_truth", q.id)], by[("bm25", q.id)]
        assert gold["recall"] == gold["precision"] == gold["hit"] == 1.0
        assert bm25["docs"] == retrieve(q.question, 5)
        assert bm25["recall"] == pytest.approx(retrieval_prf(bm25["docs"], q.gold_doc_ids).recall, abs=1e-4)
        assert "nodes" not in bm25 and gold["answer"].startswith("about ")
        for m in res.METHODS[2:]:
            r = by[(m.name, q.id)]
            assert 1 <= r["nodes"] <= m.sim and r["proposer_calls"] == r["nodes"]
            assert r["well_formed"] == r["nodes"] and r["score_parsed"] <= r["nodes"]
            assert set(bm25["docs"]) != set(r["docs"]) or r["recall"] == bm25["recall"]
            detail = [r[k] for k in ("node_depth", "node_docs", "node_gold", "node_new_gold", "node_score",
                                     "node_rubric")]
            assert all(len(d) == r["nodes"] for d in detail) and min(r["node_depth"]) == 1
            for docs, found, new in zip(r["node_docs"], r["node_gold"], r["node_new_gold"]):
                assert found == len(set(docs) & set(q.gold_doc_ids)) and 0 <= new <= found
                assert new == len(set(docs) & set(q.gold_doc_ids) - set(bm25["docs"]))
            assert all(0 <= x <= 5 for x in r["node_rubric"])
            # a search that found a gold abstract beyond the root's can only end with more of them
            if r["docs"] and not any(r["node_new_gold"]):
                assert r["recall"] <= bm25["recall"] + 1e-9
    # the scripted proposer's queries find gold abstracts the question misses
    assert sum(g for q in qs for g in by[("serts_12", q.id)]["node_new_gold"]) > 0
    # the scripted search finds more of the gold abstracts than the question alone
    mean = lambda name: sum(by[(name, q.id)]["recall"] for q in qs) / len(qs)  # noqa: E731
    assert mean("serts_12") > mean("bm25")


def test_chunk_is_repeatable(world, chunk):
    qs, records = chunk
    again = ex.run_chunk("scripted", world, FakeAnswerer(), qs, 42, 0, ex.ExperimentConfig(), methods=res.METHODS[2:4])
    assert again == [r for r in records if r["method"] in ("reflection_6", "serts_6")]
    other = ex.run_chunk("scripted", world, FakeAnswerer(), qs, 43, 0, ex.ExperimentConfig(), methods=res.METHODS[3:4])
    assert [r["seed"] for r in other] == [43] * len(qs)


def _rec(method, seed, qid, recall, tokens=10):
    rec = {"method": method, "seed": seed, "id": qid, "docs": ["a"], "answer": "x", "precision": 0.5,
           "recall": recall, "f1": 0.4, "hit": float(recall > 0), "rouge2_r": 0.1, "rouge2_f": 0.1,
           "rougesu4_r": 0.2, "rougesu4_f": 0.2}
    if method != "bm25":
        rec.update(proposer_tokens=tokens, evaluator_tokens=tokens, proposer_calls=2, evaluator_calls=2, nodes=2,
                   stopped_early=False, best_score=3, well_formed=1, score_parsed=2)
    return rec


def test_summarise_mean_and_spread_over_seeds():
    records = [_rec("bm25", s, q, r) for s, q, r in [(42, "a", 0.0), (42, "b", 1.0), (43, "a", 1.0), (43, "b", 1.0)]]
    records += [_rec("serts_12", s, q, 1.0, tokens=t) for s, q, t in [(42, "a", 10), (42, "b", 20), (43, "a", 30), (43, "b", 40)]]
    out = res.summarise({"scripted": records}, note="x")
    rows = {r["method"]: r for r in out["setups"]["scripted"]["rows"]}
    assert out["note"] == "x" and out["setups"]["scripted"]["n"] == 2 and list(rows) == ["bm25", "serts_12"]
    assert rows["bm25"]["recall"] == [0.75, 0.5] and rows["bm25"]["seeds"] == [42, 43]
    assert rows["serts_12"]["generated_tokens"] == [50.0, 40.0] and rows["serts_12"]["well_formed_share"] == [0.5, 0.0]
    assert rows["bm25"]["paper_recall"] == 47.16 and rows["serts_12"]["paper_recall"] == 58.96
    assert rows["serts_12"]["paper_tab6_rougesu4_f"] == 27.77
    tab3 = res.table(out, "scripted", "tab3")
    assert [r["method"] for r in tab3] == [rows["bm25"]["label"], rows["serts_12"]["label"]]
    assert tab3[0]["recall"] == "75.0 ± 50.0" and tab3[1]["paper recall"] == 58.96
    with pytest.raises(ValueError):
        res.summarise({"model": []})


def test_live_agreement():
    committed = [_rec("bm25", 42, q, r) for q, r in (("a", 1.0), ("b", 0.0))]
    same = res.live_agreement(committed, committed)[0]
    assert same["same abstracts"] == 1.0 and same["hit agrees"] and same["recall live"] == 0.5
    changed = [dict(committed[0], docs=["z"], recall=0.0, hit=0.0), committed[1]]
    row = res.live_agreement(changed, committed)[0]
    assert row["same abstracts"] == 0.5 and row["recall live"] == 0.0 and row["recall committed"] == 0.5
    with pytest.raises(ValueError):
        res.live_agreement([_rec("bm25", 42, "c", 1.0)], committed)


def test_files_and_figures_roundtrip(tmp_path, chunk):
    import matplotlib

    matplotlib.use("Agg")
    records = chunk[1]
    out = res.summarise({"scripted": records, "model": records})
    res.write_results(out, tmp_path)
    write_run(tmp_path / "runs" / "scripted.jsonl", {"setup": "scripted"}, records)
    assert res.load_results(tmp_path) == out and res.load_records("scripted", tmp_path) == records
    assert len((tmp_path / "results.csv").read_text().splitlines()) == 1 + 2 * len(res.METHODS)
    assert res.table(out, "model", "tab9")[0]["vs reflection Sim 6"] == 1.0
    from kbvqa.viz.serts import draw_policies, draw_retrieval

    fig = draw_retrieval(out)
    assert len(fig.axes) == 2 and len(fig.axes[0].patches) == 15
    assert len(draw_policies(out).axes) == 2


def test_committed_results():
    path = res.RESULTS_DIR / "results.json"
    if not path.exists():
        pytest.skip("no committed SeRTS results")
    out = res.load_results()
    assert set(out["setups"]) == set(ex.SETUPS) and out["provenance"]["git_commit"]
    configs = out["provenance"]["setup_configs"]        # each setup with its own methods and seeds
    for setup, block in out["setups"].items():
        rows = {r["method"]: r for r in block["rows"]}
        assert {"bm25", "ground_truth", "serts_12", "reflection_12"} <= set(rows) <= {m.name for m in res.METHODS}
        assert all(r["seeds"] == list(configs[setup]["seeds"]) for r in rows.values())
        assert rows["ground_truth"]["recall"][0] == 1.0
    assert {r["method"] for r in out["setups"]["scripted"]["rows"]} == {m.name for m in res.METHODS}
    assert list(configs["scripted"]["seeds"]) == [42, 43, 44]     # the paper's three seeds
    scripted = {r["method"]: r for r in out["setups"]["scripted"]["rows"]}
    assert scripted["serts_12"]["recall"][0] > scripted["bm25"]["recall"][0] + 0.2   # the mechanism works
    records = res.load_records("scripted")
    assert {r["id"] for r in records} and len(records) == out["setups"]["scripted"]["n"] * 3 * len(res.METHODS)


def test_a_setup_resumes_from_the_chunks_its_file_holds(tmp_path, world, monkeypatch):
    """Each finished (chunk, seed) is appended as it ends; a rerun of the same setup, settings and
    model runs only the missing ones, a line cut by a killed run included, and gives the same records."""
    from dataclasses import replace

    import kbvqa.experiments.serts_experiment.run as runner

    config = replace(ex.ExperimentConfig(), scripted_n=4, chunk=2, seeds=(42, 43))
    path = tmp_path / "runs" / "scripted.jsonl"
    full = runner.run_setup("scripted", world, FakeAnswerer(), config, log=lambda *_: None, path=path)
    assert res.load_records("scripted", tmp_path) == full
    lines = path.read_text().splitlines()
    per_unit = 2 * len(res.METHODS)
    path.write_text("\n".join(lines[:1 + 2 * per_unit] + [lines[1 + 2 * per_unit][:40]]) + "\n")  # killed mid-write

    calls = []
    real = runner.run_chunk
    monkeypatch.setattr(runner, "run_chunk", lambda *a, **k: calls.append((a[5], a[4])) or real(*a, **k))
    again = runner.run_setup("scripted", world, FakeAnswerer(), config, log=lambda *_: None, path=path)
    assert calls == [(1, 42), (1, 43)] and again == full and res.load_records("scripted", tmp_path) == full
    calls.clear()
    more = runner.run_setup("scripted", world, FakeAnswerer(), replace(config, scripted_n=6, seeds=(42,)),
                            log=lambda *_: None, path=path)
    assert calls == [(2, 42)], "a larger n and fewer seeds: only the new chunk runs"
    assert [r for r in more if r["chunk"] < 2] == [r for r in full if r["seed"] == 42]
    assert {(r["chunk"], r["seed"]) for r in res.load_records("scripted", tmp_path)} == {(0, 42), (1, 42), (2, 42)}
    calls.clear()
    runner.run_setup("scripted", world, FakeAnswerer(), replace(config, top_k=3), log=lambda *_: None, path=path)
    assert len(calls) == 4, "other settings: every chunk runs again"
    calls.clear()
    aliased = runner.get_world(0, replace(world.config, abstract_alias_share=0.3))
    runner.run_setup("scripted", aliased, FakeAnswerer(), replace(config, top_k=3), log=lambda *_: None, path=path)
    assert len(calls) == 4, "another corpus (issue 55's aliases): every chunk runs again"
    assert runner.read_run(path)[0]["abstract_alias_share"] == 0.3
    with pytest.raises(SystemExit):
        runner.main(["--abstract-alias-share", "1.5"])


def test_a_live_rerun_keeps_the_records_prompts_in_the_gpu_profile(monkeypatch):
    """The records' model is the cpu profile's in every profile (chapter 17 loads it so), so the
    search prompts must not follow the active profile: in the gpu smoke run they did, and the live
    rerun disagreed with the committed records."""
    import kbvqa.config as kbvqa_config

    monkeypatch.setattr(kbvqa_config, "cuda_available", lambda: True)
    monkeypatch.delenv("CI", raising=False)     # CI forces the cpu profile (kbvqa.config.is_ci)
    monkeypatch.setenv("KBVQA_PROFILE", "gpu")
    assert not kbvqa_config.get_profile().short_prompts
    for method in (m for m in ex.METHODS if m.kind in ("serts", "reflection")):
        assert ex.search_config(method, ex.ExperimentConfig(), 42).short_prompts is True


def test_the_runner_can_run_a_subset_of_methods_and_seeds(tmp_path, monkeypatch):
    """On the reader each searching method costs ~24 model calls per question and seed: the runner
    takes a subset of methods and seeds, and the table holds just those."""
    import kbvqa.experiments.serts_experiment.run as runner

    monkeypatch.setattr(runner, "load_vlm", lambda role, **kw: FakeAnswerer())
    results = runner.main(["--setups", "scripted", "--scripted-n", "2", "--chunk", "2", "--seeds", "42",
                           "--methods", "bm25", "serts_12", "--out", str(tmp_path)])
    rows = results["setups"]["scripted"]["rows"]
    assert [r["method"] for r in rows] == ["bm25", "serts_12"] and all(r["seeds"] == [42] for r in rows)
    assert tuple(results["config"]["seeds"]) == (42,) and results["config"]["chunk"] == 2
    assert {r["method"] for r in res.load_records("scripted", tmp_path)} == {"bm25", "serts_12"}


def test_a_call_for_one_setup_summarises_the_others_made_by_the_same_model(tmp_path, monkeypatch):
    """The setups run with their own seeds and chunks (scripted: three seeds; the reader's model setup:
    one seed, chunks of 8), one call each; the summary holds every setup the same model made."""
    import json

    import kbvqa.experiments.serts_experiment.run as runner

    monkeypatch.setattr(runner, "load_vlm", lambda role, **kw: FakeAnswerer())
    runner.main(["--setups", "scripted", "--scripted-n", "2", "--chunk", "2", "--seeds", "42", "43",
                 "--methods", "bm25", "--out", str(tmp_path)])
    results = runner.main(["--setups", "model", "--model-n", "2", "--chunk", "2", "--seeds", "42",
                           "--methods", "bm25", "serts_12", "--out", str(tmp_path)])
    assert set(results["setups"]) == {"scripted", "model"}
    assert results["setups"]["scripted"]["rows"][0]["seeds"] == [42, 43]
    assert results["setups"]["model"]["rows"][0]["seeds"] == [42]
    configs = results["provenance"]["setup_configs"]
    assert configs["scripted"]["seeds"] == [42, 43] and list(configs["model"]["seeds"]) == [42]
    assert set(results["provenance"]["setup_seconds"]) == {"model"}
    path = tmp_path / "runs" / "scripted.jsonl"           # another model made the scripted records
    lines = path.read_text().splitlines()
    header = json.loads(lines[0])
    header["header"]["model"] = "reader:0000000000000000"
    path.write_text("\n".join([json.dumps(header)] + lines[1:]) + "\n")
    again = runner.main(["--setups", "model", "--model-n", "2", "--chunk", "2", "--seeds", "42",
                         "--methods", "bm25", "serts_12", "--out", str(tmp_path)])
    assert set(again["setups"]) == {"model"}


def test_rank_correlation_is_spearman_with_average_ranks():
    from kbvqa.serts.analysis import rank_correlation

    assert rank_correlation([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert rank_correlation([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties: ranks (1.5, 1.5, 3, 4) against (1, 2, 3, 4) -> Pearson of the ranks
    assert rank_correlation([5, 5, 6, 7], [1, 2, 3, 4]) == pytest.approx(0.9486833, abs=1e-6)
    assert rank_correlation([3, 3, 3], [1, 2, 3]) is None and rank_correlation([1], [2]) is None
    with pytest.raises(ValueError, match="one length"):
        rank_correlation([1, 2], [1])


def test_search_diagnostics_read_the_node_fields():
    from kbvqa.serts.analysis import search_diagnostics

    def rec(method, qid, recall, new=None, score=None, rubric=None):
        r = {"method": method, "id": qid, "seed": 42, "recall": recall}
        if new is not None:
            r.update(node_new_gold=new, node_score=score, node_rubric=rubric)
        return r

    records = [rec("bm25", "a", 0.5), rec("bm25", "b", 0.0),
               rec("serts_12", "a", 1.0, [0, 1, 0], [2, 5, None], [1, 4, 2]),
               rec("serts_12", "b", 0.0, [0, 0], [3, 3], [0, 0]),
               rec("reflection_12", "a", 0.5, [0], [3], [3])]
    out = search_diagnostics(records)
    assert set(out) == {"serts_12", "reflection_12"}
    s = out["serts_12"]
    assert s["questions"] == 2 and s["nodes"] == 5 and s["parsed_grades"] == 4
    assert s["nodes_with_new_gold"] == pytest.approx(0.2) and s["questions_with_new_gold"] == 0.5
    assert s["recall_gain"] == pytest.approx(0.25) and s["distinct_grades_per_question"] == 1.5
    assert s["grade_equals_rubric"] == 0.0 and s["grade_rubric_rho"] == pytest.approx(1 / 3)   # ranks by hand
    assert out["reflection_12"]["grade_rubric_rho"] is None and out["reflection_12"]["recall_gain"] == 0.0
    with pytest.raises(ValueError, match="different lengths"):
        search_diagnostics([rec("serts_12", "a", 1.0, [0, 1], [2], [1, 4])])
