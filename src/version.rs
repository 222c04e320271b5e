//! Which jitterlab this is: its version, the commit it was built from and
//! the day it was built, as `build.rs` recorded them.
//!
//! [`LONG`] is what `jitterlab --version` prints after the name;
//! [`TOOL_VERSION`] (version and commit, without the day, so that two
//! builds of one commit agree) is what a run records: the JSON result's
//! `tool_version` and the database's `runs.tool_version`, so a result says
//! which source measured it.

/// The package version, e.g. `0.1.0`.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The build's day, UTC (`SOURCE_DATE_EPOCH` when the build set it).
pub const BUILD_DATE: &str = env!("JITTERLAB_BUILD_DATE");

/// `0.1.0 (commit 28a18f1, built 2026-11-24)`: `jitterlab --version`. The
/// commit is the short hash built, `-dirty` when the tree had changes, or
/// `unknown` (a build from a source tarball).
pub const LONG: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("JITTERLAB_COMMIT"),
    ", built ",
    env!("JITTERLAB_BUILD_DATE"),
    ")"
);

/// `0.1.0 (commit 28a18f1)`: the version a run's JSON and database row
/// record.
pub const TOOL_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("JITTERLAB_COMMIT"),
    ")"
);

#[cfg(test)]
mod tests {
    use super::*;

    const COMMIT: &str = env!("JITTERLAB_COMMIT");

    /// The commit is a 7-hex-digit hash, optionally `-dirty`, or `unknown`.
    fn is_commit(c: &str) -> bool {
        let hash = c.strip_suffix("-dirty").unwrap_or(c);
        c == "unknown" || (hash.len() == 7 && hash.bytes().all(|b| b.is_ascii_hexdigit()))
    }

    #[test]
    fn long_version_names_version_commit_and_day() {
        assert!(is_commit(COMMIT), "{COMMIT:?}");
        let day = BUILD_DATE.as_bytes();
        assert_eq!(day.len(), 10, "{BUILD_DATE:?}");
        assert!(day.iter().enumerate().all(|(i, b)| if i == 4 || i == 7 {
            *b == b'-'
        } else {
            b.is_ascii_digit()
        }));
        assert_eq!(
            LONG,
            format!("{VERSION} (commit {COMMIT}, built {BUILD_DATE})")
        );
        assert_eq!(TOOL_VERSION, format!("{VERSION} (commit {COMMIT})"));
    }
}
