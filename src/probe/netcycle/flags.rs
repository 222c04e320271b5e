//! `jitterlab run netcycle`: its flags, their checks, and the one-cell spec
//! they make ([Baumgartner POWERLINK]'s POWERLINK managing node polling N controlled
//! nodes). Built on the flags' toolkit ([`crate::probe::flags`]), which
//! holds what every kind's flags share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::{Path, PathBuf};

use anyhow::Result;
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
use crate::probe::flags::{
    cell_and_plan, check_common, common_cell, common_flags, cpu_or_last, flag_of, key_params,
    probe_cpu, time_text, CommonArgs, Flag, FlagValues, FromFlags, KindFlags, OneCell, ValueKind,
};
use crate::probe::netcycle;
use crate::store::Db;
use crate::system::host;

/// `jitterlab run netcycle`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetcycleRunArgs {
    /// `--cycle`, ns.
    pub cycle: u64,
    /// `--cns`.
    pub cns: u8,
    /// `--node-ids`, ascending.
    pub node_ids: Option<NodeIdList>,
    /// `--cdc`.
    pub cdc: Option<PathBuf>,
    /// `--chaining`.
    pub chaining: bool,
    /// `--wait`.
    pub wait: Wait,
    /// `--cn-wait`.
    pub cn_wait: Wait,
    /// `--response-timeout`, ns.
    pub response_timeout: u64,
    /// `--out-bytes`.
    pub out_bytes: u16,
    /// `--in-bytes`.
    pub in_bytes: u16,
    /// `--cpu`: the managing node's.
    pub cpu: Option<usize>,
    /// `--cn-cpu`.
    pub cn_cpu: Option<usize>,
    /// `--role`.
    pub role: NodeRole,
    /// `--interface`.
    pub interface: Option<String>,
    /// `--pcap`.
    pub pcap: Option<PathBuf>,
    /// `--identity`.
    pub identity: Option<Identity>,
    /// `--max-late-cycles`.
    pub max_late_cycles: u64,
    /// `--max-missed-pres`.
    pub max_missed_pres: u64,
    /// Options every probe shares (--max-latency and --max-jitter limit the
    /// SoC's release latency and jitter; --max-exec, --histogram and
    /// --break-trace do not apply).
    pub common: CommonArgs,
}

/// The ids `--node-ids` gives, ascending.
pub type NodeIdList = Vec<u8>;

/// `--cn-wait`'s names and their help.
const CN_WAIT: ValueKind = ValueKind::Choice {
    names: &["blocking", "busy-poll"],
    helps: &[
        "Sleep until a frame comes; each end's receive work is steered to its own CPU, so each \
         PReq and PRes sends an interrupt to the other CPU (a VM exit on a VM: about 3x the \
         managing node's load, see BENCHMARKS.md)",
        "Spin on the receive ring for 100 µs after each frame, then sleep (a CN answering \
         within µs, like hardware; the default); no receive steering, and the managing node \
         spins for the CNs' response time before it sleeps: no interrupt per PRes",
    ],
};

/// `--role`'s names and their help.
const ROLE: ValueKind = ValueKind::Choice {
    names: &["both", "mn", "cn"],
    helps: &[
        "The managing node and the emulated CNs here, in two namespaces joined by a veth pair",
        "The managing node only, polling real CNs on --interface",
        "The emulated CNs only, answering a real managing node on --interface",
    ],
};

/// `jitterlab run netcycle`'s flags: `--cycle`, its keys', the nodes'
/// link and configuration options, the CPUs, the role, and the common
/// ones.
pub fn flags() -> KindFlags {
    use ValueKind::{Checked, Cpu, Path, Period, Text};
    let mut flags = vec![
        Flag::new("cycle", Period, "The POWERLINK cycle time")
            .default(time_text(defaults::NETCYCLE_PERIOD_NS)),
        flag_of(&PARAMS, "cns"),
        Flag::new(
            "node_ids",
            Checked(|s| NetcycleParams::parse_node_ids(s).map(drop)),
            "The controlled nodes' ids instead of 1..=N: a real network's, e.g. `1,32,110`, or \
             ranges, `1-3,10` (each 1-239)",
        )
        .value_name("LIST")
        .conflicts(&["cns"]),
        Flag::new(
            "cdc",
            Path,
            "Configure the CNs from this concise DCF (openCONFIGURATOR's `mnobd.cdc`, as the \
             reference MN loads it): it names the nodes, and its cycle (0x1006) must be the \
             --cycle measured",
        )
        .conflicts(&["cns", "node_ids"]),
        flag_of(&PARAMS, "chaining"),
        flag_of(&PARAMS, "wait"),
        Flag::new(
            "cn_wait",
            CN_WAIT,
            "How the CN emulator waits for each frame (on its own CPU, never the managing \
             node's)",
        )
        .value_name("CN_WAIT")
        .default(Wait::BusyPoll.name()),
        flag_of(&PARAMS, "response_timeout"),
        flag_of(&PARAMS, "out_bytes"),
        flag_of(&PARAMS, "in_bytes"),
        Flag::new(
            "cpu",
            Cpu,
            "CPU of the managing node's real-time thread [default: the last online CPU]",
        ),
        flag_of(&PARAMS, "cn_cpu"),
        Flag::new("role", ROLE, "Which nodes run here")
            .value_name("ROLE")
            .default(NodeRole::Both.name()),
        Flag::new(
            "interface",
            Text,
            "The network interface of a one-role run on a real POWERLINK segment (--role mn or \
             cn); without it both roles run here, in two network namespaces joined by a veth \
             pair",
        )
        .value_name("IF"),
        Flag::new(
            "pcap",
            Path,
            "Write what the CN side received and sent to FILE (nanosecond pcap, the kernel's \
             receive stamps) — with `--role mn`, what the managing node sent (stamped after the \
             send, the SoC with its transmit stamp) and received —, for Wireshark or \
             `jitterlab analyze`; replaced when the run ends (not `-`: a capture is binary)",
        ),
        Flag::new(
            "identity",
            Checked(|s| Identity::parse(s).map(drop)),
            "The identity the emulated CNs report in 0x1000, 0x1018 and their IdentResponse \
             (--role cn or both): any of \
             `vendor=…,product=…,revision=…,serial=…,device-type=…`, decimal or 0x hex \
             [default: device-type 0x000F0191 (CiA 401 digital I/O), vendor 0, product 0, \
             revision 0x00010000, serial the node id]",
        )
        .value_name("LIST"),
        flag_of(&PARAMS, "max_late_cycles"),
        flag_of(&PARAMS, "max_missed_pres"),
    ];
    flags.extend(common_flags());
    KindFlags {
        about: "A POWERLINK managing node polling N emulated controlled nodes ( [Baumgartner \
                POWERLINK]): SoC jitter, cycle completion, missed PRes, held or not",
        long_about: None,
        hidden: false,
        flags,
    }
}

impl FromFlags for NetcycleRunArgs {
    fn from_flags(v: &FlagValues) -> Result<NetcycleRunArgs> {
        // Its keys' values, read by its key table's own check.
        let p: NetcycleParams = key_params(ProbeKind::Netcycle, v, v.u64("cycle"))?;
        Ok(NetcycleRunArgs {
            cycle: v.u64("cycle"),
            cns: p.cns,
            node_ids: v
                .opt_text("node_ids")
                .map(|l| NetcycleParams::parse_node_ids(&l).expect("checked by the command line")),
            cdc: v.opt_path("cdc"),
            chaining: p.chaining,
            wait: p.wait,
            cn_wait: Wait::parse(&v.text("cn_wait")).expect("one of the waits"),
            response_timeout: p.response_timeout_ns,
            out_bytes: p.out_bytes,
            in_bytes: p.in_bytes,
            cpu: v.opt_usize("cpu"),
            cn_cpu: p.cn_cpu,
            role: NodeRole::parse(&v.text("role")).expect("one of the roles"),
            interface: v.opt_text("interface"),
            pcap: v.opt_path("pcap"),
            identity: v
                .opt_text("identity")
                .map(|l| Identity::parse(&l).expect("checked by the command line")),
            max_late_cycles: p.max_late_cycles,
            max_missed_pres: p.max_missed_pres,
            common: CommonArgs::read(v),
        })
    }
}

/// `jitterlab run netcycle`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &NetcycleRunArgs::from_flags(v)?)
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
