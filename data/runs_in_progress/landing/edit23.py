import sys
sys.path.insert(0, "/tmp/tools")
from nbedit import NB
nb = NB("/work/reag-draft/notebooks/23_reag_grpo.ipynb")
nb.set("71de466c", """%matplotlib inline
import time
import pandas as pd
import torch
from kbvqa.config import get_profile, seed_everything
from kbvqa.data import get_world
from kbvqa.models import load_vlm
from kbvqa.reag import ladder, load_results
torch.set_num_threads(1)
profile = get_profile()
seed_everything(0)
world = get_world(0)
results = load_results()          # chapter 24's committed ladder: its cold start and GRPO curves
policy = load_vlm("rl_policy")
""")
nb.set("f95d7b1e", """## Start from a cold-started model
G_θ_old is "initialized from the SFT cold-start phase" (§3.4). The committed ladder's cold start
(chapter 22; 150 steps) is shipped with its results, and the policy below starts from it; where it
is not this profile's model (the gpu profile), a short cold start of the previous chapter is run
here instead, so that the policy uses the `<think>/<answer>` template.""")
nb.set("ac955e2e", """from kbvqa.reag import cold_start_examples
from kbvqa.reag import SFTConfig, sft_train
start = time.time()
shipped = ladder.shipped_model("cold_start", results)
if shipped is not None:
    policy = shipped
    print("the committed cold start:", {k: results["training"]["cold_start"][k] for k in ("steps", "loss_start", "loss_end")})
else:
    cold = sft_train(policy, cold_start_examples(world, 128, seed=0),
                     SFTConfig(steps=profile.size(16, 80), batch_size=8, warmup_steps=2, progress=False))
    print(f"cold start: {len(cold.steps)} steps in {time.time() - start:.0f} s, L_SFT {cold.loss[0]:.2f} -> {cold.loss[-1]:.2f}")
""")
nb.set("49ab4a71", """## Training (Fig. 5 analogue)
`grpo_train` repeats sample → reward → advantage → loss → step, on-policy, with the format and
accuracy rewards logged per step. ReAG: 128 prompts × 8 completions per step, lr 1e-6, 48 h on
32–64 A100s; its Fig. 5 shows the accuracy reward of the 7B generator rising over training. A GRPO
step of the reader takes a minute or so on a CPU core, so the chapter runs two steps of 2 prompts ×
4 completions to show the loop, and then reads the committed run's curves (chapter 24's script:
30 steps of 4 prompts × 4 completions from its cold start), with the share of zero-spread groups
(no learning signal) on the right.""")
nb.set("234aa85b", """from kbvqa.reag import grpo_train
pool = world.kbvqa_train[:400]
steps = profile.size(2, 60)
config = GRPOConfig(group_size=G, prompts_per_step=profile.size(2, 4), steps=steps, max_new_tokens=80, lr=2e-5,
                    seed=0, progress=False)
start = time.time()
result = grpo_train(policy, grpo_prompts(world, pool), pool, config, **reag_grpo_rewards())
print(f"{steps} steps in {time.time() - start:.0f} s; mean tokens per completion {sum(result.completion_tokens) / steps:.0f}; "
      f"loss per step {[round(v, 4) for v in result.loss]}")
""")
nb.set("df3fedfb", """from kbvqa.viz import draw_grpo_curves
committed = results["training"]["rl"]
print({k: committed[k] for k in ("steps", "accuracy_reward_first5", "accuracy_reward_last5", "seconds")})
draw_grpo_curves(committed["curves"], window=3, title="GRPO, the committed run (cf. ReAG Fig. 5)")
""")
nb.save()
