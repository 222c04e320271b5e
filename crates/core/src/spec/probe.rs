//! One probe of a spec, typed: the parameters every probe shares
//! ([`ProbeSpec`]) and, per kind, the ones only it takes ([`ProbeParams`]).
//!
//! This is the one model both front doors produce — the spec checker from a
//! `[[probe]]` table, the command line from `jitterlab run X`'s flags — and
//! the only one the runner reads. A kind's own parameters are its own type
//! (declared in its folder, with its key table: [`super::param`]), held
//! as a trait object, so a value that means nothing to a kind (a scan for
//! a chase, a source for a wake-up probe) cannot be written down, and no
//! code outside the kind's folder names them.
//!
//! The serialized form (stored in a bench's `spec_json`) is the flat object
//! jitterlab has always written: `kind` beside the common keys, `scan_ns`
//! and `working_set_bytes` on every probe (0 but for the probes that scan),
//! each kind's own keys only when set, and a bench probe's `scenarios` and
//! `duration_ns` ([`ProbeScope`]) only when set, so a spec without them
//! stores the bytes it always did. Each kind writes ([`Params::wire`]) and
//! reads ([`super::param::ParamTable::read`]) its own keys; the writer
//! here keeps the order.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::fmt;

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::param::{take, Ordered, Params};
use crate::defaults;
use crate::result::ProbeKind;

/// One probe and its parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
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

/// The parameters of one kind of probe: its kind's [`Params`], boxed.
/// The type is the kind's own (declared in its folder with its key
/// table); [`ProbeParams::get`] gives it back.
pub struct ProbeParams(Box<dyn Params>);

impl ProbeParams {
    /// Wraps one kind's parameters.
    pub fn new<P: Params>(params: P) -> ProbeParams {
        ProbeParams(Box::new(params))
    }

    /// The kind of probe these parameters belong to.
    pub fn kind(&self) -> ProbeKind {
        self.0.kind()
    }

    /// A kind's parameters with every default: what a `[[probe]]` table
    /// naming only its kind gets.
    pub fn defaults(kind: ProbeKind) -> ProbeParams {
        (kind.descriptor().params.defaults)(kind)
    }

    /// The parameters as their kind's type, when they are of type `P`.
    pub fn get<P: Params>(&self) -> Option<&P> {
        self.0.as_any().downcast_ref()
    }

    /// The parameters as their kind's type, to change, when they are of
    /// type `P`.
    pub fn get_mut<P: Params>(&mut self) -> Option<&mut P> {
        self.0.as_any_mut().downcast_mut()
    }
}

impl std::ops::Deref for ProbeParams {
    type Target = dyn Params;

    fn deref(&self) -> &(dyn Params + 'static) {
        &*self.0
    }
}

impl Clone for ProbeParams {
    fn clone(&self) -> ProbeParams {
        ProbeParams(self.0.clone_box())
    }
}

impl PartialEq for ProbeParams {
    fn eq(&self, other: &ProbeParams) -> bool {
        self.0.eq_dyn(&*other.0)
    }
}

impl Eq for ProbeParams {}

impl fmt::Debug for ProbeParams {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl ProbeSpec {
    /// Which probe.
    pub fn kind(&self) -> ProbeKind {
        self.params.kind()
    }

    /// The "% over" threshold, ns, with its default: the kind's own (the
    /// round trip's budget), else [`defaults::THRESHOLD_NS`].
    pub fn threshold(&self) -> u64 {
        self.threshold_ns.unwrap_or_else(|| {
            self.params
                .default_threshold(self.period_ns)
                .unwrap_or(defaults::THRESHOLD_NS)
        })
    }

    /// The limit on the main latency, ns: `max_latency`, or the kind's own
    /// (a round trip's budget: any sample over it fails the run).
    pub fn latency_limit(&self) -> Option<u64> {
        self.params
            .latency_limit(self.period_ns, self.max_latency_ns)
    }

    /// `(working set, scan)` of a probe that runs the calibrated scan (the
    /// cyclic probe, the round trip's controller); `None` for the others.
    pub fn scan(&self) -> Option<(u64, u64)> {
        self.params.scan()
    }

    /// `N/A (wire): …` when the probe's frames cannot fit on its wire in
    /// its period: the one text a run's refusal, a bench's skipped cell
    /// and the reports give.
    pub fn wire_na(&self) -> Option<String> {
        let why = self.params.wire_unfit(self.period_ns)?;
        Some(format!("N/A (wire): {why}"))
    }

    /// The sample count the probe ends by, when it ends by one (a chase's).
    pub fn samples(&self) -> Option<u64> {
        self.params.samples()
    }

    /// The CPUs the probe measures on in a configuration with `probe_cpus`:
    /// a kind whose parameters say so (the wake-up probe; timerlat when
    /// asked to) runs one thread per probe CPU, every other probe one
    /// real-time thread on the first.
    pub fn cpus(&self, probe_cpus: &[usize]) -> Vec<usize> {
        match self.params.every_probe_cpu() {
            true => probe_cpus.to_vec(),
            false => probe_cpus[..probe_cpus.len().min(1)].to_vec(),
        }
    }
}

/// True when a probe's scan fits in its period (it must be shorter): the
/// one rule both the spec checker and `run cyclic` apply, each naming its
/// own key or flag.
pub fn scan_fits(scan_ns: u64, period_ns: u64) -> bool {
    scan_ns < period_ns
}

// ---------------------------------------------------------------------------
// The stored JSON: one flat object, as stored in a bench's `spec_json`
// since the first bench. The shared keys in this order: `name`, `kind`,
// `period_ns`, `scan_ns`, `working_set_bytes`, `threshold_ns`, `window_ns`,
// `outliers`, the three limits; then the kind's own entries; then the
// scope's, each only when set.

impl Serialize for ProbeSpec {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut own = self.params.wire();
        let mut scan = |key: &str| match own.iter().position(|(k, _)| *k == key) {
            Some(i) => own.remove(i).1,
            None => Ordered::U64(0),
        };
        let scan_ns = scan("scan_ns");
        let working_set_bytes = scan("working_set_bytes");
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("name", &self.name)?;
        m.serialize_entry("kind", &self.kind())?;
        m.serialize_entry("period_ns", &self.period_ns)?;
        m.serialize_entry("scan_ns", &scan_ns)?;
        m.serialize_entry("working_set_bytes", &working_set_bytes)?;
        m.serialize_entry("threshold_ns", &self.threshold_ns)?;
        m.serialize_entry("window_ns", &self.window_ns)?;
        m.serialize_entry("outliers", &self.outliers)?;
        m.serialize_entry("max_latency_ns", &self.max_latency_ns)?;
        m.serialize_entry("max_jitter_ns", &self.max_jitter_ns)?;
        m.serialize_entry("max_exec_ns", &self.max_exec_ns)?;
        for (k, v) in &own {
            m.serialize_entry(k, v)?;
        }
        if !self.scope.scenarios.is_empty() {
            m.serialize_entry("scenarios", &self.scope.scenarios)?;
        }
        if let Some(d) = self.scope.duration_ns {
            m.serialize_entry("duration_ns", &d)?;
        }
        m.end()
    }
}

impl<'de> Deserialize<'de> for ProbeSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ProbeSpec, D::Error> {
        let m = serde_json::Map::deserialize(d)?;
        from_wire(m).map_err(D::Error::custom)
    }
}

/// True when a stored value says something (not absent, null, 0 or false).
fn set(v: Option<&Value>) -> bool {
    !matches!(v, None | Some(Value::Null) | Some(Value::Bool(false)))
        && v.and_then(Value::as_u64) != Some(0)
}

/// A required key of the stored object.
fn required<T: serde::de::DeserializeOwned>(
    m: &mut serde_json::Map<String, Value>,
    key: &str,
) -> Result<T, String> {
    match m.remove(key) {
        Some(v) => serde_json::from_value(v).map_err(|e| format!("{key}: {e}")),
        None => Err(format!("missing field `{key}`")),
    }
}

fn from_wire(mut m: serde_json::Map<String, Value>) -> Result<ProbeSpec, String> {
    let name: String = required(&mut m, "name")?;
    let kind: ProbeKind = required(&mut m, "kind")?;
    // A key of another kind means the object is not one jitterlab wrote.
    for &other in ProbeKind::ALL {
        if other == kind {
            continue;
        }
        if let Some(key) = other
            .descriptor()
            .params
            .wire_keys
            .iter()
            .find(|k| set(m.get(**k)))
        {
            return Err(format!("{key} does not apply to a {} probe", kind.name()));
        }
    }
    let period_ns = required(&mut m, "period_ns")?;
    let threshold_ns = take(&mut m, "threshold_ns")?;
    let window_ns = required(&mut m, "window_ns")?;
    let outliers = required(&mut m, "outliers")?;
    let max_latency_ns = take(&mut m, "max_latency_ns")?;
    let max_jitter_ns = take(&mut m, "max_jitter_ns")?;
    let max_exec_ns = take(&mut m, "max_exec_ns")?;
    let scope = ProbeScope {
        scenarios: take(&mut m, "scenarios")?,
        duration_ns: take(&mut m, "duration_ns")?,
    };
    let params = (kind.descriptor().params.read)(kind, &mut m)?;
    Ok(ProbeSpec {
        name,
        period_ns,
        threshold_ns,
        window_ns,
        outliers,
        max_latency_ns,
        max_jitter_ns,
        max_exec_ns,
        params,
        scope,
    })
}
