//! The tests of spec parsing, checking and planning, in one file beside
//! the module so the production files stay short; they drive the public
//! [`parse`] entry point and the plan of the result, as callers do.

use super::check::parse_khz;
use super::*;
use crate::resctrl::{CacheMask, Resource};
use crate::result::ProbeKind;

const BUILTINS: &[&str] = &[
    "idle",
    "cpu",
    "disk",
    "usb",
    "network",
    "scheduling",
    "misc",
    "codesys",
];

fn parse_on(text: &str, online: &str) -> Result<Spec, SpecError> {
    super::testing::parse_on(text, online, BUILTINS)
}

fn ok(text: &str) -> Spec {
    super::testing::ok(text, BUILTINS)
}

fn err(text: &str) -> String {
    super::testing::err(text, BUILTINS)
}

const PROBE: &str = "[[probe]]\nkind = \"cyclic\"\n";

/// `duration = "10s"`, then `body`, then a cyclic probe.
fn with(body: &str) -> String {
    format!("duration = \"10s\"\n{body}{PROBE}")
}

#[test]
fn configuration_settings_parse_and_are_checked() {
    let s = ok(&with(
        "[[configuration]]\nname = \"p\"\nirq_cpus = \"0\"\ngovernor = \"performance\"\ntimer_migration = false\nrt_runtime_us = -1\n",
    ));
    assert_eq!(
        s.configurations[0].settings,
        ConfigSettings {
            cache: vec![],
            cache_default: None,
            irq_cpus: Some(vec![0]),
            governor: Some("performance".into()),
            timer_migration: Some(false),
            rt_runtime_us: Some(-1),
            ..ConfigSettings::default()
        }
    );
    assert!(s.warnings.is_empty(), "{:?}", s.warnings);
    assert_eq!(
        err(&with("[[configuration]]\nname = \"p\"\nirq_cpus = \"7\"\n")),
        "bench.toml:4: configuration[0].irq_cpus: CPU 7 is not online (online CPUs: 0-1)"
    );
    assert_eq!(
        err(&with("[[configuration]]\nname = \"p\"\ngovernor = \"../x\"\n")),
        "bench.toml:4: configuration[0].governor: governor \"../x\" is not a cpufreq governor name (e.g. performance, schedutil)"
    );
    assert_eq!(
        err(&with(
            "[[configuration]]\nname = \"p\"\nrt_runtime_us = -2\n"
        )),
        "bench.toml:4: configuration[0].rt_runtime_us: -2 is out of range -1..=2147483647"
    );
    // IRQs on the probe CPU: allowed on small machines, with a warning.
    let s = ok(&with("[[configuration]]\nname = \"p\"\nirq_cpus = \"1\"\n"));
    assert_eq!(
        s.warnings,
        vec![
            "configuration p: irq_cpus includes probe CPU 1; interrupts will still reach the probe"
        ]
    );
}

#[test]
fn frequencies_and_fair_server_runtime_parse_exactly() {
    let s = ok(&with(
        "[[configuration]]\nname = \"p\"\nmin_freq = \"2.4GHz\"\nmax_freq = \"3600 MHz\"\nfair_server_runtime = \"40ms\"\n",
    ));
    assert_eq!(
        s.configurations[0].settings,
        ConfigSettings {
            min_freq_khz: Some(2_400_000),
            max_freq_khz: Some(3_600_000),
            fair_server_runtime_ns: Some(40_000_000),
            ..ConfigSettings::default()
        }
    );
    let s = ok(&with(
        "[[configuration]]\nname = \"p\"\nmax_freq = \"800000kHz\"\nfair_server_runtime = \"0ns\"\n",
    ));
    assert_eq!(
        s.configurations[0].settings,
        ConfigSettings {
            max_freq_khz: Some(800_000),
            fair_server_runtime_ns: Some(0),
            ..ConfigSettings::default()
        }
    );
    assert_eq!(parse_khz("1.5ghz"), Ok(1_500_000));
    assert_eq!(parse_khz("0.8 GHz"), Ok(800_000));
    assert_eq!(parse_khz(".5MHz"), Ok(500));
    let freq = |v: &str| {
        err(&with(&format!(
            "[[configuration]]\nname = \"p\"\nmin_freq = \"{v}\"\n"
        )))
    };
    for (value, message) in [
        (
            "2.4",
            "\"2.4\" has no unit; add kHz, MHz or GHz (e.g. 2.4MHz)",
        ),
        (
            "2.4Hz",
            "\"2.4Hz\" has unknown unit \"Hz\"; use kHz, MHz or GHz",
        ),
        ("fast", "\"fast\" is not a frequency (e.g. 800MHz, 2.4GHz)"),
        (
            "1.2.3GHz",
            "\"1.2.3GHz\" is not a frequency (e.g. 800MHz, 2.4GHz)",
        ),
        ("-1GHz", "\"-1GHz\" is negative; give a frequency above 0"),
        (
            "1.5kHz",
            "\"1.5kHz\" is finer than 1 kHz, the resolution of cpufreq",
        ),
        ("0GHz", "\"0GHz\" is zero; give a frequency above 0"),
        (
            "",
            "empty frequency; give a number with a unit, e.g. 2.4GHz",
        ),
        (
            "99999999999999999999GHz",
            "\"99999999999999999999GHz\" is too large",
        ),
    ] {
        assert_eq!(
            freq(value),
            format!("bench.toml:4: configuration[0].min_freq: {message}"),
            "{value}"
        );
    }
    assert_eq!(
        err(&with(
            "[[configuration]]\nname = \"p\"\nmin_freq = \"3GHz\"\nmax_freq = \"2GHz\"\n"
        )),
        "bench.toml:4: configuration[0].min_freq: min_freq (3000000 kHz) is above max_freq (2000000 kHz); lower min_freq or raise max_freq"
    );
    assert_eq!(
        err(&with("[[configuration]]\nname = \"p\"\nmax_freq = 2400\n")),
        "bench.toml:4: configuration[0].max_freq: invalid type: integer `2400`, expected a string"
    );
    assert_eq!(
        err(&with(
            "[[configuration]]\nname = \"p\"\nfair_server_runtime = \"50\"\n"
        )),
        "bench.toml:4: configuration[0].fair_server_runtime: \"50\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. 50us)"
    );
}

#[test]
fn minimal_spec_gets_every_default() {
    let s = ok(&with(""));
    assert_eq!(
        s,
        Spec {
            name: "bench".into(),
            duration_ns: 10_000_000_000,
            warmup_ns: 2_000_000_000,
            repetitions: 1,
            deployments: vec!["host".into()],
            baseline: "default".into(),
            configurations: vec![Configuration {
                name: "default".into(),
                probe_cpus: vec![1],
                neighbour_cpus: vec![0],
                policy: Policy::Fifo,
                priority: Some(95),
                nice: None,
                dma_latency: true,
                settings: ConfigSettings::default(),
            }],
            scenarios: vec![Scenario {
                name: "idle".into(),
                builtin: Some("idle".into()),
                cpus: None,
                usb_path: None,
                rps_cpus: None,
                neighbours: vec![],
            }],
            probes: vec![ProbeSpec {
                name: "cyclic".into(),
                period_ns: 1_000_000,
                threshold_ns: None,
                window_ns: 1_000_000_000,
                outliers: 20,
                max_latency_ns: None,
                max_jitter_ns: None,
                max_exec_ns: None,
                params: ProbeParams::new(crate::cyclic::CyclicParams {
                    scan_ns: 100_000,
                    working_set_bytes: 256 << 10,
                    explain: false,
                }),
                scope: ProbeScope::default(),
            }],
            warnings: vec![],
        }
    );
}

#[test]
fn full_spec_keeps_every_value() {
    let s = ok(r#"
name = "full"
duration = "1m"
warmup = "0"
repetitions = 3
deployments = ["host"]
baseline = "rt"

[[configuration]]
name = "plain"
probe_cpus = "1"
neighbour_cpus = "0"
policy = "other"
nice = -5
dma_latency = false

[[configuration]]
name = "rt"
probe_cpus = "1"
policy = "rr"
priority = 80

[[scenario]]
name = "net"
builtin = "network"
rps_cpus = "0"

[[scenario]]
name = "usb-and-more"
builtin = "usb"
usb_path = "/media/usb"
cpus = "0"
[[scenario.neighbour]]
command = ["/usr/bin/stress-ng", "--cpu", "1"]
[[scenario.neighbour]]
name = "hog"
command = ["hackbench"]
cpus = "0"

[[probe]]
kind = "wakeup"
name = "timer"
period = "250us"
threshold = "100us"
window = "500ms"
outliers = 0
max_latency = "200us"
max_jitter = "150us"

[[probe]]
kind = "cyclic"
period = "4ms"
scan = "500us"
working_set = "1MiB"
max_exec = "1ms"
"#);
    assert_eq!(
        (s.name.as_str(), s.duration_ns, s.warmup_ns, s.repetitions),
        ("full", 60_000_000_000, 0, 3)
    );
    assert_eq!(s.baseline, "rt");
    assert_eq!(
        s.configurations,
        [
            Configuration {
                name: "plain".into(),
                probe_cpus: vec![1],
                neighbour_cpus: vec![0],
                policy: Policy::Other,
                priority: None,
                nice: Some(-5),
                dma_latency: false,
                settings: ConfigSettings::default(),
            },
            Configuration {
                name: "rt".into(),
                probe_cpus: vec![1],
                neighbour_cpus: vec![0],
                policy: Policy::RoundRobin,
                priority: Some(80),
                nice: None,
                dma_latency: true,
                settings: ConfigSettings::default(),
            },
        ]
    );
    assert_eq!(
        s.scenarios,
        [
            Scenario {
                name: "net".into(),
                builtin: Some("network".into()),
                cpus: None,
                usb_path: None,
                rps_cpus: Some(vec![0]),
                neighbours: vec![],
            },
            Scenario {
                name: "usb-and-more".into(),
                builtin: Some("usb".into()),
                cpus: Some(vec![0]),
                usb_path: Some("/media/usb".into()),
                rps_cpus: None,
                neighbours: vec![
                    CommandSpec {
                        name: "stress-ng".into(),
                        argv: vec!["/usr/bin/stress-ng".into(), "--cpu".into(), "1".into()],
                        cpus: None,
                    },
                    CommandSpec {
                        name: "hog".into(),
                        argv: vec!["hackbench".into()],
                        cpus: Some(vec![0]),
                    },
                ],
            },
        ]
    );
    assert_eq!(
        s.probes,
        [
            ProbeSpec {
                name: "timer".into(),
                period_ns: 250_000,
                threshold_ns: Some(100_000),
                window_ns: 500_000_000,
                outliers: 0,
                max_latency_ns: Some(200_000),
                max_jitter_ns: Some(150_000),
                max_exec_ns: None,
                params: ProbeParams::new(crate::wakeup::WakeupParams::default()),
                scope: ProbeScope::default(),
            },
            ProbeSpec {
                name: "cyclic".into(),
                period_ns: 4_000_000,
                threshold_ns: None,
                window_ns: 1_000_000_000,
                outliers: 20,
                max_latency_ns: None,
                max_jitter_ns: None,
                max_exec_ns: Some(1_000_000),
                params: ProbeParams::new(crate::cyclic::CyclicParams {
                    scan_ns: 500_000,
                    working_set_bytes: 1 << 20,
                    explain: false,
                }),
                scope: ProbeScope::default(),
            },
        ]
    );
    assert_eq!(s.warnings, Vec::<String>::new());
    assert_eq!(s.cells().len(), 3 * 2 * 2 * 2);
}

#[test]
fn spec_serializes_for_the_store() {
    let s = ok("name = \"j\"\nduration = \"1s\"\nwarmup = \"0\"\n[[probe]]\nkind = \"wakeup\"\n");
    assert_eq!(
        serde_json::to_string(&s).unwrap(),
        concat!(
            r#"{"name":"j","duration_ns":1000000000,"warmup_ns":0,"repetitions":1,"#,
            r#""deployments":["host"],"baseline":"default","#,
            r#""configurations":[{"name":"default","probe_cpus":[1],"neighbour_cpus":[0],"#,
            r#""policy":"fifo","priority":95,"nice":null,"dma_latency":true,"#,
            r#""settings":{"irq_cpus":null,"governor":null,"timer_migration":null,"rt_runtime_us":null,"#,
            r#""min_freq_khz":null,"max_freq_khz":null,"fair_server_runtime_ns":null}}],"#,
            r#""scenarios":[{"name":"idle","builtin":"idle","cpus":null,"usb_path":null,"#,
            r#""rps_cpus":null,"neighbours":[]}],"#,
            r#""probes":[{"name":"wakeup","kind":"wakeup","period_ns":1000000,"scan_ns":0,"#,
            r#""working_set_bytes":0,"threshold_ns":null,"window_ns":1000000000,"outliers":20,"#,
            r#""max_latency_ns":null,"max_jitter_ns":null,"max_exec_ns":null}],"warnings":[]}"#
        )
    );
    let back: Spec = serde_json::from_str(&serde_json::to_string(&s).unwrap()).unwrap();
    assert_eq!(back, s);
    // Settings stored before the frequency and fair-server keys existed.
    let old: ConfigSettings = serde_json::from_str(
        r#"{"irq_cpus":[0],"governor":null,"timer_migration":null,"rt_runtime_us":null}"#,
    )
    .unwrap();
    assert_eq!(
        old,
        ConfigSettings {
            irq_cpus: Some(vec![0]),
            ..ConfigSettings::default()
        }
    );
}

/// Every kind's keys as a bench has always stored them: the flat object,
/// `scan_ns` and `working_set_bytes` on every probe, the other kinds' keys
/// only when set; and the same values back.
#[test]
fn every_kind_serializes_as_stored_and_back() {
    let s = ok(concat!(
        "duration = \"1s\"\n",
        "[[configuration]]\nname = \"rr\"\npolicy = \"rr\"\npriority = 5\n",
        "[[probe]]\nkind = \"cyclic\"\nscan = \"300us\"\nworking_set = \"1MiB\"\nmax_exec = \"1ms\"\n",
        "[[probe]]\nkind = \"chase\"\nbuffer = \"1MiB\"\niterations = 100\nsamples = 50\n",
        "[[probe]]\nkind = \"chase\"\nname = \"c2\"\n",
        "[[probe]]\nkind = \"response\"\nsource = \"eventfd\"\nevent_cpu = \"0\"\n",
        "[[probe]]\nkind = \"response\"\nname = \"r2\"\n",
        "[[probe]]\nkind = \"ctxswitch\"\n",
        "[[probe]]\nkind = \"timerlat\"\nthreshold = \"20us\"\n",
    ));
    let json = serde_json::to_value(&s).unwrap();
    assert_eq!(json["configurations"][0]["policy"], "rr");
    let common = |name: &str, kind: &str| {
        serde_json::json!({
            "name": name, "kind": kind, "period_ns": 1_000_000, "scan_ns": 0,
            "working_set_bytes": 0, "threshold_ns": null, "window_ns": 1_000_000_000,
            "outliers": 20, "max_latency_ns": null, "max_jitter_ns": null, "max_exec_ns": null,
        })
    };
    let with = |mut v: serde_json::Value, extra: serde_json::Value| {
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    assert_eq!(
        json["probes"],
        serde_json::json!([
            with(
                common("cyclic", "cyclic"),
                serde_json::json!({"scan_ns": 300_000, "working_set_bytes": 1 << 20, "max_exec_ns": 1_000_000})
            ),
            with(
                common("chase", "chase"),
                serde_json::json!({"buffer_bytes": 1 << 20, "iterations": 100, "samples": 50})
            ),
            common("c2", "chase"),
            with(
                common("response", "response"),
                serde_json::json!({"source": "eventfd", "event_cpu": 0})
            ),
            common("r2", "response"),
            common("ctxswitch", "ctxswitch"),
            with(
                common("timerlat", "timerlat"),
                serde_json::json!({"threshold_ns": 20_000})
            ),
        ])
    );
    let back: Spec = serde_json::from_value(json).unwrap();
    assert_eq!(back, s);
}

/// What a spec file cannot say but `jitterlab run` can (a chase length, a
/// timerlat on every probe CPU) is stored only when it is not the default,
/// and read back; a key of another kind is refused.
#[test]
fn run_only_parameters_round_trip() {
    let chase = ProbeSpec {
        name: "chase".into(),
        period_ns: 0,
        threshold_ns: Some(100_000),
        window_ns: 1_000_000_000,
        outliers: 20,
        max_latency_ns: None,
        max_jitter_ns: None,
        max_exec_ns: None,
        params: ProbeParams::new(crate::chase::ChaseParams {
            buffer_bytes: None,
            iterations: Some(100),
            samples: None,
            chase_length: 512,
        }),
        scope: ProbeScope::default(),
    };
    let timerlat = ProbeSpec {
        name: "timerlat".into(),
        params: ProbeParams::new(crate::timerlat::TimerlatParams {
            user_threads: true,
            every_probe_cpu: true,
        }),
        ..chase.clone()
    };
    for p in [&chase, &timerlat] {
        let json = serde_json::to_value(p).unwrap();
        assert_eq!(&serde_json::from_value::<ProbeSpec>(json).unwrap(), p);
    }
    let json = serde_json::to_value(&chase).unwrap();
    assert_eq!(json["chase_length"], 512);
    assert_eq!(json["iterations"], 100);
    let json = serde_json::to_value(&timerlat).unwrap();
    assert_eq!(
        (&json["user_threads"], &json["every_probe_cpu"]),
        (&true.into(), &true.into())
    );
    let mut wrong = serde_json::to_value(&chase).unwrap();
    wrong["source"] = "udp".into();
    assert_eq!(
        serde_json::from_value::<ProbeSpec>(wrong)
            .unwrap_err()
            .to_string(),
        "source does not apply to a chase probe"
    );
}

#[test]
fn name_defaults_to_the_file_stem() {
    let online = CpuList::parse("0-1").unwrap();
    let ctx = SpecContext {
        online: &online,
        builtins: BUILTINS,
    };
    let s = parse(&with(""), "specs/table10.toml", &ctx).unwrap();
    assert_eq!(s.name, "table10");
}

#[test]
fn syntax_error_names_the_line() {
    assert_eq!(
        err("duration = \"10s\"\nwarmup = \"2s\n[[probe]]\nkind = \"cyclic\"\n"),
        "bench.toml:2: invalid basic string, expected `\"`"
    );
    assert_eq!(
        err("duration = \"10s\"\nduration = \"20s\"\n"),
        "bench.toml:2: duplicate key"
    );
}

#[test]
fn unknown_key_names_its_path() {
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\npriorty = 3\n")),
        "bench.toml:4: configuration[0].priorty: unknown key `priorty`, expected one of `name`, `probe_cpus`, `neighbour_cpus`, `policy`, `priority`, `nice`, `dma_latency`, `cache`, `cache_default`, `irq_cpus`, `governor`, `timer_migration`, `rt_runtime_us`, `min_freq`, `max_freq`, `fair_server_runtime`"
    );
    assert_eq!(
        err(&with("colour = \"red\"\n")),
        "bench.toml:2: colour: unknown key `colour`, expected one of `name`, `duration`, `warmup`, `repetitions`, `deployments`, `baseline`, `configuration`, `scenario`, `probe`"
    );
    // The test-only probe's keys come last of the kinds' (its kind last).
    let sleep = match cfg!(feature = "test-probe") {
        true => "`slack`, `spin`, ",
        false => "",
    };
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\n[[probe]]\nkind = \"wakeup\"\nscam = \"1us\"\n"),
        format!("bench.toml:6: probe[1].scam: unknown key `scam`, expected one of `kind`, `name`, `period`, `scan`, `working_set`, `explain`, `threshold`, `window`, `outliers`, `max_latency`, `max_jitter`, `max_exec`, `buffer`, `iterations`, `samples`, `source`, `event_cpu`, `io_period`, `network_budget`, `opcua`, `budget`, `transport`, `io_cpu`, `cns`, `chaining`, `wait`, `response_timeout`, `out_bytes`, `in_bytes`, `cn_cpu`, `max_late_cycles`, `max_missed_pres`, `pid`, `tid`, `comm`, `command`, {sleep}`scenarios`, `duration`")
    );
}

#[test]
fn type_errors_name_their_path() {
    assert_eq!(
        err(&with("repetitions = \"one\"\n")),
        "bench.toml:2: repetitions: invalid type: string \"one\", expected an integer"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\n[[scenario.neighbour]]\ncommand = [\"a\", 3]\n")),
        "bench.toml:6: scenario[0].neighbour[0].command[1]: invalid type: integer `3`, expected a string"
    );
    assert_eq!(
        err(&with("[configuration]\nname = \"a\"\n")),
        "bench.toml:2: configuration: invalid type: table, expected an array; write [[configuration]] with double brackets"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\n[scenario.neighbour]\ncommand = [\"a\"]\n")),
        "bench.toml:4: scenario[0].neighbour: invalid type: table, expected an array; write [[scenario.neighbour]] with double brackets"
    );
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\ndma_latency = \"yes\"\n")),
        "bench.toml:4: configuration[0].dma_latency: invalid type: string \"yes\", expected a boolean"
    );
}

#[test]
fn bad_times_and_sizes_name_the_key() {
    assert_eq!(
        err("duration = \"10x\"\n"),
        "bench.toml:1: duration: \"10x\" has unknown unit \"x\"; use one of ns, us, ms, s, m, h, d"
    );
    assert_eq!(
        err("warmup = \"2s\"\n"),
        "bench.toml:1: duration: missing; give the measured time of each cell, e.g. duration = \"10s\""
    );
    assert_eq!(
        err("duration = \"0\"\n"),
        "bench.toml:1: duration: duration must be longer than 0"
    );
    assert_eq!(
        err(&with("warmup = \"2000\"\n")),
        "bench.toml:2: warmup: \"2000\" has no unit; add one of ns, us, ms, s, m, h, d (e.g. 2000us)"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nworking_set = \"1 parsec\"\n"),
        "bench.toml:4: probe[0].working_set: \"1 parsec\" has unknown size suffix \"parsec\"; use B, K, KiB, M, MiB, G or GiB"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"wakeup\"\nwindow = \"0ms\"\n"),
        "bench.toml:4: probe[0].window: window must be longer than 0"
    );
}

#[test]
fn numbers_out_of_range() {
    assert_eq!(
        err(&with("repetitions = 0\n")),
        "bench.toml:2: repetitions: 0 is less than 1"
    );
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\npriority = 100\n")),
        "bench.toml:4: configuration[0].priority: 100 is out of range 1..=99"
    );
    assert_eq!(
        err(&with(
            "[[configuration]]\nname = \"a\"\npolicy = \"other\"\nnice = 20\n"
        )),
        "bench.toml:5: configuration[0].nice: 20 is out of range -20..=19"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\noutliers = -1\n"),
        "bench.toml:4: probe[0].outliers: -1 is negative; give 0 to 10000"
    );
}

#[test]
fn sizes_counts_and_times_are_bounded_as_on_the_command_line() {
    let probe = |kind: &str, body: &str| {
        err(&format!(
            "duration = \"10s\"\n[[probe]]\nkind = \"{kind}\"\n{body}"
        ))
    };
    assert_eq!(
        probe("cyclic", "outliers = 100000000\n"),
        "bench.toml:4: probe[0].outliers: 100000000 is more than 10000, the most outliers kept per metric"
    );
    assert_eq!(
        probe("cyclic", "working_set = \"1000GiB\"\n"),
        "bench.toml:4: probe[0].working_set: 1000GiB is more than 4GiB, the largest buffer jitterlab allocates"
    );
    assert_eq!(
        probe("chase", "buffer = \"5G\"\n"),
        "bench.toml:4: probe[0].buffer: 5GiB is more than 4GiB, the largest buffer jitterlab allocates"
    );
    assert_eq!(
        probe("chase", "iterations = 1000001\n"),
        "bench.toml:4: probe[0].iterations: 1000001 is more than 1000000, the most timed chases per sample"
    );
    assert_eq!(
        probe("chase", "samples = 1048577\n"),
        "bench.toml:4: probe[0].samples: 1048577 is more than 1048576, the most samples a chase keeps"
    );
    assert_eq!(
        probe("wakeup", "period = \"1ns\"\n"),
        "bench.toml:4: probe[0].period: 1ns is shorter than 10us, the shortest period jitterlab measures (below it the probe measures its own overhead)"
    );
    assert_eq!(ok(&with("")).probes[0].period_ns, 1_000_000);
    assert_eq!(
        ok("duration = \"1s\"\n[[probe]]\nkind = \"wakeup\"\nperiod = \"10us\"\n").probes[0]
            .period_ns,
        10_000
    );
    assert_eq!(
        probe("wakeup", "window = \"100us\"\n"),
        "bench.toml:4: probe[0].window: 100us is shorter than 1ms, the shortest window"
    );
    assert_eq!(
        probe("cyclic", "max_latency = \"8d\"\n"),
        "bench.toml:4: probe[0].max_latency: 8d is more than 7d, the longest time jitterlab takes"
    );
    assert_eq!(
        err("duration = \"30d\"\n[[probe]]\nkind = \"cyclic\"\n"),
        "bench.toml:1: duration: 30d is more than 7d, the longest time jitterlab takes"
    );
    assert_eq!(
        err(&with("warmup = \"8d\"\n")),
        "bench.toml:2: warmup: 8d is more than 7d, the longest time jitterlab takes"
    );
    assert_eq!(
        err(&with("repetitions = 1000000\n")),
        "bench.toml:2: repetitions: 1000000 is more than 1000, the most repetitions of a bench"
    );
}

#[test]
fn the_matrix_and_its_window_rows_are_bounded() {
    // 1000 repetitions × 11 probes = 11000 cells.
    let mut text = String::from("duration = \"1s\"\nrepetitions = 1000\n");
    for i in 0..11 {
        text.push_str(&format!("[[probe]]\nkind = \"wakeup\"\nname = \"p{i}\"\n"));
    }
    assert_eq!(
        err(&text),
        "bench.toml:2: repetitions: the bench has 11000 cells (1000 repetitions × 1 configuration × 1 scenario × 1 deployment × 11 probes), more than 10000, the most one bench runs; use fewer repetitions or split the spec"
    );
    let spec = ok(&text.replace("repetitions = 1000\n", "repetitions = 900\n"));
    assert_eq!(spec.cell_count(), 9900);
    assert_eq!(spec.check_limits(), Ok(()));
    let mut more = spec.clone();
    more.repetitions = 1000;
    assert_eq!(
        more.check_limits(),
        Err("the bench has 11000 cells (1000 repetitions × 1 configuration × 1 scenario × 1 deployment × 11 probes), more than 10000, the most one bench runs; use fewer repetitions or split the spec".into())
    );
    // A wake-up probe on both CPUs for 7 days in 1 s windows.
    let wide = "duration = \"7d\"\n[[configuration]]\nname = \"w\"\nprobe_cpus = \"0-1\"\n[[probe]]\nkind = \"wakeup\"\nwindow = \"1s\"\n";
    assert_eq!(
        err(wide),
        "bench.toml:7: probe[0].window: 7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration"
    );
    let mut long = ok(&wide.replace("\"7d\"", "\"1d\""));
    assert_eq!(long.check_limits(), Ok(()));
    long.duration_ns = 7 * 86_400_000_000_000;
    assert_eq!(
        long.check_limits(),
        Err("probe[0] (wakeup): 7d in windows of 1s makes 1209600 window rows over 2 threads, more than 1000000, the most one run keeps; use windows of at least 1210ms or a shorter duration".into())
    );
}

#[test]
fn a_scenario_starts_at_most_64_neighbours() {
    let mut text = String::from("duration = \"1s\"\n[[scenario]]\nname = \"many\"\n");
    for i in 0..65 {
        text.push_str(&format!(
            "[[scenario.neighbour]]\nname = \"n{i}\"\ncommand = [\"sleep\", \"1\"]\n"
        ));
    }
    text.push_str("[[probe]]\nkind = \"cyclic\"\n");
    assert_eq!(
        err(&text),
        "bench.toml:196: scenario[0].neighbour[64]: scenario many has 65 neighbours, more than 64, the most one scenario starts; split the load over scenarios"
    );
    let fewer = text.replacen(
        "[[scenario.neighbour]]\nname = \"n64\"\ncommand = [\"sleep\", \"1\"]\n",
        "",
        1,
    );
    assert_eq!(ok(&fewer).scenarios[0].neighbours.len(), 64);
}

#[test]
fn a_name_with_control_characters_is_refused() {
    assert_eq!(
        err(&with("name = \"x\\u001b[31m\\ny\"\n")),
        "bench.toml:2: name: name \"x\\u{1b}[31m\\ny\" holds control characters; use printable text (it is printed by runs and report)"
    );
}

#[test]
fn offline_cpu_is_refused_with_the_online_list() {
    let text = "duration = \"10s\"\n[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"b\"\npolicy = \"fifo\"\nprobe_cpus = \"9\"\n[[probe]]\nkind = \"cyclic\"\n";
    assert_eq!(
        err(text),
        "bench.toml:7: configuration[1].probe_cpus: CPU 9 is not online (online CPUs: 0-1)"
    );
    assert_eq!(
        err(&with(
            "[[configuration]]\nname = \"a\"\nneighbour_cpus = \"0-5\"\n"
        )),
        "bench.toml:4: configuration[0].neighbour_cpus: CPUs 2-5 are not online (online CPUs: 0-1)"
    );
    assert_eq!(
        err(&with(
            "[[scenario]]\nname = \"s\"\nbuiltin = \"network\"\nrps_cpus = \"3\"\n"
        )),
        "bench.toml:5: scenario[0].rps_cpus: CPU 3 is not online (online CPUs: 0-1)"
    );
    assert_eq!(
        err(&with(
            "[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = [\"x\"]\ncpus = \"4\"\n"
        )),
        "bench.toml:6: scenario[0].neighbour[0].cpus: CPU 4 is not online (online CPUs: 0-1)"
    );
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\nprobe_cpus = \"one\"\n")),
        "bench.toml:4: configuration[0].probe_cpus: \"one\" is not a CPU list; write CPUs like 1,3 or ranges like 0-3 (as in /sys/devices/system/cpu/online)"
    );
}

#[test]
fn empty_probe_cpu_list_is_refused() {
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\nprobe_cpus = \"\"\n")),
        "bench.toml:4: configuration[0].probe_cpus: probe CPU list is empty; name at least one online CPU (online CPUs: 0-1)"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\ncpus = \" \"\n")),
        "bench.toml:5: scenario[0].cpus: neighbour CPU list is empty; name at least one online CPU (online CPUs: 0-1)"
    );
}

#[test]
fn duplicate_names_are_refused() {
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"a\"\n")),
        "bench.toml:5: configuration[1].name: name \"a\" is already used by configuration[0]; give each configuration its own name"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\n[[scenario]]\nname = \"s\"\nbuiltin = \"idle\"\n")),
        "bench.toml:6: scenario[1].name: name \"s\" is already used by scenario[0]; give each scenario its own name"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\n[[probe]]\nkind = \"cyclic\"\n"),
        "bench.toml:4: probe[1].name: name \"cyclic\" is already used by probe[0]; give each probe its own name"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = [\"/bin/yes\"]\n[[scenario.neighbour]]\ncommand = [\"yes\", \"y\"]\n")),
        "bench.toml:6: scenario[0].neighbour[1].name: name \"yes\" is already used by scenario[0].neighbour[0]; give each neighbour its own name"
    );
}

#[test]
fn bad_name_characters_are_refused() {
    assert_eq!(
        err(&with("[[configuration]]\nname = \"my config\"\n")),
        "bench.toml:3: configuration[0].name: name \"my config\" may use only ASCII letters, digits, _ and - (it becomes part of cell names like tuned/cpu/host/cyclic)"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"a/b\"\nbuiltin = \"cpu\"\n")),
        "bench.toml:3: scenario[0].name: name \"a/b\" may use only ASCII letters, digits, _ and - (it becomes part of cell names like tuned/cpu/host/cyclic)"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nname = \"\"\n"),
        "bench.toml:4: probe[0].name: name is empty; use ASCII letters, digits, _ and -"
    );
    assert_eq!(
        err(&with("[[configuration]]\npolicy = \"fifo\"\n")),
        "bench.toml:2: configuration[0].name: missing; every configuration needs a name, e.g. name = \"tuned\""
    );
}

#[test]
fn policy_and_its_parameters_must_match() {
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\npolicy = \"other\"\npriority = 50\n")),
        "bench.toml:5: configuration[0].priority: priority applies only to policy fifo or rr; give nice for policy other"
    );
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\nnice = -5\n")),
        "bench.toml:4: configuration[0].nice: nice applies only to policy other; give priority for policy fifo"
    );
    assert_eq!(
        err(&with("[[configuration]]\nname = \"a\"\npolicy = \"rr\"\nnice = 1\n")),
        "bench.toml:5: configuration[0].nice: nice applies only to policy other; give priority for policy rr"
    );
    assert_eq!(
        err(&with(
            "[[configuration]]\nname = \"a\"\npolicy = \"deadline\"\n"
        )),
        "bench.toml:4: configuration[0].policy: unknown policy \"deadline\"; use fifo, rr or other"
    );
}

#[test]
fn scan_must_be_shorter_than_the_period() {
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nperiod = \"1ms\"\nscan = \"1ms\"\n"),
        "bench.toml:5: probe[0].scan: scan 1ms must be shorter than the period 1ms"
    );
    // The default scan (100us) against a shorter period points at the period.
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"cyclic\"\nperiod = \"50us\"\n"),
        "bench.toml:4: probe[0].scan: scan 100us must be shorter than the period 50us"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"wakeup\"\nscan = \"10us\"\n"),
        "bench.toml:4: probe[0].scan: scan applies only to kind = \"cyclic\" or kind = \"roundtrip\"; remove it from this wakeup probe"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nkind = \"chaser\"\n"),
        "bench.toml:3: probe[0].kind: unknown probe kind \"chaser\"; use cyclic, wakeup, chase, ctxswitch, response, timerlat, roundtrip, netcycle or observe"
    );
    assert_eq!(
        err("duration = \"10s\"\n[[probe]]\nperiod = \"1ms\"\n"),
        "bench.toml:2: probe[0].kind: missing; give kind = \"cyclic\" or kind = \"wakeup\""
    );
}

#[test]
fn scenario_keys_must_fit_the_builtin() {
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"stress\"\n")),
        "bench.toml:4: scenario[0].builtin: unknown builtin \"stress\"; use one of idle, cpu, disk, usb, network, scheduling, misc, codesys"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"disk\"\nusb_path = \"/media/usb\"\n")),
        "bench.toml:5: scenario[0].usb_path: usb_path applies only to builtin = \"usb\"; remove it or set builtin = \"usb\""
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\nbuiltin = \"cpu\"\nrps_cpus = \"1\"\n")),
        "bench.toml:5: scenario[0].rps_cpus: rps_cpus applies only to builtin = \"network\"; remove it or set builtin = \"network\""
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"quiet\"\ncpus = \"0\"\n")),
        "bench.toml:2: scenario[0]: scenario quiet has no load: give builtin = \"idle\" for none, or a [[scenario.neighbour]]"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\ncommand = []\n")),
        "bench.toml:5: scenario[0].neighbour[0].command: command is empty; give the program and its arguments, e.g. [\"stress-ng\", \"--cpu\", \"1\"]"
    );
    assert_eq!(
        err(&with("[[scenario]]\nname = \"s\"\n[[scenario.neighbour]]\nname = \"x\"\n")),
        "bench.toml:4: scenario[0].neighbour[0].command: missing; give the argument vector, e.g. command = [\"stress-ng\", \"--cpu\", \"1\"]"
    );
}

#[test]
fn baseline_must_name_a_configuration() {
    assert_eq!(
        err(&with("baseline = \"tuned\"\n[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"b\"\n")),
        "bench.toml:2: baseline: \"tuned\" names no configuration (configurations: a, b)"
    );
    let s = ok(&with(
        "[[configuration]]\nname = \"a\"\n[[configuration]]\nname = \"b\"\n",
    ));
    assert_eq!(s.baseline, "a");
}

#[test]
fn a_probe_is_required() {
    assert_eq!(
        err("duration = \"10s\"\n"),
        "bench.toml:1: probe: no probe; add a [[probe]] table, e.g. kind = \"cyclic\""
    );
}

#[test]
fn host_and_container_are_the_deployments() {
    let s = ok(&with("deployments = [\"host\", \"container\"]\n"));
    assert_eq!(s.deployments, ["host", "container"]);
    let keys: Vec<String> = s.cells().iter().map(|c| c.key.name()).collect();
    assert_eq!(
        keys,
        ["default/idle/host/cyclic", "default/idle/container/cyclic"]
    );
    assert!(!s.cells()[0].in_container() && s.cells()[1].in_container());
    assert_eq!(
        err(&with("deployments = [\"vm\"]\n")),
        "bench.toml:2: deployments[0]: unknown deployment \"vm\"; use host or container"
    );
    assert_eq!(
        err(&with("deployments = [\"host\", \"host\"]\n")),
        "bench.toml:2: deployments[1]: deployment host is listed twice"
    );
    assert_eq!(
        err(&with("deployments = []\n")),
        "bench.toml:2: deployments: no deployment listed; give deployments = [\"host\"] or leave the key out"
    );
    assert_eq!(Deployment::parse("container"), Some(Deployment::Container));
    assert_eq!(Deployment::Host.name(), "host");
}

#[test]
fn neighbours_on_probe_cpus_are_warnings_not_errors() {
    let s = ok(&with(
        "[[configuration]]\nname = \"a\"\nneighbour_cpus = \"0-1\"\n[[scenario]]\nname = \"redhat\"\nbuiltin = \"cpu\"\ncpus = \"1\"\n[[scenario.neighbour]]\nname = \"spin\"\ncommand = [\"spin\"]\ncpus = \"0\"\n",
    ));
    assert_eq!(s.configurations[0].neighbour_cpus, [0, 1]);
    assert_eq!(s.scenarios[0].cpus, Some(vec![1]));
    assert_eq!(
        s.warnings,
        [
            "configuration a: neighbour_cpus = \"0-1\" puts neighbours on probe CPU 1; they compete with the probe directly",
            "scenario redhat: cpus = \"1\" puts neighbours on probe CPU 1 of configuration a; they compete with the probe directly",
        ]
    );
}

#[test]
fn one_cpu_machine_shares_the_probe_cpu_with_a_warning() {
    let s = parse_on(&with("[[configuration]]\nname = \"solo\"\n"), "0").unwrap();
    assert_eq!(s.configurations[0].probe_cpus, [0]);
    assert_eq!(s.configurations[0].neighbour_cpus, [0]);
    assert_eq!(
        s.warnings,
        ["configuration solo: no online CPU is left besides probe CPU 0, so neighbours share it; the figures show direct contention, not isolation"]
    );
    // Probe CPUs that take every online CPU do the same on a bigger machine.
    let s = parse_on(
        &with("[[configuration]]\nname = \"all\"\nprobe_cpus = \"0-3\"\n"),
        "0-3",
    )
    .unwrap();
    assert_eq!(s.configurations[0].neighbour_cpus, [0, 1, 2, 3]);
    assert_eq!(
        s.warnings,
        ["configuration all: no online CPU is left besides probe CPUs 0-3, so neighbours share it; the figures show direct contention, not isolation"]
    );
}

/// 2 repetitions × 3 configurations × 1 scenario × 1 deployment × 2 probes.
const MATRIX: &str = r#"
name = "matrix"
duration = "10s"
repetitions = 2
[[configuration]]
name = "c0"
[[configuration]]
name = "c1"
[[configuration]]
name = "c2"
[[scenario]]
name = "cpu"
builtin = "cpu"
[[probe]]
kind = "cyclic"
[[probe]]
kind = "wakeup"
"#;

#[test]
fn cells_run_repetition_outermost_probe_innermost() {
    let s = ok(MATRIX);
    let cells: Vec<(u32, String, usize, usize, usize)> = s
        .cells()
        .into_iter()
        .map(|c| {
            (
                c.key.repetition,
                c.key.name(),
                c.configuration,
                c.scenario,
                c.probe,
            )
        })
        .collect();
    let expect: Vec<(u32, String, usize, usize, usize)> = [
        (0, "c0/cpu/host/cyclic", 0, 0, 0),
        (0, "c0/cpu/host/wakeup", 0, 0, 1),
        (0, "c1/cpu/host/cyclic", 1, 0, 0),
        (0, "c1/cpu/host/wakeup", 1, 0, 1),
        (0, "c2/cpu/host/cyclic", 2, 0, 0),
        (0, "c2/cpu/host/wakeup", 2, 0, 1),
        (1, "c0/cpu/host/cyclic", 0, 0, 0),
        (1, "c0/cpu/host/wakeup", 0, 0, 1),
        (1, "c1/cpu/host/cyclic", 1, 0, 0),
        (1, "c1/cpu/host/wakeup", 1, 0, 1),
        (1, "c2/cpu/host/cyclic", 2, 0, 0),
        (1, "c2/cpu/host/wakeup", 2, 0, 1),
    ]
    .into_iter()
    .map(|(r, n, c, s, p)| (r, n.to_string(), c, s, p))
    .collect();
    assert_eq!(cells, expect);
    assert_eq!(
        s.cells()[7].key,
        CellKey {
            configuration: "c0".into(),
            scenario: "cpu".into(),
            deployment: "host".into(),
            probe: "wakeup".into(),
            repetition: 1,
        }
    );
}

#[test]
fn planned_time_adds_setup_warmup_and_duration_per_cell_plus_once() {
    let s = ok(MATRIX);
    // 12 cells × (1s set-up + 2s warm-up + 10s) + 5s calibration = 161s.
    assert_eq!(s.planned_ns(1_000_000_000, 5_000_000_000), 161_000_000_000);
    assert_eq!(s.planned_ns(0, 0), 12 * 12_000_000_000);
    assert_eq!(s.planned_ns(u64::MAX, 0), u64::MAX);
}

#[test]
fn plan_text_lists_every_cell_and_the_warnings() {
    let text = "name = \"demo\"\nduration = \"10s\"\n\
            [[configuration]]\nname = \"baseline\"\npolicy = \"other\"\n\
            [[configuration]]\nname = \"tuned\"\n\
            [[scenario]]\nname = \"idle\"\nbuiltin = \"idle\"\n\
            [[scenario]]\nname = \"cpu\"\nbuiltin = \"cpu\"\ncpus = \"0-1\"\n\
            [[probe]]\nkind = \"cyclic\"\n";
    let s = ok(text);
    assert_eq!(
        s.plan_text(1_000_000_000, 5_000_000_000),
        r#"plan: demo
  4 cells (1 repetition × 2 configurations × 2 scenarios × 1 deployment × 1 probe)
  each cell: set-up 1s + warm-up 2s + 10s measured = 13s
  once: idle calibration 5s
  total: 57s
  1/4  baseline/idle/host/cyclic  rep 1  (warm-up 2s + 10s)
  2/4  baseline/cpu/host/cyclic   rep 1  (warm-up 2s + 10s)
  3/4  tuned/idle/host/cyclic     rep 1  (warm-up 2s + 10s)
  4/4  tuned/cpu/host/cyclic      rep 1  (warm-up 2s + 10s)
warning: scenario cpu: cpus = "0-1" puts neighbours on probe CPU 1 of configuration baseline; they compete with the probe directly
warning: scenario cpu: cpus = "0-1" puts neighbours on probe CPU 1 of configuration tuned; they compete with the probe directly
"#
    );
}

#[test]
fn plan_text_aligns_long_plans_and_formats_hours() {
    let s = ok(&MATRIX.replace("duration = \"10s\"", "duration = \"20m\"\nwarmup = \"0\""));
    let plan = s.plan_text(0, 0);
    let lines: Vec<&str> = plan.lines().collect();
    assert_eq!(
        lines[2],
        "  each cell: set-up 0s + warm-up 0s + 20m measured = 20m 00s"
    );
    assert_eq!(lines[3], "  total: 4h 00m 00s");
    assert_eq!(
        lines[4],
        "  1/12   c0/cpu/host/cyclic  rep 1  (warm-up 0s + 20m)"
    );
    assert_eq!(
        lines[15],
        "  12/12  c2/cpu/host/wakeup  rep 2  (warm-up 0s + 20m)"
    );
    assert_eq!(lines.len(), 16);
}

/// `duration`, a configuration `p` on CPUs 0-3 with `body`, a probe.
fn cache_spec(body: &str) -> String {
    format!("duration = \"10s\"\n[[configuration]]\nname = \"p\"\n{body}{PROBE}")
}

fn cache_err(body: &str) -> String {
    match parse_on(&cache_spec(body), "0-3") {
        Ok(s) => panic!("accepted: {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn cache_groups_parse() {
    let s = parse_on(
        &cache_spec(
            "[[configuration.cache]]\ngroup = \"rt\"\ncpus = \"1\"\nl3 = { ways = \"6-7\" }\nmb = 50\nexclusive = true\n\
                 [[configuration.cache]]\ngroup = \"nn\"\ncpus = \"2-3\"\nl2 = { mask = \"0xffc00\", ids = [2, 3] }\n\
                 [configuration.cache_default]\nl3 = { mask = \"3f\" }\n",
        ),
        "0-3",
    )
    .unwrap();
    let settings = &s.configurations[0].settings;
    assert_eq!(
        settings.cache,
        vec![
            CacheGroup {
                name: "rt".into(),
                cpus: vec![1],
                tasks: vec![],
                masks: vec![CacheMask {
                    resource: Resource::L3,
                    mask: 0xc0,
                    ids: None
                }],
                mb: Some(50),
                exclusive: true,
            },
            CacheGroup {
                name: "nn".into(),
                cpus: vec![2, 3],
                tasks: vec![],
                masks: vec![CacheMask {
                    resource: Resource::L2,
                    mask: 0xffc00,
                    ids: Some(vec![2, 3])
                }],
                mb: None,
                exclusive: false,
            },
        ]
    );
    assert_eq!(
        settings.cache_default,
        Some(CacheDefault {
            masks: vec![CacheMask {
                resource: Resource::L3,
                mask: 0x3f,
                ids: None
            }],
            mb: None
        })
    );
    assert!(!settings.is_empty());
    // CDP halves.
    let s = parse_on(
        &cache_spec("[[configuration.cache]]\ngroup = \"rt\"\ncpus = \"1\"\nl3code = { ways = \"8-11\" }\nl3data = { ways = \"8-11\", ids = [0] }\n"),
        "0-3",
    )
    .unwrap();
    let masks: Vec<(Resource, u64)> = s.configurations[0].settings.cache[0]
        .masks
        .iter()
        .map(|m| (m.resource, m.mask))
        .collect();
    assert_eq!(
        masks,
        [(Resource::L3Code, 0xf00), (Resource::L3Data, 0xf00)]
    );
}

#[test]
fn cache_groups_bad_input_names_file_line_and_key() {
    let g = "[[configuration.cache]]\n";
    assert_eq!(
        cache_err(&format!("{g}cpus = \"1\"\nl3 = {{ ways = \"6-7\" }}\n")),
        "bench.toml:4: configuration[0].cache[0].group: missing; every cache group needs a name, e.g. group = \"rt\""
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"../../etc\"\ncpus = \"1\"\n")),
        "bench.toml:5: configuration[0].cache[0].group: group \"../../etc\" may use only ASCII letters, digits, _ and - (it names a directory under /sys/fs/resctrl)"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"info\"\ncpus = \"1\"\n")),
        "bench.toml:5: configuration[0].cache[0].group: group \"info\" is a directory of resctrl itself; choose another name"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\nl3 = {{ ways = \"6-7\" }}\n")),
        "bench.toml:4: configuration[0].cache[0].cpus: missing; give the CPUs that allocate with this group's ways, e.g. cpus = \"1\""
    );
    assert_eq!(
        cache_err(&format!(
            "{g}group = \"rt\"\ncpus = \"1,9\"\nl3 = {{ ways = \"6-7\" }}\n"
        )),
        "bench.toml:6: configuration[0].cache[0].cpus: CPU 9 is not online (online CPUs: 0-3)"
    );
    assert_eq!(
        cache_err(&format!(
            "{g}group = \"a\"\ncpus = \"1\"\nl3 = {{ ways = \"6-7\" }}\n{g}group = \"b\"\ncpus = \"0-1\"\nl3 = {{ ways = \"4-5\" }}\n"
        )),
        "bench.toml:10: configuration[0].cache[1].cpus: CPU 1 is already in cache group a (configuration[0].cache[0]); a CPU belongs to one resctrl group"
    );
    assert_eq!(
        cache_err(&format!(
            "{g}group = \"a\"\ncpus = \"1\"\nl3 = {{ ways = \"6-7\" }}\n{g}group = \"a\"\ncpus = \"2\"\nl3 = {{ ways = \"4-5\" }}\n"
        )),
        "bench.toml:9: configuration[0].cache[1].group: name \"a\" is already used by configuration[0].cache[0]; give each cache group its own name"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\n")),
        "bench.toml:4: configuration[0].cache[0]: cache group rt allocates nothing; give l3, l2, l3code, l3data, l2code, l2data or mb"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"6-\" }}\n")),
        "bench.toml:7: configuration[0].cache[0].l3.ways: ways \"6-\" is not a list of cache ways; write them like \"6-7\" or \"0,2\" (way 0 is the lowest bit of the mask)"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ mask = \"0xzz\" }}\n")),
        "bench.toml:7: configuration[0].cache[0].l3.mask: mask \"0xzz\" is not a hex mask; write it like \"0xc0\" (ways 6-7), or give ways = \"6-7\""
    );
    assert_eq!(
        cache_err(&format!(
            "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"6-7\", mask = \"0xc0\" }}\n"
        )),
        "bench.toml:7: configuration[0].cache[0].l3.mask: give ways or mask, not both"
    );
    assert_eq!(
        cache_err(&format!(
            "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ids = [0] }}\n"
        )),
        "bench.toml:7: configuration[0].cache[0].l3: give ways = \"6-7\" or mask = \"0xc0\""
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\", ids = [] }}\n")),
        "bench.toml:7: configuration[0].cache[0].l3.ids: ids is empty; leave it out for every cache id, or list some, e.g. ids = [0]"
    );
    assert_eq!(
        cache_err(&format!(
            "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\", ids = [0, 0] }}\n"
        )),
        "bench.toml:7: configuration[0].cache[0].l3.ids[1]: cache id 0 is listed twice"
    );
    assert_eq!(
        cache_err(&format!(
            "{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\", ids = [-1] }}\n"
        )),
        "bench.toml:7: configuration[0].cache[0].l3.ids[0]: -1 is out of range 0..=4294967295"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl3 = {{ ways = \"7\" }}\nl3code = {{ ways = \"7\" }}\n")),
        "bench.toml:8: configuration[0].cache[0].l3code: l3 and l3code/l3data exclude each other: resctrl offers the code and data halves instead of L3 only when mounted with CDP; give one kind"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nmb = 0\n")),
        "bench.toml:7: configuration[0].cache[0].mb: 0 is out of range 1..=100"
    );
    assert_eq!(
        cache_err(&format!("{g}group = \"rt\"\ncpus = \"1\"\nl4 = {{ ways = \"7\" }}\n")),
        "bench.toml:7: configuration[0].cache[0].l4: unknown key `l4`, expected one of `group`, `cpus`, `l3`, `l3code`, `l3data`, `l2`, `l2code`, `l2data`, `mb`, `exclusive`"
    );
    assert_eq!(
        cache_err("[configuration.cache_default]\n"),
        "bench.toml:4: configuration[0].cache_default: shrinks nothing; give l3, l2, l3code, l3data, l2code, l2data or mb, or leave the table out"
    );
    assert_eq!(
        cache_err("[configuration.cache_default]\ngroup = \"x\"\n"),
        "bench.toml:5: configuration[0].cache_default.group: unknown key `group`, expected one of `l3`, `l3code`, `l3data`, `l2`, `l2code`, `l2data`, `mb`"
    );
}

#[test]
fn cache_example_parses() {
    let s = parse_on(include_str!("../../../../examples/cache.toml"), "0-3")
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(s.warnings, Vec::<String>::new());
    let names: Vec<&str> = s.configurations.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["shared", "partitioned"]);
    let cache = &s.configurations[1].settings;
    let groups: Vec<(&str, &[usize], u64)> = cache
        .cache
        .iter()
        .map(|g| (g.name.as_str(), g.cpus.as_slice(), g.masks[0].mask))
        .collect();
    assert_eq!(
        groups,
        [
            ("c0", &[0][..], 0xc0),
            ("c1", &[1][..], 0x30),
            ("c2", &[2][..], 0xc)
        ]
    );
    assert_eq!(cache.cache_default.as_ref().unwrap().masks[0].mask, 0x3);
}

#[test]
fn example_specs_parse() {
    let codesys = ok(include_str!("../../../../examples/codesys.toml"));
    assert_eq!(codesys.name, "codesys-table10");
    assert_eq!(codesys.cells().len(), 2);
    assert_eq!(codesys.warnings, Vec::<String>::new());
    // The settings the example shows commented out are valid too.
    let mut text = include_str!("../../../../examples/codesys.toml").to_string();
    for key in [
        "rt_runtime_us",
        "governor",
        "min_freq",
        "max_freq",
        "fair_server_runtime",
    ] {
        let commented = format!("# {key} = ");
        assert!(text.contains(&commented), "{key}");
        text = text.replace(&commented, &format!("{key} = "));
    }
    let tuned = ok(&text).configurations[1].settings.clone();
    assert_eq!(
        tuned,
        ConfigSettings {
            cache: Vec::new(),
            cache_default: None,
            irq_cpus: Some(vec![0]),
            governor: Some("performance".into()),
            timer_migration: Some(false),
            rt_runtime_us: Some(-1),
            min_freq_khz: Some(2_400_000),
            max_freq_khz: Some(2_400_000),
            fair_server_runtime_ns: Some(0),
        }
    );
    let conditions = ok(include_str!("../../../../examples/conditions.toml"));
    assert_eq!(conditions.name, "conditions");
    let names: Vec<&str> = conditions
        .scenarios
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        names,
        [
            "idle",
            "cpu",
            "disk",
            "usb",
            "network",
            "scheduling",
            "misc",
            "hog"
        ]
    );
    assert_eq!(conditions.warnings, Vec::<String>::new());
}

#[test]
fn event_probe_keys_are_parsed_and_refused_elsewhere() {
    let spec = ok(
        "duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nbuffer = \"1MiB\"\niterations = 50\nsamples = 200\n\
             [[probe]]\nkind = \"response\"\nsource = \"udp\"\nevent_cpu = \"0\"\nperiod = \"2ms\"\n\
             [[probe]]\nkind = \"ctxswitch\"\nmax_latency = \"50us\"\n",
    );
    let p = &spec.probes;
    assert_eq!(
        p[0].params,
        ProbeParams::new(crate::chase::ChaseParams {
            buffer_bytes: Some(1 << 20),
            iterations: Some(50),
            samples: Some(200),
            chase_length: 1024,
        })
    );
    assert_eq!(p[1].samples(), None);
    assert_eq!(
        (&p[1].params, p[1].period_ns),
        (
            &ProbeParams::new(crate::response::ResponseParams {
                source: Some(crate::response::ResponseSource::Udp),
                event_cpu: Some(0),
            }),
            2_000_000
        )
    );
    assert_eq!(
        (p[2].kind(), p[2].max_latency_ns),
        (ProbeKind::Ctxswitch, Some(50_000))
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"wakeup\"\nbuffer = \"1MiB\"\n"),
        "bench.toml:4: probe[0].buffer: buffer applies only to kind = \"chase\"; remove it from this wakeup probe"
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"ctxswitch\"\nmax_jitter = \"1us\"\n"),
        "bench.toml:4: probe[0].max_jitter: max_jitter applies only to kind = \"cyclic\" or kind = \"wakeup\" or kind = \"netcycle\" or kind = \"observe\"; remove it from this ctxswitch probe"
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nmax_latency = \"1us\"\n"),
        "bench.toml:4: probe[0].max_latency: a chase measures CPU cycles, not a latency; remove max_latency from this chase probe"
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"response\"\nsource = \"pipe\"\n"),
        "bench.toml:4: probe[0].source: unknown event source \"pipe\"; use eventfd or udp"
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"response\"\nevent_cpu = \"0-1\"\n"),
        "bench.toml:4: probe[0].event_cpu: give exactly one CPU, e.g. event_cpu = \"0\""
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nbuffer = \"64\"\n"),
        "bench.toml:4: probe[0].buffer: a chase needs at least two cache lines; give e.g. buffer = \"1MiB\""
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"cyclic\"\nsamples = 200\n"),
        "bench.toml:4: probe[0].samples: samples applies only to kind = \"chase\"; remove it from this cyclic probe"
    );
    assert_eq!(
        err("duration = \"1s\"\n[[probe]]\nkind = \"chase\"\nsamples = 0\n"),
        "bench.toml:4: probe[0].samples: 0 is less than 1"
    );
}
