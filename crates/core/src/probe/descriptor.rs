//! What a probe kind is described by, without naming any kind: the
//! metric table ([`MetricDef`], [`MetricUnit`], [`MAX_METRICS`]), the words
//! its reports use ([`ReportWords`]), whether it runs in a container
//! ([`InContainer`]) and the descriptor that gathers them
//! ([`ProbeDescriptor`]), with the periodic probes' shared metric table.
//! Below every kind, which each builds its own descriptor from, and below
//! the registry ([`super`]) that finds a kind's.

use serde::{Deserialize, Serialize};

use crate::netns::PairKind;
use crate::spec::ParamTable;
use crate::verdict::KindVerdicts;

/// How many metrics one probe can measure: the slots a sample and a window
/// row carry. Slot `i` holds `descriptor.metrics[i]`.
pub const MAX_METRICS: usize = 8;

/// The unit of a metric's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricUnit {
    /// Nanoseconds (design rule 1).
    Ns,
    /// CPU (TSC) cycles, their own unit; converted only for display.
    Cycles,
}

impl MetricUnit {
    /// The unit's short name, as reports and CSV headers print it.
    pub fn name(self) -> &'static str {
        match self {
            MetricUnit::Ns => "ns",
            MetricUnit::Cycles => "cycles",
        }
    }
}

/// One metric a probe measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricDef {
    /// Name used in CLI, JSON, CSV and the database (`chase`, `handover`, …).
    pub name: &'static str,
    /// Unit of its values.
    pub unit: MetricUnit,
    /// True when negative values mean something (kept in their own
    /// histogram).
    pub signed: bool,
    /// True when "% over the threshold" applies to it.
    pub thresholded: bool,
}

/// The words a report uses for a probe's samples and parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReportWords {
    /// The label of the summary's header line that shows the run's
    /// `period_ns` (`period`, `interval`); `None` when the probe has no
    /// period.
    pub period: Option<&'static str>,
    /// What a sample is called in the plural, in the per-thread line of a
    /// probe that is not periodic (`chases`, `hand-overs`, `events`, …).
    pub samples: &'static str,
    /// What a sample is called in the outlier lists (`cycle`, `sample`).
    pub sample: &'static str,
    /// The metrics whose largest values the summary lists, in metric-table
    /// order.
    pub outliers: &'static [&'static str],
}

/// Whether a probe kind can measure with its probe side in a container
/// (deployment `container`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InContainer {
    /// Its threads run in the container as they run on the host.
    Supported,
    /// Part of it runs in a container, placed by the kind's own build: the
    /// round trip's controller (the seed's virtual PLC) in a container, its
    /// I/O simulator on the host.
    OwnSide,
    /// It cannot: the reason, said where a container cell is skipped or a
    /// `--deployment container` run is refused.
    NotApplicable(&'static str),
}

/// Everything jitterlab knows about one probe kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProbeDescriptor {
    /// The name used on the command line, in specs, JSON and the database.
    pub name: &'static str,
    /// One line saying what the probe measures.
    pub summary: &'static str,
    /// The metrics it measures, in slot order (at most [`MAX_METRICS`]).
    pub metrics: &'static [MetricDef],
    /// The latency that answers "how late?": what [Xu EPICS]'s latency table
    /// reports and `max_latency` limits; `None` when the probe measures no
    /// latency (the chase measures cycles).
    pub main_latency: Option<&'static str>,
    /// True when its samples are the cycles of a release schedule (they
    /// have releases, skips and overruns).
    pub periodic: bool,
    /// True when its threads run the calibrated scan workload and report
    /// their calibration.
    pub calibrated: bool,
    /// True when it measures with one thread on every probe CPU of its
    /// configuration (the wake-up probe, as cyclictest does); false: on the
    /// first only.
    pub every_probe_cpu: bool,
    /// True when messages and listings name it (the kinds a spec's `kind`
    /// offers); false for a probe compiled only for tests.
    pub listed: bool,
    /// The words its reports use.
    pub words: ReportWords,
    /// Its parameters: their type, key table and checks, declared in the
    /// kind's own module.
    pub params: &'static ParamTable,
    /// Whether its probe side can run in a container.
    pub container: InContainer,
    /// What it judges beyond its limits and main metric; `None`: nothing.
    pub verdicts: Option<&'static KindVerdicts>,
    /// The pair of network namespaces it makes for itself, declared in its
    /// own folder; `None`: none. `jitterlab restore` deletes only the
    /// namespaces a kind's pair names ([`crate::netns::is_ours`]).
    pub netns: Option<&'static PairKind>,
}

impl ProbeDescriptor {
    /// The definition of one of its metrics, by name.
    pub fn metric(&self, name: &str) -> Option<&'static MetricDef> {
        self.metrics.iter().find(|d| d.name == name)
    }

    /// The slot of one of its metrics, by name.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.metrics.iter().position(|d| d.name == name)
    }

    /// True when a `[[probe]]` table of this kind may hold `key`.
    pub fn accepts_spec_key(&self, key: &str) -> bool {
        self.params.accepts(key)
    }
}

/// A nanosecond metric.
pub(crate) const fn ns(name: &'static str, signed: bool, thresholded: bool) -> MetricDef {
    MetricDef {
        name,
        unit: MetricUnit::Ns,
        signed,
        thresholded,
    }
}

/// A metric in CPU cycles.
pub(super) const fn cycles(name: &'static str) -> MetricDef {
    MetricDef {
        name,
        unit: MetricUnit::Cycles,
        signed: false,
        thresholded: false,
    }
}

/// The periodic probes' metrics, in [`METRICS`](crate::cycle::METRICS)
/// order: wake-up latency, period, periodic jitter, execution time.
pub const PERIODIC_METRICS: &[MetricDef] = &[
    ns("latency", false, true),
    ns("period", false, false),
    ns("jitter", true, true),
    ns("exec", false, false),
];

/// The words of the periodic probes' outlier lists.
pub(crate) const PERIODIC_OUTLIERS: &[&str] = &["latency", "jitter"];
