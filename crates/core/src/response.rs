//! The `response` probe's parameters: what makes its events and on which
//! CPU, declared once with their keys. The probe itself is the binary's.

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::netns::PairKind;
use crate::probe::kind::ProbeKind;
use crate::spec::param::{take, Ordered};
use crate::spec::{Key, KeyFlag, ParamTable, Params, ProbeParams, ValueType};

/// The `response` probe's pair for its UDP source: events from
/// `jl<pid>ev` to the probe in `jl<pid>rs`, on the /30 after the flood's.
pub const PAIR: PairKind = PairKind {
    ns_a: "ev",
    ns_b: "rs",
    veth_a: "e",
    veth_b: "r",
    ip_a: Ipv4Addr::new(198, 18, 0, 5),
    ip_b: Ipv4Addr::new(198, 18, 0, 6),
    prefix_len: 30,
    who: "the response probe's udp source",
    needs_root: "the response probe's udp source needs root (CAP_NET_ADMIN) to create network namespaces; run as root or use --source eventfd",
};

/// What makes a response probe's events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ResponseSource {
    /// An eventfd write; the response is a write to a second eventfd.
    Eventfd,
    /// A UDP datagram through a veth pair between two namespaces; the
    /// response is a datagram back.
    Udp,
}

impl ResponseSource {
    /// Every source, in the order the command line lists them.
    pub const ALL: [ResponseSource; 2] = [ResponseSource::Eventfd, ResponseSource::Udp];

    /// Every source's name, in [`ResponseSource::ALL`] order.
    pub const NAMES: &'static [&'static str] = &["eventfd", "udp"];

    /// The name on the command line, in spec files and in results.
    pub fn name(self) -> &'static str {
        match self {
            ResponseSource::Eventfd => "eventfd",
            ResponseSource::Udp => "udp",
        }
    }

    /// The source of a [`name`](ResponseSource::name); `None` for any other
    /// text.
    pub fn parse(name: &str) -> Option<ResponseSource> {
        ResponseSource::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// What only the `response` probe takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResponseParams {
    /// What makes the event; `None`: not given, the eventfd.
    pub source: Option<ResponseSource>,
    /// CPU the events are made on; `None`: the first neighbour CPU
    /// (for `jitterlab run`, the first other online CPU), else the
    /// probe's own.
    pub event_cpu: Option<usize>,
}

/// The `response` probe's own keys.
pub const KEYS: &[Key] = &[
    Key {
        name: "source",
        ty: ValueType::Choice {
            what: "event source",
            names: ResponseSource::NAMES,
        },
        default: "eventfd",
        help: "what makes the event",
        flag: KeyFlag {
            value_name: Some("SOURCE"),
            value_helps: &[
                "An eventfd write from the event thread",
                "A UDP datagram through a veth pair between two namespaces",
            ],
            ..KeyFlag::DERIVED
        },
    },
    Key {
        name: "event_cpu",
        ty: ValueType::Cpu("0"),
        default: "the first neighbour CPU",
        help: "CPU the events are made on",
        flag: KeyFlag::DERIVED,
    },
];

/// How the `response` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: KEYS,
    shared: &["period", "max_latency"],
    default_period_ns: defaults::PERIOD_NS,
    wire_keys: &["source", "event_cpu"],
    defaults: |_| ProbeParams::new(ResponseParams::default()),
    check: |t, _| {
        Ok(ProbeParams::new(ResponseParams {
            source: t.choice("source")?.and_then(ResponseSource::parse),
            event_cpu: t.cpu("event_cpu")?,
        }))
    },
    read: |_, m| {
        Ok(ProbeParams::new(ResponseParams {
            source: take(m, "source")?,
            event_cpu: take(m, "event_cpu")?,
        }))
    },
};

impl Params for ResponseParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Response
    }

    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        let mut out = Vec::new();
        if let Some(s) = self.source {
            out.push(("source", Ordered::Str(s.name().into())));
        }
        if let Some(c) = self.event_cpu {
            out.push(("event_cpu", Ordered::U64(c as u64)));
        }
        out
    }

    /// The UDP source makes two network namespaces and a veth pair of its
    /// own, which a container may not.
    fn not_in_container(&self) -> Option<String> {
        (self.source == Some(ResponseSource::Udp)).then(|| {
            "response with source udp is N/A in a container: it makes two network namespaces and a veth pair, which a container may not; use source eventfd, or measure it on the host".into()
        })
    }
}
