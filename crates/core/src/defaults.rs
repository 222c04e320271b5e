//! The defaults every front door shares, named once: the command line, the
//! spec, the presets and the runner take them from here, so a default can
//! never differ between `jitterlab run` and a bench cell.

/// SCHED_FIFO priority of a probe's real-time threads unless told
/// (DESIGN rule 3, as jitterdebugger and cyclictest's `-p95` practice).
pub const PRIORITY: i32 = 95;

/// Worst samples kept per metric, with their cycle number and time, unless
/// told: the same for `--outliers` and a spec's `outliers` (they were 20 and
/// 10 until one default was named here).
pub const OUTLIERS: usize = 20;
