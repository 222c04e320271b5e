//! [Red Hat controls]'s screw-to-screw round trip, without I/O: the worst-case budget
//! and the bookkeeping of both ends of the loop.
//!
//! An I/O simulator publishes its input image over OPC UA PubSub, a
//! controller (the soft PLC) subscribes, runs its cyclic task and publishes
//! its output image back, and the I/O simulator applies it. The loops are
//! asynchronous, so the time from a change of the input (T1) to the I/O
//! tick that first applies the output computed from it (T4) varies between
//! a floor and a worst case that a control engineer computes from the loop
//! periods ([`Budget`]).
//!
//! Which message carries which change is told by a *marker*: the value of
//! the input field the controller copies to its output (by default the
//! tutorial publisher's one DateTime field, set to the instant of the
//! change). [`IoSide`] and [`ControllerSide`] see only markers (`u64`, the
//! field's bits) and stamps, so the definitions below are tested here with
//! injected values, independent of the wire format and of the clock:
//!
//! | stamp | where | what |
//! |---|---|---|
//! | T1 | I/O | the input changes (a random instant, [`ChangeSchedule`]) |
//! | T2 | controller | kernel receive stamp of the first message carrying the change |
//! | T3 | controller | the send of the output computed from that input |
//! | T4 | I/O | the tick that first applies that output |
//! | T4rx | I/O | kernel receive stamp of the message that carried it |
//!
//! Which received messages are taken at all is told by their sequence
//! numbers ([`SequenceCounts`]): a message continues the sender's stream,
//! or is a duplicate, a late (stale) one, or a stranger's with the same
//! identity (UADP without message security cannot authenticate a sender);
//! only the first kind becomes the input or the output image, so a forged
//! or repeated message is never a change's T2.
//!
//! None of it allocates after construction: both sides run in real-time
//! loops (design rule 2).
//!
//! The design rules and documents cited here are in `docs/design.md`.

pub mod defaults;
pub mod params;
mod spec;
pub mod verdict;

use std::net::Ipv4Addr;

use serde::{Deserialize, Serialize};

use crate::defaults::WORKING_SET_BYTES;
use crate::netns::PairKind;
use crate::probe::descriptor::{ns, InContainer, ProbeDescriptor, ReportWords};
use crate::units::format_ns;

// ---------------------------------------------------------------------------
// The probe's parameters.

/// Which end of the loop this run plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Both ends on this machine, in two network namespaces joined by a
    /// veth pair (one clock: every metric).
    #[default]
    Both,
    /// The I/O simulator only, against a controller elsewhere (T1→T4).
    Io,
    /// The controller only, answering an I/O simulator elsewhere (T2→T3).
    Controller,
}

impl Role {
    /// Every role, in the order the command line lists them.
    pub const ALL: [Role; 3] = [Role::Both, Role::Io, Role::Controller];

    /// The name on the command line and in results.
    pub fn name(self) -> &'static str {
        match self {
            Role::Both => "both",
            Role::Io => "io",
            Role::Controller => "controller",
        }
    }
}

/// Which transport carries the messages (OPC UA Part 14).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// UADP over UDP (`opc.udp://224.0.0.22:4840`).
    #[default]
    Udp,
    /// UADP in raw Ethernet frames (`opc.eth://01-00-5E-00-00-01`,
    /// EtherType 0xB62C).
    Eth,
}

impl Transport {
    /// Every transport, in the order the command line lists them.
    pub const ALL: [Transport; 2] = [Transport::Udp, Transport::Eth];

    /// The name on the command line, in specs and in results.
    pub fn name(self) -> &'static str {
        match self {
            Transport::Udp => "udp",
            Transport::Eth => "eth",
        }
    }

    /// The transport of a [`name`](Transport::name).
    pub fn parse(name: &str) -> Option<Transport> {
        Transport::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// What only the `roundtrip` probe takes; the controller's period is the
/// probe's `period` (`--controller-period`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoundtripParams {
    /// Which end(s) run here.
    #[serde(default)]
    pub role: Role,
    /// The I/O simulator's publish and apply period, ns.
    pub io_period_ns: u64,
    /// The controller's scan time per cycle, ns.
    pub scan_ns: u64,
    /// Memory the controller's scan walks per cycle, bytes.
    pub working_set_bytes: u64,
    /// The network allowance of the budget, each way, ns.
    pub network_ns: u64,
    /// The OPC UA term of the budget, ns; `None`: the I/O period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opcua_ns: Option<u64>,
    /// A budget of the user's own, ns; `None`: the computed one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget_ns: Option<u64>,
    /// The transport.
    #[serde(default)]
    pub transport: Transport,
    /// The network interface of a one-role run across a real network;
    /// `None`: both roles on this machine through a veth pair.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interface: Option<String>,
    /// The I/O simulator's CPU; `None`: the first neighbour CPU (for
    /// `jitterlab run`, the first other online CPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io_cpu: Option<usize>,
    /// Seed of the random change instants; `None`: from the clock (and
    /// recorded in the result, so a run can be replayed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seed: Option<u64>,
    /// Where a controller in a container hands its cycles to the host (a
    /// named pipe in a bind-mounted directory); set only by the host for the
    /// `jitterlab run` it starts in the container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples_to: Option<String>,
    /// The I/O simulator's messages: its input image, to the controller.
    #[serde(default = "Direction::input")]
    pub input: Direction,
    /// The controller's messages: its output image, back to the simulator.
    #[serde(default = "Direction::output")]
    pub output: Direction,
}

/// One direction's messages: where they go, who publishes them and what
/// they carry (OPC UA Part 14 identities, as a third-party subscriber or
/// publisher is configured). Text forms, checked by the front doors with
/// the UADP codec's parsers (`crate::uadp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Direction {
    /// `opc.udp://…` or `opc.eth://…`; `None`: the transport's default for
    /// this direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The PublisherId, type and value (`uint16:2234`).
    pub publisher_id: String,
    /// The WriterGroupId.
    pub writer_group_id: u16,
    /// The DataSetWriterId.
    pub dataset_writer_id: u16,
    /// The field types in order (`datetime`, `uint32`, …).
    pub fields: Vec<String>,
    /// `variant`, `rawdata` or `datavalue`.
    pub encoding: String,
    /// The field that carries the change: the input field the I/O simulator
    /// changes, the output field the controller copies it to.
    pub marker_field: usize,
    /// The optional parts every message carries, of [`HEADER_PARTS`]
    /// (stored runs without it had [`Direction::default_header`]).
    #[serde(default = "Direction::default_header")]
    pub header: Vec<String>,
}

/// The optional message parts a direction can send: the NetworkMessage
/// SequenceNumber, the DataSetMessage SequenceNumber, the DataSetMessage
/// Timestamp and the ConfigurationVersion (derived from the field list).
pub const HEADER_PARTS: [&str; 4] = ["nm-sequence", "dsm-sequence", "timestamp", "config-version"];

impl Direction {
    /// The I/O simulator's messages by default: the reference tutorial
    /// publisher's identities and its one DateTime field (PublisherId
    /// UInt16 2234, WriterGroupId 100, DataSetWriterId 62541, Variant).
    pub fn input() -> Direction {
        Direction {
            url: None,
            publisher_id: "uint16:2234".into(),
            writer_group_id: 100,
            dataset_writer_id: 62541,
            fields: vec!["datetime".into()],
            encoding: "variant".into(),
            marker_field: 0,
            header: Direction::default_header(),
        }
    }

    /// The parts sent by default: the NetworkMessage SequenceNumber (so the
    /// receiver counts lost messages), the DataSetMessage Timestamp and the
    /// ConfigurationVersion, as the tutorial publisher sends them.
    pub fn default_header() -> Vec<String> {
        ["nm-sequence", "timestamp", "config-version"]
            .map(String::from)
            .to_vec()
    }

    /// The controller's messages by default: the same shape from
    /// PublisherId UInt16 2235, so the two directions are told apart on a
    /// shared wire.
    pub fn output() -> Direction {
        Direction {
            publisher_id: "uint16:2235".into(),
            ..Direction::input()
        }
    }

    /// The default URL of this direction's messages over `transport`: the
    /// reference's group and port, the output one port (or one MAC) up.
    pub fn default_url(transport: Transport, output: bool) -> &'static str {
        match (transport, output) {
            (Transport::Udp, false) => "opc.udp://224.0.0.22:4840",
            (Transport::Udp, true) => "opc.udp://224.0.0.22:4841",
            (Transport::Eth, false) => "opc.eth://01-00-5E-00-00-01",
            (Transport::Eth, true) => "opc.eth://01-00-5E-00-00-02",
        }
    }
}

impl Default for RoundtripParams {
    fn default() -> Self {
        RoundtripParams {
            role: Role::Both,
            io_period_ns: defaults::IO_PERIOD_NS,
            scan_ns: defaults::ROUNDTRIP_SCAN_NS,
            working_set_bytes: WORKING_SET_BYTES,
            network_ns: defaults::NETWORK_BUDGET_NS,
            opcua_ns: None,
            budget_ns: None,
            transport: Transport::Udp,
            interface: None,
            io_cpu: None,
            seed: None,
            samples_to: None,
            input: Direction::input(),
            output: Direction::output(),
        }
    }
}

impl RoundtripParams {
    /// The budget of a run with these parameters and a controller period of
    /// `controller_period_ns`.
    pub fn budget(&self, controller_period_ns: u64) -> Budget {
        Budget::seed001(
            BudgetInputs {
                opcua_ns: self.opcua_ns.unwrap_or(self.io_period_ns),
                network_ns: self.network_ns,
                controller_period_ns,
                scan_ns: self.scan_ns,
            },
            self.budget_ns,
        )
    }
}

// ---------------------------------------------------------------------------
// The budget.

/// One named term of the worst-case round trip: a loop period, a network
/// allowance or a scan time, and how many times it counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetTerm {
    /// The seed's name of the term (`OPC UA`, `Network`, …).
    pub name: String,
    /// Its value, ns.
    pub value_ns: u64,
    /// How many times it counts: an asynchronous loop counts twice when data
    /// crosses it in both directions (the input waits for a publish tick,
    /// the output for an apply tick).
    pub times: u32,
}

/// The worst-case screw-to-screw time, term by term (the design's "worst-case
/// round trip"), or a budget of the user's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The terms, in the order the seed adds them on the way in; a term
    /// counted twice is added again, in reverse, on the way out.
    pub terms: Vec<BudgetTerm>,
    /// `--budget`: the user's own budget, which replaces the sum.
    pub own_ns: Option<u64>,
}

/// The parameters [Red Hat controls]'s budget is computed from, ns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetInputs {
    /// OPC UA PubSub conversion: the I/O simulator's publish and apply
    /// period (`--io-period`).
    pub opcua_ns: u64,
    /// Network latency allowance, each way (`--network-budget`).
    pub network_ns: u64,
    /// The controller task's period (`--controller-period`).
    pub controller_period_ns: u64,
    /// The controller's scan time (`--scan`).
    pub scan_ns: u64,
}

impl Budget {
    /// [Red Hat controls]'s budget: OPC UA + Network + Controller rate + Controller
    /// scan time + Network + OPC UA.
    pub fn seed001(inputs: BudgetInputs, own_ns: Option<u64>) -> Budget {
        let term = |name: &str, value_ns, times| BudgetTerm {
            name: name.to_string(),
            value_ns,
            times,
        };
        Budget {
            terms: vec![
                term("OPC UA", inputs.opcua_ns, 2),
                term("Network", inputs.network_ns, 2),
                term("Controller rate", inputs.controller_period_ns, 1),
                term("Controller scan time", inputs.scan_ns, 1),
            ],
            own_ns,
        }
    }

    /// The sum of the terms, each as many times as it counts, ns.
    pub fn computed_ns(&self) -> u64 {
        self.terms
            .iter()
            .map(|t| t.value_ns.saturating_mul(u64::from(t.times)))
            .fold(0u64, u64::saturating_add)
    }

    /// The budget samples are checked against: the user's own, else the
    /// computed sum.
    pub fn total_ns(&self) -> u64 {
        self.own_ns.unwrap_or_else(|| self.computed_ns())
    }

    /// The terms in the seed's order of addition: every term counted twice
    /// on the way in, the others, then the twice-counted ones again in
    /// reverse on the way out.
    pub fn sequence(&self) -> Vec<&BudgetTerm> {
        let twice: Vec<&BudgetTerm> = self.terms.iter().filter(|t| t.times >= 2).collect();
        let mut seq = twice.clone();
        for t in &self.terms {
            for _ in 0..t.times.saturating_sub(if t.times >= 2 { 2 } else { 0 }) {
                seq.push(t);
            }
        }
        seq.extend(twice.iter().rev());
        seq
    }

    /// The header of the seed's table: `OPC UA + Network + Controller rate
    /// + Controller scan time + Network + OPC UA = Worst-case`.
    pub fn names_line(&self) -> String {
        let names: Vec<&str> = self.sequence().iter().map(|t| t.name.as_str()).collect();
        format!("{} = Worst-case", names.join(" + "))
    }

    /// The seed's sum: `500 µs + 100 µs + 5000 µs + 500 µs + 100 µs + 500 µs
    /// = 6.7 ms`, then the user's own budget when one replaces it.
    pub fn formula(&self) -> String {
        let values: Vec<String> = self.sequence().iter().map(|t| micros(t.value_ns)).collect();
        let mut s = format!("{} = {}", values.join(" + "), millis(self.computed_ns()));
        if let Some(own) = self.own_ns {
            s.push_str(&format!("; budget given: {}", millis(own)));
        }
        s
    }
}

/// `500 µs`, the way the seed writes a term (fractions of a µs as `ns`).
fn micros(ns: u64) -> String {
    if ns.is_multiple_of(1_000) {
        format!("{} µs", ns / 1_000)
    } else {
        format_ns(ns as i64)
    }
}

/// `6.7 ms`, the way the seed writes the total: milliseconds with the
/// trailing zeros of three decimals removed (below 1 ms, as a term).
fn millis(ns: u64) -> String {
    if !ns.is_multiple_of(1_000) || ns < 1_000_000 {
        return micros(ns);
    }
    let us = ns / 1_000;
    let frac = format!("{:03}", us % 1_000);
    let frac = frac.trim_end_matches('0');
    match frac.is_empty() {
        true => format!("{} ms", us / 1_000),
        false => format!("{}.{frac} ms", us / 1_000),
    }
}

/// Where samples fall against the budget: the seed expects them "clustered
/// around a typical combined loop occurrence, with a few outliers that might
/// approach the calculated worst case", never beyond it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct BudgetBands {
    /// Samples in each band of [`BudgetBands::EDGES`] percent of the budget
    /// (`≤ 25 %`, `≤ 50 %`, `≤ 75 %`, `≤ 90 %`, `≤ 100 %`), then over it.
    pub counts: [u64; 6],
}

impl BudgetBands {
    /// The upper edges of the bands, in percent of the budget.
    pub const EDGES: [u64; 5] = [25, 50, 75, 90, 100];

    /// Counts `value_ns` against `budget_ns`.
    pub fn add(&mut self, value_ns: u64, budget_ns: u64) {
        let band = Self::EDGES
            .iter()
            .position(|&pct| u128::from(value_ns) * 100 <= u128::from(budget_ns) * u128::from(pct))
            .unwrap_or(Self::EDGES.len());
        self.counts[band] += 1;
    }

    /// Samples over the budget.
    pub fn over(&self) -> u64 {
        self.counts[Self::EDGES.len()]
    }

    /// All samples counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The bands' labels, in [`BudgetBands::counts`] order.
    pub fn labels() -> [&'static str; 6] {
        ["≤25%", "25–50%", "50–75%", "75–90%", "90–100%", ">100%"]
    }
}

/// One sample over the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OverBudget {
    /// The sample's number (completed changes, from 0).
    pub index: u64,
    /// Its T1 since the start of the measurement, ns.
    pub since_start_ns: u64,
    /// Its screw-to-screw time, ns.
    pub value_ns: u64,
}

/// The budget verdict of a run: how many samples, how many over the budget
/// (any is a failure), which (the first [`BudgetVerdict::LISTED`]), and
/// where they cluster.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetVerdict {
    /// The budget, term by term.
    pub budget: Budget,
    /// Its total, ns.
    pub budget_ns: u64,
    /// Completed round trips.
    pub samples: u64,
    /// Of them, over the budget.
    pub over: u64,
    /// The first samples over it, with their time.
    pub over_samples: Vec<OverBudget>,
    /// Where the samples fall against the budget.
    pub bands: BudgetBands,
}

impl BudgetVerdict {
    /// How many samples over the budget a verdict lists.
    pub const LISTED: usize = 100;

    /// An empty verdict for `budget`, with room for the listed samples
    /// allocated now (so recording never allocates).
    pub fn new(budget: Budget) -> BudgetVerdict {
        BudgetVerdict {
            budget_ns: budget.total_ns(),
            budget,
            samples: 0,
            over: 0,
            over_samples: Vec::with_capacity(Self::LISTED),
            bands: BudgetBands::default(),
        }
    }

    /// Counts one screw-to-screw sample; true when it is over the budget.
    pub fn add(&mut self, index: u64, since_start_ns: u64, value_ns: u64) -> bool {
        self.samples += 1;
        self.bands.add(value_ns, self.budget_ns);
        let over = value_ns > self.budget_ns;
        if over {
            self.over += 1;
            if self.over_samples.len() < Self::LISTED {
                self.over_samples.push(OverBudget {
                    index,
                    since_start_ns,
                    value_ns,
                });
            }
        }
        over
    }

    /// True when no sample went beyond the budget ("the results should
    /// never go beyond the calculated worst case").
    pub fn held(&self) -> bool {
        self.over == 0
    }
}

// ---------------------------------------------------------------------------
// The I/O simulator's side.

/// A change of the input that is on its way round the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change {
    /// The marker the input carries from T1 on.
    pub marker: u64,
    /// T1 on the I/O simulator's monotonic clock, ns.
    pub t1_ns: u64,
    /// T1 on its realtime clock (the clock of kernel stamps), ns.
    pub t1_real_ns: u64,
}

/// A change that went round: T1 → T4.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completed {
    /// The change.
    pub change: Change,
    /// T4: the tick that first applied the output carrying it (monotonic).
    pub t4_ns: u64,
    /// T4rx: the kernel receive stamp of the message that carried it
    /// (realtime), when the kernel gave one.
    pub t4_rx_real_ns: Option<u64>,
}

impl Completed {
    /// T1 → T4, ns.
    pub fn screw_to_screw_ns(&self) -> u64 {
        self.t4_ns.saturating_sub(self.change.t1_ns)
    }
}

/// The I/O simulator's bookkeeping: one change outstanding at a time, the
/// output image it last received, and the tick that applies it.
#[derive(Debug, Default)]
pub struct IoSide {
    outstanding: Option<Change>,
    /// The output's marker as last received, and the receive stamp of the
    /// first message that carried the outstanding change's marker.
    output: Option<u64>,
    output_rx: Option<u64>,
}

impl IoSide {
    /// A simulator with no change outstanding.
    pub fn new() -> IoSide {
        IoSide::default()
    }

    /// The change outstanding, if any.
    pub fn outstanding(&self) -> Option<Change> {
        self.outstanding
    }

    /// The input changes at T1 (`change`); the previous change must have
    /// completed (one outstanding at a time) — otherwise it is replaced and
    /// `false` is returned, which the caller counts as a lost round trip.
    pub fn change(&mut self, change: Change) -> bool {
        let fresh = self.outstanding.is_none();
        self.outstanding = Some(change);
        self.output_rx = None;
        fresh
    }

    /// A message from the controller arrived with output marker `marker`,
    /// stamped `rx_real_ns` by the kernel.
    pub fn output(&mut self, marker: u64, rx_real_ns: Option<u64>) {
        let carries = self.outstanding.is_some_and(|c| c.marker == marker);
        if carries && self.output != Some(marker) {
            self.output_rx = rx_real_ns;
        }
        self.output = Some(marker);
    }

    /// The I/O tick at `tick_ns` applies the output image last received;
    /// the outstanding change completes when that image carries it.
    pub fn tick(&mut self, tick_ns: u64) -> Option<Completed> {
        let change = self.outstanding?;
        if self.output != Some(change.marker) {
            return None;
        }
        self.outstanding = None;
        Some(Completed {
            change,
            t4_ns: tick_ns,
            t4_rx_real_ns: self.output_rx.take(),
        })
    }
}

/// When the I/O simulator's input changes: a random delay after the
/// previous change completed, uniform over `[min, min + spread)`, so T1
/// falls at every phase of both loops. A seeded generator
/// ([`fastrand::Rng`]), so a run can be replayed.
#[derive(Debug, Clone)]
pub struct ChangeSchedule {
    rng: fastrand::Rng,
    min_ns: u64,
    spread_ns: u64,
}

impl ChangeSchedule {
    /// Delays in `[min_ns, min_ns + spread_ns)`, from `seed`.
    pub fn new(seed: u64, min_ns: u64, spread_ns: u64) -> ChangeSchedule {
        ChangeSchedule {
            rng: fastrand::Rng::with_seed(seed),
            min_ns,
            spread_ns: spread_ns.max(1),
        }
    }

    /// The delay before the next change, ns.
    pub fn next_delay_ns(&mut self) -> u64 {
        self.min_ns + self.rng.u64(0..self.spread_ns)
    }

    /// A phase in `[0, period_ns)`: where the simulator's tick schedule
    /// restarts after a change completed, so its ticks do not stay locked
    /// in phase with the controller's cycles (two loops on one clock with a
    /// 10:1 period ratio would).
    pub fn phase_ns(&mut self, period_ns: u64) -> u64 {
        self.rng.u64(0..period_ns.max(1))
    }
}

// ---------------------------------------------------------------------------
// The controller's side.

/// The input image as the controller's task reads it at the start of a
/// cycle: the marker and T2, the receive stamp of the first message that
/// carried it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputImage {
    /// The input's marker.
    pub marker: u64,
    /// T2 (realtime), when the kernel stamped the message.
    pub t2_real_ns: Option<u64>,
}

/// A change the controller handled: T2 → T3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Handled {
    /// The change's marker.
    pub marker: u64,
    /// T2 (realtime).
    pub t2_real_ns: u64,
    /// T3: the send of the output computed from it (realtime).
    pub t3_real_ns: u64,
}

impl Handled {
    /// T2 → T3, ns.
    pub fn controller_ns(&self) -> u64 {
        self.t3_real_ns.saturating_sub(self.t2_real_ns)
    }
}

/// The controller's bookkeeping: the latest input image, and which input
/// its last output was computed from.
#[derive(Debug, Default)]
pub struct ControllerSide {
    image: Option<InputImage>,
    published: Option<u64>,
}

impl ControllerSide {
    /// A controller that has received nothing.
    pub fn new() -> ControllerSide {
        ControllerSide::default()
    }

    /// A message from the I/O simulator arrived with input marker `marker`,
    /// stamped `rx_real_ns`; a new marker starts a new image with T2 =
    /// that stamp, a repeated one keeps the first stamp.
    pub fn input(&mut self, marker: u64, rx_real_ns: Option<u64>) {
        if self.image.map(|i| i.marker) != Some(marker) {
            self.image = Some(InputImage {
                marker,
                t2_real_ns: rx_real_ns,
            });
        }
    }

    /// The image the task reads at the start of its cycle.
    pub fn read(&self) -> Option<InputImage> {
        self.image
    }

    /// The task published the output computed from `image` at T3
    /// (`t3_real_ns`); returns the change it handled when that input had
    /// not been published before and had a receive stamp.
    pub fn published(&mut self, image: InputImage, t3_real_ns: u64) -> Option<Handled> {
        if self.published == Some(image.marker) {
            return None;
        }
        self.published = Some(image.marker);
        image.t2_real_ns.map(|t2| Handled {
            marker: image.marker,
            t2_real_ns: t2,
            t3_real_ns,
        })
    }
}

// ---------------------------------------------------------------------------
// Sequence numbers.

/// How far ahead of the last message taken a sequence number may be and
/// still continue the same stream (the messages in between lost): 1000
/// messages, half a second at the default I/O period, more than any queue
/// on the way holds.
pub const SEQUENCE_WINDOW: u16 = 1000;

/// How far behind the last message taken a sequence number may be and
/// still be a late message of the same stream (overtaken on the way).
pub const REORDER_WINDOW: u16 = 16;

/// What a message's sequence number says about it ([`SequenceCounts::add`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceVerdict {
    /// The next of the stream, or the next after a gap of at most
    /// [`SEQUENCE_WINDOW`] (the ones between are lost): taken.
    InOrder,
    /// The second of two consecutive numbers far outside the window: the
    /// sender restarted from a new base, which the stream follows from now
    /// on: taken.
    Restart,
    /// The number of the last message taken, again: not taken.
    Duplicate,
    /// Behind the last message taken, within [`REORDER_WINDOW`]: a late
    /// message whose content is older than what was taken: not taken.
    Stale,
    /// Far outside the window, ahead or behind: another sender with the
    /// same identity, or the first message of a restart. Not taken; counted
    /// apart, never as lost messages.
    Foreign,
}

impl SequenceVerdict {
    /// Whether the message's content (its marker, its receive stamp) is
    /// taken: only a message that continues the stream is.
    pub fn taken(self) -> bool {
        matches!(self, SequenceVerdict::InOrder | SequenceVerdict::Restart)
    }
}

/// The lost messages of one direction, or why they cannot be counted: only
/// sequence numbers show a message missing, so a publisher that sends none
/// (the reference's tutorial publisher) leaves loss not measurable — never
/// zero. Serialized as `lost`, `gaps` (`null` when not measurable) and
/// `not_measurable` (the reason, absent when measured).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Loss {
    /// Messages missing between consecutive sequence numbers.
    pub lost: Option<u64>,
    /// Runs of missing messages.
    pub gaps: Option<u64>,
    /// Why the loss is not measurable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_measurable: Option<String>,
}

/// Why loss is not measurable when no message was accepted.
pub const LOSS_NO_MESSAGE: &str = "no message was accepted";
/// Why loss is not measurable when the accepted messages had no sequence
/// number.
pub const LOSS_NO_SEQUENCE: &str =
    "the publisher sends no NetworkMessage or DataSetMessage sequence number";

impl Loss {
    /// The loss of a direction of which `accepted` messages were accepted
    /// and `sequence` counted those carrying a sequence number.
    pub fn of(accepted: u64, sequence: &SequenceCounts) -> Loss {
        let why = if sequence.received > 0 {
            return Loss {
                lost: Some(sequence.lost),
                gaps: Some(sequence.gaps),
                not_measurable: None,
            };
        } else if accepted == 0 {
            LOSS_NO_MESSAGE
        } else {
            LOSS_NO_SEQUENCE
        };
        Loss {
            lost: None,
            gaps: None,
            not_measurable: Some(why.to_string()),
        }
    }

    /// The loss of one end of a stored result's `detail` (`io` or
    /// `controller`): from its `rx.accepted` and `sequence`.
    pub fn of_end(end: &serde_json::Value) -> Loss {
        let accepted = end
            .pointer("/rx/accepted")
            .and_then(|x| x.as_u64())
            .unwrap_or(0);
        let sequence = end
            .get("sequence")
            .and_then(|s| SequenceCounts::deserialize(s).ok())
            .unwrap_or_default();
        Loss::of(accepted, &sequence)
    }

    /// The loss as the summary prints it: `3 lost in 2 gaps`, or `loss not
    /// measurable (reason)`.
    pub fn text(&self) -> String {
        match (self.lost, self.gaps, &self.not_measurable) {
            (Some(lost), Some(gaps), _) => format!("{lost} lost in {gaps} gaps"),
            (_, _, Some(why)) => format!("loss not measurable ({why})"),
            _ => "loss not measurable".to_string(),
        }
    }
}

/// Counts received messages by their 16-bit sequence numbers (which wrap),
/// against the stream of the messages taken so far:
///
/// - `d` ahead of the last taken, `1 ≤ d ≤` [`SEQUENCE_WINDOW`]: in order,
///   `d − 1` lost (one gap when `d > 1`);
/// - the same number: a duplicate; up to [`REORDER_WINDOW`] behind: stale;
///   neither is taken, nor lost;
/// - anything else: foreign (UADP without message security cannot tell a
///   sender that uses another's identity, nor a sender that restarted);
///   two consecutive numbers out there, with nothing taken between them, are
///   a restart, and the stream continues from them;
/// - except a number between the two ends of the last jump over a gap,
///   before the next number in order confirmed it, that is the one right
///   after the jump's start or beyond the reorder window: the sender's
///   stream goes on from before the jump, so the jump was a stranger's
///   number that fell inside the window. Its gap is taken back, it counts
///   as foreign, and the stream continues from this number. (Two of the
///   sender's messages swapped on the way look the same, and count one
///   lost and one foreign instead of one lost and one stale.)
///
/// So a stranger's numbers never count as lost messages, and a stale or
/// foreign message never becomes the input (nor its T2) — except a
/// stranger's number inside the window, which is taken until the sender's
/// next message shows it up: the receiver cannot tell before. Allocates
/// nothing.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SequenceCounts {
    /// Messages counted.
    pub received: u64,
    /// Messages missing between consecutive sequence numbers.
    pub lost: u64,
    /// Jumps (each run of missing messages counts once).
    pub gaps: u64,
    /// Duplicate or stale sequence numbers (`duplicates + stale`).
    pub out_of_order: u64,
    /// The number of the last message taken, again.
    #[serde(default)]
    pub duplicates: u64,
    /// Numbers shortly behind the last message taken.
    #[serde(default)]
    pub stale: u64,
    /// Numbers far outside the window: another sender, not taken.
    #[serde(default)]
    pub foreign: u64,
    /// Times the sender restarted from a new base and the stream followed.
    #[serde(default)]
    pub restarts: u64,
    #[serde(skip)]
    last: Option<u16>,
    /// The latest number far outside the window since the last message
    /// taken: a restart when the next one follows it.
    #[serde(skip)]
    pending: Option<u16>,
    /// The last jump over a gap (from, to), until a number in order
    /// follows it: the number after `from`, or one between them beyond the
    /// reorder window, says the jump was a stranger's.
    #[serde(skip)]
    jump: Option<(u16, u16)>,
}

impl SequenceCounts {
    /// Counts a message with sequence number `seq`, and says whether it is
    /// taken.
    pub fn add(&mut self, seq: u16) -> SequenceVerdict {
        self.received += 1;
        let Some(last) = self.last else {
            self.take(seq);
            return SequenceVerdict::InOrder;
        };
        let ahead = seq.wrapping_sub(last);
        let behind = last.wrapping_sub(seq);
        if ahead == 0 {
            self.duplicates += 1;
            self.out_of_order += 1;
            SequenceVerdict::Duplicate
        } else if ahead <= SEQUENCE_WINDOW {
            self.continue_from(last, seq);
            SequenceVerdict::InOrder
        } else if let Some((before, to)) = self.jump.filter(|&(before, to)| {
            let from_before = seq.wrapping_sub(before);
            (1..to.wrapping_sub(before)).contains(&from_before)
                && (from_before == 1 || behind > REORDER_WINDOW)
        }) {
            // The stream goes on from before the last jump: that jump was a
            // stranger's number inside the window. Its gap is taken back.
            self.lost -= u64::from(to.wrapping_sub(before) - 1);
            self.gaps -= 1;
            self.foreign += 1;
            self.continue_from(before, seq);
            SequenceVerdict::InOrder
        } else if behind <= REORDER_WINDOW {
            self.stale += 1;
            self.out_of_order += 1;
            SequenceVerdict::Stale
        } else if self.pending == Some(seq.wrapping_sub(1)) {
            // The message before was this sender's first from its new
            // base, not a stranger's.
            self.foreign -= 1;
            self.restarts += 1;
            self.take(seq);
            self.jump = None;
            SequenceVerdict::Restart
        } else {
            self.foreign += 1;
            self.pending = Some(seq);
            SequenceVerdict::Foreign
        }
    }

    /// `seq`, at most [`SEQUENCE_WINDOW`] ahead of `last`, continues the
    /// stream: the numbers between are lost, and a jump over them is
    /// remembered until the next number in order confirms it.
    fn continue_from(&mut self, last: u16, seq: u16) {
        let ahead = seq.wrapping_sub(last);
        if ahead > 1 {
            self.gaps += 1;
            self.lost += u64::from(ahead - 1);
            self.jump = Some((last, seq));
        } else {
            self.jump = None;
        }
        self.take(seq);
    }

    /// `seq` continues the stream.
    fn take(&mut self, seq: u16) {
        self.last = Some(seq);
        self.pending = None;
    }
}

// ---------------------------------------------------------------------------
// The kind's descriptor.

/// The `roundtrip` probe's pair of network namespaces: the I/O simulator
/// in `jl<pid>io` and the controller ("PLC") in `jl<pid>pl`, on the /30
/// after the response probe's.
pub const PAIR: PairKind = PairKind {
    ns_a: "io",
    ns_b: "pl",
    veth_a: "i",
    veth_b: "p",
    ip_a: Ipv4Addr::new(198, 18, 0, 9),
    ip_b: Ipv4Addr::new(198, 18, 0, 10),
    prefix_len: 30,
    who: "the roundtrip probe",
    needs_root: "the roundtrip probe needs root (CAP_NET_ADMIN) to create the network namespaces of its I/O simulator and controller; run as root, or run one role per machine with --role io|controller --interface IF",
};

/// `roundtrip`: [Red Hat controls]'s screw-to-screw time over OPC UA PubSub. Two
/// threads push into its recorder's table: the I/O simulator's completed
/// round trips (T1→T4 and, where both ends share a clock, T1→T2 and
/// T3→T4rx) and the controller task's cycles (T2→T3 when the cycle
/// published a new input's output; wake-up latency, periodic jitter and
/// execution time every cycle). Only the screw-to-screw time is checked
/// against a threshold: the budget, unless one is given.
pub const ROUNDTRIP: ProbeDescriptor = ProbeDescriptor {
    name: "roundtrip",
    summary: "screw-to-screw round trip over OPC UA PubSub, against its worst-case budget",
    metrics: &[
        ns("screw-to-screw", false, true),
        ns("controller", false, false),
        ns("t1-t2", false, false),
        ns("t3-t4rx", false, false),
        ns("latency", false, false),
        ns("jitter", true, false),
        ns("exec", false, false),
    ],
    main_latency: Some("screw-to-screw"),
    periodic: false,
    calibrated: true,
    every_probe_cpu: false,
    listed: true,
    words: ReportWords {
        period: Some("period"),
        samples: "samples",
        sample: "sample",
        outliers: &["screw-to-screw", "controller", "latency", "jitter"],
    },
    params: &params::PARAMS,
    container: InContainer::OwnSide,
    verdicts: Some(&verdict::VERDICTS),
    netns: Some(&PAIR),
};

#[cfg(test)]
mod tests;
