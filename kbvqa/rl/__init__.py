"""Training loops shared by the papers, from scratch: SFT, GRPO with reward functions passed in, PPO.

- ``sft.py``: Eq. 5 (alpha-weighted answer vs trace loss), the trace/answer token split, ``sft_train``.
- ``grpo_loss.py``: ReAG Eq. 8 group advantages and the clipped token loss of Eq. 6-7 (beta = 0), held
  equal to TRL's ``GRPOTrainer._compute_loss`` with ``loss_type="dapo"`` in the tests.
- ``grpo.py``: one trainer: sampling groups, the rewards passed in (TRL's ``reward_funcs``),
  ``grpo_step`` and ``grpo_train`` (one curve per reward; ReAG and MOLT pass theirs).
- ``ppo.py``: PPO on SeRTS trajectories (SeRTS Eq. 2).
- ``common.py``: trainable weights (frozen vision encoder, LoRA), optimiser and schedule.

Leaves out: each paper's rewards and data (``kbvqa.reag``, ``kbvqa.molt``, ``kbvqa.serts``).
"""
from kbvqa.rl.common import build_optimizer, prepare_trainable
from kbvqa.rl.grpo import (
                           GRPOConfig,
                           GRPOResult,
                           GRPOStepStats,
                           Rollouts,
                           grpo_step,
                           grpo_train,
                           policy_update,
                           sample_groups,
)
from kbvqa.rl.grpo_loss import GRPOLoss, clipped_token_loss, group_advantages, grpo_loss
from kbvqa.rl.ppo import (
                           PPOConfig,
                           Trajectory,
                           collect_trajectories,
                           ppo_objective,
                           ppo_step,
                           prepare_ppo_policy,
)
from kbvqa.rl.sft import (
                           SFTConfig,
                           SFTLoss,
                           SFTResult,
                           answer_start,
                           answer_token_mask,
                           sft_batch_loss,
                           sft_loss,
                           sft_train,
                           split_tokens,
)

__all__ = ["answer_start", "answer_token_mask", "build_optimizer", "clipped_token_loss",
           "group_advantages", "grpo_loss", "GRPOConfig",
           "GRPOLoss", "GRPOResult", "grpo_step", "GRPOStepStats", "grpo_train", "policy_update",
           "collect_trajectories", "ppo_objective", "ppo_step", "PPOConfig", "prepare_ppo_policy", "Trajectory",
           "prepare_trainable", "Rollouts", "sample_groups", "sft_batch_loss", "SFTConfig", "SFTLoss",
           "sft_loss", "SFTResult", "sft_train", "split_tokens"]
