//! `jitterlab run observe`'s flags, parsed as the command line parses
//! them, checked against a fake machine: the one-cell spec they make and
//! what they refuse.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::observe::{ObserveParams, ObserveTarget};
use jitterlab_core::probe::InContainer;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::{Policy, ProbeSpec};

use crate::probe::flags::OneCell;
use crate::probe::observe::flags::{flags, one_cell};
use crate::store::Db;

/// A machine with CPUs 0-1 online and one thread, 200 `plc`.
fn machine() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    let cpu = root.path().join("sys/devices/system/cpu");
    std::fs::create_dir_all(&cpu).unwrap();
    std::fs::write(cpu.join("online"), "0-1\n").unwrap();
    let task = root.path().join("proc/200/task/200");
    std::fs::create_dir_all(&task).unwrap();
    std::fs::write(task.join("comm"), "plc\n").unwrap();
    std::fs::write(root.path().join("proc/200/comm"), "plc\n").unwrap();
    root
}

fn run(root: &Path, args: &[&str]) -> Result<OneCell> {
    let argv: Vec<&str> = ["observe", "--no-db"].iter().chain(args).copied().collect();
    let v = crate::cli::flags::parse_run(ProbeKind::Observe, &flags(), &argv).unwrap();
    one_cell(&v, root, &Db::Off)
}

fn probe(one: &OneCell) -> &ProbeSpec {
    &one.spec.probes[0]
}

#[test]
fn the_observer_is_not_real_time_and_holds_no_dma_latency_by_default() {
    let root = machine();
    let one = run(root.path(), &["--tid", "200"]).unwrap();
    // The configuration places the task: every CPU but the
    // observer's (--cpu, default the first online CPU).
    let c = &one.spec.configurations[0];
    assert_eq!(
        (c.policy, c.priority, c.dma_latency, c.probe_cpus.clone()),
        (Policy::Other, None, false, vec![1])
    );
    // No --period: 0, inferred from the task.
    assert_eq!(probe(&one).period_ns, 0);
    assert_eq!(
        probe(&one).params.get::<ObserveParams>(),
        Some(&ObserveParams {
            target: ObserveTarget::Tid(200),
            explain: false,
            replay: None,
            container: None,
        })
    );
    let one = run(
        root.path(),
        &[
            "--comm",
            "plc",
            "--priority",
            "10",
            "--period",
            "2ms",
            "--cpu",
            "1",
            "--explain",
        ],
    )
    .unwrap();
    let c = &one.spec.configurations[0];
    assert_eq!(
        (c.policy, c.priority, c.dma_latency, c.probe_cpus.clone()),
        (Policy::Fifo, Some(10), false, vec![0])
    );
    assert_eq!(probe(&one).period_ns, 2_000_000);
    assert!(probe(&one).params.get::<ObserveParams>().unwrap().explain);
}

#[test]
fn bad_targets_are_refused_naming_the_fix() {
    let root = machine();
    let err = |args: &[&str]| {
        let e = run(root.path(), args).unwrap_err();
        assert!(
            e.downcast_ref::<crate::error::BadInput>().is_some(),
            "{e:#}"
        );
        e.to_string()
    };
    assert_eq!(
        err(&["--tid", "201"]),
        "--tid 201: no such thread (no /proc/201); give the id of a running thread (ps -eL -o tid,comm lists them)"
    );
    assert_eq!(
        err(&["--pid", "200", "--", "cyclictest", "-m"]),
        "an observe probe watches one target: keep one of --pid and -- COMMAND"
    );
    assert_eq!(
        err(&["--tid", "0"]),
        "0 is no process or thread id; give one ps -eL -o pid,tid,comm lists"
    );
    assert_eq!(
        err(&["--tid", "200", "--deployment", "container"]),
        format!(
            "--deployment container: {}",
            match ProbeKind::Observe.descriptor().container {
                InContainer::NotApplicable(why) => why,
                _ => "",
            }
        )
    );
    assert_eq!(
        err(&["--tid", "200", "--break-trace", "1ms"]),
        "--break-trace applies to the periodic probes (cyclic, wakeup); remove it from run observe"
    );
}
