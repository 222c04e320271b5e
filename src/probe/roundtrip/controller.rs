//! The controller's real-time task, the soft PLC: at each release of its
//! period it takes every message queued on its subscriber (the latest
//! input image, T2 = the kernel receive stamp of the first message carrying
//! a change), runs the calibrated scan, writes the output image (the input's
//! marker field copied to the output's) and publishes it (T3: the
//! driver's software transmit stamp of the send, or where the kernel gives
//! none the clock read just before the send call). The bookkeeping is `jitterlab_core::roundtrip::
//! ControllerSide`; the cycle's timing is the release schedule's
//! (`jitterlab_core::cycle`), so its wake-up latency, periodic jitter and
//! execution time mean what they mean for the cyclic probe.
//!
//! Draining at the start of the cycle reads the same image a subscriber
//! thread of its own would have kept: the kernel keeps each message's
//! receive stamp while it is queued. No allocation in the loop.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use jitterlab_core::cycle::{CycleSample, Schedule};
use jitterlab_core::roundtrip::{ControllerSide, Handled, SequenceCounts};
use jitterlab_core::uadp::{datetime_from_unix_ns, Publish, Value};
use jitterlab_sys::{self as sys, rx_timestamp::realtime_ns};
use serde::Serialize;

use super::wire::{Link, RxCounts, Wire, MAX_FIELDS};
use crate::probe::helper_thread::sleep_until;
use crate::probe::scan::Scan;
use crate::probe::ScheduleCounts;

/// What the controller counted.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct ControllerCounts {
    /// Output images published.
    pub published: u64,
    /// Sends that failed.
    pub send_errors: u64,
    /// Changes of the input handled (T2→T3 measured).
    pub handled: u64,
    /// Cycles whose output was late: the task overran into its next
    /// release.
    pub late_outputs: u64,
    /// The I/O simulator's messages as received.
    pub rx: RxCounts,
    /// Their sequence numbers.
    pub sequence: SequenceCounts,
}

/// The controller, set up.
pub struct ControllerLoop {
    /// Its sockets.
    pub link: Link,
    /// The input (the simulator's messages).
    pub input: Wire,
    /// The output (its own).
    pub output: Wire,
    /// The task's period, ns.
    pub period_ns: u64,
    /// The scan, made and calibrated on the real-time thread.
    pub scan: Option<Scan>,
}

impl ControllerLoop {
    /// Runs from `t0` for `releases` releases (or until `stop`), calling
    /// `cycle` after each cycle with its sample and the change it handled;
    /// `cycle` returns false to stop.
    pub fn run(
        &mut self,
        t0: u64,
        releases: Option<u64>,
        stop: &AtomicBool,
        cycle: &mut dyn FnMut(&CycleSample, Option<Handled>) -> bool,
    ) -> (ControllerCounts, ScheduleCounts) {
        let mut counts = ControllerCounts::default();
        let mut side = ControllerSide::new();
        let nin = self.input.writer.config().fields.len();
        let nout = self.output.writer.config().fields.len();
        let mut input = [Value::Boolean(false); MAX_FIELDS];
        let mut output = [Value::Boolean(false); MAX_FIELDS];
        for (v, ty) in output.iter_mut().zip(&self.output.writer.config().fields) {
            *v = Value::zero(*ty);
        }
        let mut schedule = Schedule::new(t0, self.period_ns);
        let mut nm_seq: u16 = 0;
        self.link.drain();
        loop {
            sleep_until(schedule.next_release());
            let start = sys::monotonic_ns();
            // Read the input image: everything queued since the last cycle.
            self.link.take_messages(
                &self.input,
                &mut input[..nin],
                &mut counts.rx,
                &mut counts.sequence,
                &mut |marker, rx| side.input(marker, rx),
            );
            let image = side.read();
            // The application: the scan, then the output image.
            if let Some(s) = self.scan.as_mut() {
                s.run();
            }
            if image.is_some() {
                output[self.output.marker_field] = input[self.input.marker_field];
            }
            let publish = Publish {
                nm_sequence: nm_seq,
                dsm_sequence: nm_seq,
                timestamp: datetime_from_unix_ns(realtime_ns() as i64),
                picoseconds: 0,
            };
            nm_seq = nm_seq.wrapping_add(1);
            // T3 is the send: the driver's transmit stamp where the kernel
            // gives one, else the clock read just before the send call (on a
            // veth pair the peer's receive stamp is taken inside the send, so
            // a read after it would come later than the message's arrival).
            let before_send = realtime_ns();
            let sent = self
                .link
                .publish(&self.output.writer, &publish, &output[..nout]);
            let t3_real = self.link.tx_stamp().unwrap_or(before_send);
            let end = sys::monotonic_ns();
            let handled = match sent {
                Ok(()) => {
                    counts.published += 1;
                    image.and_then(|i| side.published(i, t3_real))
                }
                Err(_) => {
                    counts.send_errors += 1;
                    None
                }
            };
            counts.handled += u64::from(handled.is_some());
            let sample = schedule.complete(start, end);
            counts.late_outputs += u64::from(sample.overrun);
            let more = cycle(&sample, handled);
            let due = sample.release_index + 1 + sample.skipped;
            if !more || stop.load(Relaxed) || releases.is_some_and(|r| due >= r) {
                break;
            }
        }
        (counts, ScheduleCounts::of(&schedule))
    }
}
