//! The reference stack's captures replayed through the codec
//! (`tests/fixtures/powerlink/`, whose README is the specification quoted
//! here): every frame decodes, the frames its README decodes by hand give
//! exactly those fields, and every frame whose bytes the model carries
//! re-encodes to the bytes captured.

use pcap_file::pcap::PcapReader;

use super::sdo::*;
use super::*;

/// openPOWERLINK's MN (Demo_3CN) with its CNs 1, 32 and 110.
pub(super) const REF_MN_CN: &[u8] =
    include_bytes!("../../../../tests/fixtures/powerlink/ref_mn_cn.pcap");
/// A reference CN answering jitterlab's MN.
pub(super) const REF_CN_ANSWERS: &[u8] =
    include_bytes!("../../../../tests/fixtures/powerlink/ref_cn_answers.pcap");

/// Every record of a capture, in order: its time (ns since the Unix
/// epoch) and its frame. The powerlink tests all read the captures here.
pub(super) fn records(pcap: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let mut reader = PcapReader::new(pcap).expect("a classic pcap");
    let mut out = Vec::new();
    while let Some(packet) = reader.next_packet() {
        let packet = packet.expect("a whole record");
        assert_eq!(packet.orig_len as usize, packet.data.len(), "not cut short");
        let ns = u64::try_from(packet.timestamp.as_nanos()).expect("a time before 2554");
        out.push((ns, packet.data.into_owned()));
    }
    out
}

/// Every frame of a capture, in order (frame `n` of the README is `[n - 1]`).
pub(super) fn frames(pcap: &[u8]) -> Vec<Vec<u8>> {
    records(pcap).into_iter().map(|(_, f)| f).collect()
}

/// Frame `n` (1-based, as Wireshark numbers them) of `ref_mn_cn.pcap`.
fn reference(n: usize) -> Vec<u8> {
    frames(REF_MN_CN).swap_remove(n - 1)
}

fn sdo_of(bytes: &[u8]) -> (u8, u8, Sdo<'_>) {
    match decode(bytes).unwrap().frame {
        Frame::ASnd(ASnd {
            dest,
            src,
            service: ASndService::Sdo(s),
        }) => (dest, src, s),
        other => panic!("not an SDO frame: {other:?}"),
    }
}

/// Encodes a decoded frame again with its own addresses.
fn re_encode(r: &Received<'_>) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let n = encode(&r.frame, r.dst_mac, r.src_mac, &mut buf).expect("a decoded frame encodes");
    buf[..n].to_vec()
}

fn seq(receive_seq: u8, receive_con: Con, send_seq: u8, send_con: Con) -> SeqLayer {
    SeqLayer {
        receive_seq,
        receive_con,
        send_seq,
        send_con,
    }
}

#[test]
fn every_frame_of_both_captures_decodes() {
    for (name, pcap, count) in [
        ("ref_mn_cn", REF_MN_CN, 7_765),
        ("ref_cn_answers", REF_CN_ANSWERS, 1_058),
    ] {
        let all = frames(pcap);
        assert_eq!(all.len(), count, "{name}");
        for (i, f) in all.iter().enumerate() {
            if let Err(e) = decode(f) {
                panic!("{name} frame {}: {e}", i + 1);
            }
        }
    }
}

#[test]
fn every_sdo_frame_of_the_reference_re_encodes_to_its_bytes() {
    let mut count = 0;
    let mut commands = [0usize; 3];
    for (i, f) in frames(REF_MN_CN).iter().enumerate() {
        let r = decode(f).unwrap();
        let Frame::ASnd(ASnd {
            service: ASndService::Sdo(s),
            ..
        }) = r.frame
        else {
            continue;
        };
        count += 1;
        commands[usize::from(s.command.command.0).min(2)] += 1;
        assert_eq!(re_encode(&r), *f, "frame {}", i + 1);
    }
    assert_eq!(count, 168);
    // Sequence-only (NIL) frames and WriteByIndex; no ReadByIndex here.
    assert_eq!(commands, [66, 102, 0]);
}

#[test]
fn the_sequence_layer_set_up_of_node_1_reads_as_the_readme_gives_it() {
    // README rule 22: frames 879, 897, 933 and 986.
    let want = [
        (879, 1, MN_NODE, seq(0, Con::NONE, 0, Con::INIT)),
        (897, MN_NODE, 1, seq(0, Con::INIT, 0, Con::INIT)),
        (933, 1, MN_NODE, seq(0, Con::INIT, 0, Con::VALID)),
        (986, MN_NODE, 1, seq(0, Con::VALID, 0, Con::VALID)),
    ];
    for (n, dest, src, s) in want {
        let f = reference(n);
        let (d, sr, sdo) = sdo_of(&f);
        assert_eq!((d, sr), (dest, src), "frame {n}");
        assert_eq!(sdo, Sdo::sequence_only(s), "frame {n}");
        assert!(sdo.command.is_nil());
    }
}

#[test]
fn the_restore_abort_of_frame_1093_is_object_does_not_exist() {
    let f = reference(1093);
    let (dest, src, sdo) = sdo_of(&f);
    assert_eq!((dest, src), (MN_NODE, 1));
    assert_eq!(sdo.seq, seq(1, Con::VALID, 1, Con::VALID));
    assert_eq!(
        sdo.command,
        CommandLayer {
            transaction: 0,
            response: true,
            abort: true,
            segmentation: Segmentation::Expedited,
            command: CommandId::WRITE_BY_INDEX,
            segment_size: 4,
            data_size: None,
            data: &[0x00, 0x00, 0x02, 0x06],
        }
    );
    assert_eq!(
        sdo.command.abort_code(),
        Some(AbortCode::OBJECT_DOES_NOT_EXIST)
    );
    // The request it answers: 0x1011/1 = "load" (frame 1022).
    let f = reference(1022);
    let (_, _, req) = sdo_of(&f);
    assert_eq!(
        parse_write_by_index_request(req.command.data).unwrap(),
        (IndexAddress::new(0x1011, 1), &b"load"[..])
    );
}

#[test]
fn the_worked_example_write_and_response_decode_field_by_field() {
    // README: frame 2581, the final 0x1006 write to node 1.
    let f = reference(2581);
    let (dest, src, sdo) = sdo_of(&f);
    assert_eq!((dest, src), (1, MN_NODE));
    assert_eq!(sdo.seq, seq(16, Con::VALID, 17, Con::VALID));
    let c = sdo.command;
    assert_eq!(
        (c.transaction, c.response, c.abort, c.segmentation),
        (0x10, false, false, Segmentation::Expedited)
    );
    assert_eq!((c.command, c.segment_size), (CommandId::WRITE_BY_INDEX, 8));
    let (addr, value) = parse_write_by_index_request(c.data).unwrap();
    assert_eq!(addr, IndexAddress::new(0x1006, 0));
    assert_eq!(value, 50_000u32.to_le_bytes());

    // Frame 2599, node 1's response.
    let f = reference(2599);
    let (dest, src, sdo) = sdo_of(&f);
    assert_eq!((dest, src), (MN_NODE, 1));
    assert_eq!(sdo.seq, seq(17, Con::VALID, 17, Con::VALID));
    assert_eq!(
        sdo.command,
        CommandLayer::response(0x10, CommandId::WRITE_BY_INDEX, &[])
    );
}

#[test]
fn the_close_of_frame_2675_has_both_connections_none() {
    let f = reference(2675);
    let (dest, src, sdo) = sdo_of(&f);
    assert_eq!((dest, src), (1, MN_NODE));
    assert_eq!(f[18..20], [0x44, 0x44]);
    assert_eq!(sdo, Sdo::sequence_only(seq(17, Con::NONE, 17, Con::NONE)));
}

/// The WriteByIndex requests the MN sends node `node`, in order:
/// (frame number, address, value).
pub(super) fn cfm_writes(node: u8) -> Vec<(usize, IndexAddress, Vec<u8>)> {
    frames(REF_MN_CN)
        .iter()
        .enumerate()
        .filter_map(|(i, f)| {
            let (dest, src, s) = sdo_of_any(f)?;
            let c = s.command;
            if dest != node || src != MN_NODE || c.command != CommandId::WRITE_BY_INDEX {
                return None;
            }
            let (addr, value) = parse_write_by_index_request(c.data).unwrap();
            Some((i + 1, addr, value.to_vec()))
        })
        .collect()
}

fn sdo_of_any(bytes: &[u8]) -> Option<(u8, u8, Sdo<'_>)> {
    match decode(bytes).ok()?.frame {
        Frame::ASnd(ASnd {
            dest,
            src,
            service: ASndService::Sdo(s),
        }) => Some((dest, src, s)),
        _ => None,
    }
}

#[test]
fn the_configuration_managers_writes_to_node_1_are_the_readmes_table() {
    let a = IndexAddress::new;
    let u32v = |v: u32| v.to_le_bytes().to_vec();
    let want: Vec<(usize, IndexAddress, Vec<u8>)> = vec![
        (1022, a(0x1011, 1), u32v(0x6461_6F6C)),
        (1155, a(0x1600, 0), vec![0]),
        (1279, a(0x1A00, 0), vec![0]),
        (1376, a(0x1006, 0), u32v(50_000)),
        (1465, a(0x1020, 1), u32v(0x3124)),
        (1562, a(0x1020, 2), u32v(0x0373_5955)),
        (1651, a(0x1C0B, 3), u32v(80)),
        (1748, a(0x1C0D, 3), u32v(80)),
        (1837, a(0x1C14, 0), u32v(50_000_000)),
        (1934, a(0x1F98, 4), 36u16.to_le_bytes().to_vec()),
        (2023, a(0x1F98, 5), 36u16.to_le_bytes().to_vec()),
        (
            2112,
            a(0x1600, 1),
            0x0008_0000_0001_6200u64.to_le_bytes().to_vec(),
        ),
        (
            2209,
            a(0x1A00, 1),
            0x0008_0000_0001_6000u64.to_le_bytes().to_vec(),
        ),
        (2298, a(0x1600, 0), vec![1]),
        (2395, a(0x1A00, 0), vec![1]),
        (2484, a(0x1010, 1), u32v(0x6576_6173)),
        (2581, a(0x1006, 0), u32v(50_000)),
    ];
    assert_eq!(cfm_writes(1), want);
    // README rule 27: 0x1A00/1 = 00 60 01 00 00 00 08 00.
    assert_eq!(want[12].2, [0x00, 0x60, 0x01, 0x00, 0x00, 0x00, 0x08, 0x00]);
    // Nodes 32 and 110 get the same writes.
    let values = |w: Vec<(usize, IndexAddress, Vec<u8>)>| {
        w.into_iter().map(|(_, a, v)| (a, v)).collect::<Vec<_>>()
    };
    assert_eq!(values(cfm_writes(32)), values(want.clone()));
    assert_eq!(values(cfm_writes(110)), values(want));
}

#[test]
fn ident_response_2688_carries_the_configuration_stamps() {
    let f = reference(2688);
    assert_eq!(f.len(), 176);
    let Frame::ASnd(ASnd {
        dest,
        src,
        service: ASndService::IdentResponse(r),
    }) = decode(&f).unwrap().frame
    else {
        panic!("not an IdentResponse")
    };
    assert_eq!((dest, src), (BROADCAST_NODE, 1));
    assert_eq!(r.verify_conf_date, 0x3124);
    assert_eq!(r.verify_conf_time, 0x0373_5955);
    assert_eq!(r.nmt, NmtState::CS_PRE_OPERATIONAL_2);
    assert_eq!(r.feature_flags, 0x0001_0265);
    assert_eq!((r.mtu, r.poll_in_size, r.poll_out_size), (1500, 36, 36));
    assert_eq!(r.response_time, 50_000);
    assert_eq!(r.device_type, 0x000F_0191);
    assert_eq!(r.revision, 0x0002_0007);
    // Before the download the CN reports no stamps (frame 868).
    let f = reference(868);
    let Frame::ASnd(ASnd {
        service: ASndService::IdentResponse(r),
        ..
    }) = decode(&f).unwrap().frame
    else {
        panic!("not an IdentResponse")
    };
    assert_eq!((r.verify_conf_date, r.verify_conf_time), (0, 0));
}

/// Re-encodes every frame of a capture; returns, per kind, how many
/// re-encoded byte for byte and how many differ only past the captured
/// length (veth does not pad SoC and SoA to 60: the encoder does).
fn replay(pcap: &[u8]) -> std::collections::BTreeMap<&'static str, (usize, usize)> {
    let mut out = std::collections::BTreeMap::new();
    for (i, f) in frames(pcap).iter().enumerate() {
        let r = decode(f).unwrap();
        let kind = match r.frame {
            Frame::Soc(_) => "SoC",
            Frame::PReq(_) => "PReq",
            Frame::PRes(_) => "PRes",
            Frame::Soa(_) => "SoA",
            Frame::ASnd(a) => match a.service {
                ASndService::IdentResponse(_) => continue,
                ASndService::StatusResponse(_) => "StatusResponse",
                ASndService::NmtCommand(_) => "NMTCommand",
                ASndService::Sdo(_) => "SDO",
                ASndService::Other { .. } => "other",
            },
        };
        let again = re_encode(&r);
        let e = out.entry(kind).or_insert((0, 0));
        if again == *f {
            e.0 += 1;
        } else {
            assert!(
                f.len() < crate::ether::MIN_FRAME_LEN
                    && again.len() == crate::ether::MIN_FRAME_LEN
                    && again[..f.len()] == f[..]
                    && again[f.len()..].iter().all(|&x| x == 0),
                "frame {} ({kind}) re-encodes to other bytes",
                i + 1
            );
            e.1 += 1;
        }
    }
    out
}

#[test]
fn every_frame_but_ident_responses_re_encodes_to_the_captured_bytes() {
    let got = replay(REF_MN_CN);
    let want: std::collections::BTreeMap<_, _> = [
        ("SoC", (0, 861)),
        ("PReq", (2_491, 0)),
        ("PRes", (2_491, 0)),
        ("SoA", (0, 971 + 546 + 20 + 12 + 168)),
        ("StatusResponse", (20, 0)),
        ("NMTCommand", (10, 0)),
        ("SDO", (168, 0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
    // In jitterlab's own capture every frame is 60 bytes or more.
    let got = replay(REF_CN_ANSWERS);
    let want: std::collections::BTreeMap<_, _> = [
        ("SoC", (211, 0)),
        ("PReq", (211, 0)),
        ("PRes", (211, 0)),
        ("SoA", (213, 0)),
        ("StatusResponse", (209, 0)),
        ("NMTCommand", (2, 0)),
    ]
    .into_iter()
    .collect();
    assert_eq!(got, want);
}

#[test]
fn status_responses_are_72_bytes_with_two_empty_entries() {
    for pcap in [REF_MN_CN, REF_CN_ANSWERS] {
        for f in frames(pcap) {
            let r = decode(&f).unwrap();
            if let Frame::ASnd(ASnd {
                dest,
                service: ASndService::StatusResponse(s),
                ..
            }) = r.frame
            {
                assert_eq!(f.len(), 72);
                assert_eq!(dest, BROADCAST_NODE);
                assert!(s.errors.is_empty());
                assert_eq!(re_encode(&r), f);
            }
        }
    }
}
