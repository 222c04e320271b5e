//! UADP, the binary message mapping of OPC UA PubSub (OPC 10000-14, 7.2.4),
//! encoded and decoded without I/O: the wire of the `roundtrip` probe
//! ([Red Hat controls]'s screw-to-screw loop between an I/O simulator and a soft PLC).
//!
//! # What UADP is
//!
//! A publisher sends **NetworkMessages** over UDP (`opc.udp://`) or raw
//! Ethernet (`opc.eth://`, EtherType 0xB62C), each carrying one or more
//! **DataSetMessages** — the current values of a DataSet, such as a PLC's
//! input or output image. Nothing is acknowledged: a subscriber takes the
//! messages whose identities it is configured for (PublisherId,
//! WriterGroupId, DataSetWriterId) and applies the fields. All integers are
//! little-endian; time stamps are `DateTime`s (100 ns ticks since 1601).
//!
//! ```text
//! NetworkMessage  UADPVersion/UADPFlags, [ExtendedFlags1, [ExtendedFlags2]],
//!                 [PublisherId], [DataSetClassId],
//!                 [GroupHeader: GroupFlags, WriterGroupId, GroupVersion,
//!                               NetworkMessageNumber, SequenceNumber],
//!                 [PayloadHeader: Count, DataSetWriterIds],
//!                 [Timestamp], [PicoSeconds],
//!                 [Sizes, with a PayloadHeader and more than one DataSetMessage],
//!                 DataSetMessage…
//! DataSetMessage  DataSetFlags1, [DataSetFlags2], [SequenceNumber],
//!                 [Timestamp], [PicoSeconds], [Status],
//!                 [ConfigurationVersion Major], [Minor],
//!                 key frame: [FieldCount], fields (Variant, RawData or DataValue)
//!                 delta frame: FieldCount, (FieldIndex, field)…
//!                 event: FieldCount, fields;  keep-alive: nothing
//! ```
//!
//! # What is spoken here
//!
//! Everything above, for the scalar built-in types a PLC exchanges
//! ([`BuiltinType`]: Boolean to Double, and DateTime) and every PublisherId
//! type. Three ways in and out:
//!
//! - [`decode`] / [`NetworkMessage::encode`]: the full model, for tests,
//!   tools and diagnostics (it allocates). `encode(decode(b)) == b` for every
//!   message of the reference's captures (`tests/fixtures/uadp/`).
//!   RawData fields need their types ([`decode_with_raw_types`]); without
//!   them they stay bytes.
//! - [`Writer`]: a configured publisher that writes one key frame into a
//!   caller buffer without allocating, with a length fixed by its
//!   configuration ([`Writer::len`]) — the byte-stable layout the
//!   reference's fixed-offset RawData reader depends on. We publish key
//!   frames only; presets [`WriterConfig::tutorial`] and
//!   [`WriterConfig::rt_level`] reproduce the reference's publishers byte
//!   for byte.
//! - [`Reader`]: a configured subscriber that checks a message against the
//!   rules a subscriber of the reference implementation applies (see
//!   [`reader`] for the rules: PublisherId type **and** value, WriterGroupId,
//!   DataSetWriterId, key frames with the valid bit, field count and types)
//!   and writes the fields into a caller slice, allocating nothing even when
//!   it rejects. Each rejection has its counter ([`RejectClass`]): a
//!   well-formed message with another field list is `FieldList`, not
//!   `Malformed`. [`ReaderConfig::tutorial_subscriber`] is the reference's
//!   stock tutorial subscriber (four fields).
//! - [`configuration_version`]: the ConfigurationVersion a writer sends,
//!   derived from its field list so both ends of a configured list agree.
//!
//! [`address`] reads `opc.udp://` and `opc.eth://` addresses; Ethernet
//! framing (including the IEEE 802.3 length framing the reference sends) is
//! [`crate::ether`]'s.
//!
//! # What is not, and how it is reported
//!
//! A message that breaks the layout — a read past the end, a reserved
//! value or flag bit, a PayloadHeader counting no DataSetMessage, sizes that
//! overrun — is [`DecodeError::Malformed`], with the byte offset and what
//! was wrong. A well-formed message using what is not spoken here is
//! [`DecodeError::Unsupported`], counted apart from malformed ones:
//! security (signed or encrypted messages: ExtendedFlags1 bit 4), chunked
//! messages, discovery messages, promoted fields, UADP versions other than
//! 1, Variant arrays and the non-scalar built-in types (String, Guid,
//! NodeId, …). Decoding never panics on any input: a property test feeds it
//! random bytes, every truncation and bit flip of the captured messages,
//! and forged counts and lengths.
//!
//! The documents cited here are listed in `docs/design.md`.

pub mod address;
mod decode;
mod encode;
mod message;
pub mod reader;
mod types;
mod wire;
mod writer;

#[cfg(test)]
mod tests;

pub use address::{Address, Vlan, DEFAULT_UDP_PORT};
pub use decode::{decode, decode_with, decode_with_raw_types, DecodeOptions};
pub use message::{
    DataSetMessage, DataSetMessageHeader, DeltaField, Field, GroupHeader, MessageKind,
    NetworkMessage, Payload,
};
pub use reader::{Accepted, FieldMismatch, NotOurs, Reader, ReaderConfig, Reject, RejectClass};
pub use types::{
    datetime_from_unix_ns, unix_ns_from_datetime, BuiltinType, DataValue, FieldEncoding,
    PublisherId, Value, DATETIME_UNIX_EPOCH, MAX_STRING_ID,
};
pub use wire::{DecodeError, EncodeError, Unsupported};
pub use writer::{
    configuration_version, ConfigError, Publish, Writer, WriterConfig, MAX_MESSAGE_LEN,
    TUTORIAL_DATASET_WRITER_ID, TUTORIAL_PUBLISHER_ID, TUTORIAL_WRITER_GROUP_ID,
};
