//! The configured reader: our own writer's messages pass the rules of the
//! reference's subscriber (the captures' README), and each rule refuses
//! what it should, with its reason.

use super::unhex;
use crate::uadp::*;

const NO_VALUE: Value = Value::Boolean(false);

/// A small xorshift generator: varied values without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn value(&mut self, ty: BuiltinType) -> Value {
        let r = self.next();
        match ty {
            BuiltinType::Boolean => Value::Boolean(r & 1 == 1),
            BuiltinType::SByte => Value::SByte(r as i8),
            BuiltinType::Byte => Value::Byte(r as u8),
            BuiltinType::Int16 => Value::Int16(r as i16),
            BuiltinType::UInt16 => Value::UInt16(r as u16),
            BuiltinType::Int32 => Value::Int32(r as i32),
            BuiltinType::UInt32 => Value::UInt32(r as u32),
            BuiltinType::Int64 => Value::Int64(r as i64),
            BuiltinType::UInt64 => Value::UInt64(r),
            BuiltinType::Float => Value::Float((r as i32) as f32 / 8.0),
            BuiltinType::Double => Value::Double((r as i64) as f64 / 8.0),
            BuiltinType::DateTime => Value::DateTime(r as i64),
        }
    }
}

fn configs() -> Vec<WriterConfig> {
    let mut all = vec![WriterConfig::tutorial(), WriterConfig::rt_level()];
    for encoding in [
        FieldEncoding::Variant,
        FieldEncoding::RawData,
        FieldEncoding::DataValue,
    ] {
        all.push(WriterConfig {
            publisher_id: Some(PublisherId::UInt64(u64::MAX - 1)),
            nm_timestamp: true,
            nm_picoseconds: true,
            encoding,
            fields: BuiltinType::ALL.to_vec(),
            dsm_timestamp: true,
            dsm_picoseconds: true,
            dsm_status: true,
            ..WriterConfig::rt_level()
        });
    }
    all
}

#[test]
fn our_messages_pass_the_reference_subscribers_rules() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for config in configs() {
        let writer = Writer::new(config.clone()).unwrap();
        let reader = Reader::new(ReaderConfig::matching(&config));
        let sizes: usize = config.fields.iter().map(|t| t.size()).sum();
        let raw_at = writer.len() - sizes;
        let mut out = vec![0u8; 1024];
        for i in 0..200u16 {
            let values: Vec<Value> = config.fields.iter().map(|&t| rng.value(t)).collect();
            let publish = Publish {
                nm_sequence: i,
                dsm_sequence: i.wrapping_mul(3),
                timestamp: rng.next() as i64,
                picoseconds: i,
            };
            // Stable layout: the same length whatever the values.
            let n = writer.encode(&publish, &values, &mut out).unwrap();
            assert_eq!(n, writer.len());
            let mut got = [NO_VALUE; 16];
            let a = reader.accept(&out[..n], &mut got).unwrap();
            assert_eq!(a.fields, values.len());
            assert_eq!(got[..values.len()], values[..]);
            assert_eq!(a.nm_sequence, config.nm_sequence.then_some(i));
            assert_eq!(
                a.dsm_sequence,
                config.dsm_sequence.then_some(i.wrapping_mul(3))
            );
            let ts = Some(publish.timestamp);
            assert_eq!(a.nm_timestamp, if config.nm_timestamp { ts } else { None });
            assert_eq!(
                a.dsm_timestamp,
                if config.dsm_timestamp { ts } else { None }
            );
            assert_eq!(a.dsm_picoseconds, config.dsm_picoseconds.then_some(i));
            if config.encoding == FieldEncoding::RawData {
                // The reference reads raw fields at offsets fixed from its
                // first message: they must hold in every message.
                let mut at = raw_at;
                for v in &values {
                    let size = v.ty().size();
                    let mut le = [0u8; 8];
                    match *v {
                        Value::Boolean(b) => le[0] = u8::from(b),
                        Value::SByte(x) => le[..1].copy_from_slice(&x.to_le_bytes()),
                        Value::Byte(x) => le[0] = x,
                        Value::Int16(x) => le[..2].copy_from_slice(&x.to_le_bytes()),
                        Value::UInt16(x) => le[..2].copy_from_slice(&x.to_le_bytes()),
                        Value::Int32(x) => le[..4].copy_from_slice(&x.to_le_bytes()),
                        Value::UInt32(x) => le[..4].copy_from_slice(&x.to_le_bytes()),
                        Value::Float(x) => le[..4].copy_from_slice(&x.to_le_bytes()),
                        Value::Int64(x) | Value::DateTime(x) => {
                            le.copy_from_slice(&x.to_le_bytes())
                        }
                        Value::UInt64(x) => le.copy_from_slice(&x.to_le_bytes()),
                        Value::Double(x) => le.copy_from_slice(&x.to_le_bytes()),
                    }
                    assert_eq!(out[at..at + size], le[..size]);
                    at += size;
                }
                assert_eq!(at, n);
            }
        }
    }
}

/// The tutorial writer's message with `values`, after `change` to its
/// configuration.
fn tutorial_with(change: impl FnOnce(&mut WriterConfig), values: &[Value]) -> Vec<u8> {
    let mut config = WriterConfig::tutorial();
    change(&mut config);
    let w = Writer::new(config).unwrap();
    let mut out = vec![0u8; w.len()];
    w.encode(&Publish::default(), values, &mut out).unwrap();
    out
}

fn accept(reader: &ReaderConfig, bytes: &[u8]) -> Result<Accepted, Reject> {
    Reader::new(reader.clone()).accept(bytes, &mut [NO_VALUE; 4])
}

const NOW: Value = Value::DateTime(0x01dd_7b7e_c809_10c2);

#[test]
fn the_publisher_id_must_match_in_type_and_value_when_present() {
    let tutorial = ReaderConfig::tutorial();
    let as_u32 = tutorial_with(|c| c.publisher_id = Some(PublisherId::UInt32(2234)), &[NOW]);
    let r = accept(&tutorial, &as_u32).unwrap_err();
    assert_eq!(
        r,
        Reject::NotOurs(NotOurs::PublisherIdType {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(
        r.to_string(),
        "not for this reader: the PublisherId is a uint32, the reader expects a uint16"
    );
    assert_eq!(r.class(), RejectClass::NotOurs);
    let other = tutorial_with(|c| c.publisher_id = Some(PublisherId::UInt16(2235)), &[NOW]);
    assert_eq!(
        accept(&tutorial, &other),
        Err(Reject::NotOurs(NotOurs::PublisherId))
    );
    let none = tutorial_with(|c| c.publisher_id = None, &[NOW]);
    assert!(
        accept(&tutorial, &none).is_ok(),
        "no PublisherId: not checked"
    );
    let named = tutorial_with(
        |c| c.publisher_id = Some(PublisherId::String("io".into())),
        &[NOW],
    );
    let expect = |name: &str| ReaderConfig {
        publisher_id: Some(PublisherId::String(name.into())),
        ..ReaderConfig::tutorial()
    };
    assert!(accept(&expect("io"), &named).is_ok());
    assert_eq!(
        accept(&expect("plc"), &named),
        Err(Reject::NotOurs(NotOurs::PublisherId))
    );
    let any = ReaderConfig {
        publisher_id: None,
        ..ReaderConfig::tutorial()
    };
    assert!(accept(&any, &as_u32).is_ok());
}

#[test]
fn the_writer_group_and_dataset_writer_must_match_when_sent() {
    let tutorial = ReaderConfig::tutorial();
    let group = tutorial_with(|c| c.writer_group_id = Some(101), &[NOW]);
    let r = accept(&tutorial, &group).unwrap_err();
    assert_eq!(
        r,
        Reject::NotOurs(NotOurs::WriterGroup {
            expected: 100,
            got: 101
        })
    );
    assert_eq!(
        r.to_string(),
        "not for this reader: WriterGroupId 101, the reader expects 100"
    );
    assert!(accept(
        &tutorial,
        &tutorial_with(|c| c.writer_group_id = None, &[NOW])
    )
    .is_ok());
    let writer = tutorial_with(|c| c.dataset_writer_id = 1, &[NOW]);
    let r = accept(&tutorial, &writer).unwrap_err();
    assert_eq!(
        r.to_string(),
        "not for this reader: the PayloadHeader does not list DataSetWriterId 62541"
    );
    let no_payload_header = tutorial_with(
        |c| {
            c.dataset_writer_id = 1;
            c.payload_header = false;
        },
        &[NOW],
    );
    assert!(accept(&tutorial, &no_payload_header).is_ok());
}

#[test]
fn the_reader_takes_its_own_dataset_message_out_of_several() {
    let dsm = |v: Value| DataSetMessage {
        header: DataSetMessageHeader::new(FieldEncoding::Variant),
        payload: Payload::KeyFrame(vec![Field::Variant(Some(v))]),
    };
    let m = NetworkMessage {
        publisher_id: Some(TUTORIAL_PUBLISHER_ID),
        dataset_writer_ids: Some(vec![5, TUTORIAL_DATASET_WRITER_ID, 6]),
        messages: vec![dsm(Value::UInt32(1)), dsm(NOW), dsm(Value::Double(1.0))],
        ..NetworkMessage::default()
    };
    let bytes = m.to_bytes().unwrap();
    let mut values = [NO_VALUE; 1];
    let a = Reader::new(ReaderConfig::tutorial())
        .accept(&bytes, &mut values)
        .unwrap();
    assert_eq!((a.fields, values[0]), (1, NOW));
    let first = ReaderConfig {
        dataset_writer_id: None,
        fields: None,
        ..ReaderConfig::tutorial()
    };
    Reader::new(first).accept(&bytes, &mut values).unwrap();
    assert_eq!(values[0], Value::UInt32(1));
}

#[test]
fn only_valid_key_frames_are_accepted() {
    let tutorial = ReaderConfig::tutorial();
    for (text, kind) in [
        ("01 81 03", MessageKind::KeepAlive),
        ("01 81 01 0000", MessageKind::DeltaFrame),
        ("01 81 02 0000", MessageKind::Event),
    ] {
        let r = accept(&tutorial, &unhex(text)).unwrap_err();
        assert_eq!(r, Reject::NotKeyFrame(kind));
        assert_eq!(r.class(), RejectClass::Skipped);
    }
    assert_eq!(
        accept(&tutorial, &unhex("01 81 03"))
            .unwrap_err()
            .to_string(),
        "a keep-alive, not a key frame"
    );
    let r = accept(&tutorial, &unhex("01 00 0100 0d 0000000000000000")).unwrap_err();
    assert_eq!(r, Reject::Invalid);
    assert_eq!(r.to_string(), "the DataSetMessage's valid bit is clear");
    assert!(accept(&tutorial, &unhex("01 01 0100 0d 0000000000000000")).is_ok());
}

#[test]
fn field_count_and_types_must_match_the_configured_fields() {
    let tutorial = ReaderConfig::tutorial();
    let two = tutorial_with(|c| c.fields = vec![BuiltinType::DateTime; 2], &[NOW, NOW]);
    let r = accept(&tutorial, &two).unwrap_err();
    assert_eq!(
        r,
        Reject::FieldMismatch(FieldMismatch::Count {
            expected: 1,
            got: 2
        })
    );
    assert_eq!(
        r.to_string(),
        "field mismatch: 2 fields, the reader expects 1"
    );
    assert_eq!(r.class(), RejectClass::FieldList);
    let u32 = tutorial_with(
        |c| c.fields = vec![BuiltinType::UInt32],
        &[Value::UInt32(1)],
    );
    let r = accept(&tutorial, &u32).unwrap_err();
    assert_eq!(
        r.to_string(),
        "field mismatch: field 0 is uint32, the reader expects datetime"
    );
    let null = unhex("01 01 0100 00");
    assert_eq!(
        accept(&tutorial, &null),
        Err(Reject::FieldMismatch(FieldMismatch::NoValue { index: 0 }))
    );
    let empty_datavalue = unhex("01 05 0100 00");
    assert_eq!(
        accept(&tutorial, &empty_datavalue),
        Err(Reject::FieldMismatch(FieldMismatch::NoValue { index: 0 }))
    );
    let datavalue = tutorial_with(|c| c.encoding = FieldEncoding::DataValue, &[NOW]);
    assert!(accept(&tutorial, &datavalue).is_ok());
    // Any fields, when the reader names none.
    let any = ReaderConfig {
        fields: None,
        ..ReaderConfig::tutorial()
    };
    assert_eq!(accept(&any, &two).unwrap().fields, 2);
    let r = Reader::new(any)
        .accept(&two, &mut [NO_VALUE; 1])
        .unwrap_err();
    assert_eq!(
        r.to_string(),
        "field mismatch: 2 fields, the values buffer holds 1"
    );
}

#[test]
fn raw_fields_are_read_by_the_configured_types_and_padding_is_ignored() {
    let w = Writer::new(WriterConfig::rt_level()).unwrap();
    let values: Vec<Value> = (1..=10).map(Value::UInt32).collect();
    let mut frame = [0u8; 62];
    let n = w.encode(&Publish::default(), &values, &mut frame).unwrap();
    let reader = Reader::new(ReaderConfig::rt_level());
    let mut got = [NO_VALUE; 10];
    // Ethernet padding after the message, as a NIC adds to 60 bytes.
    assert_eq!(reader.accept(&frame, &mut got).unwrap().fields, 10);
    assert_eq!(got[..], values[..]);
    for short in 0..n {
        let r = reader.accept(&frame[..short], &mut got).unwrap_err();
        assert_eq!(r.class(), RejectClass::Malformed, "{short}: {r}");
    }
    assert_eq!(
        reader.accept(&frame[..n - 1], &mut got),
        Err(Reject::Malformed {
            offset: 51,
            what: "the message ends inside a field value"
        })
    );
    assert_eq!(
        reader.accept(&frame[..n], &mut got[..9]),
        Err(Reject::FieldMismatch(FieldMismatch::Capacity {
            got: 10,
            capacity: 9
        }))
    );
}

#[test]
fn unsupported_and_malformed_messages_are_told_apart() {
    let tutorial = ReaderConfig::tutorial();
    let r = accept(&tutorial, &unhex("f1 11 ba08")).unwrap_err();
    assert_eq!(r, Reject::Unsupported(Unsupported::Security));
    assert_eq!(r.class(), RejectClass::Unsupported);
    assert_eq!(
        r.to_string(),
        "unsupported UADP message: the security flag is set (signed or encrypted messages are not spoken)"
    );
    let r = accept(&tutorial, &[]).unwrap_err();
    assert_eq!(
        r.to_string(),
        "malformed UADP message at byte 0: the message is empty: no UADP version and flags byte"
    );
}

#[test]
fn every_refusal_goes_to_the_counter_of_its_reason() {
    let tutorial = ReaderConfig::tutorial();
    let msg =
        |change: &dyn Fn(&mut WriterConfig), values: &[Value]| tutorial_with(|c| change(c), values);
    let cases: Vec<(Vec<u8>, RejectClass)> = vec![
        // Identities: publisher, group, writer.
        (
            msg(
                &|c| c.publisher_id = Some(PublisherId::UInt16(2299)),
                &[NOW],
            ),
            RejectClass::NotOurs,
        ),
        (
            msg(
                &|c| c.publisher_id = Some(PublisherId::UInt32(2234)),
                &[NOW],
            ),
            RejectClass::NotOurs,
        ),
        (
            msg(&|c| c.writer_group_id = Some(101), &[NOW]),
            RejectClass::NotOurs,
        ),
        (
            msg(&|c| c.dataset_writer_id = 7, &[NOW]),
            RejectClass::NotOurs,
        ),
        // Another field list: count, then type.
        (
            msg(
                &|c| c.fields = vec![BuiltinType::DateTime, BuiltinType::Int32],
                &[NOW, Value::Int32(1)],
            ),
            RejectClass::FieldList,
        ),
        (
            msg(&|c| c.fields = vec![BuiltinType::Int64], &[Value::Int64(1)]),
            RejectClass::FieldList,
        ),
        // Security: not spoken. A cut message: malformed.
        (unhex("f1 11 ba08"), RejectClass::Unsupported),
        (msg(&|_| {}, &[NOW])[..30].to_vec(), RejectClass::Malformed),
    ];
    let got: Vec<RejectClass> = cases
        .iter()
        .map(|(bytes, _)| accept(&tutorial, bytes).unwrap_err().class())
        .collect();
    let want: Vec<RejectClass> = cases.iter().map(|(_, c)| *c).collect();
    assert_eq!(got, want);
    assert_eq!(
        accept(&tutorial, &cases[3].0).unwrap_err().to_string(),
        "not for this reader: the PayloadHeader does not list DataSetWriterId 62541"
    );
    assert_eq!(
        accept(&tutorial, &cases[4].0).unwrap_err().to_string(),
        "field mismatch: 2 fields, the reader expects 1"
    );
    assert_eq!(
        accept(&tutorial, &cases[5].0).unwrap_err().to_string(),
        "field mismatch: field 0 is int64, the reader expects datetime"
    );
}

#[test]
fn the_stock_tutorial_subscriber_refuses_one_field_and_takes_its_four() {
    let stock = ReaderConfig::tutorial_subscriber();
    let one = tutorial_with(|_| {}, &[NOW]);
    let r = accept(&stock, &one).unwrap_err();
    assert_eq!(
        r,
        Reject::FieldMismatch(FieldMismatch::Count {
            expected: 4,
            got: 1
        })
    );
    assert_eq!(r.class(), RejectClass::FieldList);
    let four = [
        NOW,
        Value::Int32(-3),
        Value::Int64(1 << 40),
        Value::Boolean(true),
    ];
    let bytes = tutorial_with(
        |c| {
            c.fields = vec![
                BuiltinType::DateTime,
                BuiltinType::Int32,
                BuiltinType::Int64,
                BuiltinType::Boolean,
            ]
        },
        &four,
    );
    let mut got = [NO_VALUE; 4];
    let a = Reader::new(stock).accept(&bytes, &mut got).unwrap();
    assert_eq!(a.fields, 4);
    assert_eq!(got, four);
}
