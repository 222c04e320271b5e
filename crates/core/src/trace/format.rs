//! A tracepoint's record layout, parsed from its tracefs `format` file, so
//! a raw record is read by field *name*, never by an offset written into
//! jitterlab: kernels move and resize fields (`sched_switch`'s
//! `prev_state` is a `long` on some and an `unsigned int` on others;
//! `hrtimer_start` gained `mode` and `was_armed`, and lost `function` on
//! some configurations).
//!
//! The file, as every kernel since 2.6.31 writes it (a tab, shown here as
//! spaces, before each field line and between its parts):
//!
//! ```text
//! name: irq_handler_entry
//! ID: 225
//! format:
//!     field:unsigned short common_type;    offset:0;    size:2;    signed:0;
//!     …
//!
//!     field:int irq;    offset:8;    size:4;    signed:1;
//!     field:__data_loc char[] name;    offset:12;    size:4;    signed:0;
//!
//! print fmt: "irq=%d name=%s", REC->irq, __get_str(name)
//! ```
//!
//! A field's declaration ends with its name, after an array's `[N]` is
//! taken off (`char comm[16]`). A `__data_loc` field is a 32-bit word
//! whose low half is the string's offset from the record's start and whose
//! high half its length; a `__rel_loc` one (Linux 5.18) counts the offset
//! from the end of the word instead. Strings are NUL-terminated within
//! their room. Numbers are in the machine's byte order, as the kernel
//! wrote them; a signed field narrower than 8 bytes is sign-extended.

use std::fmt;

/// One field of a tracepoint record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// Its name (`prev_state`, `comm`, `name`).
    pub name: String,
    /// Its C declaration without the name (`long`, `char[16]`,
    /// `__data_loc char[]`).
    pub ctype: String,
    /// Its offset from the start of the record.
    pub offset: usize,
    /// Its size in bytes (of the location word, for a dynamic string).
    pub size: usize,
    /// Whether it is a signed number.
    pub signed: bool,
    /// Where its bytes are: in place, or behind a location word.
    pub place: Place,
}

/// Where a field's bytes are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// At `offset`, `size` bytes (a number or a fixed `char[N]`).
    Inline,
    /// `__data_loc`: the word at `offset` holds the offset from the record's
    /// start (low 16 bits) and the length (high 16 bits).
    DataLoc,
    /// `__rel_loc`: as [`Place::DataLoc`], the offset counted from the end
    /// of the word.
    RelLoc,
}

/// A tracepoint's record layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Format {
    /// The tracepoint's name (`sched_switch`).
    pub name: String,
    /// Its id (`config` of a perf event), when the file says it.
    pub id: Option<u32>,
    /// Every field, the common ones first, in the file's order.
    pub fields: Vec<Field>,
}

/// What is wrong with a `format` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatError {
    /// The 1-based line.
    pub line: usize,
    /// What is wrong with it.
    pub what: String,
}

impl fmt::Display for FormatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.what)
    }
}

impl std::error::Error for FormatError {}

impl Format {
    /// Parses a tracepoint's `format` file (module doc). A file with no
    /// field at all is an error, as is a field line without its offset,
    /// size or name.
    pub fn parse(text: &str) -> Result<Format, FormatError> {
        let mut name = String::new();
        let mut id = None;
        let mut fields = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let err = |what: String| FormatError { line: i + 1, what };
            let line = line.trim();
            if let Some(rest) = line.strip_prefix("name:") {
                name = rest.trim().to_string();
            } else if let Some(rest) = line.strip_prefix("ID:") {
                id = Some(
                    rest.trim()
                        .parse()
                        .map_err(|_| err(format!("the ID {:?} is not a number", rest.trim())))?,
                );
            } else if line.starts_with("field:") {
                fields.push(parse_field(line).map_err(err)?);
            }
        }
        if fields.is_empty() {
            return Err(FormatError {
                line: text.lines().count().max(1),
                what: "no field: this is not a tracepoint's format file".to_string(),
            });
        }
        Ok(Format { name, id, fields })
    }

    /// The field called `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// One `field:DECL;\toffset:N;\tsize:N;\tsigned:N;` line.
fn parse_field(line: &str) -> Result<Field, String> {
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        let Some((key, value)) = part.split_once(':') else {
            continue;
        };
        let number = || {
            value
                .trim()
                .parse::<usize>()
                .map_err(|_| format!("{key} {:?} is not a number in {line:?}", value.trim()))
        };
        match key {
            "field" => decl = Some(value.trim()),
            "offset" => offset = Some(number()?),
            "size" => size = Some(number()?),
            "signed" => signed = number()? != 0,
            _ => {}
        }
    }
    let decl = decl.filter(|d| !d.is_empty());
    let (Some(decl), Some(offset), Some(size)) = (decl, offset, size) else {
        return Err(format!(
            "a field needs a declaration, an offset and a size: {line:?}"
        ));
    };
    let (ctype, last) = match decl.rsplit_once(char::is_whitespace) {
        Some((ctype, last)) => (ctype.trim(), last),
        None => return Err(format!("the field {decl:?} has no type")),
    };
    // `char comm[16]`: the name is before the brackets, which go with the
    // type.
    let (name, dims) = match last.find('[') {
        Some(at) => (&last[..at], &last[at..]),
        None => (last, ""),
    };
    let name = name.trim_start_matches('*');
    if name.is_empty() {
        return Err(format!("the field {decl:?} has no name"));
    }
    let place = if ctype.starts_with("__data_loc") {
        Place::DataLoc
    } else if ctype.starts_with("__rel_loc") {
        Place::RelLoc
    } else {
        Place::Inline
    };
    Ok(Field {
        name: name.to_string(),
        ctype: format!("{ctype}{dims}"),
        offset,
        size,
        signed,
        place,
    })
}

impl Field {
    /// The field's bytes in place (the location word, for a dynamic
    /// string); `None` when the record is too short.
    fn bytes<'r>(&self, raw: &'r [u8]) -> Option<&'r [u8]> {
        raw.get(self.offset..self.offset.checked_add(self.size)?)
    }

    /// The field as a signed number (sign-extended when it is signed,
    /// zero-extended else); `None` when the record is too short or the
    /// field is not 1, 2, 4 or 8 bytes.
    pub fn int(&self, raw: &[u8]) -> Option<i64> {
        let b = self.bytes(raw)?;
        Some(match (b.len(), self.signed) {
            (1, true) => i64::from(b[0] as i8),
            (1, false) => i64::from(b[0]),
            (2, true) => i64::from(i16::from_ne_bytes(b.try_into().ok()?)),
            (2, false) => i64::from(u16::from_ne_bytes(b.try_into().ok()?)),
            (4, true) => i64::from(i32::from_ne_bytes(b.try_into().ok()?)),
            (4, false) => i64::from(u32::from_ne_bytes(b.try_into().ok()?)),
            (8, _) => i64::from_ne_bytes(b.try_into().ok()?),
            _ => return None,
        })
    }

    /// The field's bits as an unsigned number, zero-extended from its size
    /// (a flag word such as `prev_state`, an address); `None` as for
    /// [`Field::int`].
    pub fn bits(&self, raw: &[u8]) -> Option<u64> {
        let v = self.int(raw)?;
        Some(match self.size {
            8 => v as u64,
            n => (v as u64) & ((1u64 << (n * 8)) - 1),
        })
    }

    /// The field as a string: a `char[N]` up to its first NUL, or a
    /// dynamic string behind its location word; `None` when the record
    /// is too short for it. Bytes that are not UTF-8 are replaced.
    pub fn string(&self, raw: &[u8]) -> Option<String> {
        let bytes = match self.place {
            Place::Inline => self.bytes(raw)?,
            Place::DataLoc | Place::RelLoc => {
                let word = u32::from_ne_bytes(self.bytes(raw)?.try_into().ok()?);
                let mut start = (word & 0xffff) as usize;
                if self.place == Place::RelLoc {
                    start += self.offset + self.size;
                }
                let len = (word >> 16) as usize;
                raw.get(start..start + len)?
            }
        };
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        Some(String::from_utf8_lossy(&bytes[..end]).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This kernel's (6.18) format files, as tracefs serves them.
    pub(crate) fn fixture(event: &str) -> &'static str {
        match event {
            "sched_switch" => {
                include_str!("../../../../tests/fixtures/tracefs/events/sched/sched_switch/format")
            }
            "irq_handler_entry" => include_str!(
                "../../../../tests/fixtures/tracefs/events/irq/irq_handler_entry/format"
            ),
            "hrtimer_start" => {
                include_str!("../../../../tests/fixtures/tracefs/events/timer/hrtimer_start/format")
            }
            _ => unreachable!("{event}"),
        }
    }

    fn field(name: &str, ctype: &str, offset: usize, size: usize, signed: bool) -> Field {
        Field {
            name: name.to_string(),
            ctype: ctype.to_string(),
            offset,
            size,
            signed,
            place: Place::Inline,
        }
    }

    #[test]
    fn sched_switch_of_linux_6_18_parses_field_by_field() {
        let f = Format::parse(fixture("sched_switch")).unwrap();
        assert_eq!(f.name, "sched_switch");
        assert_eq!(f.id, Some(372));
        assert_eq!(
            f.fields,
            vec![
                field("common_type", "unsigned short", 0, 2, false),
                field("common_flags", "unsigned char", 2, 1, false),
                field("common_preempt_count", "unsigned char", 3, 1, false),
                field("common_pid", "int", 4, 4, true),
                field("prev_comm", "char[16]", 8, 16, false),
                field("prev_pid", "pid_t", 24, 4, true),
                field("prev_prio", "int", 28, 4, true),
                field("prev_state", "long", 32, 8, true),
                field("next_comm", "char[16]", 40, 16, false),
                field("next_pid", "pid_t", 56, 4, true),
                field("next_prio", "int", 60, 4, true),
            ]
        );
    }

    #[test]
    fn data_loc_string_and_pointer_fields_parse() {
        let f = Format::parse(fixture("irq_handler_entry")).unwrap();
        assert_eq!(f.id, Some(225));
        assert_eq!(
            f.field("name").unwrap(),
            &Field {
                name: "name".to_string(),
                ctype: "__data_loc char[]".to_string(),
                offset: 12,
                size: 4,
                signed: false,
                place: Place::DataLoc,
            }
        );
        let h = Format::parse(fixture("hrtimer_start")).unwrap();
        assert_eq!(
            h.field("hrtimer").unwrap(),
            &field("hrtimer", "void *", 8, 8, false)
        );
        assert_eq!(
            h.field("expires").unwrap(),
            &field("expires", "s64", 24, 8, true)
        );
        assert_eq!(
            h.field("was_armed").unwrap(),
            &field("was_armed", "bool", 44, 1, false)
        );
        assert_eq!(h.field("nothing"), None);
    }

    #[test]
    fn values_are_read_by_size_and_sign() {
        let mut raw = vec![0u8; 24];
        raw[0..2].copy_from_slice(&0xfffeu16.to_ne_bytes());
        raw[4..8].copy_from_slice(&(-5i32).to_ne_bytes());
        raw[8..16].copy_from_slice(&0x8000_0000_0000_0001u64.to_ne_bytes());
        raw[16..20].copy_from_slice(&0xffff_ffffu32.to_ne_bytes());
        raw[20] = 0xff;
        assert_eq!(
            field("a", "unsigned short", 0, 2, false).int(&raw),
            Some(0xfffe)
        );
        assert_eq!(field("a", "short", 0, 2, true).int(&raw), Some(-2));
        assert_eq!(field("a", "int", 4, 4, true).int(&raw), Some(-5));
        assert_eq!(field("a", "int", 4, 4, true).bits(&raw), Some(0xffff_fffb));
        assert_eq!(
            field("a", "void *", 8, 8, false).bits(&raw),
            Some(0x8000_0000_0000_0001)
        );
        assert_eq!(
            field("a", "unsigned int", 16, 4, false).int(&raw),
            Some(0xffff_ffff)
        );
        assert_eq!(field("a", "char", 20, 1, true).int(&raw), Some(-1));
        assert_eq!(field("a", "u8[3]", 20, 3, false).int(&raw), None);
        assert_eq!(field("a", "long", 20, 8, true).int(&raw), None);
    }

    #[test]
    fn strings_end_at_their_nul_in_place_or_behind_their_location() {
        let mut raw = vec![0u8; 32];
        raw[8..13].copy_from_slice(b"ktime");
        assert_eq!(
            field("comm", "char[16]", 8, 16, false).string(&raw),
            Some("ktime".to_string())
        );
        // __data_loc at 24: "eth0\0" at offset 26 (from the start), 5 bytes.
        let loc = |place, word: u32| {
            let mut r = raw.clone();
            r[24..28].copy_from_slice(&word.to_ne_bytes());
            r.truncate(28);
            r.extend_from_slice(b"eth0\0");
            Field {
                place,
                ..field("name", "__data_loc char[]", 24, 4, false)
            }
            .string(&r)
        };
        assert_eq!(
            loc(Place::DataLoc, (5 << 16) | 28),
            Some("eth0".to_string())
        );
        // __rel_loc: counted from the end of the word (28).
        assert_eq!(loc(Place::RelLoc, 5 << 16), Some("eth0".to_string()));
        // A location past the record's end.
        assert_eq!(loc(Place::DataLoc, (5 << 16) | 30), None);
    }

    #[test]
    fn malformed_files_name_their_line() {
        assert_eq!(
            Format::parse("name: x\nID: 1\nformat:\n")
                .unwrap_err()
                .to_string(),
            "line 3: no field: this is not a tracepoint's format file"
        );
        assert_eq!(
            Format::parse("name: x\nID: one\n").unwrap_err().to_string(),
            "line 2: the ID \"one\" is not a number"
        );
        assert_eq!(
            Format::parse("format:\n\tfield:int irq;\toffset:8;\tsigned:1;\n")
                .unwrap_err()
                .to_string(),
            "line 2: a field needs a declaration, an offset and a size: \"field:int irq;\\toffset:8;\\tsigned:1;\""
        );
        assert_eq!(
            Format::parse("\tfield:irq;\toffset:8;\tsize:4;\tsigned:1;\n")
                .unwrap_err()
                .to_string(),
            "line 1: the field \"irq\" has no type"
        );
        assert_eq!(
            Format::parse("\tfield:int irq;\toffset:x;\tsize:4;\tsigned:1;\n")
                .unwrap_err()
                .to_string(),
            "line 1: offset \"x\" is not a number in \"field:int irq;\\toffset:x;\\tsize:4;\\tsigned:1;\""
        );
    }
}
