//! `jitterlab apply SPEC --configuration NAME`: hold a configuration's
//! settings for the user's own software, and put everything back on Ctrl-C;
//! and `jitterlab restore`, which puts back what a killed jitterlab left
//! ([`restore`]).
//!
//! The configuration comes from a spec (or a preset) exactly as a bench would
//! apply it: validated first (bad input changes nothing, exit 2), every
//! change journaled before it is written, read back and reported. Then the
//! command stays in the foreground: some settings live only as long as the
//! process (the `/dev/cpu_dma_latency` request), and the foreground process
//! is what Ctrl-C, SIGTERM or an SSH disconnect's SIGHUP reaches. On any
//! terminating signal (`crate::termination`) every value is written back,
//! newest first, and each one is reported; SIGINT and SIGTERM then end
//! with 0, any other signal N with 128 + N. After a `kill -9`,
//! `jitterlab restore` does the same from the journal.
//!
//! While it holds the configuration, `apply` holds the machine lock
//! (`system::journal`): no bench, other `apply` or changing run can alter
//! the machine meanwhile, but a measuring-only `jitterlab run` may measure
//! beside it — that is what `apply` is for.
//!
//! What `apply` prints goes to stdout in two blocks: what it applied, and
//! what it put back. When stdout's reader has gone before the first block
//! is written (`jitterlab apply … | head -1`), nothing is held for anyone:
//! everything is put back at once and the command ends quietly (see
//! `output`); the second block is then not printed.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use anyhow::Result;

use super::spec_source::{load, SpecSource};
use crate::error::bad;
use crate::output::{errln, out, outln};
use crate::system::journal::{self, Holder, Journal};
use crate::system::rt;
use crate::system::settings::{apply_all, config_settings, restore_all, Settings};
use jitterlab_core::spec::Spec;

/// What `jitterlab apply` is asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApplyRequest {
    /// The spec (or preset) that defines the configuration.
    pub source: SpecSource,
    /// The configuration to hold; `None`: the spec's only one.
    pub configuration: Option<String>,
}

/// What [`check`] found valid: the configuration to hold, its settings
/// (each validated against the machine) and the warnings to print.
pub struct Checked {
    /// The validated spec the configuration is taken from.
    spec: Spec,
    /// The index of the configuration to hold in `spec.configurations`.
    config: usize,
    /// The configuration's settings, validated.
    settings: Settings,
    /// Warnings about the settings, printed once the lock is held.
    warnings: Vec<String>,
}

/// The checks of `jitterlab apply`, before anything changes: the spec, the
/// configuration chosen, and each setting against the machine under `root`
/// (bad input names what to fix, exit 2).
pub fn check(root: &Path, a: &ApplyRequest) -> Result<Checked> {
    let spec = load(root, &a.source)?.spec;
    let names: Vec<&str> = spec
        .configurations
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let config = match &a.configuration {
        Some(n) => spec
            .configurations
            .iter()
            .position(|c| &c.name == n)
            .ok_or_else(|| {
                bad(format!(
                    "--configuration {n} is not in the spec (configurations: {})",
                    names.join(", ")
                ))
            })?,
        None if spec.configurations.len() == 1 => 0,
        None => {
            return Err(bad(format!(
                "the spec has several configurations; name one with --configuration ({})",
                names.join(", ")
            )))
        }
    };
    let (settings, warnings) = config_settings(&spec.configurations[config])?;
    for s in &settings {
        s.validate(root)?;
    }
    Ok(Checked {
        spec,
        config,
        settings,
        warnings,
    })
}

/// `jitterlab apply`.
pub fn apply(root: &Path, a: &ApplyRequest) -> Result<ExitCode> {
    let Checked {
        spec,
        config,
        mut settings,
        warnings,
    } = check(root, a)?;
    let config = &spec.configurations[config];
    // Every terminating signal puts everything back, from before the first
    // change on.
    let signalled = crate::termination::stop_flag()?;
    let mut journal = Journal::begin_as(root, Holder::Apply)?;
    for w in warnings {
        errln!("jitterlab: warning: {w}");
    }
    let reports = apply_all(&mut settings, root, &mut journal)?;
    let (guard, dma) = rt::hold_dma_latency(root, !config.dma_latency);
    crate::metrics::settings(&reports, Some(&dma));
    let mut applied = format!("configuration {} applied:\n", config.name);
    for r in &reports {
        let state = if r.ok { "in effect" } else { "NOT in effect" };
        applied.push_str(&format!(
            "  {} = {}: {state} (was {}; read back {})\n",
            r.name, r.requested, r.before, r.verified
        ));
        for n in &r.notes {
            applied.push_str(&format!("    {n}\n"));
        }
    }
    if config.dma_latency {
        applied.push_str(&format!(
            "  cpu_dma_latency: {} ({})\n",
            if dma.applied {
                "held at 0 us"
            } else {
                "NOT held"
            },
            dma.detail
        ));
    }
    applied.push_str("holding it; Ctrl-C (or SIGTERM) puts everything back\n");
    // A reader that is gone (or any failure to print) ends the hold at once.
    let printed = out!("{applied}");
    while printed.is_ok() && !signalled.load(Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(guard);
    let lines = restore_all(&mut settings, root, &mut journal)?;
    journal.finish()?;
    printed?;
    for l in &lines {
        outln!("{l}")?;
    }
    if config.dma_latency {
        outln!("released the cpu_dma_latency request")?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `jitterlab restore`: replays the journal and says what it did, one line
/// per entry on stdout. Exit 0 when nothing is left; 1 when entries stay
/// in the journal, with a line on stderr saying so and what to do; bad
/// input (exit 2) is the caller's.
pub fn restore(root: &Path) -> Result<ExitCode> {
    let r = journal::replay(root)?;
    if r.lines.is_empty() {
        outln!("nothing to restore")?;
    }
    // The lines quote what the journal recorded (a neighbour's command):
    // its control characters are escaped.
    for l in &r.lines {
        outln!("{}", crate::output::shown(l))?;
    }
    if r.left > 0 {
        errln!("jitterlab: {}", journal::left_message(&r));
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}
