#!/bin/bash
# colltune's measurements on a machine that cannot install anything, from the kit
# benchmarks/offline_kit.py writes (this file is copied next to the kit's ctkit/).
# Run from the repository root of a checkout of the kit's commit:
#     bash .devkit/run.sh
# Every step runs under its own timeout, capped by what is left of BUDGET seconds, and
# everything written so far is bundled into $OUT/results.tgz after each step, so a run
# cut short still brings back its figures. Environment (defaults):
#   NP=16  processes of the benchmarks      BUDGET=540  seconds for the whole run
#   PY=python3  PREFIX=/tmp/ctkit  OUT=/tmp/ctout
#   COLLS="bcast allreduce reduce allgather alltoall gather scatter barrier"
#   PER=60  seconds per collective          TIMING=auto (window on dedicated cores)
#   PAIRED=bcast,allreduce  ours against Open MPI's same algorithm at NP (--paired)
#   OVL=150  seconds for that step (0 skips it)
#   COLLS=""  skips the benchmarks; CALIB=0 skips the calibration
# With a kit made with --simgrid (the simulations run there too; 0 skips each):
#   SIMACC=0  seconds for lab/scripts/sim_vs_measured_algos.py at 2 processes (the
#             calibration's accuracy on a machine that holds still), first of all,
#             SIMACCRUNS=1 times (simacc-1.json, ...), with SIMACCARGS (e.g. --cold)
#   DIRTY=0  seconds for lab/scripts/dirty_send.py (a message whose data the sender just
#             wrote, against a clean one: the `forward` table), run before SIMACC's
#             runs and after them (dirty-1.out, dirty-2.out)
#   SIMSPEED=0  seconds for lab/scripts/sim_speed.py at SPEEDNP=1024 processes, sizes
#             8,1K,64K,1M; its algorithms run as SPEEDJOBS=4 concurrent processes
#             (single-threaded simulations, one core each); SPEEDJOB="allreduce ring"
#             runs that one alone
set -u
KIT=$(cd "$(dirname "$0")" && pwd)
R=$PWD
NP=${NP:-16}
PY=${PY:-python3}
PREFIX=${PREFIX:-/tmp/ctkit}
OUT=${OUT:-/tmp/ctout}
RES=$(mktemp -d)
mkdir -p "$PREFIX" "$OUT"
[ -x "$PREFIX/ompi/bin/mpirun" ] || cp -a "$KIT/ctkit/." "$PREFIX/"
export COLLTUNE_CACHE=$PREFIX/cache PATH=$PREFIX/ompi/bin:$PATH PYTHONPATH=$R/src
export PYTHONUNBUFFERED=1 COLLTUNE_MPI=$PREFIX/ompi/bin
# the memory allocator the kit carried for SimGrid (offline_kit.py), if it did
M=$PREFIX/cache/mpi/smpi/lib/colltune-malloc.so
[ -f "$M" ] && export COLLTUNE_SIM_MALLOC=$M
T0=$(date +%s)
log() { echo "=== +$(( $(date +%s) - T0 ))s $*"; }
pack() { tar czf "$OUT/results.tgz.tmp" -C "$RES" . && mv "$OUT/results.tgz.tmp" "$OUT/results.tgz"; }
left() { echo $(( ${BUDGET:-540} - ($(date +%s) - T0) )); }
step() {  # step NAME SECONDS CMD...
  local name=$1 t=$2; shift 2
  local l; l=$(left)
  [ "$t" -gt "$l" ] && t=$l
  if [ "$t" -lt 10 ]; then log "skip $name (no time left)"; return; fi
  log "start $name (timeout ${t}s)"
  timeout "$t" "$@" >"$RES/$name.out" 2>"$RES/$name.err"
  log "end $name rc=$?"
  tail -n 30 "$RES/$name.out"; tail -n 3 "$RES/$name.err"
  pack
}
sanity() {
  timeout 60 $PY -m colltune bench --coll allreduce --algo native --np "$NP" --size 8,1M \
    --iterations 20 --reps 1 >"$RES/sanity.out" 2>&1
}

log machine
{ nproc; grep -m1 "model name" /proc/cpuinfo; uname -a; head -1 /proc/meminfo; $PY --version
  cat /proc/loadavg; env | grep -E "^(OMPI|PRTE|PMIX)_MCA" ; } 2>&1 | tee "$RES/machine.txt"
step info 90 $PY -m colltune info
log sanity
if ! sanity; then  # shared memory without single-copy, then TCP only
  tail -20 "$RES/sanity.out"; export OMPI_MCA_smsc=^cma; log "retry with OMPI_MCA_smsc=^cma"
  if ! sanity; then
    tail -20 "$RES/sanity.out"; unset OMPI_MCA_smsc; export OMPI_MCA_btl=self,tcp
    log "retry with OMPI_MCA_btl=self,tcp"
    sanity || { tail -30 "$RES/sanity.out"; pack; exit 1; }
  fi
fi
env | grep OMPI_MCA | tee "$RES/mca.txt"
pack
[ "${DIRTY:-0}" -gt 0 ] && step dirty-1 "$DIRTY" $PY lab/scripts/dirty_send.py
if [ "${SIMACC:-0}" -gt 0 ]; then
  for k in $(seq "${SIMACCRUNS:-1}"); do
    step "simacc-$k" "$SIMACC" $PY lab/scripts/sim_vs_measured_algos.py --size 8,1K,64K,1M \
      --reps 5 ${SIMACCARGS:-} -o "$RES/simacc-$k.json"
  done
fi
[ "${DIRTY:-0}" -gt 0 ] && step dirty-2 "$DIRTY" $PY lab/scripts/dirty_send.py
if [ "${SIMSPEED:-0}" -gt 0 ]; then
  # the Bcast algorithms, Allreduce ring, segmented_ring and the other Allreduce ones: the
  # two slowest alone (2026-11-28 on the 2-core VM: 25-27 s a point at 1024 processes)
  log "start simspeed (timeout ${SIMSPEED}s, ${SPEEDJOBS:-4} at a time)"
  i=0
  jobs=("bcast all" "allreduce ring" "allreduce segmented_ring"
        "allreduce reduce_bcast,basic_linear,recursive_doubling,rabenseifner,native")
  [ -n "${SPEEDJOB:-}" ] && jobs=("$SPEEDJOB")
  for job in "${jobs[@]}"; do
    set -- $job
    timeout "$SIMSPEED" $PY lab/scripts/sim_speed.py --coll "$1" --algo "$2" \
      --np "${SPEEDNP:-1024}" --size 8,1K,64K,1M -o "$RES/simspeed-$i.json" \
      >"$RES/simspeed-$i.out" 2>"$RES/simspeed-$i.err" &
    i=$((i + 1))
    [ $((i % ${SPEEDJOBS:-4})) -eq 0 ] && wait
  done
  wait
  log "end simspeed"
  cat "$RES"/simspeed-*.out | grep -E " np=|slowest"
  pack
fi
[ "${CALIB:-1}" -gt 0 ] && step calibrate 60 $PY -m colltune platform calibrate --reps 5 \
  -o "$RES/platform.toml"
for c in ${COLLS-bcast allreduce reduce allgather alltoall gather scatter barrier}; do
  step "bench$NP-$c" "${PER:-60}" $PY -m colltune bench --coll "$c" --algo ours,native \
    --np "$NP" --size 8,1K,64K,1M --reps 3 --timing "${TIMING:-auto}" --format json \
    -o "$RES/bench$NP-$c.json" --db "$RES/results.db"
done
if [ "${OVL:-150}" -gt 0 ]; then
  step "paired$NP" "${OVL:-150}" $PY benchmarks/ours_vs_library.py --np "$NP" \
    --size 8,1K,64K,1M --colls "${PAIRED:-bcast,allreduce}" --reps 3 --inner-reps 3 \
    --paired -o "$RES/paired$NP.json"
fi
cat /proc/loadavg
log done
pack
