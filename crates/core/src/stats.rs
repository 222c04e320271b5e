//! Per-metric statistics: exact moments plus an HDR histogram for quantiles.
//!
//! Every sample of a metric goes through [`MetricStats::record`], which does a
//! fixed amount of arithmetic and touches preallocated memory only, so it may
//! run in a probe's hot loop (design rule 2).
//!
//! * **Exact part** — count, min, max, sum (`i128`) and sum of squares
//!   (`u128`), and the number of samples over the user's threshold. Mean and
//!   standard deviation come from these, so they are exact to the nanosecond
//!   whatever the histogram's resolution.
//! * **Histogram part** — an HDR histogram from 1 ns to 100 s at 3 significant
//!   digits (values are exact below 2048 ns, within 0.1 % above), used for the
//!   median and the tail quantiles. Values past the histogram's last bucket
//!   (about 137 s) are counted as 100 s there (the exact max still holds them). The hot loop counts into
//!   a [`LogHistogram`] (same layout, counts only); reports convert it to an
//!   `hdrhistogram::Histogram` once ([`MetricStats::histograms`]).
//! * **Signed metrics** (periodic jitter is negative when a cycle starts early
//!   relative to the previous one) use *two* histograms: one of the values
//!   `>= 0`, one of the magnitudes of the values `< 0`. A quantile is found by
//!   rank across both: the most negative values come first. We chose two
//!   histograms over an offset because an offset would have to be as large as
//!   the worst negative value, and cost the positive side its low-end precision.
//!
//! Quantiles use the nearest-rank definition: the q-quantile of n samples is
//! the sample of rank `ceil(q·n)` (1-based) — the same rule HdrHistogram and
//! cyclictest's histogram readers use — and report the highest value that the
//! histogram bucket holding that rank can stand for (exact below 2048 ns).
//!
//! The design rules cited here are in `docs/design.md`.

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::hist::LogHistogram;

pub use crate::hist::{HIST_MAX_NS, HIST_SIGFIG};

/// The exact running moments of a metric; cheap enough for a window too.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Moments {
    /// Samples seen.
    pub count: u64,
    /// Smallest sample (`i64::MAX` while empty).
    pub min: i64,
    /// Largest sample (`i64::MIN` while empty).
    pub max: i64,
    /// Sum of samples.
    pub sum: i128,
    /// Sum of squared samples.
    pub sum_sq: u128,
}

impl Default for Moments {
    fn default() -> Self {
        Moments {
            count: 0,
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            sum_sq: 0,
        }
    }
}

impl Moments {
    /// Adds one sample.
    #[inline(always)]
    pub fn add(&mut self, v: i64) {
        self.count += 1;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        self.sum += v as i128;
        let a = v.unsigned_abs() as u128;
        self.sum_sq += a * a;
    }

    /// Adds every sample of `other`.
    pub fn merge(&mut self, other: &Moments) {
        self.count += other.count;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
    }

    /// Mean, rounded to the nearest nanosecond; `None` while empty.
    pub fn mean(&self) -> Option<i64> {
        (self.count > 0).then(|| div_round(self.sum, self.count as i128) as i64)
    }

    /// Population standard deviation, rounded to the nearest nanosecond.
    pub fn stddev(&self) -> Option<i64> {
        if self.count == 0 {
            return None;
        }
        // n·Σx² − (Σx)² is exact in integers; only the final root is not.
        let n = self.count as u128;
        let s = self.sum.unsigned_abs();
        let num = n
            .checked_mul(self.sum_sq)
            .map(|ns| ns.saturating_sub(s * s));
        let var = match num {
            Some(num) => num as f64 / (n * n) as f64,
            // Only with absurd sample counts × magnitudes: fall back to floats.
            None => {
                let mean = self.sum as f64 / n as f64;
                self.sum_sq as f64 / n as f64 - mean * mean
            }
        };
        Some(var.max(0.0).sqrt().round() as i64)
    }
}

/// `a / b` rounded to the nearest integer, halves away from zero.
pub(crate) fn div_round(a: i128, b: i128) -> i128 {
    let q = a / b;
    let r = a % b;
    if 2 * r.abs() >= b {
        q + a.signum()
    } else {
        q
    }
}

/// Everything jitterlab keeps about one metric of one thread over a run.
#[derive(Debug, Clone)]
pub struct MetricStats {
    /// Exact moments.
    pub moments: Moments,
    /// Samples whose magnitude exceeds the threshold.
    pub over_threshold: u64,
    threshold: Option<u64>,
    positive: LogHistogram,
    negative: Option<LogHistogram>,
}

impl MetricStats {
    /// Preallocates the histograms. `signed` metrics get the negative-side
    /// histogram; `threshold_ns`, when given, is compared with each sample's
    /// magnitude (a period or an execution time has no meaningful share over
    /// a latency threshold, so those metrics get none).
    pub fn new(signed: bool, threshold_ns: Option<u64>) -> MetricStats {
        // LogHistogram::new touches every page, so no fault hits the loop.
        MetricStats {
            moments: Moments::default(),
            over_threshold: 0,
            threshold: threshold_ns,
            positive: LogHistogram::new(),
            negative: signed.then(LogHistogram::new),
        }
    }

    /// True when this metric keeps negative values.
    pub fn is_signed(&self) -> bool {
        self.negative.is_some()
    }

    /// The threshold in nanoseconds, if this metric has one.
    pub fn threshold(&self) -> Option<u64> {
        self.threshold
    }

    /// Records one sample. No allocation, no system call.
    ///
    /// A negative sample of an unsigned metric is a clock bug (the kernel never
    /// wakes a sleeper before its deadline); it is counted in the histogram as 0
    /// and kept exactly in the moments, so the report shows it.
    #[inline(always)]
    pub fn record(&mut self, v: i64) {
        self.moments.add(v);
        if v.unsigned_abs() > self.threshold.unwrap_or(u64::MAX) {
            self.over_threshold += 1;
        }
        if v >= 0 {
            self.positive.record(v as u64);
        } else if let Some(n) = self.negative.as_mut() {
            n.record(v.unsigned_abs());
        } else {
            self.positive.record(0);
        }
    }

    /// Adds every sample of `other` (to combine threads).
    pub fn merge(&mut self, other: &MetricStats) {
        self.moments.merge(&other.moments);
        self.over_threshold += other.over_threshold;
        self.positive.merge(&other.positive);
        match (self.negative.as_mut(), other.negative.as_ref()) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.negative = Some(b.clone()),
            _ => {}
        }
    }

    /// The counts as HDR histograms (positive side, and the negative side's
    /// magnitudes for signed metrics), for quantiles and serialization.
    pub fn histograms(&self) -> Histograms {
        Histograms {
            positive: self.positive.to_hdr(),
            negative: self.negative.as_ref().map(LogHistogram::to_hdr),
        }
    }

    /// The sample of 1-based `rank` in ascending signed order.
    pub fn value_at_rank(&self, rank: u64) -> Option<i64> {
        self.histograms().value_at_rank(rank)
    }

    /// The nearest-rank quantile `num/den` (e.g. 999/1000 for p99.9).
    pub fn quantile(&self, num: u64, den: u64) -> Option<i64> {
        self.histograms().quantile(num, den)
    }

    /// The full summary reports print.
    pub fn summary(&self) -> MetricSummary {
        let m = &self.moments;
        // A bucket's highest equivalent value can lie above the exact max (or,
        // negated, below the exact min): clamp quantiles to what was seen.
        let h = self.histograms();
        let q = |num, den| {
            h.quantile(num, den)
                .map(|v| v.clamp(m.min, m.max.max(m.min)))
        };
        MetricSummary {
            count: m.count,
            min: (m.count > 0).then_some(m.min),
            max: (m.count > 0).then_some(m.max),
            mean: m.mean(),
            stddev: m.stddev(),
            p50: q(1, 2),
            p90: q(9, 10),
            p99: q(99, 100),
            p99_9: q(999, 1000),
            p99_99: q(9999, 10000),
            threshold: self.threshold,
            over_threshold: self.threshold.map(|_| self.over_threshold),
            over_threshold_pct: self.threshold.map(|_| {
                if m.count > 0 {
                    100.0 * self.over_threshold as f64 / m.count as f64
                } else {
                    0.0
                }
            }),
        }
    }
}

/// Exact nearest-rank quantiles, for what is read after the fact (a
/// capture's SoC periods) rather than in a hot loop: every distinct value
/// with its count, up to `cap` distinct values. Periods cluster around
/// their cycle time, so a capture of any length has few distinct values,
/// and the quantiles come out exact to the ns where the histogram
/// ([`LogHistogram`]) would round them to its counter's width
/// ([`crate::hist::resolution_ns`]: 32 µs at a 50 ms cycle).
///
/// The values live in an open-addressing table of `2 · cap` slots made at
/// [`ExactValues::new`] (zeroed memory, which the kernel maps as it is
/// first written): recording never allocates. Past `cap` distinct values
/// [`ExactValues::quantile`] answers `None`, and the caller falls back to
/// the histogram and states its resolution.
#[derive(Debug, Clone)]
pub struct ExactValues {
    keys: Vec<i64>,
    /// 0: an empty slot.
    counts: Vec<u64>,
    distinct: usize,
    total: u64,
    cap: usize,
    overflowed: bool,
}

impl ExactValues {
    /// Keeps up to `cap` distinct values.
    pub fn new(cap: usize) -> ExactValues {
        let slots = (cap.max(1) * 2).next_power_of_two();
        ExactValues {
            keys: vec![0; slots],
            counts: vec![0; slots],
            distinct: 0,
            total: 0,
            cap,
            overflowed: false,
        }
    }

    /// Counts one value. No allocation.
    pub fn record(&mut self, v: i64) {
        if self.overflowed {
            return;
        }
        let mask = self.keys.len() - 1;
        // Fibonacci hashing spreads neighbouring periods over the table.
        let mut i = ((v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 20) as usize & mask;
        loop {
            if self.counts[i] == 0 {
                if self.distinct == self.cap {
                    self.overflowed = true;
                    return;
                }
                self.keys[i] = v;
                self.counts[i] = 1;
                self.distinct += 1;
                break;
            }
            if self.keys[i] == v {
                self.counts[i] += 1;
                break;
            }
            i = (i + 1) & mask;
        }
        self.total += 1;
    }

    /// True while every value recorded is kept.
    pub fn is_exact(&self) -> bool {
        !self.overflowed
    }

    /// The distinct values and their counts, ascending.
    fn sorted(&self) -> Vec<(i64, u64)> {
        let mut v: Vec<(i64, u64)> = self
            .keys
            .iter()
            .zip(&self.counts)
            .filter(|(_, &c)| c > 0)
            .map(|(&k, &c)| (k, c))
            .collect();
        v.sort_unstable();
        v
    }

    /// The nearest-rank quantile `num/den` of `sorted` values of `total`.
    fn rank_of(sorted: &[(i64, u64)], total: u64, num: u64, den: u64) -> Option<i64> {
        if total == 0 {
            return None;
        }
        let n = total as u128;
        let rank = (n * num as u128).div_ceil(den as u128).clamp(1, n) as u64;
        let mut seen = 0u64;
        sorted.iter().find_map(|&(v, c)| {
            seen += c;
            (seen >= rank).then_some(v)
        })
    }

    /// The nearest-rank quantile `num/den` (rank `ceil(n·num/den)`), exact;
    /// `None` with no value, or past the cap.
    pub fn quantile(&self, num: u64, den: u64) -> Option<i64> {
        if self.overflowed {
            return None;
        }
        Self::rank_of(&self.sorted(), self.total, num, den)
    }

    /// Replaces `s`'s quantiles with the exact ones; false (and `s` left
    /// as it is) past the cap.
    pub fn make_exact(&self, s: &mut MetricSummary) -> bool {
        if self.overflowed {
            return false;
        }
        let sorted = self.sorted();
        let q = |num, den| Self::rank_of(&sorted, self.total, num, den);
        s.p50 = q(1, 2);
        s.p90 = q(9, 10);
        s.p99 = q(99, 100);
        s.p99_9 = q(999, 1000);
        s.p99_99 = q(9999, 10000);
        true
    }
}

/// A metric's counts as `hdrhistogram` histograms, for report-time queries.
#[derive(Debug, Clone)]
pub struct Histograms {
    /// Values `>= 0`.
    pub positive: Histogram<u64>,
    /// Magnitudes of values `< 0` (signed metrics only).
    pub negative: Option<Histogram<u64>>,
}

impl Histograms {
    fn negative_count(&self) -> u64 {
        self.negative.as_ref().map_or(0, |n| n.len())
    }

    /// The sample of 1-based `rank` in ascending signed order.
    pub fn value_at_rank(&self, rank: u64) -> Option<i64> {
        let neg = self.negative_count();
        let total = neg + self.positive.len();
        if total == 0 || rank == 0 || rank > total {
            return None;
        }
        if rank <= neg {
            // Ascending signed order walks the magnitudes descending.
            let h = self.negative.as_ref().expect("neg > 0");
            Some(-(magnitude_at_rank(h, neg - rank + 1) as i64))
        } else {
            Some(magnitude_at_rank(&self.positive, rank - neg) as i64)
        }
    }

    /// The nearest-rank quantile `num/den`: rank `ceil(n·num/den)`.
    pub fn quantile(&self, num: u64, den: u64) -> Option<i64> {
        let n = (self.negative_count() + self.positive.len()) as u128;
        if n == 0 {
            return None;
        }
        let rank = (n * num as u128).div_ceil(den as u128).clamp(1, n) as u64;
        self.value_at_rank(rank)
    }
}

fn magnitude_at_rank(h: &Histogram<u64>, rank: u64) -> u64 {
    let mut seen = 0u64;
    for v in h.iter_recorded() {
        seen += v.count_at_value();
        if seen >= rank {
            return h.highest_equivalent(v.value_iterated_to());
        }
    }
    h.max()
}

/// The statistics of one metric as stored and reported; all times in ns.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct MetricSummary {
    /// Number of samples.
    pub count: u64,
    /// Exact minimum.
    pub min: Option<i64>,
    /// Exact maximum.
    pub max: Option<i64>,
    /// Exact mean, rounded to 1 ns.
    pub mean: Option<i64>,
    /// Exact population standard deviation, rounded to 1 ns.
    pub stddev: Option<i64>,
    /// Median.
    pub p50: Option<i64>,
    /// 90th percentile.
    pub p90: Option<i64>,
    /// 99th percentile.
    pub p99: Option<i64>,
    /// 99.9th percentile.
    pub p99_9: Option<i64>,
    /// 99.99th percentile.
    pub p99_99: Option<i64>,
    /// The threshold samples were compared with (by magnitude), if any.
    pub threshold: Option<u64>,
    /// Samples whose magnitude exceeded the threshold.
    pub over_threshold: Option<u64>,
    /// The same as a percentage of `count`.
    pub over_threshold_pct: Option<f64>,
}

impl MetricSummary {
    /// The largest magnitude of the samples; `None` without a sample (a
    /// summary without samples has neither minimum nor maximum).
    pub fn largest_magnitude(&self) -> Option<u64> {
        match (self.min, self.max) {
            (None, None) => None,
            (a, b) => Some(
                a.map_or(0, i64::unsigned_abs)
                    .max(b.map_or(0, i64::unsigned_abs)),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_values_give_quantiles_to_the_ns_where_the_histogram_rounds() {
        // 50 ms periods a few ns apart: the histogram's counter there is
        // 32 768 ns wide.
        let mut exact = ExactValues::new(16);
        let mut stats = MetricStats::new(true, None);
        for (v, n) in [
            (49_999_993, 10),
            (50_000_000, 80),
            (50_000_041, 9),
            (50_003_107, 1),
        ] {
            for _ in 0..n {
                exact.record(v);
                stats.record(v);
            }
        }
        let mut s = stats.summary();
        assert_eq!(crate::hist::resolution_ns(50_000_000), 32_768);
        assert_ne!(s.p50, Some(50_000_000));
        assert!(exact.make_exact(&mut s));
        assert_eq!(
            (s.p50, s.p90, s.p99, s.p99_9, s.p99_99),
            (
                Some(50_000_000),
                Some(50_000_000),
                Some(50_000_041),
                Some(50_003_107),
                Some(50_003_107)
            )
        );
        assert_eq!(exact.quantile(1, 10), Some(49_999_993));
        assert_eq!(exact.quantile(11, 100), Some(50_000_000));
        // Past the cap: no exact quantile, the summary left as it was.
        let mut few = ExactValues::new(2);
        for v in [1, 2, 2, 3] {
            few.record(v);
        }
        assert!(!few.is_exact());
        assert_eq!(few.quantile(1, 2), None);
        let mut t = stats.summary();
        assert!(!few.make_exact(&mut t));
        assert_eq!(t, stats.summary());
        assert_eq!(ExactValues::new(4).quantile(1, 2), None);
    }

    #[test]
    fn resolution_is_the_width_of_the_counter() {
        use crate::hist::resolution_ns;
        assert_eq!(
            [0, 2_047, 2_048, 4_096, 1_048_575, 1_048_576, 5_000_000].map(resolution_ns),
            [1, 1, 2, 4, 512, 1_024, 4_096]
        );
    }

    #[test]
    fn moments_are_exact() {
        let mut m = Moments::default();
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            m.add(v);
        }
        assert_eq!(m.count, 8);
        assert_eq!((m.min, m.max), (2, 9));
        assert_eq!(m.mean(), Some(5));
        // The textbook example: population standard deviation exactly 2.
        assert_eq!(m.stddev(), Some(2));
        assert_eq!(Moments::default().mean(), None);
    }

    #[test]
    fn mean_rounds_half_away_from_zero() {
        let mut m = Moments::default();
        m.add(1);
        m.add(2);
        assert_eq!(m.mean(), Some(2));
        let mut n = Moments::default();
        n.add(-1);
        n.add(-2);
        assert_eq!(n.mean(), Some(-2));
    }

    #[test]
    fn quantiles_use_nearest_rank_on_exact_small_values() {
        let mut s = MetricStats::new(false, Some(1_000));
        for v in 1..=1000 {
            s.record(v);
        }
        let sum = s.summary();
        assert_eq!(sum.count, 1000);
        assert_eq!(sum.min, Some(1));
        assert_eq!(sum.max, Some(1000));
        assert_eq!(sum.p50, Some(500));
        assert_eq!(sum.p90, Some(900));
        assert_eq!(sum.p99, Some(990));
        assert_eq!(sum.p99_9, Some(999));
        assert_eq!(sum.p99_99, Some(1000));
        assert_eq!(sum.mean, Some(501)); // 500.5 rounds up
        assert_eq!(sum.over_threshold, Some(0));
    }

    #[test]
    fn signed_metric_keeps_the_negative_side() {
        // Jitter samples: three early cycles, two late ones, one exact.
        let mut s = MetricStats::new(true, Some(100));
        for v in [-300, -20, -5, 0, 40, 250] {
            s.record(v);
        }
        let sum = s.summary();
        assert_eq!(sum.min, Some(-300));
        assert_eq!(sum.max, Some(250));
        assert_eq!(s.value_at_rank(1), Some(-300));
        assert_eq!(s.value_at_rank(2), Some(-20));
        assert_eq!(s.value_at_rank(3), Some(-5));
        assert_eq!(s.value_at_rank(4), Some(0));
        assert_eq!(s.value_at_rank(6), Some(250));
        assert_eq!(s.value_at_rank(7), None);
        assert_eq!(sum.p50, Some(-5)); // rank ceil(3) = 3
        assert_eq!(sum.p90, Some(250)); // rank ceil(5.4) = 6
                                        // |−300| and |250| exceed 100.
        assert_eq!(sum.over_threshold, Some(2));
        assert!((sum.over_threshold_pct.unwrap() - 100.0 * 2.0 / 6.0).abs() < 1e-9);
        assert_eq!(sum.mean, Some(-6)); // −35/6 = −5.83
    }

    #[test]
    fn large_values_are_within_histogram_precision_and_clamped() {
        let mut s = MetricStats::new(false, None);
        s.record(4_000_123);
        s.record(200_000_000_000); // 200 s: over the histogram's range
        let p50 = s.quantile(1, 2).unwrap();
        assert!((p50 - 4_000_123).abs() <= 4_000, "p50 {p50}");
        assert_eq!(s.moments.max, 200_000_000_000);
        let top = s.quantile(1, 1).unwrap() as u64;
        assert!((HIST_MAX_NS..=HIST_MAX_NS + HIST_MAX_NS / 1000).contains(&top));
        // The summary never reports a quantile above the exact maximum.
        let mut t = MetricStats::new(false, None);
        t.record(3_010_240);
        assert_eq!(t.summary().p99_99, Some(3_010_240));
        assert_eq!(t.summary().over_threshold, None);
    }

    #[test]
    fn merge_combines_threads() {
        let mut a = MetricStats::new(true, Some(10));
        let mut b = MetricStats::new(true, Some(10));
        a.record(5);
        a.record(-20);
        b.record(30);
        a.merge(&b);
        let s = a.summary();
        assert_eq!(s.count, 3);
        assert_eq!((s.min, s.max), (Some(-20), Some(30)));
        assert_eq!(s.over_threshold, Some(2));
        assert_eq!(a.value_at_rank(1), Some(-20));
        assert_eq!(a.value_at_rank(3), Some(30));
    }

    #[test]
    fn empty_metric_summarises_to_nothing() {
        let s = MetricStats::new(true, Some(0)).summary();
        assert_eq!(s.count, 0);
        assert_eq!(s.min, None);
        assert_eq!(s.p99, None);
        assert_eq!(s.over_threshold_pct, Some(0.0));
    }
}
