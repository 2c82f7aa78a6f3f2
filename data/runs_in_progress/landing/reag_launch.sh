#!/bin/bash
cd /tmp/kreag
echo "=== start $(date)"
KBVQA_PROFILE=cpu PYTHONHASHSEED=0 PYTHONPATH=/tmp/kreag KBVQA_PROGRESS=0 /work/main/.venv/bin/python -m kbvqa.experiments.reag_ladder --limit 200 --traces model \
  --threads ${THREADS:-1} --out /work/main/data/runs_in_progress/reag_ladder/out --work /work/main/data/runs_in_progress/reag_ladder/work
echo "=== end rc=$? $(date)"
