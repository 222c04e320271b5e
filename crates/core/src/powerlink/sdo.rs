//! POWERLINK SDO over ASnd (ServiceID 5): the sequence layer and the
//! command layer of the service data objects through which an MN's
//! configuration manager reads and writes a CN's object dictionary
//! (EPSG DS 301, 6.3), encoded and decoded without allocating.
//!
//! Why it is here: openPOWERLINK's MN configures every CN over SDO before
//! it lets it go Operational (the cycle length 0x1006, the PDO mappings,
//! the loss thresholds), and a CN answers those writes from its object
//! dictionary. An emulator on either side has to speak both layers as the
//! reference does.
//!
//! The service data, from the byte after the ServiceID (frame byte 18; all
//! integers little-endian):
//!
//! ```text
//! sequence layer  0 ReceiveSequenceNumber<<2 | ReceiveCon
//!                 1 SendSequenceNumber<<2 | SendCon | 2..4 reserved
//! command layer   4 reserved | 5 TransactionID
//!                 6 flags: 0x80 response, 0x40 abort, bits 4-5 segmentation
//!                   (0 expedited, 1 initiate, 2 segment, 3 complete), bits 0-1 pad size
//!                 7 CommandID | 8..10 SegmentSize | 10..12 reserved
//!                 12.. data: SegmentSize bytes; an Initiate segment starts
//!                   with the transfer's 4-byte data size
//! ```
//!
//! A sequence-only frame (an acknowledgement, a connection set-up or
//! close) is padded with zeros, which read as a command layer with
//! CommandID 0 (NIL), SegmentSize 0: it decodes to [`CommandLayer::NIL`]
//! and re-encodes to the same bytes. The reserved bytes and the pad-size
//! bits are not carried: they are written as zero, as openPOWERLINK does
//! for the services spoken here.
//!
//! WriteByIndex data is the object's address ([`IndexAddress`]: index,
//! subindex, one reserved byte) followed by the value; a ReadByIndex
//! request carries the address alone and its response the value. An abort
//! carries a 4-byte [`AbortCode`].
//!
//! A command whose data is longer than one frame's segment
//! ([`MAX_SEGMENT_SIZE`] for openPOWERLINK) is cut by [`segments`] into an
//! Initiate, Segments and a Complete, and put together again by a
//! [`Reassembly`] into a buffer the caller owns. Nothing here allocates.
//! The sequence layer's state machine (numbering, acknowledgement,
//! retransmission) belongs to whoever drives the connection; this module
//! only reads and writes its fields.

use std::fmt;

use super::errors::{DecodeError, EncodeError};

/// Bytes of the sequence layer.
pub const SEQ_LAYER_LEN: usize = 4;
/// Bytes of the command layer's fixed header (before its data).
pub const COMMAND_HEADER_LEN: usize = 8;
/// Bytes of the data size that opens an Initiate segment.
pub const DATA_SIZE_LEN: usize = 4;
/// Bytes of an SDO's service data before the command layer's data.
pub const SDO_HEADER_LEN: usize = SEQ_LAYER_LEN + COMMAND_HEADER_LEN;

/// Response flag of the command layer.
const FLAG_RESPONSE: u8 = 0x80;
/// Abort flag of the command layer.
const FLAG_ABORT: u8 = 0x40;
/// Segmentation bits of the command layer's flags.
const SEGMENTATION_MASK: u8 = 0x30;

/// A sequence layer connection state (ReceiveCon, SendCon).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Con(pub u8);

impl Con {
    /// No connection; with both fields 0, a close.
    pub const NONE: Con = Con(0);
    /// Initialisation: the connection is being set up.
    pub const INIT: Con = Con(1);
    /// The connection is valid.
    pub const VALID: Con = Con(2);
    /// Error: a retransmission is requested.
    pub const ERROR: Con = Con(3);
}

/// The SDO sequence layer (4 bytes after the ServiceID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SeqLayer {
    /// The last sequence number received from the peer (6 bits, 0-63).
    pub receive_seq: u8,
    /// The receiving side's connection state.
    pub receive_con: Con,
    /// This frame's own sequence number (6 bits, 0-63).
    pub send_seq: u8,
    /// The sending side's connection state.
    pub send_con: Con,
}

impl SeqLayer {
    fn write(&self, out: &mut [u8]) -> Result<(), EncodeError> {
        if self.receive_seq > 63 || self.send_seq > 63 {
            return Err(EncodeError::Invalid(
                "SDO sequence numbers are 6-bit fields (0-63)",
            ));
        }
        if self.receive_con.0 > 3 || self.send_con.0 > 3 {
            return Err(EncodeError::Invalid(
                "SDO connection states are 2-bit fields (0-3)",
            ));
        }
        out[0] = self.receive_seq << 2 | self.receive_con.0;
        out[1] = self.send_seq << 2 | self.send_con.0;
        out[2] = 0;
        out[3] = 0;
        Ok(())
    }

    fn read(b: &[u8]) -> SeqLayer {
        SeqLayer {
            receive_seq: b[0] >> 2,
            receive_con: Con(b[0] & 3),
            send_seq: b[1] >> 2,
            send_con: Con(b[1] & 3),
        }
    }
}

/// An SDO command id; ids without a name here are carried as they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CommandId(pub u8);

impl CommandId {
    /// NIL: no command (a sequence-layer-only frame).
    pub const NIL: CommandId = CommandId(0x00);
    /// WriteByIndex: write one object or sub-object.
    pub const WRITE_BY_INDEX: CommandId = CommandId(0x01);
    /// ReadByIndex: read one object or sub-object.
    pub const READ_BY_INDEX: CommandId = CommandId(0x02);
    /// WriteAllByIndex.
    pub const WRITE_ALL_BY_INDEX: CommandId = CommandId(0x03);
    /// ReadAllByIndex.
    pub const READ_ALL_BY_INDEX: CommandId = CommandId(0x04);
    /// WriteMultipleParameterByIndex.
    pub const WRITE_MULTIPLE_BY_INDEX: CommandId = CommandId(0x31);
    /// ReadMultipleParameterByIndex.
    pub const READ_MULTIPLE_BY_INDEX: CommandId = CommandId(0x32);
}

/// How a command's data is split over frames (flags bits 4-5; the
/// discriminant is the 2-bit code).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum Segmentation {
    /// The whole data in this one frame.
    #[default]
    Expedited = 0,
    /// The first segment of several; it carries the transfer's data size.
    Initiate = 1,
    /// A middle segment.
    Segment = 2,
    /// The last segment.
    Complete = 3,
}

impl Segmentation {
    fn bits(self) -> u8 {
        (self as u8) << 4
    }

    fn from_flags(flags: u8) -> Segmentation {
        match flags & SEGMENTATION_MASK {
            0x00 => Segmentation::Expedited,
            0x10 => Segmentation::Initiate,
            0x20 => Segmentation::Segment,
            _ => Segmentation::Complete,
        }
    }
}

/// The SDO command layer: one command (or one segment of it), borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CommandLayer<'a> {
    /// TransactionID: pairs a response with its request.
    pub transaction: u8,
    /// Response flag (0x80): the server's answer.
    pub response: bool,
    /// Abort flag (0x40): the transfer is aborted; `data` is the code.
    pub abort: bool,
    /// Which part of a transfer this frame carries.
    pub segmentation: Segmentation,
    /// The command.
    pub command: CommandId,
    /// SegmentSize as on the wire: the data bytes of this frame,
    /// `data_size`'s 4 included when present.
    pub segment_size: u16,
    /// The transfer's data size, which opens the data of an Initiate
    /// segment (and only there). openPOWERLINK counts every command data
    /// byte of the transfer in it, these 4 included.
    pub data_size: Option<u32>,
    /// The data: `segment_size` bytes, less the 4 of `data_size`.
    pub data: &'a [u8],
}

impl<'a> CommandLayer<'a> {
    /// No command: the command layer of a sequence-layer-only frame.
    pub const NIL: CommandLayer<'static> = CommandLayer {
        transaction: 0,
        response: false,
        abort: false,
        segmentation: Segmentation::Expedited,
        command: CommandId::NIL,
        segment_size: 0,
        data_size: None,
        data: &[],
    };

    /// An expedited request: `command` with its whole `data` in one frame.
    /// `data` over 65 535 bytes fails at encoding.
    pub fn request(transaction: u8, command: CommandId, data: &'a [u8]) -> CommandLayer<'a> {
        CommandLayer {
            transaction,
            command,
            segment_size: data.len().try_into().unwrap_or(u16::MAX),
            data,
            ..CommandLayer::NIL
        }
    }

    /// An expedited response to `command` (a write's response has no data,
    /// a read's carries the value).
    pub fn response(transaction: u8, command: CommandId, data: &'a [u8]) -> CommandLayer<'a> {
        CommandLayer {
            response: true,
            ..CommandLayer::request(transaction, command, data)
        }
    }

    /// An abort of `command`'s transfer, from the server (`response`) or
    /// the client; `code` holds [`AbortCode::to_bytes`].
    pub fn abort(
        transaction: u8,
        command: CommandId,
        response: bool,
        code: &'a [u8; 4],
    ) -> CommandLayer<'a> {
        CommandLayer {
            response,
            abort: true,
            ..CommandLayer::request(transaction, command, code)
        }
    }

    /// The abort code of an abort frame (`None` if not an abort or if its
    /// data is not 4 bytes).
    pub fn abort_code(&self) -> Option<AbortCode> {
        if !self.abort {
            return None;
        }
        let b: [u8; 4] = self.data.try_into().ok()?;
        Some(AbortCode(u32::from_le_bytes(b)))
    }

    /// Whether this is the NIL command of a sequence-layer-only frame.
    pub fn is_nil(&self) -> bool {
        self.command == CommandId::NIL
    }

    /// Bytes of the command layer on the wire.
    pub fn len(&self) -> usize {
        COMMAND_HEADER_LEN + self.data_size.map_or(0, |_| DATA_SIZE_LEN) + self.data.len()
    }

    /// Whether the command layer has no data (it is never zero bytes long).
    pub fn is_empty(&self) -> bool {
        self.data.is_empty() && self.data_size.is_none()
    }
}

/// One SDO frame's service data: its sequence layer and command layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Sdo<'a> {
    /// The sequence layer.
    pub seq: SeqLayer,
    /// The command layer ([`CommandLayer::NIL`] for a sequence-only frame).
    pub command: CommandLayer<'a>,
}

impl<'a> Sdo<'a> {
    /// A sequence-layer-only frame (set-up, acknowledgement, close).
    pub fn sequence_only(seq: SeqLayer) -> Sdo<'static> {
        Sdo {
            seq,
            command: CommandLayer::NIL,
        }
    }

    /// Bytes of the service data (after the ServiceID), unpadded.
    pub fn len(&self) -> usize {
        SEQ_LAYER_LEN + self.command.len()
    }

    /// Never true: the service data has at least its two headers.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Writes the service data into `out`, which holds exactly
    /// [`Sdo::len`] bytes.
    pub(super) fn write(&self, out: &mut [u8]) -> Result<(), EncodeError> {
        let c = &self.command;
        let expect = c.data.len() + c.data_size.map_or(0, |_| DATA_SIZE_LEN);
        if usize::from(c.segment_size) != expect {
            return Err(EncodeError::Invalid(
                "SDO SegmentSize must be the data's length (plus 4 for an Initiate's data size)",
            ));
        }
        if (c.segmentation == Segmentation::Initiate) != c.data_size.is_some() {
            return Err(EncodeError::Invalid(
                "an SDO Initiate segment carries a data size, and no other segment does",
            ));
        }
        self.seq.write(&mut out[..SEQ_LAYER_LEN])?;
        let h = &mut out[SEQ_LAYER_LEN..];
        h[0] = 0;
        h[1] = c.transaction;
        h[2] = if c.response { FLAG_RESPONSE } else { 0 }
            | if c.abort { FLAG_ABORT } else { 0 }
            | c.segmentation.bits();
        h[3] = c.command.0;
        h[4..6].copy_from_slice(&c.segment_size.to_le_bytes());
        h[6] = 0;
        h[7] = 0;
        let mut d = &mut h[COMMAND_HEADER_LEN..];
        if let Some(size) = c.data_size {
            d[..DATA_SIZE_LEN].copy_from_slice(&size.to_le_bytes());
            d = &mut d[DATA_SIZE_LEN..];
        }
        d.copy_from_slice(c.data);
        Ok(())
    }

    /// Reads the service data of an ASnd SDO (the bytes after the
    /// ServiceID, padding allowed). Never panics; error offsets count from
    /// the first byte of the sequence layer.
    pub fn decode(b: &'a [u8]) -> Result<Sdo<'a>, DecodeError> {
        if b.len() < SEQ_LAYER_LEN {
            return Err(DecodeError::Malformed {
                offset: b.len(),
                what: "SDO sequence layer cut short",
            });
        }
        let seq = SeqLayer::read(b);
        let rest = &b[SEQ_LAYER_LEN..];
        if rest.is_empty() {
            return Ok(Sdo::sequence_only(seq));
        }
        if rest.len() < COMMAND_HEADER_LEN {
            return Err(DecodeError::Malformed {
                offset: b.len(),
                what: "SDO command layer header cut short",
            });
        }
        let flags = rest[2];
        let segmentation = Segmentation::from_flags(flags);
        let segment_size = u16::from_le_bytes([rest[4], rest[5]]);
        let data = rest[COMMAND_HEADER_LEN..]
            .get(..usize::from(segment_size))
            .ok_or(DecodeError::Malformed {
                offset: SEQ_LAYER_LEN + 4,
                what: "SDO SegmentSize runs past the end of the frame",
            })?;
        let (data_size, data) = if segmentation == Segmentation::Initiate {
            let Some((size, data)) = data.split_first_chunk::<DATA_SIZE_LEN>() else {
                return Err(DecodeError::Malformed {
                    offset: SEQ_LAYER_LEN + 4,
                    what: "SDO Initiate segment shorter than its 4-byte data size",
                });
            };
            (Some(u32::from_le_bytes(*size)), data)
        } else {
            (None, data)
        };
        Ok(Sdo {
            seq,
            command: CommandLayer {
                transaction: rest[1],
                response: flags & FLAG_RESPONSE != 0,
                abort: flags & FLAG_ABORT != 0,
                segmentation,
                command: CommandId(rest[3]),
                segment_size,
                data_size,
                data,
            },
        })
    }
}

/// The most command data bytes (SegmentSize) openPOWERLINK puts in one
/// frame (`SDO_CMD_SEGM_TX_MAX_SIZE`, its 314-byte SDO frame less 58): a
/// transfer longer than this is segmented. Segments no longer than this
/// fit every openPOWERLINK receive buffer.
pub const MAX_SEGMENT_SIZE: usize = 256;

/// The command layers of one transfer: `data` (the command's whole data —
/// for a WriteByIndex the address, then the value) cut into frames of at
/// most `max_segment` data bytes (SegmentSize). One Expedited frame when
/// it fits; otherwise an Initiate (opening with the data size, which
/// counts every data byte of the transfer and its own 4, as openPOWERLINK
/// does), then Segments, then a Complete. Allocates nothing; `max_segment`
/// is taken as at least 5 and at most 65 535.
pub fn segments(
    transaction: u8,
    command: CommandId,
    response: bool,
    data: &[u8],
    max_segment: usize,
) -> Segments<'_> {
    Segments {
        head: CommandLayer {
            response,
            ..CommandLayer::request(transaction, command, &[])
        },
        data,
        at: 0,
        max: max_segment.clamp(DATA_SIZE_LEN + 1, usize::from(u16::MAX)),
        started: false,
    }
}

/// The iterator of [`segments`].
#[derive(Debug, Clone)]
pub struct Segments<'a> {
    head: CommandLayer<'a>,
    data: &'a [u8],
    at: usize,
    max: usize,
    started: bool,
}

impl<'a> Iterator for Segments<'a> {
    type Item = CommandLayer<'a>;

    fn next(&mut self) -> Option<CommandLayer<'a>> {
        let rest = &self.data[self.at..];
        let c = if !self.started {
            self.started = true;
            if self.data.len() <= self.max {
                self.at = self.data.len();
                CommandLayer {
                    segment_size: self.data.len() as u16,
                    data: self.data,
                    ..self.head
                }
            } else {
                let n = self.max - DATA_SIZE_LEN;
                self.at = n;
                CommandLayer {
                    segmentation: Segmentation::Initiate,
                    segment_size: self.max as u16,
                    data_size: Some(u32::try_from(self.data.len() + DATA_SIZE_LEN).ok()?),
                    data: &rest[..n],
                    ..self.head
                }
            }
        } else if rest.is_empty() {
            return None;
        } else {
            let n = rest.len().min(self.max);
            self.at += n;
            CommandLayer {
                segmentation: if n == rest.len() {
                    Segmentation::Complete
                } else {
                    Segmentation::Segment
                },
                segment_size: n as u16,
                data: &rest[..n],
                ..self.head
            }
        };
        Some(c)
    }
}

/// Why a received segment does not continue its transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SegmentError {
    /// A Segment or Complete came with no Initiate before it.
    #[error("an SDO segment came with no Initiate before it")]
    NoInitiate,
    /// An Initiate's data size is under its own 4 bytes.
    #[error("an SDO Initiate announces {0} bytes, fewer than its own 4-byte data size")]
    BadDataSize(u32),
    /// The transfer is longer than the buffer (or than it announced).
    #[error("an SDO transfer of {need} bytes does not fit in {room}")]
    TooLong {
        /// Bytes the transfer needs.
        need: usize,
        /// Bytes there is room for.
        room: usize,
    },
    /// The Complete segment ends the transfer short of its data size.
    #[error("an SDO transfer announced {announced} data bytes and carried {got}")]
    SizeMismatch {
        /// Bytes the Initiate announced (its data size less 4).
        announced: usize,
        /// Bytes the segments carried.
        got: usize,
    },
}

impl SegmentError {
    /// The abort code a server or client answers the error with.
    pub fn abort_code(self) -> AbortCode {
        match self {
            SegmentError::NoInitiate => AbortCode::COMMAND_UNKNOWN,
            SegmentError::BadDataSize(_) | SegmentError::SizeMismatch { .. } => {
                AbortCode::LENGTH_MISMATCH
            }
            SegmentError::TooLong { .. } => AbortCode::OUT_OF_MEMORY,
        }
    }
}

/// Collects a transfer's command data, segment by segment, into a buffer
/// the caller owns (allocating nothing): the receiving side of
/// [`segments`].
#[derive(Debug)]
pub struct Reassembly<'b> {
    buf: &'b mut [u8],
    len: usize,
    /// The data bytes the Initiate announced, while a transfer is open.
    expected: Option<usize>,
}

impl<'b> Reassembly<'b> {
    /// A reassembly into `buf`, which bounds the longest transfer taken.
    pub fn new(buf: &'b mut [u8]) -> Reassembly<'b> {
        Reassembly {
            buf,
            len: 0,
            expected: None,
        }
    }

    /// Whether a segmented transfer is open (an Initiate came, its
    /// Complete not yet).
    pub fn in_progress(&self) -> bool {
        self.expected.is_some()
    }

    /// Drops an open transfer (after an abort).
    pub fn reset(&mut self) {
        self.len = 0;
        self.expected = None;
    }

    /// Takes one frame's command layer: the whole data once the transfer
    /// is complete (at once for an Expedited frame), `None` while segments
    /// are still to come. An Expedited or Initiate frame starts a new
    /// transfer, dropping any open one. On error the transfer is dropped.
    pub fn push(&mut self, c: &CommandLayer<'_>) -> Result<Option<&[u8]>, SegmentError> {
        let r = self.take(c);
        if r.is_err() {
            self.reset();
        }
        r?;
        Ok(if self.expected.is_none() {
            Some(&self.buf[..self.len])
        } else {
            None
        })
    }

    fn append(&mut self, data: &[u8], limit: usize) -> Result<(), SegmentError> {
        let need = self.len + data.len();
        if need > limit.min(self.buf.len()) {
            return Err(SegmentError::TooLong {
                need,
                room: limit.min(self.buf.len()),
            });
        }
        self.buf[self.len..need].copy_from_slice(data);
        self.len = need;
        Ok(())
    }

    fn take(&mut self, c: &CommandLayer<'_>) -> Result<(), SegmentError> {
        match c.segmentation {
            Segmentation::Expedited => {
                self.reset();
                self.append(c.data, usize::MAX)
            }
            Segmentation::Initiate => {
                self.reset();
                let size = c.data_size.unwrap_or(0);
                let total = (size as usize)
                    .checked_sub(DATA_SIZE_LEN)
                    .ok_or(SegmentError::BadDataSize(size))?;
                if total > self.buf.len() {
                    return Err(SegmentError::TooLong {
                        need: total,
                        room: self.buf.len(),
                    });
                }
                self.expected = Some(total);
                self.append(c.data, total)
            }
            Segmentation::Segment | Segmentation::Complete => {
                let total = self.expected.ok_or(SegmentError::NoInitiate)?;
                self.append(c.data, total)?;
                if c.segmentation == Segmentation::Complete {
                    self.expected = None;
                    if self.len != total {
                        return Err(SegmentError::SizeMismatch {
                            announced: total,
                            got: self.len,
                        });
                    }
                }
                Ok(())
            }
        }
    }
}

/// The address of one object dictionary entry, as WriteByIndex and
/// ReadByIndex carry it: index (LE), subindex, one reserved byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, PartialOrd, Ord)]
pub struct IndexAddress {
    /// The object's index.
    pub index: u16,
    /// The sub-object's subindex.
    pub subindex: u8,
}

impl IndexAddress {
    /// Bytes of an address on the wire.
    pub const LEN: usize = 4;

    /// An address.
    pub const fn new(index: u16, subindex: u8) -> IndexAddress {
        IndexAddress { index, subindex }
    }

    /// The address's 4 bytes.
    pub fn to_bytes(self) -> [u8; 4] {
        let [lo, hi] = self.index.to_le_bytes();
        [lo, hi, self.subindex, 0]
    }

    /// Reads an address from the first 4 bytes of `data`; offsets in the
    /// error count from `data`'s first byte.
    pub fn read(data: &[u8]) -> Result<IndexAddress, DecodeError> {
        match data {
            [lo, hi, sub, _, ..] => Ok(IndexAddress {
                index: u16::from_le_bytes([*lo, *hi]),
                subindex: *sub,
            }),
            _ => Err(DecodeError::Malformed {
                offset: data.len(),
                what: "an SDO object address (index, subindex, reserved) is 4 bytes",
            }),
        }
    }
}

impl fmt::Display for IndexAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#06x}/{}", self.index, self.subindex)
    }
}

fn too_small(need: usize, have: usize) -> EncodeError {
    EncodeError::BufferTooSmall { need, have }
}

/// Writes a WriteByIndex request's data (the address, then `value`) into
/// `buf` and returns the part written.
pub fn write_by_index_request<'b>(
    addr: IndexAddress,
    value: &[u8],
    buf: &'b mut [u8],
) -> Result<&'b [u8], EncodeError> {
    let len = IndexAddress::LEN + value.len();
    if buf.len() < len {
        return Err(too_small(len, buf.len()));
    }
    buf[..IndexAddress::LEN].copy_from_slice(&addr.to_bytes());
    buf[IndexAddress::LEN..len].copy_from_slice(value);
    Ok(&buf[..len])
}

/// Reads a WriteByIndex request's data: the address and the value.
pub fn parse_write_by_index_request(data: &[u8]) -> Result<(IndexAddress, &[u8]), DecodeError> {
    let addr = IndexAddress::read(data)?;
    Ok((addr, &data[IndexAddress::LEN..]))
}

/// Writes a ReadByIndex request's data (the address) into `buf` and
/// returns the part written.
pub fn read_by_index_request(addr: IndexAddress, buf: &mut [u8]) -> Result<&[u8], EncodeError> {
    write_by_index_request(addr, &[], buf)
}

/// Reads a ReadByIndex request's data: the address (exactly 4 bytes).
pub fn parse_read_by_index_request(data: &[u8]) -> Result<IndexAddress, DecodeError> {
    let addr = IndexAddress::read(data)?;
    if data.len() != IndexAddress::LEN {
        return Err(DecodeError::Malformed {
            offset: IndexAddress::LEN,
            what: "a ReadByIndex request carries only the 4-byte object address",
        });
    }
    Ok(addr)
}

/// An SDO abort code (EPSG DS 301, 6.3.2.4.2; CANopen's codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AbortCode(pub u32);

impl AbortCode {
    /// Toggle bit not alternated.
    pub const TOGGLE_BIT: AbortCode = AbortCode(0x0503_0000);
    /// SDO protocol timed out.
    pub const TIMEOUT: AbortCode = AbortCode(0x0504_0000);
    /// Client/server command ID not valid or unknown.
    pub const COMMAND_UNKNOWN: AbortCode = AbortCode(0x0504_0001);
    /// Invalid block size.
    pub const INVALID_BLOCK_SIZE: AbortCode = AbortCode(0x0504_0002);
    /// Invalid sequence number.
    pub const INVALID_SEQUENCE: AbortCode = AbortCode(0x0504_0003);
    /// CRC error.
    pub const CRC: AbortCode = AbortCode(0x0504_0004);
    /// Out of memory.
    pub const OUT_OF_MEMORY: AbortCode = AbortCode(0x0504_0005);
    /// Unsupported access to an object.
    pub const UNSUPPORTED_ACCESS: AbortCode = AbortCode(0x0601_0000);
    /// Attempt to read a write-only object.
    pub const WRITE_ONLY: AbortCode = AbortCode(0x0601_0001);
    /// Attempt to write a read-only object.
    pub const READ_ONLY: AbortCode = AbortCode(0x0601_0002);
    /// Object does not exist in the object dictionary.
    pub const OBJECT_DOES_NOT_EXIST: AbortCode = AbortCode(0x0602_0000);
    /// Object cannot be mapped to the PDO.
    pub const NOT_MAPPABLE: AbortCode = AbortCode(0x0604_0041);
    /// The number and length of the objects to be mapped would exceed the
    /// PDO length.
    pub const PDO_TOO_LONG: AbortCode = AbortCode(0x0604_0042);
    /// General parameter incompatibility.
    pub const PARAMETER_INCOMPATIBLE: AbortCode = AbortCode(0x0604_0043);
    /// General internal incompatibility in the device.
    pub const INTERNAL_INCOMPATIBLE: AbortCode = AbortCode(0x0604_0047);
    /// Access failed due to a hardware error.
    pub const HARDWARE: AbortCode = AbortCode(0x0606_0000);
    /// Data type does not match, length of service parameter does not match.
    pub const LENGTH_MISMATCH: AbortCode = AbortCode(0x0607_0010);
    /// Data type does not match, length of service parameter too high.
    pub const LENGTH_TOO_HIGH: AbortCode = AbortCode(0x0607_0012);
    /// Data type does not match, length of service parameter too low.
    pub const LENGTH_TOO_LOW: AbortCode = AbortCode(0x0607_0013);
    /// Sub-index does not exist.
    pub const SUBINDEX_DOES_NOT_EXIST: AbortCode = AbortCode(0x0609_0011);
    /// Value range of parameter exceeded (write access only).
    pub const VALUE_RANGE: AbortCode = AbortCode(0x0609_0030);
    /// Value of parameter written too high.
    pub const VALUE_TOO_HIGH: AbortCode = AbortCode(0x0609_0031);
    /// Value of parameter written too low.
    pub const VALUE_TOO_LOW: AbortCode = AbortCode(0x0609_0032);
    /// Maximum value is less than minimum value.
    pub const MAX_BELOW_MIN: AbortCode = AbortCode(0x0609_0036);
    /// General error.
    pub const GENERAL: AbortCode = AbortCode(0x0800_0000);
    /// Data cannot be transferred or stored to the application.
    pub const CANNOT_TRANSFER: AbortCode = AbortCode(0x0800_0020);
    /// Data cannot be transferred or stored because of local control.
    pub const LOCAL_CONTROL: AbortCode = AbortCode(0x0800_0021);
    /// Data cannot be transferred or stored because of the present device
    /// state.
    pub const DEVICE_STATE: AbortCode = AbortCode(0x0800_0022);
    /// Object dictionary dynamic generation failed or no object dictionary
    /// is present.
    pub const NO_OBJECT_DICTIONARY: AbortCode = AbortCode(0x0800_0023);
    /// EDS, DCF or concise DCF data set empty.
    pub const CONFIG_DATA_EMPTY: AbortCode = AbortCode(0x0800_0024);

    /// The code's 4 bytes on the wire.
    pub fn to_bytes(self) -> [u8; 4] {
        self.0.to_le_bytes()
    }

    /// DS 301's text for the code, or `None` for a code it does not name.
    pub fn text(self) -> Option<&'static str> {
        Some(match self {
            AbortCode::TOGGLE_BIT => "toggle bit not alternated",
            AbortCode::TIMEOUT => "SDO protocol timed out",
            AbortCode::COMMAND_UNKNOWN => "client/server command ID not valid or unknown",
            AbortCode::INVALID_BLOCK_SIZE => "invalid block size",
            AbortCode::INVALID_SEQUENCE => "invalid sequence number",
            AbortCode::CRC => "CRC error",
            AbortCode::OUT_OF_MEMORY => "out of memory",
            AbortCode::UNSUPPORTED_ACCESS => "unsupported access to an object",
            AbortCode::WRITE_ONLY => "attempt to read a write only object",
            AbortCode::READ_ONLY => "attempt to write a read only object",
            AbortCode::OBJECT_DOES_NOT_EXIST => "object does not exist in the object dictionary",
            AbortCode::NOT_MAPPABLE => "object cannot be mapped to the PDO",
            AbortCode::PDO_TOO_LONG => {
                "the number and length of the objects to be mapped would exceed PDO length"
            }
            AbortCode::PARAMETER_INCOMPATIBLE => "general parameter incompatibility reason",
            AbortCode::INTERNAL_INCOMPATIBLE => "general internal incompatibility in the device",
            AbortCode::HARDWARE => "access failed due to a hardware error",
            AbortCode::LENGTH_MISMATCH => {
                "data type does not match, length of service parameter does not match"
            }
            AbortCode::LENGTH_TOO_HIGH => {
                "data type does not match, length of service parameter too high"
            }
            AbortCode::LENGTH_TOO_LOW => {
                "data type does not match, length of service parameter too low"
            }
            AbortCode::SUBINDEX_DOES_NOT_EXIST => "sub-index does not exist",
            AbortCode::VALUE_RANGE => "value range of parameter exceeded",
            AbortCode::VALUE_TOO_HIGH => "value of parameter written too high",
            AbortCode::VALUE_TOO_LOW => "value of parameter written too low",
            AbortCode::MAX_BELOW_MIN => "maximum value is less than minimum value",
            AbortCode::GENERAL => "general error",
            AbortCode::CANNOT_TRANSFER => {
                "data cannot be transferred or stored to the application"
            }
            AbortCode::LOCAL_CONTROL => {
                "data cannot be transferred or stored to the application because of local control"
            }
            AbortCode::DEVICE_STATE => {
                "data cannot be transferred or stored to the application because of the present device state"
            }
            AbortCode::NO_OBJECT_DICTIONARY => {
                "object dictionary dynamic generation fails or no object dictionary is present"
            }
            AbortCode::CONFIG_DATA_EMPTY => "EDS, DCF or concise DCF data set empty",
            _ => return None,
        })
    }
}

impl fmt::Display for AbortCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.text() {
            Some(t) => write!(f, "{t} ({:#010x})", self.0),
            None => write!(f, "SDO abort code {:#010x}", self.0),
        }
    }
}

#[cfg(test)]
#[path = "sdo_tests.rs"]
mod tests;
