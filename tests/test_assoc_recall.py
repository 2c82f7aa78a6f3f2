"""Smoke tests of the associative-recall experiment: deterministic data, recoverable answers, a
learning signal in ~30 steps of a tiny model, and clear errors for bad configs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from kbvqa.experiments.assoc_recall import AssocRecallConfig, answer_accuracy, lr_at, pairs_at, parse_args, train
from kbvqa.experiments.assoc_recall.data import ATTRIBUTES, build_vocab, decode, make_batch


@pytest.mark.parametrize("task", ["mqar", "facts"])
def test_batches_are_deterministic_per_seed(task):
    vocab = build_vocab(task)
    a = make_batch(task, np.random.default_rng(7), 4, 5, vocab, min_pairs=2)
    b = make_batch(task, np.random.default_rng(7), 4, 5, vocab, min_pairs=2)
    c = make_batch(task, np.random.default_rng(8), 4, 5, vocab, min_pairs=2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert decode(a[0][0], vocab) != decode(c[0][0], vocab)


def test_mqar_answers_are_the_values_of_their_keys():
    vocab = build_vocab("mqar", 32, 32)
    input_ids, answer_mask = make_batch("mqar", np.random.default_rng(0), 8, 6, vocab, 32, 32)
    for row, mask in zip(input_ids.tolist(), answer_mask.tolist()):
        sep = row.index(vocab.index("|"))
        table = dict(zip(row[1:sep:2], row[2:sep:2]))
        assert len(table) == 6  # keys are distinct
        answers = [t for t, m in enumerate(mask) if m]
        assert len(answers) == 6 and all(t > sep for t in answers)
        for t in answers:
            assert row[t] == table[row[t - 1]]


def test_query_modes():
    vocab = build_vocab("mqar", 32, 32)
    kwargs = dict(num_keys=32, num_values=32)
    perm, _ = make_batch("mqar", np.random.default_rng(0), 16, 6, vocab, query_mode="permutation", **kwargs)
    rand, _ = make_batch("mqar", np.random.default_rng(0), 16, 6, vocab, query_mode="random", **kwargs)
    queried = lambda row: row[14::2]  # noqa: E731  keys of the query section (after '|' at 13)
    assert all(sorted(queried(r)) == sorted(r[1:13:2]) for r in perm.tolist())
    assert any(len(set(queried(r))) < 6 for r in rand.tolist())  # some key asked twice
    with pytest.raises(ValueError):
        make_batch("mqar", np.random.default_rng(0), 2, 6, vocab, query_mode="all", **kwargs)


def test_fact_answers_are_copied_from_the_passage():
    vocab = build_vocab("facts")
    input_ids, answer_mask = make_batch("facts", np.random.default_rng(1), 6, 6, vocab, min_pairs=3)
    questions = {tuple(q.split()[:2]): (f, q) for f, q, *_ in ATTRIBUTES.values()}
    for row, mask in zip(input_ids, answer_mask):
        text = decode(row, vocab)
        words = [vocab[i] for i in row.tolist()]
        spans, t = [], 0
        while t < len(words):
            if mask[t]:
                end = t
                while end < len(words) and mask[end]:
                    end += 1
                spans.append((t, end))
                t = end
            t += 1
        assert 3 <= len(spans) <= 6
        for start, end in spans:
            q_start = max(i for i in range(start) if words[i] == ".") + 1
            fact_tpl, question_tpl = questions[tuple(words[q_start:q_start + 2])]
            entity = words[q_start:start][question_tpl.split().index("{e}")]
            value = " ".join(words[start:end - 1])
            assert words[end - 1] == "."
            assert fact_tpl.format(e=entity, v=value) in text  # the fact is stated in the passage


def test_answer_accuracy_counts_whole_answers():
    input_ids = torch.tensor([[1, 5, 6, 7, 8, 9]])
    answer_mask = torch.tensor([[False, False, True, True, False, True]])
    logits = torch.full((1, 6, 12), -5.0)
    for t, tok in enumerate([5, 6, 7, 3, 9]):  # predicts 5 6 7 (3 instead of 8) 9
        logits[0, t, tok] = 5.0
    acc, token_acc = answer_accuracy(logits, input_ids, answer_mask)
    assert acc == 1.0 and token_acc == 1.0
    logits[0, 2, 7], logits[0, 2, 0] = -5.0, 5.0  # second answer token now wrong
    acc, token_acc = answer_accuracy(logits, input_ids, answer_mask)
    assert acc == 0.5 and token_acc == pytest.approx(2 / 3)


def test_schedules():
    cfg = AssocRecallConfig(steps=1000, warmup_steps=100, lr=1e-2, num_pairs=8, min_pairs=2,
                            curriculum_steps=500)
    assert lr_at(0, cfg) == pytest.approx(1e-4) and lr_at(99, cfg) == pytest.approx(1e-2)
    assert lr_at(999, cfg) == pytest.approx(1e-3, rel=1e-3)
    assert pairs_at(0, cfg) == (2, 2) and pairs_at(250, cfg) == (5, 2) and pairs_at(900, cfg) == (8, 2)


@pytest.mark.parametrize("bad", [dict(task="copy"), dict(loss_on="none"), dict(hidden_size=30),
                                 dict(lr=0.0), dict(min_pairs=9, num_pairs=8), dict(steps=0),
                                 dict(query_mode="sorted")])
def test_bad_configs_raise(bad):
    with pytest.raises(ValueError):
        AssocRecallConfig(**bad)


def test_cli_flags_reach_the_config():
    cfg = parse_args(["--lr", "0.002", "--steps", "7", "--task", "facts", "--loss_on", "all"])
    assert (cfg.lr, cfg.steps, cfg.task, cfg.loss_on) == (0.002, 7, "facts", "all")


@pytest.mark.parametrize("task,loss_on", [("mqar", "answers"), ("facts", "all")])
def test_loss_falls_in_a_few_steps(task, loss_on, tmp_path):
    cfg = AssocRecallConfig(task=task, loss_on=loss_on, num_pairs=4, num_keys=16, num_values=16,
                            hidden_size=32, num_layers=1, num_heads=2, steps=30, batch_size=8,
                            warmup_steps=5, lr=1e-2, eval_every=15, eval_sequences=16, seed=3)
    record = train(cfg, out_dir=tmp_path, progress=False)
    first, last = record["curve"][0], record["curve"][-1]
    assert last["train_loss"] < first["train_loss"] - 0.2
    assert (tmp_path / f"{cfg.name}.json").exists() and record["steps_done"] == 30


def test_assoc_recall_table_reads_every_committed_run(tmp_path):
    import json

    from kbvqa.models.from_scratch import ASSOC_RECALL_DIR, assoc_recall_table

    committed = sorted(ASSOC_RECALL_DIR.glob("*.json"))
    assert committed and assoc_recall_table().count("\n") == len(committed) + 1
    record = {"config": {"name": "x", "task": "kv", "min_pairs": 0, "num_pairs": 8, "hidden_size": 64,
                         "num_layers": 2, "lr": 1e-3, "loss_on": "answers"},
              "steps_done": 10, "wall_s": 60, "steps_per_s": 2.0, "final_acc": 0.5}
    (tmp_path / "x.json").write_text(json.dumps(record))
    assert assoc_recall_table(tmp_path).splitlines()[-1] == "| x | kv | 8 | 64x2 | 0.001 | answers | 10 | 1.0 | 2.0 | 0.500 | - |"
