//! What one finding of `jitterlab check` is — an id, a [`Severity`], a
//! summary and a fix — and the phrases several areas build theirs from:
//! an unreadable flag file, unknown probe CPUs, CPU lists in words, and
//! the shell command that writes a per-CPU sysfs file.

use serde::Serialize;

use jitterlab_core::units::CpuList;

/// Where the per-CPU directories are (`cpuN/...`).
pub(super) const CPU_DIR: &str = "sys/devices/system/cpu";

/// How much a finding matters for measuring (see the `check` module doc).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The setting is the one for measuring.
    Ok,
    /// Worth knowing, or unknown; the figures stay meaningful.
    Info,
    /// The figures will show this set-up rather than the machine's best.
    Warn,
    /// Nothing can be measured here.
    Fail,
}

impl Severity {
    /// The word printed and serialized.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Ok => "ok",
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Fail => "fail",
        }
    }
}

/// One result of the audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// Stable kebab-case name, e.g. `isolated-cpus`.
    pub id: &'static str,
    /// How much it matters.
    pub severity: Severity,
    /// One line: what was found.
    pub summary: String,
    /// The command or kernel parameter that changes it; empty for `ok`.
    pub fix: String,
}

impl Finding {
    /// A finding of any severity.
    pub(crate) fn new(
        id: &'static str,
        severity: Severity,
        summary: impl Into<String>,
        fix: &str,
    ) -> Self {
        Finding {
            id,
            severity,
            summary: summary.into(),
            fix: fix.to_string(),
        }
    }

    /// An `ok` finding (no fix).
    pub(crate) fn ok(id: &'static str, summary: impl Into<String>) -> Self {
        Finding::new(id, Severity::Ok, summary, "")
    }
}

/// An info finding for a flag file that is missing or holds an unexpected
/// value (`value` is what it read, if anything).
pub(super) fn unknown(id: &'static str, what: &str, path: &str, value: Option<&str>) -> Finding {
    let summary = match value {
        Some(v) => format!("unknown {what}: /{path} reads {v:?}"),
        None => format!("unknown {what}: cannot read /{path}"),
    };
    Finding::new(id, Severity::Info, summary, "")
}

/// `probe CPU 1` or `probe CPUs 2-3`.
pub(super) fn probe_words(probe: &CpuList) -> String {
    format!("probe {}", cpu_words(probe))
}

/// `CPU 1` or `CPUs 2-3`.
pub(super) fn cpu_words(cpus: &CpuList) -> String {
    if cpus.len() == 1 {
        format!("CPU {cpus}")
    } else {
        format!("CPUs {cpus}")
    }
}

/// The info finding for a per-probe-CPU check when the probe CPUs are
/// unknown (no online CPU list and no `--cpus`).
pub(super) fn probe_unknown(id: &'static str, what: &str) -> Finding {
    Finding::new(
        id,
        Severity::Info,
        format!("unknown {what}: the probe CPUs are unknown"),
        "give them with --cpus",
    )
}

/// `echo VALUE > /sys/devices/system/cpu/cpuN/FILE` for one CPU, a `for`
/// loop for several.
pub(super) fn per_cpu_command(cpus: &CpuList, value: &str, file: &str) -> String {
    let numbers: Vec<String> = cpus.iter().map(|c| c.to_string()).collect();
    if numbers.len() == 1 {
        format!(
            "echo {value} > /sys/devices/system/cpu/cpu{}/{file}",
            numbers[0]
        )
    } else {
        format!(
            "for N in {}; do echo {value} > /sys/devices/system/cpu/cpu$N/{file}; done",
            numbers.join(" ")
        )
    }
}
