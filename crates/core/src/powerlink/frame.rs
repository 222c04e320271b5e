//! The POWERLINK frame model: one borrowed [`Frame`] per message type, the
//! ASnd services spoken, and the errors of encoding and decoding.
//!
//! Payloads (PDO data, StatusResponse error entries, NMTCommand data) are
//! borrowed slices, so that a decoded frame points into the receive buffer
//! and an encoded one is written from the caller's data: neither direction
//! allocates (design rule 2). Node addresses that DS 301 fixes for a type
//! (a SoC goes from the MN to broadcast) are not fields; the ones that vary
//! are.
//!
//! The design rules cited here are in `docs/design.md`.

pub use super::errors::{DecodeError, EncodeError};
use super::nmt::{NmtCommandId, NmtState, RequestedService, ServiceId};
use super::sdo::Sdo;
use super::{BROADCAST_NODE, MN_NODE};

/// A time of day as POWERLINK carries it (NetTime, the IEEE 1588 time
/// format): seconds and nanoseconds, both little-endian `u32`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NetTime {
    /// Seconds (since 1970 when the MN's NetTime is real time).
    pub seconds: u32,
    /// Nanoseconds within the second.
    pub nanoseconds: u32,
}

/// Start of Cycle: the MN's multicast that opens every cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Soc {
    /// MC: the last cycle of a multiplexed cycle completed.
    pub mc: bool,
    /// PS: prescaled slot.
    pub ps: bool,
    /// NetTime: the cycle's start time, when the MN distributes it.
    pub net_time: NetTime,
    /// RelativeTime: microseconds since the MN started, when distributed.
    pub relative_time: u64,
}

/// Poll Request: the MN's unicast to one CN, carrying its output data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PReq<'a> {
    /// The polled CN (1–239).
    pub node: u8,
    /// MS: multiplexed slot.
    pub ms: bool,
    /// EA: exception acknowledge.
    pub ea: bool,
    /// RD: the output data is valid.
    pub rd: bool,
    /// PDO mapping version.
    pub pdo_version: u8,
    /// Output data (at most [`MAX_PDO_PAYLOAD`](super::MAX_PDO_PAYLOAD) bytes).
    pub payload: &'a [u8],
}

/// Poll Response: a CN's multicast answer with its input data, or the MN's
/// PResMN (PollResponse Chaining: `node` 240, the outputs of every CN).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PRes<'a> {
    /// The sender: a CN (1–239), or the MN (240) for a PResMN.
    pub node: u8,
    /// The sender's NMT state.
    pub nmt: NmtState,
    /// MS: multiplexed slot.
    pub ms: bool,
    /// EN: exception new.
    pub en: bool,
    /// RD: the input data is valid.
    pub rd: bool,
    /// PR: priority of the asynchronous frame requested (0–7).
    pub pr: u8,
    /// RS: number of pending requests to send (0–7).
    pub rs: u8,
    /// PDO mapping version.
    pub pdo_version: u8,
    /// Input data (at most [`MAX_PDO_PAYLOAD`](super::MAX_PDO_PAYLOAD) bytes).
    pub payload: &'a [u8],
}

impl PRes<'_> {
    /// Whether this is a PResMN (sent by the MN, PollResponse Chaining).
    pub fn is_pres_mn(&self) -> bool {
        self.node == MN_NODE
    }
}

/// Start of Asynchronous: the MN's multicast that closes the isochronous
/// phase and gives the asynchronous slot to one node for one service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Soa {
    /// The MN's NMT state.
    pub nmt: NmtState,
    /// EA: exception acknowledge.
    pub ea: bool,
    /// ER: exception reset.
    pub er: bool,
    /// The service invited.
    pub service: RequestedService,
    /// The node invited (0 with NoService).
    pub target: u8,
    /// The MN's POWERLINK version (major in the high nibble: 0x20 for V2.0).
    pub epl_version: u8,
}

/// Asynchronous Send: the frame of the asynchronous slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ASnd<'a> {
    /// Destination node.
    pub dest: u8,
    /// Source node.
    pub src: u8,
    /// The service and its data.
    pub service: ASndService<'a>,
}

/// The services an ASnd carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ASndService<'a> {
    /// A CN's identity, in answer to an IdentRequest.
    IdentResponse(IdentResponse),
    /// A CN's state and errors, in answer to a StatusRequest.
    StatusResponse(StatusResponse<'a>),
    /// A state command from the MN.
    NmtCommand(NmtCommand<'a>),
    /// Service data objects: the sequence and command layers.
    Sdo(Sdo<'a>),
    /// Any other service (NMTRequest, …): its id and bytes, untouched.
    Other {
        /// The ServiceID.
        id: ServiceId,
        /// The bytes after it (with any padding).
        data: &'a [u8],
    },
}

/// The fixed fields of an IdentResponse a real MN reads (EPSG DS 301,
/// 7.3.3.2.1). The rest of its 158 bytes (application software date, IP
/// settings, host name, vendor extensions) is written as zeros and not
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct IdentResponse {
    /// EN: exception new.
    pub en: bool,
    /// EC: exception clear.
    pub ec: bool,
    /// PR: priority of the asynchronous frame requested (0–7).
    pub pr: u8,
    /// RS: pending requests to send (0–7).
    pub rs: u8,
    /// The CN's NMT state.
    pub nmt: NmtState,
    /// The POWERLINK version the CN conforms to (0x20 for V2.0).
    pub epl_version: u8,
    /// NMT_FeatureFlags_U32 (bit 0 isochronous, bit 18 PResChaining, …).
    pub feature_flags: u32,
    /// The largest asynchronous frame the CN takes (bytes, no header).
    pub mtu: u16,
    /// PReq payload bytes the CN expects.
    pub poll_in_size: u16,
    /// PRes payload bytes the CN sends.
    pub poll_out_size: u16,
    /// The CN's PReq → PRes response time (ns).
    pub response_time: u32,
    /// Device type (CANopen profile in the low 16 bits).
    pub device_type: u32,
    /// Vendor id.
    pub vendor_id: u32,
    /// Product code.
    pub product_code: u32,
    /// Revision number.
    pub revision: u32,
    /// Serial number.
    pub serial: u32,
    /// VerifyConfigurationDate: the CN's stored configuration date
    /// (0x1020/1), which the MN compares with its 0x1F26/n.
    pub verify_conf_date: u32,
    /// VerifyConfigurationTime: the CN's stored configuration time
    /// (0x1020/2), which the MN compares with its 0x1F27/n.
    pub verify_conf_time: u32,
}

/// A CN's StatusResponse (EPSG DS 301, 7.3.3.3.1): its state, the static
/// error bit field and the error entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StatusResponse<'a> {
    /// EN: exception new.
    pub en: bool,
    /// EC: exception clear.
    pub ec: bool,
    /// PR: priority of the asynchronous frame requested (0–7).
    pub pr: u8,
    /// RS: pending requests to send (0–7).
    pub rs: u8,
    /// The CN's NMT state.
    pub nmt: NmtState,
    /// The static error bit field (ERR_ErrorRegister_U8 in its low byte).
    pub static_errors: u64,
    /// The error entries, [`ERROR_ENTRY_LEN`] bytes each, without the
    /// terminating all-zero entry (read them with [`StatusResponse::entries`],
    /// write them with [`ErrorEntry::write`]).
    pub errors: &'a [u8],
}

/// Bytes of one StatusResponse error entry.
pub const ERROR_ENTRY_LEN: usize = 20;

impl<'a> StatusResponse<'a> {
    /// The error entries.
    pub fn entries(&self) -> impl Iterator<Item = ErrorEntry> + 'a {
        self.errors
            .chunks_exact(ERROR_ENTRY_LEN)
            .map(ErrorEntry::read)
    }
}

/// One error entry of a StatusResponse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct ErrorEntry {
    /// Entry type (bit 15 status entry, bits 12–13 mode, low 12 bits profile).
    pub entry_type: u16,
    /// Error code.
    pub code: u16,
    /// When the error occurred.
    pub time: NetTime,
    /// Additional information.
    pub info: u64,
}

impl ErrorEntry {
    /// Writes the entry's 20 bytes.
    pub fn write(&self, out: &mut [u8; ERROR_ENTRY_LEN]) {
        out[0..2].copy_from_slice(&self.entry_type.to_le_bytes());
        out[2..4].copy_from_slice(&self.code.to_le_bytes());
        out[4..8].copy_from_slice(&self.time.seconds.to_le_bytes());
        out[8..12].copy_from_slice(&self.time.nanoseconds.to_le_bytes());
        out[12..20].copy_from_slice(&self.info.to_le_bytes());
    }

    /// Reads an entry from its 20 bytes (`b` holds at least 20).
    fn read(b: &[u8]) -> ErrorEntry {
        let u32_at = |at: usize| u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let mut info = [0; 8];
        info.copy_from_slice(&b[12..20]);
        ErrorEntry {
            entry_type: u16::from_le_bytes([b[0], b[1]]),
            code: u16::from_le_bytes([b[2], b[3]]),
            time: NetTime {
                seconds: u32_at(4),
                nanoseconds: u32_at(8),
            },
            info: u64::from_le_bytes(info),
        }
    }
}

/// An NMT state command from the MN (EPSG DS 301, 7.3.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NmtCommand<'a> {
    /// The command.
    pub id: NmtCommandId,
    /// NMTCommandData (decoded: every byte after the command's header,
    /// padding included, since an EtherType frame has no length).
    pub data: &'a [u8],
}

/// One POWERLINK frame, borrowed: the five message types an MN and its
/// CNs exchange.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Frame<'a> {
    /// Start of Cycle (0x01), MN → broadcast.
    Soc(Soc),
    /// Poll Request (0x03), MN → one CN.
    PReq(PReq<'a>),
    /// Poll Response (0x04), a CN (or the MN: PResMN) → broadcast.
    PRes(PRes<'a>),
    /// Start of Asynchronous (0x05), MN → broadcast.
    Soa(Soa),
    /// Asynchronous Send (0x06).
    ASnd(ASnd<'a>),
}

impl Frame<'_> {
    /// The message type byte.
    pub fn message_type(&self) -> u8 {
        match self {
            Frame::Soc(_) => super::MTYP_SOC,
            Frame::PReq(_) => super::MTYP_PREQ,
            Frame::PRes(_) => super::MTYP_PRES,
            Frame::Soa(_) => super::MTYP_SOA,
            Frame::ASnd(_) => super::MTYP_ASND,
        }
    }

    /// The destination node.
    pub fn dest(&self) -> u8 {
        match self {
            Frame::PReq(p) => p.node,
            Frame::ASnd(a) => a.dest,
            Frame::Soc(_) | Frame::PRes(_) | Frame::Soa(_) => BROADCAST_NODE,
        }
    }

    /// The source node.
    pub fn src(&self) -> u8 {
        match self {
            Frame::PRes(p) => p.node,
            Frame::ASnd(a) => a.src,
            Frame::Soc(_) | Frame::PReq(_) | Frame::Soa(_) => MN_NODE,
        }
    }

    /// The multicast MAC address the frame is sent to, or `None` for a
    /// PReq, which goes to its CN's own address.
    pub fn multicast_mac(&self) -> Option<[u8; 6]> {
        match self {
            Frame::Soc(_) => Some(super::MAC_SOC),
            Frame::PReq(_) => None,
            Frame::PRes(_) => Some(super::MAC_PRES),
            Frame::Soa(_) => Some(super::MAC_SOA),
            Frame::ASnd(_) => Some(super::MAC_ASND),
        }
    }
}
