# Shared by the benchmark scripts: messages, checks, the jitterlab binary,
# and child processes that are always stopped. Source it after setting
# SCRIPT (the name used in messages); it leaves the working directory at the
# repository root.
#
# Every child runs in its own process group (setsid) in the background and is
# waited for, so a signal reaches the script's trap at once and the trap stops
# the child and everything it started. A script may define `extra_cleanup` to
# stop more (e.g. a stress-ng neighbour).

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

die() { echo "$SCRIPT: error: $*" >&2; exit 2; }
note() { echo "$SCRIPT: $*" >&2; }

# need COMMAND DEBIAN-PACKAGE
need() {
    command -v "$1" >/dev/null 2>&1 || die "'$1' not found; install it with: apt-get install -y $2"
}

# need_uint VAR...: each named variable holds a whole number
need_uint() {
    local v
    for v in "$@"; do
        [[ ${!v} =~ ^[0-9]+$ ]] || die "$v=${!v} is not a whole number"
    done
}

# need_root_cpu CPU: root (SCHED_FIFO, mlockall) and an existing CPU
need_root_cpu() {
    [[ $EUID -eq 0 ]] || die "run as root: the measuring tools need SCHED_FIFO priority 95 and mlockall"
    [[ -d /sys/devices/system/cpu/cpu$1 ]] || die "CPU $1 does not exist (set CPU=)"
}

JITTERLAB_DEFAULT=target/release/jitterlab
JITTERLAB=${JITTERLAB:-$JITTERLAB_DEFAULT}

# ensure_jitterlab: build the release binary when it is missing
ensure_jitterlab() {
    if [[ ! -x $JITTERLAB ]]; then
        [[ $JITTERLAB == "$JITTERLAB_DEFAULT" ]] || die "JITTERLAB=$JITTERLAB is not an executable file"
        note "$JITTERLAB missing; building it (cargo build --release)"
        cargo build --release
    fi
}

# warn_if_busy: a benchmark beside a compiler measures the compiler
warn_if_busy() {
    local load
    load=$(cut -d' ' -f1 /proc/loadavg)
    if pgrep -x rustc >/dev/null || pgrep -x cc1 >/dev/null || awk -v l="$load" 'BEGIN { exit !(l >= 0.5) }'; then
        note "warning: the machine is not idle (load $load, or a compiler is running); results will be noisy"
    fi
}

CHILD=""
cleanup() {
    if [[ -n $CHILD ]]; then
        kill -TERM -- "-$CHILD" 2>/dev/null || true
        wait "$CHILD" 2>/dev/null || true
        kill -KILL -- "-$CHILD" 2>/dev/null || true
        CHILD=""
    fi
    if declare -F extra_cleanup >/dev/null; then
        extra_cleanup
    fi
}
trap cleanup EXIT
trap 'note "interrupted"; exit 130' INT
trap 'note "terminated"; exit 143' TERM

# run_child STDOUT-FILE STDERR-FILE COMMAND...: the same file twice for both
run_child() {
    local out=$1 err=$2
    shift 2
    if [[ $err == "$out" ]]; then
        setsid "$@" >"$out" 2>&1 </dev/null &
    else
        setsid "$@" >"$out" 2>"$err" </dev/null &
    fi
    CHILD=$!
    local rc=0
    wait "$CHILD" || rc=$?
    CHILD=""
    return "$rc"
}
