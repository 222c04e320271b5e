//! The terminating signals: every signal whose default action would end
//! jitterlab, turned into one stop flag, and the exit status it ends with.
//!
//! A signal that kills jitterlab outright skips everything a command does
//! at its end — settings written back, neighbours stopped, namespaces
//! removed, the run stored as interrupted, the journal cleared — and leaves
//! the machine changed until someone runs `jitterlab restore`. An SSH
//! disconnect sends `SIGHUP`; batch systems send `SIGXCPU`, `SIGUSR1` or a
//! real-time signal before they kill. So every command that changes the
//! machine (`run`, `monitor`, `bench`, `apply`, the flood neighbours) and
//! `report --follow` take [`stop_flag`] before their first change: each of
//! [`jitterlab_sys::terminating_signals`] — the one list of them — then
//! only raises the flag, and the command ends through the same path as on
//! Ctrl-C. The probe threads block these signals
//! (`system::rt::setup_probe_thread`), so they reach the controlling
//! thread that watches the flag.
//!
//! `SIGINT` and `SIGTERM` end a command as they always have: with its own
//! status (0 when every verdict passed — `make demo` and service managers rely
//! on `monitor` ending 0 on `SIGTERM`). Any other of these signals ends it
//! with 128 + the signal's number, what a shell reports for a process
//! that signal killed (129 for `SIGHUP`), so a script still sees that the
//! command did not end by itself: `main` asks [`exit_status`] at the end.
//! When several arrive, the last one counts.
//!
//! The handlers are installed once per process (`signal_hook`'s flag
//! handlers, async-signal-safe stores into atomics) and stay: a command
//! that asks again gets the same flag.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, PoisonError};

use anyhow::{Context, Result};
use jitterlab_sys as sys;

/// The flag the terminating signals raise, and the number of the last one
/// that arrived (0: none).
struct Installed {
    stop: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

/// The handlers of this process, once installed.
static INSTALLED: Mutex<Option<Installed>> = Mutex::new(None);

/// The stop flag that every terminating signal raises, installing the
/// handlers on the first call.
pub fn stop_flag() -> Result<Arc<AtomicBool>> {
    let mut installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(i) = installed.as_ref() {
        return Ok(Arc::clone(&i.stop));
    }
    let i = Installed {
        stop: Arc::new(AtomicBool::new(false)),
        signal: Arc::new(AtomicUsize::new(0)),
    };
    for sig in sys::terminating_signals() {
        // The number first, so that whoever sees the flag finds it.
        let number = usize::try_from(sig).expect("signal numbers are positive");
        signal_hook::flag::register_usize(sig, Arc::clone(&i.signal), number)
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&i.stop)))
            .with_context(|| format!("installing the handler of signal {sig}"))?;
    }
    let stop = Arc::clone(&i.stop);
    *installed = Some(i);
    Ok(stop)
}

/// The number of the last terminating signal that arrived, once
/// [`stop_flag`] installed the handlers.
pub fn received() -> Option<i32> {
    let installed = INSTALLED.lock().unwrap_or_else(PoisonError::into_inner);
    let n = installed.as_ref()?.signal.load(Relaxed);
    i32::try_from(n).ok().filter(|&n| n != 0)
}

/// The exit status a command that `signal` ended must end with, when it
/// is not the command's own: `None` for `SIGINT` and `SIGTERM` (the
/// command's own status), 128 + the number for every other signal.
pub fn status_for(signal: i32) -> Option<u8> {
    if signal == sys::SIGINT || signal == sys::SIGTERM {
        return None;
    }
    u8::try_from(128 + signal).ok()
}

/// The exit status of this process when a terminating signal other than
/// `SIGINT`/`SIGTERM` ended its command (see [`status_for`]).
pub fn exit_status() -> Option<u8> {
    received().and_then(status_for)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sigint_and_sigterm_keep_the_commands_status_and_the_rest_is_128_plus_n() {
        assert_eq!(status_for(2), None);
        assert_eq!(status_for(15), None);
        assert_eq!(status_for(1), Some(129));
        assert_eq!(status_for(3), Some(131));
        assert_eq!(status_for(10), Some(138));
        assert_eq!(status_for(64), Some(192));
    }

    #[test]
    fn the_terminating_signals_are_every_catchable_one_that_ends_a_process() {
        let expected: Vec<i32> = [1, 2, 3, 10, 12, 14, 15, 16, 24, 25, 26, 27, 29, 30]
            .into_iter()
            .chain(34..=64)
            .collect();
        assert_eq!(sys::terminating_signals(), expected);
    }
}
