//! The only place in jitterlab that talks to the kernel through `unsafe` code.
//!
//! Every function here is one thin, safe wrapper around one system call (or one
//! libc function that is a system call in disguise), in the style of the `nix`
//! crate: it converts arguments, makes the call, and turns the kernel's error
//! into an [`std::io::Error`]. Policy — which call to make when, what to do when
//! one fails, how to report it — lives in the binary, never here.
//!
//! Why not `nix` for all of it? `nix` has no `sched_setscheduler`, no
//! `RUSAGE_THREAD` field access without extra features, and its
//! `clock_gettime` returns a `TimeSpec` that we would convert back to integer
//! nanoseconds on the hot path anyway. The handful of calls a probe needs fit
//! on one page, each with its `// SAFETY:` argument, so we keep them here.
//!
//! Two functions are hooks rather than calls: [`set_child_hooks`] makes
//! several calls, and [`join_cgroup_before_exec`] one, but all of them in a
//! child between `fork` and `exec`, where only async-signal-safe calls are
//! allowed and nothing may allocate; keeping them in small audited closures
//! is the point.
//!
//! Note the calling convention of `clock_nanosleep(2)`: it *returns* its error
//! number instead of setting `errno` (and never fails with `EINTR` silently: a
//! signal handler interrupts it, and the caller sleeps again to the same
//! absolute time).

#![deny(missing_docs)]

pub mod tsc;

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

pub mod eventfd;
pub mod mapping;
pub mod netns;
pub mod packet;
pub mod packet_ring;
pub mod perf;
pub mod poll;
pub mod rx_timestamp;
pub mod tx_timestamp;

/// The error number of an interrupted call, as [`sleep_until_ns`] returns it.
pub const EINTR: i32 = libc::EINTR;

/// Nanoseconds per second, for `timespec` conversions.
const NS_PER_SEC: u64 = 1_000_000_000;

/// Scheduling policies a probe thread can ask for: the one policy type of
/// jitterlab (the spec model re-exports it, the command line parses it, the
/// results store its [`name`](Policy::name)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_FIFO`: run until blocked or preempted by a higher priority.
    Fifo,
    /// `SCHED_RR`: like FIFO, with a time slice among equal priorities.
    RoundRobin,
    /// `SCHED_OTHER`: the normal time-sharing policy (priority 0, nice value).
    Other,
}

impl Policy {
    /// Every policy, in the order the command line lists them.
    pub const ALL: [Policy; 3] = [Policy::Fifo, Policy::RoundRobin, Policy::Other];

    /// The name on the command line, in spec files and in results: `fifo`,
    /// `rr`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Fifo => "fifo",
            Policy::RoundRobin => "rr",
            Policy::Other => "other",
        }
    }

    /// The policy of a [`name`](Policy::name); `None` for any other text.
    pub fn parse(name: &str) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The kernel's number for the policy (`SCHED_FIFO` = 1, …), as
    /// `sched_getscheduler` reports it.
    pub fn raw(self) -> libc::c_int {
        match self {
            Policy::Fifo => libc::SCHED_FIFO,
            Policy::RoundRobin => libc::SCHED_RR,
            Policy::Other => libc::SCHED_OTHER,
        }
    }
}

fn timespec_from_ns(ns: u64) -> libc::timespec {
    libc::timespec {
        tv_sec: (ns / NS_PER_SEC) as libc::time_t,
        tv_nsec: (ns % NS_PER_SEC) as libc::c_long,
    }
}

/// Reads `CLOCK_MONOTONIC` in nanoseconds (served by the vDSO: no kernel entry
/// with the TSC clocksource).
#[inline(always)]
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the duration of the call;
    // CLOCK_MONOTONIC always exists on Linux, so the call cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * NS_PER_SEC + ts.tv_nsec as u64
}

/// Sleeps until the absolute `CLOCK_MONOTONIC` time `deadline_ns`
/// (`clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, …)`).
///
/// Returns the error number the call returns (`EINTR` when a signal handler
/// ran): the caller decides whether to sleep again.
#[inline(always)]
pub fn sleep_until_ns(deadline_ns: u64) -> Result<(), i32> {
    let ts = timespec_from_ns(deadline_ns);
    // SAFETY: `ts` is a valid timespec; the remaining-time pointer may be null
    // with TIMER_ABSTIME. clock_nanosleep returns the error instead of setting
    // errno.
    let rc = unsafe {
        libc::clock_nanosleep(
            libc::CLOCK_MONOTONIC,
            libc::TIMER_ABSTIME,
            &ts,
            std::ptr::null_mut(),
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(rc)
    }
}

/// Sets the calling thread's scheduling policy and priority
/// (`sched_setscheduler(0, …)` applies to the calling thread on Linux).
pub fn set_scheduler(policy: Policy, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param; pid 0 names the calling thread.
    let rc = unsafe { libc::sched_setscheduler(0, policy.raw(), &param) };
    minus_one(rc).map(drop)
}

/// Returns the calling thread's scheduling policy and priority as the kernel
/// sees them, to verify what [`set_scheduler`] did.
pub fn get_scheduler() -> io::Result<(i32, i32)> {
    // SAFETY: pid 0 names the calling thread; no pointers are passed.
    let policy = unsafe { libc::sched_getscheduler(0) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, writable sched_param.
    let rc = unsafe { libc::sched_getparam(0, &mut param) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((policy, param.sched_priority))
}

/// The lowest and highest static priority of `policy` (`sched_get_priority_min/max`).
pub fn priority_range(policy: Policy) -> (i32, i32) {
    // SAFETY: both calls take a plain integer and only read it.
    unsafe {
        (
            libc::sched_get_priority_min(policy.raw()),
            libc::sched_get_priority_max(policy.raw()),
        )
    }
}

/// Sets the nice value of the calling thread (`setpriority(PRIO_PROCESS, tid)`:
/// on Linux the nice value is per thread).
pub fn set_thread_nice(nice: i32) -> io::Result<()> {
    let tid = gettid();
    // SAFETY: plain integer arguments; `tid` is this thread's id.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    minus_one(rc).map(drop)
}

/// The calling thread's kernel thread id (`gettid(2)`).
pub fn gettid() -> i32 {
    // SAFETY: gettid takes no arguments and cannot fail.
    unsafe { libc::gettid() }
}

/// Pins the calling thread to the single CPU `cpu`.
pub fn pin_to_cpu(cpu: usize) -> io::Result<()> {
    set_affinity(&[cpu])
}

/// Restricts the calling thread to the CPUs in `cpus` (`sched_setaffinity(0, …)`).
pub fn set_affinity(cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array for which all-zeroes is valid.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `cpu` was checked against CPU_SETSIZE, so CPU_SET stays in bounds.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; pid 0 is this thread.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    minus_one(rc).map(drop)
}

/// Sets the scheduling policy and priority of thread `tid`, another
/// process's thread (`sched_setscheduler(tid, …)`): a command jitterlab
/// started, placed as its configuration asks.
pub fn set_thread_scheduler(tid: i32, policy: Policy, priority: i32) -> io::Result<()> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: `param` is a valid sched_param; `tid` is a plain integer.
    let rc = unsafe { libc::sched_setscheduler(tid, policy.raw(), &param) };
    minus_one(rc).map(drop)
}

/// The scheduling policy (raw, without flags) and priority of thread
/// `tid` as the kernel sees them (`sched_getscheduler`, `sched_getparam`).
pub fn thread_scheduler(tid: i32) -> io::Result<(i32, i32)> {
    // SAFETY: `tid` is a plain integer; no pointers are passed.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    if policy < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid, writable sched_param.
    let rc = unsafe { libc::sched_getparam(tid, &mut param) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((policy & !libc::SCHED_RESET_ON_FORK, param.sched_priority))
}

/// Restricts thread `tid` to the CPUs in `cpus` (`sched_setaffinity(tid, …)`).
pub fn set_thread_affinity(tid: i32, cpus: &[usize]) -> io::Result<()> {
    // SAFETY: cpu_set_t is a plain bit array for which all-zeroes is valid.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: `cpu` was checked against CPU_SETSIZE, so CPU_SET stays in bounds.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    // SAFETY: `set` is a valid cpu_set_t of the size passed; `tid` is a plain integer.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    minus_one(rc).map(drop)
}

/// The CPUs thread `tid` may run on (`sched_getaffinity(tid, …)`).
pub fn thread_affinity(tid: i32) -> io::Result<Vec<usize>> {
    // SAFETY: cpu_set_t is a plain bit array for which all-zeroes is valid.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    minus_one(rc)?;
    Ok((0..libc::CPU_SETSIZE as usize)
        // SAFETY: `cpu` is below CPU_SETSIZE, so CPU_ISSET stays in bounds.
        .filter(|&cpu| unsafe { libc::CPU_ISSET(cpu, &set) })
        .collect())
}

/// The CPU the calling thread runs on right now (`sched_getcpu(3)`).
pub fn current_cpu() -> io::Result<usize> {
    // SAFETY: no arguments; returns -1 with errno on failure.
    let rc = unsafe { libc::sched_getcpu() };
    if rc < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc as usize)
    }
}

/// Locks all current and future pages of the process in memory
/// (`mlockall(MCL_CURRENT | MCL_FUTURE)`), so no page fault hits a probe.
pub fn lock_all_memory() -> io::Result<()> {
    // SAFETY: plain flag argument.
    let rc = unsafe { libc::mlockall(libc::MCL_CURRENT | libc::MCL_FUTURE) };
    minus_one(rc).map(drop)
}

/// Undoes [`lock_all_memory`] (`munlockall(2)`).
pub fn unlock_all_memory() -> io::Result<()> {
    // SAFETY: no arguments.
    let rc = unsafe { libc::munlockall() };
    minus_one(rc).map(drop)
}

/// `SIGHUP`: the terminal (an SSH connection) hung up.
pub const SIGHUP: i32 = libc::SIGHUP;
/// `SIGPIPE`: a write to a pipe whose reader is gone; never caught (the
/// Rust runtime ignores it, see the main crate's `output`).
pub const SIGPIPE: i32 = libc::SIGPIPE;

/// The signals whose default action ends the process and that a handler
/// can meaningfully catch, in signal-number order: SIGHUP, SIGINT,
/// SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM, SIGTERM, SIGSTKFLT, SIGXCPU,
/// SIGXFSZ, SIGVTALRM, SIGPROF, SIGPOLL (SIGIO), SIGPWR and every
/// real-time signal from `SIGRTMIN` (as the C library reserves the first
/// ones for itself, usually 34) to `SIGRTMAX`.
///
/// Left out, each for its reason: `SIGKILL` and `SIGSTOP` cannot be
/// caught; `SIGPIPE` is ignored, so a write to a closed pipe fails with
/// `EPIPE` instead; `SIGSEGV`, `SIGBUS`, `SIGILL`, `SIGFPE` are faults of
/// the faulting instruction itself, which a handler that returns would run
/// again, and `SIGABRT`, `SIGSYS` and `SIGTRAP` come from the process
/// itself (`abort`, a forbidden system call, a breakpoint): none of them
/// can be turned into an orderly end.
pub fn terminating_signals() -> Vec<i32> {
    let mut signals = vec![
        libc::SIGHUP,
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGUSR1,
        libc::SIGUSR2,
        libc::SIGALRM,
        libc::SIGTERM,
        libc::SIGSTKFLT,
        libc::SIGXCPU,
        libc::SIGXFSZ,
        libc::SIGVTALRM,
        libc::SIGPROF,
        libc::SIGPOLL,
        libc::SIGPWR,
    ];
    signals.sort_unstable();
    signals.extend(libc::SIGRTMIN()..=libc::SIGRTMAX());
    signals
}

/// Blocks `signals` in the calling thread (`pthread_sigmask(SIG_BLOCK,
/// …)`), so that they are delivered to another thread — the controlling
/// one, for [`terminating_signals`] — and never interrupt a probe's sleep.
pub fn block_signals(signals: &[i32]) -> io::Result<()> {
    // SAFETY: sigset_t is a plain bit array for which all-zeroes is a valid
    // (empty) value; sigemptyset below makes that explicit.
    let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
    // SAFETY: `set` is a valid, writable sigset_t.
    unsafe { libc::sigemptyset(&mut set) };
    for &sig in signals {
        // SAFETY: `set` is a valid, writable sigset_t; an invalid signal
        // number is reported (EINVAL), never undefined.
        if unsafe { libc::sigaddset(&mut set, sig) } != 0 {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
    }
    // SAFETY: `set` is initialised; the old-set pointer may be null.
    let rc = unsafe { libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::from_raw_os_error(rc))
    }
}

/// True when the calling process may write `path` (`access(path, W_OK)`);
/// used to refuse an unwritable output path before anything starts.
pub fn can_write(path: &Path) -> bool {
    write_access(path).is_ok()
}

/// Whether the calling process may write `path` (`access(path, W_OK)`),
/// with the reason when it may not: `EROFS` (a read-only file system, which
/// root cannot write either) tells apart from `EACCES` (a missing privilege).
pub fn write_access(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let rc = unsafe { libc::access(c.as_ptr(), libc::W_OK) };
    minus_one(rc).map(drop)
}

/// Makes a named pipe (FIFO) at `path` with permission bits `mode`
/// (`mkfifo(3)`): the channel a containerised probe hands its samples to
/// the host through.
pub fn mkfifo(path: &Path, mode: u32) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
    // SAFETY: `c` is a valid NUL-terminated string that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), mode as libc::mode_t) };
    minus_one(rc).map(drop)
}

/// The file system magic of resctrl (`RDTGROUP_SUPER_MAGIC`), as
/// [`filesystem_type`] reports it for `/sys/fs/resctrl` when it is mounted.
pub const RESCTRL_MAGIC: i64 = 0x0765_5821;

/// The file system magic of tracefs (`TRACEFS_MAGIC`), as
/// [`filesystem_type`] reports it for `/sys/kernel/tracing` when it is mounted.
pub const TRACEFS_MAGIC: i64 = 0x7472_6163;

/// What [`flock`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlockOp {
    /// `LOCK_SH`: a shared lock, waiting for exclusive holders.
    Shared,
    /// `LOCK_EX`: an exclusive lock, waiting for every other holder.
    Exclusive,
    /// `LOCK_EX | LOCK_NB`: an exclusive lock, or `WouldBlock` at once.
    TryExclusive,
    /// `LOCK_UN`: releases the lock (closing the file does too).
    Unlock,
}

/// Takes or releases an advisory lock on the open file `file`
/// (`flock(2)`); the kernel's resctrl documentation asks tools to hold
/// `LOCK_EX` on `/sys/fs/resctrl` around a read-modify-write. The lock
/// belongs to the open file description: it ends when `file` is closed.
pub fn flock(file: &File, op: FlockOp) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let raw = match op {
        FlockOp::Shared => libc::LOCK_SH,
        FlockOp::Exclusive => libc::LOCK_EX,
        FlockOp::TryExclusive => libc::LOCK_EX | libc::LOCK_NB,
        FlockOp::Unlock => libc::LOCK_UN,
    };
    // SAFETY: the descriptor belongs to `file`, which outlives the call;
    // the operation is a valid flag combination.
    let rc = unsafe { libc::flock(file.as_raw_fd(), raw) };
    minus_one(rc).map(drop)
}

/// The result of a call that returns `-1` and sets `errno` on failure (most
/// of them): the OS error for `-1`, else the value. The few calls that
/// return their error number instead (`clock_nanosleep`, the `pthread_*`
/// calls) do not go through it.
pub(crate) fn minus_one(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// The C string of a path, or `EINVAL` when it holds a NUL byte.
fn c_path(path: &Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

/// Mounts the file system `fstype` from `source` on `target` with no flags
/// and no options (`mount(2)`), e.g. `mount("resctrl", "/sys/fs/resctrl",
/// "resctrl")` as `mount -t resctrl resctrl /sys/fs/resctrl` does.
pub fn mount(source: &str, target: &Path, fstype: &str) -> io::Result<()> {
    let einval = |_| io::Error::from_raw_os_error(libc::EINVAL);
    let source = std::ffi::CString::new(source).map_err(einval)?;
    let fstype = std::ffi::CString::new(fstype).map_err(einval)?;
    let target = c_path(target)?;
    // SAFETY: the three strings are valid NUL-terminated C strings that
    // outlive the call; flags 0 and a null data pointer are valid.
    let rc = unsafe {
        libc::mount(
            source.as_ptr(),
            target.as_ptr(),
            fstype.as_ptr(),
            0,
            std::ptr::null(),
        )
    };
    minus_one(rc).map(drop)
}

/// Unmounts the file system mounted on `target` (`umount2(target, 0)`);
/// `EINVAL` when nothing is mounted there.
pub fn unmount(target: &Path) -> io::Result<()> {
    let target = c_path(target)?;
    // SAFETY: `target` is a valid NUL-terminated C string that outlives the
    // call; flags 0 ask for a normal unmount.
    let rc = unsafe { libc::umount2(target.as_ptr(), 0) };
    minus_one(rc).map(drop)
}

/// The magic number of the file system `path` is on (`statfs(2)`'s
/// `f_type`), e.g. [`RESCTRL_MAGIC`].
pub fn filesystem_type(path: &Path) -> io::Result<i64> {
    let c = c_path(path)?;
    // SAFETY: statfs is plain data for which all-zeroes is valid.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated C string and `st` a valid,
    // writable statfs, both outliving the call.
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    if rc == 0 {
        #[allow(clippy::unnecessary_cast)] // __fsword_t is not i64 everywhere
        Ok(st.f_type as i64)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Resource usage of the calling thread that explains latency outliers.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadUsage {
    /// Voluntary context switches (the thread blocked: its sleeps).
    pub voluntary_switches: u64,
    /// Involuntary context switches (the thread was preempted).
    pub involuntary_switches: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults (disk I/O).
    pub major_faults: u64,
}

/// `getrusage(RUSAGE_THREAD)` for the calling thread.
pub fn thread_usage() -> io::Result<ThreadUsage> {
    // SAFETY: rusage is plain data for which all-zeroes is valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `ru` is a valid, writable rusage.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut ru) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(ThreadUsage {
        voluntary_switches: ru.ru_nvcsw as u64,
        involuntary_switches: ru.ru_nivcsw as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
    })
}

/// A resource limit's soft and hard values (`getrlimit(2)`); `None` means
/// unlimited.
pub fn rlimit(resource: Resource) -> io::Result<(Option<u64>, Option<u64>)> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` is a valid, writable rlimit; the resource is a valid constant.
    let rc = unsafe { libc::getrlimit(resource.raw(), &mut lim) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    let conv = |v: libc::rlim_t| (v != libc::RLIM_INFINITY).then_some(v);
    Ok((conv(lim.rlim_cur), conv(lim.rlim_max)))
}

/// Resource limits jitterlab reports on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resource {
    /// `RLIMIT_RTPRIO`: the highest real-time priority an unprivileged user may set.
    RtPrio,
    /// `RLIMIT_MEMLOCK`: how much memory may be locked.
    MemLock,
}

impl Resource {
    fn raw(self) -> libc::__rlimit_resource_t {
        match self {
            Resource::RtPrio => libc::RLIMIT_RTPRIO,
            Resource::MemLock => libc::RLIMIT_MEMLOCK,
        }
    }
}

/// The effective user id (`geteuid(2)`), to explain missing privileges.
pub fn effective_uid() -> u32 {
    // SAFETY: no arguments, cannot fail.
    unsafe { libc::geteuid() }
}

/// Touches `bytes` of the calling thread's stack so its pages are faulted in
/// (and, after [`lock_all_memory`], locked) before the measured loop runs.
///
/// Safe code; it lives here because it is part of the real-time set-up.
#[inline(never)]
pub fn prefault_stack<const BYTES: usize>() {
    let mut buf = [0u8; BYTES];
    // Write one byte per page, then let the optimiser believe it is read.
    for i in (0..BYTES).step_by(4096) {
        buf[i] = 1;
    }
    std::hint::black_box(&mut buf);
}

/// A held PM QoS request on `/dev/cpu_dma_latency`: while it lives, the kernel
/// keeps every CPU out of idle states whose exit latency exceeds the request.
/// Dropping it (closing the file) withdraws the request, on every exit path,
/// including a crash: the kernel drops the request with the file descriptor.
#[derive(Debug)]
pub struct DmaLatencyGuard {
    _file: File,
    /// The latency requested, in microseconds.
    pub microseconds: i32,
}

impl DmaLatencyGuard {
    /// Opens `path` (normally `/dev/cpu_dma_latency`) and writes the request as
    /// a 32-bit binary integer, as the PM QoS interface expects.
    pub fn hold(path: &Path, microseconds: i32) -> io::Result<Self> {
        let mut file = OpenOptions::new().write(true).open(path)?;
        file.write_all(&microseconds.to_ne_bytes())?;
        Ok(DmaLatencyGuard {
            _file: file,
            microseconds,
        })
    }
}

/// `SIGKILL`, for [`kill_group`]: cannot be caught; ends a process at once.
pub const SIGKILL: i32 = libc::SIGKILL;
/// `SIGINT`, for [`kill_group`]: what Ctrl-C sends; stress-ng prints its
/// metrics when it gets it.
pub const SIGINT: i32 = libc::SIGINT;
/// `SIGTERM`, for [`kill_group`]: the polite request to end.
pub const SIGTERM: i32 = libc::SIGTERM;
/// `SIGSTOP`, for [`kill_process`]: cannot be caught; stops a process
/// (state `T`) until `SIGCONT`.
pub const SIGSTOP: i32 = libc::SIGSTOP;
/// `SIGCONT`, for [`kill_process`]: resumes a stopped process.
pub const SIGCONT: i32 = libc::SIGCONT;
/// `O_DIRECT`, for `std::os::unix::fs::OpenOptionsExt::custom_flags`: I/O
/// that bypasses the page cache (some file systems refuse it with `EINVAL`).
pub const O_DIRECT: i32 = libc::O_DIRECT;
/// `O_NOFOLLOW`, for `std::os::unix::fs::OpenOptionsExt::custom_flags`:
/// the open fails with [`ELOOP`] when the last component of the path is a
/// symbolic link, so a file root writes can never be redirected by one.
pub const O_NOFOLLOW: i32 = libc::O_NOFOLLOW;
/// `ELOOP`: what an open with [`O_NOFOLLOW`] returns for a symbolic link.
pub const ELOOP: i32 = libc::ELOOP;
/// The file system magic of tmpfs (`TMPFS_MAGIC`), as [`filesystem_type`]
/// reports it: memory, not a block device.
#[allow(clippy::unnecessary_cast)] // c_long is not i64 everywhere
pub const TMPFS_MAGIC: i64 = libc::TMPFS_MAGIC as i64;
/// The file system magic of ramfs (`RAMFS_MAGIC` of `<linux/magic.h>`,
/// which the libc crate lacks): memory, not a block device.
pub const RAMFS_MAGIC: i64 = 0x8584_58f6;

/// The file system magic of a cgroup v1 hierarchy (`CGROUP_SUPER_MAGIC`),
/// as [`filesystem_type`] reports it.
#[allow(clippy::unnecessary_cast)] // c_long is not i64 everywhere
pub const CGROUP_MAGIC: i64 = libc::CGROUP_SUPER_MAGIC as i64;
/// The file system magic of cgroup v2 (`CGROUP2_SUPER_MAGIC`).
#[allow(clippy::unnecessary_cast)] // c_long is not i64 everywhere
pub const CGROUP2_MAGIC: i64 = libc::CGROUP2_SUPER_MAGIC as i64;

/// Makes the child started by `cmd` join a cgroup before it `exec`s: a
/// `pre_exec` hook writes `0` ("the writing process") to `procs`, the
/// group's `cgroup.procs` opened for writing by the caller, in the parent,
/// before the fork. Everything the child later forks is born in the group,
/// so no descendant can escape it by changing its process group or session.
///
/// The hook makes one `write(2)` on a descriptor that already exists — an
/// async-signal-safe call that allocates nothing. The descriptor is
/// close-on-exec (std opens every file so): the program never sees it. A
/// failing write (the group was removed, the kernel refuses the move) makes
/// `spawn` return that error. Combine it with [`set_child_hooks`]; hooks
/// run in the order they were added.
pub fn join_cgroup_before_exec(cmd: &mut std::process::Command, procs: File) {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let hook = move || -> io::Result<()> {
        // SAFETY: the descriptor belongs to `procs`, which the closure owns
        // and so outlives the call; the buffer is a static one-byte string.
        let n = unsafe { libc::write(procs.as_raw_fd(), b"0".as_ptr().cast(), 1) };
        if n == 1 {
            Ok(())
        } else if n < 0 {
            Err(io::Error::last_os_error())
        } else {
            Err(io::Error::from(io::ErrorKind::WriteZero))
        }
    };
    // SAFETY: the hook makes a single async-signal-safe system call
    // (write), allocates nothing (`io::Error::last_os_error` stores the
    // error number inline) and touches no lock or state shared with other
    // threads of the parent.
    unsafe { cmd.pre_exec(hook) };
}

/// Makes a child started by `cmd` safe to leave beside a measurement: its own
/// session and process group, killed when its parent dies, pinned to `cpus`,
/// at `nice`.
///
/// - The child first calls `setsid()`: it leads a new session and a new
///   process group whose id is its pid, so the whole group can be signalled
///   with [`kill_group`]. A session of its own, rather than only a group,
///   matters where the kernel groups tasks by session for CPU time
///   (`CONFIG_SCHED_AUTOGROUP`, `kernel.sched_autogroup_enabled=1`, the
///   default of desktop and many server kernels): every session gets one
///   equal share of a CPU, split among its tasks, so neighbours left in
///   jitterlab's session would share one share among all of them, and a
///   neighbour asked for 80 % of a CPU got 6 % of it where it got 28 % in a
///   session of its own on the same busy CPU.
/// - Then, still between `fork` and `exec`, the hook asks for
///   `SIGKILL` when the parent dies (`prctl(PR_SET_PDEATHSIG)`), then exits
///   at once if the parent already died before that request (`getppid()`
///   no longer the parent's pid), pins the child to `cpus`
///   (`sched_setaffinity`; an empty slice leaves the inherited affinity) and
///   sets its nice value (`setpriority(PRIO_PROCESS, 0, nice)`) when given.
///   A failing call makes `spawn` return that error.
///
/// **The parent-death signal fires when the *thread* that spawned the child
/// exits**, not only when the process does: spawn from a long-lived thread
/// (the bench runs its controller on the main thread), never from a helper
/// thread that ends while the child should run. The signal survives `exec`
/// of a binary that is not set-user-id. It is inherited by nobody: the
/// child's own children (stress-ng's workers) are reached by killing the
/// group.
///
/// A CPU number beyond `CPU_SETSIZE`, or a set the kernel refuses (no online
/// CPU in it), makes `spawn` fail with `EINVAL`.
pub fn set_child_hooks(cmd: &mut std::process::Command, cpus: &[usize], nice: Option<i32>) {
    use std::os::unix::process::CommandExt;
    // Everything the child needs is computed here, in the parent: the child
    // of a multi-threaded parent may only make async-signal-safe calls, so
    // it must not allocate (another thread may have held the allocator's
    // lock at the moment of the fork).
    // SAFETY: getpid takes no arguments and cannot fail.
    let parent = unsafe { libc::getpid() };
    // SAFETY: cpu_set_t is a plain bit array for which all-zeroes is valid.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let mut out_of_range = false;
    for &cpu in cpus {
        if cpu >= libc::CPU_SETSIZE as usize {
            out_of_range = true;
            continue;
        }
        // SAFETY: `cpu` was checked against CPU_SETSIZE, so CPU_SET stays in bounds.
        unsafe { libc::CPU_SET(cpu, &mut set) };
    }
    let pin = !cpus.is_empty();
    let hook = move || -> io::Result<()> {
        if out_of_range {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        // SAFETY: setsid takes no arguments; the child of a fork is never a
        // process group leader, so it cannot fail with EPERM.
        if unsafe { libc::setsid() } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: prctl with integer arguments only.
        if unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) } != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: getppid takes no arguments and cannot fail.
        if unsafe { libc::getppid() } != parent {
            // The parent died before the request above: nobody would ever
            // stop this child. _exit is async-signal-safe and runs no
            // destructors or atexit handlers of the parent's image.
            // SAFETY: plain integer argument; does not return.
            unsafe { libc::_exit(1) };
        }
        if pin {
            // SAFETY: `set` is a valid cpu_set_t, copied into the closure
            // before the fork; pid 0 names the child itself.
            let rc =
                unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            if rc != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        if let Some(nice) = nice {
            // SAFETY: plain integer arguments; who 0 names the child itself.
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, nice) } != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    };
    // SAFETY: the hook makes only async-signal-safe system calls (setsid,
    // prctl, getppid, _exit, sched_setaffinity, setpriority), allocates nothing
    // (its captures are plain values, and `io::Error::last_os_error` stores
    // the error number inline), and touches no lock or state shared with
    // other threads of the parent.
    unsafe { cmd.pre_exec(hook) };
}

/// Sends `sig` to every process of the process group `pgid` (`killpg(2)`).
///
/// Refuses `pgid` ≤ 1 with `EINVAL` instead of passing it on: `killpg(0, …)`
/// would signal the caller's own group and 1 is init's.
pub fn kill_group(pgid: i32, sig: i32) -> io::Result<()> {
    if pgid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: plain integer arguments.
    let rc = unsafe { libc::killpg(pgid, sig) };
    minus_one(rc).map(drop)
}

/// Sends `sig` to the single process `pid` (`kill(2)`).
///
/// Refuses `pid` ≤ 1 with `EINVAL` instead of passing it on: `kill(0, …)`
/// signals the caller's group, `kill(-1, …)` every process it may signal,
/// a negative pid a whole group, and 1 is init.
pub fn kill_process(pid: i32, sig: i32) -> io::Result<()> {
    if pid <= 1 {
        return Err(io::Error::from_raw_os_error(libc::EINVAL));
    }
    // SAFETY: plain integer arguments.
    let rc = unsafe { libc::kill(pid, sig) };
    minus_one(rc).map(drop)
}

/// The kernel's clock tick (`USER_HZ`, `sysconf(_SC_CLK_TCK)`), the unit of
/// the CPU times in `/proc/PID/stat`; 100 if the call fails.
pub fn clock_ticks_per_second() -> u64 {
    // SAFETY: plain integer argument.
    let rc = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if rc > 0 {
        rc as u64
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn another_thread_s_affinity_and_policy_are_set_and_read_back_by_its_tid() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let t = std::thread::spawn(move || {
            tx.send(gettid()).unwrap();
            let _ = done_rx.recv();
        });
        let tid = rx.recv().unwrap();
        let cpu = current_cpu().unwrap();
        set_thread_affinity(tid, &[cpu]).unwrap();
        assert_eq!(thread_affinity(tid).unwrap(), [cpu]);
        // A new thread is time-sharing; SCHED_OTHER takes priority 0.
        set_thread_scheduler(tid, Policy::Other, 0).unwrap();
        assert_eq!(thread_scheduler(tid).unwrap(), (libc::SCHED_OTHER, 0));
        // No thread has a negative id: EINVAL.
        assert_eq!(
            thread_scheduler(-1).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        done_tx.send(()).unwrap();
        t.join().unwrap();
    }

    #[test]
    fn monotonic_clock_advances_and_sleep_reaches_deadline() {
        let a = monotonic_ns();
        let deadline = a + 2_000_000;
        loop {
            match sleep_until_ns(deadline) {
                Ok(()) => break,
                Err(e) if e == libc::EINTR => continue,
                Err(e) => panic!("clock_nanosleep failed: {e}"),
            }
        }
        let b = monotonic_ns();
        assert!(b >= deadline, "woke at {b} before deadline {deadline}");
        // A wake-up later than 1 s after a 2 ms sleep is not physically a sleep.
        assert!(b - deadline < 1_000_000_000);
    }

    #[test]
    fn fifo_priority_range_is_linux_range() {
        assert_eq!(priority_range(Policy::Fifo), (1, 99));
        assert_eq!(priority_range(Policy::RoundRobin), (1, 99));
        assert_eq!(priority_range(Policy::Other), (0, 0));
    }

    #[test]
    fn policy_names_round_trip() {
        for p in Policy::ALL {
            assert_eq!(Policy::parse(p.name()), Some(p));
        }
        assert_eq!(Policy::RoundRobin.name(), "rr");
        assert_eq!(Policy::parse("deadline"), None);
        assert_eq!(Policy::parse("FIFO"), None);
    }

    #[test]
    fn pinning_moves_the_thread() {
        std::thread::spawn(|| {
            pin_to_cpu(0).expect("CPU 0 is always online");
            assert_eq!(current_cpu().unwrap(), 0);
            assert!(pin_to_cpu(libc::CPU_SETSIZE as usize).is_err());
        })
        .join()
        .unwrap();
    }

    #[test]
    fn thread_usage_counts_a_sleep_as_voluntary_switch() {
        std::thread::spawn(|| {
            let before = thread_usage().unwrap();
            std::thread::sleep(std::time::Duration::from_millis(2));
            let after = thread_usage().unwrap();
            assert!(after.voluntary_switches > before.voluntary_switches);
        })
        .join()
        .unwrap();
    }

    #[test]
    fn dma_latency_guard_writes_binary_request() {
        let dir = std::env::temp_dir().join(format!("jl-sys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cpu_dma_latency");
        std::fs::write(&path, b"").unwrap();
        let g = DmaLatencyGuard::hold(&path, 0).unwrap();
        assert_eq!(g.microseconds, 0);
        assert_eq!(std::fs::read(&path).unwrap(), vec![0, 0, 0, 0]);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// Field `n` (1-based, as proc(5) numbers them) of `/proc/PID/stat`.
    fn stat_field(pid: u32, n: usize) -> String {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
        let after = &stat[stat.rfind(')').unwrap() + 2..];
        after.split(' ').nth(n - 3).unwrap().to_string()
    }

    fn status_line(pid: u32, key: &str) -> String {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix(key))
            .unwrap()
            .trim()
            .to_string()
    }

    #[test]
    fn child_hooks_group_session_pin_and_renice_the_child() {
        use std::os::unix::process::ExitStatusExt;
        let mut cmd = std::process::Command::new("sleep");
        cmd.arg("30");
        set_child_hooks(&mut cmd, &[0], Some(7));
        let mut child = cmd.spawn().unwrap();
        let pid = child.id();
        // Field 5 is the process group, 6 the session, 19 the nice value:
        // the child leads a group and a session of its own.
        assert_eq!(stat_field(pid, 5), pid.to_string());
        assert_eq!(stat_field(pid, 6), pid.to_string());
        assert_eq!(stat_field(pid, 19), "7");
        assert_eq!(status_line(pid, "Cpus_allowed_list:"), "0");
        kill_group(pid as i32, SIGKILL).unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(SIGKILL));
    }

    #[test]
    fn the_cgroup_hook_writes_0_in_the_child_before_exec() {
        // A plain file stands in for `cgroup.procs`: the child's write is
        // what the kernel would read as "move me".
        let dir = std::env::temp_dir().join(format!("jl-sys-cgroup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("cgroup.procs");
        std::fs::write(&path, b"").unwrap();
        let mut cmd = std::process::Command::new("true");
        set_child_hooks(&mut cmd, &[], None);
        join_cgroup_before_exec(
            &mut cmd,
            OpenOptions::new().write(true).open(&path).unwrap(),
        );
        assert!(cmd.status().unwrap().success());
        assert_eq!(std::fs::read(&path).unwrap(), b"0");
        // A descriptor the write fails on makes the spawn fail with its error.
        let mut cmd = std::process::Command::new("true");
        join_cgroup_before_exec(&mut cmd, File::open(&path).unwrap());
        assert_eq!(cmd.spawn().unwrap_err().raw_os_error(), Some(libc::EBADF));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn child_hooks_make_spawn_fail_for_cpus_beyond_the_set() {
        // Beyond CPU_SETSIZE: caught in the parent, reported by the child.
        let mut cmd = std::process::Command::new("true");
        set_child_hooks(&mut cmd, &[0, libc::CPU_SETSIZE as usize], None);
        assert_eq!(cmd.spawn().unwrap_err().raw_os_error(), Some(libc::EINVAL));
        // Within the set but not online: the kernel refuses the affinity.
        let mut cmd = std::process::Command::new("true");
        set_child_hooks(&mut cmd, &[libc::CPU_SETSIZE as usize - 1], None);
        assert_eq!(cmd.spawn().unwrap_err().raw_os_error(), Some(libc::EINVAL));
    }

    #[test]
    fn child_dies_when_the_spawning_thread_ends() {
        use std::os::unix::process::ExitStatusExt;
        // Spawned from a short-lived thread: the parent-death signal fires
        // when that thread exits, although the process lives on. Without it
        // the wait below would return after 30 s with status 0.
        let mut child = std::thread::spawn(|| {
            let mut cmd = std::process::Command::new("sleep");
            cmd.arg("30");
            set_child_hooks(&mut cmd, &[], None);
            cmd.spawn().unwrap()
        })
        .join()
        .unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(SIGKILL));
    }

    #[test]
    fn kill_group_refuses_own_and_init_group_and_reports_missing_groups() {
        for pgid in [-5, 0, 1] {
            assert_eq!(
                kill_group(pgid, 0).unwrap_err().raw_os_error(),
                Some(libc::EINVAL)
            );
        }
        // pid_max is at most 2^22: this group cannot exist.
        assert_eq!(
            kill_group(1 << 23, 0).unwrap_err().raw_os_error(),
            Some(libc::ESRCH)
        );
    }

    #[test]
    fn kill_process_signals_one_process_and_refuses_groups() {
        use std::os::unix::process::ExitStatusExt;
        for pid in [-1, 0, 1] {
            assert_eq!(
                kill_process(pid, 0).unwrap_err().raw_os_error(),
                Some(libc::EINVAL)
            );
        }
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        kill_process(child.id() as i32, SIGTERM).unwrap();
        assert_eq!(child.wait().unwrap().signal(), Some(SIGTERM));
    }

    #[test]
    fn flock_excludes_a_second_open_file_until_unlocked() {
        let dir = std::env::temp_dir().join(format!("jl-sys-flock-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let a = File::open(&dir).unwrap();
        let b = File::open(&dir).unwrap();
        flock(&a, FlockOp::Exclusive).unwrap();
        assert_eq!(
            flock(&b, FlockOp::TryExclusive).unwrap_err().kind(),
            io::ErrorKind::WouldBlock
        );
        flock(&a, FlockOp::Unlock).unwrap();
        flock(&b, FlockOp::TryExclusive).unwrap();
        drop(b); // closing releases it
        flock(&a, FlockOp::Shared).unwrap();
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn mount_unmount_and_filesystem_type() {
        let dir = std::env::temp_dir().join(format!("jl-sys-mount-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let before = filesystem_type(&dir).unwrap();
        assert_ne!(before, RESCTRL_MAGIC);
        assert_eq!(
            filesystem_type(&dir.join("missing"))
                .unwrap_err()
                .raw_os_error(),
            Some(libc::ENOENT)
        );
        if effective_uid() != 0 {
            eprintln!("skipping the mount part: mount(2) needs root");
            std::fs::remove_dir(&dir).unwrap();
            return;
        }
        const TMPFS_MAGIC: i64 = 0x0102_1994;
        mount("jitterlab-test", &dir, "tmpfs").unwrap();
        assert_eq!(filesystem_type(&dir).unwrap(), TMPFS_MAGIC);
        unmount(&dir).unwrap();
        assert_eq!(filesystem_type(&dir).unwrap(), before);
        assert_eq!(
            unmount(&dir).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        assert_eq!(
            mount("x", &dir, "no-such-fs").unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        std::fs::remove_dir(&dir).unwrap();
    }

    #[test]
    fn clock_tick_is_user_hz() {
        assert_eq!(clock_ticks_per_second(), 100);
    }
}
