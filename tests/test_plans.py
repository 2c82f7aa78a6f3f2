"""kbvqa.experiments.plans (pre-registration) and the diagnostics behind each effect's mechanism."""
from __future__ import annotations

import argparse
import json
import subprocess

import pytest

from kbvqa.experiments import plans
from kbvqa.experiments.plans import (
    NOT_PRE_REGISTERED,
    NOT_VERIFIABLE,
    PRE_REGISTERED,
    apply_plan,
    check_records,
    load_plan,
    plan_status,
    validate_plan,
)

IDS = [f"q{i}" for i in range(4)]


def good_plan(**changes) -> dict:
    plan = {"part": "toy", "date": "2026-12-07", "rows": ["base", "treat"], "n": 4, "query_ids": list(IDS),
            "seeds": [0], "stopping_rule": "fixed n; never extended", "analysis": "paired bootstrap, strict verdict"}
    plan.update(changes)
    return plan


def write(path, plan) -> None:
    path.mkdir(parents=True, exist_ok=True)
    (path / "plan.json").write_text(json.dumps(plan))


RUN = {"date": "2026-12-09T10:00:00+00:00", "git_commit": "abc"}
RECORDS = {"base": list(IDS), "treat": list(IDS)}


# ------------------------------------------------------------------------------ the plan file
@pytest.mark.parametrize("field", ["part", "date", "rows", "n", "query_ids", "seeds", "stopping_rule", "analysis"])
def test_a_missing_field_is_named_with_the_file(tmp_path, field):
    plan = good_plan()
    del plan[field]
    write(tmp_path, plan)
    with pytest.raises(ValueError, match=rf"plan.json: field '{field}' is missing"):
        load_plan(tmp_path / "plan.json")


@pytest.mark.parametrize("changes, field", [
    ({"n": 0}, "n"), ({"n": True}, "n"), ({"rows": []}, "rows"), ({"rows": ["a", "a"]}, "rows"),
    ({"query_ids": IDS[:3]}, "query_ids"), ({"query_ids": {"rule": "first n"}}, "query_ids"),
    ({"seeds": []}, "seeds"), ({"date": "soon"}, "date"), ({"stopping_rule": ""}, "stopping_rule"),
    ({"stopping_rule": "extend until the interval excludes 0"}, "stopping_rule"),
    ({"replaces": {"commit": "abc"}}, "replaces"), ({"n": {"other": 3}}, "n"),
])
def test_a_malformed_field_is_named(changes, field):
    with pytest.raises(ValueError, match=rf"'{field}'"):
        validate_plan(good_plan(**changes), "x/plan.json")


def test_a_well_formed_plan_loads_and_a_missing_one_is_none(tmp_path):
    assert load_plan(tmp_path / "plan.json") is None
    write(tmp_path, good_plan(query_ids={"rule": "the first 4 of kbvqa_test", "seed": 0},
                              replaces={"commit": "abc", "reason": "n was underpowered"}))
    assert load_plan(tmp_path / "plan.json")["rows"] == ["base", "treat"]
    (tmp_path / "plan.json").write_text("{\n  \"n\": 4,\n")
    with pytest.raises(ValueError, match=r"plan.json: not valid JSON \(line 3"):
        load_plan(tmp_path / "plan.json")


# ------------------------------------------------------------------------------ records against the plan
def test_records_that_match_the_plan_pass():
    check_records(good_plan(), RECORDS)


def test_another_count_raises():
    with pytest.raises(ValueError, match=r"field 'n' says 4 for 'treat'; the records hold 5"):
        check_records(good_plan(), {"base": IDS, "treat": IDS + ["q9"]}, "p/plan.json")


def test_other_ids_raise():
    with pytest.raises(ValueError, match=r"field 'query_ids' does not list \['q9'\]"):
        check_records(good_plan(), {"base": IDS, "treat": IDS[:3] + ["q9"]}, "p/plan.json")


def test_a_planned_row_without_records_raises():
    with pytest.raises(ValueError, match=r"field 'rows' names 'treat'"):
        check_records(good_plan(), {"base": IDS}, "p/plan.json")


def test_per_row_sizes():
    plan = good_plan(n={"base": 4, "treat": 2})
    check_records(plan, {"base": IDS, "treat": IDS[:2]})
    with pytest.raises(ValueError, match="'n' says 2 for 'treat'"):
        check_records(plan, RECORDS)


# ------------------------------------------------------------------------------ plan_status
def test_tables_from_before_plans_are_not_pre_registered(tmp_path):
    old = {"date": "2026-11-29T08:10:03+00:00"}
    assert plan_status(tmp_path, RECORDS, old) == {"plan": None, "status": NOT_PRE_REGISTERED}
    write(tmp_path, good_plan(n=9))                    # a plan for the next run does not judge the old one
    assert plan_status(tmp_path, RECORDS, old)["status"] == NOT_PRE_REGISTERED


def test_a_run_after_plans_were_required_without_a_plan_raises(tmp_path):
    with pytest.raises(ValueError, match=r"plan.json is missing: the run .* after plans were required"):
        plan_status(tmp_path, RECORDS, RUN)


def test_a_malformed_plan_of_a_new_run_raises(tmp_path):
    plan = good_plan()
    del plan["analysis"]
    write(tmp_path, plan)
    with pytest.raises(ValueError, match=r"plan.json: field 'analysis' is missing"):
        plan_status(tmp_path, RECORDS, RUN)


def test_a_plan_newer_than_the_run_raises(tmp_path):
    write(tmp_path, good_plan(date="2026-12-10"))
    with pytest.raises(ValueError, match=r"field 'date' 2026-12-10 is newer than the run, which started on 2026-12-09"):
        plan_status(tmp_path, RECORDS, RUN)


def test_a_run_that_differs_from_its_plan_raises(tmp_path):
    write(tmp_path, good_plan())
    with pytest.raises(ValueError, match="'n' says 4"):
        plan_status(tmp_path, {"base": IDS, "treat": IDS[:3]}, RUN)


def test_without_git_the_plan_is_not_verifiable_and_nothing_raises(tmp_path, monkeypatch):
    write(tmp_path, good_plan())
    assert plan_status(tmp_path, RECORDS, RUN)["status"] == NOT_VERIFIABLE          # the chapter: no git check
    monkeypatch.setattr(plans, "git_available", lambda: False)
    status = plan_status(tmp_path, RECORDS, RUN, verify_git=True)
    assert status["status"] == NOT_VERIFIABLE and status["plan"]["n"] == 4


def _git_repo(tmp_path, monkeypatch):
    """A throwaway repository standing in for REPO_ROOT: returns a commit function."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q")
    git("config", "user.email", "t@t")
    git("config", "user.name", "t")
    monkeypatch.setattr(plans, "REPO_ROOT", tmp_path)

    def commit(message):
        git("add", "-A")
        git("commit", "-qm", message)
        return git("rev-parse", "HEAD")

    return commit


def test_verify_git_holds_the_plan_to_the_runs_commit(tmp_path, monkeypatch):
    commit = _git_repo(tmp_path, monkeypatch)
    part = tmp_path / "data" / "toy"
    (tmp_path / "README").write_text("x")
    before = commit("no plan yet")
    write(part, good_plan())
    registered = commit("plan")
    assert plan_status(part, RECORDS, {**RUN, "git_commit": registered}, verify_git=True)["status"] == PRE_REGISTERED
    with pytest.raises(ValueError, match="is not in the commit the run recorded"):       # plan newer than the run
        plan_status(part, RECORDS, {**RUN, "git_commit": before}, verify_git=True)
    write(part, good_plan(seeds=[1]))                  # edited after the run, in the working tree
    with pytest.raises(ValueError, match=r"field 'seeds' differs from the plan in the run's commit"):
        plan_status(part, RECORDS, {**RUN, "git_commit": registered}, verify_git=True)
    with pytest.raises(ValueError, match="recorded no git commit"):
        plan_status(part, RECORDS, {"date": RUN["date"], "git_commit": "unknown"}, verify_git=True)


# ------------------------------------------------------------------------------ runners read their sizes from the plan
def test_apply_plan_sets_the_sizes_and_refuses_a_disagreeing_option(tmp_path, capsys):
    parser = argparse.ArgumentParser()
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--rows", nargs="+", default=None)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args([])
    assert apply_plan(args, tmp_path, parser) is None and args.limit == 200
    write(tmp_path, good_plan())
    apply_plan(args, tmp_path, parser)
    assert (args.limit, args.rows, args.seed) == (4, ["base", "treat"], 0)
    args = parser.parse_args(["--limit", "7"])
    with pytest.raises(SystemExit) as stop:
        apply_plan(args, tmp_path, parser)
    assert stop.value.code == 2 and "disagrees with" in capsys.readouterr().err
    write(tmp_path, good_plan(n={"base": 4, "treat": 2}))
    args = parser.parse_args(["--rows", "treat"])           # a planned row on its own takes its own n
    apply_plan(args, tmp_path, parser)
    assert (args.limit, args.rows) == (2, ["treat"])
    with pytest.raises(SystemExit):
        apply_plan(parser.parse_args(["--rows", "other"]), tmp_path, parser)
    assert "are not in" in capsys.readouterr().err


# ------------------------------------------------------------------------------ mechanisms, from hand-made records
def test_mutual_reward_alive_is_read_from_the_leaf_rewards():
    from kbvqa.paper_vs_ours.mechanisms import mutual_alive, rcts_search_line

    dead = [{"rollouts": [["A", 0.2], ["B", 0.04]]}, {"rollouts": [["C", 0.0]]}]
    alive = [{"rollouts": [["A", 0.2], ["B", 0.52]]}]
    assert mutual_alive(dead, 0.2) == {"leaves": 3, "above_alpha": 0, "share": 0.0}
    assert mutual_alive(alive, 0.2)["share"] == 0.5
    texts = {"v": {"text_accuracy": 0.75, "text_matches_letter": 0.3}, "r": {"text_accuracy": 0.6,
                                                                           "text_matches_letter": 0.7}}
    line, paper = rcts_search_line(texts, "v", "r", {"r": dead}, 0.2)
    assert line.startswith("Q_S re-answer repairs letters") and "0 of 3 leaves" in line and paper is False
    texts["r"]["text_accuracy"] = 0.9
    line, paper = rcts_search_line(texts, "v", "r", {"r": alive}, 0.2)
    assert line.startswith("Q_S and Q_M both steer") and paper is True


def test_critic_mechanism_needs_the_evidence_kept():
    from kbvqa.paper_vs_ours.mechanisms import reag_critic_line

    coarse = {"passages": 40.0, "evidence_in_context": 0.96, "accuracy_with_evidence": 0.82}
    cut = {"passages": 5.3, "evidence_in_context": 0.56, "accuracy_with_evidence": 0.96}
    line, paper = reag_critic_line(coarse, cut, 0.1)
    assert "threshold cut (P(Yes) > 0.1)" in line and "kept 58%" in line and paper is False
    _, paper = reag_critic_line(coarse, {**cut, "evidence_in_context": 0.93}, 0.1)
    assert paper is True


def test_a_trained_rung_below_the_untrained_one_is_not_the_papers_mechanism():
    from kbvqa.paper_vs_ours.mechanisms import reag_training_line, untrained_reference

    ref = untrained_reference("+ fine retrieval", 107, 200)
    assert ref["label"] == "+ fine retrieval (untrained)" and ref["low"] < 0.535 < ref["high"]
    before = {"accuracy": 0.075, "accuracy_with_evidence": 0.13, "format_reward": 0.0}
    after = {"accuracy": 0.425, "accuracy_with_evidence": 0.75, "format_reward": 1.0}
    oracle = {"oracle_zero_shot": {"accuracy": 0.975}, "oracle_traces": {"accuracy": 0.355}}
    line, paper = reag_training_line(before, after, oracle, None, "oracle_traces", ref)
    assert "evidence alone 97.5% -> 35.5%" in line and "vs the untrained rung 53.5%" in line and paper is False
    oracle["oracle_traces"]["accuracy"] = 0.96
    _, paper = reag_training_line(before, {**after, "accuracy": 0.6}, oracle, None, "oracle_traces", ref)
    assert paper is True


def test_a_judge_that_keeps_the_incumbent_is_seen_in_its_rounds():
    from kbvqa.paper_vs_ours.mechanisms import molt_role_line

    # weak-to-strong over 5: rank 5 is the seed (it defends 4 rounds), rank 1 enters last as challenger.
    # Here every seed gold defends all 4 rounds and every challenger gold loses its one round.
    records = {"t": [{"gold_rank": 5, "correct": True, "chain_valid": True, "gt_rounds": 4}] * 3
               + [{"gold_rank": 1, "correct": False, "chain_valid": True, "gt_rounds": 0}] * 3,
               "one_shot": [{"gold_rank": 1, "correct": True}, {"gold_rank": 2, "correct": False}]}
    line, paper = molt_role_line(records, "one_shot", "t")
    assert "rank 1 on 100%" in line and "wins 0% of 3 rounds it enters as challenger, 100% of 12" in line
    assert paper is False and line.endswith("(a judge that keeps the incumbent)")


def test_a_run_into_the_committed_folder_is_checked_and_a_scratch_run_is_not(tmp_path):
    from kbvqa.experiments.plans import check_counted_run, ids_by_row

    records = {"base": [{"id": i} for i in IDS], "treat": [{"id": i} for i in IDS]}
    flat = [{"method": "base", "id": "q0", "seed": 1}, {"method": "base", "id": "q0", "seed": 2},
            {"row": "treat", "id": "q1"}]
    assert ids_by_row(records) == RECORDS and ids_by_row(flat) == {"base": ["q0"], "treat": ["q1"]}
    committed, scratch = tmp_path / "part", tmp_path / "scratch"
    assert check_counted_run(scratch, committed, records, RUN) is None           # not counted, not checked
    with pytest.raises(ValueError, match="plan.json is missing"):
        check_counted_run(committed, committed, records, RUN)


def test_the_committed_tables_are_not_pre_registered_and_the_git_check_passes():
    from kbvqa.paper_vs_ours import all_effects

    effects = all_effects(verify_git=True)
    assert {e.plan_status for e in effects} == {NOT_PRE_REGISTERED} and all(e.plan is None for e in effects)


@pytest.mark.parametrize("module", ["kbvqa.paper_vs_ours", "tools.first_cell", "tools.dist", "tools.reader_rounds",
                                    "kbvqa.reader.fastcard", "tools.make_test_under_load",
                                    "kbvqa.experiments.rcts_letter_binding", "kbvqa.experiments.reag_depth",
                                    "kbvqa.experiments.serts_roles"])
def test_help_writes_nothing(module):
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    before = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    done = subprocess.run([sys.executable, "-m", module, "--help"], cwd=root, capture_output=True, text=True,
                          timeout=300)
    after = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    assert done.returncode == 0 and "usage:" in done.stdout
    assert after == before, f"{module} --help changed the tree"


# ------------------------------------------------------------------------------ committed files name themselves
def test_a_corrupt_results_file_names_itself(tmp_path):
    from kbvqa.experiments.runs import read_json
    from kbvqa.paper_vs_ours import molt_effects

    (tmp_path / "results.json").write_text('{"rows": {\n  "a": 1,,\n}')
    with pytest.raises(ValueError, match=r"results.json: not valid JSON \(line 2.*git checkout"):
        read_json(tmp_path / "results.json")
    with pytest.raises(ValueError, match="results.json: not valid JSON"):
        molt_effects(tmp_path)


def test_a_torn_last_line_is_named_and_dropped_only_when_asked(tmp_path, monkeypatch, capsys):
    from kbvqa.experiments.runs import read_run

    run = tmp_path / "row.jsonl"
    run.write_text('{"fingerprint": "f"}\n{"id": "q0"}\n{"id": "q1", "corr')
    with pytest.raises(ValueError, match=r"row.jsonl: line 3 is not JSON .*KBVQA_DROP_TORN_LINE=1"):
        read_run(run)
    assert read_run(run, drop_torn=True) == ({"fingerprint": "f"}, [{"id": "q0"}])
    monkeypatch.setenv("KBVQA_DROP_TORN_LINE", "1")
    assert read_run(run)[1] == [{"id": "q0"}] and "dropped its torn last line 3" in capsys.readouterr().out
    run.write_text('{"fingerprint": "f"}\n{"id": \n{"id": "q1"}\n')             # a broken line inside: never dropped
    with pytest.raises(ValueError, match="line 2 is not JSON"):
        read_run(run)


@pytest.mark.parametrize("text", ["-1", "0", "x", "2.5"])
def test_sizes_must_be_positive_ints(text):
    from kbvqa.experiments.runs import positive_int

    with pytest.raises(argparse.ArgumentTypeError, match="positive int"):
        positive_int(text)
    assert positive_int("3") == 3


def test_missing_samples_skip_or_fail_as_required(monkeypatch):
    import _samples

    monkeypatch.setattr(_samples, "SAMPLES", _samples.SAMPLES / "surely-not-here")
    monkeypatch.delenv("KBVQA_REQUIRE_SAMPLES", raising=False)
    with pytest.raises(pytest.skip.Exception, match="offline samples not found"):
        _samples.sample("scienceqa")
    monkeypatch.setenv("KBVQA_REQUIRE_SAMPLES", "1")
    with pytest.raises(pytest.fail.Exception, match="KBVQA_REQUIRE_SAMPLES=1 requires them"):
        _samples.sample("scienceqa")


def test_rcts_contexts_refuses_overrides_it_would_ignore(capsys):
    from kbvqa.experiments.rcts_contexts.run import main

    with pytest.raises(SystemExit) as stop:
        main(["--set", "n_candidates=2"])
    assert stop.value.code == 2 and "--set applies to --for-queries only" in capsys.readouterr().err


@pytest.mark.parametrize(("module", "argv"), [
    ("kbvqa.reader.fastcard", ["--threads", "0"]), ("kbvqa.reader.fastcard", ["--n", "-1"]),
    ("kbvqa.reader.card", ["--n", "0"]), ("kbvqa.models.model_card", ["--threads", "-2"]),
    ("kbvqa.models.tiny_recipe", ["--stage", "3"]), ("kbvqa.models.tiny_recipe", ["--minutes", "-5"]),
    ("kbvqa.reader.cli", ["--max-minutes", "nan"]), ("kbvqa.experiments.rcts_toy.run", ["--seed", "-1"]),
    ("kbvqa.experiments.serts_ppo.run", ["--sim", "0"]), ("kbvqa.experiments.molt_candidates.run", ["--k", "0"]),
    ("kbvqa.experiments.molt_candidates.run", ["--every", "x"]), ("kbvqa.experiments.molt_training.run", ["--seed", "-3"]),
    ("kbvqa.experiments.serts_experiment.run", ["--seeds", "1", "-1"]), ("kbvqa.models.encoders_train", ["--steps", "0"]),
])
def test_a_bad_value_is_a_usage_error_that_writes_nothing(module, argv, capsys):
    import importlib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    before = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    with pytest.raises(SystemExit) as stop:
        importlib.import_module(module).main(argv)
    after = subprocess.run(["git", "status", "--porcelain"], cwd=root, capture_output=True, text=True).stdout
    err = capsys.readouterr().err
    assert stop.value.code == 2 and "usage:" in err and f"argument {argv[0]}" in err
    assert after == before


def test_a_recorded_command_names_no_machine_folder():
    from kbvqa.experiments.runs import provenance, relative_command

    command = "python -m kbvqa.experiments.serts_experiment --threads 1 --out /work/main/data/runs_in_progress/serts"
    assert relative_command(command) == "python -m kbvqa.experiments.serts_experiment --threads 1 --out " \
                                        "data/runs_in_progress/serts"
    assert relative_command("python -m x --out data/a") == "python -m x --out data/a"
    assert provenance(0, model="m", command=command)["command"].endswith("--out data/runs_in_progress/serts")
