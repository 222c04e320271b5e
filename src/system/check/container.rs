//! Container findings (`container-*`): whether deployment `container` can
//! run here and be real-time — a working engine, the cgroup layout (a
//! controller split between v1 and v2 stops crun), the hard resource
//! limits podman's defaults need, the RT group scheduling budget the
//! containers' parent cgroup can get, root. Each is what
//! [`crate::system::container`] detects before a container cell starts,
//! with the same fix.

use std::path::Path;

use super::finding::{Finding, Severity};
use crate::system::container::quirks::{read_ulimits, under, CgroupLayout};
use crate::system::container::rt_parent::Budget;
use crate::system::container::{Engine, EngineProbe, EngineState};

/// Every container finding for the tree under `root`, with what running
/// each engine's `version` found (`engines`) and the effective user id
/// `uid` of the process.
pub(super) fn findings(root: &Path, engines: &[EngineProbe], uid: u32) -> Vec<Finding> {
    let layout = CgroupLayout::read(root);
    vec![
        engine(engines),
        cgroups(&layout),
        limits(root),
        rt_group(root, &layout),
        privileges(uid),
    ]
}

/// `container-engine`: which engines answer `ENGINE version`.
fn engine(engines: &[EngineProbe]) -> Finding {
    const ID: &str = "container-engine";
    let found: Vec<String> = engines.iter().map(EngineProbe::describe).collect();
    let working = engines
        .iter()
        .find(|p| matches!(p.state, EngineState::Working(..)));
    match working {
        Some(p) => Finding::ok(
            ID,
            format!(
                "deployment container uses {}: {}",
                p.engine.name(),
                found.join("; ")
            ),
        ),
        None => Finding::new(
            ID,
            Severity::Info,
            format!(
                "no container engine works ({}): deployment container cannot run here",
                found.join("; ")
            ),
            &format!("apt-get install {}", Engine::Podman.package()),
        ),
    }
}

/// `container-cgroups`: the cgroup layout, and a controller split between
/// v1 and v2.
fn cgroups(layout: &CgroupLayout) -> Finding {
    const ID: &str = "container-cgroups";
    if let Some(split) = layout.split() {
        return Finding::new(ID, Severity::Warn, split.summary(), &split.fix());
    }
    match (&layout.v2, layout.v1.is_empty()) {
        (None, true) => Finding::new(
            ID,
            Severity::Warn,
            "no cgroup file system is mounted: no container can run",
            "mount -t cgroup2 none /sys/fs/cgroup",
        ),
        (Some(v2), true) => Finding::ok(
            ID,
            format!("cgroup v2 only ({}): containers run", v2.display()),
        ),
        (v2, false) => Finding::ok(
            ID,
            format!(
                "cgroup v1: every controller sits in a v1 hierarchy{}: containers run",
                v2.as_ref().map_or(String::new(), |p| format!(
                    " (the v2 mount {} holds none)",
                    p.display()
                ))
            ),
        ),
    }
}

/// `container-limits`: hard resource limits below what podman gives a
/// container, and the real-time limits that cannot be raised.
fn limits(root: &Path) -> Finding {
    const ID: &str = "container-limits";
    let u = read_ulimits(root, Engine::Podman);
    if u.notes.is_empty() {
        return Finding::ok(
            ID,
            "this process's hard resource limits let podman give a container its defaults, rtprio=99:99 and memlock=-1:-1",
        );
    }
    Finding::new(
        ID,
        Severity::Info,
        u.notes.join("; "),
        "raise the hard limits of the shell or service that starts jitterlab (as root: ulimit -H -n 1048576 -u 1048576 -r 99 -l unlimited; systemd: LimitNOFILE=, LimitNPROC=, LimitRTPRIO=, LimitMEMLOCK=), or grant it CAP_SYS_RESOURCE; until then jitterlab works around them per container",
    )
}

/// `container-rt-group`: RT group scheduling, and the budget the
/// containers' parent cgroup can get.
fn rt_group(root: &Path, layout: &CgroupLayout) -> Finding {
    const ID: &str = "container-rt-group";
    let Some(cpu) = layout.cpu_v1() else {
        return Finding::ok(
            ID,
            "no cgroup v1 cpu hierarchy, so no RT group scheduling: real-time tasks in a container are throttled as on the host",
        );
    };
    let dir = under(root, cpu);
    match Budget::read(&dir) {
        Ok(None) => Finding::ok(
            ID,
            format!(
                "no RT group scheduling ({} has no cpu.rt_runtime_us): real-time tasks in a container are throttled as on the host",
                cpu.display()
            ),
        ),
        Ok(Some(b)) => {
            let taken = match b.taken.as_slice() {
                [] => String::new(),
                t => {
                    let list: Vec<String> =
                        t.iter().map(|(g, s)| format!("{g} {s} µs")).collect();
                    format!(", less what {} hold", list.join(", "))
                }
            };
            Finding::new(
                ID,
                Severity::Info,
                format!(
                    "RT group scheduling ({}/cpu.rt_runtime_us): a new cgroup gets 0 µs of real time, so each container cell runs under a journaled parent cgroup given {} µs per {} µs (the root's {} µs{taken})",
                    cpu.display(),
                    b.runtime_us,
                    b.period_us,
                    b.root_runtime_us
                ),
                "",
            )
        }
        Err(why) => Finding::new(
            ID,
            Severity::Warn,
            format!("RT group scheduling: {why}"),
            "give the real-time runtime of the groups named back (echo 0 > GROUP/cpu.rt_runtime_us) or raise kernel.sched_rt_runtime_us",
        ),
    }
}

/// `container-privileges`: deployment container needs root.
fn privileges(uid: u32) -> Finding {
    const ID: &str = "container-privileges";
    if uid == 0 {
        return Finding::ok(
            ID,
            "root: jitterlab can make the containers' parent cgroup and grant them SYS_NICE and IPC_LOCK",
        );
    }
    Finding::new(
        ID,
        Severity::Warn,
        format!("not root (uid {uid}): deployment container needs root (a rootless engine cannot grant real-time scheduling beyond your own limits, nor make cgroups)"),
        "run jitterlab as root (sudo)",
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// A hybrid host's mountinfo: `cpu` and `memory` in v1, a v2 mount.
    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";
    const PROC_CGROUPS: &str = "#subsys_name\thierarchy\tnum_cgroups\tenabled\ncpu\t1\t1\t1\nmemory\t4\t7\t1\nhugetlb\t0\t1\t1\n";
    const LIMITS_HIGH: &str = "\
Limit                     Soft Limit           Hard Limit           Units     
Max processes             4194304              4194304              processes 
Max open files            1048576              1048576              files     
Max locked memory         unlimited            unlimited            bytes     
Max realtime priority     99                   99                   
";

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (rel, text) in files {
            let p = dir.path().join(rel);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(p, text).unwrap();
        }
        dir
    }

    fn podman(state: EngineState) -> Vec<EngineProbe> {
        vec![
            EngineProbe {
                engine: Engine::Podman,
                state,
            },
            EngineProbe {
                engine: Engine::Docker,
                state: EngineState::Missing,
            },
        ]
    }

    fn working() -> Vec<EngineProbe> {
        podman(EngineState::Working(
            "/usr/bin/podman".into(),
            "4.3.1".into(),
        ))
    }

    /// `(id, severity, summary, fix)` of every finding.
    fn found(
        root: &Path,
        engines: &[EngineProbe],
        uid: u32,
    ) -> Vec<(String, Severity, String, String)> {
        findings(root, engines, uid)
            .into_iter()
            .map(|f| (f.id.to_string(), f.severity, f.summary, f.fix))
            .collect()
    }

    #[test]
    fn a_ready_host_has_only_ok_and_the_budget_it_gives() {
        let root = tree(&[
            ("proc/self/mountinfo", MOUNTINFO),
            (
                "proc/cgroups",
                &PROC_CGROUPS.replace("hugetlb\t0", "hugetlb\t9"),
            ),
            ("sys/fs/cgroup/unified/cgroup.controllers", "\n"),
            ("proc/self/limits", LIMITS_HIGH),
            ("proc/self/status", "CapEff:\t000001fffeffffff\n"),
            ("sys/fs/cgroup/cpu/cpu.rt_runtime_us", "950000\n"),
            ("sys/fs/cgroup/cpu/cpu.rt_period_us", "1000000\n"),
        ]);
        let s = |x: &str| x.to_string();
        assert_eq!(
            found(root.path(), &working(), 0),
            [
                (s("container-engine"), Severity::Ok, s("deployment container uses podman: podman 4.3.1 (/usr/bin/podman) works; docker: not installed"), s("")),
                (s("container-cgroups"), Severity::Ok, s("cgroup v1: every controller sits in a v1 hierarchy (the v2 mount /sys/fs/cgroup/unified holds none): containers run"), s("")),
                (s("container-limits"), Severity::Ok, s("this process's hard resource limits let podman give a container its defaults, rtprio=99:99 and memlock=-1:-1"), s("")),
                (s("container-rt-group"), Severity::Info, s("RT group scheduling (/sys/fs/cgroup/cpu/cpu.rt_runtime_us): a new cgroup gets 0 µs of real time, so each container cell runs under a journaled parent cgroup given 950000 µs per 1000000 µs (the root's 950000 µs)"), s("")),
                (s("container-privileges"), Severity::Ok, s("root: jitterlab can make the containers' parent cgroup and grant them SYS_NICE and IPC_LOCK"), s("")),
            ]
        );
    }

    #[test]
    fn every_quirk_is_found_with_its_fix() {
        let root = tree(&[
            ("proc/self/mountinfo", MOUNTINFO),
            ("proc/cgroups", PROC_CGROUPS),
            ("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n"),
            (
                "proc/self/limits",
                &LIMITS_HIGH.replace(
                    "1048576              1048576",
                    "20000                20000  ",
                ),
            ),
            ("proc/self/status", "CapEff:\t000001fffeffffff\n"),
            ("sys/fs/cgroup/cpu/cpu.rt_runtime_us", "950000\n"),
            ("sys/fs/cgroup/cpu/cpu.rt_period_us", "1000000\n"),
            ("sys/fs/cgroup/cpu/plc/cpu.rt_runtime_us", "950000\n"),
            ("sys/fs/cgroup/cpu/plc/cpu.rt_period_us", "1000000\n"),
        ]);
        let f = findings(
            root.path(),
            &podman(EngineState::Broken(
                "/usr/bin/podman".into(),
                "Error: no".into(),
            )),
            1000,
        );
        let by = |id: &str| f.iter().find(|x| x.id == id).unwrap().clone();
        let engine = by("container-engine");
        assert_eq!(
            (engine.severity, engine.summary.as_str(), engine.fix.as_str()),
            (
                Severity::Info,
                "no container engine works (podman (/usr/bin/podman) does not answer `podman version`: Error: no; docker: not installed): deployment container cannot run here",
                "apt-get install podman"
            )
        );
        let cg = by("container-cgroups");
        assert_eq!(cg.severity, Severity::Warn);
        assert!(cg.summary.starts_with("the hugetlb controller sits in cgroup v2 (/sys/fs/cgroup/unified) while the others are v1"), "{}", cg.summary);
        assert_eq!(cg.fix, "mkdir -p /sys/fs/cgroup/hugetlb && mount -t cgroup -o hugetlb cgroup /sys/fs/cgroup/hugetlb");
        let lim = by("container-limits");
        assert_eq!(lim.severity, Severity::Info);
        assert_eq!(
            lim.summary,
            "the hard limits of this process (open files 20000) are below podman's default of 1048576 and it lacks CAP_SYS_RESOURCE to raise them, so podman could not start a container with its defaults: jitterlab passes --ulimit nofile=1024:1024 itself (a flag of the container, not a change to the host)"
        );
        let rt = by("container-rt-group");
        assert_eq!(rt.severity, Severity::Warn);
        assert!(
            rt.summary
                .starts_with("RT group scheduling: no real-time budget is left in "),
            "{}",
            rt.summary
        );
        assert!(
            rt.summary.contains("are held by plc (950000 µs)"),
            "{}",
            rt.summary
        );
        let p = by("container-privileges");
        assert_eq!(
            (p.severity, p.fix.as_str()),
            (Severity::Warn, "run jitterlab as root (sudo)")
        );
    }

    #[test]
    fn pure_v2_and_no_cgroups() {
        let v2 = tree(&[(
            "proc/self/mountinfo",
            "30 23 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n",
        )]);
        let f = findings(v2.path(), &working(), 0);
        assert_eq!(
            (f[1].severity, f[1].summary.as_str()),
            (
                Severity::Ok,
                "cgroup v2 only (/sys/fs/cgroup): containers run"
            )
        );
        assert_eq!(
            (f[3].severity, f[3].summary.as_str()),
            (Severity::Ok, "no cgroup v1 cpu hierarchy, so no RT group scheduling: real-time tasks in a container are throttled as on the host")
        );
        let none = tree(&[(
            "proc/self/mountinfo",
            "22 1 253:1 / / rw - ext4 /dev/vda rw\n",
        )]);
        let f = findings(none.path(), &working(), 0);
        assert_eq!(
            (f[1].severity, f[1].summary.as_str(), f[1].fix.as_str()),
            (
                Severity::Warn,
                "no cgroup file system is mounted: no container can run",
                "mount -t cgroup2 none /sys/fs/cgroup"
            )
        );
    }
}
