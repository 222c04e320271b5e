//! Namespace test hosts: two network namespaces joined by a veth pair, the
//! only network the flood neighbour ever sends on.
//!
//! [`NetFlood::setup`] creates, through `ip` (iproute2) with argument
//! vectors:
//!
//! | what | name | address |
//! |---|---|---|
//! | sender namespace | `jl<pid>tx` | |
//! | receiver ("the probe's") namespace | `jl<pid>rx` | |
//! | veth end in tx | `jl<pid>a` | 198.18.0.1/30 |
//! | veth end in rx | `jl<pid>b` | 198.18.0.2/30 |
//!
//! with both veth ends and both namespaces' `lo` up. The addresses come from
//! the benchmarking range 198.18.0.0/15 (RFC 2544), which no real network
//! routes; nothing at all is added to the host's own namespace. Names carry
//! jitterlab's pid so two runs never collide, and stay within the kernel's
//! 15-character limit for interface names (`jl` + at most 7 digits of a
//! Linux pid + 2).
//!
//! Every change to the machine is journaled first (DESIGN rule 4): the
//! caller's callback sees each [`NetChange`] *before* it is made, and only a
//! namespace is ever journaled — deleting a namespace removes its veth end,
//! its addresses and its RPS setting with it (the veth pair dies with
//! either end). [`undo`] deletes a journaled namespace after a crash;
//! [`NetFlood::teardown`] deletes both at the end, and dropping a
//! [`NetFlood`] without tearing it down deletes them too, so an error path
//! leaves nothing behind.
//!
//! The neighbour processes themselves ([`NetFlood::sink_argv`],
//! [`NetFlood::flood_argv`]) are started by the caller's neighbour
//! machinery, pinned and in their own process group, through `ip netns
//! exec`, which enters the namespace and gives the process the namespace's
//! own `/sys`.

// The bench runner starts the network scenario through this module; until
// it is wired in, only tests call it.

use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::error::bad;

/// Address of the tx namespace's veth end.
pub const TX_ADDR: &str = "198.18.0.1/30";
/// Address of the rx namespace's veth end.
pub const RX_ADDR: &str = "198.18.0.2/30";
/// Where the flood is sent: the rx end, without its prefix length.
pub const RX_IP: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// UDP port of the sink (the "discard" service: nothing is answered).
pub const PORT: u16 = 9;
/// Datagram payload size of the flood, bytes (one full Ethernet frame).
pub const FLOOD_SIZE: u16 = 1400;
/// Longest interface name the kernel accepts (IFNAMSIZ - 1).
#[cfg(test)]
const MAX_NAME: usize = 15;

/// The program that makes every change.
const IP: &str = "ip";
/// The refusal when not root.
const NEEDS_ROOT: &str = "the network scenario needs root (CAP_NET_ADMIN) to create network namespaces; run as root or drop the scenario";

/// One change [`NetFlood::setup`] makes to the machine, journaled before it
/// is made.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum NetChange {
    /// A network namespace of this name was created; deleting it undoes
    /// everything made inside it.
    Netns(String),
}

/// The names of one pair of test hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Names {
    tx: String,
    rx: String,
    veth_tx: String,
    veth_rx: String,
}

impl Names {
    /// The names for jitterlab process `pid`. A `u32` has at most 10
    /// digits, so the longest name is 14 characters: every name fits the
    /// kernel's limit whatever the pid (a test checks the largest).
    fn for_pid(pid: u32) -> Names {
        Names {
            tx: format!("jl{pid}tx"),
            rx: format!("jl{pid}rx"),
            veth_tx: format!("jl{pid}a"),
            veth_rx: format!("jl{pid}b"),
        }
    }
}

/// Two namespaces joined by a veth pair, ready for a flood from tx to rx.
#[derive(Debug)]
pub struct NetFlood {
    names: Names,
    /// jitterlab's own executable, run inside the namespaces.
    exe: String,
    /// The `ip` program.
    ip: String,
    /// Namespaces that exist and are still to be deleted, in creation order.
    live: Vec<String>,
}

impl NetFlood {
    /// Creates the namespaces and the veth pair. `before` is called before
    /// each namespace is created (an Err from it aborts); on any error, what
    /// was made is deleted again.
    ///
    /// Refused (as bad input, before anything changes) when not root or when
    /// `ip` is not installed.
    pub fn setup(before: &mut dyn FnMut(&NetChange) -> Result<()>) -> Result<NetFlood> {
        let exe = std::env::current_exe().context("finding jitterlab's own executable")?;
        let Some(exe) = exe.to_str() else {
            bail!(
                "jitterlab's executable path {} is not UTF-8; install it under a plain path",
                exe.display()
            );
        };
        setup_with(
            IP,
            jitterlab_sys::effective_uid(),
            std::process::id(),
            exe,
            before,
        )
    }

    /// The receiver ("the probe's") namespace.
    pub fn rx_netns(&self) -> &str {
        &self.names.rx
    }

    /// The sender namespace.
    pub fn tx_netns(&self) -> &str {
        &self.names.tx
    }

    #[cfg(test)]
    /// The veth end in the receiver namespace.
    pub fn rx_iface(&self) -> &str {
        &self.names.veth_rx
    }

    /// The argument vector of the sink neighbour, which steers the rx
    /// end's receive work onto `rps_cpus` and counts what arrives:
    /// `ip netns exec RX <exe> __net-sink --iface jl<pid>b --rps-cpus LIST
    /// --port P`.
    pub fn sink_argv(&self, rps_cpus: &[usize]) -> Vec<String> {
        let list = jitterlab_core::units::CpuList(rps_cpus.iter().copied().collect());
        [
            self.ip.as_str(),
            "netns",
            "exec",
            &self.names.rx,
            &self.exe,
            "__net-sink",
            "--iface",
            &self.names.veth_rx,
            "--rps-cpus",
            &list.to_string(),
            "--port",
            &PORT.to_string(),
        ]
        .map(String::from)
        .to_vec()
    }

    /// The argument vector of the flood neighbour:
    /// `ip netns exec TX <exe> __net-flood --dst 198.18.0.2 --port P --size
    /// 1400`.
    pub fn flood_argv(&self) -> Vec<String> {
        [
            self.ip.as_str(),
            "netns",
            "exec",
            &self.names.tx,
            &self.exe,
            "__net-flood",
            "--dst",
            &RX_IP.to_string(),
            "--port",
            &PORT.to_string(),
            "--size",
            &FLOOD_SIZE.to_string(),
        ]
        .map(String::from)
        .to_vec()
    }

    /// Deletes both namespaces; returns the names it deleted. Stop the
    /// neighbours first: a namespace lives on, unnamed, until the last
    /// process inside it exits.
    pub fn teardown(mut self) -> Result<Vec<String>> {
        let live = std::mem::take(&mut self.live);
        delete_all(&self.ip, live)
    }
}

impl Drop for NetFlood {
    /// Deletes what [`NetFlood::teardown`] did not (error and panic paths).
    fn drop(&mut self) {
        let live = std::mem::take(&mut self.live);
        let _ = delete_all(&self.ip, live);
    }
}

/// [`NetFlood::setup`] with its environment given: the `ip` program, the
/// effective uid, the pid that names everything, and the executable.
fn setup_with(
    ip: &str,
    euid: u32,
    pid: u32,
    exe: &str,
    before: &mut dyn FnMut(&NetChange) -> Result<()>,
) -> Result<NetFlood> {
    if euid != 0 {
        return Err(bad(NEEDS_ROOT));
    }
    check_ip(ip)?;
    let names = Names::for_pid(pid);
    let mut flood = NetFlood {
        names,
        exe: exe.to_string(),
        ip: ip.to_string(),
        live: Vec::new(),
    };
    // On error `flood` is dropped, which deletes what was made.
    for ns in [flood.names.tx.clone(), flood.names.rx.clone()] {
        before(&NetChange::Netns(ns.clone()))?;
        run_ip(ip, &["netns", "add", &ns])?;
        flood.live.push(ns);
    }
    let n = &flood.names;
    let steps: [&[&str]; 7] = [
        &[
            "-n", &n.tx, "link", "add", &n.veth_tx, "type", "veth", "peer", "name", &n.veth_rx,
            "netns", &n.rx,
        ],
        &["-n", &n.tx, "addr", "add", TX_ADDR, "dev", &n.veth_tx],
        &["-n", &n.rx, "addr", "add", RX_ADDR, "dev", &n.veth_rx],
        &["-n", &n.tx, "link", "set", "lo", "up"],
        &["-n", &n.rx, "link", "set", "lo", "up"],
        &["-n", &n.tx, "link", "set", &n.veth_tx, "up"],
        &["-n", &n.rx, "link", "set", &n.veth_rx, "up"],
    ];
    for args in steps {
        run_ip(ip, args)?;
    }
    Ok(flood)
}

/// Deletes a namespace a journal recorded, if it still exists (`jitterlab
/// restore` after a crash); returns whether it deleted it. Refuses any name
/// jitterlab would not have made (`jl<pid>tx`, `jl<pid>rx`).
pub fn undo(change: &NetChange) -> Result<bool> {
    let NetChange::Netns(name) = change;
    if !is_ours(name) {
        bail!("the journal names network namespace {name:?}, which jitterlab does not create; delete it by hand if it should go (ip netns del NAME)");
    }
    if !namespaces(IP)?.iter().any(|n| n == name) {
        return Ok(false);
    }
    run_ip(IP, &["netns", "del", name])?;
    Ok(true)
}

/// The named network namespaces (`ip netns list`, first word of each line).
pub fn namespaces(ip: &str) -> Result<Vec<String>> {
    let out = ip_output(ip, &["netns", "list"])?;
    Ok(out
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(String::from)
        .collect())
}

/// True for the names [`Names::for_pid`] makes for namespaces.
fn is_ours(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("jl") else {
        return false;
    };
    let digits = rest
        .strip_suffix("tx")
        .or_else(|| rest.strip_suffix("rx"))
        .unwrap_or("");
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// Deletes `names` (in the order given), trying every one; the names
/// deleted, or an error naming each failure.
fn delete_all(ip: &str, names: Vec<String>) -> Result<Vec<String>> {
    let mut deleted = Vec::new();
    let mut failed = Vec::new();
    for ns in names {
        match run_ip(ip, &["netns", "del", &ns]) {
            Ok(()) => deleted.push(ns),
            Err(e) => failed.push(format!("{e:#}")),
        }
    }
    if failed.is_empty() {
        Ok(deleted)
    } else {
        bail!(
            "could not delete every test namespace: {}",
            failed.join("; ")
        )
    }
}

/// Refuses (as bad input), before a bench starts, what would make
/// [`NetFlood::setup`] fail before any change: not root, or no `ip`.
pub fn check_environment() -> Result<()> {
    if jitterlab_sys::effective_uid() != 0 {
        return Err(bad(NEEDS_ROOT));
    }
    check_ip(IP)
}

/// Refuses (as bad input) when `ip` cannot be started.
fn check_ip(ip: &str) -> Result<()> {
    ip_output(ip, &["-V"]).map(|_| ())
}

/// Runs `ip ARGS`, failing with its stderr.
fn run_ip(ip: &str, args: &[&str]) -> Result<()> {
    ip_output(ip, args).map(|_| ())
}

/// Runs `ip ARGS` and returns its stdout; a missing program is bad input
/// naming iproute2, a failure names the command and quotes ip's stderr.
fn ip_output(ip: &str, args: &[&str]) -> Result<String> {
    let out = match Command::new(ip).args(args).output() {
        Ok(out) => out,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(bad(format!(
                "the network scenario needs `{ip}`, which is not installed; install package iproute2 (apt-get install iproute2)"
            )))
        }
        Err(e) => return Err(e).with_context(|| format!("starting {ip}")),
    };
    if !out.status.success() {
        bail!(
            "{ip} {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::BadInput;

    #[test]
    fn names_carry_the_pid_and_fit_the_kernel_limit() {
        assert_eq!(
            Names::for_pid(4_194_304),
            Names {
                tx: "jl4194304tx".into(),
                rx: "jl4194304rx".into(),
                veth_tx: "jl4194304a".into(),
                veth_rx: "jl4194304b".into(),
            }
        );
        let longest = Names::for_pid(u32::MAX);
        for n in [longest.tx, longest.rx, longest.veth_tx, longest.veth_rx] {
            assert!(n.len() <= MAX_NAME, "{n}");
        }
    }

    #[test]
    fn refuses_without_root_before_any_change() {
        let mut calls = 0;
        let e = setup_with("ip", 1000, 42, "/x/jitterlab", &mut |_| {
            calls += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(e.to_string(), NEEDS_ROOT);
        assert_eq!(calls, 0);
    }

    #[test]
    fn missing_ip_names_iproute2() {
        let mut calls = 0;
        let e = setup_with("/nonexistent/ip", 0, 42, "/x/jitterlab", &mut |_| {
            calls += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "the network scenario needs `/nonexistent/ip`, which is not installed; install package iproute2 (apt-get install iproute2)"
        );
        assert_eq!(calls, 0);
    }

    #[test]
    fn argv_of_both_neighbours() {
        let flood = NetFlood {
            names: Names::for_pid(77),
            exe: "/usr/bin/jitterlab".into(),
            ip: "ip".into(),
            live: Vec::new(),
        };
        assert_eq!(
            flood.sink_argv(&[3, 1, 2]),
            [
                "ip",
                "netns",
                "exec",
                "jl77rx",
                "/usr/bin/jitterlab",
                "__net-sink",
                "--iface",
                "jl77b",
                "--rps-cpus",
                "1-3",
                "--port",
                "9"
            ]
        );
        assert_eq!(
            flood.flood_argv(),
            [
                "ip",
                "netns",
                "exec",
                "jl77tx",
                "/usr/bin/jitterlab",
                "__net-flood",
                "--dst",
                "198.18.0.2",
                "--port",
                "9",
                "--size",
                "1400"
            ]
        );
        assert_eq!(flood.rx_netns(), "jl77rx");
        assert_eq!(flood.tx_netns(), "jl77tx");
        assert_eq!(flood.rx_iface(), "jl77b");
    }

    #[test]
    fn undo_refuses_names_jitterlab_never_makes() {
        for name in ["default", "jltx", "jl12", "jl12ab", "xjl12tx", "jl1a2rx"] {
            assert!(!is_ours(name), "{name}");
            assert_eq!(
                undo(&NetChange::Netns(name.into())).unwrap_err().to_string(),
                format!("the journal names network namespace {name:?}, which jitterlab does not create; delete it by hand if it should go (ip netns del NAME)")
            );
        }
        assert!(is_ours("jl12tx"));
        assert!(is_ours("jl4194304rx"));
    }

    /// True when this process may create namespaces with `ip`; otherwise
    /// says why the test is skipped.
    fn can_make_namespaces() -> bool {
        if jitterlab_sys::effective_uid() != 0 {
            eprintln!("skipping: creating network namespaces needs root");
            return false;
        }
        if Command::new(IP).arg("-V").output().is_err() {
            eprintln!("skipping: `ip` is not installed (package iproute2)");
            return false;
        }
        true
    }

    /// This process's namespaces among the named ones, sorted.
    fn ours_now() -> Vec<String> {
        let pid = std::process::id();
        namespaces(IP)
            .unwrap()
            .into_iter()
            .filter(|n| *n == format!("jl{pid}tx") || *n == format!("jl{pid}rx"))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    }

    #[test]
    #[serial_test::serial(netns)]
    fn setup_journals_first_builds_the_pair_and_teardown_removes_it() {
        if !can_make_namespaces() {
            return;
        }
        let pid = std::process::id();
        let (tx, rx) = (format!("jl{pid}tx"), format!("jl{pid}rx"));
        let (a, b) = (format!("jl{pid}a"), format!("jl{pid}b"));
        let mut seen = Vec::new();
        let flood = NetFlood::setup(&mut |c| {
            let NetChange::Netns(name) = c;
            assert!(
                !namespaces(IP).unwrap().contains(name),
                "{name} exists before it is journaled"
            );
            seen.push(c.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [NetChange::Netns(tx.clone()), NetChange::Netns(rx.clone())]
        );
        assert_eq!(ours_now(), [rx.clone(), tx.clone()]);
        let show = |ns: &str, what: &[&str]| {
            let mut args = vec!["-n", ns, "-o"];
            args.extend_from_slice(what);
            ip_output(IP, &args).unwrap()
        };
        assert!(show(&tx, &["-4", "addr", "show", "dev", &a]).contains(" inet 198.18.0.1/30 "));
        assert!(show(&rx, &["-4", "addr", "show", "dev", &b]).contains(" inet 198.18.0.2/30 "));
        for (ns, dev) in [
            (&tx, &a),
            (&rx, &b),
            (&tx, &"lo".to_string()),
            (&rx, &"lo".to_string()),
        ] {
            let link = show(ns, &["link", "show", "dev", dev]);
            assert!(link.contains(",UP,LOWER_UP>"), "{ns} {dev}: {link}");
        }
        // Nothing in the host's own namespace.
        let host = ip_output(IP, &["-o", "link", "show"]).unwrap();
        assert!(!host.contains(&format!("jl{pid}")), "{host}");
        assert_eq!(flood.teardown().unwrap(), [tx, rx]);
        assert!(ours_now().is_empty());
    }

    #[test]
    #[serial_test::serial(netns)]
    fn a_journal_error_aborts_and_removes_what_was_made() {
        if !can_make_namespaces() {
            return;
        }
        let mut calls = 0;
        let e = NetFlood::setup(&mut |_| {
            calls += 1;
            if calls == 2 {
                bail!("the journal is full");
            }
            Ok(())
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "the journal is full");
        assert_eq!(calls, 2);
        assert!(ours_now().is_empty());
    }

    #[test]
    #[serial_test::serial(netns)]
    fn a_failed_step_removes_only_what_setup_made() {
        if !can_make_namespaces() {
            return;
        }
        let pid = std::process::id();
        let rx = format!("jl{pid}rx");
        run_ip(IP, &["netns", "add", &rx]).unwrap();
        let e = NetFlood::setup(&mut |_| Ok(())).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("ip netns add {rx} failed: Cannot create namespace file \"/run/netns/{rx}\": File exists")
        );
        assert_eq!(ours_now(), std::slice::from_ref(&rx));
        assert!(undo(&NetChange::Netns(rx.clone())).unwrap());
        assert!(!undo(&NetChange::Netns(rx)).unwrap());
        assert!(ours_now().is_empty());
    }

    #[test]
    #[serial_test::serial(netns)]
    fn dropping_without_teardown_removes_the_namespaces() {
        if !can_make_namespaces() {
            return;
        }
        let flood = NetFlood::setup(&mut |_| Ok(())).unwrap();
        assert_eq!(ours_now().len(), 2);
        drop(flood);
        assert!(ours_now().is_empty());
    }
}
