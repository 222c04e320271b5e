//! Per-window rows: a fixed stretch of a run (default 1 s) summarised as one
//! row per metric — min, max, mean, count — for the timeline plot.
//!
//! Metrics are data, not columns: a row carries the probe's metric table
//! ([`MetricDef`]s, from its descriptor) and up to [`MAX_METRICS`]
//! statistics, slot `i` for metric `i`, so the CSV writer and the store key
//! every figure by the metric's name ([`WindowRow::named`]) and a probe with
//! more or other metrics needs no new column anywhere. A probe whose metrics
//! come at different rates pushes `None` for the metrics a sample does not
//! have; each metric's count says how many samples it had in the window.
//!
//! The aggregator lives inside the probe thread. At a window's end it pushes
//! the finished row into a bounded, wait-free single-producer queue
//! ([`rtrb`]); a low-priority writer thread drains it. If the queue is ever
//! full the row is counted as dropped — the probe never blocks (design rule 2).
//! Windows are numbered from the run's first release, so a window without any
//! cycle (a period longer than the window, or a stall) is visible as a gap in
//! the numbering rather than a fake row.
//!
//! The design rules cited here are in `docs/design.md`.

use crate::cycle::{CycleSample, METRICS};
use crate::probe::descriptor::{MetricDef, MAX_METRICS};
use crate::sample::CycleSink;

/// The running min, max, sum and count of one metric in the current window,
/// and where its maximum was: the sample's cycle number and its time since
/// the run's start (a monitor keeps "the cycle and time of the max" of every
/// 5-minute row for a year, OSADL's way of pointing at a spike).
///
/// Lighter than the run's `stats::Moments`: a window reports no standard
/// deviation, so it keeps no sum of squares, and its sum fits in `i64` (even
/// 10^6 samples of 100 s each stay below 2^63 ns). The place of the maximum
/// costs two stores when a sample beats it, which after the first few
/// samples of a window is rare.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowMoments {
    count: u64,
    min: i64,
    max: i64,
    sum: i64,
    max_cycle: u64,
    max_at: u64,
}

impl Default for WindowMoments {
    fn default() -> Self {
        WindowMoments {
            count: 0,
            min: i64::MAX,
            max: i64::MIN,
            sum: 0,
            max_cycle: 0,
            max_at: 0,
        }
    }
}

impl WindowMoments {
    /// Adds one sample: value `v` of cycle (sample number) `cycle`, taken
    /// `at` ns after the run's start. The first of equal maxima keeps its
    /// place.
    #[inline(always)]
    pub fn add(&mut self, v: i64, cycle: u64, at: u64) {
        self.count += 1;
        self.min = self.min.min(v);
        if v > self.max {
            self.max = v;
            self.max_cycle = cycle;
            self.max_at = at;
        }
        self.sum = self.sum.saturating_add(v);
    }

    /// Mean rounded half away from zero.
    fn mean(&self) -> i64 {
        crate::stats::div_round(self.sum as i128, self.count as i128) as i64
    }
}

/// Summary of one metric over one window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct WindowStat {
    /// Samples in the window.
    pub count: u64,
    /// Minimum, ns (0 when `count` is 0).
    pub min: i64,
    /// Maximum, ns (0 when `count` is 0).
    pub max: i64,
    /// Mean rounded to 1 ns (0 when `count` is 0).
    pub mean: i64,
    /// Cycle (sample) number of the maximum, counted from the run's first
    /// (0 when `count` is 0). Not stored with the window rows: a monitor
    /// keeps it in its 5-minute rows.
    #[serde(default)]
    pub max_cycle: u64,
    /// When the maximum was taken, ns since the run's start (0 when
    /// `count` is 0).
    #[serde(default)]
    pub max_at_ns: u64,
}

impl From<&WindowMoments> for WindowStat {
    fn from(m: &WindowMoments) -> Self {
        if m.count == 0 {
            return WindowStat::default();
        }
        WindowStat {
            count: m.count,
            min: m.min,
            max: m.max,
            mean: m.mean(),
            max_cycle: m.max_cycle,
            max_at_ns: m.max_at,
        }
    }
}

/// One finished window of one probe thread (or sample stream).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowRow {
    /// Index of the probe thread (the sample stream) that measured it.
    pub thread: u32,
    /// CPU the thread ran on.
    pub cpu: u32,
    /// Window number since the run's first release.
    pub window: u64,
    /// Window start relative to the first release, ns.
    pub start_ns: u64,
    /// Cycles (an event probe: samples) measured in the window.
    pub cycles: u64,
    /// Overruns in the window (0 for an event probe).
    pub overruns: u64,
    /// The metric table the slots follow (the probe descriptor's).
    pub metrics: &'static [MetricDef],
    /// Per metric slot, slot `i` for `metrics[i]`; the slots after the
    /// table's last metric, and a metric without a sample in the window,
    /// have count 0.
    pub stats: [WindowStat; MAX_METRICS],
}

impl WindowRow {
    /// Every metric of the row's table with its statistics, in slot order.
    pub fn named(&self) -> impl Iterator<Item = (&'static MetricDef, &WindowStat)> + '_ {
        self.metrics.iter().zip(&self.stats)
    }

    /// The statistics of the metric called `name`, if the row's table has it.
    pub fn stat(&self, name: &str) -> Option<&WindowStat> {
        self.named().find(|(d, _)| d.name == name).map(|(_, s)| s)
    }
}

/// Builds window rows from samples and hands them to a queue.
///
/// As a [`CycleSink`] of [`CycleSample`]s it fills the slots in [`METRICS`]
/// order, which is that of
/// [`PERIODIC_METRICS`](crate::probe::PERIODIC_METRICS): create it with that table.
pub struct WindowAggregator {
    thread: u32,
    cpu: u32,
    t0: u64,
    width: u64,
    current: u64,
    cycles: u64,
    overruns: u64,
    metrics: &'static [MetricDef],
    moments: [WindowMoments; MAX_METRICS],
    out: rtrb::Producer<WindowRow>,
    dropped: u64,
    pushed: u64,
    /// Samples counted since the start, for [`Self::push_values`]'s cycle
    /// numbers.
    pushed_samples: u64,
    /// The last row closed, kept only for live metrics
    /// ([`WindowAggregator::keep_last_row`]).
    last: Option<WindowRow>,
}

impl WindowAggregator {
    /// Rows of `width` ns from `t0` with one slot per metric of `metrics`
    /// (at most [`MAX_METRICS`]), pushed into `out`.
    pub fn new(
        thread: u32,
        cpu: u32,
        t0: u64,
        width: u64,
        metrics: &'static [MetricDef],
        out: rtrb::Producer<WindowRow>,
    ) -> Self {
        assert!(width > 0, "window width must be positive");
        assert!(
            metrics.len() <= MAX_METRICS,
            "too many metrics for a window row"
        );
        WindowAggregator {
            thread,
            cpu,
            t0,
            width,
            current: 0,
            cycles: 0,
            overruns: 0,
            metrics,
            moments: [WindowMoments::default(); MAX_METRICS],
            out,
            dropped: 0,
            pushed: 0,
            pushed_samples: 0,
            last: None,
        }
    }

    /// Moves the windows' origin to `t0` (the first release, known only once
    /// every probe thread is ready).
    pub fn start_at(&mut self, t0: u64) {
        self.t0 = t0;
    }

    /// Rows that could not be queued because the writer fell behind.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Rows queued.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// Rows closed: queued or dropped.
    #[inline(always)]
    pub fn closed(&self) -> u64 {
        self.pushed + self.dropped
    }

    /// Keeps a copy of each row as it closes, for [`Self::last_row`] (live
    /// metrics read the closed window's figures from it); off by default,
    /// so without metrics a window's end copies nothing more.
    pub fn keep_last_row(&mut self) {
        self.last.get_or_insert(WindowRow {
            thread: self.thread,
            cpu: self.cpu,
            window: 0,
            start_ns: 0,
            cycles: 0,
            overruns: 0,
            metrics: self.metrics,
            stats: [WindowStat::default(); MAX_METRICS],
        });
    }

    /// The last row closed, once [`Self::keep_last_row`] was called and a
    /// row closed since (before that, an empty row).
    pub fn last_row(&self) -> Option<&WindowRow> {
        self.last.as_ref()
    }

    #[inline]
    fn flush(&mut self) {
        if self.cycles == 0 {
            return;
        }
        let mut stats = [WindowStat::default(); MAX_METRICS];
        for (s, m) in stats.iter_mut().zip(&self.moments).take(self.metrics.len()) {
            *s = WindowStat::from(m);
        }
        let row = WindowRow {
            thread: self.thread,
            cpu: self.cpu,
            window: self.current,
            start_ns: self.current * self.width,
            cycles: self.cycles,
            overruns: self.overruns,
            metrics: self.metrics,
            stats,
        };
        if let Some(last) = self.last.as_mut() {
            *last = row;
        }
        match self.out.push(row) {
            Ok(()) => self.pushed += 1,
            Err(_) => self.dropped += 1,
        }
        self.cycles = 0;
        self.overruns = 0;
        self.moments = [WindowMoments::default(); MAX_METRICS];
    }

    /// Pushes the last, possibly partial, window. Call once at the end.
    pub fn finish(&mut self) {
        self.flush();
    }
}

impl WindowAggregator {
    /// Adds one sample that happened at `at` (absolute, ns) with the values
    /// of its first `values.len()` slots (`None`: the slot's metric has no
    /// value this time), in the order of the aggregator's metric table;
    /// values beyond the table are never reported. Pass only the table's
    /// slots: the loop runs once per value.
    /// The sample's cycle number is its place among the samples pushed.
    #[inline(always)]
    pub fn push_values(&mut self, at: u64, values: &[Option<i64>], overrun: bool) {
        let cycle = self.pushed_samples;
        let since = at.saturating_sub(self.t0);
        for (m, v) in self.count(at, overrun).iter_mut().zip(values) {
            if let Some(v) = v {
                m.add(*v, cycle, since);
            }
        }
    }

    /// Counts one sample that happened at `at` (absolute, ns), closing the
    /// current window first when `at` is past it, and returns the
    /// accumulators of the sample's window, slot `i` for metric `i`: the
    /// caller adds the sample's values to them ([`push_values`] does).
    /// Lets a recorder that walks a sample's values anyway feed the window
    /// in the same pass.
    ///
    /// [`push_values`]: WindowAggregator::push_values
    #[inline(always)]
    pub fn count(&mut self, at: u64, overrun: bool) -> &mut [WindowMoments; MAX_METRICS] {
        let w = at.saturating_sub(self.t0) / self.width;
        if w != self.current {
            self.flush();
            self.current = w;
        }
        self.cycles += 1;
        self.pushed_samples += 1;
        self.overruns += overrun as u64;
        &mut self.moments
    }
}

impl CycleSink for WindowAggregator {
    #[inline(always)]
    fn push(&mut self, s: &CycleSample) {
        let values = METRICS.map(|m| m.value(s));
        self.push_values(s.start, &values, s.overrun);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cycle::Metric;
    use crate::cycle::Schedule;
    use crate::probe::descriptor::PERIODIC_METRICS;

    #[test]
    fn rows_cover_fixed_windows_and_gaps_show() {
        let (tx, mut rx) = rtrb::RingBuffer::new(16);
        let mut agg = WindowAggregator::new(0, 1, 0, 1_000, PERIODIC_METRICS, tx);
        let mut sched = Schedule::new(0, 250);
        // Four cycles per 1000 ns window, latencies 0..; skip window 2.
        for i in 0..12u64 {
            let rel = sched.next_release();
            if (2_000..3_000).contains(&rel) {
                // A stall: one cycle spanning the window, ending at 3_000.
                let s = sched.complete(rel + 10, 3_000);
                agg.push(&s);
                continue;
            }
            let s = sched.complete(rel + i, rel + i + 5);
            agg.push(&s);
        }
        agg.finish();
        let rows: Vec<WindowRow> = std::iter::from_fn(|| rx.pop().ok()).collect();
        let idx: Vec<u64> = rows.iter().map(|r| r.window).collect();
        assert_eq!(idx, vec![0, 1, 2, 3]);
        assert_eq!(rows[0].cycles, 4);
        assert_eq!(
            rows[0].stats[Metric::Latency as usize],
            WindowStat {
                count: 4,
                min: 0,
                max: 3,
                mean: 2,
                max_cycle: 3,
                max_at_ns: 753,
            }
        );
        assert_eq!(rows[0].stats[Metric::Exec as usize].max, 5);
        // Period and jitter have no value for the very first cycle.
        assert_eq!(rows[0].stats[Metric::Period as usize].count, 3);
        assert_eq!(rows[2].cycles, 1);
        assert_eq!(rows[2].overruns, 1);
        assert_eq!(rows[1].start_ns, 1_000);
        assert_eq!(agg.dropped(), 0);
        // The same figures by name; no slot beyond the table.
        assert_eq!(rows[0].stat("exec"), Some(&rows[0].stats[3]));
        assert_eq!(rows[0].stat("chase"), None);
        let names: Vec<&str> = rows[0].named().map(|(d, _)| d.name).collect();
        assert_eq!(names, ["latency", "period", "jitter", "exec"]);
        assert!(rows[0].stats[4..]
            .iter()
            .all(|s| *s == WindowStat::default()));
    }

    #[test]
    fn metrics_at_two_rates_keep_their_own_counts() {
        // Seven metrics, the last three only every other sample: a probe
        // with a fast and a slow stream of values.
        const SEVEN: &[MetricDef] = &[
            crate::probe::PERIODIC_METRICS[0],
            crate::probe::PERIODIC_METRICS[1],
            crate::probe::PERIODIC_METRICS[2],
            crate::probe::PERIODIC_METRICS[3],
            crate::probe::RESPONSE.metrics[0],
            crate::probe::RESPONSE.metrics[1],
            crate::probe::RESPONSE.metrics[2],
        ];
        let (tx, mut rx) = rtrb::RingBuffer::new(4);
        let mut agg = WindowAggregator::new(1, 2, 0, 1_000, SEVEN, tx);
        for i in 0..4i64 {
            let slow = (i % 2 == 0).then_some(100 * i);
            let v = [Some(i), Some(i), Some(-i), Some(i), slow, slow, slow];
            agg.push_values(10 * i as u64, &v, i == 3);
        }
        agg.push_values(1_500, &[Some(9)], false);
        agg.finish();
        let row = rx.pop().unwrap();
        let counts: Vec<(&str, u64)> = row.named().map(|(d, s)| (d.name, s.count)).collect();
        assert_eq!(
            counts,
            [
                ("latency", 4),
                ("period", 4),
                ("jitter", 4),
                ("exec", 4),
                ("wakeup", 2),
                ("response", 2),
                ("rx-to-thread", 2)
            ]
        );
        assert_eq!(
            row.stat("response"),
            Some(&WindowStat {
                count: 2,
                min: 0,
                max: 200,
                mean: 100,
                max_cycle: 2,
                max_at_ns: 20,
            })
        );
        assert_eq!(
            (row.cycles, row.overruns, row.thread, row.cpu),
            (4, 1, 1, 2)
        );
        // A sample with fewer values leaves the other metrics of its window
        // empty.
        let next = rx.pop().unwrap();
        assert_eq!(next.window, 1);
        assert_eq!(next.stat("latency").unwrap().max, 9);
        assert_eq!(next.stat("period").unwrap().count, 0);
    }

    #[test]
    fn a_row_is_440_bytes() {
        // What a probe thread's row queue holds per row, preallocated
        // (`runner::lifecycle::ROW_QUEUE` rows): the header, the metric
        // table and eight slots of 48 bytes.
        assert_eq!(std::mem::size_of::<WindowStat>(), 48);
        assert_eq!(std::mem::size_of::<WindowRow>(), 440);
    }

    #[test]
    fn window_mean_rounds_like_the_run_mean() {
        let mut m = WindowMoments::default();
        for v in [-1, -2] {
            m.add(v, 0, 0);
        }
        assert_eq!(
            WindowStat::from(&m),
            WindowStat {
                count: 2,
                min: -2,
                max: -1,
                mean: -2,
                ..WindowStat::default()
            }
        );
        let mut p = WindowMoments::default();
        for v in [1, 2, 2] {
            p.add(v, 0, 0);
        }
        assert_eq!(WindowStat::from(&p).mean, 2);
        assert_eq!(
            WindowStat::from(&WindowMoments::default()),
            WindowStat::default()
        );
    }

    #[test]
    fn a_full_queue_drops_and_counts_rows() {
        let (tx, _rx) = rtrb::RingBuffer::new(2);
        let mut agg = WindowAggregator::new(0, 0, 0, 100, PERIODIC_METRICS, tx);
        let mut sched = Schedule::new(0, 100);
        for _ in 0..6 {
            let r = sched.next_release();
            agg.push(&sched.complete(r, r + 1));
        }
        agg.finish();
        assert_eq!(agg.pushed(), 2);
        assert_eq!(agg.dropped(), 4);
    }
}
