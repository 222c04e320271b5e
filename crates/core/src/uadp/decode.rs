//! Reading UADP: the borrowed, allocation-free parsers of the NetworkMessage
//! header, the sizes array, the DataSetMessage header and one field, which
//! both the [`Reader`](super::Reader) and the owned [`decode`] use, and
//! [`decode`] itself, which builds a [`NetworkMessage`].
//!
//! Every reserved value (a PublisherId type 5–7, field encoding 3, a
//! DataSetMessage type above 3, a built-in type id above 25, a reserved
//! flag bit) and every length that runs past the end is
//! [`DecodeError::Malformed`]; what is well formed but not spoken here is
//! [`DecodeError::Unsupported`] (see [`Unsupported`]).

use super::message::{
    DataSetMessage, DataSetMessageHeader, DeltaField, Field, GroupHeader, MessageKind,
    NetworkMessage, Payload,
};
use super::types::{BuiltinType, DataValue, FieldEncoding, PublisherId, Value};
use super::wire::{Cursor, DecodeError, Unsupported};

/// A PublisherId as it lies in the message (a String borrowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PublisherIdRef<'a> {
    Byte(u8),
    UInt16(u16),
    UInt32(u32),
    UInt64(u64),
    String(&'a str),
}

impl PublisherIdRef<'_> {
    /// The ExtendedFlags1 type bits.
    pub(crate) fn type_bits(&self) -> u8 {
        match self {
            PublisherIdRef::Byte(_) => 0,
            PublisherIdRef::UInt16(_) => 1,
            PublisherIdRef::UInt32(_) => 2,
            PublisherIdRef::UInt64(_) => 3,
            PublisherIdRef::String(_) => 4,
        }
    }

    /// Type and value both equal `id`'s.
    pub(crate) fn is(&self, id: &PublisherId) -> bool {
        match (self, id) {
            (PublisherIdRef::Byte(a), PublisherId::Byte(b)) => a == b,
            (PublisherIdRef::UInt16(a), PublisherId::UInt16(b)) => a == b,
            (PublisherIdRef::UInt32(a), PublisherId::UInt32(b)) => a == b,
            (PublisherIdRef::UInt64(a), PublisherId::UInt64(b)) => a == b,
            (PublisherIdRef::String(a), PublisherId::String(b)) => *a == b,
            _ => false,
        }
    }

    fn to_owned(self) -> PublisherId {
        match self {
            PublisherIdRef::Byte(v) => PublisherId::Byte(v),
            PublisherIdRef::UInt16(v) => PublisherId::UInt16(v),
            PublisherIdRef::UInt32(v) => PublisherId::UInt32(v),
            PublisherIdRef::UInt64(v) => PublisherId::UInt64(v),
            PublisherIdRef::String(v) => PublisherId::String(v.to_owned()),
        }
    }
}

/// The NetworkMessage header up to the payload, borrowed from the message.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Header<'a> {
    pub(crate) extended_flags1: bool,
    pub(crate) extended_flags2: bool,
    pub(crate) publisher_id: Option<PublisherIdRef<'a>>,
    pub(crate) class_id: Option<[u8; 16]>,
    pub(crate) group: Option<GroupHeader>,
    /// The PayloadHeader's DataSetWriterIds, two little-endian bytes each.
    pub(crate) writer_ids: Option<&'a [u8]>,
    pub(crate) timestamp: Option<i64>,
    pub(crate) picoseconds: Option<u16>,
}

impl Header<'_> {
    /// DataSetMessages in the payload (one without a PayloadHeader).
    pub(crate) fn count(&self) -> usize {
        self.writer_ids.map_or(1, |ids| ids.len() / 2)
    }

    /// The `i`-th DataSetWriterId of the PayloadHeader.
    pub(crate) fn writer_id(&self, i: usize) -> Option<u16> {
        let ids = self.writer_ids?;
        let b = ids.get(2 * i..2 * i + 2)?;
        Some(u16::from_le_bytes([b[0], b[1]]))
    }
}

/// Reads the NetworkMessage header: flags, PublisherId, DataSetClassId,
/// GroupHeader, PayloadHeader, Timestamp and PicoSeconds.
pub(crate) fn parse_header<'a>(c: &mut Cursor<'a>) -> Result<Header<'a>, DecodeError> {
    let b0 = c.u8("the message is empty: no UADP version and flags byte")?;
    let version = b0 & 0x0f;
    if version != 1 {
        return Err(DecodeError::Unsupported(Unsupported::Version(version)));
    }
    let has_publisher = b0 & 0x10 != 0;
    let has_group = b0 & 0x20 != 0;
    let has_payload_header = b0 & 0x40 != 0;
    let mut h = Header {
        extended_flags1: b0 & 0x80 != 0,
        extended_flags2: false,
        publisher_id: None,
        class_id: None,
        group: None,
        writer_ids: None,
        timestamp: None,
        picoseconds: None,
    };
    let (mut pid_type, mut has_class, mut has_ts, mut has_ps) = (0, false, false, false);
    if h.extended_flags1 {
        let at1 = c.pos();
        let e1 = c.u8("the message ends before ExtendedFlags1")?;
        if e1 & 0x10 != 0 {
            return Err(DecodeError::Unsupported(Unsupported::Security));
        }
        pid_type = e1 & 0x07;
        if pid_type > 4 {
            return Err(DecodeError::malformed(
                at1,
                "ExtendedFlags1 names a reserved PublisherId type (5-7)",
            ));
        }
        if pid_type != 0 && !has_publisher {
            return Err(DecodeError::malformed(
                at1,
                "ExtendedFlags1 names a PublisherId type but the UADP flags carry no PublisherId",
            ));
        }
        has_class = e1 & 0x08 != 0;
        has_ts = e1 & 0x20 != 0;
        has_ps = e1 & 0x40 != 0;
        h.extended_flags2 = e1 & 0x80 != 0;
        if h.extended_flags2 {
            let at2 = c.pos();
            let e2 = c.u8("the message ends before ExtendedFlags2")?;
            if e2 & 0xe0 != 0 {
                return Err(DecodeError::malformed(
                    at2,
                    "reserved bits 5-7 of ExtendedFlags2 are set",
                ));
            }
            let kind = (e2 >> 2) & 0x07;
            if kind > 2 {
                return Err(DecodeError::malformed(
                    at2,
                    "ExtendedFlags2 names a reserved NetworkMessage type (3-7)",
                ));
            }
            if kind != 0 {
                return Err(DecodeError::Unsupported(Unsupported::Discovery(kind)));
            }
            if e2 & 0x01 != 0 {
                return Err(DecodeError::Unsupported(Unsupported::Chunk));
            }
            if e2 & 0x02 != 0 {
                return Err(DecodeError::Unsupported(Unsupported::PromotedFields));
            }
        }
    }
    if has_publisher {
        h.publisher_id = Some(parse_publisher_id(c, pid_type)?);
    }
    if has_class {
        h.class_id = Some(c.guid("the message ends inside the DataSetClassId")?);
    }
    if has_group {
        let at = c.pos();
        let gf = c.u8("the message ends before the GroupFlags")?;
        if gf & 0xf0 != 0 {
            return Err(DecodeError::malformed(
                at,
                "reserved bits 4-7 of GroupFlags are set",
            ));
        }
        let mut g = GroupHeader::default();
        if gf & 0x01 != 0 {
            g.writer_group_id = Some(c.u16("the message ends inside the WriterGroupId")?);
        }
        if gf & 0x02 != 0 {
            g.group_version = Some(c.u32("the message ends inside the GroupVersion")?);
        }
        if gf & 0x04 != 0 {
            g.network_message_number =
                Some(c.u16("the message ends inside the NetworkMessageNumber")?);
        }
        if gf & 0x08 != 0 {
            g.sequence_number =
                Some(c.u16("the message ends inside the NetworkMessage SequenceNumber")?);
        }
        h.group = Some(g);
    }
    if has_payload_header {
        let at = c.pos();
        let count = c.u8("the message ends before the PayloadHeader's count")?;
        if count == 0 {
            return Err(DecodeError::malformed(
                at,
                "the PayloadHeader lists no DataSetMessage (count 0)",
            ));
        }
        h.writer_ids = Some(c.take(
            2 * usize::from(count),
            "the message ends inside the PayloadHeader's DataSetWriterIds",
        )?);
    }
    if has_ts {
        h.timestamp = Some(c.i64("the message ends inside the NetworkMessage Timestamp")?);
    }
    if has_ps {
        h.picoseconds = Some(c.u16("the message ends inside the NetworkMessage PicoSeconds")?);
    }
    Ok(h)
}

fn parse_publisher_id<'a>(
    c: &mut Cursor<'a>,
    pid_type: u8,
) -> Result<PublisherIdRef<'a>, DecodeError> {
    const WHAT: &str = "the message ends inside the PublisherId";
    Ok(match pid_type {
        0 => PublisherIdRef::Byte(c.u8(WHAT)?),
        1 => PublisherIdRef::UInt16(c.u16(WHAT)?),
        2 => PublisherIdRef::UInt32(c.u32(WHAT)?),
        3 => PublisherIdRef::UInt64(c.u64(WHAT)?),
        _ => {
            let at = c.pos();
            let len = c.i32("the message ends inside the PublisherId String's length")?;
            if len < 0 {
                return Err(DecodeError::malformed(
                    at,
                    "the PublisherId String is null or has a negative length",
                ));
            }
            let bytes = c.take(len as usize, "").map_err(|_| {
                DecodeError::malformed(
                    at,
                    "the PublisherId String's length runs past the end of the message",
                )
            })?;
            let text = std::str::from_utf8(bytes).map_err(|_| {
                DecodeError::malformed(at + 4, "the PublisherId String is not UTF-8")
            })?;
            PublisherIdRef::String(text)
        }
    })
}

/// Reads the sizes array (present with a PayloadHeader listing more than
/// one DataSetMessage) and checks that the sizes fit the message: returns
/// the raw array (two little-endian bytes per size) or `None`.
pub(crate) fn parse_sizes<'a>(
    c: &mut Cursor<'a>,
    h: &Header<'_>,
) -> Result<Option<&'a [u8]>, DecodeError> {
    let count = h.count();
    if h.writer_ids.is_none() || count < 2 {
        return Ok(None);
    }
    let at = c.pos();
    let sizes = c.take(
        2 * count,
        "the message ends inside the DataSetMessage sizes array",
    )?;
    let mut total = 0usize;
    for (i, s) in sizes.chunks_exact(2).enumerate() {
        let size = usize::from(u16::from_le_bytes([s[0], s[1]]));
        if size == 0 {
            return Err(DecodeError::malformed(
                at + 2 * i,
                "a DataSetMessage size is 0",
            ));
        }
        total += size;
        if total > c.remaining() {
            return Err(DecodeError::malformed(
                at + 2 * i,
                "the DataSetMessage sizes run past the end of the message",
            ));
        }
    }
    Ok(Some(sizes))
}

/// The `i`-th entry of a sizes array.
pub(crate) fn size_at(sizes: &[u8], i: usize) -> usize {
    usize::from(u16::from_le_bytes([sizes[2 * i], sizes[2 * i + 1]]))
}

/// Reads a DataSetMessage header: DataSetFlags1/2, SequenceNumber,
/// Timestamp, PicoSeconds, Status and ConfigurationVersion.
pub(crate) fn parse_dsm_header(
    c: &mut Cursor<'_>,
) -> Result<(DataSetMessageHeader, MessageKind), DecodeError> {
    let at = c.pos();
    let f1 = c.u8("the message ends before the DataSetFlags1")?;
    let encoding = FieldEncoding::from_bits((f1 >> 1) & 0x03).ok_or(DecodeError::malformed(
        at,
        "DataSetFlags1 names the reserved field encoding 3",
    ))?;
    let mut h = DataSetMessageHeader::new(encoding);
    h.valid = f1 & 0x01 != 0;
    h.flags2 = f1 & 0x80 != 0;
    let mut kind = MessageKind::KeyFrame;
    let (mut has_ts, mut has_ps) = (false, false);
    if h.flags2 {
        let at = c.pos();
        let f2 = c.u8("the message ends before the DataSetFlags2")?;
        if f2 & 0xc0 != 0 {
            return Err(DecodeError::malformed(
                at,
                "reserved bits 6-7 of DataSetFlags2 are set",
            ));
        }
        kind = MessageKind::from_bits(f2 & 0x0f).ok_or(DecodeError::malformed(
            at,
            "DataSetFlags2 names a reserved DataSetMessage type (4-15)",
        ))?;
        has_ts = f2 & 0x10 != 0;
        has_ps = f2 & 0x20 != 0;
        // Kept only where nothing else would make the encoder send it.
        h.flags2 = kind == MessageKind::KeyFrame && !has_ts && !has_ps;
    }
    if f1 & 0x08 != 0 {
        h.sequence_number =
            Some(c.u16("the message ends inside the DataSetMessage SequenceNumber")?);
    }
    if has_ts {
        h.timestamp = Some(c.i64("the message ends inside the DataSetMessage Timestamp")?);
    }
    if has_ps {
        h.picoseconds = Some(c.u16("the message ends inside the DataSetMessage PicoSeconds")?);
    }
    if f1 & 0x10 != 0 {
        h.status = Some(c.u16("the message ends inside the DataSetMessage Status")?);
    }
    if f1 & 0x20 != 0 {
        h.config_major =
            Some(c.u32("the message ends inside the ConfigurationVersion MajorVersion")?);
    }
    if f1 & 0x40 != 0 {
        h.config_minor =
            Some(c.u32("the message ends inside the ConfigurationVersion MinorVersion")?);
    }
    Ok((h, kind))
}

/// Reads a value of type `ty` with no type byte (RawData).
pub(crate) fn read_raw(c: &mut Cursor<'_>, ty: BuiltinType) -> Result<Value, DecodeError> {
    let bytes = c.take(ty.size(), "the message ends inside a field value")?;
    Ok(Value::from_le(ty, bytes))
}

/// The largest built-in type id OPC UA defines (DiagnosticInfo).
const LAST_BUILTIN_ID: u8 = 25;

/// Reads a scalar Variant (`None`: the null Variant).
pub(crate) fn read_variant(c: &mut Cursor<'_>) -> Result<Option<Value>, DecodeError> {
    let at = c.pos();
    let b = c.u8("the message ends before a Variant's encoding byte")?;
    if b & 0xc0 != 0 {
        return Err(DecodeError::Unsupported(Unsupported::VariantArray(at)));
    }
    let id = b & 0x3f;
    if id == 0 {
        return Ok(None);
    }
    if id > LAST_BUILTIN_ID {
        return Err(DecodeError::malformed(
            at,
            "a Variant names a built-in type id above 25, which OPC UA does not define",
        ));
    }
    let ty = BuiltinType::from_id(id)
        .ok_or(DecodeError::Unsupported(Unsupported::VariantType(id, at)))?;
    read_raw(c, ty).map(Some)
}

/// Reads a DataValue (mask byte, then what the mask says).
pub(crate) fn read_datavalue(c: &mut Cursor<'_>) -> Result<DataValue, DecodeError> {
    let at = c.pos();
    let mask = c.u8("the message ends before a DataValue's mask byte")?;
    if mask & 0xc0 != 0 {
        return Err(DecodeError::malformed(
            at,
            "reserved bits 6-7 of a DataValue's mask are set",
        ));
    }
    let mut dv = DataValue::default();
    if mask & 0x01 != 0 {
        dv.value = read_variant(c)?;
    }
    if mask & 0x02 != 0 {
        dv.status = Some(c.u32("the message ends inside a DataValue's StatusCode")?);
    }
    if mask & 0x04 != 0 {
        dv.source_timestamp = Some(c.i64("the message ends inside a DataValue's SourceTimestamp")?);
    }
    if mask & 0x10 != 0 {
        dv.source_picoseconds =
            Some(c.u16("the message ends inside a DataValue's SourcePicoseconds")?);
    }
    if mask & 0x08 != 0 {
        dv.server_timestamp = Some(c.i64("the message ends inside a DataValue's ServerTimestamp")?);
    }
    if mask & 0x20 != 0 {
        dv.server_picoseconds =
            Some(c.u16("the message ends inside a DataValue's ServerPicoseconds")?);
    }
    Ok(dv)
}

/// Reads one Variant or DataValue field (not RawData: that needs a type).
pub(crate) fn read_field(
    c: &mut Cursor<'_>,
    encoding: FieldEncoding,
) -> Result<Field, DecodeError> {
    match encoding {
        FieldEncoding::DataValue => read_datavalue(c).map(Field::DataValue),
        _ => read_variant(c).map(Field::Variant),
    }
}

/// How [`decode_with`] reads a message.
#[derive(Debug, Clone, Copy, Default)]
pub struct DecodeOptions<'a> {
    /// The field types of RawData DataSetMessages, in order (the same list
    /// for every RawData DataSetMessage of the message). `None`: RawData
    /// fields are kept as bytes ([`Payload::Raw`]).
    pub raw_types: Option<&'a [BuiltinType]>,
    /// Bytes after the last DataSetMessage are ignored rather than refused
    /// (Ethernet padding after a message sent with EtherType framing).
    pub allow_trailing: bool,
}

/// Decodes a whole message; RawData fields stay bytes, and bytes after the
/// last DataSetMessage are refused.
pub fn decode(bytes: &[u8]) -> Result<NetworkMessage, DecodeError> {
    decode_with(bytes, &DecodeOptions::default())
}

/// Decodes a whole message, reading RawData fields by `types`.
pub fn decode_with_raw_types(
    bytes: &[u8],
    types: &[BuiltinType],
) -> Result<NetworkMessage, DecodeError> {
    decode_with(
        bytes,
        &DecodeOptions {
            raw_types: Some(types),
            allow_trailing: false,
        },
    )
}

/// Decodes a whole message as `options` say.
pub fn decode_with(
    bytes: &[u8],
    options: &DecodeOptions<'_>,
) -> Result<NetworkMessage, DecodeError> {
    let mut c = Cursor::new(bytes);
    let h = parse_header(&mut c)?;
    let sizes = parse_sizes(&mut c, &h)?;
    let count = h.count();
    let mut messages = Vec::with_capacity(count);
    match sizes {
        Some(sizes) => {
            for i in 0..count {
                let start = c.pos();
                let end = start + size_at(sizes, i);
                let mut dc = Cursor::window(bytes, start, end);
                messages.push(decode_dsm(&mut dc, options)?);
                if dc.remaining() != 0 {
                    return Err(DecodeError::malformed(
                        dc.pos(),
                        "a DataSetMessage ends before the size the sizes array gives it",
                    ));
                }
                c.take(end - start, "the message ends inside a DataSetMessage")?;
            }
        }
        None => messages.push(decode_dsm(&mut c, options)?),
    }
    if c.remaining() != 0 && !options.allow_trailing {
        return Err(DecodeError::malformed(
            c.pos(),
            "bytes follow the last DataSetMessage",
        ));
    }
    Ok(NetworkMessage {
        publisher_id: h.publisher_id.map(PublisherIdRef::to_owned),
        dataset_class_id: h.class_id,
        group_header: h.group,
        dataset_writer_ids: h.writer_ids.map(|ids| {
            ids.chunks_exact(2)
                .map(|b| u16::from_le_bytes([b[0], b[1]]))
                .collect()
        }),
        timestamp: h.timestamp,
        picoseconds: h.picoseconds,
        // Kept only where nothing else would make the encoder send it.
        extended_flags1: h.extended_flags1
            && !h.extended_flags2
            && h.publisher_id.is_none_or(|p| p.type_bits() == 0)
            && h.class_id.is_none()
            && h.timestamp.is_none()
            && h.picoseconds.is_none(),
        extended_flags2: h.extended_flags2,
        messages,
    })
}

/// Room for `count` fields, but never more than the bytes left could hold
/// (a forged count of 65535 must not allocate for 65535 fields).
fn fields_with_capacity<T>(count: usize, c: &Cursor<'_>) -> Vec<T> {
    Vec::with_capacity(count.min(c.remaining()))
}

fn decode_dsm(
    c: &mut Cursor<'_>,
    options: &DecodeOptions<'_>,
) -> Result<DataSetMessage, DecodeError> {
    let (header, kind) = parse_dsm_header(c)?;
    let raw = header.encoding == FieldEncoding::RawData;
    let payload = match (kind, options.raw_types) {
        (MessageKind::KeepAlive, _) => Payload::KeepAlive,
        (_, None) if raw => Payload::Raw {
            kind,
            bytes: c.rest().to_vec(),
        },
        (MessageKind::KeyFrame, Some(types)) if raw => {
            let mut fields = fields_with_capacity(types.len(), c);
            for &ty in types {
                fields.push(Field::Raw(read_raw(c, ty)?));
            }
            Payload::KeyFrame(fields)
        }
        (MessageKind::KeyFrame, _) => {
            let count = c.u16("the message ends inside the field count")?;
            let mut fields = fields_with_capacity(usize::from(count), c);
            for _ in 0..count {
                fields.push(read_field(c, header.encoding)?);
            }
            Payload::KeyFrame(fields)
        }
        (MessageKind::Event, types) => {
            let count = c.u16("the message ends inside the field count")?;
            let mut fields = fields_with_capacity(usize::from(count), c);
            for i in 0..usize::from(count) {
                fields.push(match types {
                    Some(types) if raw => {
                        let at = c.pos();
                        let ty = *types.get(i).ok_or(DecodeError::malformed(
                            at,
                            "an event has more fields than the configured field types",
                        ))?;
                        Field::Raw(read_raw(c, ty)?)
                    }
                    _ => read_field(c, header.encoding)?,
                });
            }
            Payload::Event(fields)
        }
        (MessageKind::DeltaFrame, types) => {
            let count = c.u16("the message ends inside the field count")?;
            let mut fields = fields_with_capacity(usize::from(count), c);
            for _ in 0..count {
                let at = c.pos();
                let index = c.u16("the message ends inside a delta frame's field index")?;
                let field = match types {
                    Some(types) if raw => {
                        let ty = *types.get(usize::from(index)).ok_or(DecodeError::malformed(
                            at,
                            "a delta frame's field index is beyond the configured field types",
                        ))?;
                        Field::Raw(read_raw(c, ty)?)
                    }
                    _ => read_field(c, header.encoding)?,
                };
                fields.push(DeltaField { index, field });
            }
            Payload::DeltaFrame(fields)
        }
    };
    Ok(DataSetMessage { header, payload })
}
