//! A container cell's inner `jitterlab run` measures exactly the cell: its
//! argument vector (`probe::container::argv`) read back by this command
//! line gives the same plan and the same probe arguments, for every kind;
//! and what keeps a probe out of a container.

use clap::Parser;
use jitterlab_core::roundtrip::RoundtripParams;
use jitterlab_core::spec::{parse, Spec, SpecContext};
use jitterlab_core::units::CpuList;

use super::one_cell::{
    chase_cell, ctxswitch_cell, cyclic_cell, response_cell, wakeup_cell, OneCell,
};
use super::roundtrip::roundtrip_cell;
use super::{Cli, Command, RunCommand};
use crate::probe::container::{container_cpus, inner_argv};
use crate::probe::{chase, ctxswitch, response};
use crate::runner::{self, RunOptions, Stop};

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
    match &run.probe {
        RunCommand::Cyclic(a) => cyclic_cell(a, &online),
        RunCommand::Wakeup(a) => wakeup_cell(a, &online),
        RunCommand::Chase(a) => chase_cell(a, &online),
        RunCommand::Ctxswitch(a) => ctxswitch_cell(a, &online),
        RunCommand::Response(a) => response_cell(a, &online),
        RunCommand::Roundtrip(a) => roundtrip_cell(a, &online),
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

#[test]
fn a_roundtrip_cells_controller_runs_inside_with_every_parameter() {
    let (argv, s, back) = round_trip(
        "[[probe]]\nkind = \"roundtrip\"\nperiod = \"2ms\"\nscan = \"200us\"\nio_period = \"250us\"\nnetwork_budget = \"50us\"\nbudget = \"4ms\"\ntransport = \"eth\"\n",
    );
    assert_eq!(argv[..2], ["run", "roundtrip"]);
    // The host adds where the controller runs; everything else is the cell's.
    let ours = s.probes[0].params.get::<RoundtripParams>().unwrap();
    let theirs = back.spec.probes[0].params.get::<RoundtripParams>().unwrap();
    assert_eq!(theirs, ours);
    assert_eq!(back.spec.probes[0].period_ns, 2_000_000);
    assert_eq!(back.spec.probes[0].latency_limit(), Some(4_000_000));
}
