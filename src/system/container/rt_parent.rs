//! The containers' real-time parent cgroup: a journaled setting that makes
//! a `jitterlab-ctr-XXXXXXXXXXXXXXXX` group in the `cpu` v1 hierarchy and
//! gives it a real-time period and runtime, so that the container made in
//! it (`--cgroup-parent`, `--cpu-rt-period`, `--cpu-rt-runtime`) may run
//! SCHED_FIFO threads at all.
//!
//! **Why.** With RT group scheduling (`CONFIG_RT_GROUP_SCHED`, cgroup v1:
//! `cpu.rt_runtime_us` exists) every new `cpu` cgroup starts with a
//! runtime of 0 µs: `sched_setscheduler(SCHED_FIFO)` inside fails with
//! `EPERM`, and a container's `--cpu-rt-runtime` is refused too, because a
//! group's runtime may not exceed its parent's and the engine's own parent
//! (`libpod_parent`) has none either. Where `cpu.rt_runtime_us` does not
//! exist (cgroup v2, or a kernel without RT group scheduling) real-time
//! tasks are throttled only as on the host, and no parent is made
//! ([`RtParent::plan`] gives `None`).
//!
//! **How much.** The parent gets the root's period and whatever of the
//! root's runtime the other groups leave ([`Budget::read`]): the root's
//! `cpu.rt_runtime_us` (the kernel's `sched_rt_runtime_us`, 950000 of
//! every 1000000 µs by default) minus the share each sibling group holds;
//! all of it with RT throttling off (`-1`: runtime = period). The
//! container gets the same, so it may use what a host process may. None
//! left is an error naming the groups that hold it.
//!
//! **Journal.** As every setting (design rule 4): the group is journaled
//! (`Undo::ContainerCgroup`) before the `mkdir`; each value's old content
//! is read and journaled (`Undo::File`, on the settings' allow-list)
//! before it is written. [`RtParent::restore`] writes the old values back
//! and removes the group from every hierarchy (the engine makes it in
//! each: [`super::undo::remove_parent`]); `jitterlab restore` does the
//! same from the journal after a `kill -9`.
//!
//! **Fake trees.** The tests run against fake trees, where no kernel fills
//! a new group: when the `cpu` hierarchy is not a cgroup file system
//! (`statfs` magic; on the real root that is an error, never a stand-in)
//! jitterlab stands in for the kernel and creates `cpu.rt_period_us` (the
//! root's period) and `cpu.rt_runtime_us` (`0`) after the `mkdir`, lists
//! them in the journal entry, and removes exactly those before the
//! directory — as the resctrl setting does.
//!
//! The design rules cited here are in `docs/design.md`.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_sys as sys;

use super::quirks::{under, CgroupLayout};
use crate::system::journal::undo::container::{remove_parent, PARENT_PREFIX, RT_FILES};
use crate::system::journal::undo::files;
use crate::system::journal::{Journal, Undo};

/// The real-time budget the parent group can get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The root's `cpu.rt_period_us`, which the parent keeps.
    pub period_us: u64,
    /// The runtime per period the parent (and its container) gets.
    pub runtime_us: u64,
    /// The root's `cpu.rt_runtime_us` (`-1`: RT throttling off).
    pub root_runtime_us: i64,
    /// The other groups that hold a share, with their runtime scaled to
    /// the root's period.
    pub taken: Vec<(String, u64)>,
}

impl Budget {
    /// The budget a new group of the `cpu` hierarchy at `cpu_dir` can get;
    /// `Ok(None)` without RT group scheduling (no `cpu.rt_runtime_us`); an
    /// error when nothing is left, naming the groups that hold it.
    pub fn read(cpu_dir: &Path) -> std::result::Result<Option<Budget>, String> {
        let runtime_file = cpu_dir.join("cpu.rt_runtime_us");
        let Ok(text) = fs::read_to_string(&runtime_file) else {
            return Ok(None);
        };
        let root_runtime_us: i64 = text
            .trim()
            .parse()
            .map_err(|_| format!("{} reads {:?}", runtime_file.display(), text.trim()))?;
        let period_file = cpu_dir.join("cpu.rt_period_us");
        let period_us: u64 = fs::read_to_string(&period_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .filter(|p| *p > 0)
            .ok_or_else(|| format!("cannot read a period from {}", period_file.display()))?;
        let mut taken = Vec::new();
        let mut groups: Vec<_> = fs::read_dir(cpu_dir)
            .map(|d| d.flatten().filter(|e| e.path().is_dir()).collect())
            .unwrap_or_else(|_| Vec::new());
        groups.sort_by_key(|e| e.file_name());
        for g in groups {
            let read = |f: &str| -> Option<u64> {
                fs::read_to_string(g.path().join(f))
                    .ok()?
                    .trim()
                    .parse()
                    .ok()
            };
            let (Some(runtime), Some(period)) =
                (read("cpu.rt_runtime_us"), read("cpu.rt_period_us"))
            else {
                continue;
            };
            if runtime > 0 && period > 0 {
                let share =
                    (u128::from(runtime) * u128::from(period_us) / u128::from(period)) as u64;
                taken.push((g.file_name().to_string_lossy().to_string(), share));
            }
        }
        let runtime_us = match u64::try_from(root_runtime_us) {
            Err(_) => period_us,
            Ok(root) => {
                let used: u64 = taken.iter().map(|(_, s)| s).sum();
                root.saturating_sub(used)
            }
        };
        if runtime_us == 0 {
            let holders: Vec<String> = taken.iter().map(|(g, s)| format!("{g} ({s} µs)")).collect();
            return Err(format!(
                "no real-time budget is left in {}: its {root_runtime_us} µs per {period_us} µs are held by {}; give some back (echo 0 > {}/GROUP/cpu.rt_runtime_us) or raise kernel.sched_rt_runtime_us",
                cpu_dir.display(),
                if holders.is_empty() { "nothing".to_string() } else { holders.join(", ") },
                cpu_dir.display()
            ));
        }
        Ok(Some(Budget {
            period_us,
            runtime_us,
            root_runtime_us,
            taken,
        }))
    }
}

/// A group this setting made: its journal entry, its directory, the files
/// the stand-in created in it.
#[derive(Debug)]
struct Created {
    id: u64,
    path: PathBuf,
    files: Vec<String>,
}

/// One journaled write: entry, file, old content.
#[derive(Debug)]
struct Written {
    id: u64,
    path: PathBuf,
    old: String,
}

/// The containers' parent cgroup (module doc).
#[derive(Debug)]
pub struct RtParent {
    cpu_dir: PathBuf,
    name: String,
    budget: Budget,
    created: Option<Created>,
    written: Vec<Written>,
}

impl RtParent {
    /// The parent for a container started now on the machine under `root`:
    /// `None` without RT group scheduling; an error when no budget is left.
    /// Changes nothing.
    pub fn plan(root: &Path) -> Result<Option<RtParent>> {
        let layout = CgroupLayout::read(root);
        let Some(cpu) = layout.cpu_v1() else {
            return Ok(None);
        };
        let cpu_dir = under(root, cpu);
        let Some(budget) = Budget::read(&cpu_dir).map_err(|e| anyhow!(e))? else {
            return Ok(None);
        };
        Ok(Some(RtParent {
            cpu_dir,
            name: format!("{PARENT_PREFIX}{}", crate::system::random_suffix()),
            budget,
            created: None,
            written: Vec::new(),
        }))
    }

    /// `--cgroup-parent`'s value: the group's path in every hierarchy.
    pub fn cgroup_parent(&self) -> String {
        format!("/{}", self.name)
    }

    /// The budget it gets (and its container).
    pub fn budget(&self) -> &Budget {
        &self.budget
    }

    /// The group's directory in the `cpu` hierarchy.
    pub fn path(&self) -> PathBuf {
        self.cpu_dir.join(&self.name)
    }

    /// Makes the group and gives it its budget, journaling each step
    /// first (module doc); on error, undoes what it did. The line saying
    /// what was done.
    pub fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<String> {
        let r = self.apply_steps(root, journal);
        if r.is_err() {
            let _ = self.restore(root, journal);
        }
        r
    }

    fn apply_steps(&mut self, root: &Path, journal: &mut Journal) -> Result<String> {
        let kernel = kernel_backed(root, &self.cpu_dir)?;
        let path = self.path();
        let files: Vec<String> = match kernel {
            true => Vec::new(),
            false => RT_FILES.iter().map(|f| f.to_string()).collect(),
        };
        let id = journal.record(Undo::ContainerCgroup {
            path: path.clone(),
            files: files.clone(),
        })?;
        if let Err(e) = fs::create_dir(&path) {
            journal.done(id)?;
            bail!("cannot create the cgroup {}: {e}", path.display());
        }
        self.created = Some(Created {
            id,
            path: path.clone(),
            files,
        });
        if !kernel {
            // The stand-in: a new group as the kernel fills it.
            for (f, v) in [
                ("cpu.rt_period_us", self.budget.period_us.to_string()),
                ("cpu.rt_runtime_us", "0".to_string()),
            ] {
                fs::write(path.join(f), format!("{v}\n"))
                    .with_context(|| format!("cannot write {}", path.join(f).display()))?;
            }
        }
        let b = self.budget.clone();
        self.write(journal, "cpu.rt_period_us", b.period_us)?;
        self.write(journal, "cpu.rt_runtime_us", b.runtime_us)?;
        Ok(format!(
            "cgroup {}: real-time runtime {} µs per {} µs for the containers made in it",
            path.display(),
            b.runtime_us,
            b.period_us
        ))
    }

    /// Journals the old content of the group's file `f`, then writes
    /// `value` (not when it holds it already).
    fn write(&mut self, journal: &mut Journal, f: &str, value: u64) -> Result<()> {
        let path = self.path().join(f);
        let old = files::read_nofollow(&path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        if old.trim() == value.to_string() {
            return Ok(());
        }
        if files::setting_file(journal.root(), &path).is_none() {
            bail!(
                "refusing to change {}: it is not on the list of files jitterlab's settings write (system::journal::undo::files), so `jitterlab restore` could not put it back",
                path.display()
            );
        }
        let id = journal.record(Undo::File {
            path: path.clone(),
            old: old.clone(),
        })?;
        if let Err(e) = files::write_value(&path, &format!("{value}\n")) {
            journal.done(id)?;
            bail!(
                "cannot write {value} to {}: {e}; the kernel refuses a runtime above what the root and the other groups leave (see jitterlab check, container-rt-group)",
                path.display()
            );
        }
        self.written.push(Written { id, path, old });
        Ok(())
    }

    /// Writes the old values back, newest first, and removes the group from
    /// every hierarchy, forgetting each journal entry it undid; one line
    /// per step (`restored …`, `removed …`, or what failed, which stays
    /// journaled for `jitterlab restore`). Restoring twice does nothing.
    pub fn restore(&mut self, root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines = Vec::new();
        let mut kept = Vec::new();
        while let Some(w) = self.written.pop() {
            match files::write_value(&w.path, &w.old) {
                Ok(()) => {
                    lines.extend(journal.done_all([w.id]));
                    lines.push(format!(
                        "restored {} to {:?}",
                        w.path.display(),
                        w.old.trim_end()
                    ));
                }
                Err(e) => {
                    lines.push(format!(
                        "could not restore {} to {:?}: {e}",
                        w.path.display(),
                        w.old.trim_end()
                    ));
                    kept.push(w);
                }
            }
        }
        self.written = kept;
        if let Some(c) = self.created.take() {
            let (line, handled) = remove_parent(root, &c.path, &c.files);
            lines.push(line);
            if handled {
                lines.extend(journal.done_all([c.id]));
            } else {
                self.created = Some(c);
            }
        }
        lines
    }
}

/// Whether a kernel answers at the `cpu` hierarchy `dir` (else it is a
/// fake tree, and the stand-in of the module doc runs). A plain directory
/// on the real root is an error.
fn kernel_backed(root: &Path, dir: &Path) -> Result<bool> {
    let magic =
        sys::filesystem_type(dir).with_context(|| format!("cannot stat {}", dir.display()))?;
    let kernel = magic == sys::CGROUP_MAGIC;
    if !kernel && root == Path::new("/") {
        bail!(
            "{} is listed as the cpu cgroup hierarchy but is not a cgroup file system (statfs type {magic:#x})",
            dir.display()
        );
    }
    Ok(kernel)
}
