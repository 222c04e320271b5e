//! The NMT vocabulary POWERLINK frames carry as plain bytes: NMT states
//! (in PRes, SoA, IdentResponse and StatusResponse), NMT command ids (in
//! ASnd NMTCommand), the services a SoA invites (RequestedServiceID) and
//! the services an ASnd carries (ServiceID).
//!
//! Each is a `u8` newtype with named constants rather than an enum: a CN's
//! states (`NMT_CS_*`) and an MN's (`NMT_MS_*`) share their codes, and a
//! decoder of real captures must carry codes it has no name for instead of
//! calling the frame malformed. Codes and names are EPSG DS 301's (the
//! names Wireshark's dissector prints).

use std::fmt;

/// An NMT state code (EPSG DS 301, 7.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct NmtState(pub u8);

impl NmtState {
    /// NMT_GS_OFF.
    pub const GS_OFF: NmtState = NmtState(0x00);
    /// NMT_GS_INITIALISING.
    pub const GS_INITIALISING: NmtState = NmtState(0x19);
    /// NMT_GS_RESET_APPLICATION.
    pub const GS_RESET_APPLICATION: NmtState = NmtState(0x29);
    /// NMT_GS_RESET_COMMUNICATION.
    pub const GS_RESET_COMMUNICATION: NmtState = NmtState(0x39);
    /// NMT_GS_RESET_CONFIGURATION.
    pub const GS_RESET_CONFIGURATION: NmtState = NmtState(0x79);
    /// NMT_CS_NOT_ACTIVE: a CN listening, not yet addressed.
    pub const CS_NOT_ACTIVE: NmtState = NmtState(0x1C);
    /// NMT_CS_PRE_OPERATIONAL_1: asynchronous only (answers SoA).
    pub const CS_PRE_OPERATIONAL_1: NmtState = NmtState(0x1D);
    /// NMT_CS_PRE_OPERATIONAL_2: polled, PDO data not yet valid.
    pub const CS_PRE_OPERATIONAL_2: NmtState = NmtState(0x5D);
    /// NMT_CS_READY_TO_OPERATE: after NMTEnableReadyToOperate.
    pub const CS_READY_TO_OPERATE: NmtState = NmtState(0x6D);
    /// NMT_CS_OPERATIONAL: after NMTStartNode.
    pub const CS_OPERATIONAL: NmtState = NmtState(0xFD);
    /// NMT_CS_STOPPED.
    pub const CS_STOPPED: NmtState = NmtState(0x4D);
    /// NMT_CS_BASIC_ETHERNET.
    pub const CS_BASIC_ETHERNET: NmtState = NmtState(0x1E);
    /// NMT_MS_NOT_ACTIVE.
    pub const MS_NOT_ACTIVE: NmtState = NmtState(0x1C);
    /// NMT_MS_PRE_OPERATIONAL_1.
    pub const MS_PRE_OPERATIONAL_1: NmtState = NmtState(0x1D);
    /// NMT_MS_PRE_OPERATIONAL_2.
    pub const MS_PRE_OPERATIONAL_2: NmtState = NmtState(0x5D);
    /// NMT_MS_READY_TO_OPERATE.
    pub const MS_READY_TO_OPERATE: NmtState = NmtState(0x6D);
    /// NMT_MS_OPERATIONAL.
    pub const MS_OPERATIONAL: NmtState = NmtState(0xFD);
    /// NMT_MS_BASIC_ETHERNET.
    pub const MS_BASIC_ETHERNET: NmtState = NmtState(0x1E);

    /// The state's name as a CN's (`mn == false`) or an MN's state, or
    /// `None` for a code DS 301 does not name.
    pub fn name(self, mn: bool) -> Option<&'static str> {
        Some(match (self.0, mn) {
            (0x00, _) => "NMT_GS_OFF",
            (0x19, _) => "NMT_GS_INITIALISING",
            (0x29, _) => "NMT_GS_RESET_APPLICATION",
            (0x39, _) => "NMT_GS_RESET_COMMUNICATION",
            (0x79, _) => "NMT_GS_RESET_CONFIGURATION",
            (0x1C, false) => "NMT_CS_NOT_ACTIVE",
            (0x1D, false) => "NMT_CS_PRE_OPERATIONAL_1",
            (0x5D, false) => "NMT_CS_PRE_OPERATIONAL_2",
            (0x6D, false) => "NMT_CS_READY_TO_OPERATE",
            (0xFD, false) => "NMT_CS_OPERATIONAL",
            (0x4D, false) => "NMT_CS_STOPPED",
            (0x1E, false) => "NMT_CS_BASIC_ETHERNET",
            (0x1C, true) => "NMT_MS_NOT_ACTIVE",
            (0x1D, true) => "NMT_MS_PRE_OPERATIONAL_1",
            (0x5D, true) => "NMT_MS_PRE_OPERATIONAL_2",
            (0x6D, true) => "NMT_MS_READY_TO_OPERATE",
            (0xFD, true) => "NMT_MS_OPERATIONAL",
            (0x1E, true) => "NMT_MS_BASIC_ETHERNET",
            _ => return None,
        })
    }
}

impl fmt::Display for NmtState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.name(false) {
            Some(n) => write!(f, "{n} ({:#04x})", self.0),
            None => write!(f, "NMT state {:#04x}", self.0),
        }
    }
}

/// An NMT command id (ASnd NMTCommand, EPSG DS 301, 7.3.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct NmtCommandId(pub u8);

impl NmtCommandId {
    /// NMTStartNode: READY_TO_OPERATE → OPERATIONAL.
    pub const START_NODE: NmtCommandId = NmtCommandId(0x21);
    /// NMTStopNode.
    pub const STOP_NODE: NmtCommandId = NmtCommandId(0x22);
    /// NMTEnterPreOperational2: PRE_OPERATIONAL_1 → PRE_OPERATIONAL_2.
    pub const ENTER_PRE_OPERATIONAL_2: NmtCommandId = NmtCommandId(0x23);
    /// NMTEnableReadyToOperate: PRE_OPERATIONAL_2 → READY_TO_OPERATE.
    pub const ENABLE_READY_TO_OPERATE: NmtCommandId = NmtCommandId(0x24);
    /// NMTResetNode.
    pub const RESET_NODE: NmtCommandId = NmtCommandId(0x28);
    /// NMTResetCommunication.
    pub const RESET_COMMUNICATION: NmtCommandId = NmtCommandId(0x29);
    /// NMTResetConfiguration.
    pub const RESET_CONFIGURATION: NmtCommandId = NmtCommandId(0x2A);
    /// NMTSwReset.
    pub const SW_RESET: NmtCommandId = NmtCommandId(0x2B);
}

/// The service a SoA invites (RequestedServiceID, EPSG DS 301, 4.6.1.1.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RequestedService(pub u8);

impl RequestedService {
    /// NoService: the asynchronous slot stays empty.
    pub const NO_SERVICE: RequestedService = RequestedService(0);
    /// IdentRequest: the target answers with an ASnd IdentResponse.
    pub const IDENT_REQUEST: RequestedService = RequestedService(1);
    /// StatusRequest: the target answers with an ASnd StatusResponse.
    pub const STATUS_REQUEST: RequestedService = RequestedService(2);
    /// NMTRequestInvite.
    pub const NMT_REQUEST_INVITE: RequestedService = RequestedService(3);
    /// UnspecifiedInvite.
    pub const UNSPECIFIED_INVITE: RequestedService = RequestedService(255);
}

/// The service an ASnd carries (ServiceID, EPSG DS 301, 4.6.1.1.6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServiceId(pub u8);

impl ServiceId {
    /// IdentResponse.
    pub const IDENT_RESPONSE: ServiceId = ServiceId(1);
    /// StatusResponse.
    pub const STATUS_RESPONSE: ServiceId = ServiceId(2);
    /// NMTRequest (not spoken: carried as [`ASndService::Other`](super::ASndService::Other)).
    pub const NMT_REQUEST: ServiceId = ServiceId(3);
    /// NMTCommand.
    pub const NMT_COMMAND: ServiceId = ServiceId(4);
    /// SDO (decoded as [`ASndService::Sdo`](super::ASndService::Sdo)).
    pub const SDO: ServiceId = ServiceId(5);
}
