//! Reads real-time throttling around a cell: the runtime limit, the
//! scheduler's view of the probe CPUs' real-time queues, the kernel's log
//! line, and which of the probe's largest samples are as long as the
//! hold-off ([`jitterlab_core::rt_throttle`] does the parsing and the
//! matching; this module only reads).
//!
//! Paths are taken under `--sysroot`: `proc/sys/kernel/sched_rt_runtime_us`
//! and `sched_rt_period_us`; the scheduler's debug file at
//! `sys/kernel/debug/sched/debug` (Linux 5.13 and later, in debugfs, which
//! may not be mounted — jitterlab does not mount it) or `proc/sched_debug`
//! (older kernels); `sys/kernel/debug/sched/fair_server`, or a kernel
//! release of 6.12 or later, for the fair deadline server. The kernel log
//! is given by the caller ([`kernel_log`] reads it with `dmesg` on the real
//! machine), so that tests can give one.
//!
//! A probe's samples in CPU cycles (the chase) are converted to ns with the
//! TSC frequency the caller passes; without one they are not matched.

use std::path::Path;
use std::process::{Command, Stdio};

use jitterlab_core::probe::MetricUnit;
use jitterlab_core::result::RunResult;
use jitterlab_core::rt_throttle::{
    match_stalls, parse_sched_debug, throttle_messages, RtLimit, Throttling,
};

use crate::system::host::read_opt;

/// The kernel log as `dmesg` prints it; empty when it cannot be read
/// (not root, `kernel.dmesg_restrict`, no `dmesg`).
pub fn kernel_log() -> String {
    Command::new("dmesg")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default()
}

/// True for a kernel release of 6.12 or later (`6.18.44-1-cloud-amd64`).
fn has_fair_server(release: &str) -> bool {
    let mut it = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let minor: u32 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
    (major, minor) >= (6, 12)
}

/// Throttling around the cell that measured `result`: read under `root`,
/// with the kernel log `log`, `realtime_probe` when the probe ran at
/// SCHED_FIFO or SCHED_RR without sleeping between samples (see
/// [`Throttling::realtime_probe`]), and the TSC frequency for cycle
/// metrics.
pub fn around_cell(
    root: &Path,
    result: &RunResult,
    realtime_probe: bool,
    log: &str,
    tsc_hz: Option<u64>,
) -> Throttling {
    let limit = match (
        read_opt(root, "proc/sys/kernel/sched_rt_runtime_us"),
        read_opt(root, "proc/sys/kernel/sched_rt_period_us"),
    ) {
        (Some(r), Some(p)) => RtLimit::parse(&r, &p).ok(),
        _ => None,
    };
    let debug = read_opt(root, "sys/kernel/debug/sched/debug")
        .or_else(|| read_opt(root, "proc/sched_debug"))
        .unwrap_or_default();
    let cpus = &result.params.cpus;
    let rt_rqs = parse_sched_debug(&debug)
        .into_iter()
        .filter(|q| cpus.is_empty() || cpus.contains(&q.cpu))
        .collect();
    let fair_server = root.join("sys/kernel/debug/sched/fair_server").is_dir()
        || has_fair_server(&result.host.kernel_release);
    let mut largest = Vec::new();
    for t in &result.threads {
        for (metric, outliers) in &t.outliers {
            let unit = result.probe.metric(metric).map(|d| d.unit);
            for o in outliers.iter().filter(|o| o.value > 0) {
                let v = o.value as u64;
                let ns = match unit {
                    Some(MetricUnit::Ns) => Some(v),
                    Some(MetricUnit::Cycles) => tsc_hz
                        .filter(|hz| *hz > 0)
                        .map(|hz| (v as u128 * 1_000_000_000 / hz as u128) as u64),
                    None => None,
                };
                if let Some(ns) = ns {
                    largest.push((metric.clone(), ns, o.since_start_ns));
                }
            }
        }
    }
    let stalls = limit
        .map(|l| match_stalls(&largest, &l, result.params.window_ns))
        .unwrap_or_default();
    let mut t = Throttling {
        limit,
        fair_server,
        messages: throttle_messages(log),
        rt_rqs,
        stalls,
        realtime_probe,
        windows_hit: Vec::new(),
    };
    // Each window it hit, stored with the cell (the window rows' marks).
    t.windows_hit = t.hit_windows(result.params.window_ns);
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use jitterlab_core::outlier::Outlier;
    use jitterlab_core::probe::ProbeKind;
    use jitterlab_core::result::ThreadResult;
    use jitterlab_core::rt_throttle::{RtRq, Stall, ThrottledWindow};
    use std::fs;

    fn write(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A chase cell whose largest chases were 52.38 ms and 51.9 ms (in
    /// cycles of a 2.4 GHz TSC) in windows 1 and 3, and a 3 ms one.
    fn chase_result() -> RunResult {
        let mut r = RunResult::partial(
            ProbeKind::Chase,
            Default::default(),
            String::new(),
            0,
            Default::default(),
            String::new(),
        );
        r.params.cpus = vec![1];
        r.params.window_ns = 1_000_000_000;
        r.host.kernel_release = "6.1.0-26-amd64".into();
        let o = |ms_x1000: i64, at: u64| Outlier {
            value: ms_x1000 * 2_400_000 / 1000,
            cycle: 0,
            since_start_ns: at,
        };
        r.threads.push(ThreadResult {
            thread: 0,
            cpu: 1,
            tid: 1,
            cycles: 0,
            releases: 0,
            skipped: 0,
            overruns: 0,
            metrics: Default::default(),
            outliers: [(
                "chase".to_string(),
                vec![
                    o(52_380, 1_950_000_000),
                    o(51_900, 3_950_000_000),
                    o(3_000, 200),
                ],
            )]
            .into(),
            calibration: None,
            usage: Default::default(),
            window_rows: 0,
            dropped_rows: 0,
            counters: Default::default(),
        });
        r
    }

    #[test]
    fn a_fake_proc_tree_gives_the_limit_the_queues_and_the_stalls() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "proc/sys/kernel/sched_rt_runtime_us", "950000\n");
        write(root, "proc/sys/kernel/sched_rt_period_us", "1000000\n");
        write(
            root,
            "proc/sched_debug",
            "rt_rq[0]:\n  .rt_throttled : 0\n  .rt_time : 0.5\n  .rt_runtime : 950.000000\n\nrt_rq[1]:\n  .rt_throttled : 1\n  .rt_time : 950.000000\n  .rt_runtime : 950.000000\n",
        );
        let log = "[    0.0] Linux version 6.1\n[ 1024.824060] sched: RT throttling activated\n";
        let t = around_cell(root, &chase_result(), true, log, Some(2_400_000_000));
        assert_eq!(
            t,
            Throttling {
                limit: Some(RtLimit {
                    runtime_us: 950_000,
                    period_us: 1_000_000
                }),
                fair_server: false,
                messages: vec!["[ 1024.824060] sched: RT throttling activated".into()],
                rt_rqs: vec![RtRq {
                    cpu: 1,
                    throttled: true,
                    rt_time_ns: 950_000_000,
                    rt_runtime_ns: Some(950_000_000),
                }],
                stalls: vec![
                    Stall {
                        metric: "chase".into(),
                        ns: 52_380_000,
                        at_ns: 1_950_000_000,
                        window: 1
                    },
                    Stall {
                        metric: "chase".into(),
                        ns: 51_900_000,
                        at_ns: 3_950_000_000,
                        window: 3
                    },
                ],
                realtime_probe: true,
                windows_hit: vec![
                    ThrottledWindow {
                        window: 1,
                        start_ns: 1_000_000_000,
                        end_ns: 2_000_000_000,
                        stalls: 1,
                        longest_ns: 52_380_000
                    },
                    ThrottledWindow {
                        window: 3,
                        start_ns: 3_000_000_000,
                        end_ns: 4_000_000_000,
                        stalls: 1,
                        longest_ns: 51_900_000
                    },
                ],
            }
        );
        assert_eq!(
            t.windows_line(1_000_000_000).unwrap(),
            "RT throttling hit window 1 (1.000s to 2.000s: 1 stall of up to 52.380ms), window 3 (3.000s to 4.000s: 1 stall of up to 51.900ms)"
        );
        // A probe that sleeps (not real-time, or not busy) marks no window.
        let t = around_cell(root, &chase_result(), false, log, Some(2_400_000_000));
        assert_eq!((t.stalls.len(), t.windows_hit.len()), (2, 0));
        assert_eq!(t.windows_line(1_000_000_000), None);
        let t = around_cell(root, &chase_result(), true, log, Some(2_400_000_000));
        assert_eq!(
            t.lines()[1],
            "RT throttling evidence: kernel log: [ 1024.824060] sched: RT throttling activated; rt_throttled on CPU 1"
        );
        // Cycles without a TSC frequency are not matched; no limit, no stalls.
        assert!(around_cell(root, &chase_result(), true, "", None)
            .stalls
            .is_empty());
        write(root, "proc/sys/kernel/sched_rt_runtime_us", "-1\n");
        let t = around_cell(root, &chase_result(), true, "", Some(2_400_000_000));
        assert_eq!((t.stalls.len(), t.explains_stalls()), (0, false));
    }

    #[test]
    fn the_fair_server_is_known_from_the_kernel_release() {
        assert!(has_fair_server("6.18.44-fc-v657"));
        assert!(has_fair_server("6.12.0"));
        assert!(!has_fair_server("6.11.9-rt"));
        assert!(!has_fair_server("5.15.0-91-generic"));
        assert!(!has_fair_server(""));
    }
}
