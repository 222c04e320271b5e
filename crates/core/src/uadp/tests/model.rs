//! Every part of the model, by hand: the value types, each header part in
//! Part 14's order with its exact bytes, every field encoding and message
//! type, and the exact error of each malformed or unsupported input.

use super::{hex, unhex};
use crate::uadp::*;

// ---- types ---------------------------------------------------------------

#[test]
fn publisher_ids_parse_and_print_in_one_form() {
    for (text, id) in [
        ("byte:7", PublisherId::Byte(7)),
        ("uint16:2234", PublisherId::UInt16(2234)),
        ("uint32:4294967295", PublisherId::UInt32(u32::MAX)),
        ("uint64:18446744073709551615", PublisherId::UInt64(u64::MAX)),
        ("string:plc-1", PublisherId::String("plc-1".into())),
    ] {
        assert_eq!(PublisherId::parse(text), Ok(id.clone()));
        assert_eq!(id.to_string(), text);
    }
    assert_eq!(PublisherId::parse("UInt16:5"), Ok(PublisherId::UInt16(5)));
    assert_eq!(
        PublisherId::parse("string:a:b"),
        Ok(PublisherId::String("a:b".into()))
    );
    for (text, err) in [
        ("2234", "publisher id `2234`: expected TYPE:VALUE with TYPE one of byte, uint16, uint32, uint64 or string (e.g. uint16:2234)"),
        ("byte:256", "publisher id `byte:256`: `256` is not a whole number in 0..=255"),
        ("uint16:-1", "publisher id `uint16:-1`: `-1` is not a whole number in 0..=65535"),
        ("int16:1", "publisher id `int16:1`: unknown type `int16`; expected one of byte, uint16, uint32, uint64 or string (e.g. uint16:2234)"),
        ("string:", "publisher id `string:`: the string is empty; give a name after `string:`"),
    ] {
        assert_eq!(PublisherId::parse(text), Err(err.to_string()));
    }
    let long = format!("string:{}", "x".repeat(MAX_STRING_ID + 1));
    assert!(PublisherId::parse(&long)
        .unwrap_err()
        .ends_with("the string is 1025 bytes long; at most 1024 fit a message"));
}

#[test]
fn builtin_types_have_their_part_6_ids_sizes_and_names() {
    let table: Vec<(u8, usize, &str)> = BuiltinType::ALL
        .iter()
        .map(|t| (t.id(), t.size(), t.name()))
        .collect();
    assert_eq!(
        table,
        [
            (1, 1, "boolean"),
            (2, 1, "sbyte"),
            (3, 1, "byte"),
            (4, 2, "int16"),
            (5, 2, "uint16"),
            (6, 4, "int32"),
            (7, 4, "uint32"),
            (8, 8, "int64"),
            (9, 8, "uint64"),
            (10, 4, "float"),
            (11, 8, "double"),
            (13, 8, "datetime"),
        ]
    );
    for t in BuiltinType::ALL {
        assert_eq!(BuiltinType::parse(t.name()), Ok(t));
        assert_eq!(BuiltinType::from_id(t.id()), Some(t));
        assert_eq!(Value::zero(t).ty(), t);
    }
    assert_eq!(BuiltinType::parse("DateTime"), Ok(BuiltinType::DateTime));
    assert_eq!(BuiltinType::from_id(12), None, "String is not ours");
    assert_eq!(
        BuiltinType::parse("string"),
        Err("unknown field type `string`: expected one of boolean, sbyte, byte, int16, uint16, int32, uint32, int64, uint64, float, double, datetime".into())
    );
    assert_eq!(FieldEncoding::parse("RawData"), Ok(FieldEncoding::RawData));
    assert_eq!(FieldEncoding::parse("raw"), Ok(FieldEncoding::RawData));
    assert_eq!(
        FieldEncoding::parse("json"),
        Err("unknown field encoding `json`: expected variant, raw or datavalue".into())
    );
}

#[test]
fn datetimes_convert_to_and_from_unix_nanoseconds() {
    assert_eq!(datetime_from_unix_ns(0), DATETIME_UNIX_EPOCH);
    assert_eq!(datetime_from_unix_ns(99), DATETIME_UNIX_EPOCH);
    assert_eq!(datetime_from_unix_ns(100), DATETIME_UNIX_EPOCH + 1);
    assert_eq!(
        datetime_from_unix_ns(-1),
        DATETIME_UNIX_EPOCH - 1,
        "rounds down"
    );
    assert_eq!(unix_ns_from_datetime(DATETIME_UNIX_EPOCH + 1), 100);
    assert_eq!(unix_ns_from_datetime(0), i64::MIN, "1601 saturates");
    assert_eq!(unix_ns_from_datetime(i64::MAX), i64::MAX);
    // 2026-11-23T19:13:54.311705 UTC, the first tutorial capture's record.
    let ns = 1_795_461_234_311_705_000;
    assert_eq!(unix_ns_from_datetime(datetime_from_unix_ns(ns)), ns);
    assert_eq!(datetime_from_unix_ns(ns), 0x01dd_7b7e_c809_14fa);
}

// ---- a message of every part, byte by byte -------------------------------

/// Every header part, two DataSetMessages (so a sizes array), the second a
/// delta frame of DataValues with every mask bit.
fn full_message() -> NetworkMessage {
    let mut h1 = DataSetMessageHeader::new(FieldEncoding::Variant);
    h1.sequence_number = Some(9);
    h1.status = Some(0x8000);
    h1.config_major = Some(3);
    h1.config_minor = Some(4);
    let mut h2 = DataSetMessageHeader::new(FieldEncoding::DataValue);
    h2.valid = false;
    h2.timestamp = Some(0x0102_0304_0506_0708);
    h2.picoseconds = Some(7);
    NetworkMessage {
        publisher_id: Some(PublisherId::UInt32(0x0102_0304)),
        dataset_class_id: Some(std::array::from_fn(|i| 0xa0 + i as u8)),
        group_header: Some(GroupHeader {
            writer_group_id: Some(0x1234),
            group_version: Some(0x0a0b_0c0d),
            network_message_number: Some(7),
            sequence_number: Some(0xbeef),
        }),
        dataset_writer_ids: Some(vec![1, 2]),
        timestamp: Some(0x1122_3344_5566_7788),
        picoseconds: Some(500),
        extended_flags1: false,
        extended_flags2: false,
        messages: vec![
            DataSetMessage {
                header: h1,
                payload: Payload::KeyFrame(vec![
                    Field::Variant(Some(Value::Int16(-2))),
                    Field::Variant(None),
                ]),
            },
            DataSetMessage {
                header: h2,
                payload: Payload::DeltaFrame(vec![DeltaField {
                    index: 3,
                    field: Field::DataValue(DataValue {
                        value: Some(Value::Boolean(true)),
                        status: Some(0x8000_0000),
                        source_timestamp: Some(5),
                        source_picoseconds: Some(6),
                        server_timestamp: Some(8),
                        server_picoseconds: Some(9),
                    }),
                }]),
            },
        ],
    }
}

const FULL_MESSAGE: &str = "
    f1 6a 04030201 a0a1a2a3a4a5a6a7a8a9aaabacadaeaf
    0f 3412 0d0c0b0a 0700 efbe
    02 0100 0200
    8877665544332211 f401
    1300 2b00
    79 0900 0080 03000000 04000000 0200 04feff 00
    84 31 0807060504030201 0700 0100 0300
       3f 0101 00000080 0500000000000000 0600 0800000000000000 0900";

#[test]
fn every_header_part_is_written_in_part_14_order_and_read_back() {
    let m = full_message();
    let bytes = m.to_bytes().unwrap();
    assert_eq!(hex(&bytes), hex(&unhex(FULL_MESSAGE)));
    assert_eq!(decode(&bytes), Ok(m));
}

#[test]
fn every_publisher_id_type_round_trips() {
    let keep_alive = DataSetMessage {
        header: DataSetMessageHeader::new(FieldEncoding::Variant),
        payload: Payload::KeepAlive,
    };
    for (id, expected) in [
        (PublisherId::Byte(7), "11 07 8103"),
        (PublisherId::UInt16(2234), "91 01 ba08 8103"),
        (PublisherId::UInt32(2234), "91 02 ba080000 8103"),
        (PublisherId::UInt64(2234), "91 03 ba08000000000000 8103"),
        (
            PublisherId::String("plc".into()),
            "91 04 03000000 706c63 8103",
        ),
    ] {
        let m = NetworkMessage {
            publisher_id: Some(id),
            messages: vec![keep_alive.clone()],
            ..NetworkMessage::default()
        };
        let bytes = m.to_bytes().unwrap();
        assert_eq!(hex(&bytes), hex(&unhex(expected)));
        assert_eq!(decode(&bytes), Ok(m));
    }
}

#[test]
fn empty_flag_bytes_are_kept_when_they_were_sent() {
    // ExtendedFlags1 0 with a Byte PublisherId, ExtendedFlags2 0, and a
    // DataSetFlags2 saying only "key frame".
    for text in [
        "91 00 07 80 00 0000",
        "91 80 00 07 80 00 0000",
        "01 80 00 0000",
    ] {
        let bytes = unhex(text);
        let m = decode(&bytes).unwrap();
        assert_eq!(hex(&m.to_bytes().unwrap()), hex(&bytes));
    }
    let m = decode(&unhex("91 00 07 80 00 0000")).unwrap();
    assert!(m.extended_flags1 && !m.extended_flags2);
    // ExtendedFlags2 needs ExtendedFlags1: the model says only the first.
    let m = decode(&unhex("91 80 00 07 80 00 0000")).unwrap();
    assert!(!m.extended_flags1 && m.extended_flags2);
    assert!(m.messages[0].header.flags2);
    assert!(!m.messages[0].header.valid);
}

#[test]
fn events_keep_alives_status_and_picoseconds_round_trip() {
    for (text, payload) in [
        (
            "01 81 02 0100 07 05000000",
            Payload::Event(vec![Field::Variant(Some(Value::UInt32(5)))]),
        ),
        ("01 81 03", Payload::KeepAlive),
        (
            "01 c5 30 0100000000000000 0200 03000000 0000",
            Payload::KeyFrame(vec![]),
        ),
    ] {
        let bytes = unhex(text);
        let m = decode(&bytes).unwrap();
        assert_eq!(m.messages[0].payload, payload, "{text}");
        assert_eq!(hex(&m.to_bytes().unwrap()), hex(&bytes));
    }
    // DataValue key frame with a timestamp and picoseconds (0x30), minor
    // version only: flags1 0xc5 = valid, DataValue, minor, flags2.
    let m = decode(&unhex("01 c5 30 0100000000000000 0200 03000000 0000")).unwrap();
    let h = m.messages[0].header;
    assert_eq!(
        (
            h.encoding,
            h.timestamp,
            h.picoseconds,
            h.config_minor,
            h.config_major
        ),
        (FieldEncoding::DataValue, Some(1), Some(2), Some(3), None)
    );
}

#[test]
fn every_value_type_round_trips_as_variant_datavalue_and_raw() {
    let values = [
        Value::Boolean(true),
        Value::SByte(-5),
        Value::Byte(200),
        Value::Int16(-300),
        Value::UInt16(60000),
        Value::Int32(-70000),
        Value::UInt32(4_000_000_000),
        Value::Int64(-5_000_000_000),
        Value::UInt64(u64::MAX),
        Value::Float(1.5),
        Value::Double(-2.25),
        Value::DateTime(0x01dd_7b7e_c809_10c2),
    ];
    let types: Vec<BuiltinType> = values.iter().map(Value::ty).collect();
    for encoding in [
        FieldEncoding::Variant,
        FieldEncoding::DataValue,
        FieldEncoding::RawData,
    ] {
        let fields = values
            .iter()
            .map(|&v| match encoding {
                FieldEncoding::Variant => Field::Variant(Some(v)),
                FieldEncoding::DataValue => Field::DataValue(DataValue::of(v)),
                FieldEncoding::RawData => Field::Raw(v),
            })
            .collect();
        let m = NetworkMessage {
            messages: vec![DataSetMessage {
                header: DataSetMessageHeader::new(encoding),
                payload: Payload::KeyFrame(fields),
            }],
            ..NetworkMessage::default()
        };
        let bytes = m.to_bytes().unwrap();
        assert_eq!(decode_with_raw_types(&bytes, &types), Ok(m.clone()));
        let body: usize = types.iter().map(|t| t.size()).sum();
        let per_field = match encoding {
            FieldEncoding::Variant => 1,
            FieldEncoding::DataValue => 2,
            FieldEncoding::RawData => 0,
        };
        let count = if encoding == FieldEncoding::RawData {
            0
        } else {
            2
        };
        assert_eq!(bytes.len(), 2 + count + body + per_field * values.len());
    }
    // Little-endian, IEEE 754: 1.5f32 is 0x3fc00000.
    let m = decode(&unhex("01 01 0100 0a 0000c03f")).unwrap();
    assert_eq!(
        m.messages[0].payload,
        Payload::KeyFrame(vec![Field::Variant(Some(Value::Float(1.5)))])
    );
}

#[test]
fn a_raw_delta_frame_reads_each_field_by_its_index_type() {
    let bytes = unhex("01 83 01 0200 0100 2a 0000 3412");
    let types = [BuiltinType::UInt16, BuiltinType::Byte];
    let m = decode_with_raw_types(&bytes, &types).unwrap();
    assert_eq!(
        m.messages[0].payload,
        Payload::DeltaFrame(vec![
            DeltaField {
                index: 1,
                field: Field::Raw(Value::Byte(0x2a))
            },
            DeltaField {
                index: 0,
                field: Field::Raw(Value::UInt16(0x1234))
            },
        ])
    );
    assert_eq!(m.to_bytes().unwrap(), bytes);
    assert_eq!(
        decode_with_raw_types(&bytes, &types[..1]),
        Err(DecodeError::Malformed {
            offset: 5,
            what: "a delta frame's field index is beyond the configured field types"
        })
    );
    assert_eq!(
        decode(&bytes).unwrap().messages[0].payload,
        Payload::Raw {
            kind: MessageKind::DeltaFrame,
            bytes: bytes[3..].to_vec()
        }
    );
}

#[test]
fn a_boolean_byte_other_than_zero_is_true_and_written_back_as_one() {
    let m = decode(&unhex("01 01 0100 01 02")).unwrap();
    assert_eq!(
        m.messages[0].payload,
        Payload::KeyFrame(vec![Field::Variant(Some(Value::Boolean(true)))])
    );
    assert_eq!(hex(&m.to_bytes().unwrap()), "010101000101");
}

// ---- what is refused, and how it is said ---------------------------------

fn malformed(text: &str) -> (usize, &'static str) {
    match decode(&unhex(text)) {
        Err(DecodeError::Malformed { offset, what }) => (offset, what),
        other => panic!("{text}: {other:?}"),
    }
}

#[test]
fn malformed_messages_name_the_byte_and_what_was_wrong() {
    let cases: &[(&str, usize, &str)] = &[
        (
            "",
            0,
            "the message is empty: no UADP version and flags byte",
        ),
        ("81", 1, "the message ends before ExtendedFlags1"),
        (
            "91 05 00",
            1,
            "ExtendedFlags1 names a reserved PublisherId type (5-7)",
        ),
        (
            "81 01",
            1,
            "ExtendedFlags1 names a PublisherId type but the UADP flags carry no PublisherId",
        ),
        ("81 80 20", 2, "reserved bits 5-7 of ExtendedFlags2 are set"),
        (
            "81 80 0c",
            2,
            "ExtendedFlags2 names a reserved NetworkMessage type (3-7)",
        ),
        ("91 01 ba", 2, "the message ends inside the PublisherId"),
        (
            "91 04 ffffff7f 41",
            2,
            "the PublisherId String's length runs past the end of the message",
        ),
        (
            "91 04 ffffffff",
            2,
            "the PublisherId String is null or has a negative length",
        ),
        (
            "91 04 02000000 c328 0000",
            6,
            "the PublisherId String is not UTF-8",
        ),
        (
            "81 08 a0a1",
            2,
            "the message ends inside the DataSetClassId",
        ),
        ("21 10", 1, "reserved bits 4-7 of GroupFlags are set"),
        ("21 01 64", 2, "the message ends inside the WriterGroupId"),
        (
            "41 00",
            1,
            "the PayloadHeader lists no DataSetMessage (count 0)",
        ),
        (
            "41 ff 0100 0200",
            2,
            "the message ends inside the PayloadHeader's DataSetWriterIds",
        ),
        (
            "41 02 0100 0200 0300",
            6,
            "the message ends inside the DataSetMessage sizes array",
        ),
        (
            "41 02 0100 0200 0300 0500 01 0000 01 0000",
            8,
            "the DataSetMessage sizes run past the end of the message",
        ),
        (
            "41 02 0100 0200 0000 0300 01 0000",
            6,
            "a DataSetMessage size is 0",
        ),
        (
            "41 02 0100 0200 0400 0300 01 0000 01 01 0000",
            13,
            "a DataSetMessage ends before the size the sizes array gives it",
        ),
        (
            "81 20 0000",
            2,
            "the message ends inside the NetworkMessage Timestamp",
        ),
        ("01", 1, "the message ends before the DataSetFlags1"),
        (
            "01 07",
            1,
            "DataSetFlags1 names the reserved field encoding 3",
        ),
        (
            "01 81 04",
            2,
            "DataSetFlags2 names a reserved DataSetMessage type (4-15)",
        ),
        ("01 81 40", 2, "reserved bits 6-7 of DataSetFlags2 are set"),
        (
            "01 09 00",
            2,
            "the message ends inside the DataSetMessage SequenceNumber",
        ),
        (
            "01 61 01000000",
            6,
            "the message ends inside the ConfigurationVersion MinorVersion",
        ),
        ("01 01", 2, "the message ends inside the field count"),
        (
            "01 01 ffff 07 01000000",
            9,
            "the message ends before a Variant's encoding byte",
        ),
        (
            "01 01 0100 07 0100",
            5,
            "the message ends inside a field value",
        ),
        (
            "01 01 0100 1a",
            4,
            "a Variant names a built-in type id above 25, which OPC UA does not define",
        ),
        (
            "01 05 0100 40",
            4,
            "reserved bits 6-7 of a DataValue's mask are set",
        ),
        (
            "01 05 0100 02 0000",
            5,
            "the message ends inside a DataValue's StatusCode",
        ),
        ("01 01 0000 00", 4, "bytes follow the last DataSetMessage"),
        ("01 81 03 00", 3, "bytes follow the last DataSetMessage"),
    ];
    for &(text, offset, what) in cases {
        assert_eq!(malformed(text), (offset, what), "{text}");
    }
    assert_eq!(
        decode(&unhex("01 01 0100 1a")).unwrap_err().to_string(),
        "malformed UADP message at byte 4: a Variant names a built-in type id above 25, which OPC UA does not define"
    );
}

#[test]
fn trailing_padding_is_accepted_on_request() {
    let padded = unhex("01 01 0000 000000");
    let options = DecodeOptions {
        allow_trailing: true,
        ..DecodeOptions::default()
    };
    let m = decode_with(&padded, &options).unwrap();
    assert_eq!(m.to_bytes().unwrap(), unhex("01 01 0000"));
}

#[test]
fn unsupported_messages_are_not_malformed() {
    let cases: &[(&str, Unsupported, &str)] = &[
        ("02", Unsupported::Version(2), "UADP version 2 (only version 1 is spoken)"),
        ("f1 11 ba08", Unsupported::Security, "the security flag is set (signed or encrypted messages are not spoken)"),
        ("81 80 01", Unsupported::Chunk, "a chunk message (split messages are not spoken)"),
        ("81 80 04", Unsupported::Discovery(1), "a discovery message (type 1); only DataSetMessage payloads are spoken"),
        ("81 80 08", Unsupported::Discovery(2), "a discovery message (type 2); only DataSetMessage payloads are spoken"),
        ("81 80 02 0000", Unsupported::PromotedFields, "promoted fields (ExtendedFlags2 bit 1) are not spoken"),
        ("01 01 0100 87 01000000", Unsupported::VariantArray(4), "a Variant array at byte 4; only scalar fields are spoken"),
        ("01 01 0100 0c 00000000", Unsupported::VariantType(12, 4), "a Variant of built-in type 12 at byte 4; only Boolean to Double and DateTime are spoken"),
    ];
    for (text, expected, message) in cases {
        let err = decode(&unhex(text)).unwrap_err();
        assert_eq!(err, DecodeError::Unsupported(*expected), "{text}");
        assert_eq!(
            err.to_string(),
            format!("unsupported UADP message: {message}")
        );
    }
}

#[test]
fn models_that_cannot_be_put_on_the_wire_are_refused_and_leave_out_alone() {
    let dsm = |encoding, field| DataSetMessage {
        header: DataSetMessageHeader::new(encoding),
        payload: Payload::KeyFrame(vec![field]),
    };
    let one = dsm(FieldEncoding::Variant, Field::Variant(None));
    let cases = [
        (
            NetworkMessage {
                dataset_writer_ids: Some(vec![1, 2]),
                messages: vec![one.clone()],
                ..NetworkMessage::default()
            },
            "the PayloadHeader's DataSetWriterIds and the DataSetMessages differ in number",
        ),
        (
            NetworkMessage {
                messages: vec![one.clone(), one.clone()],
                ..NetworkMessage::default()
            },
            "without a PayloadHeader a message carries exactly one DataSetMessage",
        ),
        (
            NetworkMessage {
                dataset_writer_ids: Some(vec![0; 256]),
                messages: vec![one.clone(); 256],
                ..NetworkMessage::default()
            },
            "a PayloadHeader lists at most 255 DataSetMessages",
        ),
        (
            NetworkMessage {
                messages: vec![dsm(FieldEncoding::RawData, Field::Variant(None))],
                ..NetworkMessage::default()
            },
            "a field's encoding differs from its DataSetMessage's field encoding",
        ),
    ];
    for (m, what) in cases {
        let mut out = vec![1, 2, 3];
        assert_eq!(m.encode(&mut out), Err(EncodeError::Invalid(what)));
        assert_eq!(out, [1, 2, 3]);
    }
}
