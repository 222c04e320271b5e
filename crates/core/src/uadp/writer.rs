//! The configured, allocation-free publisher side: a [`WriterConfig`] says
//! once what every message carries, [`Writer::new`] checks it, and
//! [`Writer::encode`] writes one key frame per call into a caller buffer —
//! no allocation, no lock, no I/O, so a real-time loop can call it every
//! cycle (design rule 2).
//!
//! The message length is fixed by the configuration ([`Writer::len`]):
//! every field type has a fixed size, and the optional parts are on or off
//! for the writer's life. That byte-stable layout is what the reference
//! implementation's real-time RawData reader depends on (it reads the fields
//! at offsets fixed from the first message it accepted, with no length
//! check). One DataSetMessage per NetworkMessage: jitterlab's roles publish
//! one DataSet each.
//!
//! The design rules cited here are in `docs/design.md`.

use thiserror::Error;

use super::encode::{
    write_datavalue, write_dsm_header, write_header, write_raw, write_variant, HeaderOut,
};
use super::message::{DataSetMessageHeader, GroupHeader, MessageKind};
use super::types::{BuiltinType, DataValue, FieldEncoding, PublisherId, Value, MAX_STRING_ID};
use super::wire::{EncodeError, Out, SliceOut};

/// The reference tutorial's PublisherId (UInt16 2234).
pub const TUTORIAL_PUBLISHER_ID: PublisherId = PublisherId::UInt16(2234);
/// The reference tutorial's WriterGroupId.
pub const TUTORIAL_WRITER_GROUP_ID: u16 = 100;
/// The reference tutorial's DataSetWriterId.
pub const TUTORIAL_DATASET_WRITER_ID: u16 = 62541;

/// The largest message a writer makes: a UDP datagram's payload over IPv4.
pub const MAX_MESSAGE_LEN: usize = 65_507;

/// The ConfigurationVersion (MajorVersion, MinorVersion) of a DataSet with
/// `fields`, the same at both ends of a configured field list: the 32-bit
/// FNV-1a hash (offset basis 0x811C9DC5, prime 0x01000193) of the fields'
/// built-in type ids in order, one byte each (Boolean 1 … DateTime 13), as
/// both versions. Another count, type or order gives another version (the
/// hash's collisions aside); restarts do not change it. The reference
/// derives its versions from its start time instead, and checks neither.
pub fn configuration_version(fields: &[BuiltinType]) -> (u32, u32) {
    let hash = fields.iter().fold(0x811C_9DC5_u32, |h, t| {
        (h ^ u32::from(t.id())).wrapping_mul(0x0100_0193)
    });
    (hash, hash)
}

/// What every message of a [`Writer`] carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterConfig {
    /// The PublisherId (`None`: not sent).
    pub publisher_id: Option<PublisherId>,
    /// The WriterGroupId in the GroupHeader (`None`: not sent).
    pub writer_group_id: Option<u16>,
    /// The GroupVersion in the GroupHeader (`None`: not sent).
    pub group_version: Option<u32>,
    /// The NetworkMessageNumber in the GroupHeader (`None`: not sent).
    pub network_message_number: Option<u16>,
    /// The GroupHeader carries the NetworkMessage SequenceNumber
    /// ([`Publish::nm_sequence`]).
    pub nm_sequence: bool,
    /// The DataSetWriterId of the one DataSetMessage.
    pub dataset_writer_id: u16,
    /// A PayloadHeader lists the DataSetWriterId.
    pub payload_header: bool,
    /// The NetworkMessage carries a Timestamp ([`Publish::timestamp`]).
    pub nm_timestamp: bool,
    /// The NetworkMessage carries PicoSeconds ([`Publish::picoseconds`]).
    pub nm_picoseconds: bool,
    /// The DataSetClassId, as its 16 wire bytes (`None`: not sent).
    pub dataset_class_id: Option<[u8; 16]>,
    /// How the fields are encoded.
    pub encoding: FieldEncoding,
    /// The field types, in order.
    pub fields: Vec<BuiltinType>,
    /// The DataSetMessage carries its SequenceNumber
    /// ([`Publish::dsm_sequence`]).
    pub dsm_sequence: bool,
    /// The DataSetMessage carries a Timestamp ([`Publish::timestamp`]).
    pub dsm_timestamp: bool,
    /// The DataSetMessage carries PicoSeconds ([`Publish::picoseconds`]).
    pub dsm_picoseconds: bool,
    /// The DataSetMessage carries a Status (always Good, 0).
    pub dsm_status: bool,
    /// The ConfigurationVersion MajorVersion (`None`: not sent).
    pub config_major: Option<u32>,
    /// The ConfigurationVersion MinorVersion (`None`: not sent).
    pub config_minor: Option<u32>,
}

impl WriterConfig {
    /// The reference's tutorial publisher (`tutorial_pubsub_publish`, the
    /// capture `tutorial_udp.pcap`): PublisherId UInt16 2234, WriterGroupId
    /// 100, a PayloadHeader with DataSetWriterId 62541, Variant encoding,
    /// one DateTime field, a DataSetMessage Timestamp and the configuration
    /// version (major and minor, 1 and 1 here: the reference derives them
    /// from its start time).
    pub fn tutorial() -> WriterConfig {
        WriterConfig {
            publisher_id: Some(TUTORIAL_PUBLISHER_ID),
            writer_group_id: Some(TUTORIAL_WRITER_GROUP_ID),
            group_version: None,
            network_message_number: None,
            nm_sequence: false,
            dataset_writer_id: TUTORIAL_DATASET_WRITER_ID,
            payload_header: true,
            nm_timestamp: false,
            nm_picoseconds: false,
            dataset_class_id: None,
            encoding: FieldEncoding::Variant,
            fields: vec![BuiltinType::DateTime],
            dsm_sequence: false,
            dsm_timestamp: true,
            dsm_picoseconds: false,
            dsm_status: false,
            config_major: Some(1),
            config_minor: Some(1),
        }
    }

    /// The reference's fixed-size "real-time level" publisher (the capture
    /// `rt_level_udp.pcap`): the tutorial's identities, the NetworkMessage
    /// SequenceNumber, RawData encoding, the DataSetMessage SequenceNumber
    /// and ten UInt32 fields; no time stamp, no configuration version.
    pub fn rt_level() -> WriterConfig {
        WriterConfig {
            nm_sequence: true,
            encoding: FieldEncoding::RawData,
            fields: vec![BuiltinType::UInt32; 10],
            dsm_sequence: true,
            dsm_timestamp: false,
            config_major: None,
            config_minor: None,
            ..WriterConfig::tutorial()
        }
    }
}

/// Why a [`WriterConfig`] was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// RawData with no field type.
    #[error("RawData encoding needs at least one field: a subscriber reads raw fields by their configured types, so an empty raw DataSet carries nothing; add fields or use variant encoding")]
    RawDataWithoutFields,
    /// More fields than a DataSetMessage counts.
    #[error("{0} fields configured; a DataSetMessage carries at most 65535")]
    TooManyFields(usize),
    /// A String PublisherId that is empty or too long.
    #[error("the String PublisherId is {0} bytes long; give 1 to {MAX_STRING_ID} bytes")]
    PublisherIdLength(usize),
    /// PicoSeconds without the Timestamp they refine.
    #[error("{0} picoseconds are on without the {0} timestamp they refine; turn the timestamp on or the picoseconds off")]
    PicosecondsWithoutTimestamp(&'static str),
    /// A message longer than a datagram.
    #[error("the message would be {0} bytes long; at most {MAX_MESSAGE_LEN} fit a UDP datagram: configure fewer fields")]
    TooLong(usize),
}

/// What changes from one message to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Publish {
    /// The NetworkMessage SequenceNumber (when configured).
    pub nm_sequence: u16,
    /// The DataSetMessage SequenceNumber (when configured).
    pub dsm_sequence: u16,
    /// The `DateTime` of the NetworkMessage and DataSetMessage Timestamps
    /// (when configured).
    pub timestamp: i64,
    /// The PicoSeconds beyond `timestamp` (when configured).
    pub picoseconds: u16,
}

/// A checked [`WriterConfig`], ready to write messages of [`Writer::len`]
/// bytes.
#[derive(Debug, Clone)]
pub struct Writer {
    config: WriterConfig,
    writer_ids: [u16; 1],
    len: usize,
}

impl Writer {
    /// Checks `config` and measures its message.
    pub fn new(config: WriterConfig) -> Result<Writer, ConfigError> {
        if config.encoding == FieldEncoding::RawData && config.fields.is_empty() {
            return Err(ConfigError::RawDataWithoutFields);
        }
        if config.fields.len() > usize::from(u16::MAX) {
            return Err(ConfigError::TooManyFields(config.fields.len()));
        }
        if let Some(PublisherId::String(s)) = &config.publisher_id {
            if s.is_empty() || s.len() > MAX_STRING_ID {
                return Err(ConfigError::PublisherIdLength(s.len()));
            }
        }
        if config.nm_picoseconds && !config.nm_timestamp {
            return Err(ConfigError::PicosecondsWithoutTimestamp("NetworkMessage"));
        }
        if config.dsm_picoseconds && !config.dsm_timestamp {
            return Err(ConfigError::PicosecondsWithoutTimestamp("DataSetMessage"));
        }
        let mut writer = Writer {
            writer_ids: [config.dataset_writer_id],
            config,
            len: 0,
        };
        let zeros: Vec<Value> = writer
            .config
            .fields
            .iter()
            .map(|&t| Value::zero(t))
            .collect();
        let mut probe = Vec::new();
        writer
            .write(&Publish::default(), &zeros, &mut probe)
            .expect("a checked configuration encodes into a growing buffer");
        if probe.len() > MAX_MESSAGE_LEN {
            return Err(ConfigError::TooLong(probe.len()));
        }
        writer.len = probe.len();
        Ok(writer)
    }

    /// The configuration.
    pub fn config(&self) -> &WriterConfig {
        &self.config
    }

    /// Bytes of every message of this writer.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Always false: a message has at least its header.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Writes one key frame carrying `values` (one per configured field, of
    /// its type) into the start of `out`, and returns its length
    /// ([`Writer::len`]). Allocates nothing.
    pub fn encode(
        &self,
        publish: &Publish,
        values: &[Value],
        out: &mut [u8],
    ) -> Result<usize, EncodeError> {
        if values.len() != self.config.fields.len() {
            return Err(EncodeError::FieldCount {
                expected: self.config.fields.len(),
                got: values.len(),
            });
        }
        for (index, (v, &expected)) in values.iter().zip(&self.config.fields).enumerate() {
            if v.ty() != expected {
                return Err(EncodeError::FieldType {
                    index,
                    expected,
                    got: v.ty(),
                });
            }
        }
        let Some(dst) = out.get_mut(..self.len) else {
            return Err(EncodeError::BufferTooSmall {
                need: self.len,
                have: out.len(),
            });
        };
        let mut o = SliceOut::new(dst);
        self.write(publish, values, &mut o)?;
        debug_assert_eq!(o.written(), self.len);
        Ok(self.len)
    }

    /// Writes the message; the values are already checked.
    fn write(&self, p: &Publish, values: &[Value], out: &mut impl Out) -> Result<(), EncodeError> {
        let c = &self.config;
        let group = (c.writer_group_id.is_some()
            || c.group_version.is_some()
            || c.network_message_number.is_some()
            || c.nm_sequence)
            .then_some(GroupHeader {
                writer_group_id: c.writer_group_id,
                group_version: c.group_version,
                network_message_number: c.network_message_number,
                sequence_number: c.nm_sequence.then_some(p.nm_sequence),
            });
        write_header(
            &HeaderOut {
                extended_flags1: false,
                extended_flags2: false,
                publisher_id: c.publisher_id.as_ref(),
                class_id: c.dataset_class_id.as_ref(),
                group,
                writer_ids: c.payload_header.then_some(&self.writer_ids[..]),
                timestamp: c.nm_timestamp.then_some(p.timestamp),
                picoseconds: c.nm_picoseconds.then_some(p.picoseconds),
            },
            out,
        )?;
        let header = DataSetMessageHeader {
            valid: true,
            encoding: c.encoding,
            flags2: false,
            sequence_number: c.dsm_sequence.then_some(p.dsm_sequence),
            timestamp: c.dsm_timestamp.then_some(p.timestamp),
            picoseconds: c.dsm_picoseconds.then_some(p.picoseconds),
            status: c.dsm_status.then_some(0),
            config_major: c.config_major,
            config_minor: c.config_minor,
        };
        write_dsm_header(&header, MessageKind::KeyFrame, out)?;
        if c.encoding != FieldEncoding::RawData {
            // At most 65535 fields: checked by `new`.
            out.u16(values.len() as u16)?;
        }
        for &v in values {
            match c.encoding {
                FieldEncoding::Variant => write_variant(Some(v), out)?,
                FieldEncoding::RawData => write_raw(v, out)?,
                FieldEncoding::DataValue => write_datavalue(&DataValue::of(v), out)?,
            }
        }
        Ok(())
    }
}
