//! The values a UADP message carries: who published it ([`PublisherId`]),
//! the scalar built-in types a PLC exchanges ([`BuiltinType`], [`Value`]),
//! how a DataSet's fields are encoded ([`FieldEncoding`]) and a field with
//! its quality and time stamps ([`DataValue`]).
//!
//! Everything here but [`PublisherId`] is `Copy`, so that the reader and the
//! writer can move values in and out of caller-provided slices without
//! allocating (design rule 2). Time stamps are OPC UA `DateTime`s: signed
//! ticks of 100 ns since 1601-01-01 UTC ([`datetime_from_unix_ns`] and
//! [`unix_ns_from_datetime`] convert to and from the nanoseconds of the rest
//! of jitterlab).
//!
//! The design rules cited here are in `docs/design.md`.

use std::fmt;

/// OPC UA `DateTime` ticks (100 ns) between 1601-01-01 and 1970-01-01 UTC.
pub const DATETIME_UNIX_EPOCH: i64 = 116_444_736_000_000_000;

/// Nanoseconds per OPC UA `DateTime` tick.
const NS_PER_TICK: i64 = 100;

/// The OPC UA `DateTime` (100 ns ticks since 1601-01-01 UTC) of a time given
/// in nanoseconds since the Unix epoch, rounded down to the tick.
pub fn datetime_from_unix_ns(unix_ns: i64) -> i64 {
    unix_ns.div_euclid(NS_PER_TICK) + DATETIME_UNIX_EPOCH
}

/// Nanoseconds since the Unix epoch of an OPC UA `DateTime`. A `DateTime`
/// beyond what `i64` nanoseconds hold (before 1678 or after 2262) saturates
/// at `i64::MIN` / `i64::MAX`.
pub fn unix_ns_from_datetime(datetime: i64) -> i64 {
    (i128::from(datetime) - i128::from(DATETIME_UNIX_EPOCH))
        .saturating_mul(i128::from(NS_PER_TICK))
        .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// The identity of a publisher, of one of the five types Part 14 allows.
///
/// The type is part of the identity: a subscriber of the reference
/// implementation does not take UInt16 2234 for UInt32 2234.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PublisherId {
    /// A `Byte` id.
    Byte(u8),
    /// A `UInt16` id (the reference's tutorial uses 2234).
    UInt16(u16),
    /// A `UInt32` id.
    UInt32(u32),
    /// A `UInt64` id.
    UInt64(u64),
    /// A `String` id (UTF-8, not empty).
    String(String),
}

/// The words [`PublisherId::parse`] takes before the colon.
const PUBLISHER_ID_FORMS: &str = "byte, uint16, uint32, uint64 or string (e.g. uint16:2234)";

impl PublisherId {
    /// Reads `TYPE:VALUE`: `byte:7`, `uint16:2234`, `uint32:…`, `uint64:…`,
    /// `string:name` (the type word is case-insensitive). The error names
    /// the text and what to write instead.
    pub fn parse(text: &str) -> Result<PublisherId, String> {
        let Some((ty, value)) = text.split_once(':') else {
            return Err(format!(
                "publisher id `{text}`: expected TYPE:VALUE with TYPE one of {PUBLISHER_ID_FORMS}"
            ));
        };
        fn number<T: std::str::FromStr>(text: &str, value: &str, range: &str) -> Result<T, String> {
            value.parse().map_err(|_| {
                format!("publisher id `{text}`: `{value}` is not a whole number in {range}")
            })
        }
        match ty.to_ascii_lowercase().as_str() {
            "byte" => number(text, value, "0..=255").map(PublisherId::Byte),
            "uint16" => number(text, value, "0..=65535").map(PublisherId::UInt16),
            "uint32" => number(text, value, "0..=4294967295").map(PublisherId::UInt32),
            "uint64" => number(text, value, "0..=18446744073709551615").map(PublisherId::UInt64),
            "string" if value.is_empty() => Err(format!(
                "publisher id `{text}`: the string is empty; give a name after `string:`"
            )),
            "string" if value.len() > MAX_STRING_ID => Err(format!(
                "publisher id `{text}`: the string is {} bytes long; at most {MAX_STRING_ID} fit a message",
                value.len()
            )),
            "string" => Ok(PublisherId::String(value.to_owned())),
            _ => Err(format!(
                "publisher id `{text}`: unknown type `{ty}`; expected one of {PUBLISHER_ID_FORMS}"
            )),
        }
    }

    /// The PublisherId type bits of ExtendedFlags1 (0 Byte … 4 String).
    pub fn type_bits(&self) -> u8 {
        match self {
            PublisherId::Byte(_) => 0,
            PublisherId::UInt16(_) => 1,
            PublisherId::UInt32(_) => 2,
            PublisherId::UInt64(_) => 3,
            PublisherId::String(_) => 4,
        }
    }

    /// The type word of [`PublisherId::parse`] and `Display`.
    pub fn type_name(&self) -> &'static str {
        publisher_id_type_name(self.type_bits())
    }

    /// Bytes the id takes on the wire (a String's 4-byte length included).
    pub fn encoded_len(&self) -> usize {
        match self {
            PublisherId::Byte(_) => 1,
            PublisherId::UInt16(_) => 2,
            PublisherId::UInt32(_) => 4,
            PublisherId::UInt64(_) => 8,
            PublisherId::String(s) => 4 + s.len(),
        }
    }
}

/// The longest String PublisherId accepted: one that still leaves room for
/// a DataSet in a UDP datagram.
pub const MAX_STRING_ID: usize = 1024;

/// The type word of PublisherId type bits `bits` (`"reserved"` for 5–7).
pub(crate) fn publisher_id_type_name(bits: u8) -> &'static str {
    match bits {
        0 => "byte",
        1 => "uint16",
        2 => "uint32",
        3 => "uint64",
        4 => "string",
        _ => "reserved",
    }
}

impl fmt::Display for PublisherId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PublisherId::Byte(v) => write!(f, "byte:{v}"),
            PublisherId::UInt16(v) => write!(f, "uint16:{v}"),
            PublisherId::UInt32(v) => write!(f, "uint32:{v}"),
            PublisherId::UInt64(v) => write!(f, "uint64:{v}"),
            PublisherId::String(v) => write!(f, "string:{v}"),
        }
    }
}

/// The scalar OPC UA built-in types a PLC exchanges, with their type ids
/// (OPC UA Part 6, 5.1.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum BuiltinType {
    /// 1: one byte, 0 or 1.
    Boolean = 1,
    /// 2: signed byte.
    SByte = 2,
    /// 3: unsigned byte.
    Byte = 3,
    /// 4: signed 16-bit.
    Int16 = 4,
    /// 5: unsigned 16-bit.
    UInt16 = 5,
    /// 6: signed 32-bit.
    Int32 = 6,
    /// 7: unsigned 32-bit.
    UInt32 = 7,
    /// 8: signed 64-bit.
    Int64 = 8,
    /// 9: unsigned 64-bit.
    UInt64 = 9,
    /// 10: IEEE 754 single.
    Float = 10,
    /// 11: IEEE 754 double.
    Double = 11,
    /// 13: 100 ns ticks since 1601-01-01 UTC, signed 64-bit.
    DateTime = 13,
}

impl BuiltinType {
    /// Every supported type, in type-id order.
    pub const ALL: [BuiltinType; 12] = [
        BuiltinType::Boolean,
        BuiltinType::SByte,
        BuiltinType::Byte,
        BuiltinType::Int16,
        BuiltinType::UInt16,
        BuiltinType::Int32,
        BuiltinType::UInt32,
        BuiltinType::Int64,
        BuiltinType::UInt64,
        BuiltinType::Float,
        BuiltinType::Double,
        BuiltinType::DateTime,
    ];

    /// The built-in type id (the low six bits of a Variant's encoding byte).
    pub fn id(self) -> u8 {
        self as u8
    }

    /// The type of built-in type id `id`, when it is one of ours.
    pub fn from_id(id: u8) -> Option<BuiltinType> {
        BuiltinType::ALL.into_iter().find(|t| t.id() == id)
    }

    /// Bytes of one value on the wire.
    pub fn size(self) -> usize {
        match self {
            BuiltinType::Boolean | BuiltinType::SByte | BuiltinType::Byte => 1,
            BuiltinType::Int16 | BuiltinType::UInt16 => 2,
            BuiltinType::Int32 | BuiltinType::UInt32 | BuiltinType::Float => 4,
            BuiltinType::Int64
            | BuiltinType::UInt64
            | BuiltinType::Double
            | BuiltinType::DateTime => 8,
        }
    }

    /// The lower-case name [`BuiltinType::parse`] reads.
    pub fn name(self) -> &'static str {
        match self {
            BuiltinType::Boolean => "boolean",
            BuiltinType::SByte => "sbyte",
            BuiltinType::Byte => "byte",
            BuiltinType::Int16 => "int16",
            BuiltinType::UInt16 => "uint16",
            BuiltinType::Int32 => "int32",
            BuiltinType::UInt32 => "uint32",
            BuiltinType::Int64 => "int64",
            BuiltinType::UInt64 => "uint64",
            BuiltinType::Float => "float",
            BuiltinType::Double => "double",
            BuiltinType::DateTime => "datetime",
        }
    }

    /// The type named `name` (`boolean`, `sbyte`, … `datetime`; case does
    /// not matter).
    pub fn parse(name: &str) -> Result<BuiltinType, String> {
        BuiltinType::ALL
            .into_iter()
            .find(|t| t.name().eq_ignore_ascii_case(name))
            .ok_or_else(|| {
                let names: Vec<&str> = BuiltinType::ALL.iter().map(|t| t.name()).collect();
                format!(
                    "unknown field type `{name}`: expected one of {}",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for BuiltinType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One scalar value of a [`BuiltinType`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A Boolean.
    Boolean(bool),
    /// An SByte.
    SByte(i8),
    /// A Byte.
    Byte(u8),
    /// An Int16.
    Int16(i16),
    /// A UInt16.
    UInt16(u16),
    /// An Int32.
    Int32(i32),
    /// A UInt32.
    UInt32(u32),
    /// An Int64.
    Int64(i64),
    /// A UInt64.
    UInt64(u64),
    /// A Float.
    Float(f32),
    /// A Double.
    Double(f64),
    /// A DateTime: OPC UA ticks of 100 ns since 1601-01-01 UTC.
    DateTime(i64),
}

impl Value {
    /// The value's type.
    pub fn ty(&self) -> BuiltinType {
        match self {
            Value::Boolean(_) => BuiltinType::Boolean,
            Value::SByte(_) => BuiltinType::SByte,
            Value::Byte(_) => BuiltinType::Byte,
            Value::Int16(_) => BuiltinType::Int16,
            Value::UInt16(_) => BuiltinType::UInt16,
            Value::Int32(_) => BuiltinType::Int32,
            Value::UInt32(_) => BuiltinType::UInt32,
            Value::Int64(_) => BuiltinType::Int64,
            Value::UInt64(_) => BuiltinType::UInt64,
            Value::Float(_) => BuiltinType::Float,
            Value::Double(_) => BuiltinType::Double,
            Value::DateTime(_) => BuiltinType::DateTime,
        }
    }

    /// The zero (false, 0, 0.0, the `DateTime` 0) of type `ty`.
    pub fn zero(ty: BuiltinType) -> Value {
        match ty {
            BuiltinType::Boolean => Value::Boolean(false),
            BuiltinType::SByte => Value::SByte(0),
            BuiltinType::Byte => Value::Byte(0),
            BuiltinType::Int16 => Value::Int16(0),
            BuiltinType::UInt16 => Value::UInt16(0),
            BuiltinType::Int32 => Value::Int32(0),
            BuiltinType::UInt32 => Value::UInt32(0),
            BuiltinType::Int64 => Value::Int64(0),
            BuiltinType::UInt64 => Value::UInt64(0),
            BuiltinType::Float => Value::Float(0.0),
            BuiltinType::Double => Value::Double(0.0),
            BuiltinType::DateTime => Value::DateTime(0),
        }
    }

    /// Writes the little-endian bytes of the value into `out` (at least 8
    /// bytes) and returns how many it wrote ([`BuiltinType::size`]).
    pub(crate) fn to_le(self, out: &mut [u8; 8]) -> usize {
        let mut put = |bytes: &[u8]| {
            out[..bytes.len()].copy_from_slice(bytes);
            bytes.len()
        };
        match self {
            Value::Boolean(v) => put(&[u8::from(v)]),
            Value::SByte(v) => put(&v.to_le_bytes()),
            Value::Byte(v) => put(&[v]),
            Value::Int16(v) => put(&v.to_le_bytes()),
            Value::UInt16(v) => put(&v.to_le_bytes()),
            Value::Int32(v) => put(&v.to_le_bytes()),
            Value::UInt32(v) => put(&v.to_le_bytes()),
            Value::Int64(v) | Value::DateTime(v) => put(&v.to_le_bytes()),
            Value::UInt64(v) => put(&v.to_le_bytes()),
            Value::Float(v) => put(&v.to_le_bytes()),
            Value::Double(v) => put(&v.to_le_bytes()),
        }
    }

    /// The value of type `ty` in `bytes` (exactly [`BuiltinType::size`]
    /// little-endian bytes). A Boolean is true for any byte but 0, as OPC UA
    /// Part 6 reads it.
    pub(crate) fn from_le(ty: BuiltinType, bytes: &[u8]) -> Value {
        fn arr<const N: usize>(bytes: &[u8]) -> [u8; N] {
            let mut a = [0; N];
            a.copy_from_slice(&bytes[..N]);
            a
        }
        match ty {
            BuiltinType::Boolean => Value::Boolean(bytes[0] != 0),
            BuiltinType::SByte => Value::SByte(i8::from_le_bytes(arr(bytes))),
            BuiltinType::Byte => Value::Byte(bytes[0]),
            BuiltinType::Int16 => Value::Int16(i16::from_le_bytes(arr(bytes))),
            BuiltinType::UInt16 => Value::UInt16(u16::from_le_bytes(arr(bytes))),
            BuiltinType::Int32 => Value::Int32(i32::from_le_bytes(arr(bytes))),
            BuiltinType::UInt32 => Value::UInt32(u32::from_le_bytes(arr(bytes))),
            BuiltinType::Int64 => Value::Int64(i64::from_le_bytes(arr(bytes))),
            BuiltinType::UInt64 => Value::UInt64(u64::from_le_bytes(arr(bytes))),
            BuiltinType::Float => Value::Float(f32::from_le_bytes(arr(bytes))),
            BuiltinType::Double => Value::Double(f64::from_le_bytes(arr(bytes))),
            BuiltinType::DateTime => Value::DateTime(i64::from_le_bytes(arr(bytes))),
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Boolean(v) => write!(f, "{v}"),
            Value::SByte(v) => write!(f, "{v}"),
            Value::Byte(v) => write!(f, "{v}"),
            Value::Int16(v) => write!(f, "{v}"),
            Value::UInt16(v) => write!(f, "{v}"),
            Value::Int32(v) => write!(f, "{v}"),
            Value::UInt32(v) => write!(f, "{v}"),
            Value::Int64(v) | Value::DateTime(v) => write!(f, "{v}"),
            Value::UInt64(v) => write!(f, "{v}"),
            Value::Float(v) => write!(f, "{v}"),
            Value::Double(v) => write!(f, "{v}"),
        }
    }
}

/// How the fields of a DataSetMessage are encoded (DataSetFlags1 bits 1–2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldEncoding {
    /// Each field a Variant: a type byte, then the value (self-describing).
    Variant,
    /// The values alone, no count and no types: the reader must know them.
    RawData,
    /// Each field a DataValue: a mask byte, a Variant, then optional status
    /// and time stamps.
    DataValue,
}

impl FieldEncoding {
    /// The two-bit code of DataSetFlags1 (0 Variant, 1 RawData, 2 DataValue).
    pub fn bits(self) -> u8 {
        match self {
            FieldEncoding::Variant => 0,
            FieldEncoding::RawData => 1,
            FieldEncoding::DataValue => 2,
        }
    }

    /// The encoding of two-bit code `bits` (3 is reserved: `None`).
    pub fn from_bits(bits: u8) -> Option<FieldEncoding> {
        match bits {
            0 => Some(FieldEncoding::Variant),
            1 => Some(FieldEncoding::RawData),
            2 => Some(FieldEncoding::DataValue),
            _ => None,
        }
    }

    /// `variant`, `raw` or `datavalue`.
    pub fn name(self) -> &'static str {
        match self {
            FieldEncoding::Variant => "variant",
            FieldEncoding::RawData => "raw",
            FieldEncoding::DataValue => "datavalue",
        }
    }

    /// Reads `variant`, `raw` (or `rawdata`) or `datavalue`.
    pub fn parse(name: &str) -> Result<FieldEncoding, String> {
        match name.to_ascii_lowercase().as_str() {
            "variant" => Ok(FieldEncoding::Variant),
            "raw" | "rawdata" => Ok(FieldEncoding::RawData),
            "datavalue" => Ok(FieldEncoding::DataValue),
            _ => Err(format!(
                "unknown field encoding `{name}`: expected variant, raw or datavalue"
            )),
        }
    }
}

impl fmt::Display for FieldEncoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A field in DataValue encoding: a value with its optional status code and
/// source / server time stamps (OPC UA Part 6, 5.2.2.17).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DataValue {
    /// The value (absent, or a null Variant: `None`).
    pub value: Option<Value>,
    /// The full 32-bit StatusCode.
    pub status: Option<u32>,
    /// The source time stamp (`DateTime`).
    pub source_timestamp: Option<i64>,
    /// Picoseconds beyond the source time stamp.
    pub source_picoseconds: Option<u16>,
    /// The server time stamp (`DateTime`).
    pub server_timestamp: Option<i64>,
    /// Picoseconds beyond the server time stamp.
    pub server_picoseconds: Option<u16>,
}

impl DataValue {
    /// A DataValue carrying `value` and nothing else.
    pub fn of(value: Value) -> DataValue {
        DataValue {
            value: Some(value),
            ..DataValue::default()
        }
    }
}
