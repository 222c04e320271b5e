//! A bench's progress: a bar over the planned time when stderr is a
//! terminal, else one line per cell (with the time left), and the lines a
//! running bench says above the bar.

use std::io::IsTerminal;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use jitterlab_core::cell::CellKey;
use jitterlab_core::units::format_duration_exact;

use crate::output::errln;

/// Progress of the whole bench: a bar over the planned time on a terminal,
/// else one line per cell on stderr.
pub(super) struct Progress {
    bar: Option<ProgressBar>,
    start: Instant,
    planned_ns: u64,
}

impl Progress {
    pub(super) fn new(planned_ns: u64) -> Progress {
        let bar = std::io::stderr().is_terminal().then(|| {
            let b = ProgressBar::with_draw_target(
                Some(planned_ns / 1_000_000),
                ProgressDrawTarget::stderr_with_hz(4),
            );
            b.set_style(
                ProgressStyle::with_template("{msg} [{bar:30}] {percent:>3}% ETA {eta}")
                    .expect("constant template")
                    .progress_chars("=> "),
            );
            b
        });
        Progress {
            bar,
            start: Instant::now(),
            planned_ns,
        }
    }

    pub(super) fn cell(&self, i: usize, n: usize, key: &CellKey) {
        let msg = format!("cell {}/{n} {} rep {}", i + 1, key.name(), key.repetition);
        match &self.bar {
            Some(b) => b.set_message(msg),
            None => {
                let left = self
                    .planned_ns
                    .saturating_sub(self.start.elapsed().as_nanos() as u64);
                errln!(
                    "jitterlab: {msg} (about {} left)",
                    format_duration_exact(left / 1_000_000_000 * 1_000_000_000)
                );
            }
        }
    }

    pub(super) fn tick(&self) {
        if let Some(b) = &self.bar {
            b.set_position(self.start.elapsed().as_millis() as u64);
        }
    }

    pub(super) fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None => errln!("{line}"),
        }
    }

    pub(super) fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}
