//! The bad-input corpus: malformed, overlarge and contradictory flags and
//! specs for every subcommand, each of which must be refused the same way
//! (design rule 8): exit status 2, exactly one line on stderr naming the
//! flag or key (the exact line is asserted), nothing on stdout, no panic or
//! abort — and nothing changed: no journal, no database, the fake sysroot
//! tree byte for byte and mode for mode as it was.
//!
//! The sysroot is a private copy of the 2-CPU VM fixture with a
//! `/proc/meminfo` of 1 GiB, so that a working set or buffer larger than
//! half the machine's memory is refused without a machine that small.
//!
//! Beside the corpus: a closed stdout ends `bench --dry-run`, `runs`,
//! `report`, `check`, `presets` (and `restore`, `--help`) quietly with
//! status 141 (item 6 of issue 11), and stored names with control
//! characters are printed escaped by `runs` and `report` (item 4).
//!
//! The design rules cited here are in `docs/design.md`.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command as StdCommand, Output, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::Command;

#[path = "common/fixtures.rs"]
mod fixtures;
use fixtures::copy_fixture;

/// The fake machine: the VM fixture with 1 GiB of memory.
fn sysroot() -> tempfile::TempDir {
    let root = copy_fixture("sysroot-vm");
    std::fs::write(
        root.path().join("proc/meminfo"),
        "MemTotal:        1048576 kB\nMemFree:          524288 kB\nMemAvailable:     786432 kB\n",
    )
    .unwrap();
    root
}

/// Every file, directory and symlink under `dir`: kind, mode and contents.
fn tree(dir: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, (String, u32, Vec<u8>)>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let rel = p.strip_prefix(base).unwrap().to_path_buf();
            let mode = m.permissions().mode();
            if m.file_type().is_symlink() {
                let to = std::fs::read_link(&p).unwrap();
                out.insert(
                    rel,
                    (
                        "link".into(),
                        mode,
                        to.into_os_string().into_encoded_bytes(),
                    ),
                );
            } else if m.is_dir() {
                out.insert(rel, ("dir".into(), mode, Vec::new()));
                walk(base, &p, out);
            } else {
                out.insert(rel, ("file".into(), mode, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// [`tree`] without jitterlab's own state directory, `run/jitterlab` (the
/// machine lock and the journal live there): what a command that may take
/// the lock must leave as it found it.
fn machine(dir: &Path) -> BTreeMap<PathBuf, (String, u32, Vec<u8>)> {
    let mut t = tree(dir);
    t.retain(|p, _| !p.starts_with("run/jitterlab"));
    t.remove(Path::new("run"));
    t
}

/// A spec with 11 wake-up probes: 1000 repetitions make 11 000 cells.
fn eleven_probes(repetitions: u32) -> String {
    let mut s = format!("duration = \"1s\"\nwarmup = \"0\"\nrepetitions = {repetitions}\n");
    for i in 0..11 {
        s.push_str(&format!("[[probe]]\nkind = \"wakeup\"\nname = \"p{i}\"\n"));
    }
    s
}

/// A scenario of 65 neighbours, one more than a scenario may start.
fn sixty_five_neighbours() -> String {
    let mut s = String::from("duration = \"1s\"\n[[scenario]]\nname = \"many\"\n");
    for i in 0..65 {
        s.push_str(&format!(
            "[[scenario.neighbour]]\nname = \"n{i}\"\ncommand = [\"sleep\", \"1\"]\n"
        ));
    }
    s.push_str("[[probe]]\nkind = \"cyclic\"\n");
    s
}

/// One refusal: the arguments (`{SPEC}` is the path of `spec`, written to
/// a file first) and the exact line after `jitterlab: error: ` (`{SPEC}`
/// again the path, `{DIR}` the scratch directory of the journal and the
/// database).
struct Case {
    args: Vec<String>,
    spec: Option<String>,
    line: String,
}

fn case(args: &[&str], line: &str) -> Case {
    Case {
        args: args.iter().map(|a| a.to_string()).collect(),
        spec: None,
        line: line.to_string(),
    }
}

fn spec_case(args: &[&str], spec: &str, line: &str) -> Case {
    Case {
        spec: Some(spec.to_string()),
        ..case(args, line)
    }
}

/// The minimal valid spec with `body` in front of its probe table.
fn with(body: &str) -> String {
    format!("duration = \"1s\"\n{body}[[probe]]\nkind = \"cyclic\"\n")
}

/// A spec whose probe table is `probe`.
fn probe(probe: &str) -> String {
    format!("duration = \"1s\"\n[[probe]]\n{probe}")
}

const CLAP: &str = " (see jitterlab --help)";

fn corpus() -> Vec<Case> {
    let clap = |args: &[&str], line: &str| case(args, &format!("{line}{CLAP}"));
    vec![
        // ---- run cyclic
        clap(&["run", "cyclic", "--period", "1ns"], "invalid value '1ns' for '--period <TIME>': 1ns is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)"),
        case(&["run", "cyclic", "--period", "0ms"], "--period must be positive; give e.g. --period 1ms"),
        clap(&["run", "cyclic", "--period", "10x"], "invalid value '10x' for '--period <TIME>': \"10x\" has unknown unit \"x\"; use one of ns, us, ms, s, m, h, d"),
        clap(&["run", "cyclic", "--period", "8d"], "invalid value '8d' for '--period <TIME>': 8d is more than 7d, the longest time jitterlab takes"),
        clap(&["run", "cyclic", "--period", "-1ms"], "invalid value '-1ms' for '--period <TIME>': \"-1ms\" is negative; give a positive value"),
        clap(&["run", "cyclic", "--working-set", "1000GiB"], "invalid value '1000GiB' for '--working-set <SIZE>': 1000GiB is more than 4GiB, the largest buffer jitterlab allocates"),
        case(&["run", "cyclic", "--working-set", "768MiB"], "--working-set 768MiB is more than half of this machine's memory (MemTotal 1048576 kB in /proc/meminfo): the probe locks what it allocates (mlockall) and the neighbours need the rest; give at most 512MiB"),
        clap(&["run", "cyclic", "--working-set", "3parsecs"], "invalid value '3parsecs' for '--working-set <SIZE>': \"3parsecs\" has unknown size suffix \"parsecs\"; use B, K, KiB, M, MiB, G or GiB"),
        clap(&["run", "cyclic", "--histogram-buckets", "99999999999"], "invalid value '99999999999' for '--histogram-buckets <N>': 99999999999 is more than 100000, the most 1us histogram buckets (100ms of range)"),
        case(&["run", "cyclic", "--histogram-buckets", "0"], "--histogram-buckets must be at least 1"),
        clap(&["run", "cyclic", "--outliers", "100000000"], "invalid value '100000000' for '--outliers <N>': 100000000 is more than 10000, the most outliers kept per metric"),
        clap(&["run", "cyclic", "--outliers", "-1"], "invalid value '-1' for '--outliers <N>': \"-1\" is not a whole number; give one from 0 to 10000"),
        clap(&["run", "cyclic", "--cycles", "100000000000"], "invalid value '100000000000' for '--cycles <N>': 100000000000 is more than 60480000000, the most cycles of one run (7d of 10us periods)"),
        case(&["run", "cyclic", "--cycles", "10000000000"], "--cycles 10000000000 of 1ms take longer than 7d, the longest run; give fewer cycles"),
        case(&["run", "cyclic", "--cycles", "0"], "--cycles must be at least 1"),
        clap(&["run", "cyclic", "--duration", "8d"], "invalid value '8d' for '--duration <TIME>': 8d is more than 7d, the longest time jitterlab takes"),
        case(&["run", "cyclic", "--duration", "1d", "--window", "1ms"], "--window 1ms: 1d in windows of 1ms makes 86400000 window rows, more than 1000000, the most one run keeps; use windows of at least 87ms or a shorter duration"),
        clap(&["run", "cyclic", "--window", "100us"], "invalid value '100us' for '--window <TIME>': 100us is shorter than 1ms, the shortest window"),
        case(&["run", "cyclic", "--window", "0s"], "--window must be positive; give e.g. --window 1s"),
        case(&["run", "cyclic", "--scan", "2ms", "--period", "1ms"], "--scan 2ms is not shorter than --period 1ms; shorten the scan or lengthen the period"),
        case(&["run", "cyclic", "--cpu", "7"], "CPU 7 is not online (online CPUs: 0-1); choose one of them with --cpu"),
        clap(&["run", "cyclic", "--cpu", "99999999999999999999999"], "invalid value '99999999999999999999999' for '--cpu <CPU>': number too large to fit in target type"),
        case(&["run", "cyclic", "--priority", "100"], "--priority 100 is outside 1-99 for --policy fifo; choose a priority in that range"),
        clap(&["run", "cyclic", "--priority", "99999999999"], "invalid value '99999999999' for '--priority <PRIO>': 99999999999 is not in -2147483648..=2147483647"),
        case(&["run", "cyclic", "--nice", "5"], "--nice 5 applies only to --policy other; use --priority with --policy fifo"),
        case(&["run", "cyclic", "--policy", "other", "--priority", "5"], "--priority 5 is not allowed with --policy other; use --nice to weight a time-sharing thread, or --policy fifo"),
        case(&["run", "cyclic", "--policy", "other", "--nice", "30"], "--nice 30 is outside -20..19; choose a nice value in that range"),
        clap(&["run", "cyclic", "--policy", "deadline"], "invalid value 'deadline' for '--policy <POLICY>'"),
        clap(&["run", "cyclic", "--max-latency", "8d"], "invalid value '8d' for '--max-latency <TIME>': 8d is more than 7d, the longest time jitterlab takes"),
        clap(&["run", "cyclic", "--threshold", "1.5ns"], "invalid value '1.5ns' for '--threshold <TIME>': \"1.5ns\" is finer than the unit's resolution (1 ns for times, 1 byte for sizes)"),
        case(&["run", "cyclic", "--break-trace", "0s"], "--break-trace must be positive; give e.g. --break-trace 500us"),
        clap(&["run", "cyclic", "--cycles", "5", "--duration", "1s"], "the argument '--cycles <N>' cannot be used with '--duration <TIME>'"),
        clap(&["run", "cyclic", "--frobnicate"], "unexpected argument '--frobnicate' found"),
        // ---- run wakeup
        clap(&["run", "wakeup", "--interval", "5us"], "invalid value '5us' for '--interval <TIME>': 5us is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)"),
        clap(&["run", "wakeup", "--interval", "1000"], "invalid value '1000' for '--interval <TIME>': \"1000\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. 1000us)"),
        clap(&["run", "wakeup", "--cpus", "0-99999"], "invalid value '0-99999' for '--cpus <LIST>': \"0-99999\" names CPU 99999; CPU numbers stop at 8191 (the kernel's largest NR_CPUS)"),
        case(&["run", "wakeup", "--cpus", "1,3"], "CPU 3 in --cpus is not online (online CPUs: 0-1); choose CPUs from that list"),
        clap(&["run", "wakeup", "--cpus", ""], "invalid value '' for '--cpus <LIST>': the CPU list is empty; name at least one CPU, e.g. 1"),
        clap(&["run", "wakeup", "--cpus", "3-1"], "invalid value '3-1' for '--cpus <LIST>': \"3-1\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online)"),
        case(&["run", "wakeup", "--duration", "7d", "--cpus", "0-1"], "--window 1s: 7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration"),
        // ---- run chase
        clap(&["run", "chase", "--samples", "99999999"], "invalid value '99999999' for '--samples <N>': 99999999 is more than 1048576, the most samples a chase keeps"),
        clap(&["run", "chase", "--iterations", "1000001"], "invalid value '1000001' for '--iterations <N>': 1000001 is more than 1000000, the most timed chases per sample"),
        clap(&["run", "chase", "--chase-length", "2000000"], "invalid value '2000000' for '--chase-length <N>': 2000000 is more than 1048576, the most dependent loads per timed chase"),
        clap(&["run", "chase", "--buffer", "5GiB"], "invalid value '5GiB' for '--buffer <SIZE>': 5GiB is more than 4GiB, the largest buffer jitterlab allocates"),
        case(&["run", "chase", "--buffer", "768MiB"], "--buffer 768MiB is more than half of this machine's memory (MemTotal 1048576 kB in /proc/meminfo): the probe locks what it allocates (mlockall) and the neighbours need the rest; give at most 512MiB"),
        case(&["run", "chase", "--max-latency", "1ms"], "--max-latency does not apply to a chase: it measures CPU cycles, not a latency"),
        case(&["run", "chase", "--cycles", "5"], "a chase counts samples: use --samples instead of --cycles"),
        case(&["run", "chase", "--roles", "test=1,neighbour=9"], "--roles: the neighbour CPU 9 is not online (online CPUs: 0-1)"),
        // ---- run ctxswitch, response, timerlat
        clap(&["run", "ctxswitch", "--interval", "1us"], "invalid value '1us' for '--interval <TIME>': 1us is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)"),
        case(&["run", "ctxswitch", "--histogram", "h.txt"], "--histogram applies to the periodic probes (cyclic, wakeup); remove it from run ctxswitch"),
        clap(&["run", "response", "--interval", "1ns"], "invalid value '1ns' for '--interval <TIME>': 1ns is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)"),
        clap(&["run", "response", "--source", "pipe"], "invalid value 'pipe' for '--source <SOURCE>'"),
        case(&["run", "response", "--event-cpu", "9"], "CPU 9 is not online (online CPUs: 0-1); choose one of them with --event-cpu"),
        case(&["run", "timerlat", "--period", "50us"], "timerlat period must be whole microseconds from 100us to 1s (rtla's -p); got 50us"),
        clap(&["run", "timerlat", "--priority", "300"], "invalid value '300' for '--priority <PRIO>': 300 is not in 0..=255"),
        case(&["run", "timerlat", "--duration", "1500ms"], "timerlat duration must be whole seconds, at least 1s (rtla's -d); got 1500ms"),
        case(&["run", "observe"], "an observe probe needs what to watch: give --pid, --tid, --comm or -- COMMAND"),
        case(&["run", "observe", "--pid", "4194304"], "--pid 4194304: no such process (no /proc/4194304); give the pid of a running process (ps -e lists them)"),
        case(&["run", "observe", "--comm", "plc", "--tid", "1"], "an observe probe watches one target: keep one of --tid and --comm"),
        // ---- run roundtrip, analyze: a zero period
        case(&["run", "roundtrip", "--io-period", "0s"], "--io-period must be positive; give e.g. --io-period 500us"),
        clap(&["analyze", "capture.pcap", "--cycle", "0s"], "invalid value '0s' for '--cycle <TIME>': a cycle time must be longer than 0"),
        // ---- the flag given is the flag blamed
        case(&["run", "netcycle", "--cycle", "0s"], "--cycle must be positive; give e.g. --cycle 500us"),
        case(&["run", "roundtrip", "--controller-period", "0s"], "--controller-period must be positive; give e.g. --controller-period 5ms"),
        clap(&["run", "cyclic", "--cpu", "-1"], "invalid value '-1' for '--cpu <CPU>': invalid digit found in string"),
        clap(&["run", "roundtrip", "--io-cpu", "-1"], "invalid value '-1' for '--io-cpu <CPU>': invalid digit found in string"),
        clap(&["run", "wakeup", "--cpus", "-1"], "invalid value '-1' for '--cpus <LIST>': \"-1\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online)"),
        clap(&["run", "netcycle", "--cns", "-1"], "invalid value '-1' for '--cns <N>': -1 is not in 1..=239"),
        clap(&["check", "--cpus", "-1"], "invalid value '-1' for '--cpus <LIST>': \"-1\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online)"),
        clap(&["runs", "--host", ""], "invalid value '' for '--host <NAME>': the host is empty; give a host name or at least 4 hex digits of a machine id, as jitterlab runs lists them"),
        // ---- bench: flags
        case(&["bench", "--dry-run"], "give a SPEC file (e.g. examples/codesys.toml) or --preset NAME (list them with: jitterlab presets)"),
        clap(
            &["bench", "--preset", "powerlink", "--repetitions", "1000000", "--dry-run"],
            "invalid value '1000000' for '--repetitions <N>': 1000000 is more than 1000, the most repetitions of a bench",
        ),
        case(&["bench", "--preset", "nope", "--dry-run"], "there is no preset nope; list them with: jitterlab presets"),
        case(&["bench", "/nonexistent/spec.toml", "--dry-run"], "cannot read the spec /nonexistent/spec.toml: No such file or directory (os error 2); give the path of a TOML spec (examples/ has some) or use --preset"),
        case(&["bench", "/dev/zero", "--dry-run"], "cannot read the spec /dev/zero: it is larger than 1MiB, the largest spec jitterlab reads; give the path of a TOML spec (examples/ has some) or use --preset"),
        case(&["bench", "/etc", "--dry-run"], "cannot read the spec /etc: Is a directory (os error 21); give the path of a TOML spec (examples/ has some) or use --preset"),
        clap(&["bench", "{SPEC}", "--preset", "codesys"], "the argument '[SPEC]' cannot be used with '--preset <NAME>'"),
        spec_case(&["bench", "{SPEC}", "--repetitions", "0"], &with(""), "--repetitions must be at least 1"),
        spec_case(&["bench", "{SPEC}", "--duration", "8d"], &with(""), "invalid value '8d' for '--duration <TIME>': 8d is more than 7d, the longest time jitterlab takes (see jitterlab --help)"),
        spec_case(
            &["bench", "{SPEC}", "--duration", "7d", "--dry-run"],
            "duration = \"1s\"\n[[configuration]]\nname = \"w\"\nprobe_cpus = \"0-1\"\n[[probe]]\nkind = \"wakeup\"\n",
            "--duration with {SPEC}: probe[0] (wakeup): 7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration",
        ),
        spec_case(
            &["bench", "{SPEC}", "--repetitions", "1000", "--dry-run"],
            &eleven_probes(1),
            "--repetitions with {SPEC}: the bench has 11000 cells (1000 repetitions × 1 configuration × 1 scenario × 1 deployment × 11 probes), more than 10000, the most one bench runs; use fewer repetitions or split the spec",
        ),
        spec_case(
            &["bench", "{SPEC}", "--usb-path", "/nonexistent/usb"],
            &with(""),
            "--usb-path /nonexistent/usb is not a directory; give a directory on the USB drive",
        ),
        clap(&["bench", "--format", "xml", "--preset", "codesys"], "invalid value 'xml' for '--format <FORMAT>'"),
        // ---- bench: specs
        spec_case(&["bench", "{SPEC}"], "duration = \"1s\"\n[[probe]\n", "{SPEC}:2: unclosed array table, expected `]`"),
        spec_case(&["bench", "{SPEC}"], &with("colour = \"red\"\n"), "{SPEC}:2: colour: unknown key `colour`, expected one of `name`, `duration`, `warmup`, `repetitions`, `deployments`, `baseline`, `configuration`, `scenario`, `probe`"),
        spec_case(&["bench", "{SPEC}"], "[[probe]]\nkind = \"cyclic\"\n", "{SPEC}:1: duration: missing; give the measured time of each cell, e.g. duration = \"10s\""),
        spec_case(&["bench", "{SPEC}"], "duration = \"10x\"\n[[probe]]\nkind = \"cyclic\"\n", "{SPEC}:1: duration: \"10x\" has unknown unit \"x\"; use one of ns, us, ms, s, m, h, d"),
        spec_case(&["bench", "{SPEC}"], "duration = \"30d\"\n[[probe]]\nkind = \"cyclic\"\n", "{SPEC}:1: duration: 30d is more than 7d, the longest time jitterlab takes"),
        spec_case(&["bench", "{SPEC}"], &with("repetitions = 1000000\n"), "{SPEC}:2: repetitions: 1000000 is more than 1000, the most repetitions of a bench"),
        spec_case(&["bench", "{SPEC}"], &with("repetitions = 0\n"), "{SPEC}:2: repetitions: 0 is less than 1"),
        spec_case(&["bench", "{SPEC}"], &with("name = \"x\\u001b[31m\\nforged\"\n"), "{SPEC}:2: name: name \"x\\u{1b}[31m\\nforged\" holds control characters; use printable text (it is printed by runs and report)"),
        spec_case(&["bench", "{SPEC}"], &eleven_probes(1000), "{SPEC}:3: repetitions: the bench has 11000 cells (1000 repetitions × 1 configuration × 1 scenario × 1 deployment × 11 probes), more than 10000, the most one bench runs; use fewer repetitions or split the spec"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"nope\"\n"), "{SPEC}:3: probe[0].kind: unknown probe kind \"nope\"; use cyclic, wakeup, chase, ctxswitch, response, timerlat, roundtrip, netcycle or observe"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\nperiod = \"1ns\"\n"), "{SPEC}:4: probe[0].period: 1ns is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\nworking_set = \"1000GiB\"\n"), "{SPEC}:4: probe[0].working_set: 1000GiB is more than 4GiB, the largest buffer jitterlab allocates"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\nworking_set = \"768MiB\"\n"), "{SPEC}: probe[0].working_set: 768MiB is more than half of this machine's memory (MemTotal 1048576 kB in /proc/meminfo): the probe locks what it allocates (mlockall) and the neighbours need the rest; give at most 512MiB"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\noutliers = 100000000\n"), "{SPEC}:4: probe[0].outliers: 100000000 is more than 10000, the most outliers kept per metric"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\nscan = \"2ms\"\n"), "{SPEC}:4: probe[0].scan: scan 2ms must be shorter than the period 1ms"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\nwindow = \"100us\"\n"), "{SPEC}:4: probe[0].window: 100us is shorter than 1ms, the shortest window"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\nthreshold = \"0s\"\n"), "{SPEC}:4: probe[0].threshold: threshold must be longer than 0"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"cyclic\"\nmax_latency = \"8d\"\n"), "{SPEC}:4: probe[0].max_latency: 8d is more than 7d, the longest time jitterlab takes"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"chase\"\niterations = 0\n"), "{SPEC}:4: probe[0].iterations: 0 is less than 1"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"chase\"\nsamples = 99999999\n"), "{SPEC}:4: probe[0].samples: 99999999 is more than 1048576, the most samples a chase keeps"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"chase\"\nbuffer = \"5GiB\"\n"), "{SPEC}:4: probe[0].buffer: 5GiB is more than 4GiB, the largest buffer jitterlab allocates"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"chase\"\nbuffer = \"768MiB\"\n"), "{SPEC}: probe[0].buffer: 768MiB is more than half of this machine's memory (MemTotal 1048576 kB in /proc/meminfo): the probe locks what it allocates (mlockall) and the neighbours need the rest; give at most 512MiB"),
        spec_case(&["bench", "{SPEC}"], &probe("kind = \"wakeup\"\nscan = \"10us\"\n"), "{SPEC}:4: probe[0].scan: scan applies only to kind = \"cyclic\" or kind = \"roundtrip\"; remove it from this wakeup probe"),
        spec_case(
            &["bench", "{SPEC}"],
            "duration = \"7d\"\n[[configuration]]\nname = \"w\"\nprobe_cpus = \"0-1\"\n[[probe]]\nkind = \"wakeup\"\n",
            "{SPEC}:5: probe[0].window: 7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration",
        ),
        spec_case(&["bench", "{SPEC}"], &with("[[configuration]]\nname = \"a\"\nprobe_cpus = \"9\"\n"), "{SPEC}:4: configuration[0].probe_cpus: CPU 9 is not online (online CPUs: 0-1)"),
        spec_case(&["bench", "{SPEC}"], &with("[[configuration]]\nname = \"a\"\nprobe_cpus = \"0-99999\"\n"), "{SPEC}:4: configuration[0].probe_cpus: \"0-99999\" names CPU 99999; CPU numbers stop at 8191 (the kernel's largest NR_CPUS)"),
        spec_case(&["bench", "{SPEC}"], &with("[[configuration]]\nname = \"a\"\npriority = 100\n"), "{SPEC}:4: configuration[0].priority: 100 is out of range 1..=99"),
        spec_case(&["bench", "{SPEC}"], &with("[[configuration]]\nname = \"a\"\npolicy = \"batch\"\n"), "{SPEC}:4: configuration[0].policy: unknown policy \"batch\"; use fifo, rr or other"),
        spec_case(&["bench", "{SPEC}"], &with("[[configuration]]\nname = \"a b\"\n"), "{SPEC}:3: configuration[0].name: name \"a b\" may use only ASCII letters, digits, _ and - (it becomes part of cell names like tuned/cpu/host/cyclic)"),
        spec_case(&["bench", "{SPEC}"], &with("[configuration]\nname = \"a\"\n"), "{SPEC}:2: configuration: invalid type: table, expected an array; write [[configuration]] with double brackets"),
        spec_case(&["bench", "{SPEC}"], &with("baseline = \"none\"\n"), "{SPEC}:2: baseline: \"none\" names no configuration (configurations: default)"),
        spec_case(&["bench", "{SPEC}"], &with("[[configuration]]\nname = \"a\"\ngovernor = \"fast!\"\n"), "{SPEC}:4: configuration[0].governor: governor \"fast!\" is not a cpufreq governor name (e.g. performance, schedutil)"),
        spec_case(&["bench", "{SPEC}"], &with("[[configuration]]\nname = \"a\"\nmin_freq = \"2GHz\"\nmax_freq = \"1GHz\"\n"), "{SPEC}:4: configuration[0].min_freq: min_freq (2000000 kHz) is above max_freq (1000000 kHz); lower min_freq or raise max_freq"),
        spec_case(&["bench", "{SPEC}"], &with("[[scenario]]\nname = \"s\"\nbuiltin = \"nope\"\n"), "{SPEC}:4: scenario[0].builtin: unknown builtin \"nope\"; use one of idle, cpu, disk, usb, network, scheduling, misc, codesys, redhat, cache"),
        spec_case(
            &["bench", "{SPEC}"],
            &with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = [\"/etc\"]\n"),
            "neighbour etc: `/etc` is a directory, not a program; give the program to start as the first word of its command, e.g. [\"stress-ng\", \"--cpu\", \"1\"]",
        ),
        spec_case(
            &["bench", "{SPEC}"],
            &with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = []\n"),
            "{SPEC}:5: scenario[0].neighbour[0].command: command is empty; give the program and its arguments, e.g. [\"stress-ng\", \"--cpu\", \"1\"]",
        ),
        spec_case(
            &["bench", "{SPEC}"],
            &with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = [\"/nonexistent/tool\"]\n"),
            "neighbour tool needs `/nonexistent/tool`, which is not installed; install it or fix the scenario's command",
        ),
        spec_case(&["bench", "{SPEC}"], &sixty_five_neighbours(), "{SPEC}:196: scenario[0].neighbour[64]: scenario many has 65 neighbours, more than 64, the most one scenario starts; split the load over scenarios"),
        // ---- apply
        case(&["apply"], "give a SPEC file (e.g. examples/codesys.toml) or --preset NAME (list them with: jitterlab presets)"),
        spec_case(&["apply", "{SPEC}", "--configuration", "nope"], &with("[[configuration]]\nname = \"a\"\n"), "--configuration nope is not in the spec (configurations: a)"),
        spec_case(
            &["apply", "{SPEC}"],
            &with("[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"b\"\n"),
            "the spec has several configurations; name one with --configuration (a, b)",
        ),
        // ---- presets, runs, report, check, restore
        case(&["presets", "--show", "nope"], "there is no preset nope; list them with: jitterlab presets"),
        case(&["runs"], "no results database at {DIR}/j.db; run a probe first (jitterlab run cyclic) or name the database with --db"),
        case(&["report"], "no results database at {DIR}/j.db; run a probe first (jitterlab run cyclic) or name the database with --db"),
        clap(&["report", "--format", "xml"], "invalid value 'xml' for '--format <FORMAT>'"),
        clap(&["report", "--table", "nope"], "invalid value 'nope' for '--table <TABLE>'"),
        clap(&["report", "one"], "invalid value 'one' for '[RUN]...': not a run id or uid: give a run's id or at least 4 characters of its uid, as jitterlab runs lists them"),
        case(&["check", "--cpus", "9"], "--cpus 9: CPU 9 is not online (online CPUs: 0-1); name the probe CPUs among them"),
        clap(&["check", "--cpus", "0-99999"], "invalid value '0-99999' for '--cpus <LIST>': \"0-99999\" names CPU 99999; CPU numbers stop at 8191 (the kernel's largest NR_CPUS)"),
        clap(&["restore", "now"], "unexpected argument 'now' found"),
        clap(&["frobnicate"], "unrecognized subcommand 'frobnicate'"),
    ]
}

/// How long a refusal may take: an input that is wrongly accepted starts a
/// run (or an apply that holds), which the test kills rather than waits for.
const REFUSED_WITHIN: Duration = Duration::from_secs(20);

/// Runs `cmd` to its end, or kills it (SIGKILL) after [`REFUSED_WITHIN`];
/// its stderr must be piped and small.
fn output_within(mut cmd: StdCommand) -> Output {
    let mut child = cmd.spawn().unwrap();
    let end = Instant::now() + REFUSED_WITHIN;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

/// The address space a refusal may use: an overlarge input wrongly
/// accepted then fails its allocation (and the test) at once instead of
/// taking the machine's memory.
const ADDRESS_SPACE: &str = "--as=2147483648";

/// jitterlab on `root` with its journal and database in `scratch`, stdout
/// and stderr piped, its address space limited by util-linux's `prlimit`
/// where there is one.
fn jl_cmd(root: &Path, scratch: &Path) -> StdCommand {
    let bin = assert_cmd::cargo::cargo_bin("jitterlab");
    let prlimit = Path::new("/usr/bin/prlimit");
    let mut c = if prlimit.exists() {
        let mut c = StdCommand::new(prlimit);
        c.arg(ADDRESS_SPACE).arg("--").arg(bin);
        c
    } else {
        StdCommand::new(bin)
    };
    c.current_dir(scratch)
        .env("JITTERLAB_DB", scratch.join("j.db"))
        .env("JITTERLAB_JOURNAL", scratch.join("journal.json"))
        .arg("--sysroot")
        .arg(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// Runs `args` with the journal and database in `scratch`.
fn jl(root: &Path, scratch: &Path, args: &[String]) -> Output {
    let mut c = jl_cmd(root, scratch);
    c.args(args);
    output_within(c)
}

#[test]
fn every_bad_input_is_one_line_exit_2_and_changes_nothing() {
    let root = sysroot();
    let before = tree(root.path());
    let mut failures = Vec::new();
    let cases = corpus();
    assert!(cases.len() >= 60, "{} cases", cases.len());
    for (n, c) in cases.iter().enumerate() {
        let scratch = tempfile::tempdir().unwrap();
        let spec = scratch.path().join(format!("spec-{n}.toml"));
        if let Some(text) = &c.spec {
            std::fs::write(&spec, text).unwrap();
        }
        let spec_s = spec.to_str().unwrap();
        let args: Vec<String> = c.args.iter().map(|a| a.replace("{SPEC}", spec_s)).collect();
        let out = jl(root.path(), scratch.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let dir_s = scratch.path().to_str().unwrap();
        let line = c.line.replace("{SPEC}", spec_s).replace("{DIR}", dir_s);
        let expected = format!("jitterlab: error: {line}\n");
        let mut wrong = Vec::new();
        if out.status.code() != Some(2) {
            wrong.push(format!("status {:?}", out.status));
        }
        if stderr.contains("panicked") {
            wrong.push("panicked".into());
        }
        if stderr != expected {
            wrong.push(format!("stderr {stderr:?}\n     expected {expected:?}"));
        }
        if !out.stdout.is_empty() {
            wrong.push(format!("stdout {:?}", String::from_utf8_lossy(&out.stdout)));
        }
        let mut left: Vec<String> = std::fs::read_dir(scratch.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        left.retain(|f| !f.starts_with("spec-"));
        if !left.is_empty() {
            wrong.push(format!("left in the scratch directory: {left:?}"));
        }
        if tree(root.path()) != before {
            wrong.push("the fake sysroot changed".into());
        }
        if !wrong.is_empty() {
            failures.push(format!("{args:?}:\n  {}", wrong.join("\n  ")));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

// ---------------------------------------------------------------------------
// A closed stdout (issue 11, item 6) and stored names with control
// characters (item 4).

/// The name and host name a hand-edited database gives the stored run.
const HOSTILE: &str = "x\u{1b}[31m\nforged";

/// A directory whose `j.db` holds one real, short wake-up run (on this
/// machine, not the fake one) whose stored name and host name are
/// [`HOSTILE`], as a database from elsewhere, or edited by hand, may have
/// them.
fn hostile_db() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::cargo_bin("jitterlab")
        .unwrap()
        .env("JITTERLAB_DB", dir.path().join("j.db"))
        .env("JITTERLAB_JOURNAL", dir.path().join("journal.json"))
        .args(["run", "wakeup", "--duration", "200ms", "--window", "100ms"])
        .arg("--no-dma-latency")
        .timeout(REFUSED_WITHIN)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let db = rusqlite::Connection::open(dir.path().join("j.db")).unwrap();
    db.execute("UPDATE runs SET name = ?1", [HOSTILE]).unwrap();
    db.execute("UPDATE hosts SET hostname = ?1", [HOSTILE])
        .unwrap();
    dir
}

/// Runs jitterlab on `root` with the database and journal of `scratch`,
/// stdout a pipe whose reader is already closed.
fn with_closed_stdout(root: &Path, scratch: &Path, args: &[&str]) -> Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let mut c = jl_cmd(root, scratch);
    c.args(args).stdout(writer);
    output_within(c)
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let root = sysroot();
    let before = machine(root.path());
    let scratch = hostile_db();
    let spec = scratch.path().join("plan.toml");
    std::fs::write(&spec, with("")).unwrap();
    let spec = spec.to_str().unwrap();
    for args in [
        &["bench", "--dry-run", spec][..],
        &["presets"],
        &["presets", "--show", "codesys"],
        &["runs"],
        &["report"],
        &["report", "--format", "md"],
        &["report", "--format", "json"],
        &["check"],
        &["check", "--json"],
        &["restore"],
        &["--help"],
        &["run", "--help"],
    ] {
        let out = with_closed_stdout(root.path(), scratch.path(), args);
        assert_eq!(
            (
                out.status.code(),
                String::from_utf8_lossy(&out.stderr).as_ref()
            ),
            (Some(141), ""),
            "{args:?}"
        );
    }
    assert_eq!(machine(root.path()), before);
}

#[test]
fn a_reader_that_goes_after_the_first_line_ends_a_long_plan_quietly() {
    // 9900 cells: a plan larger than a pipe holds, so the bench is still
    // writing when the reader goes.
    let root = sysroot();
    let scratch = tempfile::tempdir().unwrap();
    let spec = scratch.path().join("long.toml");
    std::fs::write(&spec, eleven_probes(900)).unwrap();
    let mut c = jl_cmd(root.path(), scratch.path());
    c.args(["bench", "--dry-run"]).arg(&spec);
    let mut child = c.spawn().unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    assert_eq!(first, "plan: long\n");
    // The reader was dropped after one line; a bench that wrongly went on
    // is killed after a while rather than waited for.
    let end = Instant::now() + REFUSED_WITHIN;
    while child.try_wait().unwrap().is_none() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    let left: Vec<_> = std::fs::read_dir(scratch.path()).unwrap().collect();
    assert_eq!(left.len(), 1, "only the spec: {left:?}");
}

#[test]
fn stored_names_are_printed_with_control_characters_escaped() {
    let dir = hostile_db();
    let db = dir.path().join("j.db");
    let run = |args: &[&str]| {
        Command::cargo_bin("jitterlab")
            .unwrap()
            .arg("--db")
            .arg(&db)
            .args(args)
            .timeout(REFUSED_WITHIN)
            .output()
            .unwrap()
    };
    let jl = |args: &[&str]| {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let runs = jl(&["runs"]);
    assert!(!runs.contains('\u{1b}'), "{runs}");
    let lines: Vec<&str> = runs.lines().collect();
    assert_eq!(
        lines.len(),
        2,
        "a header and one run, no forged line: {runs}"
    );
    assert!(
        lines[1].starts_with("   1  ")
            && lines[1].contains("  run    x\\u{1b}[31m\\nforged  completed  ")
            && lines[1].contains("  x\\u{1b}[31m\\nforged  "),
        "{runs}"
    );
    let md = jl(&["report", "--format", "md"]);
    assert!(!md.contains('\u{1b}'), "{md}");
    // Markdown also escapes the `[` that could open a link.
    // Under the record header, whose host line is escaped too.
    assert!(md.starts_with("### Record\n\n"), "{md}");
    assert!(
        md.contains("\n\n## Run 1: x\\u{1b}\\[31m\\nforged (run)\n\n"),
        "{md}"
    );
    assert!(md.contains("\n- host: x\\u{1b}\\[31m\\nforged\n"), "{md}");
    let csv = jl(&["report", "--format", "csv"]);
    assert!(!csv.contains('\u{1b}'), "{csv}");
    // JSON keeps the exact name, in JSON's own escaping.
    let json = jl(&["report", "--format", "json", "1", "1"]);
    assert!(!json.contains('\u{1b}'));
    // A negative run id is a run id, not an unknown flag.
    let out = run(&["report", "-1"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "jitterlab: error: there is no run -1 in the database; list the runs with: jitterlab runs\n"
    );
}

#[test]
fn apply_whose_reader_is_gone_puts_everything_back_at_once() {
    // Without the fix the first println! panicked while timer_migration
    // was 0, and the value stayed so until `jitterlab restore`; a fix that
    // went missing holds until the test kills it.
    let root = sysroot();
    let before = machine(root.path());
    let scratch = tempfile::tempdir().unwrap();
    let spec = scratch.path().join("apply.toml");
    std::fs::write(
        &spec,
        with("[[configuration]]\nname = \"t\"\ntimer_migration = false\n"),
    )
    .unwrap();
    let out = with_closed_stdout(
        root.path(),
        scratch.path(),
        &["apply", spec.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(141), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
    assert_eq!(machine(root.path()), before, "timer_migration is back");
    assert!(
        !scratch.path().join("journal.json").exists(),
        "the journal is finished"
    );
}

// ---------------------------------------------------------------------------
// Messages that name the real cause.

/// A root process whose `/proc/sys` is mounted read-only (as in most
/// containers) is told so, not that the setting "needs root". The sysroot's
/// `proc/sys` is bind-mounted read-only in a private mount namespace
/// (`unshare --mount`, util-linux), which needs root.
#[test]
fn a_read_only_proc_sys_is_named_as_such_not_as_needing_root() {
    if jitterlab_sys::effective_uid() != 0 {
        eprintln!("skipping: mounting a read-only /proc/sys needs root");
        return;
    }
    if !Path::new("/usr/bin/unshare").exists() {
        eprintln!("skipping: /usr/bin/unshare (util-linux) is not installed");
        return;
    }
    let root = sysroot();
    let before = machine(root.path());
    let scratch = tempfile::tempdir().unwrap();
    let spec = scratch.path().join("apply.toml");
    std::fs::write(
        &spec,
        with("[[configuration]]\nname = \"t\"\ntimer_migration = false\n"),
    )
    .unwrap();
    let sys = root.path().join("proc/sys");
    let out = StdCommand::new("/usr/bin/unshare")
        .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
        .arg("mount --bind -o ro \"$1\" \"$1\" && shift && exec \"$@\"")
        .arg("sh")
        .arg(&sys)
        .arg(assert_cmd::cargo::cargo_bin("jitterlab"))
        .arg("--sysroot")
        .arg(root.path())
        .args(["apply", spec.to_str().unwrap()])
        .env("JITTERLAB_JOURNAL", scratch.path().join("journal.json"))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!(
            "jitterlab: error: cannot write {}/kernel/timer_migration: its file system is mounted read-only (as /proc/sys is in most containers); run jitterlab where it can be written, or remove the setting from the configuration\n",
            sys.display()
        )
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(machine(root.path()), before);
}
