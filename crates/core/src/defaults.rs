//! The defaults every front door shares, named once: the command line (its
//! `default_value`s), the spec checker, the presets and the runner take them
//! from here, so a default can never differ between `jitterlab run` and a
//! bench cell.
//!
//! The design rules and documents cited here are in `docs/design.md`.

/// SCHED_FIFO priority of a probe's real-time threads unless told
/// (design rule 3, as jitterdebugger and cyclictest's `-p95` practice).
pub const PRIORITY: i32 = 95;

/// Nice value of a probe thread under SCHED_OTHER unless told.
pub const NICE: i32 = 0;

/// Worst samples kept per metric, with their cycle number and time, unless
/// told: the same for `--outliers` and a spec's `outliers` (they were 20 and
/// 10 until one default was named here).
pub const OUTLIERS: usize = 20;

/// Period of a periodic probe, interval of an event source, period of the
/// timerlat tracer's timer (`--period`, `--interval`, a spec's `period`):
/// 1 ms.
pub const PERIOD_NS: u64 = 1_000_000;

/// Width of the per-window rows (`--window`, a spec's `window`): 1 s.
pub const WINDOW_NS: u64 = 1_000_000_000;

/// Latency above which a sample counts in the "% over threshold" column
/// (`--threshold`, a spec's `threshold`): 100 µs, as the EPICS tables use.
pub const THRESHOLD_NS: u64 = 100_000;

/// Compute time of the cyclic probe's scan per cycle (`--scan`, a spec's
/// `scan`): 100 µs.
pub const SCAN_NS: u64 = 100_000;

/// Memory the cyclic probe's scan walks per cycle (`--working-set`, a spec's
/// `working_set`): 256 KiB.
pub const WORKING_SET_BYTES: u64 = 256 << 10;

/// How long `jitterlab run` measures when neither `--duration` nor
/// `--cycles` is given (and `run timerlat`'s `--duration`): 10 s.
pub const DURATION_NS: u64 = 10_000_000_000;

/// Neighbours-only time before a bench cell's probe starts (a spec's
/// `warmup`): 2 s.
pub const WARMUP_NS: u64 = 2_000_000_000;

/// Timed chases per chase sample (`--iterations`, a spec's `iterations`).
pub const ITERATIONS: u64 = 100;

/// Chase samples when neither a sample count nor a duration ends the chase
/// (`run chase` without `--samples` or `--duration`).
pub const SAMPLES: u64 = 200;

/// Dependent loads in one timed chase (`--chase-length`).
pub const CHASE_LENGTH: u64 = 1024;

/// 1 µs buckets of `--histogram`'s cyclictest histogram
/// (`--histogram-buckets`): 10 ms of range.
pub const HISTOGRAM_BUCKETS: usize = 10_000;
