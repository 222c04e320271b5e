//! The header of a report: what a qualification record needs to know before
//! any figure — the machine, the jitterlab that measured, the spec and its
//! hash, which document a preset reproduces and what it emulates, when the
//! run started and how long it took.
//!
//! [`Header`] is built from what a run stored (its host snapshot, tool
//! version, spec hash, preset provenance, start and duration) and says, for
//! each item, either the fact or [`NOT_RECORDED`]: a run stored before the
//! item was kept has no value for it, and a report must not guess one (an
//! old snapshot's missing microcode is not "none"). [`Header::lines`] gives
//! the labelled lines every text-like format prints in this order; the
//! JSON is the struct itself, `null` where not recorded.
//!
//! A report's record is this header and, right under it, the verdict block
//! (`crate::verdict`) with every limit and what decided it: the header
//! holds the facts, the verdict block is rendered from the cells' verdicts.

use serde::{Deserialize, Serialize};

use crate::preset::Provenance;
use crate::result::HostSnapshot;
use crate::units::{format_ns, CpuList};

/// What a report says of an item a run did not store.
pub const NOT_RECORDED: &str = "not recorded";

/// The header of one run's report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// The jitterlab that measured: version and commit.
    pub tool_version: String,
    /// Host name.
    pub hostname: String,
    /// CPU model.
    pub cpu_model: String,
    /// CPU microcode revision; `None`: not recorded.
    pub microcode: Option<String>,
    /// Online CPUs (`0-3`).
    pub cpus_online: String,
    /// Physical cores; `None`: not recorded.
    pub cores: Option<u32>,
    /// SMT control state; `None`: not recorded.
    pub smt: Option<String>,
    /// `uname -r`.
    pub kernel_release: String,
    /// `uname -v`.
    pub kernel_version: String,
    /// Kernel command line.
    pub cmdline: String,
    /// Preemption model and its source.
    pub preemption: String,
    /// Clocksource.
    pub clocksource: String,
    /// True under a hypervisor.
    pub virtualized: bool,
    /// The hypervisor's name (empty on bare metal); `None`: not recorded.
    pub hypervisor: Option<String>,
    /// Isolated CPUs.
    pub cpus_isolated: String,
    /// Tickless (`nohz_full`) CPUs.
    pub cpus_nohz_full: String,
    /// Whether the kernel offers resctrl; `None`: not recorded.
    pub resctrl: Option<bool>,
    /// The spec's name (a bench), or the probe of a `jitterlab run`.
    pub spec: String,
    /// SHA-256 of the canonical spec text as stored (a `jitterlab run`:
    /// of its parameters); `None`: nothing stored to hash.
    pub spec_sha256: Option<String>,
    /// The document a preset reproduces and what it emulates; `None` for a
    /// spec that is no preset, and for a bench stored before it was kept.
    pub source: Option<Provenance>,
    /// Start, RFC 3339.
    pub started_at: String,
    /// Measured duration, ns; `None` while running or when not stored.
    pub duration_ns: Option<u64>,
}

/// What a [`Header`] is built from besides the host snapshot.
#[derive(Debug, Clone, Default)]
pub struct RunFacts {
    /// [`Header::tool_version`].
    pub tool_version: String,
    /// [`Header::spec`].
    pub spec: String,
    /// [`Header::spec_sha256`].
    pub spec_sha256: Option<String>,
    /// [`Header::source`].
    pub source: Option<Provenance>,
    /// [`Header::started_at`].
    pub started_at: String,
    /// [`Header::duration_ns`].
    pub duration_ns: Option<u64>,
}

/// An empty string as `unknown`, trimmed otherwise.
fn or_unknown(s: &str) -> String {
    match s.trim() {
        "" => "unknown".into(),
        t => t.into(),
    }
}

/// An empty CPU list as `none`.
fn or_none(s: &str) -> String {
    match s.trim() {
        "" => "none".into(),
        t => t.into(),
    }
}

impl Header {
    /// The header of a run on `host` with `facts`.
    pub fn new(host: &HostSnapshot, facts: RunFacts) -> Header {
        let d = host.details.as_ref();
        Header {
            tool_version: facts.tool_version,
            hostname: host.hostname.clone(),
            cpu_model: host.cpu_model.clone(),
            microcode: d.map(|d| d.microcode.clone()),
            cpus_online: host.cpus_online.clone(),
            cores: d.and_then(|d| d.cores),
            smt: d.map(|d| d.smt.clone()),
            kernel_release: host.kernel_release.clone(),
            kernel_version: host.kernel_version.clone(),
            cmdline: host.cmdline.clone(),
            preemption: host.preemption.clone(),
            clocksource: host.clocksource.clone(),
            virtualized: host.virtualized,
            hypervisor: d.map(|d| d.hypervisor.clone()),
            cpus_isolated: host.cpus_isolated.clone(),
            cpus_nohz_full: host.cpus_nohz_full.clone(),
            resctrl: d.map(|d| d.resctrl),
            spec: facts.spec,
            spec_sha256: facts.spec_sha256,
            source: facts.source,
            started_at: facts.started_at,
            duration_ns: facts.duration_ns,
        }
    }

    /// The labelled lines of the header, in the order every format prints
    /// them; values are plain text (the caller escapes for its format).
    pub fn lines(&self) -> Vec<(&'static str, String)> {
        let online = CpuList::parse(&self.cpus_online)
            .map(|c| c.len())
            .ok()
            .filter(|&n| n > 0);
        let cpus = match online {
            Some(n) => format!("{n} online ({})", self.cpus_online.trim()),
            None => format!("online {}", or_unknown(&self.cpus_online)),
        };
        let cores = match (self.cores, &self.smt) {
            (Some(c), Some(s)) => format!("{c}, SMT {}", or_unknown(s)),
            (None, Some(s)) => format!("unknown, SMT {}", or_unknown(s)),
            (_, None) => NOT_RECORDED.into(),
        };
        let microcode = match &self.microcode {
            Some(m) => or_unknown(m),
            None => NOT_RECORDED.into(),
        };
        let virtualised = match (self.virtualized, &self.hypervisor) {
            (false, _) => "no".to_string(),
            (true, Some(h)) => format!("yes ({})", or_unknown(h)),
            (true, None) => format!("yes (hypervisor {NOT_RECORDED})"),
        };
        let resctrl = match self.resctrl {
            Some(true) => "present".into(),
            Some(false) => "absent".into(),
            None => NOT_RECORDED.into(),
        };
        let spec = match &self.spec_sha256 {
            Some(h) => format!("{}, sha256 {h}", self.spec),
            None => format!("{}, sha256 {NOT_RECORDED}", self.spec),
        };
        let mut v = vec![
            ("jitterlab", or_unknown(&self.tool_version)),
            ("host", or_unknown(&self.hostname)),
            ("cpu", or_unknown(&self.cpu_model)),
            ("microcode", microcode),
            ("cpus", cpus),
            ("cores", cores),
            (
                "kernel",
                format!(
                    "{} {}",
                    or_unknown(&self.kernel_release),
                    or_unknown(&self.kernel_version)
                ),
            ),
            ("preemption", or_unknown(&self.preemption)),
            ("cmdline", or_unknown(&self.cmdline)),
            ("clocksource", or_unknown(&self.clocksource)),
            ("virtualised", virtualised),
            ("isolated", or_none(&self.cpus_isolated)),
            ("tickless", or_none(&self.cpus_nohz_full)),
            ("resctrl", resctrl),
            ("spec", spec),
        ];
        if let Some(p) = &self.source {
            v.push(("reproduces", format!("{}, by {}", p.title, p.authors)));
            v.push(("emulates", p.emulates.clone()));
        }
        v.push(("started", or_unknown(&self.started_at)));
        v.push((
            "duration",
            match self.duration_ns {
                Some(ns) => format_ns(i64::try_from(ns).unwrap_or(i64::MAX)),
                None => NOT_RECORDED.into(),
            },
        ));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::HostDetails;

    fn host(details: Option<HostDetails>) -> HostSnapshot {
        HostSnapshot {
            hostname: "plc-7".into(),
            kernel_release: "6.16.3+deb14-rt-amd64".into(),
            kernel_version: "#1 SMP PREEMPT_RT Debian 6.16.3-1 (2025-08-25)".into(),
            machine: "x86_64".into(),
            cmdline: "quiet isolcpus=2-3 nohz_full=2-3".into(),
            preemption: "rt (/sys/kernel/realtime)".into(),
            realtime_kernel: true,
            cpu_model: "Intel(R) Atom(TM) x6425RE".into(),
            cpus_online: "0-3".into(),
            cpus_isolated: "2-3".into(),
            cpus_nohz_full: "2-3".into(),
            clocksource: "tsc".into(),
            sched_rt_runtime_us: Some(-1),
            sched_rt_period_us: Some(1_000_000),
            virtualized: false,
            machine_id: None,
            details,
        }
    }

    fn facts() -> RunFacts {
        RunFacts {
            tool_version: "0.1.0 (commit 28a18f1)".into(),
            spec: "codesys".into(),
            spec_sha256: Some("ab".repeat(32)),
            source: None,
            started_at: "2026-11-21T12:00:00Z".into(),
            duration_ns: Some(65_250_000_000),
        }
    }

    fn value<'a>(lines: &'a [(&str, String)], label: &str) -> &'a str {
        &lines.iter().find(|(l, _)| *l == label).unwrap().1
    }

    #[test]
    fn a_recorded_host_gives_every_item() {
        let d = HostDetails {
            microcode: "0x24000024".into(),
            cores: Some(4),
            smt: "notsupported".into(),
            hypervisor: String::new(),
            resctrl: true,
        };
        let l = Header::new(&host(Some(d)), facts()).lines();
        let labels: Vec<&str> = l.iter().map(|(k, _)| *k).collect();
        assert_eq!(
            labels,
            [
                "jitterlab",
                "host",
                "cpu",
                "microcode",
                "cpus",
                "cores",
                "kernel",
                "preemption",
                "cmdline",
                "clocksource",
                "virtualised",
                "isolated",
                "tickless",
                "resctrl",
                "spec",
                "started",
                "duration"
            ]
        );
        assert_eq!(value(&l, "microcode"), "0x24000024");
        assert_eq!(value(&l, "cpus"), "4 online (0-3)");
        assert_eq!(value(&l, "cores"), "4, SMT notsupported");
        assert_eq!(value(&l, "virtualised"), "no");
        assert_eq!(value(&l, "resctrl"), "present");
        assert_eq!(
            value(&l, "spec"),
            format!("codesys, sha256 {}", "ab".repeat(32))
        );
        assert_eq!(value(&l, "duration"), "65.250s");
    }

    #[test]
    fn an_old_snapshot_says_not_recorded() {
        let mut h = host(None);
        h.virtualized = true;
        let f = RunFacts {
            spec_sha256: None,
            duration_ns: None,
            ..facts()
        };
        let l = Header::new(&h, f).lines();
        assert_eq!(value(&l, "microcode"), "not recorded");
        assert_eq!(value(&l, "cores"), "not recorded");
        assert_eq!(value(&l, "resctrl"), "not recorded");
        assert_eq!(value(&l, "virtualised"), "yes (hypervisor not recorded)");
        assert_eq!(value(&l, "spec"), "codesys, sha256 not recorded");
        assert_eq!(value(&l, "duration"), "not recorded");
        let json = serde_json::to_value(Header::new(&h, facts())).unwrap();
        assert_eq!(json["microcode"], serde_json::Value::Null);
        assert_eq!(json["resctrl"], serde_json::Value::Null);
    }

    #[test]
    fn a_preset_adds_what_it_reproduces_and_emulates() {
        let f = RunFacts {
            source: crate::preset::provenance("epics"),
            ..facts()
        };
        let l = Header::new(&host(None), f).lines();
        assert_eq!(
            value(&l, "reproduces"),
            "EPICS IOCcore Real Time Performance Measurements on Coldfire Module, by Shifu Xu, Hairong Shang, Robert Laird and Frank Lenkszus (Argonne National Laboratory)"
        );
        assert!(value(&l, "emulates").starts_with("a Linux machine stands in for the ColdFire"));
    }
}
