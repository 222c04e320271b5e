//! Exact bytes of every frame type, round trips, errors with their
//! messages, wire-time figures computed by hand, and property tests:
//! decoding never panics on random bytes, truncations or bit flips, and
//! what decodes re-encodes to the same frame.
//!
//! The documents cited here are listed in `docs/design.md`.

use proptest::collection::vec;
use proptest::prelude::*;

use super::*;
use crate::ether;

const CN_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0x01];
const MN_MAC: [u8; 6] = [0x02, 0x00, 0x00, 0x00, 0x00, 0xF0];

fn enc(frame: &Frame<'_>) -> Vec<u8> {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let dst = frame.multicast_mac().unwrap_or(CN_MAC);
    let n = encode(frame, dst, MN_MAC, &mut buf).unwrap();
    assert_eq!(n, frame.frame_len());
    buf[..n].to_vec()
}

fn round_trip(frame: Frame<'_>) -> Vec<u8> {
    let bytes = enc(&frame);
    let got = decode(&bytes).unwrap();
    assert_eq!(got.frame, frame);
    assert_eq!(got.src_mac, MN_MAC);
    bytes
}

fn soc() -> Frame<'static> {
    Frame::Soc(Soc {
        mc: true,
        ps: false,
        net_time: NetTime {
            seconds: 0x6553_f100,
            nanoseconds: 123_456_789,
        },
        relative_time: 0x0102_0304_0506_0708,
    })
}

fn ident() -> IdentResponse {
    IdentResponse {
        en: false,
        ec: true,
        pr: 3,
        rs: 1,
        nmt: NmtState::CS_NOT_ACTIVE,
        epl_version: EPL_VERSION,
        feature_flags: 0x0004_0001,
        mtu: 300,
        poll_in_size: 1,
        poll_out_size: 6,
        response_time: 25_000,
        device_type: 0x000f_0191,
        vendor_id: 0x0000_0079,
        product_code: 0x1234,
        revision: 0x0001_0002,
        serial: 0xdead_beef,
        verify_conf_date: 0x3124,
        verify_conf_time: 0x0373_5955,
    }
}

#[test]
fn soc_bytes_are_ds301s() {
    let b = round_trip(soc());
    assert_eq!(b.len(), 60);
    assert_eq!(b[..6], MAC_SOC);
    assert_eq!(b[12..14], [0x88, 0xab]);
    assert_eq!(
        b[14..36],
        [
            0x01, 0xff, 0xf0, 0, 0x80, 0, //
            0x00, 0xf1, 0x53, 0x65, 0x15, 0xcd, 0x5b, 0x07, //
            0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01
        ]
    );
    assert!(b[36..].iter().all(|&x| x == 0));
}

#[test]
fn preq_and_pres_carry_flags_size_and_payload() {
    let out = [0xa5];
    let preq = Frame::PReq(PReq {
        node: 40,
        ms: true,
        ea: true,
        rd: true,
        pdo_version: 0x10,
        payload: &out,
    });
    let b = round_trip(preq);
    assert_eq!(b[..6], CN_MAC);
    assert_eq!(b[14..25], [0x03, 40, 0xf0, 0, 0x25, 0, 0x10, 0, 1, 0, 0xa5]);
    assert_eq!(b.len(), 60);

    let input = [1, 2, 3, 4, 5, 6];
    let pres = Frame::PRes(PRes {
        node: 7,
        nmt: NmtState::CS_OPERATIONAL,
        ms: false,
        en: true,
        rd: true,
        pr: 7,
        rs: 2,
        pdo_version: 0x20,
        payload: &input,
    });
    let b = round_trip(pres);
    assert_eq!(b[..6], MAC_PRES);
    assert_eq!(
        b[14..30],
        [0x04, 0xff, 7, 0xfd, 0x11, 0x3a, 0x20, 0, 6, 0, 1, 2, 3, 4, 5, 6]
    );
    let Frame::PRes(p) = decode(&b).unwrap().frame else {
        unreachable!()
    };
    assert!(!p.is_pres_mn());
}

#[test]
fn pres_mn_is_a_pres_from_the_mn() {
    let outputs = [0x11u8; 40];
    let f = Frame::PRes(PRes {
        node: MN_NODE,
        nmt: NmtState::MS_OPERATIONAL,
        ms: false,
        en: false,
        rd: true,
        pr: 0,
        rs: 0,
        pdo_version: 0,
        payload: &outputs,
    });
    let b = round_trip(f);
    assert_eq!(b.len(), 14 + 10 + 40);
    assert_eq!(b[14..17], [0x04, 0xff, 0xf0]);
    let Frame::PRes(p) = decode(&b).unwrap().frame else {
        unreachable!()
    };
    assert!(p.is_pres_mn());
}

#[test]
fn soa_invites_one_node() {
    let f = Frame::Soa(Soa {
        nmt: NmtState::MS_PRE_OPERATIONAL_1,
        ea: true,
        er: true,
        service: RequestedService::IDENT_REQUEST,
        target: 12,
        epl_version: EPL_VERSION,
    });
    let b = round_trip(f);
    assert_eq!(b[..6], MAC_SOA);
    assert_eq!(b[14..24], [0x05, 0xff, 0xf0, 0x1d, 0x06, 0, 1, 12, 0x20, 0]);
}

#[test]
fn ident_response_fields_sit_at_their_offsets() {
    let f = Frame::ASnd(ASnd {
        dest: MN_NODE,
        src: 3,
        service: ASndService::IdentResponse(ident()),
    });
    let b = round_trip(f);
    assert_eq!(b.len(), 14 + 4 + 158);
    assert_eq!(b[..6], MAC_ASND);
    let d = &b[14..];
    assert_eq!(d[..8], [0x06, 0xf0, 3, 0x01, 0x08, 0x19, 0x1c, 0]);
    assert_eq!(d[8], 0x20);
    assert_eq!(d[10..14], [0x01, 0, 0x04, 0]);
    assert_eq!(d[14..16], 300u16.to_le_bytes());
    assert_eq!(d[16..18], [1, 0]);
    assert_eq!(d[18..20], [6, 0]);
    assert_eq!(d[20..24], 25_000u32.to_le_bytes());
    assert_eq!(d[26..30], [0x91, 0x01, 0x0f, 0]);
    assert_eq!(d[30..34], [0x79, 0, 0, 0]);
    assert_eq!(d[42..46], [0xef, 0xbe, 0xad, 0xde]);
    assert!(d[46..54].iter().all(|&x| x == 0));
    // VerifyConfigurationDate/Time: frame bytes 68-75.
    assert_eq!(b[68..76], [0x24, 0x31, 0, 0, 0x55, 0x59, 0x73, 0x03]);
    assert!(d[62..].iter().all(|&x| x == 0));
}

#[test]
fn status_response_entries_end_at_the_zero_entry() {
    let mut entries = [0u8; 40];
    let e1 = ErrorEntry {
        entry_type: 0x8002,
        code: 0x8235,
        time: NetTime {
            seconds: 5,
            nanoseconds: 6,
        },
        info: 7,
    };
    let e2 = ErrorEntry {
        entry_type: 0x1001,
        ..ErrorEntry::default()
    };
    e1.write((&mut entries[..20]).try_into().unwrap());
    e2.write((&mut entries[20..]).try_into().unwrap());
    let f = Frame::ASnd(ASnd {
        dest: MN_NODE,
        src: 9,
        service: ASndService::StatusResponse(StatusResponse {
            en: true,
            ec: false,
            pr: 0,
            rs: 0,
            nmt: NmtState::CS_PRE_OPERATIONAL_2,
            static_errors: 0x0000_0000_0000_0011,
            errors: &entries,
        }),
    });
    let b = round_trip(f);
    assert_eq!(b.len(), 14 + 4 + 14 + 40 + 20);
    assert_eq!(
        b[14..32],
        [6, 0xf0, 9, 2, 0x10, 0, 0x5d, 0, 0, 0, 0x11, 0, 0, 0, 0, 0, 0, 0]
    );
    assert_eq!(b[32..36], [0x02, 0x80, 0x35, 0x82]);
    let Frame::ASnd(ASnd {
        service: ASndService::StatusResponse(s),
        ..
    }) = decode(&b).unwrap().frame
    else {
        unreachable!()
    };
    assert_eq!(s.entries().collect::<Vec<_>>(), vec![e1, e2]);

    // No entry: the zero terminator and padding are not entries.
    let empty = Frame::ASnd(ASnd {
        dest: MN_NODE,
        src: 9,
        service: ASndService::StatusResponse(StatusResponse {
            en: false,
            ec: false,
            pr: 0,
            rs: 0,
            nmt: NmtState::CS_OPERATIONAL,
            static_errors: 0,
            errors: &[],
        }),
    });
    // openPOWERLINK's minimum: room for two entries, 72 bytes on the wire.
    let b = round_trip(empty);
    assert_eq!(b.len(), 72);
    assert!(b[18 + 14..].iter().all(|&x| x == 0));

    let mut buf = [0u8; 128];
    let zero = [0u8; 20];
    let bad = Frame::ASnd(ASnd {
        dest: MN_NODE,
        src: 9,
        service: ASndService::StatusResponse(StatusResponse {
            en: false,
            ec: false,
            pr: 0,
            rs: 0,
            nmt: NmtState::CS_OPERATIONAL,
            static_errors: 0,
            errors: &zero,
        }),
    });
    assert_eq!(
        encode(&bad, MAC_ASND, MN_MAC, &mut buf).unwrap_err().to_string(),
        "the frame cannot be encoded: an all-zero StatusResponse error entry ends the list; give it a type"
    );
}

#[test]
fn nmt_command_carries_id_and_data_with_padding() {
    let f = Frame::ASnd(ASnd {
        dest: 5,
        src: MN_NODE,
        service: ASndService::NmtCommand(NmtCommand {
            id: NmtCommandId::ENABLE_READY_TO_OPERATE,
            data: &[],
        }),
    });
    let b = enc(&f);
    assert_eq!(b.len(), 60);
    assert_eq!(b[14..20], [6, 5, 0xf0, 4, 0x24, 0]);
    let Frame::ASnd(ASnd {
        dest: 5,
        src: MN_NODE,
        service: ASndService::NmtCommand(c),
    }) = decode(&b).unwrap().frame
    else {
        panic!("not an NMTCommand")
    };
    assert_eq!(c.id, NmtCommandId::ENABLE_READY_TO_OPERATE);
    // The padding is command data as far as the wire can tell.
    assert_eq!(c.data, &[0u8; 40][..]);
}

#[test]
fn other_asnd_services_pass_through() {
    let request = [1, 2, 3];
    let f = Frame::ASnd(ASnd {
        dest: MN_NODE,
        src: 1,
        service: ASndService::Other {
            id: ServiceId::NMT_REQUEST,
            data: &request,
        },
    });
    let b = enc(&f);
    let Frame::ASnd(a) = decode(&b).unwrap().frame else {
        unreachable!()
    };
    let ASndService::Other { id, data } = a.service else {
        unreachable!()
    };
    assert_eq!(id, ServiceId::NMT_REQUEST);
    assert_eq!(data[..3], request);
    assert_eq!(data.len(), 60 - 14 - 4);
}

#[test]
fn encoding_refuses_what_the_wire_cannot_carry() {
    let mut buf = [0u8; 2000];
    let big = [0u8; 1491];
    let pres = |node, payload| {
        Frame::PRes(PRes {
            node,
            nmt: NmtState::CS_OPERATIONAL,
            ms: false,
            en: false,
            rd: true,
            pr: 0,
            rs: 0,
            pdo_version: 0,
            payload,
        })
    };
    let err = encode(&pres(1, &big), MAC_PRES, MN_MAC, &mut buf).unwrap_err();
    assert_eq!(
        err,
        EncodeError::PayloadTooLarge {
            len: 1491,
            max: 1490
        }
    );
    assert!(err
        .to_string()
        .starts_with("a payload of 1491 bytes is over the limit of 1490"));
    assert_eq!(
        encode(&pres(1, &big[..1490]), MAC_PRES, MN_MAC, &mut buf),
        Ok(1514)
    );
    assert_eq!(
        encode(&pres(241, &[]), MAC_PRES, MN_MAC, &mut buf),
        Err(EncodeError::Invalid(
            "a PRes comes from a CN (node 1-239) or, as PResMN, the MN (240)"
        ))
    );
    let mut p = pres(1, &[]);
    if let Frame::PRes(ref mut x) = p {
        x.rs = 8;
    }
    assert_eq!(
        encode(&p, MAC_PRES, MN_MAC, &mut buf),
        Err(EncodeError::Invalid("PR and RS are 3-bit fields (0-7)"))
    );
    let preq = Frame::PReq(PReq {
        node: 0,
        ms: false,
        ea: false,
        rd: false,
        pdo_version: 0,
        payload: &[],
    });
    assert_eq!(
        encode(&preq, CN_MAC, MN_MAC, &mut buf),
        Err(EncodeError::Invalid("a PReq goes to a CN (node 1-239)"))
    );
    assert_eq!(
        encode(&soc(), MAC_SOC, MN_MAC, &mut buf[..59]),
        Err(EncodeError::BufferTooSmall { need: 60, have: 59 })
    );
    let nmt = Frame::ASnd(ASnd {
        dest: 1,
        src: MN_NODE,
        service: ASndService::Other {
            id: ServiceId::NMT_REQUEST,
            data: &[0u8; 1497],
        },
    });
    assert_eq!(
        encode(&nmt, MAC_ASND, MN_MAC, &mut buf),
        Err(EncodeError::PayloadTooLarge {
            len: 1501,
            max: 1500
        })
    );
}

#[test]
fn decoding_names_the_fault_and_its_offset() {
    let mut b = enc(&soc());
    assert_eq!(
        decode(&b[..30]).unwrap_err().to_string(),
        "malformed POWERLINK frame at byte 30: SoC cut short"
    );
    b[16] = 3;
    assert_eq!(
        decode(&b),
        Err(DecodeError::Malformed {
            offset: 16,
            what: "a SoC comes from the MN (240)"
        })
    );
    b[12] = 0x08;
    b[13] = 0x00;
    assert_eq!(
        decode(&b).unwrap_err().to_string(),
        "not a POWERLINK frame: EtherType 0x0800 (POWERLINK is 0x88ab)"
    );
    let mut p = enc(&Frame::PReq(PReq {
        node: 1,
        ms: false,
        ea: false,
        rd: true,
        pdo_version: 0,
        payload: &[9],
    }));
    p[22] = 47; // Size: past the 46 bytes of data.
    assert_eq!(
        decode(&p),
        Err(DecodeError::Malformed {
            offset: 22,
            what: "Size runs past the end of the frame"
        })
    );
    p[14] = 0x0d;
    assert_eq!(
        decode(&p).unwrap_err().to_string(),
        "POWERLINK message type 0x0d is not spoken (only SoC, PReq, PRes, SoA and ASnd)"
    );
    assert_eq!(
        decode(&[0u8; 5]),
        Err(DecodeError::Malformed {
            offset: 5,
            what: "the Ethernet header is cut short"
        })
    );
}

#[test]
fn nmt_names_follow_the_sender() {
    assert_eq!(
        NmtState::CS_OPERATIONAL.name(false),
        Some("NMT_CS_OPERATIONAL")
    );
    assert_eq!(
        NmtState::MS_OPERATIONAL.name(true),
        Some("NMT_MS_OPERATIONAL")
    );
    assert_eq!(NmtState(0x6d).to_string(), "NMT_CS_READY_TO_OPERATE (0x6d)");
    assert_eq!(NmtState(0x42).to_string(), "NMT state 0x42");
    assert_eq!(NmtState::CS_STOPPED.name(true), None);
}

#[test]
fn wire_time_of_seed_004s_networks_by_hand() {
    // Every frame of [Baumgartner POWERLINK]'s cycle is a minimum frame: 60 + 4 FCS + 8
    // preamble + 12 gap = 84 bytes = 6720 ns, except the 40-CN PResMN
    // (14 + 10 + 40 = 64, + 24 = 88 bytes = 7040 ns).
    for (cns, polled, chained) in [
        (3, 53_760, 40_320),
        (10, 147_840, 87_360),
        (20, 282_240, 154_560),
        (40, 551_040, 289_280),
    ] {
        assert_eq!(
            wire_time(&CycleLoad::seed004(cns, false)),
            polled,
            "{cns} CNs"
        );
        assert_eq!(
            wire_time(&CycleLoad::seed004(cns, true)),
            chained,
            "{cns} CNs chained"
        );
    }
    let with_asnd = CycleLoad {
        asnd: Some(ASND_HEADER_LEN + IDENT_RESPONSE_LEN),
        ..CycleLoad::seed004(3, false)
    };
    // 176 + 4 + 20 = 200 bytes = 16 µs on top.
    assert_eq!(wire_time(&with_asnd), 53_760 + 16_000);
    assert_eq!(wire_time::wire_bytes(SOC_LEN), 84);
}

#[test]
fn forty_cns_cannot_fit_250_us_even_chained() {
    assert_eq!(
        fits(250_000, &CycleLoad::seed004(40, true)),
        Err("40 CNs need at least 289.3 µs of wire time per cycle at 100 Mbit/s (chained), more than the 250 µs cycle".into())
    );
    assert_eq!(
        fits(500_000, &CycleLoad::seed004(40, false)),
        Err("40 CNs need at least 551 µs of wire time per cycle at 100 Mbit/s, more than the 500 µs cycle".into())
    );
    assert_eq!(fits(500_000, &CycleLoad::seed004(40, true)), Ok(()));
    assert_eq!(fits(1_000_000, &CycleLoad::seed004(40, false)), Ok(()));
    assert_eq!(fits(250_000, &CycleLoad::seed004(3, false)), Ok(()));
    assert!(fits(250_000, &CycleLoad::seed004(20, false)).is_err());
    assert_eq!(fits(250_000, &CycleLoad::seed004(20, true)), Ok(()));
}

/// Every frame kind the tests know, encoded.
fn samples() -> Vec<Vec<u8>> {
    let payload = [7u8; 6];
    vec![
        enc(&soc()),
        enc(&Frame::PReq(PReq {
            node: 1,
            ms: false,
            ea: true,
            rd: true,
            pdo_version: 0,
            payload: &payload[..1],
        })),
        enc(&Frame::PRes(PRes {
            node: 2,
            nmt: NmtState::CS_OPERATIONAL,
            ms: false,
            en: false,
            rd: true,
            pr: 1,
            rs: 1,
            pdo_version: 0,
            payload: &payload,
        })),
        enc(&Frame::Soa(Soa {
            nmt: NmtState::MS_OPERATIONAL,
            ea: false,
            er: false,
            service: RequestedService::STATUS_REQUEST,
            target: 2,
            epl_version: EPL_VERSION,
        })),
        enc(&Frame::ASnd(ASnd {
            dest: MN_NODE,
            src: 2,
            service: ASndService::IdentResponse(ident()),
        })),
        enc(&Frame::ASnd(ASnd {
            dest: 2,
            src: MN_NODE,
            service: ASndService::NmtCommand(NmtCommand {
                id: NmtCommandId::START_NODE,
                data: &[],
            }),
        })),
        enc(&Frame::ASnd(ASnd {
            dest: 2,
            src: MN_NODE,
            service: ASndService::Sdo(sdo::Sdo {
                seq: sdo::SeqLayer {
                    receive_seq: 5,
                    receive_con: sdo::Con::VALID,
                    send_seq: 6,
                    send_con: sdo::Con::VALID,
                },
                command: sdo::segments(9, sdo::CommandId::WRITE_BY_INDEX, false, &[0x22; 40], 20)
                    .next()
                    .unwrap(),
            }),
        })),
    ]
}

/// Decodes `bytes`; whatever decodes must encode again and decode to the
/// same frame — except that an NMTCommand's or unknown service's data
/// takes in the padding the encoder adds to a short frame, after which the
/// bytes are stable.
fn exercise(bytes: &[u8]) {
    let _ = decode_payload(bytes);
    if let Ok(r) = decode(bytes) {
        let mut buf = [0u8; MAX_FRAME_LEN];
        let n = encode(&r.frame, r.dst_mac, r.src_mac, &mut buf).expect("a decoded frame encodes");
        let again = decode(&buf[..n]).unwrap().frame;
        let open_ended = matches!(
            r.frame,
            Frame::ASnd(ASnd {
                service: ASndService::NmtCommand(_) | ASndService::Other { .. },
                ..
            })
        );
        if !open_ended || bytes.len() >= ether::MIN_FRAME_LEN {
            assert_eq!(again, r.frame);
        }
        let mut buf2 = [0u8; MAX_FRAME_LEN];
        let m = encode(&again, r.dst_mac, r.src_mac, &mut buf2).unwrap();
        assert_eq!(buf[..n], buf2[..m]);
    }
}

#[test]
fn every_truncation_and_bit_flip_is_handled() {
    for s in samples() {
        for len in 0..s.len() {
            exercise(&s[..len]);
        }
        for bit in 0..s.len() * 8 {
            let mut f = s.clone();
            f[bit / 8] ^= 1 << (bit % 8);
            exercise(&f);
        }
    }
    // A truncated IdentResponse or PRes is malformed, not misread.
    let ident = &samples()[4];
    assert!(matches!(
        decode(&ident[..ident.len() - 1]),
        Err(DecodeError::Malformed { .. })
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..200)) {
        exercise(&bytes);
    }

    #[test]
    fn random_powerlink_bodies_never_panic(
        mtyp in 0u8..8, dest in any::<u8>(), src in any::<u8>(), svid in 0u8..7,
        rest in vec(any::<u8>(), 0..200),
    ) {
        let mut b = vec![0u8; 12];
        b.extend_from_slice(&ETHERTYPE_POWERLINK.to_be_bytes());
        b.extend_from_slice(&[mtyp, dest, src, svid]);
        b.extend_from_slice(&rest);
        exercise(&b);
    }

    #[test]
    fn pres_round_trips(node in 1u8..=240, nmt in any::<u8>(), flags in any::<(bool, bool, bool)>(),
                        pr in 0u8..8, rs in 0u8..8, pdov in any::<u8>(),
                        payload in vec(any::<u8>(), 0..=MAX_PDO_PAYLOAD)) {
        let f = Frame::PRes(PRes {
            node, nmt: NmtState(nmt), ms: flags.0, en: flags.1, rd: flags.2,
            pr, rs, pdo_version: pdov, payload: &payload,
        });
        let b = enc(&f);
        prop_assert_eq!(decode(&b).unwrap().frame, f);
        prop_assert_eq!(b.len(), (24 + payload.len()).max(60));
    }
}
