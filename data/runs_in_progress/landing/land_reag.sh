#!/bin/bash
# Land ReAG + pipeline on the reader (run from /work/main after both runs finished).
set -e
cd /work/main
W=data/runs_in_progress/reag_ladder/work/bfbae60291701b45
# 1. final ReAG invocation with a fresh snapshot: writes results.json + ships models (all rungs done: fast)
bash ~/notes/snapshot.sh /tmp/kreag critic rl_policy reag_generator
(cd /tmp/kreag && KBVQA_COMMIT=$(cd /work/main && git rev-parse HEAD) KBVQA_PROFILE=cpu PYTHONHASHSEED=0 PYTHONPATH=/tmp/kreag KBVQA_PROGRESS=0 \
  /work/main/.venv/bin/python -m kbvqa.experiments.reag_ladder --limit 200 --traces model --threads 2 \
  --out /work/main/data/runs_in_progress/reag_ladder/out --work /work/main/data/runs_in_progress/reag_ladder/work)
# 2. critic_heldout with by_split (the run's log entry predates by_split): recompute into the log + results
ls data/runs_in_progress/reag_ladder/out/models
echo "now: patch critic_heldout (see land_reag_plan.md), merge reag-landing, copy out -> data/experiments/reag"
# (before step 1, once the runs are done) patch the log's critic_heldout with the by_split version:
#   python3 -c "import json; p='$W/log.json'; d=json.load(open(p)); d['critic_heldout']=json.load(open('/root/notes/critic_heldout.json')); json.dump(d, open(p,'w'), indent=1)"
