//! The configured, allocation-free subscriber side: a [`ReaderConfig`] says
//! what a subscriber expects, and [`Reader::accept`] checks a received
//! message against it the way a subscriber of the reference implementation
//! does, writing the fields into a caller slice. Nothing allocates — not
//! the parse, not a rejection (every [`Reject`] is small `Copy` data) — so
//! the real-time receive loop can call it for every datagram and count the
//! rejections by [`Reject::class`].
//!
//! # The acceptance rules (the captures' README, "What a subscriber of the
//! reference implementation accepts")
//!
//! 1. The message must parse: otherwise [`Reject::Malformed`], or
//!    [`Reject::Unsupported`] for security, chunks, discovery, promoted
//!    fields, Variant arrays and non-scalar types.
//! 2. A PublisherId, when the message carries one, must equal the reader's
//!    in **type and value** (UInt16 2234 is not UInt32 2234); the
//!    WriterGroupId must match when the GroupHeader carries it; the
//!    PayloadHeader must list the reader's DataSetWriterId when there is a
//!    PayloadHeader, and that DataSetMessage is the one read. Otherwise
//!    [`Reject::NotOurs`]. A reader field left `None` takes any value.
//! 3. Only key frames ([`Reject::NotKeyFrame`]) with the valid bit
//!    ([`Reject::Invalid`]). The configuration version and sequence numbers
//!    are not checked: they are handed back in [`Accepted`].
//! 4. Variant and DataValue: the field count must equal the configured
//!    field list and each field's type must be the configured one
//!    ([`Reject::FieldMismatch`], counted apart from malformed messages: a
//!    valid message of a publisher configured with another field list is
//!    not a broken one); a null Variant or a DataValue without a value
//!    matches no type. A count the message's bytes cannot hold is
//!    malformed.
//! 5. RawData: the fields are read in order by the configured types. The
//!    reference reads them at offsets fixed from the first message it
//!    accepted, with no length check; this reader reads every message from
//!    its own header, which gives the same values for the byte-stable
//!    layouts a [`Writer`](super::Writer) makes, and refuses a message too
//!    short for its fields as malformed instead of reading past it. Bytes
//!    after the fields (Ethernet padding) are ignored, as the reference
//!    ignores them.

use std::fmt;

use super::decode::{
    parse_dsm_header, parse_header, parse_sizes, read_datavalue, read_raw, read_variant, size_at,
};
use super::message::MessageKind;
use super::types::{publisher_id_type_name, BuiltinType, FieldEncoding, PublisherId, Value};
use super::wire::{Cursor, DecodeError, Unsupported};
use super::writer::{
    WriterConfig, TUTORIAL_DATASET_WRITER_ID, TUTORIAL_PUBLISHER_ID, TUTORIAL_WRITER_GROUP_ID,
};

/// What a [`Reader`] expects; `None` takes anything.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReaderConfig {
    /// The PublisherId, type and value.
    pub publisher_id: Option<PublisherId>,
    /// The WriterGroupId.
    pub writer_group_id: Option<u16>,
    /// The DataSetWriterId (`None`: the first DataSetMessage).
    pub dataset_writer_id: Option<u16>,
    /// The field types, in order (`None`: any count and types of Variant or
    /// DataValue fields; RawData messages are then refused).
    pub fields: Option<Vec<BuiltinType>>,
}

impl ReaderConfig {
    /// A subscriber of the reference tutorial publisher (one DateTime).
    pub fn tutorial() -> ReaderConfig {
        ReaderConfig {
            publisher_id: Some(TUTORIAL_PUBLISHER_ID),
            writer_group_id: Some(TUTORIAL_WRITER_GROUP_ID),
            dataset_writer_id: Some(TUTORIAL_DATASET_WRITER_ID),
            fields: Some(vec![BuiltinType::DateTime]),
        }
    }

    /// The reference's stock tutorial subscriber (`tutorial_pubsub_subscribe`
    /// of open62541 1.4): the tutorial identities and four fields,
    /// DateTime, Int32, Int64 and Boolean — so it refuses the tutorial
    /// publisher's one-field messages (its "Number of fields does not match
    /// the DataSetMetaData configuration").
    pub fn tutorial_subscriber() -> ReaderConfig {
        ReaderConfig {
            fields: Some(vec![
                BuiltinType::DateTime,
                BuiltinType::Int32,
                BuiltinType::Int64,
                BuiltinType::Boolean,
            ]),
            ..ReaderConfig::tutorial()
        }
    }

    /// A subscriber of the reference fixed-size publisher (ten UInt32).
    pub fn rt_level() -> ReaderConfig {
        ReaderConfig {
            fields: Some(vec![BuiltinType::UInt32; 10]),
            ..ReaderConfig::tutorial()
        }
    }

    /// A subscriber configured for `writer`'s messages, as the reference's
    /// would be: its PublisherId, WriterGroupId, DataSetWriterId and fields.
    pub fn matching(writer: &WriterConfig) -> ReaderConfig {
        ReaderConfig {
            publisher_id: writer.publisher_id.clone(),
            writer_group_id: writer.writer_group_id,
            dataset_writer_id: Some(writer.dataset_writer_id),
            fields: Some(writer.fields.clone()),
        }
    }
}

/// What an accepted message carried besides its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Accepted {
    /// Fields written to the values slice.
    pub fields: usize,
    /// The NetworkMessage SequenceNumber, when sent.
    pub nm_sequence: Option<u16>,
    /// The DataSetMessage SequenceNumber, when sent.
    pub dsm_sequence: Option<u16>,
    /// The NetworkMessage Timestamp (`DateTime`), when sent.
    pub nm_timestamp: Option<i64>,
    /// The NetworkMessage PicoSeconds, when sent.
    pub nm_picoseconds: Option<u16>,
    /// The DataSetMessage Timestamp (`DateTime`), when sent.
    pub dsm_timestamp: Option<i64>,
    /// The DataSetMessage PicoSeconds, when sent.
    pub dsm_picoseconds: Option<u16>,
}

/// Which check of rule 2 a message failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotOurs {
    /// The PublisherId is of another type (ExtendedFlags1 type bits).
    PublisherIdType {
        /// The reader's type bits.
        expected: u8,
        /// The message's.
        got: u8,
    },
    /// The PublisherId has the right type and another value.
    PublisherId,
    /// Another WriterGroupId.
    WriterGroup {
        /// The reader's.
        expected: u16,
        /// The message's.
        got: u16,
    },
    /// The PayloadHeader does not list the reader's DataSetWriterId.
    DataSetWriter {
        /// The reader's.
        expected: u16,
    },
}

impl fmt::Display for NotOurs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotOurs::PublisherIdType { expected, got } => write!(
                f,
                "the PublisherId is a {}, the reader expects a {}",
                publisher_id_type_name(*got),
                publisher_id_type_name(*expected)
            ),
            NotOurs::PublisherId => f.write_str("another PublisherId"),
            NotOurs::WriterGroup { expected, got } => {
                write!(f, "WriterGroupId {got}, the reader expects {expected}")
            }
            NotOurs::DataSetWriter { expected } => write!(
                f,
                "the PayloadHeader does not list DataSetWriterId {expected}"
            ),
        }
    }
}

/// How a message's fields differ from the reader's (rule 4).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldMismatch {
    /// Another number of fields.
    Count {
        /// Fields configured.
        expected: usize,
        /// Fields in the message.
        got: usize,
    },
    /// A field of another type.
    Type {
        /// Index of the field.
        index: usize,
        /// The configured type.
        expected: BuiltinType,
        /// The message's.
        got: BuiltinType,
    },
    /// A field without a value: a null Variant or a DataValue whose value
    /// bit is clear.
    NoValue {
        /// Index of the field.
        index: usize,
    },
    /// More fields than the caller's values slice holds.
    Capacity {
        /// Fields in the message.
        got: usize,
        /// Length of the values slice.
        capacity: usize,
    },
    /// RawData fields, and the reader has no field types to read them by.
    RawWithoutTypes,
}

impl fmt::Display for FieldMismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldMismatch::Count { expected, got } => {
                write!(f, "{got} fields, the reader expects {expected}")
            }
            FieldMismatch::Type {
                index,
                expected,
                got,
            } => write!(f, "field {index} is {got}, the reader expects {expected}"),
            FieldMismatch::NoValue { index } => write!(
                f,
                "field {index} has no value (a null Variant or a DataValue without one)"
            ),
            FieldMismatch::Capacity { got, capacity } => {
                write!(f, "{got} fields, the values buffer holds {capacity}")
            }
            FieldMismatch::RawWithoutTypes => {
                f.write_str("RawData fields, and the reader has no field types to read them by")
            }
        }
    }
}

/// Why a message was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reject {
    /// The bytes break the UADP layout.
    Malformed {
        /// Offset of the offending field.
        offset: usize,
        /// What was wrong there.
        what: &'static str,
    },
    /// A part of UADP not spoken here.
    Unsupported(Unsupported),
    /// Another publisher, group or writer.
    NotOurs(NotOurs),
    /// A delta frame, event or keep-alive.
    NotKeyFrame(MessageKind),
    /// The DataSetMessage's valid bit is clear.
    Invalid,
    /// The fields differ from the reader's.
    FieldMismatch(FieldMismatch),
}

/// The counter a [`Reject`] goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RejectClass {
    /// [`Reject::Malformed`]: the bytes break the UADP layout.
    Malformed,
    /// [`Reject::FieldMismatch`]: a well-formed message whose fields differ
    /// from the configured list in count or type (a valid message of a
    /// publisher configured with another field list lands here).
    FieldList,
    /// [`Reject::Unsupported`].
    Unsupported,
    /// [`Reject::NotOurs`]: someone else's traffic, not an error.
    NotOurs,
    /// [`Reject::NotKeyFrame`] and [`Reject::Invalid`]: well-formed, not
    /// data to apply.
    Skipped,
}

impl Reject {
    /// The counter this rejection belongs to.
    pub fn class(&self) -> RejectClass {
        match self {
            Reject::Malformed { .. } => RejectClass::Malformed,
            Reject::FieldMismatch(_) => RejectClass::FieldList,
            Reject::Unsupported(_) => RejectClass::Unsupported,
            Reject::NotOurs(_) => RejectClass::NotOurs,
            Reject::NotKeyFrame(_) | Reject::Invalid => RejectClass::Skipped,
        }
    }
}

impl From<DecodeError> for Reject {
    fn from(e: DecodeError) -> Reject {
        match e {
            DecodeError::Malformed { offset, what } => Reject::Malformed { offset, what },
            DecodeError::Unsupported(u) => Reject::Unsupported(u),
        }
    }
}

impl fmt::Display for Reject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Reject::Malformed { offset, what } => {
                write!(f, "malformed UADP message at byte {offset}: {what}")
            }
            Reject::Unsupported(u) => write!(f, "unsupported UADP message: {u}"),
            Reject::NotOurs(n) => write!(f, "not for this reader: {n}"),
            Reject::NotKeyFrame(k) => write!(f, "a {}, not a key frame", k.name()),
            Reject::Invalid => f.write_str("the DataSetMessage's valid bit is clear"),
            Reject::FieldMismatch(m) => write!(f, "field mismatch: {m}"),
        }
    }
}

impl std::error::Error for Reject {}

/// A configured subscriber (see the module's acceptance rules).
#[derive(Debug, Clone)]
pub struct Reader {
    config: ReaderConfig,
}

impl Reader {
    /// A reader expecting what `config` says.
    pub fn new(config: ReaderConfig) -> Reader {
        Reader { config }
    }

    /// The configuration.
    pub fn config(&self) -> &ReaderConfig {
        &self.config
    }

    /// Checks `bytes` against the acceptance rules and, when they pass,
    /// writes the fields into `values` (from its start). Allocates nothing.
    /// On a rejection `values` may hold some fields of the rejected message.
    pub fn accept(&self, bytes: &[u8], values: &mut [Value]) -> Result<Accepted, Reject> {
        let mut c = Cursor::new(bytes);
        let h = parse_header(&mut c)?;
        let cfg = &self.config;
        if let (Some(expected), Some(got)) = (&cfg.publisher_id, &h.publisher_id) {
            if expected.type_bits() != got.type_bits() {
                return Err(Reject::NotOurs(NotOurs::PublisherIdType {
                    expected: expected.type_bits(),
                    got: got.type_bits(),
                }));
            }
            if !got.is(expected) {
                return Err(Reject::NotOurs(NotOurs::PublisherId));
            }
        }
        let group = h.group.unwrap_or_default();
        if let (Some(expected), Some(got)) = (cfg.writer_group_id, group.writer_group_id) {
            if expected != got {
                return Err(Reject::NotOurs(NotOurs::WriterGroup { expected, got }));
            }
        }
        let index = match (cfg.dataset_writer_id, h.writer_ids) {
            (Some(expected), Some(_)) => (0..h.count())
                .find(|&i| h.writer_id(i) == Some(expected))
                .ok_or(Reject::NotOurs(NotOurs::DataSetWriter { expected }))?,
            _ => 0,
        };
        let sizes = parse_sizes(&mut c, &h)?;
        let mut c = match sizes {
            Some(sizes) => {
                let start = c.pos() + (0..index).map(|i| size_at(sizes, i)).sum::<usize>();
                Cursor::window(bytes, start, start + size_at(sizes, index))
            }
            None => c,
        };
        let (dh, kind) = parse_dsm_header(&mut c)?;
        if kind != MessageKind::KeyFrame {
            return Err(Reject::NotKeyFrame(kind));
        }
        if !dh.valid {
            return Err(Reject::Invalid);
        }
        let fields = self.read_fields(&mut c, dh.encoding, values)?;
        Ok(Accepted {
            fields,
            nm_sequence: group.sequence_number,
            dsm_sequence: dh.sequence_number,
            nm_timestamp: h.timestamp,
            nm_picoseconds: h.picoseconds,
            dsm_timestamp: dh.timestamp,
            dsm_picoseconds: dh.picoseconds,
        })
    }

    /// Reads a key frame's fields into `values`; returns how many.
    fn read_fields(
        &self,
        c: &mut Cursor<'_>,
        encoding: FieldEncoding,
        values: &mut [Value],
    ) -> Result<usize, Reject> {
        let types = self.config.fields.as_deref();
        if encoding == FieldEncoding::RawData {
            let types = types.ok_or(Reject::FieldMismatch(FieldMismatch::RawWithoutTypes))?;
            let capacity = values.len();
            let slots = values.get_mut(..types.len()).ok_or(Reject::FieldMismatch(
                FieldMismatch::Capacity {
                    got: types.len(),
                    capacity,
                },
            ))?;
            for (slot, &ty) in slots.iter_mut().zip(types) {
                *slot = read_raw(c, ty)?;
            }
            return Ok(types.len());
        }
        let count = usize::from(c.u16("the message ends inside the field count")?);
        // Every field takes at least its encoding byte: a count the rest
        // cannot hold breaks the layout, whatever the reader expects.
        if count > c.remaining() {
            return Err(Reject::Malformed {
                offset: c.pos() - 2,
                what: "the field count runs past the end of the message",
            });
        }
        if let Some(types) = types {
            if count != types.len() {
                return Err(Reject::FieldMismatch(FieldMismatch::Count {
                    expected: types.len(),
                    got: count,
                }));
            }
        }
        let capacity = values.len();
        let slots =
            values
                .get_mut(..count)
                .ok_or(Reject::FieldMismatch(FieldMismatch::Capacity {
                    got: count,
                    capacity,
                }))?;
        for (index, slot) in slots.iter_mut().enumerate() {
            let value = match encoding {
                FieldEncoding::DataValue => read_datavalue(c)?.value,
                _ => read_variant(c)?,
            };
            let Some(v) = value else {
                return Err(Reject::FieldMismatch(FieldMismatch::NoValue { index }));
            };
            if let Some(expected) = types.map(|t| t[index]) {
                if v.ty() != expected {
                    return Err(Reject::FieldMismatch(FieldMismatch::Type {
                        index,
                        expected,
                        got: v.ty(),
                    }));
                }
            }
            *slot = v;
        }
        Ok(count)
    }
}
