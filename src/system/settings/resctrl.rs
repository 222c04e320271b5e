//! Cache allocation through resctrl: a configuration's cache groups, as a
//! reversible setting ([Intel CODESYS]'s per-core L3 partition, [Red Hat caterpillar]'s L2
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
//! format is parsed) and reported: `requested` (bandwidths as asked),
//! `applied` (as the kernel rounds them) and `verified` are
//! `GROUP cpus=LIST RES:ID=VALUE… [mode=exclusive]` per group and
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
//! file, `rmdir` of a non-empty directory fails. So that the tests run
//! the very apply, verify and restore code a real machine runs, jitterlab
//! stands in for the kernel itself, and only when `/sys/fs/resctrl` is
//! *not* a resctrl file system (`statfs` magic,
//! [`jitterlab_sys::RESCTRL_MAGIC`]; on the real root that is an error,
//! never a stand-in). The stand-in does what the kernel would visibly do,
//! nothing more:
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
//! A test then compares the whole fake tree before and after byte for
//! byte (directories included). A kernel
//! refusal is imitated by making the file immutable (`chattr +i`) and
//! writing the kernel's message to `info/last_cmd_status`.
//!
//! The documents cited here are listed in `docs/design.md`.

pub use crate::system::journal::undo::resctrl::{remove_group, unmount, RESCTRL, STANDIN_FILES};
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

/// The CPU flags.
const CPUINFO: &str = "proc/cpuinfo";
/// The per-CPU cache topology: `cpuN/cache/indexM/{level,type,id}`.
const CPU_DIR: &str = "sys/devices/system/cpu";

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
        let requested = self.requested(&plan);
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
            requested,
            ok: verified == applied,
            before,
            applied,
            verified,
            notes,
        })
    }

    /// The plan with the bandwidths as asked, before the kernel's rounding:
    /// the report's `requested`.
    fn requested(&self, plan: &Plan) -> String {
        let as_asked = |lines: &mut Vec<SchemataLine>, mb: Option<u32>| {
            if let Some(mb) = mb {
                for l in lines.iter_mut().filter(|l| l.resource == "MB") {
                    for v in &mut l.values {
                        v.1 = u64::from(mb);
                    }
                }
            }
        };
        let mut asked = plan.clone();
        for g in &mut asked.groups {
            let mb = self
                .groups
                .iter()
                .find(|x| x.name == g.name)
                .and_then(|x| x.mb);
            as_asked(&mut g.lines, mb);
        }
        as_asked(&mut asked.default, self.default.as_ref().and_then(|d| d.mb));
        asked.describe()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::journal::{self, JOURNAL_ENV};
    use crate::system::settings::testing::{bad_text, journal_env, read, Immutable};
    use crate::system::settings::{apply_all, config_settings};
    use crate::testutil::{copy_fixture, fixture};
    use jitterlab_core::resctrl::{parse_ways, CacheMask};
    use jitterlab_core::spec::{self, SpecContext};
    use serial_test::serial;
    use std::os::unix::process::ExitStatusExt;
    use std::process::Command;

    /// Every file and directory under `dir` (directories with `None`), so
    /// that a group left behind shows; without `run/`, jitterlab's own
    /// directory under a fake sysroot (the machine lock).
    fn tree(dir: &Path) -> Vec<(PathBuf, Option<Vec<u8>>)> {
        fn walk(base: &Path, dir: &Path, out: &mut Vec<(PathBuf, Option<Vec<u8>>)>) {
            for entry in fs::read_dir(dir).unwrap() {
                let p = entry.unwrap().path();
                let rel = p.strip_prefix(base).unwrap().to_path_buf();
                if rel == Path::new("run") {
                    continue;
                }
                if p.is_dir() {
                    out.push((rel, None));
                    walk(base, &p, out);
                } else {
                    out.push((rel, Some(fs::read(&p).unwrap())));
                }
            }
        }
        let mut out = Vec::new();
        walk(dir, dir, &mut out);
        out.sort();
        out
    }

    /// The configuration `name` of the spec `text` on CPUs `online`.
    fn configuration(text: &str, online: &str, name: &str) -> spec::Configuration {
        let online = CpuList::parse(online).unwrap();
        let ctx = SpecContext {
            online: &online,
            builtins: &["idle", "codesys"],
        };
        let s = spec::parse(text, "spec.toml", &ctx).unwrap_or_else(|e| panic!("{e}"));
        s.configurations
            .into_iter()
            .find(|c| c.name == name)
            .unwrap()
    }

    /// The cache setting of a configuration.
    fn cache_setting(c: &spec::Configuration) -> CacheAllocation {
        CacheAllocation::new(c.settings.cache.clone(), c.settings.cache_default.clone())
    }

    /// A spec with one configuration `p` whose body is `body`.
    fn spec_with(body: &str) -> String {
        format!(
            "duration = \"1s\"\n[[configuration]]\nname = \"p\"\n{body}[[probe]]\nkind = \"wakeup\"\n"
        )
    }

    fn group(name: &str, cpus: &[usize], r: Resource, ways: &str) -> CacheGroup {
        CacheGroup {
            name: name.into(),
            cpus: cpus.to_vec(),
            tasks: vec![],
            masks: vec![CacheMask {
                resource: r,
                mask: parse_ways(ways).unwrap(),
                ids: None,
            }],
            mb: None,
            exclusive: false,
        }
    }

    /// `p` under `root`, as the lines print it.
    fn p(root: &Path, rel: &str) -> String {
        root.join(rel).display().to_string()
    }

    #[test]
    #[serial]
    fn seed000_configuration3_on_8_ways_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("resctrl-l3-8ways");
        let root = dir.path();
        let c = configuration(
            include_str!("../../../examples/cache.toml"),
            "0-3",
            "partitioned",
        );
        let mut s = cache_setting(&c);
        s.validate(root).unwrap();
        let mut j = Journal::begin(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        let applied = "c0 cpus=0 L3:0=c0 mode=exclusive; c1 cpus=1 L3:0=30 mode=exclusive; c2 cpus=2 L3:0=c mode=exclusive; (default) L3:0=3";
        assert_eq!(
            report,
            SettingReport {
                name: "resctrl".into(),
                requested: applied.into(),
                before: "c0 absent; c1 absent; c2 absent; (default) L3:0=ff".into(),
                applied: applied.into(),
                verified: applied.into(),
                ok: true,
                notes: vec![
                    "L3 id 0: 8 ways; HW: the hardware shares ways 0-1 with I/O".into(),
                    "  way     7   6   5   4   3   2   1          0".into(),
                    "  CPUs    C0  C0  C1  C1  C2  C2  C3,HW      C3,HW".into(),
                    "  groups  c0  c0  c1  c1  c2  c2  (default)  (default)".into(),
                ],
            }
        );
        let r = "sys/fs/resctrl";
        assert_eq!(read(root, &format!("{r}/schemata")), "    L3:0=03\n");
        for (g, mask, cpu) in [("c0", "c0", "0"), ("c1", "30", "1"), ("c2", "0c", "2")] {
            assert_eq!(
                read(root, &format!("{r}/{g}/schemata")),
                format!("    L3:0={mask}\n")
            );
            assert_eq!(
                read(root, &format!("{r}/{g}/cpus_list")),
                format!("{cpu}\n")
            );
            assert_eq!(read(root, &format!("{r}/{g}/mode")), "exclusive\n");
            assert_eq!(read(root, &format!("{r}/{g}/tasks")), "");
        }
        assert_eq!(j.pending(), 4);
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![
                format!(
                    "restored resctrl: removed group c2 ({})",
                    p(root, "sys/fs/resctrl/c2")
                ),
                format!(
                    "restored resctrl: removed group c1 ({})",
                    p(root, "sys/fs/resctrl/c1")
                ),
                format!(
                    "restored resctrl: removed group c0 ({})",
                    p(root, "sys/fs/resctrl/c0")
                ),
                format!(
                    "restored {} to \"    L3:0=ff\"",
                    p(root, "sys/fs/resctrl/schemata")
                ),
            ]
        );
        assert_eq!(tree(root), tree(&fixture("resctrl-l3-8ways")));
        assert_eq!(s.restore(root, &mut j).unwrap(), Vec::<String>::new());
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn cdp_and_memory_bandwidth_on_12_ways_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("resctrl-l3-12ways-cdp");
        let root = dir.path();
        let c = configuration(
            &spec_with(
                "[[configuration.cache]]\ngroup = \"nn\"\ncpus = \"0-3\"\nl3data = { ways = \"0-3\", ids = [0] }\n\
                 [[configuration.cache]]\ngroup = \"rt\"\ncpus = \"4-5\"\nl3code = { ways = \"8-11\" }\nl3data = { ways = \"8-11\" }\nmb = 45\nexclusive = true\n\
                 [configuration.cache_default]\nl3code = { ways = \"0-7\" }\nl3data = { ways = \"0-7\" }\n",
            ),
            "0-7",
            "p",
        );
        let mut s = cache_setting(&c);
        s.validate(root).unwrap();
        let mut j = Journal::begin(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        let applied = "rt cpus=4-5 L3CODE:0=f00;1=f00 L3DATA:0=f00;1=f00 MB:0=50;1=50 mode=exclusive; nn cpus=0-3 L3DATA:0=f; (default) L3CODE:0=ff;1=ff L3DATA:0=ff;1=ff";
        assert_eq!(
            report.requested,
            applied.replace("MB:0=50;1=50", "MB:0=45;1=45")
        );
        assert_eq!(report.applied, applied);
        assert_eq!(report.verified, applied);
        assert_eq!(
            report.before,
            "rt absent; nn absent; (default) L3CODE:0=fff;1=fff L3DATA:0=fff;1=fff"
        );
        assert!(report.ok);
        let r = "sys/fs/resctrl";
        assert_eq!(
            read(root, &format!("{r}/schemata")),
            "L3CODE:0=0ff;1=0ff\nL3DATA:0=0ff;1=0ff\n    MB:0=100;1=100\n"
        );
        assert_eq!(
            read(root, &format!("{r}/rt/schemata")),
            "L3CODE:0=f00;1=f00\nL3DATA:0=f00;1=f00\n    MB:0= 50;1= 50\n"
        );
        // Created after rt was exclusive: it starts without rt's ways.
        assert_eq!(
            read(root, &format!("{r}/nn/schemata")),
            "L3CODE:0=0ff;1=0ff\nL3DATA:0=00f;1=0ff\n    MB:0=100;1=100\n"
        );
        assert_eq!(read(root, &format!("{r}/rt/cpus_list")), "4-5\n");
        assert_eq!(read(root, &format!("{r}/nn/mode")), "shareable\n");
        assert_eq!(
            report.notes,
            vec![
                "cache group rt: mb 45% is kept as 50% (a multiple of info/MB/bandwidth_gran)",
                "L3CODE id 0: 12 ways",
                "  way     11  10  9   8   7             6             5             4             3             2             1             0",
                "  CPUs    -   -   -   -   C[0-3]        C[0-3]        C[0-3]        C[0-3]        C[0-3]        C[0-3]        C[0-3]        C[0-3]",
                "  groups  rt  rt  rt  rt  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn",
                "L3CODE id 1: 12 ways",
                "  way     11      10      9       8       7             6             5             4             3             2             1             0",
                "  CPUs    C[4-5]  C[4-5]  C[4-5]  C[4-5]  C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]",
                "  groups  rt      rt      rt      rt      (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn",
                // Ways 7-4 of the data half on id 0: only the default
                // group's, whose CPUs there are all nn's.
                "L3DATA id 0: 12 ways",
                "  way     11  10  9   8   7          6          5          4          3             2             1             0",
                "  CPUs    -   -   -   -   -          -          -          -          C[0-3]        C[0-3]        C[0-3]        C[0-3]",
                "  groups  rt  rt  rt  rt  (default)  (default)  (default)  (default)  (default),nn  (default),nn  (default),nn  (default),nn",
                "L3DATA id 1: 12 ways",
                "  way     11      10      9       8       7             6             5             4             3             2             1             0",
                "  CPUs    C[4-5]  C[4-5]  C[4-5]  C[4-5]  C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]        C[6-7]",
                "  groups  rt      rt      rt      rt      (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn  (default),nn",
                "MB id 0: (default) 100%, nn 100%, rt 50%",
                "MB id 1: (default) 100%, nn 100%, rt 50%",
            ]
        );
        assert_eq!(j.pending(), 4);
        let lines = s.restore(root, &mut j).unwrap();
        assert_eq!(
            lines,
            vec![
                format!("restored resctrl: removed group nn ({})", p(root, "sys/fs/resctrl/nn")),
                format!("restored resctrl: removed group rt ({})", p(root, "sys/fs/resctrl/rt")),
                format!(
                    "restored {} to \"L3CODE:0=0ff;1=0ff\\nL3DATA:0=fff;1=fff\\n    MB:0=100;1=100\"",
                    p(root, "sys/fs/resctrl/schemata")
                ),
                format!(
                    "restored {} to \"L3CODE:0=fff;1=fff\\nL3DATA:0=fff;1=fff\\n    MB:0=100;1=100\"",
                    p(root, "sys/fs/resctrl/schemata")
                ),
            ]
        );
        assert_eq!(tree(root), tree(&fixture("resctrl-l3-12ways-cdp")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn seed002_l2_steps_with_a_task_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("resctrl-l2-20bit");
        let root = dir.path();
        // echo "L2:0=3ff" > schemata; mkdir p0; echo "L2:0=ffc00;" >
        // p0/schemata; echo 3 > p0/cpus — and one task moved in.
        let c = configuration(
            &spec_with(
                "[[configuration.cache]]\ngroup = \"p0\"\ncpus = \"0-1\"\nl2 = { mask = \"0xffc00\", ids = [0] }\n\
                 [configuration.cache_default]\nl2 = { mask = \"3ff\", ids = [0] }\n",
            ),
            "0-3",
            "p",
        );
        let mut groups = c.settings.cache.clone();
        groups[0].tasks = vec![4242];
        let mut s = CacheAllocation::new(groups, c.settings.cache_default.clone());
        s.validate(root).unwrap();
        let mut j = Journal::begin(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        let applied = "p0 cpus=0-1 tasks=4242 L2:0=ffc00; (default) L2:0=3ff";
        assert_eq!(
            (
                report.before.as_str(),
                report.applied.as_str(),
                report.verified.as_str(),
                report.ok
            ),
            ("p0 absent; (default) L2:0=fffff", applied, applied, true)
        );
        let r = "sys/fs/resctrl";
        assert_eq!(
            read(root, &format!("{r}/schemata")),
            "    L2:0=003ff;1=fffff;2=fffff;3=fffff\n"
        );
        assert_eq!(
            read(root, &format!("{r}/p0/schemata")),
            "    L2:0=ffc00;1=fffff;2=fffff;3=fffff\n"
        );
        assert_eq!(read(root, &format!("{r}/p0/cpus_list")), "0-1\n");
        assert_eq!(read(root, &format!("{r}/p0/tasks")), "4242\n");
        assert_eq!(read(root, &format!("{r}/p0/mode")), "shareable\n");
        // One table per L2 id, each with the CPUs of its core only.
        assert_eq!(report.notes.len(), 16);
        assert_eq!(report.notes[0], "L2 id 0: 20 ways");
        assert_eq!(
            report.notes[2],
            format!(
                "  CPUs  {}  -{}",
                "  C0".repeat(10),
                "          -".repeat(9)
            )
        );
        assert_eq!(
            report.notes[3],
            format!("  groups{}{}", "  p0".repeat(10), "  (default)".repeat(10))
        );
        assert_eq!(report.notes[4], "L2 id 1: 20 ways");
        let row = |label: &str, cell: &str, width: usize| {
            let cells = format!("  {cell:<width$}").repeat(20);
            format!("  {label:<6}{}", cells.trim_end())
        };
        assert_eq!(report.notes[6], row("CPUs", "C1", 12));
        assert_eq!(report.notes[7], row("groups", "(default),p0", 12));
        // p0 keeps every way of the other L2s, where none of its CPUs is.
        assert_eq!(report.notes[10], row("CPUs", "C2", 12));
        assert_eq!(report.notes[11], row("groups", "(default),p0", 12));
        s.restore(root, &mut j).unwrap();
        assert_eq!(tree(root), tree(&fixture("resctrl-l2-20bit")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn sparse_masks_beside_another_tools_group_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("resctrl-l3-mb-sparse");
        let root = dir.path();
        let mut rt = group("rt", &[2], Resource::L3, "4-5,12-13");
        rt.mb = Some(20);
        let mut s = CacheAllocation::new(vec![rt], None);
        s.validate(root).unwrap();
        let mut j = Journal::begin(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(report.verified, "rt cpus=2 L3:0=3030;1=3030 MB:0=20;1=20");
        assert!(report.ok);
        assert_eq!(
            read(root, "sys/fs/resctrl/rt/schemata"),
            "    L3:0=3030;1=3030\n    MB:0=  20;1=  20\n"
        );
        // The other tool's group is shown and left alone.
        assert_eq!(
            report.notes[..4],
            [
                "L3 id 0: 15 ways",
                "  way     14         13            12            11         10         9          8          7          6          5             4             3          2          1                0",
                "  CPUs    C[0-1,3]   C[0-3]        C[0-3]        C[0-1,3]   C[0-1,3]   C[0-1,3]   C[0-1,3]   C[0-1,3]   C[0-1,3]   C[0-3]        C[0-3]        C[0-1,3]   C[0-1,3]   C[0-1,3]         C[0-1,3]",
                "  groups  (default)  (default),rt  (default),rt  (default)  (default)  (default)  (default)  (default)  (default)  (default),rt  (default),rt  (default)  (default)  (default),batch  (default),batch",
            ]
        );
        assert_eq!(
            report.notes[8..],
            [
                "MB id 0: (default) 100%, batch 50%, rt 20%",
                "MB id 1: (default) 100%, batch 50%, rt 20%",
            ]
        );
        s.restore(root, &mut j).unwrap();
        assert_eq!(tree(root), tree(&fixture("resctrl-l3-mb-sparse")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn the_spec_wires_the_setting_in() {
        let c = configuration(
            include_str!("../../../examples/cache.toml"),
            "0-3",
            "partitioned",
        );
        let (settings, _) = config_settings(&c).unwrap();
        let names: Vec<String> = settings.iter().map(|s| s.name()).collect();
        assert_eq!(names, ["resctrl"]);
        let shared = configuration(
            include_str!("../../../examples/cache.toml"),
            "0-3",
            "shared",
        );
        let (settings, _) = config_settings(&shared).unwrap();
        assert_eq!(settings.len(), 0);
    }

    /// The bad-input message of validating `groups`/`default` on a copy of
    /// `fixture` (after `edit`), which must stay unchanged.
    fn refusal(
        fixture_name: &str,
        groups: Vec<CacheGroup>,
        default: Option<CacheDefault>,
        edit: impl Fn(&Path),
    ) -> String {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture(fixture_name);
        let root = dir.path();
        edit(root);
        let before = tree(root);
        let mut j = Journal::begin(root).unwrap();
        let mut settings: Vec<Box<dyn Setting>> =
            vec![Box::new(CacheAllocation::new(groups, default))];
        let e = apply_all(&mut settings, root, &mut j).unwrap_err();
        assert_eq!(tree(root), before, "bad input changed the tree");
        assert_eq!(j.pending(), 0);
        j.finish().unwrap();
        bad_text(e).replace(&root.display().to_string(), "ROOT")
    }

    #[test]
    #[serial]
    fn bad_input_is_refused_before_anything_is_written() {
        let l3 = |name: &str, cpus: &[usize], ways: &str| group(name, cpus, Resource::L3, ways);
        let none = |_: &Path| {};
        let a = "resctrl-l3-8ways";
        assert_eq!(
            refusal(a, vec![l3("rt", &[1], "0,2")], None, none),
            "cache group rt: l3: ways 0,2 (mask 0x5) are not adjacent; L3 takes one block of adjacent ways here (info/L3/sparse_masks is not 1)"
        );
        // A kernel without sparse_masks takes no gaps either.
        assert_eq!(
            refusal(
                "resctrl-l2-20bit",
                vec![group("p0", &[0], Resource::L2, "0-3,10-19")],
                None,
                none
            ),
            "cache group p0: l2: ways 0-3,10-19 (mask 0xffc0f) are not adjacent; L2 takes one block of adjacent ways here (info/L2/sparse_masks is not 1)"
        );
        assert_eq!(
            refusal(a, vec![l3("rt", &[1], "7-8")], None, none),
            "cache group rt: l3: ways 7-8 (mask 0x180) reach beyond the 8 ways of L3 (ways 0-7, cbm_mask ff)"
        );
        assert_eq!(
            refusal(a, vec![l3("rt", &[1], "7")], None, |root| {
                fs::write(root.join("sys/fs/resctrl/info/L3/min_cbm_bits"), "2\n").unwrap()
            }),
            "cache group rt: l3: ways 7 (mask 0x80) hold 1 way in a row; L3 needs at least 2 (info/L3/min_cbm_bits)"
        );
        assert_eq!(
            refusal(a, vec![l3("rt", &[1, 7], "6-7")], None, none),
            "cache group rt: cpus: CPU 7 is not online (online CPUs: 0-3)"
        );
        assert_eq!(
            refusal(
                a,
                vec![
                    l3("c0", &[0], "6-7"),
                    l3("c1", &[1], "4-5"),
                    l3("c2", &[2], "2-3"),
                    l3("c3", &[3], "0-1"),
                ],
                None,
                none
            ),
            "5 resctrl groups (the default group, 4 new) need 5 CLOSIDs, but this machine has 4 (info/*/num_closids); use at most 3 cache groups"
        );
        assert_eq!(
            refusal(a, vec![l3("rt/../..", &[1], "6-7")], None, none),
            "cache group rt/../..: group \"rt/../..\" may use only ASCII letters, digits, _ and - (it names a directory under /sys/fs/resctrl)"
        );
        let excl = CacheGroup {
            exclusive: true,
            ..l3("rt", &[1], "6-7")
        };
        assert_eq!(
            refusal(a, vec![excl.clone()], None, none),
            "cache group rt is exclusive, but its L3 ways 6-7 (mask 0xc0) on id 0 overlap ways 6-7 of the default group; shrink the default group in [configuration.cache_default]"
        );
        let d = "resctrl-l3-mb-sparse";
        assert_eq!(
            refusal(d, vec![l3("rt", &[6], "6-7")], None, none),
            "cache group rt: cpus: CPU 6 belongs to resctrl group batch already; jitterlab would take it away and could not give it back — leave CPU 6 out or remove that group"
        );
        assert_eq!(
            refusal(d, vec![l3("batch", &[1], "6-7")], None, none),
            "cache group batch: a resctrl group named batch exists already; choose another name, or remove it (rmdir /sys/fs/resctrl/batch) if nothing uses it"
        );
        let mut mb = l3("rt", &[1], "6-7");
        mb.mb = Some(5);
        assert_eq!(
            refusal(d, vec![mb], None, none),
            "cache group rt: mb: 5% is below the minimum of 10% (info/MB/min_bandwidth)"
        );
        assert_eq!(
            refusal(
                a,
                vec![l3("rt", &[1], "6-7")],
                Some(CacheDefault {
                    masks: vec![],
                    mb: Some(50)
                }),
                none
            ),
            "cache_default: mb: this machine has no memory bandwidth allocation (no /sys/fs/resctrl/info/MB); remove mb"
        );
        assert_eq!(
            refusal("settings-vm", vec![l3("rt", &[1], "6-7")], None, none),
            NO_CACHE_ALLOCATION
        );
        assert_eq!(
            refusal(a, vec![l3("rt", &[1], "6-7")], None, |root| {
                fs::remove_dir_all(root.join("sys/fs/resctrl")).unwrap();
                fs::create_dir(root.join("sys/fs/resctrl")).unwrap();
            }),
            "resctrl is not mounted under the sysroot (ROOT/sys/fs/resctrl/info is missing); jitterlab mounts resctrl only on the real root (--sysroot /)"
        );
    }

    /// Marks `rels` immutable after writing `status` to
    /// `info/last_cmd_status`, as a kernel that refuses would leave it.
    fn refusing(root: &Path, rels: &[&str], status: &str) -> Option<Immutable> {
        fs::write(root.join("sys/fs/resctrl/info/last_cmd_status"), status).unwrap();
        Immutable::mark(root, rels)
    }

    #[test]
    #[serial]
    fn a_refused_write_quotes_last_cmd_status_and_leaves_nothing() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("resctrl-l3-8ways");
        let root = dir.path();
        let c = configuration(
            include_str!("../../../examples/cache.toml"),
            "0-3",
            "partitioned",
        );
        let mut s = cache_setting(&c);
        // Valid when checked; refused by the kernel when written.
        s.validate(root).unwrap();
        let Some(guard) = refusing(
            root,
            &["sys/fs/resctrl/schemata"],
            "Overlaps with exclusive group\n",
        ) else {
            return;
        };
        let mut j = Journal::begin(root).unwrap();
        let e = s.apply(root, &mut j).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            format!(
                "the kernel refused \"L3:0=3\" in {}: Operation not permitted (os error 1); info/last_cmd_status says: Overlaps with exclusive group",
                p(root, "sys/fs/resctrl/schemata")
            )
        );
        assert_eq!(j.pending(), 0);
        drop(guard);

        // A group the kernel will not create (the CLOSIDs are taken by
        // someone else meanwhile): what was written before comes back.
        let Some(guard) = refusing(root, &["sys/fs/resctrl"], "Out of CLOSIDs\n") else {
            return;
        };
        let e = s.apply(root, &mut j).unwrap_err();
        assert_eq!(
            format!("{e:#}"),
            format!(
                "cannot create resctrl group {}: Operation not permitted (os error 1); info/last_cmd_status says: Out of CLOSIDs",
                p(root, "sys/fs/resctrl/c0")
            )
        );
        drop(guard);
        assert_eq!(j.pending(), 0);
        fs::write(root.join("sys/fs/resctrl/info/last_cmd_status"), "ok\n").unwrap();
        assert_eq!(tree(root), tree(&fixture("resctrl-l3-8ways")));
        j.finish().unwrap();
    }

    /// The environment variable that makes [`crash_child`] run, naming the
    /// tree it changes.
    const CRASH_ROOT: &str = "JITTERLAB_TEST_RESCTRL_CRASH_ROOT";

    /// The CDP configuration of the crash test.
    fn crash_configuration() -> CacheAllocation {
        let c = configuration(
            &spec_with(
                "[[configuration.cache]]\ngroup = \"rt\"\ncpus = \"4-5\"\nl3code = { ways = \"8-11\" }\nl3data = { ways = \"8-11\" }\nmb = 50\nexclusive = true\n\
                 [[configuration.cache]]\ngroup = \"nn\"\ncpus = \"0-3\"\nmb = 30\n\
                 [configuration.cache_default]\nl3code = { ways = \"0-7\" }\nl3data = { ways = \"0-7\" }\n",
            ),
            "0-7",
            "p",
        );
        cache_setting(&c)
    }

    /// Not a test of its own: the child process of
    /// [`kill_9_after_apply_then_restore_gives_the_tree_back`]. It applies
    /// the cache allocation and kills itself with SIGKILL.
    #[test]
    #[ignore = "run as a child process by kill_9_after_apply_then_restore_gives_the_tree_back"]
    fn crash_child() {
        let root = PathBuf::from(std::env::var_os(CRASH_ROOT).expect(CRASH_ROOT));
        let mut j = Journal::begin(&root).unwrap();
        let mut settings: Vec<Box<dyn Setting>> = vec![Box::new(crash_configuration())];
        apply_all(&mut settings, &root, &mut j).unwrap();
        sys::kill_process(std::process::id() as i32, sys::SIGKILL).unwrap();
        unreachable!("SIGKILL ends the process");
    }

    #[test]
    #[serial]
    fn kill_9_after_apply_then_restore_gives_the_tree_back() {
        let (_jdir, journal_path) = journal_env();
        let dir = copy_fixture("resctrl-l3-12ways-cdp");
        let root = dir.path();
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "system::settings::resctrl::tests::crash_child",
                "--ignored",
                "--test-threads=1",
                "--nocapture",
            ])
            .env(CRASH_ROOT, root)
            .env(JOURNAL_ENV, &journal_path)
            .output()
            .unwrap();
        assert_eq!(
            child.status.signal(),
            Some(9),
            "the child must die of SIGKILL; it said: {}",
            String::from_utf8_lossy(&child.stderr)
        );
        assert_eq!(
            read(root, "sys/fs/resctrl/nn/schemata"),
            "L3CODE:0=0ff;1=0ff\nL3DATA:0=0ff;1=0ff\n    MB:0= 30;1= 30\n"
        );

        // The journal, as `jitterlab restore` will read it.
        let doc: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(&journal_path).unwrap()).unwrap();
        let files = serde_json::json!(["cpus_list", "mode", "schemata", "tasks"]);
        let schemata = p(root, "sys/fs/resctrl/schemata");
        assert_eq!(
            doc["entries"],
            serde_json::json!([
                { "id": 1, "kind": "file", "path": schemata,
                  "old": "L3CODE:0=fff;1=fff\nL3DATA:0=fff;1=fff\n    MB:0=100;1=100\n" },
                { "id": 2, "kind": "file", "path": schemata,
                  "old": "L3CODE:0=0ff;1=0ff\nL3DATA:0=fff;1=fff\n    MB:0=100;1=100\n" },
                { "id": 3, "kind": "resctrl-group", "path": p(root, "sys/fs/resctrl/rt"), "files": files },
                { "id": 4, "kind": "resctrl-group", "path": p(root, "sys/fs/resctrl/nn"), "files": files },
            ])
        );
        assert_eq!(
            journal::restore(root).unwrap(),
            vec![
                format!("restored resctrl: removed group nn ({})", p(root, "sys/fs/resctrl/nn")),
                format!("restored resctrl: removed group rt ({})", p(root, "sys/fs/resctrl/rt")),
                format!("restored {schemata} to \"L3CODE:0=0ff;1=0ff\\nL3DATA:0=fff;1=fff\\n    MB:0=100;1=100\""),
                format!("restored {schemata} to \"L3CODE:0=fff;1=fff\\nL3DATA:0=fff;1=fff\\n    MB:0=100;1=100\""),
            ]
        );
        assert_eq!(tree(root), tree(&fixture("resctrl-l3-12ways-cdp")));
        assert!(!journal_path.exists());
    }

    #[test]
    fn replay_leaves_what_jitterlab_does_not_make_alone() {
        let dir = tempfile::tempdir().unwrap();
        let other = dir.path().join("home/user");
        fs::create_dir_all(&other).unwrap();
        fs::write(other.join("schemata"), "mine\n").unwrap();
        // Not under a resctrl root, a bad name, a file the stand-in never makes.
        for (path, files) in [
            (other.clone(), vec!["schemata".to_string()]),
            (dir.path().join("sys/fs/resctrl/a b"), vec![]),
            (
                dir.path().join("sys/fs/resctrl/rt"),
                vec!["../../../home/user/schemata".to_string()],
            ),
        ] {
            assert_eq!(
                remove_group(&path, &files),
                (
                    format!(
                        "left {} alone: not a resctrl group jitterlab creates",
                        path.display()
                    ),
                    false
                )
            );
        }
        assert_eq!(read(&other, "schemata"), "mine\n");
        let gone = dir.path().join("sys/fs/resctrl/rt");
        assert_eq!(
            remove_group(&gone, &[]),
            (
                format!(
                    "restored resctrl: group rt ({}) was already gone",
                    gone.display()
                ),
                true
            )
        );
        assert_eq!(
            unmount(&other),
            (
                format!("left {} alone: not a resctrl mount point", other.display()),
                false
            )
        );
        // Something else is mounted where resctrl was: left mounted.
        let target = dir.path().join("sys/fs/resctrl");
        fs::create_dir_all(&target).unwrap();
        assert_eq!(
            unmount(&target),
            (
                format!(
                    "restored resctrl: {} was no longer mounted",
                    target.display()
                ),
                true
            )
        );
        if sys::effective_uid() != 0 {
            eprintln!("skipping the mounted part: mount(2) needs root");
            return;
        }
        sys::mount("jitterlab-test", &target, "tmpfs").unwrap();
        let (line, handled) = unmount(&target);
        assert!(handled, "{line}");
        assert_ne!(
            sys::filesystem_type(&target).unwrap(),
            sys::filesystem_type(dir.path()).unwrap()
        );
        sys::unmount(&target).unwrap();
    }

    #[test]
    fn a_plain_directory_on_the_real_root_is_not_a_stand_in() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!kernel_backed(dir.path(), dir.path()).unwrap());
        let e = kernel_backed(Path::new("/"), dir.path()).unwrap_err();
        assert!(
            e.to_string().starts_with(&format!(
                "{} has an info directory but is not a resctrl file system (statfs type 0x",
                dir.path().display()
            )),
            "{e}"
        );
    }

    #[test]
    fn this_machine_tells_the_truth() {
        let root = Path::new("/");
        match capabilities(root).unwrap() {
            None => {
                let s = CacheAllocation::new(vec![group("rt", &[0], Resource::L3, "0")], None);
                assert_eq!(bad_text(s.validate(root).unwrap_err()), NO_CACHE_ALLOCATION);
            }
            Some(caps) => eprintln!(
                "skipping: this machine has cache allocation ({}); the refusal is tested on fake trees",
                caps.flags.join(" ")
            ),
        }
    }
}
