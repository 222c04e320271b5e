//! The undo steps the journal's replay calls, gathered below the journal.
//!
//! The modules that journal their changes — the settings, the neighbours'
//! cgroup, the work directories, the deployment container — use the
//! journal, so the journal never uses them: each step it replays after a
//! `kill -9` lives here, and the modules above call the same step at the
//! normal end of what they made. Nothing here uses the journal.
//!
//! | module | undoes | journal entry |
//! |---|---|---|
//! | [`files`] | a sysfs/procfs value, written back only to a file on the settings' allow-list | `Undo::File` |
//! | [`resctrl`] | a resctrl group jitterlab created, resctrl mounted by jitterlab | `Undo::ResctrlGroup`, `Undo::ResctrlMount` |
//! | [`tracefs`] | tracefs, mounted by jitterlab for its tracer; its tracefs instance | `Undo::TracefsMount`, `Undo::TracefsInstance` |
//! | [`workdir`] | a private work directory and its content | `Undo::WorkDir` |
//! | [`cgroup`], [`cgroup_layout`] | a cell's cgroup: its processes killed, the group removed | `Undo::Cgroup` |
//! | [`container`] | a container of a `container` cell, the containers' real-time parent cgroup | `Undo::Container`, `Undo::ContainerCgroup` |

pub mod cgroup;
pub mod cgroup_layout;
pub mod container;
pub mod files;
pub mod resctrl;
pub mod tracefs;
pub mod workdir;
