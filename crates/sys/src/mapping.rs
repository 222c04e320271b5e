//! A shared memory mapping of a kernel ring — a perf event's
//! ([`crate::perf::PerfRing`]) or a packet socket's
//! ([`crate::packet_ring::RxRing`]) — made by one `mmap(2)` and undone by
//! one `munmap(2)` when dropped, so each ring holds its mapping instead of
//! repeating both calls.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;

/// `len` bytes of a descriptor's memory, mapped shared and read-write.
#[derive(Debug)]
pub struct SharedMapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by this value; moving it to
// another thread moves that ownership (the rings that hold it synchronise
// with the kernel through atomics of their own).
unsafe impl Send for SharedMapping {}

impl SharedMapping {
    /// Maps `len` bytes of `fd` from offset 0, where the kernel chooses.
    pub fn map(fd: BorrowedFd<'_>, len: usize) -> io::Result<SharedMapping> {
        // SAFETY: a new shared mapping of the descriptor's memory, at an
        // address the kernel chooses, of the size the caller's ring takes;
        // nothing aliases it.
        let addr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if addr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let base =
            NonNull::new(addr.cast::<u8>()).ok_or_else(|| io::Error::other("mmap gave 0"))?;
        Ok(SharedMapping { base, len })
    }

    /// The first byte of the mapping.
    pub fn as_ptr(&self) -> *mut u8 {
        self.base.as_ptr()
    }

    /// Its length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it is empty (never: `mmap` refuses a length of 0).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Drop for SharedMapping {
    fn drop(&mut self) {
        // SAFETY: `base` and `len` are the mapping `map` made, unmapped
        // once, here; the rings that hand out slices of it borrow `self`.
        unsafe {
            libc::munmap(self.base.as_ptr().cast(), self.len);
        }
    }
}
