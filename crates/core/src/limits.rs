//! The upper (and a few lower) bounds of every size, count and time that
//! jitterlab takes from a user, checked when the value is parsed — on the
//! command line (`src/cli.rs`) and in a spec ([`crate::spec`]) alike, with
//! the same constant and the same words — so that a value too large for
//! the machine is bad input (exit 2, one line naming the flag or key and
//! the limit) instead of an allocation that aborts the process, or a run
//! that grows without bound, after the machine's settings were changed.
//!
//! Why each bound is where it is:
//!
//! - **Times** ([`MAX_TIME_NS`], 7 days): the longest run or cell, and so
//!   also the largest period, window, threshold or limit that can mean
//!   anything. It keeps every sum of times in a `u64` of nanoseconds
//!   (design rule 1) far from overflow.
//! - **Periods** ([`MIN_PERIOD_NS`], 10 µs): the shortest period or
//!   interval of the cyclic, wakeup, response and ctxswitch probes (and of
//!   a spec's `period`). One cycle costs the probe a clock read, an
//!   absolute sleep, a wake-up through the scheduler and the recording of
//!   the sample — a few microseconds on a PC, more in a VM — so below
//!   10 µs the probe measures mostly itself, and a SCHED_FIFO thread that
//!   is always runnable starves the CPU's kernel threads (cyclictest's
//!   own documentation warns about intervals that small). A ctxswitch
//!   interval of 0 (back to back) stays allowed: it is a different mode,
//!   not a short period.
//! - **Windows** ([`MIN_WINDOW_NS`], 1 ms; [`MAX_WINDOW_ROWS`]): every
//!   window row of a run goes to the results database as it is drained
//!   (none is kept in memory: BENCHMARKS.md "Memory of long runs"), so a
//!   run or cell may make at most a million rows over all its threads
//!   (`duration ÷ window × threads`), which keeps a mistyped `--window`
//!   from filling a disk. `jitterlab monitor` has no duration: its
//!   retention bounds its rows instead.
//! - **Memory** ([`MAX_MEMORY_BYTES`], 4 GiB, and half of the machine's
//!   `MemTotal`, checked by the runner where `/proc/meminfo` can be read):
//!   the cyclic probe's working set and the chase buffer are allocated,
//!   touched and locked (`mlockall`), so they must leave the machine — and
//!   the neighbours — room to run.
//! - **Counts** allocated per thread: outliers ([`MAX_OUTLIERS`]), 1 µs
//!   histogram buckets ([`MAX_HISTOGRAM_BUCKETS`], 100 ms of range),
//!   chase samples ([`MAX_SAMPLES`]); and counts that only cost time:
//!   chase iterations ([`MAX_ITERATIONS`]) and chase length
//!   ([`MAX_CHASE_LENGTH`]), cycles ([`MAX_CYCLES`]: 7 days of 10 µs).
//! - **Benches**: repetitions ([`MAX_REPETITIONS`]), cells in all
//!   ([`MAX_CELLS`]: every cell is planned, printed and stored before the
//!   first one starts), neighbours per scenario ([`MAX_NEIGHBOURS`]) and
//!   the spec file itself ([`MAX_SPEC_BYTES`]).
//!
//! The messages are the same wherever the value came from:
//! `100000000 is more than 10000, the most outliers kept per metric`.
//!
//! The design rules cited here are in `docs/design.md`.

use crate::units::format_duration_exact;

/// The longest time jitterlab takes: 7 days.
pub const MAX_TIME_NS: u64 = 7 * 86_400 * 1_000_000_000;
/// The shortest period or interval of a periodic or event probe: 10 µs.
pub const MIN_PERIOD_NS: u64 = 10_000;
/// The shortest window: 1 ms.
pub const MIN_WINDOW_NS: u64 = 1_000_000;
/// The most window rows one run (or one bench cell) keeps, over all its
/// threads.
pub const MAX_WINDOW_ROWS: u64 = 1_000_000;
/// The largest working set or chase buffer: 4 GiB.
pub const MAX_MEMORY_BYTES: u64 = 4 << 30;
/// The most outliers kept per metric (`--outliers`, a probe's `outliers`).
pub const MAX_OUTLIERS: u64 = 10_000;
/// The most 1 µs buckets of `--histogram` (100 ms of range).
pub const MAX_HISTOGRAM_BUCKETS: u64 = 100_000;
/// The most samples of one chase run (`--samples`, a probe's `samples`).
pub const MAX_SAMPLES: u64 = crate::chase::MAX_SAMPLES;
/// The most timed chases per sample (`--iterations`, `iterations`).
pub const MAX_ITERATIONS: u64 = 1_000_000;
/// The most dependent loads per timed chase (`--chase-length`).
pub const MAX_CHASE_LENGTH: u64 = 1 << 20;
/// The most cycles (or events) of one run: 7 days of 10 µs periods.
pub const MAX_CYCLES: u64 = MAX_TIME_NS / MIN_PERIOD_NS;
/// The most repetitions of a bench (`--repetitions`, `repetitions`).
pub const MAX_REPETITIONS: u64 = 1_000;
/// The most cells of a bench, repetitions included.
pub const MAX_CELLS: u64 = 10_000;
/// The most neighbours of one scenario (`[[scenario.neighbour]]`).
pub const MAX_NEIGHBOURS: usize = 64;
/// The largest spec file jitterlab reads: 1 MiB.
pub const MAX_SPEC_BYTES: u64 = 1 << 20;

/// A bounded count: its name in messages and its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Count {
    /// The smallest value.
    pub min: u64,
    /// The largest value.
    pub max: u64,
    /// What the maximum is, completing "more than MAX, the most …".
    pub most: &'static str,
}

/// `--outliers`, `outliers`.
pub const OUTLIERS: Count = Count {
    min: 0,
    max: MAX_OUTLIERS,
    most: "outliers kept per metric",
};
/// `--histogram-buckets`.
pub const HISTOGRAM_BUCKETS: Count = Count {
    min: 1,
    max: MAX_HISTOGRAM_BUCKETS,
    most: "1us histogram buckets (100ms of range)",
};
/// `--samples`, `samples`.
pub const SAMPLES: Count = Count {
    min: 1,
    max: MAX_SAMPLES,
    most: "samples a chase keeps",
};
/// `--iterations`, `iterations`.
pub const ITERATIONS: Count = Count {
    min: 1,
    max: MAX_ITERATIONS,
    most: "timed chases per sample",
};
/// `--chase-length`.
pub const CHASE_LENGTH: Count = Count {
    min: 1,
    max: MAX_CHASE_LENGTH,
    most: "dependent loads per timed chase",
};
/// `--cycles`.
pub const CYCLES: Count = Count {
    min: 1,
    max: MAX_CYCLES,
    most: "cycles of one run (7d of 10us periods)",
};
/// `--repetitions`, `repetitions`.
pub const REPETITIONS: Count = Count {
    min: 1,
    max: MAX_REPETITIONS,
    most: "repetitions of a bench",
};

impl Count {
    /// `n` when it is in range, else the message: `N is more than MAX,
    /// the most …` or `N is less than MIN`.
    pub fn check(&self, n: u64) -> Result<u64, String> {
        if n > self.max {
            Err(format!(
                "{n} is more than {}, the most {}",
                self.max, self.most
            ))
        } else if n < self.min {
            Err(format!("{n} is less than {}", self.min))
        } else {
            Ok(n)
        }
    }

    /// [`Count::check`] for a signed value (a TOML integer).
    pub fn check_signed(&self, n: i64) -> Result<u64, String> {
        match u64::try_from(n) {
            Ok(n) => self.check(n),
            Err(_) => Err(format!(
                "{n} is negative; give {} to {}",
                self.min, self.max
            )),
        }
    }

    /// Parses a decimal count and checks it, with the same messages as
    /// the command line's other grammar errors.
    pub fn parse(&self, text: &str) -> Result<u64, String> {
        let t = text.trim();
        if t.is_empty() {
            return Err(format!(
                "empty value; give a whole number from {} to {}",
                self.min, self.max
            ));
        }
        if !t.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "\"{t}\" is not a whole number; give one from {} to {}",
                self.min, self.max
            ));
        }
        match t.parse::<u64>() {
            Ok(n) => self.check(n),
            // Only digits: too many of them.
            Err(_) => Err(format!(
                "{t} is more than {}, the most {}",
                self.max, self.most
            )),
        }
    }
}

/// `ns` when it is at most [`MAX_TIME_NS`], else `TEXT is more than 7d,
/// the longest time jitterlab takes`.
pub fn check_time(ns: u64) -> Result<u64, String> {
    if ns > MAX_TIME_NS {
        Err(format!(
            "{} is more than {}, the longest time jitterlab takes",
            format_duration_exact(ns),
            format_duration_exact(MAX_TIME_NS)
        ))
    } else {
        Ok(ns)
    }
}

/// A period or interval: 0 passes (the caller says what 0 means), else at
/// least [`MIN_PERIOD_NS`] (see the module doc for why).
pub fn check_period(ns: u64) -> Result<u64, String> {
    if ns != 0 && ns < MIN_PERIOD_NS {
        Err(format!(
            "{} is shorter than {}, the shortest period jitterlab measures (below it the probe measures its own overhead)",
            format_duration_exact(ns),
            format_duration_exact(MIN_PERIOD_NS)
        ))
    } else {
        Ok(ns)
    }
}

/// A window: 0 passes (the caller refuses it), else at least
/// [`MIN_WINDOW_NS`].
pub fn check_window(ns: u64) -> Result<u64, String> {
    if ns != 0 && ns < MIN_WINDOW_NS {
        Err(format!(
            "{} is shorter than {}, the shortest window",
            format_duration_exact(ns),
            format_duration_exact(MIN_WINDOW_NS)
        ))
    } else {
        Ok(ns)
    }
}

/// A working set or buffer: at most [`MAX_MEMORY_BYTES`].
pub fn check_memory(bytes: u64) -> Result<u64, String> {
    if bytes > MAX_MEMORY_BYTES {
        Err(format!(
            "{} is more than {}, the largest buffer jitterlab allocates",
            format_size(bytes),
            format_size(MAX_MEMORY_BYTES)
        ))
    } else {
        Ok(bytes)
    }
}

/// The window rows a run of `duration_ns` with windows of `window_ns` on
/// `threads` threads makes: `ceil(duration ÷ window) × threads`.
pub fn window_rows(duration_ns: u64, window_ns: u64, threads: u64) -> u64 {
    duration_ns
        .div_ceil(window_ns.max(1))
        .saturating_mul(threads)
}

/// Refuses more than [`MAX_WINDOW_ROWS`] window rows: the message says how
/// many the run would make and the shortest window that fits.
pub fn check_window_rows(duration_ns: u64, window_ns: u64, threads: u64) -> Result<(), String> {
    let rows = window_rows(duration_ns, window_ns, threads);
    if rows <= MAX_WINDOW_ROWS {
        return Ok(());
    }
    // The shortest whole-millisecond window that fits.
    let per_thread = MAX_WINDOW_ROWS / threads.max(1);
    let fits = duration_ns
        .div_ceil(per_thread.max(1))
        .div_ceil(1_000_000)
        .saturating_mul(1_000_000);
    let threads_text = if threads == 1 {
        String::new()
    } else {
        format!(" over {threads} threads")
    };
    Err(format!(
        "{} in windows of {} makes {rows} window rows{threads_text}, more than {MAX_WINDOW_ROWS}, the most one run keeps; use windows of at least {} or a shorter duration",
        format_duration_exact(duration_ns),
        format_duration_exact(window_ns),
        format_duration_exact(fits)
    ))
}

/// A size as the size grammar writes it: `4GiB`, `512MiB`, `64KiB`, `100B`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (scale, unit) in UNITS {
        if bytes >= scale && bytes.is_multiple_of(scale) {
            return format!("{}{unit}", bytes / scale);
        }
    }
    format!("{bytes}B")
}

/// The `MemTotal` of a `/proc/meminfo` text, in bytes; `None` when the
/// line is missing or not in the kernel's format (`MemTotal: 24684092 kB`).
pub fn mem_total_bytes(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let mut words = line["MemTotal:".len()..].split_whitespace();
    let kib: u64 = words.next()?.parse().ok()?;
    match words.next() {
        Some("kB") => kib.checked_mul(1024),
        _ => None,
    }
}

/// Refuses a buffer of `bytes` on a machine with `mem_total` bytes of
/// memory when it is more than half of it. The message starts with the
/// size; the caller puts the flag or key before it.
pub fn check_memory_of_machine(bytes: u64, mem_total: u64) -> Result<(), String> {
    if bytes <= mem_total / 2 {
        return Ok(());
    }
    Err(format!(
        "{} is more than half of this machine's memory (MemTotal {} kB in /proc/meminfo): the probe locks what it allocates (mlockall) and the neighbours need the rest; give at most {}",
        format_size(bytes),
        mem_total / 1024,
        format_size((mem_total / 2) >> 20 << 20)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_name_their_limit() {
        assert_eq!(
            OUTLIERS.parse("100000000"),
            Err("100000000 is more than 10000, the most outliers kept per metric".into())
        );
        assert_eq!(OUTLIERS.parse("10000"), Ok(10_000));
        assert_eq!(OUTLIERS.parse("0"), Ok(0));
        assert_eq!(
            HISTOGRAM_BUCKETS.parse("99999999999"),
            Err(
                "99999999999 is more than 100000, the most 1us histogram buckets (100ms of range)"
                    .into()
            )
        );
        assert_eq!(
            REPETITIONS.parse("1000000"),
            Err("1000000 is more than 1000, the most repetitions of a bench".into())
        );
        assert_eq!(
            REPETITIONS.parse("99999999999999999999999"),
            Err(
                "99999999999999999999999 is more than 1000, the most repetitions of a bench".into()
            )
        );
        assert_eq!(
            REPETITIONS.parse("-1"),
            Err("\"-1\" is not a whole number; give one from 1 to 1000".into())
        );
        assert_eq!(REPETITIONS.check(0), Err("0 is less than 1".into()));
        assert_eq!(
            OUTLIERS.check_signed(-1),
            Err("-1 is negative; give 0 to 10000".into())
        );
        assert_eq!(
            CYCLES.check(MAX_CYCLES + 1),
            Err("60480000001 is more than 60480000000, the most cycles of one run (7d of 10us periods)".into())
        );
    }

    #[test]
    fn times_periods_and_windows_have_bounds() {
        assert_eq!(check_time(MAX_TIME_NS), Ok(MAX_TIME_NS));
        assert_eq!(
            check_time(8 * 86_400_000_000_000),
            Err("8d is more than 7d, the longest time jitterlab takes".into())
        );
        assert_eq!(check_period(0), Ok(0));
        assert_eq!(check_period(10_000), Ok(10_000));
        assert_eq!(
            check_period(1),
            Err("1ns is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)".into())
        );
        assert_eq!(check_window(0), Ok(0));
        assert_eq!(
            check_window(999_999),
            Err("999999ns is shorter than 1ms, the shortest window".into())
        );
    }

    #[test]
    fn window_rows_are_bounded_with_the_window_that_fits() {
        assert_eq!(window_rows(10_000_000_000, 1_000_000_000, 1), 10);
        assert_eq!(window_rows(1_500_000_000, 1_000_000_000, 2), 4);
        assert_eq!(check_window_rows(MAX_TIME_NS, 1_000_000_000, 1), Ok(()));
        assert_eq!(
            check_window_rows(MAX_TIME_NS, 1_000_000_000, 2),
            Err("7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration".into())
        );
        assert_eq!(
            check_window_rows(86_400_000_000_000, 1_000_000, 1),
            Err("1d in windows of 1ms makes 86400000 window rows, more than 1000000, the most one run keeps; use windows of at least 87ms or a shorter duration".into())
        );
        // The suggested window does fit.
        assert_eq!(check_window_rows(MAX_TIME_NS, 1_210_000_000, 2), Ok(()));
        assert_eq!(check_window_rows(86_400_000_000_000, 87_000_000, 1), Ok(()));
    }

    #[test]
    fn memory_is_bounded_statically_and_by_the_machine() {
        assert_eq!(check_memory(4 << 30), Ok(4 << 30));
        assert_eq!(
            check_memory(1000 << 30),
            Err("1000GiB is more than 4GiB, the largest buffer jitterlab allocates".into())
        );
        let meminfo = "MemTotal:        1048576 kB\nMemFree:          524288 kB\n";
        assert_eq!(mem_total_bytes(meminfo), Some(1 << 30));
        assert_eq!(mem_total_bytes("MemFree: 1 kB\n"), None);
        assert_eq!(mem_total_bytes("MemTotal: lots\n"), None);
        assert_eq!(check_memory_of_machine(512 << 20, 1 << 30), Ok(()));
        assert_eq!(
            check_memory_of_machine(768 << 20, 1 << 30),
            Err("768MiB is more than half of this machine's memory (MemTotal 1048576 kB in /proc/meminfo): the probe locks what it allocates (mlockall) and the neighbours need the rest; give at most 512MiB".into())
        );
    }

    #[test]
    fn sizes_are_written_as_typed() {
        assert_eq!(format_size(4 << 30), "4GiB");
        assert_eq!(format_size(1536 << 20), "1536MiB");
        assert_eq!(format_size(64 << 10), "64KiB");
        assert_eq!(format_size(100), "100B");
        assert_eq!(format_size(0), "0B");
    }
}
