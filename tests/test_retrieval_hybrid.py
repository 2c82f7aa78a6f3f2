"""Hybrid retrieval (RCTS §3.3): the two-stage index, modes, self-exclusion, ties, the toy-world
evaluation and real ScienceQA samples."""
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F
from _samples import sample

from kbvqa.retrieval import (
    EncodedItems,
    HybridConfig,
    HybridIndex,
    encode_items,
    evaluate_rcts_retrieval,
    maxsim_loop,
    precision_at_k,
    relevant_ids,
)


def _random_items(seed: int, n: int, d: int = 8, prefix: str = "kb") -> EncodedItems:
    gen = torch.Generator().manual_seed(seed)
    text = [F.normalize(torch.randn(int(torch.randint(1, 5, (1,), generator=gen)), d, generator=gen), dim=-1)
            for _ in range(n)]
    image = [F.normalize(torch.randn(3, d, generator=gen), dim=-1) for _ in range(n)]
    pooled = lambda toks: F.normalize(torch.stack([t.mean(0) for t in toks]), dim=-1)  # noqa: E731
    return EncodedItems([f"{prefix}{i}" for i in range(n)], text, image, pooled(text), pooled(image))


@pytest.mark.parametrize("mode", ["text", "image", "hybrid"])
def test_exact_search_ranks_by_the_loop_scores(mode):
    kb, queries = _random_items(0, 30), _random_items(1, 4, prefix="q")
    index = HybridIndex(kb, HybridConfig(mode=mode, first_stage=0))
    for q, result in zip(queries.tokens(mode), index.search_encoded(queries, k=7)):
        loop = [maxsim_loop(q, doc) for doc in kb.tokens(mode)]
        expected = sorted(range(30), key=lambda i: (-loop[i], i))[:7]
        assert result.indices == expected
        assert result.scores == pytest.approx([loop[i] for i in expected], abs=1e-5)
        assert result.ids == [f"kb{i}" for i in expected]
        assert index.search(q, k=7).indices == expected


def test_modes_use_their_own_tokens():
    kb, queries = _random_items(2, 20), _random_items(3, 3, prefix="q")
    rankings = {m: [r.indices for r in HybridIndex(kb, HybridConfig(mode=m, first_stage=0)).search_encoded(queries, 5)]
                for m in ("text", "image", "hybrid")}
    assert rankings["text"] != rankings["image"] and rankings["hybrid"] not in (rankings["text"], rankings["image"])
    hybrid_tokens = kb.tokens("hybrid")
    assert all(len(h) == len(t) + len(i) for h, t, i in zip(hybrid_tokens, kb.text_tokens, kb.image_tokens))


def test_first_stage_covering_the_whole_base_equals_exact_search():
    kb, queries = _random_items(4, 25), _random_items(5, 5, prefix="q")
    exact = HybridIndex(kb, HybridConfig(first_stage=0)).search_encoded(queries, k=6)
    full = HybridIndex(kb, HybridConfig(first_stage=25)).search_encoded(queries, k=6)
    assert [r.indices for r in exact] == [r.indices for r in full]
    # a narrow first stage may only lose items, and every score is still the exact Eq. 4 score
    narrow = HybridIndex(kb, HybridConfig(first_stage=3)).search_encoded(queries, k=6)
    assert all(len(r.ids) == 6 for r in narrow)  # k > first_stage: k candidates are fetched


def test_without_rescoring_the_ranking_is_pooled_cosine():
    kb, queries = _random_items(8, 40), _random_items(9, 3, prefix="q")
    index = HybridIndex(kb, HybridConfig(mode="image", first_stage=8, rescore=False))
    cosines = queries.pooled("image") @ kb.pooled("image").T
    for row, result in zip(cosines, index.search_encoded(queries, k=12)):   # k > first_stage: k come back
        expected = sorted(range(40), key=lambda i: (-float(row[i]), i))[:12]
        assert result.indices == expected
        assert result.scores == pytest.approx([float(row[i]) for i in expected], abs=1e-5)
    with pytest.raises(ValueError, match="first_stage > 0"):
        HybridConfig(first_stage=0, rescore=False)


def test_the_query_itself_is_dropped_and_k_items_remain():
    kb = _random_items(6, 12)
    queries = EncodedItems(kb.ids[:3], kb.text_tokens[:3], kb.image_tokens[:3], kb.text_pooled[:3], kb.image_pooled[:3])
    for first_stage in (0, 4):
        index = HybridIndex(kb, HybridConfig(first_stage=first_stage))
        kept = index.search_encoded(queries, k=4, exclude_self=False)
        assert [r.ids[0] for r in kept] == ["kb0", "kb1", "kb2"]   # an item's best match is itself
        dropped = index.search_encoded(queries, k=4)
        assert all(q not in r.ids and len(r.ids) == 4 for q, r in zip(queries.ids, dropped))
        assert [r.ids for r in dropped] == [r.ids[1:5] for r in index.search_encoded(queries, 5, exclude_self=False)]
        single = index.search(kb.tokens("hybrid")[0], k=4, query_pooled=kb.pooled("hybrid")[0], exclude_ids=["kb0"])
        assert single.ids == dropped[0].ids


def test_ties_are_broken_by_knowledge_base_position():
    tok = F.normalize(torch.ones(2, 4), dim=-1)
    same = EncodedItems([f"kb{i}" for i in range(5)], [tok] * 5, [tok] * 5, F.normalize(torch.ones(5, 4), dim=-1),
                        F.normalize(torch.ones(5, 4), dim=-1))
    for first_stage in (0, 5):
        index = HybridIndex(same, HybridConfig(first_stage=first_stage))
        assert index.search(tok, k=5).ids == ["kb0", "kb1", "kb2", "kb3", "kb4"]


def test_bad_arguments_raise_clear_errors():
    kb = _random_items(7, 5)
    with pytest.raises(ValueError, match="mode"):
        HybridConfig(mode="audio")
    with pytest.raises(ValueError, match="first_stage"):
        HybridConfig(first_stage=-1)
    index = HybridIndex(kb)
    with pytest.raises(ValueError, match="k must"):
        index.search(kb.text_tokens[0], k=0)
    with pytest.raises(ValueError, match="non-empty"):
        index.search(torch.zeros(0, 8), k=1)
    with pytest.raises(ValueError, match="unique"):
        HybridIndex(EncodedItems(["a", "a"], kb.text_tokens[:2], kb.image_tokens[:2], kb.text_pooled[:2],
                                 kb.image_pooled[:2]))
    with pytest.raises(ValueError):
        precision_at_k(["a"], {"a"}, 0)


class _PublicOnlyEncoder:
    """An encoder with only the public API; counts how many texts it encodes."""

    dim = 4

    def __init__(self):
        self.n_texts = 0

    def encode_text(self, texts):
        self.n_texts += len(texts)
        return [F.normalize(torch.ones(len(t.split()), 4), dim=-1) for t in texts]

    def encode_image(self, images):
        return [F.normalize(torch.ones(2, 4), dim=-1) for _ in images]

    def pooled(self, texts=None, images=None):
        return F.normalize(torch.ones(len(texts if texts is not None else images), 4), dim=-1)


def test_encode_items_dedups_texts_and_handles_items_without_image():
    from PIL import Image

    im = Image.new("RGB", (8, 8))
    items = [SimpleNamespace(id=str(i), question="what is it" if i % 2 else "which one", image=im if i < 3 else None)
             for i in range(5)]
    enc = _PublicOnlyEncoder()
    encoded = encode_items(enc, items)
    assert enc.n_texts == 2                                   # two distinct questions, encoded once each
    assert [len(t) for t in encoded.text_tokens] == [2, 3, 2, 3, 2]
    assert [len(t) for t in encoded.image_tokens] == [2, 2, 2, 0, 0]
    assert float(encoded.image_pooled[4].norm()) == 0.0
    assert [len(t) for t in encoded.tokens("hybrid")] == [4, 5, 4, 3, 2]


def test_one_pass_encoding_equals_the_public_encoder_api(small_toy):
    world, enc = small_toy
    items = world.mc_kb[:6]
    fast = encode_items(enc, items)                     # one forward pass per modality
    texts, images = [e.question for e in items], [e.image for e in items]
    for got, want in ((fast.text_tokens, enc.encode_text(texts)), (fast.image_tokens, enc.encode_image(images))):
        assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(got, want))
    assert torch.allclose(fast.text_pooled, enc.pooled(texts=texts), atol=1e-5)
    assert torch.allclose(fast.image_pooled, enc.pooled(images=images), atol=1e-5)
    assert torch.allclose(fast.pooled("hybrid"), enc.pooled(texts=texts, images=images), atol=1e-5)


@pytest.fixture(scope="module")
def small_toy():
    from kbvqa.data import get_world
    from kbvqa.models.encoders import load_encoders

    torch.set_num_threads(1)
    world = get_world(0)
    return SimpleNamespace(mc_kb=world.mc_kb[:384], mc_test=world.mc_test[:24]), load_encoders()


def test_toy_world_hybrid_retrieval_finds_answer_carrying_examples(small_toy):
    world, enc = small_toy
    ev = evaluate_rcts_retrieval(world, enc, ks=(1, 5, 10), first_stage=32, pooled_baseline=True)
    assert ev.n_queries == 24 and len(ev.results["hybrid pooled"]) == 24
    assert set(ev.scores) == {"text", "image", "hybrid", "text pooled", "image pooled", "hybrid pooled"}
    for by_rel in ev.scores.values():
        for rel in ("answer", "rule"):   # Recall@K grows with K; "same rule" is the looser relevance
            assert by_rel[rel]["R@1"] <= by_rel[rel]["R@5"] <= by_rel[rel]["R@10"]
            assert by_rel["answer"]["R@5"] <= by_rel["rule"]["R@5"]
    # chance: about 384 / 230 relevant examples per query, so a random top 5 holds one ~4% of the time
    assert ev.scores["hybrid"]["answer"]["R@5"] >= 0.5
    q = world.mc_test[0]
    relevant = relevant_ids(q, world.mc_kb)
    assert all(world.mc_kb[int(i.split("-")[1])].meta["key_value"] == q.meta["key_value"] for i in relevant)
    assert "hybrid pooled" in ev.table() and len(ev.table().splitlines()) == 7
    from kbvqa.viz.retrieval import draw_maxsim_matrix, draw_recall_at_k, draw_retrieved

    top = ev.results["hybrid"][0]
    figures = [draw_recall_at_k(ev), draw_retrieved(q, [world.mc_kb[i] for i in top.indices[:3]], top.scores[:3],
                                                    [i in relevant for i in top.ids[:3]]),
               draw_maxsim_matrix(torch.eye(3), torch.eye(3)[:2], n_query_text=1, n_doc_text=1)]
    assert len(figures[0].axes) == 2 and len(figures[1].axes) == 4
    titled = draw_retrieved(q, [world.mc_kb[i] for i in top.indices[:3]], title="hybrid: top 3")
    assert titled._suptitle.get_text() == "hybrid: top 3" and figures[1]._suptitle is None
    import matplotlib.pyplot as plt

    assert not plt.get_fignums()   # every figure was closed (shown once by a notebook)
    with pytest.raises(ValueError):
        draw_retrieved(q, [], None, None)


def test_scienceqa_samples_text_and_hybrid_queries_and_self_exclusion():
    from kbvqa.data.datasets import load_dataset
    from kbvqa.models.encoders import load_encoders

    root = sample("scienceqa")
    test, kb = load_dataset("scienceqa", "eval", root=root), load_dataset("scienceqa", "kb", root=root)
    enc = load_encoders()
    queries = [q for q in test if q.image is not None][:4]
    encoded = encode_items(enc, kb + queries)                 # the queries are in this knowledge base
    q_encoded = encode_items(enc, queries)
    assert all(len(t) == 0 for t in encoded.image_tokens[:len(kb)])   # KB images are not in the samples
    index = HybridIndex(encoded, HybridConfig(mode="hybrid", first_stage=16))
    with_self = index.search_encoded(q_encoded, k=3, exclude_self=False)
    assert [r.ids[0] for r in with_self] == [q.id for q in queries]
    without = index.search_encoded(q_encoded, k=3)
    assert all(q.id not in r.ids and len(r.ids) == 3 for q, r in zip(queries, without))
    assert all(r.scores == sorted(r.scores, reverse=True) for r in without)
    text_index = HybridIndex(encoded, HybridConfig(mode="text", first_stage=0))
    assert text_index.search_encoded(q_encoded, k=1, exclude_self=False)[0].ids == [queries[0].id]
