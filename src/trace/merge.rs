//! Merging the per-CPU event streams into one stream in time order, handed
//! out in pieces as they are read, so that no later piece holds an event
//! earlier than one already handed out.
//!
//! Each CPU's ring is in the order its records were written, which is
//! their time order but for an interrupt that lands between a record's
//! time stamp and its write (its own record then comes first, a few
//! microseconds early). So each CPU's new events are sorted (stably) into
//! its queue, and a read hands out every queued event up to a **cut**: the
//! oldest of the CPUs' newest times — a CPU whose ring had nothing new
//! counts with the time the read began, when every record it had stamped
//! before was already written — less [`SLACK_NS`] for records being
//! written while the read looked. Whatever is left waits for the next read;
//! [`Merger::drain_all`] at the end hands out everything.
//!
//! An event that still arrives at or before a cut already handed out
//! cannot be put in its place; it is dropped and counted ([`Merger::late`])
//! and the stream gets an [`EventKind::Lost`] for it at the cut, so the
//! model sees the gap as lost events, never as a long cycle.

use jitterlab_core::trace::event::{Event, EventKind};

/// How far behind the newest times a cut stays: longer than a record is
/// ever being written (a few microseconds, with interrupts off).
pub const SLACK_NS: u64 = 1_000_000;

/// The per-CPU queues of events read and not handed out yet.
#[derive(Debug)]
pub struct Merger {
    queues: Vec<Vec<Event>>,
    late: Vec<u64>,
    /// Every event at or before it has been handed out.
    handed: Option<u64>,
}

impl Merger {
    /// Queues for `cpus` streams (by index, not CPU number).
    pub fn new(cpus: usize) -> Merger {
        Merger {
            queues: vec![Vec::new(); cpus],
            late: vec![0; cpus],
            handed: None,
        }
    }

    /// Queues the new events of stream `i`, in the order they were read.
    pub fn push(&mut self, i: usize, events: impl IntoIterator<Item = Event>) {
        let queue = &mut self.queues[i];
        let mut late = 0u64;
        let mut lost_cpu = None;
        for e in events {
            match self.handed {
                Some(h) if e.time_ns <= h => {
                    late += 1;
                    lost_cpu = Some(e.cpu);
                }
                _ => queue.push(e),
            }
        }
        if let (Some(h), Some(cpu)) = (self.handed, lost_cpu) {
            self.late[i] += late;
            queue.push(Event {
                time_ns: h,
                cpu,
                kind: EventKind::Lost { count: late },
            });
        }
        queue.sort_by_key(|e| e.time_ns);
    }

    /// Events of stream `i` dropped because they came after their time
    /// was handed out.
    pub fn late(&self, i: usize) -> u64 {
        self.late[i]
    }

    /// The newest queued time of stream `i`.
    pub fn newest(&self, i: usize) -> Option<u64> {
        self.queues[i].last().map(|e| e.time_ns)
    }

    /// Appends to `out`, in time order (ties by stream), every queued event
    /// at or before `cut`.
    pub fn drain_to(&mut self, cut: u64, out: &mut Vec<Event>) {
        let counts: Vec<usize> = self
            .queues
            .iter()
            .map(|q| q.partition_point(|e| e.time_ns <= cut))
            .collect();
        let mut taken = vec![0usize; self.queues.len()];
        loop {
            let next = (0..self.queues.len())
                .filter(|&i| taken[i] < counts[i])
                .min_by_key(|&i| self.queues[i][taken[i]].time_ns);
            let Some(i) = next else { break };
            out.push(self.queues[i][taken[i]].clone());
            taken[i] += 1;
        }
        for (q, n) in self.queues.iter_mut().zip(counts) {
            q.drain(..n);
        }
        if cut != u64::MAX {
            self.handed = Some(self.handed.map_or(cut, |h| h.max(cut)));
        }
    }

    /// Appends everything queued, in time order.
    pub fn drain_all(&mut self, out: &mut Vec<Event>) {
        self.drain_to(u64::MAX, out);
    }
}

/// The cut of a read that began at `began_ns`: per stream, its newest
/// queued time if it had new records, else `began_ns`; the oldest of
/// those, less [`SLACK_NS`].
pub fn cut(began_ns: u64, newest: impl IntoIterator<Item = Option<u64>>) -> u64 {
    newest
        .into_iter()
        .map(|n| n.unwrap_or(began_ns))
        .min()
        .unwrap_or(began_ns)
        .saturating_sub(SLACK_NS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(time_ns: u64, cpu: u32) -> Event {
        Event {
            time_ns,
            cpu,
            kind: EventKind::IrqExit { irq: cpu },
        }
    }

    fn times(events: &[Event]) -> Vec<(u64, u32)> {
        events.iter().map(|e| (e.time_ns, e.cpu)).collect()
    }

    #[test]
    fn streams_merge_in_time_order_up_to_the_cut() {
        let mut m = Merger::new(2);
        // CPU 0's ring has an interrupt's record before the one it
        // interrupted.
        m.push(
            0,
            [ev(1_000, 0), ev(5_000, 0), ev(4_000, 0), ev(3_000_000, 0)],
        );
        m.push(1, [ev(2_000, 1), ev(4_000, 1), ev(2_500_000, 1)]);
        let cut = cut(9_000_000, [m.newest(0), m.newest(1)]);
        assert_eq!(cut, 1_500_000);
        let mut out = Vec::new();
        m.drain_to(cut, &mut out);
        assert_eq!(
            times(&out),
            [(1_000, 0), (2_000, 1), (4_000, 0), (4_000, 1), (5_000, 0)]
        );
        // What was past the cut comes next time, still in order.
        out.clear();
        m.push(1, [ev(2_600_000, 1)]);
        m.drain_all(&mut out);
        assert_eq!(
            times(&out),
            [(2_500_000, 1), (2_600_000, 1), (3_000_000, 0)]
        );
    }

    #[test]
    fn a_quiet_stream_holds_the_cut_at_the_reads_start() {
        assert_eq!(cut(9_000_000, [Some(20_000_000), None]), 8_000_000);
        assert_eq!(cut(500, [None]), 0);
    }

    #[test]
    fn an_event_behind_the_handed_out_cut_becomes_a_lost_event() {
        let mut m = Merger::new(2);
        m.push(0, [ev(1_000, 0), ev(3_000_000, 0)]);
        let mut out = Vec::new();
        m.drain_to(2_000_000, &mut out);
        m.push(1, [ev(1_500_000, 1), ev(2_000_000, 1), ev(2_100_000, 1)]);
        out.clear();
        m.drain_all(&mut out);
        assert_eq!(
            out,
            vec![
                Event {
                    time_ns: 2_000_000,
                    cpu: 1,
                    kind: EventKind::Lost { count: 2 }
                },
                ev(2_100_000, 1),
                ev(3_000_000, 0),
            ]
        );
        assert_eq!((m.late(0), m.late(1)), (0, 2));
    }
}
