//! The one place a probe kind is tied to the code that measures it.
//!
//! Every kind has one [`Registration`]: the function that builds its
//! probe(s) for a cell of the typed spec (see [`super::Cell`] and
//! [`super::Probes`]) and, for a probe that needs something the machine may
//! lack, the check a bench asks before it measures a cell. The runner —
//! `jitterlab run` and every bench cell — finds a kind's code only here,
//! through [`build`] and [`unavailable`]; nothing else in it switches on
//! the kind.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::result::ProbeKind;

use super::{chase, ctxswitch, periodic, response, timerlat, Cell, Probes};
use crate::system::journal::Journal;

/// Builds a kind's probe(s) for a cell, journaling first whatever it
/// changes on the machine.
pub type Build = fn(&Cell<'_>, &mut Journal) -> Result<Probes>;

/// How the runner measures one probe kind.
pub struct Registration {
    /// The kind.
    pub kind: ProbeKind,
    /// Builds its probe(s) for a cell.
    pub build: Build,
    /// Where the probe cannot measure on the machine under the sysroot, the
    /// note a bench's skipped cell gets (the command line refuses a run
    /// itself, naming the flag or the fix); `None` when it always can.
    pub unavailable: Option<fn(&Path) -> Option<String>>,
}

/// Every kind's registration.
pub const REGISTRY: &[Registration] = &[
    Registration {
        kind: ProbeKind::Cyclic,
        build: periodic::build,
        unavailable: None,
    },
    Registration {
        kind: ProbeKind::Wakeup,
        build: periodic::build,
        unavailable: None,
    },
    Registration {
        kind: ProbeKind::Chase,
        build: chase::build,
        unavailable: None,
    },
    Registration {
        kind: ProbeKind::Ctxswitch,
        build: ctxswitch::build,
        unavailable: None,
    },
    Registration {
        kind: ProbeKind::Response,
        build: response::build,
        unavailable: None,
    },
    Registration {
        kind: ProbeKind::Timerlat,
        build: timerlat::build,
        unavailable: Some(timerlat::unavailable),
    },
];

/// The registration of `kind`.
pub fn registration(kind: ProbeKind) -> &'static Registration {
    REGISTRY
        .iter()
        .find(|r| r.kind == kind)
        .unwrap_or_else(|| panic!("probe kind {} is not registered", kind.name()))
}

/// Builds the probe(s) of `cell` (see [`Registration::build`]).
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    (registration(cell.plan.kind).build)(cell, journal)
}

/// Why a probe of `kind` cannot measure on the machine under `root` (see
/// [`Registration::unavailable`]).
pub fn unavailable(kind: ProbeKind, root: &Path) -> Option<String> {
    registration(kind).unavailable.and_then(|f| f(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_registered_once() {
        for &k in ProbeKind::ALL {
            let n = REGISTRY.iter().filter(|r| r.kind == k).count();
            assert_eq!(n, 1, "{} has {n} registrations", k.name());
            assert_eq!(registration(k).kind, k);
        }
        assert_eq!(REGISTRY.len(), ProbeKind::ALL.len());
    }

    #[test]
    fn only_timerlat_can_be_missing_and_it_says_why() {
        let root = tempfile::tempdir().unwrap();
        for &k in ProbeKind::ALL {
            let why = unavailable(k, root.path());
            match k {
                ProbeKind::Timerlat => {
                    let why = why.expect("no tracefs under an empty sysroot");
                    assert!(why.starts_with("no interrupt latency here: "), "{why}");
                }
                _ => assert_eq!(why, None, "{}", k.name()),
            }
        }
    }
}
