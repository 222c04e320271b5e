//! Why a POWERLINK frame could not be decoded or encoded: one file of its
//! own, below both the frame model and the SDO layers, which each return
//! them (a decoder of SDO layers is called by the frame decoder).

use thiserror::Error;

/// Why bytes are not a POWERLINK frame jitterlab reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The bytes break the layout: `what` went wrong at byte `offset`
    /// (from the start of the Ethernet frame for [`decode`](super::decode),
    /// of the POWERLINK data for [`decode_payload`](super::decode_payload)).
    #[error("malformed POWERLINK frame at byte {offset}: {what}")]
    Malformed {
        /// Offset of the offending field.
        offset: usize,
        /// What was wrong there.
        what: &'static str,
    },
    /// An Ethernet frame of another protocol.
    #[error("not a POWERLINK frame: EtherType {0:#06x} (POWERLINK is 0x88ab)")]
    NotPowerlink(u16),
    /// A POWERLINK message type jitterlab does not speak (AInv, AMNI).
    #[error("POWERLINK message type {0:#04x} is not spoken (only SoC, PReq, PRes, SoA and ASnd)")]
    Unsupported(u8),
}

/// Why a frame could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// The output buffer is too short.
    #[error("the output buffer holds {have} bytes; the frame needs {need}")]
    BufferTooSmall {
        /// Bytes the frame needs (padded to 60).
        need: usize,
        /// Bytes the buffer has.
        have: usize,
    },
    /// A payload over its limit.
    #[error("a payload of {len} bytes is over the limit of {max} (C_DLL_ISOCHR_MAX_PAYL for PReq/PRes, the Ethernet MTU for ASnd): send fewer bytes")]
    PayloadTooLarge {
        /// Bytes given.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// A field out of its range; the text says which.
    #[error("the frame cannot be encoded: {0}")]
    Invalid(&'static str),
}
