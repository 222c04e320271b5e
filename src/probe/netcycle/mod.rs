//! The `netcycle` probe: [Baumgartner POWERLINK]'s cyclic real-time Ethernet master, a
//! POWERLINK managing node (MN) polling N controlled nodes (CNs) with real
//! frames (`jitterlab_core::powerlink`), its "held" verdict and its
//! per-cycle timing.
//!
//! **Both roles here** (`--role both`, the default): the MN runs in
//! namespace `jl<pid>mn`, the emulated CNs in `jl<pid>cn`, joined by a
//! veth pair (`jitterlab_core::netcycle::PAIR`, made by `net::hosts`, journaled first, deleted on
//! teardown and on drop). The MN is the measuring thread (the runner
//! pinned it to the probe CPU and made it SCHED_FIFO, [`mn`]); the CN
//! emulator ([`cn`]) is a helper thread on `--cn-cpu` (default: the first
//! neighbour CPU) at the same priority, started in [`Probe::prepare`]
//! with the link of each side ([`link`]: raw sockets of EtherType 0x88AB
//! with kernel receive stamps and the SoC's transmit stamp). `prepare`
//! then brings the CNs up to NMT_CS_OPERATIONAL as the reference MN does
//! (`mn`'s bring-up: identification, error signalling, configuration over
//! SDO from the run's PDO mapping or `--cdc`, NMT commands), printing per
//! CN what its IdentResponse announced and how it was configured, so the
//! measurement starts with every CN polled; a CN that does not get there
//! within 5 s plus two asynchronous slots per configuration write fails
//! the run with its name and state.
//!
//! **The samples** (the descriptor's slots, `NETCYCLE`), one per cycle:
//! `latency` wake-up − release; `period` this SoC's send instant − the
//! previous one's and its `jitter` (period − the releases' distance);
//! `send` release → SoC sent; `completion` SoC sent → last PRes received
//! (both stamps on one clock); `exec` wake-up → SoA sent. And one per SoC
//! the CN side received: `rx-period`, `rx-jitter` from its receive stamps
//! (the CN thread hands `(RelativeTime, stamp)` over through a bounded
//! lock-free queue; the MN thread, the only one to push into the
//! recorder, takes them after each cycle). On a veth pair the receiver's
//! stamp is taken in the sender's context, so the CN side's figures only
//! validate the pipeline; what a network adds is measured on a real NIC.
//!
//! **Held** (`jitterlab_core::netcycle::Held`): no late cycle (the SoA
//! went out after the next release) and no missed PRes over the run,
//! unless `max_late_cycles` / `max_missed_pres` allow some. The response
//! timeout is in every result and summary, since "held" depends on it.
//! A cell whose frames cannot fit its cycle on a 100 Mbit/s wire is
//! `N/A (wire)` ([`unavailable`]): a bench skips it with the figure, `run`
//! refuses it (exit 2).
//!
//! **One role per machine** (`--role mn|cn --interface IF`): the MN alone
//! polling real CNs, or the emulated CNs alone answering a real MN
//! (promiscuous, many CNs behind one MAC); the measuring thread runs that
//! role. The CN side's `rx-jitter` then counts whole cycles between SoCs
//! from the nominal `--cycle` (a foreign MN's RelativeTime means nothing
//! to us). Hardware receive stamps are used where the NIC offers them.
//!
//! **Between the bring-up and the measurement** the runner gets the
//! measurement ready (tens of milliseconds, more than a cycle): the MN
//! keeps cycling on its one SoC schedule on a thread of its own
//! ([`mn::KeepAlive`], started at the end of [`Probe::prepare`] on the
//! measuring thread's CPU and priority), and hands itself back to the
//! measuring thread at a release of that schedule, which the measurement
//! starts at. A real CN leaves operational after a few lost SoCs.
//!
//! `--pcap FILE` writes what the CN side received and sent, or, with
//! `--role mn`, what the managing node sent and received ([`capture`]).
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{anyhow, Context, Result};
use jitterlab_core::netcycle::{Held, NetcycleDetail, NetcycleParams, NodeRole, SocSpacing, Wait};
use jitterlab_core::powerlink::analyze::{over_t0, LATE_RULE};
use jitterlab_core::powerlink::cdc::NetworkConfig;
use jitterlab_core::powerlink::cn::CnConfig;
use jitterlab_core::powerlink::od::MAPPING_ENTRIES;
use jitterlab_core::powerlink::soc_schedule;
use jitterlab_core::powerlink::wire_time::{self, wire_bytes};
use jitterlab_core::powerlink::PDO_HEADER_LEN;
use jitterlab_core::recorder::{slots, Sample, SampleSink};
use jitterlab_core::spec::{CellPlan, Params, ProbeSpec, Spec};
use jitterlab_core::units::{format_ns, CpuList};

use super::flags::param_rule;
use super::helper_thread::{
    check_cpu, check_priority, own_thread_warnings, setup_helper_thread, HELPER_STACK,
};
use super::plan::{fifo_priority, RunPlan};
use super::{Cell, Prepared, Probe, Probes, Recorder, Report, Start};
use crate::error::bad;
use crate::net::hosts::{check_kind_environment, NetChange, NetnsPair};
use crate::net::mac::mac_of;
use crate::net::rps::steer_rps_in;
use crate::system::journal::{Journal, Undo};
use crate::system::load::LoadMeter;
use jitterlab_core::load::StackLoad;
use jitterlab_core::netcycle::PAIR;

pub mod analyze;
pub mod capture;
pub mod cn;
pub mod flags;
pub mod link;
pub mod mn;
pub(crate) mod report;
mod rx;

use capture::{CaptureReport, CaptureRing, CaptureWriter};
use cn::{CnEmulator, SocRx};
use link::{Link, LinkOptions};
use mn::cfm::CnPlan;
use mn::{BringUp, KeepAlive, Measured, Mn, MnConfig};
use rx::RxPeriods;

/// How long the bring-up may take before the CNs' configuration (which
/// adds its writes' slots: `mn::bring_up_budget_ns`).
const BRING_UP_NS: u64 = 5_000_000_000;
/// SoCs the CN thread can hand over before the MN takes them (every cycle).
const SOC_QUEUE: usize = 4096;
/// The PReq → PRes time the emulated CNs announce (IdentResponse), ns.
const RESPONSE_TIME_NS: u32 = 25_000;

/// What the probe is asked for, from the cell.
#[derive(Debug, Clone)]
pub struct NetcycleArgs {
    /// The MN's CPU (the probe CPU).
    pub cpu: usize,
    /// The CN emulator's CPU.
    pub cn_cpu: usize,
    /// SCHED_FIFO priority of both.
    pub priority: i32,
    /// The cycle time, ns.
    pub period_ns: u64,
    /// How long to measure, ns.
    pub duration_ns: Option<u64>,
    /// The probe's own parameters.
    pub params: NetcycleParams,
}

/// The probe's arguments for one cell.
pub fn args(spec: &Spec, cell: &CellPlan, plan: &RunPlan) -> Result<NetcycleArgs> {
    let probe = &spec.probes[cell.probe];
    let params = probe
        .params
        .get::<NetcycleParams>()
        .context("netcycle arguments of a probe that is no netcycle probe")?
        .clone();
    let cpu = plan.cpus[0];
    let neighbours: CpuList = spec.neighbour_cpus(cell).into_iter().collect();
    Ok(NetcycleArgs {
        cpu,
        cn_cpu: params
            .cn_cpu
            .or_else(|| neighbours.iter().find(|&c| c != cpu))
            .unwrap_or(cpu),
        priority: fifo_priority(plan),
        period_ns: probe.period_ns,
        duration_ns: plan.params.duration_ns,
        params,
    })
}

/// Reads and checks the concise DCF of `--cdc`: the node ids it configures
/// (ascending) and its cycle (0x1006, µs), or bad input naming what to fix.
pub fn read_cdc(path: &Path) -> Result<(Vec<u8>, Option<u32>)> {
    let bytes = std::fs::read(path)
        .map_err(|e| bad(format!("--cdc {}: cannot read it: {e}", path.display())))?;
    let net = NetworkConfig::from_cdc(&bytes)
        .map_err(|e| bad(format!("--cdc {}: {e}", path.display())))?;
    let mut nodes: Vec<u8> = net
        .cns
        .iter()
        .map(|c| c.node)
        .filter(|n| (1..=jitterlab_core::powerlink::MAX_CN_NODE).contains(n))
        .collect();
    nodes.sort_unstable();
    nodes.dedup();
    if nodes.is_empty() {
        return Err(bad(format!(
            "--cdc {}: it configures no CN (no 0x1F81/n with bit 0 for a node 1-239): give your project's mnobd.cdc",
            path.display()
        )));
    }
    Ok((nodes, net.cycle_len_us))
}

/// The configuration manager's plans: from `--cdc`, else the run's own
/// PDO mapping.
fn plans(p: &NetcycleParams, period_ns: u64) -> Result<Vec<CnPlan>> {
    match &p.cdc {
        Some(path) => {
            let bytes = std::fs::read(path).with_context(|| format!("reading --cdc {path}"))?;
            let net =
                NetworkConfig::from_cdc(&bytes).map_err(|e| bad(format!("--cdc {path}: {e}")))?;
            Ok(CnPlan::from_cdc(&net, period_ns))
        }
        None => Ok(p
            .nodes()
            .into_iter()
            .map(|n| CnPlan::default_for(n, period_ns, p.in_bytes, p.out_bytes))
            .collect()),
    }
}

/// The time between two chained CNs' PRes slots: one PRes on a 100 Mbit/s
/// wire.
fn chain_step_ns(p: &NetcycleParams) -> u64 {
    wire_bytes(PDO_HEADER_LEN + usize::from(p.in_bytes)) as u64
        * jitterlab_core::powerlink::wire_time::BYTE_NS_100M
}

/// Refuses (as bad input) CPUs that are not online, a bad priority, what
/// breaks the parameters' rules ([`NetcycleParams`]' `validate`: chained
/// outputs over one frame, a response timeout not shorter than the cycle)
/// and a cycle whose frames cannot fit on the wire; warns when the MN and the CNs share a CPU.
pub fn validate(args: &NetcycleArgs, online: &CpuList) -> Result<Vec<String>> {
    let p = &args.params;
    check_cpu(args.cpu, online, "--cpu")?;
    check_cpu(args.cn_cpu, online, "--cn-cpu")?;
    check_priority(args.priority)?;
    p.validate(args.period_ns).map_err(param_rule)?;
    if p.cdc.is_none() && p.role != NodeRole::Cn {
        for (flag, bytes, object) in [
            ("--in-bytes", p.in_bytes, "input 0x6000"),
            ("--out-bytes", p.out_bytes, "output 0x6200"),
        ] {
            if bytes > u16::from(MAPPING_ENTRIES) {
                return Err(bad(format!(
                    "{flag} {bytes}: the managing node maps one byte per {object}/k into a CN's PDO, at most {MAPPING_ENTRIES} entries; give {flag} {MAPPING_ENTRIES} or less, or --cdc with your project's mapping"
                )));
            }
        }
    }
    if let Some(why) = p.wire_unfit(args.period_ns) {
        return Err(bad(format!(
            "N/A (wire): {why}; lengthen --cycle or give fewer --cns"
        )));
    }
    let mut warnings = Vec::new();
    if p.role == NodeRole::Both && args.cpu == args.cn_cpu {
        warnings.push(format!(
            "the CN emulator shares CPU {} with the managing node (no other CPU is online): each delays the other",
            args.cpu
        ));
    }
    if p.wait == Wait::BusyPoll {
        warnings.push(
            "--wait busy-poll: the managing node spins while it waits for each PRes; its CPU load reads 100 % of the polling phase".into(),
        );
    }
    Ok(warnings)
}

/// Refuses, before anything changes, what would make set-up fail: for both
/// roles here, not root or no `ip`; for one role, a missing `--interface`
/// or one that does not exist (looked up under the sysroot `root`).
pub fn check_environment(root: &Path, args: &NetcycleArgs) -> Result<()> {
    match (args.params.role, &args.params.interface) {
        (NodeRole::Both, _) => check_kind_environment(&PAIR),
        (_, Some(ifname)) => {
            if root.join("sys/class/net").join(ifname).exists() {
                Ok(())
            } else {
                Err(bad(format!(
                    "--interface {ifname}: no such network interface; list them with `ip link`"
                )))
            }
        }
        (role, None) => Err(bad(format!(
            "--role {} runs one side on a real network: give --interface IF",
            role.name()
        ))),
    }
}

/// Why a cell of `probe` cannot be measured: `N/A (wire): …` when its
/// frames cannot fit its cycle on a 100 Mbit/s wire (the registry's
/// `unavailable`).
pub fn unavailable(_root: &Path, probe: &ProbeSpec) -> Option<String> {
    probe.wire_na()
}

/// The sockets of the side(s) that run here, and the namespaces.
struct Ends {
    mn: Option<Link>,
    cn: Option<Link>,
    /// Field order is drop order: the sockets close before the namespaces go.
    pair: Option<NetnsPair>,
}

/// The probe of a cell: its namespaces (journaled first) and sockets, made
/// now.
pub fn build(cell: &Cell<'_>, journal: &mut Journal) -> Result<Probes> {
    let args = args(cell.spec, cell.cell, cell.plan)?;
    let p = &args.params;
    if let Some(na) = cell.spec.probes[cell.cell.probe].wire_na() {
        return Err(bad(na));
    }
    let mut journaled = Vec::new();
    let mut steering = Vec::new();
    let mn_opts = LinkOptions {
        soc_socket: true,
        promiscuous: false,
        hardware: true,
    };
    let made = (|| -> Result<Ends> {
        match (p.role, &p.interface) {
            (NodeRole::Both, _) => {
                let pair = NetnsPair::setup(PAIR, &mut |change: &NetChange| {
                    let NetChange::Netns(name) = change;
                    journaled.push(journal.record(Undo::Netns { name: name.clone() })?);
                    Ok(())
                })?;
                let (mn_ns, cn_ns) = (pair.netns_a(), pair.netns_b());
                // Each end's receive work on its own side's CPU (RPS): a
                // veth hands a frame to the peer's backlog on the sending
                // CPU unless steered, which would charge the CNs' receive
                // work to the managing node's CPU and the other way round.
                // With a polling CN emulator neither end is steered: each
                // end's receive work is done inline in the other's send,
                // which costs less than the interrupt steering sends to the
                // other CPU (a VM exit on a VM; see BENCHMARKS.md).
                let steer = p.cn_wait.is_blocking();
                for (ns, ifname, cpu) in [
                    (mn_ns, pair.veth_a(), args.cpu),
                    (cn_ns, pair.veth_b(), args.cn_cpu),
                ] {
                    if !steer {
                        steering.push(format!("{ifname}: receive work not steered"));
                        continue;
                    }
                    match steer_rps_in(ns, ifname, &[cpu]) {
                        Ok(line) => steering.push(line),
                        Err(e) => steering.push(format!(
                            "{ifname}: receive work not steered to CPU {cpu}: {e:#}"
                        )),
                    }
                }
                let mn_mac = mac_of(Some(mn_ns), pair.veth_a())?;
                let cn_mac = mac_of(Some(cn_ns), pair.veth_b())?;
                let mn = Link::open(Some(mn_ns), pair.veth_a(), mn_mac, mn_opts)
                    .context("the managing node's link")?;
                let cn = Link::open(Some(cn_ns), pair.veth_b(), cn_mac, LinkOptions::default())
                    .context("the CN emulator's link")?;
                crate::output::errln!(
                    "jitterlab: netcycle: managing node in namespace {mn_ns}, {} CNs in {cn_ns}, over a veth pair",
                    p.cns
                );
                Ok(Ends {
                    mn: Some(mn),
                    cn: Some(cn),
                    pair: Some(pair),
                })
            }
            (role, Some(ifname)) => {
                let mac = mac_of(None, ifname)?;
                let link = match role {
                    NodeRole::Mn => Link::open(None, ifname, mac, mn_opts)?,
                    _ => Link::open(
                        None,
                        ifname,
                        mac,
                        LinkOptions {
                            soc_socket: false,
                            promiscuous: true,
                            hardware: true,
                        },
                    )?,
                };
                let (mn, cn) = match role {
                    NodeRole::Mn => (Some(link), None),
                    _ => (None, Some(link)),
                };
                Ok(Ends { mn, cn, pair: None })
            }
            (role, None) => Err(bad(format!(
                "--role {} runs one side on a real network: give --interface IF",
                role.name()
            ))),
        }
    })();
    let ends = match made {
        Ok(e) => e,
        Err(e) => {
            // The pair (if made) was dropped, which deleted its namespaces.
            for line in journal.done_all(journaled) {
                crate::output::errln!("jitterlab: warning: {line}");
            }
            return Err(e);
        }
    };
    Ok(Probes::threads(vec![Box::new(NetcycleProbe {
        args,
        ends: Some(ends),
        journaled,
        mn: None,
        keep: None,
        measured: None,
        cn_thread: None,
        cn_here: None,
        capture: None,
        bring_up: None,
        stamps: Vec::new(),
        root: cell.root.to_path_buf(),
        load: None,
        steering,
    })]))
}

/// The CN emulator's thread, running: its stop flag, its SoCs, and what
/// it gives back when it ends.
struct CnThread {
    stop: Arc<AtomicBool>,
    socs: rtrb::Consumer<SocRx>,
    thread: JoinHandle<CnEnd>,
}

/// What the CN thread gives back.
struct CnEnd {
    emulator: CnEmulator,
    ring: Option<CaptureRing>,
    warnings: Vec<String>,
}

impl CnThread {
    /// Stops and joins it.
    fn finish(self) -> Result<(CnEnd, rtrb::Consumer<SocRx>)> {
        self.stop.store(true, Relaxed);
        let end = self
            .thread
            .join()
            .map_err(|_| anyhow!("the CN emulator's thread panicked"))?;
        Ok((end, self.socs))
    }
}

/// The netcycle probe of one cell.
pub struct NetcycleProbe {
    args: NetcycleArgs,
    ends: Option<Ends>,
    journaled: Vec<u64>,
    mn: Option<Mn>,
    /// The MN cycling between the bring-up and the measurement.
    keep: Option<KeepAlive>,
    /// What the measurement counted on the schedule and NMT states.
    measured: Option<Measured>,
    cn_thread: Option<CnThread>,
    /// `--role cn`: the emulator on the measuring thread, and its ring.
    cn_here: Option<(CnEmulator, Option<CaptureRing>)>,
    capture: Option<CaptureWriter>,
    bring_up: Option<BringUp>,
    stamps: Vec<String>,
    /// The sysroot the stack load is read under.
    root: std::path::PathBuf,
    /// The stack's CPU load over the measurement (the managing node's
    /// thread), or why it could not be read.
    load: Option<std::result::Result<StackLoad, String>>,
    /// Where each veth end's receive work was steered.
    steering: Vec<String>,
}

impl NetcycleProbe {
    fn cn_config(&self) -> CnConfig {
        let p = &self.args.params;
        CnConfig {
            nodes: p.nodes(),
            out_bytes: p.out_bytes,
            chained: p.chaining,
            chain_step_ns: chain_step_ns(p),
            response_time_ns: RESPONSE_TIME_NS,
            identity: p.identity.unwrap_or_default(),
        }
    }

    fn mn_config(&self) -> Result<MnConfig> {
        let p = &self.args.params;
        let nodes = p.nodes();
        let soc_ns =
            wire_bytes(jitterlab_core::powerlink::SOC_LEN) as u64 * wire_time::BYTE_NS_100M;
        let pres_mn_ns = wire_bytes(PDO_HEADER_LEN + nodes.len() * usize::from(p.out_bytes)) as u64
            * wire_time::BYTE_NS_100M;
        let planned = soc_schedule::planned_span(
            soc_ns,
            nodes.len() as u64,
            p.response_timeout_ns,
            p.chaining.then(|| (pres_mn_ns, chain_step_ns(p))),
        );
        Ok(MnConfig {
            nodes,
            spacing_floor_ns: soc_schedule::spacing_floor(self.args.period_ns, planned),
            out_bytes: p.out_bytes,
            in_bytes: p.in_bytes,
            chained: p.chaining,
            chain_step_ns: chain_step_ns(p),
            wait: p.wait,
            response_timeout_ns: p.response_timeout_ns,
            // A polling CN emulator answers within a few µs (no interrupt,
            // no wake-up): spin the CNs' announced response time, then sleep.
            spin_ns: match p.cn_wait.is_blocking() {
                true => 0,
                false => u64::from(RESPONSE_TIME_NS),
            },
            period_ns: self.args.period_ns,
            plans: plans(p, self.args.period_ns)?,
        })
    }

    /// Starts the capture writer, when asked; the ring goes to the CN side.
    fn start_capture(&mut self) -> Result<Option<CaptureRing>> {
        match &self.args.params.pcap {
            Some(path) => {
                let (ring, writer) = capture::start(Path::new(path))?;
                self.capture = Some(writer);
                Ok(Some(ring))
            }
            None => Ok(None),
        }
    }

    /// Starts the CN emulator's thread on its CPU.
    fn start_cn_thread(&mut self, link: Link, ring: Option<CaptureRing>) -> Result<()> {
        self.stamps.push(format!(
            "CN emulator ({}): {}",
            link.ifname(),
            link.stamps()
        ));
        let emulator = CnEmulator::new(link, self.cn_config())
            .polling(!self.args.params.cn_wait.is_blocking());
        let (mut tx, rx) = rtrb::RingBuffer::<SocRx>::new(SOC_QUEUE);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let (cpu, prio) = (self.args.cn_cpu, self.args.priority);
        let thread = std::thread::Builder::new()
            .name("jl-pl-cn".into())
            .stack_size(HELPER_STACK)
            .spawn(move || {
                let warnings = setup_helper_thread("CN emulator", cpu, prio);
                let (mut emulator, mut ring) = (emulator, ring);
                let mut full = 0u64;
                emulator.run(
                    &flag,
                    None,
                    &mut |s| {
                        if tx.push(s).is_err() {
                            full += 1;
                        }
                    },
                    ring.as_mut(),
                );
                emulator.socs_not_handed_over = full;
                CnEnd {
                    emulator,
                    ring,
                    warnings,
                }
            })
            .context("starting the CN emulator's thread")?;
        self.cn_thread = Some(CnThread {
            stop,
            socs: rx,
            thread,
        });
        Ok(())
    }

    /// Stops whatever runs beside the measuring thread (after a failed
    /// bring-up, or on teardown).
    fn stop_helpers(&mut self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut dropped = 0;
        if let Some(k) = self.keep.take() {
            match k.stop() {
                Ok(Some(mn)) => self.mn = Some(mn),
                Ok(None) => {}
                Err(e) => lines.push(format!("{e:#}")),
            }
        }
        if let Some(mn) = &self.mn {
            dropped += mn.capture_dropped();
        }
        if let Some(t) = self.cn_thread.take() {
            match t.finish() {
                Ok((end, _)) => dropped += end.ring.map_or(0, |r| r.dropped),
                Err(e) => lines.push(format!("{e:#}")),
            }
        }
        if let Some(w) = self.capture.take() {
            if let Err(e) = w.finish(dropped) {
                lines.push(format!("{e:#}"));
            }
        }
        lines
    }
}

impl Probe for NetcycleProbe {
    fn prepare(&mut self) -> Result<Prepared> {
        let ends = self.ends.as_mut().context("the netcycle probe is gone")?;
        let (mn_link, cn_link) = (ends.mn.take(), ends.cn.take());
        let ring = self.start_capture()?;
        match (mn_link, cn_link) {
            (Some(mn_link), cn_link) => {
                self.stamps.push(format!(
                    "managing node ({}): {}",
                    mn_link.ifname(),
                    mn_link.stamps()
                ));
                let cfg = self.mn_config()?;
                let budget = mn::bring_up_budget_ns(BRING_UP_NS, &cfg.plans);
                let mut mn = Mn::new(mn_link, cfg);
                match cn_link {
                    Some(cn_link) => self.start_cn_thread(cn_link, ring)?,
                    // `--role mn`: the capture is the managing node's.
                    None => {
                        if let Some(ring) = ring {
                            mn.capture_into(ring);
                        }
                    }
                }
                // Ready before the bring-up ends: see `KeepAlive`.
                let (cpu, prio) = (self.args.cpu, self.args.priority);
                self.keep = Some(KeepAlive::spawn(cpu, prio)?);
                let never = AtomicBool::new(false);
                let up = mn.bring_up(budget, &never);
                for a in mn.announced() {
                    crate::output::errln!("jitterlab: netcycle: {}", a.line());
                }
                for line in mn.configuration() {
                    crate::output::errln!("jitterlab: netcycle: {line}");
                }
                self.mn = Some(mn);
                match up {
                    Ok(b) => self.bring_up = Some(b),
                    Err(e) => {
                        self.stop_helpers();
                        return Err(e);
                    }
                }
                let mn = self.mn.take().context("the managing node is gone")?;
                let keep = self
                    .keep
                    .as_mut()
                    .context("the keep-alive thread is gone")?;
                keep.keep(mn)?;
            }
            (None, Some(cn_link)) => {
                self.stamps.push(format!(
                    "CN emulator ({}): {}",
                    cn_link.ifname(),
                    cn_link.stamps()
                ));
                self.cn_here = Some((
                    CnEmulator::new(cn_link, self.cn_config())
                        .polling(!self.args.params.cn_wait.is_blocking()),
                    ring,
                ));
            }
            (None, None) => return Err(anyhow!("the netcycle probe has no link")),
        }
        Ok(Prepared::default())
    }

    fn measure(&mut self, start: &Start<'_>, recorder: &mut Recorder) -> Result<Report> {
        let a = self.args.clone();
        let p = &a.params;
        let mut warnings = match self.keep {
            Some(_) => own_thread_warnings("managing node", a.cpu, a.priority),
            None => own_thread_warnings("CN emulator", a.cpu, a.priority),
        };
        let mut rx = RxPeriods::new(a.period_ns, p.role == NodeRole::Both);
        let mut schedule = None;
        let mut over_t0 = None;
        let mut cn_report = None;
        let mut ring_dropped = 0;
        if let Some(keep) = self.keep.take() {
            let releases = a.duration_ns.map(|d| d.div_ceil(a.period_ns));
            let mut socs = self.cn_thread.as_mut().map(|t| &mut t.socs);
            let mut prev_soc: Option<(u64, u64)> = None;
            let mut over = 0u64;
            let mut index = 0u64;
            let mut first_real = None;
            let mut last_at = start.t0;
            // The stack load: the managing node's thread (the stack's only
            // thread: with a blocking wait it sleeps between frames) over
            // the measurement.
            let meter = LoadMeter::start(
                &self.root,
                a.cpu,
                &[("managing node".to_string(), jitterlab_sys::gettid())],
            );
            // The last thing before the measurement's first release.
            let (mut mn, first, keep_warnings) = keep.hand_over(start.t0)?;
            warnings.extend(keep_warnings);
            let deadline = a.duration_ns.map(|d| start.t0 + d);
            let measured = mn.run(first, releases, start.stop, deadline, &mut |c, s| {
                let period = prev_soc.map(|(real, _)| c.soc_real as i64 - real as i64);
                let jitter = match (period, prev_soc) {
                    (Some(per), Some((_, rel))) => Some(per - (s.release - rel) as i64),
                    _ => None,
                };
                prev_soc = Some((c.soc_real, s.release));
                over += u64::from(cycle_over_t0(c, a.period_ns));
                first_real.get_or_insert(c.soc_real);
                last_at = last_at.max(s.start);
                recorder.push(&Sample {
                    index,
                    at: last_at,
                    values: slots([
                        Some(s.latency),
                        period,
                        jitter,
                        Some(c.soc_mono as i64 - s.release as i64),
                        c.completion_ns(),
                        None,
                        None,
                        Some(c.soa_mono as i64 - s.start as i64),
                    ]),
                });
                index += 1;
                if let Some(q) = socs.as_deref_mut() {
                    while let Ok(soc) = q.pop() {
                        if first_real.is_some_and(|f| soc.rx_ns >= f) {
                            rx.push(recorder, soc, last_at);
                        }
                    }
                }
            });
            self.load = Some(
                meter
                    .and_then(LoadMeter::finish)
                    .map_err(|e| format!("{e:#}")),
            );
            schedule = Some(measured.schedule);
            over_t0 = Some(over);
            ring_dropped = mn.capture_dropped();
            self.measured = Some(measured);
            if let Some(t) = self.cn_thread.take() {
                let (end, mut q) = t.finish()?;
                while let Ok(soc) = q.pop() {
                    if first_real.is_some_and(|f| soc.rx_ns >= f) {
                        rx.push(recorder, soc, last_at);
                    }
                }
                warnings.extend(end.warnings);
                ring_dropped += end.ring.as_ref().map_or(0, |r| r.dropped);
                cn_report = Some(end.emulator.report());
                // The link goes back for teardown.
                if let Some(e) = self.ends.as_mut() {
                    e.cn = Some(end.emulator.link);
                }
            }
            self.mn = Some(mn);
        } else if let Some((mut emulator, mut ring)) = self.cn_here.take() {
            let end = a.duration_ns.map(|d| start.t0 + d);
            let mut last_at = start.t0;
            emulator.run(
                start.stop,
                end,
                &mut |soc| {
                    last_at = last_at.max(jitterlab_sys::monotonic_ns());
                    rx.push(recorder, soc, last_at);
                },
                ring.as_mut(),
            );
            ring_dropped = ring.as_ref().map_or(0, |r| r.dropped);
            cn_report = Some(emulator.report());
            self.cn_here = Some((emulator, None));
        }
        let pcap = match self.capture.take() {
            Some(w) => Some(w.finish(ring_dropped)?),
            None => None,
        };
        let detail = self.detail(
            schedule.map(|s| s.cycles),
            (schedule.map(|s| s.overruns), over_t0),
            cn_report,
            pcap.as_ref(),
            &mut warnings,
        )?;
        Ok(Report {
            detail: Some(serde_json::to_value(&detail)?),
            warnings,
            schedule,
            ..Report::default()
        })
    }

    fn teardown(&mut self, _root: &Path, journal: &mut Journal) -> Vec<String> {
        let mut lines = self.stop_helpers();
        self.mn = None;
        self.cn_here = None;
        if let Some(ends) = self.ends.take() {
            drop(ends.mn);
            drop(ends.cn);
            if let Some(pair) = ends.pair {
                match pair.teardown() {
                    Ok(l) if l.is_empty() => {}
                    Ok(l) => lines.push(format!("netcycle namespaces deleted: {}", l.join(", "))),
                    Err(e) => lines.push(format!("deleting the netcycle namespaces: {e:#}")),
                }
            }
        }
        lines.extend(journal.done_all(self.journaled.drain(..)));
        lines
    }
}

/// Whether cycle `c` is over `t0_ns` by the test `analyze` applies to a
/// capture ([`over_t0`]), on the stamps a capture of it holds: the SoC's
/// send stamp and the receive stamp (CLOCK_REALTIME) of its last PRes
/// within the response timeout, and the SoA's send instant on that clock.
/// A capture holds also the PRes that came after the timeout, which
/// `analyze` counts as the cycle's traffic: on the same traffic its count
/// can be the higher.
fn cycle_over_t0(c: &mn::Cycle, t0_ns: u64) -> bool {
    let soa_real = c.soc_real + c.soa_mono.saturating_sub(c.soc_mono);
    over_t0(c.soc_real, c.last_pres.soft, Some(soa_real), t0_ns)
}

impl NetcycleProbe {
    /// The result's detail, and the warnings it calls for.
    fn detail(
        &self,
        cycles: Option<u64>,
        (late, over_t0): (Option<u64>, Option<u64>),
        cn: Option<cn::CnReport>,
        pcap: Option<&CaptureReport>,
        warnings: &mut Vec<String>,
    ) -> Result<NetcycleDetail> {
        let p = &self.args.params;
        let per_cn = self.mn.as_ref().map(|m| m.per_cn()).unwrap_or_default();
        let (cycles, late) = (cycles.unwrap_or(0), late.unwrap_or(0));
        let polls: u64 = per_cn.iter().map(|c| c.polls).sum();
        let missed: u64 = per_cn.iter().map(|c| c.missed).sum();
        let late_pres: u64 = per_cn.iter().map(|c| c.late).sum();
        let timeout = format_ns(p.response_timeout_ns as i64);
        let held = match p.role {
            NodeRole::Cn => Held {
                held: false,
                reasons: vec![
                    "the managing node is not ours (--role cn): no cycle was judged".into(),
                ],
            },
            _ => Held::judge(p, cycles, late, polls, missed),
        };
        let mut held = held;
        let measured = self.measured.as_ref();
        if let Some(m) = measured {
            held.left_operational(&m.outages, m.untold_outages);
            for o in &m.outages {
                warnings.push(o.describe());
            }
        }
        if late > 0 {
            warnings.push(format!("{late} of {cycles} cycles were late ({LATE_RULE})"));
        }
        if missed > 0 {
            warnings.push(format!(
                "{missed} of {polls} PRes missed the response timeout of {timeout} ({late_pres} came later)"
            ));
        }
        if let Some(c) = &pcap {
            if c.dropped > 0 {
                warnings.push(format!(
                    "the capture {} dropped {} frames: its writer fell behind",
                    c.path.display(),
                    c.dropped
                ));
            }
        }
        let mn = self.mn.as_ref().map(|m| {
            serde_json::json!({
                "bring_up": self.bring_up,
                "counts": m.counts(),
            })
        });
        Ok(NetcycleDetail {
            role: p.role,
            cns: p.cns,
            chaining: p.chaining,
            wait: p.wait,
            response_timeout_ns: p.response_timeout_ns,
            out_bytes: p.out_bytes,
            in_bytes: p.in_bytes,
            wire_ns: p.wire_ns(),
            cycles,
            late_cycles: late,
            over_t0_cycles: over_t0,
            polls,
            missed_pres: missed,
            late_pres,
            held,
            soc_spacing: measured.map(|m| SocSpacing {
                floor_ns: m.floor_ns,
                min_ns: m.min_soc_spacing_ns,
                passed_over: m.soc.spaced,
            }),
            left_operational: measured.map(|m| m.outages.clone()).unwrap_or_default(),
            per_cn,
            load: match &self.load {
                Some(Ok(l)) => Some(l.clone()),
                Some(Err(e)) => {
                    warnings.push(format!("the stack's CPU load was not measured: {e}"));
                    None
                }
                None => None,
            },
            cn: cn.map(serde_json::to_value).transpose()?,
            mn,
            stamps: self.stamps.clone(),
            steering: self.steering.clone(),
            pcap: pcap.map(serde_json::to_value).transpose()?,
        })
    }
}

/// How the runner measures the `netcycle` probe: its line in the registry (`super::REGISTRY`).
pub const REGISTRATION: super::Registration = super::Registration {
    kind: jitterlab_core::probe::ProbeKind::Netcycle,
    build,
    unavailable: Some(unavailable),
    flags: flags::flags,
    one_cell: flags::one_cell,
    report: report::PARTS,
    placement: super::Placement::ProbeCpus,
    task: None,
};

#[cfg(test)]
mod tests;
