//! The configured writer: its checks, its errors, its fixed length, and
//! that what it writes is what the model writes for the same message.

use super::hex;
use crate::uadp::*;

#[test]
fn bad_configurations_are_refused_with_what_to_change() {
    let cases = [
        (
            WriterConfig {
                fields: vec![],
                ..WriterConfig::rt_level()
            },
            ConfigError::RawDataWithoutFields,
            "RawData encoding needs at least one field: a subscriber reads raw fields by their configured types, so an empty raw DataSet carries nothing; add fields or use variant encoding",
        ),
        (
            WriterConfig {
                fields: vec![BuiltinType::Byte; 65536],
                ..WriterConfig::tutorial()
            },
            ConfigError::TooManyFields(65536),
            "65536 fields configured; a DataSetMessage carries at most 65535",
        ),
        (
            WriterConfig {
                publisher_id: Some(PublisherId::String(String::new())),
                ..WriterConfig::tutorial()
            },
            ConfigError::PublisherIdLength(0),
            "the String PublisherId is 0 bytes long; give 1 to 1024 bytes",
        ),
        (
            WriterConfig {
                nm_picoseconds: true,
                ..WriterConfig::tutorial()
            },
            ConfigError::PicosecondsWithoutTimestamp("NetworkMessage"),
            "NetworkMessage picoseconds are on without the NetworkMessage timestamp they refine; turn the timestamp on or the picoseconds off",
        ),
        (
            WriterConfig {
                dsm_timestamp: false,
                dsm_picoseconds: true,
                ..WriterConfig::tutorial()
            },
            ConfigError::PicosecondsWithoutTimestamp("DataSetMessage"),
            "DataSetMessage picoseconds are on without the DataSetMessage timestamp they refine; turn the timestamp on or the picoseconds off",
        ),
        (
            // 12 bytes of NetworkMessage header, 3 of DataSetMessage header.
            WriterConfig {
                fields: vec![BuiltinType::Double; 8200],
                ..WriterConfig::rt_level()
            },
            ConfigError::TooLong(65615),
            "the message would be 65615 bytes long; at most 65507 fit a UDP datagram: configure fewer fields",
        ),
    ];
    for (config, error, message) in cases {
        let e = Writer::new(config).unwrap_err();
        assert_eq!(e, error);
        assert_eq!(e.to_string(), message);
    }
    let largest = WriterConfig {
        fields: vec![BuiltinType::Double; 8186],
        ..WriterConfig::rt_level()
    };
    assert_eq!(Writer::new(largest).unwrap().len(), 65503);
}

#[test]
fn values_must_match_the_configured_fields_and_the_buffer_must_hold_the_message() {
    let w = Writer::new(WriterConfig::rt_level()).unwrap();
    let p = Publish::default();
    let mut out = [0u8; 64];
    let ten = [Value::UInt32(1); 10];
    assert_eq!(
        w.encode(&p, &ten[..9], &mut out),
        Err(EncodeError::FieldCount {
            expected: 10,
            got: 9
        })
    );
    let mut wrong = ten;
    wrong[3] = Value::Int32(1);
    let err = w.encode(&p, &wrong, &mut out).unwrap_err();
    assert_eq!(
        err,
        EncodeError::FieldType {
            index: 3,
            expected: BuiltinType::UInt32,
            got: BuiltinType::Int32
        }
    );
    assert_eq!(
        err.to_string(),
        "field 3 is configured as uint32, but the value is int32"
    );
    let err = w.encode(&p, &ten, &mut out[..54]).unwrap_err();
    assert_eq!(err, EncodeError::BufferTooSmall { need: 55, have: 54 });
    assert_eq!(
        err.to_string(),
        "the output buffer holds 54 bytes; the message needs 55"
    );
    assert_eq!(out, [0u8; 64], "nothing written on an error");
    assert_eq!(w.encode(&p, &ten, &mut out), Ok(55));
    assert_eq!(out[55..], [0u8; 9], "nothing written past the message");
}

/// A configuration with every optional part on.
fn everything(encoding: FieldEncoding) -> WriterConfig {
    WriterConfig {
        publisher_id: Some(PublisherId::String("io-sim".into())),
        writer_group_id: Some(7),
        group_version: Some(0x1234_5678),
        network_message_number: Some(1),
        nm_sequence: true,
        dataset_writer_id: 9,
        payload_header: true,
        nm_timestamp: true,
        nm_picoseconds: true,
        dataset_class_id: Some([0x5a; 16]),
        encoding,
        fields: vec![
            BuiltinType::Boolean,
            BuiltinType::Double,
            BuiltinType::Int16,
        ],
        dsm_sequence: true,
        dsm_timestamp: true,
        dsm_picoseconds: true,
        dsm_status: true,
        config_major: Some(3),
        config_minor: Some(4),
    }
}

#[test]
fn the_writer_writes_what_the_model_writes_with_every_part_on() {
    let values = [Value::Boolean(true), Value::Double(0.5), Value::Int16(-1)];
    let publish = Publish {
        nm_sequence: 0x0102,
        dsm_sequence: 0x0304,
        timestamp: 0x0506_0708_090a_0b0c,
        picoseconds: 0x0d0e,
    };
    for encoding in [
        FieldEncoding::Variant,
        FieldEncoding::RawData,
        FieldEncoding::DataValue,
    ] {
        let config = everything(encoding);
        let w = Writer::new(config.clone()).unwrap();
        let mut out = vec![0u8; w.len() + 8];
        let n = w.encode(&publish, &values, &mut out).unwrap();
        let mut header = DataSetMessageHeader::new(encoding);
        header.sequence_number = Some(publish.dsm_sequence);
        header.timestamp = Some(publish.timestamp);
        header.picoseconds = Some(publish.picoseconds);
        header.status = Some(0);
        header.config_major = Some(3);
        header.config_minor = Some(4);
        let model = NetworkMessage {
            publisher_id: config.publisher_id.clone(),
            dataset_class_id: config.dataset_class_id,
            group_header: Some(GroupHeader {
                writer_group_id: Some(7),
                group_version: Some(0x1234_5678),
                network_message_number: Some(1),
                sequence_number: Some(publish.nm_sequence),
            }),
            dataset_writer_ids: Some(vec![9]),
            timestamp: Some(publish.timestamp),
            picoseconds: Some(publish.picoseconds),
            extended_flags1: false,
            extended_flags2: false,
            messages: vec![DataSetMessage {
                header,
                payload: Payload::KeyFrame(
                    values
                        .iter()
                        .map(|&v| match encoding {
                            FieldEncoding::Variant => Field::Variant(Some(v)),
                            FieldEncoding::RawData => Field::Raw(v),
                            FieldEncoding::DataValue => Field::DataValue(DataValue::of(v)),
                        })
                        .collect(),
                ),
            }],
        };
        assert_eq!(
            hex(&out[..n]),
            hex(&model.to_bytes().unwrap()),
            "{encoding}"
        );
        assert_eq!(
            decode_with_raw_types(&out[..n], &config.fields),
            Ok(model),
            "{encoding}"
        );
    }
}

#[test]
fn the_length_is_the_same_for_every_value() {
    let mut config = everything(FieldEncoding::RawData);
    config.fields = BuiltinType::ALL.to_vec();
    for encoding in [
        FieldEncoding::Variant,
        FieldEncoding::RawData,
        FieldEncoding::DataValue,
    ] {
        config.encoding = encoding;
        let w = Writer::new(config.clone()).unwrap();
        let zeros: Vec<Value> = config.fields.iter().map(|&t| Value::zero(t)).collect();
        let extremes: Vec<Value> = config
            .fields
            .iter()
            .map(|&t| match t {
                BuiltinType::Boolean => Value::Boolean(true),
                BuiltinType::SByte => Value::SByte(i8::MIN),
                BuiltinType::Byte => Value::Byte(u8::MAX),
                BuiltinType::Int16 => Value::Int16(i16::MIN),
                BuiltinType::UInt16 => Value::UInt16(u16::MAX),
                BuiltinType::Int32 => Value::Int32(i32::MIN),
                BuiltinType::UInt32 => Value::UInt32(u32::MAX),
                BuiltinType::Int64 => Value::Int64(i64::MIN),
                BuiltinType::UInt64 => Value::UInt64(u64::MAX),
                BuiltinType::Float => Value::Float(f32::NAN),
                BuiltinType::Double => Value::Double(f64::INFINITY),
                BuiltinType::DateTime => Value::DateTime(i64::MAX),
            })
            .collect();
        let mut out = [0u8; 512];
        let extreme = Publish {
            nm_sequence: u16::MAX,
            dsm_sequence: u16::MAX,
            timestamp: i64::MIN,
            picoseconds: u16::MAX,
        };
        assert_eq!(w.encode(&Publish::default(), &zeros, &mut out), Ok(w.len()));
        assert_eq!(w.encode(&extreme, &extremes, &mut out), Ok(w.len()));
        assert!(!w.is_empty());
    }
    // NetworkMessage header: flags 1 + 1, PublisherId 4 + 6, DataSetClassId
    // 16, GroupHeader 1 + 2 + 4 + 2 + 2, PayloadHeader 1 + 2, Timestamp 8,
    // PicoSeconds 2 = 52; DataSetMessage header 1 + 1 + 2 + 8 + 2 + 2 + 4 + 4
    // = 24; the twelve raw values 51.
    config.encoding = FieldEncoding::RawData;
    assert_eq!(Writer::new(config).unwrap().len(), 52 + 24 + 51);
}

#[test]
fn the_configuration_version_is_the_fnv1a_hash_of_the_type_ids() {
    use BuiltinType::*;
    // FNV-1a 32 of the ids, one byte each: DateTime 13, Int32 6, Int64 8,
    // Boolean 1, UInt32 7.
    assert_eq!(
        configuration_version(&[DateTime]),
        (0x080c_61d8, 0x080c_61d8)
    );
    assert_eq!(
        configuration_version(&[DateTime, Int32, Int64, Boolean]),
        (0x866f_1455, 0x866f_1455)
    );
    assert_eq!(configuration_version(&[UInt32; 10]).0, 0x8b0a_0bdb);
    // The order counts; no field is the offset basis.
    assert_eq!(configuration_version(&[Boolean, DateTime]).0, 0xe074_0c13);
    assert_eq!(configuration_version(&[DateTime, Boolean]).0, 0x847e_089b);
    assert_eq!(configuration_version(&[]).0, 0x811c_9dc5);
}
