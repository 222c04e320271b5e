//! The arithmetic behind the report's plots: what is drawn, not how.
//!
//! Three reductions turn stored figures into the points of a plot, each
//! chosen so that the plot cannot hide the worst sample:
//!
//! * **The window envelope** ([`envelope`]) — a 48-hour run has 172 800
//!   one-second windows, far more than a plot is wide. Consecutive windows
//!   are grouped [`windows_per_point`] at a time (window `w` falls in point
//!   `w / k`) and each point keeps the *maximum of the maxima*, the *minimum
//!   of the minima* and the count-weighted mean of its windows, summed over
//!   every probe thread. A maximum is therefore never lost: the largest
//!   point of the envelope is the largest window maximum, whatever the
//!   reduction. The store does the same grouping in SQL (`GROUP BY window /
//!   k`) so that a long run renders without reading every row into memory;
//!   [`envelope`] is the reference it is tested against.
//! * **The 1 µs histogram of an HDR histogram** ([`fine_histogram`]) — the
//!   stored HDR histogram (3 significant digits) has buckets of 1 ns below
//!   2048 ns and of at most 8 ns below 16 384 ns: each lies inside one 1 µs
//!   bin (8 divides 1000), so up to 16 µs the bins are exact. Above, a 16 ns
//!   (and wider) bucket can straddle two bins; its count goes to the bin of
//!   the bucket's middle value, so those bins are approximate (the report
//!   says so). The negative side of a signed metric counts in bin 0, as
//!   the recorder's own 1 µs histogram counts a negative latency.
//! * **The percentile curve** ([`percentile_curve`]) — latency against
//!   percentile on a "nines" axis: `x = −log10(1 − q)`, so p90 is at 1, p99
//!   at 2, p99.9 at 3. The tail percentiles stop where the sample count
//!   stops supporting them: p(1 − 10^−k) is drawn only when there are at
//!   least 10^k samples. Quantiles use the nearest rank, as every summary
//!   does ([`crate::stats::Histograms::quantile`]), clamped to the exact
//!   minimum and maximum.
//! * **Bins merged for display** ([`merge_bins`]) — a distribution that
//!   spans milliseconds has thousands of 1 µs bins, more than a plot has
//!   pixels: the steps blur into a solid band. For drawing, consecutive
//!   bins are summed into bins of a 1-2-5 width ([`display_width`]) so that
//!   at most a few hundred are drawn; no sample is lost, and the stored 1 µs
//!   bins stay what the plot's figures are checked against.
//! * **The log axis** ([`log_decades`]) — positive figures that span more
//!   than [`LOG_SPAN`] times (a chase's 200-cycle jitter beside a 90 000-cycle
//!   one, a tuned cell's 30 µs beside a baseline's 90 ms) are drawn against
//!   `log10(value)` between whole decades, ticked at each decade, else the
//!   small ones would be a line at zero.

use crate::recorder::LatencyHistogram;
use crate::stats::Histograms;

/// One metric of one stored window of one probe thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowPoint {
    /// Window number since the run's first release.
    pub window: u64,
    /// Samples in the window.
    pub count: u64,
    /// Smallest sample (`None` without a sample).
    pub min: Option<i64>,
    /// Largest sample (`None` without a sample).
    pub max: Option<i64>,
    /// Mean (`None` without a sample).
    pub mean: Option<i64>,
}

/// One point of a timeline: a run of consecutive windows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvelopePoint {
    /// The first window number of the point's group (`group × k`).
    pub first_window: u64,
    /// The last stored window number in the group.
    pub last_window: u64,
    /// Samples in every window of the group, every thread.
    pub count: u64,
    /// The smallest window minimum.
    pub min: Option<i64>,
    /// The largest window maximum.
    pub max: Option<i64>,
    /// The mean of the windows' means weighted by their counts, rounded
    /// half away from zero.
    pub mean: Option<i64>,
}

/// How many consecutive windows one point of a timeline stands for, so
/// that `windows` windows give at most `max_points` points: `⌈windows /
/// max_points⌉`, at least 1.
pub fn windows_per_point(windows: u64, max_points: u64) -> u64 {
    windows.div_ceil(max_points.max(1)).max(1)
}

/// `a / b` rounded half away from zero (`b > 0`).
fn div_round(a: i128, b: i128) -> i128 {
    crate::stats::div_round(a, b)
}

/// Groups window points `per_point` windows at a time (window `w` in group
/// `w / per_point`), in window order; see the module doc. Windows without a
/// sample add nothing but their number.
pub fn envelope(points: &[WindowPoint], per_point: u64) -> Vec<EnvelopePoint> {
    let k = per_point.max(1);
    let mut sorted: Vec<&WindowPoint> = points.iter().collect();
    sorted.sort_by_key(|p| p.window);
    let mut out: Vec<(EnvelopePoint, i128)> = Vec::new();
    for p in sorted {
        let group = p.window / k;
        let start = group * k;
        if out.last().is_none_or(|(e, _)| e.first_window != start) {
            out.push((
                EnvelopePoint {
                    first_window: start,
                    last_window: p.window,
                    count: 0,
                    min: None,
                    max: None,
                    mean: None,
                },
                0,
            ));
        }
        let (e, sum) = out.last_mut().expect("pushed above");
        e.last_window = e.last_window.max(p.window);
        e.count += p.count;
        e.min = match (e.min, p.min) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        e.max = match (e.max, p.max) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        if let Some(m) = p.mean {
            *sum += m as i128 * p.count as i128;
        }
    }
    out.into_iter()
        .map(|(mut e, sum)| {
            e.mean =
                (e.count > 0 && e.max.is_some()).then(|| div_round(sum, e.count as i128) as i64);
            e
        })
        .collect()
}

/// The 1 µs histogram of an HDR histogram: bins `0 .. max_bins`, the rest
/// counted as overflows (see the module doc for which bins are exact).
pub fn fine_histogram(h: &Histograms, max_bins: usize) -> LatencyHistogram {
    let top = h.positive.max() / 1_000 + 1;
    let bins = usize::try_from(top).unwrap_or(usize::MAX).min(max_bins);
    let mut fine = LatencyHistogram::new(bins);
    let mut add = |bin: u64, n: u64| match usize::try_from(bin)
        .ok()
        .and_then(|b| fine.buckets.get_mut(b))
    {
        Some(b) => *b += n,
        None => fine.overflows += n,
    };
    for v in h.positive.iter_recorded() {
        let mid = h.positive.median_equivalent(v.value_iterated_to());
        add(mid / 1_000, v.count_at_value());
    }
    if let Some(n) = &h.negative {
        add(0, n.len());
    }
    fine
}

/// One point of a percentile curve.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentile {
    /// Position on the nines axis: `−log10(1 − q)` (0 for the minimum).
    pub nines: f64,
    /// `min`, `p50`, `p90`, `p99`, `p99.9` … `max`.
    pub label: String,
    /// The value, in the metric's unit.
    pub value: i64,
}

/// The percentile label of `q = 1 − 10^−nines`: `p90`, `p99.99`, `p50`.
pub fn nines_label(nines: f64) -> String {
    let pct = 100.0 * (1.0 - 10f64.powf(-nines));
    let mut s = format!("{pct:.6}");
    while s.ends_with('0') {
        s.pop();
    }
    if s.ends_with('.') {
        s.pop();
    }
    format!("p{s}")
}

/// The tail percentiles drawn: 1 − 10^−k for k = 1 … 6.
const TAIL: [(u64, u64); 6] = [
    (9, 10),
    (99, 100),
    (999, 1_000),
    (9_999, 10_000),
    (99_999, 100_000),
    (999_999, 1_000_000),
];

/// The percentile curve of a metric: its minimum, p50, the tail
/// percentiles the sample count supports, its maximum (at `log10(count)`,
/// the nines of the last rank); each quantile clamped to the exact `min` /
/// `max` when given. Empty without samples.
pub fn percentile_curve(h: &Histograms, min: Option<i64>, max: Option<i64>) -> Vec<Percentile> {
    let n = h.positive.len() + h.negative.as_ref().map_or(0, |x| x.len());
    if n == 0 {
        return Vec::new();
    }
    let clamp = |v: i64| {
        let v = min.map_or(v, |m| v.max(m));
        max.map_or(v, |m| v.min(m))
    };
    let lowest = min.or_else(|| h.value_at_rank(1)).unwrap_or(0);
    let highest = max.or_else(|| h.value_at_rank(n)).unwrap_or(0);
    let mut v = vec![Percentile {
        nines: 0.0,
        label: "min".into(),
        value: lowest,
    }];
    let mut push = |num: u64, den: u64| {
        if let Some(x) = h.quantile(num, den) {
            let nines = (den as f64 / (den - num) as f64).log10();
            v.push(Percentile {
                nines,
                label: nines_label(nines),
                value: clamp(x),
            });
        }
    };
    push(1, 2);
    for (num, den) in TAIL {
        if n >= den / (den - num) {
            push(num, den);
        }
    }
    let top = (n as f64).log10().max(v.last().map_or(0.0, |p| p.nines));
    v.push(Percentile {
        nines: top,
        label: "max".into(),
        value: highest,
    });
    v
}

/// Positive figures whose largest is at least this many times the
/// smallest are drawn on a log axis.
pub const LOG_SPAN: f64 = 30.0;

/// The whole decades `(⌊log10 lo⌋, ⌈log10 hi⌉)` a log axis spans, when the
/// figures `lo ..= hi` call for one: both positive and `hi / lo ≥`
/// [`LOG_SPAN`]. `None`: a linear axis. The two exponents always differ.
pub fn log_decades(lo: f64, hi: f64) -> Option<(i32, i32)> {
    if !(lo > 0.0 && hi.is_finite() && hi / lo >= LOG_SPAN) {
        return None;
    }
    let a = lo.log10().floor() as i32;
    let b = (hi.log10().ceil() as i32).max(a + 1);
    Some((a, b))
}

/// The width, in bins, that bins `0 .. bins` are merged into so that at
/// most `max_drawn` are drawn: the smallest of 1, 2, 5, 10, 20, 50 … that
/// is enough (1 when `bins ≤ max_drawn`).
pub fn display_width(bins: usize, max_drawn: usize) -> u64 {
    let max = max_drawn.max(1) as u64;
    let bins = bins as u64;
    let mut decade = 1u64;
    loop {
        for m in [1, 2, 5] {
            let w = m * decade;
            if bins.div_ceil(w) <= max {
                return w;
            }
        }
        decade *= 10;
    }
}

/// A histogram's bins merged for display: bin `i` holds the counts of the
/// original bins `i·width .. (i+1)·width`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MergedBins {
    /// Original bins per drawn bin.
    pub width: u64,
    /// The drawn bins' counts.
    pub counts: Vec<u64>,
}

/// Merges `buckets[0 .. span]` (bins past the end count 0) into
/// [`display_width`]`(span, max_drawn)`-wide bins; every count of those
/// bins lands in exactly one drawn bin.
pub fn merge_bins(buckets: &[u64], span: usize, max_drawn: usize) -> MergedBins {
    let width = display_width(span, max_drawn);
    let w = usize::try_from(width).unwrap_or(usize::MAX);
    let n = span.div_ceil(w).max(1);
    let mut counts = vec![0u64; n];
    for (i, c) in buckets.iter().take(span).enumerate() {
        counts[i / w] += c;
    }
    MergedBins { width, counts }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::MetricStats;

    fn wp(window: u64, count: u64, min: i64, max: i64, mean: i64) -> WindowPoint {
        WindowPoint {
            window,
            count,
            min: Some(min),
            max: Some(max),
            mean: Some(mean),
        }
    }

    #[test]
    fn points_per_window_cover_every_window() {
        assert_eq!(windows_per_point(172_800, 1_000), 173);
        assert_eq!(windows_per_point(1_000, 1_000), 1);
        assert_eq!(windows_per_point(1_001, 1_000), 2);
        assert_eq!(windows_per_point(0, 1_000), 1);
        assert_eq!(windows_per_point(5, 0), 5);
        // 172 800 windows at 173 per point: 999 points, never more than 1000.
        assert_eq!(172_800u64.div_ceil(173), 999);
    }

    #[test]
    fn the_envelope_keeps_every_maximum_and_weights_the_mean() {
        let points = [
            wp(0, 10, 5, 50, 20),
            wp(1, 30, 4, 900, 40),
            wp(2, 1, 7, 7, 7),
            // Thread 2 of window 1.
            wp(1, 10, 3, 60, 10),
            WindowPoint {
                window: 3,
                count: 0,
                min: None,
                max: None,
                mean: None,
            },
            wp(5, 2, 11, 13, 12),
        ];
        let e = envelope(&points, 2);
        assert_eq!(
            e,
            vec![
                EnvelopePoint {
                    first_window: 0,
                    last_window: 1,
                    count: 50,
                    min: Some(3),
                    max: Some(900),
                    // (10·20 + 30·40 + 10·10) / 50 = 1500 / 50
                    mean: Some(30),
                },
                EnvelopePoint {
                    first_window: 2,
                    last_window: 3,
                    count: 1,
                    min: Some(7),
                    max: Some(7),
                    mean: Some(7),
                },
                EnvelopePoint {
                    first_window: 4,
                    last_window: 5,
                    count: 2,
                    min: Some(11),
                    max: Some(13),
                    mean: Some(12),
                },
            ]
        );
        // One window per point changes nothing but the grouping.
        assert_eq!(envelope(&points, 1).len(), 5);
        assert_eq!(
            envelope(&points, 1000)[0].max,
            points.iter().filter_map(|p| p.max).max()
        );
    }

    #[test]
    fn an_empty_group_has_no_figures() {
        let e = envelope(
            &[WindowPoint {
                window: 7,
                count: 0,
                min: None,
                max: None,
                mean: None,
            }],
            4,
        );
        assert_eq!(
            e,
            vec![EnvelopePoint {
                first_window: 4,
                last_window: 7,
                count: 0,
                min: None,
                max: None,
                mean: None,
            }]
        );
    }

    fn stats(values: &[i64], signed: bool) -> MetricStats {
        let mut s = MetricStats::new(signed, None);
        for &v in values {
            s.record(v);
        }
        s
    }

    #[test]
    fn fine_bins_are_exact_up_to_16_us() {
        let s = stats(&[0, 999, 1_000, 1_999, 12_345, 12_999, 15_999], false);
        let f = fine_histogram(&s.histograms(), 100_000);
        assert_eq!(f.buckets.len(), 16);
        assert_eq!(f.buckets[0], 2);
        assert_eq!(f.buckets[1], 2);
        assert_eq!(f.buckets[12], 2);
        assert_eq!(f.buckets[15], 1);
        assert_eq!(f.buckets.iter().sum::<u64>(), 7);
        assert_eq!(f.overflows, 0);
    }

    #[test]
    fn fine_bins_above_16_us_take_the_bucket_middle_and_cap_overflows() {
        // 20 995 ns lies in the 16 ns bucket 20 992 ..= 21 007, which
        // straddles 21 µs: its middle, 21 000, puts it in bin 21 (its true
        // bin is 20). 40 000 ns: the 32 ns bucket 40 000 ..= 40 031, bin 40.
        let s = stats(&[20_995, 40_000, 2_000_000], false);
        let f = fine_histogram(&s.histograms(), 1_000);
        assert_eq!(f.buckets.len(), 1_000);
        assert_eq!((f.buckets[20], f.buckets[21]), (0, 1));
        assert_eq!(f.buckets[40], 1);
        assert_eq!(f.overflows, 1);
        // Negative values of a signed metric count in bin 0.
        let s = stats(&[-5_000, 300], true);
        let f = fine_histogram(&s.histograms(), 100);
        assert_eq!(f.buckets, vec![2]);
    }

    #[test]
    fn percentile_labels_read_as_people_write_them() {
        assert_eq!(nines_label(1.0), "p90");
        assert_eq!(nines_label(2.0), "p99");
        assert_eq!(nines_label(3.0), "p99.9");
        assert_eq!(nines_label(6.0), "p99.9999");
        assert_eq!(nines_label(2f64.log10()), "p50");
        assert_eq!(nines_label(0.0), "p0");
    }

    #[test]
    fn the_curve_stops_where_the_samples_stop_supporting_it() {
        // 1000 samples 1..=1000 ns: p99.9 is the 999th, p99.99 would need
        // 10 000 samples.
        let values: Vec<i64> = (1..=1_000).collect();
        let s = stats(&values, false);
        let c = percentile_curve(&s.histograms(), Some(1), Some(1_000));
        let labels: Vec<&str> = c.iter().map(|p| p.label.as_str()).collect();
        assert_eq!(labels, ["min", "p50", "p90", "p99", "p99.9", "max"]);
        let values: Vec<i64> = c.iter().map(|p| p.value).collect();
        assert_eq!(values, [1, 500, 900, 990, 999, 1_000]);
        assert_eq!(c[0].nines, 0.0);
        assert_eq!(c[2].nines, 1.0);
        assert_eq!(c[5].nines, 3.0);
        assert!(percentile_curve(&stats(&[], false).histograms(), None, None).is_empty());
    }

    #[test]
    fn quantiles_are_clamped_to_the_exact_extremes() {
        // 3000 ns lies in a 2 ns bucket whose highest value is 3001.
        let s = stats(&[3_000; 20], false);
        let c = percentile_curve(&s.histograms(), Some(3_000), Some(3_000));
        assert!(c.iter().all(|p| p.value == 3_000), "{c:?}");
        let c = percentile_curve(&s.histograms(), None, None);
        assert_eq!(c[1].value, 3_001);
    }

    #[test]
    fn wide_histograms_merge_into_1_2_5_bins_and_keep_every_count() {
        assert_eq!(display_width(400, 400), 1);
        assert_eq!(display_width(401, 400), 2);
        assert_eq!(display_width(2_000, 400), 5);
        assert_eq!(display_width(2_001, 400), 10);
        assert_eq!(display_width(9_000, 400), 50);
        assert_eq!(display_width(100_000, 400), 500);
        assert_eq!(display_width(0, 400), 1);
        // 9 000 µs of bins: counts at 3, 7, 49, 50, 4 321 and 8 999 µs.
        let mut b = vec![0u64; 9_000];
        for (i, c) in [(3, 5), (7, 1), (49, 2), (50, 10), (4_321, 3), (8_999, 1)] {
            b[i] = c;
        }
        let m = merge_bins(&b, 9_000, 400);
        assert_eq!(m.width, 50);
        assert_eq!(m.counts.len(), 180);
        assert_eq!((m.counts[0], m.counts[1]), (8, 10));
        assert_eq!(m.counts[86], 3);
        assert_eq!(m.counts[179], 1);
        assert_eq!(m.counts.iter().sum::<u64>(), 22);
        // A span past the stored bins (a budget beyond the last sample)
        // adds empty bins; a span within them leaves the rest out.
        let m = merge_bins(&[1, 2, 3], 10, 4);
        assert_eq!(
            m,
            MergedBins {
                width: 5,
                counts: vec![6, 0]
            }
        );
        let m = merge_bins(&[1, 2, 3], 2, 4);
        assert_eq!(
            m,
            MergedBins {
                width: 1,
                counts: vec![1, 2]
            }
        );
    }

    #[test]
    fn a_log_axis_spans_whole_decades_when_figures_span_thirty_times() {
        assert_eq!(log_decades(150.0, 25_000.0), Some((2, 5)));
        assert_eq!(log_decades(100.0, 3_000.0), Some((2, 4)));
        assert_eq!(log_decades(0.014, 95.8858), Some((-2, 2)));
        assert_eq!(log_decades(100.0, 2_999.0), None);
        assert_eq!(log_decades(0.0, 1_000.0), None);
        assert_eq!(log_decades(-5.0, 1_000.0), None);
    }
}
