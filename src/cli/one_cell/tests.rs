//! The one-cell specs of `jitterlab run X`, value by value, and the proof
//! that a run and the equivalent bench cell reach the probes with the same
//! parameters.

use clap::Parser;
use jitterlab_core::chase::ChaseParams;
use jitterlab_core::cyclic::CyclicParams;
use jitterlab_core::response::{ResponseParams, ResponseSource};
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{
    parse, CellPlan, ConfigSettings, Configuration, Policy, ProbeParams, ProbeScope, ProbeSpec,
    Scenario, Spec, SpecContext,
};
use jitterlab_core::units::CpuList;

use super::OneCell;
use crate::cli::{Cli, Command};
use crate::out_files::RunOutputs;
use crate::probe::chase::flags::chase_cell;
use crate::probe::ctxswitch::flags::ctxswitch_cell;
use crate::probe::flags::FromFlags;
use crate::probe::periodic::flags::{cyclic_cell, wakeup_cell};
use crate::probe::response::flags::response_cell;
use crate::probe::timerlat::flags::timerlat_cell;
use std::path::PathBuf;

use crate::probe::timerlat::TimerlatRequest;
use crate::probe::{chase, ctxswitch, response};
use crate::runner::{self, RunOptions, Stop};

/// The online CPUs of the tests' machine: two, as the VM fixture.
fn online() -> CpuList {
    CpuList::parse("0-1").unwrap()
}

/// The one-cell spec of `jitterlab run ARGS…` on [`online`].
fn run(args: &[&str]) -> OneCell {
    let cli = Cli::try_parse_from(["jitterlab", "run"].iter().chain(args)).unwrap();
    let Command::Run(run) = cli.command else {
        panic!("not a run")
    };
    let online = online();
    let m = run.probe.values();
    match run.probe.kind() {
        ProbeKind::Cyclic => cyclic_cell(&FromFlags::from_flags(m).unwrap(), &online),
        ProbeKind::Wakeup => wakeup_cell(&FromFlags::from_flags(m).unwrap(), &online),
        ProbeKind::Chase => chase_cell(&FromFlags::from_flags(m).unwrap(), &online),
        ProbeKind::Ctxswitch => ctxswitch_cell(&FromFlags::from_flags(m).unwrap(), &online),
        ProbeKind::Response => response_cell(&FromFlags::from_flags(m).unwrap(), &online),
        ProbeKind::Timerlat => timerlat_cell(&FromFlags::from_flags(m).unwrap(), &online),
        other => panic!("no one-cell builder for {} here", other.name()),
    }
    .unwrap()
}

/// The configuration a run gets on [`online`] by default: the last CPU
/// probes, the other is the neighbour, SCHED_FIFO 95.
fn default_configuration() -> Configuration {
    Configuration {
        name: "default".into(),
        probe_cpus: vec![1],
        neighbour_cpus: vec![0],
        policy: Policy::Fifo,
        priority: Some(95),
        nice: None,
        dma_latency: true,
        settings: ConfigSettings::default(),
    }
}

fn idle() -> Scenario {
    Scenario {
        name: "idle".into(),
        builtin: Some("idle".into()),
        cpus: None,
        usb_path: None,
        rps_cpus: None,
        neighbours: vec![],
    }
}

/// A one-cell spec of `configuration` and `probe` for 10s.
fn one(configuration: Configuration, probe: ProbeSpec) -> Spec {
    Spec {
        name: probe.kind().name().into(),
        duration_ns: 10_000_000_000,
        warmup_ns: 0,
        repetitions: 1,
        deployments: vec!["host".into()],
        baseline: "default".into(),
        configurations: vec![configuration],
        scenarios: vec![idle()],
        probes: vec![probe],
        warnings: vec![],
    }
}

/// A probe with the command line's defaults: 1 ms, 100 µs threshold, 1 s
/// windows, 20 outliers, no limits.
fn probe_with(params: ProbeParams) -> ProbeSpec {
    ProbeSpec {
        name: params.kind().name().into(),
        period_ns: 1_000_000,
        threshold_ns: Some(100_000),
        window_ns: 1_000_000_000,
        outliers: 20,
        max_latency_ns: None,
        max_jitter_ns: None,
        max_exec_ns: None,
        params,
        scope: ProbeScope::default(),
    }
}

#[test]
fn run_cyclic_is_one_cell_with_every_default() {
    let r = run(&["cyclic"]);
    assert_eq!(
        r.spec,
        one(
            default_configuration(),
            probe_with(ProbeParams::new(CyclicParams {
                scan_ns: 100_000,
                working_set_bytes: 256 << 10,
                explain: false,
            }))
        )
    );
    assert_eq!(r.options, RunOptions::default());
}

#[test]
fn run_cyclic_flags_land_in_the_spec_and_the_run_options() {
    let r = run(&[
        "cyclic",
        "--cpu",
        "0",
        "--period",
        "4ms",
        "--scan",
        "500us",
        "--working-set",
        "1MiB",
        "--cycles",
        "500",
        "--policy",
        "rr",
        "--priority",
        "50",
        "--window",
        "2s",
        "--threshold",
        "50us",
        "--outliers",
        "3",
        "--max-latency",
        "1ms",
        "--max-jitter",
        "2ms",
        "--max-exec",
        "3ms",
        "--json",
        "r.json",
        "--histogram",
        "h.txt",
        "--histogram-buckets",
        "500",
        "--break-trace",
        "900us",
        "--no-dma-latency",
        "--strict",
        "--progress",
        "--no-db",
    ]);
    assert_eq!(
        r.spec,
        one(
            Configuration {
                probe_cpus: vec![0],
                neighbour_cpus: vec![1],
                policy: Policy::RoundRobin,
                priority: Some(50),
                dma_latency: false,
                ..default_configuration()
            },
            ProbeSpec {
                period_ns: 4_000_000,
                threshold_ns: Some(50_000),
                window_ns: 2_000_000_000,
                outliers: 3,
                max_latency_ns: Some(1_000_000),
                max_jitter_ns: Some(2_000_000),
                max_exec_ns: Some(3_000_000),
                ..probe_with(ProbeParams::new(CyclicParams {
                    scan_ns: 500_000,
                    working_set_bytes: 1 << 20,
                    explain: false,
                }))
            }
        )
    );
    assert_eq!(
        r.options,
        RunOptions {
            stop: Stop::Cycles(500),
            strict: true,
            outputs: RunOutputs {
                json: Some("r.json".into()),
                histogram: Some("h.txt".into()),
                ..RunOutputs::default()
            },
            histogram_buckets: 500,
            break_trace: Some(900_000),
            progress: true,
            ..RunOptions::default()
        }
    );
}

#[test]
fn run_chase_with_roles_places_probe_neighbour_and_irqs() {
    let r = run(&["chase", "--roles", "test=1,neighbour=0,irq=0"]);
    let mut config = default_configuration();
    config.settings.irq_cpus = Some(vec![0]);
    assert_eq!(
        r.spec,
        one(
            config,
            ProbeSpec {
                period_ns: 0,
                ..probe_with(ProbeParams::new(ChaseParams {
                    buffer_bytes: None,
                    iterations: Some(100),
                    samples: None,
                    chase_length: 1024,
                }))
            }
        )
    );
    // Without --duration a chase ends by its samples, with no deadline.
    assert_eq!(
        r.options,
        RunOptions {
            stop: Stop::Samples,
            ..RunOptions::default()
        }
    );
    let cell = &r.spec.cells()[0];
    let plan = runner::plan(&r.spec, cell, &r.options);
    assert_eq!((plan.params.duration_ns, plan.params.cycles), (None, None));
    let args = chase::args(&r.spec, cell, &plan, r.options.stop);
    assert_eq!(
        (args.cpu, args.neighbours, args.samples, args.duration_ns),
        (1, [0].into_iter().collect(), None, None)
    );
}

#[test]
fn run_response_with_the_udp_source() {
    let r = run(&["response", "--source", "udp"]);
    assert_eq!(
        r.spec,
        one(
            default_configuration(),
            probe_with(ProbeParams::new(ResponseParams {
                source: Some(ResponseSource::Udp),
                event_cpu: None,
            }))
        )
    );
    assert_eq!(r.options, RunOptions::default());
    // The events come from the first other online CPU.
    let cell = &r.spec.cells()[0];
    let plan = runner::plan(&r.spec, cell, &r.options);
    let args = response::args(&r.spec, cell, &plan);
    assert_eq!(
        (args.cpu, args.event_cpu, args.source, args.interval),
        (1, 0, ResponseSource::Udp, 1_000_000)
    );
    assert_eq!((args.count, args.duration), (None, Some(10_000_000_000)));
}

#[test]
fn run_timerlat_measures_every_cpu_of_its_list() {
    let r = run(&["timerlat", "--priority", "80", "--duration", "3s"]);
    assert_eq!(
        r.spec.configurations[0],
        Configuration {
            priority: Some(80),
            ..default_configuration()
        }
    );
    let cell = &r.spec.cells()[0];
    let req = TimerlatRequest::new(&r.spec, cell, PathBuf::new());
    assert_eq!(
        (req.cpus, req.priority, req.duration_ns, req.threshold_ns),
        (vec![1], 80, 3_000_000_000, 100_000)
    );
}

/// The bench spec whose cells are the runs of
/// [`a_bench_cell_and_the_equivalent_run_reach_the_probe_alike`].
const BENCH: &str = r#"
duration = "5s"
warmup = "0"
[[configuration]]
name = "c"
probe_cpus = "1"
neighbour_cpus = "0"
[[probe]]
kind = "cyclic"
period = "2ms"
scan = "300us"
[[probe]]
kind = "wakeup"
[[probe]]
kind = "chase"
buffer = "1MiB"
[[probe]]
kind = "ctxswitch"
[[probe]]
kind = "response"
source = "udp"
[[probe]]
kind = "timerlat"
"#;

#[test]
fn a_bench_cell_and_the_equivalent_run_reach_the_probe_alike() {
    let online = online();
    let bench = parse(
        BENCH,
        "bench.toml",
        &SpecContext {
            online: &online,
            builtins: &["idle"],
        },
    )
    .unwrap();
    let cells: Vec<CellPlan> = bench.cells();
    let cell_plan = |i: usize| runner::plan(&bench, &cells[i], &RunOptions::default());
    let run_plan = |r: &OneCell| runner::plan(&r.spec, &r.spec.cells()[0], &r.options);

    // The periodic probes: the same plan, parameters and limits included.
    let cyclic = run(&[
        "cyclic",
        "--cpu",
        "1",
        "--period",
        "2ms",
        "--scan",
        "300us",
        "--duration",
        "5s",
    ]);
    assert_eq!(run_plan(&cyclic), cell_plan(0));
    let wakeup = run(&["wakeup", "--cpus", "1", "--duration", "5s"]);
    assert_eq!(run_plan(&wakeup), cell_plan(1));

    // The chase: the same arguments (a spec's chase keeps the unused
    // default period in its stored parameters, a run 0, as always).
    let chase = run(&[
        "chase",
        "--cpu",
        "1",
        "--buffer",
        "1MiB",
        "--duration",
        "5s",
    ]);
    let (rp, cp) = (run_plan(&chase), cell_plan(2));
    assert_eq!(
        chase::args(&chase.spec, &chase.spec.cells()[0], &rp, chase.options.stop),
        chase::args(&bench, &cells[2], &cp, Stop::Duration)
    );
    assert_eq!(
        chase::args(&bench, &cells[2], &cp, Stop::Duration).duration_ns,
        Some(5_000_000_000)
    );

    let ctxswitch = run(&["ctxswitch", "--cpu", "1", "--duration", "5s"]);
    assert_eq!(run_plan(&ctxswitch), cell_plan(3));
    assert_eq!(
        ctxswitch::args(
            &ctxswitch.spec,
            &ctxswitch.spec.cells()[0],
            &run_plan(&ctxswitch)
        ),
        ctxswitch::args(&bench, &cells[3], &cell_plan(3))
    );

    let response = run(&[
        "response",
        "--cpu",
        "1",
        "--source",
        "udp",
        "--duration",
        "5s",
    ]);
    assert_eq!(run_plan(&response), cell_plan(4));
    assert_eq!(
        response::args(
            &response.spec,
            &response.spec.cells()[0],
            &run_plan(&response)
        ),
        response::args(&bench, &cells[4], &cell_plan(4))
    );

    let timerlat = run(&["timerlat", "--cpus", "1", "--duration", "5s"]);
    assert_eq!(
        TimerlatRequest::new(&timerlat.spec, &timerlat.spec.cells()[0], PathBuf::new()),
        TimerlatRequest::new(&bench, &cells[5], PathBuf::new())
    );
}
