//! The 1 µs histogram of a probe thread's main latency, handed to the
//! writer thread every few minutes while the probe measures: what a
//! monitor's "last hour's percentiles" are computed from.
//!
//! **Why.** A window row holds min, max, mean and count; percentiles need
//! the distribution. A monitor runs for months, so the run's histogram —
//! everything since the start — says nothing of the last hour. The probe
//! thread already counts every latency in 1 µs bins
//! (`recorder::LatencyHistogram`); every `every` closed windows (5 minutes of
//! them by default) it copies those cumulative counts into one side of a
//! triple buffer ([`triple_buffer`]: one writer, one reader, the writer
//! never waits). The writer thread takes the difference from the
//! snapshot before, which is that span's histogram, and stores it sparse.
//!
//! **What it costs the probe.** Per sample, one compare of the windows
//! closed so far with the next publication's; per publication, a copy of
//! the bins (80 kB for the default 10 000) and an atomic swap. The three
//! buffers are allocated with the bins' length when the thread is set up,
//! so the copy never allocates. It is taken when a window closes, before
//! the sample that closed it is counted, so a snapshot holds exactly the
//! samples of the windows closed so far.

/// Cumulative 1 µs counts as of a window's end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FineSnapshot {
    /// Windows closed (rows pushed or dropped) when it was taken; 0: none
    /// published yet.
    pub windows: u64,
    /// `buckets[i]` counts latencies in `[i µs, i+1 µs)` since the start.
    pub buckets: Vec<u64>,
    /// Samples at or beyond the last bucket since the start.
    pub overflows: u64,
}

/// The probe thread's side. Owned by the recorder.
pub struct FinePublisher {
    input: triple_buffer::Input<FineSnapshot>,
    every: u64,
    next: u64,
}

impl std::fmt::Debug for FinePublisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FinePublisher")
            .field("every", &self.every)
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

/// The writer thread's side.
pub struct FineReader {
    output: triple_buffer::Output<FineSnapshot>,
}

impl std::fmt::Debug for FineReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FineReader").finish_non_exhaustive()
    }
}

/// A publisher of `buckets` 1 µs bins every `every` closed windows (at
/// least 1) and its reader, allocated here, before the probe measures.
pub fn fine_channel(buckets: usize, every: u64) -> (FinePublisher, FineReader) {
    let empty = FineSnapshot {
        windows: 0,
        buckets: vec![0; buckets],
        overflows: 0,
    };
    let (input, output) = triple_buffer::triple_buffer(&empty);
    let every = every.max(1);
    (
        FinePublisher {
            input,
            every,
            next: every,
        },
        FineReader { output },
    )
}

impl FinePublisher {
    /// Publishes the histogram's counts (`buckets`, `overflows`: the
    /// recorder's `LatencyHistogram`) when `closed` windows reach the next
    /// publication. Call it after the window aggregator counted a sample
    /// and before the sample goes into `h`.
    #[inline(always)]
    pub fn poll(&mut self, closed: u64, buckets: &[u64], overflows: u64) {
        if closed >= self.next {
            self.publish(closed, buckets, overflows);
        }
    }

    /// The copy and the swap; the next publication is at the next multiple
    /// of `every` windows.
    #[cold]
    fn publish(&mut self, closed: u64, buckets: &[u64], overflows: u64) {
        let b = self.input.input_buffer_mut();
        let n = b.buckets.len().min(buckets.len());
        b.buckets[..n].copy_from_slice(&buckets[..n]);
        b.overflows = overflows;
        b.windows = closed;
        self.input.publish();
        self.next = (closed / self.every + 1) * self.every;
    }

    /// Publishes the counts at the end of the measurement (after the last
    /// window was pushed), whatever the count of windows.
    pub fn finish(&mut self, closed: u64, buckets: &[u64], overflows: u64) {
        self.publish(closed, buckets, overflows);
    }
}

impl FineReader {
    /// The latest snapshot, `None` before the first.
    pub fn read(&mut self) -> Option<&FineSnapshot> {
        let s = self.output.read();
        (s.windows > 0).then_some(s)
    }
}

/// The counts of `now` not yet in `before` (the same thread's earlier
/// snapshot; `None`: since the start), bin by bin, and the overflows.
pub fn difference(now: &FineSnapshot, before: Option<&FineSnapshot>) -> (Vec<u64>, u64) {
    match before {
        None => (now.buckets.clone(), now.overflows),
        Some(b) => (
            now.buckets
                .iter()
                .zip(b.buckets.iter().chain(std::iter::repeat(&0)))
                .map(|(n, b)| n.saturating_sub(*b))
                .collect(),
            now.overflows.saturating_sub(b.overflows),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::LatencyHistogram;

    #[test]
    fn publishes_every_n_windows_and_the_difference_is_the_span() {
        let (mut p, mut r) = fine_channel(4, 3);
        let mut h = LatencyHistogram::new(4);
        assert_eq!(r.read(), None);
        h.record(1_500, 0);
        p.poll(2, &h.buckets, h.overflows);
        assert_eq!(r.read(), None, "not before 3 windows");
        p.poll(3, &h.buckets, h.overflows);
        let first = r.read().cloned().unwrap();
        assert_eq!(first.windows, 3);
        assert_eq!(first.buckets, vec![0, 1, 0, 0]);
        h.record(3_200, 1);
        h.record(9_000, 2);
        p.poll(5, &h.buckets, h.overflows);
        assert_eq!(r.read().unwrap().windows, 3, "next at 6");
        // Windows can close several at once (a stall): published at 7,
        // then next at 9.
        p.poll(7, &h.buckets, h.overflows);
        let second = r.read().cloned().unwrap();
        assert_eq!(second.windows, 7);
        assert_eq!(difference(&second, Some(&first)), (vec![0, 0, 0, 1], 1));
        assert_eq!(difference(&first, None), (vec![0, 1, 0, 0], 0));
        p.poll(8, &h.buckets, h.overflows);
        assert_eq!(r.read().unwrap().windows, 7);
        p.finish(8, &h.buckets, h.overflows);
        assert_eq!(r.read().unwrap().windows, 8);
    }
}
