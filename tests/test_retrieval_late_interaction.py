"""MaxSim (RCTS Eq. 4): the readable loop, the vectorised paths and their edge cases agree."""
import math

import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from kbvqa.retrieval.late_interaction import PaddedTokens, as_padded, maxsim, maxsim_loop, maxsim_matrix


def _tokens(gen, n, d):
    return F.normalize(torch.randn(n, d, generator=gen), dim=-1)


def test_loop_matches_a_hand_computed_value():
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    d = torch.tensor([[0.5, 0.5], [0.9, -0.2], [-1.0, 0.3]])
    # token 1: max(0.5, 0.9, -1.0) = 0.9; token 2: max(0.5, -0.2, 0.3) = 0.5
    assert maxsim_loop(q, d) == pytest.approx(1.4)
    assert float(maxsim(q, [d])[0]) == pytest.approx(1.4)
    assert float(maxsim_matrix([q], [d])[0, 0]) == pytest.approx(1.4)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), n_docs=st.integers(1, 6), n_queries=st.integers(1, 4),
       d=st.integers(1, 9), max_len=st.integers(1, 7))
def test_vectorised_paths_equal_the_loop_on_ragged_lengths(seed, n_docs, n_queries, d, max_len):
    gen = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, max_len + 1, (n_docs + n_queries,), generator=gen).tolist()
    docs = [_tokens(gen, n, d) for n in lengths[:n_docs]]
    queries = [_tokens(gen, n, d) for n in lengths[n_docs:]]
    expected = torch.tensor([[maxsim_loop(q, doc) for doc in docs] for q in queries], dtype=torch.float64)
    padded = PaddedTokens.from_list(docs)
    for i, q in enumerate(queries):
        torch.testing.assert_close(maxsim(q, padded).double(), expected[i], atol=1e-5, rtol=0)
    torch.testing.assert_close(maxsim_matrix(queries, docs).double(), expected, atol=1e-5, rtol=0)
    # the smallest possible blocks (one similarity each) give the same numbers
    torch.testing.assert_close(maxsim_matrix(queries, docs, max_elements=1).double(), expected, atol=1e-5, rtol=0)
    torch.testing.assert_close(maxsim(queries[0], padded, max_elements=1).double(), expected[0], atol=1e-5, rtol=0)


def test_padding_never_wins_a_max():
    # every real similarity is negative, so a zero padding row would win if it were not masked
    q = torch.tensor([[1.0, 0.0], [0.0, 1.0]])
    short = -torch.tensor([[0.6, 0.8]])
    long = -torch.tensor([[0.8, 0.6], [0.6, 0.8], [1.0, 0.0]])
    expected = maxsim_loop(q, short)
    assert expected < 0
    zero_padded = PaddedTokens(torch.stack([torch.cat([short, torch.zeros(2, 2)]), long]),
                               torch.tensor([[True, False, False], [True, True, True]]))
    for docs in (PaddedTokens.from_list([short, long]), zero_padded):
        assert float(maxsim(q, docs)[0]) == pytest.approx(expected)
        assert float(maxsim_matrix([q], docs)[0, 0]) == pytest.approx(expected)
    # query padding counts nothing either: a short query in a batch with a long one
    scores = maxsim_matrix([q[:1], q], [short])
    assert float(scores[0, 0]) == pytest.approx(maxsim_loop(q[:1], short))


def test_from_list_pads_by_repeating_a_real_token():
    a, b = torch.randn(1, 3), torch.randn(3, 3)
    padded = PaddedTokens.from_list([a, b])
    assert padded.tokens.shape == (2, 3, 3) and padded.lengths.tolist() == [1, 3]
    assert torch.equal(padded.tokens[0, 2], a[0])
    sub = padded.select([0])
    assert sub.tokens.shape == (1, 1, 3)


def test_scores_ignore_document_token_order_and_duplicates():
    gen = torch.Generator().manual_seed(1)
    q, d = _tokens(gen, 4, 8), _tokens(gen, 5, 8)
    shuffled = torch.cat([d[torch.randperm(5, generator=gen)], d[:2]])
    assert maxsim(q, [d, shuffled]).tolist() == pytest.approx([maxsim_loop(q, d)] * 2, abs=1e-5)


def test_empty_document_scores_minus_infinity_and_empty_query_raises():
    q, d = torch.eye(3)[:2], torch.eye(3)
    empty = torch.zeros(0, 3)
    assert maxsim_loop(q, empty) == -math.inf
    scores = maxsim(q, [d, empty])
    assert scores[1] == -math.inf and scores[0] == pytest.approx(2.0)
    assert maxsim_matrix([q], [empty, d])[0].tolist() == [-math.inf, pytest.approx(2.0)]
    assert maxsim(q, [empty]).tolist() == [-math.inf]
    for fn in (lambda: maxsim_loop(empty, d), lambda: maxsim(empty, [d]), lambda: maxsim_matrix([q, empty], [d])):
        with pytest.raises(ValueError, match="no tokens"):
            fn()


def test_bad_shapes_raise_clear_errors():
    with pytest.raises(ValueError, match="widths"):
        maxsim(torch.ones(2, 3), [torch.ones(2, 4)])
    with pytest.raises(ValueError, match="widths"):
        maxsim_loop(torch.ones(2, 3), torch.ones(2, 4))
    with pytest.raises(ValueError, match="widths"):
        PaddedTokens.from_list([torch.ones(1, 3), torch.ones(1, 4)])
    with pytest.raises(ValueError, match="2-D"):
        maxsim(torch.ones(3), [torch.ones(2, 3)])
    with pytest.raises(ValueError, match="needs dim"):
        PaddedTokens.from_list([])
    with pytest.raises(ValueError, match="max_elements"):
        maxsim_matrix([torch.ones(1, 2)], [torch.ones(1, 2)], max_elements=0)


def test_empty_collections_give_empty_results():
    q = torch.ones(2, 3)
    assert maxsim(q, PaddedTokens.from_list([], dim=3)).shape == (0,)
    assert maxsim_matrix([q], PaddedTokens.from_list([], dim=3)).shape == (1, 0)
    assert as_padded(torch.ones(2, 4, 3)).mask.all()


def test_float64_inputs_stay_float64():
    gen = torch.Generator().manual_seed(2)
    q, d = _tokens(gen, 3, 4).double(), _tokens(gen, 6, 4).double()
    assert maxsim(q, [d]).dtype == torch.float64
    assert float(maxsim(q, [d])[0]) == pytest.approx(maxsim_loop(q, d), abs=1e-12)
