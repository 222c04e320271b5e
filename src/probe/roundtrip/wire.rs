//! The round trip's messages on the wire: each direction's UADP writer and
//! reader built from its [`Direction`] (identities, fields, encoding), and
//! the [`Link`] a loop publishes and subscribes through — a
//! [`PubSubSocket`] pair plus, for raw Ethernet, the frame header.
//!
//! Everything a loop calls here ([`Link::publish`], [`Link::poll`])
//! works on buffers made before the loop and allocates nothing.

use std::net::{IpAddr, SocketAddrV4};

use anyhow::{bail, Context, Result};
use jitterlab_core::ether::{self, VlanTag};
use jitterlab_core::roundtrip::{Direction, SequenceCounts, Transport, HEADER_PARTS};
use jitterlab_core::uadp::{
    configuration_version, datetime_from_unix_ns, Accepted, Address, BuiltinType, FieldEncoding,
    NotOurs, Publish, PublisherId, Reader, ReaderConfig, Reject, RejectClass, Value, Writer,
    WriterConfig,
};
use serde::Serialize;

use crate::error::bad;
use crate::net::pubsub::{self, Options, PubSubSocket, StampSupport, Wait};

/// The most fields one message of the round trip carries.
pub const MAX_FIELDS: usize = 64;
/// Room for one received frame or datagram.
pub const RX_BUFFER: usize = 2048;

/// One direction, checked: its address, its writer and the reader that
/// accepts its messages.
#[derive(Debug, Clone)]
pub struct Wire {
    /// Where its messages go.
    pub address: Address,
    /// The publisher's side.
    pub writer: Writer,
    /// The subscriber's side.
    pub reader: Reader,
    /// The field that carries the change.
    pub marker_field: usize,
    /// Its type.
    pub marker_type: BuiltinType,
}

/// Parses a direction's text forms (`which`: `input` or `output`, for the
/// messages) into its writer and reader.
pub fn wire(d: &Direction, transport: Transport, which: &str) -> Result<Wire> {
    let output = which == "output";
    let url = d
        .url
        .clone()
        .unwrap_or_else(|| Direction::default_url(transport, output).to_string());
    let address = Address::parse(&url).map_err(|e| bad(format!("--{which}-url: {e}")))?;
    match (transport, &address) {
        (
            Transport::Udp,
            Address::Udp {
                ip: IpAddr::V4(_), ..
            },
        )
        | (Transport::Eth, Address::Eth { .. }) => {}
        (Transport::Udp, Address::Udp { .. }) => {
            return Err(bad(format!(
                "--{which}-url {url}: only IPv4 addresses are supported"
            )))
        }
        _ => {
            return Err(bad(format!(
                "--{which}-url {url} does not fit --transport {}; give an opc.{}:// address",
                transport.name(),
                transport.name()
            )))
        }
    }
    let publisher_id = PublisherId::parse(&d.publisher_id)
        .map_err(|e| bad(format!("--{which}-publisher-id: {e}")))?;
    let fields = d
        .fields
        .iter()
        .map(|f| BuiltinType::parse(f))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("--{which}-fields: {e}")))?;
    if fields.is_empty() || fields.len() > MAX_FIELDS {
        return Err(bad(format!(
            "--{which}-fields: give 1 to {MAX_FIELDS} field types, e.g. datetime,uint32"
        )));
    }
    let Some(&marker_type) = fields.get(d.marker_field) else {
        return Err(bad(format!(
            "--map: the {which} has {} field(s); field {} does not exist",
            fields.len(),
            d.marker_field
        )));
    };
    let encoding = match d.encoding.as_str() {
        "variant" => FieldEncoding::Variant,
        "rawdata" => FieldEncoding::RawData,
        "datavalue" => FieldEncoding::DataValue,
        other => {
            return Err(bad(format!(
                "--{which}-encoding {other:?}: use variant, rawdata or datavalue"
            )))
        }
    };
    let header = Header::parse(&d.header).map_err(|e| bad(format!("--{which}-header: {e}")))?;
    let version = header
        .config_version
        .then(|| configuration_version(&fields));
    let config = WriterConfig {
        publisher_id: Some(publisher_id),
        writer_group_id: Some(d.writer_group_id),
        dataset_writer_id: d.dataset_writer_id,
        encoding,
        fields,
        // Sequence numbers let the receiver count lost messages; the
        // reference's subscriber does not check them.
        nm_sequence: header.nm_sequence,
        dsm_sequence: header.dsm_sequence,
        dsm_timestamp: header.timestamp,
        config_major: version.map(|v| v.0),
        config_minor: version.map(|v| v.1),
        ..WriterConfig::tutorial()
    };
    let reader = Reader::new(ReaderConfig::matching(&config));
    let writer = Writer::new(config).map_err(|e| bad(format!("the {which} messages: {e}")))?;
    Ok(Wire {
        address,
        writer,
        reader,
        marker_field: d.marker_field,
        marker_type,
    })
}

/// The optional parts of a direction's messages (`--input-header`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Header {
    /// The NetworkMessage SequenceNumber.
    pub nm_sequence: bool,
    /// The DataSetMessage SequenceNumber.
    pub dsm_sequence: bool,
    /// The DataSetMessage Timestamp.
    pub timestamp: bool,
    /// The ConfigurationVersion, derived from the field list.
    pub config_version: bool,
}

impl Header {
    /// Reads a list of [`HEADER_PARTS`]; `none` alone sends none of them.
    pub fn parse(parts: &[String]) -> Result<Header, String> {
        let mut h = Header::default();
        if let [only] = parts {
            if only.trim() == "none" {
                return Ok(h);
            }
        }
        for part in parts {
            let flag = match part.trim() {
                "nm-sequence" => &mut h.nm_sequence,
                "dsm-sequence" => &mut h.dsm_sequence,
                "timestamp" => &mut h.timestamp,
                "config-version" => &mut h.config_version,
                other => {
                    return Err(format!(
                        "unknown part {other:?}: give a list of {}, or none",
                        HEADER_PARTS.join(", ")
                    ))
                }
            };
            *flag = true;
        }
        Ok(h)
    }
}

/// The `u64` a marker field's value is compared by.
pub fn marker_bits(v: &Value) -> u64 {
    match *v {
        Value::Boolean(b) => u64::from(b),
        Value::SByte(x) => x as u8 as u64,
        Value::Byte(x) => u64::from(x),
        Value::Int16(x) => x as u16 as u64,
        Value::UInt16(x) => u64::from(x),
        Value::Int32(x) => x as u32 as u64,
        Value::UInt32(x) => u64::from(x),
        Value::Int64(x) => x as u64,
        Value::UInt64(x) => x,
        Value::Float(x) => u64::from(x.to_bits()),
        Value::Double(x) => x.to_bits(),
        Value::DateTime(x) => x as u64,
    }
}

/// The input's value at change number `k` (from 1): a DateTime field holds
/// the instant of the change (T1, realtime), any other type the change
/// number (a Boolean toggles), so consecutive changes always differ.
pub fn change_value(ty: BuiltinType, k: u64, t1_real_ns: u64) -> Value {
    match ty {
        BuiltinType::DateTime => Value::DateTime(datetime_from_unix_ns(t1_real_ns as i64)),
        BuiltinType::Boolean => Value::Boolean(k % 2 == 1),
        BuiltinType::SByte => Value::SByte(k as i8),
        BuiltinType::Byte => Value::Byte(k as u8),
        BuiltinType::Int16 => Value::Int16(k as i16),
        BuiltinType::UInt16 => Value::UInt16(k as u16),
        BuiltinType::Int32 => Value::Int32(k as i32),
        BuiltinType::UInt32 => Value::UInt32(k as u32),
        BuiltinType::Int64 => Value::Int64(k as i64),
        BuiltinType::UInt64 => Value::UInt64(k),
        BuiltinType::Float => Value::Float(k as f32),
        BuiltinType::Double => Value::Double(k as f64),
    }
}

/// What a loop counts of the messages it received, the refused ones by
/// reason.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct RxCounts {
    /// Accepted messages.
    pub accepted: u64,
    /// Accepted messages that carried no sequence number (neither the
    /// NetworkMessage's nor the DataSetMessage's): their loss cannot be
    /// counted.
    pub without_sequence: u64,
    /// Malformed: the bytes break the UADP layout.
    pub malformed: u64,
    /// Well-formed, with another field count or field types than the
    /// configured list.
    pub field_list_differs: u64,
    /// Parts of UADP not spoken here (security, chunks, discovery).
    pub unsupported: u64,
    /// Another publisher's, group's or writer's (the sum of the three
    /// below).
    pub not_ours: u64,
    /// Of those, another PublisherId (type or value).
    pub not_ours_publisher_id: u64,
    /// Another WriterGroupId.
    pub not_ours_writer_group: u64,
    /// A PayloadHeader without our DataSetWriterId.
    pub not_ours_dataset_writer: u64,
    /// Not key frames, or not valid.
    pub skipped: u64,
    /// Frames that are not UADP at all (other EtherTypes, other
    /// destinations).
    pub other_frames: u64,
    /// Receive errors.
    pub errors: u64,
}

impl RxCounts {
    /// Counts an accepted message by its sequence number — the
    /// NetworkMessage's, else the DataSetMessage's — or as one without, and
    /// says whether its content is taken (`SequenceCounts::add`; a message
    /// without a number is).
    pub fn accepted(&mut self, a: &Accepted, sequence: &mut SequenceCounts) -> bool {
        self.accepted += 1;
        match a.nm_sequence.or(a.dsm_sequence) {
            Some(s) => sequence.add(s).taken(),
            None => {
                self.without_sequence += 1;
                true
            }
        }
    }

    /// Counts a rejected message.
    pub fn reject(&mut self, r: &Reject) {
        match r.class() {
            RejectClass::Malformed => self.malformed += 1,
            RejectClass::FieldList => self.field_list_differs += 1,
            RejectClass::Unsupported => self.unsupported += 1,
            RejectClass::NotOurs => self.not_ours += 1,
            RejectClass::Skipped => self.skipped += 1,
        }
        if let Reject::NotOurs(n) = r {
            match n {
                NotOurs::PublisherIdType { .. } | NotOurs::PublisherId => {
                    self.not_ours_publisher_id += 1
                }
                NotOurs::WriterGroup { .. } => self.not_ours_writer_group += 1,
                NotOurs::DataSetWriter { .. } => self.not_ours_dataset_writer += 1,
            }
        }
    }
}

/// How a link frames a message for raw Ethernet.
#[derive(Debug, Clone, Copy)]
struct Framing {
    dst: [u8; 6],
    src: [u8; 6],
    vlan: Option<VlanTag>,
}

/// One end's sockets: it publishes on `tx` (its own direction) and
/// subscribes on `rx` (the other's).
#[derive(Debug)]
pub struct Link {
    tx: PubSubSocket,
    rx: PubSubSocket,
    framing: Option<Framing>,
    /// Only frames to this address are taken (raw Ethernet).
    rx_dst: Option<[u8; 6]>,
    /// The message being built, with room for a frame header.
    out: Vec<u8>,
    /// Received bytes.
    buf: Vec<u8>,
}

/// What [`Link::poll`] found.
enum Polled {
    /// Nothing queued.
    Empty,
    /// A message: its byte range in the receive buffer and its stamp.
    Message {
        /// Where the UADP message is in the buffer.
        range: std::ops::Range<usize>,
        /// Kernel receive stamp, realtime ns.
        rx_real_ns: Option<u64>,
    },
    /// Something that is not a UADP message of this link.
    Other,
}

impl Link {
    /// Opens the sockets of one end inside namespace `netns` (or here):
    /// publishing `publish`'s messages out of `interface`, subscribing to
    /// `subscribe`'s; `src_mac` is the interface's address (raw Ethernet).
    pub fn open(
        netns: Option<&str>,
        interface: &str,
        publish: &Wire,
        subscribe: &Wire,
        src_mac: Option<[u8; 6]>,
        tx_stamps: bool,
    ) -> Result<Link> {
        let transport = |w: &Wire| -> pubsub::Transport {
            match w.address {
                Address::Udp {
                    ip: IpAddr::V4(ip),
                    port,
                } => pubsub::Transport::Udp {
                    address: SocketAddrV4::new(ip, port),
                    interface: interface.to_string(),
                },
                Address::Udp { .. } => unreachable!("checked: IPv4 only"),
                Address::Eth { mac, .. } => pubsub::Transport::Ethernet {
                    interface: interface.to_string(),
                    destination: mac,
                },
            }
        };
        let tx = PubSubSocket::open(
            netns,
            pubsub::Role::Publisher,
            &transport(publish),
            Options {
                tx_stamps,
                ..Options::default()
            },
        )
        .context("opening the publisher's socket")?;
        let rx = PubSubSocket::open(
            netns,
            pubsub::Role::Subscriber,
            &transport(subscribe),
            Options::default(),
        )
        .context("opening the subscriber's socket")?;
        let framing = match publish.address {
            Address::Eth { mac, vlan } => Some(Framing {
                dst: mac,
                src: src_mac.context("raw Ethernet needs the interface's MAC address")?,
                vlan: vlan.map(|v| VlanTag {
                    pcp: v.pcp,
                    dei: false,
                    vid: v.id,
                }),
            }),
            Address::Udp { .. } => None,
        };
        let rx_dst = match subscribe.address {
            Address::Eth { mac, .. } => Some(mac),
            Address::Udp { .. } => None,
        };
        if publish.writer.len() + 18 > RX_BUFFER {
            bail!(
                "a message of {} bytes does not fit one frame; give fewer fields",
                publish.writer.len()
            );
        }
        Ok(Link {
            tx,
            rx,
            framing,
            rx_dst,
            out: vec![0; RX_BUFFER],
            buf: vec![0; RX_BUFFER],
        })
    }

    /// Encodes and sends one key frame of `values` with `publish`'s header
    /// fields. Allocates nothing.
    pub fn publish(
        &mut self,
        writer: &Writer,
        publish: &Publish,
        values: &[Value],
    ) -> std::io::Result<()> {
        let head = match self.framing {
            Some(f) => {
                ether::write_header(&mut self.out, f.dst, f.src, f.vlan, ether::ETHERTYPE_UADP)
                    .map_err(std::io::Error::other)?
            }
            None => 0,
        };
        let n = writer
            .encode(publish, values, &mut self.out[head..])
            .map_err(std::io::Error::other)?;
        self.tx.send(&self.out[..head + n])
    }

    /// The software transmit stamp of the last send, when the socket has
    /// them.
    pub fn tx_stamp(&self) -> Option<u64> {
        self.tx.tx_stamp().ok().flatten()
    }

    /// Takes one queued message without waiting. Allocates nothing.
    fn poll(&mut self) -> std::io::Result<Polled> {
        let Some(r) = self.rx.recv(&mut self.buf, Wait::Poll)? else {
            return Ok(Polled::Empty);
        };
        let range = match self.rx_dst {
            None => 0..r.len,
            Some(dst) => match ether::parse(&self.buf[..r.len]) {
                Ok(f) if f.dst == dst && f.may_be_uadp() => {
                    // The payload is a slice of the buffer (for the 802.3
                    // form, exactly the length field's bytes): its offset
                    // is where the message starts.
                    let start = f.payload.as_ptr() as usize - self.buf.as_ptr() as usize;
                    start..start + f.payload.len()
                }
                _ => return Ok(Polled::Other),
            },
        };
        Ok(Polled::Message {
            range,
            rx_real_ns: r.rx_realtime_ns,
        })
    }

    /// Takes every message queued now that `wire`'s reader accepts: its
    /// sequence number is counted in `sequence`, and when it continues the
    /// sender's stream (not a duplicate, a stale message or a foreign
    /// sender's: `SequenceCounts::add`) its fields go into `values` and its
    /// marker and kernel receive stamp to `each`; the rest is counted in
    /// `rx`. A message without a sequence number (NetworkMessage's, else
    /// DataSetMessage's) is taken, and counted in `rx.without_sequence`.
    /// Allocates nothing.
    pub fn take_messages(
        &mut self,
        wire: &Wire,
        values: &mut [Value],
        rx: &mut RxCounts,
        sequence: &mut SequenceCounts,
        each: &mut dyn FnMut(u64, Option<u64>),
    ) {
        // Decoded here first: a message not taken leaves `values` as it was.
        let mut fields = [Value::Boolean(false); MAX_FIELDS];
        let fields = &mut fields[..values.len().min(MAX_FIELDS)];
        loop {
            match self.poll() {
                Ok(Polled::Empty) => break,
                Ok(Polled::Other) => rx.other_frames += 1,
                Ok(Polled::Message { range, rx_real_ns }) => {
                    match wire.reader.accept(&self.buf[range], fields) {
                        Ok(a) => {
                            if !rx.accepted(&a, sequence) {
                                continue;
                            }
                            values[..fields.len()].copy_from_slice(fields);
                            each(marker_bits(&values[wire.marker_field]), rx_real_ns);
                        }
                        Err(r) => rx.reject(&r),
                    }
                }
                Err(_) => {
                    rx.errors += 1;
                    break;
                }
            }
        }
    }

    /// Throws away what is queued (before the start).
    pub fn drain(&mut self) {
        let _ = self.rx.drain(&mut self.buf);
    }

    /// The stamps of the subscriber's and the publisher's sockets.
    pub fn stamps(&self) -> (&StampSupport, &StampSupport) {
        (self.rx.stamps(), self.tx.stamps())
    }
}
