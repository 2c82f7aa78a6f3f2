"""MOLT's composite reward (§3.2.2, Eq. 8-11) and the difficulty-aware table of App. D (Eq. 17-18).

R = lambda_1 R_fmt + lambda_2 R_proc + lambda_3 R_res (Eq. 8), lambda = 0.2 / 0.5 / 1.0:

- R_fmt (Eq. 9): 1 if ``parse_tournament`` finds the tags present, in order and nothing else
  (syntax only: the number of rounds is the process reward's business), else 0.
- R_proc (Eq. 10): sum over the output's rounds t of v_t (r_step + w_t r_bonus), r_step = 0.1,
  r_bonus = 0.2. v_t (the logical consistency check) is 1 while the chain holds: round t compares
  exactly {w_t, c_t}, the defender carried from round t-1 (the seed for t = 1) and the challenger
  the schedule names for round t, and its winner is one of the two. Once a round fails, v is 0
  for it and for every later round ("all subsequent process rewards are set to zero"); rounds
  beyond the schedule's N - 1 get v = 0. w_t is 1 when the ground-truth id is in round t's pair
  and wins it. The order inside ``<compare>`` is not checked (ours: the paper checks participation).
- R_res (Eq. 11): 1 if the ``<evidence>`` id is the ground truth.

Every function takes any string (never raises on model output); N < 2 or a negative weight raise
``ValueError``. ``difficulty_table`` computes App. D's table FROM ``molt_reward``: for each
ground-truth rank r* (1 = highest retrieval score) it writes the best transcript the schedule
allows and reports the wins it needs (Eq. 17: N - 1 for r* = N, else r*) and its rewards.

Leaves out: parsing (``kbvqa.parsers``), GRPO (``kbvqa.molt.grpo``).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kbvqa.molt.ladder import ORDERS, _check_ids, ladder_schedule
from kbvqa.molt.run import transcript_text
from kbvqa.parsers import TournamentRound, TournamentTranscript, parse_tournament

__all__ = ["MOLTReward", "MOLTRewardConfig", "chain_validity", "difficulty_table", "format_reward", "gt_wins",
           "molt_grpo_rewards", "molt_reward", "perfect_transcript", "process_reward", "result_reward"]


@dataclass(frozen=True)
class MOLTRewardConfig:
    """Weights of Eq. 8 and the process reward's step sizes (Eq. 10); the paper's values."""

    lambda_fmt: float = 0.2      # lambda_1, format reward weight
    lambda_proc: float = 0.5     # lambda_2, process reward weight
    lambda_res: float = 1.0      # lambda_3, result reward weight
    r_step: float = 0.1          # reward per round while the chain is valid
    r_bonus: float = 0.2         # extra reward per round the ground truth plays and wins

    def __post_init__(self):
        for name in ("lambda_fmt", "lambda_proc", "lambda_res", "r_step", "r_bonus"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or isinstance(value, bool) or not value >= 0:
                raise ValueError(f"{name} must be a number >= 0, got {value!r}")


@dataclass(frozen=True)
class MOLTReward:
    """The parts of Eq. 8 for one output."""

    fmt: float                   # R_fmt (Eq. 9)
    proc: float                  # R_proc (Eq. 10)
    res: float                   # R_res (Eq. 11)
    total: float                 # Eq. 8
    valid: tuple[int, ...]       # v_t per round of the output
    gt_won: tuple[int, ...]      # w_t per round of the output


def _transcript(output: str | TournamentTranscript) -> TournamentTranscript:
    return output if isinstance(output, TournamentTranscript) else parse_tournament(str(output or ""))


def _schedule(schedule: Sequence[str]) -> list[str]:

    return _check_ids(schedule)


def format_reward(output: str | TournamentTranscript) -> float:
    """R_fmt (Eq. 9): 1.0 if the XML syntax is valid, else 0.0."""
    return 1.0 if _transcript(output).format_valid else 0.0


def chain_validity(output: str | TournamentTranscript, schedule: Sequence[str]) -> list[int]:
    """v_t (Eq. 10) for each round of the output: 1 while every round so far compared the carried
    winner with the scheduled challenger and named one of them; 0 from the first failure on."""
    schedule = _schedule(schedule)
    out, defender, ok = [], schedule[0], True
    for t, r in enumerate(_transcript(output).rounds, start=1):
        ok = (ok and t < len(schedule) and r.pair is not None and defender is not None
              and set(r.pair) == {defender, schedule[t]} and r.pair[0] != r.pair[1] and r.winner in r.pair)
        out.append(int(ok))
        defender = r.winner if ok else None
    return out


def gt_wins(output: str | TournamentTranscript, gold_id: str) -> list[int]:
    """w_t (Eq. 10) per round: 1 if the ground truth takes part in round t and wins it."""
    gold = str(gold_id)
    return [int(r.pair is not None and gold in r.pair and r.winner == gold) for r in _transcript(output).rounds]


def process_reward(output: str | TournamentTranscript, schedule: Sequence[str], gold_id: str,
                   config: MOLTRewardConfig | None = None) -> float:
    """R_proc (Eq. 10) = sum_t v_t (r_step + w_t r_bonus)."""
    cfg = config or MOLTRewardConfig()
    steps = zip(chain_validity(output, schedule), gt_wins(output, gold_id))
    return float(sum(v * (cfg.r_step + w * cfg.r_bonus) for v, w in steps))


def result_reward(output: str | TournamentTranscript, gold_id: str) -> float:
    """R_res (Eq. 11): 1.0 if the ``<evidence>`` id is the ground truth."""
    return 1.0 if _transcript(output).evidence == str(gold_id) else 0.0


def molt_reward(output: str | TournamentTranscript, schedule: Sequence[str], gold_id: str,
                config: MOLTRewardConfig | None = None) -> MOLTReward:
    """Eq. 8 with its parts for one output (a string or a parsed transcript).

    Appendix: MOLT | Eq. 8-11 | tests/test_tournament_rewards.py::test_equations_8_to_11_by_hand | molt-eq8
    """
    cfg = config or MOLTRewardConfig()
    transcript = _transcript(output)
    valid, won = chain_validity(transcript, schedule), gt_wins(transcript, gold_id)
    fmt, res = format_reward(transcript), result_reward(transcript, gold_id)
    proc = float(sum(v * (cfg.r_step + w * cfg.r_bonus) for v, w in zip(valid, won)))
    total = cfg.lambda_fmt * fmt + cfg.lambda_proc * proc + cfg.lambda_res * res
    return MOLTReward(fmt, proc, res, total, tuple(valid), tuple(won))


def perfect_transcript(schedule: Sequence[str], gold_id: str) -> TournamentTranscript:
    """The best output the schedule allows, written out as XML and parsed back: the chain always
    carried, the ground truth winning every round it plays; rounds before it enters go to the
    challenger."""
    schedule, gold = _schedule(schedule), str(gold_id)
    if gold not in schedule:
        raise ValueError(f"gold id {gold!r} is not in the schedule {schedule}")
    rounds, defender = [], schedule[0]
    for challenger in schedule[1:]:
        winner = gold if gold in (defender, challenger) else challenger
        rounds.append(TournamentRound((defender, challenger), "", winner, True))
        defender = winner
    return parse_tournament(transcript_text(rounds, defender))


def difficulty_table(n: int = 5, order: str = "weak_to_strong", config: MOLTRewardConfig | None = None) -> list[dict]:
    """App. D / Fig. 4 / Eq. 17-18 computed from ``molt_reward``: one row per ground-truth rank
    r* = 1..n (1 = highest retrieval score) with the round it enters, the wins it needs, and the
    maximum R_proc and R_total (perfect format, valid chain, right evidence)."""
    if not isinstance(n, int) or n < 2:
        raise ValueError(f"a ladder tournament needs N >= 2 candidates, got {n!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    ids = [f"c{r}" for r in range(1, n + 1)]     # c1 strongest ... cN weakest
    schedule = ladder_schedule(ids, order)
    rows = []
    for rank, gold in enumerate(ids, start=1):
        best = perfect_transcript(schedule, gold)
        reward = molt_reward(best, schedule, gold, config)
        rows.append({"gt_rank": rank, "enters_round": max(1, schedule.index(gold)),
                     "wins_needed": sum(reward.gt_won), "max_process_reward": round(reward.proc, 10),
                     "max_total_reward": round(reward.total, 10)})
    return rows


def molt_grpo_rewards(config: MOLTRewardConfig | None = None) -> dict:
    """MOLT's reward functions for ``kbvqa.rl.grpo_train`` (keyword arguments): R_fmt, R_proc and
    R_res of Eq. 8 scored against each task's schedule and ground-truth id (a ``MOLTTask``), with
    weights lambda_1..3, so the total is Eq. 8."""
    cfg = config or MOLTRewardConfig()

    def part(name):
        def score(texts, tasks):
            return [getattr(molt_reward(x, t.schedule, t.gold_id, cfg), name) for x, t in zip(texts, tasks)]
        return score

    return {"reward_funcs": {"format_reward": part("fmt"), "process_reward": part("proc"),
                             "result_reward": part("res")},
            "reward_weights": {"format_reward": cfg.lambda_fmt, "process_reward": cfg.lambda_proc,
                               "result_reward": cfg.lambda_res}}
