//! What an import checks of every row before it copies one.
//!
//! The other file may be crafted: a value that fits SQLite's column type
//! but not what jitterlab reads (`cycles = 9223372036854775807`, whose sum
//! then overflows in every listing of the fleet database; text where a
//! number belongs; a result that is not a result; a histogram that does
//! not decode) would be copied and break `runs` and `report` for every
//! run of the target. So every value of every table an import copies is
//! checked here, on the migrated copy, before the target is written:
//!
//! - its SQLite type is the column's declared one (`NULL` only where the
//!   schema allows it), text is UTF-8 and at most [`MAX_TEXT`] bytes, a
//!   blob at most [`MAX_BLOB`];
//! - an integer lies in its column's range ([`range`]): counts and cycle
//!   numbers are never negative and stay far from where a sum over a run
//!   could overflow, nanoseconds stay within [`NS`], thread and CPU numbers
//!   within `i32`;
//! - a run's and a cell's status and kind are words jitterlab stores; JSON
//!   is decoded into the type the reports read (a result, a cell's
//!   context and plan, a bench's spec, the command line), HDR and 1 µs
//!   histograms with the code the reports decode them with;
//! - the window cycles of one run sum to at most [`NS`].
//!
//! The first value that fails is refused (bad input, exit 2) naming the
//! table, the row and the column. The work is bounded: at most
//! [`MAX_ROWS`] rows in all, and the check and the copy together stop at
//! the import's deadline ([`super::TIME_LIMIT`]) or on a terminating
//! signal.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::{anyhow, Result};
use jitterlab_core::cell::{CellContext, CellStatus};
use jitterlab_core::limits::MAX_HISTOGRAM_BUCKETS;
use jitterlab_core::result::RunResult;
use rusqlite::types::ValueRef;
use rusqlite::Connection;

use super::super::windows::CellPlanJson;
use super::super::{fine, plots, BenchSpecJson, RunKind, RunStatus};
use crate::error::bad;

/// The longest text an import takes in one value, bytes.
pub const MAX_TEXT: usize = 16 << 20;
/// The largest blob an import takes in one value, bytes.
pub const MAX_BLOB: usize = 64 << 20;
/// The most rows an import reads from one file, every table together.
pub const MAX_ROWS: u64 = 200_000_000;
/// The largest magnitude of a value in nanoseconds (2^56 ns: 833 days),
/// and of a run's cycles summed.
pub const NS: i64 = 1 << 56;
/// The largest count of one row (cycles, samples, overruns: 2^44).
const COUNT: i64 = 1 << 44;

/// The range of integer column `column`.
fn range(column: &str) -> (i64, i64) {
    match column {
        "thread" => (-1, i32::MAX.into()),
        "cpu" | "rank" | "repetition" | "result_schema" | "pid" | "bucket_us" | "bucket_count" => {
            (0, i32::MAX.into())
        }
        "realtime" => (0, 1),
        "cycles" | "count" | "overruns" | "over_threshold" | "overflows" => (0, COUNT),
        "cycle" | "value" | "window" => (0, NS),
        _ => (-NS, NS),
    }
}

/// One column as the schema declares it.
struct Column {
    name: String,
    /// `INTEGER`, `TEXT` or `BLOB`.
    kind: String,
    not_null: bool,
}

/// Checks every row of the tables an import copies (see the module doc)
/// in `conn` (the migrated copy of `origin`), stopping at `deadline`.
pub(super) fn check_rows(
    conn: &Connection,
    origin: &Path,
    deadline: Instant,
    stop: &AtomicBool,
) -> Result<()> {
    let mut rows = 0u64;
    let tables = ["runs", "cells"]
        .into_iter()
        .chain(super::CHILD_TABLES.iter().map(|(t, _)| *t));
    for table in tables {
        check_table(conn, origin, table, (deadline, stop), &mut rows)?;
    }
    let over: Option<i64> = conn
        .query_row(
            "SELECT c.run_id FROM windows w JOIN cells c ON c.id = w.cell_id
             GROUP BY c.run_id HAVING TOTAL(w.cycles) > ?1 LIMIT 1",
            [NS],
            |r| r.get(0),
        )
        .ok();
    if let Some(run) = over {
        return Err(bad(format!(
            "{}: the windows of run {run} sum to more than {NS} cycles; it cannot be a measurement: not imported",
            origin.display()
        )));
    }
    Ok(())
}

fn check_table(
    conn: &Connection,
    origin: &Path,
    table: &str,
    (deadline, stop): (Instant, &AtomicBool),
    rows: &mut u64,
) -> Result<()> {
    let columns: Vec<Column> = {
        let mut stmt = conn.prepare(&format!("PRAGMA main.table_info(\"{table}\")"))?;
        let cols = stmt.query_map([], |r| {
            Ok(Column {
                name: r.get(1)?,
                kind: r.get::<_, String>(2)?.to_ascii_uppercase(),
                not_null: r.get(3)?,
            })
        })?;
        cols.collect::<rusqlite::Result<_>>()?
    };
    let names: Vec<String> = columns.iter().map(|c| format!("\"{}\"", c.name)).collect();
    let mut stmt = conn.prepare(&format!(
        "SELECT {} FROM main.\"{table}\"",
        names.join(", ")
    ))?;
    let mut cursor = stmt.query([])?;
    let mut n = 0u64;
    while let Some(row) = cursor.next()? {
        n += 1;
        *rows += 1;
        if *rows > MAX_ROWS {
            return Err(bad(format!(
                "{} holds more than {MAX_ROWS} rows; an import takes at most that many: not imported",
                origin.display()
            )));
        }
        if n.is_multiple_of(1024) && stop.load(Ordering::Relaxed) {
            return Err(super::stopped(origin));
        }
        if n.is_multiple_of(1024) && Instant::now() > deadline {
            return Err(super::too_long(origin));
        }
        for (i, col) in columns.iter().enumerate() {
            if let Err(why) = check_value(table, col, row.get_ref(i)?) {
                // The row by its key: the first column (`id`, `run_id`,
                // `cell_id`) and its place in the table.
                let key = match row.get_ref(0)? {
                    ValueRef::Integer(k) => format!(" ({} {k})", columns[0].name),
                    _ => String::new(),
                };
                return Err(refusal(origin, table, n, &key, &col.name, &why));
            }
        }
        if table == "histograms_1us" {
            if let Err(why) = check_fine(row) {
                return Err(refusal(
                    origin,
                    table,
                    n,
                    "",
                    "buckets",
                    &format!("{why:#}"),
                ));
            }
        }
    }
    Ok(())
}

/// The refusal of a value: the file, the table, the row (its place, and
/// its key when it has one), the column, what is wrong.
fn refusal(
    origin: &Path,
    table: &str,
    n: u64,
    key: &str,
    column: &str,
    why: &str,
) -> anyhow::Error {
    bad(format!(
        "{}: table {table}, row {n}{key}, column {column}: {why}; not imported",
        origin.display()
    ))
}

/// Decodes the bins of a `histograms_1us` row (`cell_id, thread, metric,
/// bucket_us, bucket_count, buckets, …`, whose types are checked) as the
/// reports do.
fn check_fine(row: &rusqlite::Row<'_>) -> Result<()> {
    let bucket_us: i64 = row.get(3)?;
    let bucket_count: i64 = row.get(4)?;
    let buckets: Vec<u8> = row.get(5)?;
    if bucket_us != fine::BUCKET_US {
        return Err(anyhow!(
            "bins {bucket_us} µs wide; jitterlab stores 1 µs bins"
        ));
    }
    let count = usize::try_from(bucket_count)
        .ok()
        .filter(|&n| n as u64 <= MAX_HISTOGRAM_BUCKETS)
        .ok_or_else(|| {
            anyhow!("{bucket_count} bins, where at most {MAX_HISTOGRAM_BUCKETS} are kept")
        })?;
    fine::decode_buckets(&buckets, count).map(drop)
}

/// What is wrong with `value` of `col` in `table`, if anything.
fn check_value(table: &str, col: &Column, value: ValueRef<'_>) -> Result<(), String> {
    let text = match value {
        ValueRef::Null if col.not_null => return Err("NULL where a value is needed".into()),
        ValueRef::Null => return Ok(()),
        ValueRef::Integer(v) if col.kind == "INTEGER" => {
            let (lo, hi) = range(&col.name);
            return if (lo..=hi).contains(&v) {
                Ok(())
            } else {
                Err(format!("{v} is out of range ({lo} to {hi})"))
            };
        }
        ValueRef::Text(t) if col.kind == "TEXT" => {
            if t.len() > MAX_TEXT {
                return Err(format!("{} bytes of text, more than {MAX_TEXT}", t.len()));
            }
            std::str::from_utf8(t).map_err(|_| "text that is not UTF-8".to_string())?
        }
        ValueRef::Blob(b) if col.kind == "BLOB" => {
            if b.len() > MAX_BLOB {
                return Err(format!("a blob of {} bytes, more than {MAX_BLOB}", b.len()));
            }
            return check_blob(table, &col.name, b).map_err(|e| format!("{e:#}"));
        }
        other => {
            let found = match other {
                ValueRef::Integer(_) => "an integer",
                ValueRef::Real(_) => "a real number",
                ValueRef::Text(_) => "text",
                _ => "a blob",
            };
            return Err(format!("{found} where the schema has {}", col.kind));
        }
    };
    check_text(table, &col.name, text).map_err(|e| format!("{e:#}"))
}

/// Decodes a text value that jitterlab reads as more than text.
fn check_text(table: &str, column: &str, text: &str) -> Result<()> {
    fn json<T: serde::de::DeserializeOwned>(text: &str, what: &str) -> Result<()> {
        serde_json::from_str::<T>(text)
            .map(drop)
            .map_err(|e| anyhow!("not {what}: {e}"))
    }
    match (table, column) {
        ("runs", "status") => RunStatus::parse(text)
            .map(drop)
            .ok_or_else(|| anyhow!("{text:?} is not a run status")),
        ("runs", "kind") => RunKind::parse(text)
            .map(drop)
            .ok_or_else(|| anyhow!("{text:?} is not a run kind")),
        ("cells", "status") => CellStatus::parse(text)
            .map(drop)
            .ok_or_else(|| anyhow!("{text:?} is not a cell status")),
        (_, "result_json") => json::<RunResult>(text, "a result jitterlab reads"),
        ("cells", "context_json") => json::<CellContext>(text, "a cell's context"),
        ("cells", "plan_json") => json::<CellPlanJson>(text, "a cell's plan"),
        ("runs", "spec_json") => json::<BenchSpecJson>(text, "a bench's spec"),
        ("runs", "command_line") => json::<Vec<String>>(text, "a command line"),
        (_, c) if c.ends_with("_json") => json::<serde_json::Value>(text, "JSON"),
        _ => Ok(()),
    }
}

/// Decodes a blob with the code the reports read it with.
fn check_blob(table: &str, column: &str, blob: &[u8]) -> Result<()> {
    match (table, column) {
        // An empty blob: no histogram was stored.
        ("metrics", _) if blob.is_empty() => Ok(()),
        ("metrics", _) => plots::deserialize(blob, "the metric").map(drop),
        // The bins are decoded with their row's count ([`check_fine`]).
        ("histograms_1us", "overflow_cycles") => fine::decode_numbers(blob).map(drop),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
