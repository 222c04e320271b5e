//! The concise DCF (device configuration file): the binary list of object
//! dictionary writes that openCONFIGURATOR produces and openPOWERLINK's MN
//! loads (`demo_mn_console -c mnobd.cdc`), read without copying and
//! written into a caller buffer; and [`NetworkConfig`], the MN's view of a
//! network that such a file configures.
//!
//! Why it is here: a user's openCONFIGURATOR project already says how
//! their network runs — cycle length, which nodes exist, what each CN gets
//! written before it may go Operational. Reading the same file lets an MN
//! emulator bring that network up exactly as the reference MN would.
//!
//! The format (all integers little-endian):
//!
//! ```text
//! 0..4      number of entries (u32)
//! per entry 0..2 index (u16) | 2 subindex (u8) | 3..7 data size (u32) | 7.. data
//! ```
//!
//! The MN's own file holds the MN's object dictionary entries, and for each
//! CN `n` an entry 0x1F22/n whose data is that CN's concise DCF, in the same
//! format: the writes the MN's configuration manager sends the CN over SDO,
//! one by one, in file order.

use std::collections::BTreeMap;

use thiserror::Error;

use super::sdo::IndexAddress;
use super::MAX_CN_NODE;

/// Bytes of the entry count.
pub const COUNT_LEN: usize = 4;
/// Bytes of an entry's header (index, subindex, data size).
pub const ENTRY_HEADER_LEN: usize = 7;

/// One entry: write `data` to `addr`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Entry<'a> {
    /// The object written.
    pub addr: IndexAddress,
    /// The value, as the object dictionary stores it (little-endian).
    pub data: &'a [u8],
}

/// Why bytes are not a concise DCF.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum CdcError {
    /// The bytes end inside the count, an entry's header or its data.
    #[error(
        "concise DCF cut short at byte {offset}: {what} (the file holds {len} bytes); \
         export it again from openCONFIGURATOR"
    )]
    Truncated {
        /// Where the missing part starts.
        offset: usize,
        /// What is missing.
        what: &'static str,
        /// Bytes there are.
        len: usize,
    },
    /// Bytes follow the last entry the count announces.
    #[error(
        "concise DCF has {extra} bytes after its {count} entries, from byte {offset}: \
         the entry count in its first 4 bytes is wrong, or the file is not a concise DCF"
    )]
    Trailing {
        /// Where the extra bytes start.
        offset: usize,
        /// How many there are.
        extra: usize,
        /// The entries counted.
        count: u32,
    },
}

/// A concise DCF, checked once and read without copying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Cdc<'a> {
    bytes: &'a [u8],
    count: u32,
}

impl<'a> Cdc<'a> {
    /// Checks that `bytes` is a whole concise DCF: every entry the count
    /// announces is there, and nothing follows the last. Never panics.
    pub fn parse(bytes: &'a [u8]) -> Result<Cdc<'a>, CdcError> {
        let truncated = |offset, what| CdcError::Truncated {
            offset,
            what,
            len: bytes.len(),
        };
        let Some((count, mut rest)) = bytes.split_first_chunk::<COUNT_LEN>() else {
            return Err(truncated(0, "the 4-byte entry count is missing"));
        };
        let count = u32::from_le_bytes(*count);
        for _ in 0..count {
            let at = bytes.len() - rest.len();
            let Some((header, data)) = rest.split_first_chunk::<ENTRY_HEADER_LEN>() else {
                return Err(truncated(
                    at,
                    "an entry's 7-byte header (index, subindex, size) is missing",
                ));
            };
            let size = u32::from_le_bytes([header[3], header[4], header[5], header[6]]);
            let size = usize::try_from(size).unwrap_or(usize::MAX);
            if data.len() < size {
                return Err(truncated(
                    at + ENTRY_HEADER_LEN,
                    "an entry's data is shorter than its size field says",
                ));
            }
            rest = &data[size..];
        }
        if !rest.is_empty() {
            return Err(CdcError::Trailing {
                offset: bytes.len() - rest.len(),
                extra: rest.len(),
                count,
            });
        }
        Ok(Cdc { bytes, count })
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether the file has no entry.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The file's bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.bytes
    }

    /// The entries, in file order.
    pub fn entries(&self) -> Entries<'a> {
        Entries {
            rest: &self.bytes[COUNT_LEN..],
        }
    }

    /// The data of the last entry that writes `addr`.
    pub fn get(&self, addr: IndexAddress) -> Option<&'a [u8]> {
        self.entries()
            .filter(|e| e.addr == addr)
            .last()
            .map(|e| e.data)
    }
}

/// The entries of a [`Cdc`], in file order.
#[derive(Debug, Clone)]
pub struct Entries<'a> {
    rest: &'a [u8],
}

impl<'a> Iterator for Entries<'a> {
    type Item = Entry<'a>;

    fn next(&mut self) -> Option<Entry<'a>> {
        // Cdc::parse checked every length.
        let (h, data) = self.rest.split_first_chunk::<ENTRY_HEADER_LEN>()?;
        let size = u32::from_le_bytes([h[3], h[4], h[5], h[6]]) as usize;
        let (data, rest) = data.split_at(size);
        self.rest = rest;
        Some(Entry {
            addr: IndexAddress::new(u16::from_le_bytes([h[0], h[1]]), h[2]),
            data,
        })
    }
}

/// Bytes of the concise DCF holding `entries`.
pub fn written_len(entries: &[Entry<'_>]) -> usize {
    COUNT_LEN
        + entries
            .iter()
            .map(|e| ENTRY_HEADER_LEN + e.data.len())
            .sum::<usize>()
}

/// Writes the concise DCF of `entries` into `out` and returns its length
/// ([`written_len`]). Fails only when `out` is too short.
pub fn write(entries: &[Entry<'_>], out: &mut [u8]) -> Result<usize, super::EncodeError> {
    let len = written_len(entries);
    if out.len() < len {
        return Err(super::EncodeError::BufferTooSmall {
            need: len,
            have: out.len(),
        });
    }
    let count = u32::try_from(entries.len())
        .map_err(|_| super::EncodeError::Invalid("a concise DCF holds at most 2^32-1 entries"))?;
    out[..COUNT_LEN].copy_from_slice(&count.to_le_bytes());
    let mut at = COUNT_LEN;
    for e in entries {
        let size = u32::try_from(e.data.len()).map_err(|_| {
            super::EncodeError::Invalid("a concise DCF entry holds at most 2^32-1 bytes")
        })?;
        out[at..at + 2].copy_from_slice(&e.addr.index.to_le_bytes());
        out[at + 2] = e.addr.subindex;
        out[at + 3..at + 7].copy_from_slice(&size.to_le_bytes());
        at += ENTRY_HEADER_LEN;
        out[at..at + e.data.len()].copy_from_slice(e.data);
        at += e.data.len();
    }
    Ok(len)
}

/// 0x1F81/n NodeAssignment bits (openPOWERLINK's `NMT_NODEASSIGN_*`).
pub mod assign {
    /// The node exists.
    pub const NODE_EXISTS: u32 = 0x0000_0001;
    /// The node is a CN.
    pub const NODE_IS_CN: u32 = 0x0000_0002;
    /// The MN may start the CN (NMTStartNode) on its own.
    pub const START_CN: u32 = 0x0000_0004;
    /// The CN is mandatory: the MN does not go Operational without it.
    pub const MANDATORY_CN: u32 = 0x0000_0008;
    /// Keep-alive: the MN checks the CN's state.
    pub const KEEPALIVE: u32 = 0x0000_0010;
    /// Check the CN's software version.
    pub const SW_VERSION_CHECK: u32 = 0x0000_0020;
    /// Update the CN's software.
    pub const SW_UPDATE: u32 = 0x0000_0040;
    /// The CN is async-only (never polled).
    pub const ASYNC_ONLY: u32 = 0x0000_0100;
    /// The CN is polled in a multiplexed slot.
    pub const MULTIPLEXED: u32 = 0x0000_0200;
    /// The CN answers with PRes chaining (PollResponse Chaining).
    pub const PRES_CHAINING: u32 = 0x0000_4000;
    /// The assignment is valid (set once the MN's configuration is whole).
    pub const VALID: u32 = 0x8000_0000;
}

/// Why a concise DCF is not a network an MN can run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ConfigError {
    /// The file (or a CN's DCF inside it) is not a concise DCF.
    #[error("{0}")]
    Cdc(#[from] CdcError),
    /// A CN's 0x1F22/n is not a concise DCF.
    #[error("the concise DCF of CN {node} (0x1F22/{node}) is not valid: {error}")]
    CnDcf {
        /// The CN.
        node: u8,
        /// What is wrong with its DCF.
        error: CdcError,
    },
    /// An object holds a value of the wrong size.
    #[error("{addr} holds {len} bytes; {what} is a {want}-byte unsigned integer: fix that entry")]
    Size {
        /// The object.
        addr: IndexAddress,
        /// Bytes it holds.
        len: usize,
        /// What the object is.
        what: &'static str,
        /// Bytes it must hold.
        want: usize,
    },
}

/// What the MN's own configuration sets for one CN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CnConfig<'a> {
    /// The CN's node id.
    pub node: u8,
    /// 0x1F81/n NodeAssignment (bits in [`assign`]).
    pub assignment: u32,
    /// 0x1F22/n: the writes its configuration manager sends the CN.
    pub dcf: Option<Cdc<'a>>,
    /// 0x1F26/n: the expected configuration date (0 when absent).
    pub conf_date: u32,
    /// 0x1F27/n: the expected configuration time (0 when absent).
    pub conf_time: u32,
    /// 0x1F84/n: the expected device type (`None` or 0: not checked).
    pub device_type: Option<u32>,
    /// 0x1F92/n: the PRes timeout (ns).
    pub pres_timeout_ns: Option<u32>,
    /// 0x1C09/n: the MN's loss-of-PRes threshold for this CN.
    pub loss_pres_threshold: Option<u32>,
    /// PReq payload bytes the MN's TPDO mapping (0x1A0x, sent to this CN
    /// by 0x180x/1) fills, if it maps any.
    pub preq_payload: Option<usize>,
    /// PRes payload bytes the MN's RPDO mapping (0x160x, received from
    /// this CN by 0x140x/1) reads, if it maps any.
    pub pres_payload: Option<usize>,
}

impl CnConfig<'_> {
    /// 0x1F81/n bit 3: the MN waits for this CN.
    pub fn mandatory(&self) -> bool {
        self.assignment & assign::MANDATORY_CN != 0
    }

    /// 0x1F81/n bit 14: the CN is configured for PRes chaining.
    pub fn chaining(&self) -> bool {
        self.assignment & assign::PRES_CHAINING != 0
    }

    /// 0x1F81/n bit 8: the CN is never polled.
    pub fn async_only(&self) -> bool {
        self.assignment & assign::ASYNC_ONLY != 0
    }
}

/// The MN's view of the network a concise DCF configures, after the
/// file's writes (the last write of an object wins, as in the MN's object
/// dictionary).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetworkConfig<'a> {
    /// 0x1006: the cycle length (µs).
    pub cycle_len_us: Option<u32>,
    /// 0x1F8A/2: the asynchronous slot timeout (ns).
    pub async_slot_timeout_ns: Option<u32>,
    /// The CNs whose 0x1F81/n has bit 0 (node exists), by node id.
    pub cns: Vec<CnConfig<'a>>,
}

impl<'a> NetworkConfig<'a> {
    /// Reads the MN's concise DCF. Errors name the object or the byte
    /// offset to fix.
    pub fn from_cdc(bytes: &'a [u8]) -> Result<NetworkConfig<'a>, ConfigError> {
        let cdc = Cdc::parse(bytes)?;
        let od: BTreeMap<IndexAddress, &'a [u8]> =
            cdc.entries().map(|e| (e.addr, e.data)).collect();
        let u32_at =
            |index: u16, sub: u8, what: &'static str| -> Result<Option<u32>, ConfigError> {
                let addr = IndexAddress::new(index, sub);
                od.get(&addr)
                    .map(|d| {
                        <[u8; 4]>::try_from(*d)
                            .map(u32::from_le_bytes)
                            .map_err(|_| ConfigError::Size {
                                addr,
                                len: d.len(),
                                what,
                                want: 4,
                            })
                    })
                    .transpose()
            };
        let (preq, pres) = pdo_sizes(&od)?;
        let mut cns = Vec::new();
        for node in 1..=MAX_CN_NODE {
            let Some(assignment) = u32_at(0x1F81, node, "a NodeAssignment")? else {
                continue;
            };
            if assignment & assign::NODE_EXISTS == 0 {
                continue;
            }
            let dcf = od
                .get(&IndexAddress::new(0x1F22, node))
                .map(|d| Cdc::parse(d).map_err(|error| ConfigError::CnDcf { node, error }))
                .transpose()?;
            cns.push(CnConfig {
                node,
                assignment,
                dcf,
                conf_date: u32_at(0x1F26, node, "an expected configuration date")?.unwrap_or(0),
                conf_time: u32_at(0x1F27, node, "an expected configuration time")?.unwrap_or(0),
                device_type: u32_at(0x1F84, node, "a device type")?,
                pres_timeout_ns: u32_at(0x1F92, node, "a PRes timeout")?,
                loss_pres_threshold: u32_at(0x1C09, node, "a loss-of-PRes threshold")?,
                preq_payload: preq.get(&node).copied(),
                pres_payload: pres.get(&node).copied(),
            });
        }
        Ok(NetworkConfig {
            cycle_len_us: u32_at(0x1006, 0, "the cycle length")?,
            async_slot_timeout_ns: u32_at(0x1F8A, 2, "the asynchronous slot timeout")?,
            cns,
        })
    }

    /// The CN `node`, if the file assigns it.
    pub fn cn(&self, node: u8) -> Option<&CnConfig<'a>> {
        self.cns.iter().find(|c| c.node == node)
    }
}

/// Payload bytes per node of the MN's TPDOs (0x1A00.. with 0x1800../1)
/// and RPDOs (0x1600.. with 0x1400../1): the end of the furthest mapped
/// bit, in whole bytes, of the first 0x1x0y/0 entries.
type PdoSizes = (BTreeMap<u8, usize>, BTreeMap<u8, usize>);

fn pdo_sizes(od: &BTreeMap<IndexAddress, &[u8]>) -> Result<PdoSizes, ConfigError> {
    let mut out = (BTreeMap::new(), BTreeMap::new());
    for (comm, mapping, sizes) in [
        (0x1800u16, 0x1A00u16, &mut out.0),
        (0x1400, 0x1600, &mut out.1),
    ] {
        for ch in 0..=0xFFu16 {
            let Some(count) = od.get(&IndexAddress::new(mapping + ch, 0)) else {
                continue;
            };
            let count = usize::from(count.first().copied().unwrap_or(0));
            let node_addr = IndexAddress::new(comm + ch, 1);
            let Some(node) = od.get(&node_addr) else {
                continue;
            };
            let [node] = **node else {
                return Err(ConfigError::Size {
                    addr: node_addr,
                    len: node.len(),
                    what: "a PDO channel's node id",
                    want: 1,
                });
            };
            let mut bits = 0u64;
            for sub in 1..=count.min(254) as u8 {
                let addr = IndexAddress::new(mapping + ch, sub);
                let Some(entry) = od.get(&addr) else {
                    continue;
                };
                let entry = <[u8; 8]>::try_from(*entry).map_err(|_| ConfigError::Size {
                    addr,
                    len: entry.len(),
                    what: "a PDO mapping entry",
                    want: 8,
                })?;
                let e = u64::from_le_bytes(entry);
                let offset = (e >> 32) & 0xFFFF;
                let length = e >> 48;
                bits = bits.max(offset + length);
            }
            if count > 0 {
                let size = sizes.entry(node).or_insert(0);
                *size = (*size).max((bits as usize).div_ceil(8));
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
#[path = "cdc_tests.rs"]
mod tests;
