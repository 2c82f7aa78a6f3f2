"""The shipped tiny checkpoint's two-stage recipe, and the command line that retrains it.

Stage 1, *the mixture* (``TinyTrainConfig()``, the defaults): 4,500 steps from scratch on all the
pretraining tasks (``pretrain_mix.DEFAULT_WEIGHTS``, then the ``tiny.SHIPPED_PHASES`` curriculum).
It learns every output format, but answers KB-VQA questions from memory: with the gold passage
alone it was right 4.5 % of the time (model card of stage 1, kept in ``curves.json`` under
``previous_stages``).

Stage 2, *reading* (``STAGE_2``): 3,500 more steps from stage 1's weights with the counterfactual
KB-VQA task (``pretrain_counterfactual``: the passage's value is swapped for another creature's,
in the passage and the target, so memory cannot help) as the largest share, the lookup drills,
and a smaller share of every other task so the formats are kept; at most 2 passages per prompt
until step 1,500 (first learn to read one passage), then up to 6; language-model loss on the
prompt text at weight 0.5.

Command line (1 thread; state how long in the model card)::

    python -m kbvqa.models.tiny_recipe --stage 1 --out data/cache/tiny_stage1
    python -m kbvqa.models.tiny_recipe --stage 2 --init data/cache/tiny_stage1 --out data/tiny_vlm

``--minutes`` bounds one invocation and ``--resume`` continues it (the optimiser state lives in
``data/cache/``), so a long stage can run as several shorter jobs and stay bit-identical.

Leaves out: the trainer (``tiny.pretrain``), the model card (``model_card``).
"""
from __future__ import annotations

import argparse
import json

from kbvqa.experiments.runs import positive_float
from kbvqa.models.tiny import DEFAULT_OUT, TinyTrainConfig, pretrain

_READING_WEIGHTS = {
    "kbvqa_counterfactual": 0.35, "kbvqa_with_passages": 0.08, "lookup_drill": 0.15, "critic": 0.10,
    "mc_in_context": 0.10, "pairwise": 0.04, "grounding": 0.03, "reasoning_context_write": 0.02,
    "reasoning_context_answer": 0.02, "serts_query": 0.02, "serts_grade": 0.02, "serts_answer": 0.01,
    "kbvqa_no_passage": 0.02, "document_lm": 0.04,
}
STAGE_2 = {  # TinyTrainConfig overrides of the reading stage (init_from is set by the caller)
    "steps": 3500, "lr": 0.002, "warmup_steps": 100, "schedule": "wsd", "decay_fraction": 0.25,
    "prompt_loss_weight": 0.5, "eval_every": 150, "eval_n": 32, "ckpt_minutes": 5.0,
    "mix": {"weights": _READING_WEIGHTS, "max_passages": 2, "gold_missing_rate": 0.1},
    "phases": [[1500, {"weights": _READING_WEIGHTS, "max_passages": 6, "gold_missing_rate": 0.1}]],
}
STAGE_1_OUT = "data/cache/tiny_stage1"


def stage_config(stage: int, init_from: str = STAGE_1_OUT, minutes: float | None = None) -> TinyTrainConfig:
    """The ``TinyTrainConfig`` of recipe stage 1 or 2."""
    if stage == 1:
        return TinyTrainConfig(minutes=minutes)
    if stage == 2:
        return TinyTrainConfig(**{**STAGE_2, "init_from": str(init_from), "minutes": minutes})
    raise ValueError(f"the recipe has stages 1 and 2, got {stage!r}")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", type=int, choices=(1, 2), default=2, help="1 (the mixture) or 2 (reading)")
    parser.add_argument("--init", default=STAGE_1_OUT, help="stage 2: the stage-1 checkpoint")
    parser.add_argument("--out", default=str(DEFAULT_OUT))
    parser.add_argument("--minutes", type=positive_float, default=None, help="time budget of this invocation")
    parser.add_argument("--resume", action="store_true", help="continue from the checkpoint in --out")
    args = parser.parse_args(argv)
    config = stage_config(args.stage, args.init, args.minutes)
    _, state = pretrain(config, out_dir=args.out, resume=args.resume)
    print(json.dumps({"steps_done": state["steps_done"], "wall_s": round(state["wall_s"], 1),
                      "last_eval": state["eval"][-1] if state["eval"] else None}))


if __name__ == "__main__":
    main()
