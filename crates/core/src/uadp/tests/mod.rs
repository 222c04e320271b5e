//! Tests of the UADP codec: the reference implementation's captures
//! ([`captures`]), every part of the model by hand ([`model`]), the
//! writer and reader ([`writer`], [`reader`]), addresses ([`address`]) and
//! the property tests over malformed input ([`props`]).
//!
//! The captures are read with the `pcap-file` crate from bytes compiled in
//! (`include_bytes!`), so the tests open no file; the UDP payloads are cut
//! out of the Ethernet/IPv4/UDP frames here, the Ethernet payloads by
//! [`crate::ether::parse`].

mod address;
mod captures;
mod model;
mod props;
mod reader;
mod writer;

use pcap_file::pcap::PcapReader;

/// `tutorial_udp.pcap`: the tutorial publisher over UDP, 29 messages.
pub(super) const TUTORIAL_UDP: &[u8] =
    include_bytes!("../../../../../tests/fixtures/uadp/tutorial_udp.pcap");
/// `tutorial_eth.pcap`: the tutorial publisher over Ethernet, 29 frames.
pub(super) const TUTORIAL_ETH: &[u8] =
    include_bytes!("../../../../../tests/fixtures/uadp/tutorial_eth.pcap");
/// `rt_level_udp.pcap`: the fixed-size publisher over UDP, 30 messages.
pub(super) const RT_LEVEL_UDP: &[u8] =
    include_bytes!("../../../../../tests/fixtures/uadp/rt_level_udp.pcap");

/// One captured frame: its record time (ns since the Unix epoch) and bytes.
pub(super) struct Record {
    pub(super) unix_ns: i64,
    pub(super) frame: Vec<u8>,
}

/// Every frame of a capture.
pub(super) fn records(pcap: &[u8]) -> Vec<Record> {
    let mut reader = PcapReader::new(pcap).expect("a classic pcap");
    let mut out = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.expect("a whole record");
        assert_eq!(packet.orig_len as usize, packet.data.len(), "not cut short");
        out.push(Record {
            unix_ns: i64::try_from(packet.timestamp.as_nanos()).unwrap(),
            frame: packet.data.into_owned(),
        });
    }
    out
}

/// The UDP payload of an Ethernet/IPv4/UDP frame sent to 224.0.0.22:4840.
pub(super) fn udp_payload(frame: &[u8]) -> &[u8] {
    let eth = crate::ether::parse(frame).unwrap();
    assert_eq!(eth.dst, [0x01, 0x00, 0x5e, 0x00, 0x00, 0x16]);
    assert_eq!(
        eth.type_or_length,
        crate::ether::TypeOrLength::EtherType(0x0800)
    );
    let ip = eth.payload;
    assert_eq!(ip[0] >> 4, 4, "IPv4");
    let ihl = usize::from(ip[0] & 0x0f) * 4;
    assert_eq!(ip[9], 17, "UDP");
    assert_eq!(ip[16..20], [224, 0, 0, 22]);
    let udp = &ip[ihl..];
    assert_eq!(u16::from_be_bytes([udp[2], udp[3]]), 4840);
    let len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    &udp[8..len]
}

/// The UADP messages of a UDP capture, with their record times.
pub(super) fn udp_messages(pcap: &[u8]) -> Vec<(i64, Vec<u8>)> {
    records(pcap)
        .iter()
        .map(|r| (r.unix_ns, udp_payload(&r.frame).to_vec()))
        .collect()
}

/// Hex of `bytes`, for readable failures.
pub(super) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Bytes of a hex string (spaces ignored).
pub(super) fn unhex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(|b| !b.is_ascii_whitespace()).collect();
    digits
        .chunks(2)
        .map(|d| u8::from_str_radix(std::str::from_utf8(d).unwrap(), 16).unwrap())
        .collect()
}
