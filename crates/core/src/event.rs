//! The sample of an event-driven probe, and the sink it is pushed into.
//!
//! The periodic probes (`cyclic`, `wakeup`) push one [`CycleSample`] per
//! cycle, with the four metrics of DESIGN.md's formulas. The other probes
//! measure something else each time an event happens: one pointer chase
//! (`chase`, in CPU cycles), one token hand-over (`ctxswitch`), one event
//! answered (`response`). They push an [`EventSample`]: up to
//! [`MAX_EVENT_METRICS`] values, each a metric the probe declares once in a
//! [`MetricDef`] table, so the same statistics, windows, outliers and store
//! serve every probe. A value is `None` when that metric has nothing to say
//! for this event (a datagram has a kernel receive stamp, an eventfd write
//! has none).
//!
//! Like [`Sink`](crate::cycle::Sink), an [`EventSink`] must not block,
//! allocate or make a system call: probes push from their real-time loop.
//!
//! [`CycleSample`]: crate::cycle::CycleSample

use serde::{Deserialize, Serialize};

/// How many metrics one event can carry (the window rows' slots).
pub const MAX_EVENT_METRICS: usize = 4;

/// The unit of a metric's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricUnit {
    /// Nanoseconds (DESIGN rule 1).
    Ns,
    /// CPU (TSC) cycles, their own unit; converted only for display.
    Cycles,
}

impl MetricUnit {
    /// The unit's short name, as reports print it.
    pub fn name(self) -> &'static str {
        match self {
            MetricUnit::Ns => "ns",
            MetricUnit::Cycles => "cycles",
        }
    }
}

/// One metric an event probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// Name used in CLI, JSON, CSV and the database (`chase`, `handover`, …).
    pub name: &'static str,
    /// Unit of its values.
    pub unit: MetricUnit,
    /// True when negative values mean something (kept in their own
    /// histogram).
    pub signed: bool,
    /// True when "% over the threshold" applies to it.
    pub thresholded: bool,
}

/// One event measured by a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSample {
    /// 0-based number of this event.
    pub index: u64,
    /// When it happened, on CLOCK_MONOTONIC, ns (places it in a window).
    pub at: u64,
    /// One value per metric of the probe's [`MetricDef`] table, in its order.
    pub values: [Option<i64>; MAX_EVENT_METRICS],
}

/// Consumes event samples pushed by a probe.
pub trait EventSink {
    /// Takes one sample; must not block, allocate or make a system call.
    fn push(&mut self, sample: &EventSample);
}

/// Collects samples in a vector: for tests and for off-line use (it
/// allocates, so never in a real-time loop).
impl EventSink for Vec<EventSample> {
    fn push(&mut self, sample: &EventSample) {
        Vec::push(self, *sample);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_vector_collects_every_sample_in_order() {
        let mut v: Vec<EventSample> = Vec::new();
        for i in 0..3 {
            EventSink::push(
                &mut v,
                &EventSample {
                    index: i,
                    at: 10 * i,
                    values: [Some(i as i64), None, None, None],
                },
            );
        }
        assert_eq!(
            v.iter().map(|s| (s.index, s.values[0])).collect::<Vec<_>>(),
            vec![(0, Some(0)), (1, Some(1)), (2, Some(2))]
        );
        assert_eq!(
            serde_json::to_string(&MetricUnit::Cycles).unwrap(),
            "\"cycles\""
        );
    }
}
