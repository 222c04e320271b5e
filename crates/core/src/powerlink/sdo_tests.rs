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
