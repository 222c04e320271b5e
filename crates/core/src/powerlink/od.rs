//! The object dictionary (OD) of an emulated controlled node: the
//! communication profile a POWERLINK managing node's configuration manager
//! reads and writes over SDO (EPSG DS 301, chapter 6 and appendix 3), and
//! the digital inputs and outputs the PDO mappings point to (CiA 401's
//! 0x6000 and 0x6200).
//!
//! # Why an OD at all
//!
//! openPOWERLINK's MN brings no CN to ReadyToOperate without writing its
//! OD first: it always writes 0x1006, and with a concise DCF it writes the
//! PDO mappings, the loss-of-frame thresholds and the configuration stamp
//! 0x1020 (captures README, rules 20–21). The CN must store the values,
//! answer with the reference's abort codes where it refuses, and *apply*
//! them: the TPDO mapping shapes the PRes payload, the RPDO mapping sends
//! the PReq payload into 0x6200, 0x1C0B/0x1C0D/0x1C14/0x1006 drive the
//! loss-of-frame counters ([`super::cn`]).
//!
//! # What is in it
//!
//! | index | sub | type | access | meaning |
//! |---|---|---|---|---|
//! | 0x1000 | 0 | u32 | ro | device type (identity) |
//! | 0x1001 | 0 | u8 | ro | error register |
//! | 0x1006 | 0 | u32 | rw | cycle length, µs (0: loss of SoC not watched) |
//! | 0x1010 | 1 | u32 | rw | store all parameters: write "save" (0x65766173) |
//! | 0x1011 | 1 | u32 | rw | restore defaults: write "load" (0x64616F6C), applied at the next reset |
//! | 0x1018 | 1–4 | u32 | ro | vendor, product, revision, serial (identity) |
//! | 0x1020 | 1–2 | u32 | rw | verify configuration date, time |
//! | 0x1400 / 0x1800 | 1–2 | u8 | rw | RPDO / TPDO node id, mapping version |
//! | 0x1600 / 0x1A00 | 0 | u8 | rw | RPDO / TPDO entries mapped (0–254) |
//! | 0x1600 / 0x1A00 | 1–254 | u64 | rw | entry: index, subindex, bit offset, bit length |
//! | 0x1C0B / 0x1C0D | 1–3 | u32 | rw, ro, rw | loss of SoC / PReq: cumulative, threshold counter, threshold |
//! | 0x1C14 | 0 | u32 | rw | loss of frame tolerance, ns |
//! | 0x1F82 | 0 | u32 | ro | feature flags |
//! | 0x1F98 | 1–9 | u16/u32/u8 | ro/rw | cycle timing: /3 PResMaxLatency, /4 PReqActPayloadLimit, /5 PResActPayloadLimit, /8 AsyncMTU … |
//! | 0x2000 | 0 | domain | rw | a scratch domain of up to [`DOMAIN_MAX`] bytes, for segmented transfers |
//! | 0x6000 | 1–254 | u8 | ro | digital inputs (the TPDO source): output k looped back, else the node id |
//! | 0x6200 | 1–254 | u8 | rw | digital outputs (the RPDO sink) |
//!
//! Sub-index 0 of every record and array says how many sub-indices follow
//! (read-only, except for the PDO mappings). Defaults are the demo CN's
//! (`CiA401_CN`): thresholds 15 and 15, tolerance 100 000 ns, payload
//! limits 36, except 0x1010/0x1011, which the demo CN lacks: this OD can
//! store its configuration, so that a restarted CN reports its stored
//! 0x1020 and the MN skips the download, as with a real device.
//!
//! # Writes, reads, aborts
//!
//! [`Od::write`] checks in DS 301's order: the object (0x06020000), the
//! sub-index (0x06090011), the access (0x06010002 read-only), the length
//! (0x06070010), then the value (mappings: 0x06040041 an object that
//! cannot be mapped, 0x06040042 more bytes than the payload limit;
//! 0x1010/0x1011: 0x08000020 a wrong signature). [`Od::read`] answers the
//! value in its own size.
//!
//! Every value lives in a vector made by [`Od::new`]: reads, writes and
//! the PDO copies allocate nothing (design rule 2).
//!
//! The design rules cited here are in `docs/design.md`.

use std::sync::Arc;

use super::sdo::AbortCode;

/// The scratch domain 0x2000's largest size, bytes.
pub const DOMAIN_MAX: usize = 1024;
/// The most entries one PDO mapping takes.
pub const MAPPING_ENTRIES: u8 = 254;
/// "save", little-endian: the signature 0x1010/1 takes.
pub const SAVE: u32 = 0x6576_6173;
/// "load", little-endian: the signature 0x1011/1 takes.
pub const LOAD: u32 = 0x6461_6F6C;

/// The asynchronous MTU an emulated CN announces: C_DLL_MIN_ASYNC_MTU.
pub const ASYNC_MTU: u16 = 300;

/// The smallest PReq/PRes payload limit (0x1F98/4, /5) a CN takes: the
/// PDO bytes of a minimum (60-byte) frame.
pub const PAYLOAD_LIMIT_MIN: u64 = 36;

/// Object indices the emulator applies.
pub mod index {
    /// Device type.
    pub const DEVICE_TYPE: u16 = 0x1000;
    /// Error register.
    pub const ERROR_REGISTER: u16 = 0x1001;
    /// Cycle length, µs.
    pub const CYCLE_LEN: u16 = 0x1006;
    /// Store parameters.
    pub const STORE: u16 = 0x1010;
    /// Restore default parameters.
    pub const RESTORE: u16 = 0x1011;
    /// Identity.
    pub const IDENTITY: u16 = 0x1018;
    /// Verify configuration (date, time).
    pub const VERIFY_CONF: u16 = 0x1020;
    /// RPDO communication parameters.
    pub const RPDO_COMM: u16 = 0x1400;
    /// RPDO mapping.
    pub const RPDO_MAP: u16 = 0x1600;
    /// TPDO communication parameters.
    pub const TPDO_COMM: u16 = 0x1800;
    /// TPDO mapping.
    pub const TPDO_MAP: u16 = 0x1A00;
    /// Loss of SoC error counters.
    pub const LOSS_SOC: u16 = 0x1C0B;
    /// Loss of PReq error counters.
    pub const LOSS_PREQ: u16 = 0x1C0D;
    /// Loss of frame tolerance, ns.
    pub const LOSS_TOLERANCE: u16 = 0x1C14;
    /// Feature flags.
    pub const FEATURE_FLAGS: u16 = 0x1F82;
    /// Cycle timing.
    pub const CYCLE_TIMING: u16 = 0x1F98;
    /// The scratch domain.
    pub const DOMAIN: u16 = 0x2000;
    /// Digital inputs.
    pub const INPUTS: u16 = 0x6000;
    /// Digital outputs.
    pub const OUTPUTS: u16 = 0x6200;
}

/// Abort: the parameters of the mapping are incompatible (0x06040041, an
/// object that cannot be mapped).
pub const NOT_MAPPABLE: AbortCode = AbortCode::NOT_MAPPABLE;
/// Abort: the mapped objects exceed the PDO length (0x06040042).
pub const PDO_TOO_LONG: AbortCode = AbortCode::PDO_TOO_LONG;
/// Abort: data cannot be transferred or stored (0x08000020: a wrong
/// store or restore signature).
pub const NOT_STORED: AbortCode = AbortCode::CANNOT_TRANSFER;

/// The identity a CN reports in 0x1000, 0x1018 and its IdentResponse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct Identity {
    /// Device type (0x1000): CiA 401 digital I/O by default.
    pub device_type: u32,
    /// Vendor id (0x1018/1).
    pub vendor: u32,
    /// Product code (0x1018/2).
    pub product: u32,
    /// Revision number (0x1018/3).
    pub revision: u32,
    /// Serial number (0x1018/4); `None`: the node id.
    pub serial: Option<u32>,
}

impl Default for Identity {
    fn default() -> Self {
        Identity {
            device_type: 0x000F_0191,
            vendor: 0,
            product: 0,
            revision: 0x0001_0000,
            serial: None,
        }
    }
}

impl Identity {
    /// The fields [`Identity::parse`] takes, in the order of its errors.
    pub const FIELDS: [&'static str; 5] =
        ["vendor", "product", "revision", "serial", "device-type"];

    /// Parses `vendor=0x2a,product=7,revision=0x10000,serial=5,device-type=0xf0191`
    /// (any of the fields, in any order; numbers decimal or 0x hex, 32
    /// bits) over the defaults; the error says what to fix.
    pub fn parse(list: &str) -> Result<Identity, String> {
        let mut id = Identity::default();
        let mut seen = [false; 5];
        for item in list.split(',') {
            let item = item.trim();
            if item.is_empty() {
                return Err(format!(
                    "{list:?} has an empty item: give key=value pairs separated by commas, e.g. vendor=0x2a,product=7"
                ));
            }
            let Some((key, value)) = item.split_once('=') else {
                return Err(format!("{item:?} has no value: write {item}=NUMBER"));
            };
            let key = key.trim();
            let Some(k) = Self::FIELDS.iter().position(|f| *f == key) else {
                return Err(format!(
                    "{key:?} is not an identity field: use vendor, product, revision, serial or device-type"
                ));
            };
            if std::mem::replace(&mut seen[k], true) {
                return Err(format!("{key} is given twice"));
            }
            let value = value.trim();
            let n = match value
                .strip_prefix("0x")
                .or_else(|| value.strip_prefix("0X"))
            {
                Some(hex) => u32::from_str_radix(hex, 16),
                None => value.parse::<u32>(),
            }
            .map_err(|_| {
                format!("{key}={value}: not a 32-bit number; write it in decimal or as 0x hex")
            })?;
            match k {
                0 => id.vendor = n,
                1 => id.product = n,
                2 => id.revision = n,
                3 => id.serial = Some(n),
                _ => id.device_type = n,
            }
        }
        Ok(id)
    }
}

/// How an entry's value is held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// An unsigned integer of this many bytes (1, 2, 4 or 8).
    Int(u8),
    /// The scratch domain.
    Domain,
}

/// Who may read and write an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    ReadOnly,
    ReadWrite,
}

/// One sub-index: where its value is and what it takes.
#[derive(Debug, Clone, Copy)]
struct Entry {
    index: u16,
    sub: u8,
    kind: Kind,
    access: Access,
    default: u64,
}

/// The entries, sorted by (index, sub), and per object (index) its first
/// entry and how many sub-indices it has (0..count, without a gap).
#[derive(Debug)]
struct Layout {
    entries: Vec<Entry>,
    objects: Vec<(u16, usize, usize)>,
}

impl Layout {
    fn new(node: u8, identity: &Identity, features: u32, response_time_ns: u32) -> Layout {
        use Access::{ReadOnly as Ro, ReadWrite as Rw};
        use Kind::Int;
        let mut e = Vec::with_capacity(1200);
        let mut add = |index: u16, sub: u8, kind: Kind, access: Access, default: u64| {
            e.push(Entry {
                index,
                sub,
                kind,
                access,
                default,
            })
        };
        add(
            index::DEVICE_TYPE,
            0,
            Int(4),
            Ro,
            identity.device_type.into(),
        );
        add(index::ERROR_REGISTER, 0, Int(1), Ro, 0);
        add(index::CYCLE_LEN, 0, Int(4), Rw, 0);
        for i in [index::STORE, index::RESTORE] {
            add(i, 0, Int(1), Ro, 1);
            // Read: bit 0, the device saves (restores) on command.
            add(i, 1, Int(4), Rw, 1);
        }
        add(index::IDENTITY, 0, Int(1), Ro, 4);
        let serial = identity.serial.unwrap_or(node.into());
        for (sub, v) in [identity.vendor, identity.product, identity.revision, serial]
            .into_iter()
            .enumerate()
        {
            add(index::IDENTITY, sub as u8 + 1, Int(4), Ro, v.into());
        }
        add(index::VERIFY_CONF, 0, Int(1), Ro, 2);
        add(index::VERIFY_CONF, 1, Int(4), Rw, 0);
        add(index::VERIFY_CONF, 2, Int(4), Rw, 0);
        add(index::RPDO_COMM, 0, Int(1), Ro, 2);
        add(index::RPDO_COMM, 1, Int(1), Rw, 0);
        add(index::RPDO_COMM, 2, Int(1), Rw, 0);
        add(index::RPDO_MAP, 0, Int(1), Rw, 0);
        for sub in 1..=MAPPING_ENTRIES {
            add(index::RPDO_MAP, sub, Int(8), Rw, 0);
        }
        add(index::TPDO_COMM, 0, Int(1), Ro, 2);
        add(index::TPDO_COMM, 1, Int(1), Rw, 0);
        add(index::TPDO_COMM, 2, Int(1), Rw, 0);
        add(index::TPDO_MAP, 0, Int(1), Rw, 0);
        for sub in 1..=MAPPING_ENTRIES {
            add(index::TPDO_MAP, sub, Int(8), Rw, 0);
        }
        for i in [index::LOSS_SOC, index::LOSS_PREQ] {
            add(i, 0, Int(1), Ro, 3);
            add(i, 1, Int(4), Rw, 0);
            add(i, 2, Int(4), Ro, 0);
            add(i, 3, Int(4), Rw, 15);
        }
        add(index::LOSS_TOLERANCE, 0, Int(4), Rw, 100_000);
        add(index::FEATURE_FLAGS, 0, Int(4), Ro, features.into());
        let max = super::MAX_PDO_PAYLOAD as u64;
        for (sub, kind, access, default) in [
            (0, Int(1), Ro, 9),
            (1, Int(2), Ro, max),
            (2, Int(2), Ro, max),
            (3, Int(4), Ro, u64::from(response_time_ns)),
            (4, Int(2), Rw, 36),
            (5, Int(2), Rw, 36),
            (6, Int(4), Ro, 0),
            (7, Int(1), Rw, 0),
            (8, Int(2), Rw, u64::from(ASYNC_MTU)),
            (9, Int(2), Rw, 2),
        ] {
            add(index::CYCLE_TIMING, sub, kind, access, default);
        }
        add(index::DOMAIN, 0, Kind::Domain, Rw, 0);
        for (i, access, default) in [
            (index::INPUTS, Ro, u64::from(node)),
            (index::OUTPUTS, Rw, 0),
        ] {
            add(i, 0, Int(1), Ro, MAPPING_ENTRIES.into());
            for sub in 1..=MAPPING_ENTRIES {
                add(i, sub, Int(1), access, default);
            }
        }
        let mut objects: Vec<(u16, usize, usize)> = Vec::new();
        for (slot, entry) in e.iter().enumerate() {
            match objects.last_mut() {
                Some(o) if o.0 == entry.index => o.2 += 1,
                _ => objects.push((entry.index, slot, 1)),
            }
            // Sub-indices 0..count, in order, without a gap.
            debug_assert_eq!(usize::from(entry.sub), slot - objects[objects.len() - 1].1);
        }
        Layout {
            entries: e,
            objects,
        }
    }

    /// The slot of (index, sub), or the abort for a missing one.
    fn find(&self, index: u16, sub: u8) -> Result<usize, AbortCode> {
        match self.objects.binary_search_by_key(&index, |o| o.0) {
            Ok(i) => {
                let (_, first, count) = self.objects[i];
                match usize::from(sub) < count {
                    true => Ok(first + usize::from(sub)),
                    false => Err(AbortCode::SUBINDEX_DOES_NOT_EXIST),
                }
            }
            Err(_) => Err(AbortCode::OBJECT_DOES_NOT_EXIST),
        }
    }
}

/// One PDO mapping entry, decoded from its u64.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MappedObject {
    /// The object's index.
    pub index: u16,
    /// Its sub-index.
    pub sub: u8,
    /// Where it starts in the payload, bits.
    pub bit_offset: u16,
    /// Its length, bits.
    pub bit_len: u16,
}

impl MappedObject {
    /// Decodes a mapping entry (DS 301: length, offset, reserved, sub,
    /// index from the most significant bits down).
    pub fn from_u64(v: u64) -> MappedObject {
        MappedObject {
            index: v as u16,
            sub: (v >> 16) as u8,
            bit_offset: (v >> 32) as u16,
            bit_len: (v >> 48) as u16,
        }
    }

    /// The entry's u64.
    pub fn to_u64(self) -> u64 {
        u64::from(self.index)
            | u64::from(self.sub) << 16
            | u64::from(self.bit_offset) << 32
            | u64::from(self.bit_len) << 48
    }
}

/// A mapping ready to copy: value slot and payload byte, per entry.
#[derive(Debug, Clone)]
struct Plan {
    /// (slot in the values, byte in the payload, slot of the input an
    /// output loops back to).
    copies: Vec<(usize, usize, usize)>,
    /// Payload bytes the mapping covers.
    len: usize,
}

impl Plan {
    fn with_capacity() -> Plan {
        Plan {
            copies: Vec::with_capacity(MAPPING_ENTRIES.into()),
            len: 0,
        }
    }
}

/// What a reset does to the OD.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reload {
    /// NMTResetNode, NMTSwReset, NMTResetCommunication: every value back
    /// to the stored image (the defaults when nothing is stored, or after
    /// a restore).
    Stored,
    /// NMTResetConfiguration: the values stay; the mappings are applied
    /// again.
    Keep,
}

/// One CN's object dictionary; see the module doc.
#[derive(Debug, Clone)]
pub struct Od {
    layout: Arc<Layout>,
    values: Vec<u64>,
    /// The image 0x1010 stored (valid when `has_stored`).
    stored: Vec<u64>,
    has_stored: bool,
    /// The scratch domain and its length, current and stored.
    domain: Vec<u8>,
    domain_len: usize,
    stored_domain_len: usize,
    stored_domain: Vec<u8>,
    tpdo: Plan,
    rpdo: Plan,
}

impl Od {
    /// The OD of CN `node` with `identity`, announcing `features` in
    /// 0x1F82 and `response_time_ns` in 0x1F98/3: every value at its
    /// default, nothing stored, no PDO mapped.
    pub fn new(node: u8, identity: &Identity, features: u32, response_time_ns: u32) -> Od {
        let layout = Arc::new(Layout::new(node, identity, features, response_time_ns));
        let values: Vec<u64> = layout.entries.iter().map(|e| e.default).collect();
        Od {
            stored: values.clone(),
            values,
            layout,
            has_stored: false,
            domain: vec![0; DOMAIN_MAX],
            domain_len: 0,
            stored_domain: vec![0; DOMAIN_MAX],
            stored_domain_len: 0,
            tpdo: Plan::with_capacity(),
            rpdo: Plan::with_capacity(),
        }
    }

    /// The value of an integer entry (0 for a missing one).
    pub fn get(&self, index: u16, sub: u8) -> u64 {
        self.layout.find(index, sub).map_or(0, |s| self.values[s])
    }

    /// Sets an integer entry whatever its access (the CN's own counters).
    pub fn set(&mut self, index: u16, sub: u8, value: u64) {
        if let Ok(s) = self.layout.find(index, sub) {
            self.values[s] = value;
        }
    }

    /// True when 0x1010 stored an image.
    pub fn has_stored(&self) -> bool {
        self.has_stored
    }

    /// The size in bytes of (index, sub)'s value, or the abort.
    pub fn size(&self, index: u16, sub: u8) -> Result<usize, AbortCode> {
        let s = self.layout.find(index, sub)?;
        Ok(match self.layout.entries[s].kind {
            Kind::Int(n) => n.into(),
            Kind::Domain => self.domain_len,
        })
    }

    /// Reads (index, sub) into `out`; the bytes written, or the abort.
    pub fn read(&self, index: u16, sub: u8, out: &mut [u8]) -> Result<usize, AbortCode> {
        let s = self.layout.find(index, sub)?;
        match self.layout.entries[s].kind {
            Kind::Int(n) => {
                let n = usize::from(n);
                let bytes = self.values[s].to_le_bytes();
                let out = out.get_mut(..n).ok_or(AbortCode::GENERAL)?;
                out.copy_from_slice(&bytes[..n]);
                Ok(n)
            }
            Kind::Domain => {
                let n = self.domain_len;
                let out = out.get_mut(..n).ok_or(AbortCode::GENERAL)?;
                out.copy_from_slice(&self.domain[..n]);
                Ok(n)
            }
        }
    }

    /// Checks that (index, sub) takes a write of `len` bytes, without
    /// writing (a segmented download asks before its data has come).
    pub fn check_write(&self, index: u16, sub: u8, len: usize) -> Result<(), AbortCode> {
        let s = self.layout.find(index, sub)?;
        let e = self.layout.entries[s];
        if e.access == Access::ReadOnly {
            return Err(AbortCode::READ_ONLY);
        }
        match e.kind {
            Kind::Int(n) if usize::from(n) != len => Err(AbortCode::LENGTH_MISMATCH),
            Kind::Domain if len > DOMAIN_MAX => Err(AbortCode::LENGTH_TOO_HIGH),
            _ => Ok(()),
        }
    }

    /// Writes `value` to (index, sub) and applies it; the abort when it is
    /// refused (and then nothing changed).
    pub fn write(&mut self, index: u16, sub: u8, value: &[u8]) -> Result<(), AbortCode> {
        self.check_write(index, sub, value.len())?;
        let s = self.layout.find(index, sub)?;
        if self.layout.entries[s].kind == Kind::Domain {
            self.domain[..value.len()].copy_from_slice(value);
            self.domain_len = value.len();
            return Ok(());
        }
        let mut b = [0u8; 8];
        b[..value.len()].copy_from_slice(value);
        let v = u64::from_le_bytes(b);
        match (index, sub) {
            (index::STORE, 1) => {
                if v != u64::from(SAVE) {
                    return Err(NOT_STORED);
                }
                self.stored.copy_from_slice(&self.values);
                self.stored_domain.copy_from_slice(&self.domain);
                self.stored_domain_len = self.domain_len;
                self.has_stored = true;
                return Ok(());
            }
            (index::RESTORE, 1) => {
                if v != u64::from(LOAD) {
                    return Err(NOT_STORED);
                }
                // Defaults come back at the next reset (DS 301 7.2.1.1).
                self.has_stored = false;
                return Ok(());
            }
            // PReqActPayloadLimit / PResActPayloadLimit: the reference CN
            // takes 36 (the minimum PDO payload of a 60-byte frame) to
            // C_DLL_ISOCHR_MAX_PAYL and aborts anything else.
            (index::CYCLE_TIMING, 4 | 5) => {
                if v < PAYLOAD_LIMIT_MIN {
                    return Err(AbortCode::VALUE_TOO_LOW);
                }
                if v > super::MAX_PDO_PAYLOAD as u64 {
                    return Err(AbortCode::VALUE_TOO_HIGH);
                }
            }
            (index::RPDO_MAP | index::TPDO_MAP, 0) => {
                if v > u64::from(MAPPING_ENTRIES) {
                    return Err(AbortCode::VALUE_RANGE);
                }
                let old = self.values[s];
                self.values[s] = v;
                if let Err(e) = self.apply_mapping(index) {
                    self.values[s] = old;
                    // The old mapping was valid: applying it again cannot fail.
                    let _ = self.apply_mapping(index);
                    return Err(e);
                }
                return Ok(());
            }
            _ => {}
        }
        self.values[s] = v;
        Ok(())
    }

    /// Builds the copy plan of mapping `map` (0x1600 or 0x1A00) from its
    /// entries, or the abort when an entry cannot be mapped.
    fn apply_mapping(&mut self, map: u16) -> Result<(), AbortCode> {
        let (source, limit) = match map {
            index::TPDO_MAP => (index::INPUTS, self.get(index::CYCLE_TIMING, 5)),
            _ => (index::OUTPUTS, self.get(index::CYCLE_TIMING, 4)),
        };
        let n = self.get(map, 0) as u8;
        let layout = Arc::clone(&self.layout);
        let mut plan = std::mem::replace(
            match map {
                index::TPDO_MAP => &mut self.tpdo,
                _ => &mut self.rpdo,
            },
            Plan {
                copies: Vec::new(),
                len: 0,
            },
        );
        plan.copies.clear();
        plan.len = 0;
        let mut result = Ok(());
        for sub in 1..=n {
            let m = MappedObject::from_u64(self.get(map, sub));
            let slot = match layout.find(m.index, m.sub) {
                Ok(s) if m.index == source && m.sub > 0 => s,
                _ => {
                    result = Err(NOT_MAPPABLE);
                    break;
                }
            };
            if m.bit_len != 8 || !m.bit_offset.is_multiple_of(8) {
                result = Err(NOT_MAPPABLE);
                break;
            }
            let at = usize::from(m.bit_offset / 8);
            if at as u64 + 1 > limit || at >= super::MAX_PDO_PAYLOAD {
                result = Err(PDO_TOO_LONG);
                break;
            }
            // The application loops output k back to input k.
            let echo = match map {
                index::RPDO_MAP => layout.find(index::INPUTS, m.sub).unwrap_or(slot),
                _ => slot,
            };
            plan.copies.push((slot, at, echo));
            plan.len = plan.len.max(at + 1);
        }
        if result.is_err() {
            plan.copies.clear();
            plan.len = 0;
        }
        match map {
            index::TPDO_MAP => self.tpdo = plan,
            _ => self.rpdo = plan,
        }
        result
    }

    /// What a reset does: `reload` the values, then apply the mappings.
    pub fn reset(&mut self, reload: Reload) {
        if reload == Reload::Stored {
            if self.has_stored {
                self.values.copy_from_slice(&self.stored);
                self.domain.copy_from_slice(&self.stored_domain);
                self.domain_len = self.stored_domain_len;
            } else {
                for (v, e) in self.values.iter_mut().zip(&self.layout.entries) {
                    *v = e.default;
                }
                self.domain_len = 0;
            }
        }
        for map in [index::TPDO_MAP, index::RPDO_MAP] {
            if self.apply_mapping(map).is_err() {
                // A stored mapping the limits no longer take: none.
                self.set(map, 0, 0);
            }
        }
    }

    /// PRes payload bytes the TPDO mapping covers.
    pub fn tpdo_len(&self) -> usize {
        self.tpdo.len
    }

    /// Writes the TPDO payload (the mapped inputs) into `out`, which holds
    /// at least [`Od::tpdo_len`] bytes; unmapped bytes are zero.
    pub fn fill_tpdo(&self, out: &mut [u8]) {
        out[..self.tpdo.len].fill(0);
        for &(slot, at, _) in &self.tpdo.copies {
            out[at] = self.values[slot] as u8;
        }
    }

    /// Copies a PReq payload into the outputs the RPDO mapping names, and
    /// each output 0x6200/k into the input 0x6000/k (the emulator's
    /// application loops its outputs back, so that an MN finds its own
    /// data in the PRes of the same cycle); bytes beyond the payload are
    /// left as they were.
    pub fn take_rpdo(&mut self, payload: &[u8]) {
        for &(slot, at, echo) in &self.rpdo.copies {
            if let Some(b) = payload.get(at) {
                self.values[slot] = u64::from(*b);
                self.values[echo] = u64::from(*b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn od() -> Od {
        Od::new(7, &Identity::default(), 0x45, 25_000)
    }

    fn entry(index: u16, sub: u8, byte: u16) -> [u8; 8] {
        MappedObject {
            index,
            sub,
            bit_offset: byte * 8,
            bit_len: 8,
        }
        .to_u64()
        .to_le_bytes()
    }

    #[test]
    fn payload_limits_take_36_to_1490_as_the_reference_cn() {
        let mut o = od();
        let mut b = [0u8; 2];
        assert_eq!(
            o.write(0x1F98, 4, &35u16.to_le_bytes()),
            Err(AbortCode::VALUE_TOO_LOW)
        );
        assert_eq!(
            o.write(0x1F98, 5, &1491u16.to_le_bytes()),
            Err(AbortCode::VALUE_TOO_HIGH)
        );
        assert_eq!(o.read(0x1F98, 4, &mut b), Ok(2));
        assert_eq!(b, [36, 0], "a refused write leaves the value");
        assert_eq!(o.write(0x1F98, 5, &1490u16.to_le_bytes()), Ok(()));
        assert_eq!(o.read(0x1F98, 5, &mut b), Ok(2));
        assert_eq!(u16::from_le_bytes(b), 1490);
    }

    #[test]
    fn reads_answer_defaults_and_identity_in_their_own_sizes() {
        let o = od();
        let mut b = [0u8; 16];
        assert_eq!(o.read(0x1000, 0, &mut b), Ok(4));
        assert_eq!(b[..4], 0x000F_0191u32.to_le_bytes());
        assert_eq!(o.read(0x1018, 4, &mut b), Ok(4));
        assert_eq!(b[..4], [7, 0, 0, 0], "the serial defaults to the node id");
        assert_eq!(o.read(0x1F98, 4, &mut b), Ok(2));
        assert_eq!(b[..2], [36, 0]);
        assert_eq!(o.read(0x1C0B, 3, &mut b), Ok(4));
        assert_eq!(b[..4], [15, 0, 0, 0]);
        assert_eq!(o.read(0x1600, 0, &mut b), Ok(1));
        assert_eq!(o.read(0x6000, 3, &mut b), Ok(1));
        assert_eq!(b[0], 7);
        assert_eq!(o.read(0x2000, 0, &mut b), Ok(0));
    }

    #[test]
    fn refusals_carry_ds_301_abort_codes_and_change_nothing() {
        let mut o = od();
        assert_eq!(o.write(0x1011, 1, &LOAD.to_le_bytes()), Ok(()));
        assert_eq!(
            o.write(0x1234, 0, &[0]),
            Err(AbortCode::OBJECT_DOES_NOT_EXIST)
        );
        assert_eq!(
            o.write(0x1020, 3, &[0; 4]),
            Err(AbortCode::SUBINDEX_DOES_NOT_EXIST)
        );
        assert_eq!(o.write(0x1018, 1, &[0; 4]), Err(AbortCode::READ_ONLY));
        assert_eq!(o.write(0x6000, 1, &[9]), Err(AbortCode::READ_ONLY));
        assert_eq!(o.write(0x1006, 0, &[0; 2]), Err(AbortCode::LENGTH_MISMATCH));
        assert_eq!(o.write(0x1010, 1, &[1, 2, 3, 4]), Err(NOT_STORED));
        assert_eq!(o.write(0x1A00, 0, &[255]), Err(AbortCode::VALUE_RANGE));
        assert_eq!(
            o.write(0x2000, 0, &[0; DOMAIN_MAX + 1]),
            Err(AbortCode::LENGTH_TOO_HIGH)
        );
        // An output cannot be a TPDO source; an input no RPDO sink.
        o.write(0x1A00, 1, &entry(0x6200, 1, 0)).unwrap();
        assert_eq!(o.write(0x1A00, 0, &[1]), Err(NOT_MAPPABLE));
        assert_eq!(o.get(0x1A00, 0), 0);
        o.write(0x1A00, 1, &entry(0x6000, 1, 36)).unwrap();
        assert_eq!(o.write(0x1A00, 0, &[1]), Err(PDO_TOO_LONG));
        assert_eq!(o.tpdo_len(), 0);
        assert_eq!(o.get(0x1006, 0), 0);
    }

    #[test]
    fn the_tpdo_mapping_shapes_the_payload_and_the_rpdo_fills_the_outputs() {
        let mut o = od();
        o.write(0x1A00, 1, &entry(0x6000, 1, 0)).unwrap();
        o.write(0x1A00, 2, &entry(0x6000, 2, 2)).unwrap();
        o.write(0x1A00, 0, &[2]).unwrap();
        assert_eq!(o.tpdo_len(), 3);
        let mut pay = [0xEE; 4];
        o.fill_tpdo(&mut pay);
        assert_eq!(pay, [7, 0, 7, 0xEE]);
        o.write(0x1600, 1, &entry(0x6200, 5, 1)).unwrap();
        o.write(0x1600, 0, &[1]).unwrap();
        o.take_rpdo(&[0x11, 0x22]);
        assert_eq!(o.get(0x6200, 5), 0x22);
        assert_eq!(o.get(0x6000, 5), 0x22, "looped back to input 5");
        assert_eq!(o.get(0x6000, 4), 7);
        o.take_rpdo(&[0x33]);
        assert_eq!(o.get(0x6200, 5), 0x22, "a short PReq leaves it");
    }

    #[test]
    fn store_survives_a_reset_and_restore_brings_defaults_at_the_next() {
        let mut o = od();
        o.write(0x1020, 1, &0x3124u32.to_le_bytes()).unwrap();
        o.write(0x1A00, 1, &entry(0x6000, 1, 0)).unwrap();
        o.write(0x1A00, 0, &[1]).unwrap();
        // Not stored: a reset node forgets it; a reset configuration keeps it.
        o.reset(Reload::Keep);
        assert_eq!((o.get(0x1020, 1), o.tpdo_len()), (0x3124, 1));
        let mut kept = o.clone();
        kept.reset(Reload::Stored);
        assert_eq!((kept.get(0x1020, 1), kept.tpdo_len()), (0, 0));
        o.write(0x1010, 1, &SAVE.to_le_bytes()).unwrap();
        o.write(0x1020, 1, &[9, 0, 0, 0]).unwrap();
        o.reset(Reload::Stored);
        assert_eq!((o.get(0x1020, 1), o.tpdo_len()), (0x3124, 1));
        o.write(0x1011, 1, &LOAD.to_le_bytes()).unwrap();
        assert_eq!(o.get(0x1020, 1), 0x3124, "restore waits for the reset");
        o.reset(Reload::Stored);
        assert_eq!((o.get(0x1020, 1), o.tpdo_len()), (0, 0));
    }

    #[test]
    fn identities_parse_over_the_defaults_or_say_what_to_fix() {
        assert_eq!(
            Identity::parse("vendor=0x2A, product=7,serial=0x10,device-type=401,revision=3"),
            Ok(Identity {
                device_type: 401,
                vendor: 42,
                product: 7,
                revision: 3,
                serial: Some(16),
            })
        );
        assert_eq!(
            Identity::parse("product=9"),
            Ok(Identity {
                product: 9,
                ..Identity::default()
            })
        );
        let e = |s| Identity::parse(s).unwrap_err();
        assert_eq!(
            e("vendor=1,,product=2"),
            "\"vendor=1,,product=2\" has an empty item: give key=value pairs separated by commas, e.g. vendor=0x2a,product=7"
        );
        assert_eq!(e("vendor"), "\"vendor\" has no value: write vendor=NUMBER");
        assert_eq!(
            e("colour=3"),
            "\"colour\" is not an identity field: use vendor, product, revision, serial or device-type"
        );
        assert_eq!(e("serial=1,serial=2"), "serial is given twice");
        assert_eq!(
            e("vendor=0x100000000"),
            "vendor=0x100000000: not a 32-bit number; write it in decimal or as 0x hex"
        );
        assert_eq!(
            e("product=-1"),
            "product=-1: not a 32-bit number; write it in decimal or as 0x hex"
        );
    }

    #[test]
    fn mapping_entries_round_trip_their_u64() {
        let m = MappedObject::from_u64(u64::from_le_bytes([0x00, 0x60, 0x01, 0, 0, 0, 0x08, 0]));
        assert_eq!(
            m,
            MappedObject {
                index: 0x6000,
                sub: 1,
                bit_offset: 0,
                bit_len: 8
            }
        );
        assert_eq!(
            m.to_u64().to_le_bytes(),
            [0x00, 0x60, 0x01, 0, 0, 0, 0x08, 0]
        );
    }
}
