//! Ethernet POWERLINK V2 frames (EPSG DS 301), encoded and decoded without
//! I/O: the wire of the `netcycle` probe ([Baumgartner POWERLINK]'s managing node polling
//! N controlled nodes), and the lower bound of a cycle's wire time.
//!
//! # What POWERLINK frames are
//!
//! POWERLINK is a polled real-time protocol on plain Ethernet (EtherType
//! 0x88AB). One **managing node** (MN, node 240) runs the cycle; the
//! **controlled nodes** (CNs, 1–239) speak only when asked. Each cycle the
//! MN multicasts a **SoC** (Start of Cycle), sends each CN a **PReq** (Poll
//! Request, unicast, with the CN's outputs) and the CN answers with a
//! **PRes** (Poll Response, multicast, with its inputs and its NMT state);
//! then a **SoA** (Start of Asynchronous) gives the asynchronous slot to
//! one node, which answers with an **ASnd** (Asynchronous Send): an
//! IdentResponse to an IdentRequest, a StatusResponse to a StatusRequest.
//! The MN brings a CN up with ASnd **NMTCommand**s (EnableReadyToOperate,
//! StartNode, …) that walk the CN's NMT state machine to operational.
//! With **PollResponse Chaining** (EPSG DS 302-C) the MN sends one
//! **PResMN** — a PRes from node 240 to broadcast carrying every CN's
//! outputs — and the CNs answer at configured times without a PReq.
//!
//! Multicast addresses: SoC 01-11-1E-00-00-01, PRes -02, SoA -03, ASnd
//! -04. Frames go out padded to the 60-byte Ethernet minimum; PReq and PRes
//! payloads are at most 1490 bytes (C_DLL_ISOCHR_MAX_PAYL). The byte
//! layouts are in [`codec`]'s documentation.
//!
//! # What is spoken here
//!
//! - [`Frame`] (a borrowed view: payloads point into the buffer), with
//!   SoC, PReq, PRes and PResMN, SoA, and ASnd carrying IdentResponse (the
//!   fixed fields an MN reads), StatusResponse (state, static error bit
//!   field, error entries), NMTCommand (id and data) and SDO (the sequence
//!   and command layers, [`sdo`]); any other ASnd service is carried as its
//!   id and bytes ([`ASndService::Other`]).
//! - [`encode`]: a frame into a caller buffer, with its Ethernet header and
//!   padding, allocating nothing; [`decode`] / [`decode_payload`]: the
//!   reverse, allocating nothing, never panicking (property tests over
//!   random bytes, truncations and bit flips). A frame that breaks the
//!   layout is [`DecodeError::Malformed`] with the byte offset and what was
//!   wrong, so a receiver can count it and drop it.
//! - [`nmt`]: NMT state codes, NMT command ids, service ids.
//! - [`sdo`]: SDO over ASnd — the sequence layer, the command layer
//!   (expedited and segmented transfers, aborts), the data of WriteByIndex
//!   and ReadByIndex, and DS 301's abort codes.
//! - [`cn`]: emulated controlled nodes — the DS 301 NMT state machine of
//!   any list of node ids, error signalling, loss of SoC / PReq, and what
//!   each answers to a frame it received; [`od`] their object dictionary
//!   and [`sdo_server`] the SDO server that reads and writes it.
//! - [`cdc`]: the concise DCF that openCONFIGURATOR writes and
//!   openPOWERLINK's MN loads, and the network it configures
//!   ([`cdc::NetworkConfig`]: cycle, nodes, each CN's writes and stamps).
//! - The managing node's pure parts: [`sdo_client`] (the SDO client of
//!   one CN: connection, numbering, retries, a queue of transfers),
//!   [`errsig`] (the ER/EC error-signalling handshake per CN),
//!   [`mn_async`] (which SoA each cycle sends) and [`ident`] (what a CN's
//!   IdentResponse announces, in words); [`poll`] (which poll a PRes
//!   answers, told by time), [`track`] (the CNs' NMT states while
//!   measuring) and [`soc_schedule`] (one SoC grid with the reference's
//!   spacing floor).
//! - [`mod@wire_time`]: the lower bound of a cycle's wire time at 100 Mbit/s
//!   and whether a cycle time can hold it.
//!
//! Wireshark's POWERLINK dissector reads what we encode with the fields we
//! meant (`tests/powerlink_tshark.rs`, with Debian's `tshark`).
//!
//! # What is out of scope
//!
//! SDO over UDP, NMTRequest, SyncRequest/SyncResponse, the AInv and AMNI
//! message types (decoded as [`DecodeError::Unsupported`]), multiplexed
//! slots beyond their flags, and POWERLINK over UDP.
//!
//! The documents cited here are listed in `docs/design.md`.

pub mod analyze;
pub mod cdc;
pub mod cn;
pub mod codec;
mod errors;
pub mod errsig;
mod frame;
pub mod ident;
pub mod mn_async;
pub mod nmt;
pub mod od;
pub mod poll;
pub mod sdo;
pub mod sdo_client;
pub mod sdo_server;
pub mod soc_schedule;
pub mod track;
pub mod wire_time;

#[cfg(test)]
mod capture_tests;
#[cfg(test)]
mod tests;

pub use codec::{
    decode, decode_payload, encode, Received, ASND_HEADER_LEN, IDENT_RESPONSE_LEN,
    NMT_COMMAND_HEADER_LEN, PDO_HEADER_LEN, SOA_LEN, SOC_LEN, STATUS_RESPONSE_HEADER_LEN,
    STATUS_RESPONSE_MIN_ENTRIES,
};
pub use frame::{
    ASnd, ASndService, DecodeError, EncodeError, ErrorEntry, Frame, IdentResponse, NetTime,
    NmtCommand, PReq, PRes, Soa, Soc, StatusResponse, ERROR_ENTRY_LEN,
};
pub use nmt::{NmtCommandId, NmtState, RequestedService, ServiceId};
pub use sdo::Sdo;
pub use wire_time::{fits, wire_time, CycleLoad};

/// The EtherType of POWERLINK.
pub const ETHERTYPE_POWERLINK: u16 = 0x88AB;
/// The managing node's id.
pub const MN_NODE: u8 = 240;
/// The broadcast node id.
pub const BROADCAST_NODE: u8 = 255;
/// The highest CN id.
pub const MAX_CN_NODE: u8 = 239;
/// The POWERLINK version jitterlab announces (V2.0: 0x20).
pub const EPL_VERSION: u8 = 0x20;

/// Message type: Start of Cycle.
pub const MTYP_SOC: u8 = 0x01;
/// Message type: Poll Request.
pub const MTYP_PREQ: u8 = 0x03;
/// Message type: Poll Response.
pub const MTYP_PRES: u8 = 0x04;
/// Message type: Start of Asynchronous.
pub const MTYP_SOA: u8 = 0x05;
/// Message type: Asynchronous Send.
pub const MTYP_ASND: u8 = 0x06;

/// Multicast MAC of SoC frames.
pub const MAC_SOC: [u8; 6] = [0x01, 0x11, 0x1E, 0x00, 0x00, 0x01];
/// Multicast MAC of PRes frames.
pub const MAC_PRES: [u8; 6] = [0x01, 0x11, 0x1E, 0x00, 0x00, 0x02];
/// Multicast MAC of SoA frames.
pub const MAC_SOA: [u8; 6] = [0x01, 0x11, 0x1E, 0x00, 0x00, 0x03];
/// Multicast MAC of ASnd frames.
pub const MAC_ASND: [u8; 6] = [0x01, 0x11, 0x1E, 0x00, 0x00, 0x04];

/// The most PDO bytes a PReq or PRes carries (C_DLL_ISOCHR_MAX_PAYL).
pub const MAX_PDO_PAYLOAD: usize = 1490;
/// The most POWERLINK data bytes one frame carries (the Ethernet MTU).
pub const MAX_FRAME_PAYLOAD: usize = 1500;
/// The largest frame [`encode`] writes (header and MTU, no FCS): a buffer
/// this long takes any frame.
pub const MAX_FRAME_LEN: usize = crate::ether::HEADER_LEN + MAX_FRAME_PAYLOAD;

/// SoC flag MC: multiplexed cycle completed.
const SOC_MC: u8 = 0x80;
/// SoC flag PS: prescaled slot.
const SOC_PS: u8 = 0x40;
/// PReq/PRes flag MS: multiplexed slot.
const FLAG_MS: u8 = 0x20;
/// PRes / IdentResponse / StatusResponse flag EN: exception new.
const FLAG_EN: u8 = 0x10;
/// IdentResponse / StatusResponse flag EC: exception clear.
const FLAG_EC: u8 = 0x08;
/// PReq / SoA flag EA: exception acknowledge.
const FLAG_EA: u8 = 0x04;
/// SoA flag ER: exception reset.
const FLAG_ER: u8 = 0x02;
/// PReq/PRes flag RD: ready (the PDO data is valid).
const FLAG_RD: u8 = 0x01;
