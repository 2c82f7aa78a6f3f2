"""Build the draft worktree's data/experiments/reag from the in-progress reader run (draft only)."""
import json, shutil, sys
from pathlib import Path
sys.path.insert(0, "/work/reag-draft")
from kbvqa.reag.results import summarise, write_results
from kbvqa.experiments.runs import read_run
SRC = Path("/work/main/data/runs_in_progress/reag_ladder")
WORK = SRC / "work" / "bfbae60291701b45"
DST = Path("/work/reag-draft/data/experiments/reag")
old = json.loads((DST / "results.json").read_text())
shutil.rmtree(DST / "runs", ignore_errors=True)
shutil.copytree(SRC / "out" / "runs", DST / "runs")
shutil.copy(SRC / "out" / "evidence.json", DST / "evidence.json")
(DST / "models").mkdir(exist_ok=True)
for m in ("critic", "rl", "cold_start"):
    if (WORK / "models" / f"{m}.pt").exists():
        shutil.copy(WORK / "models" / f"{m}.pt", DST / "models" / f"{m}.pt")
records = {p.stem: read_run(p)[1] for p in (DST / "runs").glob("*.jsonl")}
log = json.loads((WORK / "log.json").read_text())
held = Path("/tmp/critic_heldout.json")
if held.exists():
    log["critic_heldout"] = json.loads(held.read_text())
config = dict(old["config"], traces="model")
prov = dict(old["provenance"], model="reader:87914057b0c95a6e", command="(draft)")
res = summarise(records, config=config, training=log, provenance=prov)
write_results(res, DST)
print({r["rung"]: r["accuracy"] for r in res["rows"]})
