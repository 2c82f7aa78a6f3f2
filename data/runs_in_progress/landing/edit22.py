import sys
sys.path.insert(0, "/tmp/tools")
from nbedit import NB
nb = NB("/work/reag-draft/notebooks/22_reag_cold_start.ipynb")
nb.set("1c1684e2", """%matplotlib inline
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
student = load_vlm("rl_policy")   # the generator we fine-tune (cpu: the reader)
results = load_results()          # chapter 24's committed ladder: its cold start, traces and curves
""")
s = nb.src("099611a5")
i = s.index("**In the cpu profile there is no larger model**")
nb.set("099611a5", s[:i] + """**The cpu profile has no larger model**, so the reader writes the traces itself, told the answer
and the label as the paper's teacher is (`load_trace_writer()`: the `reag_generator` role's model;
chapter 24's committed run did the same for its 1,024 tuples). Where it writes no usable
`<think>` the templated trace from the toy world's worked rationales stays (`kbvqa.rl.cold_start_trace`:
what the image shows, then "The passage is relevant: …" or "The passage is about …, so it is not
relevant"); `trace_source` says which each example got. One deliberate departure: with an
irrelevant passage our target answer is "I don't know" (the toy facts are invented, so an answer
without evidence could only be memorised), whereas ReAG keeps the gold answer. In the gpu profile
`load_trace_writer()` returns the profile's larger VLM.""")
nb.set("59fc274c", """from kbvqa.reag import cold_start_examples
from kbvqa.reag import load_trace_writer, write_traces
n_train = profile.size(8, 1024)            # the committed run: 1,024 (its traces are timed below)
examples = cold_start_examples(world, n_train, seed=0)        # 50 % evidence, 50 % negatives
examples = write_traces(load_trace_writer(), world, examples, max_new_tokens=profile.size(128, 256))
print(pd.Series([e.meta["negative_kind"] or "evidence" for e in examples]).value_counts().to_dict())
print(pd.Series([e.meta["trace_source"] for e in examples]).value_counts().to_dict())
print("the committed run's traces:", results["training"].get("traces"))
""")
nb.set("94fbaa31", """from kbvqa.reag import relevance_eval
n_eval = profile.size(4, 32)
before = relevance_eval(student, world, n=n_eval, seed=1)
pd.Series(before, name="before").round(2).to_frame()
""")
nb.set("8ce8b386", """## The cold start
`sft_train` runs AdamW with a warm-up and a cosine schedule, the vision encoder frozen except its
MLP merger (ReAG supp. B), LoRA adapters on a model of the reader's size, and logs $L_A$ and $L_T$
separately. ReAG trains one epoch with batches of 128, lr 2e-6 and 450 warm-up steps on 16 A100s
for a day. A step of 8 examples of the reader takes seconds on a CPU core, so the chapter runs two
steps to show the loop; chapter 24's script ran 150 on the 1,024 tuples, and its curve follows.""")
nb.set("fb846f44", """from kbvqa.reag import SFTConfig, sft_train
steps = profile.size(2, 200)
config = SFTConfig(alpha=0.8, steps=steps, batch_size=8, lr=1e-4, warmup_steps=1, seed=0, progress=False)
start = time.time()
sft = sft_train(student, examples, config)
print(f"{steps} steps x 8 examples in {time.time() - start:.0f} s; L_SFT {sft.loss[0]:.2f} -> {sft.loss[-1]:.2f}")
""")
nb.set("e28b248e", """from kbvqa.viz import draw_sft_curves
committed = results["training"]["cold_start"]
print({k: committed[k] for k in ("steps", "alpha", "loss_start", "loss_end", "seconds")})
draw_sft_curves(committed["curve"], alpha=committed["alpha"], title="Cold start, the committed run (Eq. 5)")
""")
nb.set("6eb9703e", """trained = ladder.shipped_model("cold_start", results) or student    # the committed cold start (cpu)
after = relevance_eval(trained, world, n=n_eval, seed=1)
pd.DataFrame({"before": before, "after": after}).round(2)
""")
nb.set("ba7af1f2", """from kbvqa.reag import cold_start_examples_for
probe = cold_start_examples_for(world, 1, seed=1)
for e, (text,) in zip(probe, trained.generate([e.prompt for e in probe], n=1, max_new_tokens=80, temperature=0.0)):
    print("relevant" if e.meta["relevant"] else "negative", "->", text, "\\n")
""")
nb.save()
