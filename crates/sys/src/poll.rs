//! Waiting for one descriptor to become readable with a nanosecond
//! timeout (`ppoll(2)`): how the `netcycle` managing node waits for a PRes
//! up to its response timeout, and how its CN emulator waits for the next
//! frame while still seeing its stop flag.
//!
//! `ppoll` takes a `timespec`, so the timeout keeps its nanoseconds
//! (`poll(2)` rounds to milliseconds, `SO_RCVTIMEO` to microseconds and
//! costs a `setsockopt` whenever it changes). The wait sleeps in the
//! kernel; it allocates nothing, so a real-time loop can call it (DESIGN
//! rule 2).

use crate::minus_one;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Waits until `fd` has something to read or `timeout_ns` nanoseconds have
/// passed (`None`: for ever; `Some(0)`: only looks). `Ok(true)` when it is
/// readable (or has an error or hang-up pending: the next read says which),
/// `Ok(false)` when the time ran out or a signal interrupted the wait, so
/// the caller checks its clock and its stop flag and waits again.
pub fn wait_readable(fd: BorrowedFd<'_>, timeout_ns: Option<u64>) -> io::Result<bool> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    let ts = timeout_ns.map(crate::timespec_from_ns);
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: `pfd` is one valid, writable pollfd for the whole call and
    // its count (1) is passed; `ts_ptr` is null (wait for ever) or points
    // at a valid timespec that outlives the call; the signal mask pointer
    // is null (keep the thread's mask). The descriptor is borrowed, so
    // open.
    let rc = unsafe { libc::ppoll(&mut pfd, 1, ts_ptr, std::ptr::null()) };
    match minus_one(rc) {
        Ok(n) => Ok(n > 0),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::UdpSocket;
    use std::os::fd::AsFd;

    #[test]
    fn an_empty_socket_times_out_and_a_queued_datagram_wakes_at_once() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        assert!(!wait_readable(rx.as_fd(), Some(0)).unwrap());
        let t = crate::monotonic_ns();
        assert!(!wait_readable(rx.as_fd(), Some(2_000_000)).unwrap());
        let waited = crate::monotonic_ns() - t;
        assert!(waited >= 2_000_000, "woke after {waited} ns");
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        assert!(wait_readable(rx.as_fd(), Some(1_000_000_000)).unwrap());
        assert!(wait_readable(rx.as_fd(), None).unwrap());
    }
}
