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
