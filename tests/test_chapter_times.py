"""The README's per-chapter table is what ``tools.chapter_times`` makes of the committed records."""
from __future__ import annotations

import json

import pytest

from tools import chapter_times


def test_readme_table_is_generated_from_the_records():
    readme = chapter_times.README.read_text()
    assert chapter_times.readme_block() in readme, "run: python -m tools.chapter_times --readme"


def test_table_rows_and_the_smoke_column(tmp_path, monkeypatch):
    from kbvqa.models import gpu_budget

    monkeypatch.setitem(gpu_budget.OVER_BUDGET, "18_serts_ppo", "a made-up defect, to show the mark")
    record = {"chapters": [{"name": "00_toy_world", "seconds": 12.4, "passed": True},
                           {"name": "21_reag_critic", "seconds": 40.0, "passed": False},
                           {"name": "18_serts_ppo", "seconds": 22.0, "passed": True}],
              "provenance": {"cpus": 2, "date": "2026-11-25T07:00:00+00:00", "commit": "abcdef0123"}}
    from kbvqa.models.t4_time import chapter_minutes

    table = chapter_times.readme_table(record)
    assert "| 00 toy world | 12 | — | — | — | < 1 | — |" in table          # no model: its CPU time
    critic, ppo = gpu_budget.chapter_budget("21_reag_critic"), gpu_budget.chapter_budget("18_serts_ppo")
    assert ("| 21 reag critic | failed | Qwen2.5-VL-3B-Instruct, clip-vit-base-patch32, grounding-dino-tiny | 8.8 | "
            f"{critic['peak_gib']:.1f} | {chapter_minutes('21_reag_critic')['total']:.0f} |") in table
    assert (f"| 18 serts ppo | 22 | Qwen2-VL-2B-Instruct | 4.4 | {ppo['peak_gib']:.1f} (over 16 GB) | "
            f"{chapter_minutes('18_serts_ppo')['total']:.0f} |") in table and "not measured" in table
    assert "*estimates*" in table
    smoke = {"device": "NVIDIA T4", "chapters": [{"name": "00_toy_world", "seconds": 30.2, "passed": True},
                                                 {"name": "18_serts_ppo", "seconds": 9.0, "passed": False}]}
    with_smoke = chapter_times.readme_table(record, smoke)
    assert "| 00 toy world | 12 | — | — | — | < 1 | 30 |" in with_smoke and "| 9 (failed) |" in with_smoke
    readme = tmp_path / "README.md"
    readme.write_text("x\n")
    rec = tmp_path / "r.json"
    rec.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="no <!-- chapters:start -->"):
        chapter_times.update_readme(readme, rec, tmp_path / "none.json")
    readme.write_text(f"a\n{chapter_times.START}\nold\n{chapter_times.END}\nb\n")
    chapter_times.update_readme(readme, rec, tmp_path / "none.json")
    assert readme.read_text().startswith("a\n<!-- chapters:start -->\nMeasured") and readme.read_text().endswith("\nb\n")


def test_merge_replaces_the_remeasured_chapters_and_the_table_names_them():
    record = {"chapters": [{"name": "00_toy_world", "seconds": 12.4, "passed": True},
                           {"name": "26_molt_ladder", "seconds": 150.0, "passed": True}],
              "provenance": {"cpus": 2, "date": "2026-11-25T07:00:00+00:00", "commit": "abcdef0123"}}
    again = {"chapters": [{"name": "26_molt_ladder", "seconds": 92.0, "passed": True},
                          {"name": "31_paper_vs_ours", "seconds": 8.0, "passed": True}],
             "provenance": {"cpus": 2, "date": "2026-11-28T15:00:00+00:00", "commit": "1234567890",
                            "load_average_before": [0.1, 0.2, 0.3], "load_average_after": [1.0, 0.9, 0.8]}}
    merged = chapter_times.merge(record, again)
    assert [(c["name"], c["seconds"]) for c in merged["chapters"]] == [
        ("00_toy_world", 12.4), ("26_molt_ladder", 92.0), ("31_paper_vs_ours", 8.0)]
    assert "remeasured" not in merged["chapters"][0] and merged["chapters"][1]["remeasured"]["commit"] == "1234567890"
    assert merged["provenance"] == record["provenance"] and record["chapters"][1]["seconds"] == 150.0
    table = chapter_times.readme_table(merged)
    assert "Re-measured alone (2026-11-28, commit 1234567): 26 molt ladder, 31 paper vs ours." in table
    assert "| 26 molt ladder | 92 |" in table and "commit abcdef0" in table
    with pytest.raises(ValueError, match="measured on 2 CPUs, this run on 4"):
        chapter_times.merge(record, {**again, "provenance": {**again["provenance"], "cpus": 4}})


def test_cell_seconds_reads_nbclient_timestamps_slowest_first():
    import nbformat

    from tools.nb_execute import cell_seconds

    def cell(start, end):
        c = nbformat.v4.new_code_cell("pass")
        c.metadata["execution"] = {"iopub.execute_input": start, "shell.execute_reply": end}
        return c

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# a"), cell("2026-12-07T10:00:03Z", "2026-12-07T10:00:03.100000Z"),
                cell("2026-12-07T10:00:00.000000Z", "2026-12-07T10:00:02.500000Z"), nbformat.v4.new_code_cell("x")]
    assert cell_seconds(nb) == [(2, 2.5), (1, 0.1)]


def test_background_load_runs_and_stops_its_loops():
    with chapter_times.background_load(1) as load:
        assert len(load.procs) == 1 and load.procs[0].poll() is None       # running
    assert load.procs[0].poll() is not None                                # stopped on exit
    with pytest.raises(ValueError, match="--background"):
        chapter_times.background_load(-1)


def test_cells_over_the_limit_under_load_are_listed():
    record = {"chapters": [{"name": "10_a", "slowest_cells": [[3, 151.0], [4, 20.0]]},
                           {"name": "11_b", "slowest_cells": [[1, 149.9]]}]}
    assert chapter_times.over_limit(record) == [("10_a", 3, 151.0)]


def test_background_needs_measure_and_every_chapter(capsys):
    for argv in (["--background", "2"], ["--measure", "--only", "00_toy_world", "--background", "2"],
                 ["--measure", "--background", "-1"]):
        with pytest.raises(SystemExit) as err:
            chapter_times.main(argv)
        assert err.value.code == 2


def test_a_loaded_build_is_summarised_from_its_executed_chapters(tmp_path):
    import nbformat

    from tools.make_test_under_load import summarise_build

    folder = tmp_path / "_build" / "jupyter_execute" / "notebooks"
    folder.mkdir(parents=True)

    def cell(start, end):
        c = nbformat.v4.new_code_cell("1")
        c.metadata["execution"] = {"iopub.execute_input": f"2026-12-07T10:00:{start:02d}Z",
                                   "shell.execute_reply": f"2026-12-07T10:00:{end:02d}Z"}
        return c

    nb = nbformat.v4.new_notebook(cells=[cell(0, 2), nbformat.v4.new_markdown_cell("x"), cell(2, 42), cell(42, 45)])
    nbformat.write(nb, folder / "22_reag_cold_start.ipynb")
    summary = summarise_build(tmp_path, limit=30)
    assert summary["chapters"] == [{"name": "22_reag_cold_start", "seconds": 45.0,
                                    "slowest_cells": [[2, 40.0], [3, 3.0], [0, 2.0]]}]
    assert summary["cells_over_limit"] == [["22_reag_cold_start", 2, 40.0]]
    assert summarise_build(tmp_path / "nothing", limit=30) == {"chapters": [], "cells_over_limit": []}
    # myst-nb records no cell timestamps; its own line gives the chapter's time
    log = "/tmp/x/notebooks/22_reag_cold_start.ipynb: Executed notebook in 107.08 seconds [mystnb]\n"
    assert summarise_build(tmp_path, limit=30, log=log)["chapters"][0]["seconds"] == 107.1
