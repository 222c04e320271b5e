//! The SDO client against the reference MN's exchange with node 1 in
//! `ref_mn_cn.pcap`, and its timeouts, retries, segments and aborts.

use super::*;
use crate::powerlink::{decode, ASndService, Frame};

use crate::powerlink::capture_tests::{frames, REF_MN_CN};

/// The SDO service data of an ASnd from `src` to `dst`.
fn sdo_of(f: &[u8], src: u8, dst: u8) -> Option<Sdo<'_>> {
    match decode(f).ok()?.frame {
        Frame::ASnd(a) if a.src == src && a.dest == dst => match a.service {
            ASndService::Sdo(s) => Some(s),
            _ => None,
        },
        _ => None,
    }
}

fn is_ack(s: &Sdo<'_>) -> bool {
    s.command.is_nil() && s.seq.send_con == Con::VALID && s.seq.receive_con == Con::VALID
}

/// The client sends the reference MN's frames to node 1, byte for byte in
/// their layers — set-up, the 17 writes of the configuration, the last
/// acknowledgement and the close — except the acknowledgements that the
/// reference sends alone before its next write, which the client carries
/// on that write; and it reads node 1's answers to the same outcomes.
#[test]
fn replays_the_reference_mns_configuration_of_node_1() {
    let all = frames(REF_MN_CN);
    let mn: Vec<Sdo<'_>> = all.iter().filter_map(|f| sdo_of(f, 240, 1)).collect();
    let cn: Vec<Sdo<'_>> = all.iter().filter_map(|f| sdo_of(f, 1, 240)).collect();
    assert_eq!((mn.len(), cn.len()), (37, 19));
    let expected: Vec<Sdo<'_>> = mn
        .iter()
        .enumerate()
        .filter(|(i, s)| !(is_ack(s) && mn.get(i + 1).is_some_and(|n| !n.command.is_nil())))
        .map(|(_, s)| *s)
        .collect();
    assert_eq!(
        expected.len(),
        37 - 16,
        "16 acknowledgements ride on writes"
    );
    let mut client = SdoClient::default();
    for s in mn.iter().filter(|s| !s.command.is_nil()) {
        let (addr, value) = crate::powerlink::sdo::parse_write_by_index_request(s.command.data)
            .expect("a WriteByIndex");
        client.push(Transfer::Write {
            addr,
            value: value.to_vec(),
        });
    }
    assert_eq!(client.pending(), 17);
    let mut exp = expected.iter();
    let mut outcomes = Vec::new();
    let mut answers = cn.iter();
    loop {
        while let Some(f) = client.next_frame(0) {
            assert_eq!(Some(&f), exp.next());
        }
        assert!(client.awaiting() || client.idle());
        match answers.next() {
            Some(a) => outcomes.extend(client.receive(a, 0)),
            None => break,
        }
    }
    client.close();
    assert_eq!(client.next_frame(0).as_ref(), exp.next());
    assert_eq!(exp.next(), None);
    assert!(client.idle());
    let a = IndexAddress::new;
    let gone = AbortCode::OBJECT_DOES_NOT_EXIST;
    let mut want = vec![Outcome::Aborted(a(0x1011, 1), gone)];
    for (i, s) in [
        (0x1600, 0),
        (0x1A00, 0),
        (0x1006, 0),
        (0x1020, 1),
        (0x1020, 2),
        (0x1C0B, 3),
        (0x1C0D, 3),
        (0x1C14, 0),
        (0x1F98, 4),
        (0x1F98, 5),
        (0x1600, 1),
        (0x1A00, 1),
        (0x1600, 0),
        (0x1A00, 0),
    ] {
        want.push(Outcome::Written(a(i, s)));
    }
    want.push(Outcome::Aborted(a(0x1010, 1), gone));
    want.push(Outcome::Written(a(0x1006, 0)));
    assert_eq!(outcomes, want);
}

fn seq(r: u8, rc: Con, s: u8, sc: Con) -> SeqLayer {
    SeqLayer {
        receive_seq: r,
        receive_con: rc,
        send_seq: s,
        send_con: sc,
    }
}

/// Sets a connection up with a server that starts at its sequence 5.
fn connected(client: &mut SdoClient) {
    let f = client.next_frame(0).unwrap();
    assert_eq!(f.seq, seq(0, Con::NONE, 0, Con::INIT));
    assert!(client.awaiting());
    client.receive(&Sdo::sequence_only(seq(0, Con::INIT, 5, Con::INIT)), 0);
    let f = client.next_frame(0).unwrap();
    assert_eq!(f.seq, seq(5, Con::INIT, 0, Con::VALID));
    client.receive(&Sdo::sequence_only(seq(0, Con::VALID, 5, Con::VALID)), 0);
}

#[test]
fn an_unanswered_frame_goes_again_then_the_transfer_times_out() {
    let mut client = SdoClient::new(100, 2);
    client.push(Transfer::Read {
        addr: IndexAddress::new(0x1000, 0),
    });
    let first = client.next_frame(0).map(|f| f.seq);
    assert_eq!(client.tick(99), None);
    assert!(client.next_frame(99).is_none());
    assert_eq!(client.tick(100), None);
    assert_eq!(client.next_frame(100).map(|f| f.seq), first);
    assert_eq!(client.tick(200), None);
    assert_eq!(client.next_frame(200).map(|f| f.seq), first);
    assert_eq!(
        client.tick(300),
        Some(Outcome::TimedOut(IndexAddress::new(0x1000, 0)))
    );
    assert!(client.idle());
}

#[test]
fn a_read_returns_the_value_and_the_ack_rides_on_the_next_request() {
    let mut client = SdoClient::default();
    let (a, b) = (IndexAddress::new(0x1000, 0), IndexAddress::new(0x1018, 1));
    client.push(Transfer::Read { addr: a });
    client.push(Transfer::Read { addr: b });
    connected(&mut client);
    let f = client.next_frame(0).unwrap();
    assert_eq!(f.seq, seq(5, Con::VALID, 1, Con::VALID));
    assert_eq!(f.command.command, CommandId::READ_BY_INDEX);
    assert_eq!(f.command.transaction, 0);
    assert_eq!(f.command.data, &[0x00, 0x10, 0x00, 0x00]);
    let value = 0x000F_0191u32.to_le_bytes();
    let answer = Sdo {
        seq: seq(1, Con::VALID, 6, Con::VALID),
        command: CommandLayer::response(0, CommandId::READ_BY_INDEX, &value),
    };
    assert_eq!(
        client.receive(&answer, 0),
        Some(Outcome::Read(a, value.to_vec()))
    );
    let f = client.next_frame(0).unwrap();
    assert_eq!(f.seq, seq(6, Con::VALID, 2, Con::VALID), "acknowledges 6");
    assert_eq!(f.command.transaction, 1);
    assert_eq!(f.command.data, &[0x18, 0x10, 0x01, 0x00]);
    // The same answer again (our acknowledgement was lost) is not taken
    // twice: it is acknowledged.
    assert_eq!(client.receive(&answer, 0), None);
}

#[test]
fn a_long_write_goes_in_segments_back_to_back() {
    let mut client = SdoClient::default();
    let addr = IndexAddress::new(0x1F22, 1);
    client.push(Transfer::Write {
        addr,
        value: vec![0xAB; 300],
    });
    connected(&mut client);
    let mut sent = Vec::new();
    while let Some(f) = client.next_frame(0) {
        sent.push((
            f.seq.send_seq,
            f.command.segmentation,
            f.command.data_size,
            f.command.data.len(),
        ));
    }
    assert_eq!(
        sent,
        vec![
            (1, Segmentation::Initiate, Some(308), 252),
            (2, Segmentation::Complete, None, 52),
        ]
    );
    assert!(client.awaiting());
    let answer = Sdo {
        seq: seq(2, Con::VALID, 6, Con::VALID),
        command: CommandLayer::response(0, CommandId::WRITE_BY_INDEX, &[]),
    };
    assert_eq!(client.receive(&answer, 0), Some(Outcome::Written(addr)));
    let ack = client.next_frame(0).unwrap();
    assert_eq!(ack.seq, seq(6, Con::VALID, 2, Con::VALID));
    assert!(ack.command.is_nil());
    assert!(client.idle());
}

#[test]
fn an_error_from_the_server_asks_for_the_frame_again() {
    let mut client = SdoClient::default();
    client.push(Transfer::Read {
        addr: IndexAddress::new(0x1006, 0),
    });
    connected(&mut client);
    let f = client.next_frame(0).map(|f| (f.seq, f.command.transaction));
    client.receive(&Sdo::sequence_only(seq(0, Con::ERROR, 5, Con::VALID)), 0);
    assert_eq!(
        client.next_frame(0).map(|f| (f.seq, f.command.transaction)),
        f
    );
}
