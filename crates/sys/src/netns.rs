//! Entering a network namespace (`setns`), for the threads that make a
//! probe's sockets inside the namespaces of a veth pair.

use crate::minus_one;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Moves the calling thread into the network namespace `ns`, an open
/// `/run/netns/NAME` or `/proc/PID/ns/net` (`setns(fd, CLONE_NEWNET)`).
///
/// Only this thread moves; sockets it creates afterwards belong to that
/// namespace for their whole life, wherever they are used. A thread that
/// must go back keeps its old namespace open (`/proc/thread-self/ns/net`)
/// and enters it again. Needs `CAP_SYS_ADMIN`; `EINVAL` when `ns` is not a
/// network namespace.
pub fn enter_net_namespace(ns: BorrowedFd<'_>) -> io::Result<()> {
    // SAFETY: plain integer arguments; the descriptor is borrowed, so open
    // for the whole call.
    let rc = unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) };
    minus_one(rc).map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::eventfd::EventFd;
    use std::os::fd::AsFd;

    #[test]
    fn entering_our_own_namespace_works_and_a_non_namespace_is_refused() {
        if crate::effective_uid() != 0 {
            eprintln!("skipping: setns needs CAP_SYS_ADMIN (run as root)");
            return;
        }
        std::thread::spawn(|| {
            let own = std::fs::File::open("/proc/thread-self/ns/net").unwrap();
            enter_net_namespace(own.as_fd()).unwrap();
            let e = EventFd::new().unwrap();
            assert_eq!(
                enter_net_namespace(e.as_fd()).unwrap_err().raw_os_error(),
                Some(libc::EINVAL)
            );
        })
        .join()
        .unwrap();
    }
}
