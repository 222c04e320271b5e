//! The cell: one configuration × scenario × deployment × probe (× repetition)
//! of a bench, and what was seen around it.
//!
//! A cell's figures are a [`RunResult`](crate::result::RunResult) like the one
//! `jitterlab run` produces; this module holds what a bench adds: which cell
//! it was ([`CellKey`]), the neighbours that ran beside the probe and the
//! proof that they made noise ([`NeighbourReport`]), and the counters that
//! explain outliers — hypervisor steal, interrupts and softirqs that hit the
//! probe CPUs ([`CpuCounters`]). Reports read these from the store; nothing
//! here measures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Which cell of a bench's matrix; defined with the spec that plans the
/// cells, named here too because every stored cell carries one.
pub use crate::spec::CellKey;

use crate::noise;

/// How a cell ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellStatus {
    /// Not started yet.
    Pending,
    /// Being measured.
    Running,
    /// Measured to its end.
    Completed,
    /// A neighbour died early, a setting failed, or the probe failed: the
    /// figures (if any) do not describe the scenario.
    Failed,
    /// Ended by a terminating signal or by the death of jitterlab.
    Interrupted,
    /// Not run, for a reason the context's notes give (e.g. the `usb`
    /// scenario without a path).
    Skipped,
}

impl CellStatus {
    /// The name stored in the database and printed in reports.
    pub fn name(self) -> &'static str {
        match self {
            CellStatus::Pending => "pending",
            CellStatus::Running => "running",
            CellStatus::Completed => "completed",
            CellStatus::Failed => "failed",
            CellStatus::Interrupted => "interrupted",
            CellStatus::Skipped => "skipped",
        }
    }

    /// Parses [`CellStatus::name`].
    pub fn parse(s: &str) -> Option<CellStatus> {
        [
            CellStatus::Pending,
            CellStatus::Running,
            CellStatus::Completed,
            CellStatus::Failed,
            CellStatus::Interrupted,
            CellStatus::Skipped,
        ]
        .into_iter()
        .find(|c| c.name() == s)
    }
}

/// One neighbour process group, as it ran beside one cell.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct NeighbourReport {
    /// Name within the scenario (e.g. `stress-ng`, `flood`).
    pub name: String,
    /// The argument vector it was started with (no shell).
    pub argv: Vec<String>,
    /// CPUs it was pinned to.
    pub cpus: Vec<usize>,
    /// Process group id (= the leader's pid).
    pub pgid: i32,
    /// CPU time (user + system) its whole process group used during the
    /// measured part of the cell, ns (kernel resolution: one clock tick).
    pub cpu_time_ns: u64,
    /// Wall time of the measured part of the cell, ns (so `cpu_time_ns /
    /// wall_ns` is the number of CPUs it kept busy).
    pub wall_ns: u64,
    /// stress-ng's bogo-ops per stressor (`--metrics-brief`), when it is
    /// stress-ng and printed them.
    pub bogo_ops: BTreeMap<String, u64>,
    /// How it ended: `stopped` (by jitterlab at the end of the cell),
    /// `exited early with status N`, `killed by signal N`.
    pub end: String,
    /// Whether it was alive for the whole cell.
    pub healthy: bool,
    /// Last lines of its stderr when it was not healthy.
    pub stderr_tail: Vec<String>,
    /// Its load against what it was asked (stress-ng only; `None`: no
    /// stated request, or stored by a version that did not judge it).
    #[serde(default)]
    pub load: Option<noise::LoadCheck>,
}

/// What happened on one probe CPU during the measured part of a cell:
/// deltas of the kernel's counters, read before and after.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CpuCounters {
    /// CPU number.
    pub cpu: usize,
    /// Hypervisor steal time (`/proc/stat`), ns.
    pub steal_ns: u64,
    /// Hardware interrupts taken (`/proc/interrupts`, every line summed).
    pub irqs: u64,
    /// The interrupt lines that hit this CPU, by line name (`/proc/interrupts`
    /// first column, e.g. `LOC`, `24`), non-zero deltas only.
    pub irq_lines: BTreeMap<String, u64>,
    /// Softirqs by type (`/proc/softirqs`, e.g. `NET_RX`, `TIMER`),
    /// non-zero deltas only.
    pub softirqs: BTreeMap<String, u64>,
}

/// One setting of a cell's configuration (IRQ affinity, a sysctl, the
/// cpufreq governor …): as requested, as it was, as applied and as verified
/// by reading it back.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SettingReport {
    /// What it sets, e.g. `kernel.timer_migration`, `irq affinity`.
    pub name: String,
    /// The value the configuration asked for.
    pub requested: String,
    /// The value before jitterlab changed it.
    pub before: String,
    /// The value jitterlab wrote.
    pub applied: String,
    /// The value read back after writing.
    pub verified: String,
    /// Whether the verified value is what was requested.
    pub ok: bool,
    /// What could not be done and why (e.g. IRQs the kernel refused to move).
    pub notes: Vec<String>,
}

/// Everything a bench records about one cell beyond its figures.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CellContext {
    /// The probe CPUs' counters.
    pub cpus: Vec<CpuCounters>,
    /// Per-CPU NET_RX softirqs on every online CPU (to show where network
    /// receive work landed), by CPU.
    pub net_rx: BTreeMap<usize, u64>,
    /// Neighbours that ran beside the probe.
    pub neighbours: Vec<NeighbourReport>,
    /// The configuration's settings, as requested, applied and verified.
    #[serde(default)]
    pub settings: Vec<SettingReport>,
    /// Why the cell failed, when it did.
    pub failure: Option<String>,
    /// Notes on the cell (skipped scenario, settings that did not apply …).
    pub notes: Vec<String>,
    /// Real-time throttling as seen around the cell (`None`: not read, or
    /// stored by a version that did not read it).
    #[serde(default)]
    pub throttling: Option<crate::rt_throttle::Throttling>,
}

/// A stored cell as reports read it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredCell {
    /// Which cell.
    pub key: CellKey,
    /// How it ended.
    pub status: CellStatus,
    /// Its figures, when it measured anything (the same model `jitterlab
    /// run --json` writes; the per-metric figures are in `combined` when the
    /// probe ran more than one thread, else in `threads[0].metrics`).
    pub result: Option<crate::result::RunResult>,
    /// What was seen around it.
    pub context: CellContext,
}

/// A stored run (one `jitterlab run` or one `jitterlab bench`) as reports
/// read it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRun {
    /// Run id in the database.
    pub id: i64,
    /// RFC 3339 start time.
    pub started_at: String,
    /// `run` or `bench`.
    pub kind: String,
    /// The spec's name (bench) or the probe (run).
    pub name: String,
    /// `running`, `completed`, `interrupted`, `break-trace`.
    pub status: String,
    /// Host name.
    pub hostname: String,
    /// Kernel release.
    pub kernel_release: String,
    /// Configuration names in spec order (the first is the default baseline).
    pub configurations: Vec<String>,
    /// Scenario names in spec order.
    pub scenarios: Vec<String>,
    /// Configurations the spec describes that this machine could not run,
    /// with the reason (reports print them as N/A).
    pub unavailable: Vec<(String, String)>,
    /// Every cell, in the order it ran.
    pub cells: Vec<StoredCell>,
    /// A bench's probes as its spec gave them (their parameters and the
    /// scenarios they were limited to): the tables read what a cell that
    /// stored no result measured, e.g. the cycle time and nodes of a
    /// skipped `N/A (wire)` cell. Empty for a `jitterlab run` and a bench
    /// stored before they were kept.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<crate::spec::ProbeSpec>,
}

/// Judges each stress-ng neighbour of one cell against its request: the
/// requests read from the argument vectors ([`noise::stress_ng_intent`]), shared
/// out among neighbours pinned to the same CPUs ([`noise::share_out`]), compared
/// with the CPU time and bogo-ops each achieved ([`LoadCheck::judge`](noise::LoadCheck::judge)). A
/// neighbour that ended early, or one with no stated request, gets no
/// judgement (`load` stays `None`: not measured). It reads only what a cell
/// stores, so a cell stored before loads were judged is judged the same
/// way when it is reported.
pub fn judge_loads(reports: &mut [NeighbourReport]) {
    let intents: Vec<Option<noise::Intent>> = reports
        .iter()
        .map(|r| noise::stress_ng_intent(&r.argv, r.cpus.len()))
        .collect();
    let asks: Vec<(Vec<usize>, u64)> = reports
        .iter()
        .zip(&intents)
        .map(|(r, i)| {
            let mut cpus = r.cpus.clone();
            cpus.sort_unstable();
            (cpus, i.as_ref().map_or(0, |i| i.cpu_milli))
        })
        .collect();
    let shares = noise::share_out(&asks);
    for ((r, intent), share) in reports.iter_mut().zip(&intents).zip(shares) {
        r.load = match intent {
            Some(i) if r.healthy => {
                noise::LoadCheck::judge(i, share, r.cpu_time_ns, r.wall_ns, &r.bogo_ops)
            }
            _ => None,
        };
    }
}
