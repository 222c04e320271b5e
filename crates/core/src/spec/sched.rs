//! How a probe thread is scheduled: the one policy type (the kernel
//! wrapper's [`Policy`], re-exported here), how a configuration stores it,
//! and the one rule for which of priority and nice a policy takes — applied
//! by the spec checker to `policy`/`priority`/`nice` and by the command
//! line to `--policy`/`--priority`/`--nice`, each naming its own keys or
//! flags in the message.

use std::ops::RangeInclusive;

pub use jitterlab_sys::Policy;

use crate::defaults;

/// The real-time priorities of `fifo` and `rr` (the kernel's
/// `sched_get_priority_min/max` of both).
pub const PRIORITIES: RangeInclusive<i64> = 1..=99;

/// The nice values of `other`.
pub const NICES: RangeInclusive<i64> = -20..=19;

/// Why a policy, priority and nice do not go together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SchedError {
    /// A priority was given for `other`.
    PriorityWithOther(i64),
    /// A nice value was given for `fifo` or `rr`.
    NiceWithRealtime(i64),
    /// The priority is outside [`PRIORITIES`].
    Priority(i64),
    /// The nice value is outside [`NICES`].
    Nice(i64),
}

/// The priority (`fifo`, `rr`) or nice value (`other`) a thread of `policy`
/// runs with, each defaulted ([`defaults::PRIORITY`], [`defaults::NICE`]):
/// `(Some(priority), None)` or `(None, Some(nice))`. Refuses the other
/// policy's value before a value out of range.
pub fn sched_fields(
    policy: Policy,
    priority: Option<i64>,
    nice: Option<i64>,
) -> Result<(Option<i32>, Option<i32>), SchedError> {
    match policy {
        Policy::Other => {
            if let Some(p) = priority {
                return Err(SchedError::PriorityWithOther(p));
            }
            let n = nice.unwrap_or(i64::from(defaults::NICE));
            if !NICES.contains(&n) {
                return Err(SchedError::Nice(n));
            }
            Ok((None, Some(n as i32)))
        }
        Policy::Fifo | Policy::RoundRobin => {
            if let Some(n) = nice {
                return Err(SchedError::NiceWithRealtime(n));
            }
            let p = priority.unwrap_or(i64::from(defaults::PRIORITY));
            if !PRIORITIES.contains(&p) {
                return Err(SchedError::Priority(p));
            }
            Ok((Some(p as i32), None))
        }
    }
}

/// A configuration's `policy` as stored: its [`Policy::name`].
pub(super) mod policy_name {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::Policy;

    pub(crate) fn serialize<S: Serializer>(p: &Policy, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(p.name())
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Policy, D::Error> {
        let name = String::deserialize(d)?;
        Policy::parse(&name).ok_or_else(|| {
            D::Error::custom(format!("unknown policy {name:?}; use fifo, rr or other"))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_policy_takes_its_own_value_with_its_default() {
        use SchedError as E;
        assert_eq!(sched_fields(Policy::Fifo, None, None), Ok((Some(95), None)));
        assert_eq!(
            sched_fields(Policy::RoundRobin, Some(1), None),
            Ok((Some(1), None))
        );
        assert_eq!(sched_fields(Policy::Other, None, None), Ok((None, Some(0))));
        assert_eq!(
            sched_fields(Policy::Other, None, Some(-20)),
            Ok((None, Some(-20)))
        );
        assert_eq!(
            sched_fields(Policy::Other, Some(5), Some(99)),
            Err(E::PriorityWithOther(5))
        );
        assert_eq!(
            sched_fields(Policy::Other, None, Some(20)),
            Err(E::Nice(20))
        );
        assert_eq!(
            sched_fields(Policy::Fifo, Some(100), Some(1)),
            Err(E::NiceWithRealtime(1))
        );
        assert_eq!(
            sched_fields(Policy::Fifo, Some(0), None),
            Err(E::Priority(0))
        );
        assert_eq!(
            sched_fields(Policy::Fifo, Some(1 << 40), None),
            Err(E::Priority(1 << 40))
        );
    }
}
