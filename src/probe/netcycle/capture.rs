//! `--pcap FILE`: what the CN side received and sent, copied by its real-time
//! thread into a preallocated byte ring and written to a nanosecond pcap
//! (`net::pcap::PcapWriter`) by a writer thread that is not real-time.
//!
//! The CN emulator must never wait for a disk (design rule 2), so a
//! record — the frame's receive stamp (8 bytes), its length (2 bytes) and
//! its bytes — goes into a lock-free single-producer ring (`rtrb`, the
//! hand-over every probe uses) as one chunk, or, when the ring has no room
//! for it, is counted as dropped. The writer drains the ring every few
//! milliseconds; a whole record is committed at once, so it never sees
//! half of one. The capture's frames and drops go into the result.
//!
//! The design rules and documents cited here are in `docs/design.md`.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};
use serde::Serialize;

use crate::net::pcap::PcapWriter;

/// Bytes of the ring: at [Baumgartner POWERLINK]'s largest network (40 CNs, 250 µs) a
/// few hundred milliseconds of frames, seconds for the default 3 CNs.
pub const RING_BYTES: usize = 8 << 20;
/// Bytes before each frame in the ring: stamp and length.
const RECORD_HEADER: usize = 10;
/// How often the writer drains the ring.
const DRAIN_EVERY: Duration = Duration::from_millis(5);

/// The real-time side: copies frames into the ring.
pub struct CaptureRing {
    producer: rtrb::Producer<u8>,
    /// Frames the ring had no room for.
    pub dropped: u64,
}

impl CaptureRing {
    /// Copies `frame`, received at `ts_ns` (CLOCK_REALTIME), into the ring,
    /// or counts it dropped. Allocates nothing, never blocks.
    pub fn push(&mut self, ts_ns: u64, frame: &[u8]) {
        let len = frame.len().min(usize::from(u16::MAX));
        let Ok(mut chunk) = self.producer.write_chunk(RECORD_HEADER + len) else {
            self.dropped += 1;
            return;
        };
        let mut header = [0u8; RECORD_HEADER];
        header[..8].copy_from_slice(&ts_ns.to_le_bytes());
        header[8..].copy_from_slice(&(len as u16).to_le_bytes());
        let (a, b) = chunk.as_mut_slices();
        let bytes = header.iter().chain(&frame[..len]);
        for (dst, src) in a.iter_mut().chain(b.iter_mut()).zip(bytes) {
            *dst = *src;
        }
        chunk.commit_all();
    }
}

/// What the capture wrote.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CaptureReport {
    /// The file.
    pub path: PathBuf,
    /// Frames written.
    pub frames: u64,
    /// Frames the ring had no room for (the writer fell behind).
    pub dropped: u64,
}

/// The writer thread, running.
pub struct CaptureWriter {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<Result<u64>>,
    path: PathBuf,
}

/// Creates `path` (an error names it before anything runs) and starts its
/// writer thread; the ring's producer goes to the CN emulator.
pub fn start(path: &Path) -> Result<(CaptureRing, CaptureWriter)> {
    let mut writer = PcapWriter::create(path)?;
    let (ring, mut consumer) = ring(RING_BYTES);
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::clone(&stop);
    let thread = std::thread::Builder::new()
        .name("jl-pcap".into())
        .spawn(move || -> Result<u64> {
            let mut frame = vec![0u8; usize::from(u16::MAX)];
            loop {
                // Read the flag first: what was pushed before it was raised
                // is in the ring by the time it reads empty.
                let last = done.load(Relaxed);
                while let Some(len) = take(&mut consumer, &mut frame)? {
                    let ts = u64::from_le_bytes(frame[..8].try_into().expect("8 bytes"));
                    writer.write(ts, &frame[RECORD_HEADER..RECORD_HEADER + len])?;
                }
                if last {
                    let frames = writer.frames();
                    writer.finish()?;
                    return Ok(frames);
                }
                std::thread::sleep(DRAIN_EVERY);
            }
        })
        .context("starting the capture writer's thread")?;
    Ok((
        ring,
        CaptureWriter {
            stop,
            thread,
            path: path.to_path_buf(),
        },
    ))
}

/// A ring of `bytes` and its consumer.
fn ring(bytes: usize) -> (CaptureRing, rtrb::Consumer<u8>) {
    let (producer, consumer) = rtrb::RingBuffer::<u8>::new(bytes);
    (
        CaptureRing {
            producer,
            dropped: 0,
        },
        consumer,
    )
}

/// Takes one record out of the ring into `out` (header, then frame) and
/// returns the frame's length; `None` when the ring is empty.
fn take(consumer: &mut rtrb::Consumer<u8>, out: &mut [u8]) -> Result<Option<usize>> {
    let Ok(head) = consumer.read_chunk(RECORD_HEADER) else {
        return Ok(None);
    };
    let (a, b) = head.as_slices();
    for (d, s) in out.iter_mut().zip(a.iter().chain(b)) {
        *d = *s;
    }
    let len = usize::from(u16::from_le_bytes([out[8], out[9]]));
    let whole = consumer
        .read_chunk(RECORD_HEADER + len)
        .map_err(|_| anyhow!("the capture ring holds half a record"))?;
    let (a, b) = whole.as_slices();
    for (d, s) in out.iter_mut().zip(a.iter().chain(b)) {
        *d = *s;
    }
    whole.commit_all();
    Ok(Some(len))
}

impl CaptureWriter {
    /// Drains what is left, closes the file and says what it holds;
    /// `dropped` from the ring's producer.
    pub fn finish(self, dropped: u64) -> Result<CaptureReport> {
        self.stop.store(true, Relaxed);
        let frames = self
            .thread
            .join()
            .map_err(|_| anyhow!("the capture writer's thread panicked"))?
            .with_context(|| format!("writing the capture {}", self.path.display()))?;
        Ok(CaptureReport {
            path: self.path,
            frames,
            dropped,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_go_through_the_ring_whole_and_a_full_ring_drops() {
        let (mut ring, mut consumer) = ring(150);
        ring.push(7, &[0xAB; 60]);
        ring.push(8, &[0xCD; 64]);
        ring.push(9, &[0xEF; 60]);
        assert_eq!(
            ring.dropped, 1,
            "144 of 150 bytes taken: no room for 70 more"
        );
        let mut out = [0u8; 100];
        assert_eq!(take(&mut consumer, &mut out).unwrap(), Some(60));
        assert_eq!(u64::from_le_bytes(out[..8].try_into().unwrap()), 7);
        assert_eq!(&out[10..70], &[0xAB; 60]);
        assert_eq!(take(&mut consumer, &mut out).unwrap(), Some(64));
        assert_eq!(&out[10..74], &[0xCD; 64]);
        assert_eq!(take(&mut consumer, &mut out).unwrap(), None);
        // Room again, across the ring's end.
        ring.push(10, &[1; 100]);
        assert_eq!(ring.dropped, 1);
        let mut big = [0u8; 200];
        assert_eq!(take(&mut consumer, &mut big).unwrap(), Some(100));
        assert_eq!(&big[10..110], &[1; 100]);
    }

    #[test]
    fn the_writer_puts_every_frame_in_the_file_with_its_stamp() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcap");
        let (mut ring, writer) = start(&path).unwrap();
        ring.push(1_700_000_000_000_000_001, &[0xAB; 60]);
        ring.push(1_700_000_000_000_500_002, &[0xCD; 64]);
        let report = writer.finish(ring.dropped).unwrap();
        assert_eq!((report.frames, report.dropped), (2, 0));
        let b = std::fs::read(&path).unwrap();
        assert_eq!(b.len(), 24 + 16 + 60 + 16 + 64);
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        assert_eq!([u32_at(24), u32_at(28), u32_at(32)], [1_700_000_000, 1, 60]);
        assert_eq!(&b[40..100], &[0xAB; 60]);
        assert_eq!(
            [u32_at(100), u32_at(104), u32_at(108)],
            [1_700_000_000, 500_002, 64]
        );
    }
}
