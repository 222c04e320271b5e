#!/usr/bin/env bash
# jitterlab's POWERLINK nodes against the reference stack, openPOWERLINK
# V2.7.2 built from its public source (tests/fixtures/powerlink/README.md §4
# says how), on the fixtures' topology: every node in a network namespace of
# its own, one veth each into a bridge in a further namespace (STP and
# multicast snooping off), tcpdump on the bridge, a private /dev/shm and
# working directory for every openPOWERLINK process.
#
#   bench/powerlink_interop.sh OPLK_DIR JITTERLAB ref-mn
#       the reference MN (demo_mn_console, the shipped Demo_3CN mnobd.cdc:
#       CNs 1, 32, 110 at 50 ms) against `jitterlab run netcycle --role cn
#       --node-ids 1,32,110`. The emulated CNs start once the MN is
#       Operational (the README's PreOp1 caveat).
#   bench/powerlink_interop.sh OPLK_DIR JITTERLAB ref-cn CYCLE
#       reference CNs (demo_cn_console, NODES) against `jitterlab run
#       netcycle --role mn --node-ids NODES --cycle CYCLE`; the CNs start
#       3 s before the MN, as in the fixtures.
#   bench/powerlink_interop.sh OPLK_DIR - ref-ref
#       the reference MN and reference CNs 1, 32, 110 alone (the fixtures'
#       ref_mn_cn.pcap set-up): checks the harness itself.
#
# OPLK_DIR is the openPOWERLINK tree root (with bin/linux/x86_64/demo_*);
# JITTERLAB the binary under test. Environment:
#   NODES=1,32,110   ref-cn: the reference CNs started and polled (ref-mn
#                    and ref-ref: the CNs the CDC configures, 0x1F81/n)
#   DURATION=60      seconds jitterlab runs (ref-ref: seconds the MN runs)
#   CDC=FILE         ref-mn/ref-ref: the MN's concise DCF (default: the
#                    shipped Demo_3CN one next to demo_mn_console)
#   OUT=DIR          results (default bench/out/powerlink_interop/MODE)
#   MN_CPU=N, CN_CPU=N  keep the reference MN / the reference CNs on CPU N.
#                    The demos pin themselves to CPU 1 (SET_CPU_AFFINITY,
#                    apps/common/src/system/system-linux.c:167-175), which
#                    taskset cannot override; this puts the process in a
#                    cpuset cgroup of that one CPU (v1 /sys/fs/cgroup/cpuset,
#                    removed on exit), where the demo's own call fails and
#                    it stays. Default: unset (everything on CPU 1).
#   JL_CPU=0         jitterlab's --cpu (default 0, away from the demos' CPU 1;
#                    empty: jitterlab's default, the last CPU)
#   JL_NODES="--cns 110"  jitterlab's node selection instead of --node-ids
#                    NODES (for a build whose --node-ids does not work);
#                    JL_NODES=- gives none (e.g. with JL_ARGS="--cdc FILE")
#   JL_ARGS="..."    more jitterlab flags, appended (e.g. --pcap FILE)
#   LOCK_WAIT=900    seconds to wait while another jitterlab holds the
#                    machine lock (/run/jitterlab/lock)
#
# Writes OUT/segment.pcap (the bridge, every node's frames once), a log per
# process (OUT/<name>.log), OUT/meta.txt (commands, times) and
# OUT/verdict.txt, whose last line is the verdict: did every CN reach
# Operational (a PRes with NMTStatus 0xFD and RD=1) and stay there, when,
# relative to the side started last, how many NMTResetNode each CN got and
# why (the reason code named from the tree's errordefs.h; frames after the
# side under test ended are not counted), and jitterlab's exit status (its
# own output is OUT/jitterlab.log). Exit 0 when every CN reached Operational
# and stayed, and jitterlab exited 0; 1 otherwise; 2 on bad arguments.
#
# Runs as root. Sends frames only inside the namespaces it makes, and
# deletes them on every exit, Ctrl-C and SIGTERM included. Needs iproute2,
# util-linux (unshare, flock), coreutils (stdbuf), tcpdump, python3.
#
# The functions below are also used by bench/powerlink_ref_load.sh, which
# sources this file.
SCRIPT=${SCRIPT:-bench/powerlink_interop.sh}
PLK_CALLER_PWD=$PWD    # lib.sh moves to the repository root; arguments are relative to here
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

PLK_TAG=plk$$          # namespace prefix: unique per run
PLK_NETNS=()           # namespaces made, deleted on exit
PLK_PIDS=()            # process-group leaders started, stopped on exit
PLK_BR=${PLK_TAG}br    # the bridge's namespace
PLK_CPUSETS=()         # cpuset cgroups made, removed on exit
PLK_CPUSET_ROOT=/sys/fs/cgroup/cpuset

# plk_cleanup: stop every process started, then delete every namespace made
plk_cleanup() {
    local pid ns i
    for pid in "${PLK_PIDS[@]}"; do
        kill -TERM -- "-$pid" 2>/dev/null || true
    done
    for i in $(seq 1 30); do
        local alive=0
        for pid in "${PLK_PIDS[@]}"; do
            kill -0 "$pid" 2>/dev/null && alive=1
        done
        [[ $alive -eq 0 ]] && break
        sleep 0.1
    done
    for pid in "${PLK_PIDS[@]}"; do
        kill -KILL -- "-$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
    PLK_PIDS=()
    for ns in "${PLK_NETNS[@]}"; do
        ip netns del "$ns" 2>/dev/null || true
    done
    PLK_NETNS=()
    local cs
    for cs in "${PLK_CPUSETS[@]}"; do
        rmdir "$cs" 2>/dev/null || true
    done
    PLK_CPUSETS=()
}

# plk_cpuset CPU: a cpuset cgroup holding only CPU (made once); sets
# PLK_TASKS to its tasks file
plk_cpuset() {
    local cpu=$1 dir=$PLK_CPUSET_ROOT/${PLK_TAG}cpu$1
    [[ -d $PLK_CPUSET_ROOT ]] || die "MN_CPU/CN_CPU need the cgroup v1 cpuset hierarchy at $PLK_CPUSET_ROOT"
    [[ -d /sys/devices/system/cpu/cpu$cpu ]] || die "CPU $cpu does not exist"
    if [[ ! -d $dir ]]; then
        mkdir "$dir" || die "cannot make cpuset $dir"
        PLK_CPUSETS+=("$dir")
        cat "$PLK_CPUSET_ROOT/cpuset.mems" >"$dir/cpuset.mems"
        echo "$cpu" >"$dir/cpuset.cpus"
    fi
    PLK_TASKS=$dir/tasks
}
extra_cleanup() { plk_cleanup; }

# plk_bridge: the bridge namespace, its bridge br0 (STP off, no snooping)
plk_bridge() {
    ip netns add "$PLK_BR" || die "cannot make network namespace $PLK_BR"
    PLK_NETNS+=("$PLK_BR")
    ip -n "$PLK_BR" link set lo up
    ip -n "$PLK_BR" link add br0 type bridge stp_state 0 mcast_snooping 0
    ip -n "$PLK_BR" link set br0 up
    ip netns exec "$PLK_BR" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
}

# plk_node NAME IF MAC: namespace ${PLK_TAG}NAME with interface IF (MAC) on
# the bridge through port pNAME; prints the namespace's name
plk_node() {
    local name=$1 ifname=$2 mac=$3 ns=${PLK_TAG}$1
    ip netns add "$ns" || die "cannot make network namespace $ns"
    PLK_NETNS+=("$ns")
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
    ip link add "$ifname" netns "$ns" address "$mac" type veth peer name "p$name" netns "$PLK_BR" ||
        die "cannot make veth $ifname in $ns"
    ip -n "$ns" link set "$ifname" up
    ip -n "$PLK_BR" link set "p$name" master br0
    ip -n "$PLK_BR" link set "p$name" up
}

# plk_capture FILE: tcpdump on the bridge (packet-buffered, so the file can
# be read while it grows); waits until it listens
plk_capture() {
    local file=$1
    setsid ip netns exec "$PLK_BR" tcpdump -i br0 -U -s 0 -B 8192 --time-stamp-precision=nano \
        -w "$file" ether proto 0x88ab >"$OUT/tcpdump.log" 2>&1 </dev/null &
    PLK_PIDS+=($!)
    local i
    for i in $(seq 1 50); do
        grep -q 'listening on' "$OUT/tcpdump.log" 2>/dev/null && return 0
        sleep 0.1
    done
    die "tcpdump did not start on the bridge; see $OUT/tcpdump.log"
}

# plk_oplk NAME DIR PROGRAM ARGS...: an openPOWERLINK demo in namespace
# ${PLK_TAG}NAME with a private /dev/shm (its POSIX names are fixed), in its
# own working directory DIR, log OUT/NAME.log, on CPU $MN_CPU (NAME mn) or
# $CN_CPU (the others) when set; sets PLK_LAST to its pid (the demo's own:
# every wrapper execs)
plk_oplk() {
    local name=$1 dir=$2
    shift 2
    local cpu=${CN_CPU:-}
    [[ $name == mn ]] && cpu=${MN_CPU:-}
    PLK_TASKS=/dev/null
    [[ -n $cpu ]] && plk_cpuset "$cpu"
    mkdir -p "$dir"
    # the tasks file is opened here (fd 3): `ip netns exec` mounts a sysfs of
    # the namespace, without the cgroup hierarchy
    (cd "$dir" && exec setsid ip netns exec "${PLK_TAG}$name" unshare --mount --ipc --propagation private \
        sh -c 'echo $$ >&3 && exec 3>&- && mount -t tmpfs oplshm /dev/shm && exec "$@"' x stdbuf -oL -eL "$@" \
        3>"$PLK_TASKS" >"$OUT/$name.log" 2>&1 </dev/null) &
    PLK_LAST=$!
    PLK_PIDS+=("$PLK_LAST")
    echo "$(date -u +%T.%N) $name (pid $PLK_LAST, cwd $dir${cpu:+, cpuset CPU $cpu}): $*" >>"$OUT/meta.txt"
}

# plk_stop PID: SIGTERM to the process group, wait up to 5 s, then SIGKILL
plk_stop() {
    local pid=$1 i
    kill -TERM -- "-$pid" 2>/dev/null || return 0
    for i in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- "-$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
}

# plk_jitterlab NS CMD...: jitterlab in namespace NS, log OUT/jitterlab.log;
# while another jitterlab holds the machine lock (exit 2 naming it), waits
# and starts again, up to LOCK_WAIT seconds (default 900); sets PLK_JL_RC
PLK_LOCK=/run/jitterlab/lock
plk_jitterlab() {
    local ns=$1 deadline=$((SECONDS + ${LOCK_WAIT:-900}))
    shift
    while :; do
        echo "$(date -u +%T.%N) jitterlab: ip netns exec $ns $*" >>"$OUT/meta.txt"
        PLK_JL_T0=$(plk_now)
        setsid ip netns exec "$ns" "$@" >"$OUT/jitterlab.log" 2>&1 </dev/null &
        local jp=$!
        PLK_PIDS+=("$jp")
        PLK_JL_RC=0
        wait "$jp" || PLK_JL_RC=$?
        if [[ $PLK_JL_RC -eq 2 ]] && grep -q 'is changing this machine' "$OUT/jitterlab.log" && ((SECONDS < deadline)); then
            note "another jitterlab holds the machine lock; trying again in 5 s"
            plk_sleep 5
            continue
        fi
        return 0
    done
}

# plk_wait_lock: until no jitterlab holds the machine lock (up to LOCK_WAIT)
plk_wait_lock() {
    local deadline=$((SECONDS + ${LOCK_WAIT:-900})) said=
    [[ -e $PLK_LOCK ]] || return 0
    until flock -n "$PLK_LOCK" true; do
        [[ -n $said ]] || note "another jitterlab holds $PLK_LOCK; waiting for it (LOCK_WAIT=${LOCK_WAIT:-900} s)"
        said=1
        ((SECONDS < deadline)) || die "another jitterlab still holds $PLK_LOCK after ${LOCK_WAIT:-900} s"
        plk_sleep 2
    done
}

# plk_sleep SECONDS: a sleep that a signal interrupts at once (bash runs a
# trap only after the foreground command, but during `wait`)
plk_sleep() {
    sleep "$1" &
    wait $!
}

# plk_now: the wall clock, seconds with nanoseconds (the capture's clock)
plk_now() { date +%s.%N; }

# The capture's reader: verdict FILE [key=value...], or wait-mn-op FILE
# (exit 0 once a SoA from the MN reports NMTStatus 0xFD).
PLK_PY=$(
    cat <<'PY'
import re, struct, sys
from collections import Counter, defaultdict

def frames(path):
    with open(path, 'rb') as f:
        data = f.read()
    if len(data) < 24:
        return
    magic = struct.unpack_from('<I', data)[0]
    if magic == 0xa1b23c4d:
        div = 1e9
    elif magic == 0xa1b2c3d4:
        div = 1e6
    else:
        sys.exit(f"{path}: not a little-endian classic pcap")
    off = 24
    while off + 16 <= len(data):
        sec, frac, incl, _ = struct.unpack_from('<IIII', data, off)
        off += 16
        if off + incl > len(data):
            break  # the record tcpdump is still writing
        yield sec + frac / div, data[off:off + incl]
        off += incl

MSG = {1: 'SoC', 3: 'PReq', 4: 'PRes', 5: 'SoA', 6: 'ASnd'}
SVC = {1: 'IdentResponse', 2: 'StatusResponse', 3: 'NMTRequest', 4: 'NMTCommand', 5: 'SDO'}
NMT = {0x1D: 'PreOp1', 0x5D: 'PreOp2', 0x6D: 'ReadyToOp', 0xFD: 'Operational', 0x4D: 'Stopped',
       0x1C: 'NotActive', 0x1E: 'BasicEthernet'}
CMD = {0x21: 'StartNode', 0x22: 'StopNode', 0x23: 'EnterPreOp2', 0x24: 'EnableReadyToOp',
       0x28: 'ResetNode', 0x29: 'ResetCommunication', 0x2A: 'ResetConfiguration', 0x2B: 'SwReset'}

def wait_mn_op(path):
    for _, b in frames(path):
        if len(b) > 17 and b[12:14] == b'\x88\xab' and b[14] & 0x7f == 5 and b[16] == 240 and b[17] == 0xFD:
            return 0
    return 1

def verdict(path, kv):
    nodes = [int(n) for n in kv['nodes'].split(',')]
    t_mn, t_cn = float(kv['t_mn']), float(kv['t_cn'])
    # the side started last (jitterlab, or the reference MN in ref-ref)
    t_last, last = (t_cn, 'the CNs') if t_cn > t_mn else (t_mn, 'the MN')
    names = {}
    try:
        for m in re.finditer(r'#define\s+(E_\w+)\s+0x([0-9A-Fa-f]+)', open(kv['errordefs']).read()):
            names.setdefault(int(m.group(2), 16), m.group(1))
    except OSError:
        pass
    count = Counter()
    first_op, first_seen, last_state = {}, {}, {}
    resets = defaultdict(Counter)
    other_cmds = defaultdict(Counter)
    asnd_len = defaultdict(Counter)
    ec = defaultdict(Counter)
    sdo = Counter()
    mn_states = []
    t_first = None
    t_end = float(kv.get('t_end', 'inf'))
    drops = defaultdict(int)
    late_resets = 0
    for t, b in frames(path):
        if len(b) < 18 or b[12:14] != b'\x88\xab':
            continue
        t_first = t if t_first is None else t_first
        if t > t_end:
            # after the side under test ended: the other side's reaction to it
            if len(b) > 18 and b[14] & 0x7f == 6 and b[17] == 4 and b[18] == 0x28:
                late_resets += 1
            continue
        mt, dst, src = b[14] & 0x7f, b[15], b[16]
        kind = MSG.get(mt, f'type{mt}')
        if mt == 4:
            first_seen.setdefault(src, t)
            op = b[17] == 0xFD and b[18] & 1
            if src in first_op and not op and last_state.get(src) == 0xFD:
                drops[src] += 1
            last_state[src] = b[17]
            if op:
                first_op.setdefault(src, t)
        elif mt == 5 and src == 240:
            if not mn_states or mn_states[-1][1] != b[17]:
                mn_states.append((t, b[17]))
        elif mt == 6:
            svc = b[17]
            kind = SVC.get(svc, f'svc{svc}')
            if svc in (1, 2):
                asnd_len[(svc, src)][len(b)] += 1
                first_seen.setdefault(src, t)
                if svc == 2:
                    ec[src]['EC=1' if b[18] & 0x08 else 'EC=0'] += 1
            elif svc == 4 and len(b) > 19:
                if b[18] == 0x28:
                    code = b[20] | b[21] << 8 if len(b) > 21 else 0
                    resets[dst][code] += 1
                else:
                    other_cmds[dst][CMD.get(b[18], hex(b[18]))] += 1
            elif svc == 5:
                sdo['MN->CN' if src == 240 else 'CN->MN'] += 1
        count[kind] += 1
    if t_first is None:
        print(f"{path}: no POWERLINK frame")
    print('frames: ' + ', '.join(f'{k} {v}' for k, v in sorted(count.items())))
    print('SDO frames: ' + (', '.join(f'{k} {v}' for k, v in sorted(sdo.items())) or 'none'))
    print('MN states (from its SoAs): ' + ', '.join(f'+{t - t_mn:.3f}s {NMT.get(s, hex(s))}' for t, s in mn_states[:8])
          + (' ...' if len(mn_states) > 8 else ''))
    def why(c):
        # 0: no error code, e.g. the broadcast reset at PreOp1 or the reset
        # after an accepted 0x1011 restore
        return f'0x{c:04X} {names.get(c, "?")}' if c else '0 (no error code)'
    for n in nodes + ([255] if resets.get(255) else []):
        lines = [f'node {n}:']
        if n != 255:
            lines.append(f'Operational ' + (f'at +{first_op[n] - t_mn:.3f}s after the MN start, '
                                            f'+{first_op[n] - t_cn:.3f}s after the CN start' if n in first_op else 'never'))
            lines.append(f'last PRes state {NMT.get(last_state[n], hex(last_state[n]))}' if n in last_state else 'no PRes')
            for svc in (1, 2):
                if asnd_len.get((svc, n)):
                    lines.append(f'{SVC[svc]} ' + ', '.join(f'{c}x {l} B' for l, c in sorted(asnd_len[(svc, n)].items())))
            if ec.get(n):
                lines.append('StatusResponse ' + ', '.join(f'{v}x {k}' for k, v in sorted(ec[n].items())))
            if other_cmds.get(n):
                lines.append('NMT commands ' + ', '.join(f'{v}x {k}' for k, v in sorted(other_cmds[n].items())))
        if n in drops:
            lines.append(f'left Operational {drops[n]}x')
        lines.append(f'NMTResetNode {sum(resets[n].values())}' + ''.join(f', {v}x {why(c)}' for c, v in sorted(resets[n].items())))
        print(' | '.join(lines))
    for log in filter(None, kv.get('logs', '').split(',')):
        try:
            text = open(log, errors='replace').read().splitlines()
        except OSError:
            continue
        changes = [l.split('STATE_CHANGE', 1)[1].strip() for l in text if 'STATE_CHANGE' in l]
        into = sum(1 for c in changes if re.search(r'->Nmt(Cs|Ms)Operational ', c + ' '))
        out = [c for c in changes if re.match(r'Nmt(Cs|Ms)Operational->', c)]
        hist = Counter(m.group(1) for l in text for m in [re.search(r'HistoryEntry: Type=\S+ Code=(0x[0-9A-Fa-f]+)', l)] if m)
        name = log.rsplit('/', 1)[-1]
        print(f'{name}: {len(changes)} state changes, into Operational {into}x'
              + ''.join(f'; {c}' for c in out[:3]) + (' ...' if len(out) > 3 else '')
              + ('; history ' + ', '.join(f'{v}x {c} {names.get(int(c, 16), "")}'.rstrip() for c, v in hist.most_common(4)) if hist else ''))
    if late_resets:
        print(f'after the side under test ended: {late_resets} NMTResetNode (not counted)')
    ok = [n for n in nodes if n in first_op and not drops.get(n)]
    total_resets = sum(sum(c.values()) for c in resets.values())
    rc = kv.get('jitterlab_rc', '-')
    op = ', '.join((f'{n} +{first_op[n] - t_last:.2f}s' + (f' then left it {drops[n]}x' if drops.get(n) else ''))
                   if n in first_op else f'{n} never' for n in nodes)
    reasons = Counter()
    for c in resets.values():
        reasons.update(c)
    why_all = '; '.join(f'{v}x {why(c)}' for c, v in reasons.most_common())
    print(f"VERDICT {kv['mode']}: {'PASS' if len(ok) == len(nodes) and rc in ('0', '-') else 'FAIL'}: "
          f"Operational {len(ok)}/{len(nodes)} CNs ({op} after {last} started); "
          f"NMTResetNode {total_resets}" + (f' ({why_all})' if why_all else '') +
          f"; jitterlab exit {rc}")
    return 0 if len(ok) == len(nodes) and rc in ('0', '-') else 1

if __name__ == '__main__':
    what, path = sys.argv[1], sys.argv[2]
    if what == 'wait-mn-op':
        sys.exit(wait_mn_op(path))
    sys.exit(verdict(path, dict(a.split('=', 1) for a in sys.argv[3:])))
PY
)

# plk_wait_mn_operational FILE SECONDS: until the MN's SoAs say Operational
plk_wait_mn_operational() {
    local file=$1 secs=$2 i
    for i in $(seq 1 $((secs * 5))); do
        python3 -c "$PLK_PY" wait-mn-op "$file" && return 0
        sleep 0.2
    done
    return 1
}

# plk_cdc_read CDC cycle|nodes: the MN's cycle 0x1006 (us), or the CNs the
# concise DCF configures (0x1F81/n with bit 0, comma-separated)
plk_cdc_read() {
    python3 -c 'import struct, sys
b = open(sys.argv[1], "rb").read()
off, cycle, nodes = 4, None, []
for _ in range(struct.unpack_from("<I", b)[0]):
    i, s, n = struct.unpack_from("<HBI", b, off)
    v = int.from_bytes(b[off + 7:off + 7 + n], "little")
    off += 7 + n
    if (i, s) == (0x1006, 0) and cycle is None:
        cycle = v
    if i == 0x1F81 and 1 <= s <= 239 and v & 1 and s not in nodes:
        nodes.append(s)
print(cycle if sys.argv[2] == "cycle" else ",".join(map(str, sorted(nodes))))' "$1" "$2"
}

# plk_demos OPLK_DIR: checks the tree and sets MN_BIN, CN_BIN
plk_demos() {
    local dir=$1
    MN_BIN=$dir/bin/linux/x86_64/demo_mn_console/demo_mn_console
    CN_BIN=$dir/bin/linux/x86_64/demo_cn_console/demo_cn_console
    [[ -x $MN_BIN && -x $CN_BIN ]] ||
        die "$dir has no bin/linux/x86_64/demo_{mn,cn}_console/demo_*_console: build openPOWERLINK V2.7.2 as tests/fixtures/powerlink/README.md §4 says, and give its tree root"
}

# plk_mac ID: the MAC the fixtures give node ID
plk_mac() { printf '02:00:00:00:00:%02x' "$1"; }

interop_main() {
    local usage="usage: $SCRIPT OPLK_DIR JITTERLAB ref-mn | OPLK_DIR JITTERLAB ref-cn CYCLE | OPLK_DIR - ref-ref"
    [[ $# -ge 3 ]] || die "$usage"
    local oplk=$1 jl=$2 mode=$3 cycle=${4:-}
    [[ $EUID -eq 0 ]] || die "run as root: it makes network namespaces and the stacks run SCHED_FIFO"
    need ip iproute2
    need unshare util-linux
    need stdbuf coreutils
    need tcpdump tcpdump
    need python3 python3
    [[ $oplk == /* ]] || oplk=$PLK_CALLER_PWD/$oplk
    [[ $jl == /* || $jl == - ]] || jl=$PLK_CALLER_PWD/$jl
    plk_demos "$oplk"
    oplk=$(cd "$oplk" && pwd)
    case $mode in
    ref-mn | ref-ref) [[ $# -eq 3 ]] || die "$usage" ;;
    ref-cn) [[ $# -eq 4 && $cycle =~ ^[0-9]+(ns|us|ms|s)$ ]] || die "ref-cn needs a CYCLE such as 1ms or 500us; $usage" ;;
    *) die "unknown mode '$mode'; $usage" ;;
    esac
    if [[ $mode != ref-ref ]]; then
        [[ -x $jl ]] || die "JITTERLAB=$jl is not an executable file (build it: cargo build --release)"
    fi
    DURATION=${DURATION:-60}
    need_uint DURATION
    local nodes=${NODES:-1,32,110}
    [[ $nodes =~ ^[0-9]+(,[0-9]+)*$ ]] || die "NODES=$nodes is not a comma-separated list of node ids"
    local cdc=${CDC:-$(dirname "$MN_BIN")/mnobd.cdc}
    [[ $cdc == /* ]] || cdc=$PLK_CALLER_PWD/$cdc
    [[ $mode == ref-cn || -f $cdc ]] || die "CDC=$cdc does not exist"
    [[ -z ${OUT:-} || $OUT == /* ]] || OUT=$PLK_CALLER_PWD/$OUT
    OUT=${OUT:-bench/out/powerlink_interop/$mode${cycle:+-$cycle}}
    if [[ $mode != ref-cn ]]; then
        nodes=$(plk_cdc_read "$cdc" nodes) || die "$cdc is not a concise DCF"
        [[ -n $nodes ]] || die "$cdc configures no CN (no 0x1F81/n with bit 0)"
    fi
    rm -rf "$OUT"
    mkdir -p "$OUT"
    OUT=$(cd "$OUT" && pwd)
    {
        echo "mode: $mode ${cycle}"
        echo "kernel: $(uname -r)"
        echo "openPOWERLINK: $oplk"
        [[ $mode == ref-ref ]] || echo "jitterlab: $jl ($("$jl" --version 2>&1))"
        echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    } >"$OUT/meta.txt"

    [[ $mode == ref-ref ]] || plk_wait_lock
    plk_bridge
    local n t_mn t_cn t_end jl_rc=-
    IFS=, read -r -a ids <<<"$nodes"
    case $mode in
    ref-mn | ref-ref) plk_node mn mn0 "$(plk_mac 240)" ;;
    ref-cn) plk_node mn mn0 "$(plk_mac 240)" ;;
    esac
    if [[ $mode == ref-mn ]]; then
        plk_node cn cn0 "$(plk_mac 1)"
    else
        for n in "${ids[@]}"; do
            ((n >= 1 && n <= 239)) || die "node id $n is not a CN id (1-239)"
            plk_node "c$n" "c$n" "$(plk_mac "$n")"
        done
    fi
    plk_capture "$OUT/segment.pcap"

    case $mode in
    ref-ref | ref-mn)
        if [[ $mode == ref-ref ]]; then
            for n in "${ids[@]}"; do
                plk_oplk "c$n" "$OUT/run/c$n" "$CN_BIN" -n "$n" -d "c$n"
            done
            t_cn=$(plk_now)
            plk_sleep 3
        fi
        mkdir -p "$OUT/run/mn"
        cp "$cdc" "$OUT/run/mn/mnobd.cdc"
        t_mn=$(plk_now)
        plk_oplk mn "$OUT/run/mn" "$MN_BIN" -c mnobd.cdc -d mn0
        MN_PID=$PLK_LAST
        if [[ $mode == ref-ref ]]; then
            plk_sleep "$DURATION"
            t_end=$(plk_now)
        else
            plk_wait_mn_operational "$OUT/segment.pcap" 30 ||
                note "the reference MN did not reach Operational within 30 s; starting the CNs anyway"
            note "the reference MN is Operational ($(awk -v a="$(plk_now)" -v b="$t_mn" 'BEGIN{printf "%.2f", a-b}') s); starting jitterlab's CNs"
            t_cn=$(plk_now)
            local sel=(--node-ids "$nodes")
            [[ -n ${JL_NODES:-} ]] && read -r -a sel <<<"$JL_NODES"
            [[ ${JL_NODES:-} == - ]] && sel=()
            local more=()
            [[ -n ${JL_CPU-0} ]] && more+=(--cpu "${JL_CPU-0}")
            [[ -n ${JL_ARGS:-} ]] && read -r -a more2 <<<"$JL_ARGS" && more+=("${more2[@]}")
            local cdc_us # the CN side's nominal cycle: the CDC's 0x1006
            cdc_us=$(plk_cdc_read "$cdc" cycle)
            [[ $cdc_us =~ ^[0-9]+$ ]] || die "$cdc has no 0x1006 (cycle length)"
            local cmd=("$jl" run netcycle --no-db --role cn "${sel[@]}" --interface cn0 --cycle "${cdc_us}us" --duration "${DURATION}s" "${more[@]}")
            plk_jitterlab "${PLK_TAG}cn" "${cmd[@]}"
            jl_rc=$PLK_JL_RC
            t_cn=$PLK_JL_T0
            t_end=$(plk_now)
        fi
        sleep 1
        plk_stop "$MN_PID"
        ;;
    ref-cn)
        for n in "${ids[@]}"; do
            plk_oplk "c$n" "$OUT/run/c$n" "$CN_BIN" -n "$n" -d "c$n"
        done
        t_cn=$(plk_now)
        plk_sleep 3
        t_mn=$(plk_now)
        local sel=(--node-ids "$nodes")
        [[ -n ${JL_NODES:-} ]] && read -r -a sel <<<"$JL_NODES"
            [[ ${JL_NODES:-} == - ]] && sel=()
        local more=()
        [[ -n ${JL_CPU-0} ]] && more+=(--cpu "${JL_CPU-0}")
        [[ -n ${JL_ARGS:-} ]] && read -r -a more2 <<<"$JL_ARGS" && more+=("${more2[@]}")
        local cmd=("$jl" run netcycle --no-db --role mn --interface mn0 "${sel[@]}" --cycle "$cycle" --duration "${DURATION}s" "${more[@]}")
        plk_jitterlab "${PLK_TAG}mn" "${cmd[@]}"
        jl_rc=$PLK_JL_RC
        t_mn=$PLK_JL_T0
        t_end=$(plk_now)
        ;;
    esac
    sleep 1
    plk_cleanup
    echo "$(date -u +%T.%N) stopped; jitterlab exit $jl_rc" >>"$OUT/meta.txt"
    local rc=0
    local logs
    logs=$(find "$OUT" -maxdepth 1 -name '*.log' ! -name tcpdump.log ! -name jitterlab.log | sort | paste -sd,)
    python3 -c "$PLK_PY" verdict "$OUT/segment.pcap" mode="$mode${cycle:+ $cycle}" nodes="$nodes" \
        t_mn="$t_mn" t_cn="$t_cn" t_end="$t_end" logs="$logs" jitterlab_rc="$jl_rc" \
        errordefs="$oplk/stack/include/oplk/errordefs.h" >"$OUT/verdict.txt" || rc=$?
    cat "$OUT/verdict.txt"
    echo "results in $OUT (segment.pcap, *.log, meta.txt, verdict.txt)"
    return "$rc"
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
    interop_main "$@"
    exit $?
fi
