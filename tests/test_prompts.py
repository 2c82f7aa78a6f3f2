"""The prompt templates: every file loads, names its source, renders, and refuses bad slots."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from kbvqa.prompts import (
    list_prompts,
    load_prompt,
    prompt_slots,
    prompt_source,
    render_chat,
    render_prompt,
    system_name,
)

PAPERS = Path(__file__).resolve().parents[2] / "shared" / "papers"
EXPECTED = ["rcts_reasoning_context", "rcts_answer_with_context", "rcts_mc", "rcts_mc_rc",
            "rcts_mc_answer", "rcts_mmmu", "rcts_mathv", "reag_critic", "reag_generator",
            "reag_generator_no_passage", "reag_trace", "serts_evaluator", "serts_proposer",
            "serts_self_reflection", "serts_answer", "molt_grounding", "molt_pairwise",
            "molt_passage_extraction", "molt_student_ladder", "molt_oneshot", "evqa_answer",
            "infoseek_answer"]


def _dummy(name: str) -> dict:
    return {s: f"<{s.upper()}>" for s in prompt_slots(name)}


def test_every_expected_prompt_exists_and_every_file_names_its_source():
    names = list_prompts()
    assert set(EXPECTED) <= set(names)
    for name in names:
        source = prompt_source(name)
        assert re.match(r"(RCTS|ReAG|SeRTS|MOLT) ", source), f"{name}: bad source line {source!r}"
        if name.endswith("_short"):
            assert "short rendering" in source and name[:-6] in names  # a short file shadows a paper file
            assert set(prompt_slots(name)) == set(prompt_slots(name[:-6])), name
        text = load_prompt(name)
        assert text and not text.startswith("#") and text == text.strip("\n")


def test_render_fills_every_slot_once():
    text = render_prompt("reag_critic", question="What does this {noun} eat?", passage="It eats moss.")
    assert "What does this {noun} eat?" in text          # a value is never filled again
    assert "It eats moss." in text and "{question}" not in text and "{passage}" not in text
    assert render_prompt("molt_oneshot", **_dummy("molt_oneshot")).endswith("{1, 2, 3, 4, 5}.")
    assert "//boxed{X}" in render_prompt("rcts_mathv", question="q")   # literal braces survive
    for name in list_prompts():
        rendered = render_prompt(name, **_dummy(name))
        assert not re.search(r"\{[a-z][a-z0-9_]*\}", rendered), name


def test_missing_unknown_slots_and_unknown_names_raise():
    with pytest.raises(ValueError, match="missing slot"):
        render_prompt("reag_critic", question="q")
    with pytest.raises(ValueError, match="unknown slot"):
        render_prompt("reag_critic", question="q", passage="p", answer="a")
    with pytest.raises(ValueError, match="unknown prompt"):
        load_prompt("no_such_prompt")
    with pytest.raises(ValueError, match="unknown slot"):
        render_chat("reag_critic", images=["img"], question="q", passage="p", extra=1)
    with pytest.raises(ValueError, match="image marker"):
        render_chat("molt_grounding", images=[], question="q", img_width=56, img_height=56)


def test_render_chat_places_system_turn_and_images():
    chat = render_chat("molt_pairwise", images=["Q", "A", "B"], question="q", id_a=2, id_b=5,
                       paragraph_a="pa", paragraph_b="pb")
    assert [m["role"] for m in chat] == ["system", "user"]
    assert "two Candidate documents" in chat[0]["content"][0]["text"]
    parts = chat[1]["content"]
    assert [p["image"] for p in parts if p["type"] == "image"] == ["Q", "A", "B"]
    assert parts[0] == {"type": "text", "text": "Query Image: "}
    critic = render_chat("reag_critic", images=["I"], short=True, question="q", passage="p")
    assert critic[1]["content"][0] == {"type": "image", "image": "I"}   # no marker: image first
    assert "Yes" in critic[0]["content"][0]["text"] and len(critic[0]["content"][0]["text"]) < 200
    assert system_name("reag_critic", short=True) == "reag_critic_system_short"
    assert system_name("rcts_mc_answer") is None
    assert render_chat("rcts_mc_answer", letter="B", reason="r")[0]["role"] == "user"


def test_short_renderings_are_much_shorter():
    for name in ("reag_critic", "serts_evaluator", "molt_grounding", "rcts_mc"):
        full = " ".join(m["content"][-1]["text"] for m in render_chat(name, images=["i"] * 1, **_dummy(name))
                        if m["role"] == "system" or name in ("serts_evaluator",))
        short = " ".join(m["content"][-1]["text"] for m in render_chat(name, images=["i"], short=True, **_dummy(name))
                         if m["role"] == "system" or name in ("serts_evaluator",))
        assert len(short.split()) * 3 < len(full.split()), name


@pytest.mark.skipif(not PAPERS.exists(), reason="papers not available (../shared/papers)")
@pytest.mark.parametrize("name, paper", [
    ("reag_critic_system", "reag"), ("reag_generator_system", "reag"), ("serts_evaluator", "serts"),
    ("serts_proposer", "serts"), ("molt_grounding_system", "molt"), ("molt_oneshot_system", "molt"),
    ("evqa_answer_system", "molt"), ("infoseek_answer_system", "molt"), ("molt_student_ladder_system", "molt"),
    ("rcts_reasoning_context_system", "rcts"), ("rcts_mc_system", "rcts"), ("rcts_mathv", "rcts")])
def test_paper_text_is_copied(name, paper):
    """Every sentence of a paper template (long enough to be distinctive) occurs in the paper."""
    def norm(s: str) -> str:
        s = s.replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"').replace("*", "").replace("_", "")
        s = re.sub(r"-\s*\n\s*", "", s)  # words hyphenated across lines
        return re.sub(r"[^a-z0-9]+", " ", s.lower())

    paper_text = norm((PAPERS / f"{paper}.txt").read_text(encoding="utf-8"))
    sentences = [s for s in re.split(r"(?<=[.:])\s+|\n", load_prompt(name)) if len(s.split()) >= 6]
    assert sentences
    for sentence in sentences:
        body = re.sub(r"\{[a-z0-9_]+\}", " ", sentence)
        for chunk in re.split(r"\s{2,}", norm(body).strip()):
            if len(chunk.split()) >= 4:
                assert chunk in paper_text, f"{name}: not in {paper}.txt: {chunk!r}"
