//! `jitterlab`: measure and prove the real-time determinism of a Linux machine.
//!
//! The binary wires the parts together: `cli` parses, `runner` validates and
//! runs a probe (`probe`), with the machine reached only through `system`,
//! every run kept in the results database (`store`), and results written
//! only by `report`; `check` audits the machine before any run; `metrics`
//! serves live figures while `run`, `bench` or `apply` runs (`--metrics`). Exit status:
//! 0 when every verdict passed, 1 when one did not — a `--max-*` limit
//! exceeded or not measured, a round trip's budget broken, a netcycle's
//! cycle time not held, a main metric without a sample
//! (`jitterlab_core::verdict`; a bench after its whole sweep) (for
//! `check`, when a finding is `fail`; for `restore`, when journal entries
//! stay for a person), 2 for any error — bad input among them, which is
//! refused before anything starts — and 141 when stdout's reader went away
//! (`jitterlab runs | head -1`): the command then ends quietly, through its
//! normal cleanup (see `output`). SIGINT and SIGTERM end a command early
//! through its cleanup with its own status (0 when every verdict passed:
//! `monitor` and `apply` end 0); every other terminating signal N ends it
//! through the same cleanup with 128 + N (129 for SIGHUP; see
//! `termination`).
//!
//! An error is printed as one line, `jitterlab: error: …`, with control
//! characters escaped (`output::shown`), whatever text it quotes.

#![forbid(unsafe_code)]

mod cli;
mod error;
mod live;
mod metrics;
mod neighbour;
mod net;
mod out_files;
mod output;
mod probe;
mod render;
mod report;
mod runner;
mod store;
mod system;
mod termination;
#[cfg(test)]
#[path = "../tests/common/fixtures.rs"]
mod testutil;
mod trace;
mod version;

use std::process::ExitCode;

use clap::error::ErrorKind;

use cli::{Cli, Command};

fn main() -> ExitCode {
    drop_empty_settings();
    let cli = match cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => return clap_exit(e),
    };
    quiet_on_closed_stdout();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| command(&cli)));
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(payload) if is_stdout_panic(payload.as_ref()) => {
            return ExitCode::from(output::READER_GONE_STATUS)
        }
        Err(payload) => std::panic::resume_unwind(payload),
    };
    let code = match outcome {
        Ok(code) => code,
        Err(e) if output::is_reader_gone(&e) => ExitCode::from(output::READER_GONE_STATUS),
        Err(e) => {
            output::errln!(
                "jitterlab: error: {}",
                crate::output::shown(&format!("{e:#}"))
            );
            ExitCode::from(2)
        }
    };
    // A command that a signal other than SIGINT/SIGTERM ended, after its
    // cleanup, says so with 128 + the signal's number.
    match termination::exit_status() {
        Some(status) => ExitCode::from(status),
        None => code,
    }
}

/// The message of the panic `println!` raises when stdout's reader went
/// away (the standard library's words).
fn is_stdout_panic_message(m: &str) -> bool {
    m.starts_with("failed printing to stdout") && m.contains("Broken pipe")
}

fn is_stdout_panic(payload: &(dyn std::any::Any + Send)) -> bool {
    let m = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied());
    m.is_some_and(is_stdout_panic_message)
}

/// The last line of defence of `output`: a `println!` that stdout's closed
/// pipe made panic prints nothing; `main` turns the panic into the quiet
/// exit of [`output::ReaderGone`]. Every other panic is reported as before.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let m = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        if !m.is_some_and(is_stdout_panic_message) {
            default(info);
        }
    }));
}

/// Runs the parsed command: clap's types end here, each command gets the
/// plain request of the module that acts on it.
fn command(cli: &Cli) -> anyhow::Result<ExitCode> {
    match &cli.command {
        Command::Run(run) => {
            let db = run.probe.db(&cli.db);
            let cli::one_cell::OneCell { spec, options } =
                cli::one_cell::one_cell(&cli.sysroot, &db, &run.probe)?;
            let _served = metrics::serve(run.metrics.addr, &cli.sysroot, "run")?;
            runner::run(&cli.sysroot, &db, &spec, &options)
        }
        Command::Monitor(a) => {
            // A monitor is always stored: its series is its database's.
            let db = store::Db::At(cli.db.clone());
            let (cli::one_cell::OneCell { spec, mut options }, monitor) =
                a.one_cell(&cli.sysroot, &db)?;
            options.monitor = Some(monitor);
            let _served = metrics::serve(a.metrics, &cli.sysroot, "monitor")?;
            let code = runner::run(&cli.sysroot, &db, &spec, &options)?;
            // A monitored --pid/--tid task that ended ends the monitor.
            match probe::watch::ended() {
                Some(why) => {
                    output::errln!("jitterlab: monitor: {why}");
                    Ok(ExitCode::from(probe::watch::TASK_ENDED_STATUS))
                }
                None => Ok(code),
            }
        }
        Command::Bench(a) => {
            // A dry run measures nothing, and serves nothing.
            let addr = a.source.metrics.addr.filter(|_| !a.dry_run);
            let _served = metrics::serve(addr, &cli.sysroot, "bench")?;
            runner::bench::bench(&cli.sysroot, &cli.db, &a.request())
        }
        Command::Apply(a) => {
            let _served = metrics::serve(a.source.metrics.addr, &cli.sysroot, "apply")?;
            runner::apply::apply(&cli.sysroot, &a.request())
        }
        Command::Presets(a) => runner::spec_source::presets(&cli.sysroot, a.show.as_deref()),
        Command::Restore => runner::apply::restore(&cli.sysroot),
        Command::Runs(a) => report::stored::runs(&cli.db, &a.request()),
        Command::Import(a) => report::stored::import(&cli.db, &a.other),
        Command::Report(a) => report::stored::report(&cli.db, &a.request()),
        Command::Check(a) => report::check::run(
            &cli.sysroot,
            &system::check::CheckRequest {
                json: a.json,
                cpus: a.cpus.clone(),
            },
        ),
        Command::Analyze(a) => a.run(),
        Command::SynthCapture(a) => {
            net::pcap::synth::synth(&a.request()).map(|_| ExitCode::SUCCESS)
        }
        Command::SynthMonitor(a) => store::monitor::synth::synth_main(&cli.db, &a.request()),
        Command::Cell(a) => {
            let inner = a.request()?;
            runner::run(&cli.sysroot, &inner.db(), &inner.spec, &inner.options())
        }
        Command::NetSink(a) => net::flood::sink_main(&a.request()),
        Command::NetFlood(a) => net::flood::flood_main(&a.request()),
        Command::NetRps(a) => net::rps::rps_main(&a.request()),
        Command::GenerateDocs(a) => cli::docs_gen::generate(&a.dir).map(|_| ExitCode::SUCCESS),
    }
}

/// Unsets every `JITTERLAB_*` variable that is set but empty, before the
/// command line is parsed: in `/etc/default/jitterlab` (the service's
/// environment file) `JITTERLAB_CPUS=` means "not given, take the
/// default", while clap would read it as an empty value. Runs first, while
/// the process has one thread.
fn drop_empty_settings() {
    let empty: Vec<std::ffi::OsString> = std::env::vars_os()
        .filter(|(k, v)| v.is_empty() && k.to_string_lossy().starts_with("JITTERLAB_"))
        .map(|(k, _)| k)
        .collect();
    for k in empty {
        std::env::remove_var(k);
    }
}

/// Help and version go to stdout with status 0 (141 when stdout's reader
/// has gone); every other parse error is printed as one line naming the
/// problem, with status 2 (a missing argument is named on that line).
fn clap_exit(e: clap::Error) -> ExitCode {
    match e.kind() {
        ErrorKind::DisplayHelp
        | ErrorKind::DisplayVersion
        | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            if e.print().is_err() {
                // Help asked for and its reader gone (`--help | head -1`).
                return ExitCode::from(output::READER_GONE_STATUS);
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => {
            let text = e.render().to_string();
            let mut lines = text.lines();
            let first = lines.next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            let mut line = first.to_string();
            if e.kind() == ErrorKind::MissingRequiredArgument {
                // clap lists the missing arguments on the lines after.
                let missing: Vec<&str> = lines
                    .take_while(|l| l.starts_with("  "))
                    .map(str::trim)
                    .collect();
                line = format!("{} {}", line.trim_end(), missing.join(", "));
            }
            output::errln!(
                "jitterlab: error: {} (see jitterlab --help)",
                crate::output::shown(&line)
            );
            ExitCode::from(2)
        }
    }
}
