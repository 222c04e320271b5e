//! Captures in the classic pcap format, nanosecond flavour: what `netcycle
//! --pcap FILE` writes so that Wireshark, tshark and `jitterlab analyze`
//! open it.
//!
//! A capture is a 24-byte global header (magic `0xa1b23c4d`, which says the
//! second field of every record stamp counts nanoseconds, not
//! microseconds; version 2.4; link type 1, Ethernet) and then one record
//! per frame: seconds, nanoseconds, captured length, original length, the
//! bytes. Fields are written in this machine's byte order, as libpcap
//! does; a reader tells the order from the magic. The format is a few
//! fixed fields, so it is written here rather than through a crate (the
//! pcap crates bind libpcap, which a writer of whole frames does not need).
//!
//! Reading captures back, pcap and pcapng from any tool, is [`read`]'s.
//!
//! The file is a `crate::out_files` streamed output: written beside the
//! path and renamed over it when the capture ends — on every end, an
//! interrupted or failed run's included — never through a symbolic link.
//!
//! The stamps are the kernel's receive stamps, `CLOCK_REALTIME` in
//! nanoseconds, so a capture lines up with one taken by tcpdump on the same
//! machine.

use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};

use crate::out_files::{self, Output};

pub mod read;
pub mod synth;

/// The magic of a pcap file whose record stamps count nanoseconds.
pub const MAGIC_NS: u32 = 0xa1b2_3c4d;
/// The link type of Ethernet frames (`LINKTYPE_ETHERNET`).
pub const LINKTYPE_ETHERNET: u32 = 1;
/// The longest frame a record keeps whole (the snapshot length).
pub const SNAPLEN: u32 = 65_535;

/// Writes Ethernet frames with their nanosecond stamps into a pcap file.
pub struct PcapWriter {
    out: BufWriter<Output>,
    frames: u64,
}

impl PcapWriter {
    /// Opens `--pcap`'s `path` (replaced when the capture ends, see the
    /// module doc) and writes the global header.
    pub fn create(path: &Path) -> Result<PcapWriter> {
        let file = out_files::create_streamed("--pcap", path)
            .with_context(|| format!("creating the capture file {}", path.display()))?;
        let mut out = BufWriter::with_capacity(1 << 16, file);
        let mut header = [0u8; 24];
        header[0..4].copy_from_slice(&MAGIC_NS.to_ne_bytes());
        header[4..6].copy_from_slice(&2u16.to_ne_bytes());
        header[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // thiszone and sigfigs stay 0, as every writer today leaves them.
        header[16..20].copy_from_slice(&SNAPLEN.to_ne_bytes());
        header[20..24].copy_from_slice(&LINKTYPE_ETHERNET.to_ne_bytes());
        out.write_all(&header)
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(PcapWriter { out, frames: 0 })
    }

    /// Appends one frame received at `ts_real_ns` (`CLOCK_REALTIME`, ns).
    /// A frame longer than [`SNAPLEN`] is cut there, its original length
    /// kept in the record.
    pub fn write(&mut self, ts_real_ns: u64, frame: &[u8]) -> io::Result<()> {
        let kept = frame.len().min(SNAPLEN as usize);
        let mut record = [0u8; 16];
        let secs = (ts_real_ns / 1_000_000_000) as u32;
        let nanos = (ts_real_ns % 1_000_000_000) as u32;
        record[0..4].copy_from_slice(&secs.to_ne_bytes());
        record[4..8].copy_from_slice(&nanos.to_ne_bytes());
        record[8..12].copy_from_slice(&(kept as u32).to_ne_bytes());
        record[12..16].copy_from_slice(&(frame.len() as u32).to_ne_bytes());
        self.out.write_all(&record)?;
        self.out.write_all(&frame[..kept])?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Flushes the file, renames it over the path and returns how many
    /// frames it holds.
    pub fn finish(self) -> Result<u64> {
        let frames = self.frames;
        self.out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?
            .finish()?;
        Ok(frames)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_capture_is_the_header_then_one_record_per_frame() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.pcap");
        let mut w = PcapWriter::create(&path).unwrap();
        w.write(1_700_000_000_123_456_789, &[0xAA; 60]).unwrap();
        w.write(1_700_000_001_000_000_001, &[0x55; 3]).unwrap();
        assert_eq!(w.finish().unwrap(), 2);
        let b = std::fs::read(&path).unwrap();
        assert_eq!(b.len(), 24 + 16 + 60 + 16 + 3);
        let u32_at = |o: usize| u32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
        let u16_at = |o: usize| u16::from_ne_bytes(b[o..o + 2].try_into().unwrap());
        assert_eq!(u32_at(0), 0xa1b2_3c4d);
        assert_eq!((u16_at(4), u16_at(6)), (2, 4));
        assert_eq!((u32_at(8), u32_at(12)), (0, 0));
        assert_eq!((u32_at(16), u32_at(20)), (65_535, 1));
        assert_eq!(
            [u32_at(24), u32_at(28), u32_at(32), u32_at(36)],
            [1_700_000_000, 123_456_789, 60, 60]
        );
        assert_eq!(&b[40..100], &[0xAA; 60]);
        let r2 = 100;
        assert_eq!(
            [u32_at(r2), u32_at(r2 + 4), u32_at(r2 + 8), u32_at(r2 + 12)],
            [1_700_000_001, 1, 3, 3]
        );
        assert_eq!(&b[r2 + 16..], &[0x55; 3]);
    }

    #[test]
    fn a_capture_file_that_cannot_be_made_names_its_path() {
        let err = PcapWriter::create(Path::new("/nonexistent-dir/c.pcap"))
            .err()
            .unwrap();
        assert!(
            format!("{err:#}").starts_with("creating the capture file /nonexistent-dir/c.pcap: "),
            "{err:#}"
        );
    }
}
