#!/usr/bin/env bash
# How long [Intel CODESYS]'s codesys load (stress-ng) takes to end after SIGINT —
# the part of a cell's set-up the plan's fixed SETUP_NS does not cover, and
# why the neighbour stop SIGKILLs the workers after 3 s.
#
#   taskset -c CPU stress-ng --cpu 8 --cpu-load 100 --cache 4 --cache-flush --memthrash 4 \
#       --stream 10 --vm 4 --vm-bytes 128M --fork 4 --metrics-brief
# runs for RUN seconds in its own process group, then SIGINT goes to the group
# and the wall time until the leader exits is printed (REPEAT times).
#
# Environment: CPU=0 RUN=5 REPEAT=3. Needs stress-ng. No network traffic.
#
# The documents cited here are listed in docs/design.md.
set -euo pipefail
SCRIPT=codesys_stop.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
CPU=${CPU:-0}
RUN=${RUN:-5}
REPEAT=${REPEAT:-3}
need_uint CPU RUN REPEAT
need stress-ng stress-ng
warn_if_busy
for ((r = 1; r <= REPEAT; r++)); do
    setsid taskset -c "$CPU" stress-ng --cpu 8 --cpu-load 100 --cache 4 --cache-flush --memthrash 4 \
        --stream 10 --vm 4 --vm-bytes 128M --fork 4 --metrics-brief >/dev/null 2>&1 </dev/null &
    CHILD=$!
    sleep "$RUN"
    t0=$(date +%s%N)
    kill -INT -- "-$CHILD"
    wait "$CHILD" || true
    t1=$(date +%s%N)
    CHILD=""
    echo "run $r: $(((t1 - t0) / 1000000)) ms from SIGINT to exit"
done
