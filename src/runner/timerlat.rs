//! `jitterlab run timerlat`, and a bench cell of kind `timerlat`: interrupt
//! and thread latency measured by the kernel's timerlat tracer through
//! `rtla timerlat hist` ([`crate::probe::timerlat`]), stored like our own
//! probes' metrics.
//!
//! rtla measures on its own threads and reports one histogram per CPU at
//! the end, so such a result has per-CPU statistics (`irq`, `thread`, and
//! `user` with `--user-threads`) and the histograms behind them, but no
//! window rows and no outliers: the tracer does not say when a sample
//! happened. What rtla printed, its command line and version are kept in the
//! result's `detail`.
//!
//! rtla's output files go to a fresh private work directory in jitterlab's
//! runtime directory ([`crate::system::workdir`]), journaled, and removed
//! when rtla has ended.
//!
//! Where the tracer is missing (no `CONFIG_TIMERLAT_TRACER`, tracefs not
//! mounted, no `rtla`), the run is refused before anything starts (the
//! command line checks, with exit status 2 and the sentence
//! [`timerlat::availability`] wrote); a bench skips such a cell with that
//! sentence as its note.
//!
//! A run and a bench cell ask rtla the same way: [`TimerlatRequest::new`]
//! builds the request from the cell of the typed spec.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use jitterlab_core::defaults;
use jitterlab_core::result::{
    EndReason, HostSnapshot, Params, ProbeKind, RealtimeReport, RunResult, ThreadResult, UsageDelta,
};
use jitterlab_core::spec::{CellPlan, ProbeParams, Spec};
use jitterlab_core::stats::MetricStats;

use crate::output::out;
use crate::probe::timerlat::{self, TimerlatArgs};
use crate::report;
use crate::store::{RunKind, RunStart, Store, StoredHistogram};
use crate::system::host;
use crate::system::journal::Journal;
use crate::system::workdir;

use super::lifecycle::{self, Figures, ResultContext};
use super::RunOptions;

/// One timerlat measurement, assembled.
pub struct TimerlatMeasured {
    /// The result.
    pub result: RunResult,
    /// The histograms behind every metric summary.
    pub histograms: Vec<StoredHistogram>,
}

/// What a timerlat measurement is asked for.
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
        let user_threads = match probe.params {
            ProbeParams::Timerlat { user_threads, .. } => user_threads,
            _ => false,
        };
        TimerlatRequest {
            cpus: probe.cpus(&config.probe_cpus),
            period_ns: probe.period_ns,
            duration_ns: spec.duration_ns,
            priority: config
                .priority
                .map_or(defaults::PRIORITY as u8, |p| p.clamp(0, 255) as u8),
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
        timerlat::validate(&self.args())
    }

    fn params(&self) -> Params {
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

/// Runs rtla and turns its histograms into a result.
pub fn measure_timerlat(
    req: &TimerlatRequest,
    host: HostSnapshot,
    started_at: String,
    signalled: &AtomicBool,
) -> Result<TimerlatMeasured> {
    let out = timerlat::run(&req.args(), signalled)?;
    let per_cpu = timerlat::to_metrics(&out.hist, req.threshold_ns);
    let defs = ProbeKind::Timerlat.metrics();
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
    let context = ResultContext {
        host,
        started_at,
        elapsed_ns: out.wall_ns,
        end: match out.interrupted {
            true => EndReason::Interrupted,
            false => EndReason::Completed,
        },
        // rtla applies its own SCHED_FIFO threads and PM QoS request; what
        // it could not have, it reports as an error.
        realtime: RealtimeReport {
            realtime: true,
            defaults: Vec::new(),
        },
        warnings,
    };
    let figures = Figures {
        threads,
        combined,
        limits: Vec::new(),
        break_event: None,
        detail: Some(serde_json::to_value(&out)?),
    };
    let result = lifecycle::assemble(ProbeKind::Timerlat, req.params(), context, figures);
    Ok(TimerlatMeasured { result, histograms })
}

/// Every CPU's statistics merged, per metric of `defs`.
fn combined_stats(
    per_cpu: &[(usize, std::collections::BTreeMap<String, MetricStats>)],
    defs: &[jitterlab_core::event::MetricDef],
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

/// `jitterlab run timerlat`: the one cell of a run's spec, checked by the
/// command line (see the module doc).
pub fn execute_timerlat(
    root: &Path,
    db: &Path,
    spec: &Spec,
    cell: &CellPlan,
    opts: &RunOptions,
) -> Result<ExitCode> {
    // rtla changes nothing on the machine, but its output goes to a private
    // work directory, journaled so that `restore` removes it after a kill -9:
    // the machine lock is taken when that directory is made.
    let mut journal = Journal::on_demand(root)?;
    let mut store = match opts.no_db {
        true => None,
        false => Some(Store::open(db)?),
    };
    let workdir = workdir::create_work_dir(root, &mut journal)?;
    let req = TimerlatRequest::new(spec, cell, workdir.path().to_path_buf());
    let host = host::snapshot(root);
    let started_at = super::rfc3339_now();
    let signalled = super::termination_flag()?;
    let command_line: Vec<String> = std::env::args().collect();
    let ids = match store.as_mut() {
        Some(s) => Some(
            s.begin_run(&RunStart {
                started_at: &started_at,
                probe: ProbeKind::Timerlat.name(),
                command_line: &command_line,
                params_json: serde_json::to_string(&req.params())?,
                host_json: serde_json::to_string(&host)?,
                hostname: &host.hostname,
                kernel_release: &host.kernel_release,
                realtime: Some(true),
                kind: RunKind::Run,
                name: ProbeKind::Timerlat.name(),
                spec_json: None,
            })
            .context("recording the run")?,
        ),
        None => None,
    };
    let measured = measure_timerlat(&req, host, started_at, &signalled);
    if let Err(e) = workdir.remove(&mut journal) {
        eprintln!("jitterlab: warning: {e:#}");
    }
    let m = match measured {
        Ok(m) => m,
        Err(e) => {
            if let (Some(s), Some(ids)) = (store.as_mut(), ids) {
                let _ = s.abandon_run(ids);
            }
            return Err(e);
        }
    };
    journal.finish()?;
    let failure = match (store.as_mut(), ids) {
        (Some(s), Some(ids)) => super::store_result(s, ids, &m.result, &m.histograms, db),
        _ => None,
    };
    if let Some(p) = &opts.json {
        super::write_json(p, &m.result)?;
    }
    out!("{}", report::text::summary(&m.result))?;
    match failure {
        Some(f) => Err(super::not_stored(&f, opts.json.as_deref())),
        None => Ok(ExitCode::SUCCESS),
    }
}
