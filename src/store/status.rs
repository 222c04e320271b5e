//! The words the `runs` table stores for a run's kind and status, as types.
//!
//! The database keeps them as text (`'run'`, `'bench'`, `'monitor'`; `'running'`,
//! `'completed'` …: the schema's `CHECK` constraint and every stored file
//! use these names), so each enum has the stored [`name`](RunStatus::name)
//! and a [`parse`](RunStatus::parse) back. The store's API takes the types;
//! a literal never travels through the code. A cell's status is
//! [`CellStatus`](jitterlab_core::cell::CellStatus), in core beside the
//! cell.

use jitterlab_core::result::EndReason;

/// What made a run: `jitterlab run` (one cell) or `jitterlab bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// `jitterlab run`.
    Run,
    /// `jitterlab bench`.
    Bench,
    /// One segment of a `jitterlab monitor` series (a start of the
    /// monitor, ended by a stop, a crash or a reboot).
    Monitor,
}

impl RunKind {
    /// Every kind.
    pub const ALL: [RunKind; 3] = [RunKind::Run, RunKind::Bench, RunKind::Monitor];

    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            RunKind::Run => "run",
            RunKind::Bench => "bench",
            RunKind::Monitor => "monitor",
        }
    }

    /// The kind stored as `name`.
    pub fn parse(name: &str) -> Option<RunKind> {
        RunKind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Where a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Measuring (or its process died and no open has noticed yet).
    Running,
    /// Reached its end.
    Completed,
    /// Ended early by a signal, an error or the death of its process.
    Interrupted,
    /// Ended by `--break-trace`.
    BreakTrace,
}

impl RunStatus {
    /// Every status.
    pub const ALL: [RunStatus; 4] = [
        RunStatus::Running,
        RunStatus::Completed,
        RunStatus::Interrupted,
        RunStatus::BreakTrace,
    ];

    /// The stored name.
    pub fn name(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Interrupted => "interrupted",
            RunStatus::BreakTrace => "break-trace",
        }
    }

    /// The status stored as `name`.
    pub fn parse(name: &str) -> Option<RunStatus> {
        RunStatus::ALL.into_iter().find(|s| s.name() == name)
    }
}

/// How a run's end reads for a person, from its stored `status` and the
/// terminating `signal` its result records: an `interrupted` run that a
/// signal stopped reads `stopped by SIGTERM` (or `by SIGINT`, `by signal
/// 10` …); `interrupted` stays for a run whose process died or failed,
/// and every other status is its stored word.
pub fn end_label(status: &str, signal: Option<i32>) -> String {
    match (RunStatus::parse(status), signal) {
        (Some(RunStatus::Interrupted), Some(n)) => {
            format!("stopped by {}", jitterlab_core::result::signal_name(n))
        }
        _ => status.to_string(),
    }
}

impl From<&EndReason> for RunStatus {
    fn from(e: &EndReason) -> RunStatus {
        match e {
            EndReason::Completed => RunStatus::Completed,
            EndReason::Interrupted => RunStatus::Interrupted,
            EndReason::BreakTrace => RunStatus::BreakTrace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_a_signal_stopped_reads_stopped_and_one_that_died_interrupted() {
        assert_eq!(end_label("interrupted", Some(15)), "stopped by SIGTERM");
        assert_eq!(end_label("interrupted", Some(2)), "stopped by SIGINT");
        assert_eq!(end_label("interrupted", Some(1)), "stopped by SIGHUP");
        assert_eq!(end_label("interrupted", Some(10)), "stopped by signal 10");
        assert_eq!(end_label("interrupted", None), "interrupted");
        assert_eq!(end_label("completed", None), "completed");
        assert_eq!(end_label("running", Some(15)), "running");
    }

    #[test]
    fn names_parse_back_and_match_the_stored_words() {
        for k in RunKind::ALL {
            assert_eq!(RunKind::parse(k.name()), Some(k));
        }
        for s in RunStatus::ALL {
            assert_eq!(RunStatus::parse(s.name()), Some(s));
        }
        assert_eq!(
            RunStatus::ALL.map(RunStatus::name),
            ["running", "completed", "interrupted", "break-trace"]
        );
        assert_eq!(RunKind::ALL.map(RunKind::name), ["run", "bench", "monitor"]);
        assert_eq!(RunStatus::parse("failed"), None);
        assert_eq!(RunKind::parse("Run"), None);
        // A finished run's status is its end reason's name.
        for e in [
            EndReason::Completed,
            EndReason::Interrupted,
            EndReason::BreakTrace,
        ] {
            assert_eq!(RunStatus::from(&e).name(), e.name());
        }
    }
}
