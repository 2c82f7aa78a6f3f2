"""kbvqa.paper_vs_ours: directions, verdicts, each part's effects from committed or synthetic results."""
from __future__ import annotations

import json

import pytest

from kbvqa.config import DATA_DIR
from kbvqa.paper_vs_ours import (
    Effect,
    all_effects,
    direction,
    effect_rows,
    molt_effects,
    rcts_effects,
    reag_effects,
    serts_effects,
    verdict,
    verdict_counts,
)
from kbvqa.viz.effects import draw_effects


def effect(paper, ours, interval):
    return Effect("ReAG", "x", "Tab. 0", "accuracy %", paper, ours, interval, 10, "")


def test_direction_by_interval_and_by_sign():
    assert direction(3.0, (0.5, 6.0)) == "up"
    assert direction(-3.0, (-6.0, -0.1)) == "down"
    assert direction(3.0, (-0.1, 6.0)) == "flat"
    assert direction(0.4, flat=0.5) == "flat" and direction(0.6, flat=0.5) == "up" and direction(-2) == "down"


@pytest.mark.parametrize("paper, ours, interval, strict, lenient", [
    ((10, 20), (5, 9), (1, 7), "same", "same"),
    ((20, 10), (9, 5), (-7, -1), "same", "same"),            # both down, ours excludes 0
    ((10, 20), (5, 1), (-7, -1), "opposite", "opposite"),
    ((10, 20), (5, 5), (-2, 2), "flat", "flat"),
    ((10, 20), (5, 9), (0, 7), "flat", "flat"),              # an interval touching 0 does not exclude it
    ((20, 10), (5, 1), None, "flat", "same"),                # no interval: the strict rule cannot say "same"
    ((10, 10.2), (5, 9), (1, 7), "n/a (paper flat)", "differs"),       # the paper's +0.2 is flat
    ((10, 10.2), (5, 5), (0, 0), "n/a (paper flat)", "same"),          # flat against flat no longer counts
    ((10, 10.5), (5, 5), (-1, 1), "n/a (paper flat)", "same"),         # exactly PAPER_FLAT is still flat
])
def test_verdict_strict_and_lenient(paper, ours, interval, strict, lenient):
    from kbvqa.paper_vs_ours import lenient_verdict

    assert verdict(effect(paper, ours, interval)) == strict
    assert lenient_verdict(effect(paper, ours, interval)) == lenient


def test_counted_needs_evidence_comparable_and_a_paper_that_moves():
    import dataclasses

    from kbvqa.paper_vs_ours import counted, strict_count

    moving = dataclasses.replace(effect((10, 20), (5, 9), (1, 7)), evidence="reader", paper_mechanism=True)
    flat_paper = dataclasses.replace(moving, paper=(10, 10.1))
    not_comparable = dataclasses.replace(moving, comparable=False, why_not_comparable="invented entities")
    scripted = dataclasses.replace(moving, evidence="scripted")
    other_road = dataclasses.replace(moving, paper_mechanism=False)
    assert counted(moving) and counted(other_road)
    assert not counted(flat_paper) and not counted(not_comparable) and not counted(scripted)
    assert strict_count([moving, flat_paper, not_comparable, scripted, other_road]) == \
        {"same": 2, "counted": 2, "paper_mechanism": 1}


def test_n_needed_for_paired_and_continuous_rows():
    from kbvqa.metrics import paired_sample_size
    from kbvqa.paper_vs_ours import n_needed_continuous, n_needed_paired, paired_spread

    assert n_needed_paired(7.0, 0.30) == paired_sample_size(0.07, 0.30)
    assert n_needed_paired(7.0, 0.02) == paired_sample_size(0.07, 0.07)      # psi is at least |Δ_paper|
    assert n_needed_paired(-7.0, None) == paired_sample_size(0.07, 0.07)
    assert n_needed_paired(0.3, 0.5) is None                                  # the paper is flat
    # normal approximation: ((1.96 + 0.8416) * 10 / 2)^2 = 196.2 -> 197
    assert n_needed_continuous(2.0, 10.0) == 197 and n_needed_continuous(0.1, 10.0) is None
    spread = paired_spread({"a": 1, "b": 0, "c": 1}, {"a": 1, "b": 1, "c": 0}, scale=1.0)
    assert spread["discordant"] == pytest.approx(2 / 3) and spread["sd"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="two or more"):
        paired_spread({"a": 1}, {"a": 0})


def test_rcts_effects_pair_the_paper_tables_with_our_runs():
    if not (DATA_DIR / "experiments" / "rcts" / "results.json").exists():
        pytest.skip("no committed RCTS results")
    effects = {e.name: e for e in rcts_effects()}
    assert effects["RCTS vs Vanilla-RAG"].paper == (71.94, 78.99)
    assert effects["+ MCTS-HR (no reasoning context)"].paper == (86.68, 88.92)
    for e in effects.values():
        low, high = e.ours_interval
        assert 0 <= e.ours[0] <= 100 and 0 <= e.ours[1] <= 100 and e.n > 0
        assert low - 1e-6 <= e.ours_diff <= high + 1e-6


def test_reag_effects_follow_the_ladder():
    if not (DATA_DIR / "experiments" / "reag" / "results.json").exists():
        pytest.skip("no committed ReAG results")
    effects = reag_effects()
    assert effects[0].paper == (18.3, 10.1)               # coarse vs no retrieval: the paper goes DOWN
    assert direction(effects[0].paper_diff, flat=0.5) == "down"
    passages = effects[-1]
    assert passages.paper == (128.6, 5.7) and passages.ours[1] < passages.ours[0]
    assert verdict(passages) == "same"
    assert passages.paper_mechanism is True and passages.mechanism.startswith("threshold cut")
    coarse = effects[0]
    assert not coarse.comparable and "invented" in coarse.why_not_comparable
    fine = next(e for e in effects if e.name.startswith("+ fine"))
    assert verdict(fine) == "n/a (paper flat)" and fine.n_needed is None
    for e in effects:
        if e.name.startswith(("+ traces", "+ RL")):                    # trained vs trained: the untrained rung
            assert e.reference["label"].endswith("(untrained)") and e.reference["low"] <= e.reference["accuracy"]


def test_missing_results_name_the_file(tmp_path):
    for loader in (serts_effects, molt_effects, reag_effects, rcts_effects):
        with pytest.raises(ValueError, match="results.json is missing"):
            loader(tmp_path)
    with pytest.raises(ValueError, match="unknown parts"):
        all_effects(("RCTS", "BLIP"))


def _row(acc, n=100):
    return {"accuracy": acc, "n": n, "low": 0, "high": 1}


def test_molt_effects_from_a_results_file(tmp_path):
    rows = {"zero_shot_one_shot": _row(0.2), "zero_shot_tournament": _row(0.6), "sft_tournament": _row(0.6),
            "grpo_full_weak_to_strong": _row(0.3), "grpo_full_random": _row(0.3)}
    (tmp_path / "results.json").write_text(json.dumps({"rows": rows}))
    effects = {e.name: e for e in molt_effects(tmp_path)}
    assert set(effects) == {"tournament vs one-shot 5-way (base)", "SFT cold start vs base tournament",
                            "GRPO (full) vs SFT", "weak-to-strong vs random schedule"}
    assert effects["tournament vs one-shot 5-way (base)"].paper == (79.4, 81.0)
    assert verdict(effects["tournament vs one-shot 5-way (base)"]) == "same"      # +40 points, n = 100
    assert verdict(effects["GRPO (full) vs SFT"]) == "opposite"
    assert verdict(effects["weak-to-strong vs random schedule"]) == "flat"
    assert effects["weak-to-strong vs random schedule"].paper == (85.5, 88.3)
    assert "dozen" not in effects["GRPO (full) vs SFT"].why      # the reader's measured reasons are for the reader only


def test_serts_effects_use_the_seed_spread(tmp_path):
    def row(method, f1, spread, rouge=(0.2, 0.0)):
        return {"method": method, "n": 30, "seeds": [42, 43, 44], "f1": [f1, spread], "rouge2_f": list(rouge)}

    rows = [row("bm25", 0.40, 0.01), row("serts_12", 0.55, 0.02, (0.2, 0.01)), row("reflection_12", 0.54, 0.05)]
    (tmp_path / "results.json").write_text(json.dumps({"setups": {"scripted": {"rows": rows}}}))
    effects = {e.name: e for e in serts_effects(tmp_path)}
    bm25 = effects["SeRTS (Sim 12) vs BM25"]
    assert bm25.ours == (40.0, 55.0) and bm25.ours_interval == (12.0, 18.0) and verdict(bm25) == "same"
    assert verdict(effects["SeRTS vs self-reflection (Sim 12)"]) == "flat"        # +1 within a 7-point spread
    assert "MAX UCB vs RANDOM policy, answers" not in effects                     # no random-policy row
    assert bm25.n == 90


def test_rows_counts_and_figure():
    effects = [effect((10, 20), (5, 9), (1, 7)), effect((10, 20), (5, 5), (-2, 2)),
               Effect("MOLT", "y", "Tab. 5", "passages per query", (1, 2), (1, 2), None, 3, "")]
    rows = effect_rows(effects)
    assert rows[0]["verdict"] == "same" and rows[0]["direction (paper / ours)"] == "up / up"
    assert rows[1]["ours 95% interval"] == "[-2, 2]" and rows[2]["ours 95% interval"] == ""
    assert rows[2]["verdict"] == "flat" and rows[2]["lenient verdict"] == "same"      # no interval
    assert verdict_counts(effects) == {"ReAG": {"same": 1, "flat": 1}, "MOLT": {"flat": 1}}
    assert verdict_counts(effects, strict=False) == {"ReAG": {"same": 1, "flat": 1}, "MOLT": {"same": 1}}
    fig = draw_effects(effects)
    assert len(fig.axes[0].lines) >= 3                         # markers + diagonal + axes lines
    with pytest.raises(ValueError):
        draw_effects(effects[2:])                              # nothing in percent


def test_all_committed_parts_load():
    from kbvqa.paper_vs_ours import PARTS

    files = [DATA_DIR / "experiments" / p.lower() / "results.json" for p in PARTS]
    if not all(f.exists() for f in files):
        pytest.skip("not every part has committed results")
    effects = all_effects()
    assert {e.part for e in effects} == set(PARTS)
    assert all(verdict(e) in ("same", "opposite", "flat", "n/a (paper flat)") for e in effects)
    assert all(e.mechanism for e in effects), "every row says what produced our difference"
    assert all(e.n_needed is None or e.n_needed >= 2 for e in effects)
    assert all(e.ours_interval is None or e.ours_interval[0] <= e.ours_interval[1] for e in effects)


# ------------------------------------------------------------------------------ paired intervals, effects.json
def _write_run(path, header, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(x) for x in [header, *records]) + "\n")


def test_serts_effects_pair_questions_over_seeds(tmp_path):
    from kbvqa.metrics.intervals import paired_bootstrap

    rows = [{"method": m, "n": 4, "seeds": [1, 2], "f1": [0.5, 0.0], "rouge2_f": [0.1, 0.0]}
            for m in ("bm25", "serts_12")]
    (tmp_path / "results.json").write_text(json.dumps({"setups": {"scripted": {"rows": rows}},
                                                      "provenance": {"model": "tiny_vlm:00"}}))
    f1 = {("bm25", "q1"): (0.2, 0.4), ("bm25", "q2"): (0.5, 0.5), ("serts_12", "q1"): (0.6, 0.8),
          ("serts_12", "q2"): (0.5, 0.7), ("serts_12", "q3"): (1.0, 1.0)}            # q3: one side only
    records = [{"method": m, "seed": s, "id": q, "f1": v[k], "rouge2_f": 0.0}
               for (m, q), v in f1.items() for k, s in enumerate((1, 2))]
    _write_run(tmp_path / "runs" / "scripted.jsonl", {"header": {}, "fingerprint": {}}, records)
    e = {x.name: x for x in serts_effects(tmp_path)}["SeRTS (Sim 12) vs BM25"]
    assert e.n == 2 and e.ours == (40.0, 65.0)                     # seed means per question, common ids
    d = paired_bootstrap([0.7, 0.6], [0.3, 0.5], n_boot=2000)
    assert e.ours_interval == (round(100 * d.low, 2), round(100 * d.high, 2))
    assert e.evidence == "scripted" and e.interval_method.startswith("paired bootstrap")


def test_molt_effects_pair_records_and_label_scripted_rows(tmp_path):
    rows = {"zero_shot_one_shot": _row(0.0, 3), "zero_shot_tournament": _row(1.0, 3),
            "scripted_0.1_random": _row(0.7, 500), "scripted_0.1_weak_to_strong": _row(0.8, 500)}
    (tmp_path / "results.json").write_text(json.dumps({"rows": rows, "provenance": {"model": "reader:abc"}}))
    lines = [{"row": r, "id": f"q{i}", "correct": r == "zero_shot_tournament"}
             for r in ("zero_shot_one_shot", "zero_shot_tournament") for i in range(3)]
    (tmp_path / "runs.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    effects = {e.name: e for e in molt_effects(tmp_path)}
    base = effects["tournament vs one-shot 5-way (base)"]
    assert base.ours == (0.0, 100.0) and base.ours_interval == (100.0, 100.0) and base.n == 3
    assert base.evidence == "reader" and verdict(base) == "same"
    assert base.why.startswith("the reader") and "1.45M" not in base.why      # the why names the judge that ran
    assert "first listed candidate" in base.why and "(ch. 28)" in base.why    # and what the chapter measured
    assert base.mechanism == "no round records" and base.paper_mechanism is None      # no gold ranks recorded
    scripted = effects["weak-to-strong vs random (scripted judge, error 0.1)"]
    assert scripted.evidence == "scripted" and scripted.interval_method.startswith("normal")


def test_evidence_of_reads_the_provenance():
    from kbvqa.paper_vs_ours import evidence_of

    assert evidence_of({"model": "reader:0123"}) == "reader"
    assert evidence_of({"model": "tiny_vlm:0123"}) == "tiny"
    assert evidence_of({"model": "Qwen/Qwen2-VL-2B-Instruct"}) == "hub"
    assert evidence_of({}) == "retrieval" and evidence_of({"model": "reader:1"}, scripted=True) == "scripted"


def test_committed_effects_file_is_the_committed_tables():
    from kbvqa.paper_vs_ours import COUNTED, EFFECTS_FILE, load_effects, stale_effect_rows

    if not EFFECTS_FILE.exists():
        pytest.skip("no committed effects.json")
    committed = load_effects()
    assert len(committed["rows"]) == 25
    keys = {"part", "effect", "source", "metric", "paper_before", "paper_after", "ours_before", "ours_after",
            "ours_interval", "n", "verdict", "verdict_lenient", "evidence", "comparable", "why_not_comparable",
            "mechanism", "paper_mechanism", "reference", "n_needed", "plan", "plan_status"}
    assert all(keys <= set(r) for r in committed["rows"])
    assert all(r["mechanism"] for r in committed["rows"])
    scripted = [r["effect"] for r in committed["rows"] if r["part"] == "MOLT" and "scripted judge" in r["effect"]]
    assert len(scripted) == 2
    assert all(r["evidence"] == "scripted" and not r["counted"] for r in committed["rows"] if r["effect"] in scripted)
    assert committed["counted"] == sum(r["evidence"] in COUNTED and r["comparable"] and r["verdict"] != "n/a (paper flat)"
                                       for r in committed["rows"])
    assert committed["same"] == sum(r["counted"] and r["verdict"] == "same" for r in committed["rows"])
    assert all(r["plan"] is None and r["plan_status"] == "not pre-registered" for r in committed["rows"]
               if r["part"] in ("RCTS", "SeRTS", "ReAG", "MOLT") and r["plan"] is None)
    assert stale_effect_rows(committed) == [], "effects.json is stale: run `python -m kbvqa.paper_vs_ours`"


def test_stale_effect_rows_sees_a_changed_row():
    from kbvqa.paper_vs_ours import effect_record, stale_effect_rows

    effects = [effect((10, 20), (5, 9), (1, 7))]
    committed = {"rows": [effect_record(effects[0])]}
    assert stale_effect_rows(committed, effects) == []
    committed["rows"][0]["ours_after"] = 10
    assert stale_effect_rows(committed, effects) == ["x"]
    assert stale_effect_rows({"rows": []}, effects) == ["x"]


def test_no_committed_table_was_made_with_another_reader(tmp_path):
    from kbvqa.experiments.runs import committed_models, foreign_reader_tables
    from kbvqa.reader import reader_fingerprint

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "results.json").write_text(json.dumps({"provenance": {"model": "reader:deadbeef"}}))
    (tmp_path / "b.json").write_text(json.dumps({"provenance": {"model": "tiny_vlm:00"}}))
    models = committed_models(tmp_path)
    assert models == {"a/results.json": "reader:deadbeef", "b.json": "tiny_vlm:00"}
    assert foreign_reader_tables(models, "cafe") == {"a/results.json": "reader:deadbeef"}
    assert foreign_reader_tables(models, "deadbeef") == {}
    assert foreign_reader_tables(committed_models(), reader_fingerprint()) == {}, "re-run these tables"


def test_every_committed_table_was_made_by_the_model_its_role_gives_now(monkeypatch):
    """Moving a role onto the reader (``CPU_READER_ROLES``) makes its tables stale until they run again."""
    import kbvqa.config as kbvqa_config
    from kbvqa.config import Profile
    from kbvqa.experiments.runs import TABLE_ROLES, stale_tables, table_role_models
    from kbvqa.models import checkpoints
    from kbvqa.reader import reader_fingerprint

    cpu = Profile("cpu", "cpu", 1.0, 10)
    made_by = table_role_models()
    assert set(made_by) == set(TABLE_ROLES), "every table names the model behind each of its roles"
    def role_model(role):
        return checkpoints.role_model(role, cpu)

    assert stale_tables(made_by, role_model) == {}, "re-run these tables with the model their role gives"
    reader = f"reader:{reader_fingerprint()}"
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", kbvqa_config.CPU_READER_ROLES - {"critic"})
    tiny = role_model("critic")                        # the critic moved back to the tiny model
    assert stale_tables(made_by, role_model) == {      # the pipeline reads the critic's scores (evidence.json)
        "reag/results.json": (reader, tiny), "pipeline/results.json": (reader, tiny)}
    monkeypatch.setattr(kbvqa_config, "CPU_READER_ROLES", frozenset({"reader", "critic"}))    # and a role moved back
    assert stale_tables(made_by, role_model)["molt/results.json"] == (made_by["molt/results.json"]["judge"],
                                                                      checkpoints.role_model("judge", cpu))


def test_table_role_models_reads_the_roles_a_run_recorded(tmp_path):
    from kbvqa.experiments.runs import table_role_models

    (tmp_path / "reag").mkdir()
    (tmp_path / "reag" / "results.json").write_text(json.dumps(
        {"provenance": {"model": "m1", "roles": {"rl_policy": "m1", "critic": "m2"}}}))
    (tmp_path / "molt").mkdir()
    (tmp_path / "molt" / "results.json").write_text(json.dumps({"provenance": {"model": "m3"}}))
    (tmp_path / "serts").mkdir()
    (tmp_path / "serts" / "results.json").write_text(json.dumps({"provenance": {}}))     # names no model: left out
    assert table_role_models(tmp_path) == {"reag/results.json": {"rl_policy": "m1", "critic": "m2", "reag_generator": "m1"},
                                           "molt/results.json": {"judge": "m3"}}


def test_reag_whys_are_read_from_the_run():
    from kbvqa.paper_vs_ours.parts import _reag_why

    row = {"accuracy": 0.5, "passages": 40.0, "evidence_in_context": 0.9}
    results = {"rows": [{**row, "rung": "no_retrieval", "accuracy": 0.0}, {**row, "rung": "coarse"},
                        {**row, "rung": "coarse_critic", "passages": 5.0}],
               "by_split": [{"split": "unseen_question", "rung": "coarse_critic", "evidence_in_context": 0.9,
                             "passages": 5.2, "vs_previous": {"diff": 0.02}},
                            {"split": "unseen_entity", "rung": "coarse_critic", "evidence_in_context": 0.19,
                             "passages": 5.5, "vs_previous": {"diff": -0.54}}],
               "training": {"critic_heldout": {"before": {"hard": 0.48}, "after": {"hard": 0.46}}}}
    why = _reag_why(results, "the reader")
    assert "no retrieval 0%" in why["coarse"] and "the reader reads 40 (50%)" in why["coarse"]
    assert "90% of queries with 5.2 passages (+2% accuracy)" in why["coarse_critic"]
    assert "for 19% (-54%)" in why["coarse_critic"] and "0.48 before training, 0.46 after" in why["coarse_critic"]
    results["rows"][1]["accuracy_with_evidence"], results["rows"][2]["accuracy_with_evidence"] = 0.82, 0.96
    assert _reag_why(results, "the reader")["coarse_critic"].endswith("evidence survives, accuracy 82% -> 96%")
    del results["by_split"]
    assert "coarse retrieval: 90%" in _reag_why(results, "the reader")["coarse_critic"]
    results["rows"] += [{**row, "rung": "fine_critic", "format_reward": 1.0, "accuracy_with_evidence": 0.95},
                        {**row, "rung": "sft", "format_reward": 0.0, "accuracy_with_evidence": 0.13}]
    results["training"]["sft"] = {"steps": 150, "loss_start": 1.18, "loss_end": 0.07}
    sft = _reag_why(results, "the reader")["sft"]
    assert "template 100% -> 0%" in sft and "evidence is in context 95% -> 13%" in sft and "1.18 -> 0.07" in sft


def test_serts_why_is_read_from_the_search_records(monkeypatch):
    from kbvqa.paper_vs_ours import parts

    diagnostics = {"serts_12": {"nodes_with_new_gold": 0.0024, "questions_with_new_gold": 0.025,
                                "grade_rubric_rho": -0.0418}}
    monkeypatch.setattr(parts, "search_diagnostics", lambda records: diagnostics)
    why = parts._serts_why([{"method": "serts_12"}], "reader")
    assert "0.2% of the search's nodes (2% of questions)" in why and "rank correlation -0.04" in why
    assert "BioASQ" in parts._serts_why([], "reader") and why.startswith("the reader model")


def test_mechanism_lines_list_a_parts_rows_with_symbols_as_math():
    import dataclasses

    from kbvqa.paper_vs_ours import mechanism_lines

    e = dataclasses.replace(effect((10, 20), (5, 9), (1, 7)), mechanism="leaf reward > α (Q_M > 0) on 0 of 3",
                            paper_mechanism=False, comparable=False, why_not_comparable="invented entities",
                            reference={"label": "base (untrained)", "accuracy": 0.5, "low": 0.4, "high": 0.6})
    text = mechanism_lines([e, dataclasses.replace(e, part="MOLT")], "ReAG")
    assert text.count("\n") == 0 and text.startswith("- **x** (same; not the paper's mechanism)")
    assert "($Q_{M}$ > 0)" in text and "Not comparable: invented entities." in text
    assert "Untrained reference: base (untrained) 50.0 % [40.0, 60.0]." in text


def test_rcts_whys_say_what_each_row_measured():
    from kbvqa.paper_vs_ours.whys import rcts_whys

    def text(letter, answer, matches):
        return {"n": 40, "letter_accuracy": letter, "text_accuracy": answer, "text_matches_letter": matches}

    results = {"answer_text": {"zero_shot": text(0.26, 0.24, 0.8), "vanilla_rag": text(0.26, 0.73, 0.31),
                               "icl_random": text(0.27, 0.22, 0.42), "vanilla_rag_rc": text(0.35, 0.75, 0.28),
                               "rcts": text(0.62, 0.57, 0.72), "rcts_no_rc": text(0.35, 0.62, 0.48),
                               "rcts_sweep_alpha=0.2": text(0.47, 0.33, 0.67), "rcts_sweep_alpha=1": text(0.47, 0.4, 0.8)},
               "reward_diagnostics": {"rcts": {"n": 360, "auc": 0.863}, "rcts_no_rc": {"n": 300, "auc": 0.584},
                                      "rcts_sweep_alpha=0.2": {"n": 2, "auc": 0.70},
                                      "rcts_sweep_alpha=1": {"n": 2, "auc": 0.72}}}
    runs = {"rcts_sweep_alpha=0.2": [{"rollouts": [["A", 0.15], ["B", 0.2]]}]}
    why = rcts_whys(results, runs, {"rcts_sweep_alpha=0.2": 0.2})
    assert len(set(why.values())) == 6 and not any("no signal" in w for w in why.values())   # one reason per row
    assert "lift the answer text the reader's rationale names from 24% to 73%" in why["Vanilla-RAG vs zero-shot"]
    assert "where it was (24% -> 22%)" in why["random ICL vs zero-shot"]
    assert "separates right from wrong branches (AUC 0.86 over 360 leaves" in why["RCTS vs Vanilla-RAG"]
    assert "(31% -> 72% of questions)" in why["RCTS vs Vanilla-RAG"] and "57% against 75%" in why["RCTS vs Vanilla-RAG"]
    assert "holds that text on 28%" in why["+ reasoning context (no MCTS)"]
    assert "hardly separates" in why["+ MCTS-HR (no reasoning context)"] and "AUC 0.58 over 300 leaves, against 0.86" \
        in why["+ MCTS-HR (no reasoning context)"]
    assert "(0 of 2)" in why["alpha 0.2 vs 1 (Eq. 9)"]
    assert "AUC 0.70 and 0.72 over 2 leaves each; chapter 14" in why["alpha 0.2 vs 1 (Eq. 9)"]
    runs["rcts_sweep_alpha=0.2"][0]["rollouts"].append(["C", 0.9])              # Q_M fired on one leaf: no such why
    assert "alpha 0.2 vs 1 (Eq. 9)" not in rcts_whys(results, runs, {"rcts_sweep_alpha=0.2": 0.2})
    assert rcts_whys({}, {}, {}) == {}


def test_rcts_whys_of_the_committed_run_match_its_reward_diagnostic():
    if not (DATA_DIR / "experiments" / "rcts" / "results.json").exists():
        pytest.skip("no committed RCTS results")
    from kbvqa.rcts import RESULTS_DIR, load_results

    auc = load_results(RESULTS_DIR)["reward_diagnostics"]["rcts"]["auc"]
    effects = {e.name: e.why for e in rcts_effects()}
    assert len(set(effects.values())) == len(effects) == 6
    assert f"AUC {auc:.2f}" in effects["RCTS vs Vanilla-RAG"] and auc > 0.7      # chapter 31's cells 16-18


def test_molt_reader_whys_are_read_from_the_run():
    from kbvqa.paper_vs_ours.whys import molt_reader_whys

    def rec(correct, rank, gt_rounds, chain=True):
        return {"correct": correct, "gold_rank": rank, "gt_rounds": gt_rounds, "chain_valid": chain}

    # weak-to-strong: the rank-1 gold enters round 4 as the challenger
    records = {"zero_shot_tournament": [rec(True, 1, 1), rec(False, 1, 0)],
               "sft_tournament": [rec(False, 1, 0), rec(False, 1, 0), rec(True, 1, 1), rec(False, 1, 0)],
               "grpo_full_weak_to_strong": [rec(False, 1, 0)] * 4}
    rows = {"zero_shot_tournament": {"format_valid": 0.967, "chain_valid": 0.762},
            "sft_tournament": {"format_valid": 0.842, "chain_valid": 0.85}}
    curves = {"format_reward": [1, 0, 1, 0], "process_reward": [0.3, 0.4, 0.3, 0.4],
              "result_reward": [0, 1, 0, 1], "zero_spread_groups": [0.0] * 4}
    results = {"rows": rows, "config": {"grpo_steps": 4}, "training": {"grpo_full": curves}}
    why = molt_reader_whys(results, records)
    sft = why["SFT cold start vs base tournament"]
    assert "more chains consistent (76% -> 85%) but fewer outputs well-formed (97% -> 84%)" in sft
    assert "50% -> 25% of the rounds it enters as the challenger" in sft
    grpo = why["GRPO (full) vs SFT"]
    assert grpo.startswith("4 GRPO steps") and "every group had spread, no reward trend" in grpo
    assert "challenger fell (25% -> 0% of the rounds it enters)" in grpo and "no trend yet" not in grpo
    curves["result_reward"] = [0, 0, 1, 1]                                   # a reward that moves
    curves["zero_spread_groups"] = [0.4, 0.0, 0.0, 0.0]
    grpo = molt_reader_whys(results, records)["GRPO (full) vs SFT"]
    assert "10% of the groups had no spread, rewards that moved" in grpo
    assert molt_reader_whys({}, {}) == {}
