//! `jitterlab run roundtrip`: its flags, their checks, and the one-cell
//! spec they make ([Red Hat controls]'s screw-to-screw round trip over OPC UA
//! PubSub). Built on the flags' toolkit ([`crate::probe::flags`]), which
//! holds what every kind's flags share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;

use anyhow::Result;
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::roundtrip::defaults as rt_defaults;
use jitterlab_core::roundtrip::params::PARAMS;
use jitterlab_core::roundtrip::{Direction, Role, RoundtripParams, Transport};
use jitterlab_core::spec::{Params, ProbeParams};
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::output::errln;
use crate::probe::flags::{
    cell_and_plan, check_common, check_machine_memory, common_cell, common_flags, cpu_or_last,
    flag_of, key_params, param_rule, probe_cpu, refuse_periodic_flags, time_text, CommonArgs, Flag,
    FlagValues, FromFlags, KindFlags, OneCell, ValueKind,
};
use crate::probe::roundtrip;
use crate::store::Db;
use crate::system::host;

/// `jitterlab run roundtrip`'s flags, as the command line gave them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoundtripRunArgs {
    /// `--cpu`: the controller's.
    pub cpu: Option<usize>,
    /// `--io-cpu`.
    pub io_cpu: Option<usize>,
    /// `--role`.
    pub role: Role,
    /// `--interface`.
    pub interface: Option<String>,
    /// `--transport`.
    pub transport: Transport,
    /// `--controller-period`, ns.
    pub controller_period: u64,
    /// `--scan`, ns.
    pub scan: u64,
    /// `--working-set`, bytes.
    pub working_set: u64,
    /// `--io-period`, ns.
    pub io_period: u64,
    /// `--network-budget`, ns.
    pub network_budget: u64,
    /// `--opcua`, ns.
    pub opcua: Option<u64>,
    /// `--budget`, ns.
    pub budget: Option<u64>,
    /// `--seed`.
    pub seed: Option<u64>,
    /// `--input-url`.
    pub input_url: Option<String>,
    /// `--output-url`.
    pub output_url: Option<String>,
    /// `--input-publisher-id`.
    pub input_publisher_id: Option<String>,
    /// `--output-publisher-id`.
    pub output_publisher_id: Option<String>,
    /// `--input-writer-group`.
    pub input_writer_group: Option<u16>,
    /// `--output-writer-group`.
    pub output_writer_group: Option<u16>,
    /// `--input-writer`.
    pub input_writer: Option<u16>,
    /// `--output-writer`.
    pub output_writer: Option<u16>,
    /// `--input-fields`.
    pub input_fields: Option<Vec<String>>,
    /// `--output-fields`.
    pub output_fields: Option<Vec<String>>,
    /// `--input-encoding`.
    pub input_encoding: Option<String>,
    /// `--output-encoding`.
    pub output_encoding: Option<String>,
    /// `--input-header`.
    pub input_header: Option<Vec<String>>,
    /// `--output-header`.
    pub output_header: Option<Vec<String>>,
    /// `--map IN=OUT`.
    pub map: Option<(usize, usize)>,
    /// `--samples-to` (hidden).
    pub samples_to: Option<String>,
    /// Options every probe shares (--threshold: "% over" counts
    /// screw-to-screw samples over the budget unless another threshold is
    /// given; --max-latency: use --budget).
    pub common: CommonArgs,
}

/// `--role`'s names and their help.
const ROLE: ValueKind = ValueKind::Choice {
    names: &["both", "io", "controller"],
    helps: &[
        "Both ends here, in two namespaces joined by a veth pair (every metric)",
        "The I/O simulator only, against a controller on --interface (T1→T4)",
        "The controller only, for an I/O simulator on --interface (T2→T3)",
    ],
};

/// A flag of the "Messages" heading.
fn message(id: &'static str, kind: ValueKind, value_name: &'static str, help: &str) -> Flag {
    Flag::new(id, kind, help)
        .value_name(value_name)
        .heading("Messages")
}

/// `jitterlab run roundtrip`'s flags: the CPUs, `--role`, `--interface`,
/// its keys', the controller period, the seed, the messages' own
/// (under "Messages") and the common ones.
pub fn flags() -> KindFlags {
    use ValueKind::{Checked, Cpu, Int, Period, Text, TextList, Unsigned};
    const ID: ValueKind = Int(0, u16::MAX as i64);
    let mut flags = vec![
        Flag::new(
            "cpu",
            Cpu,
            "CPU of the controller's real-time task [default: the last online CPU]",
        ),
        flag_of(&PARAMS, "io_cpu"),
        Flag::new("role", ROLE, "Which end(s) of the loop run here")
            .value_name("ROLE")
            .default(Role::Both.name()),
        Flag::new(
            "interface",
            Text,
            "The network interface of a one-role run across a real network (--role io or \
             controller); without it both roles run here, in two network namespaces joined by \
             a veth pair",
        )
        .value_name("IF"),
        flag_of(&PARAMS, "transport"),
        Flag::new(
            "controller_period",
            Period,
            "The controller task's period (the budget's \"Controller rate\")",
        )
        .default(time_text(rt_defaults::CONTROLLER_PERIOD_NS)),
        flag_of(&PARAMS, "scan"),
        flag_of(&PARAMS, "working_set"),
        flag_of(&PARAMS, "io_period"),
        flag_of(&PARAMS, "network_budget"),
        flag_of(&PARAMS, "opcua"),
        flag_of(&PARAMS, "budget"),
        Flag::new(
            "seed",
            Unsigned,
            "Seed of the random instants the input changes at [default: from the clock, \
             recorded in the result]",
        ),
        message(
            "input_url",
            Text,
            "URL",
            "Where the I/O simulator's messages go [default: opc.udp://224.0.0.22:4840, or \
             opc.eth://01-00-5E-00-00-01]",
        ),
        message(
            "output_url",
            Text,
            "URL",
            "Where the controller's messages go [default: opc.udp://224.0.0.22:4841, or \
             opc.eth://01-00-5E-00-00-02]",
        ),
        message(
            "input_publisher_id",
            Text,
            "TYPE:VALUE",
            "The I/O simulator's PublisherId, type and value (byte, uint16, uint32, uint64 or \
             string) [default: uint16:2234]",
        ),
        message(
            "output_publisher_id",
            Text,
            "TYPE:VALUE",
            "The controller's PublisherId [default: uint16:2235]",
        ),
        message(
            "input_writer_group",
            ID,
            "ID",
            "The I/O simulator's WriterGroupId [default: 100]",
        ),
        message(
            "output_writer_group",
            ID,
            "ID",
            "The controller's WriterGroupId [default: 100]",
        ),
        message(
            "input_writer",
            ID,
            "ID",
            "The I/O simulator's DataSetWriterId [default: 62541]",
        ),
        message(
            "output_writer",
            ID,
            "ID",
            "The controller's DataSetWriterId [default: 62541]",
        ),
        message(
            "input_fields",
            TextList,
            "LIST",
            "The I/O simulator's field types, in order (boolean, sbyte, byte, int16, uint16, \
             int32, uint32, int64, uint64, float, double, datetime) [default: datetime]",
        ),
        message(
            "output_fields",
            TextList,
            "LIST",
            "The controller's field types [default: datetime]",
        ),
        message(
            "input_encoding",
            Text,
            "ENCODING",
            "The I/O simulator's field encoding: variant, rawdata or datavalue [default: \
             variant]",
        ),
        message(
            "output_encoding",
            Text,
            "ENCODING",
            "The controller's field encoding [default: variant]",
        ),
        message(
            "input_header",
            TextList,
            "LIST",
            "The optional parts of the I/O simulator's messages: nm-sequence (NetworkMessage \
             SequenceNumber), dsm-sequence (DataSetMessage SequenceNumber), timestamp \
             (DataSetMessage Timestamp), config-version (derived from the field list), or \
             none; the reference's fixed-size layout is nm-sequence,dsm-sequence with rawdata \
             [default: nm-sequence,timestamp,config-version]",
        ),
        message(
            "output_header",
            TextList,
            "LIST",
            "The optional parts of the controller's messages [default: \
             nm-sequence,timestamp,config-version]",
        ),
        message(
            "map",
            Checked(|s| field_map(s).map(drop)),
            "IN=OUT",
            "Which input field the I/O simulator changes, and which output field the \
             controller copies it to (0-based) [default: 0=0]",
        ),
        Flag::new(
            "samples_to",
            Text,
            "Hand every controller cycle to the host through the named pipe PATH (set by the \
             host for a controller it runs in a container)",
        )
        .value_name("PATH")
        .hidden(),
    ];
    flags.extend(common_flags());
    KindFlags {
        about: "Screw-to-screw round trip over OPC UA PubSub ([Red Hat controls]): an I/O \
                simulator and a controller, checked against the worst-case budget",
        long_about: None,
        hidden: false,
        flags,
    }
}

impl FromFlags for RoundtripRunArgs {
    fn from_flags(v: &FlagValues) -> Result<RoundtripRunArgs> {
        let id = |name: &str| v.opt_i64(name).map(|n| n as u16);
        // Its keys' values, read by its key table's own check.
        let p: RoundtripParams = key_params(ProbeKind::Roundtrip, v, v.u64("controller_period"))?;
        Ok(RoundtripRunArgs {
            cpu: v.opt_usize("cpu"),
            io_cpu: p.io_cpu,
            role: Role::ALL
                .into_iter()
                .find(|r| r.name() == v.text("role"))
                .expect("one of --role's names"),
            interface: v.opt_text("interface"),
            transport: p.transport,
            controller_period: v.u64("controller_period"),
            scan: p.scan_ns,
            working_set: p.working_set_bytes,
            io_period: p.io_period_ns,
            network_budget: p.network_ns,
            opcua: p.opcua_ns,
            budget: p.budget_ns,
            seed: v.opt_u64("seed"),
            input_url: v.opt_text("input_url"),
            output_url: v.opt_text("output_url"),
            input_publisher_id: v.opt_text("input_publisher_id"),
            output_publisher_id: v.opt_text("output_publisher_id"),
            input_writer_group: id("input_writer_group"),
            output_writer_group: id("output_writer_group"),
            input_writer: id("input_writer"),
            output_writer: id("output_writer"),
            input_fields: v.opt_texts("input_fields"),
            output_fields: v.opt_texts("output_fields"),
            input_encoding: v.opt_text("input_encoding"),
            output_encoding: v.opt_text("output_encoding"),
            input_header: v.opt_texts("input_header"),
            output_header: v.opt_texts("output_header"),
            map: v
                .opt_text("map")
                .map(|m| field_map(&m).expect("checked by the command line")),
            samples_to: v.opt_text("samples_to"),
            common: CommonArgs::read(v),
        })
    }
}

/// `--map IN=OUT`.
fn field_map(s: &str) -> Result<(usize, usize), String> {
    let bad = || format!("{s:?}: give the input and output field numbers as IN=OUT, e.g. 0=0");
    let (a, b) = s.split_once('=').ok_or_else(bad)?;
    Ok((
        a.trim().parse().map_err(|_| bad())?,
        b.trim().parse().map_err(|_| bad())?,
    ))
}

/// One direction of the messages from its flags over `d`'s defaults.
#[allow(clippy::too_many_arguments)]
fn direction(
    mut d: Direction,
    url: &Option<String>,
    publisher_id: &Option<String>,
    writer_group: Option<u16>,
    writer: Option<u16>,
    fields: &Option<Vec<String>>,
    encoding: &Option<String>,
    header: &Option<Vec<String>>,
    marker: Option<usize>,
) -> Direction {
    d.url = url.clone().or(d.url);
    if let Some(p) = publisher_id {
        d.publisher_id = p.clone();
    }
    d.writer_group_id = writer_group.unwrap_or(d.writer_group_id);
    d.dataset_writer_id = writer.unwrap_or(d.dataset_writer_id);
    if let Some(f) = fields {
        d.fields = f.clone();
    }
    if let Some(e) = encoding {
        d.encoding = e.clone();
    }
    if let Some(h) = header {
        d.header = h.clone();
    }
    d.marker_field = marker.unwrap_or(d.marker_field);
    d
}

/// `jitterlab run roundtrip`, as the command line gave it: see [`check`].
pub fn one_cell(v: &FlagValues, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &RoundtripRunArgs::from_flags(v)?)
}

/// Checks `jitterlab run roundtrip`'s flags against the machine and makes
/// its one-cell spec.
pub fn check(root: &Path, db: &Db, a: &RoundtripRunArgs) -> Result<OneCell> {
    let c = &a.common;
    refuse_periodic_flags(ProbeKind::Roundtrip, c)?;
    if c.max_latency.is_some() {
        return Err(bad(
            "--max-latency does not apply to run roundtrip: its limit is the budget; give --budget TIME",
        ));
    }
    if c.cycles.is_some() {
        return Err(bad(
            "run roundtrip ends at its --duration; --cycles does not apply",
        ));
    }
    let online = host::online_cpus(root)?;
    probe_cpu(&online, a.cpu, "--cpu")?;
    if a.controller_period == 0 {
        return Err(bad(
            "--controller-period must be positive; give e.g. --controller-period 5ms",
        ));
    }
    RoundtripParams {
        scan_ns: a.scan,
        ..RoundtripParams::default()
    }
    .validate(a.controller_period)
    .map_err(param_rule)?;
    if a.io_period == 0 {
        return Err(bad(
            "--io-period must be positive; give e.g. --io-period 500us",
        ));
    }
    if a.budget == Some(0) {
        return Err(bad("--budget must be positive; give e.g. --budget 6.7ms"));
    }
    if a.samples_to.is_some() && a.role != Role::Controller {
        return Err(bad("--samples-to applies only to --role controller"));
    }
    match (a.role, &a.interface) {
        (Role::Both, Some(_)) => {
            return Err(bad(
                "--interface runs one role per machine: add --role io or --role controller, or drop --interface to run both here",
            ))
        }
        (Role::Io | Role::Controller, None) => {
            return Err(bad(format!(
                "--role {} runs one end across a real network: give --interface IF (or --role both to run both ends here)",
                a.role.name()
            )))
        }
        _ => {}
    }
    check_machine_memory(root, "--working-set ", a.working_set)?;
    check_common(db, c, a.controller_period, 1)?;
    let run = roundtrip_cell(a, &online)?;
    let (cell, plan) = cell_and_plan(&run);
    let args = roundtrip::args(&run.spec, &cell, &plan)?;
    for w in roundtrip::validate(&args, &online)? {
        errln!("jitterlab: warning: {w}");
    }
    roundtrip::check_environment(root, &args)?;
    Ok(run)
}

/// `jitterlab run roundtrip`'s one-cell spec: the controller on `--cpu`,
/// the I/O simulator on `--io-cpu` (else the first neighbour CPU).
pub fn roundtrip_cell(a: &RoundtripRunArgs, online: &CpuList) -> Result<OneCell> {
    let cpu = cpu_or_last(online, a.cpu)?;
    let params = ProbeParams::new(RoundtripParams {
        role: a.role,
        io_period_ns: a.io_period,
        scan_ns: a.scan,
        working_set_bytes: a.working_set,
        network_ns: a.network_budget,
        opcua_ns: a.opcua,
        budget_ns: a.budget,
        transport: a.transport,
        interface: a.interface.clone(),
        io_cpu: a.io_cpu,
        seed: a.seed,
        samples_to: a.samples_to.clone(),
        input: direction(
            Direction::input(),
            &a.input_url,
            &a.input_publisher_id,
            a.input_writer_group,
            a.input_writer,
            &a.input_fields,
            &a.input_encoding,
            &a.input_header,
            a.map.map(|m| m.0),
        ),
        output: direction(
            Direction::output(),
            &a.output_url,
            &a.output_publisher_id,
            a.output_writer_group,
            a.output_writer,
            &a.output_fields,
            &a.output_encoding,
            &a.output_header,
            a.map.map(|m| m.1),
        ),
    });
    let mut run = common_cell(params, a.controller_period, vec![cpu], online, &a.common)?;
    // The threshold is the budget unless another one was given.
    let probe = &mut run.spec.probes[0];
    if probe.threshold_ns == Some(defaults::THRESHOLD_NS) {
        probe.threshold_ns = None;
    }
    Ok(run)
}
