//! Encoding a [`Frame`] into a caller buffer and decoding one from received
//! bytes, both without allocating.
//!
//! The POWERLINK data after the Ethernet header (all integers
//! little-endian, offsets from its first byte):
//!
//! ```text
//! all     0 MessageType (bit 7 reserved) | 1 Destination | 2 Source
//! SoC     3 res | 4 flags MC 0x80 PS 0x40 | 5 res | 6..14 NetTime | 14..22 RelativeTime
//! PReq    3 res | 4 flags MS 0x20 EA 0x04 RD 0x01 | 5 res | 6 PDOVersion | 7 res
//!         | 8..10 Size | 10.. payload
//! PRes    3 NMTStatus | 4 flags MS 0x20 EN 0x10 RD 0x01 | 5 PR<<3 | RS
//!         | 6 PDOVersion | 7 res | 8..10 Size | 10.. payload
//! SoA     3 NMTStatus | 4 flags EA 0x04 ER 0x02 | 5 res | 6 RequestedServiceID
//!         | 7 RequestedServiceTarget | 8 EPLVersion | 9 res
//! ASnd    3 ServiceID | 4.. service data
//! ```
//!
//! Service data, from the byte after the ServiceID:
//!
//! ```text
//! IdentResponse  0 EN 0x10 EC 0x08 | 1 PR<<3 | RS | 2 NMTStatus | 3 res | 4 EPLVersion
//!                | 5 res | 6..10 FeatureFlags | 10 MTU | 12 PollInSize | 14 PollOutSize
//!                | 16..20 ResponseTime | 20 res | 22 DeviceType | 26 VendorId
//!                | 30 ProductCode | 34 RevisionNumber | 38 SerialNumber
//!                | 42..50 vendor extension 1 (zeros) | 50 VerifyConfigurationDate
//!                | 54 VerifyConfigurationTime
//!                | 58..158 application SW date/time, IP settings, host name,
//!                  vendor extension 2 (zeros)
//! StatusResponse 0 EN/EC | 1 PR/RS | 2 NMTStatus | 3..6 res | 6..14 StaticErrorBitField
//!                | 14.. error entries of 20 bytes, ended by an all-zero entry;
//!                  at least two entries' room (72 bytes on the wire)
//! NMTCommand     0 NMTCommandId | 1 res | 2.. NMTCommandData
//! SDO            0..4 sequence layer | 4..12 command layer | 12.. data (see [`sdo`])
//! ```
//!
//! Frames go out padded to the 60-byte Ethernet minimum. Since POWERLINK
//! uses an EtherType, a received frame keeps that padding: PReq and PRes
//! are bounded by their Size field, a StatusResponse's entries by the
//! all-zero entry, and the rest ignore trailing bytes.

use super::frame::*;
use super::nmt::{NmtCommandId, NmtState, RequestedService, ServiceId};
use super::sdo::Sdo;
use super::*;
use crate::ether;

/// Bytes of a SoC's POWERLINK data.
pub const SOC_LEN: usize = 22;
/// Bytes of a PReq's or PRes's POWERLINK data before the payload.
pub const PDO_HEADER_LEN: usize = 10;
/// Bytes of a SoA's POWERLINK data.
pub const SOA_LEN: usize = 10;
/// Bytes of an ASnd's POWERLINK data before its service data.
pub const ASND_HEADER_LEN: usize = 4;
/// Bytes of an IdentResponse's service data.
pub const IDENT_RESPONSE_LEN: usize = 158;
/// Bytes of a StatusResponse's service data before its error entries.
pub const STATUS_RESPONSE_HEADER_LEN: usize = 14;
/// Bytes of a StatusResponse's error entries at the least, the
/// terminating all-zero entry included: openPOWERLINK builds two entries
/// (72 bytes on the wire) and its MN takes a shorter StatusResponse for
/// no answer.
pub const STATUS_RESPONSE_MIN_ENTRIES: usize = 2 * ERROR_ENTRY_LEN;
/// Bytes of an NMTCommand's service data before its command data.
pub const NMT_COMMAND_HEADER_LEN: usize = 2;

impl Frame<'_> {
    /// Bytes of the frame's POWERLINK data, unpadded (the Ethernet header
    /// and padding come on top).
    pub fn payload_len(&self) -> usize {
        match self {
            Frame::Soc(_) => SOC_LEN,
            Frame::PReq(p) => PDO_HEADER_LEN + p.payload.len(),
            Frame::PRes(p) => PDO_HEADER_LEN + p.payload.len(),
            Frame::Soa(_) => SOA_LEN,
            Frame::ASnd(a) => {
                ASND_HEADER_LEN
                    + match a.service {
                        ASndService::IdentResponse(_) => IDENT_RESPONSE_LEN,
                        ASndService::StatusResponse(s) => {
                            STATUS_RESPONSE_HEADER_LEN
                                + (s.errors.len() + ERROR_ENTRY_LEN)
                                    .max(STATUS_RESPONSE_MIN_ENTRIES)
                        }
                        ASndService::NmtCommand(c) => NMT_COMMAND_HEADER_LEN + c.data.len(),
                        ASndService::Sdo(s) => s.len(),
                        ASndService::Other { data, .. } => data.len(),
                    }
            }
        }
    }

    /// Bytes of the whole Ethernet frame as sent: header, POWERLINK data,
    /// padding to 60 (no frame check sequence).
    pub fn frame_len(&self) -> usize {
        (ether::HEADER_LEN + self.payload_len()).max(ether::MIN_FRAME_LEN)
    }
}

fn flag(b: bool, mask: u8) -> u8 {
    if b {
        mask
    } else {
        0
    }
}

fn pr_rs(pr: u8, rs: u8) -> Result<u8, EncodeError> {
    if pr > 7 || rs > 7 {
        return Err(EncodeError::Invalid("PR and RS are 3-bit fields (0-7)"));
    }
    Ok(pr << 3 | rs)
}

fn check_pdo(payload: &[u8]) -> Result<u16, EncodeError> {
    if payload.len() > MAX_PDO_PAYLOAD {
        return Err(EncodeError::PayloadTooLarge {
            len: payload.len(),
            max: MAX_PDO_PAYLOAD,
        });
    }
    Ok(payload.len() as u16)
}

fn is_cn(node: u8) -> bool {
    (1..=MAX_CN_NODE).contains(&node)
}

/// Writes `frame` as a whole Ethernet frame into `out` — header to
/// `dst_mac` from `src_mac` with EtherType 0x88AB, the POWERLINK data,
/// zeros up to 60 bytes — and returns its length. Use
/// [`Frame::multicast_mac`] for `dst_mac` except for a PReq (the CN's MAC).
/// Allocates nothing; on error `out` may hold part of the frame.
pub fn encode(
    frame: &Frame<'_>,
    dst_mac: [u8; 6],
    src_mac: [u8; 6],
    out: &mut [u8],
) -> Result<usize, EncodeError> {
    if let Frame::PReq(PReq { payload, .. }) | Frame::PRes(PRes { payload, .. }) = frame {
        check_pdo(payload)?;
    }
    let len = frame.frame_len();
    let data = ether::HEADER_LEN + frame.payload_len();
    if data - ether::HEADER_LEN > MAX_FRAME_PAYLOAD {
        return Err(EncodeError::PayloadTooLarge {
            len: data - ether::HEADER_LEN,
            max: MAX_FRAME_PAYLOAD,
        });
    }
    if out.len() < len {
        return Err(EncodeError::BufferTooSmall {
            need: len,
            have: out.len(),
        });
    }
    let out = &mut out[..len];
    ether::write_header(out, dst_mac, src_mac, None, ETHERTYPE_POWERLINK)
        .expect("the buffer holds the header and the EtherType is above 1500");
    encode_payload(frame, &mut out[ether::HEADER_LEN..data])?;
    out[data..].fill(0);
    Ok(len)
}

/// Writes the frame's POWERLINK data into `out`, which holds exactly
/// [`Frame::payload_len`] bytes.
fn encode_payload(frame: &Frame<'_>, out: &mut [u8]) -> Result<(), EncodeError> {
    out.fill(0);
    out[0] = frame.message_type();
    out[1] = frame.dest();
    out[2] = frame.src();
    match frame {
        Frame::Soc(s) => {
            out[4] = flag(s.mc, SOC_MC) | flag(s.ps, SOC_PS);
            out[6..10].copy_from_slice(&s.net_time.seconds.to_le_bytes());
            out[10..14].copy_from_slice(&s.net_time.nanoseconds.to_le_bytes());
            out[14..22].copy_from_slice(&s.relative_time.to_le_bytes());
        }
        Frame::PReq(p) => {
            if !is_cn(p.node) {
                return Err(EncodeError::Invalid("a PReq goes to a CN (node 1-239)"));
            }
            let size = check_pdo(p.payload)?;
            out[4] = flag(p.ms, FLAG_MS) | flag(p.ea, FLAG_EA) | flag(p.rd, FLAG_RD);
            out[6] = p.pdo_version;
            out[8..10].copy_from_slice(&size.to_le_bytes());
            out[10..].copy_from_slice(p.payload);
        }
        Frame::PRes(p) => {
            if !is_cn(p.node) && p.node != MN_NODE {
                return Err(EncodeError::Invalid(
                    "a PRes comes from a CN (node 1-239) or, as PResMN, the MN (240)",
                ));
            }
            let size = check_pdo(p.payload)?;
            out[3] = p.nmt.0;
            out[4] = flag(p.ms, FLAG_MS) | flag(p.en, FLAG_EN) | flag(p.rd, FLAG_RD);
            out[5] = pr_rs(p.pr, p.rs)?;
            out[6] = p.pdo_version;
            out[8..10].copy_from_slice(&size.to_le_bytes());
            out[10..].copy_from_slice(p.payload);
        }
        Frame::Soa(s) => {
            out[3] = s.nmt.0;
            out[4] = flag(s.ea, FLAG_EA) | flag(s.er, FLAG_ER);
            out[6] = s.service.0;
            out[7] = s.target;
            out[8] = s.epl_version;
        }
        Frame::ASnd(a) => {
            let d = &mut out[ASND_HEADER_LEN..];
            match a.service {
                ASndService::IdentResponse(r) => {
                    out[3] = ServiceId::IDENT_RESPONSE.0;
                    encode_ident(&r, &mut out[ASND_HEADER_LEN..])?;
                }
                ASndService::StatusResponse(s) => {
                    if !s.errors.len().is_multiple_of(ERROR_ENTRY_LEN) {
                        return Err(EncodeError::Invalid(
                            "StatusResponse error entries are 20 bytes each",
                        ));
                    }
                    if s.errors
                        .chunks_exact(ERROR_ENTRY_LEN)
                        .any(|e| e.iter().all(|&x| x == 0))
                    {
                        return Err(EncodeError::Invalid(
                            "an all-zero StatusResponse error entry ends the list; give it a type",
                        ));
                    }
                    d[0] = flag(s.en, FLAG_EN) | flag(s.ec, FLAG_EC);
                    d[1] = pr_rs(s.pr, s.rs)?;
                    d[2] = s.nmt.0;
                    d[6..14].copy_from_slice(&s.static_errors.to_le_bytes());
                    let end = STATUS_RESPONSE_HEADER_LEN + s.errors.len();
                    d[STATUS_RESPONSE_HEADER_LEN..end].copy_from_slice(s.errors);
                    // The terminating all-zero entry is already zero.
                    out[3] = ServiceId::STATUS_RESPONSE.0;
                }
                ASndService::NmtCommand(c) => {
                    d[0] = c.id.0;
                    d[NMT_COMMAND_HEADER_LEN..].copy_from_slice(c.data);
                    out[3] = ServiceId::NMT_COMMAND.0;
                }
                ASndService::Sdo(s) => {
                    s.write(d)?;
                    out[3] = ServiceId::SDO.0;
                }
                ASndService::Other { id, data } => {
                    d.copy_from_slice(data);
                    out[3] = id.0;
                }
            }
        }
    }
    Ok(())
}

fn encode_ident(r: &IdentResponse, d: &mut [u8]) -> Result<(), EncodeError> {
    d[0] = flag(r.en, FLAG_EN) | flag(r.ec, FLAG_EC);
    d[1] = pr_rs(r.pr, r.rs)?;
    d[2] = r.nmt.0;
    d[4] = r.epl_version;
    d[6..10].copy_from_slice(&r.feature_flags.to_le_bytes());
    d[10..12].copy_from_slice(&r.mtu.to_le_bytes());
    d[12..14].copy_from_slice(&r.poll_in_size.to_le_bytes());
    d[14..16].copy_from_slice(&r.poll_out_size.to_le_bytes());
    d[16..20].copy_from_slice(&r.response_time.to_le_bytes());
    d[22..26].copy_from_slice(&r.device_type.to_le_bytes());
    d[26..30].copy_from_slice(&r.vendor_id.to_le_bytes());
    d[30..34].copy_from_slice(&r.product_code.to_le_bytes());
    d[34..38].copy_from_slice(&r.revision.to_le_bytes());
    d[38..42].copy_from_slice(&r.serial.to_le_bytes());
    d[50..54].copy_from_slice(&r.verify_conf_date.to_le_bytes());
    d[54..58].copy_from_slice(&r.verify_conf_time.to_le_bytes());
    Ok(())
}

/// A received POWERLINK frame with its Ethernet addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Received<'a> {
    /// Destination MAC address.
    pub dst_mac: [u8; 6],
    /// Source MAC address.
    pub src_mac: [u8; 6],
    /// The frame.
    pub frame: Frame<'a>,
}

/// Reads a whole Ethernet frame (no preamble, no frame check sequence;
/// one 802.1Q tag allowed). Never panics; error offsets count from the
/// frame's first byte.
pub fn decode(bytes: &[u8]) -> Result<Received<'_>, DecodeError> {
    let eth = ether::parse(bytes).map_err(|e| match e {
        ether::EtherError::Truncated { have, .. } => DecodeError::Malformed {
            offset: have,
            what: "the Ethernet header is cut short",
        },
        _ => DecodeError::Malformed {
            offset: 12,
            what: "the Ethernet type/length field",
        },
    })?;
    match eth.type_or_length {
        ether::TypeOrLength::EtherType(ETHERTYPE_POWERLINK) => {}
        ether::TypeOrLength::EtherType(t) => return Err(DecodeError::NotPowerlink(t)),
        ether::TypeOrLength::Length(l) => return Err(DecodeError::NotPowerlink(l)),
    }
    let header = bytes.len() - eth.payload.len();
    let frame = decode_payload(eth.payload).map_err(|e| match e {
        DecodeError::Malformed { offset, what } => DecodeError::Malformed {
            offset: offset + header,
            what,
        },
        other => other,
    })?;
    Ok(Received {
        dst_mac: eth.dst,
        src_mac: eth.src,
        frame,
    })
}

/// A bounds-checked reader of the POWERLINK data.
struct In<'a>(&'a [u8]);

impl<'a> In<'a> {
    fn need(&self, len: usize, what: &'static str) -> Result<(), DecodeError> {
        if self.0.len() < len {
            Err(DecodeError::Malformed {
                offset: self.0.len(),
                what,
            })
        } else {
            Ok(())
        }
    }
    fn u16(&self, at: usize) -> u16 {
        u16::from_le_bytes([self.0[at], self.0[at + 1]])
    }
    fn u32(&self, at: usize) -> u32 {
        u32::from_le_bytes([self.0[at], self.0[at + 1], self.0[at + 2], self.0[at + 3]])
    }
    fn u64(&self, at: usize) -> u64 {
        let mut b = [0; 8];
        b.copy_from_slice(&self.0[at..at + 8]);
        u64::from_le_bytes(b)
    }
    fn pdo(&self) -> Result<&'a [u8], DecodeError> {
        self.need(PDO_HEADER_LEN, "PReq/PRes header cut short")?;
        let size = usize::from(self.u16(8));
        if size > MAX_PDO_PAYLOAD {
            return Err(DecodeError::Malformed {
                offset: 8,
                what: "Size is over C_DLL_ISOCHR_MAX_PAYL (1490)",
            });
        }
        self.0
            .get(PDO_HEADER_LEN..PDO_HEADER_LEN + size)
            .ok_or(DecodeError::Malformed {
                offset: 8,
                what: "Size runs past the end of the frame",
            })
    }
}

fn malformed(offset: usize, what: &'static str) -> DecodeError {
    DecodeError::Malformed { offset, what }
}

/// Reads the POWERLINK data of a frame (after the Ethernet header,
/// padding allowed). Never panics; error offsets count from its first byte.
pub fn decode_payload(b: &[u8]) -> Result<Frame<'_>, DecodeError> {
    let r = In(b);
    r.need(
        3,
        "the POWERLINK header (type, destination, source) is cut short",
    )?;
    let (mtyp, dest, src) = (b[0] & 0x7f, b[1], b[2]);
    let from_mn = |what| {
        if src == MN_NODE {
            Ok(())
        } else {
            Err(malformed(2, what))
        }
    };
    let to_all = |what| {
        if dest == BROADCAST_NODE {
            Ok(())
        } else {
            Err(malformed(1, what))
        }
    };
    Ok(match mtyp {
        MTYP_SOC => {
            r.need(SOC_LEN, "SoC cut short")?;
            from_mn("a SoC comes from the MN (240)")?;
            to_all("a SoC goes to broadcast (255)")?;
            Frame::Soc(Soc {
                mc: b[4] & SOC_MC != 0,
                ps: b[4] & SOC_PS != 0,
                net_time: NetTime {
                    seconds: r.u32(6),
                    nanoseconds: r.u32(10),
                },
                relative_time: r.u64(14),
            })
        }
        MTYP_PREQ => {
            let payload = r.pdo()?;
            from_mn("a PReq comes from the MN (240)")?;
            if !is_cn(dest) {
                return Err(malformed(1, "a PReq goes to a CN (1-239)"));
            }
            Frame::PReq(PReq {
                node: dest,
                ms: b[4] & FLAG_MS != 0,
                ea: b[4] & FLAG_EA != 0,
                rd: b[4] & FLAG_RD != 0,
                pdo_version: b[6],
                payload,
            })
        }
        MTYP_PRES => {
            let payload = r.pdo()?;
            to_all("a PRes goes to broadcast (255)")?;
            if !is_cn(src) && src != MN_NODE {
                return Err(malformed(
                    2,
                    "a PRes comes from a CN (1-239) or the MN (240)",
                ));
            }
            Frame::PRes(PRes {
                node: src,
                nmt: NmtState(b[3]),
                ms: b[4] & FLAG_MS != 0,
                en: b[4] & FLAG_EN != 0,
                rd: b[4] & FLAG_RD != 0,
                pr: (b[5] >> 3) & 7,
                rs: b[5] & 7,
                pdo_version: b[6],
                payload,
            })
        }
        MTYP_SOA => {
            r.need(9, "SoA cut short")?;
            from_mn("a SoA comes from the MN (240)")?;
            to_all("a SoA goes to broadcast (255)")?;
            Frame::Soa(Soa {
                nmt: NmtState(b[3]),
                ea: b[4] & FLAG_EA != 0,
                er: b[4] & FLAG_ER != 0,
                service: RequestedService(b[6]),
                target: b[7],
                epl_version: b[8],
            })
        }
        MTYP_ASND => {
            r.need(ASND_HEADER_LEN, "ASnd cut short before its ServiceID")?;
            let d = &b[ASND_HEADER_LEN..];
            let service = decode_service(ServiceId(b[3]), d).map_err(|e| match e {
                DecodeError::Malformed { offset, what } => {
                    malformed(offset + ASND_HEADER_LEN, what)
                }
                other => other,
            })?;
            Frame::ASnd(ASnd { dest, src, service })
        }
        other => return Err(DecodeError::Unsupported(other)),
    })
}

fn decode_service(id: ServiceId, d: &[u8]) -> Result<ASndService<'_>, DecodeError> {
    let r = In(d);
    Ok(match id {
        ServiceId::IDENT_RESPONSE => {
            r.need(
                IDENT_RESPONSE_LEN,
                "IdentResponse shorter than its 158 bytes",
            )?;
            ASndService::IdentResponse(IdentResponse {
                en: d[0] & FLAG_EN != 0,
                ec: d[0] & FLAG_EC != 0,
                pr: (d[1] >> 3) & 7,
                rs: d[1] & 7,
                nmt: NmtState(d[2]),
                epl_version: d[4],
                feature_flags: r.u32(6),
                mtu: r.u16(10),
                poll_in_size: r.u16(12),
                poll_out_size: r.u16(14),
                response_time: r.u32(16),
                device_type: r.u32(22),
                vendor_id: r.u32(26),
                product_code: r.u32(30),
                revision: r.u32(34),
                serial: r.u32(38),
                verify_conf_date: r.u32(50),
                verify_conf_time: r.u32(54),
            })
        }
        ServiceId::STATUS_RESPONSE => {
            r.need(STATUS_RESPONSE_HEADER_LEN, "StatusResponse cut short")?;
            let list = &d[STATUS_RESPONSE_HEADER_LEN..];
            let count = list
                .chunks_exact(ERROR_ENTRY_LEN)
                .take_while(|e| e.iter().any(|&x| x != 0))
                .count();
            ASndService::StatusResponse(StatusResponse {
                en: d[0] & FLAG_EN != 0,
                ec: d[0] & FLAG_EC != 0,
                pr: (d[1] >> 3) & 7,
                rs: d[1] & 7,
                nmt: NmtState(d[2]),
                static_errors: r.u64(6),
                errors: &list[..count * ERROR_ENTRY_LEN],
            })
        }
        ServiceId::NMT_COMMAND => {
            r.need(NMT_COMMAND_HEADER_LEN, "NMTCommand cut short")?;
            ASndService::NmtCommand(NmtCommand {
                id: NmtCommandId(d[0]),
                data: &d[NMT_COMMAND_HEADER_LEN..],
            })
        }
        ServiceId::SDO => ASndService::Sdo(Sdo::decode(d)?),
        id => ASndService::Other { id, data: d },
    })
}
