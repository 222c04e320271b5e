//! Schemata lines: the kernel's `NAME:ID=VALUE;…` grammar, read in its
//! padded and compact forms, merged, and written back.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::Resource;

/// One schemata line: a resource and its value per domain (cache id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemataLine {
    /// The resource's name as the kernel spells it (`L3`, `MB`, `SMBA` …).
    pub resource: String,
    /// `(cache id, value)` in the order given: a mask for caches, a
    /// bandwidth for `MB`.
    pub values: Vec<(u32, u64)>,
}

impl SchemataLine {
    /// The line for `resource` with `value` on each of `ids`.
    pub fn new(resource: Resource, ids: &[u32], value: u64) -> SchemataLine {
        SchemataLine {
            resource: resource.name().to_string(),
            values: ids.iter().map(|&id| (id, value)).collect(),
        }
    }

    /// True when the values are bandwidths (decimal), not masks (hex).
    pub fn is_bandwidth(&self) -> bool {
        is_bandwidth_name(&self.resource)
    }

    /// The value on cache id `id`.
    pub fn get(&self, id: u32) -> Option<u64> {
        self.values.iter().find(|(i, _)| *i == id).map(|(_, v)| *v)
    }

    /// `VALUE` as the kernel writes it unpadded: hex for masks, decimal
    /// for bandwidths.
    fn value_text(&self, value: u64) -> String {
        if self.is_bandwidth() {
            value.to_string()
        } else {
            format!("{value:x}")
        }
    }

    /// The line as jitterlab writes it, one resource per write, with the
    /// trailing newline the kernel requires: `L3:0=c0;1=c0\n`.
    pub fn to_write(&self) -> String {
        let mut s = format!("{}:", self.resource);
        for (i, (id, v)) in self.values.iter().enumerate() {
            if i > 0 {
                s.push(';');
            }
            s.push_str(&format!("{id}={}", self.value_text(*v)));
        }
        s.push('\n');
        s
    }
}

impl fmt::Display for SchemataLine {
    /// The line without its newline: `L3:0=c0;1=c0`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.to_write().trim_end())
    }
}

/// A whole schemata file.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Schemata {
    /// The lines in file order.
    pub lines: Vec<SchemataLine>,
}

/// Parses a schemata file or a write to one: padded or compact, a trailing
/// `;` allowed, masks with or without `0x`. Empty lines are skipped.
pub fn parse_schemata(text: &str) -> Result<Schemata, String> {
    let mut lines = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() {
            continue;
        }
        let Some((name, rest)) = line.split_once(':') else {
            return Err(format!(
                "schemata line {line:?} has no \":\"; expected RESOURCE:ID=VALUE;…"
            ));
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("schemata line {line:?} names no resource"));
        }
        let mut values = Vec::new();
        for token in rest.split(';') {
            let token = token.trim();
            if token.is_empty() {
                continue;
            }
            let Some((id, value)) = token.split_once('=') else {
                return Err(format!("schemata line {line:?}: {token:?} is not ID=VALUE"));
            };
            let id: u32 = id.trim().parse().map_err(|_| {
                format!("schemata line {line:?}: {:?} is not a cache id", id.trim())
            })?;
            let value = value.trim();
            let parsed = if is_bandwidth_name(name) {
                value.parse::<u64>().ok()
            } else {
                let hex = value
                    .strip_prefix("0x")
                    .or_else(|| value.strip_prefix("0X"))
                    .unwrap_or(value);
                u64::from_str_radix(hex, 16)
                    .ok()
                    .filter(|_| !hex.is_empty())
            };
            let Some(value) = parsed else {
                return Err(format!(
                    "schemata line {line:?}: {value:?} is not a {}",
                    if is_bandwidth_name(name) {
                        "decimal bandwidth"
                    } else {
                        "hex mask"
                    }
                ));
            };
            values.push((id, value));
        }
        lines.push(SchemataLine {
            resource: name.to_string(),
            values,
        });
    }
    Ok(Schemata { lines })
}

/// The padding of a schemata file as the kernel printed it: the width of
/// the right-aligned resource names and of the values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Layout {
    /// Width of the name column (the `:` follows it).
    pub name_width: usize,
    /// Width of every value (masks zero-padded, bandwidths space-padded).
    pub data_width: usize,
}

impl Layout {
    /// The layout of `text` as read from a schemata file.
    pub fn of(text: &str) -> Layout {
        let mut layout = Layout::default();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            let Some((name, rest)) = line.split_once(':') else {
                continue;
            };
            layout.name_width = layout.name_width.max(name.len());
            for token in rest.split(';') {
                if let Some((_, value)) = token.split_once('=') {
                    layout.data_width = layout.data_width.max(value.trim_end().len());
                }
            }
        }
        layout
    }
}

impl Schemata {
    /// The line of `resource` (kernel name).
    pub fn line(&self, resource: &str) -> Option<&SchemataLine> {
        self.lines.iter().find(|l| l.resource == resource)
    }

    /// The value of `resource` on cache id `id`.
    pub fn value(&self, resource: Resource, id: u32) -> Option<u64> {
        self.line(resource.name())?.get(id)
    }

    /// Applies a write as the kernel does: the named domains of the named
    /// resource take the new values, everything else stays. A resource or
    /// id the file does not have is an error (the kernel refuses it).
    pub fn merge(&mut self, write: &SchemataLine) -> Result<(), String> {
        let Some(line) = self.lines.iter_mut().find(|l| l.resource == write.resource) else {
            return Err(format!(
                "unknown or unsupported resource name '{}'",
                write.resource
            ));
        };
        for (id, v) in &write.values {
            match line.values.iter_mut().find(|(i, _)| i == id) {
                Some(slot) => slot.1 = *v,
                None => return Err(format!("Unknown domain ID {id}")),
            }
        }
        Ok(())
    }

    /// The file as the kernel prints it with `layout`: names right-aligned,
    /// masks zero-padded, bandwidths space-padded, one line each.
    pub fn format_padded(&self, layout: Layout) -> String {
        let mut out = String::new();
        for line in &self.lines {
            out.push_str(&format!("{:>w$}:", line.resource, w = layout.name_width));
            for (i, (id, v)) in line.values.iter().enumerate() {
                if i > 0 {
                    out.push(';');
                }
                if line.is_bandwidth() {
                    out.push_str(&format!("{id}={v:>w$}", w = layout.data_width));
                } else {
                    out.push_str(&format!("{id}={v:0w$x}", w = layout.data_width));
                }
            }
            out.push('\n');
        }
        out
    }
}

/// True for the schemata resources whose values are decimal bandwidths
/// rather than hex masks (`MB`, and AMD's `SMBA`).
fn is_bandwidth_name(name: &str) -> bool {
    name == "MB" || name == "SMBA"
}
