//! The full model of a UADP NetworkMessage, as [`decode`](super::decode)
//! reads it and [`NetworkMessage::encode`] writes it back.
//!
//! The model keeps everything that decides the bytes, so that re-encoding a
//! decoded message gives the same bytes: an optional header part is an
//! `Option`, and the three flag bytes that may be sent with nothing in them
//! (ExtendedFlags1, ExtendedFlags2, DataSetFlags2) have a `bool` saying
//! they are sent even when empty. Two things are normalised, because OPC UA
//! gives them one meaning: a Boolean byte other than 0 is `true` (written
//! back as 1), and a DataValue whose value bit is set over a null Variant is
//! a DataValue without a value.
//!
//! This model allocates (strings, vectors); it is for tests, tools and
//! diagnostics. The real-time paths are [`Writer`](super::Writer) and
//! [`Reader`](super::Reader), which work on caller buffers.

use super::types::{DataValue, FieldEncoding, PublisherId, Value};

/// One UADP NetworkMessage with a DataSetMessage payload.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct NetworkMessage {
    /// The PublisherId (UADPFlags bit 4; its type in ExtendedFlags1).
    pub publisher_id: Option<PublisherId>,
    /// The DataSetClassId, as its 16 wire bytes (ExtendedFlags1 bit 3).
    pub dataset_class_id: Option<[u8; 16]>,
    /// The GroupHeader (UADPFlags bit 5).
    pub group_header: Option<GroupHeader>,
    /// The PayloadHeader's DataSetWriterIds, one per DataSetMessage
    /// (UADPFlags bit 6). Without it the message carries one DataSetMessage.
    pub dataset_writer_ids: Option<Vec<u16>>,
    /// The NetworkMessage Timestamp, a `DateTime` (ExtendedFlags1 bit 5).
    pub timestamp: Option<i64>,
    /// The NetworkMessage PicoSeconds (ExtendedFlags1 bit 6).
    pub picoseconds: Option<u16>,
    /// ExtendedFlags1 is sent even when all its bits are 0 (decoding sets
    /// this only when nothing else needed it: a Byte or no PublisherId, no
    /// DataSetClassId, Timestamp, PicoSeconds or ExtendedFlags2).
    pub extended_flags1: bool,
    /// ExtendedFlags2 is sent even when all its bits are 0 (none of its
    /// bits is spoken, so a decoded message has it only when it was sent
    /// empty).
    pub extended_flags2: bool,
    /// The DataSetMessages, in wire order.
    pub messages: Vec<DataSetMessage>,
}

/// The GroupHeader: each part present when its GroupFlags bit is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupHeader {
    /// WriterGroupId (GroupFlags bit 0).
    pub writer_group_id: Option<u16>,
    /// GroupVersion, a `VersionTime` (bit 1).
    pub group_version: Option<u32>,
    /// NetworkMessageNumber (bit 2).
    pub network_message_number: Option<u16>,
    /// The NetworkMessage SequenceNumber (bit 3).
    pub sequence_number: Option<u16>,
}

impl GroupHeader {
    /// The GroupFlags byte of this header.
    pub fn flags(&self) -> u8 {
        u8::from(self.writer_group_id.is_some())
            | u8::from(self.group_version.is_some()) << 1
            | u8::from(self.network_message_number.is_some()) << 2
            | u8::from(self.sequence_number.is_some()) << 3
    }
}

/// One DataSetMessage: its header and its payload.
#[derive(Debug, Clone, PartialEq)]
pub struct DataSetMessage {
    /// Flags and header fields.
    pub header: DataSetMessageHeader,
    /// The fields, by message type.
    pub payload: Payload,
}

/// The DataSetMessage header; the message type is the payload's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataSetMessageHeader {
    /// DataSetFlags1 bit 0: the message is valid.
    pub valid: bool,
    /// DataSetFlags1 bits 1–2.
    pub encoding: FieldEncoding,
    /// DataSetFlags2 is sent even when it says no more than "key frame"
    /// (decoding sets this only for such a DataSetFlags2: a key frame with
    /// no Timestamp and no PicoSeconds).
    pub flags2: bool,
    /// DataSetMessageSequenceNumber (DataSetFlags1 bit 3).
    pub sequence_number: Option<u16>,
    /// Timestamp, a `DateTime` (DataSetFlags2 bit 4).
    pub timestamp: Option<i64>,
    /// PicoSeconds (DataSetFlags2 bit 5).
    pub picoseconds: Option<u16>,
    /// Status: the high 16 bits of a StatusCode (DataSetFlags1 bit 4).
    pub status: Option<u16>,
    /// ConfigurationVersion MajorVersion (DataSetFlags1 bit 5).
    pub config_major: Option<u32>,
    /// ConfigurationVersion MinorVersion (DataSetFlags1 bit 6).
    pub config_minor: Option<u32>,
}

impl DataSetMessageHeader {
    /// A valid header of `encoding` with no optional field.
    pub fn new(encoding: FieldEncoding) -> DataSetMessageHeader {
        DataSetMessageHeader {
            valid: true,
            encoding,
            flags2: false,
            sequence_number: None,
            timestamp: None,
            picoseconds: None,
            status: None,
            config_major: None,
            config_minor: None,
        }
    }
}

/// The DataSetMessage type (DataSetFlags2 bits 0–3; a key frame when
/// DataSetFlags2 is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageKind {
    /// Every field of the DataSet.
    KeyFrame,
    /// Only the fields that changed, each with its index.
    DeltaFrame,
    /// The fields of an event.
    Event,
    /// No fields: the writer is alive.
    KeepAlive,
}

impl MessageKind {
    /// The four-bit code of DataSetFlags2.
    pub fn bits(self) -> u8 {
        match self {
            MessageKind::KeyFrame => 0,
            MessageKind::DeltaFrame => 1,
            MessageKind::Event => 2,
            MessageKind::KeepAlive => 3,
        }
    }

    /// The kind of four-bit code `bits` (4–15 are reserved: `None`).
    pub fn from_bits(bits: u8) -> Option<MessageKind> {
        match bits {
            0 => Some(MessageKind::KeyFrame),
            1 => Some(MessageKind::DeltaFrame),
            2 => Some(MessageKind::Event),
            3 => Some(MessageKind::KeepAlive),
            _ => None,
        }
    }

    /// `key frame`, `delta frame`, `event` or `keep-alive`.
    pub fn name(self) -> &'static str {
        match self {
            MessageKind::KeyFrame => "key frame",
            MessageKind::DeltaFrame => "delta frame",
            MessageKind::Event => "event",
            MessageKind::KeepAlive => "keep-alive",
        }
    }
}

/// The fields of a DataSetMessage.
#[derive(Debug, Clone, PartialEq)]
pub enum Payload {
    /// Every field, in DataSet order (RawData: no field count on the wire).
    KeyFrame(Vec<Field>),
    /// The changed fields with their indices.
    DeltaFrame(Vec<DeltaField>),
    /// The fields of an event.
    Event(Vec<Field>),
    /// No payload.
    KeepAlive,
    /// RawData fields decoded without their types: the bytes after the
    /// DataSetMessage header, as they came.
    Raw {
        /// The message type.
        kind: MessageKind,
        /// The undecoded bytes.
        bytes: Vec<u8>,
    },
}

impl Payload {
    /// The message type of this payload.
    pub fn kind(&self) -> MessageKind {
        match self {
            Payload::KeyFrame(_) => MessageKind::KeyFrame,
            Payload::DeltaFrame(_) => MessageKind::DeltaFrame,
            Payload::Event(_) => MessageKind::Event,
            Payload::KeepAlive => MessageKind::KeepAlive,
            Payload::Raw { kind, .. } => *kind,
        }
    }
}

/// One field of a delta frame.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DeltaField {
    /// Index of the field in the DataSet.
    pub index: u16,
    /// Its new value.
    pub field: Field,
}

/// One field, in its DataSetMessage's encoding.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Field {
    /// Variant encoding (`None`: a null Variant).
    Variant(Option<Value>),
    /// DataValue encoding.
    DataValue(DataValue),
    /// RawData encoding.
    Raw(Value),
}

impl Field {
    /// The field's value, whatever its encoding (`None` for a null Variant
    /// or a DataValue without a value).
    pub fn value(&self) -> Option<Value> {
        match self {
            Field::Variant(v) => *v,
            Field::DataValue(dv) => dv.value,
            Field::Raw(v) => Some(*v),
        }
    }

    /// The encoding this field is written in.
    pub fn encoding(&self) -> FieldEncoding {
        match self {
            Field::Variant(_) => FieldEncoding::Variant,
            Field::DataValue(_) => FieldEncoding::DataValue,
            Field::Raw(_) => FieldEncoding::RawData,
        }
    }
}
