#!/usr/bin/env bash
# analyze: how fast `jitterlab analyze` reads a POWERLINK capture against
# Wireshark's own readers of the same file, and whether its peak memory
# stays flat as the capture grows (issue: a 10-million-frame capture).
#
# Makes two synthetic captures with `jitterlab __synth-capture` (an MN
# polling CNS CNs every CYCLE, SoC jitter ±5 us, seeded; written through the
# same PcapWriter as `netcycle --pcap`): SMALL and BIG frames. Then, ROUNDS
# times, interleaved on the BIG capture:
#   jitterlab analyze BIG              (the whole analysis, text report)
#   capinfos BIG                       (Wireshark's file summary: reads every record)
#   tshark -r BIG -q -z io,stat,0      (Wireshark's dissection, one statistic)
# each under /usr/bin/time -f '%e %M' (wall s, peak RSS KiB), the wall time
# also taken with date +%s%N. Prints the median frames/s of each, the ratio
# of jitterlab's to each peer's, and the peak RSS of each. Then jitterlab
# analyze and capinfos on SMALL and BIG once more: peak RSS of both sizes,
# to show that jitterlab's memory does not grow with the capture.
#
# Every run reads the file from the page cache (it is read once before the
# rounds), so this measures parsing, not the disk.
#
# Environment (defaults):
#   BIG=10000000 SMALL=1000000 CNS=3 CYCLE=500us ROUNDS=3 TSHARK=1 KEEP=0
#   JITTERLAB=target/release/jitterlab OUT=bench/out/analyze-<date>
#   TSHARK=0 leaves tshark out (about 20 s per million frames here).
#   KEEP=1 keeps the captures (BIG is about 76 bytes a frame: 760 MB).
# Smoke test: BIG=200000 SMALL=20000 ROUNDS=1 bench/analyze.sh
#
# Needs Debian's tshark and wireshark-common (capinfos) and time
# (/usr/bin/time); as root the script installs what is missing. Sends no
# network traffic. Do not run it beside a compiler.
set -euo pipefail
SCRIPT=analyze.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

BIG=${BIG:-10000000}
SMALL=${SMALL:-1000000}
CNS=${CNS:-3}
CYCLE=${CYCLE:-500us}
ROUNDS=${ROUNDS:-3}
TSHARK=${TSHARK:-1}
KEEP=${KEEP:-0}
OUT=${OUT:-bench/out/analyze-$(date +%Y%m%d-%H%M%S)}

need_uint BIG SMALL CNS ROUNDS
((BIG > SMALL && SMALL >= 1 && ROUNDS >= 1)) || die "need BIG > SMALL >= 1 and ROUNDS >= 1"

# Set-up: the peers and /usr/bin/time, installed when root and missing.
missing=()
[[ -x /usr/bin/time ]] || missing+=(time)
command -v capinfos >/dev/null 2>&1 || missing+=(wireshark-common)
if [[ $TSHARK == 1 ]] && ! command -v tshark >/dev/null 2>&1; then missing+=(tshark); fi
if ((${#missing[@]})); then
    [[ $EUID -eq 0 ]] || die "missing Debian packages: ${missing[*]}; install them with: apt-get install -y ${missing[*]}"
    note "installing ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}" >/dev/null ||
        die "apt-get install ${missing[*]} failed; run apt-get update first"
fi
need setsid util-linux

ensure_jitterlab
warn_if_busy

mkdir -p "$OUT"
extra_cleanup() {
    if [[ $KEEP != 1 ]]; then
        rm -f "$OUT/small.pcap" "$OUT/big.pcap"
    fi
}
{
    echo "date: $(date -Is)"
    echo "host: $(uname -a)"
    echo "cpus: $(nproc), load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "jitterlab: $("$JITTERLAB" --version 2>/dev/null || echo unknown) ($JITTERLAB)"
    echo "capinfos: $(capinfos --version 2>/dev/null | head -1)"
    [[ $TSHARK == 1 ]] && echo "tshark: $(tshark --version 2>/dev/null | head -1)"
    echo "BIG=$BIG SMALL=$SMALL CNS=$CNS CYCLE=$CYCLE ROUNDS=$ROUNDS"
} >"$OUT/meta.txt"

for size in SMALL BIG; do
    n=${!size}
    f="$OUT/${size,,}.pcap"
    note "writing $f ($n frames)"
    run_child "$OUT/synth-${size,,}.log" "$OUT/synth-${size,,}.log" \
        "$JITTERLAB" __synth-capture --frames "$n" --cns "$CNS" --cycle "$CYCLE" "$f"
    cat "$f" >/dev/null # into the page cache
done

# timed NAME FILE COMMAND...: runs it, appends "NAME wall_ns rss_kib" to
# $OUT/runs.txt; output to $OUT/NAME-*.out.
RUN=0
timed() {
    local name=$1 file=$2
    shift 2
    RUN=$((RUN + 1))
    local log="$OUT/$name-$RUN"
    local t0 t1
    t0=$(date +%s%N)
    run_child "$log.out" "$log.err" /usr/bin/time -o "$log.time" -f '%e %M' "$@" ||
        die "$name failed (see $log.err)"
    t1=$(date +%s%N)
    echo "$name $file $((t1 - t0)) $(awk '{print $2}' "$log.time")" >>"$OUT/runs.txt"
}

: >"$OUT/runs.txt"
big="$OUT/big.pcap"
for ((r = 1; r <= ROUNDS; r++)); do
    note "round $r of $ROUNDS"
    timed jitterlab big "$JITTERLAB" analyze "$big"
    timed capinfos big capinfos "$big"
    [[ $TSHARK == 1 ]] && timed tshark big tshark -r "$big" -q -z io,stat,0
done
note "peak memory at SMALL and BIG"
timed jitterlab small "$JITTERLAB" analyze "$OUT/small.pcap"
timed capinfos small capinfos "$OUT/small.pcap"
timed jitterlab big "$JITTERLAB" analyze "$big"
timed capinfos big capinfos "$big"

# The capture's figures, once, for the record.
"$JITTERLAB" analyze "$big" >"$OUT/analysis.txt"
grep -q "frames: $BIG POWERLINK" "$OUT/analysis.txt" || die "jitterlab analyze did not read $BIG frames (see $OUT/analysis.txt)"

awk -v big="$BIG" -v small="$SMALL" -v tshark="$TSHARK" '
function median(list,    n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
    return a[int((n + 1) / 2)]
}
{ wall[$1 " " $2] = wall[$1 " " $2] " " $3; rss[$1 " " $2] = $4 }
END {
    printf "| reader (%d frames, page cache) | median wall | frames/s | jitterlab ÷ it | peak RSS |\n", big
    printf "|---|---:|---:|---:|---:|\n"
    j = median(wall["jitterlab big"])
    n = split("jitterlab capinfos tshark", tools, " ")
    for (i = 1; i <= n; i++) {
        t = tools[i]
        if (t == "tshark" && tshark != 1) continue
        w = median(wall[t " big"])
        printf "| %s | %.3f s | %.2f M | %s | %.1f MiB |\n", t, w / 1e9, big / (w / 1e9) / 1e6, \
            (t == "jitterlab" ? "1" : sprintf("%.1f×", w / j)), rss[t " big"] / 1024
    }
    printf "\n| peak RSS | %d frames | %d frames |\n|---|---:|---:|\n", small, big
    printf "| jitterlab analyze | %.1f MiB | %.1f MiB |\n", rss["jitterlab small"] / 1024, rss["jitterlab big"] / 1024
    printf "| capinfos | %.1f MiB | %.1f MiB |\n", rss["capinfos small"] / 1024, rss["capinfos big"] / 1024
}' "$OUT/runs.txt" | tee "$OUT/summary.md"
echo
echo "(raw runs: $OUT/runs.txt; the analysis: $OUT/analysis.txt)"
