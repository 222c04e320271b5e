//! A container cell's inner run measures exactly the cell: the cell it
//! hands over (`probe::container::InnerCell`), read back by this command
//! line's `__cell`, is the same cell for every kind, and plans the same
//! measurement as the host's cell; what keeps a probe out of a container
//! says why.

use jitterlab_core::probe::InContainer;
use jitterlab_core::result::{Calibration, ProbeKind};
use jitterlab_core::roundtrip::{Role, RoundtripParams};
use jitterlab_core::spec::{
    parse, CellPlan, ConfigSettings, Configuration, Policy, ProbeScope, Scenario, Spec, SpecContext,
};
use jitterlab_core::units::CpuList;

use super::Command;
use crate::probe::container::{container_cpus, InnerCell};
use crate::probe::roundtrip::container::controller_cell;
use crate::probe::{chase, ctxswitch, response, roundtrip};
use crate::runner::{self, RunOptions, RunPlan, Stop};

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
            builtins: &["idle", "cpu"],
        },
    )
    .unwrap()
}

/// The container cell of `spec` (of its first probe) and its plan, as a
/// bench plans it.
fn container_cell(spec: &Spec) -> (CellPlan, RunPlan) {
    let cell = spec.cells().into_iter().find(|c| c.in_container()).unwrap();
    let plan = runner::plan(spec, &cell, &RunOptions::default());
    (cell, plan)
}

/// What `jitterlab ARGV…` hands `__cell`, read back as the command line
/// reads it inside the container.
fn read_back(argv: &[String]) -> InnerCell {
    assert_eq!(argv.len(), 2, "{argv:?}");
    assert_eq!(argv[0], "__cell");
    let cli =
        super::parse_from(std::iter::once("jitterlab").chain(argv.iter().map(String::as_str)))
            .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    let Command::Cell(a) = cli.command else {
        panic!("not __cell")
    };
    a.request().unwrap()
}

/// The inner cell of `spec`'s container cell, ending as `stop`: what goes
/// over reads back as the same cell, whose one cell plans the host cell's
/// measurement (parameters, CPUs, scheduling, limits, outliers).
fn hand_over(spec: &Spec, stop: Stop) -> (CellPlan, RunPlan, InnerCell, CellPlan, RunPlan) {
    let cell = spec.cells().into_iter().find(|c| c.in_container()).unwrap();
    let plan = runner::plan(
        spec,
        &cell,
        &RunOptions {
            stop,
            ..RunOptions::default()
        },
    );
    let inner = InnerCell::of(spec, &cell, &plan, stop, None).unwrap();
    let back = read_back(&inner.argv().unwrap());
    assert_eq!(back, inner);
    let cells = back.spec.cells();
    assert_eq!(cells.len(), 1);
    let inner_cell = cells[0].clone();
    assert!(!inner_cell.in_container());
    let inner_plan = runner::plan(&back.spec, &inner_cell, &back.options());
    assert_eq!(
        (
            inner_plan.kind,
            &inner_plan.cpus,
            inner_plan.sched,
            inner_plan.limits,
            inner_plan.outliers,
            &inner_plan.params,
            inner_plan.histogram_buckets,
        ),
        (
            plan.kind,
            &plan.cpus,
            plan.sched,
            plan.limits,
            plan.outliers,
            &plan.params,
            plan.histogram_buckets,
        ),
    );
    let options = back.options();
    assert!(back.db() == crate::store::Db::Off && options.stream);
    assert_eq!(options.stop, stop);
    (cell, plan, back, inner_cell, inner_plan)
}

#[test]
fn every_kind_hands_over_its_cell_or_says_why_it_cannot() {
    // The keys a kind needs in a spec beyond its kind.
    let keys = |k: ProbeKind| match k {
        ProbeKind::Observe => "comm = \"plc\"\n",
        _ => "",
    };
    let mut handed = Vec::new();
    for kind in ProbeKind::ALL {
        let s = spec(&format!(
            "[[probe]]\nkind = \"{}\"\n{}",
            kind.name(),
            keys(*kind)
        ));
        let (cell, plan) = container_cell(&s);
        match kind.descriptor().container {
            InContainer::NotApplicable(why) => {
                let e = InnerCell::of(&s, &cell, &plan, Stop::Duration, None).unwrap_err();
                assert_eq!(e.to_string(), why);
                assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
            }
            InContainer::Supported | InContainer::OwnSide => {
                let (_, _, inner, ..) = hand_over(&s, Stop::Duration);
                assert_eq!(inner.spec.probes, s.probes, "{}", kind.name());
                handed.push(kind.name());
            }
        }
    }
    let mut expected = vec![
        "cyclic",
        "wakeup",
        "chase",
        "ctxswitch",
        "response",
        "roundtrip",
    ];
    if cfg!(feature = "test-probe") {
        expected.push("sleep");
    }
    handed.sort_unstable();
    expected.sort_unstable();
    assert_eq!(handed, expected);
}

#[test]
fn the_cell_handed_over_is_its_probe_on_its_cpus_idle_on_the_host() {
    let s = spec(
        "[[configuration]]\nname = \"rt\"\nprobe_cpus = \"3\"\nneighbour_cpus = \"1-2\"\npriority = 80\n\
         irq_cpus = \"1\"\n\
         [[scenario]]\nname = \"idle\"\nbuiltin = \"idle\"\n\
         [[scenario]]\nname = \"cpu\"\nbuiltin = \"cpu\"\ncpus = \"0\"\n\
         [[probe]]\nkind = \"cyclic\"\nperiod = \"2ms\"\nscan = \"300us\"\nworking_set = \"1MiB\"\n\
         threshold = \"50us\"\nwindow = \"500ms\"\noutliers = 5\nmax_latency = \"1ms\"\n\
         max_jitter = \"500us\"\nmax_exec = \"2ms\"\nscenarios = [\"cpu\"]\nduration = \"3s\"\n",
    );
    let (cell, plan, inner, ..) = hand_over(&s, Stop::Duration);
    assert_eq!(s.scenarios[cell.scenario].name, "cpu");
    let mut probe = s.probes[0].clone();
    probe.scope = ProbeScope::default();
    assert_eq!(
        inner,
        InnerCell {
            spec: Spec {
                name: "t".into(),
                // The probe's own duration.
                duration_ns: 3_000_000_000,
                warmup_ns: 0,
                repetitions: 1,
                deployments: vec!["host".into()],
                baseline: "rt".into(),
                configurations: vec![Configuration {
                    name: "rt".into(),
                    probe_cpus: vec![3],
                    // The scenario's neighbour CPUs; its load and the
                    // configuration's IRQ move stay on the host.
                    neighbour_cpus: vec![0],
                    policy: Policy::Fifo,
                    priority: Some(80),
                    nice: None,
                    dma_latency: true,
                    settings: ConfigSettings::default(),
                }],
                scenarios: vec![Scenario::idle()],
                probes: vec![probe],
                warnings: Vec::new(),
            },
            stop: Stop::Duration,
            strict: false,
            calibrated: None,
        }
    );
    assert_eq!(plan.params.duration_ns, Some(3_000_000_000));
    let json = &inner.argv().unwrap()[1];
    assert!(
        json.starts_with(r#"{"spec":{"name":"t","duration_ns":3000000000,"warmup_ns":0,"#),
        "{json}"
    );
    assert!(
        json.ends_with(r#""stop":"duration","strict":false}"#),
        "{json}"
    );

    // Time-sharing and untuned, as configured; strict, by cycles.
    let s = spec(
        "[[configuration]]\nname = \"base\"\npolicy = \"other\"\nnice = 5\ndma_latency = false\n\
         [[probe]]\nkind = \"cyclic\"\nname = \"plain\"\n",
    );
    let (cell, plan) = container_cell(&s);
    let plan = RunPlan {
        params: jitterlab_core::result::Params {
            strict: true,
            ..plan.params
        },
        ..plan
    };
    let inner = InnerCell::of(&s, &cell, &plan, Stop::Cycles(500), None).unwrap();
    let c = &inner.spec.configurations[0];
    assert_eq!(
        (c.policy, c.priority, c.nice, c.dma_latency),
        (Policy::Other, None, Some(5), false)
    );
    assert_eq!((inner.stop, inner.strict), (Stop::Cycles(500), true));
    assert!(inner.argv().unwrap()[1].ends_with(r#""stop":{"cycles":500},"strict":true}"#));
    let back = read_back(&inner.argv().unwrap());
    let options = back.options();
    assert_eq!(
        (options.stop, options.strict, back.db(), options.stream),
        (Stop::Cycles(500), true, crate::store::Db::Off, true)
    );
    // A cell that never ends on its own ends at its duration inside.
    let inner = InnerCell::of(&s, &cell, &plan, Stop::Never, None).unwrap();
    assert_eq!(inner.stop, Stop::Duration);
    hand_over(&s, Stop::Cycles(500));
}

#[test]
fn a_bench_calibration_goes_in_with_a_probe_that_scans() {
    let s = spec("[[probe]]\nkind = \"cyclic\"\n[[probe]]\nkind = \"wakeup\"\n");
    let cal = Calibration {
        cpu: 3,
        scan_target_ns: 100_000,
        working_set_bytes: 262_144,
        nodes: 4096,
        pass_ns: 30_000,
        iterations: 17_000,
        measured_scan_ns: 99_000,
        note: None,
    };
    let cells: Vec<CellPlan> = s.cells().into_iter().filter(|c| c.in_container()).collect();
    let handed = |cell: &CellPlan| {
        let plan = runner::plan(&s, cell, &RunOptions::default());
        let inner = InnerCell::of(
            &s,
            cell,
            &plan,
            Stop::Duration,
            Some(std::slice::from_ref(&cal)),
        )
        .unwrap();
        read_back(&inner.argv().unwrap()).options().calibrated
    };
    assert_eq!(handed(&cells[0]), Some(vec![cal.clone()]));
    // A wake-up probe has no scan to calibrate.
    assert_eq!(handed(&cells[1]), None);
}

#[test]
fn chase_ctxswitch_and_response_run_inside_with_their_arguments() {
    // A chase by samples whose neighbour is one CPU, and one with its
    // buffer given, to the duration.
    for (body, stop) in [
        (
            "[[configuration]]\nname = \"c\"\nprobe_cpus = \"3\"\nneighbour_cpus = \"1\"\n\
             [[probe]]\nkind = \"chase\"\nsamples = 50\niterations = 20\n",
            Stop::Samples,
        ),
        (
            "[[probe]]\nkind = \"chase\"\nbuffer = \"64KiB\"\n",
            Stop::Duration,
        ),
        (
            "[[probe]]\nkind = \"chase\"\nsamples = 50\n",
            Stop::Duration,
        ),
    ] {
        let s = spec(body);
        let (cell, plan, back, inner_cell, inner_plan) = hand_over(&s, stop);
        assert_eq!(
            chase::args(&back.spec, &inner_cell, &inner_plan, stop),
            chase::args(&s, &cell, &plan, stop),
            "{body}"
        );
    }

    let s = spec("[[probe]]\nkind = \"ctxswitch\"\n");
    let (cell, plan, back, inner_cell, inner_plan) = hand_over(&s, Stop::Duration);
    assert_eq!(
        ctxswitch::args(&back.spec, &inner_cell, &inner_plan),
        ctxswitch::args(&s, &cell, &plan)
    );

    // The response probe's events come from the first neighbour CPU, in
    // the container too.
    let s = spec("[[probe]]\nkind = \"response\"\n");
    let (cell, plan, back, inner_cell, inner_plan) = hand_over(&s, Stop::Duration);
    assert_eq!(container_cpus(&s, &cell, &plan), [0, 3]);
    let args = response::args(&back.spec, &inner_cell, &inner_plan);
    assert_eq!(args, response::args(&s, &cell, &plan));
    assert_eq!((args.cpu, args.event_cpu), (3, 0));
}

#[test]
fn a_roundtrip_cells_controller_runs_inside_with_every_parameter() {
    let s = spec(
        "[[probe]]\nkind = \"roundtrip\"\nperiod = \"2ms\"\nscan = \"200us\"\nio_period = \"250us\"\n\
         network_budget = \"50us\"\nbudget = \"4ms\"\ntransport = \"eth\"\n",
    );
    let (cell, plan) = container_cell(&s);
    let inner = controller_cell(
        InnerCell::of(&s, &cell, &plan, Stop::Duration, None).unwrap(),
        "jl42p",
    );
    let back = read_back(&inner.argv().unwrap());
    assert_eq!(back, inner);
    // The controller's role, its interface and its samples' pipe;
    // everything else is the cell's.
    let ours = s.probes[0].params.get::<RoundtripParams>().unwrap();
    let theirs = back.spec.probes[0].params.get::<RoundtripParams>().unwrap();
    assert_eq!(
        (
            theirs.role,
            theirs.interface.as_deref(),
            theirs.samples_to.as_deref()
        ),
        (Role::Controller, Some("jl42p"), Some("/jl/samples"))
    );
    let mut as_ours = theirs.clone();
    (as_ours.role, as_ours.interface, as_ours.samples_to) = (Role::Both, None, None);
    assert_eq!(&as_ours, ours);
    assert_eq!(back.spec.probes[0].period_ns, 2_000_000);
    assert_eq!(back.spec.probes[0].latency_limit(), Some(4_000_000));
    let inner_cell = back.spec.cells().remove(0);
    let inner_plan = runner::plan(&back.spec, &inner_cell, &back.options());
    let args = roundtrip::args(&back.spec, &inner_cell, &inner_plan).unwrap();
    assert_eq!(args.cpu, 3);
    assert_eq!(args.params.role, Role::Controller);
    assert_eq!(inner_plan.params, plan.params);
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
    const UDP: &str = "response with source udp is N/A in a container: it makes two network namespaces and a veth pair, which a container may not; use source eventfd, or measure it on the host";
    assert_eq!(why[2].as_deref(), Some(UDP));
    assert!(why[3]
        .as_deref()
        .unwrap()
        .starts_with("timerlat is N/A in a container: its tracer is the host kernel's"));
    let refusal = |cell: &CellPlan| {
        let plan = runner::plan(&s, cell, &RunOptions::default());
        InnerCell::of(&s, cell, &plan, Stop::Duration, None)
            .unwrap_err()
            .to_string()
    };
    assert_eq!(refusal(&cells[2]), UDP);
    assert!(refusal(&cells[3]).starts_with("timerlat is N/A in a container: "));
}

#[test]
fn a_periodic_probe_that_explains_is_kept_out_of_a_container_at_the_plan_not_inside() {
    let s = spec(
        "[[probe]]\nkind = \"cyclic\"\nexplain = true\n\
         [[probe]]\nkind = \"wakeup\"\nexplain = true\n\
         [[probe]]\nkind = \"cyclic\"\nname = \"plain\"\n",
    );
    let cells = s.cells();
    let root = tempfile::tempdir().unwrap();
    let why: Vec<(String, Option<String>)> = cells
        .iter()
        .map(|c| {
            (
                c.key.name(),
                crate::probe::cell_kind_unavailable(&s, c, root.path()),
            )
        })
        .collect();
    let na = |kind: &str| {
        Some(format!(
            "{kind} with explain = true is N/A in a container: it traces the host kernel's scheduler, which a container cannot reach; set explain = false, or measure it on the host"
        ))
    };
    assert_eq!(
        why,
        [
            ("default/idle/host/cyclic".to_string(), None),
            ("default/idle/host/wakeup".to_string(), None),
            ("default/idle/host/plain".to_string(), None),
            ("default/idle/container/cyclic".to_string(), na("cyclic")),
            ("default/idle/container/wakeup".to_string(), na("wakeup")),
            ("default/idle/container/plain".to_string(), None),
        ]
    );
    let plan = runner::plan(&s, &cells[3], &RunOptions::default());
    assert_eq!(
        InnerCell::of(&s, &cells[3], &plan, Stop::Duration, None)
            .unwrap_err()
            .to_string(),
        na("cyclic").unwrap()
    );
}

#[test]
fn a_cell_too_long_for_one_argument_is_refused() {
    let mut s = spec("[[probe]]\nkind = \"roundtrip\"\n");
    let (cell, plan) = container_cell(&s);
    if let Some(r) = s.probes[0].params.get_mut::<RoundtripParams>() {
        r.input.publisher_id = "x".repeat(131_072);
    }
    let e = InnerCell::of(&s, &cell, &plan, Stop::Duration, None)
        .unwrap()
        .argv()
        .unwrap_err();
    assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
    let text = e.to_string();
    assert!(
        text.starts_with("the container cell's spec is 13"),
        "{text}"
    );
    assert!(
        text.ends_with(" bytes of JSON, more than the 131072 one argument may have; shorten the probe's parameters"),
        "{text}"
    );
}

#[test]
fn cell_refuses_what_no_container_cell_hands_over() {
    let refused = |json: &str| {
        let e = InnerCell::parse(json).unwrap_err();
        assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
        e.to_string()
    };
    assert_eq!(
        refused("{"),
        "__cell: not the JSON of a container cell (EOF while parsing an object at line 1 column 1); __cell runs what a container cell hands over, use `jitterlab run` or `jitterlab bench`"
    );
    let s = spec("[[probe]]\nkind = \"wakeup\"\n");
    let (cell, plan) = container_cell(&s);
    let inner = InnerCell::of(&s, &cell, &plan, Stop::Duration, None).unwrap();
    let mut two = inner.clone();
    two.spec.deployments = vec!["host".into(), "container".into()];
    assert_eq!(
        refused(&serde_json::to_string(&two).unwrap()),
        "__cell: the spec has 2 cells; a container cell hands over exactly one"
    );
    let mut nested = inner;
    nested.spec.deployments = vec!["container".into()];
    assert_eq!(
        refused(&serde_json::to_string(&nested).unwrap()),
        "__cell: the cell's deployment is container; the cell inside a container runs on its host"
    );
}
