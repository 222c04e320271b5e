//! The byte level under the UADP codec: a bounds-checked little-endian
//! [`Cursor`] for reading, an [`Out`] sink for writing (a growing `Vec` for
//! the message model, a fixed caller slice for the real-time writer), and
//! the errors both directions report.
//!
//! Every error is small `Copy` data with `&'static str` texts, so that a
//! rejected message costs no allocation on the real-time receive path
//! (design rule 2). A read past the end is never a panic: it is a
//! [`DecodeError::Malformed`] naming the byte offset and what was being read
//! there.
//!
//! The design rules cited here are in `docs/design.md`.

use thiserror::Error;

use super::types::BuiltinType;

/// Why a message could not be decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The bytes break the UADP layout: `what` went wrong at byte `offset`
    /// of the message.
    #[error("malformed UADP message at byte {offset}: {what}")]
    Malformed {
        /// Offset of the offending field from the start of the message.
        offset: usize,
        /// What was wrong there.
        what: &'static str,
    },
    /// A well-formed message using a part of UADP jitterlab does not speak.
    #[error("unsupported UADP message: {0}")]
    Unsupported(Unsupported),
}

/// The parts of UADP jitterlab recognises but does not speak.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum Unsupported {
    /// A UADP version other than 1.
    #[error("UADP version {0} (only version 1 is spoken)")]
    Version(u8),
    /// Message security (signed or encrypted: ExtendedFlags1 bit 4).
    #[error("the security flag is set (signed or encrypted messages are not spoken)")]
    Security,
    /// A chunk of a message split over several (ExtendedFlags2 bit 0).
    #[error("a chunk message (split messages are not spoken)")]
    Chunk,
    /// A discovery request or response (ExtendedFlags2 message type ≠ 0).
    #[error("a discovery message (type {0}); only DataSetMessage payloads are spoken")]
    Discovery(u8),
    /// Promoted fields in the extended NetworkMessage header.
    #[error("promoted fields (ExtendedFlags2 bit 1) are not spoken")]
    PromotedFields,
    /// A Variant holding an array or matrix.
    #[error("a Variant array at byte {0}; only scalar fields are spoken")]
    VariantArray(usize),
    /// A Variant of a built-in type other than the scalar types a PLC
    /// exchanges (String, Guid, NodeId, …).
    #[error("a Variant of built-in type {0} at byte {1}; only Boolean to Double and DateTime are spoken")]
    VariantType(u8, usize),
}

impl DecodeError {
    /// A [`DecodeError::Malformed`] at `offset`.
    pub(crate) fn malformed(offset: usize, what: &'static str) -> DecodeError {
        DecodeError::Malformed { offset, what }
    }
}

/// Why a message could not be encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EncodeError {
    /// The output buffer is shorter than the message.
    #[error("the output buffer holds {have} bytes; the message needs {need}")]
    BufferTooSmall {
        /// Bytes the message needs.
        need: usize,
        /// Bytes the buffer has.
        have: usize,
    },
    /// The number of values differs from the configured fields.
    #[error("{got} values given for {expected} configured fields")]
    FieldCount {
        /// Fields configured.
        expected: usize,
        /// Values given.
        got: usize,
    },
    /// A value's type differs from its configured field's.
    #[error("field {index} is configured as {expected}, but the value is {got}")]
    FieldType {
        /// Index of the field.
        index: usize,
        /// The configured type.
        expected: BuiltinType,
        /// The value's type.
        got: BuiltinType,
    },
    /// The message model cannot be put on the wire; the text says why.
    #[error("the message cannot be encoded: {0}")]
    Invalid(&'static str),
}

/// A read position in a message: every read is checked against the end.
#[derive(Debug, Clone)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    /// A cursor at the start of `buf`.
    pub(crate) fn new(buf: &'a [u8]) -> Cursor<'a> {
        Cursor { buf, pos: 0 }
    }

    /// A cursor over `buf[..end]` at `pos` (offsets stay those of `buf`).
    pub(crate) fn window(buf: &'a [u8], pos: usize, end: usize) -> Cursor<'a> {
        Cursor {
            buf: &buf[..end],
            pos,
        }
    }

    /// Offset of the next byte to read.
    pub(crate) fn pos(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes; `what` names the field for the error.
    pub(crate) fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if n > self.remaining() {
            return Err(DecodeError::malformed(self.pos, what));
        }
        let bytes = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// Everything left.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let bytes = &self.buf[self.pos..];
        self.pos = self.buf.len();
        bytes
    }

    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut a = [0; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }

    /// One byte.
    pub(crate) fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }

    /// A little-endian `u16`.
    pub(crate) fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        self.array(what).map(u16::from_le_bytes)
    }

    /// A little-endian `u32`.
    pub(crate) fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        self.array(what).map(u32::from_le_bytes)
    }

    /// A little-endian `i32`.
    pub(crate) fn i32(&mut self, what: &'static str) -> Result<i32, DecodeError> {
        self.array(what).map(i32::from_le_bytes)
    }

    /// A little-endian `u64`.
    pub(crate) fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A little-endian `i64` (a `DateTime`).
    pub(crate) fn i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        self.array(what).map(i64::from_le_bytes)
    }

    /// Sixteen bytes (a Guid, kept as its wire bytes).
    pub(crate) fn guid(&mut self, what: &'static str) -> Result<[u8; 16], DecodeError> {
        self.array(what)
    }
}

/// Where encoded bytes go.
pub(crate) trait Out {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]) -> Result<(), EncodeError>;

    /// Bytes written so far.
    fn written(&self) -> usize;

    /// One byte.
    fn u8(&mut self, v: u8) -> Result<(), EncodeError> {
        self.put(&[v])
    }

    /// A little-endian `u16`.
    fn u16(&mut self, v: u16) -> Result<(), EncodeError> {
        self.put(&v.to_le_bytes())
    }

    /// A little-endian `u32`.
    fn u32(&mut self, v: u32) -> Result<(), EncodeError> {
        self.put(&v.to_le_bytes())
    }

    /// A little-endian `u64`.
    fn u64(&mut self, v: u64) -> Result<(), EncodeError> {
        self.put(&v.to_le_bytes())
    }

    /// A little-endian `i64`.
    fn i64(&mut self, v: i64) -> Result<(), EncodeError> {
        self.put(&v.to_le_bytes())
    }
}

impl Out for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        self.extend_from_slice(bytes);
        Ok(())
    }

    fn written(&self) -> usize {
        self.len()
    }
}

/// A fixed caller buffer, filled from the start; never grows.
pub(crate) struct SliceOut<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl<'a> SliceOut<'a> {
    /// Writes into `buf` from its first byte.
    pub(crate) fn new(buf: &'a mut [u8]) -> SliceOut<'a> {
        SliceOut { buf, pos: 0 }
    }
}

impl Out for SliceOut<'_> {
    fn put(&mut self, bytes: &[u8]) -> Result<(), EncodeError> {
        let end = self.pos + bytes.len();
        let Some(dst) = self.buf.get_mut(self.pos..end) else {
            return Err(EncodeError::BufferTooSmall {
                need: end,
                have: self.buf.len(),
            });
        };
        dst.copy_from_slice(bytes);
        self.pos = end;
        Ok(())
    }

    fn written(&self) -> usize {
        self.pos
    }
}
