//! The host side of a container cell without an engine: the inner `jitterlab
//! run` measures exactly the cell (its argument vector read back by the
//! command line gives the same plan and the same probe arguments, for
//! every kind), what keeps a probe out of a container, which missing
//! real-time defaults fail a cell, and how the host reads the container's
//! threads.

use clap::Parser;
use jitterlab_core::result::{DefaultStatus, RealtimeReport};
use jitterlab_core::spec::{parse, Spec, SpecContext};
use jitterlab_core::units::CpuList;

use super::host_view::{parse_schedstat, sched_of_stat, status_field};
use super::*;
use crate::cli::one_cell::{
    chase_cell, ctxswitch_cell, cyclic_cell, response_cell, wakeup_cell, OneCell,
};
use crate::cli::{Cli, Command, RunCommand};
use crate::probe::{chase, ctxswitch, response};
use crate::runner::{self, RunOptions, Stop};
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

/// The one-cell spec the command line makes of `argv` (the inner run's).
fn read_back(argv: &[String]) -> OneCell {
    let cli =
        Cli::try_parse_from(std::iter::once("jitterlab".to_string()).chain(argv.iter().cloned()))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let Command::Run(run) = cli.command else {
        panic!("not a run")
    };
    let online = online();
    match &run {
        RunCommand::Cyclic(a) => cyclic_cell(a, &online),
        RunCommand::Wakeup(a) => wakeup_cell(a, &online),
        RunCommand::Chase(a) => chase_cell(a, &online),
        RunCommand::Ctxswitch(a) => ctxswitch_cell(a, &online),
        RunCommand::Response(a) => response_cell(a, &online),
        other => panic!("no container run of {other:?}"),
    }
    .unwrap()
}

/// The container cell of `spec` (its first probe) and its plan, as a
/// bench plans it.
fn container_cell(spec: &Spec) -> (jitterlab_core::spec::CellPlan, runner::RunPlan) {
    let cell = spec.cells().into_iter().find(|c| c.in_container()).unwrap();
    let plan = runner::plan(spec, &cell, &RunOptions::default());
    (cell, plan)
}

/// The inner run of `body`'s container cell read back: it must plan the
/// same measurement (parameters, CPUs, scheduling, limits).
fn round_trip(body: &str) -> (Vec<String>, Spec, OneCell) {
    let s = spec(body);
    let (cell, plan) = container_cell(&s);
    let argv = inner_argv(&s, &cell, &plan, Stop::Duration, None, &online()).unwrap();
    let back = read_back(&argv);
    assert_eq!(
        back.spec.deployments,
        ["host"],
        "the inner run is on its host"
    );
    assert!(back.options.stream && back.options.no_db);
    let inner_cell = back.spec.cells().remove(0);
    let inner_plan = runner::plan(&back.spec, &inner_cell, &back.options);
    if plan.kind == jitterlab_core::result::ProbeKind::Chase {
        // A chase has no period, and ends by its samples inside: its
        // arguments are what must match.
        let mut ours = chase::args(&s, &cell, &plan, Stop::Duration);
        let mut theirs = chase::args(&back.spec, &inner_cell, &inner_plan, back.options.stop);
        if s.neighbour_cpus(&cell).len() == 1 {
            assert_eq!(theirs.neighbours, ours.neighbours, "{argv:?}");
        }
        ours.neighbours = CpuList::default();
        theirs.neighbours = CpuList::default();
        assert_eq!(theirs, ours, "{argv:?}");
    } else {
        assert_eq!(inner_plan.params, plan.params, "{argv:?}");
    }
    assert_eq!(
        (
            inner_plan.kind,
            &inner_plan.cpus,
            inner_plan.sched,
            inner_plan.limits,
            inner_plan.outliers
        ),
        (
            plan.kind,
            &plan.cpus,
            plan.sched,
            plan.limits,
            plan.outliers
        ),
        "{argv:?}"
    );
    assert_eq!(
        back.spec.configurations[0].dma_latency,
        s.configurations[cell.configuration].dma_latency
    );
    (argv, s, back)
}

#[test]
fn a_cyclic_cell_runs_inside_as_planned() {
    let (argv, _, _) = round_trip(
        "[[configuration]]\nname = \"rt\"\nprobe_cpus = \"3\"\npriority = 80\n\
         [[probe]]\nkind = \"cyclic\"\nperiod = \"2ms\"\nscan = \"300us\"\nworking_set = \"1MiB\"\n\
         threshold = \"50us\"\nwindow = \"500ms\"\noutliers = 5\nmax_latency = \"1ms\"\n\
         max_jitter = \"500us\"\nmax_exec = \"2ms\"\n",
    );
    assert_eq!(
        argv.join(" "),
        "run cyclic --period 2ms --cpu 3 --scan 300us --working-set 1MiB --duration 7s \
--policy fifo --priority 80 --window 500ms --threshold 50us --outliers 5 --max-latency 1ms \
--max-jitter 500us --max-exec 2ms --no-db --stream"
    );
    // Time-sharing and untuned, as configured.
    let (argv, _, _) = round_trip(
        "[[configuration]]\nname = \"base\"\npolicy = \"other\"\nnice = 5\ndma_latency = false\n\
         [[probe]]\nkind = \"cyclic\"\n",
    );
    let tail: Vec<&str> = argv.iter().map(String::as_str).skip(10).collect();
    assert_eq!(
        tail.join(" "),
        "--duration 7s --policy other --nice 5 --window 1s --threshold 100us --outliers 20 --no-dma-latency --no-db --stream"
    );
}

#[test]
fn a_bench_calibration_goes_in_with_the_cyclic_probe() {
    let s = spec("[[probe]]\nkind = \"cyclic\"\n");
    let (cell, plan) = container_cell(&s);
    let cal = jitterlab_core::result::Calibration {
        cpu: 3,
        scan_target_ns: 100_000,
        working_set_bytes: 262_144,
        nodes: 4096,
        pass_ns: 30_000,
        iterations: 17_000,
        measured_scan_ns: 99_000,
        note: None,
    };
    let argv = inner_argv(
        &s,
        &cell,
        &plan,
        Stop::Duration,
        Some(std::slice::from_ref(&cal)),
        &online(),
    )
    .unwrap();
    let back = read_back(&argv);
    assert_eq!(back.options.calibrated, Some(vec![cal]));
}

#[test]
fn wakeup_chase_ctxswitch_and_response_run_inside_as_planned() {
    let (argv, _, _) = round_trip(
        "[[configuration]]\nname = \"c\"\nprobe_cpus = \"2-3\"\n[[probe]]\nkind = \"wakeup\"\nperiod = \"500us\"\n",
    );
    assert_eq!(
        argv[..6].join(" "),
        "run wakeup --interval 500us --cpus 2-3"
    );

    // A chase by samples whose neighbour is not every other CPU names it.
    let (argv, _, _) = round_trip(
        "[[configuration]]\nname = \"c\"\nprobe_cpus = \"3\"\nneighbour_cpus = \"1\"\n\
         [[probe]]\nkind = \"chase\"\nsamples = 50\niterations = 20\n",
    );
    assert_eq!(
        argv[..12].join(" "),
        "run chase --roles test=3,neighbour=1 --iterations 20 --chase-length 1024 --samples 50 --policy fifo"
    );
    // A chase with its buffer given, to the duration.
    let (argv, _, _) = round_trip("[[probe]]\nkind = \"chase\"\nbuffer = \"64KiB\"\n");
    assert_eq!(
        argv[..12].join(" "),
        "run chase --cpu 3 --buffer 64KiB --iterations 100 --chase-length 1024 --duration 7s"
    );

    let (argv, s, back) = round_trip("[[probe]]\nkind = \"ctxswitch\"\n");
    assert_eq!(argv[..6].join(" "), "run ctxswitch --cpu 3 --interval 1ms");
    let (cell, plan) = container_cell(&s);
    let inner_cell = back.spec.cells().remove(0);
    assert_eq!(
        ctxswitch::args(
            &back.spec,
            &inner_cell,
            &runner::plan(&back.spec, &inner_cell, &back.options)
        ),
        ctxswitch::args(&s, &cell, &plan)
    );

    // The response probe's events come from the first neighbour CPU, named.
    let (argv, s, back) = round_trip("[[probe]]\nkind = \"response\"\n");
    assert_eq!(
        argv[..10].join(" "),
        "run response --cpu 3 --event-cpu 0 --source eventfd --interval 1ms"
    );
    let (cell, plan) = container_cell(&s);
    assert_eq!(container_cpus(&s, &cell, &plan), [0, 3]);
    let inner_cell = back.spec.cells().remove(0);
    assert_eq!(
        response::args(
            &back.spec,
            &inner_cell,
            &runner::plan(&back.spec, &inner_cell, &back.options)
        ),
        response::args(&s, &cell, &plan)
    );
}

#[test]
fn what_cannot_run_in_a_container_says_why() {
    let s =
        spec("[[probe]]\nkind = \"response\"\nsource = \"udp\"\n[[probe]]\nkind = \"timerlat\"\n");
    let cells = s.cells();
    let root = tempfile::tempdir().unwrap();
    let why: Vec<Option<String>> = cells
        .iter()
        .map(|c| crate::probe::cell_kind_unavailable(&s, c, root.path()))
        .collect();
    // Host cells: the response probe can; timerlat lacks its tracer here.
    assert_eq!(why[0], None);
    assert!(why[1]
        .as_deref()
        .unwrap()
        .starts_with("no interrupt latency here: "));
    assert_eq!(
        why[2].as_deref(),
        Some("response with source udp is N/A in a container: it makes two network namespaces and a veth pair, which a container may not; use source eventfd, or measure it on the host")
    );
    assert!(why[3]
        .as_deref()
        .unwrap()
        .starts_with("timerlat is N/A in a container: its tracer is the host kernel's"));
    let plan = runner::plan(&s, &cells[3], &RunOptions::default());
    let e = inner_argv(&s, &cells[3], &plan, Stop::Duration, None, &online()).unwrap_err();
    assert!(
        e.to_string()
            .starts_with("timerlat is N/A in a container: "),
        "{e}"
    );
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
