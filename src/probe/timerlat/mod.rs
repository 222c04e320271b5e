//! Interrupt latency, measured by the kernel's timerlat tracer through
//! `rtla timerlat hist` (Debian package `rtla`).
//!
//! [Xu EPICS] splits a controller's reaction into interrupt latency,
//! context-switch latency and total response latency. A user-space probe
//! cannot see the first of these: it only learns when *it* runs. The
//! kernel's timerlat tracer can. On each measured CPU it arms a periodic
//! timer and records, per activation, the **IRQ latency** (timer expiry →
//! the timer's interrupt handler runs) and the **thread latency** (expiry →
//! the tracer's real-time thread runs); with `-u` (rtla ≥ 6.6) the thread is
//! a user-space one and rtla also reports the return to user space. rtla is
//! the kernel's own front end to the tracer, so we drive it rather than the
//! tracefs files: it sets the tracer up, restores it afterwards and
//! histograms the samples without a trace buffer that could overflow.
//!
//! ## Pieces
//!
//! - [`availability`] says, before anything starts, whether this can work:
//!   tracefs under the root (`sys/kernel/tracing`, else
//!   `sys/kernel/debug/tracing`, found by [`crate::system::trace::find_tracefs`]),
//!   `timerlat` in its `available_tracers`, and `rtla` on `PATH`. When tracefs
//!   is not mounted, the kernel configuration (`proc/config.gz`, else
//!   `boot/config-RELEASE`) still tells whether the tracer was built
//!   (`CONFIG_TIMERLAT_TRACER`), so the answer is "boot another kernel"
//!   rather than "mount tracefs" when mounting would not help.
//! - [`TimerlatArgs`] → [`argv`]: the exact command line. [`validate`]
//!   refuses what rtla would refuse (`-p` in whole µs up to 1 s, `-d` in
//!   whole seconds, `-E`/`-b` limits) before anything starts.
//! - [`parse_hist`] (in [`jitterlab_core::rtla`], with the format of
//!   rtla's output across versions) reads rtla's output into a [`TimerlatHist`];
//!   [`to_metrics`] turns it into our own
//!   [`MetricStats`] per CPU, so the
//!   store and the reports treat rtla's latencies like our probes' metrics.
//! - [`run`] starts rtla, waits, stops it, and returns everything
//!   ([`TimerlatOutcome`]).
//!
//! ## Buckets and overflow
//!
//! Every value jitterlab keeps from a histogram is a **bucket floor**: a
//! sample of 2.7 µs in 1 µs buckets is kept as 2000 ns. That biases the
//! mean and quantiles down by up to one bucket, and counts a sample in the
//! bucket whose floor equals the threshold as not over it. rtla's own
//! min and max are exact to its unit and are kept from its summary. The
//! default buckets are 100 ns wide with `--nano` (1 µs without: the finest
//! rtla offers in µs) and reach 10 ms, and always past the threshold;
//! samples past the end (`over:`) are kept at the end's value, the floor of
//! what they can be.
//!
//! ## Running rtla
//!
//! rtla is started with an argument vector, in its own process group,
//! pinned where asked and killed if jitterlab dies
//! ([`jitterlab_sys::set_child_hooks`]); its stdout and stderr go to new
//! files in the work directory (`rtla.stdout`, `rtla.stderr`, created
//! without following a symbolic link:
//! [`crate::system::workdir::create_file`]), never to pipes that could fill
//! while it runs. rtla ends by itself after `-d`; on
//! a terminating signal of jitterlab (the `signalled` flag) it gets SIGINT, as
//! from a terminal's Ctrl-C, and prints its histogram. An rtla still running
//! 10 s after its duration is sent SIGINT too, and one that has not ended
//! 10 s after SIGINT is killed — which leaves its trace instance running,
//! so the error says how to remove it. A SIGINT that reaches rtla before it
//! has set up its handler ends it without a histogram; that is an error too.
//! Whatever is left of rtla's process group once it has ended is killed.
//!
//! ## In a run and a bench cell
//!
//! A run and a bench cell ask rtla the same way: [`build`] makes the
//! [`TimerlatRequest`] from the cell of the typed spec, and the runner's
//! lifecycle measures the [`TimerlatProbe`] like any external tool. rtla's
//! output files go to the bench's directory of the cell, or, for a run, to
//! a fresh private work directory in jitterlab's runtime directory
//! ([`crate::system::workdir`]), journaled, and removed when rtla has
//! ended. Where the tracer is missing (no `CONFIG_TIMERLAT_TRACER`,
//! tracefs not mounted, no `rtla`), a run is refused before anything
//! starts (the command line checks, with exit status 2 and the sentence
//! [`availability`] wrote); a bench skips such a cell with that sentence as
//! its note ([`unavailable`]).
//!
//! rtla, through libtracefs, mounts tracefs by itself when it finds it
//! unmounted — a change to the machine no journal would undo. Run it only
//! after [`availability`] agreed, which asks for tracefs to be mounted.
//!
//! The documents cited here are listed in `docs/design.md`.

pub mod flags;

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context, Result};
pub use jitterlab_core::rtla::to_metrics;
use jitterlab_core::rtla::{parse_hist, TimerlatHist};
use jitterlab_core::units::{format_duration_exact, CpuList};
use jitterlab_sys as sys;
use serde::{Deserialize, Serialize};

use crate::error::bad;
use crate::system::procs::group_members;
use crate::system::trace::{find_tracefs, TracefsStatus};

use super::{Cell, ExternalProbe, ExternalRun, Finished, Probes};
use crate::store::StoredHistogram;
use crate::system::journal::Journal;
use crate::system::workdir::{self, WorkDir};
use jitterlab_core::result::{Params, ThreadResult, UsageDelta};
use jitterlab_core::spec::{CellPlan, Spec};
use jitterlab_core::stats::MetricStats;
use jitterlab_core::timerlat::TimerlatParams;

/// The kernel option that builds the tracer.
const CONFIG_OPTION: &str = "CONFIG_TIMERLAT_TRACER";
/// What to do when the kernel has no timerlat tracer.
const TRACER_FIX: &str = "boot a kernel built with CONFIG_TIMERLAT_TRACER=y";
/// The PATH used when the environment has none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
/// How many lines of rtla's stderr an error quotes.
const TAIL_LINES: usize = 5;
/// Where rtla's trace instance lives, for the error after a kill.
const RTLA_INSTANCE: &str = "/sys/kernel/tracing/instances/timerlat_hist";

/// rtla's limits (timerlat_hist.c): bucket size below 1 000 000, entries
/// from 10 to 9 999 999, period at most 1 s, `--dma-latency` below 10 000 µs.
const MAX_BUCKET: u64 = 999_999;
const MIN_ENTRIES: u64 = 10;
const MAX_ENTRIES: u64 = 9_999_999;
const MAX_DMA_LATENCY_US: u32 = 9_999;
/// The timerlat tracer's period range (`timerlat_period_us`): 100 µs … 1 s.
const MIN_PERIOD_NS: u64 = 100_000;
const MAX_PERIOD_NS: u64 = 1_000_000_000;

/// Checks that the timerlat tracer and rtla are there. `Err` names plainly
/// what is missing and how to fix it, every missing piece in one line.
pub fn availability(root: &Path) -> Result<(), String> {
    availability_with_path(root, std::env::var_os("PATH"))
}

/// [`availability`] with the `PATH` to search for rtla given.
fn availability_with_path(root: &Path, path: Option<OsString>) -> Result<(), String> {
    let mut missing = Vec::new();
    if let Err(e) = tracer_status(root) {
        missing.push(e);
    }
    if find_program("rtla", path).is_none() {
        missing.push("rtla is not installed; install it with: apt-get install rtla".to_string());
    }
    if missing.is_empty() {
        Ok(())
    } else {
        Err(missing.join("; "))
    }
}

/// Whether the kernel offers the timerlat tracer under `root`.
fn tracer_status(root: &Path) -> Result<(), String> {
    let no_tracer = |why: String| format!("the kernel has no timerlat tracer: {why}; {TRACER_FIX}");
    match find_tracefs(root) {
        TracefsStatus::Ready(dir) => {
            let path = dir.join("available_tracers");
            let text = fs::read_to_string(&path).map_err(|e| {
                format!(
                    "cannot read {}: {e}; the timerlat tracer is looked up there",
                    path.display()
                )
            })?;
            if text.split_whitespace().any(|t| t == "timerlat") {
                Ok(())
            } else {
                Err(no_tracer(format!("{} does not list it", path.display())))
            }
        }
        status @ (TracefsStatus::NotMounted(_) | TracefsStatus::Missing) => {
            if let Some((config, false)) = kernel_config(root) {
                return Err(no_tracer(format!(
                    "{CONFIG_OPTION} is not set in {}",
                    config.display()
                )));
            }
            Err(match status {
                TracefsStatus::NotMounted(dir) => format!(
                    "tracefs is not mounted at {0}, so the timerlat tracer cannot be found; \
                     mount it with: mount -t tracefs nodev {0}",
                    dir.display()
                ),
                other => other.explain(),
            })
        }
        status @ TracefsStatus::NoAccess(_) => Err(status.explain()),
    }
}

/// The kernel configuration under `root` — `proc/config.gz`, else
/// `boot/config-RELEASE` (`RELEASE` from `proc/sys/kernel/osrelease`) — and
/// whether it builds the timerlat tracer; `None` when neither can be read.
fn kernel_config(root: &Path) -> Option<(PathBuf, bool)> {
    let on = format!("{CONFIG_OPTION}=y");
    let builds = |text: &str| text.lines().any(|l| l.trim() == on);
    let gz = root.join("proc/config.gz");
    if let Ok(file) = File::open(&gz) {
        let mut text = String::new();
        if flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .is_ok()
        {
            return Some((gz, builds(&text)));
        }
    }
    let release = crate::system::host::read_opt(root, "proc/sys/kernel/osrelease")?;
    let boot = root.join(format!("boot/config-{}", release.trim()));
    let text = fs::read_to_string(&boot).ok()?;
    Some((boot, builds(&text)))
}

/// Where `program` is: itself when it holds a `/`, else the first
/// executable file of that name on `path` (or the default PATH).
fn find_program(program: &str, path: Option<OsString>) -> Option<PathBuf> {
    let executable = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = PathBuf::from(program);
        return executable(&p).then_some(p);
    }
    let path = path.unwrap_or_else(|| DEFAULT_PATH.into());
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| executable(p))
}

/// What to ask of rtla.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerlatArgs {
    /// The rtla program: a name looked up on `PATH`, or a path.
    pub rtla: PathBuf,
    /// CPUs to measure (`-c`); empty: every CPU (rtla's default).
    pub cpus: CpuList,
    /// The timer's period (`-p`): whole microseconds from 100 µs to 1 s.
    pub period_ns: u64,
    /// How long to measure (`-d`): whole seconds, at least one.
    pub duration_ns: u64,
    /// SCHED_FIFO priority of the measuring threads (`-P f:N`); `None`
    /// leaves rtla's default.
    pub priority: Option<u8>,
    /// The latency threshold of the "% over" column; the histogram always
    /// reaches past it, so every sample over it is counted.
    pub threshold_ns: u64,
    /// Ask for nanoseconds (`--nano`); [`run`] falls back to microseconds
    /// when the installed rtla lacks the option, and says so.
    pub nano: bool,
    /// Bucket width in ns (`-b`); in microseconds (no `--nano`) rounded down
    /// to whole µs, at least 1 µs.
    pub bucket_ns: u64,
    /// Where the histogram ends (`-E` = range ÷ bucket, rounded up, at
    /// least 10): latencies at or past it are counted in `over:`.
    pub range_ns: u64,
    /// Hold `/dev/cpu_dma_latency` at this many µs while measuring
    /// (`--dma-latency`); `None`: not held.
    pub dma_latency_us: Option<u32>,
    /// Measure with rtla's user-space threads (`-u`, rtla ≥ 6.6).
    pub user_threads: bool,
    /// CPUs rtla's own process is pinned to (the measuring threads are
    /// placed by rtla); empty: inherited.
    pub rtla_cpus: Vec<usize>,
    /// Directory for `rtla.stdout` and `rtla.stderr`.
    pub workdir: PathBuf,
}

impl TimerlatArgs {
    /// The defaults: `rtla` from `PATH`, a 1 ms period, SCHED_FIFO 95,
    /// threshold 100 µs, `--nano` with 100 ns buckets up to 10 ms,
    /// `/dev/cpu_dma_latency` held at 0, kernel threads.
    pub fn new(cpus: CpuList, duration_ns: u64, workdir: PathBuf) -> TimerlatArgs {
        TimerlatArgs {
            rtla: PathBuf::from("rtla"),
            cpus,
            period_ns: jitterlab_core::defaults::PERIOD_NS,
            duration_ns,
            priority: Some(jitterlab_core::defaults::PRIORITY as u8),
            threshold_ns: jitterlab_core::defaults::THRESHOLD_NS,
            nano: true,
            bucket_ns: 100,
            range_ns: 10_000_000,
            dma_latency_us: Some(0),
            user_threads: false,
            rtla_cpus: Vec::new(),
            workdir,
        }
    }

    /// Nanoseconds per unit of rtla's output: 1 with `--nano`, else 1000.
    fn unit_ns(&self) -> u64 {
        if self.nano {
            1
        } else {
            1000
        }
    }

    /// The bucket size in rtla's unit (`-b`).
    fn bucket(&self) -> u64 {
        (self.bucket_ns / self.unit_ns()).max(1)
    }

    /// The number of buckets (`-E`).
    fn entries(&self) -> u64 {
        let width = self.bucket() * self.unit_ns();
        let reach = self.range_ns.max(self.threshold_ns.saturating_add(1));
        reach.div_ceil(width).max(MIN_ENTRIES)
    }
}

/// Where the histogram of `a` ends, in ns: samples at or past it are
/// counted in `over:`.
pub fn hist_limit_ns(a: &TimerlatArgs) -> u64 {
    a.entries() * a.bucket() * a.unit_ns()
}

/// Refuses, as bad input, what rtla or the tracer would refuse.
pub fn validate(a: &TimerlatArgs) -> Result<()> {
    if a.duration_ns < 1_000_000_000 || !a.duration_ns.is_multiple_of(1_000_000_000) {
        return Err(bad(format!(
            "timerlat duration must be whole seconds, at least 1s (rtla's -d); got {}",
            format_duration_exact(a.duration_ns)
        )));
    }
    if !a.period_ns.is_multiple_of(1000) || !(MIN_PERIOD_NS..=MAX_PERIOD_NS).contains(&a.period_ns)
    {
        return Err(bad(format!(
            "timerlat period must be whole microseconds from 100us to 1s (rtla's -p); got {}",
            format_duration_exact(a.period_ns)
        )));
    }
    if let Some(p) = a.priority {
        if !(1..=99).contains(&p) {
            return Err(bad(format!(
                "timerlat priority must be a SCHED_FIFO priority from 1 to 99; got {p}"
            )));
        }
    }
    if a.bucket() > MAX_BUCKET {
        return Err(bad(format!(
            "timerlat bucket must be below {} ({MAX_BUCKET} {} for rtla's -b); got {}",
            format_duration_exact((MAX_BUCKET + 1).saturating_mul(a.unit_ns())),
            if a.nano { "ns" } else { "us" },
            format_duration_exact(a.bucket_ns)
        )));
    }
    if a.entries() > MAX_ENTRIES {
        return Err(bad(format!(
            "timerlat histogram needs {} buckets of {} to reach {}, more than rtla's {MAX_ENTRIES}; \
             use wider buckets or a shorter range",
            a.entries(),
            format_duration_exact(a.bucket() * a.unit_ns()),
            format_duration_exact(a.range_ns.max(a.threshold_ns))
        )));
    }
    if let Some(us) = a.dma_latency_us {
        if us > MAX_DMA_LATENCY_US {
            return Err(bad(format!(
                "timerlat dma latency must be below 10000 us (rtla's --dma-latency); got {us} us"
            )));
        }
    }
    Ok(())
}

/// The command line for `a` (assumed [`validate`]d), program first.
pub fn argv(a: &TimerlatArgs) -> Vec<String> {
    let mut v: Vec<String> = vec![
        a.rtla.to_string_lossy().into_owned(),
        "timerlat".into(),
        "hist".into(),
    ];
    if !a.cpus.is_empty() {
        v.extend(["-c".into(), a.cpus.to_string()]);
    }
    v.extend(["-p".into(), (a.period_ns / 1000).to_string()]);
    v.extend(["-d".into(), (a.duration_ns / 1_000_000_000).to_string()]);
    if let Some(p) = a.priority {
        v.extend(["-P".into(), format!("f:{p}")]);
    }
    if let Some(us) = a.dma_latency_us {
        v.extend(["--dma-latency".into(), us.to_string()]);
    }
    if a.nano {
        v.push("--nano".into());
    }
    v.extend(["-b".into(), a.bucket().to_string()]);
    v.extend(["-E".into(), a.entries().to_string()]);
    if a.user_threads {
        v.push("-u".into());
    }
    v
}

/// What the installed rtla is and offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RtlaInfo {
    /// The version it names (`rtla version 6.1`), if it names one.
    pub version: Option<String>,
    /// `timerlat hist --help` lists `--nano`.
    pub nano: bool,
    /// … lists `--user-threads` (`-u`).
    pub user_threads: bool,
    /// … lists `--dma-latency`.
    pub dma_latency: bool,
}

/// Asks `program` for its version (`rtla --version`, which rtla answers
/// with its usage on stderr and status 1) and for the options of
/// `timerlat hist` (`--help`). Both streams are read, whatever the status.
pub fn rtla_info(program: &Path) -> Result<RtlaInfo> {
    let ask = |args: &[&str]| -> Result<String> {
        let out = Command::new(program)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| {
                if e.kind() == std::io::ErrorKind::NotFound {
                    bad(format!(
                        "rtla is not installed (no `{}`); install it with: apt-get install rtla",
                        program.display()
                    ))
                } else {
                    anyhow!("cannot run `{} {}`: {e}", program.display(), args.join(" "))
                }
            })?;
        let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.push_str(&String::from_utf8_lossy(&out.stderr));
        Ok(text)
    };
    let version = parse_version(&ask(&["--version"])?);
    let help = ask(&["timerlat", "hist", "--help"])?;
    Ok(RtlaInfo {
        version,
        nano: help.contains("--nano"),
        user_threads: help.contains("--user-threads"),
        dma_latency: help.contains("--dma-latency"),
    })
}

/// The version in "rtla version X".
fn parse_version(text: &str) -> Option<String> {
    text.lines()
        .find_map(|l| l.trim().strip_prefix("rtla version "))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// What a run of rtla produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerlatOutcome {
    /// The command line rtla was started with.
    pub argv: Vec<String>,
    /// rtla's version, if it names one.
    pub version: Option<String>,
    /// rtla's stdout, as printed.
    pub stdout: String,
    /// rtla's stderr, as printed.
    pub stderr: String,
    /// The parsed histogram (`limit_ns` set from the command line).
    pub hist: TimerlatHist,
    /// Stopped early by a terminating signal of jitterlab.
    pub interrupted: bool,
    /// How long rtla ran, ns.
    pub wall_ns: u64,
    /// What differs from what was asked, in words (e.g. no `--nano`).
    pub notes: Vec<String>,
}

/// How long [`run`] waits at each step.
#[derive(Debug, Clone, Copy)]
struct Waits {
    /// After the duration, before rtla is considered late and sent SIGINT.
    late: Duration,
    /// After SIGINT, before rtla is killed.
    stop: Duration,
    /// Between looks at rtla and the flag.
    poll: Duration,
}

const WAITS: Waits = Waits {
    late: Duration::from_secs(10),
    stop: Duration::from_secs(10),
    poll: Duration::from_millis(50),
};

/// Runs rtla as `args` asks: checks the arguments and the installed rtla
/// (falling back to µs without `--nano`, leaving out `--dma-latency` when it
/// lacks them, refusing `-u` when it lacks that), starts it (own process
/// group, pinned to `rtla_cpus`, output to files in `workdir`), waits for it
/// to end after its duration — or sends it SIGINT when `signalled` is
/// raised — and parses its histogram. A failing rtla is an error quoting
/// the end of its stderr. Call it from a thread that outlives rtla (the
/// parent-death signal follows the spawning thread).
pub fn run(args: &TimerlatArgs, signalled: &AtomicBool) -> Result<TimerlatOutcome> {
    run_with(args, signalled, WAITS)
}

fn run_with(args: &TimerlatArgs, signalled: &AtomicBool, waits: Waits) -> Result<TimerlatOutcome> {
    validate(args)?;
    let info = rtla_info(&args.rtla)?;
    let version = info.version.as_deref().unwrap_or("unknown");
    let mut a = args.clone();
    let mut notes = Vec::new();
    if a.user_threads && !info.user_threads {
        return Err(bad(format!(
            "this rtla (version {version}) has no user-space threads (-u, since rtla 6.6); \
             install a newer rtla or measure with kernel threads"
        )));
    }
    if a.nano && !info.nano {
        a.nano = false;
        notes.push(format!(
            "rtla {version} has no --nano: it measured in whole microseconds, kept as ns"
        ));
    }
    if a.dma_latency_us.is_some() && !info.dma_latency {
        a.dma_latency_us = None;
        notes.push(format!(
            "rtla {version} has no --dma-latency: /dev/cpu_dma_latency was not held"
        ));
    }
    validate(&a)?;
    let argv = argv(&a);
    let stdout_path = a.workdir.join("rtla.stdout");
    let stderr_path = a.workdir.join("rtla.stderr");
    let create = |p: &Path| {
        crate::system::workdir::create_file(p)
            .with_context(|| format!("cannot create rtla's output file {}", p.display()))
    };
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(Stdio::null())
        .stdout(create(&stdout_path)?)
        .stderr(create(&stderr_path)?);
    sys::set_child_hooks(&mut cmd, &a.rtla_cpus, None);
    let started = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| anyhow!("cannot start `{}`: {e}", argv.join(" ")))?;
    let pgid = child.id() as i32;
    let due = started + Duration::from_nanos(a.duration_ns) + waits.late;
    let mut interrupted = false;
    let mut stop_sent: Option<Instant> = None;
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().context("cannot wait for rtla")? {
            break status;
        }
        let now = Instant::now();
        match stop_sent {
            None if signalled.load(Relaxed) => {
                interrupted = true;
                let _ = sys::kill_group(pgid, sys::SIGINT);
                stop_sent = Some(now);
            }
            None if now >= due => {
                notes.push(format!(
                    "rtla had not ended {} after its duration: stopped with SIGINT",
                    format_duration_exact(waits.late.as_nanos() as u64)
                ));
                let _ = sys::kill_group(pgid, sys::SIGINT);
                stop_sent = Some(now);
            }
            Some(sent) if now >= sent + waits.stop => {
                let _ = sys::kill_group(pgid, sys::SIGKILL);
                killed = true;
                break child.wait().context("cannot wait for rtla")?;
            }
            _ => {}
        }
        std::thread::sleep(waits.poll);
    };
    let wall_ns = started.elapsed().as_nanos() as u64;
    // rtla is reaped; members left in its group keep the group id from
    // reuse, so the group is still ours to kill.
    if !group_members(pgid).is_empty() {
        let _ = sys::kill_group(pgid, sys::SIGKILL);
        // SIGKILL lands asynchronously, and the members are not our
        // children to wait for: watch them go (briefly), so nothing of
        // rtla outlives this call.
        let deadline = Instant::now() + Duration::from_secs(1);
        while !group_members(pgid).is_empty() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
    }
    let read = |p: &Path| fs::read(p).map(|b| String::from_utf8_lossy(&b).into_owned());
    let stdout = read(&stdout_path).unwrap_or_default();
    let stderr = read(&stderr_path).unwrap_or_default();
    if killed {
        bail!(
            "rtla did not end within {} of SIGINT and was killed; if timerlat still runs, \
             remove its trace instance: rmdir {RTLA_INSTANCE}",
            format_duration_exact(waits.stop.as_nanos() as u64)
        );
    }
    if interrupted && status.signal() == Some(sys::SIGINT) {
        bail!(
            "rtla was stopped by SIGINT before it had set up its handler for it, so it \
             printed no histogram"
        );
    }
    if !status.success() {
        bail!(
            "rtla failed ({}); {}",
            describe(status),
            stderr_tail(&stderr, &stderr_path)
        );
    }
    let mut hist = parse_hist(&stdout)
        .map_err(|e| anyhow!(e))
        .with_context(|| format!("cannot read rtla's histogram in {}", stdout_path.display()))?;
    hist.limit_ns = Some(hist_limit_ns(&a));
    Ok(TimerlatOutcome {
        argv,
        version: info.version,
        stdout,
        stderr,
        hist,
        interrupted,
        wall_ns,
        notes,
    })
}

/// "exited with status N" or "killed by signal N".
fn describe(status: ExitStatus) -> String {
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exited with status {code}"),
        (None, Some(sig)) => format!("killed by signal {sig}"),
        (None, None) => status.to_string(),
    }
}

/// The last lines of rtla's stderr, in one line.
fn stderr_tail(stderr: &str, path: &Path) -> String {
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return format!("it printed nothing on stderr ({})", path.display());
    }
    let tail = &lines[lines.len().saturating_sub(TAIL_LINES)..];
    format!(
        "the end of its stderr ({}): {}",
        path.display(),
        tail.iter()
            .map(|l| l.trim())
            .collect::<Vec<_>>()
            .join(" | ")
    )
}

// ---------------------------------------------------------------------------
// The probe the runner measures.

/// What a timerlat measurement is asked for: the same for `jitterlab run
/// timerlat` and a bench cell, built from the cell of the typed spec by
/// [`TimerlatRequest::new`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimerlatRequest {
    /// CPUs to measure.
    pub cpus: Vec<usize>,
    /// Timer period, ns.
    pub period_ns: u64,
    /// Duration, ns (whole seconds).
    pub duration_ns: u64,
    /// SCHED_FIFO priority of rtla's threads.
    pub priority: u8,
    /// "% over" threshold, ns.
    pub threshold_ns: u64,
    /// rtla's user-space threads (`-u`).
    pub user_threads: bool,
    /// Where rtla's output files go.
    pub workdir: PathBuf,
}

impl TimerlatRequest {
    /// The request of a cell: the probe's CPUs, period and threshold, the
    /// spec's duration, the configuration's priority (SCHED_FIFO 95 under a
    /// policy that has none); rtla's output goes to `workdir`.
    pub fn new(spec: &Spec, cell: &CellPlan, workdir: PathBuf) -> TimerlatRequest {
        let config = &spec.configurations[cell.configuration];
        let probe = &spec.probes[cell.probe];
        let user_threads = probe
            .params
            .get::<TimerlatParams>()
            .is_some_and(|t| t.user_threads);
        TimerlatRequest {
            cpus: probe.cpus(&config.probe_cpus),
            period_ns: probe.period_ns,
            duration_ns: spec.cell_duration_ns(cell),
            priority: config
                .priority
                .map_or(jitterlab_core::defaults::PRIORITY as u8, |p| {
                    p.clamp(0, 255) as u8
                }),
            threshold_ns: probe.threshold(),
            user_threads,
            workdir,
        }
    }

    fn args(&self) -> TimerlatArgs {
        let mut a = TimerlatArgs::new(
            self.cpus.iter().copied().collect(),
            self.duration_ns,
            self.workdir.clone(),
        );
        a.period_ns = self.period_ns;
        a.priority = Some(self.priority);
        a.threshold_ns = self.threshold_ns;
        a.user_threads = self.user_threads;
        a
    }

    /// Refuses what rtla would refuse, before anything starts.
    pub fn validate(&self) -> Result<()> {
        validate(&self.args())
    }

    /// The parameters stored with the result.
    pub fn params(&self) -> Params {
        Params {
            period_ns: self.period_ns,
            duration_ns: Some(self.duration_ns),
            cycles: None,
            cpus: self.cpus.clone(),
            policy: "fifo".into(),
            priority: Some(i32::from(self.priority)),
            nice: None,
            scan_ns: 0,
            working_set_bytes: 0,
            window_ns: 0,
            threshold_ns: self.threshold_ns,
            break_trace_ns: None,
            strict: false,
        }
    }
}

/// Where a bench cell's timerlat probe cannot measure, the note its
/// skipped cell gets; `None` where it can.
pub fn unavailable(root: &Path) -> Option<String> {
    availability(root)
        .err()
        .map(|why| format!("no interrupt latency here: {why}"))
}

/// The timerlat probe of a cell. rtla's output goes to the bench's
/// directory of the cell; a run makes a fresh private work directory in
/// jitterlab's runtime directory ([`crate::system::workdir`]), journaled,
/// removed in [`ExternalProbe::teardown`].
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let (dir, own) = match cell.workdir {
        Some(d) => (d.to_path_buf(), None),
        None => {
            let w = workdir::create_work_dir(cell.root, journal)?;
            (w.path().to_path_buf(), Some(w))
        }
    };
    Ok(Probes::External(Box::new(TimerlatProbe {
        request: TimerlatRequest::new(cell.spec, cell.cell, dir),
        workdir: own,
    })))
}

/// rtla, measuring on its own threads (see the module doc). Such a result
/// has per-CPU statistics (`irq`, `thread`, and `user` with
/// `--user-threads`) and the histograms behind them, but no window rows and
/// no outliers: the tracer does not say when a sample happened. What rtla
/// printed, its command line and version are kept in the result's
/// `detail`.
pub struct TimerlatProbe {
    request: TimerlatRequest,
    workdir: Option<WorkDir>,
}

impl ExternalProbe for TimerlatProbe {
    fn params(&self) -> Params {
        self.request.params()
    }

    fn measure(&mut self, ext: &mut ExternalRun<'_>) -> Result<Finished> {
        // rtla applies its own real-time set-up, and refuses to run without it.
        ext.ready(true)?;
        let req = &self.request;
        let out = run(&req.args(), ext.signalled)?;
        let per_cpu = to_metrics(&out.hist, req.threshold_ns);
        let defs = jitterlab_core::result::ProbeKind::Timerlat.metrics();
        let mut threads = Vec::new();
        let mut histograms = Vec::new();
        for (i, (cpu, metrics)) in per_cpu.iter().enumerate() {
            let mut summaries = std::collections::BTreeMap::new();
            for d in defs {
                let Some(s) = metrics.get(d.name) else {
                    continue;
                };
                summaries.insert(d.name.to_string(), s.summary());
                let h = s.histograms();
                histograms.push(StoredHistogram {
                    thread: Some(i as u32),
                    metric: d.name,
                    positive: h.positive,
                    negative: h.negative,
                    fine: None,
                });
            }
            let count = summaries.get("irq").map_or(0, |s| s.count);
            threads.push(ThreadResult {
                thread: i as u32,
                cpu: *cpu,
                tid: 0,
                cycles: count,
                releases: count,
                skipped: 0,
                overruns: 0,
                metrics: summaries,
                outliers: Default::default(),
                calibration: None,
                usage: UsageDelta::default(),
                window_rows: 0,
                dropped_rows: 0,
                counters: Default::default(),
            });
        }
        let combined = (threads.len() > 1).then(|| {
            let mut summaries = std::collections::BTreeMap::new();
            for (d, s) in defs.iter().zip(combined_stats(&per_cpu, defs)) {
                if let Some(s) = s {
                    summaries.insert(d.name.to_string(), s.summary());
                    let h = s.histograms();
                    histograms.push(StoredHistogram {
                        thread: None,
                        metric: d.name,
                        positive: h.positive,
                        negative: h.negative,
                        fine: None,
                    });
                }
            }
            summaries
        });
        let mut warnings = out.notes.clone();
        if let Some(m) = &out.hist.missed_events {
            warnings.push(format!(
                "rtla reported missed events ({m:?}): the histograms may lack samples"
            ));
        }
        Ok(Finished {
            realtime: None,
            limits: Vec::new(),
            threads,
            combined,
            histograms,
            warnings,
            detail: serde_json::to_value(&out)?,
            elapsed_ns: out.wall_ns,
            interrupted: out.interrupted,
        })
    }

    fn teardown(&mut self, _root: &Path, journal: &mut Journal) -> Vec<String> {
        match self.workdir.take().map(|w| w.remove(journal)) {
            Some(Err(e)) => vec![format!("warning: {e:#}")],
            _ => Vec::new(),
        }
    }
}

/// Every CPU's statistics merged, per metric of `defs`.
fn combined_stats(
    per_cpu: &[(usize, std::collections::BTreeMap<String, MetricStats>)],
    defs: &[jitterlab_core::probe::MetricDef],
) -> Vec<Option<MetricStats>> {
    defs.iter()
        .map(|d| {
            let mut acc: Option<MetricStats> = None;
            for (_, m) in per_cpu {
                if let Some(s) = m.get(d.name) {
                    match acc.as_mut() {
                        Some(a) => a.merge(s),
                        None => acc = Some(s.clone()),
                    }
                }
            }
            acc
        })
        .collect()
}

/// How the runner measures the `timerlat` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Timerlat,
    build,
    unavailable: Some(|root, _| unavailable(root)),
    flags: flags::flags,
    one_cell: flags::one_cell,
    report: super::ReportParts::NONE,
    placement: super::Placement::ProbeCpus,
    task: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    use jitterlab_core::rtla::TimeUnit;

    use crate::error::BadInput;
    use crate::testutil::{copy_fixture, fixture};

    /// A fixture of `tests/fixtures/timerlat/`.
    fn text(name: &str) -> String {
        fs::read_to_string(fixture("timerlat").join(name)).unwrap()
    }

    fn bad_text(e: anyhow::Error) -> String {
        assert!(
            e.downcast_ref::<BadInput>().is_some(),
            "not bad input: {e:#}"
        );
        e.to_string()
    }

    // ---- availability ----

    /// A directory holding an executable `rtla`, as a PATH.
    fn path_with_rtla() -> (tempfile::TempDir, OsString) {
        let dir = tempfile::tempdir().unwrap();
        let rtla = dir.path().join("rtla");
        fs::write(&rtla, "").unwrap();
        fs::set_permissions(&rtla, fs::Permissions::from_mode(0o755)).unwrap();
        let path = dir.path().as_os_str().to_owned();
        (dir, path)
    }

    /// A PATH without rtla.
    fn path_without_rtla() -> (tempfile::TempDir, OsString) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().as_os_str().to_owned();
        (dir, path)
    }

    const NO_TRACER_FIX: &str = "boot a kernel built with CONFIG_TIMERLAT_TRACER=y";

    #[test]
    fn timerlat_in_available_tracers_and_rtla_on_path_is_available() {
        let (_dir, path) = path_with_rtla();
        for tree in ["tracing-timerlat", "tracing-debugfs"] {
            assert_eq!(
                availability_with_path(&fixture(tree), Some(path.clone())),
                Ok(()),
                "{tree}"
            );
        }
    }

    #[test]
    fn missing_rtla_names_the_package() {
        let (_dir, path) = path_without_rtla();
        assert_eq!(
            availability_with_path(&fixture("tracing-timerlat"), Some(path)),
            Err("rtla is not installed; install it with: apt-get install rtla".to_string())
        );
    }

    #[test]
    fn a_tracer_list_without_timerlat_names_the_kernel_option() {
        let (_dir, path) = path_with_rtla();
        let root = fixture("tracing-no-timerlat");
        assert_eq!(
            availability_with_path(&root, Some(path)),
            Err(format!(
                "the kernel has no timerlat tracer: {}/sys/kernel/tracing/available_tracers \
                 does not list it; {NO_TRACER_FIX}",
                root.display()
            ))
        );
    }

    #[test]
    fn unmounted_tracefs_defers_to_the_kernel_config() {
        let (_dir, path) = path_with_rtla();
        // config.gz says the tracer is not built: mounting would not help.
        let off = copy_fixture("tracing-config-off");
        let expected = Err(format!(
            "the kernel has no timerlat tracer: CONFIG_TIMERLAT_TRACER is not set in \
             {}/proc/config.gz; {NO_TRACER_FIX}",
            off.path().display()
        ));
        // No tracefs directory at all, then an empty mount point.
        assert_eq!(
            availability_with_path(off.path(), Some(path.clone())),
            expected
        );
        fs::create_dir_all(off.path().join("sys/kernel/tracing")).unwrap();
        assert_eq!(
            availability_with_path(off.path(), Some(path.clone())),
            expected
        );
        // boot/config-RELEASE says it is built: mount tracefs.
        let on = copy_fixture("tracing-config-on");
        let dir = on.path().join("sys/kernel/tracing");
        fs::create_dir_all(&dir).unwrap();
        assert_eq!(
            availability_with_path(on.path(), Some(path.clone())),
            Err(format!(
                "tracefs is not mounted at {0}, so the timerlat tracer cannot be found; \
                 mount it with: mount -t tracefs nodev {0}",
                dir.display()
            ))
        );
        // No config and no tracefs: what tracefs lacks.
        assert_eq!(
            availability_with_path(&fixture("sysroot-vm"), Some(path)),
            Err(TracefsStatus::Missing.explain())
        );
    }

    #[test]
    fn every_missing_piece_is_named_in_one_line() {
        let (_dir, path) = path_without_rtla();
        let root = fixture("tracing-config-off");
        assert_eq!(
            availability_with_path(&root, Some(path)),
            Err(format!(
                "the kernel has no timerlat tracer: CONFIG_TIMERLAT_TRACER is not set in \
                 {}/proc/config.gz; {NO_TRACER_FIX}; rtla is not installed; install it with: \
                 apt-get install rtla",
                root.display()
            ))
        );
    }

    #[test]
    fn this_machine_says_the_tracer_is_missing() {
        let root = Path::new("/");
        let status = find_tracefs(root);
        if let TracefsStatus::Ready(dir) = &status {
            let tracers = fs::read_to_string(dir.join("available_tracers")).unwrap_or_default();
            if tracers.split_whitespace().any(|t| t == "timerlat") {
                eprintln!("skipping: this kernel has the timerlat tracer");
                return;
            }
        }
        let tracer = match (&status, kernel_config(root)) {
            (TracefsStatus::Ready(dir), _) => format!(
                "the kernel has no timerlat tracer: {}/available_tracers does not list it; \
                 {NO_TRACER_FIX}",
                dir.display()
            ),
            (_, Some((config, false))) => format!(
                "the kernel has no timerlat tracer: CONFIG_TIMERLAT_TRACER is not set in {}; \
                 {NO_TRACER_FIX}",
                config.display()
            ),
            (other, _) => panic!("cannot tell whether this kernel has timerlat: {other:?}"),
        };
        let rtla = match find_program("rtla", std::env::var_os("PATH")) {
            Some(_) => String::new(),
            None => "; rtla is not installed; install it with: apt-get install rtla".to_string(),
        };
        assert_eq!(availability(root), Err(format!("{tracer}{rtla}")));
    }

    // ---- arguments ----

    fn args(cpus: &str, duration_s: u64) -> TimerlatArgs {
        TimerlatArgs::new(
            CpuList::parse(cpus).unwrap(),
            duration_s * 1_000_000_000,
            PathBuf::from("/tmp"),
        )
    }

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn argv_of_the_defaults() {
        let a = args("1,3", 60);
        validate(&a).unwrap();
        assert_eq!(
            argv(&a),
            strings(&[
                "rtla",
                "timerlat",
                "hist",
                "-c",
                "1,3",
                "-p",
                "1000",
                "-d",
                "60",
                "-P",
                "f:95",
                "--dma-latency",
                "0",
                "--nano",
                "-b",
                "100",
                "-E",
                "100000",
            ])
        );
        assert_eq!(hist_limit_ns(&a), 10_000_000);
    }

    #[test]
    fn argv_in_microseconds_with_user_threads_and_rtla_defaults() {
        let mut a = args("", 5);
        a.rtla = PathBuf::from("/usr/bin/rtla");
        a.nano = false;
        a.period_ns = 250_000;
        a.priority = None;
        a.dma_latency_us = None;
        a.user_threads = true;
        validate(&a).unwrap();
        assert_eq!(
            argv(&a),
            strings(&[
                "/usr/bin/rtla",
                "timerlat",
                "hist",
                "-p",
                "250",
                "-d",
                "5",
                "-b",
                "1",
                "-E",
                "10000",
                "-u",
            ])
        );
        assert_eq!(hist_limit_ns(&a), 10_000_000);
    }

    #[test]
    fn the_histogram_reaches_past_the_threshold() {
        let mut a = args("0", 1);
        a.threshold_ns = 20_000_000;
        a.bucket_ns = 2_500;
        a.range_ns = 1_000_000;
        // 20 ms + 1 ns in 2.5 µs buckets: 8001 buckets.
        assert_eq!(
            argv(&a)[13..],
            strings(&["--nano", "-b", "2500", "-E", "8001"])[..]
        );
        assert_eq!(hist_limit_ns(&a), 20_002_500);
        // Microseconds: 2.5 µs rounds down to 2 µs; at least 10 buckets.
        a.nano = false;
        a.threshold_ns = 1_000;
        a.range_ns = 5_000;
        assert_eq!(argv(&a)[13..], strings(&["-b", "2", "-E", "10"])[..]);
        assert_eq!(hist_limit_ns(&a), 20_000);
    }

    #[test]
    fn validate_refuses_what_rtla_refuses() {
        let msg = |f: &dyn Fn(&mut TimerlatArgs)| {
            let mut a = args("0", 10);
            f(&mut a);
            bad_text(validate(&a).unwrap_err())
        };
        assert_eq!(
            msg(&|a| a.duration_ns = 1_500_000_000),
            "timerlat duration must be whole seconds, at least 1s (rtla's -d); got 1500ms"
        );
        assert_eq!(
            msg(&|a| a.duration_ns = 0),
            "timerlat duration must be whole seconds, at least 1s (rtla's -d); got 0ns"
        );
        assert_eq!(
            msg(&|a| a.period_ns = 50_000),
            "timerlat period must be whole microseconds from 100us to 1s (rtla's -p); got 50us"
        );
        assert_eq!(
            msg(&|a| a.period_ns = 1_000_500),
            "timerlat period must be whole microseconds from 100us to 1s (rtla's -p); got 1000500ns"
        );
        assert_eq!(
            msg(&|a| a.period_ns = 2_000_000_000),
            "timerlat period must be whole microseconds from 100us to 1s (rtla's -p); got 2s"
        );
        assert_eq!(
            msg(&|a| a.priority = Some(0)),
            "timerlat priority must be a SCHED_FIFO priority from 1 to 99; got 0"
        );
        assert_eq!(
            msg(&|a| a.bucket_ns = 1_000_000),
            "timerlat bucket must be below 1ms (999999 ns for rtla's -b); got 1ms"
        );
        assert_eq!(
            msg(&|a| a.range_ns = 2_000_000_000),
            "timerlat histogram needs 20000000 buckets of 100ns to reach 2s, more than rtla's \
             9999999; use wider buckets or a shorter range"
        );
        assert_eq!(
            msg(&|a| a.dma_latency_us = Some(10_000)),
            "timerlat dma latency must be below 10000 us (rtla's --dma-latency); got 10000 us"
        );
        let mut ok = args("0", 1);
        ok.period_ns = 100_000;
        ok.priority = Some(99);
        ok.dma_latency_us = Some(9_999);
        validate(&ok).unwrap();
        ok.period_ns = 1_000_000_000;
        validate(&ok).unwrap();
    }

    #[test]
    fn rtla_version_and_options_from_its_texts() {
        assert_eq!(
            parse_version(&text("rtla-6.1-version.txt")),
            Some("6.1".to_string())
        );
        assert_eq!(parse_version("usage: rtla COMMAND ...\n"), None);
        let help = text("rtla-6.1-hist-help.txt");
        assert!(help.contains("-n/--nano: display data in nanoseconds"));
        assert!(help.contains("--dma-latency us"));
        assert!(!help.contains("--user-threads"));
    }

    #[test]
    fn the_installed_rtla_6_1_is_recognised() {
        let Some(rtla) = find_program("rtla", std::env::var_os("PATH")) else {
            eprintln!("skipping: rtla is not installed");
            return;
        };
        let info = rtla_info(&rtla).unwrap();
        if info.version.as_deref() != Some("6.1") {
            eprintln!("skipping: rtla is version {:?}, not 6.1", info.version);
            return;
        }
        assert_eq!(
            info,
            RtlaInfo {
                version: Some("6.1".into()),
                nano: true,
                user_threads: false,
                dma_latency: true,
            }
        );
    }

    // ---- running ----

    /// A fake rtla (`fixtures/timerlat/fake-rtla`, see its comments) in a
    /// directory of its own, printing the fixture `hist` in `mode`, with the
    /// help text `help`; and args for it with the work directory there.
    fn fake(mode: &str, hist: &str, help: &str) -> (tempfile::TempDir, TimerlatArgs) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // A symlink, not a copy: executing a file just written can fail
        // with ETXTBSY while another test thread forks.
        std::os::unix::fs::symlink(fixture("timerlat/fake-rtla"), d.join("rtla")).unwrap();
        fs::write(d.join("version"), text("rtla-6.1-version.txt")).unwrap();
        fs::write(d.join("help"), help).unwrap();
        fs::write(d.join("hist"), text(hist)).unwrap();
        fs::write(d.join("mode"), format!("{mode}\n")).unwrap();
        let mut a = args("0", 1);
        a.rtla = d.join("rtla");
        a.workdir = d.to_path_buf();
        (dir, a)
    }

    fn help_6_1() -> String {
        text("rtla-6.1-hist-help.txt")
    }

    /// The argument lines the fake rtla wrote.
    fn passed(dir: &tempfile::TempDir) -> Vec<String> {
        fs::read_to_string(dir.path().join("args"))
            .unwrap()
            .lines()
            .map(|l| l.to_string())
            .collect()
    }

    /// Asserts that nothing is left of the fake rtla's process group (its
    /// background `sleep` ignores SIGINT, so `run` had to kill it).
    fn assert_group_gone(dir: &tempfile::TempDir) {
        let pid = fs::read_to_string(dir.path().join("pid")).unwrap();
        let pgid: i32 = pid.trim().parse().unwrap();
        assert_eq!(group_members(pgid), Vec::<i32>::new());
    }

    /// Raises `flag` once the fake rtla has written its arguments (it is
    /// then ready for SIGINT).
    fn raise_when_started(dir: &Path, flag: &Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
        let args = dir.join("args");
        let flag = Arc::clone(flag);
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(10);
            while !args.exists() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            std::thread::sleep(Duration::from_millis(50));
            flag.store(true, Relaxed);
        })
    }

    #[test]
    fn a_run_that_ends_by_itself() {
        let (dir, a) = fake("finish", "rtla-6.1-cpu0-1-ns.txt", &help_6_1());
        let out = run(&a, &AtomicBool::new(false)).unwrap();
        let rtla = a.rtla.to_string_lossy().into_owned();
        let expected_argv = strings(&[
            &rtla,
            "timerlat",
            "hist",
            "-c",
            "0",
            "-p",
            "1000",
            "-d",
            "1",
            "-P",
            "f:95",
            "--dma-latency",
            "0",
            "--nano",
            "-b",
            "100",
            "-E",
            "100000",
        ]);
        assert_eq!(out.argv, expected_argv);
        assert_eq!(passed(&dir), expected_argv[1..]);
        let mut expected_hist = parse_hist(&text("rtla-6.1-cpu0-1-ns.txt")).unwrap();
        expected_hist.limit_ns = Some(10_000_000);
        assert_eq!(
            (
                out.version.as_deref(),
                &out.hist,
                out.interrupted,
                &out.notes
            ),
            (Some("6.1"), &expected_hist, false, &vec![])
        );
        assert_eq!(out.stdout, text("rtla-6.1-cpu0-1-ns.txt"));
        assert_eq!(out.stderr, "");
        assert_eq!(
            fs::read_to_string(dir.path().join("rtla.stdout")).unwrap(),
            out.stdout
        );
        assert_eq!(fs::read(dir.path().join("rtla.stderr")).unwrap(), b"");
    }

    #[test]
    fn sigint_of_jitterlab_stops_rtla_which_prints_its_histogram() {
        let (dir, a) = fake("interrupt", "rtla-6.1-cpu1-us.txt", &help_6_1());
        let flag = Arc::new(AtomicBool::new(false));
        let raiser = raise_when_started(dir.path(), &flag);
        let out = run(&a, &flag).unwrap();
        raiser.join().unwrap();
        assert!(out.interrupted);
        assert_eq!(out.notes, Vec::<String>::new());
        assert_eq!(
            out.hist.cpus,
            parse_hist(&text("rtla-6.1-cpu1-us.txt")).unwrap().cpus
        );
    }

    #[test]
    fn a_late_rtla_is_sent_sigint() {
        let (_dir, a) = fake("interrupt", "rtla-6.1-cpu1-us.txt", &help_6_1());
        let waits = Waits {
            late: Duration::from_millis(100),
            stop: Duration::from_secs(10),
            poll: Duration::from_millis(20),
        };
        let out = run_with(&a, &AtomicBool::new(false), waits).unwrap();
        assert!(!out.interrupted);
        assert_eq!(
            out.notes,
            strings(&["rtla had not ended 100ms after its duration: stopped with SIGINT"])
        );
        assert_eq!(out.hist.cpus.len(), 1);
    }

    #[test]
    fn an_rtla_deaf_to_sigint_is_killed() {
        let (dir, a) = fake("stubborn", "rtla-6.1-cpu1-us.txt", &help_6_1());
        let flag = Arc::new(AtomicBool::new(false));
        let raiser = raise_when_started(dir.path(), &flag);
        let waits = Waits {
            late: Duration::from_secs(10),
            stop: Duration::from_millis(300),
            poll: Duration::from_millis(20),
        };
        let e = run_with(&a, &flag, waits).unwrap_err();
        raiser.join().unwrap();
        assert_eq!(
            e.to_string(),
            "rtla did not end within 300ms of SIGINT and was killed; if timerlat still runs, \
             remove its trace instance: rmdir /sys/kernel/tracing/instances/timerlat_hist"
        );
        assert_group_gone(&dir);
    }

    #[test]
    fn an_rtla_stopped_before_its_handler_is_set_printed_nothing() {
        let (dir, a) = fake("early", "rtla-6.1-cpu1-us.txt", &help_6_1());
        let flag = Arc::new(AtomicBool::new(false));
        let raiser = raise_when_started(dir.path(), &flag);
        let e = run(&a, &flag).unwrap_err();
        raiser.join().unwrap();
        assert_eq!(
            e.to_string(),
            "rtla was stopped by SIGINT before it had set up its handler for it, so it printed \
             no histogram"
        );
        assert_group_gone(&dir);
    }

    #[test]
    fn a_failing_rtla_is_an_error_with_its_stderr() {
        let (dir, a) = fake("fail", "rtla-6.1-cpu1-us.txt", &help_6_1());
        let e = run(&a, &AtomicBool::new(false)).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "rtla failed (exited with status 1); the end of its stderr ({}): Failed to apply \
                 CPUs config | Could not apply config",
                dir.path().join("rtla.stderr").display()
            )
        );
    }

    #[test]
    fn an_rtla_without_nano_measures_in_microseconds() {
        let help: String = help_6_1()
            .lines()
            .filter(|l| !l.contains("--nano"))
            .map(|l| format!("{l}\n"))
            .collect();
        let (dir, a) = fake("finish", "rtla-6.1-cpu1-us.txt", &help);
        let out = run(&a, &AtomicBool::new(false)).unwrap();
        assert_eq!(
            passed(&dir)[10..],
            strings(&["--dma-latency", "0", "-b", "1", "-E", "10000"])[..]
        );
        assert_eq!(
            out.notes,
            strings(&["rtla 6.1 has no --nano: it measured in whole microseconds, kept as ns"])
        );
        assert_eq!(
            (out.hist.unit, out.hist.limit_ns),
            (TimeUnit::Microseconds, Some(10_000_000))
        );
    }

    #[test]
    fn user_threads_need_an_rtla_that_has_them() {
        let (_dir, mut a) = fake("finish", "rtla-6.1-cpu1-us.txt", &help_6_1());
        a.user_threads = true;
        assert_eq!(
            bad_text(run(&a, &AtomicBool::new(false)).unwrap_err()),
            "this rtla (version 6.1) has no user-space threads (-u, since rtla 6.6); install a \
             newer rtla or measure with kernel threads"
        );
    }

    #[test]
    fn a_missing_rtla_is_bad_input_naming_the_package() {
        let mut a = args("0", 1);
        a.rtla = PathBuf::from("/nonexistent/rtla");
        assert_eq!(
            bad_text(run(&a, &AtomicBool::new(false)).unwrap_err()),
            "rtla is not installed (no `/nonexistent/rtla`); install it with: apt-get install rtla"
        );
    }
}
