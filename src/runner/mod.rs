//! `jitterlab run …`: from validated flags to a stored, printed result.
//!
//! The order is the contract with the user:
//!
//! 1. **Validate** everything that can be wrong with the input — units,
//!    ranges (the parser's bounds of `jitterlab_core::limits`, then the
//!    window rows a run makes and a working set or buffer against half of
//!    the machine's `MemTotal`), CPUs against the machine's online list, the
//!    policy/priority pair, every output path — and refuse with a one-line
//!    error naming the fix (exit 2) before any thread starts or anything is
//!    written.
//! 2. **Set up** the process-wide real-time defaults (mlockall, the PM QoS
//!    request), start one probe thread per CPU, let each apply its own
//!    defaults and calibrate, and collect what held. `--strict` aborts here.
//! 3. **Measure**: release every thread at one common first release `t0`.
//!    The controlling thread — SCHED_OTHER, kept off the probe CPUs where
//!    the machine has others — is the low-priority writer of DESIGN rule 2:
//!    it drains window rows from each thread's wait-free queue every 100 ms
//!    into the CSV file, redraws the live view, and turns SIGINT/SIGTERM into
//!    the stop flag.
//! 4. **Store and report**: the run row is in the results database before the
//!    first release, window rows are committed as they are drained, and the
//!    versioned `RunResult` with its histograms is stored at the end; the
//!    exporters (`report::*`) never measure. Exit 1 when a `--max-*` limit
//!    was exceeded, 0 otherwise.
//!
//! A run refuses to start while a killed jitterlab's journal is unreplayed.
//! One that changes nothing on the machine takes no machine lock and so
//! measures beside a live `jitterlab apply`; a probe that changes something
//! (the chase's IRQ role, the response probe's namespaces) takes the lock
//! and the journal at its first change (`Journal::on_demand`).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use jitterlab_core::limits;
use jitterlab_core::result::{Params, ProbeKind, RunResult};
use jitterlab_core::units::{format_duration_exact, CpuList};
use jitterlab_sys::{self as sys, Policy};

use crate::cli::{CommonArgs, CyclicArgs, PolicyArg, WakeupArgs};
use crate::error::bad;
use crate::output::{errln, out};
use crate::probe::periodic::ThreadOutcome;
use crate::report;
use crate::store::{RunIds, RunKind, RunStart, Store};
use crate::system::host;
use crate::system::journal::Journal;
use crate::system::rt::{self, SchedRequest};

pub mod apply;
pub mod bench;
pub mod event;
pub mod measure;
pub mod out_files;
pub mod probes;
pub mod spec_source;
pub mod timerlat;

use event::{measure_events, EventInput, EventProbe};
use measure::{measure, MeasureInput, RowWriter};

/// Duration when neither `--duration` nor `--cycles` is given.
pub const DEFAULT_DURATION_NS: u64 = 10_000_000_000;

/// A run, validated and ready to start.
#[derive(Debug)]
pub struct RunPlan {
    /// The probe.
    pub kind: ProbeKind,
    /// Period or interval, ns.
    pub period: u64,
    /// Probe CPUs, one thread each.
    pub cpus: Vec<usize>,
    /// `(working set, scan)` for the cyclic probe.
    pub scan: Option<(u64, u64)>,
    /// Scheduling request.
    pub sched: SchedRequest,
    /// Parameters as stored in the result.
    pub params: Params,
}

/// Validates `jitterlab run cyclic`.
pub fn plan_cyclic(root: &Path, db: &Path, a: &CyclicArgs) -> Result<RunPlan> {
    let cpu = probe_cpu(&host::online_cpus(root)?, a.cpu, "--cpu")?;
    if a.period == 0 {
        return Err(bad("--period must be positive; give e.g. --period 1ms"));
    }
    if a.scan >= a.period {
        return Err(bad(format!(
            "--scan {} is not shorter than --period {}; shorten the scan or lengthen the period",
            format_duration_exact(a.scan),
            format_duration_exact(a.period)
        )));
    }
    check_machine_memory(root, "--working-set ", a.working_set)?;
    plan_common(
        (!a.common.no_db).then_some(db),
        ProbeKind::Cyclic,
        a.period,
        vec![cpu],
        Some((a.working_set, a.scan)),
        &a.common,
    )
}

/// The CPUs of a `--cpus` list, each online; without one, every online CPU
/// but CPU 0 when there is more than one (CPU 0 takes the housekeeping).
pub fn measured_cpus(online: &CpuList, list: Option<&CpuList>) -> Result<Vec<usize>> {
    let cpus: Vec<usize> = match list {
        Some(list) => {
            if let Some(off) = list.iter().find(|c| !online.contains(*c)) {
                return Err(bad(format!(
                    "CPU {off} in --cpus is not online (online CPUs: {online}); choose CPUs from that list"
                )));
            }
            list.iter().collect()
        }
        None if online.len() > 1 => online.iter().filter(|&c| c != 0).collect(),
        None => online.iter().collect(),
    };
    if cpus.is_empty() {
        return Err(bad("no CPU is online"));
    }
    Ok(cpus)
}

/// The one CPU a probe runs on: `cpu` if given and online (else a refusal
/// naming `flag`), or the last online CPU.
pub fn probe_cpu(online: &CpuList, cpu: Option<usize>, flag: &str) -> Result<usize> {
    let cpu = match cpu {
        Some(c) => c,
        None => online
            .iter()
            .last()
            .ok_or_else(|| bad("no CPU is online"))?,
    };
    if !online.contains(cpu) {
        return Err(bad(format!(
            "CPU {cpu} is not online (online CPUs: {online}); choose one of them with {flag}"
        )));
    }
    Ok(cpu)
}

/// Validates `jitterlab run wakeup`.
pub fn plan_wakeup(root: &Path, db: &Path, a: &WakeupArgs) -> Result<RunPlan> {
    let cpus = measured_cpus(&host::online_cpus(root)?, a.cpus.as_ref())?;
    if a.interval == 0 {
        return Err(bad("--interval must be positive; give e.g. --interval 1ms"));
    }
    plan_common(
        (!a.common.no_db).then_some(db),
        ProbeKind::Wakeup,
        a.interval,
        cpus,
        None,
        &a.common,
    )
}

fn plan_common(
    db: Option<&Path>,
    kind: ProbeKind,
    period: u64,
    cpus: Vec<usize>,
    scan: Option<(u64, u64)>,
    c: &CommonArgs,
) -> Result<RunPlan> {
    let policy = match c.policy {
        PolicyArg::Fifo => Policy::Fifo,
        PolicyArg::Rr => Policy::RoundRobin,
        PolicyArg::Other => Policy::Other,
    };
    let (priority, nice) = match policy {
        Policy::Other => {
            if let Some(p) = c.priority {
                return Err(bad(format!(
                    "--priority {p} is not allowed with --policy other; use --nice to weight a time-sharing thread, or --policy fifo"
                )));
            }
            if c.strict {
                return Err(bad(
                    "--strict needs a real-time policy, and --policy other is never real-time; use --policy fifo or rr",
                ));
            }
            let n = c.nice.unwrap_or(0);
            if !(-20..=19).contains(&n) {
                return Err(bad(format!(
                    "--nice {n} is outside -20..19; choose a nice value in that range"
                )));
            }
            (None, Some(n))
        }
        p => {
            if let Some(n) = c.nice {
                return Err(bad(format!(
                    "--nice {n} applies only to --policy other; use --priority with --policy {}",
                    c.policy.name()
                )));
            }
            let (lo, hi) = sys::priority_range(p);
            let prio = c.priority.unwrap_or(jitterlab_core::defaults::PRIORITY);
            if !(lo..=hi).contains(&prio) {
                return Err(bad(format!(
                    "--priority {prio} is outside {lo}-{hi} for --policy {}; choose a priority in that range",
                    c.policy.name()
                )));
            }
            (Some(prio), None)
        }
    };
    if c.duration == Some(0) {
        return Err(bad("--duration must be positive; give e.g. --duration 10s"));
    }
    if c.cycles == Some(0) {
        return Err(bad("--cycles must be at least 1"));
    }
    if c.window == 0 {
        return Err(bad("--window must be positive; give e.g. --window 1s"));
    }
    if c.break_trace == Some(0) {
        return Err(bad(
            "--break-trace must be positive; give e.g. --break-trace 500us",
        ));
    }
    if c.histogram_buckets == 0 {
        return Err(bad("--histogram-buckets must be at least 1"));
    }
    for (flag, path) in [
        ("--json", &c.json),
        ("--csv", &c.csv),
        ("--histogram", &c.histogram),
    ] {
        if let Some(p) = path {
            out_files::check_output(flag, p)?;
        }
    }
    if let Some(db) = db {
        out_files::check_database(db)?;
    }
    let duration = match (c.duration, c.cycles) {
        (Some(d), _) => Some(d),
        (None, Some(_)) => None,
        (None, None) => Some(DEFAULT_DURATION_NS),
    };
    // How long the run lasts: its duration, or its cycles of one period.
    let lasts = match (duration, c.cycles) {
        (Some(d), _) => Some(d),
        (None, Some(n)) if period > 0 => {
            let ns = n.saturating_mul(period);
            if ns > limits::MAX_TIME_NS {
                return Err(bad(format!(
                    "--cycles {n} of {} take longer than {}, the longest run; give fewer cycles",
                    format_duration_exact(period),
                    format_duration_exact(limits::MAX_TIME_NS)
                )));
            }
            Some(ns)
        }
        _ => None,
    };
    if let Some(ns) = lasts {
        limits::check_window_rows(ns, c.window, cpus.len() as u64)
            .map_err(|e| bad(format!("--window {}: {e}", format_duration_exact(c.window))))?;
    }
    Ok(RunPlan {
        kind,
        period,
        scan,
        sched: SchedRequest {
            policy,
            priority: priority.unwrap_or(0),
            nice: nice.unwrap_or(0),
        },
        params: Params {
            period_ns: period,
            duration_ns: duration,
            cycles: c.cycles,
            cpus: cpus.clone(),
            policy: c.policy.name().into(),
            priority,
            nice,
            scan_ns: scan.map_or(0, |s| s.1),
            working_set_bytes: scan.map_or(0, |s| s.0),
            window_ns: c.window,
            threshold_ns: c.threshold,
            break_trace_ns: c.break_trace,
            strict: c.strict,
        },
        cpus,
    })
}

/// Refuses a buffer of `bytes` (a working set, a chase buffer) larger than
/// half of the machine's memory, `MemTotal` of `<root>/proc/meminfo`: the
/// probe allocates, touches and locks it (`mlockall`). `what` starts the
/// message (`--working-set `, `spec.toml: probe[0].working_set: `). Where
/// meminfo cannot be read (a fake sysroot without it) only the static
/// bound of the parser applies.
pub fn check_machine_memory(root: &Path, what: &str, bytes: u64) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(root.join("proc/meminfo")) else {
        return Ok(());
    };
    let Some(total) = limits::mem_total_bytes(&text) else {
        return Ok(());
    };
    limits::check_memory_of_machine(bytes, total).map_err(|e| bad(format!("{what}{e}")))
}

/// Makes an event probe once the journal is open (a probe that changes the
/// machine — namespaces, IRQ affinity — journals each change first).
pub type EventFactory<'a> = Box<dyn FnOnce(&mut Journal) -> Result<Box<dyn EventProbe>> + 'a>;

/// Runs a validated plan and reports it: a periodic probe when `event` is
/// `None`, else the event probe it makes. Returns the exit code.
pub fn execute(
    root: &Path,
    db: &Path,
    plan: RunPlan,
    c: &CommonArgs,
    event: Option<EventFactory<'_>>,
) -> Result<ExitCode> {
    // A journal left by a killed bench means the machine is not as it was;
    // a run that changes nothing runs beside `apply` and takes the machine
    // lock only if its probe changes something (IRQ role, namespaces).
    let mut journal = Journal::on_demand(root)?;
    let event = match event {
        Some(make) => Some(make(&mut journal)?),
        None => None,
    };
    let store = match c.no_db {
        true => None,
        false => Some(Store::open(db)?),
    };
    let host = host::snapshot(root);
    let started_at = rfc3339_now();

    // Process-wide defaults.
    let mlock = rt::lock_memory();
    let (dma_guard, dma) = rt::hold_dma_latency(root, c.no_dma_latency);
    keep_off_probe_cpus(root, &plan.cpus);
    let signalled = termination_flag()?;

    let csv = match &c.csv {
        Some(p) => Some(report::csv::WindowCsv::new(
            out_files::create("--csv", p)?,
            plan.kind.metrics(),
        )?),
        None => None,
    };
    let mut writer = RowWriter {
        csv,
        store,
        cell: None,
        rows: Vec::new(),
        error: None,
    };
    let command_line: Vec<String> = std::env::args().collect();
    let params_json = serde_json::to_string(&plan.params)?;
    let host_json = serde_json::to_string(&host)?;
    let mut ids: Option<RunIds> = None;
    let mut ready = |w: &mut RowWriter, realtime: bool| -> Result<()> {
        if let Some(s) = w.store.as_mut() {
            let started = s.begin_run(&RunStart {
                started_at: &started_at,
                probe: plan.kind.name(),
                command_line: &command_line,
                params_json: params_json.clone(),
                host_json: host_json.clone(),
                hostname: &host.hostname,
                kernel_release: &host.kernel_release,
                realtime: Some(realtime),
                kind: RunKind::Run,
                name: plan.kind.name(),
                spec_json: None,
            });
            let started = started.context("recording the run")?;
            w.cell = Some(started.cell);
            ids = Some(started);
        }
        Ok(())
    };
    let mut returned: event::Returned = None;
    let measured = match event {
        None => measure(
            MeasureInput {
                root,
                plan: &plan,
                c,
                host: host.clone(),
                started_at: started_at.clone(),
                defaults: vec![mlock, dma],
                warnings: Vec::new(),
                calibrated: None,
                signalled: &signalled,
                live: true,
            },
            &mut writer,
            &mut ready,
            &mut || {},
        )
        .map(|m| (m.histograms(), m.result, Some(m.outcomes))),
        Some(probe) => measure_events(
            &plan,
            probe,
            EventInput {
                c,
                host: host.clone(),
                started_at: started_at.clone(),
                defaults: vec![mlock, dma],
                warnings: Vec::new(),
                signalled: &signalled,
                live: true,
            },
            &mut writer,
            &mut ready,
            &mut returned,
        )
        .map(|m| (m.histograms(), m.result, None)),
    };
    // What the probe changed goes back on every path, before anything else.
    if let Some(mut p) = returned.take() {
        for line in p.teardown(root, &mut journal) {
            errln!("jitterlab: {}", report::safe::shown(&line));
        }
    }
    let (histograms, result, outcomes) = match measured {
        Ok(m) => m,
        Err(e) => {
            if let (Some(s), Some(ids)) = (writer.store.as_mut(), ids) {
                let _ = s.abandon_run(ids);
            }
            return Err(e);
        }
    };
    drop(dma_guard);
    journal.finish()?;
    let result = &result;
    // A result that cannot be stored is an error (exit 2), but only after
    // everything else that can keep it is written: --json, --csv, the summary.
    let mut failure = writer.error.take();
    if let (Some(s), Some(ids)) = (writer.store.as_mut(), ids) {
        if let Some(f) = store_result(s, ids, result, &histograms, db) {
            failure.get_or_insert(f);
        }
    }
    write_files(c, result, outcomes.as_deref().unwrap_or_default())?;
    if let Some(w) = writer.csv.as_mut() {
        if let Err(e) = w.flush() {
            failure.get_or_insert(e.to_string());
        }
    }
    out!("{}", report::text::summary(result))?;
    if let Some(f) = failure {
        return Err(not_stored(&f, c.json.as_deref()));
    }
    Ok(if result.failed() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Stores a finished run's result and says so; when that fails, marks the
/// run interrupted and returns what failed, for [`not_stored`].
pub fn store_result(
    s: &mut Store,
    ids: RunIds,
    result: &RunResult,
    histograms: &[crate::store::StoredHistogram],
    db: &Path,
) -> Option<String> {
    match s.finish_run(ids, result, histograms) {
        Ok(()) => {
            errln!("jitterlab: stored as run {} in {}", ids.run, db.display());
            None
        }
        Err(e) => {
            let _ = s.abandon_run(ids);
            Some(format!("storing the result failed: {e:#}"))
        }
    }
}

/// The error of a run whose result could not be stored (or streamed):
/// says what failed and where the result is kept all the same.
pub fn not_stored(failure: &str, json: Option<&Path>) -> anyhow::Error {
    let kept = match json {
        Some(p) => format!("the result is in --json {}", p.display()),
        None => "the result is only in the summary above; pass --json FILE to keep a copy whatever happens to the database".into(),
    };
    anyhow::anyhow!("{failure}; {kept}")
}

/// The current time, RFC 3339.
pub fn rfc3339_now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Keeps the calling (controller) thread off the probe CPUs where the
/// machine has others.
pub fn keep_off_probe_cpus(root: &Path, probe_cpus: &[usize]) {
    if let Ok(online) = host::online_cpus(root) {
        let others: Vec<usize> = online.iter().filter(|c| !probe_cpus.contains(c)).collect();
        if !others.is_empty() {
            let _ = sys::set_affinity(&others);
        }
    }
}

/// A flag raised by SIGINT or SIGTERM.
pub fn termination_flag() -> Result<Arc<AtomicBool>> {
    let signalled = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&signalled))
            .context("installing the SIGINT/SIGTERM handler")?;
    }
    Ok(signalled)
}

/// Writes the whole versioned result to `--json`'s file.
pub fn write_json(p: &Path, result: &RunResult) -> Result<()> {
    let mut f = out_files::create("--json", p)?;
    serde_json::to_writer_pretty(&mut f, result)?;
    writeln!(f)?;
    f.flush()?;
    Ok(())
}

/// Writes `--json` and `--histogram` from the finished result.
fn write_files(c: &CommonArgs, result: &RunResult, outcomes: &[ThreadOutcome]) -> Result<()> {
    if let Some(p) = &c.json {
        write_json(p, result)?;
    }
    if let Some(p) = &c.histogram {
        let mut f = out_files::create("--histogram", p)?;
        let latency: Vec<_> = outcomes
            .iter()
            .map(|o| o.recorder.stats[0].summary())
            .collect();
        let threads: Vec<report::histogram::HistThread> = outcomes
            .iter()
            .zip(&latency)
            .filter_map(|(o, l)| {
                o.recorder
                    .histogram
                    .as_ref()
                    .map(|h| report::histogram::HistThread {
                        hist: h,
                        latency: l,
                    })
            })
            .collect();
        report::histogram::write_cyclictest_histogram(&mut f, &threads)?;
        f.flush()?;
    }
    Ok(())
}
