//! `jitterlab run roundtrip`: its flags, their checks, and the one-cell
//! spec they make ([Red Hat controls]'s screw-to-screw round trip over OPC UA
//! PubSub). Built on the flags' toolkit ([`crate::probe::flags`]), which
//! holds what every kind's flags share.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::path::Path;

use anyhow::Result;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
use clap::Args;
use jitterlab_core::defaults;
use jitterlab_core::result::ProbeKind;
use jitterlab_core::roundtrip::defaults as rt_defaults;
use jitterlab_core::roundtrip::{Direction, Role, RoundtripParams, Transport};
use jitterlab_core::spec::{Params, ProbeParams};
use jitterlab_core::units::CpuList;

use crate::error::bad;
use crate::output::errln;
use crate::probe::flags::parse::{default_size, default_time, duration, memory, period};
use crate::probe::flags::{
    cell_and_plan, check_common, check_machine_memory, common_cell, cpu_or_last, matched,
    param_rule, probe_cpu, refuse_periodic_flags, subcommand, CommonArgs, OneCell,
};
use crate::probe::roundtrip;
use crate::store::Db;
use crate::system::host;

/// Screw-to-screw round trip over OPC UA PubSub ([Red Hat controls]): an I/O
/// simulator and a controller, checked against the worst-case budget.
#[derive(Debug, Args)]
pub struct RoundtripRunArgs {
    /// CPU of the controller's real-time task [default: the last online
    /// CPU].
    #[arg(long, value_name = "CPU")]
    pub cpu: Option<usize>,

    /// CPU of the I/O simulator's real-time loop [default: the first other
    /// online CPU].
    #[arg(long, value_name = "CPU")]
    pub io_cpu: Option<usize>,

    /// Which end(s) of the loop run here.
    #[arg(long, default_value = Role::Both.name(), value_parser = role_parser())]
    pub role: Role,

    /// The network interface of a one-role run across a real network
    /// (--role io or controller); without it both roles run here, in two
    /// network namespaces joined by a veth pair.
    #[arg(long, value_name = "IF")]
    pub interface: Option<String>,

    /// The transport of the UADP messages.
    #[arg(long, default_value = Transport::Udp.name(), value_parser = transport_parser())]
    pub transport: Transport,

    /// The controller task's period (the budget's "Controller rate").
    #[arg(long, value_name = "TIME", default_value = default_time(rt_defaults::CONTROLLER_PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub controller_period: u64,

    /// The controller's scan per cycle (the budget's "Controller scan
    /// time"; 0 for none; shorter than the controller period).
    #[arg(long, value_name = "TIME", default_value = default_time(rt_defaults::ROUNDTRIP_SCAN_NS), value_parser = duration, allow_hyphen_values = true)]
    pub scan: u64,

    /// Memory the scan walks per cycle (0 for none).
    #[arg(long, value_name = "SIZE", default_value = default_size(defaults::WORKING_SET_BYTES), value_parser = memory)]
    pub working_set: u64,

    /// The I/O simulator's publish and apply period (the budget's "OPC UA"
    /// term, counted twice).
    #[arg(long, value_name = "TIME", default_value = default_time(rt_defaults::IO_PERIOD_NS), value_parser = period, allow_hyphen_values = true)]
    pub io_period: u64,

    /// The budget's network term, each way (counted twice).
    #[arg(long, value_name = "TIME", default_value = default_time(rt_defaults::NETWORK_BUDGET_NS), value_parser = duration, allow_hyphen_values = true)]
    pub network_budget: u64,

    /// The budget's OPC UA term, each way [default: --io-period].
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub opcua: Option<u64>,

    /// A budget of one's own instead of the computed worst case; any
    /// screw-to-screw sample over the budget fails the run (exit 1).
    #[arg(long, value_name = "TIME", value_parser = duration, allow_hyphen_values = true)]
    pub budget: Option<u64>,

    /// Seed of the random instants the input changes at [default: from the
    /// clock, recorded in the result].
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,

    /// Where the I/O simulator's messages go [default:
    /// opc.udp://224.0.0.22:4840, or opc.eth://01-00-5E-00-00-01].
    #[arg(long, value_name = "URL", help_heading = "Messages")]
    pub input_url: Option<String>,

    /// Where the controller's messages go [default:
    /// opc.udp://224.0.0.22:4841, or opc.eth://01-00-5E-00-00-02].
    #[arg(long, value_name = "URL", help_heading = "Messages")]
    pub output_url: Option<String>,

    /// The I/O simulator's PublisherId, type and value (byte, uint16,
    /// uint32, uint64 or string) [default: uint16:2234].
    #[arg(long, value_name = "TYPE:VALUE", help_heading = "Messages")]
    pub input_publisher_id: Option<String>,

    /// The controller's PublisherId [default: uint16:2235].
    #[arg(long, value_name = "TYPE:VALUE", help_heading = "Messages")]
    pub output_publisher_id: Option<String>,

    /// The I/O simulator's WriterGroupId [default: 100].
    #[arg(long, value_name = "ID", help_heading = "Messages")]
    pub input_writer_group: Option<u16>,

    /// The controller's WriterGroupId [default: 100].
    #[arg(long, value_name = "ID", help_heading = "Messages")]
    pub output_writer_group: Option<u16>,

    /// The I/O simulator's DataSetWriterId [default: 62541].
    #[arg(long, value_name = "ID", help_heading = "Messages")]
    pub input_writer: Option<u16>,

    /// The controller's DataSetWriterId [default: 62541].
    #[arg(long, value_name = "ID", help_heading = "Messages")]
    pub output_writer: Option<u16>,

    /// The I/O simulator's field types, in order (boolean, sbyte, byte,
    /// int16, uint16, int32, uint32, int64, uint64, float, double, datetime)
    /// [default: datetime].
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Messages"
    )]
    pub input_fields: Option<Vec<String>>,

    /// The controller's field types [default: datetime].
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Messages"
    )]
    pub output_fields: Option<Vec<String>>,

    /// The I/O simulator's field encoding: variant, rawdata or datavalue
    /// [default: variant].
    #[arg(long, value_name = "ENCODING", help_heading = "Messages")]
    pub input_encoding: Option<String>,

    /// The controller's field encoding [default: variant].
    #[arg(long, value_name = "ENCODING", help_heading = "Messages")]
    pub output_encoding: Option<String>,

    /// The optional parts of the I/O simulator's messages: nm-sequence
    /// (NetworkMessage SequenceNumber), dsm-sequence (DataSetMessage
    /// SequenceNumber), timestamp (DataSetMessage Timestamp),
    /// config-version (derived from the field list), or none; the
    /// reference's fixed-size layout is nm-sequence,dsm-sequence with
    /// rawdata [default: nm-sequence,timestamp,config-version].
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Messages"
    )]
    pub input_header: Option<Vec<String>>,

    /// The optional parts of the controller's messages [default:
    /// nm-sequence,timestamp,config-version].
    #[arg(
        long,
        value_name = "LIST",
        value_delimiter = ',',
        help_heading = "Messages"
    )]
    pub output_header: Option<Vec<String>>,

    /// Which input field the I/O simulator changes, and which output field
    /// the controller copies it to (0-based) [default: 0=0].
    #[arg(long, value_name = "IN=OUT", value_parser = field_map, help_heading = "Messages")]
    pub map: Option<(usize, usize)>,

    /// Hand every controller cycle to the host through the named pipe PATH
    /// (set by the host for a controller it runs in a container).
    #[arg(long, value_name = "PATH", hide = true)]
    pub samples_to: Option<String>,

    /// Options every probe shares (--threshold: "% over" counts
    /// screw-to-screw samples over the budget unless another threshold is
    /// given; --max-latency: use --budget).
    #[command(flatten)]
    pub common: CommonArgs,
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

/// `--role`, each name with its help.
fn role_parser() -> impl TypedValueParser<Value = Role> {
    let help = |r: Role| match r {
        Role::Both => "Both ends here, in two namespaces joined by a veth pair (every metric)",
        Role::Io => "The I/O simulator only, against a controller on --interface (T1→T4)",
        Role::Controller => "The controller only, for an I/O simulator on --interface (T2→T3)",
    };
    PossibleValuesParser::new(Role::ALL.map(|r| PossibleValue::new(r.name()).help(help(r)))).map(
        |name| {
            Role::ALL
                .into_iter()
                .find(|r| r.name() == name)
                .expect("one of the possible values")
        },
    )
}

/// `--transport`, each name with its help.
fn transport_parser() -> impl TypedValueParser<Value = Transport> {
    let help = |t: Transport| match t {
        Transport::Udp => "UADP over UDP (opc.udp://224.0.0.22:4840)",
        Transport::Eth => {
            "UADP in raw Ethernet frames (opc.eth://01-00-5E-00-00-01, EtherType 0xB62C)"
        }
    };
    PossibleValuesParser::new(Transport::ALL.map(|t| PossibleValue::new(t.name()).help(help(t))))
        .map(|name| Transport::parse(&name).expect("one of the possible values"))
}

/// `jitterlab run roundtrip`'s subcommand.
pub fn command() -> clap::Command {
    subcommand::<RoundtripRunArgs>(ProbeKind::Roundtrip)
}

/// `jitterlab run roundtrip`, as clap matched it: see [`check`].
pub fn one_cell(m: &clap::ArgMatches, root: &Path, db: &Db) -> Result<OneCell> {
    check(root, db, &matched(m)?)
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
