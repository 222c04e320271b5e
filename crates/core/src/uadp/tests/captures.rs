//! The reference implementation's captures (open62541 1.4, README in
//! `tests/fixtures/uadp/`): every message decodes to the values the README
//! gives, re-encodes byte for byte, is what our [`Writer`] writes for the
//! same configuration and values, and is accepted by a [`Reader`]
//! configured as the reference's subscriber.

use super::{hex, records, udp_messages, RT_LEVEL_UDP, TUTORIAL_ETH, TUTORIAL_UDP};
use crate::ether::{self, TypeOrLength};
use crate::uadp::*;

const SECOND_NS: i64 = 1_000_000_000;

/// The UADP messages of `tutorial_eth.pcap`, with their record times,
/// checking the 802.3 framing the README describes on the way.
fn eth_messages() -> Vec<(i64, Vec<u8>)> {
    records(TUTORIAL_ETH)
        .iter()
        .map(|r| {
            assert_eq!(r.frame.len(), 53, "14 bytes of header, 39 of message");
            let f = ether::parse(&r.frame).unwrap();
            assert_eq!(f.dst, [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01]);
            assert_eq!(f.vlan, None);
            assert_eq!(f.type_or_length, TypeOrLength::Length(39));
            assert!(f.may_be_uadp());
            (r.unix_ns, f.payload.to_vec())
        })
        .collect()
}

/// Checks one tutorial message against the README and returns its
/// DataSetMessage Timestamp, configuration version and DateTime field.
fn check_tutorial(record_ns: i64, bytes: &[u8]) -> (i64, (u32, u32), i64) {
    assert_eq!(bytes.len(), 39, "{}", hex(bytes));
    let m = decode(bytes).unwrap();
    assert_eq!(m.publisher_id, Some(PublisherId::UInt16(2234)));
    assert_eq!(
        m.group_header,
        Some(GroupHeader {
            writer_group_id: Some(100),
            ..GroupHeader::default()
        })
    );
    assert_eq!(m.dataset_writer_ids, Some(vec![62541]));
    assert_eq!(
        (m.timestamp, m.picoseconds, m.dataset_class_id),
        (None, None, None)
    );
    assert_eq!(m.messages.len(), 1);
    let dsm = &m.messages[0];
    let h = dsm.header;
    assert!(h.valid);
    assert_eq!(h.encoding, FieldEncoding::Variant);
    assert_eq!(
        (h.sequence_number, h.picoseconds, h.status),
        (None, None, None)
    );
    let ts = h.timestamp.expect("a DataSetMessage timestamp");
    let Payload::KeyFrame(fields) = &dsm.payload else {
        panic!("a key frame: {:?}", dsm.payload)
    };
    assert_eq!(fields.len(), 1);
    let Field::Variant(Some(Value::DateTime(dt))) = fields[0] else {
        panic!("one DateTime Variant: {:?}", fields[0])
    };
    for t in [ts, dt] {
        let delta = unix_ns_from_datetime(t) - record_ns;
        assert!(delta.abs() < SECOND_NS, "{delta} ns from the record time");
    }
    let version = (h.config_major.unwrap(), h.config_minor.unwrap());
    (ts, version, dt)
}

#[test]
fn every_tutorial_message_decodes_to_the_readme_values() {
    for (name, messages) in [("udp", udp_messages(TUTORIAL_UDP)), ("eth", eth_messages())] {
        assert_eq!(messages.len(), 29, "{name}");
        let versions: Vec<(u32, u32)> = messages
            .iter()
            .map(|(ns, bytes)| check_tutorial(*ns, bytes).1)
            .collect();
        // The configuration version is fixed for a run of the publisher.
        assert!(versions.iter().all(|v| *v == versions[0]), "{name}");
    }
    // … and changes from one start of the publisher to the next.
    let (ns, m) = &udp_messages(TUTORIAL_UDP)[0];
    assert_eq!(check_tutorial(*ns, m).1, (0xa28c_85cc, 0xa28c_859a));
    let (ns, m) = &eth_messages()[0];
    assert_eq!(check_tutorial(*ns, m).1, (0xa59f_27f6, 0xa59f_2760));
}

#[test]
fn the_first_tutorial_message_has_the_readme_bytes() {
    let (_, m) = &udp_messages(TUTORIAL_UDP)[0];
    assert_eq!(
        hex(m),
        "f101ba08016400014df4e1107c1009c87e7bdd01cc858ca29a858ca201000dc21009c87e7bdd01"
    );
    let dt = 0x01dd_7b7e_c809_10c2;
    let Field::Variant(Some(value)) = decode(m).unwrap().messages[0].payload_fields()[0] else {
        unreachable!()
    };
    assert_eq!(value, Value::DateTime(dt));
}

/// The rt-level values are 1..=10 rotated: `[s, s+1, …, 10, 1, …, s-1]`.
fn rotation_start(values: &[Value]) -> u32 {
    let Value::UInt32(start) = values[0] else {
        panic!("UInt32 fields: {values:?}")
    };
    let expected: Vec<Value> = (0..10)
        .map(|j| Value::UInt32((start - 1 + j) % 10 + 1))
        .collect();
    assert_eq!(values, expected);
    start
}

#[test]
fn every_rt_level_message_decodes_to_rotating_values_and_counting_sequences() {
    let messages = udp_messages(RT_LEVEL_UDP);
    assert_eq!(messages.len(), 30);
    let types = [BuiltinType::UInt32; 10];
    let mut starts = Vec::new();
    for (i, (_, bytes)) in messages.iter().enumerate() {
        assert_eq!(bytes.len(), 55);
        let seq = u16::try_from(i).unwrap();
        let m = decode_with_raw_types(bytes, &types).unwrap();
        assert_eq!(m.publisher_id, Some(PublisherId::UInt16(2234)));
        assert_eq!(
            m.group_header,
            Some(GroupHeader {
                writer_group_id: Some(100),
                sequence_number: Some(seq),
                ..GroupHeader::default()
            })
        );
        assert_eq!(m.dataset_writer_ids, Some(vec![62541]));
        let dsm = &m.messages[0];
        let mut expected = DataSetMessageHeader::new(FieldEncoding::RawData);
        expected.sequence_number = Some(seq);
        assert_eq!(dsm.header, expected);
        let values: Vec<Value> = dsm
            .payload_fields()
            .iter()
            .map(|f| match f {
                Field::Raw(v) => *v,
                other => panic!("a raw field: {other:?}"),
            })
            .collect();
        starts.push(rotation_start(&values));
        // Without the types the fields stay bytes.
        let raw = decode(bytes).unwrap();
        assert_eq!(
            raw.messages[0].payload,
            Payload::Raw {
                kind: MessageKind::KeyFrame,
                bytes: bytes[15..].to_vec()
            }
        );
    }
    // The values rotate on the publisher's own timer: by 0, 1 or 2 places
    // from one message to the next, and by 9 over the capture.
    for pair in starts.windows(2) {
        assert!((pair[1] + 10 - pair[0]) % 10 <= 2, "{starts:?}");
    }
    assert_eq!((starts[0], starts[29]), (1, 10));
}

#[test]
fn every_captured_message_re_encodes_byte_for_byte() {
    let all = [
        udp_messages(TUTORIAL_UDP),
        eth_messages(),
        udp_messages(RT_LEVEL_UDP),
    ];
    let mut n = 0;
    for (_, bytes) in all.iter().flatten() {
        let m = decode(bytes).unwrap();
        assert_eq!(m.to_bytes().unwrap(), *bytes);
        let typed = if m.messages[0].header.encoding == FieldEncoding::RawData {
            decode_with_raw_types(bytes, &[BuiltinType::UInt32; 10]).unwrap()
        } else {
            decode_with_raw_types(bytes, &[]).unwrap()
        };
        let mut out = vec![0xee];
        typed.encode(&mut out).unwrap();
        assert_eq!(out[1..], bytes[..], "appends after what `out` holds");
        n += 1;
    }
    assert_eq!(n, 88);
}

#[test]
fn the_tutorial_writer_writes_the_captured_bytes() {
    for messages in [udp_messages(TUTORIAL_UDP), eth_messages()] {
        let first = decode(&messages[0].1).unwrap();
        let h = first.messages[0].header;
        let writer = Writer::new(WriterConfig {
            config_major: h.config_major,
            config_minor: h.config_minor,
            ..WriterConfig::tutorial()
        })
        .unwrap();
        assert_eq!(writer.len(), 39);
        let mut out = [0u8; 64];
        for (_, bytes) in &messages {
            let m = decode(bytes).unwrap();
            let dsm = &m.messages[0];
            let publish = Publish {
                timestamp: dsm.header.timestamp.unwrap(),
                ..Publish::default()
            };
            let values = [dsm.payload_fields()[0].value().unwrap()];
            let n = writer.encode(&publish, &values, &mut out).unwrap();
            assert_eq!(hex(&out[..n]), hex(bytes));
        }
    }
}

#[test]
fn the_rt_level_writer_writes_the_captured_bytes() {
    let writer = Writer::new(WriterConfig::rt_level()).unwrap();
    assert_eq!(writer.len(), 55);
    let mut out = [0u8; 55];
    for (i, (_, bytes)) in udp_messages(RT_LEVEL_UDP).iter().enumerate() {
        let m = decode_with_raw_types(bytes, &[BuiltinType::UInt32; 10]).unwrap();
        let values: Vec<Value> = m.messages[0]
            .payload_fields()
            .iter()
            .map(|f| f.value().unwrap())
            .collect();
        let seq = u16::try_from(i).unwrap();
        let publish = Publish {
            nm_sequence: seq,
            dsm_sequence: seq,
            ..Publish::default()
        };
        assert_eq!(writer.encode(&publish, &values, &mut out), Ok(55));
        assert_eq!(hex(&out), hex(bytes));
    }
}

#[test]
fn a_reader_configured_as_the_reference_subscriber_accepts_every_capture() {
    let tutorial = Reader::new(ReaderConfig::tutorial());
    let mut values = [Value::Boolean(false); 16];
    for (record_ns, bytes) in udp_messages(TUTORIAL_UDP).iter().chain(&eth_messages()) {
        let (ts, _, dt) = check_tutorial(*record_ns, bytes);
        let a = tutorial.accept(bytes, &mut values).unwrap();
        assert_eq!(
            a,
            Accepted {
                fields: 1,
                dsm_timestamp: Some(ts),
                ..Accepted::default()
            }
        );
        assert_eq!(values[0], Value::DateTime(dt));
    }
    let rt = Reader::new(ReaderConfig::rt_level());
    for (i, (_, bytes)) in udp_messages(RT_LEVEL_UDP).iter().enumerate() {
        let seq = Some(u16::try_from(i).unwrap());
        let a = rt.accept(bytes, &mut values).unwrap();
        assert_eq!(
            a,
            Accepted {
                fields: 10,
                nm_sequence: seq,
                dsm_sequence: seq,
                ..Accepted::default()
            }
        );
        rotation_start(&values[..10]);
    }
}

#[test]
fn the_tutorial_reader_refuses_the_rt_level_messages_count_by_count() {
    // The same identities but RawData: read by the tutorial's one DateTime
    // the reference would take 8 bytes; a reader expecting ten Variants
    // sees no field count to check and reads them raw as configured.
    let bytes = &udp_messages(RT_LEVEL_UDP)[0].1;
    let reader = Reader::new(ReaderConfig {
        fields: None,
        ..ReaderConfig::tutorial()
    });
    assert_eq!(
        reader.accept(bytes, &mut [Value::Boolean(false); 10]),
        Err(Reject::FieldMismatch(FieldMismatch::RawWithoutTypes))
    );
}

impl DataSetMessage {
    /// The fields of a key frame (test shorthand).
    fn payload_fields(&self) -> &[Field] {
        match &self.payload {
            Payload::KeyFrame(fields) => fields,
            other => panic!("not a decoded key frame: {other:?}"),
        }
    }
}

#[test]
fn the_stock_subscriber_counts_every_tutorial_message_as_another_field_list() {
    // Valid reference messages, one DateTime: the stock subscriber expects
    // four fields, so each is a field list that differs — not malformed.
    let stock = Reader::new(ReaderConfig::tutorial_subscriber());
    let mut values = [Value::Boolean(false); 4];
    let mut classes = std::collections::HashMap::new();
    for (_, bytes) in udp_messages(TUTORIAL_UDP).iter().chain(&eth_messages()) {
        let r = stock.accept(bytes, &mut values).unwrap_err();
        assert_eq!(
            r,
            Reject::FieldMismatch(FieldMismatch::Count {
                expected: 4,
                got: 1
            })
        );
        *classes.entry(r.class()).or_insert(0) += 1;
    }
    assert_eq!(classes, [(RejectClass::FieldList, 58)].into());
}
