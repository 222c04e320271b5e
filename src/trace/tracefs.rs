//! What the tracer needs from tracefs: each tracepoint's id (the `config`
//! of its perf event) and `format` (the layout of its raw record), read
//! once when tracing starts.
//!
//! (The instance backend, [`super::instance`], keeps tracefs mounted
//! while it traces and releases it after removing its instance.)
//!
//! Where tracefs is not mounted, mounting it is a journaled setting
//! (`Undo::TracefsMount`, recorded before the `mount`), and only on the
//! real root (`--sysroot /`): a fake tree's ids would name the wrong
//! events. Once the ids and formats are read the tracer needs tracefs no
//! more — the perf events hold the tracepoints — so [`Tracefs::release`]
//! unmounts it right away rather than at the end of the run: the machine
//! stays changed for milliseconds, and a mount that cannot be undone then
//! (a shell inside it) is tried again at the tracer's stop and left, with
//! its journal entry, to `jitterlab restore` after that.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_core::trace::decode::{Decoder, Decoders, TracePoint};
use jitterlab_core::trace::format::Format;
use jitterlab_sys as sys;

use crate::error::bad;
use crate::system::journal::{Journal, Undo};
use crate::system::trace::{find_tracefs, unmount_tracefs, TracefsStatus};

/// tracefs, found or mounted, and the mount to undo.
#[derive(Debug)]
pub struct Tracefs {
    /// The directory holding `events/`.
    pub dir: PathBuf,
    /// The journal entry and mount point of a mount jitterlab made.
    pub mounted: Option<(u64, PathBuf)>,
}

impl Tracefs {
    /// Finds tracefs under `root`, mounting it (journaled) where it is not
    /// mounted on the real root. Refuses (bad input, nothing changed) where
    /// it is missing, not searchable, or not mounted under a fake sysroot.
    pub fn open(root: &Path, journal: &mut Journal) -> Result<Tracefs> {
        match find_tracefs(root) {
            TracefsStatus::Ready(dir) => Ok(Tracefs { dir, mounted: None }),
            TracefsStatus::NotMounted(dir) => {
                if root != Path::new("/") {
                    return Err(bad(format!(
                        "tracefs is not mounted under the sysroot ({} is empty); jitterlab mounts tracefs only on the real root (--sysroot /)",
                        dir.display()
                    )));
                }
                if sys::effective_uid() != 0 {
                    return Err(bad(format!(
                        "mounting tracefs at {0} needs root; run jitterlab as root, or mount it first (mount -t tracefs nodev {0})",
                        dir.display()
                    )));
                }
                let id = journal.record(Undo::TracefsMount {
                    target: dir.clone(),
                })?;
                if let Err(e) = sys::mount("nodev", &dir, "tracefs") {
                    journal.done(id)?;
                    return Err(anyhow::anyhow!(
                        "cannot mount tracefs at {0}: {e}; try it by hand (mount -t tracefs nodev {0}) and see dmesg",
                        dir.display()
                    ));
                }
                Ok(Tracefs {
                    dir: dir.clone(),
                    mounted: Some((id, dir)),
                })
            }
            status => Err(bad(status.explain())),
        }
    }

    /// The id and format of every tracepoint of `points`: their decoders,
    /// and each one's id. A missing tracepoint is refused, naming it and
    /// the path looked at.
    pub fn decoders(&self, points: &[TracePoint]) -> Result<(Decoders, Vec<(TracePoint, u32)>)> {
        let mut decoders = Decoders::default();
        let mut ids = Vec::with_capacity(points.len());
        for &point in points {
            let dir = self
                .dir
                .join("events")
                .join(point.system())
                .join(point.name());
            let read = |file: &str| {
                let path = dir.join(file);
                fs::read_to_string(&path).map_err(|e| {
                    if e.kind() == ErrorKind::NotFound {
                        bad(format!(
                            "the kernel has no tracepoint {point}: {} is missing; boot a kernel built with CONFIG_FTRACE=y and CONFIG_EVENT_TRACING=y (in a container, bind-mount the host's /sys/kernel/tracing)",
                            path.display()
                        ))
                    } else {
                        anyhow::anyhow!("cannot read {}: {e}", path.display())
                    }
                })
            };
            let id_text = read("id")?;
            let id: u32 = id_text.trim().parse().map_err(|_| {
                anyhow::anyhow!(
                    "{} holds {:?}, not a tracepoint id",
                    dir.join("id").display(),
                    id_text.trim()
                )
            })?;
            let format = Format::parse(&read("format")?)
                .map_err(|e| anyhow::anyhow!("{}: {e}", dir.join("format").display()))?;
            let decoder = Decoder::new(point, &format)
                .map_err(|e| anyhow::anyhow!("{e} ({})", dir.join("format").display()))?;
            decoders.add(id, decoder);
            ids.push((point, id));
        }
        Ok((decoders, ids))
    }

    /// Unmounts tracefs when jitterlab mounted it, and forgets its journal
    /// entry; a mount that stays (busy) is kept for a later call. The line
    /// that says what happened, when something was mounted.
    pub fn release(&mut self, journal: &mut Journal) -> Result<Option<String>> {
        let Some((id, target)) = self.mounted.take() else {
            return Ok(None);
        };
        let (line, handled) = unmount_tracefs(&target);
        if handled {
            journal.done(id)?;
        } else {
            self.mounted = Some((id, target));
        }
        Ok(Some(line))
    }
}
