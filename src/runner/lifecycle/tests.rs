//! The lifecycle with fake probes: what it asks of them, what it records,
//! how it ends. Nothing here needs root: the fake probes measure under
//! SCHED_OTHER on the CPU the test runs on, without sleeping.

use super::*;
use crate::error::BadInput;
use crate::probe::fake::{Cycles, Synthetic};
use crate::probe::{ExternalProbe, Finished};
use crate::system::journal::Journal;
use jitterlab_core::result::{Params, ProbeKind, ThreadResult};
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

/// The plan of the one cell of a spec with `probe` (a `[[probe]]` table's
/// keys) on `cpus` under SCHED_OTHER, lasting `duration`.
fn plan_of(probe: &str, cpus: &str, duration: &str, strict: bool) -> RunPlan {
    let online = CpuList::parse(cpus).unwrap();
    let spec = parse(
        &format!(
            "duration = \"{duration}\"\n[[configuration]]\nname = \"c\"\nprobe_cpus = \"{cpus}\"\npolicy = \"other\"\n\
             [[probe]]\n{probe}\n"
        ),
        "t.toml",
        &SpecContext {
            online: &online,
            builtins: &["idle"],
        },
    )
    .unwrap();
    let opts = super::super::RunOptions {
        strict,
        ..Default::default()
    };
    super::super::plan(&spec, &spec.cells()[0], &opts)
}

/// The CPU this test runs on, as a CPU list.
fn here() -> String {
    sys::current_cpu().unwrap_or(0).to_string()
}

fn input<'a>(plan: &'a RunPlan, signalled: &'a AtomicBool) -> MeasureInput<'a> {
    MeasureInput {
        plan,
        host: HostSnapshot::default(),
        started_at: "now".into(),
        defaults: Vec::new(),
        warnings: vec!["before".into()],
        signalled,
        live: false,
        progress: false,
    }
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
    let cyclic = plan_of("kind = \"cyclic\"", "0-1", "1s", false);
    assert!(strict_check(&cyclic, &report).is_ok());
    let ctxswitch = plan_of("kind = \"ctxswitch\"", "0-1", "1s", true);
    let e = strict_check(&ctxswitch, &report).unwrap_err();
    assert!(e.downcast_ref::<BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        "--strict: a real-time default could not be applied (mlockall: mlockall detail); fix it or drop --strict"
    );
}

#[test]
#[serial_test::serial]
fn every_sample_reaches_the_statistics_windows_limit_and_detail() {
    let cpu = sys::current_cpu().unwrap_or(0);
    let plan = plan_of(
        "kind = \"ctxswitch\"\noutliers = 3\nmax_latency = \"150us\"",
        &here(),
        "5s",
        false,
    );
    assert_eq!(
        (plan.params.threshold_ns, plan.outliers, plan.limits.latency),
        (100_000, 3, Some(150_000))
    );
    let signalled = AtomicBool::new(false);
    let mut writer = RowWriter::new(None, None);
    let mut readied = None;
    let (probe, seen) = Synthetic::new(200);
    let mut probes = Probes::threads(vec![Box::new(probe)]);
    let m = measure(
        input(&plan, &signalled),
        &mut probes,
        &mut writer,
        &mut |_, rt| {
            readied = Some(rt);
            Ok(())
        },
        &mut || {},
    )
    .unwrap();
    // SCHED_OTHER is never real-time, and the result says so.
    assert_eq!(readied, Some(false));
    let r = &m.result;
    assert_eq!(r.probe, ProbeKind::Ctxswitch);
    assert_eq!(r.end, EndReason::Completed);
    let t = &r.threads[0];
    assert_eq!((t.thread, t.cpu, t.cycles, t.releases), (0, cpu, 200, 200));
    let h = &t.metrics["handover"];
    assert_eq!((h.count, h.min, h.max), (200, Some(1_000), Some(200_000)));
    // 101..=200 µs are over the 100 µs threshold.
    assert_eq!(h.over_threshold, Some(100));
    assert_eq!(
        t.outliers["handover"]
            .iter()
            .map(|o| o.value)
            .collect::<Vec<_>>(),
        vec![200_000, 199_000, 198_000]
    );
    assert_eq!(r.combined, None);
    assert_eq!(r.limits.len(), 1);
    assert_eq!(
        (
            r.limits[0].metric.as_str(),
            r.limits[0].observed_ns,
            r.limits[0].exceeded
        ),
        ("handover", Some(200_000), true)
    );
    assert_eq!(r.detail, Some(serde_json::json!({ "pushed": 200 })));
    // Warnings in the order they arose: the caller's, the probe's at its
    // set-up, SCHED_OTHER's, the probe's at its end.
    assert_eq!(r.warnings[..2], ["before", "synthetic probe"]);
    assert!(
        r.warnings[2].starts_with("not real-time: scheduler"),
        "{:?}",
        r.warnings
    );
    assert_eq!(r.warnings.last().unwrap(), "measured");
    // Every sample is in exactly one drained window row.
    let rows: u64 = writer.samples;
    assert_eq!(rows, 200);
    assert_eq!(m.histograms.len(), 1);
    assert_eq!(
        (m.histograms[0].thread, m.histograms[0].metric),
        (Some(0), "handover")
    );
    // The hand-over (the main latency) in 1 µs bins: 1 … 200 µs, one each,
    // with the default 10 000 bins.
    let fine = m.histograms[0].fine.as_ref().unwrap();
    assert_eq!(fine.buckets.len(), 10_000);
    assert_eq!(
        &fine.buckets[..202],
        &[[0].as_slice(), &[1; 200], &[0]].concat()[..]
    );
    assert_eq!((fine.count(), fine.overflows), (200, 0));
    assert_eq!(m.recorders.len(), 1);
    // The probe is back for its teardown.
    assert_eq!(
        probes.teardown(std::path::Path::new("/"), &mut journal()),
        ["torn down"]
    );
    assert_eq!(*seen.lock().unwrap(), ["prepare", "measure", "teardown"]);
}

/// A journal that records nothing (the fake probes change nothing); the
/// tests that make one are serial with the journal's own, which hold the
/// machine lock of the runtime directory.
fn journal() -> Journal {
    let root = tempfile::tempdir().unwrap();
    Journal::on_demand(root.path()).unwrap()
}

#[test]
#[serial_test::serial]
fn periodic_threads_are_combined_and_checked_together() {
    let cpus = here();
    // Two threads on this CPU: a wake-up probe on "N,N" is one CPU, so ask
    // for it twice through two probes on the one-CPU plan's CPU list.
    let mut plan = plan_of(
        "kind = \"wakeup\"\nmax_latency = \"2ms\"",
        &cpus,
        "1s",
        false,
    );
    plan.cpus = vec![plan.cpus[0], plan.cpus[0]];
    let signalled = AtomicBool::new(false);
    let mut writer = RowWriter::new(None, None);
    let mut probes = Probes::threads(vec![
        Box::new(Cycles { n: 100 }),
        Box::new(Cycles { n: 300 }),
    ]);
    let m = measure(
        input(&plan, &signalled),
        &mut probes,
        &mut writer,
        &mut |_, _| Ok(()),
        &mut || {},
    )
    .unwrap();
    let r = &m.result;
    assert_eq!(r.probe, ProbeKind::Wakeup);
    let counts: Vec<(u32, u64, u64)> = r
        .threads
        .iter()
        .map(|t| (t.thread, t.cycles, t.metrics["latency"].count))
        .collect();
    assert_eq!(counts, [(0, 100, 100), (1, 300, 300)]);
    let combined = r.combined.as_ref().unwrap();
    assert_eq!(combined["latency"].count, 400);
    assert_eq!(combined["latency"].max, Some(300_000));
    assert_eq!(
        (
            r.limits[0].metric.as_str(),
            r.limits[0].observed_ns,
            r.limits[0].exceeded
        ),
        ("latency", Some(300_000), false)
    );
    assert_eq!(r.detail, None);
    // Four metrics per thread, and the four combined.
    assert_eq!(m.histograms.len(), 12);
    assert_eq!(
        m.histograms.iter().filter(|h| h.thread.is_none()).count(),
        4
    );
    // The wake-up latency's 1 µs histograms: 1 … 100 µs and 1 … 300 µs,
    // and both added bin by bin.
    let fine: Vec<(Option<u32>, &str, u64, u64, u64)> = m
        .histograms
        .iter()
        .filter_map(|h| {
            let f = h.fine.as_ref()?;
            Some((h.thread, h.metric, f.buckets[1], f.buckets[300], f.count()))
        })
        .collect();
    assert_eq!(
        fine,
        [
            (Some(0), "latency", 1, 0, 100),
            (Some(1), "latency", 1, 1, 300),
            (None, "latency", 2, 1, 400)
        ]
    );
    let rows: u64 = writer.samples;
    assert_eq!(rows, 400);
    assert_eq!(
        probes.teardown(std::path::Path::new("/"), &mut journal()),
        Vec::<String>::new()
    );
}

#[test]
#[serial_test::serial]
fn a_probe_that_cannot_prepare_ends_the_measurement_before_it_starts() {
    let plan = plan_of("kind = \"ctxswitch\"", &here(), "5s", false);
    let signalled = AtomicBool::new(false);
    let mut writer = RowWriter::new(None, None);
    let (mut probe, seen) = Synthetic::new(10);
    probe.prepare = Err("--buffer is too small".into());
    let mut probes = Probes::threads(vec![Box::new(probe)]);
    let mut readied = false;
    let e = measure(
        input(&plan, &signalled),
        &mut probes,
        &mut writer,
        &mut |_, _| {
            readied = true;
            Ok(())
        },
        &mut || {},
    )
    .err()
    .unwrap();
    assert!(e.downcast_ref::<BadInput>().is_some());
    assert_eq!(e.to_string(), "--buffer is too small");
    assert!(!readied);
    assert_eq!(*seen.lock().unwrap(), ["prepare"]);
    // Back for its teardown all the same.
    assert_eq!(
        probes.teardown(std::path::Path::new("/"), &mut journal()),
        ["torn down"]
    );
}

#[test]
fn strict_aborts_before_the_start_is_recorded() {
    let plan = plan_of("kind = \"ctxswitch\"", &here(), "5s", true);
    let signalled = AtomicBool::new(false);
    let mut writer = RowWriter::new(None, None);
    let (probe, seen) = Synthetic::new(10);
    let mut probes = Probes::threads(vec![Box::new(probe)]);
    let mut readied = false;
    let e = measure(
        input(&plan, &signalled),
        &mut probes,
        &mut writer,
        &mut |_, _| {
            readied = true;
            Ok(())
        },
        &mut || {},
    )
    .err()
    .unwrap();
    // SCHED_OTHER is not real-time.
    assert!(
        e.to_string()
            .starts_with("--strict: a real-time default could not be applied (scheduler: "),
        "{e}"
    );
    assert!(!readied);
    assert_eq!(*seen.lock().unwrap(), ["prepare"]);
    let Probes::Threads(t) = &probes else {
        unreachable!()
    };
    assert_eq!(t.probes.len(), 1);
}

#[test]
fn a_signal_ends_it_interrupted_and_the_duration_completed() {
    let plan = plan_of("kind = \"ctxswitch\"", &here(), "300ms", false);
    for signal in [true, false] {
        let signalled = AtomicBool::new(signal);
        let mut writer = RowWriter::new(None, None);
        let (probe, _) = Synthetic::new(u64::MAX);
        let mut probes = Probes::threads(vec![Box::new(probe)]);
        let started = std::time::Instant::now();
        let m = measure(
            input(&plan, &signalled),
            &mut probes,
            &mut writer,
            &mut |_, _| Ok(()),
            &mut || {},
        )
        .unwrap();
        let took = started.elapsed();
        let r = &m.result;
        match signal {
            true => {
                assert_eq!(
                    (r.end.clone(), r.interrupted),
                    (EndReason::Interrupted, true)
                );
                assert!(took < Duration::from_millis(300), "{took:?}");
            }
            false => {
                assert_eq!(
                    (r.end.clone(), r.interrupted),
                    (EndReason::Completed, false)
                );
                assert!(took >= Duration::from_millis(300), "{took:?}");
                assert!(r.elapsed_ns >= 300_000_000, "{}", r.elapsed_ns);
            }
        }
        assert!(r.threads[0].cycles > 0);
    }
}

/// rtla's part: finished figures for two CPUs.
struct Tool {
    interrupted: bool,
}

impl ExternalProbe for Tool {
    fn params(&self) -> Params {
        Params {
            duration_ns: Some(1_000_000_000),
            cpus: vec![0, 1],
            window_ns: 0,
            ..Params::default()
        }
    }

    fn measure(&mut self, run: &mut ExternalRun<'_>) -> Result<Finished> {
        run.ready(true)?;
        let thread = |i: u32| ThreadResult {
            thread: i,
            cpu: i as usize,
            tid: 0,
            cycles: 10,
            releases: 10,
            skipped: 0,
            overruns: 0,
            metrics: Default::default(),
            outliers: Default::default(),
            calibration: None,
            usage: UsageDelta::default(),
            window_rows: 0,
            dropped_rows: 0,
            counters: Default::default(),
        };
        Ok(Finished {
            realtime: None,
            limits: Vec::new(),
            threads: vec![thread(0), thread(1)],
            combined: Some(Default::default()),
            histograms: Vec::new(),
            warnings: vec!["rtla said so".into()],
            detail: serde_json::json!({ "argv": ["rtla"] }),
            elapsed_ns: 1_234,
            interrupted: self.interrupted,
        })
    }
}

#[test]
fn an_external_tool_is_ready_at_once_and_assembled_as_it_measured() {
    // The plan's limit does not apply to rtla's figures.
    let plan = plan_of(
        "kind = \"timerlat\"\nmax_latency = \"1us\"",
        "0-1",
        "1s",
        false,
    );
    let signalled = AtomicBool::new(false);
    for interrupted in [false, true] {
        let mut writer = RowWriter::new(None, None);
        let mut probes = Probes::External(Box::new(Tool { interrupted }));
        let mut readied = None;
        let m = measure(
            input(&plan, &signalled),
            &mut probes,
            &mut writer,
            &mut |_, rt| {
                readied = Some(rt);
                Ok(())
            },
            &mut || {},
        )
        .unwrap();
        assert_eq!(readied, Some(true));
        let r = &m.result;
        assert_eq!(r.probe, ProbeKind::Timerlat);
        assert_eq!(r.params.policy, "fifo");
        assert_eq!(r.params.window_ns, 0);
        assert!(r.realtime.realtime && r.realtime.defaults.is_empty());
        assert_eq!(r.threads.len(), 2);
        assert!(r.limits.is_empty());
        assert_eq!(r.warnings, ["before", "rtla said so"]);
        assert_eq!(r.elapsed_ns, 1_234);
        assert_eq!(r.interrupted, interrupted);
        assert_eq!(r.detail, Some(serde_json::json!({ "argv": ["rtla"] })));
        assert!(m.recorders.is_empty());
    }
}

/// A probe that measures elsewhere and streams its rows (a container's
/// host side): two window rows, then its result with its own real-time
/// report and limits.
struct Streamer;

impl ExternalProbe for Streamer {
    fn params(&self) -> Params {
        Tool { interrupted: false }.params()
    }

    fn measure(&mut self, run: &mut ExternalRun<'_>) -> Result<Finished> {
        run.ready(false)?;
        run.ready(true)?; // once only
        let mut stats =
            [jitterlab_core::window::WindowStat::default(); jitterlab_core::probe::MAX_METRICS];
        stats[0].count = 500;
        let row = |window: u64| WindowRow {
            thread: 0,
            cpu: 1,
            window,
            start_ns: window * 1_000_000_000,
            cycles: 500,
            overruns: 0,
            metrics: ProbeKind::Cyclic.metrics(),
            stats,
        };
        run.rows(&[row(0)]);
        run.rows(&[row(1)]);
        run.tick();
        Ok(Finished {
            realtime: Some(RealtimeReport {
                realtime: false,
                defaults: Vec::new(),
            }),
            limits: vec![jitterlab_core::result::LimitCheck {
                metric: "latency".into(),
                limit_ns: 1,
                observed_ns: Some(2),
                exceeded: true,
                samples: None,
            }],
            threads: Vec::new(),
            combined: None,
            histograms: Vec::new(),
            warnings: vec!["inside".into()],
            detail: serde_json::json!({ "container": {} }),
            elapsed_ns: 2_000_000_000,
            interrupted: false,
        })
    }
}

#[test]
fn rows_measured_elsewhere_are_written_as_they_come_with_the_report_they_bring() {
    let plan = plan_of("kind = \"cyclic\"", "0-1", "2s", false);
    let signalled = AtomicBool::new(false);
    let mut writer = RowWriter::new(None, None);
    let mut probes = Probes::External(Box::new(Streamer));
    let (mut readied, mut ticks) = (Vec::new(), 0);
    let m = measure(
        input(&plan, &signalled),
        &mut probes,
        &mut writer,
        &mut |_, rt| {
            readied.push(rt);
            Ok(())
        },
        &mut || ticks += 1,
    )
    .unwrap();
    assert_eq!((readied, ticks, writer.samples), (vec![false], 1, 1000));
    let r = &m.result;
    assert!(!r.realtime.realtime);
    assert_eq!(r.limits.len(), 1);
    assert!(r.failed());
    assert_eq!(r.warnings, ["before", "inside"]);
    assert_eq!(r.elapsed_ns, 2_000_000_000);
}

#[test]
fn an_observer_keeps_off_every_probe_cpu_of_its_configuration_at_sched_other() {
    let online = CpuList::parse("0-3").unwrap();
    let spec = parse(
        "duration = \"1s\"\n[[configuration]]\nname = \"c\"\nprobe_cpus = \"1-2\"\nneighbour_cpus = \"0\"\n\
         policy = \"fifo\"\npriority = 95\n[[probe]]\nkind = \"observe\"\ntid = 7\n",
        "t.toml",
        &SpecContext {
            online: &online,
            builtins: &["idle"],
        },
    )
    .unwrap();
    let plan = super::super::plan(&spec, &spec.cells()[0], &Default::default());
    // The observe probe measures on the first probe CPU only …
    assert_eq!(plan.cpus, [1]);
    let other = SchedRequest {
        policy: Policy::Other,
        priority: 0,
        nice: 0,
    };
    let host = |online: &str| HostSnapshot {
        cpus_online: online.into(),
        ..HostSnapshot::default()
    };
    // … and its observer keeps off CPUs 1 and 2, and off the neighbours'
    // CPU 0 where it can: CPU 3, at SCHED_OTHER whatever the
    // configuration's policy (the task's).
    assert_eq!(observer_place(&plan, &host("0-3")).unwrap(), (3, other));
    // Only the neighbours' CPU is left.
    assert_eq!(observer_place(&plan, &host("0-2")).unwrap(), (0, other));
    // Nothing but the probe CPUs: it shares the first.
    assert_eq!(observer_place(&plan, &host("1-2")).unwrap(), (1, other));
}
