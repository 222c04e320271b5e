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
//! Every change to the machine is journaled first (design rule 4): the
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
//!
//! **Other pairs.** A probe kind that sends real traffic makes a pair of
//! its own: the `response` probe's UDP source, the `roundtrip` probe's I/O
//! simulator and controller, the `netcycle` probe's POWERLINK managing
//! node and controlled nodes. A [`PairKind`] (`jitterlab_core::netns`)
//! names a pair's namespaces, veth ends and /30, and [`NetnsPair`] makes
//! any kind the same way — journaled first, deleted on teardown and on
//! drop — with the flood's pair ([`FLOOD_PAIR`]) built by the same steps. A kind declares
//! its pair in its own core folder and names it in its descriptor
//! (`ProbeDescriptor::netns`); only the flood's pair, which is the bench's
//! network scenario and no kind's, is declared here. [`undo`] learns every
//! name it may delete from the flood's pair and the registry's descriptors
//! ([`pairs`]), so no code here names a kind. Why the registry and not the
//! journal: `jitterlab_core::netns`.
//!
//! | pair | namespaces | veth ends | addresses |
//! |---|---|---|---|
//! | [`FLOOD_PAIR`] | `jl<pid>tx`, `jl<pid>rx` | `jl<pid>a`, `jl<pid>b` | 198.18.0.1/30, 198.18.0.2/30 |
//! | `jitterlab_core::response::PAIR` | `jl<pid>ev`, `jl<pid>rs` | `jl<pid>e`, `jl<pid>r` | 198.18.0.5/30, 198.18.0.6/30 |
//! | `jitterlab_core::roundtrip::PAIR` | `jl<pid>io`, `jl<pid>pl` | `jl<pid>i`, `jl<pid>p` | 198.18.0.9/30, 198.18.0.10/30 |
//! | `jitterlab_core::netcycle::PAIR` | `jl<pid>mn`, `jl<pid>cn` | `jl<pid>m`, `jl<pid>c` | 198.18.0.13/30, 198.18.0.14/30 |
//!
//! The round trip's PubSub traffic goes to the multicast group 224.0.0.22
//! (or raw Ethernet to 01-00-5E-00-00-01) across its pair. No multicast
//! route is added: a publisher names its veth end with `IP_MULTICAST_IF` and
//! a subscriber joins the group on it (`net::pubsub`), which is all the
//! kernel needs, so the pair is made exactly like the others.
//!
//! The design rules cited here are in `docs/design.md`.

// The bench runner starts the network scenario through this module; until
// it is wired in, only tests call it.

use std::io::ErrorKind;
use std::net::Ipv4Addr;
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub use jitterlab_core::netns::{in_benchmark_range, PairKind};
use jitterlab_core::probe::ProbeKind;

use crate::error::bad;

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
/// How long a new pair may take to be operationally up.
const UP_WAIT: std::time::Duration = std::time::Duration::from_secs(3);
/// The refusal when not root.
const NEEDS_ROOT: &str = "the network scenario needs root (CAP_NET_ADMIN) to create network namespaces; run as root or drop the scenario";

/// The flood's pair: `jl<pid>tx` → `jl<pid>rx`.
pub const FLOOD_PAIR: PairKind = PairKind {
    ns_a: "tx",
    ns_b: "rx",
    veth_a: "a",
    veth_b: "b",
    ip_a: Ipv4Addr::new(198, 18, 0, 1),
    ip_b: RX_IP,
    prefix_len: 30,
    who: "the network scenario",
    needs_root: NEEDS_ROOT,
};

/// Every kind of pair jitterlab makes: the flood's, and the pair of every
/// kind whose descriptor names one (in [`ProbeKind::ALL`] order).
pub fn pairs() -> Vec<&'static PairKind> {
    std::iter::once(&FLOOD_PAIR)
        .chain(ProbeKind::ALL.iter().filter_map(|k| k.descriptor().netns))
        .collect()
}

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
    /// The flood pair's names for jitterlab process `pid` (tests).
    #[cfg(test)]
    fn for_pid(pid: u32) -> Names {
        Names::of(&FLOOD_PAIR, pid)
    }

    /// The names of a `kind` pair for jitterlab process `pid`. A `u32` has
    /// at most 10 digits and a suffix at most 2 characters, so the longest
    /// name is 14 characters: every name fits the kernel's limit whatever
    /// the pid (a test checks the largest).
    fn of(kind: &PairKind, pid: u32) -> Names {
        Names {
            tx: format!("jl{pid}{}", kind.ns_a),
            rx: format!("jl{pid}{}", kind.ns_b),
            veth_tx: format!("jl{pid}{}", kind.veth_a),
            veth_rx: format!("jl{pid}{}", kind.veth_b),
        }
    }
}

/// The flood's [`NetnsPair`] (`jl<pid>tx` → `jl<pid>rx`), ready for a
/// flood from tx to rx; its namespaces go with the pair.
#[derive(Debug)]
pub struct NetFlood {
    pair: NetnsPair,
    /// jitterlab's own executable, run inside the namespaces.
    exe: String,
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
        self.pair.netns_b()
    }

    /// The sender namespace.
    pub fn tx_netns(&self) -> &str {
        self.pair.netns_a()
    }

    #[cfg(test)]
    /// The veth end in the receiver namespace.
    pub fn rx_iface(&self) -> &str {
        &self.pair.names.veth_rx
    }

    /// The argument vector of the sink neighbour, which steers the rx
    /// end's receive work onto `rps_cpus` and counts what arrives:
    /// `ip netns exec RX <exe> __net-sink --iface jl<pid>b --rps-cpus LIST
    /// --port P`.
    pub fn sink_argv(&self, rps_cpus: &[usize]) -> Vec<String> {
        let list = jitterlab_core::units::CpuList(rps_cpus.iter().copied().collect());
        let p = &self.pair;
        [
            p.ip.as_str(),
            "netns",
            "exec",
            &p.names.rx,
            &self.exe,
            "__net-sink",
            "--iface",
            &p.names.veth_rx,
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
            self.pair.ip.as_str(),
            "netns",
            "exec",
            &self.pair.names.tx,
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
    pub fn teardown(self) -> Result<Vec<String>> {
        self.pair.teardown()
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
    Ok(NetFlood {
        pair: pair_with(ip, euid, pid, FLOOD_PAIR, before)?,
        exe: exe.to_string(),
    })
}

/// Refuses (as bad input) what would make a `kind` pair fail before any
/// change: not root, or no `ip`.
fn check_pair_environment(ip: &str, euid: u32, kind: &PairKind) -> Result<()> {
    if euid != 0 {
        return Err(bad(kind.needs_root));
    }
    check_ip(ip, kind.who)
}

/// Makes the namespaces `names` (journaled through `before` first, each
/// pushed onto `live` once made, so the owner's drop deletes it on error),
/// the veth pair between them, their addresses, and brings everything up.
fn build(
    ip: &str,
    n: &Names,
    kind: &PairKind,
    live: &mut Vec<String>,
    before: &mut dyn FnMut(&NetChange) -> Result<()>,
) -> Result<()> {
    for ns in [&n.tx, &n.rx] {
        before(&NetChange::Netns(ns.clone()))?;
        run_ip(ip, &["netns", "add", ns])?;
        live.push(ns.clone());
    }
    let (cidr_a, cidr_b) = (kind.cidr_a(), kind.cidr_b());
    let steps: [&[&str]; 7] = [
        &[
            "-n", &n.tx, "link", "add", &n.veth_tx, "type", "veth", "peer", "name", &n.veth_rx,
            "netns", &n.rx,
        ],
        &["-n", &n.tx, "addr", "add", &cidr_a, "dev", &n.veth_tx],
        &["-n", &n.rx, "addr", "add", &cidr_b, "dev", &n.veth_rx],
        &["-n", &n.tx, "link", "set", "lo", "up"],
        &["-n", &n.rx, "link", "set", "lo", "up"],
        &["-n", &n.tx, "link", "set", &n.veth_tx, "up"],
        &["-n", &n.rx, "link", "set", &n.veth_rx, "up"],
    ];
    for args in steps {
        run_ip(ip, args)?;
    }
    Ok(())
}

/// Two namespaces of one [`PairKind`] joined by a veth pair, addressed and
/// up; deleted by [`NetnsPair::teardown`] or, failing that, on drop.
#[derive(Debug)]
pub struct NetnsPair {
    kind: PairKind,
    names: Names,
    /// The `ip` program.
    ip: String,
    /// Namespaces that exist and are still to be deleted, in creation order.
    live: Vec<String>,
}

impl NetnsPair {
    /// Creates a `kind` pair named after this process. `before` is called
    /// before each namespace is created (an Err from it aborts); on any
    /// error, what was made is deleted again.
    ///
    /// Refused (as bad input, before anything changes) when not root or when
    /// `ip` is not installed.
    pub fn setup(
        kind: PairKind,
        before: &mut dyn FnMut(&NetChange) -> Result<()>,
    ) -> Result<NetnsPair> {
        let pair = pair_with(
            IP,
            jitterlab_sys::effective_uid(),
            std::process::id(),
            kind,
            before,
        )?;
        pair.wait_until_up();
        Ok(pair)
    }

    /// Waits (at most [`UP_WAIT`]) until both veth ends are operationally
    /// up. A veth end set up gets its carrier at once, but the kernel
    /// attaches its transmit queue only when its link watcher runs, up to a
    /// second later when pairs come and go quickly; until then every frame
    /// sent is dropped. Nothing is changed: this only reads.
    fn wait_until_up(&self) {
        let deadline = std::time::Instant::now() + UP_WAIT;
        let up = |ns: &str, dev: &str| {
            Command::new(&self.ip)
                .args(["-n", ns, "-o", "link", "show", "dev", dev])
                .output()
                .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains(" state UP "))
        };
        while std::time::Instant::now() < deadline {
            if up(&self.names.tx, &self.names.veth_tx) && up(&self.names.rx, &self.names.veth_rx) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// The first ("sending") namespace.
    pub fn netns_a(&self) -> &str {
        &self.names.tx
    }

    /// The second ("receiving", the probe's) namespace.
    pub fn netns_b(&self) -> &str {
        &self.names.rx
    }

    /// The veth end in the first namespace.
    pub fn veth_a(&self) -> &str {
        &self.names.veth_tx
    }

    /// The veth end in the second namespace.
    pub fn veth_b(&self) -> &str {
        &self.names.veth_rx
    }

    /// The address of the veth end in the first namespace.
    pub fn ip_a(&self) -> Ipv4Addr {
        self.kind.ip_a
    }

    /// The address of the veth end in the second namespace.
    pub fn ip_b(&self) -> Ipv4Addr {
        self.kind.ip_b
    }

    /// Deletes both namespaces; returns the names it deleted. Close the
    /// sockets in them first: a namespace lives on, unnamed, while anything
    /// refers to it.
    pub fn teardown(mut self) -> Result<Vec<String>> {
        let live = std::mem::take(&mut self.live);
        delete_all(&self.ip, live)
    }
}

impl Drop for NetnsPair {
    /// Deletes what [`NetnsPair::teardown`] did not (error and panic paths).
    fn drop(&mut self) {
        let live = std::mem::take(&mut self.live);
        let _ = delete_all(&self.ip, live);
    }
}

/// [`NetnsPair::setup`] with its environment given.
fn pair_with(
    ip: &str,
    euid: u32,
    pid: u32,
    kind: PairKind,
    before: &mut dyn FnMut(&NetChange) -> Result<()>,
) -> Result<NetnsPair> {
    check_pair_environment(ip, euid, &kind)?;
    let mut pair = NetnsPair {
        kind,
        names: Names::of(&kind, pid),
        ip: ip.to_string(),
        live: Vec::new(),
    };
    // On error `pair` is dropped, which deletes what was made.
    build(ip, &pair.names, &kind, &mut pair.live, before)?;
    Ok(pair)
}

/// Deletes a namespace a journal recorded, if it still exists (`jitterlab
/// restore` after a crash); returns whether it deleted it. Refuses any name
/// jitterlab would not have made (`jl<pid>` and the suffix of a namespace
/// of one of the [`pairs`]: `tx`, `rx`, `ev`, `rs`, `io`, `pl`, `mn`, `cn`).
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

/// True for the names [`Names::of`] makes for namespaces of any kind
/// [`pairs`] lists.
fn is_ours(name: &str) -> bool {
    jitterlab_core::netns::is_ours(name, pairs())
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
    check_kind_environment(&FLOOD_PAIR)
}

/// Refuses (as bad input), before anything starts, what would make
/// [`NetnsPair::setup`] of `kind` fail before any change: not root, or no
/// `ip`.
pub fn check_kind_environment(kind: &PairKind) -> Result<()> {
    check_pair_environment(IP, jitterlab_sys::effective_uid(), kind)
}

/// Refuses (as bad input) when `ip` cannot be started, naming `who` needs
/// it.
fn check_ip(ip: &str, who: &str) -> Result<()> {
    match Command::new(ip).arg("-V").output() {
        Ok(out) if out.status.success() => Ok(()),
        Ok(out) => bail!(
            "{ip} -V failed: {}",
            String::from_utf8_lossy(&out.stderr).trim_end()
        ),
        Err(e) if e.kind() == ErrorKind::NotFound => Err(bad(format!(
            "{who} needs `{ip}`, which is not installed; install package iproute2 (apt-get install iproute2)"
        ))),
        Err(e) => Err(e).with_context(|| format!("starting {ip}")),
    }
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
    use jitterlab_core::netcycle::PAIR as NETCYCLE_PAIR;
    use jitterlab_core::response::PAIR as RESPONSE_PAIR;
    use jitterlab_core::roundtrip::PAIR as ROUNDTRIP_PAIR;

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
    fn response_pair_names_and_addresses_stay_apart_from_the_flood() {
        assert_eq!(
            Names::of(&RESPONSE_PAIR, 77),
            Names {
                tx: "jl77ev".into(),
                rx: "jl77rs".into(),
                veth_tx: "jl77e".into(),
                veth_rx: "jl77r".into(),
            }
        );
        let longest = Names::of(&RESPONSE_PAIR, u32::MAX);
        for n in [longest.tx, longest.rx, longest.veth_tx, longest.veth_rx] {
            assert!(n.len() <= MAX_NAME, "{n}");
        }
        assert_eq!(
            [FLOOD_PAIR.cidr_a(), FLOOD_PAIR.cidr_b()],
            ["198.18.0.1/30", "198.18.0.2/30"]
        );
        assert_eq!(
            [RESPONSE_PAIR.cidr_a(), RESPONSE_PAIR.cidr_b()],
            ["198.18.0.5/30", "198.18.0.6/30"]
        );
        // Different /30 networks, both in the benchmarking range.
        let net = |ip: Ipv4Addr| u32::from(ip) & !0b11;
        assert_ne!(net(FLOOD_PAIR.ip_a), net(RESPONSE_PAIR.ip_a));
        for k in pairs() {
            assert_eq!(net(k.ip_a), net(k.ip_b));
            assert!(in_benchmark_range(k.ip_a) && in_benchmark_range(k.ip_b));
        }
    }

    #[test]
    fn roundtrip_pair_names_and_addresses_stay_apart_from_the_others() {
        assert_eq!(
            Names::of(&ROUNDTRIP_PAIR, 77),
            Names {
                tx: "jl77io".into(),
                rx: "jl77pl".into(),
                veth_tx: "jl77i".into(),
                veth_rx: "jl77p".into(),
            }
        );
        let longest = Names::of(&ROUNDTRIP_PAIR, u32::MAX);
        for n in [longest.tx, longest.rx, longest.veth_tx, longest.veth_rx] {
            assert!(n.len() <= MAX_NAME, "{n}");
        }
        assert_eq!(
            [ROUNDTRIP_PAIR.cidr_a(), ROUNDTRIP_PAIR.cidr_b()],
            ["198.18.0.9/30", "198.18.0.10/30"]
        );
        // Every pair its own /30 network, and no suffix shared by two of them.
        let net = |ip: Ipv4Addr| u32::from(ip) & !0b11;
        let mut nets: Vec<u32> = pairs().iter().map(|k| net(k.ip_a)).collect();
        nets.sort();
        nets.dedup();
        assert_eq!(nets.len(), pairs().len());
        let mut suffixes: Vec<&str> = pairs()
            .iter()
            .flat_map(|k| [k.ns_a, k.ns_b, k.veth_a, k.veth_b])
            .collect();
        suffixes.sort();
        suffixes.dedup();
        assert_eq!(suffixes.len(), 4 * pairs().len());
        let e = pair_with("ip", 1000, 42, ROUNDTRIP_PAIR, &mut |_| Ok(())).unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "the roundtrip probe needs root (CAP_NET_ADMIN) to create the network namespaces of its I/O simulator and controller; run as root, or run one role per machine with --role io|controller --interface IF"
        );
    }

    #[test]
    fn netcycle_pair_names_and_addresses() {
        let n = Names::of(&NETCYCLE_PAIR, u32::MAX);
        assert_eq!(
            [n.tx.as_str(), &n.rx, &n.veth_tx, &n.veth_rx],
            [
                "jl4294967295mn",
                "jl4294967295cn",
                "jl4294967295m",
                "jl4294967295c"
            ]
        );
        assert_eq!(
            [NETCYCLE_PAIR.cidr_a(), NETCYCLE_PAIR.cidr_b()],
            ["198.18.0.13/30", "198.18.0.14/30"]
        );
        assert!(is_ours("jl77mn") && is_ours("jl77cn") && !is_ours("jl77m"));
        let e = pair_with("ip", 1000, 42, NETCYCLE_PAIR, &mut |_| Ok(())).unwrap_err();
        assert!(e.to_string().starts_with("the netcycle probe needs root"));
    }

    #[test]
    fn a_response_pair_is_refused_in_its_own_words() {
        let mut calls = 0;
        let e = pair_with("ip", 1000, 42, RESPONSE_PAIR, &mut |_| {
            calls += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "the response probe's udp source needs root (CAP_NET_ADMIN) to create network namespaces; run as root or use --source eventfd"
        );
        let e = pair_with("/nonexistent/ip", 0, 42, RESPONSE_PAIR, &mut |_| {
            calls += 1;
            Ok(())
        })
        .unwrap_err();
        assert!(e.downcast_ref::<BadInput>().is_some());
        assert_eq!(
            e.to_string(),
            "the response probe's udp source needs `/nonexistent/ip`, which is not installed; install package iproute2 (apt-get install iproute2)"
        );
        assert_eq!(calls, 0);
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
            pair: NetnsPair {
                kind: FLOOD_PAIR,
                names: Names::for_pid(77),
                ip: "ip".into(),
                live: Vec::new(),
            },
            exe: "/usr/bin/jitterlab".into(),
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
    fn the_pairs_are_the_flood_s_and_those_the_descriptors_name() {
        assert_eq!(
            pairs(),
            [&FLOOD_PAIR, &RESPONSE_PAIR, &ROUNDTRIP_PAIR, &NETCYCLE_PAIR]
        );
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
        assert!(is_ours("jl12ev"));
        assert!(is_ours("jl12rs"));
        assert!(is_ours("jl12io"));
        assert!(is_ours("jl12pl"));
        assert!(is_ours("jl12mn"));
        assert!(is_ours("jl12cn"));
        for name in [
            "jl12er", "jlev", "jl12e", "jl1x2rs", "jl12i", "jl12p", "jlio",
        ] {
            assert!(!is_ours(name), "{name}");
        }
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
    fn a_response_pair_lives_beside_a_flood_pair_and_goes_on_teardown_or_drop() {
        if !can_make_namespaces() {
            return;
        }
        let pid = std::process::id();
        let (ev, rs) = (format!("jl{pid}ev"), format!("jl{pid}rs"));
        let (e, r) = (format!("jl{pid}e"), format!("jl{pid}r"));
        let flood = NetFlood::setup(&mut |_| Ok(())).unwrap();
        let mut seen = Vec::new();
        let pair = NetnsPair::setup(RESPONSE_PAIR, &mut |c| {
            seen.push(c.clone());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [NetChange::Netns(ev.clone()), NetChange::Netns(rs.clone())]
        );
        assert_eq!((pair.netns_a(), pair.netns_b()), (ev.as_str(), rs.as_str()));
        assert_eq!(
            (pair.ip_a(), pair.ip_b()),
            (Ipv4Addr::new(198, 18, 0, 5), Ipv4Addr::new(198, 18, 0, 6))
        );
        let show = |ns: &str, dev: &str| {
            ip_output(IP, &["-n", ns, "-o", "-4", "addr", "show", "dev", dev]).unwrap()
        };
        assert!(show(&ev, &e).contains(" inet 198.18.0.5/30 "));
        assert!(show(&rs, &r).contains(" inet 198.18.0.6/30 "));
        let link = ip_output(IP, &["-n", &rs, "link", "show", "dev", &r]).unwrap();
        assert!(link.contains(",UP,LOWER_UP>"), "{link}");
        assert_eq!(ours_now().len(), 2, "the flood pair is untouched");
        assert_eq!(pair.teardown().unwrap(), [ev.clone(), rs.clone()]);
        let left = namespaces(IP).unwrap();
        assert!(!left.contains(&ev) && !left.contains(&rs), "{left:?}");
        assert_eq!(ours_now().len(), 2);
        drop(NetnsPair::setup(RESPONSE_PAIR, &mut |_| Ok(())).unwrap());
        let left = namespaces(IP).unwrap();
        assert!(!left.contains(&ev) && !left.contains(&rs), "{left:?}");
        flood.teardown().unwrap();
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
