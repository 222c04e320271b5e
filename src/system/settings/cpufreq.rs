//! The cpufreq governor and the minimum and maximum frequency of the probe
//! CPUs: a CPU that lowers its clock when idle wakes up slower, and one that
//! changes it while the probe runs changes the probe's execution time.
//!
//! The kernel groups CPUs that share a clock into *policies*:
//! `/sys/devices/system/cpu/cpufreq/policyN/` with `affected_cpus` (the
//! online CPUs it governs, space-separated), `scaling_governor`,
//! `scaling_available_governors`, `scaling_min_freq`, `scaling_max_freq`,
//! `cpuinfo_min_freq` and `cpuinfo_max_freq` (kHz, decimal, newline).
//! `cpuN/cpufreq` is a link to its policy; a CPU that no `policyN` lists
//! (kernels before the `policyN` directories) is reached through
//! `cpuN/cpufreq` itself. A policy is set as a whole: asking for CPU 1 of a
//! policy that governs CPUs 0-1 changes CPU 0 too, and a note says so.
//!
//! Validation refuses a governor that `scaling_available_governors` does
//! not list, a frequency outside `cpuinfo_min_freq`–`cpuinfo_max_freq`, and
//! a minimum above the maximum (the one requested, or the one in place).
//! Writing order keeps minimum ≤ maximum at every step, for kernels that
//! refuse anything else: the governor first, then the maximum first unless
//! the current minimum is above the new maximum; restore undoes it in
//! reverse, which keeps the same invariant.
//!
//! **No cpufreq.** A virtual machine, or a machine whose firmware keeps the
//! frequency, has no policy. Unless the request is `required` (the user
//! asked for it explicitly), that is not an error: the report carries a
//! "not available here" note, writes nothing and stays `ok`. CPUs without a
//! policy beside CPUs with one get the same treatment.
//!
//! Report shape: `requested` is `governor G, min N kHz, max M kHz on CPUs
//! L` (the parts asked for); `before`, `applied` and `verified` are
//! `policyN (CPUs L): GOVERNOR MIN-MAX kHz`, one per policy, joined by `; `.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;
use jitterlab_core::units::CpuList;

use super::{
    check_online, check_writable, cpus_phrase, read_value, Setting, SettingReport, Writes,
};
use crate::error::bad;
use crate::system::journal::undo::files::CPU_DIR;
use crate::system::journal::Journal;

/// What to set, on which CPUs.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CpufreqRequest {
    /// The CPUs whose policies are set.
    pub cpus: CpuList,
    /// The governor (`performance`, `schedutil` …), if any.
    pub governor: Option<String>,
    /// The minimum frequency in kHz (`scaling_min_freq`), if any.
    pub min_khz: Option<u64>,
    /// The maximum frequency in kHz (`scaling_max_freq`), if any.
    pub max_khz: Option<u64>,
    /// True when the user asked for it explicitly: a machine without
    /// cpufreq is then bad input instead of a note.
    pub required: bool,
}

/// The cpufreq setting of some CPUs.
#[derive(Debug)]
pub struct Cpufreq {
    req: CpufreqRequest,
    writes: Writes,
}

impl Cpufreq {
    /// The setting for `req`.
    pub fn new(req: CpufreqRequest) -> Cpufreq {
        Cpufreq {
            req,
            writes: Writes::default(),
        }
    }

    /// `requested` of the report (see the module doc).
    fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(g) = &self.req.governor {
            parts.push(format!("governor {g}"));
        }
        if let Some(n) = self.req.min_khz {
            parts.push(format!("min {n} kHz"));
        }
        if let Some(n) = self.req.max_khz {
            parts.push(format!("max {n} kHz"));
        }
        format!("{} on CPUs {}", parts.join(", "), self.req.cpus)
    }

    /// Why there is nothing to set, without the advice.
    fn not_available(&self, root: &Path) -> String {
        format!(
            "cpufreq is not available here: no {}/cpufreq/policy* covers CPUs {} (a virtual machine, or frequency scaling left to the firmware)",
            root.join(CPU_DIR).display(),
            self.req.cpus
        )
    }
}

/// One cpufreq policy: a directory and the CPUs it governs.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Policy {
    /// `policyN`, or `cpuN/cpufreq` for the fallback.
    name: String,
    dir: PathBuf,
    cpus: CpuList,
}

impl Policy {
    fn file(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    fn read(&self, name: &str) -> Result<String> {
        Ok(read_value(&self.file(name))?.trim_end().to_string())
    }

    fn read_khz(&self, name: &str) -> Result<u64> {
        let text = self.read(name)?;
        text.parse().map_err(|_| {
            anyhow::anyhow!(
                "{} holds {text:?}, not a frequency in kHz",
                self.file(name).display()
            )
        })
    }

    /// The governor and frequency limits in place.
    fn state(&self) -> Result<State> {
        Ok(State {
            governor: self.read("scaling_governor")?,
            min: self.read_khz("scaling_min_freq")?,
            max: self.read_khz("scaling_max_freq")?,
        })
    }

    /// `policyN (CPUs L): ` for the report.
    fn label(&self) -> String {
        format!("{} (CPUs {})", self.name, self.cpus)
    }
}

/// A policy's governor and frequency limits.
#[derive(Debug, Clone, PartialEq, Eq)]
struct State {
    governor: String,
    min: u64,
    max: u64,
}

impl std::fmt::Display for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}-{} kHz", self.governor, self.min, self.max)
    }
}

/// A space-separated CPU list (`affected_cpus`); `None` when unreadable or
/// empty.
fn read_cpu_words(path: &Path) -> Option<CpuList> {
    let text = fs::read_to_string(path).ok()?;
    let list: Option<CpuList> = text.split_whitespace().map(|w| w.parse().ok()).collect();
    list.filter(|l| !l.is_empty())
}

/// The policies that govern any of `cpus`, in policy order, and the CPUs
/// of `cpus` that none governs.
fn policies(root: &Path, cpus: &CpuList) -> (Vec<Policy>, CpuList) {
    let base = root.join(CPU_DIR);
    let mut numbered: Vec<(usize, PathBuf)> = fs::read_dir(base.join("cpufreq"))
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n = name.strip_prefix("policy")?.parse().ok()?;
            Some((n, e.path()))
        })
        .collect();
    numbered.sort();
    let mut found = Vec::new();
    let mut left = cpus.clone();
    for (n, dir) in numbered {
        let Some(governs) = read_cpu_words(&dir.join("affected_cpus")) else {
            continue;
        };
        if governs.iter().any(|c| cpus.contains(c)) {
            left.0.retain(|c| !governs.contains(*c));
            found.push(Policy {
                name: format!("policy{n}"),
                dir,
                cpus: governs,
            });
        }
    }
    // Kernels without policyN directories: cpuN/cpufreq.
    for cpu in cpus.iter() {
        if !left.contains(cpu) {
            continue;
        }
        let dir = base.join(format!("cpu{cpu}/cpufreq"));
        if !dir.join("scaling_governor").exists() {
            continue;
        }
        let governs = read_cpu_words(&dir.join("affected_cpus"))
            .unwrap_or_else(|| std::iter::once(cpu).collect());
        left.0.retain(|c| !governs.contains(*c));
        found.push(Policy {
            name: format!("cpu{cpu}/cpufreq"),
            dir,
            cpus: governs,
        });
    }
    (found, left)
}

/// True when the maximum must be written before the minimum: unless the
/// minimum in place is above the new maximum, raising or keeping the
/// maximum first keeps minimum ≤ maximum at every step.
fn max_first(old_min: u64, new_max: u64) -> bool {
    old_min <= new_max
}

impl Setting for Cpufreq {
    fn name(&self) -> String {
        "cpufreq".into()
    }

    fn validate(&self, root: &Path) -> Result<()> {
        let r = &self.req;
        check_online(root, &r.cpus, "cpufreq CPUs")?;
        if r.governor.is_none() && r.min_khz.is_none() && r.max_khz.is_none() {
            return Err(bad(
                "the cpufreq setting asks for nothing; give a governor, a minimum or a maximum frequency",
            ));
        }
        if let (Some(min), Some(max)) = (r.min_khz, r.max_khz) {
            if min > max {
                return Err(bad(format!(
                    "cpufreq minimum {min} kHz is above the maximum {max} kHz; swap them"
                )));
            }
        }
        let (found, left) = policies(root, &r.cpus);
        if found.is_empty() {
            return if r.required {
                Err(bad(format!(
                    "{}; remove the cpufreq settings from the configuration",
                    self.not_available(root)
                )))
            } else {
                Ok(())
            };
        }
        if r.required && !left.is_empty() {
            return Err(bad(format!(
                "{} no cpufreq policy here; remove them from the cpufreq CPUs",
                cpus_phrase(&left, "has", "have")
            )));
        }
        for p in &found {
            if let Some(g) = &r.governor {
                let offered = p.read("scaling_available_governors")?;
                if !offered.split_whitespace().any(|o| o == g) {
                    return Err(bad(format!(
                        "cpufreq governor {g:?} is not available for CPUs {} ({} offers: {}); choose one of those",
                        p.cpus,
                        p.name,
                        offered.split_whitespace().collect::<Vec<_>>().join(" ")
                    )));
                }
            }
            let (lo, hi) = (
                p.read_khz("cpuinfo_min_freq")?,
                p.read_khz("cpuinfo_max_freq")?,
            );
            for (what, khz) in [("minimum", r.min_khz), ("maximum", r.max_khz)] {
                if let Some(khz) = khz.filter(|k| !(lo..=hi).contains(k)) {
                    return Err(bad(format!(
                        "cpufreq {what} {khz} kHz is outside the range of CPUs {} ({lo}-{hi} kHz, {}/cpuinfo_min_freq and cpuinfo_max_freq); choose a frequency in that range",
                        p.cpus, p.name
                    )));
                }
            }
            match (r.min_khz, r.max_khz) {
                (Some(min), None) => {
                    let max = p.read_khz("scaling_max_freq")?;
                    if min > max {
                        return Err(bad(format!(
                            "cpufreq minimum {min} kHz is above the maximum in place for CPUs {} ({max} kHz, {}/scaling_max_freq); give a maximum too",
                            p.cpus, p.name
                        )));
                    }
                }
                (None, Some(max)) => {
                    let min = p.read_khz("scaling_min_freq")?;
                    if max < min {
                        return Err(bad(format!(
                            "cpufreq maximum {max} kHz is below the minimum in place for CPUs {} ({min} kHz, {}/scaling_min_freq); give a minimum too",
                            p.cpus, p.name
                        )));
                    }
                }
                _ => {}
            }
            let files = [
                ("scaling_governor", r.governor.is_some()),
                ("scaling_min_freq", r.min_khz.is_some()),
                ("scaling_max_freq", r.max_khz.is_some()),
            ];
            for (file, wanted) in files {
                if wanted {
                    check_writable(
                        &p.file(file),
                        "this cpufreq driver does not offer that control; remove it from the configuration",
                        "setting the cpufreq governor and frequencies",
                    )?;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, root: &Path, journal: &mut Journal) -> Result<SettingReport> {
        let mut report = SettingReport {
            name: self.name(),
            requested: self.describe(),
            before: String::new(),
            applied: String::new(),
            verified: String::new(),
            ok: true,
            notes: Vec::new(),
        };
        let (found, left) = policies(root, &self.req.cpus);
        if found.is_empty() {
            report.notes.push(format!(
                "{}; the CPUs run at whatever frequency the platform gives them",
                self.not_available(root)
            ));
            return Ok(report);
        }
        if !left.is_empty() {
            report.notes.push(format!(
                "{} no cpufreq policy here; left alone",
                cpus_phrase(&left, "has", "have")
            ));
        }
        let result = self.apply_policies(journal, &found, &mut report);
        self.writes.undo_after(journal, result)?;
        Ok(report)
    }

    fn restore(&mut self, _root: &Path, journal: &mut Journal) -> Result<Vec<String>> {
        self.writes.restore(journal)
    }
}

impl Cpufreq {
    /// Writes every policy and fills in the report.
    fn apply_policies(
        &mut self,
        journal: &mut Journal,
        found: &[Policy],
        report: &mut SettingReport,
    ) -> Result<()> {
        let (mut before, mut applied, mut verified) = (Vec::new(), Vec::new(), Vec::new());
        for p in found {
            let extra: CpuList = p
                .cpus
                .iter()
                .filter(|c| !self.req.cpus.contains(*c))
                .collect();
            if !extra.is_empty() {
                report.notes.push(format!(
                    "{} governs CPUs {} together, so {} too",
                    p.name,
                    p.cpus,
                    cpus_phrase(&extra, "changes", "change")
                ));
            }
            let was = p.state()?;
            let want = State {
                governor: self.req.governor.clone().unwrap_or(was.governor.clone()),
                min: self.req.min_khz.unwrap_or(was.min),
                max: self.req.max_khz.unwrap_or(was.max),
            };
            let mut steps: Vec<(&str, String, String)> = Vec::new();
            if want.governor != was.governor {
                steps.push((
                    "scaling_governor",
                    was.governor.clone(),
                    want.governor.clone(),
                ));
            }
            let min_step = (
                "scaling_min_freq",
                was.min.to_string(),
                want.min.to_string(),
            );
            let max_step = (
                "scaling_max_freq",
                was.max.to_string(),
                want.max.to_string(),
            );
            let (first, second) = if max_first(was.min, want.max) {
                (max_step, min_step)
            } else {
                (min_step, max_step)
            };
            steps.extend(
                [first, second]
                    .into_iter()
                    .filter(|(_, old, new)| old != new),
            );
            for (file, _, new) in steps {
                let path = p.file(file);
                let old = read_value(&path)?;
                self.writes
                    .write_or_fail(journal, &path, &old, &format!("{new}\n"))?;
            }
            let now = p.state()?;
            report.ok &= now == want;
            before.push(format!("{}: {was}", p.label()));
            applied.push(format!("{}: {want}", p.label()));
            verified.push(format!("{}: {now}", p.label()));
        }
        report.before = before.join("; ");
        report.applied = applied.join("; ");
        report.verified = verified.join("; ");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::system::settings::testing::{bad_text, cpus, journal_env, read, tree};
    use crate::testutil::{copy_fixture, fixture};
    use serial_test::serial;

    const POLICY0: &str = "sys/devices/system/cpu/cpufreq/policy0";
    const POLICY2: &str = "sys/devices/system/cpu/cpufreq/policy2";

    fn request(
        list: &str,
        governor: Option<&str>,
        min: Option<u64>,
        max: Option<u64>,
    ) -> CpufreqRequest {
        CpufreqRequest {
            cpus: cpus(list),
            governor: governor.map(str::to_string),
            min_khz: min,
            max_khz: max,
            required: true,
        }
    }

    #[test]
    #[serial]
    fn governor_and_limits_on_one_policy_and_back() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let mut j = Journal::begin(root).unwrap();
        let mut s = Cpufreq::new(request(
            "2-3",
            Some("performance"),
            Some(1_200_000),
            Some(2_800_000),
        ));
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            report,
            SettingReport {
                name: "cpufreq".into(),
                requested: "governor performance, min 1200000 kHz, max 2800000 kHz on CPUs 2-3"
                    .into(),
                before: "policy2 (CPUs 2-3): schedutil 800000-3600000 kHz".into(),
                applied: "policy2 (CPUs 2-3): performance 1200000-2800000 kHz".into(),
                verified: "policy2 (CPUs 2-3): performance 1200000-2800000 kHz".into(),
                ok: true,
                notes: vec![],
            }
        );
        assert_eq!(
            read(root, &format!("{POLICY2}/scaling_governor")),
            "performance\n"
        );
        assert_eq!(
            read(root, &format!("{POLICY2}/scaling_min_freq")),
            "1200000\n"
        );
        assert_eq!(
            read(root, &format!("{POLICY2}/scaling_max_freq")),
            "2800000\n"
        );
        assert_eq!(
            read(root, &format!("{POLICY0}/scaling_governor")),
            "schedutil\n"
        );
        let p = |f: &str| root.join(POLICY2).join(f).display().to_string();
        // Written: governor, max, min; restored in reverse.
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![
                format!("restored {} to \"800000\"", p("scaling_min_freq")),
                format!("restored {} to \"3600000\"", p("scaling_max_freq")),
                format!("restored {} to \"schedutil\"", p("scaling_governor")),
            ]
        );
        assert_eq!(tree(root), tree(&fixture("settings-pc")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn lowering_below_the_minimum_in_place_writes_the_minimum_first() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        std::fs::write(root.join(POLICY0).join("scaling_min_freq"), "2800000\n").unwrap();
        let original = tree(root);
        let mut j = Journal::begin(root).unwrap();
        let mut s = Cpufreq::new(request("0", None, Some(800_000), Some(1_200_000)));
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            (report.before.as_str(), report.verified.as_str(), report.ok),
            (
                "policy0 (CPUs 0-1): schedutil 2800000-3600000 kHz",
                "policy0 (CPUs 0-1): schedutil 800000-1200000 kHz",
                true
            )
        );
        assert_eq!(
            report.notes,
            vec!["policy0 governs CPUs 0-1 together, so CPU 1 changes too".to_string()]
        );
        let p = |f: &str| root.join(POLICY0).join(f).display().to_string();
        assert_eq!(
            s.restore(root, &mut j).unwrap(),
            vec![
                format!("restored {} to \"3600000\"", p("scaling_max_freq")),
                format!("restored {} to \"2800000\"", p("scaling_min_freq")),
            ]
        );
        assert_eq!(tree(root), original);
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn cpus_without_policy_directories_use_cpu_n_cpufreq() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        let cpu2 = root.join("sys/devices/system/cpu/cpu2");
        std::fs::create_dir_all(&cpu2).unwrap();
        std::fs::rename(root.join(POLICY2), cpu2.join("cpufreq")).unwrap();
        let original = tree(root);
        let mut j = Journal::begin(root).unwrap();
        let mut s = Cpufreq::new(request("2-3", Some("powersave"), None, None));
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            (report.before.as_str(), report.verified.as_str(), report.ok),
            (
                "cpu2/cpufreq (CPUs 2-3): schedutil 800000-3600000 kHz",
                "cpu2/cpufreq (CPUs 2-3): powersave 800000-3600000 kHz",
                true
            )
        );
        assert_eq!(report.notes, Vec::<String>::new());
        assert_eq!(
            read(root, "sys/devices/system/cpu/cpu2/cpufreq/scaling_governor"),
            "powersave\n"
        );
        s.restore(root, &mut j).unwrap();
        assert_eq!(tree(root), original);
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn no_cpufreq_is_a_note_unless_required() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-vm");
        let root = dir.path();
        let mut req = request("0-1", Some("performance"), None, None);
        let not_here = format!(
            "cpufreq is not available here: no {}/sys/devices/system/cpu/cpufreq/policy* covers CPUs 0-1 (a virtual machine, or frequency scaling left to the firmware)",
            root.display()
        );
        assert_eq!(
            bad_text(Cpufreq::new(req.clone()).validate(root).unwrap_err()),
            format!("{not_here}; remove the cpufreq settings from the configuration")
        );
        req.required = false;
        let mut s = Cpufreq::new(req);
        s.validate(root).unwrap();
        let mut j = Journal::begin(root).unwrap();
        assert_eq!(
            s.apply(root, &mut j).unwrap(),
            SettingReport {
                name: "cpufreq".into(),
                requested: "governor performance on CPUs 0-1".into(),
                before: String::new(),
                applied: String::new(),
                verified: String::new(),
                ok: true,
                notes: vec![format!(
                    "{not_here}; the CPUs run at whatever frequency the platform gives them"
                )],
            }
        );
        assert_eq!(j.pending(), 0);
        assert_eq!(tree(root), tree(&fixture("settings-vm")));
        j.finish().unwrap();
    }

    #[test]
    #[serial]
    fn cpus_without_a_policy_beside_cpus_with_one_are_a_note() {
        let (_jdir, _) = journal_env();
        let dir = copy_fixture("settings-pc");
        let root = dir.path();
        std::fs::remove_dir_all(root.join(POLICY2)).unwrap();
        let original = tree(root);
        let mut j = Journal::begin(root).unwrap();
        let mut req = request("1-3", Some("performance"), None, None);
        req.required = false;
        let mut s = Cpufreq::new(req);
        s.validate(root).unwrap();
        let report = s.apply(root, &mut j).unwrap();
        assert_eq!(
            report,
            SettingReport {
                name: "cpufreq".into(),
                requested: "governor performance on CPUs 1-3".into(),
                before: "policy0 (CPUs 0-1): schedutil 800000-3600000 kHz".into(),
                applied: "policy0 (CPUs 0-1): performance 800000-3600000 kHz".into(),
                verified: "policy0 (CPUs 0-1): performance 800000-3600000 kHz".into(),
                ok: true,
                notes: vec![
                    "CPUs 2-3 have no cpufreq policy here; left alone".into(),
                    "policy0 governs CPUs 0-1 together, so CPU 0 changes too".into(),
                ],
            }
        );
        assert_eq!(
            read(root, &format!("{POLICY0}/scaling_governor")),
            "performance\n"
        );
        s.restore(root, &mut j).unwrap();
        assert_eq!(tree(root), original);
        j.finish().unwrap();
    }

    #[test]
    fn bad_requests_are_refused_with_the_fix() {
        let root = fixture("settings-pc");
        let v = |r: CpufreqRequest| bad_text(Cpufreq::new(r).validate(&root).unwrap_err());
        assert_eq!(
            v(request("0", Some("turbo"), None, None)),
            "cpufreq governor \"turbo\" is not available for CPUs 0-1 (policy0 offers: conservative ondemand userspace powersave performance schedutil); choose one of those"
        );
        assert_eq!(
            v(request("2", None, Some(400_000), None)),
            "cpufreq minimum 400000 kHz is outside the range of CPUs 2-3 (800000-3600000 kHz, policy2/cpuinfo_min_freq and cpuinfo_max_freq); choose a frequency in that range"
        );
        assert_eq!(
            v(request("2", None, None, Some(4_000_000))),
            "cpufreq maximum 4000000 kHz is outside the range of CPUs 2-3 (800000-3600000 kHz, policy2/cpuinfo_min_freq and cpuinfo_max_freq); choose a frequency in that range"
        );
        assert_eq!(
            v(request("0", None, Some(2_000_000), Some(1_200_000))),
            "cpufreq minimum 2000000 kHz is above the maximum 1200000 kHz; swap them"
        );
        assert_eq!(
            v(request("0", None, None, None)),
            "the cpufreq setting asks for nothing; give a governor, a minimum or a maximum frequency"
        );
        assert_eq!(
            v(request("3-4", Some("performance"), None, None)),
            "cpufreq CPUs must be online CPUs, but 4 is not online here (online: 0-3)"
        );

        let dir = copy_fixture("settings-pc");
        let tmp = dir.path();
        std::fs::write(tmp.join(POLICY0).join("scaling_max_freq"), "2000000\n").unwrap();
        std::fs::write(tmp.join(POLICY2).join("scaling_min_freq"), "2000000\n").unwrap();
        let v = |r: CpufreqRequest| bad_text(Cpufreq::new(r).validate(tmp).unwrap_err());
        assert_eq!(
            v(request("0", None, Some(2_800_000), None)),
            "cpufreq minimum 2800000 kHz is above the maximum in place for CPUs 0-1 (2000000 kHz, policy0/scaling_max_freq); give a maximum too"
        );
        assert_eq!(
            v(request("2", None, None, Some(1_200_000))),
            "cpufreq maximum 1200000 kHz is below the minimum in place for CPUs 2-3 (2000000 kHz, policy2/scaling_min_freq); give a minimum too"
        );
        std::fs::remove_dir_all(tmp.join(POLICY2)).unwrap();
        assert_eq!(
            v(request("1-3", Some("performance"), None, None)),
            "CPUs 2-3 have no cpufreq policy here; remove them from the cpufreq CPUs"
        );
    }

    #[test]
    fn write_order_keeps_min_below_max() {
        assert!(max_first(800_000, 2_800_000));
        assert!(max_first(2_800_000, 2_800_000));
        assert!(!max_first(2_800_000, 1_200_000));
    }
}
