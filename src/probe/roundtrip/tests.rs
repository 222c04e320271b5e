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
fn the_reference_tutorial_subscriber_accepts_what_the_io_simulator_publishes() {
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
