//! `jitterlab monitor`: the flags of the never-ending latency monitor,
//! checked and turned into `run wakeup`'s one-cell spec plus the
//! monitor's own options ([`MonitorOptions`]).
//!
//! The monitor is `run wakeup` that never ends on its own: the same probe,
//! the same checks, the same messages for the flags the two share (they
//! go through `run wakeup`'s check, `periodic::flags::wakeup`, and the
//! flags they share are `run wakeup`'s declarations, [`Declared`]). What is its own: the series it adds
//! to, the retention of that series, and `--max-latency`, which here does
//! not fail the run (a monitor has no end to fail at) but logs each window
//! over it to the system log at priority warning.
//!
//! With `--pid`, `--tid` or `--comm` (and `--period`, `--explain`,
//! `--container`) it monitors the user's own task instead: `run
//! observe`'s one-cell spec, checked by its flags (the same messages),
//! under the same monitor options ([`MonitorArgs::observed`]).
//!
//! Every flag a service sets can come from the environment
//! (`JITTERLAB_CPUS`, `JITTERLAB_METRICS` …), which is how the systemd
//! unit reads `/etc/default/jitterlab`; a variable set but empty counts as
//! not given.

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Result;
use clap::Args;
use jitterlab_core::defaults;
use jitterlab_core::spec::Policy;
use jitterlab_core::units::{format_duration_exact, parse_duration};

use super::one_cell::OneCell;
use super::parse::{histogram_buckets, outliers};
use crate::error::bad;
use crate::probe::flags::{CommonArgs, DeploymentArg, Flag, FlagValues, MonitoredTask, TaskArgs};
use crate::probe::periodic::{self, flags::WakeupArgs};
use crate::runner::monitor::MonitorOptions;
use crate::runner::Stop;
use crate::store::monitor::Retention;
use crate::store::Db;

/// `jitterlab monitor`.
#[derive(Debug, Args)]
pub struct MonitorArgs {
    /// `--cpus`, `--interval`: `run wakeup`'s.
    #[command(flatten)]
    pub place: Declared<PLACE>,

    /// The series to add to: a monitor started again under the same name
    /// resumes it (marked in the report), never overwrites it.
    #[arg(
        long,
        value_name = "NAME",
        default_value = "default",
        env = "JITTERLAB_SERIES"
    )]
    pub series: String,

    /// Log each window with a wake-up latency over TIME to the system log
    /// (the journal, priority warning) with what the CPU went through in
    /// that window, and count it in the metrics; the monitor goes on.
    #[arg(long, value_name = "TIME", value_parser = super::duration, allow_hyphen_values = true, env = "JITTERLAB_MAX_LATENCY")]
    pub max_latency: Option<u64>,

    /// Serve live Prometheus metrics at ADDR: PORT, :PORT (on 127.0.0.1)
    /// or HOST:PORT (see docs/metrics.md).
    #[arg(long = "metrics", value_name = "ADDR", value_parser = metrics_addr, env = "JITTERLAB_METRICS")]
    pub metrics: Option<SocketAddr>,

    /// How long the 1 s window rows and the 5-minute histograms are kept.
    #[arg(long, value_name = "TIME", default_value = "7d", value_parser = retention)]
    pub keep_windows: u64,

    /// How long the 5-minute rows (min, max, mean, count, and the cycle
    /// and time of the max) are kept.
    #[arg(long = "keep-5min", value_name = "TIME", default_value = "365d", value_parser = retention)]
    pub keep_five_min: u64,

    /// How long the hourly rows are kept: a time, or `forever`.
    #[arg(long, value_name = "TIME|forever", default_value = "forever", value_parser = retention_or_forever)]
    pub keep_hourly: Forever,

    /// `--policy`, `--priority`, `--window`, `--threshold`: every run's.
    #[command(flatten)]
    pub sched: Declared<SCHED>,

    /// Number of 1 us buckets of the latency histograms (at most 100000).
    #[arg(long, value_name = "N", default_value_t = defaults::HISTOGRAM_BUCKETS, value_parser = histogram_buckets, allow_hyphen_values = true)]
    pub histogram_buckets: usize,

    /// Outliers kept per metric for each start of the monitor.
    #[arg(long, value_name = "N", default_value_t = defaults::OUTLIERS, value_parser = outliers, allow_hyphen_values = true)]
    pub outliers: usize,

    /// `--strict`, `--no-dma-latency`, `--progress`: every run's.
    #[command(flatten)]
    pub switches: Declared<SWITCHES>,

    /// Monitor this process's periodic thread (the most regular in the
    /// first second) instead of the wake-up probe: `run observe`'s
    /// measurement, from the kernel's tracepoints; the task is not
    /// changed. The monitor ends (exit status 3) when the task does.
    #[arg(long, value_name = "PID", env = "JITTERLAB_PID")]
    pub pid: Option<u32>,

    /// Monitor this thread instead of the wake-up probe; the monitor ends
    /// (exit status 3) when the thread does.
    #[arg(long, value_name = "TID", env = "JITTERLAB_TID")]
    pub tid: Option<u32>,

    /// Monitor the thread with this name (as `ps -eL -o comm` shows it)
    /// instead of the wake-up probe; when it ends, the monitor waits for a
    /// thread of that name and goes on with it (a restarted task).
    #[arg(long, value_name = "NAME", env = "JITTERLAB_COMM")]
    pub comm: Option<String>,

    /// The monitored task's period T0 [default: inferred from its first
    /// periods].
    #[arg(long, value_name = "TIME", value_parser = super::duration, allow_hyphen_values = true, env = "JITTERLAB_PERIOD")]
    pub period: Option<u64>,

    /// With a monitored task: trace every CPU's scheduler, IRQ and softirq
    /// events so that each alert says what delayed the window's worst
    /// cycle (its three largest parts).
    #[arg(long, env = "JITTERLAB_EXPLAIN")]
    pub explain: bool,

    /// With --comm: find the thread among the processes of this running
    /// container (podman or docker) only; after a restart, in the
    /// container running under that name then.
    #[arg(long, value_name = "NAME", env = "JITTERLAB_CONTAINER")]
    pub container: Option<String>,
}

/// [`Declared`]'s group of `--cpus` and `--interval`.
pub const PLACE: u8 = 0;
/// [`Declared`]'s group of the scheduling and window flags.
pub const SCHED: u8 = 1;
/// [`Declared`]'s group of the run's switches.
pub const SWITCHES: u8 = 2;

/// The flags of `run wakeup` the monitor takes, by id, in help's order;
/// the ones a service sets read from the environment too.
fn wakeup_flags(group: u8) -> Vec<Flag> {
    let ids: &[&str] = match group {
        PLACE => &["cpus", "interval"],
        SCHED => &["policy", "priority", "window", "threshold"],
        _ => &["strict", "no_dma_latency", "progress"],
    };
    let all = periodic::flags::wakeup_flags().flags;
    ids.iter()
        .map(|id| {
            let f = all
                .iter()
                .find(|f| f.id == *id)
                .unwrap_or_else(|| panic!("run wakeup has no --{id}"))
                .clone();
            match *id {
                "cpus" => f.env("JITTERLAB_CPUS"),
                "interval" => f.env("JITTERLAB_INTERVAL"),
                "priority" => f.env("JITTERLAB_PRIORITY"),
                _ => f,
            }
        })
        .collect()
}

/// One group of `run wakeup`'s declared flags, with the values the command
/// line gave them (several groups keep the monitor's help in its order).
#[derive(Debug, Clone)]
pub struct Declared<const GROUP: u8>(pub FlagValues);

impl<const GROUP: u8> clap::FromArgMatches for Declared<GROUP> {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(Declared(super::flags::values(&wakeup_flags(GROUP), m)))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl<const GROUP: u8> Args for Declared<GROUP> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        wakeup_flags(GROUP)
            .iter()
            .fold(cmd, |cmd, f| cmd.arg(super::flags::arg(f)))
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

fn metrics_addr(s: &str) -> Result<SocketAddr, String> {
    crate::metrics::parse_addr(s)
}

/// `--keep-hourly`: a time or for ever.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forever(pub Option<u64>);

/// The longest retention: 100 years.
const MAX_RETENTION_S: u64 = 100 * 365 * 86_400;

/// A retention: the unit grammar, whole seconds, 1h to 100 years.
fn retention(s: &str) -> Result<u64, String> {
    let ns = parse_duration(s).map_err(|e| e.to_string())?;
    let secs = ns / 1_000_000_000;
    if secs < 3_600 {
        return Err(format!(
            "{} is shorter than an hour; keep at least 1h",
            format_duration_exact(ns)
        ));
    }
    if secs > MAX_RETENTION_S {
        return Err(
            "is longer than 100 years; give at most 36500d, or forever for --keep-hourly".into(),
        );
    }
    Ok(secs)
}

fn retention_or_forever(s: &str) -> Result<Forever, String> {
    match s.trim() {
        "forever" => Ok(Forever(None)),
        t => match parse_duration(t) {
            Ok(_) => retention(t).map(|s| Forever(Some(s))),
            Err(_) => Err(format!("give a time (e.g. 3650d) or forever, not {t:?}")),
        },
    }
}

impl MonitorArgs {
    /// Checks the flags against the machine under `root` (as `run wakeup`
    /// does) and turns them into the one-cell spec, with the monitor's
    /// options; a retention that keeps a coarser resolution for less time
    /// than a finer one is refused.
    pub fn one_cell(&self, root: &Path, db: &Db) -> Result<(OneCell, MonitorOptions)> {
        let task = self.task()?;
        let retention = Retention {
            windows_s: self.keep_windows,
            five_min_s: self.keep_five_min,
            hourly_s: self.keep_hourly.0,
        };
        if retention.five_min_s < retention.windows_s {
            return Err(bad(format!(
                "--keep-5min {}s is shorter than --keep-windows {}s; keep the 5-minute rows at least as long as the windows",
                retention.five_min_s, retention.windows_s
            )));
        }
        if retention.hourly_s.is_some_and(|h| h < retention.five_min_s) {
            return Err(bad(
                "--keep-hourly is shorter than --keep-5min; keep the hourly rows at least as long (or forever)",
            ));
        }
        if self.series.trim().is_empty() || self.series.chars().any(char::is_control) {
            return Err(bad(
                "--series must be a non-empty name without control characters, e.g. --series rack3",
            ));
        }
        if let Some(task) = task {
            let options = MonitorOptions {
                series: self.series.clone(),
                retention,
                max_latency_ns: self.max_latency,
            };
            return Ok((self.observed(root, db, task)?, options));
        }
        let (place, sched, switches) = (&self.place.0, &self.sched.0, &self.switches.0);
        let wakeup = WakeupArgs {
            interval: place.u64("interval"),
            cpus: place.opt_cpus("cpus"),
            params: jitterlab_core::wakeup::WakeupParams::default(),
            common: self.common(
                Policy::parse(&sched.text("policy")).expect("one of --policy's names"),
                sched.opt_i64("priority").map(|p| p as i32),
                switches.switch("no_dma_latency"),
            ),
        };
        let mut one = periodic::flags::wakeup(root, db, &wakeup)?;
        one.options.stop = Stop::Never;
        let options = MonitorOptions {
            series: self.series.clone(),
            retention,
            max_latency_ns: self.max_latency,
        };
        Ok((one, options))
    }
}

impl MonitorArgs {
    /// The monitored task of `--pid`, `--tid` or `--comm`, if one is
    /// given; refused (exit 2): two of them, the wake-up probe's `--cpus`
    /// beside one, a task's `--period` or `--explain` without one.
    fn task(&self) -> Result<Option<MonitoredTask>> {
        let mut given: Vec<(&str, MonitoredTask)> = Vec::new();
        if let Some(p) = self.pid {
            given.push(("--pid", MonitoredTask::Pid(p)));
        }
        if let Some(t) = self.tid {
            given.push(("--tid", MonitoredTask::Tid(t)));
        }
        if let Some(c) = &self.comm {
            given.push(("--comm", MonitoredTask::Comm(c.clone())));
        }
        let Some((flag, _)) = given.first() else {
            if let Some(name) = &self.container {
                return Err(bad(format!(
                    "--container {name} takes --comm NAME: the thread to monitor in it"
                )));
            }
            if self.period.is_some() || self.explain {
                return Err(bad(format!(
                    "{} applies to a monitored task: give --pid PID, --tid TID or --comm NAME (the wake-up probe's own period is --interval)",
                    if self.period.is_some() { "--period" } else { "--explain" }
                )));
            }
            return Ok(None);
        };
        if given.len() > 1 {
            return Err(bad(format!(
                "monitor watches one task: keep one of {} and {}",
                given[0].0, given[1].0
            )));
        }
        if self.place.0.opt_cpus("cpus").is_some() {
            return Err(bad(format!(
                "{flag} monitors the task on the CPUs it runs on; remove --cpus (JITTERLAB_CPUS), which places the wake-up probe's threads"
            )));
        }
        Ok(given.pop().map(|(_, t)| t))
    }

    /// The flags every probe shares, as a monitor sets them: its window,
    /// threshold, outliers, histogram and switches, never ending on its
    /// own, no output file, on the host; the probe's policy, priority and
    /// `/dev/cpu_dma_latency` as given.
    fn common(&self, policy: Policy, priority: Option<i32>, no_dma_latency: bool) -> CommonArgs {
        let (sched, switches) = (&self.sched.0, &self.switches.0);
        CommonArgs {
            duration: None,
            cycles: None,
            policy,
            priority,
            nice: None,
            strict: switches.switch("strict"),
            window: sched.u64("window"),
            threshold: sched.u64("threshold"),
            outliers: self.outliers,
            json: None,
            junit: None,
            csv: None,
            histogram: None,
            histogram_buckets: self.histogram_buckets,
            max_latency: None,
            max_jitter: None,
            max_exec: None,
            break_trace: None,
            progress: switches.switch("progress"),
            no_dma_latency,
            no_db: false,
            deployment: DeploymentArg::Host,
            engine: None,
            stream: false,
            calibration: None,
        }
    }

    /// The one-cell spec of `jitterlab monitor` of a real task: the kind
    /// that measures a running task builds it from the task's flags
    /// (`probe::task_cell`), and the monitor makes it endless.
    fn observed(&self, root: &Path, db: &Db, task: MonitoredTask) -> Result<OneCell> {
        // The observer runs at SCHED_OTHER with no /dev/cpu_dma_latency
        // request: it must not perturb the task it watches.
        let common = self.common(Policy::Other, None, true);
        let args = TaskArgs {
            task,
            period: self.period,
            explain: self.explain,
            container: self.container.clone(),
            common,
        };
        let cell = crate::probe::task_cell().expect("a kind measures a running task");
        let mut one = cell(&args, root, db)?;
        one.options.stop = Stop::Never;
        Ok(one)
    }
}
