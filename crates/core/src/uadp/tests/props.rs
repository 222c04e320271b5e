//! Malformed input never panics, and what decodes re-encodes to itself.
//!
//! Property tests (proptest) over [`decode`] and [`Reader::accept`]:
//! random bytes; random bytes behind a UADP version byte, so that they get
//! past the first check; every bit flip of every captured message; random
//! well-formed message models. Deterministic tests: every truncation of
//! every captured message and of a message with every part, and forged
//! counts and lengths.
//!
//! What is true of a truncation: a strict prefix of a message is never a
//! message, *except* when the message ends in RawData fields decoded
//! without their types — those fields are "the rest of the bytes", so any
//! prefix that still holds the whole DataSetMessage header decodes, with
//! fewer raw bytes. With the types (and for the [`Reader`], which always
//! has them for RawData) every strict prefix is malformed.

use proptest::collection::vec;
use proptest::prelude::*;

use super::{udp_messages, RT_LEVEL_UDP, TUTORIAL_UDP};
use crate::ether;
use crate::uadp::*;

/// The field types the generated RawData DataSetMessages use.
const RAW_TYPES: [BuiltinType; 3] = [
    BuiltinType::UInt16,
    BuiltinType::Double,
    BuiltinType::Boolean,
];

/// Readers of every kind: the tutorial's, the rt-level's, and one that
/// takes anything.
fn readers() -> [Reader; 3] {
    [
        Reader::new(ReaderConfig::tutorial()),
        Reader::new(ReaderConfig::rt_level()),
        Reader::new(ReaderConfig::default()),
    ]
}

/// Decodes `bytes` every way and reads it with every reader: nothing may
/// panic, and a decoded message must survive encode → decode unchanged.
fn exercise(bytes: &[u8]) {
    let mut values = [Value::Boolean(false); 16];
    for reader in readers() {
        let _ = reader.accept(bytes, &mut values);
        let _ = reader.accept(bytes, &mut values[..1]);
    }
    for options in [
        DecodeOptions::default(),
        DecodeOptions {
            raw_types: Some(&RAW_TYPES),
            allow_trailing: false,
        },
        DecodeOptions {
            raw_types: Some(&[BuiltinType::UInt32; 10]),
            allow_trailing: true,
        },
    ] {
        if let Ok(m) = decode_with(bytes, &options) {
            let again = m.to_bytes().expect("a decoded message encodes");
            let strict = DecodeOptions {
                allow_trailing: false,
                ..options
            };
            assert_eq!(decode_with(&again, &strict), Ok(m));
            if !options.allow_trailing {
                assert!(again.len() <= bytes.len());
            }
        }
    }
    let _ = ether::parse(bytes);
}

fn value(ty: BuiltinType) -> BoxedStrategy<Value> {
    match ty {
        BuiltinType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
        BuiltinType::SByte => any::<i8>().prop_map(Value::SByte).boxed(),
        BuiltinType::Byte => any::<u8>().prop_map(Value::Byte).boxed(),
        BuiltinType::Int16 => any::<i16>().prop_map(Value::Int16).boxed(),
        BuiltinType::UInt16 => any::<u16>().prop_map(Value::UInt16).boxed(),
        BuiltinType::Int32 => any::<i32>().prop_map(Value::Int32).boxed(),
        BuiltinType::UInt32 => any::<u32>().prop_map(Value::UInt32).boxed(),
        BuiltinType::Int64 => any::<i64>().prop_map(Value::Int64).boxed(),
        BuiltinType::UInt64 => any::<u64>().prop_map(Value::UInt64).boxed(),
        // No NaN: a NaN is not equal to itself, and the model compares.
        BuiltinType::Float => any::<i32>().prop_map(|x| Value::Float(x as f32)).boxed(),
        BuiltinType::Double => any::<i64>().prop_map(|x| Value::Double(x as f64)).boxed(),
        BuiltinType::DateTime => any::<i64>().prop_map(Value::DateTime).boxed(),
    }
}

fn any_value() -> BoxedStrategy<Value> {
    prop::sample::select(BuiltinType::ALL.to_vec())
        .prop_flat_map(value)
        .boxed()
}

fn datavalue() -> impl Strategy<Value = DataValue> {
    (
        prop::option::of(any_value()),
        prop::option::of(any::<u32>()),
        prop::option::of(any::<i64>()),
        prop::option::of(any::<u16>()),
        prop::option::of(any::<i64>()),
        prop::option::of(any::<u16>()),
    )
        .prop_map(|(value, status, st, sp, vt, vp)| DataValue {
            value,
            status,
            source_timestamp: st,
            source_picoseconds: sp,
            server_timestamp: vt,
            server_picoseconds: vp,
        })
}

fn field(encoding: FieldEncoding) -> BoxedStrategy<Field> {
    match encoding {
        FieldEncoding::Variant => prop::option::of(any_value())
            .prop_map(Field::Variant)
            .boxed(),
        FieldEncoding::DataValue => datavalue().prop_map(Field::DataValue).boxed(),
        FieldEncoding::RawData => unreachable!("raw fields follow RAW_TYPES"),
    }
}

fn raw_key_frame() -> impl Strategy<Value = Vec<Field>> {
    (
        value(RAW_TYPES[0]),
        value(RAW_TYPES[1]),
        value(RAW_TYPES[2]),
    )
        .prop_map(|(a, b, c)| vec![Field::Raw(a), Field::Raw(b), Field::Raw(c)])
}

fn payload(encoding: FieldEncoding) -> BoxedStrategy<Payload> {
    let raw = encoding == FieldEncoding::RawData;
    let key = if raw {
        raw_key_frame().boxed()
    } else {
        vec(field(encoding), 0..4).boxed()
    };
    let delta = if raw {
        vec(
            (0..RAW_TYPES.len()).prop_flat_map(|i| {
                value(RAW_TYPES[i]).prop_map(move |v| DeltaField {
                    index: i as u16,
                    field: Field::Raw(v),
                })
            }),
            0..4,
        )
        .boxed()
    } else {
        vec(
            (any::<u16>(), field(encoding)).prop_map(|(index, field)| DeltaField { index, field }),
            0..4,
        )
        .boxed()
    };
    let event = if raw {
        raw_key_frame()
            .prop_flat_map(|f| (0..=f.len()).prop_map(move |n| f[..n].to_vec()))
            .boxed()
    } else {
        vec(field(encoding), 0..4).boxed()
    };
    prop_oneof![
        key.prop_map(Payload::KeyFrame),
        delta.prop_map(Payload::DeltaFrame),
        event.prop_map(Payload::Event),
        Just(Payload::KeepAlive),
    ]
    .boxed()
}

fn dataset_message() -> impl Strategy<Value = DataSetMessage> {
    let encoding = prop::sample::select(vec![
        FieldEncoding::Variant,
        FieldEncoding::RawData,
        FieldEncoding::DataValue,
    ]);
    encoding.prop_flat_map(|encoding| {
        (
            (any::<bool>(), any::<bool>()),
            prop::option::of(any::<u16>()),
            prop::option::of((any::<i64>(), prop::option::of(any::<u16>()))),
            prop::option::of(any::<u16>()),
            prop::option::of(any::<u32>()),
            prop::option::of(any::<u32>()),
            payload(encoding),
        )
            .prop_map(
                move |((valid, flags2), seq, ts, status, major, minor, payload)| DataSetMessage {
                    header: DataSetMessageHeader {
                        valid,
                        encoding,
                        flags2,
                        sequence_number: seq,
                        timestamp: ts.map(|t| t.0),
                        picoseconds: ts.and_then(|t| t.1),
                        status,
                        config_major: major,
                        config_minor: minor,
                    },
                    payload,
                },
            )
    })
}

fn publisher_id() -> impl Strategy<Value = PublisherId> {
    prop_oneof![
        any::<u8>().prop_map(PublisherId::Byte),
        any::<u16>().prop_map(PublisherId::UInt16),
        any::<u32>().prop_map(PublisherId::UInt32),
        any::<u64>().prop_map(PublisherId::UInt64),
        "[a-z0-9é-]{0,12}".prop_map(PublisherId::String),
    ]
}

fn group_header() -> impl Strategy<Value = GroupHeader> {
    (
        prop::option::of(any::<u16>()),
        prop::option::of(any::<u32>()),
        prop::option::of(any::<u16>()),
        prop::option::of(any::<u16>()),
    )
        .prop_map(|(w, v, n, s)| GroupHeader {
            writer_group_id: w,
            group_version: v,
            network_message_number: n,
            sequence_number: s,
        })
}

fn network_message() -> impl Strategy<Value = NetworkMessage> {
    let messages = prop_oneof![
        dataset_message().prop_map(|m| (None, vec![m])),
        vec((any::<u16>(), dataset_message()), 1..4).prop_map(|ms| {
            let (ids, ms): (Vec<u16>, Vec<DataSetMessage>) = ms.into_iter().unzip();
            (Some(ids), ms)
        }),
    ];
    (
        prop::option::of(publisher_id()),
        prop::option::of(any::<[u8; 16]>()),
        prop::option::of(group_header()),
        prop::option::of((any::<i64>(), prop::option::of(any::<u16>()))),
        (any::<bool>(), any::<bool>()),
        messages,
    )
        .prop_map(
            |(publisher_id, class, group, ts, (ef1, ef2), (ids, mut messages))| {
                // A flag byte "sent even when empty" is redundant where a field
                // needs it anyway; decoding says so only where it is not.
                for m in &mut messages {
                    let h = &mut m.header;
                    h.flags2 &= m.payload.kind() == MessageKind::KeyFrame
                        && h.timestamp.is_none()
                        && h.picoseconds.is_none();
                }
                let ef1 = ef1
                    && !ef2
                    && publisher_id.as_ref().is_none_or(|p| p.type_bits() == 0)
                    && class.is_none()
                    && ts.is_none();
                NetworkMessage {
                    publisher_id,
                    dataset_class_id: class,
                    group_header: group,
                    dataset_writer_ids: ids,
                    timestamp: ts.map(|t| t.0),
                    picoseconds: ts.and_then(|t| t.1),
                    extended_flags1: ef1,
                    extended_flags2: ef2,
                    messages,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_bytes_never_panic(bytes in vec(any::<u8>(), 0..160)) {
        exercise(&bytes);
    }

    #[test]
    fn random_bytes_behind_a_version_byte_never_panic(
        flags in 0u8..16,
        rest in vec(any::<u8>(), 0..160),
    ) {
        let mut bytes = vec![0x01 | flags << 4];
        bytes.extend(rest);
        exercise(&bytes);
    }

    #[test]
    fn flipped_bits_of_captured_messages_never_panic(
        which in 0usize..59,
        bit in 0usize..(55 * 8),
        second in prop::option::of(0usize..(55 * 8)),
    ) {
        let all: Vec<Vec<u8>> = udp_messages(TUTORIAL_UDP)
            .into_iter()
            .chain(udp_messages(RT_LEVEL_UDP))
            .map(|(_, m)| m)
            .collect();
        let mut bytes = all[which].clone();
        let len = bytes.len() * 8;
        for b in std::iter::once(bit).chain(second) {
            bytes[(b % len) / 8] ^= 1 << (b % 8);
        }
        exercise(&bytes);
    }

    #[test]
    fn well_formed_messages_round_trip_and_their_prefixes_are_malformed(
        m in network_message(),
    ) {
        let bytes = m.to_bytes().unwrap();
        prop_assert_eq!(decode_with_raw_types(&bytes, &RAW_TYPES), Ok(m.clone()));
        exercise(&bytes);
        for len in 0..bytes.len() {
            let r = decode_with_raw_types(&bytes[..len], &RAW_TYPES);
            prop_assert!(
                matches!(r, Err(DecodeError::Malformed { .. })),
                "prefix of {} bytes of {}: {:?}", len, super::hex(&bytes), r
            );
        }
    }
}

#[test]
fn every_truncation_of_a_captured_message_is_malformed_unless_raw_bytes_are_kept() {
    let tutorial = Reader::new(ReaderConfig::tutorial());
    let rt = Reader::new(ReaderConfig::rt_level());
    let mut values = [Value::Boolean(false); 10];
    for (_, m) in udp_messages(TUTORIAL_UDP) {
        for len in 0..m.len() {
            let prefix = &m[..len];
            assert!(matches!(decode(prefix), Err(DecodeError::Malformed { .. })));
            let r = tutorial.accept(prefix, &mut values).unwrap_err();
            assert_eq!(r.class(), RejectClass::Malformed, "{len}: {r}");
            assert!(matches!(r, Reject::Malformed { .. }), "{len}: {r}");
        }
    }
    let types = [BuiltinType::UInt32; 10];
    for (_, m) in udp_messages(RT_LEVEL_UDP) {
        for len in 0..m.len() {
            let prefix = &m[..len];
            assert!(matches!(
                decode_with_raw_types(prefix, &types),
                Err(DecodeError::Malformed { .. })
            ));
            assert!(matches!(
                rt.accept(prefix, &mut values),
                Err(Reject::Malformed { .. })
            ));
            // Without the types, the 40 bytes of fields are "the rest": a
            // prefix holding the whole header (15 bytes) is a message with
            // fewer raw bytes, by construction.
            match decode(prefix) {
                Ok(d) if len >= 15 => assert_eq!(
                    d.messages[0].payload,
                    Payload::Raw {
                        kind: MessageKind::KeyFrame,
                        bytes: m[15..len].to_vec()
                    }
                ),
                Err(DecodeError::Malformed { .. }) if len < 15 => {}
                other => panic!("prefix of {len} bytes: {other:?}"),
            }
        }
    }
}

#[test]
fn forged_counts_and_lengths_are_malformed_not_huge() {
    // (message, whether the reader gets as far as the forged part)
    let cases: &[(&[u8], bool)] = &[
        // Field count 65535 and one field.
        (&[0x01, 0x01, 0xff, 0xff, 0x07, 1, 0, 0, 0], true),
        // DataValue field count 65535, no field.
        (&[0x01, 0x05, 0xff, 0xff], true),
        // Delta frame of 65535 fields.
        (&[0x01, 0x81, 0x01, 0xff, 0xff, 0x00, 0x00], false),
        // A String PublisherId of 2^31 - 1 bytes, and one of -2^31.
        (&[0x91, 0x04, 0xff, 0xff, 0xff, 0x7f, b'a'], true),
        (&[0x91, 0x04, 0x00, 0x00, 0x00, 0x80, b'a'], true),
        // 255 DataSetMessages announced, two writer ids present.
        (&[0x41, 0xff, 1, 0, 2, 0], true),
        // Sizes of 65535 each over a short payload.
        (
            &[
                0x41, 0x02, 1, 0, 2, 0, 0xff, 0xff, 0xff, 0xff, 0x01, 0x00, 0x00,
            ],
            true,
        ),
        // Sizes that add up past the end only together.
        (
            &[
                0x41, 0x02, 1, 0, 2, 0, 3, 0, 4, 0, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00,
            ],
            true,
        ),
    ];
    let mut values = [Value::Boolean(false); 4];
    let any = Reader::new(ReaderConfig::default());
    for &(bytes, reader_reads_it) in cases {
        let e = decode(bytes).unwrap_err();
        assert!(
            matches!(e, DecodeError::Malformed { .. }),
            "{bytes:02x?}: {e}"
        );
        let r = any.accept(bytes, &mut values).unwrap_err();
        if reader_reads_it {
            assert_eq!(r.class(), RejectClass::Malformed, "{bytes:02x?}: {r}");
        } else {
            // A delta frame is refused before its fields are read.
            assert_eq!(r, Reject::NotKeyFrame(MessageKind::DeltaFrame));
        }
    }
}
