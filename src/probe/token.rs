//! The token calls of the probes that hand a value between two threads
//! through an eventfd (`ctxswitch`, and `response` with its eventfd source):
//! a read or a write that is made again after a signal, the clock as a
//! token, and the two values no clock reading reaches, which end or fail
//! the other side. Why an eventfd: [`jitterlab_sys::eventfd`].

use std::io;

use jitterlab_sys as sys;
use jitterlab_sys::eventfd::{EventFd, EVENTFD_MAX};

/// The token that ends the thread waiting for the next one (no monotonic
/// reading ever gets near it: it is 584 years after boot).
pub const STOP_TOKEN: u64 = EVENTFD_MAX;

/// The token a failing thread sends so that the other one does not wait
/// for ever.
pub(crate) const FAILED_TOKEN: u64 = EVENTFD_MAX - 1;

/// The monotonic clock as a token: never 0 (a write of 0 would wake
/// nobody).
#[inline(always)]
pub(crate) fn token_now() -> u64 {
    sys::monotonic_ns().max(1)
}

/// Reads one token from `fd`, again after a signal.
#[inline(always)]
pub(crate) fn read_token(fd: &EventFd) -> io::Result<u64> {
    loop {
        match fd.read() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

/// Writes one token to `fd`, again after a signal.
#[inline(always)]
pub(crate) fn write_token(fd: &EventFd, token: u64) -> io::Result<()> {
    loop {
        match fd.write(token) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            r => return r,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_travel_and_stay_clear_of_the_stop_and_failure_values() {
        let fd = EventFd::new().unwrap();
        let t = token_now();
        assert!(t > 0 && t < FAILED_TOKEN && FAILED_TOKEN < STOP_TOKEN);
        write_token(&fd, t).unwrap();
        assert_eq!(read_token(&fd).unwrap(), t);
        write_token(&fd, STOP_TOKEN).unwrap();
        assert_eq!(read_token(&fd).unwrap(), STOP_TOKEN);
    }
}
