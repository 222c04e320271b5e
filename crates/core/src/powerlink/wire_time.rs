//! The lower bound of one POWERLINK cycle's time on a 100 Mbit/s wire, so
//! that a cell whose frames cannot fit in its cycle is reported as
//! `N/A (wire)` before anything runs.
//!
//! Each frame costs its bytes on the wire — the Ethernet frame with its
//! 4-byte frame check sequence, at least 64 bytes — plus the 8 bytes of
//! preamble and start delimiter and the 12-byte inter-frame gap, at 80 ns a
//! byte. A cycle is SoC, then per CN a PReq and its PRes, then SoA (and,
//! when asked, one ASnd in the asynchronous slot); with PollResponse
//! Chaining it is SoC, one PResMN carrying every CN's outputs, the N PRes,
//! then SoA. Nothing else is counted — no CN response time, no cable or
//! hub delay, no MN turnaround — so a cycle under this bound can never be
//! held, and one over it still may not be.
//!
//! The documents cited here are listed in `docs/design.md`.

use super::codec::{PDO_HEADER_LEN, SOA_LEN, SOC_LEN};
use crate::ether::{HEADER_LEN, MIN_FRAME_LEN};

/// Nanoseconds one byte takes on a 100 Mbit/s wire.
pub const BYTE_NS_100M: u64 = 80;
/// Preamble and start frame delimiter, bytes.
pub const PREAMBLE_SFD: usize = 8;
/// The inter-frame gap, bytes.
pub const INTER_FRAME_GAP: usize = 12;
/// The frame check sequence, bytes.
pub const FCS: usize = 4;

/// What one cycle carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CycleLoad {
    /// Number of CNs polled each cycle.
    pub cns: usize,
    /// Output bytes per CN (in its PReq, or its share of the PResMN).
    pub output_bytes: usize,
    /// Input bytes per CN (in its PRes).
    pub input_bytes: usize,
    /// PollResponse Chaining: one PResMN instead of N PReq.
    pub chained: bool,
    /// Bytes of POWERLINK data of one ASnd in the asynchronous slot (e.g.
    /// 4 + [`IDENT_RESPONSE_LEN`](super::IDENT_RESPONSE_LEN)), or `None`
    /// for an empty slot.
    pub asnd: Option<usize>,
}

impl CycleLoad {
    /// [Baumgartner POWERLINK]'s load (Table 1): 1 output byte and 6 input bytes per CN,
    /// no ASnd.
    pub fn seed004(cns: usize, chained: bool) -> CycleLoad {
        CycleLoad {
            cns,
            output_bytes: 1,
            input_bytes: 6,
            chained,
            asnd: None,
        }
    }
}

/// Bytes a frame of `data` bytes of POWERLINK data takes on the wire:
/// header, data, padding, FCS, preamble and gap.
pub fn wire_bytes(data: usize) -> usize {
    (HEADER_LEN + data).max(MIN_FRAME_LEN) + FCS + PREAMBLE_SFD + INTER_FRAME_GAP
}

/// The lower bound of one cycle's wire time at 100 Mbit/s, in ns.
pub fn wire_time(load: &CycleLoad) -> u64 {
    let pres = wire_bytes(PDO_HEADER_LEN + load.input_bytes);
    let mut bytes = wire_bytes(SOC_LEN) + wire_bytes(SOA_LEN) + load.cns * pres;
    if load.chained {
        bytes += wire_bytes(PDO_HEADER_LEN + load.cns * load.output_bytes);
    } else {
        bytes += load.cns * wire_bytes(PDO_HEADER_LEN + load.output_bytes);
    }
    if let Some(asnd) = load.asnd {
        bytes += wire_bytes(asnd);
    }
    bytes as u64 * BYTE_NS_100M
}

/// Whether `cycle_ns` can hold `load` on a 100 Mbit/s wire: `Err` with the
/// figure when the frames alone take longer than the cycle.
pub fn fits(cycle_ns: u64, load: &CycleLoad) -> Result<(), String> {
    let need = wire_time(load);
    if need <= cycle_ns {
        return Ok(());
    }
    Err(format!(
        "{} CNs need at least {} of wire time per cycle at 100 Mbit/s{}, more than the {} cycle",
        load.cns,
        micros(need),
        if load.chained { " (chained)" } else { "" },
        micros(cycle_ns),
    ))
}

/// `ns` in µs with one decimal, without a trailing `.0`.
fn micros(ns: u64) -> String {
    let tenths = (ns + 50) / 100;
    if tenths.is_multiple_of(10) {
        format!("{} µs", tenths / 10)
    } else {
        format!("{}.{} µs", tenths / 10, tenths % 10)
    }
}
