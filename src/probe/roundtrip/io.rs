//! The I/O simulator's real-time loop: every `--io-period` tick it applies
//! the output image it last received and publishes its input image; between
//! ticks, at a random instant, the input changes (T1). The tick that first
//! applies the output carrying a change is its T4 (`jitterlab_core::
//! roundtrip::IoSide` keeps the books).
//!
//! **Not locked in phase.** Two loops on one clock with a 10:1 period
//! ratio keep a fixed phase, and T1→T4 would take a handful of values. So
//! after each completed round trip the simulator's tick schedule restarts
//! at a random phase ([`ChangeSchedule::phase_ns`]) — as two devices'
//! oscillators drift against each other — and the next change comes a
//! random delay later, uniform over a controller period and two I/O
//! periods: T1 falls at every phase of both loops.
//!
//! The loop makes no allocation: its buffers are the [`Link`]'s and its
//! own, made before the start (design rule 2).
//!
//! The design rules cited here are in `docs/design.md`.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use jitterlab_core::cycle::next_release_after;
use jitterlab_core::roundtrip::{Change, ChangeSchedule, Completed, IoSide, SequenceCounts};
use jitterlab_core::uadp::{datetime_from_unix_ns, Publish, Value};
use jitterlab_sys::{self as sys, rx_timestamp::realtime_ns};
use serde::Serialize;

use super::wire::{change_value, marker_bits, Link, RxCounts, Wire, MAX_FIELDS};
use crate::probe::helper_thread::sleep_until;

/// What the I/O simulator's loop hands out: every completed round trip
/// (false: it could not be taken, counted as dropped), and every tick, after
/// the tick's publish (where a container cell takes the controller's
/// cycles). A closure over completions is one.
pub trait IoEvents {
    /// A round trip completed.
    fn completed(&mut self, c: Completed) -> bool;
    /// A tick ended.
    fn tick(&mut self) {}
}

impl<F: FnMut(Completed) -> bool> IoEvents for F {
    fn completed(&mut self, c: Completed) -> bool {
        self(c)
    }
}

/// What the I/O simulator counted.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct IoCounts {
    /// Ticks (input images published).
    pub ticks: u64,
    /// Ticks that came a whole period or more late (skipped forward).
    pub skipped_ticks: u64,
    /// Changes of the input made.
    pub changes: u64,
    /// Round trips completed.
    pub completed: u64,
    /// Changes abandoned: no output carried them within the give-up time.
    pub lost: u64,
    /// Completions the controller thread's queue had no room for.
    pub dropped: u64,
    /// Sends that failed.
    pub send_errors: u64,
    /// The controller's messages as received.
    pub rx: RxCounts,
    /// Their sequence numbers.
    pub sequence: SequenceCounts,
}

/// The I/O simulator, set up: its link, its two messages' wires, its
/// schedule of changes.
pub struct IoLoop {
    /// Its sockets.
    pub link: Link,
    /// The input (its own messages).
    pub input: Wire,
    /// The output (the controller's messages).
    pub output: Wire,
    /// Tick period, ns.
    pub period_ns: u64,
    /// When changes come and where ticks restart.
    pub changes: ChangeSchedule,
    /// A change no output carried for this long is given up, ns.
    pub give_up_ns: u64,
}

impl IoLoop {
    /// Runs from `t0` until `stop` is raised or `end` (monotonic ns) passes,
    /// handing every completed round trip and every tick to `events`.
    pub fn run(
        &mut self,
        t0: u64,
        end: Option<u64>,
        stop: &AtomicBool,
        events: &mut dyn IoEvents,
    ) -> IoCounts {
        let mut counts = IoCounts::default();
        let mut side = IoSide::new();
        let nin = self.input.writer.config().fields.len();
        let nout = self.output.writer.config().fields.len();
        let mut input = [Value::Boolean(false); MAX_FIELDS];
        for (v, ty) in input.iter_mut().zip(&self.input.writer.config().fields) {
            *v = Value::zero(*ty);
        }
        let mut output = [Value::Boolean(false); MAX_FIELDS];
        let mut next_tick = t0;
        let mut change_at = t0 + self.changes.next_delay_ns();
        let mut nm_seq: u16 = 0;
        self.link.drain();
        loop {
            let wake = match side.outstanding() {
                None => next_tick.min(change_at),
                Some(_) => next_tick,
            };
            sleep_until(wake);
            let now = sys::monotonic_ns();
            if stop.load(Relaxed) || end.is_some_and(|e| now >= e) {
                break;
            }
            let due = match side.outstanding() {
                None => now >= change_at,
                // Nothing came back: give the change up and make the next
                // one (a lost round trip, counted).
                Some(c) => {
                    let gone = now.saturating_sub(c.t1_ns) > self.give_up_ns;
                    counts.lost += u64::from(gone);
                    gone
                }
            };
            if due {
                // T1: the input changes now.
                let t1 = sys::monotonic_ns();
                let t1_real = realtime_ns();
                counts.changes += 1;
                let v = change_value(self.input.marker_type, counts.changes, t1_real);
                input[self.input.marker_field] = v;
                side.change(Change {
                    marker: marker_bits(&v),
                    t1_ns: t1,
                    t1_real_ns: t1_real,
                });
            }
            if now < next_tick {
                continue;
            }
            // The tick: apply what came in, then publish.
            self.link.take_messages(
                &self.output,
                &mut output[..nout],
                &mut counts.rx,
                &mut counts.sequence,
                &mut |marker, rx| side.output(marker, rx),
            );
            let t4 = sys::monotonic_ns();
            counts.ticks += 1;
            let completed = side.tick(t4);
            let publish = Publish {
                nm_sequence: nm_seq,
                dsm_sequence: nm_seq,
                timestamp: datetime_from_unix_ns(realtime_ns() as i64),
                picoseconds: 0,
            };
            nm_seq = nm_seq.wrapping_add(1);
            if self
                .link
                .publish(&self.input.writer, &publish, &input[..nin])
                .is_err()
            {
                counts.send_errors += 1;
            }
            events.tick();
            let (next, skipped) = next_release_after(next_tick, self.period_ns, now);
            counts.skipped_ticks += skipped;
            next_tick = next;
            if let Some(c) = completed {
                counts.completed += 1;
                if !events.completed(c) {
                    counts.dropped += 1;
                }
                change_at = t4 + self.changes.next_delay_ns();
                next_tick = t4 + 1 + self.changes.phase_ns(self.period_ns);
            }
        }
        counts
    }
}
