"""RCTS experiments: paper numbers, noise checks (that can fail), diagnostics, rollout prefixes,
resumable runs and tables -- with a fake, hash-driven model so nothing here loads a checkpoint."""
import hashlib
import json

import pytest

from kbvqa.data.schema import Query
from kbvqa.experiments.rcts_toy import run_to_file
from kbvqa.experiments.runs import read_run
from kbvqa.metrics.intervals import check_agreement, paired_bootstrap, same_answers, wilson_interval
from kbvqa.rcts import paper as rcts_paper
from kbvqa.rcts.diagnostics import (
    kb_ceiling,
    leaf_rewards,
    oracle_examples,
    retrieval_hit_rate,
    reward_correctness,
    shows_answer,
)
from kbvqa.rcts.results import group_table, live_agreement, load_results, read_runs, summarise
from kbvqa.rcts.runs import GROUPS, ROWS, Setting, answer_after, run_row, runs_of


class FakeVLM:
    """Answers a letter chosen by a hash of the prompt's text, the seed and the sample index."""

    def __init__(self):
        self.calls = 0

    def generate(self, prompts, n=1, seed=None, temperature=1.0, **kwargs):
        self.calls += 1
        out = []
        for chat in prompts:
            text = "|".join(part.get("text", "") for turn in chat for part in turn["content"]
                            if isinstance(part, dict))
            row = []
            for j in range(n):
                key = f"{text}|{seed if temperature > 0 else ''}|{j if temperature > 0 else ''}"
                h = int(hashlib.md5(key.encode()).hexdigest(), 16)
                row.append(f"The answer is {'ABCD'[h % 4]}. BECAUSE: reason {h % 97}.")
            out.append(row)
        return out


def toy_query(i, rule="r1", key="dots", answer="B", split="mc_test"):
    return Query(id=f"{split}-{i:03d}", question=f"Question {i} about {rule}?", answers=[answer],
                 answer_type="choice", options=["w", "x", "y", "z"], split=split,
                 solution="Look. This one has dots. So the answer is x.",
                 meta={"rule_id": rule, "key_value": key, "template_id": rule})


def small_setting(n_queries=3, n_kb=12):
    from kbvqa.rcts.prompts import MCPromptBuilder

    kb = [toy_query(i, rule=f"r{i % 3}", key=("dots", "bands")[i % 2], answer="ABCD"[i % 4], split="mc_kb")
          for i in range(n_kb)]
    queries = [toy_query(i, rule=f"r{i % 3}") for i in range(n_queries)]
    candidates = {q.id: [(e, 1.0 - 0.01 * j) for j, e in enumerate(kb)] for q in queries}
    builders = {b: MCPromptBuilder(None, with_context=b) for b in (False, True)}
    return Setting(queries, kb, candidates, builders.__getitem__, k=3, rcts_defaults={"N": 8})


# ------------------------------------------------------------------------------ statistics
def test_wilson_interval_known_values():
    lo, hi = wilson_interval(0, 10)
    assert lo == 0.0 and hi == pytest.approx(0.2775, abs=1e-3)
    lo, hi = wilson_interval(50, 100)
    assert lo == pytest.approx(0.4038, abs=1e-3) and hi == pytest.approx(0.5962, abs=1e-3)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)


def test_agreement_check_can_fail():
    assert check_agreement([True] * 5 + [False] * 15, 0.25).agrees
    bad = check_agreement([True] * 20, 0.2)
    assert not bad.agrees and "DISAGREES" in str(bad)
    assert not check_agreement([False] * 30, 0.5).agrees
    with pytest.raises(ValueError):
        check_agreement([], 0.5)


def test_paired_bootstrap_and_same_answers():
    same = paired_bootstrap([True, False] * 10, [True, False] * 10)
    assert same.diff == 0 and not same.significant
    better = paired_bootstrap([True] * 30, [False] * 30)
    assert better.diff == 1 and better.significant
    assert paired_bootstrap([True, False, True], [False, False, True], seed=3) == \
        paired_bootstrap([True, False, True], [False, False, True], seed=3)
    assert same_answers(["A", None, "B"], ["A", None, "C"]) == pytest.approx(2 / 3)


def test_paired_sample_size_by_hand_and_by_simulation():
    import math

    import numpy as np

    from kbvqa.metrics import paired_sample_size

    # by hand: diff 0.1, psi 0.3, 95 % / 80 %: (1.95996 sqrt(0.3) + 0.84162 sqrt(0.29))^2 / 0.01
    by_hand = (1.959964 * math.sqrt(0.3) + 0.841621 * math.sqrt(0.29)) ** 2 / 0.01
    assert paired_sample_size(0.1, 0.3) == math.ceil(by_hand) == 234
    assert paired_sample_size(-0.1, 0.3) == 234 and paired_sample_size(0.1, 0.3, power=0.9) > 234
    # simulated McNemar-type z test at that n: about 80 % of the experiments see the effect
    n, rng = paired_sample_size(0.1, 0.3), np.random.default_rng(0)
    d = rng.choice([1, -1, 0], p=[0.2, 0.1, 0.7], size=(4000, n))     # p10 = 0.2, p01 = 0.1
    z = d.mean(1) / np.sqrt((d != 0).mean(1) / n)
    assert abs((z > 1.959964).mean() - 0.8) < 0.03
    for bad in ({"diff": 0.0, "discordant": 0.3}, {"diff": 0.4, "discordant": 0.3}, {"diff": 0.1, "discordant": 1.5},
                {"diff": 0.1, "discordant": 0.3, "power": 1.0}):
        with pytest.raises(ValueError):
            paired_sample_size(**bad)


# ------------------------------------------------------------------------------ paper numbers
def test_paper_numbers_transcribed():
    assert rcts_paper.PAPER_TAB2["ScienceQA"]["Qwen2-VL-2B"]["rcts"] == 78.99
    assert rcts_paper.PAPER_TAB2["MathV"]["Qwen2-VL-7B"]["vanilla_rag"] == 24.67
    assert rcts_paper.paper_rows("ablation")["mcts=1,rc=0"] == 88.92
    # Tab. 4's first and last rows are Tab. 2's Vanilla-RAG and RCTS (Qwen2-VL-7B)
    assert rcts_paper.paper_rows("ablation")["mcts=0,rc=0"] == rcts_paper.PAPER_TAB2["ScienceQA"]["Qwen2-VL-7B"]["vanilla_rag"]
    assert rcts_paper.paper_rows("alpha", "MMMU")["alpha=0.5"] == 54.00
    with pytest.raises(ValueError):
        rcts_paper.paper_rows("main", model="GPT-4")
    with pytest.raises(ValueError):
        rcts_paper.paper_rows("speed")


def test_groups_name_existing_runs():
    assert all(run in ROWS for rows in GROUPS.values() for run in rows.values())
    assert runs_of(["main", "ablation"]).count("rcts") == 1
    assert set(runs_of(["all"])) == set(ROWS)
    with pytest.raises(ValueError):
        runs_of(["tables"])


# ------------------------------------------------------------------------------ diagnostics
def test_retrieval_and_oracle_diagnostics():
    q = toy_query(0, rule="r1", key="dots")
    good, lookalike, other = toy_query(1, "r1", "dots", split="mc_kb"), toy_query(2, "r1", "bands", split="mc_kb"), \
        toy_query(3, "r2", "dots", split="mc_kb")
    assert shows_answer(q, good) and not shows_answer(q, lookalike) and not shows_answer(q, other)
    assert not shows_answer(q, {"question": "no metadata"})
    rates = retrieval_hit_rate([q, q], [[other, good], [lookalike, other]], ks=(1, 2))
    assert rates == {1: 0.0, 2: 0.5}
    assert kb_ceiling([q], [lookalike, other]) == 0.0 and kb_ceiling([q], [good]) == 1.0
    assert oracle_examples(q, [other, lookalike, good], 2) == [good, lookalike]


def test_reward_correctness():
    assert reward_correctness([0.9, 0.8, 0.1], [True, True, False])["auc"] == 1.0
    assert reward_correctness([0.5, 0.5], [True, False])["auc"] == 0.5
    empty = reward_correctness([0.3], [False])
    assert empty["auc"] is None and empty["mean_correct"] is None and empty["mean_wrong"] == 0.3
    records = [{"node_id": "root", "parent_id": None, "n_children": 1, "rewards": [0.4], "answer": "B"},
               {"node_id": "root.0", "parent_id": "root", "n_children": 0, "rewards": [0.4], "answer": "B"}]
    assert leaf_rewards(records, "B") == [(0.4, True)]


# ------------------------------------------------------------------------------ runs
def test_rollout_prefix_equals_a_shorter_search():
    from kbvqa.rcts.mcts_hr import RCTSConfig, rcts_search
    from kbvqa.rcts.prompts import MCPromptBuilder
    from kbvqa.rcts.runs import compact_tree

    setting, vlm = small_setting(2), FakeVLM()
    builder = MCPromptBuilder(None, with_context=True)
    for q in setting.queries:
        full = rcts_search(vlm, q, setting.candidates[q.id], RCTSConfig(N=8, P=6, early_stop=False), builder)
        tree = compact_tree(full.root)
        assert answer_after(tree, 6) == full.answer
        for p in (1, 2, 4):
            short = rcts_search(vlm, q, setting.candidates[q.id], RCTSConfig(N=8, P=p, early_stop=False), builder)
            assert answer_after(tree, p) == short.answer
    with pytest.raises(ValueError):
        answer_after(tree, 0)


def test_baseline_rows_use_their_examples():
    setting, vlm = small_setting(3), FakeVLM()
    rag = list(run_row(ROWS["vanilla_rag"], setting, vlm))
    assert [r["examples"] for r in rag] == [[e.id for e in setting.kb[:3]]] * 3
    def answers(seed):
        return [(r["pred"], r["examples"]) for r in run_row(ROWS["icl_random"], setting, vlm, seed=seed)]
    assert answers(1) == answers(1) != answers(2)      # seeded
    assert list(run_row(ROWS["zero_shot"], setting, vlm))[0]["examples"] == []
    assert all(r["correct"] == (r["pred"] == "B") for r in rag)


def test_runs_are_incremental_and_resumable(tmp_path):
    setting, vlm = small_setting(3), FakeVLM()
    first = run_to_file("rcts", setting, vlm, tmp_path, seed=0, progress=False)
    calls = vlm.calls
    again = run_to_file("rcts", setting, vlm, tmp_path, seed=0, progress=False)
    assert vlm.calls == calls and again == first                     # nothing recomputed
    header, records = read_run(tmp_path / "runs" / "rcts.jsonl")
    assert header["run"] == "rcts" and len(records) == 3
    run_to_file("rcts", setting, vlm, tmp_path, seed=1, progress=False)   # new fingerprint: redone
    assert vlm.calls > calls and len(read_run(tmp_path / "runs" / "rcts.jsonl")[1]) == 3


def test_summary_tables_and_live_agreement(tmp_path):
    setting, vlm = small_setting(4), FakeVLM()
    for name in ("zero_shot", "icl_random", "vanilla_rag", "rcts", "rcts_sweep_alpha=0.2"):
        run_to_file(name, setting, vlm, tmp_path, seed=0, progress=False)
    results = summarise(tmp_path, provenance={"seed": 0})
    assert json.loads((tmp_path / "results.json").read_text())["provenance"] == {"seed": 0}
    main = {r["row"]: r for r in results["tables"]["main"]}
    assert set(main) == {"zero_shot", "icl_random", "vanilla_rag", "rcts"} and main["rcts"]["paper"] == 78.99
    assert main["rcts"]["n"] == 4 and 0 <= main["rcts"]["low"] <= main["rcts"]["accuracy"] <= main["rcts"]["high"]
    assert len(results["tables"]["rollouts"]) == len(GROUPS["rollouts"])
    # every rollout keeps its Q_S and Q_M (issue 52), and the row the share of leaves with Q_M > 0
    rcts_records = read_run(tmp_path / "runs" / "rcts.jsonl")[1]
    parts = [q for r in rcts_records for q in r["rollout_rewards"]]
    assert all(len(r["rollout_rewards"]) == len(r["rollouts"]) for r in rcts_records)
    assert main["rcts"]["mutual_positive_share"] == (
        sum(qm > 0 for _, qm in parts) / len(parts) if parts else None)
    assert main["zero_shot"]["mutual_positive_share"] is None
    assert results["rcts_minus_vanilla_rag"]["n"] == 4
    assert group_table(load_results(tmp_path), "main")[0]["method"] == "Zero-Shot"
    committed = read_run(tmp_path / "runs" / "rcts.jsonl")[1]
    live = list(run_row(ROWS["rcts"], setting, vlm, seed=0))
    check = live_agreement(live, committed)
    assert check["same_answers"] == 1.0 and check["agreement"].agrees
    flipped = [{**r, "correct": not r["correct"], "pred": "Z"} for r in committed]
    assert live_agreement(live, flipped)["same_answers"] == 0.0
    with pytest.raises(ValueError):
        live_agreement([{"id": "unknown", "correct": True, "pred": "A"}], committed)


def test_main_rows_keep_their_own_n_and_differences_pair_over_shared_questions(tmp_path):
    import dataclasses

    big, vlm = small_setting(4), FakeVLM()
    small = dataclasses.replace(big, queries=big.queries[:2])
    for name in ("zero_shot", "vanilla_rag"):
        run_to_file(name, big, vlm, tmp_path, seed=0, progress=False)
    run_to_file("rcts", small, vlm, tmp_path, seed=0, progress=False)
    results = summarise(tmp_path)
    main = {r["row"]: r["n"] for r in results["tables"]["main"]}
    assert main == {"zero_shot": 4, "vanilla_rag": 4, "rcts": 2}
    assert results["paired"]["vanilla_rag - zero_shot"]["n"] == 4
    assert results["paired"]["rcts - vanilla_rag"]["n"] == 2 == results["rcts_minus_vanilla_rag"]["n"]


@pytest.mark.parametrize("response, expected", [
    ("The answer is C.\nBECAUSE: Look. So the answer is by Hiding  in burrows.", "by hiding in burrows"),
    ("so the answer is x. Then so the answer is 3.5 m", "3.5 m"),      # the last one; a decimal point stays
    ("The answer is B.", ""), ("", ""), (None, ""), ("So the answer is", "")])
def test_named_answer_reads_the_rationale_s_last_answer_text(response, expected):
    from kbvqa.rcts.diagnostics import named_answer

    assert named_answer(response) == expected


def test_answer_text_table_separates_the_right_text_from_the_right_letter():
    from kbvqa.rcts.diagnostics import answer_text_table

    queries = {q.id: q for q in (toy_query(i) for i in range(4))}     # gold B = "x"
    say = "The answer is {}. BECAUSE: Look. So the answer is {}."
    records = [{"id": "mc_test-000", "pred": "C", "correct": False, "response": say.format("C", "x")},
               {"id": "mc_test-001", "pred": "B", "correct": True, "response": say.format("B", "x")},
               {"id": "mc_test-002", "pred": "A", "correct": False, "response": say.format("A", "w")},
               {"id": "mc_test-003", "pred": None, "correct": False, "response": "no letter, no text"},
               {"id": "elsewhere", "pred": "B", "correct": True, "response": say.format("B", "x")},
               {"id": "mc_test-000", "pred": "B", "correct": True}]       # an old record: no response
    row = answer_text_table(queries, {"run": records})["run"]
    assert row["n"] == 4 and row["letter_accuracy"] == 0.25 and row["text_accuracy"] == 0.5
    assert row["names_text"] == 0.75 and row["text_matches_letter"] == 0.5
    assert row["low"] < 0.5 < row["high"]
    assert answer_text_table(queries, {"empty": []})["empty"]["text_accuracy"] is None


def test_real_data_rows_and_figures(tmp_path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from kbvqa.rcts.results import accuracy_table
    from kbvqa.rcts.settings import scienceqa_rows
    from kbvqa.viz.rcts import draw_rcts_ablations, draw_rcts_diagnostics, draw_rcts_letter_vs_text, draw_rcts_main

    assert scienceqa_rows(FakeVLM(), n_queries=0) == {}           # cpu profile: nothing is loaded
    with pytest.raises(ValueError):
        scienceqa_rows(FakeVLM(), n_queries=1, runs=["nope"])
    table = accuracy_table({"rcts": [{"correct": True}, {"correct": False}]})
    assert table[0]["accuracy %"] == 50.0 and table[0]["paper %"] == 78.99
    setting, vlm = small_setting(2), FakeVLM()
    for name in ("zero_shot", "vanilla_rag", "rcts", "rcts_sweep_alpha=0.2"):
        run_to_file(name, setting, vlm, tmp_path, seed=0, progress=False)
    results = summarise(tmp_path, diagnostics={"hit_rate": {"1": 0.5, "3": 1.0}})
    for plot in (draw_rcts_main, draw_rcts_ablations, draw_rcts_diagnostics):
        fig = plot(results)
        assert not plt.fignum_exists(fig.number) and fig.axes
    with pytest.raises(ValueError, match="answer_text"):
        draw_rcts_letter_vs_text(results)
    from kbvqa.rcts.diagnostics import answer_text_table

    texts = answer_text_table({q.id: q for q in setting.queries}, read_runs(tmp_path))
    fig = draw_rcts_letter_vs_text(summarise(tmp_path, answer_text=texts))
    assert texts["rcts"]["n"] == 2 and len(fig.axes[0].patches) == 2 * 3     # three runs, two bars each


def test_scienceqa_rows_on_the_offline_samples():
    from _samples import sample

    from kbvqa.rcts.settings import scienceqa_rows

    root = sample("scienceqa")
    records = scienceqa_rows(FakeVLM(), n_queries=2, n_kb=8, runs=("vanilla_rag", "rcts"), root=root)
    assert set(records) == {"vanilla_rag", "rcts"} and all(len(r) == 2 for r in records.values())
    assert all(len(r["examples"]) == 3 for r in records["vanilla_rag"])
    assert all(r["id"] not in r["examples"] for r in records["vanilla_rag"])   # the KB is another split


def test_rcts_toy_rows_outside_the_groups_raise_before_any_model_loads():
    from kbvqa.experiments.rcts_toy.run import main

    with pytest.raises(ValueError, match="not among the runs"):
        main(["--groups", "main", "--rows", "zero_shot", "oracle"])
    with pytest.raises(SystemExit) as exit_info:         # a plain KB has no worked solution to show
        main(["--plain-kb", "--out", "/nonexistent"])
    assert exit_info.value.code == 2
    with pytest.raises(SystemExit):
        main(["--reward-decoding", "all"])


def test_rcts_figures_name_each_rows_n_when_the_rows_differ():
    """Issue 51: the main figure's title said n = 200 over an RCTS bar measured on 40 questions."""
    import matplotlib
    matplotlib.use("Agg")

    from kbvqa.rcts import RESULTS_DIR, load_results
    from kbvqa.viz.rcts import draw_rcts_ablations, draw_rcts_main

    results = load_results(RESULTS_DIR)
    for fig, rows in ((draw_rcts_main(results), results["tables"]["main"]),
                      (draw_rcts_ablations(results), results["tables"]["ablation"])):
        ax = fig.axes[0]
        ticks = [t.get_text() for t in ax.get_xticklabels()]
        if len({r["n"] for r in rows}) > 1:
            assert "n per bar" in ax.get_title() and "n = " not in ax.get_title(), ax.get_title()
            assert all(f"(n = {r['n']})" in t for r, t in zip(rows, ticks)), ticks
        else:
            assert f"n = {rows[0]['n']}" in ax.get_title()


def test_the_verifier_row_re_answers_each_draft_once_in_one_more_call():
    """Issue 52's control: top-K + context, then one App. C.1 re-answer of the draft's reasoning."""
    setting, vlm = small_setting(4), FakeVLM()
    drafts = list(run_row(ROWS["vanilla_rag_rc"], setting, vlm, seed=0))
    calls = vlm.calls
    verified = list(run_row(ROWS["verifier_rc"], setting, FakeVLM(), seed=0))
    assert calls == 1 and all(r["calls"] == 2 / 4 and r["completions"] == 2 for r in verified)
    for d, v in zip(drafts, verified):
        assert v["examples"] == d["examples"] and v["draft"] == d["response"] and v["draft_answer"] == d["pred"]
        assert "BECAUSE" not in v["response"] or v["response"] != d["response"]   # the re-answer, not the draft
    # the re-answer reads the draft's reasoning in App. C.1's prompt
    from kbvqa.rcts.baselines import BaselineAnswer, verify_once
    from kbvqa.rcts.prompts import CallCounter

    class Recorder(FakeVLM):
        def generate(self, prompts, n=1, **kwargs):
            self.prompts = prompts
            return [["The answer is C."] for _ in prompts]

    builder, q = setting.builder(True), setting.queries[0]
    draft = BaselineAnswer(q.id, "A", "The answer is A. BECAUSE: the creature has dots.", [])
    silent = BaselineAnswer(q.id, "B", "no reasoning here", [])
    rec, counter = Recorder(), CallCounter()
    out = verify_once(rec, [q, q], [draft, silent], builder, counter=counter)
    assert [o.answer for o in out] == ["C", "B"] and counter.calls == 1 and len(rec.prompts) == 1
    assert "the creature has dots." in rec.prompts[0][-1]["content"][-1]["text"]
    with pytest.raises(ValueError):
        verify_once(rec, [q], [], builder)
