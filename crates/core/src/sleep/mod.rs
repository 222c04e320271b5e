//! `sleep`: a probe compiled only for tests (`--features test-probe`), and
//! the worked example of a kind with parameters of its own: its descriptor
//! ([`SLEEP`]) and its two parameters ([`SleepParams`]), declared once in
//! [`KEYS`] and [`PARAMS`]. The spec checker, the stored JSON and the key
//! listings read that table, and `jitterlab run sleep`'s `--slack` and
//! `--spin` are derived from it (`src/probe/sleep/flags.rs`), which make
//! the same [`SleepParams`] and call the same [`Params::validate`].

use crate::defaults;
use crate::probe::descriptor::{ns, InContainer, ProbeDescriptor, ReportWords};
use crate::probe::kind::ProbeKind;
use crate::spec::param::{take, Ordered};
use crate::spec::{Key, KeyFlag, ParamError, ParamTable, Params, ProbeParams, ValueType};
use crate::units::format_duration_exact;

/// Each sample sleeps one period and measures how late the thread woke.
pub const SLEEP: ProbeDescriptor = ProbeDescriptor {
    name: "sleep",
    summary: "test probe: how late a thread wakes from a sleep of one period",
    metrics: &[ns("oversleep", false, true)],
    main_latency: Some("oversleep"),
    periodic: false,
    calibrated: false,
    every_probe_cpu: false,
    listed: false,
    words: ReportWords {
        period: Some("interval"),
        samples: "sleeps",
        sample: "sample",
        outliers: &["oversleep"],
    },
    params: &PARAMS,
    container: InContainer::Supported,
    verdicts: None,
    netns: None,
};

/// What only the `sleep` probe takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SleepParams {
    /// Added to each sleep's interval, ns (`slack`, `--slack`).
    pub slack_ns: u64,
    /// Busy-wait each interval instead of sleeping (`spin`, `--spin`).
    pub spin: bool,
}

/// `slack`: the time added to each sleep's interval.
pub const SLACK: Key = Key {
    name: "slack",
    ty: ValueType::Duration,
    default: "0s",
    help: "time added to each sleep's interval, shorter than the period",
    flag: KeyFlag::DERIVED,
};

/// `spin`: busy-wait instead of sleeping.
pub const SPIN: Key = Key {
    name: "spin",
    ty: ValueType::Bool,
    default: "false",
    help: "busy-wait each interval instead of sleeping",
    flag: KeyFlag::DERIVED,
};

/// The `sleep` probe's own keys: the spec's, and through them
/// `jitterlab run sleep`'s flags (their name, value, help and default).
pub const KEYS: &[Key] = &[SLACK, SPIN];

/// How the `sleep` probe's parameters are declared.
pub const PARAMS: ParamTable = ParamTable {
    keys: KEYS,
    shared: &[],
    default_period_ns: defaults::PERIOD_NS,
    wire_keys: &["slack_ns", "spin"],
    defaults: |_| ProbeParams::new(SleepParams::default()),
    check: |t, _| {
        Ok(ProbeParams::new(SleepParams {
            slack_ns: t.num("slack")?.unwrap_or(0),
            spin: t.flag("spin")?.unwrap_or(false),
        }))
    },
    read: |_, m| {
        Ok(ProbeParams::new(SleepParams {
            slack_ns: take(m, "slack_ns")?,
            spin: take(m, "spin")?,
        }))
    },
};

impl Params for SleepParams {
    fn kind(&self) -> ProbeKind {
        ProbeKind::Sleep
    }

    /// Each entry only when it is not the default, so a stored sleep probe
    /// without them reads back the same.
    fn wire(&self) -> Vec<(&'static str, Ordered)> {
        let mut out = Vec::new();
        if self.slack_ns != 0 {
            out.push(("slack_ns", Ordered::U64(self.slack_ns)));
        }
        if self.spin {
            out.push(("spin", Ordered::Bool(true)));
        }
        out
    }

    /// A slack of a period or more would make every sample a cycle late.
    fn validate(&self, period_ns: u64) -> Result<(), ParamError> {
        match self.slack_ns < period_ns {
            true => Ok(()),
            false => {
                let rule = format!(
                    "must be shorter than the sleep's period ({}), not {}",
                    format_duration_exact(period_ns),
                    format_duration_exact(self.slack_ns)
                );
                Err(ParamError {
                    key: "slack",
                    near: &[],
                    flag_message: Some(format!("--slack {rule}")),
                    message: rule,
                    ..ParamError::default()
                })
            }
        }
    }
}

#[cfg(test)]
mod tests;
