//! Reading captures: classic pcap and pcapng, streamed from one reused
//! buffer, for `jitterlab analyze`.
//!
//! # What is read
//!
//! - **pcap**: the 24-byte header with magic `0xa1b2c3d4` (microsecond
//!   stamps) or `0xa1b23c4d` (nanosecond stamps), in either byte order,
//!   then records of 16-byte header and bytes.
//! - **pcapng**: a Section Header Block (SHB) sets the byte order of its
//!   section (a file may hold several); Interface Description Blocks (IDB)
//!   give each interface its link type and stamp resolution (`if_tsresol`,
//!   a power of ten or of two, default microseconds; `if_tsoffset`
//!   seconds); Enhanced (EPB), Simple (SPB) and obsolete Packet Blocks
//!   (OPB) carry the frames. Any other block (name resolution, statistics,
//!   journal, custom) is skipped. An SPB has no stamp: its frame is given
//!   with `ts_ns: None`.
//! - **Link types** Ethernet (1), Linux cooked SLL (113) and SLL2 (276),
//!   what `tcpdump -i any` writes; [`Packet::l3`] turns each into the
//!   EtherType and payload the POWERLINK analysis needs. Any other link
//!   type is an error naming it — for pcap when the file is opened, for
//!   pcapng at the first frame of such an interface, so that an unused
//!   interface of another kind does not stop a capture being read.
//!
//! A last record cut short (the capture was stopped while writing, or the
//! file copied while growing) is counted ([`CaptureReader::truncated`]) and
//! ends the reading without an error; a length that breaks the format
//! anywhere else is an error naming its byte offset.
//!
//! # Why by hand, and how memory stays flat
//!
//! Every frame is read into the one buffer of the reader, which grows to
//! the longest record seen (at most [`MAX_RECORD`]) and is then reused:
//! [`CaptureReader::next_packet`] lends a [`Packet`] borrowing it, so
//! nothing is allocated per frame and a 10-million-frame capture is read
//! in the memory of its longest record. The interfaces a section describes
//! are kept while it is read, at most [`MAX_INTERFACES`] of them: a file of
//! millions of IDBs is refused, not held in memory. The `pcap-file` crate (2.0) reads
//! both formats but takes pcapng stamps as nanoseconds whatever the
//! interface's `if_tsresol` (a pcapng from `dumpcap` counts microseconds,
//! so every time would come out a thousand times too small), and refuses a
//! block whose comment is not UTF-8; the `pcap` crate binds libpcap. The
//! formats are a few fixed fields, so they are read here.

use std::fs::File;
use std::io::{self, BufReader, Read};
use std::path::Path;

use anyhow::{bail, Context, Result};

use crate::error::bad;

/// The longest record or block read (a corrupt length beyond it is an
/// error, not an allocation): 16 MiB, libpcap's limit for pcapng blocks.
pub const MAX_RECORD: usize = 16 << 20;
/// The most interface descriptions one pcapng section may hold: each is
/// kept while its section is read, so a file of nothing but IDBs would
/// otherwise take memory in proportion to its size. A capture of a
/// POWERLINK segment needs one; `tcpdump -i any` one per capture, too.
pub const MAX_INTERFACES: usize = 65_536;

/// pcap magic, microsecond stamps, as read in the writer's byte order.
const PCAP_US: u32 = 0xa1b2_c3d4;
/// pcap magic, nanosecond stamps.
const PCAP_NS: u32 = 0xa1b2_3c4d;
/// pcapng Section Header Block type (the same in both byte orders).
const SHB: u32 = 0x0a0d_0d0a;
/// pcapng byte-order magic.
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;
const IDB: u32 = 1;
const OPB: u32 = 2;
const SPB: u32 = 3;
const EPB: u32 = 6;
/// IDB option codes.
const OPT_ENDOFOPT: u16 = 0;
const IF_TSRESOL: u16 = 9;
const IF_TSOFFSET: u16 = 14;

/// The link layers read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// `LINKTYPE_ETHERNET` (1).
    Ethernet,
    /// `LINKTYPE_LINUX_SLL` (113): Linux cooked capture v1.
    LinuxSll,
    /// `LINKTYPE_LINUX_SLL2` (276): Linux cooked capture v2.
    LinuxSll2,
}

impl LinkType {
    /// The link type of `code`, or an error naming it.
    pub fn from_code(code: u32) -> Result<LinkType, String> {
        match code {
            1 => Ok(LinkType::Ethernet),
            113 => Ok(LinkType::LinuxSll),
            276 => Ok(LinkType::LinuxSll2),
            other => {
                let name = match other {
                    0 => " (NULL, BSD loopback)",
                    101 => " (RAW, bare IP)",
                    105 => " (IEEE 802.11)",
                    127 => " (IEEE 802.11 radiotap)",
                    189 => " (USB Linux)",
                    220 => " (USB Linux mmapped)",
                    228 => " (IPv4)",
                    229 => " (IPv6)",
                    147..=162 => " (a user-defined link type)",
                    _ => "",
                };
                Err(format!(
                    "link type {other}{name} is not read: jitterlab analyze reads Ethernet (1), \
                     Linux cooked SLL (113) and SLL2 (276) captures; capture on the POWERLINK \
                     segment's Ethernet interface (tcpdump -i IF -w FILE)"
                ))
            }
        }
    }

    /// The link type's number.
    pub fn code(self) -> u32 {
        match self {
            LinkType::Ethernet => 1,
            LinkType::LinuxSll => 113,
            LinkType::LinuxSll2 => 276,
        }
    }

    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            LinkType::Ethernet => "Ethernet",
            LinkType::LinuxSll => "Linux cooked (SLL)",
            LinkType::LinuxSll2 => "Linux cooked v2 (SLL2)",
        }
    }
}

/// One frame of a capture, borrowing the reader's buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet<'a> {
    /// When it was captured (UNIX epoch, ns); `None` in a pcapng Simple
    /// Packet Block, which has no stamp.
    pub ts_ns: Option<u64>,
    /// Its link layer.
    pub link: LinkType,
    /// The bytes captured (from the link-layer header on).
    pub data: &'a [u8],
    /// Its length on the wire (more than `data` when the snapshot length
    /// cut it).
    pub orig_len: u32,
}

/// What a frame carries above its link layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum L3<'a> {
    /// An Ethernet frame, whole (the POWERLINK analysis reads its header,
    /// 802.1Q tag included).
    Ethernet(&'a [u8]),
    /// A cooked frame's protocol (EtherType, behind an 802.1Q tag if any)
    /// and the bytes after it.
    Cooked(u16, &'a [u8]),
    /// A cooked frame shorter than its header.
    CutShort,
}

impl<'a> Packet<'a> {
    /// The frame as the POWERLINK analysis takes it.
    pub fn l3(&self) -> L3<'a> {
        let (proto_at, payload_at) = match self.link {
            LinkType::Ethernet => return L3::Ethernet(self.data),
            // packet type, ARPHRD type, address length, address (8), protocol
            LinkType::LinuxSll => (14, 16),
            // protocol, reserved, ifindex, ARPHRD type, packet type,
            // address length, address (8)
            LinkType::LinuxSll2 => (0, 20),
        };
        let d = self.data;
        if d.len() < payload_at {
            return L3::CutShort;
        }
        let proto = u16::from_be_bytes([d[proto_at], d[proto_at + 1]]);
        let payload = &d[payload_at..];
        // The kernel leaves an 802.1Q tag in the payload when it did not
        // strip it: TCI, then the real EtherType.
        if proto == 0x8100 && payload.len() >= 4 {
            return L3::Cooked(u16::from_be_bytes([payload[2], payload[3]]), &payload[4..]);
        }
        L3::Cooked(proto, payload)
    }
}

/// How a pcapng interface's stamps become nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Resolution {
    /// 10^-e s per unit.
    Decimal(u8),
    /// 2^-e s per unit.
    Binary(u8),
}

impl Resolution {
    fn to_ns(self, units: u64) -> u64 {
        let ns: u128 = match self {
            Resolution::Decimal(e) if e <= 9 => u128::from(units) * 10u128.pow(u32::from(9 - e)),
            Resolution::Decimal(e) => {
                u128::from(units) / 10u128.checked_pow(u32::from(e - 9)).unwrap_or(u128::MAX)
            }
            Resolution::Binary(e) => (u128::from(units) * 1_000_000_000)
                .checked_shr(u32::from(e))
                .unwrap_or(0),
        };
        ns.min(u128::from(u64::MAX)) as u64
    }
}

#[derive(Debug, Clone)]
struct Interface {
    link: Result<LinkType, u32>,
    resolution: Resolution,
    offset_s: i64,
}

#[derive(Debug)]
enum Kind {
    Pcap {
        big_endian: bool,
        nanos: bool,
        link: LinkType,
    },
    PcapNg {
        big_endian: bool,
        interfaces: Vec<Interface>,
    },
}

/// Where the next frame lies in the buffer, found before it is lent.
struct Found {
    ts_ns: Option<u64>,
    link: LinkType,
    start: usize,
    len: usize,
    orig_len: u32,
}

/// Reads a capture frame by frame; see the module documentation.
pub struct CaptureReader<R> {
    src: R,
    name: String,
    buf: Vec<u8>,
    offset: u64,
    kind: Kind,
    truncated: u64,
    unstamped: u64,
    sections: u64,
    done: bool,
}

/// Reads until `dst` is full or the input ends; returns the bytes read.
fn read_full(src: &mut impl Read, dst: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < dst.len() {
        match src.read(&mut dst[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

fn u16_at(b: &[u8], at: usize, big: bool) -> u16 {
    let v = [b[at], b[at + 1]];
    if big {
        u16::from_be_bytes(v)
    } else {
        u16::from_le_bytes(v)
    }
}

fn u32_at(b: &[u8], at: usize, big: bool) -> u32 {
    let v = [b[at], b[at + 1], b[at + 2], b[at + 3]];
    if big {
        u32::from_be_bytes(v)
    } else {
        u32::from_le_bytes(v)
    }
}

fn hex(b: &[u8]) -> String {
    b.iter()
        .map(|x| format!("{x:02x}"))
        .collect::<Vec<_>>()
        .join(" ")
}

impl CaptureReader<BufReader<File>> {
    /// Opens `path` and reads its header. A missing file, or one that is not
    /// a capture, is bad input (exit 2) whose message says what it is.
    pub fn open(path: &Path) -> Result<CaptureReader<BufReader<File>>> {
        let file = File::open(path).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => bad(format!(
                "{} does not exist: give the path of a pcap or pcapng capture",
                path.display()
            )),
            _ => anyhow::Error::new(e).context(format!("opening {}", path.display())),
        })?;
        if file.metadata().is_ok_and(|m| m.is_dir()) {
            return Err(bad(format!(
                "{} is a directory: give the path of a pcap or pcapng capture",
                path.display()
            )));
        }
        CaptureReader::new(
            BufReader::with_capacity(1 << 20, file),
            &path.display().to_string(),
        )
    }
}

impl<R: Read> CaptureReader<R> {
    /// Reads the header of the capture `src`, called `name` in messages.
    pub fn new(mut src: R, name: &str) -> Result<CaptureReader<R>> {
        let mut magic = [0u8; 4];
        let got = read_full(&mut src, &mut magic).with_context(|| format!("reading {name}"))?;
        if got == 0 {
            return Err(bad(format!(
                "{name} is empty, not a pcap or pcapng capture"
            )));
        }
        let not_capture = |head: &[u8]| {
            let what = match head {
                [0x1f, 0x8b, ..] => ": a gzip file; gunzip it first",
                [b'P', b'K', 3, 4] => ": a zip file; unzip it first",
                [0xa1, 0xb2, 0xcd, 0x34] | [0x34, 0xcd, 0xb2, 0xa1] => {
                    ": a modified (Kuznetzov) pcap; convert it with editcap -F pcap"
                }
                _ => "",
            };
            bad(format!(
                "{name} is not a pcap or pcapng capture (starts with {}{what})",
                hex(head)
            ))
        };
        if got < 4 {
            return Err(not_capture(&magic[..got]));
        }
        let mut r = CaptureReader {
            src,
            name: name.to_string(),
            buf: Vec::new(),
            offset: 4,
            kind: Kind::PcapNg {
                big_endian: false,
                interfaces: Vec::new(),
            },
            truncated: 0,
            unstamped: 0,
            sections: 0,
            done: false,
        };
        let le = u32::from_le_bytes(magic);
        let be = u32::from_be_bytes(magic);
        if le == SHB {
            r.section()?;
            return Ok(r);
        }
        let (big_endian, nanos) = match (le, be) {
            (PCAP_US, _) => (false, false),
            (PCAP_NS, _) => (false, true),
            (_, PCAP_US) => (true, false),
            (_, PCAP_NS) => (true, true),
            _ => return Err(not_capture(&magic)),
        };
        let mut rest = [0u8; 20];
        let got = r.fill_header(&mut rest)?;
        if got < rest.len() {
            bail!(
                "{name}: the pcap header is cut short ({} of its 24 bytes): the file is not a whole capture",
                got + 4
            );
        }
        let link = u32_at(&rest, 16, big_endian) & 0x03ff_ffff;
        let link = LinkType::from_code(link).map_err(|e| bad(format!("{name}: {e}")))?;
        r.kind = Kind::Pcap {
            big_endian,
            nanos,
            link,
        };
        Ok(r)
    }

    /// Bytes of the file consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Records cut short at the end of the file (0 or 1).
    pub fn truncated(&self) -> u64 {
        self.truncated
    }

    /// Frames given without a stamp (pcapng Simple Packet Blocks).
    pub fn unstamped(&self) -> u64 {
        self.unstamped
    }

    /// The format, in words for reports: `pcap (microsecond stamps,
    /// big-endian)`, `pcapng (2 sections)`.
    pub fn format(&self) -> String {
        match &self.kind {
            Kind::Pcap {
                big_endian, nanos, ..
            } => format!(
                "pcap ({} stamps, {})",
                if *nanos { "nanosecond" } else { "microsecond" },
                if *big_endian {
                    "big-endian"
                } else {
                    "little-endian"
                }
            ),
            Kind::PcapNg { .. } if self.sections > 1 => {
                format!("pcapng ({} sections)", self.sections)
            }
            Kind::PcapNg { .. } => "pcapng".to_string(),
        }
    }

    /// Reads into a header array; counts what was read.
    fn fill_header(&mut self, dst: &mut [u8]) -> Result<usize> {
        let got =
            read_full(&mut self.src, dst).with_context(|| format!("reading {}", self.name))?;
        self.offset += got as u64;
        Ok(got)
    }

    /// Reads `len` bytes into the buffer's start; returns how many came
    /// before the end of the file.
    fn fill_buf(&mut self, len: usize) -> Result<usize> {
        if self.buf.len() < len {
            self.buf.resize(len, 0);
        }
        let got = read_full(&mut self.src, &mut self.buf[..len])
            .with_context(|| format!("reading {}", self.name))?;
        self.offset += got as u64;
        Ok(got)
    }

    fn corrupt(&self, at: u64, what: impl std::fmt::Display) -> anyhow::Error {
        bad(format!(
            "{}: {what} (at byte {at}): the file is corrupt; \
             tshark -r FILE reads as far as it can, editcap can cut the good part out",
            self.name
        ))
    }

    /// The next frame, or `None` at the end of the capture.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>> {
        if self.done {
            return Ok(None);
        }
        let found = match self.kind {
            Kind::Pcap { .. } => self.next_pcap()?,
            Kind::PcapNg { .. } => self.next_pcapng()?,
        };
        match found {
            None => {
                self.done = true;
                Ok(None)
            }
            Some(f) => Ok(Some(Packet {
                ts_ns: f.ts_ns,
                link: f.link,
                data: &self.buf[f.start..f.start + f.len],
                orig_len: f.orig_len,
            })),
        }
    }

    /// Ends the reading at a record cut short.
    fn cut_short(&mut self) -> Result<Option<Found>> {
        self.truncated += 1;
        Ok(None)
    }

    fn next_pcap(&mut self) -> Result<Option<Found>> {
        let Kind::Pcap {
            big_endian,
            nanos,
            link,
        } = self.kind
        else {
            unreachable!("called for pcap files only")
        };
        let at = self.offset;
        let mut h = [0u8; 16];
        match self.fill_header(&mut h)? {
            0 => return Ok(None),
            16 => {}
            _ => return self.cut_short(),
        }
        let secs = u64::from(u32_at(&h, 0, big_endian));
        let frac = u64::from(u32_at(&h, 4, big_endian));
        let len = u32_at(&h, 8, big_endian) as usize;
        let orig_len = u32_at(&h, 12, big_endian);
        if len > MAX_RECORD {
            return Err(self.corrupt(
                at,
                format!("a record of {len} bytes, more than any capture holds (16 MiB)"),
            ));
        }
        if self.fill_buf(len)? < len {
            return self.cut_short();
        }
        let ts_ns = secs * 1_000_000_000 + if nanos { frac } else { frac * 1_000 };
        Ok(Some(Found {
            ts_ns: Some(ts_ns),
            link,
            start: 0,
            len,
            orig_len,
        }))
    }

    /// Reads a Section Header Block after its type: sets the byte order
    /// and forgets the interfaces of the previous section.
    fn section(&mut self) -> Result<()> {
        let at = self.offset - 4;
        let mut h = [0u8; 8];
        let got = self.fill_header(&mut h)?;
        if got < 8 {
            if self.sections == 0 {
                bail!(
                    "{}: the pcapng section header is cut short: the file is not a whole capture",
                    self.name
                );
            }
            self.truncated += 1;
            self.done = true;
            return Ok(());
        }
        let big_endian = match u32::from_le_bytes([h[4], h[5], h[6], h[7]]) {
            BYTE_ORDER_MAGIC => false,
            m if m.swap_bytes() == BYTE_ORDER_MAGIC => true,
            _ => {
                return Err(self.corrupt(
                    at,
                    format!(
                        "a pcapng section header without its byte-order magic ({})",
                        hex(&h[4..8])
                    ),
                ))
            }
        };
        let total = u32_at(&h, 0, big_endian) as usize;
        if !(28..=MAX_RECORD).contains(&total) || !total.is_multiple_of(4) {
            return Err(self.corrupt(at, format!("a section header of {total} bytes")));
        }
        let body = total - 12;
        if self.fill_buf(body)? < body {
            self.truncated += 1;
            self.done = true;
            return Ok(());
        }
        let major = u16_at(&self.buf, 0, big_endian);
        if major != 1 {
            return Err(self.corrupt(
                at,
                format!("pcapng version {major} (jitterlab reads version 1)"),
            ));
        }
        self.sections += 1;
        self.kind = Kind::PcapNg {
            big_endian,
            interfaces: Vec::new(),
        };
        Ok(())
    }

    fn next_pcapng(&mut self) -> Result<Option<Found>> {
        loop {
            if self.done {
                return Ok(None);
            }
            let Kind::PcapNg { big_endian, .. } = self.kind else {
                unreachable!("called for pcapng files only")
            };
            let at = self.offset;
            let mut h = [0u8; 8];
            match self.fill_header(&mut h[..4])? {
                0 => return Ok(None),
                4 => {}
                _ => return self.cut_short(),
            }
            if u32_at(&h, 0, big_endian) == SHB {
                self.section()?;
                continue;
            }
            if self.fill_header(&mut h[4..])? < 4 {
                return self.cut_short();
            }
            let block = u32_at(&h, 0, big_endian);
            let total = u32_at(&h, 4, big_endian) as usize;
            if !(12..=MAX_RECORD).contains(&total) || !total.is_multiple_of(4) {
                return Err(self.corrupt(
                    at,
                    format!("a block of type {block:#x} claims {total} bytes"),
                ));
            }
            let body = total - 12;
            if !matches!(block, IDB | OPB | SPB | EPB) {
                // Skipped without keeping it in memory.
                let skip = (body + 4) as u64;
                let got = io::copy(&mut (&mut self.src).take(skip), &mut io::sink())
                    .with_context(|| format!("reading {}", self.name))?;
                self.offset += got;
                if got < skip {
                    return self.cut_short();
                }
                continue;
            }
            if self.fill_buf(body + 4)? < body + 4 {
                return self.cut_short();
            }
            if u32_at(&self.buf, body, big_endian) as usize != total {
                return Err(self.corrupt(
                    at,
                    format!("a block of type {block:#x} whose two lengths differ"),
                ));
            }
            if block == IDB {
                self.interface(at, body, big_endian)?;
                continue;
            }
            return self.packet(at, block, body, big_endian).map(Some);
        }
    }

    fn interface(&mut self, at: u64, body: usize, big: bool) -> Result<()> {
        if body < 8 {
            return Err(self.corrupt(at, "an interface description shorter than 8 bytes"));
        }
        let b = &self.buf[..body];
        let code = u32::from(u16_at(b, 0, big));
        let mut iface = Interface {
            link: LinkType::from_code(code).map_err(|_| code),
            resolution: Resolution::Decimal(6),
            offset_s: 0,
        };
        let mut o = 8;
        while o + 4 <= body {
            let opt = u16_at(b, o, big);
            let len = usize::from(u16_at(b, o + 2, big));
            let v = o + 4;
            if opt == OPT_ENDOFOPT || v + len > body {
                break;
            }
            match (opt, len) {
                (IF_TSRESOL, 1) => {
                    let r = b[v];
                    iface.resolution = if r & 0x80 == 0 {
                        Resolution::Decimal(r)
                    } else {
                        Resolution::Binary(r & 0x7f)
                    };
                }
                (IF_TSOFFSET, 8) => {
                    let mut x = [0u8; 8];
                    x.copy_from_slice(&b[v..v + 8]);
                    iface.offset_s = if big {
                        i64::from_be_bytes(x)
                    } else {
                        i64::from_le_bytes(x)
                    };
                }
                _ => {}
            }
            o = v + len.div_ceil(4) * 4;
        }
        let name = &self.name;
        if let Kind::PcapNg { interfaces, .. } = &mut self.kind {
            if interfaces.len() >= MAX_INTERFACES {
                return Err(bad(format!(
                    "{name}: a section with more than {MAX_INTERFACES} interface descriptions (at byte {at}), more than jitterlab reads; \
                     capture the POWERLINK segment's interface alone (tcpdump -i IF -w FILE)"
                )));
            }
            interfaces.push(iface);
        }
        Ok(())
    }

    fn packet(&mut self, at: u64, block: u32, body: usize, big: bool) -> Result<Found> {
        let b = &self.buf[..body];
        // (interface, stamp units, captured length, original length, data start)
        let (iface, units, caplen, orig_len, start) = match block {
            EPB | OPB if body < 20 => {
                return Err(self.corrupt(at, "a packet block shorter than its 20-byte header"))
            }
            EPB => (
                u32_at(b, 0, big) as usize,
                Some((u64::from(u32_at(b, 4, big)) << 32) | u64::from(u32_at(b, 8, big))),
                u32_at(b, 12, big) as usize,
                u32_at(b, 16, big),
                20,
            ),
            OPB => (
                usize::from(u16_at(b, 0, big)),
                Some((u64::from(u32_at(b, 4, big)) << 32) | u64::from(u32_at(b, 8, big))),
                u32_at(b, 12, big) as usize,
                u32_at(b, 16, big),
                20,
            ),
            _ if body < 4 => {
                return Err(self.corrupt(at, "a simple packet block shorter than 4 bytes"))
            }
            _ => {
                let orig = u32_at(b, 0, big);
                (0, None, (orig as usize).min(body - 4), orig, 4)
            }
        };
        if start + caplen > body {
            return Err(self.corrupt(
                at,
                format!("a packet of {caplen} bytes in a block with room for fewer"),
            ));
        }
        let Kind::PcapNg { interfaces, .. } = &self.kind else {
            unreachable!("called for pcapng files only")
        };
        let Some(i) = interfaces.get(iface) else {
            return Err(self.corrupt(
                at,
                format!(
                    "a packet of interface {iface}, but its section describes {} interface(s)",
                    interfaces.len()
                ),
            ));
        };
        let link = match i.link {
            Ok(l) => l,
            Err(code) => {
                let e = LinkType::from_code(code).expect_err("unknown link types stay errors");
                return Err(bad(format!("{}: interface {iface}: {e}", self.name)));
            }
        };
        let ts_ns = units.map(|u| {
            let ns = i.resolution.to_ns(u) as i128 + i128::from(i.offset_s) * 1_000_000_000;
            ns.clamp(0, i128::from(u64::MAX)) as u64
        });
        if ts_ns.is_none() {
            self.unstamped += 1;
        }
        Ok(Found {
            ts_ns,
            link,
            start,
            len: caplen,
            orig_len,
        })
    }
}

#[cfg(test)]
#[path = "read_tests.rs"]
mod tests;
