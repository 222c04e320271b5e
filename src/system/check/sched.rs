//! Scheduler and privilege findings: a PREEMPT_RT kernel, real-time
//! throttling, and whether this process may run real-time threads at all
//! (root, or the resource limits that let a user do it).

use std::fmt;

use jitterlab_core::result::HostSnapshot;

use super::finding::{Finding, Severity};

/// Where the kernel keeps the real-time runtime per period.
const RT_RUNTIME: &str = "proc/sys/kernel/sched_rt_runtime_us";

/// One resource limit of the process (its soft value).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// `RLIM_INFINITY`.
    Unlimited,
    /// A finite value.
    Value(u64),
    /// `getrlimit` failed.
    Unknown,
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Unlimited => f.write_str("unlimited"),
            Limit::Value(v) => write!(f, "{v}"),
            Limit::Unknown => f.write_str("unknown"),
        }
    }
}

/// The resource limits that let an unprivileged user run real-time probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// `RLIMIT_RTPRIO`: the highest real-time priority allowed.
    pub rtprio: Limit,
    /// `RLIMIT_MEMLOCK`: bytes that may be locked (`mlockall`).
    pub memlock: Limit,
}

impl Limits {
    /// The soft limits of this process.
    pub fn current() -> Limits {
        let get = |r| match jitterlab_sys::rlimit(r) {
            Ok((soft, _)) => soft.map_or(Limit::Unlimited, Limit::Value),
            Err(_) => Limit::Unknown,
        };
        Limits {
            rtprio: get(jitterlab_sys::Resource::RtPrio),
            memlock: get(jitterlab_sys::Resource::MemLock),
        }
    }
}

/// `realtime-kernel`: whether the running kernel is PREEMPT_RT.
pub(super) fn realtime_kernel(host: &HostSnapshot) -> Finding {
    const ID: &str = "realtime-kernel";
    if host.realtime_kernel {
        Finding::ok(
            ID,
            format!("PREEMPT_RT kernel (preemption: {})", host.preemption),
        )
    } else {
        Finding::new(
            ID,
            Severity::Warn,
            format!("not a PREEMPT_RT kernel (preemption: {})", host.preemption),
            "install a PREEMPT_RT kernel (Debian: linux-image-rt-amd64) and boot it",
        )
    }
}

/// `rt-throttling`: the share of every period real-time tasks may use.
pub(super) fn rt_throttling(host: &HostSnapshot) -> Finding {
    const ID: &str = "rt-throttling";
    const FIX: &str = "sysctl -w kernel.sched_rt_runtime_us=-1 (only while measuring)";
    match (host.sched_rt_runtime_us, host.sched_rt_period_us) {
        (Some(-1), _) => Finding::ok(ID, "real-time throttling is off"),
        (Some(runtime), Some(period)) => Finding::new(
            ID,
            Severity::Info,
            format!("real-time tasks may use {runtime} of every {period} us"),
            FIX,
        ),
        (Some(runtime), None) => Finding::new(
            ID,
            Severity::Info,
            format!("real-time tasks may use {runtime} us of every period (period unknown)"),
            FIX,
        ),
        (None, _) => Finding::new(
            ID,
            Severity::Info,
            format!("unknown real-time throttling: cannot read /{RT_RUNTIME}"),
            FIX,
        ),
    }
}

/// The privilege finding for a process with effective uid `uid` and
/// resource limits `limits`.
pub(super) fn privileges(uid: u32, limits: Limits) -> Finding {
    const ID: &str = "privileges";
    if uid == 0 {
        return Finding::ok(ID, "running as root");
    }
    let memlock = match limits.memlock {
        Limit::Value(bytes) => format!("{bytes} bytes"),
        other => other.to_string(),
    };
    Finding::new(
        ID,
        Severity::Warn,
        format!(
            "not root (uid {uid}): RLIMIT_RTPRIO {}, RLIMIT_MEMLOCK {memlock}",
            limits.rtprio
        ),
        "run as root, or set rtprio 99 and memlock unlimited in /etc/security/limits.conf",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::check::tests::ROOT_LIMITS;

    #[test]
    fn privileges_of_a_user() {
        assert_eq!(
            privileges(0, ROOT_LIMITS),
            Finding::ok("privileges", "running as root")
        );
        let f = privileges(
            1000,
            Limits {
                rtprio: Limit::Value(0),
                memlock: Limit::Value(8_388_608),
            },
        );
        assert_eq!(
            f,
            Finding::new(
                "privileges",
                Severity::Warn,
                "not root (uid 1000): RLIMIT_RTPRIO 0, RLIMIT_MEMLOCK 8388608 bytes",
                "run as root, or set rtprio 99 and memlock unlimited in /etc/security/limits.conf",
            )
        );
        let f = privileges(
            1000,
            Limits {
                rtprio: Limit::Unknown,
                memlock: Limit::Unlimited,
            },
        );
        assert_eq!(
            f.summary,
            "not root (uid 1000): RLIMIT_RTPRIO unknown, RLIMIT_MEMLOCK unlimited"
        );
    }
}
