//! Everything that reads or changes the machine: the readiness audit
//! (`check`), the host snapshot, the real-time set-up of probe threads, the
//! kernel trace buffer, the per-CPU counters that explain a cell's
//! outliers, the process table, the settings that partition the machine
//! (IRQ affinity, sysctls, cpufreq), the journal of every change with
//! `jitterlab restore`, and the private work directories jitterlab writes
//! its files in.
//!
//! The `*_undo` modules (resctrl, work directories, the neighbours'
//! cgroups) hold the steps that put a change back: the journal's replay
//! calls them, so they sit below the journal, while the modules that make
//! and journal the changes sit above it.
//!
//! Every path is taken relative to `--sysroot` (DESIGN rule 5), so each fact
//! and each change can be tested against fake `/sys`, `/proc` and `/dev`
//! trees under `tests/fixtures/`.

pub mod cgroup_undo;
pub mod check;
pub mod counters;
pub mod host;
pub mod journal;
pub mod procs;
pub mod resctrl_undo;
pub mod rt;
pub mod settings;
pub mod trace;
pub mod workdir;
pub mod workdir_undo;
