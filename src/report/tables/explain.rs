//! What explains a cell's outliers, from what the bench saw around it.
//!
//! A large jitter on a VM is often hypervisor steal; on bare metal, an
//! interrupt or a softirq that landed on the probe CPU, or a neighbour that
//! kept more CPUs busy than planned. A table alone cannot tell these apart, so
//! after the tables every stored cell (each repetition, in the order they ran)
//! gets a short block built from its [`CellContext`] and its threads' usage.
//! Zeros are stated (`no steal`, `no interrupts`, `no involuntary`) so that a
//! reader can tell "nothing happened" from "not recorded".
//!
//! The same [`Explanation`] is printed as lines (text, md) and serialised
//! as it is (json), so both say the same.
//!
//! [`CellContext`]: jitterlab_core::cell::CellContext

use std::collections::BTreeMap;

use jitterlab_core::cell::{CellStatus, StoredCell, StoredRun};
use jitterlab_core::units::{format_ns, CpuList};
use serde::Serialize;

use super::round_div;

/// How many interrupt lines and softirq types are named.
const TOP: usize = 3;

/// A named count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct Count {
    /// Interrupt line or softirq type.
    pub name: String,
    /// How many.
    pub count: u64,
}

/// NET_RX softirqs on one CPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(super) struct CpuCount {
    /// CPU.
    pub cpu: usize,
    /// How many.
    pub count: u64,
}

/// One neighbour, as far as it explains anything.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Neighbour {
    /// Name within the scenario.
    pub name: String,
    /// CPUs it was pinned to.
    pub cpus: Vec<usize>,
    /// CPU time of its process group, ns.
    pub cpu_time_ns: u64,
    /// Wall time of the measured part of the cell, ns.
    pub wall_ns: u64,
    /// `cpu_time_ns / wall_ns`, two decimals; `None` without wall time.
    pub cpus_busy: Option<f64>,
    /// Total bogo-ops, when it reported any.
    pub bogo_ops: Option<u64>,
    /// Alive for the whole cell.
    pub healthy: bool,
    /// How it ended.
    pub end: String,
    /// Last lines of its stderr (unhealthy only).
    pub stderr_tail: Vec<String>,
    /// Its load against its request: `short of its load: …` or
    /// `delivered its load: …`; absent when not judged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<String>,
}

/// What explains one stored cell's outliers.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(super) struct Explanation {
    /// `configuration/scenario/deployment/probe`.
    pub cell: String,
    /// Repetition, from 0.
    pub repetition: u32,
    /// How it ended.
    pub status: &'static str,
    /// Why it failed.
    pub failure: Option<String>,
    /// The CPUs whose counters were read.
    pub probe_cpus: Vec<usize>,
    /// Hypervisor steal on them, ns.
    pub steal_ns: u64,
    /// Interrupts that hit them.
    pub irqs: u64,
    /// The largest interrupt lines, summed over the probe CPUs.
    pub top_irq_lines: Vec<Count>,
    /// Softirqs on them.
    pub softirqs: u64,
    /// The largest softirq types, summed over the probe CPUs.
    pub top_softirqs: Vec<Count>,
    /// The probe threads' voluntary context switches (summed).
    pub voluntary_switches: Option<u64>,
    /// The probe threads' involuntary context switches (summed).
    pub involuntary_switches: Option<u64>,
    /// NET_RX softirqs per CPU, non-zero only.
    pub net_rx: Vec<CpuCount>,
    /// Neighbours.
    pub neighbours: Vec<Neighbour>,
    /// The configuration's settings, as applied and verified.
    pub settings: Vec<jitterlab_core::cell::SettingReport>,
    /// Notes recorded with the cell.
    pub notes: Vec<String>,
    /// Real-time throttling that explains the cell's stalls: the cause,
    /// the evidence and the fix; absent when it explains none.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub throttling: Vec<String>,
    /// What ran before the cell's worst cycle, per probe thread, when the
    /// probe traced it (`explain = true`, `observe`): the kind's own line
    /// for that outlier, as `jitterlab report` prints under a run's.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub traced: Vec<String>,
}

/// The traced explanation of each probe thread's worst latency in `r`,
/// from its kind's [`outlier_note`](crate::probe::parts::ReportParts): prefixed
/// with the thread's CPU when the cell had several.
fn traced(r: &jitterlab_core::result::RunResult) -> Vec<String> {
    let Some(note) = crate::probe::parts::of(r.probe).outlier_note else {
        return Vec::new();
    };
    let several = r.threads.len() > 1;
    r.threads
        .iter()
        .filter_map(|t| {
            let worst = t
                .outliers
                .get("latency")?
                .iter()
                .max_by(|a, b| a.value.cmp(&b.value).then(b.cycle.cmp(&a.cycle)))?;
            let line = note(r, "latency", t.cpu, worst.cycle)?;
            Some(match several {
                true => format!("what delayed the worst cycle on CPU {}: {line}", t.cpu),
                false => format!("what delayed the worst cycle: {line}"),
            })
        })
        .collect()
}

/// The `TOP` largest counts (ties by name), after summing per name.
fn top(maps: impl Iterator<Item = (String, u64)>) -> (u64, Vec<Count>) {
    let mut sum: BTreeMap<String, u64> = BTreeMap::new();
    for (k, v) in maps {
        *sum.entry(k).or_default() += v;
    }
    let total = sum.values().sum();
    let mut v: Vec<Count> = sum
        .into_iter()
        .filter(|(_, c)| *c > 0)
        .map(|(name, count)| Count { name, count })
        .collect();
    v.sort_by(|a, b| b.count.cmp(&a.count).then(a.name.cmp(&b.name)));
    v.truncate(TOP);
    (total, v)
}

fn neighbour(n: &jitterlab_core::cell::NeighbourReport) -> Neighbour {
    Neighbour {
        name: n.name.clone(),
        cpus: n.cpus.clone(),
        cpu_time_ns: n.cpu_time_ns,
        wall_ns: n.wall_ns,
        cpus_busy: (n.wall_ns > 0)
            .then(|| round_div(n.cpu_time_ns as i128 * 100, n.wall_ns as i128) as f64 / 100.0),
        bogo_ops: (!n.bogo_ops.is_empty()).then(|| n.bogo_ops.values().sum()),
        healthy: n.healthy,
        end: n.end.clone(),
        stderr_tail: if n.healthy {
            Vec::new()
        } else {
            n.stderr_tail.clone()
        },
        load: n.load.as_ref().map(|l| l.text()),
    }
}

fn one(c: &StoredCell) -> Explanation {
    let ctx = &c.context;
    let (irqs, top_irq_lines) = top(ctx
        .cpus
        .iter()
        .flat_map(|k| k.irq_lines.iter().map(|(n, v)| (n.clone(), *v))));
    // The line total is the kernel's own per-CPU sum, not the named lines'.
    let irqs = ctx.cpus.iter().map(|k| k.irqs).sum::<u64>().max(irqs);
    let (softirqs, top_softirqs) = top(ctx
        .cpus
        .iter()
        .flat_map(|k| k.softirqs.iter().map(|(n, v)| (n.clone(), *v))));
    let threads = c.result.as_ref().map(|r| &r.threads);
    Explanation {
        cell: c.key.name(),
        repetition: c.key.repetition,
        status: c.status.name(),
        failure: ctx.failure.clone(),
        probe_cpus: ctx.cpus.iter().map(|k| k.cpu).collect(),
        steal_ns: ctx.cpus.iter().map(|k| k.steal_ns).sum(),
        irqs,
        top_irq_lines,
        softirqs,
        top_softirqs,
        voluntary_switches: threads.map(|t| t.iter().map(|t| t.usage.voluntary_switches).sum()),
        involuntary_switches: threads.map(|t| t.iter().map(|t| t.usage.involuntary_switches).sum()),
        net_rx: ctx
            .net_rx
            .iter()
            .filter(|(_, v)| **v > 0)
            .map(|(cpu, count)| CpuCount {
                cpu: *cpu,
                count: *count,
            })
            .collect(),
        neighbours: ctx.neighbours.iter().map(neighbour).collect(),
        settings: ctx.settings.clone(),
        notes: ctx.notes.clone(),
        throttling: ctx
            .throttling
            .as_ref()
            .map(|t| {
                // The summary lines, then each window it hit.
                let window_ns = c.result.as_ref().map_or(0, |r| r.params.window_ns);
                let mut v = t.lines();
                v.extend(t.windows_line(window_ns));
                v
            })
            .unwrap_or_default(),
        traced: c.result.as_ref().map(traced).unwrap_or_default(),
    }
}

/// Every stored cell's explanation, in the order the cells ran.
pub(super) fn explain(run: &StoredRun) -> Vec<Explanation> {
    run.cells.iter().map(one).collect()
}

fn counts(v: &[Count]) -> String {
    v.iter()
        .map(|c| format!("{}={}", c.name, c.count))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `CPU 1` or `CPUs 0-1`.
fn cpus(v: &[usize]) -> String {
    let list = v.iter().copied().collect::<CpuList>();
    if list.len() == 1 {
        format!("CPU {list}")
    } else {
        format!("CPUs {list}")
    }
}

fn i(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}

impl Explanation {
    /// The explanation as lines: the cell's line first (depth 0), then one
    /// line per subject (depth 1), a neighbour's stderr under it (depth 2).
    pub fn lines(&self) -> Vec<(usize, String)> {
        let mut v = Vec::new();
        let mut head = format!("{} rep {}: {}", self.cell, self.repetition, self.status);
        if let Some(f) = &self.failure {
            head.push_str(&format!(" ({f})"));
        }
        v.push((0, head));
        if self.status == CellStatus::Pending.name() || self.status == CellStatus::Skipped.name() {
            v.push((1, "not measured".into()));
            for n in &self.notes {
                v.push((1, format!("note: {n}")));
            }
            return v;
        }
        if self.probe_cpus.is_empty() {
            v.push((1, "probe CPUs: no counters recorded".into()));
        } else {
            let steal = if self.steal_ns == 0 {
                "no steal".to_string()
            } else {
                format!("steal {}", format_ns(i(self.steal_ns)))
            };
            let irqs = if self.irqs == 0 {
                "no interrupts".to_string()
            } else if self.top_irq_lines.is_empty() {
                format!("{} interrupts", self.irqs)
            } else {
                format!("{} interrupts ({})", self.irqs, counts(&self.top_irq_lines))
            };
            let soft = if self.softirqs == 0 {
                "no softirqs".to_string()
            } else {
                format!(
                    "{} softirqs ({})",
                    self.softirqs,
                    counts(&self.top_softirqs)
                )
            };
            v.push((
                1,
                format!("probe {}: {steal}; {irqs}; {soft}", cpus(&self.probe_cpus)),
            ));
        }
        match (self.voluntary_switches, self.involuntary_switches) {
            (Some(vol), Some(inv)) => {
                let n = |x: u64| {
                    if x == 0 {
                        "no".to_string()
                    } else {
                        x.to_string()
                    }
                };
                v.push((
                    1,
                    format!(
                        "probe context switches: {} voluntary, {} involuntary",
                        n(vol),
                        n(inv)
                    ),
                ));
            }
            _ => v.push((1, "probe context switches: not recorded".into())),
        }
        if self.net_rx.is_empty() {
            v.push((1, "NET_RX: none".into()));
        } else {
            let per: Vec<String> = self
                .net_rx
                .iter()
                .map(|c| format!("{} on CPU {}", c.count, c.cpu))
                .collect();
            v.push((1, format!("NET_RX: {}", per.join(", "))));
        }
        if self.neighbours.is_empty() {
            v.push((1, "neighbours: none".into()));
        }
        for n in &self.neighbours {
            let busy = match n.cpus_busy {
                Some(b) => format!("{b:.2} CPUs busy"),
                None => "CPUs busy unknown (no wall time)".into(),
            };
            let mut l = format!(
                "neighbour {} ({}): CPU time {} in {}, {busy}",
                n.name,
                cpus(&n.cpus),
                format_ns(i(n.cpu_time_ns)),
                format_ns(i(n.wall_ns)),
            );
            if let Some(b) = n.bogo_ops {
                l.push_str(&format!(", {b} bogo-ops"));
            }
            if let Some(load) = n.load.as_ref().filter(|l| l.starts_with("short")) {
                l.push_str(&format!(", alive but {load}"));
            } else if n.healthy {
                l.push_str(", healthy");
                if let Some(load) = &n.load {
                    l.push_str(&format!(", {load}"));
                }
            } else {
                l.push_str(&format!(", unhealthy: {}", n.end));
            }
            v.push((1, l));
            for s in &n.stderr_tail {
                v.push((2, format!("stderr: {s}")));
            }
        }
        for st in &self.settings {
            let state = if st.ok { "in effect" } else { "NOT in effect" };
            v.push((
                1,
                format!(
                    "setting {} = {}: {state} (was {}; read back {})",
                    st.name, st.requested, st.before, st.verified
                ),
            ));
            for n in &st.notes {
                v.push((2, n.clone()));
            }
        }
        for n in &self.notes {
            v.push((1, format!("note: {n}")));
        }
        for t in &self.throttling {
            v.push((1, t.clone()));
        }
        for t in &self.traced {
            v.push((1, t.clone()));
        }
        v
    }
}
