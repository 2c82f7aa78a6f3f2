"""Helpers of the MOLT chapters (kbvqa.molt.analysis, kbvqa.molt.candidates):
recall curves and gold ranks by hand, the comparator model driving the package's three runs, the
rounds the ground truth must win per schedule, the exact survival probability against a
simulation, and a model judge's comparison error read from its records."""
from __future__ import annotations

import random

import pytest

from kbvqa.data.schema import Query
from kbvqa.molt.analysis import ComparatorVLM, gold_ranks, ladder_survival, recall_curves, rounds_played
from kbvqa.molt.candidates import CandidateSet
from kbvqa.molt.ladder import Candidate, ladder_schedule
from kbvqa.molt.run import run_iterative, run_one_pass, run_one_shot


def _set(docs, fused, passages):
    return CandidateSet([(d, 1.0) for d in docs], [(d, 1.0) for d in fused],
                        [Candidate(str(i + 1), p, None, p.split(":")[0], p) for i, p in enumerate(passages)])


def test_recall_curves_and_ranks_by_hand():
    q = Query("q", "?", ["a"], gold_doc_ids=["g"], evidence_ids=["g:1"])
    sets = [_set(["x", "g", "y"], ["g", "x"], ["g:1", "x:1"]), _set(["x", "y", "z"], ["x", "y"], ["x:1", "y:1"])]
    assert gold_ranks([q, q], sets) == {"coarse": [2, None], "fused": [1, None], "passage": [1, None]}
    curves = recall_curves([q, q], sets, ks=(1, 2, 5))
    assert curves == {"coarse": [0.0, 0.5, 0.5], "fused": [0.5, 0.5, 0.5], "passage": [0.5, 0.5, 0.5]}
    with pytest.raises(ValueError):
        recall_curves([q], sets)
    with pytest.raises(ValueError):
        recall_curves([q, q], sets, ks=(0,))


def candidates():
    return [Candidate(str(i), f"paragraph number {i}", None, f"d{i}", f"d{i}:0", float(10 - i)) for i in range(1, 6)]


def prefer(best: str):
    """A comparator: ``best`` wins where it plays, else the lower id wins."""
    def compare(first, second):
        ids = (first.id, second.id)
        winner = best if best in ids else min(ids)
        return winner, f"{winner} looks right"
    return compare


@pytest.mark.parametrize("best", ["1", "3", "5"])
def test_comparator_model_drives_the_three_runs_to_the_same_choice(best):
    cands = candidates()
    model = ComparatorVLM(cands, prefer(best))
    one = run_one_pass(model, "q?", None, cands, short=True)
    it = run_iterative(model, "q?", None, cands, short=True)
    shot = run_one_shot(model, "q?", None, cands, short=True)
    assert one.chosen == it.chosen == shot.chosen == best
    assert one.transcript.format_valid and one.model_calls == 1 and it.model_calls == 4
    assert [r.pair for r in one.transcript.rounds] == [r.pair for r in it.transcript.rounds]
    assert [r.winner for r in one.transcript.rounds] == [r.winner for r in it.transcript.rounds]
    assert one.transcript.rounds[0].pair == ("5", "4")                 # weak-to-strong: seed c_N = "5"
    assert model.calls == 1 + 4 + 1


def test_comparator_model_answers_unknown_prompts_with_an_empty_string():
    model = ComparatorVLM(candidates(), prefer("1"))
    chat = [{"role": "user", "content": [{"type": "text", "text": "nothing to compare"}]}]
    assert model.generate([chat]) == [[""]]


def test_rounds_played_per_schedule():
    ids = ["1", "2", "3", "4", "5"]
    w2s, s2w = ladder_schedule(ids, "weak_to_strong"), ladder_schedule(ids, "strong_to_weak")
    assert [rounds_played(w2s, g) for g in ids] == [1, 2, 3, 4, 4]     # Eq. 17: r* wins, N - 1 for r* = N
    assert [rounds_played(s2w, g) for g in ids] == [4, 4, 3, 2, 1]
    with pytest.raises(ValueError):
        rounds_played(["1"], "1")
    with pytest.raises(ValueError):
        rounds_played(ids, "9")


def _simulate(rank_probs, eps, order, trials, rng):
    n, wins = len(rank_probs), 0
    ids = [str(r) for r in range(1, n + 1)]
    for trial in range(trials):
        u, gold = rng.random(), None
        for r, p in zip(ids, rank_probs):
            u -= p
            if u < 0:
                gold = r
                break
        if gold is None:
            continue
        schedule = ladder_schedule(ids, order, seed=trial)
        winner = schedule[0]
        for challenger in schedule[1:]:
            if gold in (winner, challenger):
                lost = rng.random() < eps
                winner = (challenger if winner == gold else winner) if lost else gold
            else:
                winner = rng.choice([winner, challenger])
        wins += winner == gold
    return wins / trials


@pytest.mark.parametrize("order", ["weak_to_strong", "strong_to_weak", "random"])
def test_survival_formula_matches_a_simulation(order):
    probs = [0.6, 0.2, 0.1, 0.05, 0.03]               # 2 % of the golds missed the top 5
    exact = ladder_survival(probs, 0.2, order)
    assert abs(exact - _simulate(probs, 0.2, order, 6000, random.Random(0))) < 0.03
    assert ladder_survival(probs, 0.0, order) == pytest.approx(sum(probs))


def test_weak_to_strong_protects_a_top_ranked_gold():
    probs = [0.8, 0.1, 0.05, 0.03, 0.02]
    w2s, s2w, rnd = (ladder_survival(probs, 0.1, o) for o in ("weak_to_strong", "strong_to_weak", "random"))
    assert w2s > rnd > s2w
    for bad in ({"rank_probs": [1.0], "eps": 0.1}, {"rank_probs": probs, "eps": 1.5},
                {"rank_probs": probs, "eps": 0.1, "order": "sideways"}):
        with pytest.raises(ValueError):
            ladder_survival(**bad)


def test_committed_candidate_results_are_consistent():
    from kbvqa.molt.candidates import load_results

    try:
        results = load_results()
    except FileNotFoundError:
        pytest.skip("no committed results")
    recall, ks = results["recall"], results["ks"]
    assert ks == sorted(ks) and len(recall["coarse"]) == len(ks)
    for stage in ("coarse", "fused", "passage"):
        assert all(a <= b for a, b in zip(recall[stage], recall[stage][1:]))      # curves never fall
    assert recall["fused"][-1] == recall["coarse"][-1]          # fusion reorders the top-K, loses nothing
    ranks = results["gold_ranks"]["fused"]
    assert sum(r == 1 for r in ranks) / len(ranks) == pytest.approx(recall["fused"][0])
    assert {"git_commit", "seed", "date", "machine"} <= set(results["provenance"])


def _record(rank, wins, valid=True, correct=None, n=5, order="weak_to_strong"):
    from kbvqa.molt.analysis import rounds_played
    from kbvqa.molt.ladder import ladder_schedule

    needed = rounds_played(ladder_schedule([str(r) for r in range(1, n + 1)], order), str(rank))
    return {"gold_rank": rank, "gt_rounds": wins, "chain_valid": valid,
            "correct": (wins == needed) if correct is None else correct}


def test_comparison_error_by_hand():
    from kbvqa.molt.analysis import comparison_error, ladder_survival

    # weak-to-strong, N = 5: rank 1 plays 1 round, rank 3 plays 3, rank 5 (the seed) plays 4
    records = [_record(1, 1), _record(3, 1), _record(5, 4), _record(2, 0, valid=False, correct=False)]
    out = comparison_error(records)
    assert (out["consistent"], out["played"], out["lost"]) == (3, 1 + 2 + 4, 1)
    assert out["eps"] == 1 / 7 and out["observed"] == 0.5
    assert out["predicted"] == ladder_survival([0.25, 0.25, 0.25, 0, 0.25], 1 / 7, "weak_to_strong")
    none = comparison_error([_record(2, 0, valid=False, correct=False)])
    assert none["eps"] is None and none["predicted"] is None and none["observed"] == 0.0
    with pytest.raises(ValueError, match="order"):
        comparison_error(records, order="random")
    with pytest.raises(ValueError, match="gold_rank"):
        comparison_error([{"gold_rank": 6, "gt_rounds": 0, "chain_valid": True, "correct": False}])
    with pytest.raises(ValueError, match="no records"):
        comparison_error([])


@pytest.mark.parametrize("order", ["weak_to_strong", "strong_to_weak"])
def test_comparison_error_recovers_a_simulated_judges_error(order):
    """A judge that loses each comparison the gold plays with probability 0.2 and keeps every chain:
    the measured eps is 0.2 and the closed form predicts the observed accuracy."""
    import random

    from kbvqa.molt.analysis import comparison_error, rounds_played
    from kbvqa.molt.ladder import ladder_schedule

    rng, schedule, records = random.Random(0), ladder_schedule([str(r) for r in range(1, 6)], order), []
    for _ in range(4000):
        rank = rng.choice([1, 1, 1, 2, 2, 3, 4, 5])
        needed, wins = rounds_played(schedule, str(rank)), 0
        while wins < needed and rng.random() > 0.2:
            wins += 1
        records.append(_record(rank, wins, order=order))
    out = comparison_error(records, order)
    assert abs(out["eps"] - 0.2) < 0.015 and abs(out["predicted"] - out["observed"]) < 0.02


def test_gold_win_rates_split_the_challengers_entry_from_its_defences():
    from kbvqa.molt.analysis import gold_win_rates

    # weak-to-strong, N = 5: rank 1 enters round 4, rank 3 round 2 (then defends rounds 3-4), rank 5 is the seed
    records = [_record(1, 0), _record(1, 1), _record(3, 2), _record(3, 0), _record(5, 4), _record(5, 1),
               _record(2, 0, valid=False, correct=True)]
    out = gold_win_rates(records)
    assert out["challenger"] == {2: [1, 2], 4: [1, 2]}
    # rank 3 won round 2 then round 3, lost round 4: defended 2, won 1; the seeds defended 4 + 2, won 4 + 1
    assert out["defender"] == [1 + 5, 2 + 6] and out["broken"] == [1, 1]
    flipped = gold_win_rates([_record(1, 4, order="strong_to_weak")], order="strong_to_weak")
    assert flipped["challenger"] == {} and flipped["defender"] == [4, 4]
    with pytest.raises(ValueError, match="order"):
        gold_win_rates(records, order="random")
    with pytest.raises(ValueError, match="gold_rank"):
        gold_win_rates([{"gold_rank": 0, "gt_rounds": 0, "chain_valid": True, "correct": False}])


def test_defender_win_share_reads_the_incumbent_off_the_chain():
    from kbvqa.molt.analysis import defender_win_share

    def rnd(a, b, w):
        return f"<round>\n<compare>[{a}] vs [{b}]</compare>\n<think>x</think>\n<winner>[{w}]</winner>\n</round>\n"

    keeps = rnd(3, 1, 3) + rnd(3, 4, 3) + rnd(2, 3, 2) + "<evidence>[2]</evidence>"   # the pair written either way
    broken = rnd(3, 1, 1) + rnd(2, 4, 2) + rnd(2, 5, 9)         # round 2 lacks the winner, round 3's is not in the pair
    out = defender_win_share([keeps, broken, "no rounds at all"])
    assert out == {"defender": 1 + 1 + 0, "rounds": 3 + 1, "share": 0.5}
    assert defender_win_share(["", None])["share"] is None


@pytest.mark.parametrize("order", ["weak_to_strong", "strong_to_weak", "random"])
def test_role_survival_is_ladder_survival_when_both_sides_win_alike(order):
    from kbvqa.molt.analysis import ladder_survival, role_survival

    shares = [0.5, 0.2, 0.15, 0.1, 0.05]
    assert role_survival(shares, 0.8, 0.8, order) == pytest.approx(ladder_survival(shares, 0.2, order))
    assert role_survival(shares, {1: 0.7, 2: 0.7, 3: 0.7, 4: 0.7}, 0.7, order) == \
        pytest.approx(ladder_survival(shares, 0.3, order))


def test_role_survival_by_hand_and_a_defender_bias_favours_strong_to_weak():
    from kbvqa.molt.analysis import role_survival

    # N = 3, weak-to-strong plays [3, 2, 1]: rank 1 enters round 2, rank 2 round 1 then defends, rank 3 defends twice
    c, d = {1: 0.4, 2: 0.2}, 0.9
    assert role_survival([1, 0, 0], c, d) == pytest.approx(0.2)
    assert role_survival([0, 1, 0], c, d) == pytest.approx(0.4 * 0.9)
    assert role_survival([0, 0, 1], c, d) == pytest.approx(0.81)
    assert role_survival([1, 0, 0], c, d, "strong_to_weak") == pytest.approx(0.81)      # the seed defends
    shares = [0.5, 0.2, 0.15, 0.1, 0.05]
    assert role_survival(shares, 0.2, 0.9, "strong_to_weak") > role_survival(shares, 0.2, 0.9, "weak_to_strong")
    with pytest.raises(ValueError, match="per round"):
        role_survival(shares, {1: 0.5}, 0.9)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        role_survival(shares, 1.5, 0.9)
    with pytest.raises(ValueError, match="order"):
        role_survival(shares, 0.5, 0.9, "sideways")


def _simulated_records(challenger_win: float, defender_win: float, n_records: int = 400, seed: int = 0) -> list[dict]:
    """One-pass records of a judge whose verdicts depend only on the ground truth's role (weak-to-
    strong over N = 5, gold rank uniform): the fields ``gold_win_rates`` reads."""
    import random as _random

    from kbvqa.molt.analysis import rounds_played
    from kbvqa.molt.ladder import ladder_schedule

    rng = _random.Random(seed)
    schedule = ladder_schedule([str(r) for r in range(1, 6)], "weak_to_strong")
    out = []
    for _ in range(n_records):
        rank = rng.randint(1, 5)
        position, needed = schedule.index(str(rank)), rounds_played(schedule, str(rank))
        wins = 0
        for k in range(needed):
            p = challenger_win if (k == 0 and position > 0) else defender_win
            if rng.random() >= p:
                break
            wins += 1
        out.append({"gold_rank": rank, "gt_rounds": wins, "chain_valid": True, "correct": wins == needed})
    return out


def test_role_gate_fails_a_judge_that_keeps_the_incumbent_and_passes_one_that_reads():
    from kbvqa.molt.analysis import role_gate

    biased = role_gate(_simulated_records(0.3, 0.9))
    assert not biased["passed"] and biased["difference"] < -0.4 and biased["high"] < 0
    fair = role_gate(_simulated_records(0.8, 0.8))
    assert fair["passed"] and abs(fair["difference"]) <= 0.1 and fair["low"] <= 0 <= fair["high"]
    assert role_gate(_simulated_records(0.8, 0.8), seed=0) == fair            # seeded
    with pytest.raises(ValueError):
        role_gate([])
