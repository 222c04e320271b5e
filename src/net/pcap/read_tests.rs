//! Every format the reader takes, from bytes built by hand here: both pcap
//! magics in both byte orders, pcapng sections of either order with
//! several interfaces, every stamp resolution, the three packet blocks,
//! skipped blocks, the cooked link types; and what it refuses, with the
//! exact messages.

use std::io::Cursor;

use super::*;
use crate::net::pcap::PcapWriter;

/// Appends `v` in the given byte order.
trait Put {
    fn u16(&mut self, v: u16, big: bool) -> &mut Self;
    fn u32(&mut self, v: u32, big: bool) -> &mut Self;
    fn bytes(&mut self, b: &[u8]) -> &mut Self;
}

impl Put for Vec<u8> {
    fn u16(&mut self, v: u16, big: bool) -> &mut Self {
        self.extend(if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
        self
    }
    fn u32(&mut self, v: u32, big: bool) -> &mut Self {
        self.extend(if big {
            v.to_be_bytes()
        } else {
            v.to_le_bytes()
        });
        self
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.extend_from_slice(b);
        self
    }
}

fn pcap_header(magic: u32, link: u32, big: bool) -> Vec<u8> {
    let mut v = Vec::new();
    v.u32(magic, big)
        .u16(2, big)
        .u16(4, big)
        .u32(0, big)
        .u32(0, big)
        .u32(65535, big)
        .u32(link, big);
    v
}

fn pcap_record(v: &mut Vec<u8>, secs: u32, frac: u32, data: &[u8], big: bool) {
    v.u32(secs, big)
        .u32(frac, big)
        .u32(data.len() as u32, big)
        .u32(data.len() as u32 + 4, big)
        .bytes(data);
}

/// A pcapng block: type, total length, body padded to 4, total length.
fn block(v: &mut Vec<u8>, kind: u32, body: &[u8], big: bool) {
    let padded = body.len().div_ceil(4) * 4;
    let total = (12 + padded) as u32;
    v.u32(kind, big).u32(total, big).bytes(body);
    v.resize(v.len() + padded - body.len(), 0);
    v.u32(total, big);
}

fn shb(v: &mut Vec<u8>, big: bool) {
    let mut body = Vec::new();
    body.u32(0x1a2b_3c4d, big)
        .u16(1, big)
        .u16(0, big)
        .bytes(&[0xff; 8]); // section length unknown
    block(v, 0x0a0d_0d0a, &body, big);
}

/// An IDB with `options`: `(code, value)`.
fn idb(v: &mut Vec<u8>, link: u16, options: &[(u16, &[u8])], big: bool) {
    let mut body = Vec::new();
    body.u16(link, big).u16(0, big).u32(0, big);
    for (code, value) in options {
        body.u16(*code, big)
            .u16(value.len() as u16, big)
            .bytes(value);
        body.resize(body.len().div_ceil(4) * 4, 0);
    }
    if !options.is_empty() {
        body.u32(0, big);
    }
    block(v, 1, &body, big);
}

fn epb(v: &mut Vec<u8>, iface: u32, units: u64, data: &[u8], big: bool) {
    let mut body = Vec::new();
    body.u32(iface, big)
        .u32((units >> 32) as u32, big)
        .u32(units as u32, big)
        .u32(data.len() as u32, big)
        .u32(1514, big)
        .bytes(data);
    body.resize(body.len().div_ceil(4) * 4, 0);
    // An option (a comment that is not UTF-8) and the end of options.
    body.u16(1, big)
        .u16(2, big)
        .bytes(&[0xff, 0xfe, 0, 0])
        .u32(0, big);
    block(v, 6, &body, big);
}

/// A frame as read: stamp, link, data, original length.
type ReadFrame = (Option<u64>, LinkType, Vec<u8>, u32);

/// Every frame of `bytes`, the records cut short, the format.
fn read_all(bytes: Vec<u8>) -> (Vec<ReadFrame>, u64, String) {
    let mut r = CaptureReader::new(Cursor::new(bytes), "cap").unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        out.push((p.ts_ns, p.link, p.data.to_vec(), p.orig_len));
    }
    // The end stays the end.
    assert!(r.next_packet().unwrap().is_none());
    (out, r.truncated(), r.format())
}

fn error(bytes: Vec<u8>) -> String {
    let mut r = match CaptureReader::new(Cursor::new(bytes), "cap") {
        Ok(r) => r,
        Err(e) => return format!("{e:#}"),
    };
    loop {
        match r.next_packet() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("read to the end without an error"),
            Err(e) => return format!("{e:#}"),
        }
    }
}

#[test]
fn pcap_of_both_magics_in_both_byte_orders() {
    for big in [false, true] {
        for (magic, frac, ns, what) in [
            (0xa1b2_c3d4, 123_456, 123_456_000, "microsecond"),
            (0xa1b2_3c4d, 123_456_789, 123_456_789, "nanosecond"),
        ] {
            let mut v = pcap_header(magic, 1, big);
            pcap_record(&mut v, 1_700_000_000, frac, &[1, 2, 3], big);
            pcap_record(&mut v, 1_700_000_001, 0, &[9; 70], big);
            let (frames, truncated, format) = read_all(v);
            assert_eq!(
                frames,
                vec![
                    (
                        Some(1_700_000_000_000_000_000 + ns),
                        LinkType::Ethernet,
                        vec![1, 2, 3],
                        7
                    ),
                    (
                        Some(1_700_000_001_000_000_000),
                        LinkType::Ethernet,
                        vec![9; 70],
                        74
                    ),
                ]
            );
            assert_eq!(truncated, 0);
            let order = if big { "big-endian" } else { "little-endian" };
            assert_eq!(format, format!("pcap ({what} stamps, {order})"));
        }
    }
}

#[test]
fn our_writer_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.pcap");
    let mut w = PcapWriter::create(&path).unwrap();
    w.write(1_700_000_000_000_000_001, &[0xAA; 60]).unwrap();
    w.write(1_700_000_000_500_000_002, &[0x55; 64]).unwrap();
    w.finish().unwrap();
    let mut r = CaptureReader::open(&path).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(
        (p.ts_ns, p.link, p.data, p.orig_len),
        (
            Some(1_700_000_000_000_000_001),
            LinkType::Ethernet,
            &[0xAA; 60][..],
            60
        )
    );
    let p = r.next_packet().unwrap().unwrap();
    assert_eq!(p.ts_ns, Some(1_700_000_000_500_000_002));
    assert!(r.next_packet().unwrap().is_none());
    assert_eq!(r.offset(), 24 + 16 + 60 + 16 + 64);
}

#[test]
fn a_last_record_cut_short_is_counted_not_an_error() {
    let mut whole = pcap_header(0xa1b2_3c4d, 1, false);
    pcap_record(&mut whole, 1, 2, &[7; 20], false);
    pcap_record(&mut whole, 3, 4, &[8; 20], false);
    // Cut in the second record's data, then in its header.
    for cut in [whole.len() - 5, whole.len() - 20 - 7] {
        let (frames, truncated, _) = read_all(whole[..cut].to_vec());
        assert_eq!(frames.len(), 1);
        assert_eq!(frames[0].2, vec![7; 20]);
        assert_eq!(truncated, 1);
    }
    let (frames, truncated, _) = read_all(whole);
    assert_eq!((frames.len(), truncated), (2, 0));
}

#[test]
fn pcapng_sections_interfaces_resolutions_and_packet_blocks() {
    let mut v = Vec::new();
    // Section 1, little-endian: interface 0 Ethernet in µs (the default),
    // interface 1 SLL in ns, interface 2 of a link type not read, unused.
    shb(&mut v, false);
    idb(&mut v, 1, &[], false);
    idb(&mut v, 113, &[(9, &[9]), (2, b"any")], false);
    idb(&mut v, 105, &[], false);
    block(&mut v, 4, &[0; 12], false); // name resolution: skipped
    epb(&mut v, 0, 1_700_000_000_123_456, &[1; 5], false);
    epb(&mut v, 1, 1_700_000_000_123_456_789, &[2; 16], false);
    // A Simple Packet Block (interface 0, no stamp) of 6 bytes.
    let mut spb = Vec::new();
    spb.u32(6, false).bytes(&[3; 6]);
    block(&mut v, 3, &spb, false);
    // An obsolete Packet Block, interface 0.
    let mut opb = Vec::new();
    opb.u16(0, false)
        .u16(0, false)
        .u32(0, false)
        .u32(1_000_000, false)
        .u32(3, false)
        .u32(3, false)
        .bytes(&[4, 4, 4, 0]);
    block(&mut v, 2, &opb, false);
    // Section 2, big-endian: new interfaces. Interface 0 SLL2 in 2^-10 s
    // with an offset of 100 s; interface 1 in 10^-12 s.
    shb(&mut v, true);
    idb(
        &mut v,
        276,
        &[(9, &[0x8a]), (14, &100i64.to_be_bytes())],
        true,
    );
    idb(&mut v, 1, &[(9, &[12])], true);
    block(&mut v, 5, &[0; 28], true); // interface statistics: skipped
    epb(&mut v, 0, 3 * 1024 + 512, &[5; 21], true);
    epb(&mut v, 1, 2_000_000_000_999, &[6; 4], true);
    let (frames, truncated, format) = read_all(v);
    let got: Vec<_> = frames
        .iter()
        .map(|(ts, link, data, _)| (*ts, *link, data.clone()))
        .collect();
    assert_eq!(
        got,
        vec![
            (
                Some(1_700_000_000_123_456_000),
                LinkType::Ethernet,
                vec![1; 5]
            ),
            (
                Some(1_700_000_000_123_456_789),
                LinkType::LinuxSll,
                vec![2; 16]
            ),
            (None, LinkType::Ethernet, vec![3; 6]),
            (Some(1_000_000_000), LinkType::Ethernet, vec![4; 3]),
            (Some(103_500_000_000), LinkType::LinuxSll2, vec![5; 21]),
            (Some(2_000_000_000), LinkType::Ethernet, vec![6; 4]),
        ]
    );
    assert_eq!(frames[0].3, 1514);
    assert_eq!(truncated, 0);
    assert_eq!(format, "pcapng (2 sections)");
}

#[test]
fn the_buffer_grows_to_the_longest_record_and_no_further() {
    let mut v = Vec::new();
    shb(&mut v, false);
    idb(&mut v, 1, &[(9, &[9])], false);
    for k in 0..1000u64 {
        epb(&mut v, 0, k, &[k as u8; 100], false);
    }
    epb(&mut v, 0, 0, &[1; 1500], false);
    for k in 0..1000u64 {
        epb(&mut v, 0, k, &[k as u8; 60], false);
    }
    let mut r = CaptureReader::new(Cursor::new(v), "cap").unwrap();
    let mut n = 0;
    while let Some(p) = r.next_packet().unwrap() {
        assert!(p.data.iter().all(|&b| b == p.data[0]));
        n += 1;
    }
    assert_eq!(n, 2001);
    // The longest block's body: 20-byte header, 1500 bytes, 12 of options,
    // its trailing length.
    assert_eq!(r.buf.len(), 20 + 1500 + 12 + 4);
}

#[test]
fn a_pcapng_cut_short_in_a_block_is_counted() {
    let mut v = Vec::new();
    shb(&mut v, false);
    idb(&mut v, 1, &[], false);
    epb(&mut v, 0, 1, &[1; 60], false);
    let whole = v.len();
    epb(&mut v, 0, 2, &[2; 60], false);
    for cut in [whole + 2, whole + 6, v.len() - 1] {
        let (frames, truncated, _) = read_all(v[..cut].to_vec());
        assert_eq!((frames.len(), truncated), (1, 1), "cut at {cut}");
    }
}

#[test]
fn cooked_frames_give_their_protocol_and_payload() {
    let mut sll = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
    sll.extend_from_slice(&[0x88, 0xab, 1, 255, 240]);
    let p = Packet {
        ts_ns: Some(0),
        link: LinkType::LinuxSll,
        data: &sll,
        orig_len: 19,
    };
    assert_eq!(p.l3(), L3::Cooked(0x88ab, &[1, 255, 240][..]));
    let mut sll2 = vec![0x81, 0x00, 0, 0, 0, 0, 0, 3, 0, 1, 0, 6];
    sll2.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0, 0]);
    sll2.extend_from_slice(&[0x00, 0x05, 0x88, 0xab, 1, 255, 240]);
    let p = Packet {
        ts_ns: Some(0),
        link: LinkType::LinuxSll2,
        data: &sll2,
        orig_len: 27,
    };
    assert_eq!(p.l3(), L3::Cooked(0x88ab, &[1, 255, 240][..]));
    let short = Packet {
        data: &sll2[..19],
        ..p
    };
    assert_eq!(short.l3(), L3::CutShort);
    let eth = Packet {
        link: LinkType::Ethernet,
        ..p
    };
    assert_eq!(eth.l3(), L3::Ethernet(&sll2[..]));
}

#[test]
fn files_that_are_not_captures_are_named_with_their_first_bytes() {
    assert_eq!(
        error(b"<!DOCTYPE html>".to_vec()),
        "cap is not a pcap or pcapng capture (starts with 3c 21 44 4f)"
    );
    assert_eq!(
        error(Vec::new()),
        "cap is empty, not a pcap or pcapng capture"
    );
    assert_eq!(
        error(vec![0x1f, 0x8b]),
        "cap is not a pcap or pcapng capture (starts with 1f 8b: a gzip file; gunzip it first)"
    );
    assert_eq!(
        error(pcap_header(0xa1b2_3c4d, 1, false)[..10].to_vec()),
        "cap: the pcap header is cut short (10 of its 24 bytes): the file is not a whole capture"
    );
}

#[test]
fn link_types_not_read_are_named() {
    assert_eq!(
        error(pcap_header(0xa1b2_c3d4, 105, true)),
        "cap: link type 105 (IEEE 802.11) is not read: jitterlab analyze reads Ethernet (1), \
         Linux cooked SLL (113) and SLL2 (276) captures; capture on the POWERLINK segment's \
         Ethernet interface (tcpdump -i IF -w FILE)"
    );
    let mut v = Vec::new();
    shb(&mut v, false);
    idb(&mut v, 1, &[], false);
    idb(&mut v, 101, &[], false);
    epb(&mut v, 0, 1, &[0; 4], false);
    epb(&mut v, 1, 1, &[0; 4], false);
    assert_eq!(
        error(v),
        "cap: interface 1: link type 101 (RAW, bare IP) is not read: jitterlab analyze reads \
         Ethernet (1), Linux cooked SLL (113) and SLL2 (276) captures; capture on the \
         POWERLINK segment's Ethernet interface (tcpdump -i IF -w FILE)"
    );
}

#[test]
fn corrupt_lengths_are_errors_with_their_offset() {
    let mut v = pcap_header(0xa1b2_c3d4, 1, false);
    v.u32(0, false)
        .u32(0, false)
        .u32(0x4000_0000, false)
        .u32(60, false);
    assert_eq!(
        error(v),
        "cap: a record of 1073741824 bytes, more than any capture holds (16 MiB) (at byte 24): \
         the file is corrupt; tshark -r FILE reads as far as it can, editcap can cut the good \
         part out"
    );
    let mut v = Vec::new();
    shb(&mut v, false);
    let at = v.len();
    idb(&mut v, 1, &[], false);
    epb(&mut v, 0, 1, &[0; 4], false);
    let n = v.len();
    v[n - 4] ^= 4; // the trailing length of the EPB
    assert_eq!(
        error(v.clone()),
        format!(
            "cap: a block of type 0x6 whose two lengths differ (at byte {}): the file is \
             corrupt; tshark -r FILE reads as far as it can, editcap can cut the good part out",
            at + 20
        )
    );
    v[at + 4] = 13; // the IDB's length: not a multiple of 4
    assert!(error(v).starts_with(&format!(
        "cap: a block of type 0x1 claims 13 bytes (at byte {at})"
    )));
    let mut v = Vec::new();
    shb(&mut v, false);
    epb(&mut v, 2, 1, &[0; 4], false);
    assert!(error(v).starts_with(
        "cap: a packet of interface 2, but its section describes 0 interface(s) (at byte 28)"
    ));
}

#[test]
fn interface_descriptions_are_bounded_per_section() {
    // As many as a section may describe: the last one's packet is read.
    let mut v = Vec::new();
    shb(&mut v, false);
    for _ in 0..MAX_INTERFACES {
        idb(&mut v, 1, &[], false);
    }
    let frame = [0x5a; 60];
    epb(&mut v, MAX_INTERFACES as u32 - 1, 7, &frame, false);
    let (frames, _, _) = read_all(v.clone());
    assert_eq!(frames.len(), 1);
    // One more is refused before it is kept.
    let mut v = Vec::new();
    shb(&mut v, false);
    for _ in 0..MAX_INTERFACES {
        idb(&mut v, 1, &[], false);
    }
    let at = v.len();
    idb(&mut v, 1, &[], false);
    assert_eq!(
        error(v),
        format!(
            "cap: a section with more than 65536 interface descriptions (at byte {at}), more than jitterlab reads; \
             capture the POWERLINK segment's interface alone (tcpdump -i IF -w FILE)"
        )
    );
}

#[test]
fn a_missing_file_and_a_directory_are_bad_input() {
    let e = CaptureReader::open(Path::new("/nonexistent/x.pcap"))
        .err()
        .unwrap();
    assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
    assert_eq!(
        e.to_string(),
        "/nonexistent/x.pcap does not exist: give the path of a pcap or pcapng capture"
    );
    let dir = tempfile::tempdir().unwrap();
    let e = CaptureReader::open(dir.path()).err().unwrap();
    assert!(e
        .to_string()
        .ends_with("is a directory: give the path of a pcap or pcapng capture"));
}
