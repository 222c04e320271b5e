//! An eventfd, the kernel counter the `ctxswitch` and `response` probes hand
//! their tokens through.
//!
//! **Why eventfd, not futex, for the context-switch probe.** Both hand a
//! token from one thread to another through a kernel wait queue, and both
//! cost one wake-up and one context switch. An eventfd is a file: the same
//! `read`/`write` pair serves the `ctxswitch` probe and the eventfd source of
//! the `response` probe, the blocking read has no lost-wake-up race to get
//! right (a futex wait must re-check its word, and a wrapper that passes a
//! raw pointer to an atomic needs more `unsafe` than a read of 8 bytes), and
//! its path — file write, wait-queue wake-up, file read — is the one
//! `perf bench sched pipe` measures with a pipe, the peer a benchmark
//! compares against. The counter also carries a value: with strict
//! alternation (one write, then one read) a read returns exactly what the
//! other side wrote, so a token can be a timestamp.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

/// The largest value one eventfd write may add (`0xffff_ffff_ffff_fffe`);
/// `u64::MAX` is refused with `EINVAL`.
pub const EVENTFD_MAX: u64 = u64::MAX - 1;

/// An eventfd (`eventfd(2)`, counter mode, close-on-exec, blocking): a
/// 64-bit counter in the kernel that a write adds to and a read takes and
/// resets to zero, blocking while it is zero.
#[derive(Debug)]
pub struct EventFd(OwnedFd);

impl EventFd {
    /// Creates an eventfd whose counter starts at 0
    /// (`eventfd(0, EFD_CLOEXEC)`).
    pub fn new() -> io::Result<EventFd> {
        // SAFETY: plain integer arguments; returns a new descriptor or -1.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just returned by eventfd, is open, and nothing
        // else owns it.
        Ok(EventFd(unsafe { OwnedFd::from_raw_fd(fd) }))
    }

    /// Waits until the counter is non-zero, then returns it and resets it
    /// to zero (`read(fd, &u64, 8)`). `Interrupted` when a signal handler ran:
    /// the caller reads again.
    #[inline(always)]
    pub fn read(&self) -> io::Result<u64> {
        let mut value: u64 = 0;
        // SAFETY: `value` is a valid, writable 8-byte buffer for the whole
        // call; the descriptor is open for as long as `self` lives.
        let n = unsafe {
            libc::read(
                self.0.as_raw_fd(),
                (&mut value as *mut u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            // An eventfd read is all 8 bytes or an error.
            Ok(value)
        }
    }

    /// Adds `value` to the counter and wakes a reader
    /// (`write(fd, &u64, 8)`). `value` must be at most [`EVENTFD_MAX`]
    /// (`EINVAL` otherwise); a write that would overflow the counter blocks
    /// until a read empties it.
    #[inline(always)]
    pub fn write(&self, value: u64) -> io::Result<()> {
        // SAFETY: `value` is a valid, readable 8-byte buffer for the whole
        // call; the descriptor is open for as long as `self` lives.
        let n = unsafe {
            libc::write(
                self.0.as_raw_fd(),
                (&value as *const u64).cast(),
                std::mem::size_of::<u64>(),
            )
        };
        if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }
}

impl AsFd for EventFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eventfd_carries_the_value_written() {
        let e = EventFd::new().unwrap();
        e.write(1_234_567_890_123).unwrap();
        assert_eq!(e.read().unwrap(), 1_234_567_890_123);
        // Two writes before a read add up.
        e.write(3).unwrap();
        e.write(4).unwrap();
        assert_eq!(e.read().unwrap(), 7);
        assert_eq!(
            e.write(u64::MAX).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        e.write(EVENTFD_MAX).unwrap();
        assert_eq!(e.read().unwrap(), EVENTFD_MAX);
    }

    #[test]
    fn eventfd_read_blocks_until_another_thread_writes() {
        let e = EventFd::new().unwrap();
        std::thread::scope(|s| {
            let reader = s.spawn(|| e.read().unwrap());
            e.write(42).unwrap();
            assert_eq!(reader.join().unwrap(), 42);
        });
    }
}
