//! What a probe thread publishes for live metrics (`--metrics`): per metric
//! cumulative bucket counts at fixed bounds, their sum and count, the
//! largest value so far and the last window's figures, handed to the
//! metrics thread without a lock, an allocation or a block.
//!
//! **Why a snapshot at each window's end.** A window row holds only min,
//! max, mean and count; Prometheus wants cumulative histogram buckets. So
//! the probe thread counts every value into a small fixed array of buckets
//! ([`BOUNDS`]: 1, 2, 5 … µs up to 100 ms, then +Inf) as it records it, and
//! when a window closes it copies its counts, with the closed row's
//! figures, into one side of a triple buffer ([`triple_buffer`], made for
//! exactly this: one writer, one reader, the writer never waits, and a read
//! always sees one whole published value). The metrics thread reads the
//! latest snapshot whenever it is scraped. Everything is preallocated when
//! the probe thread is set up ([`channel`]); publishing is a copy of a
//! [`Snapshot`] (1 768 bytes) and an atomic swap once per window.
//!
//! **What a sample costs.** Per metric with a value: the bucket index
//! ([`bucket`]: a leading-zero count, one table load, one compare — no
//! loop over the bounds), one increment, and one add to the sum. The
//! count is the buckets' total, summed once per window. Whether a window
//! closed is one compare with the aggregator's row counter. With metrics
//! off the recorder holds no publisher, and a sample costs the one branch
//! that finds none (`benches/record.rs` measures both).
//!
//! **Signed metrics** (`jitter`) are counted by magnitude, |v|, in the
//! buckets and the sum: a period 30 µs short is as far off as one 30 µs
//! long. The window's and the run's maxima keep their sign.
//!
//! **Units.** Values are integers in the metric's unit (ns, or CPU cycles
//! for `chase`); the bounds are the same integers for both (1 000 …
//! 100 000 000), which for ns is 1 µs … 100 ms. The exporter converts ns to
//! seconds when it writes them.

use crate::probe::descriptor::MAX_METRICS;
use crate::window::{WindowAggregator, WindowStat};

/// Upper bounds (inclusive, as Prometheus's `le`) of the buckets, in the
/// metric's unit: 1, 2, 5 µs … 50, 100 ms for ns. A last bucket, +Inf,
/// takes everything above the last bound. Consecutive bounds are at least
/// a factor 2 apart, which is what lets [`bucket`] find a value's bucket
/// without a loop (a power-of-two range holds at most one bound).
pub const BOUNDS: [u64; 16] = [
    1_000,
    2_000,
    5_000,
    10_000,
    20_000,
    50_000,
    100_000,
    200_000,
    500_000,
    1_000_000,
    2_000_000,
    5_000_000,
    10_000_000,
    20_000_000,
    50_000_000,
    100_000_000,
];

/// Buckets per metric: one per bound and +Inf.
pub const BUCKETS: usize = BOUNDS.len() + 1;

/// [`BOUNDS`] with `u64::MAX` as the bound of +Inf, so the compare in
/// [`bucket`] needs no special case.
const LIMITS: [u64; BUCKETS] = {
    let mut l = [u64::MAX; BUCKETS];
    let mut i = 0;
    while i < BOUNDS.len() {
        l[i] = BOUNDS[i];
        i += 1;
    }
    l
};

/// For each bit length `b` of a value (0 for 0, else `64 - leading_zeros`),
/// the first bucket whose bound is at least `2^(b-1)`, the smallest value
/// of that length.
const FIRST: [u8; 65] = {
    let mut t = [0u8; 65];
    let mut b = 1;
    while b <= 64 {
        let low = 1u64 << (b - 1);
        let mut i = 0;
        while i < BOUNDS.len() && BOUNDS[i] < low {
            i += 1;
        }
        t[b] = i as u8;
        b += 1;
    }
    t
};

/// The bucket of value `v`: the first with `v <= bound`, [`BUCKETS`] − 1
/// (+Inf) above the last bound.
///
/// Values of one bit length lie in `[2^(b-1), 2^b)`, a range that holds at
/// most one bound (they are at least a factor 2 apart). `FIRST[b]` is the
/// first bound not below the range's start; if `v` is above it, the next
/// bound is at least twice it, so at or above `2^b > v`. Hence one compare.
#[inline(always)]
pub fn bucket(v: u64) -> usize {
    let b = (u64::BITS - v.leading_zeros()) as usize;
    let i = FIRST[b] as usize;
    i + (v > LIMITS[i]) as usize
}

/// One metric's figures at a window's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct MetricSnapshot {
    /// Values per bucket (not cumulative), bucket `i` up to `BOUNDS[i]`,
    /// the last one above every bound.
    pub buckets: [u64; BUCKETS],
    /// Values counted (the buckets' total).
    pub count: u64,
    /// Sum of the values' magnitudes, in the metric's unit.
    pub sum: u64,
    /// The largest value since the start (`None` before the first).
    pub max: Option<i64>,
    /// The last window's figures (count 0 when the metric had no value in
    /// it).
    pub window: WindowStat,
}

impl MetricSnapshot {
    /// The cumulative counts, bucket by bucket, as Prometheus's `le`
    /// series want them; the last is `count`.
    pub fn cumulative(&self) -> [u64; BUCKETS] {
        let mut c = self.buckets;
        for i in 1..BUCKETS {
            c[i] += c[i - 1];
        }
        c
    }
}

/// Everything one probe thread publishes at a window's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Snapshot {
    /// Windows closed so far (rows queued or dropped); 0 until the first
    /// window ends, and the figures are all zero until then.
    pub windows: u64,
    /// Number of the last closed window since the run's first release.
    pub last_window: u64,
    /// Samples (a periodic probe: cycles) in the closed windows.
    pub samples: u64,
    /// Overruns in the closed windows.
    pub overruns: u64,
    /// Window rows the writer could not take (its queue was full).
    pub dropped_rows: u64,
    /// Per metric slot of the probe's table; the slots after its last
    /// metric stay empty.
    pub metrics: [MetricSnapshot; MAX_METRICS],
}

/// The probe thread's side: the running bucket counts and the writing end
/// of the triple buffer. Owned by the recorder; see the module doc.
pub struct Publisher {
    state: Snapshot,
    input: triple_buffer::Input<Snapshot>,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}

/// The metrics thread's side: the reading end of the triple buffer.
pub struct Reader {
    output: triple_buffer::Output<Snapshot>,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("latest", self.output.output_buffer())
            .finish_non_exhaustive()
    }
}

/// A connected publisher and reader, allocated here (before the probe
/// thread measures: it never allocates afterwards).
pub fn channel() -> (Publisher, Reader) {
    let (input, output) = triple_buffer::triple_buffer(&Snapshot::default());
    (
        Publisher {
            state: Snapshot::default(),
            input,
        },
        Reader { output },
    )
}

impl Publisher {
    /// Takes one sample's values, in the order of the probe's metric table
    /// (`None`: no value for that metric this time). Call it after the
    /// window aggregator counted the sample: when that closed a window,
    /// the counts so far — every sample up to that window's end — are
    /// published first, with the closed row's figures.
    #[inline(always)]
    pub fn record(&mut self, windows: &WindowAggregator, values: &[Option<i64>]) {
        if windows.closed() != self.state.windows {
            self.publish(windows);
        }
        for (m, v) in self.state.metrics.iter_mut().zip(values) {
            if let Some(v) = *v {
                let a = v.unsigned_abs();
                m.buckets[bucket(a)] += 1;
                m.sum = m.sum.wrapping_add(a);
            }
        }
    }

    /// Publishes the last window once the aggregator has pushed it (after
    /// the loop, [`WindowAggregator::finish`]).
    pub fn finish(&mut self, windows: &WindowAggregator) {
        if windows.closed() != self.state.windows {
            self.publish(windows);
        }
    }

    /// The snapshot as of the last closed window, into the triple buffer.
    /// Once per window: no allocation, no lock, no wait.
    #[cold]
    fn publish(&mut self, windows: &WindowAggregator) {
        let s = &mut self.state;
        s.windows = windows.closed();
        s.dropped_rows = windows.dropped();
        if let Some(row) = windows.last_row() {
            s.last_window = row.window;
            s.samples += row.cycles;
            s.overruns += row.overruns;
            for (m, w) in s.metrics.iter_mut().zip(&row.stats) {
                m.window = *w;
                if w.count > 0 {
                    m.max = Some(m.max.map_or(w.max, |x| x.max(w.max)));
                }
            }
        }
        for m in s.metrics.iter_mut() {
            m.count = m.buckets.iter().sum();
        }
        self.input.write(*s);
    }
}

impl Reader {
    /// The latest published snapshot.
    pub fn read(&mut self) -> &Snapshot {
        self.output.read()
    }
}

#[cfg(test)]
mod tests;
