//! What a probe tells `jitterlab monitor`'s writer beyond its window rows,
//! handed from the probe's thread to the writer; no kind is named here, a
//! probe that has something to say calls it.
//!
//! The observe probe is the one that does: a window row of it is the
//! observer thread's, so its CPU is the observer's; an alert must name the
//! CPUs the task's cycles ran on, and with `--explain` carry the window's
//! worst cycle's explanation (its three largest parts,
//! `jitterlab_core::observe::brief`). The probe
//! notes both per window here ([`note_cycle`], [`note_worst`]) before it
//! records a cycle of a later window, so a row the writer drains has its
//! note complete; the writer takes the notes up to its rows' last window
//! ([`take_until`]). At most [`MAX_WINDOWS`] windows are kept (a writer
//! that never takes them — no `--max-latency` — costs a bounded few KiB).
//!
//! It also carries how the measured task ended: a `--pid`/`--tid` target
//! that exits ends the monitor ([`end`], read by the command for its exit
//! status, [`TASK_ENDED_STATUS`]); and what happened to it on the way, as
//! marks with their time ([`note_mark`]: a `--comm` task restarted and
//! re-attached), which the writer stores with the series ([`take_marks`]).

use std::collections::VecDeque;
use std::sync::Mutex;

/// The exit status of a monitor whose `--pid`/`--tid` task ended.
pub const TASK_ENDED_STATUS: u8 = 3;

/// The most windows noted and not yet taken.
pub const MAX_WINDOWS: usize = 256;

/// The most marks noted and not yet taken (the oldest dropped past it).
pub const MAX_MARKS: usize = 64;

/// The task's figures of one window the writer needs for an alert.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowNote {
    /// The window (the recorder's number).
    pub window: u64,
    /// The CPUs the task's cycles of that window started on.
    pub cpus: Vec<u32>,
    /// Its worst cycle's latency, ns, and short explanation.
    pub worst: Option<(u64, String)>,
}

/// The notes not yet taken, oldest first; see the module doc.
#[derive(Debug, Default)]
pub struct Notes {
    windows: VecDeque<WindowNote>,
    ended: Option<String>,
    /// (CLOCK_MONOTONIC ns, what happened), oldest first.
    marks: VecDeque<(u64, String)>,
}

impl Notes {
    fn window(&mut self, window: u64) -> &mut WindowNote {
        if self.windows.back().is_none_or(|w| w.window != window) {
            if self.windows.len() >= MAX_WINDOWS {
                self.windows.pop_front();
            }
            self.windows.push_back(WindowNote {
                window,
                ..WindowNote::default()
            });
        }
        self.windows.back_mut().expect("pushed above")
    }

    /// A cycle of `window` started on `cpu`.
    pub fn cycle(&mut self, window: u64, cpu: u32) {
        let w = self.window(window);
        if !w.cpus.contains(&cpu) {
            w.cpus.push(cpu);
        }
    }

    /// The worst cycle of `window` so far: `latency_ns`, explained so.
    pub fn worst(&mut self, window: u64, latency_ns: u64, explanation: String) {
        let w = self.window(window);
        if w.worst.as_ref().is_none_or(|(l, _)| latency_ns > *l) {
            w.worst = Some((latency_ns, explanation));
        }
    }

    /// The notes of the windows up to `window`, taken.
    pub fn take_until(&mut self, window: u64) -> Vec<WindowNote> {
        let n = self
            .windows
            .iter()
            .take_while(|w| w.window <= window)
            .count();
        self.windows.drain(..n).collect()
    }
}

// One monitor per process (`jitterlab monitor` measures one cell), so its
// notes are the process's: the probe thread and the writer share no other
// object they could be handed through without every probe carrying it.
static NOTES: Mutex<Option<Notes>> = Mutex::new(None);

fn with<T>(f: impl FnOnce(&mut Notes) -> T) -> T {
    let mut g = NOTES.lock().unwrap_or_else(|e| e.into_inner());
    f(g.get_or_insert_with(Notes::default))
}

/// [`Notes::cycle`] of the process's monitor.
pub fn note_cycle(window: u64, cpu: u32) {
    with(|n| n.cycle(window, cpu));
}

/// [`Notes::worst`] of the process's monitor.
pub fn note_worst(window: u64, latency_ns: u64, explanation: String) {
    with(|n| n.worst(window, latency_ns, explanation));
}

/// [`Notes::take_until`] of the process's monitor.
pub fn take_until(window: u64) -> Vec<WindowNote> {
    with(|n| n.take_until(window))
}

/// Something happened to the monitored task at `mono_ns`
/// (CLOCK_MONOTONIC): the writer stores it with the series.
pub fn note_mark(mono_ns: u64, text: String) {
    with(|n| {
        if n.marks.len() >= MAX_MARKS {
            n.marks.pop_front();
        }
        n.marks.push_back((mono_ns, text));
    });
}

/// The marks noted since the last call, oldest first.
pub fn take_marks() -> Vec<(u64, String)> {
    with(|n| n.marks.drain(..).collect())
}

/// The monitored task ended and the monitor with it: what to say.
pub fn end(why: String) {
    with(|n| n.ended = Some(why));
}

/// Why the monitor ended with its task, if it did.
pub fn ended() -> Option<String> {
    with(|n| n.ended.clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_note_gathers_its_cpus_and_keeps_its_worst_cycle() {
        let mut n = Notes::default();
        n.cycle(4, 1);
        n.worst(4, 30_000, "cycle 7 late by 30.000us".into());
        n.cycle(4, 1);
        n.cycle(4, 0);
        n.worst(4, 20_000, "cycle 8 late by 20.000us".into());
        n.cycle(5, 0);
        n.cycle(6, 1);
        assert_eq!(
            n.take_until(5),
            [
                WindowNote {
                    window: 4,
                    cpus: vec![1, 0],
                    worst: Some((30_000, "cycle 7 late by 30.000us".into())),
                },
                WindowNote {
                    window: 5,
                    cpus: vec![0],
                    worst: None,
                },
            ]
        );
        assert_eq!(n.take_until(5), []);
        assert_eq!(n.take_until(6).len(), 1);
    }

    #[test]
    fn notes_nobody_takes_are_bounded() {
        let mut n = Notes::default();
        for w in 0..(MAX_WINDOWS as u64 + 10) {
            n.cycle(w, 1);
        }
        let all = n.take_until(u64::MAX);
        assert_eq!(all.len(), MAX_WINDOWS);
        assert_eq!(all[0].window, 10);
    }
}
