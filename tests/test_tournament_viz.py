"""The tournament viewer (kbvqa.viz.molt): one pure draw function, frames and HTML that
close every figure, broken chains marked, any string drawable."""
from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kbvqa.viz.molt import draw_tournament, render_tournament_frames, tournament_html  # noqa: E402

SCHEDULE = ["5", "4", "3", "2", "1"]


def xml(rounds, evidence) -> str:
    return "".join(f"<round><compare>[{a}] vs [{b}]</compare><think>{a} or {b}? {w} fits the image</think>"
                   f"<winner>[{w}]</winner></round>" for a, b, w in rounds) + f"<evidence>[{evidence}]</evidence>"


GOOD = xml([("5", "4", "4"), ("4", "3", "3"), ("3", "2", "3"), ("3", "1", "3")], "3")
BROKEN = xml([("5", "4", "4"), ("4", "3", "3"), ("4", "2", "4"), ("4", "1", "4")], "4")


def texts(fig) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts]


@pytest.fixture(autouse=True)
def no_leaks():
    plt.close("all")
    yield
    plt.close("all")


def test_bracket_shows_who_met_whom_the_winner_and_the_reasoning():
    fig = draw_tournament(GOOD, schedule=SCHEDULE, gold_id="3", labels={"3": "desnusk"})
    shown = texts(fig)
    assert [s for s in shown if s.startswith("round")] == ["round 1", "round 2", "round 3", "round 4"]
    assert any(s.startswith("[3]\ndesnusk") and s.endswith("\u2605") for s in shown)      # gold starred
    assert any(s.startswith("evidence\n[3]") for s in shown)
    assert any("fits the image" in s for s in shown)
    assert not any("broken" in s for s in shown)
    plt.close(fig)


def test_broken_chain_and_unscheduled_challenger_are_marked():
    fig = draw_tournament(BROKEN, schedule=SCHEDULE, gold_id="3")
    shown = texts(fig)
    assert shown.count("round 3 (chain broken)") == 1 and "round 4 (chain broken)" in shown
    plt.close(fig)
    skipped = xml([("5", "4", "4"), ("4", "2", "4")], "4")
    fig = draw_tournament(skipped, schedule=SCHEDULE)
    assert "scheduled: [3]" in texts(fig)
    plt.close(fig)


def test_upto_draws_a_prefix_without_the_evidence():
    fig = draw_tournament(GOOD, upto=2)
    shown = texts(fig)
    assert [s for s in shown if s.startswith("round")] == ["round 1", "round 2"]
    assert not any(s.startswith("evidence") for s in shown)
    plt.close(fig)


def test_frames_and_html_close_their_figures():
    frames, labels = render_tournament_frames(GOOD, schedule=SCHEDULE)
    assert len(frames) == 4 and labels[-1] == "evidence" and all(f.startswith(b"\x89PNG") for f in frames)
    assert plt.get_fignums() == []
    html = tournament_html(BROKEN, schedule=SCHEDULE, title="one query").data
    assert html.count("<img") == 4 and 'type="range"' in html and "one query" in html
    assert plt.get_fignums() == []


def test_a_run_object_and_an_empty_transcript_draw():
    from kbvqa.molt.run import TournamentRun

    run = TournamentRun("iterative", "3", draw_tournament.__globals__["parse_tournament"](GOOD), [], SCHEDULE, 4, 12)
    fig = draw_tournament(run)
    assert "round 4" in texts(fig)
    plt.close(fig)
    fig = draw_tournament("")
    assert "format invalid" in texts(fig)
    plt.close(fig)


@given(st.text(max_size=120))
@settings(max_examples=15, deadline=None)
def test_any_string_draws(text):
    fig = draw_tournament(text, schedule=SCHEDULE, gold_id="1")
    plt.close(fig)
