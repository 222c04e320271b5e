//! The value parsers of the command line's flags: every time through the one
//! unit grammar of `jitterlab_core::units`, every size through its size
//! grammar, every CPU list through the kernel's list format, each bounded
//! by the constants of `jitterlab_core::limits` (the words a spec's keys
//! use too). The kinds' `run` flags reach them through their value kinds
//! (`crate::probe::flags::ValueKind`, turned into arguments in
//! [`super::flags`]); the defaults `--help` shows are written from the
//! constants of `jitterlab_core::defaults` (`crate::probe::flags::time_text`).

use jitterlab_core::limits::{self, Count};
use jitterlab_core::units::{parse_duration, parse_size, CpuList};

/// A time: the unit grammar, at most 7d.
pub fn duration(s: &str) -> Result<u64, String> {
    limits::check_time(parse_duration(s).map_err(|e| e.to_string())?)
}

/// A period or interval: a time of at least 10us (0 is left to the
/// runner, which says what it means for the probe).
pub fn period(s: &str) -> Result<u64, String> {
    limits::check_period(duration(s)?)
}

/// A POWERLINK cycle time of a load table: a period, not 0.
pub fn cycle_time(s: &str) -> Result<u64, String> {
    match period(s)? {
        0 => Err("a cycle time must be longer than 0".into()),
        ns => Ok(ns),
    }
}

/// A window: a time of at least 1ms (0 is left to the runner).
pub fn window(s: &str) -> Result<u64, String> {
    limits::check_window(duration(s)?)
}

/// A working set or buffer: the size grammar, at most 4GiB.
pub fn memory(s: &str) -> Result<u64, String> {
    limits::check_memory(parse_size(s).map_err(|e| e.to_string())?)
}

/// A count up to `bound`'s maximum; one below its minimum is left to the
/// runner, whose message names the flag (`--cycles must be at least 1`).
pub fn at_most(s: &str, bound: &Count) -> Result<u64, String> {
    match bound.parse(s) {
        Ok(n) => Ok(n),
        Err(e) => match s.trim().parse::<u64>() {
            Ok(n) if n < bound.min => Ok(n),
            _ => Err(e),
        },
    }
}

/// `--outliers`: a count, at most [`limits::OUTLIERS`].
pub fn outliers(s: &str) -> Result<usize, String> {
    at_most(s, &limits::OUTLIERS).map(|n| n as usize)
}

/// `--histogram-buckets`: a count, at most [`limits::HISTOGRAM_BUCKETS`].
pub fn histogram_buckets(s: &str) -> Result<usize, String> {
    at_most(s, &limits::HISTOGRAM_BUCKETS).map(|n| n as usize)
}

/// `--repetitions`: a count, at most [`limits::REPETITIONS`].
pub fn repetitions(s: &str) -> Result<u32, String> {
    at_most(s, &limits::REPETITIONS).map(|n| n as u32)
}

/// A CPU list in the kernel's format, not empty.
pub fn cpu_list(s: &str) -> Result<CpuList, String> {
    let l = CpuList::parse(s).map_err(|e| e.to_string())?;
    if l.is_empty() {
        return Err("the CPU list is empty; name at least one CPU, e.g. 1".into());
    }
    Ok(l)
}
