use super::wire::{change_value, marker_bits};
use super::*;
use jitterlab_core::roundtrip::Direction;
use jitterlab_core::uadp::{BuiltinType, Value};

#[test]
fn consecutive_changes_always_carry_different_markers() {
    for ty in [
        BuiltinType::Boolean,
        BuiltinType::Byte,
        BuiltinType::UInt32,
        BuiltinType::Double,
        BuiltinType::DateTime,
    ] {
        let a = change_value(ty, 1, 1_700_000_000_000_000_000);
        let b = change_value(ty, 2, 1_700_000_000_000_500_000);
        assert_eq!(a.ty(), ty);
        assert_ne!(marker_bits(&a), marker_bits(&b), "{}", ty.name());
    }
    // A DateTime marker is the instant of the change in OPC UA ticks.
    assert_eq!(
        change_value(BuiltinType::DateTime, 7, 0),
        Value::DateTime(116_444_736_000_000_000)
    );
}

#[test]
fn the_default_wires_are_the_tutorials_identities_one_port_apart() {
    let (input, output) = wires(&RoundtripParams::default()).unwrap();
    assert_eq!(input.writer.len(), output.writer.len());
    assert_eq!(input.marker_type, BuiltinType::DateTime);
    assert_eq!(
        input.address,
        Address::parse("opc.udp://224.0.0.22:4840").unwrap()
    );
    assert_eq!(
        output.address,
        Address::parse("opc.udp://224.0.0.22:4841").unwrap()
    );
}

#[test]
fn bad_wire_settings_name_the_flag() {
    let with = |f: &dyn Fn(&mut RoundtripParams)| {
        let mut p = RoundtripParams::default();
        f(&mut p);
        wires(&p).unwrap_err().to_string()
    };
    assert_eq!(
        with(&|p| p.input.publisher_id = "uint128:1".into()),
        format!(
            "--input-publisher-id: {}",
            jitterlab_core::uadp::PublisherId::parse("uint128:1").unwrap_err()
        )
    );
    assert_eq!(
        with(&|p| p.output.encoding = "json".into()),
        "--output-encoding \"json\": use variant, rawdata or datavalue"
    );
    assert_eq!(
        with(&|p| p.output.url = Some("opc.eth://01-00-5E-00-00-02".into())),
        "--output-url opc.eth://01-00-5E-00-00-02 does not fit --transport udp; give an opc.udp:// address"
    );
    assert_eq!(
        with(&|p| p.output.fields = vec!["uint32".into()]),
        "--map: input field 0 is a datetime and output field 0 a uint32; the controller copies one to the other, so give fields of one type"
    );
    assert_eq!(
        with(&|p| p.input.marker_field = 3),
        "--map: the input has 1 field(s); field 3 does not exist"
    );
    let d = Direction::input();
    assert_eq!(d.publisher_id, "uint16:2234");
}

#[test]
fn a_reader_of_the_tutorial_publisher_accepts_what_the_io_simulator_publishes() {
    use jitterlab_core::uadp::{Publish, Reader, ReaderConfig};
    let (input, _) = wires(&RoundtripParams::default()).unwrap();
    let tutorial = Reader::new(ReaderConfig::tutorial());
    let mut buf = [0u8; 256];
    let mut lens = Vec::new();
    for (k, t1) in [
        (1u64, 1_700_000_000_000_000_000u64),
        (2, 1_700_000_000_000_600_000),
    ] {
        let v = change_value(input.marker_type, k, t1);
        let n = input
            .writer
            .encode(
                &Publish {
                    nm_sequence: k as u16,
                    dsm_sequence: k as u16,
                    timestamp: 0,
                    picoseconds: 0,
                },
                &[v],
                &mut buf,
            )
            .unwrap();
        lens.push(n);
        let mut got = [Value::Boolean(false)];
        let a = tutorial.accept(&buf[..n], &mut got).unwrap();
        assert_eq!(got[0], v);
        assert_eq!(a.nm_sequence, Some(k as u16));
    }
    // A byte-stable layout: every message of a configuration is as long.
    assert_eq!(lens[0], lens[1]);
    assert_eq!(lens[0], input.writer.len());
    // The controller's messages differ from the simulator's only by their
    // PublisherId, which a tutorial subscriber refuses.
    let (_, output) = wires(&RoundtripParams::default()).unwrap();
    let n = output
        .writer
        .encode(
            &Publish {
                nm_sequence: 0,
                dsm_sequence: 0,
                timestamp: 0,
                picoseconds: 0,
            },
            &[Value::DateTime(5)],
            &mut buf,
        )
        .unwrap();
    assert_eq!(n, lens[0]);
    let mut got = [Value::Boolean(false)];
    assert!(matches!(
        tutorial.accept(&buf[..n], &mut got),
        Err(jitterlab_core::uadp::Reject::NotOurs(_))
    ));
}

/// The UDP payloads of a capture of `tests/fixtures/uadp/` (Ethernet,
/// IPv4, UDP).
fn captured(pcap: &[u8]) -> Vec<Vec<u8>> {
    let mut r = pcap_file::pcap::PcapReader::new(pcap).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet() {
        let f = p.unwrap().data;
        let ip = &f[14..];
        let udp = &ip[usize::from(ip[0] & 0x0f) * 4..];
        out.push(udp[8..].to_vec());
    }
    out
}

const RT_LEVEL_UDP: &[u8] = include_bytes!("../../../tests/fixtures/uadp/rt_level_udp.pcap");
const TUTORIAL_UDP: &[u8] = include_bytes!("../../../tests/fixtures/uadp/tutorial_udp.pcap");

fn input_wire(change: impl FnOnce(&mut Direction)) -> super::wire::Wire {
    let mut p = RoundtripParams::default();
    change(&mut p.input);
    // The controller copies the marker into a field of its type.
    p.output.fields = vec![p.input.fields[p.input.marker_field].clone()];
    wires(&p).unwrap().0
}

#[test]
fn the_header_flags_reach_the_reference_fixed_size_layout_byte_for_byte() {
    use jitterlab_core::uadp::Publish;
    // --input-fields uint32×10 --input-encoding rawdata
    // --input-header nm-sequence,dsm-sequence
    let w = input_wire(|d| {
        d.fields = vec!["uint32".into(); 10];
        d.encoding = "rawdata".into();
        d.header = vec!["nm-sequence".into(), "dsm-sequence".into()];
    });
    assert_eq!(w.writer.len(), 55);
    let messages = captured(RT_LEVEL_UDP);
    assert_eq!(messages.len(), 30);
    let mut out = [0u8; 55];
    for (i, m) in messages.iter().enumerate() {
        let values: Vec<Value> = m[15..]
            .chunks(4)
            .map(|b| Value::UInt32(u32::from_le_bytes(b.try_into().unwrap())))
            .collect();
        // The I/O simulator numbers both sequences alike, as the reference.
        let seq = i as u16;
        let publish = Publish {
            nm_sequence: seq,
            dsm_sequence: seq,
            ..Publish::default()
        };
        assert_eq!(w.writer.encode(&publish, &values, &mut out), Ok(55));
        assert_eq!(&out[..], &m[..], "message {i}");
    }
}

#[test]
fn the_tutorial_header_gives_the_captured_layout_with_the_derived_version() {
    use jitterlab_core::uadp::{configuration_version, Publish};
    // --input-header timestamp,config-version: the tutorial publisher's
    // parts; only the version differs (the reference's comes from its start
    // time, ours from the field list).
    let w = input_wire(|d| d.header = vec!["timestamp".into(), "config-version".into()]);
    let (major, minor) = configuration_version(&[BuiltinType::DateTime]);
    assert_eq!((major, minor), (0x080c_61d8, 0x080c_61d8));
    let mut out = [0u8; 39];
    for m in captured(TUTORIAL_UDP) {
        let ts = i64::from_le_bytes(m[12..20].try_into().unwrap());
        let dt = i64::from_le_bytes(m[31..39].try_into().unwrap());
        let publish = Publish {
            timestamp: ts,
            ..Publish::default()
        };
        let n = w
            .writer
            .encode(&publish, &[Value::DateTime(dt)], &mut out)
            .unwrap();
        let mut want = m.clone();
        want[20..24].copy_from_slice(&major.to_le_bytes());
        want[24..28].copy_from_slice(&minor.to_le_bytes());
        assert_eq!(&out[..n], &want[..]);
    }
    // By default: the NetworkMessage sequence number too (group flags 09).
    let d = input_wire(|_| {});
    assert_eq!(d.writer.len(), 41);
    let c = d.writer.config();
    assert!(c.nm_sequence && !c.dsm_sequence && c.dsm_timestamp);
    assert_eq!((c.config_major, c.config_minor), (Some(major), Some(minor)));
    // `none`: no optional part.
    let c = input_wire(|d| d.header = vec!["none".into()]);
    let c = c.writer.config();
    assert!(!c.nm_sequence && !c.dsm_sequence && !c.dsm_timestamp);
    assert_eq!(c.config_major, None);
}

#[test]
fn an_unknown_header_part_names_the_flag_and_the_parts() {
    let mut p = RoundtripParams::default();
    p.output.header = vec!["nm-sequence".into(), "crc".into()];
    assert_eq!(
        wires(&p).unwrap_err().to_string(),
        "--output-header: unknown part \"crc\": give a list of nm-sequence, dsm-sequence, timestamp, config-version, or none"
    );
}

#[test]
fn the_stock_tutorial_subscriber_takes_the_io_simulator_with_its_four_fields_only() {
    use jitterlab_core::uadp::{Publish, Reader, ReaderConfig, Reject, RejectClass};
    let stock = Reader::new(ReaderConfig::tutorial_subscriber());
    let mut buf = [0u8; 256];
    let mut got = [Value::Boolean(false); 4];
    let publish = Publish::default();
    // The defaults: one DateTime, refused as another field list.
    let w = input_wire(|_| {});
    let n = w
        .writer
        .encode(&publish, &[Value::DateTime(7)], &mut buf)
        .unwrap();
    let r = stock.accept(&buf[..n], &mut got).unwrap_err();
    assert_eq!(r.class(), RejectClass::FieldList);
    assert!(matches!(r, Reject::FieldMismatch(_)));
    // --input-fields datetime,int32,int64,boolean: accepted.
    let w = input_wire(|d| {
        d.fields = ["datetime", "int32", "int64", "boolean"]
            .map(String::from)
            .to_vec();
    });
    let values = [
        Value::DateTime(7),
        Value::Int32(0),
        Value::Int64(0),
        Value::Boolean(false),
    ];
    let n = w.writer.encode(&publish, &values, &mut buf).unwrap();
    assert_eq!(stock.accept(&buf[..n], &mut got).unwrap().fields, 4);
    assert_eq!(got, values);
}

#[test]
fn refused_messages_are_counted_by_reason_under_these_json_names() {
    use super::wire::RxCounts;
    use jitterlab_core::roundtrip::SequenceCounts;
    use jitterlab_core::uadp::{Accepted, FieldMismatch, NotOurs, Reject, Unsupported};
    let mut rx = RxCounts::default();
    let mut seq = SequenceCounts::default();
    for r in [
        Reject::Malformed {
            offset: 3,
            what: "cut",
        },
        Reject::FieldMismatch(FieldMismatch::Count {
            expected: 4,
            got: 1,
        }),
        Reject::FieldMismatch(FieldMismatch::Count {
            expected: 4,
            got: 1,
        }),
        Reject::Unsupported(Unsupported::Security),
        Reject::NotOurs(NotOurs::PublisherId),
        Reject::NotOurs(NotOurs::PublisherIdType {
            expected: 1,
            got: 2,
        }),
        Reject::NotOurs(NotOurs::WriterGroup {
            expected: 100,
            got: 1,
        }),
        Reject::NotOurs(NotOurs::DataSetWriter { expected: 62541 }),
        Reject::Invalid,
    ] {
        rx.reject(&r);
    }
    // Accepted: numbered by the NetworkMessage, by the DataSetMessage
    // only, and not at all (taken, and its loss not countable).
    let nm = Accepted {
        nm_sequence: Some(1),
        ..Accepted::default()
    };
    let dsm = Accepted {
        dsm_sequence: Some(3),
        ..Accepted::default()
    };
    assert!(rx.accepted(&nm, &mut seq));
    assert!(rx.accepted(&dsm, &mut seq));
    assert!(rx.accepted(&Accepted::default(), &mut seq));
    // A duplicate number is counted and not taken.
    assert!(!rx.accepted(&dsm, &mut seq));
    assert_eq!(
        (seq.received, seq.lost, seq.gaps, seq.duplicates),
        (3, 1, 1, 1)
    );
    assert_eq!(
        serde_json::to_value(rx).unwrap(),
        serde_json::json!({
            "accepted": 4,
            "without_sequence": 1,
            "malformed": 1,
            "field_list_differs": 2,
            "unsupported": 1,
            "not_ours": 4,
            "not_ours_publisher_id": 2,
            "not_ours_writer_group": 1,
            "not_ours_dataset_writer": 1,
            "skipped": 1,
            "other_frames": 0,
            "errors": 0,
        })
    );
}
