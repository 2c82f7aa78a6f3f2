#!/bin/bash
cd /tmp/kreag
echo "=== start $(date)"
KBVQA_PROFILE=cpu PYTHONHASHSEED=0 PYTHONPATH=/tmp/kreag KBVQA_PROGRESS=0 /work/main/.venv/bin/python -m kbvqa.experiments.pipeline_ablation --limit 200 --threads ${THREADS:-1} \
  --evidence /work/main/data/runs_in_progress/reag_ladder/out/evidence.json --out /work/main/data/runs_in_progress/pipeline
echo "=== end rc=$? $(date)"
