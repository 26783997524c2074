#!/bin/sh
set -e
cd /work/wt/cluster2
C=.venv/bin/colltune
eval "$($C cluster env)"
echo "== sim_vs_measured run 2 $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
.venv/bin/python lab/scripts/sim_vs_measured_algos.py --colls bcast,allreduce \
   --sizes 8,1K,64K,1M --reps 3 -o /tmp/c2/sim_vs_measured_2x1-run2.json \
   --judge /tmp/c2/sim_vs_measured_2x1.json
echo "== done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
