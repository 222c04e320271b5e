//! `jitterlab`: measure and prove the real-time determinism of a Linux machine.
//!
//! The binary wires the parts together: `cli` parses, `runner` validates and
//! runs a probe (`probe`), with the machine reached only through `system`,
//! every run kept in the results database (`store`), and results written
//! only by `report`; `check` audits the machine before any run. Exit status:
//! 0 when every limit held, 1 when a `--max-*` limit was exceeded (for
//! `check`, when a finding is `fail`; for `restore`, when journal entries
//! stay for a person), 2 for any error — bad input
//! among them, which is refused before anything starts.

mod cli;
mod error;
mod live;
mod neighbour;
mod net;
mod probe;
mod report;
mod runner;
mod store;
mod system;
#[cfg(test)]
#[path = "../tests/common/fixtures.rs"]
mod testutil;

use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::Parser;

use cli::{Cli, Command, RunCommand};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    let outcome = match &cli.command {
        Command::Run(RunCommand::Cyclic(a)) => runner::plan_cyclic(&cli.sysroot, &cli.db, a)
            .and_then(|plan| runner::execute(&cli.sysroot, &cli.db, plan, &a.common, None)),
        Command::Run(RunCommand::Wakeup(a)) => runner::plan_wakeup(&cli.sysroot, &cli.db, a)
            .and_then(|plan| runner::execute(&cli.sysroot, &cli.db, plan, &a.common, None)),
        Command::Run(RunCommand::Chase(a)) => runner::probes::plan_chase(&cli.sysroot, &cli.db, a)
            .and_then(|(plan, make)| {
                runner::execute(&cli.sysroot, &cli.db, plan, &a.common, Some(make))
            }),
        Command::Run(RunCommand::Ctxswitch(a)) => {
            runner::probes::plan_ctxswitch(&cli.sysroot, &cli.db, a).and_then(|(plan, make)| {
                runner::execute(&cli.sysroot, &cli.db, plan, &a.common, Some(make))
            })
        }
        Command::Run(RunCommand::Response(a)) => {
            runner::probes::plan_response(&cli.sysroot, &cli.db, a).and_then(|(plan, make)| {
                runner::execute(&cli.sysroot, &cli.db, plan, &a.common, Some(make))
            })
        }
        Command::Run(RunCommand::Timerlat(a)) => {
            runner::timerlat::execute_timerlat(&cli.sysroot, &cli.db, a)
        }
        Command::Bench(a) => runner::bench::bench(&cli.sysroot, &cli.db, a),
        Command::Apply(a) => runner::apply::apply(&cli.sysroot, a),
        Command::Presets(a) => runner::bench::presets(&cli.sysroot, a.show.as_deref()),
        Command::Restore => system::journal::restore_command(&cli.sysroot),
        Command::Runs => report::stored::runs(&cli.db),
        Command::Report(a) => report::stored::report(&cli.db, a),
        Command::Check(a) => system::check::run(&cli.sysroot, a),
        Command::NetSink(a) => net::flood::sink_main(a),
        Command::NetFlood(a) => net::flood::flood_main(a),
    };
    match outcome {
        Ok(code) => code,
        Err(e) => {
            eprintln!("jitterlab: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// Help and version go to stdout with status 0; every other parse error is
/// printed as one line naming the problem, with status 2.
fn clap_exit(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            eprintln!("jitterlab: error: {first} (see jitterlab --help)");
            ExitCode::from(2)
        }
    }
}
