import sys
sys.path.insert(0, "/tmp/tools")
from nbedit import NB
nb = NB("/work/reag-draft/notebooks/21_reag_critic.ipynb")
nb.rep("21055fdd", """This chapter reads the prompt, computes $\\Pr(\\text{Yes})$ by hand from one forward pass, applies
Eq. 4 at ReAG's two thresholds, fine-tunes a critic with the paper's mix of soft and hard
negatives, and measures it the way Tab. 6, Fig. 7 and Fig. 8 do.""", """This chapter reads the prompt, computes $\\Pr(\\text{Yes})$ by hand from one forward pass, applies
Eq. 4 at ReAG's two thresholds and runs the critic's fine-tuning with the paper's mix of soft and
hard negatives. Training the reader as a critic takes seconds per step on a CPU, so the live run
here is short; the critic that chapter 24's script trained (150 steps, its P(Yes) of every passage
it retrieved kept in `evidence.json`) is then measured the way Tab. 6, Fig. 7 and Fig. 8 do, and
split by what it had seen.""")
nb.set("a1d596a7", """%matplotlib inline
from collections import Counter
import pandas as pd
import torch
from kbvqa.config import get_profile, seed_everything
from kbvqa.reag import CLI_THRESHOLD, REAG_THRESHOLD, Critic, CriticConfig, generator_prompt
from kbvqa.reag import critic_items, critic_table, heldout_critic_items, labels_of, threshold_sweep
from kbvqa.reag import CriticTrainConfig, critic_training_examples, train_critic
from kbvqa.reag import (RESULTS_DIR, critic_agreement, evidence_items, ladder, load_results, pipeline_kinds,
                        pipeline_separation)
from kbvqa.data import get_world
from kbvqa.metrics import kbvqa_split_of
from kbvqa.models import load_vlm
from kbvqa.reag import separation_auc
from kbvqa.reag import PAPER
from kbvqa.viz import draw_critic_loss, draw_p_yes_by_kind, draw_passages_kept, draw_threshold_sweep
""")
nb.set("db572dcc", """profile = get_profile()
seed_everything(0)
torch.set_num_threads(1)       # the book's machines share two cores
world, vlm = get_world(0), load_vlm("critic")     # the reader (cpu) | the profile's critic (gpu)
critic = Critic(vlm, CriticConfig.for_profile(profile))   # threshold 0.1, P(Yes) over {Yes, No}
n, k = profile.size((1, 1), (100, 5))     # live test queries, pages per query
items = critic_items(world, n=n, k=k)             # (query, every passage of its top-k pages)
print(f"{len(items)} queries x {len(items[0][1])} passages; relevant:", sum(map(sum, labels_of(items))))
""")
nb.rep("6041be78", """Supp. D gives the critic's prompt; the cpu profile uses its short rendering (the one the tiny
model was pretrained on) and shows the image at 56 px. One query, one retrieved passage:""",
"""Supp. D gives the critic's prompt; the cpu profile uses its short rendering (the format the
reader's adapters were trained on) and shows the picture at the reader's 112 px. One query, one
retrieved passage:""")
nb.rep("16aeb8ff", "a soft one is another section of the right page or a random page.",
       "a soft one is another section of the right page or a random page. Every tuple comes from the\ntraining split, so its creatures are the ones the *unseen question* test split asks about again;\nthe *unseen entity* split's creatures never appear in it.")
nb.set("881587c6", """## Before training: does the base model separate them?

A **held-out** balanced set from the *test* split (evidence, hard, soft, built like the training
data) gives the separation by kind: the AUC of relevant against hard and against soft (0.5 =
chance). Live, on a few pairs; the committed run measured 200 below.""")
nb.set("99cf6947", """held, kinds = heldout_critic_items(world, profile.size(24, 400))
def held_scores(c):
    return [s[0] for s in c.score_many(held)]
before = held_scores(critic)
print("AUC before:", separation_auc(before, kinds))
draw_p_yes_by_kind(before, kinds)
""")
nb.set("1406e047", """## Fine-tuning the critic

`train_critic` fine-tunes the model (LoRA adapters on the reader; the base weights stay as shipped)
on the seeded stream with the paper's mix, AdamW, and the loss of the Yes/No token right after the
prompt — the same token `p_yes` reads, so the objective is exactly next-token prediction of $y$.
A step of 16 examples of the reader takes tens of seconds on one CPU core, so the cpu profile runs
two small steps to show the loop (the gpu profile runs 300); the dotted line is $\\ln 2$, the loss
of a coin flip between Yes and No.""")
nb.set("957c96e3", """tcfg = CriticTrainConfig(steps=profile.size(2, 300), batch_size=profile.size(4, 16), hard_rate=0.7)
# in_place: vlm itself becomes the fine-tuned critic (its base scores are in `before`), so the gpu
# profile never holds a second copy of the 3B critic
tuned_vlm, curve = train_critic(vlm, tcfg, world=world, progress=False, in_place=True)
print(f"{tcfg.steps} steps in {curve['seconds']} s; examples seen: {curve['labels']}")
draw_critic_loss(curve)
""")
nb.set("2785ff0c", """tuned = Critic(tuned_vlm, critic.config)
after = held_scores(tuned)
pd.DataFrame({"before": separation_auc(before, kinds), "after": separation_auc(after, kinds)}).rename_axis("AUC relevant vs")
""")
nb.delete("d4829c30")
nb.delete("f68f729a")
nb.set("6c891b77", """## The ladder's critic: 150 steps on the reader

Chapter 24's script (`python -m kbvqa.experiments.reag_ladder`) trained the ladder's critic for 150
steps of 16 tuples from the same shipped model, then scored every passage that coarse and fine
retrieval returned for its 200 test queries; `evidence.json` keeps each P(Yes), and its training
log the held-out AUC before and after, on 200 pairs. (In the gpu profile the committed file was
scored by another model, so the evidence of fewer queries is recomputed by the profile's critic.)""")
nb.set("b524c667", """results = load_results()
config = ladder.LadderConfig(**results["config"])
test = world.kbvqa_test[: profile.size(config.limit, 50)]
evidence = ladder.load_evidence(world, test, config, RESULTS_DIR / "evidence.json", write=False)
held = results["training"]["critic_heldout"]
auc = pd.DataFrame({("all", when): held[when] for when in ("before", "after")}
                   | {(split, when): by[when] for split, by in held["by_split"].items() for when in ("before", "after")})
auc.rename_axis("AUC relevant vs").round(3)
""")
nb.insert_after("b524c667", "markdown", """Before anything else, a live check that the shipped critic is the one that made these scores: it
rescores the first query's passages, and Eq. 4 must take the same decision on each (P(Yes) is kept
to four digits, and another machine moves the last ones):""", "c21-agree-md")
nb.insert_after("c21-agree-md", "code", """stored = __import__("json").loads((RESULTS_DIR / "evidence.json").read_text())
agreement = critic_agreement(world, test[:1], evidence, config, stored["critic_model"])
print(agreement)
assert agreement["same_decision"] in (None, 1.0)
""", "c21-agree")
nb.insert_after("c21-agree", "markdown", """## Recall and specificity (Tab. 6) and passages kept (Fig. 7)

Passage-level **recall** is the share of evidence passages the critic keeps, **specificity** the
share of irrelevant passages it drops; `evidence_kept` is the share of queries whose evidence
survives and `all_filtered` the share left with no passage at all. Over every coarse passage of the
run's queries, first all of them, then by split:""", "c21-tab6-md")
nb.insert_after("c21-tab6-md", "code", """cols = ["recall", "specificity", "passages_before", "passages_after", "evidence_kept", "all_filtered"]
by_split = {"all": test} | {s: [q for q in test if kbvqa_split_of(q) == s] for s in ("unseen_question", "unseen_entity")}
tables = {name: critic_table(*evidence_items(world, qs, evidence)) for name, qs in by_split.items()}
rows = [dict(r, queries=name, filter="none" if r["threshold"] is None else f"> {r['threshold']:g}")
        for name, table in tables.items() for r in table]
print("ReAG Tab. 6 (E-VQA, recall / specificity):", PAPER["tab6"])
pd.DataFrame(rows).set_index(["queries", "filter"])[cols]
""", "c21-tab6")
nb.set("436c079a", """draw_passages_kept(tables["all"])
""")
nb.set("3fd4c7a3", """## The threshold sweep (Fig. 8)

Fig. 8 plots answer accuracy and passages kept against the threshold. From the kept P(Yes) the
sweep's recall, specificity and passages need no model; accuracy needs the generator to answer
from each kept set, and chapter 24's ladder measured it at the two ends that matter here: every
coarse passage, and those above 0.1.""")
nb.set("c2e3ab02", """sweep = threshold_sweep(*evidence_items(world, test, evidence))
draw_threshold_sweep(sweep)
""")
nb.set("556c3348", """records = ladder.load_records() if hasattr(ladder, "load_records") else None
from kbvqa.reag import load_records
records = load_records()
ids = {q.id for q in test}
answered = {rung: sum(r["correct"] for r in records[rung] if r["id"] in ids) / len(ids) for rung in ("coarse", "coarse_critic")}
print("generator accuracy, every coarse passage:", round(answered["coarse"], 3), "| P(Yes) > 0.1:", round(answered["coarse_critic"], 3))
pd.DataFrame(sweep).set_index("threshold")[["recall", "specificity", "passages_after", "evidence_kept",
                                            "all_filtered"]].T.round(2)
""")
nb.save()
