//! Writing UADP: the NetworkMessage header, the DataSetMessage header and
//! the fields, onto any [`Out`] — a `Vec` for [`NetworkMessage::encode`], a
//! fixed caller slice for the real-time [`Writer`](super::Writer) — so that
//! both write the same bytes from the same code.
//!
//! A flag byte is written when one of its bits is needed, or when the model
//! asks for it to be sent empty (as a decoded message that had it empty
//! does); that is what makes `encode(decode(b)) == b`.

use super::message::{
    DataSetMessage, DataSetMessageHeader, Field, GroupHeader, MessageKind, NetworkMessage, Payload,
};
use super::types::{DataValue, FieldEncoding, PublisherId, Value};
use super::wire::{EncodeError, Out};

/// The NetworkMessage header to write, borrowed from a model or a writer
/// configuration.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeaderOut<'a> {
    pub(crate) extended_flags1: bool,
    pub(crate) extended_flags2: bool,
    pub(crate) publisher_id: Option<&'a PublisherId>,
    pub(crate) class_id: Option<&'a [u8; 16]>,
    pub(crate) group: Option<GroupHeader>,
    pub(crate) writer_ids: Option<&'a [u16]>,
    pub(crate) timestamp: Option<i64>,
    pub(crate) picoseconds: Option<u16>,
}

/// Writes the NetworkMessage header up to the payload.
pub(crate) fn write_header(h: &HeaderOut<'_>, out: &mut impl Out) -> Result<(), EncodeError> {
    let pid_type = h.publisher_id.map_or(0, PublisherId::type_bits);
    let ef2 = h.extended_flags2;
    let ef1 = h.extended_flags1
        || ef2
        || pid_type != 0
        || h.class_id.is_some()
        || h.timestamp.is_some()
        || h.picoseconds.is_some();
    let b0 = 0x01
        | u8::from(h.publisher_id.is_some()) << 4
        | u8::from(h.group.is_some()) << 5
        | u8::from(h.writer_ids.is_some()) << 6
        | u8::from(ef1) << 7;
    out.u8(b0)?;
    if ef1 {
        out.u8(pid_type
            | u8::from(h.class_id.is_some()) << 3
            | u8::from(h.timestamp.is_some()) << 5
            | u8::from(h.picoseconds.is_some()) << 6
            | u8::from(ef2) << 7)?;
        if ef2 {
            out.u8(0)?;
        }
    }
    match h.publisher_id {
        None => {}
        Some(PublisherId::Byte(v)) => out.u8(*v)?,
        Some(PublisherId::UInt16(v)) => out.u16(*v)?,
        Some(PublisherId::UInt32(v)) => out.u32(*v)?,
        Some(PublisherId::UInt64(v)) => out.u64(*v)?,
        Some(PublisherId::String(s)) => {
            let len = i32::try_from(s.len()).map_err(|_| {
                EncodeError::Invalid("a String PublisherId longer than 2^31 - 1 bytes")
            })?;
            out.put(&len.to_le_bytes())?;
            out.put(s.as_bytes())?;
        }
    }
    if let Some(id) = h.class_id {
        out.put(id)?;
    }
    if let Some(g) = h.group {
        out.u8(g.flags())?;
        if let Some(v) = g.writer_group_id {
            out.u16(v)?;
        }
        if let Some(v) = g.group_version {
            out.u32(v)?;
        }
        if let Some(v) = g.network_message_number {
            out.u16(v)?;
        }
        if let Some(v) = g.sequence_number {
            out.u16(v)?;
        }
    }
    if let Some(ids) = h.writer_ids {
        if ids.is_empty() {
            return Err(EncodeError::Invalid(
                "a PayloadHeader needs at least one DataSetWriterId",
            ));
        }
        let count = u8::try_from(ids.len()).map_err(|_| {
            EncodeError::Invalid("a PayloadHeader lists at most 255 DataSetMessages")
        })?;
        out.u8(count)?;
        for &id in ids {
            out.u16(id)?;
        }
    }
    if let Some(ts) = h.timestamp {
        out.i64(ts)?;
    }
    if let Some(ps) = h.picoseconds {
        out.u16(ps)?;
    }
    Ok(())
}

/// Writes a DataSetMessage header of message type `kind`.
pub(crate) fn write_dsm_header(
    h: &DataSetMessageHeader,
    kind: MessageKind,
    out: &mut impl Out,
) -> Result<(), EncodeError> {
    let flags2 = h.flags2
        || kind != MessageKind::KeyFrame
        || h.timestamp.is_some()
        || h.picoseconds.is_some();
    out.u8(u8::from(h.valid)
        | h.encoding.bits() << 1
        | u8::from(h.sequence_number.is_some()) << 3
        | u8::from(h.status.is_some()) << 4
        | u8::from(h.config_major.is_some()) << 5
        | u8::from(h.config_minor.is_some()) << 6
        | u8::from(flags2) << 7)?;
    if flags2 {
        out.u8(kind.bits()
            | u8::from(h.timestamp.is_some()) << 4
            | u8::from(h.picoseconds.is_some()) << 5)?;
    }
    if let Some(v) = h.sequence_number {
        out.u16(v)?;
    }
    if let Some(v) = h.timestamp {
        out.i64(v)?;
    }
    if let Some(v) = h.picoseconds {
        out.u16(v)?;
    }
    if let Some(v) = h.status {
        out.u16(v)?;
    }
    if let Some(v) = h.config_major {
        out.u32(v)?;
    }
    if let Some(v) = h.config_minor {
        out.u32(v)?;
    }
    Ok(())
}

/// Writes a value with no type byte (RawData).
pub(crate) fn write_raw(v: Value, out: &mut impl Out) -> Result<(), EncodeError> {
    let mut buf = [0u8; 8];
    let n = v.to_le(&mut buf);
    out.put(&buf[..n])
}

/// Writes a scalar Variant (`None`: the null Variant).
pub(crate) fn write_variant(v: Option<Value>, out: &mut impl Out) -> Result<(), EncodeError> {
    match v {
        None => out.u8(0),
        Some(v) => {
            out.u8(v.ty().id())?;
            write_raw(v, out)
        }
    }
}

/// Writes a DataValue: the mask byte, then what it announces.
pub(crate) fn write_datavalue(dv: &DataValue, out: &mut impl Out) -> Result<(), EncodeError> {
    out.u8(u8::from(dv.value.is_some())
        | u8::from(dv.status.is_some()) << 1
        | u8::from(dv.source_timestamp.is_some()) << 2
        | u8::from(dv.server_timestamp.is_some()) << 3
        | u8::from(dv.source_picoseconds.is_some()) << 4
        | u8::from(dv.server_picoseconds.is_some()) << 5)?;
    if dv.value.is_some() {
        write_variant(dv.value, out)?;
    }
    if let Some(v) = dv.status {
        out.u32(v)?;
    }
    if let Some(v) = dv.source_timestamp {
        out.i64(v)?;
    }
    if let Some(v) = dv.source_picoseconds {
        out.u16(v)?;
    }
    if let Some(v) = dv.server_timestamp {
        out.i64(v)?;
    }
    if let Some(v) = dv.server_picoseconds {
        out.u16(v)?;
    }
    Ok(())
}

/// Writes one field in `encoding`, which must be the field's own.
fn write_field(f: &Field, encoding: FieldEncoding, out: &mut impl Out) -> Result<(), EncodeError> {
    match (f, encoding) {
        (Field::Variant(v), FieldEncoding::Variant) => write_variant(*v, out),
        (Field::DataValue(dv), FieldEncoding::DataValue) => write_datavalue(dv, out),
        (Field::Raw(v), FieldEncoding::RawData) => write_raw(*v, out),
        _ => Err(EncodeError::Invalid(
            "a field's encoding differs from its DataSetMessage's field encoding",
        )),
    }
}

/// A field count as the UInt16 of the wire.
fn field_count(n: usize) -> Result<u16, EncodeError> {
    u16::try_from(n)
        .map_err(|_| EncodeError::Invalid("a DataSetMessage carries at most 65535 fields"))
}

fn write_dsm(dsm: &DataSetMessage, out: &mut impl Out) -> Result<(), EncodeError> {
    let enc = dsm.header.encoding;
    write_dsm_header(&dsm.header, dsm.payload.kind(), out)?;
    match &dsm.payload {
        Payload::KeyFrame(fields) => {
            if enc != FieldEncoding::RawData {
                out.u16(field_count(fields.len())?)?;
            }
            for f in fields {
                write_field(f, enc, out)?;
            }
        }
        Payload::Event(fields) => {
            out.u16(field_count(fields.len())?)?;
            for f in fields {
                write_field(f, enc, out)?;
            }
        }
        Payload::DeltaFrame(fields) => {
            out.u16(field_count(fields.len())?)?;
            for f in fields {
                out.u16(f.index)?;
                write_field(&f.field, enc, out)?;
            }
        }
        Payload::KeepAlive => {}
        Payload::Raw { bytes, .. } => {
            if enc != FieldEncoding::RawData {
                return Err(EncodeError::Invalid(
                    "undecoded field bytes need the RawData field encoding",
                ));
            }
            out.put(bytes)?;
        }
    }
    Ok(())
}

impl NetworkMessage {
    /// Appends the message's bytes to `out`. On error `out` is left as it
    /// was. Fails when the model cannot be put on the wire: a PayloadHeader
    /// whose DataSetWriterIds differ in number from the DataSetMessages (or
    /// none and not exactly one DataSetMessage), more than 255
    /// DataSetMessages or 65535 fields, a DataSetMessage over 65535 bytes in
    /// a message of several, a field in another encoding than its
    /// DataSetMessage's.
    pub fn encode(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let start = out.len();
        let result = self.encode_inner(out);
        if result.is_err() {
            out.truncate(start);
        }
        result
    }

    fn encode_inner(&self, out: &mut Vec<u8>) -> Result<(), EncodeError> {
        let count = self.messages.len();
        match &self.dataset_writer_ids {
            Some(ids) if ids.len() != count => {
                return Err(EncodeError::Invalid(
                    "the PayloadHeader's DataSetWriterIds and the DataSetMessages differ in number",
                ))
            }
            None if count != 1 => {
                return Err(EncodeError::Invalid(
                    "without a PayloadHeader a message carries exactly one DataSetMessage",
                ))
            }
            _ => {}
        }
        write_header(
            &HeaderOut {
                extended_flags1: self.extended_flags1,
                extended_flags2: self.extended_flags2,
                publisher_id: self.publisher_id.as_ref(),
                class_id: self.dataset_class_id.as_ref(),
                group: self.group_header,
                writer_ids: self.dataset_writer_ids.as_deref(),
                timestamp: self.timestamp,
                picoseconds: self.picoseconds,
            },
            out,
        )?;
        if self.dataset_writer_ids.is_some() && count > 1 {
            let sizes_at = out.len();
            out.resize(sizes_at + 2 * count, 0);
            for (i, dsm) in self.messages.iter().enumerate() {
                let begin = out.len();
                write_dsm(dsm, out)?;
                let size = u16::try_from(out.len() - begin).map_err(|_| {
                    EncodeError::Invalid(
                        "a DataSetMessage longer than 65535 bytes in a message of several",
                    )
                })?;
                out[sizes_at + 2 * i..sizes_at + 2 * i + 2].copy_from_slice(&size.to_le_bytes());
            }
        } else {
            for dsm in &self.messages {
                write_dsm(dsm, out)?;
            }
        }
        Ok(())
    }

    /// The message's bytes in a new vector (see [`NetworkMessage::encode`]).
    pub fn to_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Vec::new();
        self.encode(&mut out)?;
        Ok(out)
    }
}
