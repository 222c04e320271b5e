//! `jitterlab run X`: its flags, checked by the kind's own check (found
//! through the registry, [`RunCommand::one_cell`]) and turned into the
//! one-cell spec the runner measures ([`OneCell`], made with the flags'
//! toolkit, `crate::probe::flags`, which documents how the flags map onto
//! the spec); then, last, what every container run must pass.

use std::path::Path;

use anyhow::Result;

use super::RunCommand;
use crate::error::bad;
use crate::output::errln;
use crate::store::Db;

pub use crate::probe::flags::OneCell;

/// Checks `jitterlab run X`'s flags against the machine (see the module
/// doc of `crate::probe::flags`) and turns them into the one-cell spec the
/// runner measures: the kind's check, as its registration names it.
pub fn one_cell(root: &Path, db: &Db, run: &RunCommand) -> Result<OneCell> {
    let one = run.one_cell(root, db)?;
    let cell = one.spec.cells().remove(0);
    if cell.in_container() {
        // Last, as a probe's own environment is: what keeps this probe out
        // of a container, then an engine that works and a host it can run on.
        if let Some(why) = crate::probe::cell_kind_unavailable(&one.spec, &cell, root) {
            return Err(bad(why));
        }
        let (_, found) = crate::system::container::choose(one.options.engine)?;
        crate::system::container::refuse_host(root, jitterlab_sys::effective_uid())?;
        errln!("jitterlab: container: {found}");
    }
    Ok(one)
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod observe_tests;
