//! One probe of a spec, typed: the parameters every probe shares
//! ([`ProbeSpec`]) and, per kind, the ones only it takes ([`ProbeParams`]).
//!
//! This is the one model both front doors produce — the spec checker from a
//! `[[probe]]` table, the command line from `jitterlab run X`'s flags — and
//! the only one the runner reads. A kind's own parameters live in its
//! variant, so a value that means nothing to a kind (a scan for a chase, a
//! source for a wake-up probe) cannot be written down. A kind that takes
//! nothing of its own is `ProbeParams::Plain(kind)`, so a new kind of that
//! sort needs nothing here; on which CPUs a kind measures is its
//! descriptor's ([`crate::probe::ProbeDescriptor::every_probe_cpu`]).
//!
//! The serialized form (stored in a bench's `spec_json`) is the flat object
//! jitterlab has always written: `kind` beside the common keys, `scan_ns`
//! and `working_set_bytes` on every probe (0 but for cyclic), and the keys
//! of the other kinds only when set, and so are a bench probe's
//! `scenarios` and `duration_ns` ([`ProbeScope`]), so a spec without them
//! stores the bytes it always did. [`ProbeSpecWire`] is that shape; the
//! conversions to and from it are the only place it is known.
//!
//! The documents cited here are listed in `docs/design.md`.

use serde::{Deserialize, Serialize};

use super::observe::ObserveParams;
use crate::defaults;
use crate::netcycle::NetcycleParams;
use crate::result::ProbeKind;
use crate::roundtrip::RoundtripParams;

/// One probe and its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(into = "ProbeSpecWire", try_from = "ProbeSpecWire")]
pub struct ProbeSpec {
    /// Name, unique in the spec.
    pub name: String,
    /// Period (cyclic), wake-up interval (wakeup), interval between events
    /// (ctxswitch, response) or the tracer's timer period (timerlat), ns.
    /// A chase has none: 0 from `jitterlab run chase`, the unused default
    /// from a spec.
    pub period_ns: u64,
    /// Threshold for "% over threshold", ns; `None`: not given,
    /// [`defaults::THRESHOLD_NS`] (see [`ProbeSpec::threshold`]).
    pub threshold_ns: Option<u64>,
    /// Window length, ns.
    pub window_ns: u64,
    /// How many worst samples to keep per metric.
    pub outliers: usize,
    /// Limit on the main latency, ns (`max_latency`, `--max-latency`).
    pub max_latency_ns: Option<u64>,
    /// Limit on the maximum absolute jitter, ns (cyclic and wakeup).
    pub max_jitter_ns: Option<u64>,
    /// Limit on the maximum execution time, ns (cyclic).
    pub max_exec_ns: Option<u64>,
    /// What only this kind of probe takes; the variant is the kind.
    pub params: ProbeParams,
    /// The scenarios it is limited to and its own measured time, in a
    /// bench; the default (every scenario, the spec's duration) for the
    /// command line's one cell.
    pub scope: ProbeScope,
}

/// Where and how long a probe of a bench runs when it does not follow the
/// whole spec (`scenarios` and `duration` of its `[[probe]]` table): a
/// load sweep measured idle only, beside a probe measured under every
/// condition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbeScope {
    /// The scenarios it runs in, by name, in the spec's order; empty: every
    /// scenario of the spec.
    pub scenarios: Vec<String>,
    /// Its measured time per cell, ns; `None`: the spec's `duration`.
    pub duration_ns: Option<u64>,
}

impl ProbeScope {
    /// True when the probe runs in the scenario called `name`.
    pub fn runs_in(&self, name: &str) -> bool {
        self.scenarios.is_empty() || self.scenarios.iter().any(|s| s == name)
    }

    /// True when it follows the whole spec.
    pub fn is_default(&self) -> bool {
        *self == ProbeScope::default()
    }
}

/// The parameters of one kind of probe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProbeParams {
    /// Control-task emulation.
    Cyclic {
        /// Compute time of the scan per cycle, ns; shorter than the period
        /// ([`scan_fits`]).
        scan_ns: u64,
        /// Memory the scan walks per cycle, bytes.
        working_set_bytes: u64,
    },
    /// The pointer chase.
    Chase {
        /// Buffer to chase, bytes; `None`: half the cache level the probe
        /// CPU shares with the neighbour CPUs.
        buffer_bytes: Option<u64>,
        /// Timed chases per sample; `None`: not given,
        /// [`defaults::ITERATIONS`].
        iterations: Option<u64>,
        /// Samples after which the chase ends; `None`: in a bench cell as
        /// many as fit in the duration, in `jitterlab run chase` without
        /// `--duration` [`defaults::SAMPLES`]. A bench cell's duration caps
        /// it either way.
        samples: Option<u64>,
        /// Dependent loads in one timed chase (`--chase-length`; a spec
        /// cannot set it).
        chase_length: u64,
    },
    /// An event made on another CPU answered by the real-time thread.
    Response {
        /// What makes the event; `None`: not given, the eventfd.
        source: Option<ResponseSource>,
        /// CPU the events are made on; `None`: the first neighbour CPU
        /// (for `jitterlab run`, the first other online CPU), else the
        /// probe's own.
        event_cpu: Option<usize>,
    },
    /// The kernel's timerlat tracer through rtla.
    Timerlat {
        /// rtla's user-space threads (`--user-threads`; a spec cannot set
        /// it).
        user_threads: bool,
        /// Measure on every probe CPU of the configuration (`jitterlab run
        /// timerlat --cpus`), not only its first (a bench cell).
        every_probe_cpu: bool,
    },
    /// [Red Hat controls]'s screw-to-screw round trip over OPC UA PubSub.
    Roundtrip(Box<RoundtripParams>),
    /// [Baumgartner POWERLINK]'s POWERLINK managing node and its controlled nodes.
    Netcycle(Box<NetcycleParams>),
    /// A running task observed through the kernel's tracepoints.
    Observe(Box<ObserveParams>),
    /// A kind that takes only the parameters every probe shares (its
    /// period, threshold, window, outliers and limits, in [`ProbeSpec`]):
    /// `wakeup` (timer wake-up latency, one thread per probe CPU),
    /// `ctxswitch` (two real-time threads on one CPU handing a token back
    /// and forth), and any new kind without parameters of its own.
    Plain(ProbeKind),
}

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

impl ProbeParams {
    /// The kind of probe these parameters belong to.
    pub fn kind(&self) -> ProbeKind {
        match self {
            ProbeParams::Cyclic { .. } => ProbeKind::Cyclic,
            ProbeParams::Chase { .. } => ProbeKind::Chase,
            ProbeParams::Response { .. } => ProbeKind::Response,
            ProbeParams::Timerlat { .. } => ProbeKind::Timerlat,
            ProbeParams::Roundtrip(_) => ProbeKind::Roundtrip,
            ProbeParams::Netcycle(_) => ProbeKind::Netcycle,
            ProbeParams::Observe(_) => ProbeKind::Observe,
            ProbeParams::Plain(kind) => *kind,
        }
    }

    /// A kind's parameters with every default: what a `[[probe]]` table
    /// naming only its kind gets.
    pub fn defaults(kind: ProbeKind) -> ProbeParams {
        match kind {
            ProbeKind::Cyclic => ProbeParams::Cyclic {
                scan_ns: defaults::SCAN_NS,
                working_set_bytes: defaults::WORKING_SET_BYTES,
            },
            ProbeKind::Chase => ProbeParams::Chase {
                buffer_bytes: None,
                iterations: None,
                samples: None,
                chase_length: defaults::CHASE_LENGTH,
            },
            ProbeKind::Response => ProbeParams::Response {
                source: None,
                event_cpu: None,
            },
            ProbeKind::Timerlat => ProbeParams::Timerlat {
                user_threads: false,
                every_probe_cpu: false,
            },
            ProbeKind::Roundtrip => ProbeParams::Roundtrip(Box::default()),
            ProbeKind::Netcycle => ProbeParams::Netcycle(Box::default()),
            ProbeKind::Observe => ProbeParams::Observe(Box::default()),
            kind => ProbeParams::Plain(kind),
        }
    }
}

impl ProbeSpec {
    /// Which probe.
    pub fn kind(&self) -> ProbeKind {
        self.params.kind()
    }

    /// The "% over" threshold, ns, with its default: the round trip's
    /// budget for a `roundtrip` probe, [`defaults::THRESHOLD_NS`] for the
    /// others.
    pub fn threshold(&self) -> u64 {
        self.threshold_ns.unwrap_or_else(|| match &self.params {
            ProbeParams::Roundtrip(r) => r.budget(self.period_ns).total_ns(),
            _ => defaults::THRESHOLD_NS,
        })
    }

    /// The limit on the main latency, ns: `max_latency`, or for a
    /// `roundtrip` probe its budget (any sample over it fails the run).
    pub fn latency_limit(&self) -> Option<u64> {
        match &self.params {
            ProbeParams::Roundtrip(r) => Some(
                self.max_latency_ns
                    .unwrap_or_else(|| r.budget(self.period_ns).total_ns()),
            ),
            _ => self.max_latency_ns,
        }
    }

    /// `(working set, scan)` of a probe that runs the calibrated scan (the
    /// cyclic probe, the round trip's controller); `None` for the others.
    pub fn scan(&self) -> Option<(u64, u64)> {
        match &self.params {
            ProbeParams::Cyclic {
                scan_ns,
                working_set_bytes,
            } => Some((*working_set_bytes, *scan_ns)),
            ProbeParams::Roundtrip(r) => Some((r.working_set_bytes, r.scan_ns)),
            _ => None,
        }
    }

    /// The round trip's own parameters, for a `roundtrip` probe.
    pub fn roundtrip(&self) -> Option<&RoundtripParams> {
        match &self.params {
            ProbeParams::Roundtrip(r) => Some(r),
            _ => None,
        }
    }

    /// The POWERLINK master's own parameters, for a `netcycle` probe.
    pub fn netcycle(&self) -> Option<&NetcycleParams> {
        match &self.params {
            ProbeParams::Netcycle(n) => Some(n),
            _ => None,
        }
    }

    /// `N/A (wire): …` when this is a `netcycle` probe whose cycle's frames
    /// cannot fit on a 100 Mbit/s wire in its period: the one text a run's
    /// refusal, a bench's skipped cell and the reports give.
    pub fn wire_na(&self) -> Option<String> {
        let why = self.netcycle()?.wire_unfit(self.period_ns)?;
        Some(format!("N/A (wire): {why}"))
    }

    /// An observe probe's own parameters.
    pub fn observe(&self) -> Option<&ObserveParams> {
        match &self.params {
            ProbeParams::Observe(o) => Some(o),
            _ => None,
        }
    }

    /// A chase's sample count, when it ends by one.
    pub fn samples(&self) -> Option<u64> {
        match self.params {
            ProbeParams::Chase { samples, .. } => samples,
            _ => None,
        }
    }

    /// The CPUs the probe measures on in a configuration with `probe_cpus`:
    /// a kind whose descriptor says so (the wake-up probe) runs one thread
    /// per probe CPU (so does timerlat when asked to), every other probe
    /// one real-time thread on the first.
    pub fn cpus(&self, probe_cpus: &[usize]) -> Vec<usize> {
        let every = match self.params {
            ProbeParams::Timerlat {
                every_probe_cpu, ..
            } => every_probe_cpu,
            _ => self.kind().descriptor().every_probe_cpu,
        };
        match every {
            true => probe_cpus.to_vec(),
            false => probe_cpus[..probe_cpus.len().min(1)].to_vec(),
        }
    }
}

/// True when a cyclic probe's scan fits in its period (it must be shorter):
/// the one rule both the spec checker and `run cyclic` apply, each naming
/// its own key or flag.
pub fn scan_fits(scan_ns: u64, period_ns: u64) -> bool {
    scan_ns < period_ns
}

/// The serialized shape of a [`ProbeSpec`]: one flat object, as stored in
/// a bench's `spec_json` since the first bench (keys in this order).
#[derive(Serialize, Deserialize)]
struct ProbeSpecWire {
    name: String,
    kind: ProbeKind,
    period_ns: u64,
    #[serde(default)]
    scan_ns: u64,
    #[serde(default)]
    working_set_bytes: u64,
    threshold_ns: Option<u64>,
    window_ns: u64,
    outliers: usize,
    max_latency_ns: Option<u64>,
    max_jitter_ns: Option<u64>,
    max_exec_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    buffer_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    iterations: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    samples: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<ResponseSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    event_cpu: Option<usize>,
    /// Written only when it is not [`defaults::CHASE_LENGTH`] (a spec
    /// cannot set it, so no stored spec has it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    chase_length: Option<u64>,
    #[serde(default, skip_serializing_if = "is_false")]
    user_threads: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    every_probe_cpu: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    roundtrip: Option<Box<RoundtripParams>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    netcycle: Option<Box<NetcycleParams>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    observe: Option<Box<ObserveParams>>,
    /// [`ProbeScope::scenarios`], written only when limited.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    scenarios: Vec<String>,
    /// [`ProbeScope::duration_ns`], written only when the probe has its
    /// own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    duration_ns: Option<u64>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl From<ProbeSpec> for ProbeSpecWire {
    fn from(p: ProbeSpec) -> ProbeSpecWire {
        let mut w = ProbeSpecWire {
            name: p.name,
            kind: p.params.kind(),
            period_ns: p.period_ns,
            scan_ns: 0,
            working_set_bytes: 0,
            threshold_ns: p.threshold_ns,
            window_ns: p.window_ns,
            outliers: p.outliers,
            max_latency_ns: p.max_latency_ns,
            max_jitter_ns: p.max_jitter_ns,
            max_exec_ns: p.max_exec_ns,
            buffer_bytes: None,
            iterations: None,
            samples: None,
            source: None,
            event_cpu: None,
            chase_length: None,
            user_threads: false,
            every_probe_cpu: false,
            roundtrip: None,
            netcycle: None,
            observe: None,
            scenarios: p.scope.scenarios,
            duration_ns: p.scope.duration_ns,
        };
        match p.params {
            ProbeParams::Cyclic {
                scan_ns,
                working_set_bytes,
            } => {
                w.scan_ns = scan_ns;
                w.working_set_bytes = working_set_bytes;
            }
            ProbeParams::Chase {
                buffer_bytes,
                iterations,
                samples,
                chase_length,
            } => {
                w.buffer_bytes = buffer_bytes;
                w.iterations = iterations;
                w.samples = samples;
                w.chase_length = (chase_length != defaults::CHASE_LENGTH).then_some(chase_length);
            }
            ProbeParams::Response { source, event_cpu } => {
                w.source = source;
                w.event_cpu = event_cpu;
            }
            ProbeParams::Timerlat {
                user_threads,
                every_probe_cpu,
            } => {
                w.user_threads = user_threads;
                w.every_probe_cpu = every_probe_cpu;
            }
            ProbeParams::Roundtrip(r) => w.roundtrip = Some(r),
            ProbeParams::Netcycle(n) => w.netcycle = Some(n),
            ProbeParams::Observe(o) => w.observe = Some(o),
            ProbeParams::Plain(_) => {}
        }
        w
    }
}

impl TryFrom<ProbeSpecWire> for ProbeSpec {
    type Error = String;

    fn try_from(w: ProbeSpecWire) -> Result<ProbeSpec, String> {
        let kind = w.kind;
        // A key of another kind means the object is not one jitterlab wrote.
        let foreign = [
            ("scan_ns", w.scan_ns != 0, ProbeKind::Cyclic),
            (
                "working_set_bytes",
                w.working_set_bytes != 0,
                ProbeKind::Cyclic,
            ),
            ("buffer_bytes", w.buffer_bytes.is_some(), ProbeKind::Chase),
            ("iterations", w.iterations.is_some(), ProbeKind::Chase),
            ("samples", w.samples.is_some(), ProbeKind::Chase),
            ("chase_length", w.chase_length.is_some(), ProbeKind::Chase),
            ("source", w.source.is_some(), ProbeKind::Response),
            ("event_cpu", w.event_cpu.is_some(), ProbeKind::Response),
            ("user_threads", w.user_threads, ProbeKind::Timerlat),
            ("every_probe_cpu", w.every_probe_cpu, ProbeKind::Timerlat),
            ("roundtrip", w.roundtrip.is_some(), ProbeKind::Roundtrip),
            ("netcycle", w.netcycle.is_some(), ProbeKind::Netcycle),
            ("observe", w.observe.is_some(), ProbeKind::Observe),
        ];
        if let Some((key, ..)) = foreign.iter().find(|(_, set, k)| *set && *k != kind) {
            return Err(format!("{key} does not apply to a {} probe", kind.name()));
        }
        let params = match kind {
            ProbeKind::Cyclic => ProbeParams::Cyclic {
                scan_ns: w.scan_ns,
                working_set_bytes: w.working_set_bytes,
            },
            ProbeKind::Chase => ProbeParams::Chase {
                buffer_bytes: w.buffer_bytes,
                iterations: w.iterations,
                samples: w.samples,
                chase_length: w.chase_length.unwrap_or(defaults::CHASE_LENGTH),
            },
            ProbeKind::Response => ProbeParams::Response {
                source: w.source,
                event_cpu: w.event_cpu,
            },
            ProbeKind::Timerlat => ProbeParams::Timerlat {
                user_threads: w.user_threads,
                every_probe_cpu: w.every_probe_cpu,
            },
            ProbeKind::Roundtrip => ProbeParams::Roundtrip(
                w.roundtrip
                    .ok_or("a roundtrip probe needs its roundtrip object")?,
            ),
            ProbeKind::Netcycle => ProbeParams::Netcycle(
                w.netcycle
                    .ok_or("a netcycle probe needs its netcycle object")?,
            ),
            ProbeKind::Observe => ProbeParams::Observe(
                w.observe
                    .ok_or("an observe probe needs its observe object")?,
            ),
            kind => ProbeParams::Plain(kind),
        };
        Ok(ProbeSpec {
            name: w.name,
            period_ns: w.period_ns,
            threshold_ns: w.threshold_ns,
            window_ns: w.window_ns,
            outliers: w.outliers,
            max_latency_ns: w.max_latency_ns,
            max_jitter_ns: w.max_jitter_ns,
            max_exec_ns: w.max_exec_ns,
            params,
            scope: ProbeScope {
                scenarios: w.scenarios,
                duration_ns: w.duration_ns,
            },
        })
    }
}
