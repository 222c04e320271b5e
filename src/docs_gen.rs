//! Man pages and shell completions generated from the command-line
//! definition itself (`cli::Cli`), so they never drift from `--help`.
//!
//! `jitterlab __generate-docs DIR` (hidden) writes:
//! - `DIR/man/jitterlab.1` and one page per visible subcommand, nested ones
//!   included (`jitterlab-run.1`, `jitterlab-run-cyclic.1`, …), with
//!   `clap_mangen`: dated with the build's day so a reproducible build
//!   gives the same pages;
//! - `DIR/completions/jitterlab.bash`, `_jitterlab` (zsh) and
//!   `jitterlab.fish`, with `clap_complete`.
//!
//! The generator is a hidden subcommand of the binary rather than a build
//! script or an `xtask` crate: the command definition lives in the binary
//! crate (it names the request types of the runner and the reports), so
//! only the binary can walk it without a second copy of the whole crate in
//! a build script; `make deb` runs the freshly built binary once before
//! packaging. Hidden (internal) commands get no page and no completion.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::CommandFactory;
use clap_complete::Shell;

use crate::cli::Cli;
use crate::version;

/// The shells completions are written for, with their file names (the
/// names the Debian package installs them under are set in Cargo.toml).
pub const COMPLETIONS: [(Shell, &str); 3] = [
    (Shell::Bash, "jitterlab.bash"),
    (Shell::Zsh, "_jitterlab"),
    (Shell::Fish, "jitterlab.fish"),
];

/// The command definition as the man pages and completions see it: the
/// visible commands only, built (subcommands know their full names),
/// without clap's `help` subcommand. `clap_complete` would complete hidden
/// commands too, and clap cannot remove a subcommand, so the top level is
/// put together again from the parsed definition's parts: its
/// description, flags, settings and visible subcommands.
pub fn command() -> clap::Command {
    let full = Cli::command();
    let mut cmd = clap::Command::new("jitterlab")
        .version(version::LONG)
        .args(full.get_arguments().cloned())
        .subcommands(full.get_subcommands().filter(|s| !s.is_hide_set()).cloned())
        .subcommand_required(full.is_subcommand_required_set())
        .arg_required_else_help(full.is_arg_required_else_help_set())
        .disable_help_subcommand(true);
    if let Some(a) = full.get_about() {
        cmd = cmd.about(a.clone());
    }
    if let Some(a) = full.get_long_about() {
        cmd = cmd.long_about(a.clone());
    }
    cmd.build();
    cmd
}

/// Writes every man page under `dir/man` and every completion script under
/// `dir/completions` (creating them); returns the files written, in order.
pub fn generate(dir: &Path) -> Result<Vec<PathBuf>> {
    let man_dir = dir.join("man");
    let comp_dir = dir.join("completions");
    for d in [&man_dir, &comp_dir] {
        fs::create_dir_all(d)
            .with_context(|| format!("cannot create {} (choose a writable DIR)", d.display()))?;
    }
    let mut written = Vec::new();
    let cmd = command();
    man_pages(&cmd, &man_dir, &mut written)?;
    for (shell, name) in COMPLETIONS {
        let mut script = Vec::new();
        clap_complete::generate(shell, &mut command(), "jitterlab", &mut script);
        let path = comp_dir.join(name);
        fs::write(&path, script).with_context(|| format!("cannot write {}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// Writes the page of `cmd` and, depth first, of its visible subcommands.
fn man_pages(cmd: &clap::Command, dir: &Path, written: &mut Vec<PathBuf>) -> Result<()> {
    let man = clap_mangen::Man::new(cmd.clone())
        .date(version::BUILD_DATE)
        .source(format!("jitterlab {}", version::VERSION))
        .manual("jitterlab manual");
    let path = dir.join(man.get_filename());
    let mut page = Vec::new();
    man.render(&mut page)?;
    fs::write(&path, page).with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path);
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        man_pages(sub, dir, written)?;
    }
    Ok(())
}
