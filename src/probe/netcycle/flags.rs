//! `jitterlab run netcycle`: its flags, their checks, and the one-cell spec
//! they make ([Baumgartner POWERLINK]'s POWERLINK managing node polling N controlled
//! nodes). Built on the flags' toolkit ([`crate::probe::flags`]), which
//! holds what every kind's flags share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use jitterlab_core::netcycle::defaults;
use jitterlab_core::netcycle::params::PARAMS;
use jitterlab_core::netcycle::{NetcycleParams, NodeRole, Wait};
use jitterlab_core::powerlink::od::Identity;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::spec::ProbeParams;
use jitterlab_core::units::{format_duration_exact, CpuList};

use crate::error::bad;
use crate::out_files;
use crate::output::errln;
use crate::probe::flags::parse::{default_time, duration, period};
use crate::probe::flags::{
    cell_and_plan, check_common, common_cell, cpu_or_last, matched, probe_cpu, subcommand,
    CommonArgs, OneCell,
};
use crate::probe::netcycle;
use crate::store::Db;
use crate::system::host;

/// A POWERLINK managing node polling N emulated controlled nodes (
/// [Baumgartner POWERLINK]): SoC jitter, cycle completion, missed PRes, held or not.
#[derive(Debug, Args)]
pub struct NetcycleRunArgs {
    /// The POWERLINK cycle time.
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::NETCYCLE_PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub cycle: u64,

    /// Controlled nodes polled, node ids 1..=N (1-239).
    #[arg(long, value_name = "N", default_value_t = defaults::NETCYCLE_CNS, value_parser = clap::value_parser!(u8).range(PARAMS.int_range("cns")))]
    pub cns: u8,

    /// The controlled nodes' ids instead of 1..=N: a real network's, e.g.
    /// `1,32,110`, or ranges, `1-3,10` (each 1-239)
    #[arg(long, value_name = "LIST", conflicts_with = "cns", value_parser = node_ids)]
    pub node_ids: Option<NodeIdList>,

    /// Configure the CNs from this concise DCF (openCONFIGURATOR's
    /// `mnobd.cdc`, as the reference MN loads it): it names the nodes, and
    /// its cycle (0x1006) must be the --cycle measured
    #[arg(long, value_name = "FILE", conflicts_with_all = ["cns", "node_ids"])]
    pub cdc: Option<PathBuf>,

    /// PollResponse Chaining: one PResMN with every CN's outputs, and
    /// time-triggered PRes, instead of a PReq per CN.
    #[arg(long)]
    pub chaining: bool,

    /// How the managing node waits for each PRes.
    #[arg(long, default_value = Wait::Blocking.name(), value_parser = wait_parser())]
    pub wait: Wait,

    /// How the CN emulator waits for each frame (on its own CPU, never the
    /// managing node's).
    #[arg(long, default_value = Wait::BusyPoll.name(), value_parser = cn_wait_parser())]
    pub cn_wait: Wait,

    /// How long the managing node waits for one PRes before it counts it
    /// missed ("held" depends on it; every summary prints it).
    #[arg(long, value_name = "TIME", default_value = default_time(defaults::PRES_TIMEOUT_NS), value_parser = duration, allow_hyphen_values = true)]
    pub response_timeout: u64,

    /// Output bytes per CN (PReq payload, or its share of the PResMN).
    #[arg(long, value_name = "N", default_value_t = defaults::NETCYCLE_OUT_BYTES, value_parser = clap::value_parser!(u16).range(PARAMS.int_range("out_bytes")))]
    pub out_bytes: u16,

    /// Input bytes per CN (PRes payload).
    #[arg(long, value_name = "N", default_value_t = defaults::NETCYCLE_IN_BYTES, value_parser = clap::value_parser!(u16).range(PARAMS.int_range("in_bytes")))]
    pub in_bytes: u16,

    /// CPU of the managing node's real-time thread [default: the last
    /// online CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// CPU of the CN emulator's real-time thread [default: the first other
    /// online CPU].
    #[arg(long, value_name = "CPU")]
    pub cn_cpu: Option<usize>,

    /// Which nodes run here.
    #[arg(long, default_value = NodeRole::Both.name(), value_parser = role_parser())]
    pub role: NodeRole,

    /// The network interface of a one-role run on a real POWERLINK segment
    /// (--role mn or cn); without it both roles run here, in two network
    /// namespaces joined by a veth pair.
    #[arg(long, value_name = "IF")]
    pub interface: Option<String>,

    /// Write what the CN side received and sent to FILE (nanosecond pcap, the
    /// kernel's receive stamps) — with `--role mn`, what the managing node
    /// sent (stamped after the send, the SoC with its transmit stamp) and
    /// received —, for Wireshark or `jitterlab analyze`; replaced when the
    /// run ends (not `-`: a capture is binary).
    #[arg(long, value_name = "FILE")]
    pub pcap: Option<std::path::PathBuf>,

    /// The identity the emulated CNs report in 0x1000, 0x1018 and their
    /// IdentResponse (--role cn or both): any of
    /// `vendor=…,product=…,revision=…,serial=…,device-type=…`, decimal or
    /// 0x hex [default: device-type 0x000F0191 (CiA 401 digital I/O),
    /// vendor 0, product 0, revision 0x00010000, serial the node id]
    #[arg(long, value_name = "LIST", value_parser = identity)]
    pub identity: Option<Identity>,

    /// Late cycles a run may have and still hold its cycle time.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_late_cycles: u64,

    /// Missed PRes a run may have and still hold its cycle time.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub max_missed_pres: u64,

    /// Options every probe shares (--max-latency and --max-jitter limit the
    /// SoC's release latency and jitter; --max-exec, --histogram and
    /// --break-trace do not apply).
    #[command(flatten)]
    pub common: CommonArgs,
}

/// The ids `--node-ids` gives, ascending. A name of its own, so that clap
/// takes the list as one value (a `Vec` field would be many values of `u8`).
pub type NodeIdList = Vec<u8>;

/// `--node-ids`: the list, ascending, or what to fix.
fn node_ids(list: &str) -> std::result::Result<NodeIdList, String> {
    NetcycleParams::parse_node_ids(list)
}

/// `--identity`: the fields given over the defaults, or what to fix.
fn identity(list: &str) -> std::result::Result<Identity, String> {
    Identity::parse(list)
}

/// `--wait`, each name with its help.
fn wait_parser() -> impl TypedValueParser<Value = Wait> {
    let help = |w: Wait| match w {
        Wait::Blocking => {
            "Sleep in the kernel until the PRes or the timeout; frames come from a receive ring, \
             no system call to take one (the stack's load is its work; the default: measured on \
             a VM, a PRes came later than a sleep and a wake-up cost, see BENCHMARKS.md)"
        }
        Wait::BusyPoll => {
            "Spin on the receive ring until the PRes or the timeout (lower latency, and cheaper \
             than sleeping against CNs that answer within a few µs; the load reads 100 % of the \
             polling phase)"
        }
    };
    let all = [Wait::Blocking, Wait::BusyPoll];
    PossibleValuesParser::new(all.map(|w| PossibleValue::new(w.name()).help(help(w))))
        .map(|name| Wait::parse(&name).expect("one of the possible values"))
}

/// `--cn-wait`, each name with its help.
fn cn_wait_parser() -> impl TypedValueParser<Value = Wait> {
    let help = |w: Wait| match w {
        Wait::Blocking => {
            "Sleep until a frame comes; each end's receive work is steered to its own CPU, so \
             each PReq and PRes sends an interrupt to the other CPU (a VM exit on a VM: about 3x \
             the managing node's load, see BENCHMARKS.md)"
        }
        Wait::BusyPoll => {
            "Spin on the receive ring for 100 µs after each frame, then sleep (a CN answering \
             within µs, like hardware; the default); no receive steering, and the managing node \
             spins for the CNs' response time before it sleeps: no interrupt per PRes"
        }
    };
    let all = [Wait::Blocking, Wait::BusyPoll];
    PossibleValuesParser::new(all.map(|w| PossibleValue::new(w.name()).help(help(w))))
        .map(|name| Wait::parse(&name).expect("one of the possible values"))
}

/// `--role`, each name with its help.
fn role_parser() -> impl TypedValueParser<Value = NodeRole> {
    let help = |r: NodeRole| match r {
        NodeRole::Both => {
            "The managing node and the emulated CNs here, in two namespaces joined by a veth pair"
        }
        NodeRole::Mn => "The managing node only, polling real CNs on --interface",
        NodeRole::Cn => "The emulated CNs only, answering a real managing node on --interface",
    };
    let all = [NodeRole::Both, NodeRole::Mn, NodeRole::Cn];
    PossibleValuesParser::new(all.map(|r| PossibleValue::new(r.name()).help(help(r))))
        .map(|name| NodeRole::parse(&name).expect("one of the possible values"))
}

/// `jitterlab run netcycle`'s subcommand.
pub fn command() -> clap::Command {
    subcommand::<NetcycleRunArgs>(ProbeKind::Netcycle)
}

/// `jitterlab run netcycle`, as clap matched it: see [`check`].
pub fn one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &matched(m)?)
}

/// Checks `jitterlab run netcycle`'s flags against the machine and makes
/// its one-cell spec.
pub fn check(root: &Path, db: &Db, a: &NetcycleRunArgs) -> Result<OneCell> {
    let c = &a.common;
    for (given, flag) in [
        (c.break_trace.is_some(), "--break-trace"),
        (c.histogram.is_some(), "--histogram"),
        (c.max_exec.is_some(), "--max-exec"),
    ] {
        if given {
            return Err(bad(format!(
                "{flag} does not apply to run netcycle; its limits are --max-latency, --max-jitter, --max-late-cycles and --max-missed-pres"
            )));
        }
    }
    if c.cycles.is_some() {
        return Err(bad(
            "run netcycle ends at its --duration; --cycles does not apply",
        ));
    }
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    if a.cycle == 0 {
        return Err(bad("--cycle must be positive; give e.g. --cycle 500us"));
    }
    if a.response_timeout == 0 {
        return Err(bad(
            "--response-timeout must be positive; give e.g. --response-timeout 100us",
        ));
    }
    match (a.role, &a.interface) {
        (NodeRole::Both, Some(_)) => {
            return Err(bad(
                "--interface runs one side per machine: add --role mn or --role cn, or drop --interface to run both here",
            ))
        }
        (NodeRole::Mn | NodeRole::Cn, None) => {
            return Err(bad(format!(
                "--role {} runs one side on a real network: give --interface IF (or --role both to run both here)",
                a.role.name()
            )))
        }
        _ => {}
    }
    if a.identity.is_some() && a.role == NodeRole::Mn {
        return Err(bad(
            "--identity is what the emulated CNs report; use it with --role cn or --role both",
        ));
    }
    if let Some(p) = &a.pcap {
        out_files::check_binary_output("--pcap", p)?;
    }
    if let Some(path) = &a.cdc {
        if a.role == NodeRole::Cn {
            return Err(bad(
                "--cdc configures the CNs from the managing node: use it with --role mn or --role both",
            ));
        }
        let (_, cycle_us) = netcycle::read_cdc(path)?;
        if let Some(us) = cycle_us {
            if u64::from(us) * 1_000 != a.cycle {
                return Err(bad(format!(
                    "--cdc {}: its cycle (0x1006) is {}, not the --cycle {}: give --cycle {}",
                    path.display(),
                    format_duration_exact(u64::from(us) * 1_000),
                    format_duration_exact(a.cycle),
                    format_duration_exact(u64::from(us) * 1_000)
                )));
            }
        }
    }
    check_common(db, c, a.cycle, 1)?;
    let run = netcycle_cell(a, &online)?;
    let (cell, plan) = cell_and_plan(&run);
    let args = netcycle::args(&run.spec, &cell, &plan)?;
    for w in netcycle::validate(&args, &online)? {
        errln!("jitterlab: warning: {w}");
    }
    netcycle::check_environment(root, &args)?;
    Ok(run)
}

/// `jitterlab run netcycle`'s one-cell spec: the managing node on `--cpu`,
/// the CN emulator on `--cn-cpu` (else the first neighbour CPU).
pub fn netcycle_cell(a: &NetcycleRunArgs, online: &CpuList) -> Result<OneCell> {
    let cpu = cpu_or_last(online, a.cpu)?;
    let node_ids = match &a.cdc {
        Some(path) => netcycle::read_cdc(path)?.0,
        None => a.node_ids.clone().unwrap_or_default(),
    };
    let cns = match node_ids.len() {
        0 => a.cns,
        n => n as u8,
    };
    let params = ProbeParams::new(NetcycleParams {
        cns,
        node_ids,
        chaining: a.chaining,
        wait: a.wait,
        cn_wait: a.cn_wait,
        response_timeout_ns: a.response_timeout,
        out_bytes: a.out_bytes,
        in_bytes: a.in_bytes,
        max_late_cycles: a.max_late_cycles,
        max_missed_pres: a.max_missed_pres,
        cn_cpu: a.cn_cpu,
        role: a.role,
        interface: a.interface.clone(),
        pcap: a.pcap.as_ref().map(|p| p.to_string_lossy().into_owned()),
        identity: a.identity,
        cdc: a.cdc.as_ref().map(|p| p.to_string_lossy().into_owned()),
    });
    debug_assert_eq!(params.kind(), ProbeKind::Netcycle);
    common_cell(params, a.cycle, vec![cpu], online, &a.common)
}
