//! SDO layers: exact bytes of the frames openPOWERLINK sends, round trips,
//! and malformed input.

use super::*;
use crate::powerlink::{
    decode, encode, ASnd, ASndService, Frame, MAC_ASND, MAX_FRAME_LEN, MN_NODE,
};

const MN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0xf0];
const CN_MAC: [u8; 6] = [0x02, 0, 0, 0, 0, 0x01];

fn sdo_frame(dest: u8, src: u8, sdo: Sdo<'_>) -> Vec<u8> {
    let f = Frame::ASnd(ASnd {
        dest,
        src,
        service: ASndService::Sdo(sdo),
    });
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mac = if src == MN_NODE { MN_MAC } else { CN_MAC };
    let n = encode(&f, MAC_ASND, mac, &mut buf).unwrap();
    assert_eq!(decode(&buf[..n]).unwrap().frame, f, "decodes to itself");
    buf[..n].to_vec()
}

fn hex(s: &str) -> Vec<u8> {
    s.split_whitespace()
        .map(|b| u8::from_str_radix(b, 16).unwrap())
        .collect()
}

#[test]
fn the_expedited_write_of_0x1006_is_the_references_bytes() {
    let mut buf = [0u8; 8];
    let data = write_by_index_request(
        IndexAddress::new(0x1006, 0),
        &50_000u32.to_le_bytes(),
        &mut buf,
    )
    .unwrap();
    let sdo = Sdo {
        seq: SeqLayer {
            receive_seq: 16,
            receive_con: Con::VALID,
            send_seq: 17,
            send_con: Con::VALID,
        },
        command: CommandLayer::request(16, CommandId::WRITE_BY_INDEX, data),
    };
    let mut want = hex(
        "01 11 1e 00 00 04  02 00 00 00 00 f0  88 ab  06 01 f0 05  42 46 00 00  \
         00 10 00 01 08 00 00 00  06 10 00 00 50 c3 00 00",
    );
    want.resize(60, 0);
    assert_eq!(sdo_frame(1, MN_NODE, sdo), want);
}

#[test]
fn the_write_response_is_the_references_bytes() {
    let sdo = Sdo {
        seq: SeqLayer {
            receive_seq: 17,
            receive_con: Con::VALID,
            send_seq: 17,
            send_con: Con::VALID,
        },
        command: CommandLayer::response(16, CommandId::WRITE_BY_INDEX, &[]),
    };
    let mut want = hex(
        "01 11 1e 00 00 04  02 00 00 00 00 01  88 ab  06 f0 01 05  46 46 00 00  \
         00 10 80 01 00 00 00 00",
    );
    want.resize(60, 0);
    assert_eq!(sdo_frame(MN_NODE, 1, sdo), want);
}

#[test]
fn a_sequence_only_frame_is_nil_and_zero_padded() {
    let sdo = Sdo::sequence_only(SeqLayer {
        receive_seq: 0,
        receive_con: Con::NONE,
        send_seq: 0,
        send_con: Con::INIT,
    });
    let b = sdo_frame(1, MN_NODE, sdo);
    assert_eq!(b.len(), 60);
    assert_eq!(b[14..22], [6, 1, 0xf0, 5, 0x00, 0x01, 0, 0]);
    assert!(b[22..].iter().all(|&x| x == 0));
    assert!(sdo.command.is_nil());
}

#[test]
fn an_abort_carries_its_code() {
    let code = AbortCode::OBJECT_DOES_NOT_EXIST.to_bytes();
    let sdo = Sdo {
        seq: SeqLayer::default(),
        command: CommandLayer::abort(3, CommandId::WRITE_BY_INDEX, true, &code),
    };
    let b = sdo_frame(MN_NODE, 1, sdo);
    assert_eq!(b[22..30], [0, 3, 0xc0, 1, 4, 0, 0, 0]);
    assert_eq!(b[30..34], [0x00, 0x00, 0x02, 0x06]);
    assert_eq!(
        sdo.command.abort_code(),
        Some(AbortCode::OBJECT_DOES_NOT_EXIST)
    );
    assert_eq!(
        AbortCode(0x0602_0000).to_string(),
        "object does not exist in the object dictionary (0x06020000)"
    );
    assert_eq!(
        AbortCode(0x1234_5678).to_string(),
        "SDO abort code 0x12345678"
    );
}

#[test]
fn read_by_index_request_and_response() {
    let mut buf = [0u8; 4];
    let req = read_by_index_request(IndexAddress::new(0x1A00, 1), &mut buf).unwrap();
    assert_eq!(req, [0x00, 0x1a, 0x01, 0x00]);
    let sdo = Sdo {
        seq: SeqLayer::default(),
        command: CommandLayer::request(7, CommandId::READ_BY_INDEX, req),
    };
    let b = sdo_frame(1, MN_NODE, sdo);
    assert_eq!(
        b[22..34],
        [0, 7, 0x00, 0x02, 4, 0, 0, 0, 0x00, 0x1a, 0x01, 0x00]
    );
    let (_, _, got) = match decode(&b).unwrap().frame {
        Frame::ASnd(ASnd {
            dest,
            src,
            service: ASndService::Sdo(s),
        }) => (dest, src, s),
        _ => unreachable!(),
    };
    assert_eq!(
        parse_read_by_index_request(got.command.data),
        Ok(IndexAddress::new(0x1A00, 1))
    );
    // The response carries the value alone.
    let value = 0x0008_0000_0001_6000u64.to_le_bytes();
    let resp = Sdo {
        seq: SeqLayer::default(),
        command: CommandLayer::response(7, CommandId::READ_BY_INDEX, &value),
    };
    let b = sdo_frame(MN_NODE, 1, resp);
    assert_eq!(b[22..30], [0, 7, 0x80, 0x02, 8, 0, 0, 0]);
    assert_eq!(b[30..38], value);
    assert_eq!(
        parse_read_by_index_request(&[0, 0x1a, 1, 0, 9]),
        Err(DecodeError::Malformed {
            offset: 4,
            what: "a ReadByIndex request carries only the 4-byte object address"
        })
    );
    assert_eq!(
        parse_write_by_index_request(&[0, 0x1a, 1]),
        Err(DecodeError::Malformed {
            offset: 3,
            what: "an SDO object address (index, subindex, reserved) is 4 bytes"
        })
    );
}

#[test]
fn a_long_write_goes_as_initiate_segments_and_complete() {
    let value: Vec<u8> = (0..=255u8).cycle().take(600).collect();
    let mut buf = [0u8; 604];
    let data = write_by_index_request(IndexAddress::new(0x1F22, 1), &value, &mut buf).unwrap();
    let parts: Vec<_> =
        segments(3, CommandId::WRITE_BY_INDEX, false, data, MAX_SEGMENT_SIZE).collect();
    let shape: Vec<_> = parts
        .iter()
        .map(|c| (c.segmentation, c.segment_size, c.data_size, c.data.len()))
        .collect();
    assert_eq!(
        shape,
        [
            // As openPOWERLINK: SegmentSize 256 with the data size 604 + 4.
            (Segmentation::Initiate, 256, Some(608), 252),
            (Segmentation::Segment, 256, None, 256),
            (Segmentation::Complete, 96, None, 96),
        ]
    );
    // On the wire: the Initiate's flags 0x10 and its data size first.
    let b = sdo_frame(
        1,
        MN_NODE,
        Sdo {
            seq: SeqLayer::default(),
            command: parts[0],
        },
    );
    assert_eq!(b.len(), 14 + 4 + 4 + 8 + 256);
    assert_eq!(b[22..30], [0, 3, 0x10, 0x01, 0x00, 0x01, 0, 0]);
    assert_eq!(b[30..38], [0x60, 0x02, 0, 0, 0x22, 0x1f, 0x01, 0x00]);
    for (c, flags) in parts[1..].iter().zip([0x20, 0x30]) {
        let b = sdo_frame(
            1,
            MN_NODE,
            Sdo {
                seq: SeqLayer::default(),
                command: *c,
            },
        );
        assert_eq!(b[24], flags);
    }

    let mut into = [0u8; 1000];
    let mut r = Reassembly::new(&mut into);
    assert_eq!(r.push(&parts[0]), Ok(None));
    assert!(r.in_progress());
    assert_eq!(r.push(&parts[1]), Ok(None));
    let whole = r.push(&parts[2]).unwrap().unwrap().to_vec();
    assert_eq!(whole, data);
    assert!(!r.in_progress());
    let (addr, v) = parse_write_by_index_request(&whole).unwrap();
    assert_eq!((addr, v), (IndexAddress::new(0x1F22, 1), &value[..]));

    // A short transfer is one expedited frame.
    let one: Vec<_> = segments(4, CommandId::WRITE_BY_INDEX, false, &data[..256], 256).collect();
    assert_eq!(one.len(), 1);
    assert_eq!(
        one[0],
        CommandLayer::request(4, CommandId::WRITE_BY_INDEX, &data[..256])
    );
    assert_eq!(r.push(&one[0]), Ok(Some(&data[..256])));
}

#[test]
fn reassembly_refuses_what_does_not_continue_a_transfer() {
    let data = [1u8; 30];
    let parts: Vec<_> = segments(1, CommandId::WRITE_BY_INDEX, false, &data, 10).collect();
    assert_eq!(parts.len(), 4);
    let mut buf = [0u8; 64];
    let mut r = Reassembly::new(&mut buf);
    assert_eq!(r.push(&parts[1]), Err(SegmentError::NoInitiate));
    // A lost middle segment: the Complete comes short.
    r.push(&parts[0]).unwrap();
    r.push(&parts[1]).unwrap();
    assert_eq!(
        r.push(&parts[3]),
        Err(SegmentError::SizeMismatch {
            announced: 30,
            got: 20
        })
    );
    assert!(!r.in_progress());
    assert_eq!(
        SegmentError::SizeMismatch {
            announced: 30,
            got: 20
        }
        .to_string(),
        "an SDO transfer announced 30 data bytes and carried 20"
    );
    // A segment repeated runs past the announced size.
    r.push(&parts[0]).unwrap();
    r.push(&parts[1]).unwrap();
    r.push(&parts[2]).unwrap();
    assert_eq!(
        r.push(&parts[2]),
        Err(SegmentError::TooLong { need: 36, room: 30 })
    );
    // More than the buffer holds.
    let mut small = [0u8; 16];
    let mut r = Reassembly::new(&mut small);
    assert_eq!(
        r.push(&parts[0]),
        Err(SegmentError::TooLong { need: 30, room: 16 })
    );
    assert_eq!(
        SegmentError::TooLong { need: 30, room: 16 }.abort_code(),
        AbortCode::OUT_OF_MEMORY
    );
    let bad = CommandLayer {
        segmentation: Segmentation::Initiate,
        data_size: Some(3),
        segment_size: 4,
        ..CommandLayer::NIL
    };
    assert_eq!(r.push(&bad), Err(SegmentError::BadDataSize(3)));
}

#[test]
fn decoding_names_the_fault_and_its_offset() {
    let sdo = Sdo {
        seq: SeqLayer::default(),
        command: CommandLayer::request(1, CommandId::WRITE_BY_INDEX, &[1, 2, 3, 4, 5]),
    };
    let b = sdo_frame(1, MN_NODE, sdo);
    // SegmentSize (frame bytes 26-27) past the end of the frame.
    let mut long = b.clone();
    long[26] = 60;
    assert_eq!(
        decode(&long).unwrap_err().to_string(),
        "malformed POWERLINK frame at byte 26: SDO SegmentSize runs past the end of the frame"
    );
    // Cut inside the command layer's header.
    assert_eq!(
        decode(&b[..25]),
        Err(DecodeError::Malformed {
            offset: 25,
            what: "SDO command layer header cut short"
        })
    );
    assert_eq!(
        decode(&b[..20]),
        Err(DecodeError::Malformed {
            offset: 20,
            what: "SDO sequence layer cut short"
        })
    );
    // An Initiate too short for its data size.
    let mut init = b.clone();
    init[24] = 0x10;
    init[26] = 3;
    assert_eq!(
        decode(&init),
        Err(DecodeError::Malformed {
            offset: 26,
            what: "SDO Initiate segment shorter than its 4-byte data size"
        })
    );
    // Just the sequence layer: a NIL command.
    let (_, _, s) = match decode(&b[..22]).unwrap().frame {
        Frame::ASnd(ASnd {
            dest,
            src,
            service: ASndService::Sdo(s),
        }) => (dest, src, s),
        _ => unreachable!(),
    };
    assert_eq!(s.command, CommandLayer::NIL);
}

#[test]
fn encoding_refuses_inconsistent_layers() {
    let mut buf = [0u8; MAX_FRAME_LEN];
    let mut enc = |sdo: Sdo<'_>| {
        let f = Frame::ASnd(ASnd {
            dest: 1,
            src: MN_NODE,
            service: ASndService::Sdo(sdo),
        });
        encode(&f, MAC_ASND, MN_MAC, &mut buf)
    };
    let bad_seq = Sdo::sequence_only(SeqLayer {
        send_seq: 64,
        ..SeqLayer::default()
    });
    assert_eq!(
        enc(bad_seq),
        Err(EncodeError::Invalid(
            "SDO sequence numbers are 6-bit fields (0-63)"
        ))
    );
    let bad_con = Sdo::sequence_only(SeqLayer {
        receive_con: Con(4),
        ..SeqLayer::default()
    });
    assert_eq!(
        enc(bad_con),
        Err(EncodeError::Invalid(
            "SDO connection states are 2-bit fields (0-3)"
        ))
    );
    let bad_size = Sdo {
        seq: SeqLayer::default(),
        command: CommandLayer {
            segment_size: 3,
            ..CommandLayer::request(1, CommandId::WRITE_BY_INDEX, &[1, 2])
        },
    };
    assert_eq!(
        enc(bad_size),
        Err(EncodeError::Invalid(
            "SDO SegmentSize must be the data's length (plus 4 for an Initiate's data size)"
        ))
    );
    let no_data_size = Sdo {
        seq: SeqLayer::default(),
        command: CommandLayer {
            segmentation: Segmentation::Initiate,
            ..CommandLayer::request(1, CommandId::WRITE_BY_INDEX, &[1, 2])
        },
    };
    assert_eq!(
        enc(no_data_size),
        Err(EncodeError::Invalid(
            "an SDO Initiate segment carries a data size, and no other segment does"
        ))
    );
}

#[test]
fn abort_codes_read_as_ds301_names_them() {
    let cases = [
        (
            AbortCode::SUBINDEX_DOES_NOT_EXIST,
            0x0609_0011,
            "sub-index does not exist",
        ),
        (
            AbortCode::UNSUPPORTED_ACCESS,
            0x0601_0000,
            "unsupported access to an object",
        ),
        (
            AbortCode::READ_ONLY,
            0x0601_0002,
            "attempt to write a read only object",
        ),
        (
            AbortCode::WRITE_ONLY,
            0x0601_0001,
            "attempt to read a write only object",
        ),
        (
            AbortCode::LENGTH_MISMATCH,
            0x0607_0010,
            "data type does not match, length of service parameter does not match",
        ),
        (
            AbortCode::LENGTH_TOO_HIGH,
            0x0607_0012,
            "data type does not match, length of service parameter too high",
        ),
        (
            AbortCode::LENGTH_TOO_LOW,
            0x0607_0013,
            "data type does not match, length of service parameter too low",
        ),
        (
            AbortCode::VALUE_RANGE,
            0x0609_0030,
            "value range of parameter exceeded",
        ),
        (
            AbortCode::COMMAND_UNKNOWN,
            0x0504_0001,
            "client/server command ID not valid or unknown",
        ),
        (AbortCode::TIMEOUT, 0x0504_0000, "SDO protocol timed out"),
        (AbortCode::GENERAL, 0x0800_0000, "general error"),
    ];
    for (code, value, text) in cases {
        assert_eq!(code.0, value);
        assert_eq!(code.to_string(), format!("{text} ({value:#010x})"));
    }
    // Not an abort, or an abort without its 4 bytes: no code.
    assert_eq!(CommandLayer::NIL.abort_code(), None);
    let short = CommandLayer {
        abort: true,
        ..CommandLayer::request(0, CommandId::WRITE_BY_INDEX, &[1, 2])
    };
    assert_eq!(short.abort_code(), None);
}

mod props {
    use proptest::collection::vec;
    use proptest::prelude::*;

    use super::super::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        #[test]
        fn random_service_data_never_panics_and_re_encodes(bytes in vec(any::<u8>(), 0..120)) {
            if let Ok(s) = Sdo::decode(&bytes) {
                let mut out = vec![0u8; s.len()];
                s.write(&mut out).expect("a decoded SDO encodes");
                let again = Sdo::decode(&out).unwrap();
                prop_assert_eq!(again, s);
                // What the model carries comes back byte for byte.
                prop_assert_eq!(&out[..2], &bytes[..2]);
                if bytes.len() >= SDO_HEADER_LEN {
                    prop_assert_eq!(out[5], bytes[5]);
                    prop_assert_eq!(out[6] & 0xf0, bytes[6] & 0xf0);
                    prop_assert_eq!(&out[7..10], &bytes[7..10]);
                    prop_assert_eq!(&out[SDO_HEADER_LEN..], &bytes[SDO_HEADER_LEN..out.len()]);
                }
            }
        }

        #[test]
        fn every_truncation_is_an_error_or_a_prefix(bytes in vec(any::<u8>(), 0..80)) {
            for len in 0..=bytes.len() {
                match Sdo::decode(&bytes[..len]) {
                    Ok(s) => prop_assert!(s.len() <= len || len == SEQ_LAYER_LEN),
                    Err(DecodeError::Malformed { offset, .. }) => prop_assert!(offset <= len),
                    Err(e) => prop_assert!(false, "unexpected {e}"),
                }
            }
        }

        #[test]
        fn segments_reassemble_to_the_data(data in vec(any::<u8>(), 0..2000), max in 5usize..600) {
            let parts: Vec<_> = segments(1, CommandId::WRITE_BY_INDEX, false, &data, max).collect();
            let mut buf = vec![0u8; 2000];
            let mut r = Reassembly::new(&mut buf);
            let mut whole = None;
            for (i, c) in parts.iter().enumerate() {
                prop_assert!(usize::from(c.segment_size) <= max);
                let mut out = vec![0u8; SEQ_LAYER_LEN + c.len()];
                Sdo { seq: SeqLayer::default(), command: *c }.write(&mut out).unwrap();
                let got = r.push(c).unwrap();
                if i + 1 == parts.len() {
                    whole = got.map(<[u8]>::to_vec);
                } else {
                    prop_assert!(got.is_none());
                }
            }
            prop_assert_eq!(whole, Some(data.clone()));
            prop_assert_eq!(parts.len(), if data.len() <= max { 1 } else {
                1 + (data.len() - (max - 4)).div_ceil(max)
            });
        }
    }
}
