//! Preset `powerlink`: [Baumgartner POWERLINK] — both of its tables in one spec, on a
//! POWERLINK managing node (MN) that polls emulated controlled nodes (CNs)
//! over a veth pair (the `netcycle` probe), and the seed's figures the
//! reports compare with.
//!
//! * **Tables 2–3, stack load**: a `netcycle` probe per cycle time × network
//!   size (250 µs … 10 ms × 3, 10, 20, 40 CNs; Table 1's payloads, the
//!   probe's defaults), each measured on the idle machine only
//!   (`scenarios = ["idle"]`) and for [`LOAD_DURATION`] rather than the
//!   minute the other cells take. The load table (`report --table load`)
//!   gives each cell the MN threads' CPU time over wall time, or why the
//!   cycle time was not held, and its ratio to [`SEED_004_TABLE_2`]. A
//!   cell whose frames cannot fit its cycle on a 100 Mbit/s wire stays in
//!   the spec and is reported `N/A (wire)` with the figure; nothing is
//!   measured for it.
//! * **Tables 4–5, SoC jitter**: the probe `soc-jitter`, 500 µs with 3 CNs,
//!   under the seven built-in conditions: the conditions table gives min
//!   cycle, max cycle and deviation as the MN sent the SoCs and as the CNs
//!   received them.
//! * **The timer task** this preset measured before the `netcycle` probe
//!   existed (a `cyclic` probe at 500 µs that sends no frame), kept under
//!   the same seven conditions as the probe `cyclic`, so runs of either
//!   version compare cell by cell (`jitterlab report A B`); its conditions
//!   table is the scheduling floor under the network's.
//!
//! The rows and columns of the load table are the user's to choose
//! ([`PresetChoice`]: `bench --preset powerlink --cycles 1ms,2ms --cns
//! 3,10`); the other two probes stay.
//!
//! **Why 30 s a load cell.** Measured on this project's machine (two
//! vCPUs of a virtual machine) with a stand-in managing node — SoC, a PReq
//! and a blocking wait (`ppoll`, 100 µs timeout) for each PRes, SoA, over
//! raw sockets on a veth pair between two namespaces, the answering node
//! on the other CPU, both SCHED_FIFO — for 90 s per point, its thread's
//! `schedstat` read every second. The load does not settle like an
//! average of independent cycles: it wanders between levels that last
//! 10–30 s (500 µs × 3 CNs: 7.3–12.5 % from one second to the next, 8.7 %
//! over the 90 s; 2 ms × 20 CNs: 27–37 %, 32 %). Pieces of 10 s stray
//! from the 90 s figure by up to 1.7, 1.2, 3.9 and 0.4 percentage points
//! at 250 µs × 3, 500 µs × 3, 2 ms × 20 and 10 ms × 3 CNs; pieces of 30 s by
//! 0.1, 1.0, 2.3 and 0.2. So 30 s a cell: the 21 cells that fit the wire
//! take 12 minutes, the whole preset 28. Beyond that, repetitions (`bench
//! --repetitions`, which spread over the machine's drift) say more than
//! longer cells. The SoC-jitter and timer-task cells keep the other
//! presets' minute: their figures are extremes, which grow with the time
//! measured.
//!
//! The documents cited here are listed in `docs/design.md`.

use super::{neighbour_line, placement, PresetMachine};
use crate::defaults::PRIORITY;
use crate::units::format_duration_exact;

/// The seed's cycle times (Tables 2–3's rows), ns.
pub const SEED_CYCLES_NS: [u64; 6] = [
    250_000, 500_000, 1_000_000, 2_000_000, 5_000_000, 10_000_000,
];

/// The seed's network sizes (Tables 2–3's columns), in CNs.
pub const SEED_CNS: [u8; 4] = [3, 10, 20, 40];

/// The measured time of a load cell (see the module doc for why).
pub const LOAD_DURATION: &str = "30s";

/// The conditions of Tables 4–5, as the built-in scenarios name them.
const CONDITIONS: [&str; 7] = [
    "idle",
    "cpu",
    "disk",
    "usb",
    "network",
    "scheduling",
    "misc",
];

/// What a user chose of the load table's rows and columns (`bench
/// --cycles`, `--cns`); empty: the seed's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PresetChoice {
    /// The cycle times, ns, in the order given.
    pub cycles_ns: Vec<u64>,
    /// The network sizes, in CNs, in the order given.
    pub cns: Vec<u8>,
}

impl PresetChoice {
    /// True when the user chose nothing.
    pub fn is_empty(&self) -> bool {
        self.cycles_ns.is_empty() && self.cns.is_empty()
    }
}

/// One figure of [Baumgartner POWERLINK]'s load tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedLoad {
    /// The stack's load, in whole percent.
    Percent(u8),
    /// `< 1%`: too small to give a ratio to.
    BelowOne,
    /// `N/A`: the cycle time could not be held.
    NotHeld,
}

impl SeedLoad {
    /// As the seed prints it: `37%`, `< 1%`, `N/A`.
    pub fn text(self) -> String {
        match self {
            SeedLoad::Percent(p) => format!("{p}%"),
            SeedLoad::BelowOne => "< 1%".into(),
            SeedLoad::NotHeld => "N/A".into(),
        }
    }
}

/// One of [Baumgartner POWERLINK]'s load tables: the load per cycle time
/// ([`SEED_CYCLES_NS`]) × network size ([`SEED_CNS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeedLoadTable {
    /// Where the figures come from.
    pub source: &'static str,
    /// By row (cycle time), then column (CNs).
    pub figures: [[SeedLoad; 4]; 6],
}

impl SeedLoadTable {
    /// The figure for `cycle_ns` × `cns`, when the seed has that cell.
    pub fn get(&self, cycle_ns: u64, cns: u8) -> Option<SeedLoad> {
        let row = SEED_CYCLES_NS.iter().position(|&c| c == cycle_ns)?;
        let col = SEED_CNS.iter().position(|&n| n == cns)?;
        Some(self.figures[row][col])
    }
}

use SeedLoad::{BelowOne as B, NotHeld as N, Percent as P};

/// [Baumgartner POWERLINK] Table 2: "System Load Measurement, High-End PC" (Intel Core2Duo
/// U7500 at 1.06 GHz, openPOWERLINK 1.7 in kernel space with its own NIC
/// driver, 2.6.31.12-rt21): the load of all POWERLINK threads on one core.
/// The figures the load table's ratios are to.
pub const SEED_004_TABLE_2: SeedLoadTable = SeedLoadTable {
    source:
        "Baumgartner and Schoenegger, POWERLINK and Real-Time Linux: A Perfect Match for Highest Performance in Real Applications, Table 2, High-End PC",
    figures: [
        [P(37), N, N, N],
        [P(18), P(28), P(43), N],
        [P(8), P(14), P(21), P(39)],
        [P(3), P(5), P(9), P(18)],
        [B, P(1), P(4), P(6)],
        [B, B, B, P(2)],
    ],
};

/// [Baumgartner POWERLINK] Table 3: "System Load Measurement, Embedded PC" (Celeron M 423
/// clocked down to 533 MHz), kept beside Table 2 for reference.
pub const SEED_004_TABLE_3: SeedLoadTable = SeedLoadTable {
    source:
        "Baumgartner and Schoenegger, POWERLINK and Real-Time Linux: A Perfect Match for Highest Performance in Real Applications, Table 3, Embedded PC",
    figures: [
        [P(50), N, N, N],
        [P(25), P(29), P(50), N],
        [P(11), P(14), P(23), P(41)],
        [P(5), P(7), P(11), P(19)],
        [B, P(2), P(3), P(7)],
        [B, P(1), P(1), P(3)],
    ],
};

/// A cycle time as a probe name and spec value write it: `250us`, `1ms`.
fn cycle_word(ns: u64) -> String {
    format_duration_exact(ns)
}

/// [Baumgartner POWERLINK]'s experiment on this machine, with the load table's rows and
/// columns `choice` (the seed's where it chose none).
pub(super) fn text(machine: &PresetMachine, choice: &PresetChoice) -> String {
    let (probe, neighbours) = placement(machine.online);
    let nl = neighbour_line(&neighbours);
    let cycles: Vec<u64> = if choice.cycles_ns.is_empty() {
        SEED_CYCLES_NS.to_vec()
    } else {
        choice.cycles_ns.clone()
    };
    let cns: Vec<u8> = if choice.cns.is_empty() {
        SEED_CNS.to_vec()
    } else {
        choice.cns.clone()
    };
    let mut text = format!(
        r#"# Preset powerlink: Tables 2-3 (stack load) and 4-5 (SoC jitter) of "POWERLINK
# and Real-Time Linux: A Perfect Match for Highest Performance in Real
# Applications" (Josef Baumgartner and Stefan Schoenegger).
# A POWERLINK managing node (MN) polls emulated controlled nodes (CNs) over
# a veth pair: Table 1's payloads (1 output, 6 input bytes per CN).
# The source measured 10 million cycles (83 min) per condition; edit the
# durations for that.
name = "powerlink"
duration = "60s"
warmup = "5s"

[[configuration]]
name = "tuned"
probe_cpus = "{probe}"
{nl}
policy = "fifo"
priority = {PRIORITY}
dma_latency = true
"#
    );
    for condition in CONDITIONS {
        text.push_str(&format!(
            "\n[[scenario]]\nname = \"{condition}\"\nbuiltin = \"{condition}\"\n"
        ));
    }
    text.push_str(
        r#"
# Tables 4-5, SoC jitter: the MN at 500 us with 3 CNs under the seven
# conditions; min cycle, max cycle and deviation as sent and as received.
[[probe]]
kind = "netcycle"
name = "soc-jitter"
period = "500us"
cns = 3

# The timer task of the earlier preset (no frame sent), under the same
# conditions: the scheduling floor under the network's figures.
[[probe]]
kind = "cyclic"
period = "500us"
scan = "50us"
working_set = "64KiB"
"#,
    );
    text.push_str(&format!(
        "\n# Tables 2-3, stack load: each cycle time x network size on the idle\n# machine, {LOAD_DURATION} each; the load table compares it with Table 2.\n"
    ));
    for &cycle in &cycles {
        for &n in &cns {
            let c = cycle_word(cycle);
            text.push_str(&format!(
                "[[probe]]\nkind = \"netcycle\"\nname = \"load-{c}-{n}cn\"\nperiod = \"{c}\"\ncns = {n}\nscenarios = [\"idle\"]\nduration = \"{LOAD_DURATION}\"\n"
            ));
        }
    }
    text
}
