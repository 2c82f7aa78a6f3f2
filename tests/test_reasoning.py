"""Reasoning contexts (RCTS §3.2, App. C.1): batching, early stop, choice, scoring, files, prompts.

Most tests drive ``build_reasoning_kb`` with ``ScriptedVLM``: candidate k of pair q is the text
"context q #k", and a script fixes what each of its N_p checks answers (c: right, w: wrong,
u: unparseable). One test runs a tiny random Qwen2-VL for determinism by seed.
"""
import random
import re
from collections import defaultdict

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from kbvqa.config import get_profile
from kbvqa.data.schema import KBExample, Query
from kbvqa.rcts.context_kb import (
    attach_contexts,
    compare_context_sources,
    load_reasoning_kb,
    load_reasoning_kb_config,
    oracle_records,
    save_reasoning_kb,
    summarize_build,
    toy_context_checks,
)
from kbvqa.rcts.contexts import (
    CandidateContext,
    ReasoningContextConfig,
    ReasoningRecord,
    build_reasoning_kb,
    check_prompt,
    choose_best,
    context_prompt,
    judge_prediction,
    score_verdicts,
)
from kbvqa.rcts.paper import PAPER_TABLE6

ANSWERS = {"c": "The answer is B.", "w": "The answer is D.", "u": "I cannot tell."}


def mc(qid: str, image=None, solution="Blue ones nest in trees. So the answer is in trees.") -> Query:
    return Query(qid, f"Question {qid}?", ["B"], "choice", image=image, solution=solution,
                 options=["underground", "in trees", "on cliffs", "in reeds"],
                 meta={"answer_text": "in trees", "key_value": "blue"})


class ScriptedVLM:
    """``generate`` from a script: qid -> one string of verdict codes per candidate."""

    def __init__(self, script: dict[str, list[str]]):
        self.script, self.calls = script, []
        self.written: dict[str, int] = defaultdict(int)

    def generate(self, prompts, n=1, **kwargs):
        self.calls.append({"prompts": len(prompts), "n": n, **kwargs})
        out = []
        for chat in prompts:
            text = chat[-1]["content"][-1]["text"]
            qid = re.search(r"Question (\w+)\?", text).group(1)
            if "**Answer:**" in text:          # Get Reasoning Context
                k0 = self.written[qid]
                self.written[qid] += n
                out.append([f"context {qid} #{k}" for k in range(k0, k0 + n)])
            elif m := re.search(r"context \w+ #(\d+)", text):   # checking a candidate
                codes = self.script[qid][int(m.group(1))]
                assert len(codes) == n
                out.append([ANSWERS[c] for c in codes])
            else:                              # a free context (Tab. 6 comparisons)
                out.append([ANSWERS["c" if "GOOD" in text else "w"]] * n)
        return out


def config(**kw) -> ReasoningContextConfig:
    return ReasoningContextConfig(**{"n_candidates": 3, "n_predictions": 5, **kw})


# --- config ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("bad", [dict(n_candidates=0), dict(n_predictions=-1), dict(wave_size=0),
                                 dict(scoring="mean"), dict(answer_slot="x"), dict(check_system=""),
                                 dict(temperature=0.0), dict(top_p=1.5), dict(seed=-1),
                                 dict(pairs_per_call=0), dict(image_size=0), dict(n_candidates=2.5)])
def test_bad_configs_raise(bad):
    with pytest.raises(ValueError):
        ReasoningContextConfig(**bad)


def test_waves_and_presets():
    assert config(n_candidates=10, wave_size=4).waves == [4, 4, 2]
    assert config(n_candidates=10).waves == [10]
    off = ReasoningContextConfig.official(config(seed=3))
    assert (off.scoring, off.answer_slot, off.check_system, off.wave_size, off.seed) == (
        "official", "official", "official", 1, 3)
    paper = ReasoningContextConfig()
    assert (paper.n_candidates, paper.n_predictions, paper.scoring) == (10, 10, "paper")


# --- batching, choice, early stop ------------------------------------------------------------------
def test_one_write_call_and_one_check_call_per_group():
    script = {q: ["ccwww", "cwwww", "wwwww"] for q in ("a", "b", "c")}
    vlm = ScriptedVLM(script)
    records = build_reasoning_kb(vlm, [mc("a"), mc("b"), mc("c")], config(pairs_per_call=3), progress=False)
    assert [(c["prompts"], c["n"]) for c in vlm.calls] == [(3, 3), (9, 5)]
    assert all(r.model_calls == 2 and r.completions == 3 + 3 * 5 for r in records)
    vlm = ScriptedVLM(script)
    build_reasoning_kb(vlm, [mc("a"), mc("b"), mc("c")], config(pairs_per_call=1), progress=False)
    assert [(c["prompts"], c["n"]) for c in vlm.calls] == [(1, 3), (3, 5)] * 3


def test_best_candidate_is_the_first_maximum():
    vlm = ScriptedVLM({"a": ["ccwww", "ccccw", "ccccw"]})
    (r,) = build_reasoning_kb(vlm, [mc("a")], config(), progress=False)
    assert (r.best_index, r.score, r.context) == (1, 0.8, "context a #1")
    assert [c.score for c in r.candidates] == [0.4, 0.8, 0.8]
    assert not r.perfect and not r.stopped_early


def test_early_stop_at_the_first_perfect_candidate():
    script = {"a": ["cwwww", "ccccc", "ccccc"]}
    vlm = ScriptedVLM(script)
    (r,) = build_reasoning_kb(vlm, [mc("a")], config(wave_size=1), progress=False)
    assert len(vlm.calls) == 4 and r.model_calls == 4
    assert (len(r.candidates), r.best_index, r.stopped_early, r.perfect) == (2, 1, True, True)
    assert r.completions == 2 * (1 + 5)
    (full,) = build_reasoning_kb(ScriptedVLM(script), [mc("a")], config(wave_size=1, early_stop=False),
                                 progress=False)
    assert (len(full.candidates), full.model_calls, full.best_index) == (3, 6, 1)
    (one,) = build_reasoning_kb(ScriptedVLM(script), [mc("a")], config(), progress=False)
    assert (one.best_index, one.model_calls, one.stopped_early) == (1, 2, False)  # same choice


def test_a_pair_that_stopped_leaves_the_next_waves_of_its_group():
    vlm = ScriptedVLM({"a": ["ccccc", "wwwww", "wwwww"], "b": ["wwwww", "cwwww", "wwwww"]})
    ra, rb = build_reasoning_kb(vlm, [mc("a"), mc("b")], config(wave_size=1, pairs_per_call=2),
                                progress=False)
    assert [(c["prompts"], c["n"]) for c in vlm.calls] == [(2, 1), (2, 5), (1, 1), (1, 5), (1, 1), (1, 5)]
    assert (ra.model_calls, len(ra.candidates), rb.model_calls, len(rb.candidates)) == (2, 1, 6, 3)
    assert rb.best_index == 1
    stats = summarize_build([ra, rb])
    assert stats["early_stop_rate"] == 0.5 and stats["perfect_rate"] == 0.5
    assert stats["calls_per_pair"] == 4 and stats["mean_chosen_score"] == pytest.approx(0.6)


def test_official_scoring_punishes_unparseable_answers():
    assert score_verdicts(["correct", "unparsed", "wrong", "correct"]) == 0.5
    assert score_verdicts(["correct", "unparsed", "wrong", "correct"], "official") == 0.25
    script = {"a": ["ccuuu", "cwwww", "wwwww"]}
    (paper,) = build_reasoning_kb(ScriptedVLM(script), [mc("a")], config(), progress=False)
    (code,) = build_reasoning_kb(ScriptedVLM(script), [mc("a")], config(scoring="official"), progress=False)
    assert (paper.best_index, code.best_index) == (0, 1)
    assert code.candidates[0].score == pytest.approx(-0.2)


def test_choose_best_ties_and_unchecked():
    assert choose_best([0.5, None, 0.5, 0.2]) == 0
    assert choose_best([None, 0.1, 0.3]) == 2
    with pytest.raises(ValueError):
        choose_best([None, None])
    with pytest.raises(ValueError):
        score_verdicts([])


# --- parsing --------------------------------------------------------------------------------------
def test_judge_prediction_cases():
    q = mc("a")
    assert judge_prediction(q, "The answer is B.\nBECAUSE: x") == "correct"
    assert judge_prediction(q, "**THOUGHT PROCESS:** ... The answer is (C).") == "wrong"
    assert judge_prediction(q, "The answer is Z.") == "unparsed"       # not an option
    assert judge_prediction(q, "") == "unparsed"
    free = Query("f", "How many?", ["12"], "free")
    assert judge_prediction(free, "The answer is \\boxed{12}.") == "correct"
    assert judge_prediction(free, "The answer is 13.") == "wrong"
    assert judge_prediction(free, "no number here") == "unparsed"


@settings(max_examples=150, deadline=None)
@given(st.text())
def test_judge_prediction_never_raises(text):
    for q in (mc("a"), Query("f", "How many?", ["3/4"], "free")):
        assert judge_prediction(q, text) in ("correct", "wrong", "unparsed")


# --- prompts --------------------------------------------------------------------------------------
def test_prompts_follow_app_c1_and_the_switches():
    q = mc("a", image=Image.new("RGB", (112, 112), "red"))
    chat = context_prompt(q, config(image_size=56))
    user = chat[-1]["content"]
    assert user[0]["type"] == "image" and user[0]["image"]().size == (56, 56)
    assert "**Answer:**\nThe answer is B." in user[-1]["text"] and "Choices: (A) underground" in user[-1]["text"]
    official = context_prompt(q, config(answer_slot="official"))[-1]["content"][-1]["text"]
    assert "The answer is B.\nBECAUSE: Blue ones nest in trees." in official
    paper_sys = check_prompt(q, "C", config())[0]["content"][0]["text"]
    code_sys = check_prompt(q, "C", config(check_system="official"))[0]["content"][0]["text"]
    assert paper_sys == "You are a helpful assistant." and "The answer is X" in code_sys
    assert "**THOUGHT PROCESS:**\nC" in check_prompt(q, "C", config())[-1]["content"][-1]["text"]


@pytest.mark.parametrize("on_reader", [False, True])
def test_cpu_prompts_match_the_cpu_models_training_format(monkeypatch, on_reader):
    """The tiny model's pretraining prompts, word for word; the reader (which plays the reasoner since
    the RCTS re-run) reads the same words with the toy world's own 112-px picture."""
    from kbvqa import config as kbvqa_config
    from kbvqa.data import ToyWorldConfig, get_world
    from kbvqa.models.pretrain_mc_lit import reasoning_context_answer, reasoning_context_write
    from kbvqa.models.pretrain_mix import PretrainMixConfig

    roles = kbvqa_config.CPU_READER_ROLES - {"reasoner"}
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", roles | {"reasoner"} if on_reader else roles)
    size = (112, 112) if on_reader else (56, 56)
    world = get_world(0, ToyWorldConfig.small())
    cfg = ReasoningContextConfig.for_profile(get_profile("cpu"))
    for task, ours in ((reasoning_context_write, lambda q: context_prompt(q, cfg)),
                       (reasoning_context_answer, lambda q: check_prompt(q, q.solution, cfg))):
        ex = task(world, random.Random(1), PretrainMixConfig())
        q = next(q for q in world.mc_train if q.id == ex.meta["query_ids"][0])
        mine = ours(q)
        texts = [[p.get("text") for p in m["content"]] for m in mine]
        assert texts == [[p.get("text") for p in m["content"]] for m in ex.prompt]
        image, theirs = mine[-1]["content"][0]["image"](), ex.prompt[-1]["content"][0]["image"]()
        assert image.size == size and theirs.size == (56, 56)
        if not on_reader:
            assert image.tobytes() == theirs.tobytes()


# --- files, baselines, Tab. 6 ----------------------------------------------------------------------
def test_save_and_load_round_trip(tmp_path):
    vlm = ScriptedVLM({"a": ["ccccc", "wwwww", "wwwww"], "b": ["cwwww", "ccwww", "uwwww"]})
    cfg = config(wave_size=1)
    records = build_reasoning_kb(vlm, [mc("a"), mc("b")], cfg, progress=False)
    path = save_reasoning_kb(tmp_path / "kb.jsonl", records, cfg, meta={"model": "scripted"})
    assert load_reasoning_kb(path) == records
    assert load_reasoning_kb_config(path) == cfg
    (tmp_path / "bad.jsonl").write_text('{"kind": "record"}\n')
    with pytest.raises(ValueError):
        load_reasoning_kb(tmp_path / "bad.jsonl")


def test_oracle_and_kb_examples():
    qs = [mc("a"), mc("b", solution="Other rationale.")]
    oracle = oracle_records(qs)
    assert [r.context for r in oracle] == [qs[0].solution, "Other rationale."]
    assert all(r.source == "oracle" and r.score is None for r in oracle)
    kb = attach_contexts(qs, oracle[::-1])
    assert isinstance(kb[1], KBExample) and kb[1].reasoning_context == "Other rationale."
    assert kb[0].options == qs[0].options and kb[0].answer == "B"
    with pytest.raises(ValueError):
        attach_contexts(qs, oracle[:1])
    with pytest.raises(ValueError):
        oracle_records([mc("c", solution="")])


def test_context_accuracy_compares_sources_in_one_call():
    qs = [mc("a"), mc("b"), mc("c"), mc("d")]
    vlm = ScriptedVLM({})
    table = compare_context_sources(vlm, qs, {"none": [""] * 4, "half": ["GOOD", "bad", "GOOD", "bad"],
                                              "records": [ReasoningRecord(q.id, "B", "GOOD", 1.0, 0) for q in qs]},
                                    config())
    assert len(vlm.calls) == 1 and vlm.calls[0]["prompts"] == 12 and vlm.calls[0]["temperature"] == 0.0
    assert {k: v.accuracy for k, v in table.items()} == {"none": 0.0, "half": 0.5, "records": 1.0}
    assert table["half"].correct == [True, False, True, False]
    with pytest.raises(ValueError):
        compare_context_sources(vlm, qs, {"short": ["x"]}, config())


def test_toy_context_checks_and_paper_table():
    q = mc("a")
    good = toy_context_checks(q, "Look at it: this one is blue. Blue ones nest in trees. So the answer is in trees.")
    bad = toy_context_checks(q, "Look at it: this one is red. Blue ones nest underground. So the answer is underground.")
    assert good == {"reads_key_value": True, "names_gold_answer": True, "names_other_option": False}
    assert bad == {"reads_key_value": False, "names_gold_answer": False, "names_other_option": True}
    assert PAPER_TABLE6["Qwen2-VL (2B)"]["ScienceQA"] == 90.56


# --- a real (tiny, random) model --------------------------------------------------------------------
def test_same_seed_same_records_with_a_tiny_random_model():
    from kbvqa.models import build_tiny_vlm

    texts = ["Question a ? The answer is B . Look at the colour : this one is blue .", "You are a helpful assistant ."]
    vlm = build_tiny_vlm("qwen2_vl", texts=texts, seed=0, hidden_size=32, num_layers=1, intermediate_size=64,
                         vision_width=16, vision_depth=1)
    qs = [mc("a", image=Image.new("RGB", (56, 56), "blue")), mc("b")]
    cfg = ReasoningContextConfig(n_candidates=2, n_predictions=3, max_context_tokens=8, max_answer_tokens=6,
                                 short_prompts=True, image_size=56, pairs_per_call=2, seed=5)
    calls = []
    generate = vlm.generate
    vlm.generate = lambda *a, **k: calls.append(k["n"]) or generate(*a, **k)
    first = build_reasoning_kb(vlm, qs, cfg, progress=False)
    assert calls == [2, 3]                              # one write call, one check call
    again = build_reasoning_kb(vlm, qs, cfg, progress=False)
    other = build_reasoning_kb(vlm, qs, ReasoningContextConfig(**{**cfg.__dict__, "seed": 6}), progress=False)
    assert [r.to_dict() for r in first] == [r.to_dict() for r in again]
    assert [r.to_dict() for r in first] != [r.to_dict() for r in other]
    assert all(len(r.candidates) == 2 and len(r.candidates[0].predictions) == 3 for r in first)



# --- figures --------------------------------------------------------------------------------------
def test_figures_and_contrast_pairs():
    import matplotlib

    matplotlib.use("Agg")
    from kbvqa.viz.contexts import contrast_pairs, draw_candidate_scores, draw_context_comparison

    vlm = ScriptedVLM({"a": ["ccccw", "ccccw", "ccccw"], "b": ["ccccc", "wwwww", "cwwww"],
                       "c": ["cwwww", "ccwww", "wwwww"]})
    qs = [mc("a", image=Image.new("RGB", (56, 56), "blue")), mc("b"), mc("c")]
    records = build_reasoning_kb(vlm, qs, config(), progress=False)
    assert contrast_pairs(records, 2) == [1, 2]          # gaps 0, 1.0, 0.4
    assert contrast_pairs(records, 3) == [1, 2]          # a pair of equal scores has no best and worst
    with pytest.raises(ValueError, match="no pair to show"):
        draw_context_comparison(qs[:1], records[:1])
    fig = draw_candidate_scores(records)
    assert len(fig.axes) == 2
    assert len(draw_context_comparison(qs, records, indices=[0, 1]).axes) == 8
    with pytest.raises(ValueError):
        draw_context_comparison(qs[::-1], records, indices=[0])
    with pytest.raises(ValueError):
        contrast_pairs(records, 0)


# --- the committed experiment -----------------------------------------------------------------------
def test_toy_check_summary_reads_scored_candidates():
    from kbvqa.rcts.context_kb import answer_letters, toy_check_summary

    assert answer_letters([mc("a")] * 3, ["The answer is A.", "The answer is A.", "nothing"]) == {"A": 2, "None": 1}

    q = mc("a")
    records = [ReasoningRecord("a", "B", "x", 1.0, 0, candidates=[
        CandidateContext("this one is blue. So the answer is in trees.", ["c"], ["correct"], 1.0),
        CandidateContext("this one is red. So the answer is underground.", ["w"], ["wrong"], 0.0),
        CandidateContext("never checked", [], [], None)])]
    s = toy_check_summary([q], records)
    assert s["chosen"] == {"reads_key_value": 1.0, "names_gold_answer": 1.0, "names_other_option": 0.0}
    assert s["all"]["names_gold_answer"] == 0.5
    assert (s["mean_score_names_gold_true"], s["mean_score_names_gold_false"]) == (1.0, 0.0)


def test_committed_results_agree_with_their_kb_file():
    from kbvqa.rcts.context_kb import RESULTS_DIR, load_results

    if not (RESULTS_DIR / "results.json").exists():
        pytest.skip("no committed reasoning-context run")
    results = load_results()
    records = load_reasoning_kb(RESULTS_DIR / "kb.jsonl")
    assert len(records) == results["pairs"] and load_reasoning_kb_config(RESULTS_DIR / "kb.jsonl")
    assert summarize_build(records) == pytest.approx(results["build"])
    assert all(0 <= v["accuracy"] <= 1 for v in results["accuracy"].values())
    assert {"commit", "date", "model", "command"} <= set(results["provenance"])


def test_the_rcts_rows_read_a_reasoners_contexts(tmp_path):
    """RCTS §3.2 wired into the rows: ``build_for_queries`` builds (resumably) a context for every
    candidate of the chosen test questions; ``toy_setting(contexts=)`` puts them in the with-context
    prompts only, and the with-context rows' fingerprints name them."""
    from kbvqa.data import get_world
    from kbvqa.experiments.rcts_contexts.run import build_for_queries, candidate_pairs
    from kbvqa.rcts.context_kb import contexts_of
    from kbvqa.rcts.runs import ROWS, spec_fingerprint
    from kbvqa.rcts.settings import load_retrieval, toy_setting

    world = get_world(0)
    retrieval = load_retrieval(world)
    pairs = candidate_pairs(world, retrieval, 1)
    assert {e.id for e in pairs} == {i for i, _ in retrieval["candidates"][world.mc_test[0].id]}

    class Writes:
        calls = 0

        def generate(self, prompts, n=1, **kwargs):
            Writes.calls += 1
            return [["Model context: look at the colour. The answer is A."] * n for _ in prompts]

    kwargs = dict(vlm=Writes(), chunk=8, progress=False, n_candidates=1, n_predictions=1)
    path = build_for_queries(1, tmp_path / "kb.jsonl", **kwargs)
    contexts = contexts_of(path)
    assert set(contexts) == {e.id for e in pairs}
    calls = Writes.calls
    build_for_queries(1, path, **kwargs)
    assert Writes.calls == calls                             # resumed: nothing left to build

    def texts(chat):
        return "\n".join(p["text"] for turn in chat for p in turn["content"] if p.get("type") == "text")

    given, plain = toy_setting(world, retrieval, limit=1, contexts=contexts), toy_setting(world, retrieval, limit=1)
    q = given.queries[0]
    examples = [e for e, _ in given.candidates[q.id][:2]]
    assert "Model context: look at the colour." in texts(given.builder(True).kshot(q, examples))
    assert "Model context" not in texts(plain.builder(True).kshot(q, examples))
    assert texts(given.builder(False).kshot(q, examples)) == texts(plain.builder(False).kshot(q, examples))
    with_rc = next(r for r in ROWS.values() if r.with_context)
    without = next(r for r in ROWS.values() if not r.with_context)
    assert spec_fingerprint(with_rc, given, 0) != spec_fingerprint(with_rc, plain, 0)
    assert spec_fingerprint(without, given, 0) == spec_fingerprint(without, plain, 0)
    with pytest.raises(ValueError, match="no reasoning context"):
        toy_setting(world, retrieval, limit=5, contexts=contexts)


def test_the_contexts_command_writes_for_queries_under_out(tmp_path, monkeypatch):
    """``rcts_contexts --for-queries N --out DIR`` builds DIR/kb_rcts.jsonl (a timing run must not
    write into the committed results folder)."""
    import kbvqa.experiments.rcts_contexts.run as runner

    seen = {}
    monkeypatch.setattr(runner, "build_for_queries", lambda n, out, **kw: seen.update(n=n, out=out, **kw) or out)
    runner.main(["--for-queries", "3", "--out", str(tmp_path), "--set", "n_candidates=2"])
    assert seen["n"] == 3 and seen["out"] == tmp_path / "kb_rcts.jsonl" and seen["n_candidates"] == 2
    runner.main(["--for-queries", "1"])
    assert seen["out"] == runner.RCTS_KB
