//! The kernel's perf events for tracepoints: `perf_event_open(2)`, the
//! `ioctl`s that enable, disable and redirect an event, and the per-CPU
//! ring buffer the kernel writes its records into.
//!
//! **The attribute.** [`PerfEventAttr`] is `struct perf_event_attr` up to
//! its fifth published size (`PERF_ATTR_SIZE_VER5`, 112 bytes, Linux 4.1),
//! which holds every field a tracepoint reader needs (`clockid` came with
//! size 4). It is defined here rather than taken from `perf-event-open-sys`:
//! the crate's bindgen output exposes the bit fields through generated
//! setters and brings a build-time dependency into the one crate that is
//! otherwise `libc` alone, for one struct of plain integers whose layout
//! the kernel keeps stable by its `size` field (a kernel reads the size we
//! pass and zero-extends). The flag bits of its third 64-bit word are
//! [`ATTR_DISABLED`] and friends, as `<linux/perf_event.h>` numbers them.
//!
//! **The ring.** One mapping per ring: one metadata page
//! (`struct perf_event_mmap_page`), then 2^n data pages. The kernel writes
//! records at `data_head` and never past `data_tail`; the reader loads
//! `data_head` with acquire ordering (the records before it are then
//! complete), copies `[data_tail, data_head)` out — a record may wrap
//! round the end of the data area, so the copy comes in up to two pieces —
//! and stores the new `data_tail` with release ordering (the kernel may
//! then overwrite what was copied). [`PerfRing::read_into`] does exactly
//! that, one load, one copy, one store, no system call; records are parsed
//! from the copy by the caller.
//!
//! **Sharing a ring.** `PERF_EVENT_IOC_SET_OUTPUT` makes an event on the
//! same CPU write into another event's ring, so all tracepoints of a CPU
//! share one ring and its records come in the order they were written.
//! The flag `PERF_FLAG_FD_OUTPUT` of `perf_event_open` was meant to do the
//! same and has been broken since Linux 2.6.35 (see the man page), so the
//! `ioctl` is the way.

use crate::mapping::SharedMapping;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// `PERF_TYPE_TRACEPOINT`: `config` is a tracepoint's id (its tracefs
/// `events/SYSTEM/NAME/id`).
pub const TYPE_TRACEPOINT: u32 = 2;
/// `PERF_ATTR_SIZE_VER5`: the size of [`PerfEventAttr`].
pub const ATTR_SIZE: u32 = 112;

/// `PERF_SAMPLE_TID`: the sample carries the pid and tid of the task.
pub const SAMPLE_TID: u64 = 1 << 1;
/// `PERF_SAMPLE_TIME`: the sample carries its time (of `clockid` when
/// [`ATTR_USE_CLOCKID`] is set).
pub const SAMPLE_TIME: u64 = 1 << 2;
/// `PERF_SAMPLE_CPU`: the sample carries its CPU.
pub const SAMPLE_CPU: u64 = 1 << 7;
/// `PERF_SAMPLE_RAW`: the sample carries the tracepoint's raw record.
pub const SAMPLE_RAW: u64 = 1 << 10;

/// `disabled`: the event starts off; [`enable`] turns it on.
pub const ATTR_DISABLED: u64 = 1 << 0;
/// `watermark`: wake a poller by `wakeup_watermark` bytes, not events.
pub const ATTR_WATERMARK: u64 = 1 << 14;
/// `sample_id_all`: records other than samples (a `PERF_RECORD_LOST`)
/// carry the sample's TID, TIME and CPU too.
pub const ATTR_SAMPLE_ID_ALL: u64 = 1 << 18;
/// `use_clockid`: sample times are of `clockid` instead of the perf clock.
pub const ATTR_USE_CLOCKID: u64 = 1 << 25;

/// `PERF_FLAG_FD_CLOEXEC`: the new descriptor is close-on-exec.
pub const FLAG_FD_CLOEXEC: u64 = 1 << 3;

/// `PERF_RECORD_LOST`: the kernel dropped records (the ring was full).
pub const RECORD_LOST: u32 = 2;
/// `PERF_RECORD_SAMPLE`: one sample.
pub const RECORD_SAMPLE: u32 = 9;

/// `PERF_EVENT_IOC_ENABLE` (`_IO('$', 0)`).
const IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE` (`_IO('$', 1)`).
const IOC_DISABLE: libc::c_ulong = 0x2401;
/// `PERF_EVENT_IOC_SET_OUTPUT` (`_IO('$', 5)`).
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;

/// Offset of `data_head` in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
/// Offset of `data_tail` in `struct perf_event_mmap_page`.
const DATA_TAIL: usize = 1032;

/// `struct perf_event_attr`, `PERF_ATTR_SIZE_VER5` (see the module doc).
#[repr(C)]
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PerfEventAttr {
    /// `type`: [`TYPE_TRACEPOINT`].
    pub kind: u32,
    /// `size`: [`ATTR_SIZE`].
    pub size: u32,
    /// `config`: the tracepoint's id.
    pub config: u64,
    /// `sample_period`: 1 records every hit.
    pub sample_period: u64,
    /// `sample_type`: `SAMPLE_*` bits.
    pub sample_type: u64,
    /// `read_format`.
    pub read_format: u64,
    /// The bit fields: `ATTR_*` bits.
    pub flags: u64,
    /// `wakeup_events` / `wakeup_watermark` (with [`ATTR_WATERMARK`]).
    pub wakeup_watermark: u32,
    /// `bp_type`.
    pub bp_type: u32,
    /// `config1`.
    pub config1: u64,
    /// `config2`.
    pub config2: u64,
    /// `branch_sample_type`.
    pub branch_sample_type: u64,
    /// `sample_regs_user`.
    pub sample_regs_user: u64,
    /// `sample_stack_user`.
    pub sample_stack_user: u32,
    /// `clockid`, with [`ATTR_USE_CLOCKID`].
    pub clockid: i32,
    /// `sample_regs_intr`.
    pub sample_regs_intr: u64,
    /// `aux_watermark`.
    pub aux_watermark: u32,
    /// `sample_max_stack`.
    pub sample_max_stack: u16,
    /// `__reserved_2`.
    pub reserved: u16,
}

const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == ATTR_SIZE as usize);

/// `CLOCK_MONOTONIC`, for [`PerfEventAttr::clockid`].
pub const CLOCK_MONOTONIC: i32 = libc::CLOCK_MONOTONIC;

/// Opens a perf event (`perf_event_open(2)`): for `pid` -1 and a `cpu`,
/// every task on that CPU. The descriptor is close-on-exec.
pub fn perf_event_open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid perf_event_attr whose `size` field says how
    // many bytes the kernel may read (it copies them during the call); a
    // group fd of -1 means no group. The result is a new descriptor or -1.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid as libc::c_long,
            cpu as libc::c_long,
            -1 as libc::c_long,
            FLAG_FD_CLOEXEC as libc::c_ulong,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// One argument-less or integer-argument perf `ioctl` on `fd`.
fn perf_ioctl(fd: BorrowedFd<'_>, request: libc::c_ulong, arg: libc::c_int) -> io::Result<()> {
    // SAFETY: `fd` is an open perf event descriptor (borrowed for the call);
    // the requests used here take an integer argument or none, never a
    // pointer.
    let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request, arg) };
    crate::minus_one(rc).map(drop)
}

/// Turns the event on (`PERF_EVENT_IOC_ENABLE`).
pub fn enable(fd: BorrowedFd<'_>) -> io::Result<()> {
    perf_ioctl(fd, IOC_ENABLE, 0)
}

/// Turns the event off (`PERF_EVENT_IOC_DISABLE`); what it recorded stays
/// in its ring.
pub fn disable(fd: BorrowedFd<'_>) -> io::Result<()> {
    perf_ioctl(fd, IOC_DISABLE, 0)
}

/// Makes `fd` write its records into `target`'s ring
/// (`PERF_EVENT_IOC_SET_OUTPUT`); both must be on the same CPU and `fd`
/// must not be mapped itself.
pub fn set_output(fd: BorrowedFd<'_>, target: BorrowedFd<'_>) -> io::Result<()> {
    perf_ioctl(fd, IOC_SET_OUTPUT, target.as_raw_fd())
}

/// The size of a page, as the ring is counted in pages.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory arguments; _SC_PAGESIZE always exists.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// A mapped perf ring: the metadata page and 2^n data pages (module doc).
#[derive(Debug)]
pub struct PerfRing {
    map: SharedMapping,
    page: usize,
    data_size: usize,
}

impl PerfRing {
    /// Maps the ring of event `fd` with `data_pages` data pages (a power of
    /// two; `EINVAL` otherwise, from the kernel).
    pub fn map(fd: BorrowedFd<'_>, data_pages: usize) -> io::Result<PerfRing> {
        let page = page_size();
        let map = SharedMapping::map(fd, (data_pages + 1) * page)?;
        Ok(PerfRing {
            map,
            page,
            data_size: data_pages * page,
        })
    }

    /// The bytes of the data area.
    pub fn data_size(&self) -> usize {
        self.data_size
    }

    /// The 64-bit word of the metadata page at `offset`.
    fn meta(&self, offset: usize) -> &AtomicU64 {
        // SAFETY: `offset` is DATA_HEAD or DATA_TAIL, 8-byte aligned words
        // inside the first (page-aligned) page of the mapping, which lives
        // as long as `self`; the kernel and this ring access them as
        // 64-bit words, this side only atomically.
        unsafe { AtomicU64::from_ptr(self.map.as_ptr().add(offset).cast()) }
    }

    /// Appends every record the kernel has completed since the last call
    /// to `out` (their raw bytes, in ring order) and hands the space back;
    /// returns how many bytes were copied. No system call; allocates only
    /// when `out` must grow.
    pub fn read_into(&mut self, out: &mut Vec<u8>) -> usize {
        let head = self.meta(DATA_HEAD).load(Ordering::Acquire);
        let tail = self.meta(DATA_TAIL).load(Ordering::Relaxed);
        let len = head.wrapping_sub(tail) as usize;
        if len == 0 {
            return 0;
        }
        // The kernel never writes more than the data area holds unread.
        let len = len.min(self.data_size);
        let start = (tail as usize) % self.data_size;
        let first = len.min(self.data_size - start);
        out.extend_from_slice(self.data(start, first));
        if first < len {
            out.extend_from_slice(self.data(0, len - first));
        }
        self.meta(DATA_TAIL)
            .store(tail.wrapping_add(len as u64), Ordering::Release);
        len
    }

    /// `len` bytes of the data area from `start`, which the reader owns.
    fn data(&self, start: usize, len: usize) -> &[u8] {
        assert!(start + len <= self.data_size);
        // SAFETY: the range lies inside the data area (checked above),
        // which starts one page into the mapping. The caller loaded
        // data_head with acquire ordering and the range lies in
        // [data_tail, data_head): the kernel has finished writing it and
        // does not write it again until data_tail moves past it, which
        // only `read_into` does, after its last use of the slice.
        unsafe { std::slice::from_raw_parts(self.map.as_ptr().add(self.page + start), len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    #[test]
    fn attr_has_the_kernels_ver5_layout() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);
        let a = PerfEventAttr::default();
        let base = &a as *const PerfEventAttr as usize;
        assert_eq!(&a.flags as *const u64 as usize - base, 40);
        assert_eq!(&a.wakeup_watermark as *const u32 as usize - base, 48);
        assert_eq!(&a.clockid as *const i32 as usize - base, 92);
        assert_eq!(&a.sample_max_stack as *const u16 as usize - base, 108);
    }

    #[test]
    fn a_tracepoint_id_the_kernel_does_not_know_is_invalid() {
        let attr = PerfEventAttr {
            kind: TYPE_TRACEPOINT,
            size: ATTR_SIZE,
            config: u64::from(u32::MAX),
            sample_period: 1,
            flags: ATTR_DISABLED,
            ..PerfEventAttr::default()
        };
        let err = perf_event_open(&attr, -1, 0).unwrap_err();
        if crate::effective_uid() != 0 {
            eprintln!("skipped the errno check: not root ({err})");
            return;
        }
        assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{err}");
    }

    /// `PERF_TYPE_SOFTWARE`, `PERF_COUNT_SW_CONTEXT_SWITCHES`: an event
    /// every kernel with perf events has, without tracefs.
    fn context_switches_of_this_thread() -> io::Result<OwnedFd> {
        let attr = PerfEventAttr {
            kind: 1,
            size: ATTR_SIZE,
            config: 3,
            sample_period: 1,
            sample_type: SAMPLE_TID | SAMPLE_TIME | SAMPLE_CPU,
            flags: ATTR_DISABLED | ATTR_USE_CLOCKID | ATTR_SAMPLE_ID_ALL,
            clockid: CLOCK_MONOTONIC,
            ..PerfEventAttr::default()
        };
        perf_event_open(&attr, 0, -1)
    }

    #[test]
    fn ring_records_are_copied_out_whole_across_the_wrap() {
        let fd = match context_switches_of_this_thread() {
            Ok(fd) => fd,
            Err(e) => {
                eprintln!("skipped: perf events are not open to this user here: {e}");
                return;
            }
        };
        let mut ring = PerfRing::map(fd.as_fd(), 1).unwrap();
        assert_eq!(ring.data_size(), page_size());
        enable(fd.as_fd()).unwrap();
        let me = std::process::id();
        let start = crate::monotonic_ns();
        let mut buf = Vec::new();
        let mut samples = 0;
        let mut last = 0;
        // A sample is 8 (header) + 8 (pid, tid) + 8 (time) + 8 (cpu) = 32
        // bytes: 1000 sleeps fill a 4 KiB page several times over.
        for _ in 0..1000 {
            std::thread::sleep(std::time::Duration::from_micros(10));
            buf.clear();
            ring.read_into(&mut buf);
            let mut at = 0;
            while at + 8 <= buf.len() {
                let kind = u32::from_ne_bytes(buf[at..at + 4].try_into().unwrap());
                let size = usize::from(u16::from_ne_bytes(buf[at + 6..at + 8].try_into().unwrap()));
                assert!(size >= 8 && at + size <= buf.len(), "record cut at {at}");
                if kind == RECORD_SAMPLE {
                    assert_eq!(size, 32);
                    let pid = u32::from_ne_bytes(buf[at + 8..at + 12].try_into().unwrap());
                    let time = u64::from_ne_bytes(buf[at + 16..at + 24].try_into().unwrap());
                    assert_eq!(pid, me);
                    assert!(time >= start && time >= last, "{time} after {last}");
                    last = time;
                    samples += 1;
                }
                at += size;
            }
            assert_eq!(at, buf.len());
        }
        disable(fd.as_fd()).unwrap();
        assert!(samples >= 1000, "{samples} samples of 1000 sleeps");
        assert!(last <= crate::monotonic_ns());
    }
}
