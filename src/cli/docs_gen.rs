//! Man pages and shell completions generated from the command-line
//! definition itself (`cli::Cli`), so they never drift from `--help`.
//!
//! `jitterlab __generate-docs DIR` (hidden) writes:
//! - `DIR/man/jitterlab.1` and one page per visible subcommand, nested ones
//!   included (`jitterlab-run.1`, `jitterlab-run-cyclic.1`, …), with
//!   `clap_mangen`: dated with the build's day so a reproducible build
//!   gives the same pages;
//! - `DIR/completions/jitterlab.bash`, `_jitterlab` (zsh) and
//!   `jitterlab.fish`, with `clap_complete`;
//! - `DIR/spec-keys.md`, the reference of a `[[probe]]` table's keys,
//!   written from the kinds' key tables (`jitterlab_core::spec::key_doc`;
//!   the repository keeps it as `docs/spec-keys.md`).
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
use jitterlab_core::spec::key_doc;

use super::Cli;
use crate::version;

/// The shells completions are written for, with their file names (the
/// names the Debian package installs them under are set in Cargo.toml).
pub const COMPLETIONS: [(Shell, &str); 3] = [
    (Shell::Bash, "jitterlab.bash"),
    (Shell::Zsh, "_jitterlab"),
    (Shell::Fish, "jitterlab.fish"),
];

/// The command definition as the man pages and completions see it: the
/// visible commands only (see [`visible`]), built (subcommands know their
/// full names), without clap's `help` subcommand.
pub fn command() -> clap::Command {
    let mut cmd = visible(&Cli::command()).disable_help_subcommand(true);
    cmd.build();
    cmd
}

/// `cmd` without its hidden subcommands and flags, at every level.
/// `clap_complete` would complete hidden ones too (`__net-sink`, the
/// test-only `run sleep`, the container side's `--stream`), and clap cannot
/// remove a subcommand or a flag, so a command that hides something is put
/// together again from its parts: name, version, descriptions, visible
/// flags and their groups (members, multiple, required), the settings the derive sets, and its visible
/// subcommands. The unit tests check that every visible command's `--help`
/// is unchanged by it.
fn visible(cmd: &clap::Command) -> clap::Command {
    fn hides(cmd: &clap::Command) -> bool {
        cmd.get_arguments().any(clap::Arg::is_hide_set)
            || cmd.get_subcommands().any(|s| s.is_hide_set() || hides(s))
    }
    if !hides(cmd) {
        return cmd.clone();
    }
    let mut out = clap::Command::new(cmd.get_name().to_owned())
        .args(cmd.get_arguments().filter(|a| !a.is_hide_set()).cloned())
        .groups(cmd.get_groups().cloned().map(|mut g| {
            // The derive's group of a flattened struct names every flag
            // of it, hidden ones too.
            let shown = g.get_args().filter(|id| {
                cmd.get_arguments()
                    .any(|a| a.get_id() == *id && !a.is_hide_set())
            });
            clap::ArgGroup::new(g.get_id().clone())
                .args(shown.cloned())
                .multiple(g.is_multiple())
                .required(g.is_required_set())
        }))
        .subcommands(
            cmd.get_subcommands()
                .filter(|s| !s.is_hide_set())
                .map(visible),
        )
        .subcommand_required(cmd.is_subcommand_required_set())
        .arg_required_else_help(cmd.is_arg_required_else_help_set());
    if let Some(v) = cmd.get_version() {
        out = out.version(v.to_owned());
    }
    if let Some(a) = cmd.get_about() {
        out = out.about(a.clone());
    }
    if let Some(a) = cmd.get_long_about() {
        out = out.long_about(a.clone());
    }
    out
}

/// Writes every man page under `dir/man`, every completion script under
/// `dir/completions` (creating them) and the spec keys' reference; returns
/// the files written, in order.
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
    let path = dir.join(key_doc::FILE_NAME);
    fs::write(&path, key_doc::key_reference())
        .with_context(|| format!("cannot write {}", path.display()))?;
    written.push(path);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The long help of `cmd` and of every visible command below it, by
    /// its path of names.
    fn helps(cmd: &mut clap::Command, path: String, out: &mut Vec<(String, String)>) {
        out.push((path.clone(), cmd.render_long_help().to_string()));
        let names: Vec<String> = cmd
            .get_subcommands()
            .filter(|s| !s.is_hide_set() && s.get_name() != "help")
            .map(|s| s.get_name().to_owned())
            .collect();
        for n in names {
            let sub = cmd.find_subcommand_mut(&n).unwrap();
            helps(sub, format!("{path} {n}"), out);
        }
    }

    #[test]
    fn the_visible_definition_has_the_same_help_as_the_real_one() {
        let mut real = Cli::command();
        real.build();
        let mut ours = command();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        helps(&mut real, "jitterlab".into(), &mut a);
        helps(&mut ours, "jitterlab".into(), &mut b);
        assert!(a.len() > 10, "{}", a.len());
        assert_eq!(a.len(), b.len());
        for ((pa, ha), (pb, hb)) in a.iter().zip(&b) {
            assert_eq!(pa, pb);
            // The real definition lists clap's `help` subcommand, which
            // the pages and completions leave out.
            let ha: String = ha
                .lines()
                .filter(|l| !l.starts_with("  help "))
                .map(|l| format!("{l}\n"))
                .collect();
            let hb: String = hb.lines().map(|l| format!("{l}\n")).collect();
            assert_eq!(ha, hb, "help of {pa}");
        }
    }

    #[test]
    fn hidden_commands_are_left_out_at_every_level() {
        let cmd = command();
        let names = |c: &clap::Command| -> Vec<String> {
            c.get_subcommands()
                .map(|s| s.get_name().to_owned())
                .collect()
        };
        assert!(
            names(&cmd).iter().all(|n| !n.starts_with("__")),
            "{:?}",
            names(&cmd)
        );
        let run = cmd.find_subcommand("run").unwrap();
        let cyclic = run.find_subcommand("cyclic").unwrap();
        let flags: Vec<&str> = cyclic
            .get_arguments()
            .filter_map(|a| a.get_long())
            .collect();
        assert!(flags.contains(&"period"), "{flags:?}");
        for hidden in ["stream", "calibration"] {
            assert!(!flags.contains(&hidden), "{flags:?}");
        }
        assert_eq!(
            names(run),
            [
                "cyclic",
                "wakeup",
                "chase",
                "ctxswitch",
                "response",
                "timerlat",
                "roundtrip",
                "netcycle",
                "observe"
            ]
        );
    }
}
