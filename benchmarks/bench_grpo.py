"""Benchmark: one GRPO step of ours (``kbvqa.rl.grpo_step``) vs TRL 1.16's ``GRPOTrainer``.

Both run on the same tiny random Qwen2-VL (the default ``TinySpec``: width 128, 4 layers, 56 px
images), the same 2 image prompts x G = 4 completions of up to 16 tokens, temperature 1, no KL
(beta = 0), TRL with ``loss_type="dapo"``, fp32 on one CPU thread. Two numbers, as ratios TRL / ours
(absolute seconds are context only):

- a full step: sampling, rewards, advantages, log-probs, loss, backward, optimiser step. TRL's step
  is timed by a callback between ``on_step_begin`` and ``on_step_end`` of ``trainer.train()``
  (the same work: TRL generates inside ``training_step``); the first step of each is a warm-up.
- the loss + backward part alone on one prepared batch: our ``completion_logprobs(grad=True)`` +
  ``grpo_loss`` vs TRL's ``_compute_loss`` (fused LM head) on the same tensors.

A random model rarely samples EOS, so nearly every completion runs to the cap in both; the mean
completion length is printed so the step times compare like with like.

``rows()`` returns the two ratios with their times, ``main`` prints them.
Run: ``python benchmarks/bench_grpo.py`` (about a minute on 2 cores; TRL and ``datasets`` needed).
"""
from __future__ import annotations

import statistics
import tempfile
import time
import warnings

import torch
from _timing import print_rows, row

GROUP, MAX_NEW, STEPS = 4, 16, 6
TEXTS = ["what colour is the zorp ? the zorp is red . is the blick blue ?",
         "<think> </think> <answer> </answer> Yes No red blue", "red", "blue"]
QUESTIONS = ["what colour is the zorp ?", "is the blick blue ?"]


def _image():
    from PIL import Image

    return Image.new("RGB", (56, 56), (200, 20, 20))


def _tiny():
    from kbvqa.models import build_tiny_vlm

    return build_tiny_vlm("qwen2_vl", texts=TEXTS, seed=0, tie_embeddings=False)


def _reward(completions, **kwargs):
    """Rewards for TRL: the same R = R_task + 0.2 R_fmt as ours (gold "red")."""
    from kbvqa.reag.rewards import reag_reward

    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [reag_reward(t, ["red"]) for t in texts]


def ours_step_times():
    from kbvqa.data.schema import Query
    from kbvqa.reag.rewards import reag_grpo_rewards
    from kbvqa.rl import GRPOConfig, grpo_step, prepare_trainable

    vlm = _tiny()
    config = GRPOConfig(group_size=GROUP, prompts_per_step=2, max_new_tokens=MAX_NEW, lr=1e-5, progress=False)
    params = prepare_trainable(vlm, freeze_vision=True)
    optimizer = torch.optim.AdamW(params, lr=config.lr, weight_decay=0.0)
    prompts = [(_image(), q) for q in QUESTIONS]
    queries = [Query(id=f"q{i}", question=q, answers=["red"]) for i, q in enumerate(QUESTIONS)]
    times, lengths = [], []
    for step in range(STEPS):
        t0 = time.perf_counter()
        stats = grpo_step(vlm, optimizer, prompts, queries, config, **reag_grpo_rewards(), params=params, seed=step)
        times.append(time.perf_counter() - t0)
        lengths.append(stats.completion_tokens)
    return times[1:], statistics.mean(lengths)


def _trl_trainer(vlm, max_steps: int, callbacks=()):
    from datasets import Dataset
    from trl import GRPOConfig as TRLConfig
    from trl import GRPOTrainer

    chat = [[{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": q}]}] for q in QUESTIONS]
    data = Dataset.from_dict({"prompt": chat, "image": [_image()] * len(chat)})
    args = TRLConfig(output_dir=tempfile.mkdtemp(), loss_type="dapo", beta=0.0, num_generations=GROUP,
                     per_device_train_batch_size=GROUP * len(QUESTIONS), max_completion_length=MAX_NEW,
                     temperature=1.0, learning_rate=1e-5, max_steps=max_steps, use_cpu=True, bf16=False,
                     gradient_checkpointing=False, report_to="none", save_strategy="no", logging_steps=1,
                     disable_tqdm=True, seed=0)
    return GRPOTrainer(model=vlm.model, reward_funcs=[_reward], args=args, train_dataset=data,
                       processing_class=vlm.processor, callbacks=list(callbacks))


def trl_step_times():
    from transformers import PrinterCallback, TrainerCallback

    class Timer(TrainerCallback):
        def __init__(self):
            self.times, self.lengths, self.t0 = [], [], 0.0

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "completions/mean_length" in logs:
                self.lengths.append(float(logs["completions/mean_length"]))

        def on_step_begin(self, args, state, control, **kwargs):
            self.t0 = time.perf_counter()

        def on_step_end(self, args, state, control, **kwargs):
            self.times.append(time.perf_counter() - self.t0)

    timer = Timer()
    trainer = _trl_trainer(_tiny(), STEPS, [timer])
    trainer.remove_callback(PrinterCallback)
    trainer.train()
    return timer.times[1:], statistics.mean(timer.lengths or [float("nan")])


def loss_backward_times(repeats: int = 10):
    """(ours, TRL) seconds for log-probs + loss + backward on the same prepared batch."""
    from kbvqa.models.scoring import join_completions
    from kbvqa.rl import group_advantages, grpo_loss

    vlm = _tiny()
    trainer = _trl_trainer(vlm, 1)
    trainer.current_gradient_accumulation_steps = 1
    prompts = [(_image(), q) for q in QUESTIONS for _ in range(GROUP)]
    rows = vlm.generate(prompts[::GROUP], n=GROUP, max_new_tokens=MAX_NEW, seed=0, details=True).token_ids
    ids = [i for row in rows for i in row]
    adv = group_advantages(torch.arange(len(ids), dtype=torch.float32) % 3, GROUP)
    inputs, comp, mask, plen = join_completions(vlm, prompts, ids)
    trl_inputs = {"prompt_ids": inputs["input_ids"][:, :plen], "prompt_mask": inputs["attention_mask"][:, :plen],
                  "completion_ids": comp, "completion_mask": mask.long(), "advantages": adv,
                  "num_items_in_batch": mask.sum(), "num_images": [1] * len(ids),
                  "pixel_values": inputs["pixel_values"], "image_grid_thw": inputs["image_grid_thw"],
                  "mm_token_type_ids": inputs["mm_token_type_ids"]}
    vlm.model.train()

    def ours():
        vlm.model.zero_grad()
        scored = vlm.completion_logprobs(prompts, ids, grad=True)
        grpo_loss(scored.logprobs, scored.logprobs.detach(), adv, scored.mask).loss.backward()

    def theirs():
        vlm.model.zero_grad()
        trainer._compute_loss(vlm.model, trl_inputs).backward()

    ours(), theirs()   # warm-up
    times = {ours: [], theirs: []}
    for _ in range(repeats):   # interleaved, so a busy moment of the machine hits both
        for fn in (ours, theirs):
            t0 = time.perf_counter()
            fn()
            times[fn].append(time.perf_counter() - t0)
    out = [min(times[ours]), min(times[theirs])]
    return out


def rows(argv=None) -> list[dict]:
    warnings.filterwarnings("ignore")
    torch.set_num_threads(1)
    ours, ours_len = ours_step_times()
    trl, trl_len = trl_step_times()
    lb_ours, lb_trl = loss_backward_times()
    setting = f"{len(QUESTIONS)} prompts x G={GROUP}, <= {MAX_NEW} new tokens, tiny Qwen2-VL, 1 thread"
    return [
        row("full step, ours (best of 5)", min(ours), "s", note=f"mean length {ours_len:.1f} tokens", kind="time"),
        row("full step, TRL GRPOTrainer (best of 5)", min(trl), "s", note=f"mean length {trl_len:.1f} tokens",
            kind="time"),
        row("GRPO full step: TRL / ours", min(trl) / min(ours), "x", (">=", 1), f"> 1: ours faster; {setting}"),
        row("log-probs + loss + backward, ours", lb_ours, "s", note=f"{2 * GROUP} completions", kind="time"),
        row("log-probs + loss + backward, TRL", lb_trl, "s", note="fused LM head", kind="time"),
        row("GRPO loss + backward: TRL / ours", lb_trl / lb_ours, "x", (">=", 1), "> 1: ours faster"),
    ]


def main(argv=None) -> None:
    print_rows(rows(argv), "GRPO step (ReAG Eq. 6-7): ours vs TRL 1.16")


if __name__ == "__main__":
    main()
