//! The spec file as written: serde mirrors of every table, each value
//! kept with its span so errors can name its line, and the mapping of a
//! TOML parser or serde error to the dotted key its span points at. Kept
//! apart from the model so the public types carry no spans and no serde
//! quirks of the file format.

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::check::Checker;
use super::param::{integer, text, texts, RawTable};
use super::SpecError;
use crate::resctrl::Resource;

// ---------------------------------------------------------------------------
// The file as written: every value keeps its span for error lines.

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSpec {
    pub(super) name: Option<Spanned<String>>,
    pub(super) duration: Option<Spanned<String>>,
    pub(super) warmup: Option<Spanned<String>>,
    pub(super) repetitions: Option<Spanned<i64>>,
    pub(super) deployments: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) baseline: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) configuration: Vec<Spanned<RawConfiguration>>,
    #[serde(default)]
    pub(super) scenario: Vec<Spanned<RawScenario>>,
    #[serde(default)]
    pub(super) probe: Vec<Spanned<RawTable>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfiguration {
    pub(super) name: Option<Spanned<String>>,
    pub(super) probe_cpus: Option<Spanned<String>>,
    pub(super) neighbour_cpus: Option<Spanned<String>>,
    pub(super) policy: Option<Spanned<String>>,
    pub(super) priority: Option<Spanned<i64>>,
    pub(super) nice: Option<Spanned<i64>>,
    pub(super) dma_latency: Option<Spanned<bool>>,
    #[serde(default)]
    pub(super) cache: Vec<Spanned<RawCacheGroup>>,
    pub(super) cache_default: Option<Spanned<RawCacheDefault>>,
    pub(super) irq_cpus: Option<Spanned<String>>,
    pub(super) governor: Option<Spanned<String>>,
    pub(super) timer_migration: Option<Spanned<bool>>,
    pub(super) rt_runtime_us: Option<Spanned<i64>>,
    pub(super) min_freq: Option<Spanned<String>>,
    pub(super) max_freq: Option<Spanned<String>>,
    pub(super) fair_server_runtime: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCacheGroup {
    pub(super) group: Option<Spanned<String>>,
    pub(super) cpus: Option<Spanned<String>>,
    pub(super) l3: Option<Spanned<RawWays>>,
    pub(super) l3code: Option<Spanned<RawWays>>,
    pub(super) l3data: Option<Spanned<RawWays>>,
    pub(super) l2: Option<Spanned<RawWays>>,
    pub(super) l2code: Option<Spanned<RawWays>>,
    pub(super) l2data: Option<Spanned<RawWays>>,
    pub(super) mb: Option<Spanned<i64>>,
    pub(super) exclusive: Option<Spanned<bool>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCacheDefault {
    pub(super) l3: Option<Spanned<RawWays>>,
    pub(super) l3code: Option<Spanned<RawWays>>,
    pub(super) l3data: Option<Spanned<RawWays>>,
    pub(super) l2: Option<Spanned<RawWays>>,
    pub(super) l2code: Option<Spanned<RawWays>>,
    pub(super) l2data: Option<Spanned<RawWays>>,
    pub(super) mb: Option<Spanned<i64>>,
}

/// The cache keys of a group's table, by resource.
pub(super) type RawMasks<'a> = [(Resource, &'a Option<Spanned<RawWays>>); 6];

impl RawCacheGroup {
    pub(super) fn masks(&self) -> RawMasks<'_> {
        [
            (Resource::L3, &self.l3),
            (Resource::L3Code, &self.l3code),
            (Resource::L3Data, &self.l3data),
            (Resource::L2, &self.l2),
            (Resource::L2Code, &self.l2code),
            (Resource::L2Data, &self.l2data),
        ]
    }
}

impl RawCacheDefault {
    pub(super) fn masks(&self) -> RawMasks<'_> {
        [
            (Resource::L3, &self.l3),
            (Resource::L3Code, &self.l3code),
            (Resource::L3Data, &self.l3data),
            (Resource::L2, &self.l2),
            (Resource::L2Code, &self.l2code),
            (Resource::L2Data, &self.l2data),
        ]
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawWays {
    pub(super) ways: Option<Spanned<String>>,
    pub(super) mask: Option<Spanned<String>>,
    pub(super) ids: Option<Spanned<Vec<Spanned<i64>>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawScenario {
    pub(super) name: Option<Spanned<String>>,
    pub(super) builtin: Option<Spanned<String>>,
    pub(super) cpus: Option<Spanned<String>>,
    pub(super) usb_path: Option<Spanned<String>>,
    pub(super) rps_cpus: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) neighbour: Vec<Spanned<RawNeighbour>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawNeighbour {
    pub(super) name: Option<Spanned<String>>,
    pub(super) command: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) cpus: Option<Spanned<String>>,
}

/// A `[[probe]]` table as written, split by [`super::param::raw_probes`]
/// (which checked every key and the type of every value): the keys of
/// every probe's model, typed, and the kind's own, kept as written for its
/// check to read by its key table.
pub(super) struct RawProbe {
    pub(super) kind: Option<Spanned<String>>,
    pub(super) name: Option<Spanned<String>>,
    pub(super) period: Option<Spanned<String>>,
    pub(super) threshold: Option<Spanned<String>>,
    pub(super) window: Option<Spanned<String>>,
    pub(super) outliers: Option<Spanned<i64>>,
    pub(super) max_latency: Option<Spanned<String>>,
    pub(super) max_jitter: Option<Spanned<String>>,
    pub(super) max_exec: Option<Spanned<String>>,
    pub(super) scenarios: Option<Spanned<Vec<Spanned<String>>>>,
    pub(super) duration: Option<Spanned<String>>,
    /// The kind's own keys.
    pub(super) own: RawTable,
}

impl RawProbe {
    /// Splits a table whose keys and value types are checked.
    pub(super) fn of(mut t: RawTable) -> RawProbe {
        let mut s = |k: &str| t.remove(k).map(|v| text(&v));
        RawProbe {
            kind: s("kind"),
            name: s("name"),
            period: s("period"),
            threshold: s("threshold"),
            window: s("window"),
            max_latency: s("max_latency"),
            max_jitter: s("max_jitter"),
            max_exec: s("max_exec"),
            duration: s("duration"),
            outliers: t.remove("outliers").map(|v| integer(&v)),
            scenarios: t.remove("scenarios").map(|v| texts(&v)),
            own: t,
        }
    }
}

// ---------------------------------------------------------------------------
// Errors from the TOML parser and serde: find the key from the span.

/// Turns a parser or serde error into `FILE:LINE: KEY: MESSAGE`, finding
/// the key whose name or value the error's span points at.
pub(super) fn serde_error(ck: &Checker, e: &toml::de::Error) -> SpecError {
    let span = e.span().unwrap_or(0..0);
    let key = match toml::de::DeTable::parse(ck.text) {
        Ok(doc) => {
            let mut index = Vec::new();
            index_table(doc.get_ref(), "", &mut index);
            key_at(&index, &span)
        }
        Err(_) => String::new(),
    };
    let mut message = polish(e.message());
    if message == "invalid type: table, expected an array" {
        // `[configuration]` where `[[configuration]]` was meant.
        let table: String = key
            .split('.')
            .map(|part| part.split('[').next().unwrap_or(part))
            .collect::<Vec<_>>()
            .join(".");
        message.push_str(&format!("; write [[{table}]] with double brackets"));
    }
    ck.err(span, &key, message)
}

/// Every key and value span in the document, with its dotted path.
pub(super) fn index_table(
    table: &toml::de::DeTable,
    prefix: &str,
    out: &mut Vec<(Range<usize>, String)>,
) {
    for (k, v) in table.iter() {
        let path = if prefix.is_empty() {
            k.get_ref().to_string()
        } else {
            format!("{prefix}.{}", k.get_ref())
        };
        out.push((k.span(), path.clone()));
        index_value(v, path, out);
    }
}

pub(super) fn index_value(
    v: &Spanned<toml::de::DeValue>,
    path: String,
    out: &mut Vec<(Range<usize>, String)>,
) {
    out.push((v.span(), path.clone()));
    match v.get_ref() {
        toml::de::DeValue::Table(t) => index_table(t, &path, out),
        toml::de::DeValue::Array(a) => {
            for (i, e) in a.iter().enumerate() {
                index_value(e, format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

/// The deepest path whose span equals `span`, else the one whose span most
/// tightly contains it, else none.
pub(super) fn key_at(index: &[(Range<usize>, String)], span: &Range<usize>) -> String {
    let exact = index
        .iter()
        .filter(|(s, _)| s == span)
        .max_by_key(|(_, p)| p.len());
    if let Some((_, p)) = exact {
        return p.clone();
    }
    index
        .iter()
        .filter(|(s, _)| s.start <= span.start && span.end <= s.end && s.start < s.end)
        .min_by_key(|(s, p)| (s.end - s.start, usize::MAX - p.len()))
        .map(|(_, p)| p.clone())
        .unwrap_or_default()
}

/// serde's words for TOML's: `field` → `key`, `i64` → `an integer`, `map`
/// → `table`, `sequence` → `array`.
pub(super) fn polish(message: &str) -> String {
    message
        .replace("unknown field", "unknown key")
        .replace("expected i64", "expected an integer")
        .replace("expected a sequence", "expected an array")
        .replace("invalid type: map", "invalid type: table")
        .replace("invalid type: sequence", "invalid type: array")
}
