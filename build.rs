//! Build script: records which source the binary was built from, for
//! `jitterlab --version`, the JSON result's `tool_version` and the results
//! database's `runs.tool_version` (see `src/version.rs`).
//!
//! It sets two variables for `env!`:
//! - `JITTERLAB_COMMIT`: the short hash of the commit checked out, with
//!   `-dirty` when tracked files had changes, or `unknown` when there is no
//!   git repository of this source (a source tarball) or no `git`. It never
//!   fails the build: a missing commit is said, not fatal.
//! - `JITTERLAB_BUILD_DATE`: the build's day (UTC, `YYYY-MM-DD`), from
//!   `SOURCE_DATE_EPOCH` when it is set (reproducible builds, as Debian's
//!   tools set it), else from the clock.
//!
//! `git` is run with an argument vector, never through a shell.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    // The source itself: an edit makes the tree dirty (cargo scans a
    // directory given here for any change).
    for p in ["build.rs", "Cargo.toml", "Cargo.lock", "src", "crates"] {
        println!("cargo:rerun-if-changed={p}");
    }
    let commit = commit(&manifest_dir).unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=JITTERLAB_COMMIT={commit}");
    println!("cargo:rustc-env=JITTERLAB_BUILD_DATE={}", build_date());
}

/// Runs `git` in `dir` with `args`; its trimmed standard output when it
/// succeeds.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The short commit hash of `dir`'s checkout, `-dirty` appended when
/// tracked files differ from it; `None` when `dir` is not the top of a git
/// work tree (a tarball unpacked inside some other repository must not take
/// that repository's commit) or `git` is missing.
fn commit(dir: &Path) -> Option<String> {
    let top = git(dir, &["rev-parse", "--show-toplevel"])?;
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if !same(Path::new(&top), dir) {
        return None;
    }
    // Rebuild when the checked-out commit moves or the index changes.
    for what in ["HEAD", "index"] {
        if let Some(p) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", what],
        ) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(
            dir,
            &["rev-parse", "--path-format=absolute", "--git-path", &branch],
        ) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    let hash = git(dir, &["rev-parse", "--short=7", "HEAD"])?;
    // `--untracked-files=no`: a stray file beside the source (a database, a
    // report) is not a change to what was built. `--no-optional-locks`:
    // status does not rewrite the index, which would make cargo run this
    // script again on every build.
    let dirty = git(
        dir,
        &[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
        ],
    )
    .is_none_or(|s| !s.is_empty());
    Some(if dirty { format!("{hash}-dirty") } else { hash })
}

/// The build's day, UTC, `YYYY-MM-DD`: `SOURCE_DATE_EPOCH` when set and
/// valid (a warning otherwise), else now.
fn build_date() -> String {
    let now = time::OffsetDateTime::now_utc();
    let when = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(s) => {
            match s
                .trim()
                .parse::<i64>()
                .ok()
                .and_then(|t| time::OffsetDateTime::from_unix_timestamp(t).ok())
            {
                Some(t) => t,
                None => {
                    println!("cargo:warning=SOURCE_DATE_EPOCH={s:?} is not seconds since 1970; using today");
                    now
                }
            }
        }
        Err(_) => now,
    };
    let format = time::macros::format_description!("[year]-[month]-[day]");
    when.format(&format)
        .unwrap_or_else(|_| "unknown".to_owned())
}
