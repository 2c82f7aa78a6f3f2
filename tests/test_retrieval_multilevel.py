"""Coarse/fine retrieval and the merge (kbvqa.retrieval.multilevel).

A three-page knowledge base ("red", "green", "blue") and a colour encoder make every score known:
an image's vector is its mean colour, a page's vector its colour. A green picture with a red
square in it is found as "green" by the whole image (coarse) and as "red" by the crop (fine);
the merge keeps both with their best scores. Also: merge-by-max by hand and as a property,
passage stages, the oracle box, evidence recall, bad configs, and the shipped toy encoders on a few
toy-world queries (an oracle grounder gives IoU 1 and equals the oracle-box run).
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from kbvqa.data.schema import Document, Passage, Query
from kbvqa.retrieval.multilevel import (
    DocumentIndex,
    MultilevelConfig,
    MultilevelRetriever,
    evaluate_multilevel,
    evidence_recall,
    merge_by_max,
    passages_of,
)

COLOURS = {"red": (1.0, 0.0, 0.0), "green": (0.0, 1.0, 0.0), "blue": (0.0, 0.0, 1.0)}


class ColourEncoders:
    """pooled(texts) = the named colour; pooled(images) = the mean colour (both L2-normalised)."""

    def pooled(self, texts=None, images=None):
        if texts is not None:
            vecs = [COLOURS[t.split(".")[0].lower()] for t in texts]
        else:
            vecs = [torch.from_numpy(np.asarray(im, dtype=np.float32)).mean((0, 1)).tolist() for im in images]
        return F.normalize(torch.tensor(vecs, dtype=torch.float32), dim=-1)


def documents():
    return [Document(f"doc-{c}", c.capitalize(), "", [Passage(f"doc-{c}:{s}", f"doc-{c}", f"{c} {s}", section=s)
                                                       for s in ("habitat", "diet")]) for c in COLOURS]


def green_with_red_square():
    image = Image.new("RGB", (64, 64), (0, 200, 0))
    image.paste((220, 0, 0), (8, 8, 32, 32))
    return image


class FixedGrounder:
    def __init__(self, boxes):
        self.boxes, self.calls = boxes, 0

    def ground(self, images, questions, subjects=None):
        self.calls += 1
        assert subjects == ["frog"] * len(images)     # the subject rule ran first
        return list(self.boxes)


def query(qid="q0", box=(8, 8, 32, 32)):
    return Query(qid, "What does this frog eat?", ["flies"], image=green_with_red_square(),
                 gold_doc_ids=["doc-red"], evidence_ids=["doc-red:diet"], box=box)


def test_merge_by_max_by_hand():
    coarse = [("a", 0.9), ("b", 0.5), ("c", 0.4)]
    fine = [("c", 0.8), ("d", 0.5), ("a", 0.1)]
    assert merge_by_max(coarse, fine) == [("a", 0.9), ("c", 0.8), ("b", 0.5), ("d", 0.5)]  # tie: first seen
    assert merge_by_max(coarse, fine, k=2) == [("a", 0.9), ("c", 0.8)]
    assert merge_by_max(coarse, []) == coarse and merge_by_max() == [] and merge_by_max(coarse, k=0) == []
    with pytest.raises(ValueError):
        merge_by_max(coarse, k=-1)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcdefg"), st.floats(-1, 1)), max_size=7),
       st.lists(st.tuples(st.sampled_from("abcdefg"), st.floats(-1, 1)), max_size=7))
def test_merge_by_max_properties(coarse, fine):
    merged = merge_by_max(coarse, fine)
    assert sorted(d for d, _ in merged) == sorted({d for d, _ in coarse + fine})           # each doc once
    for doc, score in merged:
        assert score == max(s for d, s in coarse + fine if d == doc)                       # its best score
    assert [s for _, s in merged] == sorted((s for _, s in merged), reverse=True)          # ranked


def test_index_and_stages_on_the_colour_world():
    index = DocumentIndex(documents(), ColourEncoders())
    assert len(index) == 3 and index.search(torch.tensor([[0.0, 0.0, 1.0]]), 1) == [[("doc-blue", 1.0)]]
    grounder = FixedGrounder([(8, 8, 32, 32)])
    retriever = MultilevelRetriever(documents(), ColourEncoders(), MultilevelConfig(k=1, margin=0.0), grounder)
    (result,) = retriever.retrieve([query()])
    assert grounder.calls == 1 and result.subject == "frog"
    assert result.coarse[0][0] == "doc-green" and result.fine[0][0] == "doc-red"
    assert result.crop_box == (8, 8, 32, 32)
    assert math.isclose(result.fine[0][1], 1.0, abs_tol=1e-6)        # the crop is pure red
    assert [d for d, _ in result.merged] == ["doc-red"]                # k = 1 after the merge (ReAG)
    assert [p.id for p in result.passages] == ["doc-red:habitat", "doc-red:diet"]
    assert all(p.stage == "fine" and p.score == result.merged[0][1] for p in result.passages)
    wide = MultilevelRetriever(documents(), ColourEncoders(), MultilevelConfig(k=1, merged_k=2, margin=0.0), grounder)
    (result,) = wide.retrieve([query()])
    assert [d for d, _ in result.merged] == ["doc-red", "doc-green"]
    assert [p.stage for p in result.passages] == ["fine", "fine", "coarse", "coarse"]
    both = passages_of([("doc-red", 0.5)], wide.index.by_id, coarse=[("doc-red", 0.2)], fine=[("doc-red", 0.5)])
    assert {p.stage for p in both} == {"both"}


def test_no_box_means_coarse_only_and_oracle_boxes_override():
    retriever = MultilevelRetriever(documents(), ColourEncoders(), MultilevelConfig(k=1, margin=0.0),
                                    FixedGrounder([None]))
    (result,) = retriever.retrieve([query()])
    assert result.fine == [] and result.box is None and [d for d, _ in result.merged] == ["doc-green"]
    (oracle,) = retriever.retrieve([query()], boxes=[(8, 8, 32, 32)])    # the grounder is not asked
    assert [d for d, _ in oracle.merged] == ["doc-red"]
    off = MultilevelRetriever(documents(), ColourEncoders(), MultilevelConfig(k=1, use_fine=False))
    assert off.retrieve([query()], boxes=[(8, 8, 32, 32)])[0].fine == []
    assert evidence_recall(oracle.merged, ["doc-red:diet"], retriever.index.by_id) == 1.0
    assert evidence_recall(result.merged, ["doc-red:diet"], retriever.index.by_id) == 0.0
    assert math.isnan(evidence_recall(result.merged, [], retriever.index.by_id))
    with pytest.raises(ValueError):
        retriever.retrieve([query()], boxes=[])


@pytest.mark.parametrize("bad", [dict(k=0), dict(k=2.5), dict(merged_k=0), dict(margin=-0.1),
                                 dict(subject_method="nltk")])
def test_bad_configs_raise(bad):
    with pytest.raises(ValueError):
        MultilevelConfig(**bad)
    assert MultilevelConfig.for_profile("cpu") == MultilevelConfig(k=5, subject_method="rules")


def test_evaluate_on_the_colour_world():
    class World:
        kbvqa_test = [query("q0"), query("q1")]

    retriever = MultilevelRetriever(documents(), ColourEncoders(), MultilevelConfig(k=1, margin=0.0))
    out = evaluate_multilevel(World(), retriever, grounder=FixedGrounder([None, (8, 8, 32, 32)]), ks=(1, 3))
    k1, k3 = out["rows"]
    assert (k1["coarse"], k1["coarse_fine"], k1["coarse_fine_oracle"], k1["fine_oracle"]) == (0.0, 0.5, 1.0, 1.0)
    assert k1["union"] == 0.5 and k1["passages_coarse"] == 2.0 and k1["passages_union"] == 3.0
    assert k3["coarse"] == 1.0 and k3["passages_coarse"] == 6.0
    assert out["grounding"] == {"mean_iou": 0.5, "iou50": 0.5, "box_rate": 0.5}
    assert out["subjects"]["demonstrative"] == 2
    with pytest.raises(ValueError):
        evaluate_multilevel(World(), retriever, ks=(0,))


def test_toy_world_with_the_shipped_encoders():
    from kbvqa.data import get_world

    torch.set_num_threads(1)
    world = get_world(0)

    class Oracle:
        def ground(self, images, questions, subjects=None):
            return [q.box for q in world.kbvqa_test[:len(images)]]      # queries are asked in order

    retriever = MultilevelRetriever(world.documents, config=MultilevelConfig(k=3))
    out = evaluate_multilevel(world, retriever, grounder=Oracle(), n=24, ks=(1, 3))
    assert out["grounding"]["mean_iou"] == 1.0 and out["subjects"]["equals_noun"] == 1.0
    for row in out["rows"]:
        assert row["coarse_fine"] == row["coarse_fine_oracle"]
        assert row["union"] >= max(row["coarse"], row["coarse_fine"])
    assert out["rows"][1]["coarse"] >= 0.8          # the encoders' card: image -> page R@5 = 0.985
    (result,) = retriever.retrieve(world.kbvqa_test[:1])
    assert len(result.passages) == 3 * 8 and result.fine == []          # no grounder: coarse only
