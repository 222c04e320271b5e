//! The one grammar for every time value, size and CPU list on jitterlab's
//! command line and in its spec files.
//!
//! Times are a decimal number followed by a unit — `ns`, `us` (or `µs`), `ms`,
//! `s`, `m`, `h`, `d` — parsed exactly into integer nanoseconds (design rule 1:
//! no `f64` seconds), so `1.5ms` is 1 500 000 ns and `0.1ns` is an error rather
//! than a silent zero. A bare number is refused — `--period 1000` is ambiguous
//! between cyclictest's microseconds and everyone else's seconds — except a
//! bare `0`, which is zero in every unit (`--scan 0`).
//!
//! Sizes are bytes with an optional binary suffix (`K`/`KiB`, `M`/`MiB`,
//! `G`/`GiB`; `B` for bytes). CPU lists use the kernel's own format
//! (`0-3,5`), as in `/sys/devices/system/cpu/online`, with CPU numbers
//! below [`MAX_CPUS`].
//!
//! This module checks only the grammar; how large a value may be is
//! [`crate::limits`]'s business.
//!
//! The design rules cited here are in `docs/design.md`.

use std::collections::BTreeSet;
use std::fmt;

use thiserror::Error;

/// A grammar error; its text names what was wrong and what would be right.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum UnitError {
    /// The text was empty.
    #[error("empty value; give a number with a unit, e.g. 250us")]
    Empty,
    /// A time without a unit.
    #[error("\"{0}\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. {0}us)")]
    MissingUnit(String),
    /// A time with a unit that is not in the grammar.
    #[error("\"{value}\" has unknown unit \"{unit}\"; use one of ns, us, ms, s, m, h, d")]
    UnknownUnit {
        /// The whole text.
        value: String,
        /// The unit part.
        unit: String,
    },
    /// A negative value where only non-negative ones make sense.
    #[error("\"{0}\" is negative; give a positive value")]
    Negative(String),
    /// Not a decimal number.
    #[error("\"{0}\" is not a number with a unit (e.g. 1ms, 1.5ms, 48h)")]
    NotANumber(String),
    /// More precision than one nanosecond (or one byte).
    #[error("\"{0}\" is finer than the unit's resolution (1 ns for times, 1 byte for sizes)")]
    TooFine(String),
    /// Larger than fits in 64 bits.
    #[error("\"{0}\" is too large")]
    TooLarge(String),
    /// A size with a suffix outside the grammar.
    #[error("\"{value}\" has unknown size suffix \"{unit}\"; use B, K, KiB, M, MiB, G or GiB")]
    UnknownSizeUnit {
        /// The whole text.
        value: String,
        /// The suffix part.
        unit: String,
    },
    /// A malformed CPU list.
    #[error("\"{0}\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online)")]
    BadCpuList(String),
    /// A CPU list naming a CPU number no kernel has.
    #[error("\"{list}\" names CPU {cpu}; CPU numbers stop at {max} (the kernel's largest NR_CPUS)", max = MAX_CPUS - 1)]
    CpuTooLarge {
        /// The whole list.
        list: String,
        /// The first number at or above [`MAX_CPUS`], as written.
        cpu: String,
    },
}

/// CPU numbers a list may name are below this: the largest `NR_CPUS` a
/// Linux kernel is built with (8192), so that a list like `0-4000000000`
/// is refused instead of filling memory.
pub const MAX_CPUS: usize = 8192;

/// Splits `text` into its numeric part and its unit part, rejecting a sign.
fn split_number(text: &str) -> Result<(&str, &str), UnitError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(UnitError::Empty);
    }
    if t.starts_with('-') {
        return Err(UnitError::Negative(t.to_string()));
    }
    let t = t.strip_prefix('+').unwrap_or(t);
    let end = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return Err(UnitError::NotANumber(text.trim().to_string()));
    }
    Ok((num, unit.trim()))
}

/// Multiplies the decimal `num` by `scale` exactly; fails when the result has
/// a fractional part or does not fit in `u64`.
fn scale_decimal(num: &str, scale: u64, whole: &str) -> Result<u64, UnitError> {
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: u128 = if int.is_empty() {
        0
    } else {
        int.parse()
            .map_err(|_| UnitError::TooLarge(whole.to_string()))?
    };
    let mut value = int
        .checked_mul(scale as u128)
        .ok_or_else(|| UnitError::TooLarge(whole.to_string()))?;
    if !frac.is_empty() {
        if frac.len() > 30 {
            return Err(UnitError::TooFine(whole.to_string()));
        }
        let digits: u128 = frac
            .parse()
            .map_err(|_| UnitError::NotANumber(whole.to_string()))?;
        let denom = 10u128.pow(frac.len() as u32);
        let scaled = digits * scale as u128;
        if !scaled.is_multiple_of(denom) {
            return Err(UnitError::TooFine(whole.to_string()));
        }
        value += scaled / denom;
    }
    u64::try_from(value).map_err(|_| UnitError::TooLarge(whole.to_string()))
}

/// Parses a time value (`250us`, `1.5ms`, `48h`) into nanoseconds.
pub fn parse_duration(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text)?;
    let scale: u64 = match unit {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" | "min" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        "d" => 86_400_000_000_000,
        // Zero is zero in every unit: `--scan 0` needs none.
        "" if num.chars().all(|c| c == '0' || c == '.') => 1,
        "" => return Err(UnitError::MissingUnit(text.trim().to_string())),
        other => {
            return Err(UnitError::UnknownUnit {
                value: text.trim().to_string(),
                unit: other.to_string(),
            })
        }
    };
    scale_decimal(num, scale, text.trim())
}

/// Parses a size (`256KiB`, `4M`, `0`, `64B`) into bytes.
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text)?;
    let scale: u64 = match unit {
        "" | "B" | "b" => 1,
        "K" | "k" | "KiB" | "KB" | "kB" => 1 << 10,
        "M" | "MiB" | "MB" => 1 << 20,
        "G" | "GiB" | "GB" => 1 << 30,
        other => {
            return Err(UnitError::UnknownSizeUnit {
                value: text.trim().to_string(),
                unit: other.to_string(),
            })
        }
    };
    scale_decimal(num, scale, text.trim())
}

/// Formats nanoseconds with the largest unit that keeps it readable, the way
/// reports print times: `950ns`, `12.345us`, `4.000ms`, `2.500s`.
pub fn format_ns(ns: i64) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let a = ns.unsigned_abs();
    if a < 1_000 {
        format!("{sign}{a}ns")
    } else if a < 1_000_000 {
        format!("{sign}{}.{:03}us", a / 1_000, a % 1_000)
    } else if a < 1_000_000_000 {
        format!("{sign}{}.{:03}ms", a / 1_000_000, (a % 1_000_000) / 1_000)
    } else {
        format!(
            "{sign}{}.{:03}s",
            a / 1_000_000_000,
            (a % 1_000_000_000) / 1_000_000
        )
    }
}

/// Formats a duration the way a user would type it back (`1ms`, `250us`,
/// `48h`): the largest unit that divides it exactly.
pub fn format_duration_exact(ns: u64) -> String {
    const UNITS: [(u64, &str); 7] = [
        (86_400_000_000_000, "d"),
        (3_600_000_000_000, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ];
    if ns == 0 {
        return "0ns".into();
    }
    for (scale, unit) in UNITS {
        if ns.is_multiple_of(scale) {
            return format!("{}{unit}", ns / scale);
        }
    }
    unreachable!("1 divides everything")
}

/// A set of CPU numbers, kept sorted.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct CpuList(pub BTreeSet<usize>);

impl CpuList {
    /// Parses the kernel's list format (`0-3,5`, `1`, empty for none).
    pub fn parse(text: &str) -> Result<CpuList, UnitError> {
        let bad = || UnitError::BadCpuList(text.trim().to_string());
        let mut set = BTreeSet::new();
        let t = text.trim();
        if t.is_empty() {
            return Ok(CpuList(set));
        }
        for part in t.split(',') {
            let part = part.trim();
            let (a, b) = match part.split_once('-') {
                Some((a, b)) => (a, b),
                None => (part, part),
            };
            let number = |n: &str| -> Result<usize, UnitError> {
                let n = n.trim();
                if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) {
                    return Err(bad());
                }
                match n.parse::<usize>() {
                    Ok(c) if c < MAX_CPUS => Ok(c),
                    _ => Err(UnitError::CpuTooLarge {
                        list: text.trim().to_string(),
                        cpu: n.to_string(),
                    }),
                }
            };
            let (a, b) = (number(a)?, number(b)?);
            if a > b {
                return Err(bad());
            }
            set.extend(a..=b);
        }
        Ok(CpuList(set))
    }

    /// True when `cpu` is in the list.
    pub fn contains(&self, cpu: usize) -> bool {
        self.0.contains(&cpu)
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0.iter().copied()
    }

    /// Number of CPUs in the list.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the list names no CPU.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for CpuList {
    /// Writes the kernel's compact format: `0-3,5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v: Vec<usize> = self.iter().collect();
        let mut i = 0;
        let mut first = true;
        while i < v.len() {
            let mut j = i;
            while j + 1 < v.len() && v[j + 1] == v[j] + 1 {
                j += 1;
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if i == j {
                write!(f, "{}", v[i])?;
            } else {
                write!(f, "{}-{}", v[i], v[j])?;
            }
            i = j + 1;
        }
        Ok(())
    }
}

impl FromIterator<usize> for CpuList {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        CpuList(iter.into_iter().collect())
    }
}

/// Wall ns since the Unix epoch as UTC to the second:
/// `2026-11-21T12:00:00Z`; to the millisecond with `ms`.
pub fn format_utc(ns: i64, ms: bool) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ns))
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if ms {
        s.push_str(&format!(".{:03}", t.millisecond()));
    }
    s.push('Z');
    s
}

/// A stored RFC 3339 time to the second (`…T12:00:00.123456789Z` →
/// `…T12:00:00Z`), so that listings' columns line up.
pub fn to_second(t: &str) -> String {
    match (t.find('.'), t.rfind(['Z', '+', '-'])) {
        (Some(dot), Some(zone)) if zone > dot => format!("{}{}", &t[..dot], &t[zone..]),
        _ => t.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_exactly_in_every_unit() {
        assert_eq!(parse_duration("1ns"), Ok(1));
        assert_eq!(parse_duration("250us"), Ok(250_000));
        assert_eq!(parse_duration("250µs"), Ok(250_000));
        assert_eq!(parse_duration("1ms"), Ok(1_000_000));
        assert_eq!(parse_duration("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration(".5s"), Ok(500_000_000));
        assert_eq!(parse_duration("2m"), Ok(120_000_000_000));
        assert_eq!(parse_duration("48h"), Ok(172_800_000_000_000));
        assert_eq!(parse_duration("1d"), Ok(86_400_000_000_000));
        assert_eq!(parse_duration(" 4ms "), Ok(4_000_000));
        assert_eq!(parse_duration("0ms"), Ok(0));
        assert_eq!(parse_duration("0"), Ok(0));
    }

    #[test]
    fn bad_durations_name_the_fix() {
        assert_eq!(
            parse_duration("10x").unwrap_err().to_string(),
            "\"10x\" has unknown unit \"x\"; use one of ns, us, ms, s, m, h, d"
        );
        assert_eq!(
            parse_duration("1000").unwrap_err().to_string(),
            "\"1000\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. 1000us)"
        );
        assert_eq!(
            parse_duration("-1ms").unwrap_err(),
            UnitError::Negative("-1ms".into())
        );
        assert_eq!(
            parse_duration("0.5ns").unwrap_err(),
            UnitError::TooFine("0.5ns".into())
        );
        assert_eq!(
            parse_duration("ms").unwrap_err(),
            UnitError::NotANumber("ms".into())
        );
        assert_eq!(
            parse_duration("1.2.3ms").unwrap_err(),
            UnitError::NotANumber("1.2.3ms".into())
        );
        assert_eq!(
            parse_duration("99999999999d").unwrap_err(),
            UnitError::TooLarge("99999999999d".into())
        );
        assert_eq!(parse_duration("").unwrap_err(), UnitError::Empty);
    }

    #[test]
    fn sizes_parse_binary_suffixes() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("64B"), Ok(64));
        assert_eq!(parse_size("256KiB"), Ok(262_144));
        assert_eq!(parse_size("256K"), Ok(262_144));
        assert_eq!(parse_size("1.5MiB"), Ok(1_572_864));
        assert_eq!(parse_size("2G"), Ok(2 << 30));
        assert_eq!(
            parse_size("3parsecs").unwrap_err().to_string(),
            "\"3parsecs\" has unknown size suffix \"parsecs\"; use B, K, KiB, M, MiB, G or GiB"
        );
    }

    #[test]
    fn format_ns_picks_readable_unit() {
        assert_eq!(format_ns(950), "950ns");
        assert_eq!(format_ns(12_345), "12.345us");
        assert_eq!(format_ns(-12_345), "-12.345us");
        assert_eq!(format_ns(4_000_000), "4.000ms");
        assert_eq!(format_ns(2_500_000_000), "2.500s");
        assert_eq!(format_duration_exact(250_000), "250us");
        assert_eq!(format_duration_exact(172_800_000_000_000), "2d");
        assert_eq!(format_duration_exact(1_500_000), "1500us");
    }

    #[test]
    fn cpu_lists_round_trip_kernel_format() {
        let l = CpuList::parse("0-3,5,7-8").unwrap();
        assert_eq!(l.iter().collect::<Vec<_>>(), vec![0, 1, 2, 3, 5, 7, 8]);
        assert_eq!(l.to_string(), "0-3,5,7-8");
        assert_eq!(CpuList::parse("1,3").unwrap().to_string(), "1,3");
        assert_eq!(CpuList::parse("0-1\n").unwrap().len(), 2);
        assert!(CpuList::parse("").unwrap().is_empty());
        assert_eq!(
            CpuList::parse("3-1").unwrap_err().to_string(),
            "\"3-1\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online)"
        );
        assert!(CpuList::parse("a").is_err());
        assert_eq!(CpuList::parse("0-8191").unwrap().len(), 8192);
        assert_eq!(
            CpuList::parse("0-4000000000").unwrap_err().to_string(),
            "\"0-4000000000\" names CPU 4000000000; CPU numbers stop at 8191 (the kernel's largest NR_CPUS)"
        );
        assert_eq!(
            CpuList::parse("99999999999999999999999").unwrap_err().to_string(),
            "\"99999999999999999999999\" names CPU 99999999999999999999999; CPU numbers stop at 8191 (the kernel's largest NR_CPUS)"
        );
        assert_eq!(
            CpuList::parse("+1").unwrap_err(),
            UnitError::BadCpuList("+1".into())
        );
    }
}
