//! Ethernet framing, without I/O: reading a received frame into its
//! addresses, optional 802.1Q tag and payload ([`parse`]), and writing a
//! header, with or without a tag, into a caller buffer ([`write_header`],
//! [`pad`]). UADP over raw Ethernet uses it, and POWERLINK will.
//!
//! ```text
//! destination 6 | source 6 | [0x8100 | PCP 3 bits, DEI 1, VID 12] | type/length 2 | payload
//! ```
//!
//! The two-byte field after the addresses (and the tag) is an **EtherType**
//! when it is above 1500 (Ethernet II: UADP's 0xB62C, POWERLINK's 0x88AB)
//! and an **IEEE 802.3 length** when it is 1500 or less: then the payload
//! is that many bytes, and what follows is padding. The reference OPC UA
//! implementation (open62541 1.4) sends its UADP frames with the length
//! form (`tutorial_eth.pcap`: type/length 0x0027, 39 bytes of message) and
//! accepts both; jitterlab sends EtherType 0xB62C, as Part 14 specifies,
//! and accepts both. A frame sent with an EtherType has no length, so the
//! padding a NIC adds to reach the 60-byte minimum stays in the payload;
//! the UADP [`Reader`](crate::uadp::Reader) ignores bytes after its fields
//! for that reason. Lengths here exclude the 4-byte frame check sequence,
//! which the NIC adds and strips.
//!
//! Everything works on borrowed slices and returns `Copy` errors: the
//! real-time send and receive paths allocate nothing (design rule 2).
//!
//! The design rules cited here are in `docs/design.md`.

use thiserror::Error;

/// The EtherType of UADP (IANA: OPC UA).
pub const ETHERTYPE_UADP: u16 = 0xB62C;
/// The EtherType of an 802.1Q VLAN tag (its TPID).
pub const ETHERTYPE_VLAN: u16 = 0x8100;
/// Type/length values up to this are IEEE 802.3 lengths.
pub const MAX_8023_LENGTH: u16 = 1500;
/// Bytes of a header without a tag.
pub const HEADER_LEN: usize = 14;
/// Bytes of a header with an 802.1Q tag.
pub const VLAN_HEADER_LEN: usize = 18;
/// The shortest frame on the wire, without the frame check sequence.
pub const MIN_FRAME_LEN: usize = 60;

/// An 802.1Q tag's control information.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct VlanTag {
    /// Priority code point, 0–7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id, 0–4095.
    pub vid: u16,
}

impl VlanTag {
    /// The 16-bit tag control information.
    pub fn tci(self) -> u16 {
        u16::from(self.pcp & 0x07) << 13 | u16::from(self.dei) << 12 | (self.vid & 0x0fff)
    }

    /// The tag of tag control information `tci`.
    pub fn from_tci(tci: u16) -> VlanTag {
        VlanTag {
            pcp: (tci >> 13) as u8,
            dei: tci & 0x1000 != 0,
            vid: tci & 0x0fff,
        }
    }
}

/// What the type/length field says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TypeOrLength {
    /// An EtherType (above 1500): the payload runs to the end of the frame.
    EtherType(u16),
    /// An IEEE 802.3 length (1500 or less): the payload's length.
    Length(u16),
}

/// A received frame, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Destination MAC address.
    pub dst: [u8; 6],
    /// Source MAC address.
    pub src: [u8; 6],
    /// The 802.1Q tag, when there is one.
    pub vlan: Option<VlanTag>,
    /// The type/length field after the addresses (and tag).
    pub type_or_length: TypeOrLength,
    /// The payload: the 802.3 length's bytes, or the rest of the frame.
    pub payload: &'a [u8],
}

impl Frame<'_> {
    /// Whether the frame may carry UADP: EtherType 0xB62C, or the 802.3
    /// length form the reference implementation sends.
    pub fn may_be_uadp(&self) -> bool {
        matches!(
            self.type_or_length,
            TypeOrLength::EtherType(ETHERTYPE_UADP) | TypeOrLength::Length(_)
        )
    }
}

/// Why a frame could not be read or a header written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum EtherError {
    /// The frame ends inside its header.
    #[error("Ethernet frame of {have} bytes ends inside its header ({need} bytes)")]
    Truncated {
        /// Bytes the header needs.
        need: usize,
        /// Bytes the frame has.
        have: usize,
    },
    /// The 802.3 length runs past the end of the frame.
    #[error("IEEE 802.3 length {length} runs past the frame's {have} payload bytes")]
    LengthOverrun {
        /// The length field.
        length: u16,
        /// Bytes after the header.
        have: usize,
    },
    /// The caller's buffer is too short.
    #[error("the buffer holds {have} bytes; the frame needs {need}")]
    BufferTooSmall {
        /// Bytes needed.
        need: usize,
        /// Bytes available.
        have: usize,
    },
    /// A tag value out of range.
    #[error("VLAN id {vid} or priority {pcp} out of range (id 0-4095, priority 0-7)")]
    BadTag {
        /// The VLAN id given.
        vid: u16,
        /// The priority given.
        pcp: u8,
    },
    /// An EtherType that would be read as an 802.3 length.
    #[error("EtherType {0:#06x} is 1500 or less, which receivers read as an IEEE 802.3 length")]
    BadEtherType(u16),
}

fn mac(bytes: &[u8]) -> [u8; 6] {
    let mut m = [0; 6];
    m.copy_from_slice(&bytes[..6]);
    m
}

fn be16(bytes: &[u8], at: usize) -> u16 {
    u16::from_be_bytes([bytes[at], bytes[at + 1]])
}

/// Reads a frame (from the destination address; no preamble, no frame
/// check sequence). One 802.1Q tag is read; a type/length of 1500 or less
/// is a length and bounds the payload.
pub fn parse(frame: &[u8]) -> Result<Frame<'_>, EtherError> {
    if frame.len() < HEADER_LEN {
        return Err(EtherError::Truncated {
            need: HEADER_LEN,
            have: frame.len(),
        });
    }
    let (vlan, at) = if be16(frame, 12) == ETHERTYPE_VLAN {
        if frame.len() < VLAN_HEADER_LEN {
            return Err(EtherError::Truncated {
                need: VLAN_HEADER_LEN,
                have: frame.len(),
            });
        }
        (Some(VlanTag::from_tci(be16(frame, 14))), 16)
    } else {
        (None, 12)
    };
    let tl = be16(frame, at);
    let rest = &frame[at + 2..];
    let (type_or_length, payload) = if tl <= MAX_8023_LENGTH {
        let payload = rest
            .get(..usize::from(tl))
            .ok_or(EtherError::LengthOverrun {
                length: tl,
                have: rest.len(),
            })?;
        (TypeOrLength::Length(tl), payload)
    } else {
        (TypeOrLength::EtherType(tl), rest)
    };
    Ok(Frame {
        dst: mac(&frame[0..6]),
        src: mac(&frame[6..12]),
        vlan,
        type_or_length,
        payload,
    })
}

/// Writes a header with EtherType `ethertype` (above 1500) into the start of
/// `out`, tagged when `vlan` is given, and returns its length (14 or 18):
/// the payload goes right after it.
pub fn write_header(
    out: &mut [u8],
    dst: [u8; 6],
    src: [u8; 6],
    vlan: Option<VlanTag>,
    ethertype: u16,
) -> Result<usize, EtherError> {
    if ethertype <= MAX_8023_LENGTH {
        return Err(EtherError::BadEtherType(ethertype));
    }
    let len = if vlan.is_some() {
        VLAN_HEADER_LEN
    } else {
        HEADER_LEN
    };
    let Some(h) = out.get_mut(..len) else {
        return Err(EtherError::BufferTooSmall {
            need: len,
            have: out.len(),
        });
    };
    h[0..6].copy_from_slice(&dst);
    h[6..12].copy_from_slice(&src);
    let mut at = 12;
    if let Some(tag) = vlan {
        if tag.vid > 0x0fff || tag.pcp > 7 {
            return Err(EtherError::BadTag {
                vid: tag.vid,
                pcp: tag.pcp,
            });
        }
        h[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        h[14..16].copy_from_slice(&tag.tci().to_be_bytes());
        at = 16;
    }
    h[at..at + 2].copy_from_slice(&ethertype.to_be_bytes());
    Ok(len)
}

/// Zero-fills `buf` from `len` up to the 60-byte minimum frame and returns
/// the frame's new length (`len` when it is already long enough). A veth
/// pair does not pad; a real NIC does, so padding is asked for, not forced.
pub fn pad(buf: &mut [u8], len: usize) -> Result<usize, EtherError> {
    if len >= MIN_FRAME_LEN {
        return Ok(len);
    }
    let Some(tail) = buf.get_mut(len..MIN_FRAME_LEN) else {
        return Err(EtherError::BufferTooSmall {
            need: MIN_FRAME_LEN,
            have: buf.len(),
        });
    };
    tail.fill(0);
    Ok(MIN_FRAME_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DST: [u8; 6] = [0x01, 0x00, 0x5e, 0x00, 0x00, 0x01];
    const SRC: [u8; 6] = [0x7a, 0x14, 0xff, 0x69, 0xe5, 0xc7];

    #[test]
    fn untagged_header_round_trips_with_the_uadp_ethertype() {
        let mut buf = [0u8; 64];
        let n = write_header(&mut buf, DST, SRC, None, ETHERTYPE_UADP).unwrap();
        assert_eq!(n, 14);
        assert_eq!(
            buf[..14],
            [1, 0, 0x5e, 0, 0, 1, 0x7a, 0x14, 0xff, 0x69, 0xe5, 0xc7, 0xb6, 0x2c]
        );
        buf[14..17].copy_from_slice(&[0xf1, 0x01, 0x02]);
        let f = parse(&buf[..17]).unwrap();
        assert_eq!(f.dst, DST);
        assert_eq!(f.src, SRC);
        assert_eq!(f.vlan, None);
        assert_eq!(f.type_or_length, TypeOrLength::EtherType(ETHERTYPE_UADP));
        assert_eq!(f.payload, &[0xf1, 0x01, 0x02]);
        assert!(f.may_be_uadp());
    }

    #[test]
    fn tagged_header_carries_priority_dei_and_vid() {
        let mut buf = [0u8; 18];
        let tag = VlanTag {
            pcp: 5,
            dei: true,
            vid: 0x123,
        };
        let n = write_header(&mut buf, DST, SRC, Some(tag), ETHERTYPE_UADP).unwrap();
        assert_eq!(n, 18);
        assert_eq!(buf[12..18], [0x81, 0x00, 0xb1, 0x23, 0xb6, 0x2c]);
        let f = parse(&buf).unwrap();
        assert_eq!(f.vlan, Some(tag));
        assert_eq!(f.type_or_length, TypeOrLength::EtherType(ETHERTYPE_UADP));
        assert!(f.payload.is_empty());
    }

    #[test]
    fn an_8023_length_bounds_the_payload_and_drops_the_padding() {
        let mut frame = vec![0u8; 60];
        frame[..12].copy_from_slice(&[DST, SRC].concat());
        frame[12..14].copy_from_slice(&3u16.to_be_bytes());
        frame[14..17].copy_from_slice(&[9, 8, 7]);
        let f = parse(&frame).unwrap();
        assert_eq!(f.type_or_length, TypeOrLength::Length(3));
        assert_eq!(f.payload, &[9, 8, 7]);
        assert!(f.may_be_uadp());
        // 1500 is still a length, 1501 is not.
        frame[12..14].copy_from_slice(&1500u16.to_be_bytes());
        assert_eq!(
            parse(&frame),
            Err(EtherError::LengthOverrun {
                length: 1500,
                have: 46
            })
        );
        frame[12..14].copy_from_slice(&1501u16.to_be_bytes());
        assert_eq!(
            parse(&frame).unwrap().type_or_length,
            TypeOrLength::EtherType(1501)
        );
        assert!(!parse(&frame).unwrap().may_be_uadp());
    }

    #[test]
    fn short_frames_and_buffers_are_errors_not_panics() {
        for len in 0..14 {
            assert_eq!(
                parse(&[0u8; 14][..len]),
                Err(EtherError::Truncated {
                    need: 14,
                    have: len
                })
            );
        }
        let mut tagged = [0u8; 17];
        tagged[12..14].copy_from_slice(&ETHERTYPE_VLAN.to_be_bytes());
        assert_eq!(
            parse(&tagged),
            Err(EtherError::Truncated { need: 18, have: 17 })
        );
        let mut small = [0u8; 17];
        assert_eq!(
            write_header(
                &mut small,
                DST,
                SRC,
                Some(VlanTag::default()),
                ETHERTYPE_UADP
            ),
            Err(EtherError::BufferTooSmall { need: 18, have: 17 })
        );
        assert_eq!(
            write_header(&mut small, DST, SRC, None, 0x0027),
            Err(EtherError::BadEtherType(0x27))
        );
        let bad = VlanTag {
            pcp: 8,
            dei: false,
            vid: 1,
        };
        assert_eq!(
            write_header(&mut [0u8; 18], DST, SRC, Some(bad), ETHERTYPE_UADP),
            Err(EtherError::BadTag { vid: 1, pcp: 8 })
        );
        assert_eq!(
            EtherError::BadEtherType(0x27).to_string(),
            "EtherType 0x0027 is 1500 or less, which receivers read as an IEEE 802.3 length"
        );
    }

    #[test]
    fn pad_fills_zeros_to_sixty_bytes_on_request() {
        let mut buf = [0xffu8; 64];
        assert_eq!(pad(&mut buf, 53), Ok(60));
        assert_eq!(buf[53..60], [0; 7]);
        assert_eq!(buf[52], 0xff);
        assert_eq!(buf[60], 0xff);
        assert_eq!(pad(&mut buf, 60), Ok(60));
        assert_eq!(pad(&mut buf, 61), Ok(61));
        assert_eq!(
            pad(&mut [0u8; 59], 20),
            Err(EtherError::BufferTooSmall { need: 60, have: 59 })
        );
    }
}
