//! From what a measurement produced to the versioned [`RunResult`]: the
//! limits a result is checked against and the result's assembly, written
//! once, so a result means the same whatever measured it — probes on
//! threads of ours ([`threads`]) or an external tool
//! ([`super::lifecycle`] hands its finished figures to [`assemble`]).

use std::collections::BTreeMap;

use jitterlab_core::recorder::LatencyHistogram;
use jitterlab_core::result::{
    check_limit, BreakEvent, Calibration, EndReason, HostSnapshot, LimitCheck, Params, ProbeKind,
    RealtimeReport, RunResult, ThreadResult, UsageDelta, SCHEMA_VERSION,
};
use jitterlab_core::stats::{MetricStats, MetricSummary};

use crate::probe::{Recorder, Report};
use crate::store::StoredHistogram;

use super::RunPlan;

/// What a measurement produced.
pub struct Measured {
    /// The assembled result.
    pub result: RunResult,
    /// The histograms behind every stored metric summary.
    pub histograms: Vec<StoredHistogram>,
    /// Every measuring thread's recorder, by thread (none for an external
    /// tool).
    pub recorders: Vec<Recorder>,
}

/// The limits of `plan` checked against the run's statistics, by metric
/// name: `--max-latency` on the probe's main latency, `--max-jitter` on
/// `jitter`, `--max-exec` on `exec`.
pub fn limits(plan: &RunPlan, summary: impl Fn(&str) -> Option<MetricSummary>) -> Vec<LimitCheck> {
    let asked = [
        (plan.kind.main_latency(), plan.limits.latency),
        (Some("jitter"), plan.limits.jitter),
        (Some("exec"), plan.limits.exec),
    ];
    asked
        .into_iter()
        .filter_map(|(metric, limit)| {
            let (metric, limit) = (metric?, limit?);
            Some(check_limit(metric, limit, &summary(metric)?))
        })
        .collect()
}

/// How a measurement went, besides its figures.
pub struct ResultContext {
    /// Host snapshot stored with the result.
    pub host: HostSnapshot,
    /// RFC 3339 start time.
    pub started_at: String,
    /// From the first release (or rtla's start) to the end, ns.
    pub elapsed_ns: u64,
    /// Why it ended.
    pub end: EndReason,
    /// The real-time set-up as it was.
    pub realtime: RealtimeReport,
    /// Every warning, in the order they arose.
    pub warnings: Vec<String>,
}

/// What the measurement itself produced.
pub struct Figures {
    /// One entry per measuring thread (or CPU).
    pub threads: Vec<ThreadResult>,
    /// Every thread merged, when there are several.
    pub combined: Option<BTreeMap<String, MetricSummary>>,
    /// The limits checked.
    pub limits: Vec<LimitCheck>,
    /// What `--break-trace` caught.
    pub break_event: Option<BreakEvent>,
    /// What the probe reports beyond its metrics.
    pub detail: Option<serde_json::Value>,
}

/// The versioned result of a measurement of `probe` with `params`.
pub fn assemble(probe: ProbeKind, params: Params, c: ResultContext, f: Figures) -> RunResult {
    RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "jitterlab".into(),
        tool_version: crate::version::TOOL_VERSION.into(),
        probe,
        started_at: c.started_at,
        elapsed_ns: c.elapsed_ns,
        interrupted: c.end != EndReason::Completed,
        signal: match c.end {
            EndReason::Interrupted => crate::termination::received(),
            _ => None,
        },
        end: c.end,
        command_line: std::env::args().collect(),
        params,
        realtime: c.realtime,
        host: c.host,
        threads: f.threads,
        combined: f.combined,
        limits: f.limits,
        break_event: f.break_event,
        warnings: c.warnings,
        detail: f.detail,
    }
}

/// What one measuring thread of ours recorded.
pub struct ThreadFigures {
    /// Thread index.
    pub index: u32,
    /// CPU.
    pub cpu: usize,
    /// Kernel thread id.
    pub tid: i32,
    /// Everything recorded.
    pub recorder: Recorder,
    /// Context switches and faults during the measurement.
    pub usage: UsageDelta,
    /// The scan calibration it measured with.
    pub calibration: Option<Calibration>,
}

/// The result of a measurement on threads of ours (at least one): every
/// thread's figures, with its probe's `report`, their merged statistics
/// when there are several, the limits checked on those, the histograms
/// behind every summary (the main latency's 1 µs histogram among them). A break event ends it as a break, else an end of
/// `Interrupted` (a terminating signal) stays.
pub fn threads(
    plan: &RunPlan,
    mut context: ResultContext,
    figures: Vec<ThreadFigures>,
    reports: Vec<Report>,
) -> Measured {
    let names: Vec<&'static str> = figures[0].recorder.defs.iter().map(|d| d.name).collect();
    let combined_stats = combine(&figures, names.len());
    let break_event = reports.iter().find_map(|r| r.break_event.clone());
    if break_event.is_some() {
        context.end = EndReason::BreakTrace;
    }
    let threads: Vec<ThreadResult> = figures
        .iter()
        .zip(&reports)
        .map(|(f, r)| thread_result(f, r))
        .collect();
    let several = figures.len() > 1;
    let combined = several.then(|| {
        names
            .iter()
            .zip(&combined_stats)
            .map(|(n, s)| (n.to_string(), s.summary()))
            .collect()
    });
    let limits = limits(plan, |name| {
        let i = names.iter().position(|n| *n == name)?;
        Some(combined_stats[i].summary())
    });
    let mut histograms = Vec::new();
    for f in &figures {
        let fine = f.recorder.fine_histogram();
        for (def, stats, _) in f.recorder.metrics() {
            let fine = fine.filter(|(m, _)| *m == def.name).map(|(_, h)| h.clone());
            histograms.push(stored(Some(f.index), def.name, stats, fine));
        }
    }
    if several {
        let fine = combine_fine(&figures);
        for (name, stats) in names.iter().zip(&combined_stats) {
            let fine = fine
                .as_ref()
                .filter(|(m, _)| m == name)
                .map(|(_, h)| h.clone());
            histograms.push(stored(None, name, stats, fine));
        }
    }
    let detail = reports.iter().find_map(|r| r.detail.clone());
    let mut params = plan.params.clone();
    if let Some(cpus) = reports.iter().find_map(|r| r.task_cpus.as_ref()) {
        params.cpus = cpus.clone();
        params.cpus.sort_unstable();
    }
    let result = assemble(
        plan.kind,
        params,
        context,
        Figures {
            threads,
            combined,
            limits,
            break_event,
            detail,
        },
    );
    Measured {
        result,
        histograms,
        recorders: figures.into_iter().map(|f| f.recorder).collect(),
    }
}

/// One thread's entry in the result: a periodic probe's schedule counts,
/// else one release per sample.
fn thread_result(f: &ThreadFigures, report: &Report) -> ThreadResult {
    let r = &f.recorder;
    let samples = r.samples;
    let schedule = report.schedule.unwrap_or(crate::probe::ScheduleCounts {
        cycles: samples,
        releases: samples,
        skipped: 0,
        overruns: 0,
    });
    ThreadResult {
        thread: f.index,
        cpu: report
            .task_cpus
            .as_ref()
            .and_then(|c| c.first().copied())
            .unwrap_or(f.cpu),
        tid: f.tid,
        cycles: schedule.cycles,
        releases: schedule.releases,
        skipped: schedule.skipped,
        overruns: schedule.overruns,
        metrics: r
            .metrics()
            .map(|(d, s, _)| (d.name.to_string(), s.summary()))
            .collect(),
        outliers: r
            .metrics()
            .map(|(d, _, o)| (d.name.to_string(), o.sorted()))
            .collect(),
        calibration: f.calibration.clone(),
        usage: f.usage,
        window_rows: r.windows.pushed(),
        dropped_rows: r.windows.dropped(),
        counters: Default::default(),
    }
}

/// Every thread's statistics merged, per metric in table order (for the
/// combined table, the limits and the stored combined histograms).
fn combine(figures: &[ThreadFigures], metrics: usize) -> Vec<MetricStats> {
    (0..metrics)
        .map(|i| {
            let mut acc = figures[0].recorder.stats[i].clone();
            for f in &figures[1..] {
                acc.merge(&f.recorder.stats[i]);
            }
            acc
        })
        .collect()
}

/// Every thread's 1 µs histogram merged, with the metric it counts; no
/// overflow cycle numbers (each thread numbers its own cycles).
fn combine_fine(figures: &[ThreadFigures]) -> Option<(&'static str, LatencyHistogram)> {
    let (metric, first) = figures[0].recorder.fine_histogram()?;
    let mut acc = first.clone();
    acc.overflow_cycles.clear();
    for f in &figures[1..] {
        if let Some((_, h)) = f.recorder.fine_histogram() {
            acc.merge(h);
        }
    }
    Some((metric, acc))
}

/// The histograms behind one stored metric summary: its HDR histograms
/// and, for the main latency, its 1 µs one.
fn stored(
    thread: Option<u32>,
    metric: &'static str,
    stats: &MetricStats,
    fine: Option<LatencyHistogram>,
) -> StoredHistogram {
    let h = stats.histograms();
    StoredHistogram {
        thread,
        metric,
        positive: h.positive,
        negative: h.negative,
        fine,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::plan::{Limits, RunOptions};
    use jitterlab_core::spec::{parse, SpecContext};
    use jitterlab_core::units::CpuList;

    fn plan(kind: &str) -> RunPlan {
        let online = CpuList::parse("0-1").unwrap();
        let spec = parse(
            &format!("duration = \"1s\"\n[[probe]]\nkind = \"{kind}\"\n"),
            "t.toml",
            &SpecContext {
                online: &online,
                builtins: &["idle"],
            },
        )
        .unwrap();
        super::super::plan(&spec, &spec.cells()[0], &RunOptions::default())
    }

    #[test]
    fn limits_apply_to_the_main_latency_jitter_and_exec() {
        let summary = |max: i64| MetricSummary {
            max: Some(max),
            ..MetricSummary::default()
        };
        let stats = |m: &str| match m {
            "latency" => Some(summary(50_000)),
            "handover" => Some(summary(7_000)),
            "jitter" => Some(summary(-90_000)),
            _ => None,
        };
        let mut cyclic = plan("cyclic");
        cyclic.limits = Limits {
            latency: Some(60_000),
            jitter: Some(80_000),
            exec: Some(1),
        };
        let got: Vec<(String, Option<u64>, bool)> = limits(&cyclic, stats)
            .into_iter()
            .map(|l| (l.metric, l.observed_ns, l.exceeded))
            .collect();
        // No exec statistics: no exec check.
        assert_eq!(
            got,
            [
                ("latency".to_string(), Some(50_000), false),
                ("jitter".to_string(), Some(90_000), true)
            ]
        );
        let mut ctxswitch = plan("ctxswitch");
        ctxswitch.limits.latency = Some(5_000);
        let got = limits(&ctxswitch, stats);
        assert_eq!(
            (got[0].metric.as_str(), got[0].exceeded, got.len()),
            ("handover", true, 1)
        );
        assert!(limits(&plan("chase"), stats).is_empty());
        // The response probe's limit is on the answer sent (its second
        // metric), not on the wake-up.
        let mut response = plan("response");
        response.limits.latency = Some(5_000);
        let answer = |m: &str| (m == "response").then(|| summary(9_000));
        let got = limits(&response, answer);
        assert_eq!(
            (got[0].metric.as_str(), got[0].observed_ns, got.len()),
            ("response", Some(9_000), 1)
        );
        assert_eq!(ProbeKind::Response.metrics()[1].name, "response");
    }
}
