//! Receive Packet Steering inside a network namespace: each veth end's
//! receive work on its own side's CPU.
//!
//! A veth pair hands a frame to the peer's backlog on the *sending* CPU,
//! and the `NET_RX` softirq that processes it runs there too — so without
//! steering, the work of receiving the controlled nodes' answers would be
//! charged to whichever CPU sent them, and the managing node's CPU load
//! (`system::load`) would carry the emulated nodes' work, or the other way
//! round. RPS (`/sys/class/net/IFACE/queues/rx-0/rps_cpus`) moves that work
//! to the CPUs the mask names: the managing node's end to the managing
//! node's CPU, the nodes' end to theirs.
//!
//! Sysfs shows a namespace's devices only when it is mounted inside that
//! namespace, which `ip netns exec` does for the process it starts. So
//! [`steer_rps_in`] starts jitterlab itself there, with an argument vector
//! and no shell (design rule 6):
//!
//! ```text
//! ip netns exec NS <jitterlab> __rps --iface IFACE --rps-cpus LIST
//! ```
//!
//! and the hidden subcommand ([`rps_main`]) writes the mask through the
//! flood sink's own steps (`flood::steer_rps_line`: the kernel's bitmap
//! format, the file read before and after) and prints one line, `rps_cpus
//! IFACE OLD -> NEW`, which `steer_rps_in` returns. `NEW` is the kernel's
//! reading after the write: it leaves out CPUs it will not steer to
//! (isolated ones), so the caller sees what it really got.
//!
//! Nothing is journaled: the mask belongs to a veth end inside one of
//! jitterlab's namespaces, and is deleted with it — the namespace itself is
//! what the journal holds (`hosts::NetChange::Netns`), so `jitterlab
//! restore` after a crash removes the setting along with the end.
//!
//! The design rules cited here are in `docs/design.md`.

use std::io::{ErrorKind, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};

use anyhow::{bail, Context, Result};
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::net::flood::steer_rps_line;

/// The program that enters the namespace.
const IP: &str = "ip";

/// What `jitterlab __rps` is asked for: steer `iface`'s receive queue 0
/// onto `rps_cpus` in the namespace it runs in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RpsArgs {
    /// Interface whose receive queue 0 is steered.
    pub iface: String,
    /// CPUs that do the interface's receive work.
    pub rps_cpus: CpuList,
}

/// Runs `jitterlab __rps`: writes the mask in the namespace it runs in and
/// prints `rps_cpus IFACE OLD -> NEW`.
pub fn rps_main(a: &RpsArgs) -> Result<ExitCode> {
    let cpus: Vec<usize> = a.rps_cpus.iter().collect();
    check_cpus(&cpus)?;
    // Inside `ip netns exec`, / is the namespace's own view of /sys.
    let line = steer_rps_line(Path::new("/"), &a.iface, &cpus)?;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{line}")?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Steers `iface`'s receive work onto `cpus` inside network namespace
/// `netns` and returns the line `rps_cpus IFACE OLD -> NEW`. Runs this
/// executable's `__rps` through `ip netns exec`; needs root (the
/// namespace's sysfs is written).
pub fn steer_rps_in(netns: &str, iface: &str, cpus: &[usize]) -> Result<String> {
    let exe = std::env::current_exe().context("finding jitterlab's own executable")?;
    let Some(exe) = exe.to_str() else {
        bail!(
            "jitterlab's executable path {} is not UTF-8; install it under a plain path",
            exe.display()
        );
    };
    steer_rps_in_with(IP, exe, netns, iface, cpus)
}

/// [`steer_rps_in`] with the `ip` program and jitterlab's executable
/// given (tests run the built binary from another one).
pub fn steer_rps_in_with(
    ip: &str,
    exe: &str,
    netns: &str,
    iface: &str,
    cpus: &[usize],
) -> Result<String> {
    check_cpus(cpus)?;
    let argv = rps_argv(ip, exe, netns, iface, cpus);
    let shown = argv.join(" ");
    let out = match Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
    {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(bad(format!(
                "steering receive work into a namespace needs `{ip}`, which is not installed; install package iproute2 (apt-get install iproute2)"
            )))
        }
        Err(e) => return Err(e).with_context(|| format!("starting {shown}")),
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().rev().find(|l| l.starts_with("rps_cpus "));
    match line {
        Some(line) if out.status.success() => Ok(line.to_string()),
        _ => bail!(
            "`{shown}` failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        ),
    }
}

/// The argument vector that steers `iface` in `netns`:
/// `ip netns exec NS <exe> __rps --iface IFACE --rps-cpus LIST`.
pub fn rps_argv(ip: &str, exe: &str, netns: &str, iface: &str, cpus: &[usize]) -> Vec<String> {
    let list = CpuList(cpus.iter().copied().collect()).to_string();
    [
        ip,
        "netns",
        "exec",
        netns,
        exe,
        "__rps",
        "--iface",
        iface,
        "--rps-cpus",
        &list,
    ]
    .map(String::from)
    .to_vec()
}

/// Refuses (as bad input) a CPU list that names no CPU: a mask of 0 would
/// switch steering off, not steer.
fn check_cpus(cpus: &[usize]) -> Result<()> {
    if cpus.is_empty() {
        return Err(bad(
            "--rps-cpus names no CPU; name the CPUs that should do the receive work, e.g. 1",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;

    #[test]
    fn argv_enters_the_namespace_without_a_shell() {
        assert_eq!(
            rps_argv("ip", "/usr/bin/jitterlab", "jl42mn", "jl42m", &[1, 0, 2]),
            [
                "ip",
                "netns",
                "exec",
                "jl42mn",
                "/usr/bin/jitterlab",
                "__rps",
                "--iface",
                "jl42m",
                "--rps-cpus",
                "0-2"
            ]
        );
        assert_eq!(rps_argv("ip", "j", "n", "i", &[3, 1])[9], "1,3");
    }

    #[test]
    fn no_cpu_is_bad_input_before_anything_runs() {
        let e = steer_rps_in_with("/nonexistent/ip", "j", "n", "i", &[]).unwrap_err();
        assert_eq!(
            e.downcast_ref::<BadInput>().unwrap().0,
            "--rps-cpus names no CPU; name the CPUs that should do the receive work, e.g. 1"
        );
        let e = rps_main(&RpsArgs {
            iface: "jl1b".into(),
            rps_cpus: CpuList::default(),
        })
        .unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some(), "{e}");
    }

    #[test]
    fn a_missing_ip_names_iproute2() {
        let e = steer_rps_in_with("/nonexistent/ip", "j", "n", "i", &[1]).unwrap_err();
        assert_eq!(
            e.downcast_ref::<BadInput>().unwrap().0,
            "steering receive work into a namespace needs `/nonexistent/ip`, which is not installed; install package iproute2 (apt-get install iproute2)"
        );
    }

    #[test]
    fn a_failing_helper_is_quoted_with_its_stderr() {
        // `false` stands in for `ip`: it prints nothing and fails.
        let e = steer_rps_in_with("false", "j", "n", "i", &[1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "`false netns exec n j __rps --iface i --rps-cpus 1` failed (exit status: 1): "
        );
    }

    #[test]
    fn a_helper_that_prints_no_rps_line_fails_even_with_status_0() {
        // `echo` stands in for `ip`: it succeeds and prints its arguments.
        let line = steer_rps_in_with("echo", "j", "rps_cpus", "i", &[1]);
        // `echo netns exec …` prints a line starting with `netns`: no
        // `rps_cpus` line, so it is a failure even with status 0.
        assert_eq!(
            line.unwrap_err().to_string(),
            "`echo netns exec rps_cpus j __rps --iface i --rps-cpus 1` failed (exit status: 0): "
        );
    }
}
