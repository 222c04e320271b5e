//! Cache allocation through resctrl: a configuration's cache groups, as a
//! reversible setting (seed 000's per-core L3 partition, seed 002's L2
//! steps). The rules and formats are in [`jitterlab_core::resctrl`]; this
//! module reads the machine and writes.
//!
//! **Support** ([`capabilities`], also for `jitterlab check`): the
//! `/proc/cpuinfo` flags `rdt_a`, `cat_l3`, `cat_l2`, `cdp_l3`, `cdp_l2`,
//! `mba`, and — once resctrl is mounted — `info/`: one directory per
//! resource (`L3`, `L2`, `L3CODE`/`L3DATA` with CDP, `MB`) with
//! `num_closids`, `cbm_mask`, `min_cbm_bits`, `shareable_bits`,
//! `sparse_masks`, `min_bandwidth`, `bandwidth_gran`; the cache ids come
//! from the default group's `schemata`.
//!
//! **Mounting.** When `/sys/fs/resctrl` is not mounted (it has no `info/`),
//! jitterlab mounts it with `mount(2)` ([`jitterlab_sys::mount`], as
//! `mount -t resctrl resctrl /sys/fs/resctrl` does, without CDP or
//! `mba_MBps`) — only on the real root (`--sysroot /`), only as root —
//! journals that first ([`Undo::ResctrlMount`]), and unmounts it on
//! restore. The masks can only be checked once `info/` exists, so on such
//! a machine `validate` checks the privilege and `apply` checks the masks
//! right after mounting, before anything else is written (a refusal
//! unmounts again and is bad input as usual).
//!
//! **Apply**, with an exclusive `flock` on `/sys/fs/resctrl` held
//! throughout, as the kernel's documentation asks of every
//! read-modify-write (`validate` holds a shared one while it reads):
//!
//! 1. the default group's `schemata` is shrunk when asked: one resource
//!    per write (`L3:0=3f;1=3f\n`), each journaled before as an
//!    [`Undo::File`] of the whole file as read (the padded read format,
//!    which the kernel accepts back: it trims names and values);
//! 2. each group — exclusive ones first, see
//!    [`jitterlab_core::resctrl::plan`] — is created (`mkdir`, journaled
//!    before as an [`Undo::ResctrlGroup`]), gets its `schemata` lines (one
//!    resource per write), its `cpus_list` (`1\n`), its `tasks` (one pid
//!    per write) and, when exclusive, `exclusive\n` in `mode`. Nothing in
//!    a created group is journaled otherwise: removing the group undoes it
//!    all (the kernel gives its CPUs and tasks back to the default group).
//!
//! A write the kernel refuses is an error that quotes
//! `info/last_cmd_status` verbatim (the kernel resets it at every command,
//! so it is about that write). Everything is then read back (the padded
//! format is parsed) and reported: `requested`, `applied` and `verified`
//! are `GROUP cpus=LIST RES:ID=VALUE… [mode=exclusive]` per group and
//! `(default) RES:ID=VALUE…`, `; `-separated (a group that does not exist
//! reads `GROUP absent`); the notes hold the partition tables
//! ([`jitterlab_core::resctrl::partition_tables`]) of the state read back.
//!
//! **Restore**: the groups are removed (`rmdir`, newest first), the default
//! `schemata` is written back, resctrl is unmounted if jitterlab mounted
//! it. `jitterlab restore` replays the same from the journal
//! ([`remove_group`], [`unmount`]).
//!
//! **Fake trees and the kernel's side effects.** The tests run against
//! fake trees (`tests/fixtures/resctrl-*`), plain directories where no
//! kernel answers: `mkdir` makes an empty directory, a write replaces a
//! file, `rmdir` of a non-empty directory fails. Rather than test code
//! paths that production never takes, jitterlab itself stands in for the
//! kernel — and only — when `/sys/fs/resctrl` is *not* a resctrl file
//! system (`statfs` magic, [`jitterlab_sys::RESCTRL_MAGIC`]; on the real
//! root that is an error, never a stand-in). The stand-in does what the
//! kernel would visibly do, nothing more:
//!
//! - after `mkdir` it creates the files jitterlab uses, as the kernel
//!   fills them: `schemata` (the default group's resources and padding,
//!   with the kernel's initial masks), `cpus_list` (`\n`), `mode`
//!   (`shareable\n`) and `tasks` (empty); the kernel's other files
//!   (`cpus`, `size`, `mon_data`) are not imitated;
//! - a `schemata` write is merged into the file and printed padded, as
//!   the kernel's read would show it; a `tasks` write appends the pid;
//! - the journal entry of a group lists the files the stand-in created,
//!   and removing the group removes exactly those, then the directory
//!   (on a real resctrl the list is empty and only `rmdir` runs).
//!
//! So the same apply, verify and restore code runs on both, and a test
//! compares the whole fake tree before and after byte for byte. A kernel
//! refusal is imitated by making the file immutable (`chattr +i`) and
//! writing the kernel's message to `info/last_cmd_status`.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, ErrorKind, Write};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::resctrl::{
    self as rc, describe_default, parse_schemata, BandwidthInfo, CacheDefault, CacheGroup,
    CacheInfo, Capabilities, ExistingGroup, Layout, Machine, Plan, PlannedGroup, Resource,
    ResourceInfo, Schemata, SchemataLine, TableGroup,
};
use jitterlab_core::units::CpuList;
use jitterlab_sys as sys;

use super::{check_writable, read_value, write_value, Setting, SettingReport, Writes};
use crate::error::bad;
use crate::system::host::{cpuinfo_has_flag, online_cpus, read_opt};
use crate::system::journal::{Journal, Undo};

/// Where resctrl is mounted, under the sysroot.
pub const RESCTRL: &str = "sys/fs/resctrl";
/// The CPU flags.
const CPUINFO: &str = "proc/cpuinfo";
/// The per-CPU cache topology: `cpuN/cache/indexM/{level,type,id}`.
const CPU_DIR: &str = "sys/devices/system/cpu";
/// The files the fake-tree stand-in creates in a new group (module doc).
const STANDIN_FILES: [&str; 4] = ["cpus_list", "mode", "schemata", "tasks"];

/// Why a configuration with cache keys cannot run here.
const NO_CACHE_ALLOCATION: &str = "this machine has no cache allocation (no rdt_a, cat_l3 or cat_l2 flag in /proc/cpuinfo and no resctrl info directory; a virtual machine usually hides it); remove [[configuration.cache]] and [configuration.cache_default] from the configuration";

/// What the machine offers for cache allocation under `root`: `None` when
/// neither a CPU flag nor resctrl's `info/` says it has any. A file that
/// is there but unreadable or malformed is an error naming it; a missing
/// one leaves its value unknown (`num_closids`), or at the kernel's
/// default (`min_cbm_bits` 1, `shareable_bits` 0, `sparse_masks` 0).
pub fn capabilities(root: &Path) -> Result<Option<Capabilities>> {
    let cpuinfo = read_opt(root, CPUINFO).unwrap_or_default();
    let flags: Vec<String> = Capabilities::FLAGS
        .iter()
        .filter(|f| cpuinfo_has_flag(&cpuinfo, f))
        .map(|f| f.to_string())
        .collect();
    let dir = root.join(RESCTRL);
    let info = dir.join("info");
    let mounted = info.is_dir();
    if flags.is_empty() && !mounted {
        return Ok(None);
    }
    let mut resources = Vec::new();
    if mounted {
        let default = match fs::read_to_string(dir.join("schemata")) {
            Ok(text) => Some(
                parse_schemata(&text)
                    .map_err(|e| anyhow!("cannot read {}: {e}", dir.join("schemata").display()))?,
            ),
            Err(e) if e.kind() == ErrorKind::NotFound => None,
            Err(e) => bail!("cannot read {}: {e}", dir.join("schemata").display()),
        };
        for r in Resource::ALL {
            let rdir = info.join(r.name());
            if !rdir.is_dir() {
                continue;
            }
            let cache = match (r.level(), read_hex(&rdir.join("cbm_mask"))?) {
                (Some(_), Some(cbm_mask)) => Some(CacheInfo {
                    cbm_mask,
                    min_cbm_bits: read_number(&rdir.join("min_cbm_bits"))?.unwrap_or(1),
                    shareable_bits: read_hex(&rdir.join("shareable_bits"))?.unwrap_or(0),
                    sparse_masks: read_number(&rdir.join("sparse_masks"))? == Some(1),
                }),
                _ => None,
            };
            let bandwidth = match (
                read_number(&rdir.join("min_bandwidth"))?,
                read_number(&rdir.join("bandwidth_gran"))?,
            ) {
                (Some(min_bandwidth), Some(bandwidth_gran)) if r == Resource::Mb => {
                    Some(BandwidthInfo {
                        min_bandwidth,
                        bandwidth_gran,
                    })
                }
                _ => None,
            };
            let ids = default
                .as_ref()
                .and_then(|s| s.line(r.name()))
                .map(|l| l.values.iter().map(|(id, _)| *id).collect())
                .unwrap_or_default();
            resources.push(ResourceInfo {
                resource: r,
                num_closids: read_number(&rdir.join("num_closids"))?,
                cache,
                bandwidth,
                ids,
            });
        }
    }
    Ok(Some(Capabilities {
        flags,
        mounted,
        resources,
    }))
}

/// The trimmed text of `path`; `None` when it does not exist.
fn read_info(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t.trim().to_string())),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => bail!("cannot read {}: {e}", path.display()),
    }
}

/// A decimal number from an `info/` file.
fn read_number(path: &Path) -> Result<Option<u32>> {
    read_info(path)?
        .map(|t| {
            t.parse()
                .map_err(|_| anyhow!("{} reads {t:?}, not a number", path.display()))
        })
        .transpose()
}

/// A hex mask from an `info/` file.
fn read_hex(path: &Path) -> Result<Option<u64>> {
    read_info(path)?
        .map(|t| {
            u64::from_str_radix(&t, 16)
                .map_err(|_| anyhow!("{} reads {t:?}, not a hex mask", path.display()))
        })
        .transpose()
}

/// The groups and the default group's schemata, as read now.
#[derive(Debug)]
struct State {
    /// The default group's `schemata`, verbatim.
    default_text: String,
    /// The same, parsed.
    default: Schemata,
    /// Every other group, by name.
    groups: Vec<ExistingGroup>,
}

/// Reads the default group and every group directory of the resctrl root
/// `dir` (not `info`, `mon_groups`, `mon_data`).
fn read_state(dir: &Path) -> Result<State> {
    let schemata = dir.join("schemata");
    let default_text = read_value(&schemata)?;
    let default = parse_schemata(&default_text)
        .map_err(|e| anyhow!("cannot read {}: {e}", schemata.display()))?;
    let mut names: Vec<String> = Vec::new();
    for entry in fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry.with_context(|| format!("cannot list {}", dir.display()))?;
        let name = entry.file_name().to_string_lossy().to_string();
        if entry.path().is_dir() && !rc::RESERVED_NAMES.contains(&name.as_str()) {
            names.push(name);
        }
    }
    names.sort();
    let mut groups = Vec::new();
    for name in names {
        let g = dir.join(&name);
        let cpus_path = g.join("cpus_list");
        let cpus_text = read_value(&cpus_path)?;
        let cpus = CpuList::parse(&cpus_text)
            .map_err(|e| anyhow!("cannot read {}: {e}", cpus_path.display()))?;
        let text = read_value(&g.join("schemata"))?;
        let schemata = parse_schemata(&text)
            .map_err(|e| anyhow!("cannot read {}: {e}", g.join("schemata").display()))?;
        let mode = read_value(&g.join("mode"))?;
        groups.push(ExistingGroup {
            name,
            cpus,
            schemata,
            exclusive: matches!(
                mode.trim(),
                "exclusive" | "pseudo-locked" | "pseudo-locksetup"
            ),
        });
    }
    Ok(State {
        default_text,
        default,
        groups,
    })
}

/// The CPUs that share each cache, by (level, id), from
/// `/sys/devices/system/cpu/cpuN/cache/indexM/`; what cannot be read is
/// left out (the table then counts every online CPU in the domain).
fn cache_domains(root: &Path, online: &CpuList) -> BTreeMap<(u8, u32), CpuList> {
    let mut out: BTreeMap<(u8, u32), CpuList> = BTreeMap::new();
    for cpu in online.iter() {
        let cache = root.join(format!("{CPU_DIR}/cpu{cpu}/cache"));
        let Ok(entries) = fs::read_dir(&cache) else {
            continue;
        };
        for entry in entries.flatten() {
            let p = entry.path();
            let read = |f: &str| {
                fs::read_to_string(p.join(f))
                    .ok()
                    .map(|t| t.trim().to_string())
            };
            if read("type").as_deref() == Some("Instruction") {
                continue;
            }
            let level = read("level").and_then(|l| l.parse::<u8>().ok());
            let id = read("id").and_then(|i| i.parse::<u32>().ok());
            if let (Some(level), Some(id)) = (level, id) {
                out.entry((level, id)).or_default().0.insert(cpu);
            }
        }
    }
    out
}

/// An advisory `flock` on the resctrl root, held until dropped.
struct Lock {
    _file: File,
}

impl Lock {
    fn take(dir: &Path, op: sys::FlockOp) -> Result<Lock> {
        let file = File::open(dir).with_context(|| format!("cannot open {}", dir.display()))?;
        sys::flock(&file, op).with_context(|| format!("cannot lock {}", dir.display()))?;
        Ok(Lock { _file: file })
    }
}

/// Whether a kernel answers under the resctrl root `dir` (else it is a
/// fake tree, and the stand-in of the module doc runs). A plain directory
/// with an `info/` on the real root is an error.
fn kernel_backed(root: &Path, dir: &Path) -> Result<bool> {
    let magic =
        sys::filesystem_type(dir).with_context(|| format!("cannot stat {}", dir.display()))?;
    let kernel = magic == sys::RESCTRL_MAGIC;
    if !kernel && root == Path::new("/") {
        bail!(
            "{} has an info directory but is not a resctrl file system (statfs type {magic:#x}); unmount what is there",
            dir.display()
        );
    }
    Ok(kernel)
}

/// A group this setting created: its journal entry, its directory, the
/// files the stand-in created in it.
#[derive(Debug)]
struct Created {
    id: u64,
    path: PathBuf,
    files: Vec<String>,
}

/// A configuration's cache allocation: its resctrl groups and the shrunk
/// default group, applied together (the CLOSID count and the exclusive
/// rules span them all).
#[derive(Debug)]
pub struct CacheAllocation {
    groups: Vec<CacheGroup>,
    default: Option<CacheDefault>,
    /// The mount this setting made: its journal entry and mount point.
    mounted: Option<(u64, PathBuf)>,
    /// The groups it created, oldest first.
    created: Vec<Created>,
    /// Its writes to the default group's `schemata`.
    writes: Writes,
}

impl CacheAllocation {
    /// The request: groups to create and how to shrink the default group.
    pub fn new(groups: Vec<CacheGroup>, default: Option<CacheDefault>) -> CacheAllocation {
        CacheAllocation {
            groups,
            default,
            mounted: None,
            created: Vec::new(),
            writes: Writes::default(),
        }
    }

    /// The plan for the machine as `state` shows it; bad input names the
    /// fix.
    fn plan(&self, caps: &Capabilities, online: &CpuList, state: &State) -> Result<Plan> {
        let machine = Machine {
            caps,
            online,
            default_schemata: &state.default,
            groups: &state.groups,
        };
        rc::plan(&self.groups, self.default.as_ref(), &machine).map_err(bad)
    }
}

/// Refuses a machine where resctrl is not mounted and jitterlab may not
/// mount it.
fn check_mountable(root: &Path, dir: &Path) -> Result<()> {
    if root != Path::new("/") {
        return Err(bad(format!(
            "resctrl is not mounted under the sysroot ({} is missing); jitterlab mounts resctrl only on the real root (--sysroot /)",
            dir.join("info").display()
        )));
    }
    if !dir.is_dir() {
        return Err(bad(
            "/sys/fs/resctrl does not exist: this kernel has no resctrl (it needs CONFIG_X86_CPU_RESCTRL=y); remove the cache keys from the configuration",
        ));
    }
    if sys::effective_uid() != 0 {
        return Err(bad(
            "mounting resctrl at /sys/fs/resctrl needs root; run jitterlab as root, or mount it first (mount -t resctrl resctrl /sys/fs/resctrl)",
        ));
    }
    Ok(())
}

impl Setting for CacheAllocation {
    fn name(&self) -> String {
        "resctrl".into()
    }

    fn validate(&self, root: &Path) -> Result<()> {
        let dir = root.join(RESCTRL);
        let Some(caps) = capabilities(root)? else {
            return Err(bad(NO_CACHE_ALLOCATION));
        };
        if !caps.mounted {
            return check_mountable(root, &dir);
        }
        let _lock = Lock::take(&dir, sys::FlockOp::Shared)?;
        let state = read_state(&dir)?;
        self.plan(&caps, &online_cpus(root)?, &state)?;
        check_writable(
            &dir.join("schemata"),
            "resctrl offers monitoring only here, no allocation",
            "allocating cache",
        )
    }

    fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let result = self.apply_inner(root, journal);
        if result.is_err() {
            let _ = self.restore(root, journal);
        }
        result
    }

    fn restore(&mut self, root: &Path, journal: &mut Journal) -> Result<Vec<String>> {
        let dir = root.join(RESCTRL);
        let lock = Lock::take(&dir, sys::FlockOp::Exclusive).ok();
        let mut lines = Vec::new();
        let mut kept = Vec::new();
        while let Some(c) = self.created.pop() {
            let (line, handled) = remove_group(&c.path, &c.files);
            lines.push(line);
            if handled {
                if let Err(e) = journal.done(c.id) {
                    kept.reverse();
                    self.created.extend(kept);
                    return Err(e);
                }
            } else {
                kept.push(c);
            }
        }
        kept.reverse();
        self.created = kept;
        lines.extend(self.writes.restore(journal)?);
        drop(lock);
        if let Some((id, target)) = self.mounted.take() {
            let (line, handled) = unmount(&target);
            lines.push(line);
            if handled {
                journal.done(id)?;
            } else {
                self.mounted = Some((id, target));
            }
        }
        Ok(lines)
    }
}

impl CacheAllocation {
    fn apply_inner(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let dir = root.join(RESCTRL);
        let mut notes = Vec::new();
        if !dir.join("info").is_dir() {
            check_mountable(root, &dir)?;
            let id = journal.record(Undo::ResctrlMount {
                target: dir.clone(),
            })?;
            if let Err(e) = sys::mount("resctrl", &dir, "resctrl") {
                journal.done(id)?;
                bail!(
                    "cannot mount resctrl at {}: {e}; try it by hand (mount -t resctrl resctrl /sys/fs/resctrl) and see dmesg",
                    dir.display()
                );
            }
            self.mounted = Some((id, dir.clone()));
            notes.push(format!(
                "mounted resctrl at {} (unmounted again on restore)",
                dir.display()
            ));
        }
        let _lock = Lock::take(&dir, sys::FlockOp::Exclusive)?;
        let kernel = kernel_backed(root, &dir)?;
        let caps = capabilities(root)?.ok_or_else(|| bad(NO_CACHE_ALLOCATION))?;
        let online = online_cpus(root)?;
        let state = read_state(&dir)?;
        let plan = self.plan(&caps, &online, &state)?;
        let before = describe(&plan, &state, &dir)?;

        let schemata = dir.join("schemata");
        for line in &plan.default {
            let old = read_value(&schemata)?;
            let value = if kernel {
                line.to_write()
            } else {
                standin::merge(&old, line)?
            };
            if let Err(e) = self.writes.write(journal, &schemata, &old, &value)? {
                return Err(refused(&dir, &schemata, &line.to_write(), e));
            }
        }
        for g in &plan.groups {
            self.create(&dir, g, &caps, kernel, journal)?;
        }

        let after = read_state(&dir)?;
        let applied = plan.describe();
        let verified = describe(&plan, &after, &dir)?;
        for g in &self.groups {
            let kept = plan
                .groups
                .iter()
                .find(|p| p.name == g.name)
                .and_then(|p| p.lines.iter().find(|l| l.resource == "MB"))
                .and_then(|l| l.values.first())
                .map(|(_, v)| *v);
            if let (Some(asked), Some(kept)) = (g.mb, kept) {
                if u64::from(asked) != kept {
                    notes.push(format!(
                        "cache group {}: mb {asked}% is kept as {kept}% (a multiple of info/MB/bandwidth_gran)",
                        g.name
                    ));
                }
            }
        }
        let tables: Vec<TableGroup> = after
            .groups
            .iter()
            .map(|g| TableGroup {
                name: &g.name,
                cpus: &g.cpus,
                schemata: &g.schemata,
            })
            .collect();
        notes.extend(rc::partition_tables(
            &caps,
            &after.default,
            &tables,
            &online,
            &cache_domains(root, &online),
        ));
        Ok(SettingReport {
            name: self.name(),
            requested: applied.clone(),
            ok: verified == applied,
            before,
            applied,
            verified,
            notes,
        })
    }

    /// Creates one group and writes its files (module doc, step 2).
    fn create(
        &mut self,
        dir: &Path,
        g: &PlannedGroup,
        caps: &Capabilities,
        kernel: bool,
        journal: &mut Journal,
    ) -> Result<()> {
        let path = dir.join(&g.name);
        let files: Vec<String> = if kernel {
            Vec::new()
        } else {
            STANDIN_FILES.iter().map(|f| f.to_string()).collect()
        };
        // The stand-in starts the group as the kernel would: from the
        // groups as they are at this mkdir.
        let now = if kernel { None } else { Some(read_state(dir)?) };
        let id = journal.record(Undo::ResctrlGroup {
            path: path.clone(),
            files: files.clone(),
        })?;
        if let Err(e) = fs::create_dir(&path) {
            journal.done(id)?;
            let what = format!("cannot create resctrl group {}: {e}", path.display());
            return Err(with_status(dir, what));
        }
        self.created.push(Created {
            id,
            path: path.clone(),
            files,
        });
        if let Some(now) = now {
            let initial = rc::initial_schemata(caps, &now.default, &now.groups);
            standin::populate(&path, &initial, Layout::of(&now.default_text))?;
        }
        let schemata = path.join("schemata");
        for line in &g.lines {
            let value = if kernel {
                line.to_write()
            } else {
                standin::merge(&read_value(&schemata)?, line)?
            };
            write_value(&schemata, &value)
                .map_err(|e| refused(dir, &schemata, &line.to_write(), e))?;
        }
        let cpus = format!("{}\n", g.cpus);
        let cpus_list = path.join("cpus_list");
        write_value(&cpus_list, &cpus).map_err(|e| refused(dir, &cpus_list, &cpus, e))?;
        let tasks = path.join("tasks");
        for t in &g.tasks {
            let value = format!("{t}\n");
            let written = if kernel {
                write_value(&tasks, &value)
            } else {
                standin::append(&tasks, &value)
            };
            written.map_err(|e| refused(dir, &tasks, &value, e))?;
        }
        if g.exclusive {
            let mode = path.join("mode");
            write_value(&mode, "exclusive\n").map_err(|e| refused(dir, &mode, "exclusive\n", e))?;
        }
        Ok(())
    }
}

/// `what` with the kernel's reason appended from `info/last_cmd_status`
/// (verbatim, its newline trimmed), when there is one.
fn with_status(dir: &Path, what: String) -> anyhow::Error {
    match read_opt(dir, "info/last_cmd_status") {
        Some(status) if !status.is_empty() => {
            anyhow!("{what}; info/last_cmd_status says: {status}")
        }
        _ => anyhow!(what),
    }
}

/// The error for a write of `value` to `path` that the kernel refused.
fn refused(dir: &Path, path: &Path, value: &str, e: io::Error) -> anyhow::Error {
    with_status(
        dir,
        format!(
            "the kernel refused {:?} in {}: {e}",
            value.trim_end(),
            path.display()
        ),
    )
}

/// The state of what `plan` touches, in the shape of [`Plan::describe`]:
/// each planned group as read (or `GROUP absent`), then the default
/// group's planned resources as read.
fn describe(plan: &Plan, state: &State, dir: &Path) -> Result<String> {
    let read_lines = |asked: &[SchemataLine], s: &Schemata| -> Vec<SchemataLine> {
        asked
            .iter()
            .map(|l| SchemataLine {
                resource: l.resource.clone(),
                values: l
                    .values
                    .iter()
                    .filter_map(|(id, _)| Some((*id, s.line(&l.resource)?.get(*id)?)))
                    .collect(),
            })
            .collect()
    };
    let mut parts = Vec::new();
    for g in &plan.groups {
        let Some(e) = state.groups.iter().find(|e| e.name == g.name) else {
            parts.push(format!("{} absent", g.name));
            continue;
        };
        let tasks = if g.tasks.is_empty() {
            Vec::new()
        } else {
            let listed = read_value(&dir.join(&g.name).join("tasks"))?;
            let listed: Vec<u32> = listed
                .split_whitespace()
                .filter_map(|t| t.parse().ok())
                .collect();
            g.tasks
                .iter()
                .copied()
                .filter(|t| listed.contains(t))
                .collect()
        };
        let read = PlannedGroup {
            name: g.name.clone(),
            cpus: e.cpus.clone(),
            tasks,
            lines: read_lines(&g.lines, &e.schemata),
            exclusive: e.exclusive,
        };
        parts.push(read.describe());
    }
    if !plan.default.is_empty() {
        parts.push(describe_default(&read_lines(&plan.default, &state.default)));
    }
    Ok(parts.join("; "))
}

/// Removes the resctrl group directory `path`: first the `files` the
/// fake-tree stand-in created (none on a real resctrl), then the directory
/// (the kernel gives its CPUs and tasks back to the default group). The
/// line to print and whether it is handled; a path that is not a group of
/// a resctrl root (an edited journal) is left alone. Used by
/// [`CacheAllocation::restore`] and `jitterlab restore`.
pub fn remove_group(path: &Path, files: &[String]) -> (String, bool) {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let in_resctrl = path.parent().is_some_and(|p| p.ends_with(RESCTRL));
    let files_ok = files.iter().all(|f| STANDIN_FILES.contains(&f.as_str()));
    if !in_resctrl || rc::check_group_name(&name).is_err() || !files_ok {
        return (
            format!(
                "left {} alone: not a resctrl group jitterlab creates",
                path.display()
            ),
            false,
        );
    }
    for f in files {
        match fs::remove_file(path.join(f)) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => {
                return (
                    format!(
                        "could not remove resctrl group {}: {}: {e}",
                        path.display(),
                        path.join(f).display()
                    ),
                    false,
                )
            }
        }
    }
    match fs::remove_dir(path) {
        Ok(()) => (
            format!(
                "restored resctrl: removed group {name} ({})",
                path.display()
            ),
            true,
        ),
        Err(e) if e.kind() == ErrorKind::NotFound => (
            format!(
                "restored resctrl: group {name} ({}) was already gone",
                path.display()
            ),
            true,
        ),
        Err(e) => (
            format!("could not remove resctrl group {}: {e}", path.display()),
            false,
        ),
    }
}

/// Unmounts the resctrl file system jitterlab mounted at `target`; the
/// line to print and whether it is handled. Only a resctrl mount at a
/// `…/sys/fs/resctrl` is unmounted: anything else there now (or nothing)
/// is left as it is. Used by [`CacheAllocation::restore`] and `jitterlab
/// restore`.
pub fn unmount(target: &Path) -> (String, bool) {
    if !target.ends_with(RESCTRL) {
        return (
            format!("left {} alone: not a resctrl mount point", target.display()),
            false,
        );
    }
    let gone = || {
        (
            format!(
                "restored resctrl: {} was no longer mounted",
                target.display()
            ),
            true,
        )
    };
    match sys::filesystem_type(target) {
        Ok(m) if m == sys::RESCTRL_MAGIC => {}
        Ok(_) => return gone(),
        Err(e) if e.kind() == ErrorKind::NotFound => return gone(),
        Err(e) => {
            return (
                format!("could not unmount resctrl from {}: {e}", target.display()),
                false,
            )
        }
    }
    match sys::unmount(target) {
        Ok(()) => (
            format!("restored resctrl: unmounted {}", target.display()),
            true,
        ),
        // EINVAL: nothing is mounted there any more.
        Err(e) if e.kind() == ErrorKind::InvalidInput => gone(),
        Err(e) => (
            format!("could not unmount resctrl from {}: {e}", target.display()),
            false,
        ),
    }
}

/// The fake-tree stand-in for the kernel (module doc): only ever called
/// when the resctrl root is not a resctrl file system.
mod standin {
    use super::*;

    /// Fills a new group directory as the kernel's `mkdir` would.
    pub fn populate(group: &Path, initial: &Schemata, layout: Layout) -> Result<()> {
        for (file, text) in [
            ("schemata", initial.format_padded(layout)),
            ("cpus_list", "\n".to_string()),
            ("mode", "shareable\n".to_string()),
            ("tasks", String::new()),
        ] {
            let path = group.join(file);
            fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        }
        Ok(())
    }

    /// The schemata file `old` after the kernel took the write `line`,
    /// printed as the kernel prints it.
    pub fn merge(old: &str, line: &SchemataLine) -> Result<String> {
        let mut s = parse_schemata(old).map_err(|e| anyhow!(e))?;
        s.merge(line).map_err(|e| anyhow!(e))?;
        Ok(s.format_padded(Layout::of(old)))
    }

    /// Appends a pid to a group's `tasks`, as the kernel lists it.
    pub fn append(path: &Path, value: &str) -> io::Result<()> {
        OpenOptions::new()
            .append(true)
            .open(path)?
            .write_all(value.as_bytes())
    }
}
