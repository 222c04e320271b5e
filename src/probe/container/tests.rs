//! The host side of a container cell without an engine: which missing
//! real-time defaults fail a cell, how the host reads the container's
//! threads, and how the probe's result becomes the cell's. (That the inner
//! run measures exactly the cell is the command line's test:
//! `cli/inner_cell_tests.rs`.)

use jitterlab_core::result::{DefaultStatus, RealtimeReport};
use jitterlab_core::spec::{parse, Spec, SpecContext};
use jitterlab_core::units::CpuList;

use super::host_view::{parse_schedstat, sched_of_stat, status_field};
use super::*;
use crate::runner::{self, RunOptions};
use crate::system::container::image::Image;
use crate::system::container::run::ContainerRun;

fn online() -> CpuList {
    CpuList::parse("0-3").unwrap()
}

fn spec(body: &str) -> Spec {
    parse(
        &format!(
            "duration = \"7s\"\nwarmup = \"0\"\ndeployments = [\"host\", \"container\"]\n{body}"
        ),
        "t.toml",
        &SpecContext {
            online: &online(),
            builtins: &["idle"],
        },
    )
    .unwrap()
}

/// The container cell of `spec` (its first probe) and its plan, as a
/// bench plans it.
fn container_cell(spec: &Spec) -> (jitterlab_core::spec::CellPlan, runner::RunPlan) {
    let cell = spec.cells().into_iter().find(|c| c.in_container()).unwrap();
    let plan = runner::plan(spec, &cell, &RunOptions::default());
    (cell, plan)
}

fn status(name: &str, applied: bool) -> DefaultStatus {
    DefaultStatus {
        name: name.into(),
        requested: "x".into(),
        applied,
        detail: format!("{name} detail"),
        required: true,
    }
}

#[test]
fn a_container_cell_fails_only_for_defaults_its_configuration_asks_for() {
    let s = spec("[[probe]]\nkind = \"cyclic\"\n");
    let mut config = s.configurations[0].clone();
    let report = RealtimeReport {
        realtime: false,
        defaults: vec![
            status("mlockall", true),
            status("cpu_dma_latency", false),
            status("scheduler", false),
            DefaultStatus {
                required: false,
                ..status("rt_throttling", false)
            },
        ],
    };
    assert_eq!(
        missing_defaults(&report, &config),
        [
            "cpu_dma_latency: cpu_dma_latency detail",
            "scheduler: scheduler detail"
        ]
    );
    // An untuned, time-sharing baseline misses them on the host too.
    config.dma_latency = false;
    config.policy = jitterlab_core::spec::Policy::Other;
    assert_eq!(missing_defaults(&report, &config), Vec::<String>::new());
    let mut report = report;
    report.defaults.push(status("affinity", false));
    assert_eq!(
        missing_defaults(&report, &config),
        ["affinity: affinity detail"]
    );
}

#[test]
fn the_host_reads_the_container_threads_in_its_own_proc() {
    // Field 40 (rt_priority) and 41 (policy) of a SCHED_FIFO 95 thread whose
    // name holds a space and a parenthesis.
    let stat = "30377 (cyclic) cpu1) S 30374 30374 30374 0 -1 1077936192 2300 0 0 0 29 0 0 0 -96 0 2 0 1234 9000000 2000 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 -1 1 95 1 0 0 0 0 0 0 0 0 0 0 0";
    assert_eq!(sched_of_stat(stat), Some((95, 1)));
    assert_eq!(sched_of_stat("1 (x) S 0"), None);
    let status = "Name:\tcyclic-cpu1\nVmLck:\t   87412 kB\nCpus_allowed_list:\t1\n";
    assert_eq!(status_field(status, "Cpus_allowed_list"), Some("1"));
    assert_eq!(status_field(status, "VmLck"), Some("87412 kB"));
    assert_eq!(status_field(status, "Cpus"), None);
    assert_eq!(
        parse_schedstat("316395998 93890572 1060\n"),
        Some([316_395_998, 93_890_572, 1060])
    );
    assert_eq!(parse_schedstat("1 2"), None);
    // This test's own thread, read as a container's would be.
    let me = HostView::read(std::process::id() as i32, &[], Path::new("/nonexistent"));
    assert_eq!((me.threads.len(), me.pm_qos_us), (0, None));
    assert!(me.locked_kb.is_some());
}

/// The host side of a cyclic container cell on CPU 1, as built.
fn probe_side() -> ContainerProbe {
    let s =
        spec("[[configuration]]\nname = \"c\"\nprobe_cpus = \"1\"\n[[probe]]\nkind = \"cyclic\"\n");
    let (cell, plan) = container_cell(&s);
    ContainerProbe {
        root: PathBuf::from("/"),
        kind: plan.kind,
        params: plan.params.clone(),
        config: s.configurations[0].clone(),
        duration_ns: plan.params.duration_ns,
        ctr: Prepared::for_tests(
            ContainerRun {
                engine: ctr::Engine::Podman,
                image: "localhost/jitterlab:abc".into(),
                name: "jitterlab-7-1".into(),
                cpus: container_cpus(&s, &cell, &plan),
                rt: None,
                ulimits: Vec::new(),
                dma_device: None,
                network: None,
                mounts: Vec::new(),
                argv: vec!["run".into(), "cyclic".into()],
            },
            Image {
                tag: "localhost/jitterlab:abc".into(),
                build_id: "abc".into(),
                built: false,
            },
            vec!["container engine: podman 4.3.1 (/usr/bin/podman) works".into()],
        ),
        live: false,
    }
}

/// A result of the probe inside, with `report` as its real-time report.
fn inner_result(report: RealtimeReport) -> RunResult {
    let json = serde_json::json!({
        "schema_version": jitterlab_core::result::SCHEMA_VERSION,
        "tool": "jitterlab", "tool_version": "0", "probe": "cyclic",
        "started_at": "t", "elapsed_ns": 2_000_000_000u64, "end": "completed",
        "interrupted": false, "command_line": ["/jitterlab"],
        "params": serde_json::to_value(probe_side().params).unwrap(),
        "realtime": serde_json::to_value(&report).unwrap(),
        "host": serde_json::to_value(jitterlab_core::result::HostSnapshot::default()).unwrap(),
        "threads": [{
            "thread": 0, "cpu": 1, "tid": 7, "cycles": 2000, "releases": 2000, "skipped": 0,
            "overruns": 0, "metrics": {}, "outliers": {}, "calibration": null,
            "usage": { "voluntary_switches": 0, "involuntary_switches": 0, "minor_faults": 0, "major_faults": 0 },
            "window_rows": 2, "dropped_rows": 0
        }],
        "combined": null, "limits": [], "break_event": null, "warnings": ["inside"],
        "detail": { "calibration": 1 }
    });
    serde_json::from_value(json).unwrap()
}

#[test]
fn the_probe_s_result_becomes_the_cell_s_with_the_host_s_view() {
    let p = probe_side();
    let report = RealtimeReport {
        realtime: true,
        defaults: vec![status("scheduler", true), status("cpu_dma_latency", true)],
    };
    let view = HostView {
        pid: 4242,
        threads: vec![host_view::ThreadView {
            name: "cyclic-cpu1".into(),
            host_tid: 4245,
            policy: "SCHED_FIFO".into(),
            priority: 95,
            cpus: "1".into(),
            first: Some([1_000, 10, 5]),
            last: Some([9_000, 30, 2_005]),
        }],
        locked_kb: Some(87_412),
        pm_qos_us: Some(0),
    };
    let f = p
        .finish(inner_result(report.clone()), &[], Some(&view))
        .unwrap();
    assert_eq!(f.realtime, Some(report));
    assert_eq!(f.threads[0].tid, 4245);
    assert_eq!(
        f.threads[0].counters,
        [
            ("host on-CPU ns".to_string(), 8_000),
            ("host run-queue wait ns".to_string(), 20),
            ("host time slices".to_string(), 2_000)
        ]
        .into_iter()
        .collect()
    );
    assert_eq!(f.warnings, ["inside"]);
    assert_eq!(f.detail["calibration"], 1);
    let c = &f.detail["container"];
    assert_eq!(
        (
            c["engine"].as_str(),
            c["name"].as_str(),
            c["image"].as_str()
        ),
        (
            Some("podman"),
            Some("jitterlab-7-1"),
            Some("localhost/jitterlab:abc")
        )
    );
    assert_eq!(c["host_view"]["threads"][0]["policy"], "SCHED_FIFO");
    assert_eq!(c["host_view"]["locked_kb"], 87_412);
    assert_eq!(c["cgroup_parent"], serde_json::Value::Null);
}

#[test]
fn a_probe_without_every_real_time_default_fails_the_cell_with_why() {
    let p = probe_side();
    let report = RealtimeReport {
        realtime: false,
        defaults: vec![status("scheduler", false), status("mlockall", true)],
    };
    assert_eq!(
        p.finish(inner_result(report), &[], None).unwrap_err().to_string(),
        "the probe in container jitterlab-7-1 did not get every real-time default (scheduler: scheduler detail): host and container must not compare a real-time probe with one that is not; see `jitterlab check` (container-*) for what this host lacks"
    );
}
