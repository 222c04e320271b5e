//! The live status while a run goes on, in cyclictest's spirit: one line per
//! probe thread with cycles, min, act, avg and max wake-up latency (µs), plus
//! overruns, progress and the time left.
//!
//! It reads only the atomics each probe thread publishes
//! (`jitterlab_core::recorder::LiveStats`) and draws from the controlling thread,
//! so a slow terminal can never delay a probe. On a terminal it draws progress
//! bars on stdout (indicatif) that vanish before the summary is printed; when
//! stdout is not a terminal it stays silent, unless `--progress` asks for
//! plain status lines on stderr once a second (so stdout stays parseable).

use std::io::IsTerminal;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::{Duration, Instant};

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};
use jitterlab_core::recorder::LiveStats;

/// What counts as progress.
#[derive(Debug, Clone, Copy)]
pub enum Goal {
    /// Releases due (from `--duration`).
    Releases(u64),
    /// Measured cycles (from `--cycles`).
    Cycles(u64),
}

enum Mode {
    Bars(MultiProgress, Vec<ProgressBar>),
    Plain(Instant),
    Off,
}

/// The live view of every probe thread.
pub struct LiveView {
    mode: Mode,
    threads: Vec<(usize, Arc<LiveStats>)>,
    goal: Goal,
}

fn us(ns: u64) -> String {
    format!("{}.{}", ns / 1000, (ns % 1000) / 100)
}

impl LiveView {
    /// Chooses the mode from the terminal and `--progress`.
    pub fn new(threads: Vec<(usize, Arc<LiveStats>)>, goal: Goal, force: bool) -> LiveView {
        let total = match goal {
            Goal::Releases(n) | Goal::Cycles(n) => n,
        };
        let mode = if std::io::stdout().is_terminal() {
            let mp = MultiProgress::with_draw_target(ProgressDrawTarget::stdout_with_hz(4));
            let style =
                ProgressStyle::with_template("{prefix} {msg} [{bar:20}] {percent:>3}% ETA {eta}")
                    .expect("constant template")
                    .progress_chars("=> ");
            let bars = threads
                .iter()
                .map(|(cpu, _)| {
                    let b = mp.add(ProgressBar::new(total));
                    b.set_style(style.clone());
                    b.set_prefix(format!("CPU {cpu}:"));
                    b
                })
                .collect();
            Mode::Bars(mp, bars)
        } else if force {
            Mode::Plain(Instant::now() - Duration::from_secs(1))
        } else {
            Mode::Off
        };
        LiveView {
            mode,
            threads,
            goal,
        }
    }

    fn line(s: &LiveStats) -> String {
        let c = s.samples.load(Relaxed);
        let min = s.min.load(Relaxed);
        format!(
            "C:{c:>9} Min:{:>8} Act:{:>8} Avg:{:>8} Max:{:>8} us Ovr:{}",
            if c == 0 { "-".into() } else { us(min) },
            us(s.last.load(Relaxed)),
            s.avg().map(us).unwrap_or_else(|| "-".into()),
            us(s.max.load(Relaxed)),
            s.overruns.load(Relaxed)
        )
    }

    fn position(&self, s: &LiveStats) -> u64 {
        match self.goal {
            Goal::Releases(_) => s.releases.load(Relaxed),
            Goal::Cycles(_) => s.samples.load(Relaxed),
        }
    }

    /// Redraws (bars) or prints (plain, once a second).
    pub fn tick(&mut self) {
        let positions: Vec<u64> = self.threads.iter().map(|(_, s)| self.position(s)).collect();
        match &mut self.mode {
            Mode::Bars(_, bars) => {
                for ((b, (_, s)), pos) in bars.iter().zip(&self.threads).zip(positions) {
                    b.set_position(pos);
                    b.set_message(Self::line(s));
                }
            }
            Mode::Plain(last) => {
                if last.elapsed() >= Duration::from_secs(1) {
                    *last = Instant::now();
                    let total = match self.goal {
                        Goal::Releases(n) | Goal::Cycles(n) => n.max(1),
                    };
                    for ((cpu, s), pos) in self.threads.iter().zip(positions) {
                        crate::output::errln!(
                            "CPU {cpu}: {} {:>3}%",
                            Self::line(s),
                            (pos.min(total) * 100) / total
                        );
                    }
                }
            }
            Mode::Off => {}
        }
    }

    /// Removes the bars before the summary is printed.
    pub fn finish(&mut self) {
        if let Mode::Bars(mp, bars) = &self.mode {
            for b in bars {
                b.finish_and_clear();
            }
            let _ = mp.clear();
        }
    }
}
