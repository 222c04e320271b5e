//! IRQ affinity: every interrupt that can move goes to the IRQ CPUs, away
//! from the probe CPUs — the first step of every partitioning in the
//! source documents.
//!
//! The kernel's files, under `/proc/irq/`:
//!
//! - `default_smp_affinity`: the CPUs new IRQs start on, as a **hex mask**
//!   in 32-bit groups separated by commas, most significant first (`3`,
//!   `f`, `00000000,00000001`); written here in the shortest form the
//!   kernel accepts ([`format_mask`]), read back with [`parse_mask`].
//! - `N/smp_affinity_list`: IRQ N's allowed CPUs as a CPU list (`0-3`),
//!   written as one with a newline.
//! - `N/effective_affinity_list` (where the architecture has it): the CPUs
//!   the IRQ is delivered to now. On x86 without interrupt remapping an
//!   IRQ moves only when it next fires, so a quiet IRQ may keep its old
//!   effective CPU for a while; that is noted, not counted as a failure.
//! - `N/<handler>/`: one directory per handler, named as the driver
//!   registered it (`timer`, `nvme0q1`), which the notes quote.
//!
//! **Unmovable IRQs.** The kernel refuses to move some IRQs — the timer,
//! per-CPU and managed IRQs (the queues of a multi-queue device): the write
//! fails with `EPERM` (`EIO` or `EINVAL` on other kernels and
//! architectures). Such an IRQ is listed in the notes with where it stays,
//! and whether that includes a probe CPU; it is not an error, and it does
//! not make the report not ok — the kernel allows no other placement.
//! Only a failure that means *we* may not write (`EACCES`, `EROFS`) is an
//! error. An IRQ that disappears while we work (its driver unloaded) is
//! skipped.
//!
//! An IRQ CPU that is also a probe CPU is a warning ([`IrqAffinity::warnings`],
//! repeated in the report's notes), not an error: a two-CPU machine has no
//! other choice. IRQ CPUs must be online.
//!
//! Report shape: `requested` is the IRQ CPU list; `before`, `applied` and
//! `verified` are `default LIST; IRQS: LIST; IRQS: LIST …`, the IRQs
//! grouped by their affinity (in the kernel's list format, e.g.
//! `1,3,8-9,120: 0-1`), groups in the order of their first IRQ; `applied`
//! leaves out the IRQs the kernel refused.
//!
//! How many interrupts the probe CPUs still took during a cell is in the
//! cell's counters ([`crate::system::counters`], `/proc/interrupts` read
//! before and after).

use std::collections::BTreeMap;
use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context, Result};
use jitterlab_core::units::CpuList;

use super::{check_online, check_writable, cpus_noun, read_value, Setting, SettingReport, Writes};
use crate::system::journal::undo::files::{IRQ_DEFAULT, IRQ_DIR};
use crate::system::journal::Journal;

/// Moves every movable IRQ, and the default for new ones, to some CPUs.
#[derive(Debug)]
pub struct IrqAffinity {
    cpus: CpuList,
    probe_cpus: CpuList,
    writes: Writes,
}

impl IrqAffinity {
    /// The request: IRQs to `cpus`; `probe_cpus` only serve the warning
    /// when the two overlap.
    pub fn new(cpus: CpuList, probe_cpus: CpuList) -> IrqAffinity {
        IrqAffinity {
            cpus,
            probe_cpus,
            writes: Writes::default(),
        }
    }

    /// The warning when an IRQ CPU is also a probe CPU (empty otherwise).
    pub fn warnings(&self) -> Vec<String> {
        let both: CpuList = self
            .cpus
            .iter()
            .filter(|c| self.probe_cpus.contains(*c))
            .collect();
        if both.is_empty() {
            return Vec::new();
        }
        let what = if both.len() == 1 {
            format!("IRQ CPU {both} is also a probe CPU")
        } else {
            format!("IRQ CPUs {both} are also probe CPUs")
        };
        vec![format!(
            "{what}: interrupts will land on the probe (a small machine may have no other choice)"
        )]
    }
}

/// `.../proc/irq/N/FILE` under `root`.
fn irq_file(root: &Path, irq: usize, file: &str) -> PathBuf {
    root.join(format!("{IRQ_DIR}/{irq}/{file}"))
}

/// The IRQs under `root` that have an `smp_affinity_list`, ascending.
fn irq_numbers(root: &Path) -> Result<Vec<usize>> {
    let dir = root.join(IRQ_DIR);
    let mut irqs: Vec<usize> = fs::read_dir(&dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .filter(|n| irq_file(root, *n, "smp_affinity_list").is_file())
        .collect();
    irqs.sort_unstable();
    Ok(irqs)
}

/// The handler names of IRQ `irq` (its subdirectories), comma-separated;
/// empty when it has none.
fn handlers(root: &Path, irq: usize) -> String {
    let mut names: Vec<String> = fs::read_dir(root.join(format!("{IRQ_DIR}/{irq}")))
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    names.sort();
    names.join(",")
}

/// Formats `cpus` as the kernel's hex CPU mask: 32-bit groups, most
/// significant first, separated by commas, the first without leading
/// zeros (`1`, `f`, `100,00000000`); `0` for no CPU.
pub fn format_mask(cpus: &CpuList) -> String {
    let Some(top) = cpus.iter().last() else {
        return "0".into();
    };
    let mut words = vec![0u32; top / 32 + 1];
    for c in cpus.iter() {
        words[c / 32] |= 1 << (c % 32);
    }
    let mut out = format!("{:x}", words[words.len() - 1]);
    for w in words.iter().rev().skip(1) {
        out.push_str(&format!(",{w:08x}"));
    }
    out
}

/// Parses a hex CPU mask as the kernel prints it (see [`format_mask`]; each
/// group has 1 to 8 hex digits); `None` when it is not one.
pub fn parse_mask(text: &str) -> Option<CpuList> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut cpus = CpuList::default();
    for (i, group) in text.rsplit(',').enumerate() {
        if group.is_empty() || group.len() > 8 {
            return None;
        }
        let word = u32::from_str_radix(group, 16).ok()?;
        cpus.0
            .extend((0..32).filter(|b| word & (1 << b) != 0).map(|b| i * 32 + b));
    }
    Some(cpus)
}

/// `IRQS: VALUE` groups (see the module doc), joined by `; `.
fn group(entries: &[(usize, String)]) -> String {
    let mut order: Vec<&str> = Vec::new();
    let mut by_value: BTreeMap<&str, CpuList> = BTreeMap::new();
    for (irq, value) in entries {
        if !by_value.contains_key(value.as_str()) {
            order.push(value);
        }
        by_value.entry(value).or_default().0.insert(*irq);
    }
    order
        .iter()
        .map(|v| format!("{}: {v}", by_value[v]))
        .collect::<Vec<_>>()
        .join("; ")
}

/// True for a write error that means this process may not write at all,
/// as opposed to the kernel refusing to move one IRQ.
fn is_privilege_error(e: &std::io::Error) -> bool {
    // EACCES and EROFS (asm-generic/errno-base.h, the same on every Linux
    // architecture). `ErrorKind` cannot tell EACCES from EPERM, which here
    // means the opposite: the kernel refusing a managed IRQ.
    const EACCES: i32 = 13;
    const EROFS: i32 = 30;
    matches!(e.raw_os_error(), Some(EACCES) | Some(EROFS))
}

/// The content of an IRQ's file, trimmed; `None` when the IRQ is gone.
fn read_irq(path: &Path) -> Result<Option<String>> {
    match fs::read_to_string(path) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(anyhow!(e).context(format!("cannot read {}", path.display()))),
    }
}

impl Setting for IrqAffinity {
    fn name(&self) -> String {
        "irq_affinity".into()
    }

    fn validate(&self, root: &Path) -> Result<()> {
        check_online(root, &self.cpus, "IRQ CPUs")?;
        check_writable(
            &root.join(IRQ_DEFAULT),
            "is --sysroot the root of a Linux system with /proc mounted?",
            "moving IRQs",
        )
    }

    fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let result = self.apply_irqs(root, journal);
        self.writes.undo_after(journal, result)
    }

    fn restore(&mut self, _root: &Path, journal: &mut Journal) -> Result<Vec<String>> {
        self.writes.restore(journal)
    }
}

impl IrqAffinity {
    /// Moves the default and every IRQ, reads them back, reports.
    fn apply_irqs(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let want = self.cpus.to_string();
        let mut notes = self.warnings();

        let default_path = root.join(IRQ_DEFAULT);
        let read_default = |path: &Path| -> Result<CpuList> {
            let text = read_value(path)?;
            parse_mask(&text).ok_or_else(|| {
                anyhow!(
                    "{} holds {:?}, not a CPU mask",
                    path.display(),
                    text.trim_end()
                )
            })
        };
        let old_default = read_value(&default_path)?;
        let default_before = read_default(&default_path)?;
        if default_before != self.cpus {
            self.writes.write_or_fail(
                journal,
                &default_path,
                &old_default,
                &format!("{}\n", format_mask(&self.cpus)),
            )?;
        }

        let mut before = Vec::new();
        let mut moved = Vec::new();
        let mut refused = Vec::new();
        for irq in irq_numbers(root)? {
            let path = irq_file(root, irq, "smp_affinity_list");
            let Some(old) = read_irq(&path)? else {
                continue;
            };
            before.push((irq, old.trim_end().to_string()));
            if CpuList::parse(&old).is_ok_and(|l| l == self.cpus) {
                moved.push(irq);
                continue;
            }
            match self
                .writes
                .write(journal, &path, &old, &format!("{want}\n"))?
            {
                Ok(()) => moved.push(irq),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) if is_privilege_error(&e) => {
                    return Err(
                        anyhow!(e).context(format!("cannot write {want:?} to {}", path.display()))
                    )
                }
                Err(e) => refused.push((irq, e)),
            }
        }

        // Verify.
        let default_now = read_default(&default_path)?;
        let mut ok = default_now == self.cpus;
        let mut verified = Vec::new();
        let mut late = Vec::new();
        for (irq, _) in &before {
            let Some(now) = read_irq(&irq_file(root, *irq, "smp_affinity_list"))? else {
                continue;
            };
            let now = now.trim_end().to_string();
            if moved.contains(irq) {
                ok &= CpuList::parse(&now).is_ok_and(|l| l == self.cpus);
                let effective = irq_file(root, *irq, "effective_affinity_list");
                if let Some(eff) = read_irq(&effective)? {
                    let eff = eff.trim_end().to_string();
                    let within =
                        CpuList::parse(&eff).is_ok_and(|l| l.iter().all(|c| self.cpus.contains(c)));
                    if !within {
                        late.push((*irq, eff));
                    }
                }
            }
            if let Some((_, e)) = refused.iter().find(|(n, _)| n == irq) {
                notes.push(self.refused_note(root, *irq, &now, e));
            }
            verified.push((*irq, now));
        }
        if !late.is_empty() {
            notes.push(format!(
                "the effective affinity of some IRQs is not yet within {want} ({}): an IRQ that cannot move at once moves when it next fires",
                group(&late)
            ));
        }

        let applied: Vec<(usize, String)> = moved.iter().map(|n| (*n, want.clone())).collect();
        let with_default = |default: &CpuList, rest: &[(usize, String)]| {
            if rest.is_empty() {
                format!("default {default}")
            } else {
                format!("default {default}; {}", group(rest))
            }
        };
        Ok(SettingReport {
            name: self.name(),
            requested: want,
            before: with_default(&default_before, &before),
            applied: with_default(&self.cpus, &applied),
            verified: with_default(&default_now, &verified),
            ok,
            notes,
        })
    }

    /// The note for an IRQ the kernel refused to move; `now` is where it
    /// stays.
    fn refused_note(&self, root: &Path, irq: usize, now: &str, e: &std::io::Error) -> String {
        let name = handlers(root, irq);
        let name = if name.is_empty() {
            String::new()
        } else {
            format!(" ({name})")
        };
        let stays = CpuList::parse(now).unwrap_or_default();
        let mut note = format!(
            "IRQ {irq}{name} stays on {}: the kernel refused to move it ({e})",
            cpus_noun(&stays)
        );
        let probe: CpuList = stays
            .iter()
            .filter(|c| self.probe_cpus.contains(*c))
            .collect();
        if !probe.is_empty() {
            note.push_str(&format!("; it can interrupt probe {}", cpus_noun(&probe)));
        }
        note
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::settings::testing::{bad_text, cpus, journal_env, read, tree, Immutable};
    use crate::testutil::{copy_fixture, fixture};
    use serial_test::serial;

    const EPERM: &str = "Operation not permitted (os error 1)";

    #[test]
    #[serial]
    fn movable_irqs_move_unmovable_ones_are_listed_and_all_come_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let unmovable: Vec<String> = [0, 121, 122, 123, 124]
            .iter()
            .map(|n| format!("proc/irq/{n}/smp_affinity_list"))
            .collect();
        let rels: Vec<&str> = unmovable.iter().map(String::as_str).collect();
        let Some(_guard) = Immutable::mark(root, &rels) else {
            return;
        };
        let mut j = Journal::begin(root).unwrap();
        let mut s = IrqAffinity::new(cpus("0-1"), cpus("2-3"));
        s.validate(root).unwrap();
        assert_eq!(s.warnings(), Vec::<String>::new());
        let report = s.apply(root, &mut j).unwrap();
        let refused = |irq: &str, stays: &str, probe: &str| {
            format!("IRQ {irq} stays on {stays}: the kernel refused to move it ({EPERM}){probe}")
        };
        assert_eq!(
            report,
            SettingReport {
                name: "irq_affinity".into(),
                requested: "0-1".into(),
                before: "default 0-3; 0-1,3,8-9,120,126: 0-3; 121: 0; 122: 1; 123: 2; 124: 3"
                    .into(),
                applied: "default 0-1; 1,3,8-9,120,126: 0-1".into(),
                verified:
                    "default 0-1; 0: 0-3; 1,3,8-9,120,126: 0-1; 121: 0; 122: 1; 123: 2; 124: 3"
                        .into(),
                ok: true,
                notes: vec![
                    refused("0 (timer)", "CPUs 0-3", "; it can interrupt probe CPUs 2-3"),
                    refused("121 (nvme0q1)", "CPU 0", ""),
                    refused("122 (nvme0q2)", "CPU 1", ""),
                    refused("123 (nvme0q3)", "CPU 2", "; it can interrupt probe CPU 2"),
                    refused("124 (nvme0q4)", "CPU 3", "; it can interrupt probe CPU 3"),
                    "the effective affinity of some IRQs is not yet within 0-1 (8,126: 2; 9: 3): an IRQ that cannot move at once moves when it next fires".into(),
                ],
            }
        );
        assert_eq!(read(root, "proc/irq/default_smp_affinity"), "3\n");
        for n in [1, 3, 8, 9, 120, 126] {
            assert_eq!(
                read(root, &format!("proc/irq/{n}/smp_affinity_list")),
                "0-1\n"
            );
        }
        for (n, v) in [(0, "0-3"), (121, "0"), (122, "1"), (123, "2"), (124, "3")] {
            assert_eq!(
                read(root, &format!("proc/irq/{n}/smp_affinity_list")),
                format!("{v}\n")
            );
        }
        assert_eq!(j.pending(), 7);
        let p = |rel: &str| root.join(rel).display().to_string();
        let mut expected: Vec<String> = [126, 120, 9, 8, 3, 1]
            .iter()
            .map(|n| {
                format!(
                    "restored {} to \"0-3\"",
                    p(&format!("proc/irq/{n}/smp_affinity_list"))
                )
            })
            .collect();
        expected.push(format!(
            "restored {} to \"f\"",
            p("proc/irq/default_smp_affinity")
        ));
        assert_eq!(s.restore(root, &mut j).unwrap(), expected);
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn an_irq_cpu_that_is_a_probe_cpu_is_a_warning() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = IrqAffinity::new(cpus("0"), cpus("0-1"));
        let warning = "IRQ CPU 0 is also a probe CPU: interrupts will land on the probe (a small machine may have no other choice)";
        assert_eq!(s.warnings(), vec![warning.to_string()]);
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            report,
            SettingReport {
                name: "irq_affinity".into(),
                requested: "0".into(),
                before: "default 0-1; 24,26,36,41-42: 0-1".into(),
                applied: "default 0; 24,26,36,41-42: 0".into(),
                verified: "default 0; 24,26,36,41-42: 0".into(),
                ok: true,
                notes: vec![
                    warning.to_string(),
                    "the effective affinity of some IRQs is not yet within 0 (26,36,42: 1): an IRQ that cannot move at once moves when it next fires".into(),
                ],
            }
        );
        assert_eq!(read(root, "proc/irq/default_smp_affinity"), "1\n");
        assert_eq!(read(root, "proc/irq/36/smp_affinity_list"), "0\n");
        assert_eq!(s.restore(root, &mut j).unwrap().len(), 6);
        assert_eq!(tree(root), tree(&fixture("settings-vm")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn irqs_already_in_place_are_not_written() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = IrqAffinity::new(cpus("0-1"), cpus("1"));
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            (report.applied.as_str(), report.verified.as_str(), report.ok),
            (
                "default 0-1; 24,26,36,41-42: 0-1",
                "default 0-1; 24,26,36,41-42: 0-1",
                true
            )
        );
        assert_eq!(j.pending(), 0);
        assert_eq!(s.restore(root, &mut j).unwrap(), Vec::<String>::new());
        j.finish().unwrap();
    }

    #[test]
    fn bad_irq_cpus_are_refused() {
        let root = fixture("settings-pc");
        assert_eq!(
            bad_text(
                IrqAffinity::new(cpus("1,4-5"), cpus("2"))
                    .validate(&root)
                    .unwrap_err()
            ),
            "IRQ CPUs must be online CPUs, but 4-5 are not online here (online: 0-3)"
        );
        assert_eq!(
            bad_text(
                IrqAffinity::new(CpuList::default(), cpus("2"))
                    .validate(&root)
                    .unwrap_err()
            ),
            "no IRQ CPUs given; name at least one online CPU (online: 0-3)"
        );
        let dir = copy_fixture("settings-vm");
        fs::remove_file(dir.path().join(IRQ_DEFAULT)).unwrap();
        assert_eq!(
            bad_text(IrqAffinity::new(cpus("0"), cpus("1")).validate(dir.path()).unwrap_err()),
            format!(
                "{}/proc/irq/default_smp_affinity does not exist: is --sysroot the root of a Linux system with /proc mounted?",
                dir.path().display()
            )
        );
    }

    #[test]
    fn masks_in_the_kernel_format() {
        let f = |t: &str| format_mask(&cpus(t));
        assert_eq!(f("0"), "1");
        assert_eq!(f("0-1"), "3");
        assert_eq!(f("0-3"), "f");
        assert_eq!(f("4"), "10");
        assert_eq!(f("31"), "80000000");
        assert_eq!(f("40"), "100,00000000");
        assert_eq!(f("0,32"), "1,00000001");
        assert_eq!(f(""), "0");
        let p = |t: &str| parse_mask(t).map(|l| l.to_string());
        assert_eq!(p("3\n").as_deref(), Some("0-1"));
        assert_eq!(p("f").as_deref(), Some("0-3"));
        assert_eq!(p("00000000,00000001").as_deref(), Some("0"));
        assert_eq!(p("ff,ffffffff").as_deref(), Some("0-39"));
        assert_eq!(p("100,00000000").as_deref(), Some("40"));
        assert_eq!(p("0").as_deref(), Some(""));
        assert_eq!(p(""), None);
        assert_eq!(p("0-1"), None);
        assert_eq!(p("1,,1"), None);
        assert_eq!(p("123456789"), None);
    }
}
