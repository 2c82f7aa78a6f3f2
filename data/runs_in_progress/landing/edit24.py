import sys
sys.path.insert(0, "/tmp/tools")
from nbedit import NB
nb = NB("/work/reag-draft/notebooks/24_reag_ablation.ipynb")
nb.insert_after("c2836362", "markdown", """### By split: creatures the models trained on, and new ones

InfoSeek reports its two test splits separately, and here they part ways: an *unseen question*
asks about a creature whose page and pictures were in the critic's and the generators' training
tuples, an *unseen entity* about one they never saw (chapter 21). The same ladder within each
split, each step's paired difference on that split's queries:""", "c24-split-md")
nb.insert_after("c24-split-md", "code", """def step(row):
    d = row.get("vs_previous")
    return "" if d is None else f"{d['diff']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}]"

by_split = pd.DataFrame([{**r, "step": step(r)} for r in results.get("by_split", [])])
by_split.set_index(["split", "rung"])[["n", "accuracy", "passages", "evidence_in_context", "step"]] if len(by_split) else "no split rows"
""", "c24-split")
nb.set("55f51fa9", """## A live rerun of a few rungs

Retrieval and the zero-shot rungs need no training, and the committed run shipped its GRPO
generator (`data/experiments/reag/models/`), so a few queries can be rerun here. The live run
recomputes retrieval and checks that it finds the same pages as the committed run, reuses the
committed P(Yes) of those passages (`evidence.json`; chapter 21 shows the critic), and answers on
the rungs whose prompts are short: no retrieval, the critic's passages, and "+ RL" with the shipped
generator. (Reading all 40 coarse passages costs the reader seconds per query, so that rung is
left to the script; in the gpu profile the committed generator is another model, and only the
zero-shot rungs run.)""")
nb.set("f19db1b3", """n_live = profile.size(6, 24)
config = ladder.LadderConfig(**results["config"])
queries = world.kbvqa_test[:n_live]
committed = ladder.load_evidence(world, queries, config, RESULTS_DIR / "evidence.json", write=False)
live = ladder.retrieve_evidence(world, queries, None, config)          # no critic: retrieval only
same = [live[q.id]["coarse"] == committed[q.id]["coarse"] and live[q.id]["fine"] == committed[q.id]["fine"]
        for q in queries]
print(f"same retrieved passages on {sum(same)}/{len(same)} queries")
""")
nb.set("be86c308", """generators = ladder.shipped_generators(results)                        # {"rl": the committed GRPO model}
live_rungs = ["no_retrieval", "coarse_critic", "fine_critic", *generators]
live_records = ladder.run_rungs(world, queries, committed, config, rungs=live_rungs, generators=generators)
pd.DataFrame(live_agreement(live_records, records)).set_index("rung")
""")
nb.save()
