//! Every probe kind, and one descriptor per kind: everything the rest of
//! jitterlab needs to know about a probe without a `match` on its kind.
//!
//! [`ProbeKind`] names the kinds; [`ProbeKind::ALL`] lists them. A
//! [`ProbeDescriptor`] names the probe, lists the metrics it measures (its
//! [`MetricDef`] table, which is also the order of the slots of its samples
//! and window rows), says which metric answers "how late?", whether its
//! samples are the cycles of a release schedule, on which probe CPUs it
//! measures, the words a report prints for it, its parameters (their type,
//! key table and checks: [`crate::spec::param`]), its own verdicts,
//! whether messages name it, and whether it can measure in a container
//! ([`InContainer`]). There is one `const` per kind ([`CYCLIC`],
//! [`WAKEUP`], [`CHASE`], [`CTXSWITCH`], [`RESPONSE`], [`TIMERLAT`]; a kind
//! with a folder of its own keeps its const there:
//! [`crate::roundtrip::ROUNDTRIP`], [`crate::netcycle::NETCYCLE`],
//! [`crate::observe::OBSERVE`]) and [`ProbeKind::descriptor`] finds it; `ProbeKind::name`, `metrics`,
//! `metric`, `main_latency` and `periodic` read it. The spec checker,
//! reports, the CSV writer and the store read the descriptor's fields
//! instead of switching on the kind, so a new probe is described here once
//! (the binary's `probe` module says what else a probe is: its code, its
//! subcommand, its registration).
//!
//! Metrics are data: a sample carries up to [`MAX_METRICS`] values and a
//! window row as many statistics, slot `i` being `descriptor.metrics[i]`;
//! everything stored or written is keyed by the metric's name.
//!
//! The design rules and documents cited here are in `docs/design.md`.

pub mod descriptor;
pub mod kind;

pub(crate) use descriptor::{ns, PERIODIC_OUTLIERS};
pub use descriptor::{
    InContainer, MetricDef, MetricUnit, ProbeDescriptor, ReportWords, MAX_METRICS, PERIODIC_METRICS,
};
pub use kind::ProbeKind;

use crate::spec::{ParamTable, PlainParams};
use descriptor::cycles;

/// `ProbeKind::ALL` and `ProbeKind::descriptor` of every kind
/// [`for_each_kind`] lists.
macro_rules! kind_registry {
    (
        in probe { $( $(#[doc = $pdoc:literal])* $p:ident => $pdesc:ident, )* }
        $( $(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $k:ident => $m:ident :: $desc:ident, )*
    ) => {
        impl ProbeKind {
            /// Every probe kind, in the order the CLI lists them.
            pub const ALL: &'static [ProbeKind] = &[
                $( ProbeKind::$p, )*
                $( $(#[cfg($cfg)])? ProbeKind::$k, )*
            ];

            /// The kind's descriptor: everything else about it (its
            /// parameters, its checks, its verdicts) its descriptor says.
            pub fn descriptor(self) -> &'static ProbeDescriptor {
                match self {
                    $( ProbeKind::$p => &$pdesc, )*
                    $( $(#[cfg($cfg)])? ProbeKind::$k => &crate::$m::$desc, )*
                }
            }
        }
    };
}

for_each_kind!(kind_registry);

impl ProbeKind {
    /// The kind named `name` ([`ProbeKind::name`]), if there is one.
    pub fn parse(name: &str) -> Option<ProbeKind> {
        ProbeKind::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The kinds messages and listings name ([`ProbeDescriptor::listed`]),
    /// in [`ProbeKind::ALL`] order.
    pub fn listed() -> impl Iterator<Item = ProbeKind> {
        ProbeKind::ALL
            .iter()
            .copied()
            .filter(|k| k.descriptor().listed)
    }

    /// The name used on the command line, in JSON and in the database.
    pub fn name(self) -> &'static str {
        self.descriptor().name
    }

    /// The metrics the probe measures, in the order its samples and window
    /// rows carry them (slot `i` is `metrics()[i]`).
    pub fn metrics(self) -> &'static [MetricDef] {
        self.descriptor().metrics
    }

    /// The definition of one of the probe's metrics, by name.
    pub fn metric(self, name: &str) -> Option<&'static MetricDef> {
        self.descriptor().metric(name)
    }

    /// The latency that answers "how late?" for this probe — what
    /// [Xu EPICS]'s latency table reports and `--max-latency` limits: the wake-up
    /// latency of the periodic probes, a hand-over, event → answer sent,
    /// the timerlat thread latency. `None` for the chase, which measures
    /// cycles.
    pub fn main_latency(self) -> Option<&'static str> {
        self.descriptor().main_latency
    }

    /// True for the periodic probes (`cyclic`, `wakeup`), whose samples are
    /// cycles of a release schedule.
    pub fn periodic(self) -> bool {
        self.descriptor().periodic
    }
}

/// The parameters of the context-switch probe: only what every probe
/// shares.
const PLAIN_LATENCY: ParamTable = PlainParams::table(&["max_latency"]);

/// `cyclic`: control-task emulation.
pub const CYCLIC: ProbeDescriptor = ProbeDescriptor {
    name: "cyclic",
    summary: "control-task emulation: a periodic task with a cache-sensitive scan",
    metrics: PERIODIC_METRICS,
    main_latency: Some("latency"),
    periodic: true,
    calibrated: true,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: Some("period"),
        samples: "cycles",
        sample: "cycle",
        outliers: PERIODIC_OUTLIERS,
    },
    params: &crate::cyclic::PARAMS,
    container: InContainer::Supported,
    verdicts: None,
    netns: None,
};

/// `wakeup`: timer wake-up latency, one thread per CPU.
pub const WAKEUP: ProbeDescriptor = ProbeDescriptor {
    name: "wakeup",
    summary: "timer wake-up latency on one thread per CPU, as cyclictest measures it",
    metrics: PERIODIC_METRICS,
    main_latency: Some("latency"),
    periodic: true,
    calibrated: false,
    every_probe_cpu: true,
    listed: true,
    words: ReportWords {
        period: Some("interval"),
        samples: "cycles",
        sample: "cycle",
        outliers: PERIODIC_OUTLIERS,
    },
    params: &crate::wakeup::PARAMS,
    container: InContainer::Supported,
    verdicts: None,
    netns: None,
};

/// `chase`: a cache-sensitive pointer chase, in CPU cycles.
pub const CHASE: ProbeDescriptor = ProbeDescriptor {
    name: "chase",
    summary: "cache sensitivity: a pointer chase timed in CPU cycles",
    metrics: &[cycles("chase"), cycles("sample-jitter")],
    main_latency: None,
    periodic: false,
    calibrated: false,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: None,
        samples: "chases",
        sample: "sample",
        outliers: &["chase"],
    },
    params: &crate::chase::params::PARAMS,
    container: InContainer::Supported,
    verdicts: None,
    netns: None,
};

/// `ctxswitch`: two real-time threads handing a token back and forth.
pub const CTXSWITCH: ProbeDescriptor = ProbeDescriptor {
    name: "ctxswitch",
    summary:
        "context-switch latency: two real-time threads on one CPU handing a token back and forth",
    metrics: &[ns("handover", false, true)],
    main_latency: Some("handover"),
    periodic: false,
    calibrated: false,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: None,
        samples: "hand-overs",
        sample: "sample",
        outliers: &["handover"],
    },
    params: &PLAIN_LATENCY,
    container: InContainer::Supported,
    verdicts: None,
    netns: None,
};

/// `response`: an event made on another CPU answered by the real-time
/// thread.
pub const RESPONSE: ProbeDescriptor = ProbeDescriptor {
    name: "response",
    summary: "response latency: an event made on another CPU answered by the real-time thread",
    metrics: &[
        ns("wakeup", false, true),
        ns("response", false, true),
        ns("rx-to-thread", false, true),
    ],
    main_latency: Some("response"),
    periodic: false,
    calibrated: false,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: Some("interval"),
        samples: "events",
        sample: "sample",
        outliers: &["wakeup", "response", "rx-to-thread"],
    },
    params: &crate::response::PARAMS,
    container: InContainer::Supported,
    verdicts: None,
    netns: Some(&crate::response::PAIR),
};

/// Why `timerlat` cannot measure in a container.
const TIMERLAT_NOT_IN_CONTAINER: &str = "timerlat is N/A in a container: its tracer is the host kernel's, driven through tracefs, which a container neither has nor may have; the interrupt latency it measures is the host's whatever runs in the container, so measure it on the host";

/// `timerlat`: the kernel's timerlat tracer through `rtla timerlat`.
pub const TIMERLAT: ProbeDescriptor = ProbeDescriptor {
    name: "timerlat",
    summary: "interrupt and thread latency from the kernel's timerlat tracer, through rtla",
    metrics: &[
        ns("irq", false, true),
        ns("thread", false, true),
        ns("user", false, true),
    ],
    main_latency: Some("thread"),
    periodic: false,
    calibrated: false,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: Some("period"),
        samples: "timer activations",
        sample: "sample",
        outliers: &["irq", "thread", "user"],
    },
    params: &crate::timerlat::PARAMS,
    container: InContainer::NotApplicable(TIMERLAT_NOT_IN_CONTAINER),
    verdicts: None,
    netns: None,
};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cycle::METRICS;

    #[test]
    fn periodic_metric_table_matches_the_cycle_metrics() {
        assert_eq!(PERIODIC_METRICS.len(), METRICS.len());
        for (d, m) in PERIODIC_METRICS.iter().zip(METRICS) {
            assert_eq!(
                (d.name, d.signed, d.thresholded, d.unit),
                (m.name(), m.signed(), m.thresholded(), MetricUnit::Ns)
            );
        }
    }

    #[test]
    fn every_descriptor_is_consistent() {
        for &k in ProbeKind::ALL {
            let d = k.descriptor();
            assert_eq!(ProbeKind::parse(d.name), Some(k));
            assert!(!d.metrics.is_empty() && d.metrics.len() <= MAX_METRICS);
            for (i, m) in d.metrics.iter().enumerate() {
                assert_eq!(d.slot(m.name), Some(i), "{} {}", d.name, m.name);
            }
            if let Some(main) = d.main_latency {
                let m = d.metric(main).expect("the main latency is a metric");
                assert_eq!((m.unit, m.signed), (MetricUnit::Ns, false));
            }
            for o in d.words.outliers {
                assert!(d.metric(o).is_some(), "{} outlier {o}", d.name);
            }
            for key in d.params.keys {
                assert!(
                    !crate::spec::param::COMMON_KEYS.contains(&key.name),
                    "{} {}",
                    d.name,
                    key.name
                );
            }
            assert_eq!(d.periodic, d.words.sample == "cycle");
            // A calibrated probe runs its scan in a task whose execution
            // time it measures.
            assert!(!d.calibrated || d.metric("exec").is_some(), "{}", d.name);
        }
        assert_eq!(ProbeKind::parse("nosuch"), None);
    }

    #[test]
    fn messages_name_today_s_kinds_and_only_wakeup_takes_every_cpu() {
        let listed: Vec<&str> = ProbeKind::listed().map(ProbeKind::name).collect();
        assert_eq!(
            listed,
            [
                "cyclic",
                "wakeup",
                "chase",
                "ctxswitch",
                "response",
                "timerlat",
                "roundtrip",
                "netcycle",
                "observe"
            ]
        );
        let every: Vec<ProbeKind> = ProbeKind::ALL
            .iter()
            .copied()
            .filter(|k| k.descriptor().every_probe_cpu)
            .collect();
        assert_eq!(every, [ProbeKind::Wakeup]);
    }

    #[test]
    fn spec_keys_are_today_s_allow_lists() {
        let takes = |key: &str| -> Vec<&str> {
            ProbeKind::ALL
                .iter()
                .filter(|k| k.descriptor().accepts_spec_key(key))
                .map(|k| k.name())
                .collect()
        };
        assert_eq!(takes("scan"), ["cyclic", "roundtrip"]);
        assert_eq!(takes("working_set"), ["cyclic", "roundtrip"]);
        assert_eq!(takes("max_exec"), ["cyclic", "observe"]);
        assert_eq!(
            takes("max_jitter"),
            ["cyclic", "wakeup", "netcycle", "observe"]
        );
        assert_eq!(
            takes("period"),
            [
                "cyclic",
                "wakeup",
                "response",
                "timerlat",
                "roundtrip",
                "netcycle",
                "observe"
            ]
        );
        assert_eq!(takes("buffer"), ["chase"]);
        assert_eq!(takes("iterations"), ["chase"]);
        assert_eq!(takes("samples"), ["chase"]);
        assert_eq!(takes("source"), ["response"]);
        assert_eq!(takes("event_cpu"), ["response"]);
        for key in [
            "io_period",
            "network_budget",
            "opcua",
            "budget",
            "transport",
            "io_cpu",
        ] {
            assert_eq!(takes(key), ["roundtrip"], "{key}");
        }
        for key in [
            "cns",
            "chaining",
            "wait",
            "response_timeout",
            "out_bytes",
            "in_bytes",
            "cn_cpu",
            "max_late_cycles",
            "max_missed_pres",
        ] {
            assert_eq!(takes(key), ["netcycle"], "{key}");
        }
        assert_eq!(
            takes("max_latency"),
            [
                "cyclic",
                "wakeup",
                "ctxswitch",
                "response",
                "timerlat",
                "netcycle",
                "observe"
            ]
        );
        for key in ["pid", "tid", "comm", "command"] {
            assert_eq!(takes(key), ["observe"], "{key}");
        }
        assert_eq!(takes("explain"), ["cyclic", "wakeup", "observe"]);
        assert_eq!(takes("window").len(), ProbeKind::ALL.len());
        assert_eq!(takes("bogus"), Vec::<&str>::new());
    }

    #[test]
    fn timerlat_and_netcycle_cannot_run_in_a_container_and_say_why() {
        for &k in ProbeKind::ALL {
            match (k, k.descriptor().container) {
                (
                    ProbeKind::Timerlat | ProbeKind::Netcycle | ProbeKind::Observe,
                    InContainer::NotApplicable(why),
                ) => {
                    let head = format!("{} is N/A in a container: ", k.name());
                    assert!(why.starts_with(&head), "{why}")
                }
                (ProbeKind::Timerlat | ProbeKind::Netcycle | ProbeKind::Observe, c) => {
                    panic!("{}: {c:?}", k.name())
                }
                (ProbeKind::Roundtrip, c) => assert_eq!(c, InContainer::OwnSide),
                (_, c) => assert_eq!(c, InContainer::Supported, "{}", k.name()),
            }
        }
    }

    #[test]
    fn the_list_of_kinds_keeps_their_order_and_serde_names() {
        let mut names = vec![
            "cyclic",
            "wakeup",
            "chase",
            "ctxswitch",
            "response",
            "timerlat",
            "roundtrip",
            "netcycle",
            "observe",
        ];
        if cfg!(feature = "test-probe") {
            names.push("sleep");
        }
        let all: Vec<&str> = ProbeKind::ALL.iter().map(|k| k.name()).collect();
        assert_eq!(all, names);
        for &k in ProbeKind::ALL {
            let json = format!("\"{}\"", k.name());
            assert_eq!(serde_json::to_string(&k).unwrap(), json);
            assert_eq!(serde_json::from_str::<ProbeKind>(&json).unwrap(), k);
        }
        assert_eq!(ProbeKind::ALL[0], ProbeKind::Cyclic);
        assert_eq!(ProbeKind::ALL[8], ProbeKind::Observe);
    }

    #[test]
    fn units_are_named_as_serde_names_them() {
        for u in [MetricUnit::Ns, MetricUnit::Cycles] {
            assert_eq!(
                serde_json::to_string(&u).unwrap(),
                format!("\"{}\"", u.name())
            );
        }
    }
}
