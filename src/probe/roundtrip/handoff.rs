//! The controller's cycles handed from its container to the host, one
//! fixed-size record per cycle through a named pipe in a bind-mounted work
//! directory: the host's measuring thread (the I/O simulator) pushes them
//! into the cell's one recorder, so a container cell has the same samples,
//! windows, statistics and histograms as a host cell — and, both ends
//! reading one kernel's clocks, the same T1→T2 and T3→T4rx.
//!
//! A record is [`RECORD`] bytes, written with one `write` (a pipe writes
//! up to `PIPE_BUF` bytes atomically, so records never interleave or
//! split); both ends are non-blocking, so the controller never waits for
//! the host: a record that finds the pipe full is counted as dropped.
//! Nothing here allocates after opening.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use anyhow::{Context, Result};
use jitterlab_core::cycle::CycleSample;
use jitterlab_core::roundtrip::Handled;

/// Bytes of one record: ten little-endian 64-bit words.
pub const RECORD: usize = 80;
/// Stands for "no value" in a signed word.
const NONE: i64 = i64::MIN;

/// One cycle of the controller's task, as handed over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleRecord {
    /// Measured-cycle number.
    pub cycle: u64,
    /// When the task started (CLOCK_MONOTONIC, ns: one clock for the host
    /// and its containers).
    pub start: u64,
    /// Wake-up latency, ns.
    pub latency: i64,
    /// Periodic jitter, ns (none for the first cycle and after a skip).
    pub jitter: Option<i64>,
    /// Execution time, ns.
    pub exec: i64,
    /// The cycle overran its period.
    pub overrun: bool,
    /// Releases skipped before it.
    pub skipped: u64,
    /// The change it handled: its marker, T2 and T3 (realtime).
    pub handled: Option<Handled>,
}

impl CycleRecord {
    /// The record of cycle `s`, which handled `h`.
    pub fn of(s: &CycleSample, h: Option<Handled>) -> CycleRecord {
        CycleRecord {
            cycle: s.cycle,
            start: s.start,
            latency: s.latency,
            jitter: s.jitter,
            exec: s.exec,
            overrun: s.overrun,
            skipped: s.skipped,
            handled: h,
        }
    }

    /// Its bytes.
    pub fn encode(&self) -> [u8; RECORD] {
        let (marker, t2, t3) = match self.handled {
            Some(h) => (h.marker, h.t2_real_ns as i64, h.t3_real_ns as i64),
            None => (0, NONE, NONE),
        };
        let words: [i64; 10] = [
            self.cycle as i64,
            self.start as i64,
            self.latency,
            self.jitter.unwrap_or(NONE),
            self.exec,
            i64::from(self.overrun),
            self.skipped as i64,
            marker as i64,
            t2,
            t3,
        ];
        let mut out = [0u8; RECORD];
        for (chunk, w) in out.chunks_exact_mut(8).zip(words) {
            chunk.copy_from_slice(&w.to_le_bytes());
        }
        out
    }

    /// The record of `bytes`.
    pub fn decode(bytes: &[u8; RECORD]) -> CycleRecord {
        let mut w = [0i64; 10];
        for (x, chunk) in w.iter_mut().zip(bytes.chunks_exact(8)) {
            *x = i64::from_le_bytes(chunk.try_into().expect("8 bytes"));
        }
        CycleRecord {
            cycle: w[0] as u64,
            start: w[1] as u64,
            latency: w[2],
            jitter: (w[3] != NONE).then_some(w[3]),
            exec: w[4],
            overrun: w[5] != 0,
            skipped: w[6] as u64,
            handled: (w[8] != NONE).then_some(Handled {
                marker: w[7] as u64,
                t2_real_ns: w[8] as u64,
                t3_real_ns: w[9] as u64,
            }),
        }
    }
}

/// The controller's end (in the container).
#[derive(Debug)]
pub struct Sender {
    pipe: File,
    /// Records that found the pipe full.
    pub dropped: u64,
}

impl Sender {
    /// Opens the pipe at `path` for writing, without waiting; the host has
    /// it open for reading already.
    pub fn open(path: &Path) -> Result<Sender> {
        let pipe = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .with_context(|| format!("opening the samples pipe {}", path.display()))?;
        Ok(Sender { pipe, dropped: 0 })
    }

    /// Hands one record over, or counts it dropped.
    pub fn send(&mut self, r: &CycleRecord) {
        if !matches!(self.pipe.write(&r.encode()), Ok(RECORD)) {
            self.dropped += 1;
        }
    }
}

/// The host's end.
#[derive(Debug)]
pub struct Receiver {
    pipe: File,
    buf: [u8; RECORD * 64],
    have: usize,
    /// Records taken.
    pub received: u64,
}

impl Receiver {
    /// Makes the pipe at `path` and opens it for reading, without waiting
    /// for a writer.
    pub fn create(path: &Path) -> Result<Receiver> {
        jitterlab_sys::mkfifo(path, 0o600)
            .with_context(|| format!("making the samples pipe {}", path.display()))?;
        let pipe = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .with_context(|| format!("opening the samples pipe {}", path.display()))?;
        Ok(Receiver {
            pipe,
            buf: [0; RECORD * 64],
            have: 0,
            received: 0,
        })
    }

    /// Takes every whole record queued now, in order.
    pub fn poll(&mut self, each: &mut dyn FnMut(CycleRecord)) {
        loop {
            match self.pipe.read(&mut self.buf[self.have..]) {
                Ok(0) => return,
                Ok(n) => self.have += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => return,
            }
            let whole = self.have / RECORD * RECORD;
            for chunk in self.buf[..whole].chunks_exact(RECORD) {
                each(CycleRecord::decode(chunk.try_into().expect("RECORD bytes")));
                self.received += 1;
            }
            self.buf.copy_within(whole..self.have, 0);
            self.have -= whole;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_cross_the_pipe_whole_and_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples");
        let mut rx = Receiver::create(&path).unwrap();
        let mut tx = Sender::open(&path).unwrap();
        let recs: Vec<CycleRecord> = (0..200)
            .map(|i| CycleRecord {
                cycle: i,
                start: 1_000_000 * i,
                latency: 12_345,
                jitter: (i > 0).then_some(-(i as i64)),
                exec: 500_000,
                overrun: i % 7 == 0,
                skipped: i % 3,
                handled: (i % 2 == 0).then_some(Handled {
                    marker: 133_000_000_000_000_000 + i,
                    t2_real_ns: 1_700_000_000_000_000_000 + i,
                    t3_real_ns: 1_700_000_000_000_600_000 + i,
                }),
            })
            .collect();
        let mut got = Vec::new();
        for r in &recs {
            tx.send(r);
            if r.cycle % 50 == 0 {
                rx.poll(&mut |x| got.push(x));
            }
        }
        rx.poll(&mut |x| got.push(x));
        assert_eq!(got, recs);
        assert_eq!((tx.dropped, rx.received), (0, 200));
    }

    #[test]
    fn a_full_pipe_drops_records_and_never_blocks_the_controller() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("samples");
        let mut rx = Receiver::create(&path).unwrap();
        let mut tx = Sender::open(&path).unwrap();
        let r = CycleRecord {
            cycle: 1,
            start: 2,
            latency: 3,
            jitter: None,
            exec: 4,
            overrun: false,
            skipped: 0,
            handled: None,
        };
        // A pipe holds 64 KiB by default: 819 records, then drops.
        for _ in 0..2_000 {
            tx.send(&r);
        }
        assert!(tx.dropped > 0);
        let mut n = 0;
        rx.poll(&mut |x| {
            assert_eq!(x, r);
            n += 1
        });
        assert_eq!(n + tx.dropped, 2_000);
    }
}
