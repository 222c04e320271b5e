//! Everything that reads or changes the machine: the readiness audit
//! (`check`), the host snapshot, the real-time set-up of probe threads, the
//! kernel trace buffer, the per-CPU counters that explain a cell's
//! outliers, the process table, the settings that partition the machine
//! (IRQ affinity, sysctls, cpufreq), the journal of every change with
//! `jitterlab restore`, the private work directories jitterlab writes
//! its files in, the containers of deployment `container` (engine,
//! image, host quirks, their real-time parent cgroup), and the system log
//! a monitor's alerts go to.
//!
//! The `*_undo` modules (resctrl, work directories, the neighbours'
//! cgroups) hold the steps that put a change back: the journal's replay
//! calls them, so they sit below the journal, while the modules that make
//! and journal the changes sit above it.
//!
//! Every path is taken relative to `--sysroot` (design rule 5), so each fact
//! and each change can be tested against fake `/sys`, `/proc` and `/dev`
//! trees under `tests/fixtures/`.
//!
//! The design rules cited here are in `docs/design.md`.

pub mod check;
pub mod container;
pub mod counters;
pub mod host;
pub mod journal;
pub mod load;
pub mod procs;
pub mod rt;
pub mod rt_throttle;
pub mod settings;
pub mod syslog;
pub mod trace;
pub mod workdir;

/// How many hex digits the random part of a name jitterlab gives what it
/// makes (work directories, cgroups) has.
pub const RANDOM_DIGITS: usize = 16;

/// A fresh random name part of [`RANDOM_DIGITS`] hex digits. Names are
/// taken with an exclusive `mkdir`, so the part needs to be unguessable by
/// another user, not unique: std's `RandomState` is keyed from the
/// operating system's random source (no crate needed for 64 bits).
pub fn random_suffix() -> String {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.write_u64(jitterlab_sys::monotonic_ns());
    format!("{:0width$x}", h.finish(), width = RANDOM_DIGITS)
}

/// True when `name` is `prefix` followed by a [`random_suffix`].
pub fn has_shape(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix).is_some_and(|rest| {
        rest.len() == RANDOM_DIGITS
            && rest
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    })
}
