//! The `netcycle` probe: seed 004's POWERLINK managing node polling N
//! emulated controlled nodes (being built; see `jitterlab_core::netcycle`).

use anyhow::{bail, Result};

use super::{Cell, Probes};
use crate::system::journal::Journal;

/// The probe of a cell.
pub fn build(_cell: &Cell<'_>, _journal: &mut Journal) -> Result<Probes> {
    bail!("the netcycle probe is not built yet")
}
