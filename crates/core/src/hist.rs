//! The hot-loop half of an HDR histogram: one index computation and one
//! increment per sample.
//!
//! Why not record straight into `hdrhistogram::Histogram`? Its `record` also
//! maintains a min, a max and a total count (which [`crate::stats::Moments`]
//! already keeps exactly), handles resizing and saturating counters, and
//! returns a `Result`; measured with `benches/record.rs`, that is most of the
//! cost of recording a sample through every sink. [`LogHistogram`] keeps only
//! the counts, in **exactly** the layout HdrHistogram uses for values from
//! 1 ns to 100 s at 3 significant digits (2048 sub-buckets, 27 buckets), and
//! converts to an `hdrhistogram::Histogram` when a report needs quantiles or a
//! serialized histogram — so everything outside the hot loop still uses the
//! crate, and a test proves the two agree count for count.

use hdrhistogram::Histogram;

/// Highest value the histograms track: 100 s in nanoseconds.
pub const HIST_MAX_NS: u64 = 100_000_000_000;
/// Significant decimal digits kept by the histograms.
pub const HIST_SIGFIG: u8 = 3;

/// log2 of the sub-bucket count: 2048 sub-buckets give 3 significant digits
/// (HdrHistogram: `ceil(log2(2 · 10^3))`).
const SUB_BUCKET_COUNT_MAGNITUDE: u32 = 11;
const SUB_BUCKET_HALF_COUNT_MAGNITUDE: u32 = SUB_BUCKET_COUNT_MAGNITUDE - 1;
const SUB_BUCKET_HALF_COUNT: u64 = 1 << SUB_BUCKET_HALF_COUNT_MAGNITUDE;
const SUB_BUCKET_MASK: u64 = (1 << SUB_BUCKET_COUNT_MAGNITUDE) - 1;
/// `64 − unit magnitude (0: 1 ns resolution) − sub-bucket count magnitude`.
const LEADING_ZERO_COUNT_BASE: u32 = 64 - SUB_BUCKET_COUNT_MAGNITUDE;

/// Buckets needed to reach [`HIST_MAX_NS`]: the smallest power-of-two
/// multiple of 2048 above it is 2048 · 2^26, so 27 buckets.
const fn buckets_needed(max: u64) -> u32 {
    let mut smallest_untrackable = 1u64 << SUB_BUCKET_COUNT_MAGNITUDE;
    let mut buckets = 1;
    while smallest_untrackable <= max {
        smallest_untrackable <<= 1;
        buckets += 1;
    }
    buckets
}

/// Length of the counts array: `(buckets + 1) · sub_bucket_half_count`.
pub const COUNTS_LEN: usize =
    ((buckets_needed(HIST_MAX_NS) as u64 + 1) * SUB_BUCKET_HALF_COUNT) as usize;

/// Index of `value`'s counter, as HdrHistogram computes it.
#[inline(always)]
const fn index_for(value: u64) -> usize {
    let bucket = LEADING_ZERO_COUNT_BASE - (value | SUB_BUCKET_MASK).leading_zeros();
    let sub_bucket = value >> bucket;
    (((bucket as u64 + 1) << SUB_BUCKET_HALF_COUNT_MAGNITUDE) + sub_bucket - SUB_BUCKET_HALF_COUNT)
        as usize
}

/// Where a value past the last counter (about 137 s) is counted: at 100 s,
/// as `Histogram::saturating_record` does.
const CLAMP_INDEX: usize = index_for(HIST_MAX_NS);

/// The lowest value that counter `index` stands for.
fn value_for(index: usize) -> u64 {
    let index = index as u64;
    let mut bucket = (index >> SUB_BUCKET_HALF_COUNT_MAGNITUDE) as i64 - 1;
    let mut sub_bucket = (index & (SUB_BUCKET_HALF_COUNT - 1)) + SUB_BUCKET_HALF_COUNT;
    if bucket < 0 {
        sub_bucket -= SUB_BUCKET_HALF_COUNT;
        bucket = 0;
    }
    sub_bucket << bucket
}

/// The width of the counter `value` falls in, ns: every value of that
/// counter reads as one, so a quantile read from the histogram is exact
/// to within this (1 ns below 2048 ns, 32 768 ns at 50 ms).
pub fn resolution_ns(value: u64) -> u64 {
    let bucket =
        LEADING_ZERO_COUNT_BASE - (value.min(HIST_MAX_NS) | SUB_BUCKET_MASK).leading_zeros();
    1 << bucket
}

/// Counts only; see the module documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogHistogram {
    counts: Vec<u64>,
}

impl Default for LogHistogram {
    fn default() -> Self {
        LogHistogram::new()
    }
}

impl LogHistogram {
    /// Allocates and touches every counter (so no page fault happens later).
    pub fn new() -> LogHistogram {
        let mut counts = vec![0u64; COUNTS_LEN];
        // vec! of zeroes may map lazily; write every page now.
        for c in counts.iter_mut().step_by(512) {
            *c = 0;
        }
        std::hint::black_box(&mut counts);
        LogHistogram { counts }
    }

    /// Counts one value. Like `Histogram::saturating_record`, a value past the
    /// last counter (about 137 s) is counted as 100 s.
    #[inline(always)]
    pub fn record(&mut self, value: u64) {
        let i = index_for(value);
        let i = if i < COUNTS_LEN { i } else { CLAMP_INDEX };
        self.counts[i] += 1;
    }

    /// Total number of values counted.
    pub fn len(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// True when nothing was counted.
    pub fn is_empty(&self) -> bool {
        self.counts.iter().all(|&c| c == 0)
    }

    /// Adds another histogram's counts.
    pub fn merge(&mut self, other: &LogHistogram) {
        for (a, b) in self.counts.iter_mut().zip(&other.counts) {
            *a += b;
        }
    }

    /// The same counts as an `hdrhistogram::Histogram` (1 ns – 100 s,
    /// 3 significant digits), for quantiles and serialization.
    pub fn to_hdr(&self) -> Histogram<u64> {
        let mut h = Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG)
            .expect("constant histogram bounds are valid");
        for (i, &c) in self.counts.iter().enumerate() {
            if c > 0 {
                h.record_n(value_for(i), c)
                    .expect("every counter's value is inside the bounds");
            }
        }
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_matches_hdrhistogram() {
        let h: Histogram<u64> = Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG).unwrap();
        assert_eq!(h.distinct_values(), COUNTS_LEN);
        assert_eq!(COUNTS_LEN, 28 * 1024);
    }

    #[test]
    fn counts_agree_with_hdrhistogram_value_for_value() {
        let mut ours = LogHistogram::new();
        let mut theirs: Histogram<u64> =
            Histogram::new_with_bounds(1, HIST_MAX_NS, HIST_SIGFIG).unwrap();
        // Every bucket boundary region, plus a spread of arbitrary values,
        // zero, and values beyond the range (clamped by both).
        let mut values: Vec<u64> = vec![0, 1, 2, 1023, 1024, 2047, 2048, 2049, 4095, 4096];
        for shift in 0..40 {
            let p = 1u64 << shift;
            values.extend([p.saturating_sub(1), p, p + 1, p + p / 3]);
        }
        let mut x = 0x1234_5678_9abc_def0u64;
        for _ in 0..10_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push(x % 200_000_000_000);
        }
        values.extend([HIST_MAX_NS, HIST_MAX_NS + 1, u64::MAX]);
        for &v in &values {
            ours.record(v);
            theirs.saturating_record(v);
        }
        let converted = ours.to_hdr();
        assert_eq!(converted.len(), theirs.len());
        assert_eq!(ours.len(), values.len() as u64);
        let a: Vec<(u64, u64)> = converted
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        let b: Vec<(u64, u64)> = theirs
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn small_values_are_exact_and_merge_adds() {
        let mut a = LogHistogram::new();
        let mut b = LogHistogram::new();
        a.record(5);
        b.record(5);
        b.record(2047);
        a.merge(&b);
        let h = a.to_hdr();
        assert_eq!(h.count_at(5), 2);
        assert_eq!(h.count_at(2047), 1);
        assert_eq!(a.len(), 3);
        assert!(!a.is_empty() && LogHistogram::new().is_empty());
    }
}
