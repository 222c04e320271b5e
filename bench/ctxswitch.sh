#!/usr/bin/env bash
# Context-switch latency: jitterlab's ctxswitch probe against
# `perf bench sched pipe`, interleaved, both pinned to one CPU.
#
# perf's pipe benchmark passes a token between two tasks through pipes and
# reports the average time of one round trip's half ("usecs/op" is per
# round trip: two switches); jitterlab hands an eventfd token between two
# SCHED_FIFO threads back to back (--interval 0) and measures every
# hand-over. The figure compared is the mean time of one hand-over:
# perf's usecs/op / 2 against jitterlab's handover mean. ROUNDS rounds of
# N hand-overs each, alternating the two tools, print one line per round
# and the median ratio.
#
#   CPU=1 ROUNDS=5 N=200000 bench/ctxswitch.sh
SCRIPT=bench/ctxswitch.sh
source "$(dirname "$0")/lib.sh"

CPU=${CPU:-1}
ROUNDS=${ROUNDS:-5}
N=${N:-200000}
need_uint CPU ROUNDS N
need_root_cpu "$CPU"
need perf linux-perf
need taskset util-linux
ensure_jitterlab
warn_if_busy

OUT=$(mktemp -d)
ratios=()
printf '%-6s %14s %14s %8s\n' round perf_ns_per_handover jitterlab_mean_ns ratio
for ((r = 1; r <= ROUNDS; r++)); do
    run_child "$OUT/perf" "$OUT/perf" taskset -c "$CPU" perf bench sched pipe -l $((N / 2)) ||
        die "perf bench sched pipe failed: $(tail -3 "$OUT/perf")"
    perf_us=$(awk '/usecs\/op/ { print $1 }' "$OUT/perf")
    [[ -n $perf_us ]] || die "no usecs/op in perf's output: $(cat "$OUT/perf")"
    perf_ns=$(awk -v u="$perf_us" 'BEGIN { printf "%.0f", u * 1000 / 2 }')
    run_child "$OUT/jl" "$OUT/jl.err" "$JITTERLAB" run ctxswitch --cpu "$CPU" --interval 0 \
        --cycles "$N" --no-db --json "$OUT/jl.json" ||
        die "jitterlab run ctxswitch failed: $(tail -3 "$OUT/jl.err")"
    jl_ns=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["threads"][0]["metrics"]["handover"]["mean"])' "$OUT/jl.json")
    ratio=$(awk -v a="$jl_ns" -v b="$perf_ns" 'BEGIN { printf "%.2f", a / b }')
    ratios+=("$ratio")
    printf '%-6s %14s %14s %8s\n' "$r" "$perf_ns" "$jl_ns" "$ratio"
done
median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }')
echo "median ratio jitterlab/perf (mean time of one hand-over): $median"
rm -rf "$OUT"
