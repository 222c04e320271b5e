//! What a report's header reads of a stored run: its host snapshot, the
//! jitterlab that stored it, the hash of its spec, the preset it came from,
//! its start and duration ([`jitterlab_core::header`]).
//!
//! **The spec hash.** A bench stores its expanded spec as JSON
//! (`runs.spec_json`, [`super::BenchSpecJson::spec`]); a `jitterlab run`
//! stores its parameters (`runs.params_json`). The hash is SHA-256 of that
//! value's canonical text, [`canonical`]: compact JSON with every object's
//! keys in sorted order (serde_json's map is sorted), so the same spec
//! hashes the same whatever whitespace or key order a file was written
//! with, and `sha256sum` of that text on any machine gives it again.

use anyhow::{Context, Result};
use jitterlab_core::header::{Header, RunFacts};
use jitterlab_core::preset::Provenance;
use jitterlab_core::result::HostSnapshot;
use rusqlite::OptionalExtension;
use sha2::{Digest, Sha256};

use super::{BenchSpecJson, Store};

/// The canonical text of a stored JSON value: compact, keys sorted.
pub fn canonical(v: &serde_json::Value) -> String {
    // `Value`'s maps are BTreeMaps (no `preserve_order`): sorted keys.
    v.to_string()
}

/// SHA-256 of [`canonical`]`(v)`, in lowercase hex.
pub fn spec_sha256(v: &serde_json::Value) -> String {
    Sha256::digest(canonical(v).as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The parts of a stored run's row a header reads.
struct Row {
    started_at: String,
    kind: String,
    name: String,
    tool_version: String,
    elapsed_ns: Option<i64>,
    params_json: String,
    spec_json: Option<String>,
    host_json: Option<String>,
}

impl Store {
    /// The header of stored run `run`: its host snapshot (empty when it
    /// has none), the spec's hash and the preset it came from as stored
    /// (a bench stored before presets were kept names none).
    pub fn run_header(&self, run: i64) -> Result<Header> {
        let row = self
            .conn
            .query_row(
                "SELECT r.started_at, r.kind, COALESCE(r.name, r.probe), r.tool_version,
                        r.elapsed_ns, r.params_json, r.spec_json, h.snapshot_json
                 FROM runs r LEFT JOIN hosts h ON h.run_id = r.id WHERE r.id = ?1",
                [run],
                |r| {
                    Ok(Row {
                        started_at: r.get(0)?,
                        kind: r.get(1)?,
                        name: r.get(2)?,
                        tool_version: r.get(3)?,
                        elapsed_ns: r.get(4)?,
                        params_json: r.get(5)?,
                        spec_json: r.get(6)?,
                        host_json: r.get(7)?,
                    })
                },
            )
            .optional()?
            .with_context(|| {
                format!("there is no run {run} in the database; list the runs with: jitterlab runs")
            })?;
        // A snapshot this version cannot read (or none) leaves the
        // machine's lines "unknown"; the figures still report.
        let host: HostSnapshot = row
            .host_json
            .as_deref()
            .and_then(|j| serde_json::from_str(j).ok())
            .unwrap_or_default();
        let (hashed, source) = match &row.spec_json {
            Some(j) => {
                let s: BenchSpecJson = serde_json::from_str(j)
                    .with_context(|| format!("reading the spec of run {run}"))?;
                (Some(s.spec), s.source)
            }
            None => (serde_json::from_str(&row.params_json).ok(), None),
        };
        let spec = match row.kind.as_str() {
            "bench" => row.name,
            _ => format!("jitterlab run {}, from the command line", row.name),
        };
        Ok(Header::new(
            &host,
            RunFacts {
                tool_version: row.tool_version,
                spec,
                spec_sha256: hashed.as_ref().map(spec_sha256),
                source,
                started_at: row.started_at,
                duration_ns: row.elapsed_ns.and_then(|n| u64::try_from(n).ok()),
            },
        ))
    }
}

/// What a bench stores of the preset it ran: its [`Provenance`]; `None`
/// for a spec file.
pub fn preset_source(preset: Option<&str>) -> Option<Provenance> {
    preset.and_then(jitterlab_core::preset::provenance)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hash_is_of_the_canonical_text_whatever_the_key_order() {
        let a: serde_json::Value = serde_json::from_str(r#"{"b": 1, "a": [true, "x"]}"#).unwrap();
        let b: serde_json::Value =
            serde_json::from_str("{\n  \"a\":[true,\"x\"],\n  \"b\":1\n}").unwrap();
        assert_eq!(canonical(&a), r#"{"a":[true,"x"],"b":1}"#);
        // printf '{"a":[true,"x"],"b":1}' | sha256sum
        assert_eq!(
            spec_sha256(&a),
            "f15ef113d6e0c876b9ea9e90ebc36ad3f8b350d44634ba2fc407e978fb8cebeb"
        );
        assert_eq!(spec_sha256(&a), spec_sha256(&b));
    }
}
