use super::*;
use crate::spec::testing::IDLE;
use crate::spec::Spec;

fn parse_on(text: &str) -> Result<Spec, String> {
    crate::spec::testing::parse_on(text, "0-1", IDLE).map_err(|e| e.to_string())
}

fn probe(body: &str) -> String {
    format!("duration = \"10s\"\n[[probe]]\nkind = \"sleep\"\n{body}")
}

#[test]
fn a_sleep_probe_takes_its_two_keys_and_defaults() {
    let s = parse_on(&probe("")).unwrap();
    assert_eq!(s.probes[0].period_ns, 1_000_000);
    assert_eq!(
        s.probes[0].params.get::<SleepParams>(),
        Some(&SleepParams::default())
    );
    let s = parse_on(&probe("slack = \"50us\"\nspin = true\n")).unwrap();
    assert_eq!(
        s.probes[0].params.get::<SleepParams>(),
        Some(&SleepParams {
            slack_ns: 50_000,
            spin: true
        })
    );
}

#[test]
fn a_bad_sleep_key_is_named_with_what_to_fix() {
    for (body, message) in [
        (
            "slack = \"1ms\"\n",
            "bench.toml:4: probe[0].slack: must be shorter than the sleep's period (1ms), not 1ms",
        ),
        (
            "slack = \"soon\"\n",
            "bench.toml:4: probe[0].slack: \"soon\" is not a number with a unit (e.g. 1ms, 1.5ms, 48h)",
        ),
        (
            "spin = \"yes\"\n",
            "bench.toml:4: probe[0].spin: invalid type: string \"yes\", expected a boolean",
        ),
    ] {
        assert_eq!(parse_on(&probe(body)).unwrap_err(), message, "{body}");
    }
    assert_eq!(
        parse_on("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nspin = true\n").unwrap_err(),
        "bench.toml:4: probe[0].spin: spin applies only to kind = \"sleep\"; remove it from this cyclic probe"
    );
}

#[test]
fn the_stored_entries_are_written_only_when_set_and_read_back() {
    assert!(SleepParams::default().wire().is_empty());
    let p = SleepParams {
        slack_ns: 50_000,
        spin: true,
    };
    assert_eq!(
        p.wire(),
        [
            ("slack_ns", Ordered::U64(50_000)),
            ("spin", Ordered::Bool(true))
        ]
    );
    let mut m = serde_json::json!({"slack_ns": 50_000, "spin": true, "other": 1});
    let read = (PARAMS.read)(ProbeKind::Sleep, m.as_object_mut().unwrap()).unwrap();
    assert_eq!(read.get::<SleepParams>(), Some(&p));
    assert_eq!(m, serde_json::json!({"other": 1}));
    let mut old = serde_json::Map::new();
    let read = (PARAMS.read)(ProbeKind::Sleep, &mut old).unwrap();
    assert_eq!(read.get::<SleepParams>(), Some(&SleepParams::default()));
}

#[test]
fn given_values_are_read_by_the_same_check_as_a_spec_s_keys() {
    use crate::spec::{Given, GivenValues, KindTable};
    let given = |values: &[(&'static str, Given)]| {
        let values: GivenValues = values.iter().cloned().collect();
        KindTable::given(ProbeKind::Sleep, &values, 1_000_000)
            .unwrap()
            .get::<SleepParams>()
            .cloned()
    };
    assert_eq!(given(&[]), Some(SleepParams::default()));
    assert_eq!(
        given(&[("slack", Given::Num(50_000)), ("spin", Given::Bool(true))]),
        Some(SleepParams {
            slack_ns: 50_000,
            spin: true
        })
    );
    // A value of another type is no value of the key: its default.
    assert_eq!(
        given(&[("slack", Given::Bool(true))]),
        Some(SleepParams::default())
    );
}
