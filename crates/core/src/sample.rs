//! What a probe pushes and the traits it pushes through: a [`Sample`]
//! (up to [`MAX_METRICS`] values, slot `i` being metric `i` of the probe's
//! descriptor), a periodic probe's [`CycleSample`] through [`CycleSink`],
//! any other sample through [`SampleSink`].
//!
//! They live apart from the [`Recorder`](crate::recorder::Recorder) that
//! implements them so that the window aggregator, which takes cycles too,
//! and the recorder, which owns a window aggregator, both depend on this
//! module and not on each other. A sink must not block, allocate or make a
//! system call: probes push from their real-time loop.

use crate::cycle::CycleSample;
use crate::probe::descriptor::MAX_METRICS;

/// One sample measured by a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    /// 0-based number of this sample.
    pub index: u64,
    /// When it happened, on CLOCK_MONOTONIC, ns (places it in a window).
    pub at: u64,
    /// One value per metric of the probe's [`MetricDef`] table, in its
    /// order; the slots after the table's last metric are `None`.
    pub values: [Option<i64>; MAX_METRICS],
}

/// The slots of a sample from the values of its first `N` metrics (the
/// others `None`): `slots([Some(handover)])`. `N` is checked against
/// [`MAX_METRICS`] when the program is compiled.
#[inline(always)]
pub const fn slots<const N: usize>(first: [Option<i64>; N]) -> [Option<i64>; MAX_METRICS] {
    const { assert!(N <= MAX_METRICS, "more values than a sample has slots") };
    let mut v = [None; MAX_METRICS];
    let mut i = 0;
    while i < N {
        v[i] = first[i];
        i += 1;
    }
    v
}

/// Consumes the cycles a periodic probe pushes (one [`CycleSample`] per
/// cycle of its release schedule); must not block, allocate or make a
/// system call.
pub trait CycleSink {
    /// Takes one cycle.
    fn push(&mut self, sample: &CycleSample);
}

/// Consumes the samples a probe pushes.
pub trait SampleSink {
    /// Takes one sample; must not block, allocate or make a system call.
    fn push(&mut self, sample: &Sample);
}

/// Collects samples in a vector: for tests and for off-line use (it
/// allocates, so never in a real-time loop).
impl SampleSink for Vec<Sample> {
    fn push(&mut self, sample: &Sample) {
        Vec::push(self, *sample);
    }
}
