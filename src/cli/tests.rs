//! The command line's own tests: its definition, defaults and parsers.

use super::*;
use crate::probe::flags::FromFlags;
use crate::probe::periodic::flags::CyclicArgs;
use crate::probe::response::flags::ResponseRunArgs;
use crate::report::tables;
use clap::CommandFactory;
use jitterlab_core::response::ResponseSource;
use jitterlab_core::spec::Policy;

#[test]
fn cli_definition_is_consistent() {
    Cli::command().debug_assert();
}

#[test]
fn defaults_of_cyclic() {
    let cli = Cli::try_parse_from(["jitterlab", "run", "cyclic"]).unwrap();
    let Command::Run(super::metrics::RunArgs { probe, .. }) = cli.command else {
        panic!("not cyclic")
    };
    assert_eq!(probe.kind(), ProbeKind::Cyclic);
    let a: CyclicArgs = FromFlags::from_flags(probe.values()).unwrap();
    assert_eq!(a.period, 1_000_000);
    assert_eq!(a.params.scan_ns, 100_000);
    assert_eq!(a.params.working_set_bytes, 256 * 1024);
    assert_eq!(a.cpu, None);
    assert_eq!(a.common.policy, Policy::Fifo);
    assert_eq!(a.common.priority, None);
    assert_eq!(a.common.window, 1_000_000_000);
    assert_eq!(a.common.threshold, 100_000);
    assert_eq!(a.common.outliers, 20);
}

#[test]
fn report_names_are_the_tables_own() {
    for t in TableArg::value_variants() {
        let table: tables::Table = (*t).into();
        assert_eq!(t.to_possible_value().unwrap().get_name(), table.name());
    }
    let formats: Vec<String> = ReportFormat::value_variants()
        .iter()
        .map(|f| f.to_possible_value().unwrap().get_name().to_string())
        .collect();
    assert_eq!(formats, ["text", "md", "csv", "json", "html"]);
    assert_eq!(
        ReportFormat::value_variants()
            .iter()
            .map(|&f| tables::Format::from(f))
            .collect::<Vec<_>>(),
        [
            tables::Format::Text,
            tables::Format::Md,
            tables::Format::Csv,
            tables::Format::Json,
            tables::Format::Html
        ]
    );
}

#[test]
fn policy_and_source_parse_to_the_one_type() {
    let cli = Cli::try_parse_from([
        "jitterlab",
        "run",
        "response",
        "--policy",
        "rr",
        "--source",
        "udp",
    ])
    .unwrap();
    let Command::Run(super::metrics::RunArgs { probe, .. }) = cli.command else {
        panic!("not response")
    };
    assert_eq!(probe.kind(), ProbeKind::Response);
    let a: ResponseRunArgs = FromFlags::from_flags(probe.values()).unwrap();
    assert_eq!(
        (a.common.policy, a.params.source),
        (Policy::RoundRobin, Some(ResponseSource::Udp))
    );
}

#[test]
fn duration_and_cycles_conflict() {
    let e = Cli::try_parse_from([
        "jitterlab",
        "run",
        "wakeup",
        "--duration",
        "1s",
        "--cycles",
        "5",
    ])
    .unwrap_err();
    assert_eq!(e.kind(), clap::error::ErrorKind::ArgumentConflict);
}

#[test]
fn check_takes_json_and_the_global_sysroot() {
    let cli = Cli::try_parse_from(["jitterlab", "check", "--json", "--sysroot", "/tmp/x"]).unwrap();
    let Command::Check(a) = cli.command else {
        panic!("not check")
    };
    assert!(a.json);
    assert_eq!(cli.sysroot, PathBuf::from("/tmp/x"));
}

#[test]
fn run_takes_the_registry_s_subcommands_in_its_order_and_no_other() {
    use clap::error::ErrorKind;
    use clap::FromArgMatches;
    let run = RunCommand::augment_subcommands(clap::Command::new("run"));
    let names: Vec<&str> = run.get_subcommands().map(|c| c.get_name()).collect();
    let kinds: Vec<&str> = crate::probe::REGISTRY
        .iter()
        .map(|r| r.kind.name())
        .collect();
    assert_eq!(names, kinds);
    assert!(RunCommand::has_subcommand("netcycle"));
    assert!(!RunCommand::has_subcommand("bogus"));
    let none = clap::Command::new("run")
        .try_get_matches_from(["run"])
        .unwrap();
    assert_eq!(
        RunCommand::from_arg_matches(&none).unwrap_err().kind(),
        ErrorKind::MissingSubcommand
    );
    let other = clap::Command::new("run")
        .subcommand(clap::Command::new("bogus"))
        .try_get_matches_from(["run", "bogus"])
        .unwrap();
    assert_eq!(
        RunCommand::from_arg_matches(&other).unwrap_err().kind(),
        ErrorKind::InvalidSubcommand
    );
    let cyclic = run.try_get_matches_from(["run", "cyclic"]).unwrap();
    let probe = RunCommand::from_arg_matches(&cyclic).unwrap();
    assert_eq!(probe.kind(), ProbeKind::Cyclic);
    assert_eq!(probe.values().opt_u64("period"), Some(1_000_000));
}

#[test]
fn every_kind_decides_its_database_from_db_and_no_db() {
    for r in REGISTRY {
        let name = r.kind.name();
        let flags = (r.flags)();
        let parse = |args: &[&str]| RunCommand {
            kind: r.kind,
            values: super::flags::values(
                &flags.flags,
                &super::flags::command(r.kind, &flags)
                    .ignore_errors(true)
                    .try_get_matches_from(std::iter::once(name).chain(args.iter().copied()))
                    .unwrap(),
            ),
        };
        assert_eq!(
            parse(&[]).db(Path::new("runs/x.db")),
            Db::At("runs/x.db".into()),
            "run {name}"
        );
        assert_eq!(
            parse(&["--no-db"]).db(Path::new("runs/x.db")),
            Db::Off,
            "run {name} --no-db"
        );
    }
}
