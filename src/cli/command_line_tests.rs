//! Property tests over whole command lines: for every subcommand and every
//! flag or argument that takes a value — read from clap's own definition
//! ([`Cli::command`]), so a new flag is covered the day it is added — the
//! edge values (zero, one, the largest `u64`, one past it, negative, empty,
//! huge and garbage times and sizes) and random combinations of them go
//! through the parse and the checks the command makes before it touches
//! the machine, and the outcome must be exit 0, 1 or 2: never a panic.
//!
//! Nothing is measured: `run X` and `monitor` stop after their checks
//! (`one_cell`), `bench` is always a dry run, `apply` stops after
//! [`check`](crate::runner::apply::check); the read-only commands (`runs`,
//! `report`, `check`, `presets`, `analyze`) run in full against the fake
//! 2-CPU sysroot, a scratch database and a small synthetic capture;
//! `restore` and the hidden internal commands, which act as soon as they
//! start, are parsed only.

use std::ffi::OsString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::Path;
use std::process::ExitCode;

use proptest::prelude::*;

use super::{Cli, Command};

/// The values every flag is tried with.
const EDGES: &[&str] = &[
    "0",
    "1",
    "-1",
    "",
    "0s",
    "1ns",
    "-1s",
    "18446744073709551615",
    "18446744073709551616",
    "18446744073709551615s",
    "18446744073709551615GiB",
    "99999999999999d",
    "1.5",
    "1e9",
    "nan",
    "0x10",
    "garbage",
    "-",
    "0-1",
    "1,1",
    "0=0",
];

/// A leaf subcommand: its path of names and the arguments that make it
/// valid without the flag under test (`{CAPTURE}` is the capture file,
/// `{SPEC}` a spec that needs no tool, `{CELL}` a container cell's hand-over;
/// each is the positional argument a positional value replaces).
fn base(path: &[String]) -> Option<Vec<&'static str>> {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    Some(match p.as_slice() {
        ["run", _]
        | ["monitor"]
        | ["runs"]
        | ["report"]
        | ["check"]
        | ["presets"]
        | ["restore"] => vec![],
        ["bench"] | ["apply"] => vec!["{SPEC}"],
        ["import"] => vec!["{CAPTURE}"],
        ["analyze"] => vec!["{CAPTURE}"],
        ["__synth-capture"] => vec!["--frames", "10", "{CAPTURE}"],
        ["__synth-monitor"] => vec![],
        ["__net-sink"] => vec!["--iface", "veth0", "--rps-cpus", "0", "--port", "9000"],
        ["__net-flood"] => vec!["--dst", "127.0.0.1", "--port", "9000"],
        ["__rps"] => vec!["--iface", "veth0", "--rps-cpus", "0"],
        ["__generate-docs"] => vec!["docs"],
        ["__cell"] => vec!["{CELL}"],
        _ => return None,
    })
}

/// The cell a container cell hands `__cell`: a wake-up probe's.
fn cell() -> String {
    let spec = jitterlab_core::spec::parse(
        "duration = \"1s\"\ndeployments = [\"container\"]\n[[probe]]\nkind = \"wakeup\"\n",
        "cell.toml",
        &jitterlab_core::spec::SpecContext {
            online: &jitterlab_core::units::CpuList::parse("0-1").unwrap(),
            builtins: &["idle"],
        },
    )
    .unwrap();
    let cell = spec.cells().remove(0);
    let plan = crate::runner::plan(&spec, &cell, &crate::runner::RunOptions::default());
    crate::probe::container::InnerCell::of(&spec, &cell, &plan, crate::runner::Stop::Duration, None)
        .and_then(|c| c.argv())
        .unwrap()
        .remove(1)
}

/// One argument taking a value: its long flag (`None` for a positional
/// one) and the values clap lists for it, if it has a fixed set.
#[derive(Debug, Clone)]
struct ValueArg {
    long: Option<String>,
    possible: Vec<String>,
}

/// A leaf subcommand and its value-taking arguments.
#[derive(Debug, Clone)]
struct Leaf {
    path: Vec<String>,
    args: Vec<ValueArg>,
}

/// Every leaf subcommand of `jitterlab` (the `help` ones aside) with every
/// argument that takes a value, the global ones included.
fn leaves() -> Vec<Leaf> {
    fn walk(cmd: &clap::Command, path: &mut Vec<String>, out: &mut Vec<Leaf>) {
        let subs: Vec<&clap::Command> = cmd
            .get_subcommands()
            .filter(|s| s.get_name() != "help")
            .collect();
        if subs.is_empty() {
            let args = cmd
                .get_arguments()
                .filter(|a| a.get_action().takes_values())
                .map(|a| ValueArg {
                    long: a.get_long().map(|l| format!("--{l}")),
                    possible: a
                        .get_possible_values()
                        .iter()
                        .map(|v| v.get_name().to_string())
                        .collect(),
                })
                .collect();
            out.push(Leaf {
                path: path.clone(),
                args,
            });
        }
        for s in subs {
            path.push(s.get_name().to_string());
            walk(s, path, out);
            path.pop();
        }
    }
    let mut cmd = super::command();
    cmd.build();
    let mut out = Vec::new();
    walk(&cmd, &mut Vec::new(), &mut out);
    out
}

/// A spec of one cyclic probe and one configuration of one setting:
/// nothing to install, something for `apply` to check.
const SPEC: &str = "duration = \"1s\"\n[[configuration]]\nname = \"t\"\ntimer_migration = false\n[[probe]]\nkind = \"cyclic\"\n";

/// The fake machine, a scratch database path, a spec and a small capture.
struct World {
    root: tempfile::TempDir,
    scratch: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let world = World {
            root: crate::testutil::copy_fixture("sysroot-vm"),
            scratch: tempfile::tempdir().unwrap(),
        };
        crate::net::pcap::synth::synth(&crate::net::pcap::synth::SynthRequest {
            frames: 40,
            cns: 2,
            cycle_ns: 500_000,
            jitter_ns: 5_000,
            seed: 4,
            miss_every: 0,
            path: world.capture(),
        })
        .unwrap();
        std::fs::write(world.spec(), SPEC).unwrap();
        world
    }

    fn spec(&self) -> std::path::PathBuf {
        self.scratch.path().join("spec.toml")
    }

    fn capture(&self) -> std::path::PathBuf {
        self.scratch.path().join("capture.pcap")
    }

    /// The command line of `leaf` with `given` (flag or positional, value)
    /// pairs: the global `--sysroot` and `--db` first (a given one wins),
    /// then the leaf's base arguments, a positional value replacing the
    /// base's positional one.
    fn argv(&self, leaf: &Leaf, given: &[(&ValueArg, &str)]) -> Vec<OsString> {
        let (capture, spec) = (self.capture(), self.spec());
        let mut argv: Vec<OsString> = vec!["jitterlab".into()];
        argv.extend(leaf.path.iter().map(OsString::from));
        let globals = [
            ("--sysroot", self.root.path().as_os_str().to_owned()),
            ("--db", self.scratch.path().join("j.db").into_os_string()),
        ];
        for (flag, value) in globals {
            if !given.iter().any(|(a, _)| a.long.as_deref() == Some(flag)) {
                argv.push(flag.into());
                argv.push(value);
            }
        }
        let positional_given = given.iter().any(|(a, _)| a.long.is_none());
        for b in base(&leaf.path).expect("every leaf has a base") {
            match b {
                "{CAPTURE}" | "{SPEC}" | "{CELL}" if positional_given => {}
                "{CAPTURE}" => argv.push(capture.clone().into_os_string()),
                "{CELL}" => argv.push(cell().into()),
                "{SPEC}" => argv.push(spec.clone().into_os_string()),
                b => argv.push(b.into()),
            }
        }
        for (arg, value) in given {
            match &arg.long {
                Some(l) => argv.push(format!("{l}={value}").into()),
                None => {
                    argv.push("--".into());
                    argv.push(value.into());
                }
            }
        }
        argv
    }
}

/// Parses `argv` and makes the command's checks (see the module doc): the
/// exit status `main` would give, or `None` when something panicked.
fn outcome(argv: &[OsString]) -> Option<u8> {
    let run = || -> u8 {
        let cli = match super::parse_from(argv) {
            Ok(cli) => cli,
            Err(e) if e.exit_code() == 0 => return 0,
            Err(_) => return 2,
        };
        match checks(&cli) {
            Ok(code) if code == ExitCode::SUCCESS => 0,
            Ok(code) if code == ExitCode::from(1) => 1,
            Ok(_) => 3,
            Err(_) => 2,
        }
    };
    catch_unwind(AssertUnwindSafe(run)).ok()
}

/// What [`outcome`] runs after the parse: each command's checks, or the
/// whole of a read-only command.
fn checks(cli: &Cli) -> anyhow::Result<ExitCode> {
    let (root, db): (&Path, &Path) = (&cli.sysroot, &cli.db);
    match &cli.command {
        Command::Run(run) => super::one_cell::one_cell(root, &run.probe.db(db), &run.probe)
            .map(|_| ExitCode::SUCCESS),
        Command::Monitor(a) => a
            .one_cell(root, &crate::store::Db::At(db.into()))
            .map(|_| ExitCode::SUCCESS),
        Command::Bench(a) => {
            let mut r = a.request();
            r.dry_run = true;
            crate::runner::bench::bench(root, db, &r)
        }
        Command::Apply(a) => {
            crate::runner::apply::check(root, &a.request()).map(|_| ExitCode::SUCCESS)
        }
        Command::Presets(a) => crate::runner::spec_source::presets(root, a.show.as_deref()),
        Command::Runs(a) => crate::report::stored::runs(db, &a.request()),
        Command::Report(a) => crate::report::stored::report(db, &a.request()),
        Command::Import(a) => crate::report::stored::import(db, &a.other),
        Command::Check(a) => crate::report::check::run(
            root,
            &crate::system::check::CheckRequest {
                json: a.json,
                cpus: a.cpus.clone(),
            },
        ),
        Command::Analyze(a) => a.run(),
        Command::Cell(a) => a.request().map(|_| ExitCode::SUCCESS),
        Command::Restore
        | Command::SynthCapture(_)
        | Command::SynthMonitor(_)
        | Command::NetSink(_)
        | Command::NetFlood(_)
        | Command::NetRps(_)
        | Command::GenerateDocs(_) => Ok(ExitCode::SUCCESS),
    }
}

/// The values `arg` is tried with: the edges and its own possible values.
fn values(arg: &ValueArg) -> Vec<String> {
    let mut v: Vec<String> = EDGES.iter().map(|s| s.to_string()).collect();
    v.extend(arg.possible.iter().cloned());
    v
}

#[test]
fn every_leaf_subcommand_has_a_base_command_line() {
    let leaves = leaves();
    let missing: Vec<String> = leaves
        .iter()
        .filter(|l| base(&l.path).is_none())
        .map(|l| l.path.join(" "))
        .collect();
    assert!(missing.is_empty(), "no base command line for {missing:?}");
    // The walk reached the probes and their flags.
    let cyclic = leaves.iter().find(|l| l.path == ["run", "cyclic"]).unwrap();
    assert!(cyclic
        .args
        .iter()
        .any(|a| a.long.as_deref() == Some("--period")));
    assert!(cyclic
        .args
        .iter()
        .any(|a| a.long.as_deref() == Some("--sysroot")));
}

#[test]
fn every_flag_at_every_edge_value_ends_in_0_1_or_2_never_a_panic() {
    let world = World::new();
    let mut failures = Vec::new();
    let mut tried = 0;
    for leaf in leaves() {
        for arg in &leaf.args {
            for value in values(arg) {
                let argv = world.argv(&leaf, &[(arg, &value)]);
                tried += 1;
                match outcome(&argv) {
                    Some(0..=2) => {}
                    other => failures.push(format!("{argv:?}: {other:?}")),
                }
            }
        }
    }
    assert!(tried > 1000, "only {tried} command lines");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// Up to three flags of one subcommand together, each with an edge
    /// value, one of its own, or a short random word.
    #[test]
    fn random_command_lines_end_in_0_1_or_2_never_a_panic(
        leaf in 0usize..1000,
        picks in proptest::collection::vec((0usize..1000, 0usize..1000, "[-0-9a-z.,:=]{0,12}", any::<bool>()), 1..=3),
    ) {
        thread_local! {
            static WORLD: World = World::new();
            static LEAVES: Vec<Leaf> = leaves();
        }
        let argv = LEAVES.with(|leaves| {
            let leaf = &leaves[leaf % leaves.len()];
            let given: Vec<(&ValueArg, String)> = picks
                .iter()
                .filter(|_| !leaf.args.is_empty())
                .map(|(a, v, word, random)| {
                    let arg = &leaf.args[a % leaf.args.len()];
                    let vs = values(arg);
                    let value = if *random { word.clone() } else { vs[v % vs.len()].clone() };
                    (arg, value)
                })
                .collect();
            let given: Vec<(&ValueArg, &str)> = given.iter().map(|(a, v)| (*a, v.as_str())).collect();
            WORLD.with(|w| w.argv(leaf, &given))
        });
        let got = outcome(&argv);
        prop_assert!(matches!(got, Some(0..=2)), "{argv:?}: {got:?}");
    }
}

#[test]
fn the_base_command_lines_pass_their_checks() {
    let world = World::new();
    for leaf in leaves() {
        let argv = world.argv(&leaf, &[]);
        let path: Vec<&str> = leaf.path.iter().map(String::as_str).collect();
        let expected = match path.as_slice() {
            // No run stored yet; the capture is no database; the fake
            // machine has no timerlat tracer; observe needs a target.
            ["runs"] | ["report"] | ["import"] | ["run", "timerlat"] | ["run", "observe"] => 2,
            _ => 0,
        };
        assert_eq!(outcome(&argv), Some(expected), "{argv:?}");
    }
}
