//! The steps every measurement shares, whichever pipeline measures it (the
//! periodic probes' threads in [`super::measure`], an event probe's thread
//! in [`super::event`], rtla in [`super::timerlat`]): the real-time report
//! and the `--strict` abort before anything is released, the warnings shown
//! on a terminal, the limits a result is checked against, and the
//! assembly of the versioned [`RunResult`]. Written once, so a result
//! means the same whatever produced it.

use std::collections::BTreeMap;

use anyhow::bail;
use jitterlab_core::result::{
    check_limit, BreakEvent, DefaultStatus, EndReason, HostSnapshot, LimitCheck, Params, ProbeKind,
    RealtimeReport, RunResult, ThreadResult, SCHEMA_VERSION,
};
use jitterlab_core::stats::MetricSummary;

use crate::error::BadInput;
use crate::system::rt;

use super::RunPlan;

/// The real-time report of a measurement: the process-wide and per-thread
/// `defaults` that were applied, with the clock and the kernel's RT
/// throttling (from `host`) added. Each required default that did not
/// hold becomes a "not real-time" warning.
pub fn realtime_report(
    mut defaults: Vec<DefaultStatus>,
    host: &HostSnapshot,
    warnings: &mut Vec<String>,
) -> RealtimeReport {
    defaults.push(rt::clock_status());
    defaults.push(rt::throttling_status(
        host.sched_rt_runtime_us,
        host.sched_rt_period_us,
    ));
    let realtime = defaults.iter().all(|d| d.applied || !d.required);
    for d in defaults.iter().filter(|d| d.required && !d.applied) {
        warnings.push(format!("not real-time: {}: {}", d.name, d.detail));
    }
    RealtimeReport { realtime, defaults }
}

/// `--strict`: refuses (as bad input, exit 2) a measurement whose
/// real-time defaults did not all hold, naming each; the caller aborts its
/// threads before anything was released.
pub fn strict_check(plan: &RunPlan, report: &RealtimeReport) -> anyhow::Result<()> {
    if !plan.params.strict || report.realtime {
        return Ok(());
    }
    let failed: Vec<String> = report
        .defaults
        .iter()
        .filter(|d| d.required && !d.applied)
        .map(|d| format!("{}: {}", d.name, d.detail))
        .collect();
    bail!(BadInput(format!(
        "--strict: a real-time default could not be applied ({}); fix it or drop --strict",
        failed.join("; ")
    )))
}

/// Prints the warnings so far on stderr when the measurement is shown live
/// (a run; a bench keeps them in its cells).
pub fn say_warnings(live: bool, warnings: &[String]) {
    if live {
        for w in warnings {
            crate::output::errln!("jitterlab: warning: {w}");
        }
    }
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
        tool_version: env!("CARGO_PKG_VERSION").into(),
        probe,
        started_at: c.started_at,
        elapsed_ns: c.elapsed_ns,
        interrupted: c.end != EndReason::Completed,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runner::plan::{Limits, RunOptions};
    use jitterlab_core::spec::{parse, SpecContext};
    use jitterlab_core::units::CpuList;

    fn status(name: &str, applied: bool, required: bool) -> DefaultStatus {
        DefaultStatus {
            name: name.into(),
            requested: "x".into(),
            applied,
            detail: format!("{name} detail"),
            required,
        }
    }

    fn plan(kind: &str, strict: bool) -> RunPlan {
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
        let opts = RunOptions {
            strict,
            ..RunOptions::default()
        };
        super::super::plan(&spec, &spec.cells()[0], &opts)
    }

    #[test]
    fn a_required_default_that_failed_is_a_warning_and_fails_strict() {
        let host = HostSnapshot {
            sched_rt_runtime_us: Some(-1),
            ..HostSnapshot::default()
        };
        let mut warnings = vec!["before".to_string()];
        let report = realtime_report(
            vec![
                status("mlockall", false, true),
                status("cpu_dma_latency", false, false),
            ],
            &host,
            &mut warnings,
        );
        assert!(!report.realtime);
        let names: Vec<&str> = report.defaults.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            ["mlockall", "cpu_dma_latency", "clock", "rt_throttling"]
        );
        assert_eq!(
            warnings,
            ["before", "not real-time: mlockall: mlockall detail"]
        );
        assert!(strict_check(&plan("cyclic", false), &report).is_ok());
        let e = strict_check(&plan("ctxswitch", true), &report).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "--strict: a real-time default could not be applied (mlockall: mlockall detail); fix it or drop --strict"
        );
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
        let mut cyclic = plan("cyclic", false);
        cyclic.limits = Limits {
            latency: Some(60_000),
            jitter: Some(80_000),
            exec: Some(1),
        };
        let got: Vec<(String, u64, bool)> = limits(&cyclic, stats)
            .into_iter()
            .map(|l| (l.metric, l.observed_ns, l.exceeded))
            .collect();
        // No exec statistics: no exec check.
        assert_eq!(
            got,
            [
                ("latency".to_string(), 50_000, false),
                ("jitter".to_string(), 90_000, true)
            ]
        );
        let mut ctxswitch = plan("ctxswitch", false);
        ctxswitch.limits.latency = Some(5_000);
        let got = limits(&ctxswitch, stats);
        assert_eq!(
            (got[0].metric.as_str(), got[0].exceeded, got.len()),
            ("handover", true, 1)
        );
        assert!(limits(&plan("chase", false), stats).is_empty());
        // The response probe's limit is on the answer sent (its second
        // metric), not on the wake-up.
        let mut response = plan("response", false);
        response.limits.latency = Some(5_000);
        let answer = |m: &str| (m == "response").then(|| summary(9_000));
        let got = limits(&response, answer);
        assert_eq!(
            (got[0].metric.as_str(), got[0].observed_ns, got.len()),
            ("response", 9_000, 1)
        );
        assert_eq!(ProbeKind::Response.metrics()[1].name, "response");
    }
}
