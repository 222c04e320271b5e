//! Number formatting shared by the tables, the comparison, the
//! explanations and every kind's own tables: integer nanoseconds, tenths
//! of a percent and CPU cycles as a reader sees them (microseconds with
//! one decimal rounded half away from zero, spreads `lo–hi`, ratios of
//! spreads end by end), so that one figure prints the same in every table.

/// The smallest and largest value of a figure over a row's repetitions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Spread {
    /// Smallest.
    pub lo: i64,
    /// Largest.
    pub hi: i64,
}

/// `a / b` rounded to the nearest integer, halves away from zero; `b != 0`.
pub(crate) fn round_div(a: i128, b: i128) -> i128 {
    let q = a / b;
    let r = a % b;
    if 2 * r.abs() >= b.abs() {
        q + a.signum() * b.signum()
    } else {
        q
    }
}

/// Microseconds with one decimal, rounded half away from zero, no unit:
/// `57_949` ns → `57.9`, `-185_050` → `-185.1`.
pub(crate) fn us1(ns: i64) -> String {
    let tenths = round_div(ns as i128, 100);
    let sign = if tenths < 0 { "-" } else { "" };
    let a = tenths.unsigned_abs();
    format!("{sign}{}.{}", a / 10, a % 10)
}

/// A time spread in µs: `41.2–57.9 µs`, or one value when both ends print
/// the same.
pub(crate) fn time_text(s: Spread) -> String {
    let (lo, hi) = (us1(s.lo), us1(s.hi));
    if lo == hi {
        format!("{lo} µs")
    } else {
        format!("{lo}–{hi} µs")
    }
}

/// A spread of CPU cycles as plain integers: `9012–9530`, or `18015`.
pub(crate) fn cycles_text(s: Spread) -> String {
    if s.lo == s.hi {
        s.lo.to_string()
    } else {
        format!("{}–{}", s.lo, s.hi)
    }
}

/// Tenths of a percent with one decimal: `625` → `62.5`.
pub(crate) fn pct1(tenths: i64) -> String {
    let sign = if tenths < 0 { "-" } else { "" };
    let a = tenths.unsigned_abs();
    format!("{sign}{}.{}", a / 10, a % 10)
}

/// A spread of tenths of a percent: `36.8–40.0%`, or `100.0%`.
pub(crate) fn pct1_text(s: Spread) -> String {
    let (lo, hi) = (pct1(s.lo), pct1(s.hi));
    if lo == hi {
        format!("{lo}%")
    } else {
        format!("{lo}–{hi}%")
    }
}

/// Ten-thousandths of a percent with four decimals: `133` → `0.0133`.
pub(crate) fn pct4(x: i64) -> String {
    let sign = if x < 0 { "-" } else { "" };
    let a = x.unsigned_abs();
    format!("{sign}{}.{:04}", a / 10_000, a % 10_000)
}

/// A spread of ten-thousandths of a percent: `0.0133–0.0200`.
pub(crate) fn pct4_text(s: Spread) -> String {
    let (lo, hi) = (pct4(s.lo), pct4(s.hi));
    if lo == hi {
        lo
    } else {
        format!("{lo}–{hi}")
    }
}

/// A threshold as a column header says it: whole µs without decimals
/// (`100 µs`), else one decimal.
pub(crate) fn threshold_text(ns: u64) -> String {
    if ns.is_multiple_of(1_000) {
        format!("{} µs", ns / 1_000)
    } else {
        format!("{} µs", us1(i64::try_from(ns).unwrap_or(i64::MAX)))
    }
}

/// `v ÷ base × 100` in tenths of a percent, rounded; `None` for a zero base.
pub(crate) fn ratio_tenths(v: i64, base: i64) -> Option<i64> {
    (base != 0).then(|| round_div(v as i128 * 1_000, base as i128) as i64)
}

/// The ratio of two spreads, end by end (minimum ÷ minimum, maximum ÷
/// maximum), ordered lowest first; `None` when either base end is 0.
pub(crate) fn ratio_spread(v: Spread, base: Spread) -> Option<Spread> {
    let a = ratio_tenths(v.lo, base.lo)?;
    let b = ratio_tenths(v.hi, base.hi)?;
    Some(Spread {
        lo: a.min(b),
        hi: a.max(b),
    })
}
