#!/bin/sh
set -e
cd /work/wt/cluster2
C=.venv/bin/colltune
$C cluster up --nodes 2
eval "$($C cluster env)"
echo "== calibrate $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
$C platform calibrate --reps 5 -o /tmp/c2/cluster-platform.toml
echo "== sim_vs_measured $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
.venv/bin/python lab/scripts/sim_vs_measured_algos.py --colls bcast,allreduce \
   --sizes 8,1K,64K,1M --reps 3 -o /tmp/c2/sim_vs_measured_2x1.json
echo "== done $(date -u +%T) load $(cut -d' ' -f1-3 /proc/loadavg)"
