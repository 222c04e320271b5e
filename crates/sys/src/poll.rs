//! Waiting for one descriptor to become readable with a nanosecond
//! timeout (`ppoll(2)`): how the `netcycle` managing node waits for a PRes
//! up to its response timeout, and how its CN emulator waits for the next
//! frame while still seeing its stop flag. And waiting for any of several
//! descriptors to become readable or writable ([`wait_any`]): how the
//! metrics thread serves its listener and every open connection at once.
//!
//! `ppoll` takes a `timespec`, so the timeout keeps its nanoseconds
//! (`poll(2)` rounds to milliseconds, `SO_RCVTIMEO` to microseconds and
//! costs a `setsockopt` whenever it changes). The wait sleeps in the
//! kernel; it allocates nothing, so a real-time loop can call it (design
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

/// What a descriptor given to [`wait_any`] is waited on for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Want {
    /// Something to read (or a connection to accept).
    Read,
    /// Room to write.
    Write,
}

/// Waits until one of `fds` is ready for what it is waited on for, or
/// `timeout_ns` nanoseconds have passed (`None`: for ever; `Some(0)`: only
/// looks). One flag per descriptor, in order: ready (or has an error or
/// hang-up pending: the next read or write says which). All `false` when
/// the time ran out or a signal interrupted the wait. It allocates one
/// `pollfd` per descriptor, so it is for non-real-time threads.
pub fn wait_any(fds: &[(BorrowedFd<'_>, Want)], timeout_ns: Option<u64>) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> = fds
        .iter()
        .map(|(fd, want)| libc::pollfd {
            fd: fd.as_raw_fd(),
            events: match want {
                Want::Read => libc::POLLIN,
                Want::Write => libc::POLLOUT,
            },
            revents: 0,
        })
        .collect();
    let ts = timeout_ns.map(crate::timespec_from_ns);
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    let count = libc::nfds_t::try_from(pfds.len())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: `pfds` is a valid, writable array of `count` pollfds for the
    // whole call; `ts_ptr` is null (wait for ever) or points at a valid
    // timespec that outlives the call; the signal mask pointer is null
    // (keep the thread's mask). The descriptors are borrowed, so open.
    let rc = unsafe { libc::ppoll(pfds.as_mut_ptr(), count, ts_ptr, std::ptr::null()) };
    match minus_one(rc) {
        Ok(_) => Ok(pfds.iter().map(|p| p.revents != 0).collect()),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(vec![false; fds.len()]),
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

    #[test]
    fn wait_any_flags_the_ready_descriptors_in_order() {
        let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let quiet = UdpSocket::bind("127.0.0.1:0").unwrap();
        let tx = UdpSocket::bind("127.0.0.1:0").unwrap();
        let fds = [(rx.as_fd(), Want::Read), (quiet.as_fd(), Want::Read)];
        assert_eq!(wait_any(&fds, Some(1_000_000)).unwrap(), [false, false]);
        tx.send_to(b"x", rx.local_addr().unwrap()).unwrap();
        assert_eq!(wait_any(&fds, Some(1_000_000_000)).unwrap(), [true, false]);
        let fds = [(quiet.as_fd(), Want::Read), (tx.as_fd(), Want::Write)];
        assert_eq!(wait_any(&fds, None).unwrap(), [false, true]);
        assert!(wait_any(&[], Some(0)).unwrap().is_empty());
    }
}
