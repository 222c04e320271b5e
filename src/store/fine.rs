//! The 1 µs histogram of every cell's main latency, as cyclictest's `-h`
//! counts it: stored beside the HDR histograms, read back for plots and for
//! cyclictest's text.
//!
//! The HDR histograms of `metrics` give exact percentiles, but above 16 µs
//! their buckets are 16 ns wide and straddle 1 µs bins, so the histogram a
//! cyclictest user plots cannot be rebuilt from them. Every probe thread's
//! recorder therefore keeps its probe's main latency in 1 µs bins
//! ([`LatencyHistogram`]); a cell stores it when it ends, in the same
//! transaction as its metrics (schema 5).
//!
//! # The table
//!
//! ```text
//! histograms_1us (
//!     cell_id         INTEGER NOT NULL   the cell (cells.id)
//!     thread          INTEGER NOT NULL   probe thread index; -1: every thread combined
//!     metric          TEXT    NOT NULL   the metric counted: the probe's main latency
//!     bucket_us       INTEGER NOT NULL   bin width, µs: 1
//!     bucket_count    INTEGER NOT NULL   bins kept: [0, bucket_count) µs; beyond is overflow
//!     buckets         BLOB    NOT NULL   the non-zero bins (below)
//!     overflows       INTEGER NOT NULL   samples at or beyond bucket_count µs
//!     overflow_cycles BLOB    NOT NULL   cycle (sample) numbers of the first overflows
//!     PRIMARY KEY (cell_id, thread, metric)
//! ) WITHOUT ROWID
//! ```
//!
//! Without rowid, like `window_metrics`: one b-tree, no separate index, and
//! the schema stays on the file's first page. SQLite forbids NULL in the
//! primary key of such a table, so where `metrics` writes NULL for "every
//! thread combined" this table writes −1. The combined row exists when the
//! cell had several threads (as the combined metrics do): the bins added
//! thread by thread, the overflows summed, no overflow cycle numbers (one
//! thread's numbers say nothing of another's cycles).
//!
//! Cells stored before schema 5, cells whose process died before they
//! ended (the histogram lives in the probe thread until then), probes
//! without a main latency (the chase, in cycles) and probes whose figures
//! come from an external tool (rtla's timerlat) have no row.
//!
//! # The blobs
//!
//! Both are sequences of unsigned LEB128 varints (7 bits a byte, least
//! significant group first, the high bit set on every byte but the last;
//! the `leb128` crate's encoding):
//!
//! * `buckets`: one pair `(gap, count)` per non-zero bin, in ascending
//!   order: `gap` is the number of empty bins skipped since the previous
//!   non-zero bin (since bin 0 for the first), `count` its count (≥ 1). An
//!   empty histogram is an empty blob. Bins `[0, 3, 0, 0, 200]` are the pairs
//!   (1, 3) and (2, 200), the bytes `01 03 02 c8 01`. A wake-up histogram
//!   has tens to hundreds of non-zero bins among its 10 000, so the blob is
//!   a few hundred bytes where the dense array is 80 kB.
//! * `overflow_cycles`: the first number, then each next one's difference
//!   from the one before (wrapping, so any sequence round-trips; the
//!   numbers grow, so each difference is small).
//!
//! The sparse layer is written here because it is the format itself; the
//! varints are the `leb128` crate's.

use std::collections::HashMap;

use anyhow::{anyhow, bail, Context, Result};
use jitterlab_core::limits::MAX_HISTOGRAM_BUCKETS;
use jitterlab_core::recorder::{FineHistogram, LatencyHistogram};
use rusqlite::{params, OptionalExtension};

use super::{i, Store, StoredHistogram};

/// The table of schema 5 (made by migration 4 → 5, squeezed like the
/// others: see `schema::NAMED_TABLES`).
pub(super) const TABLE: &str = r#"
    CREATE TABLE histograms_1us (
        cell_id         INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
        thread          INTEGER NOT NULL,
        metric          TEXT    NOT NULL,
        bucket_us       INTEGER NOT NULL,
        bucket_count    INTEGER NOT NULL,
        buckets         BLOB    NOT NULL,
        overflows       INTEGER NOT NULL,
        overflow_cycles BLOB    NOT NULL,
        PRIMARY KEY (cell_id, thread, metric)
    ) WITHOUT ROWID;
"#;

/// `thread` of the row of every thread combined.
const COMBINED: i64 = -1;

/// The bin width this jitterlab writes and reads, µs.
pub(super) const BUCKET_US: i64 = 1;

/// One varint onto `out`.
fn put(out: &mut Vec<u8>, v: u64) {
    // Writing into a Vec cannot fail.
    let _ = leb128::write::unsigned(out, v);
}

/// The next varint of `blob`, which it consumes; `what` names the blob in
/// the error.
fn take(blob: &mut &[u8], what: &str) -> Result<u64> {
    leb128::read::unsigned(blob).map_err(|e| match e {
        leb128::read::Error::Overflow => anyhow!("{what}: a number larger than 64 bits"),
        leb128::read::Error::IoError(_) => anyhow!("{what}: cut short inside a number"),
    })
}

/// The `buckets` blob of `buckets` (module doc).
pub(crate) fn encode_buckets(buckets: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut next = 0usize;
    for (i, &c) in buckets.iter().enumerate().filter(|(_, &c)| c > 0) {
        put(&mut out, (i - next) as u64);
        put(&mut out, c);
        next = i + 1;
    }
    out
}

/// The `bucket_count` bins of a `buckets` blob; an error says what is
/// wrong with a blob this module did not write.
pub(crate) fn decode_buckets(mut blob: &[u8], bucket_count: usize) -> Result<Vec<u64>> {
    let mut buckets = vec![0u64; bucket_count];
    let mut next = 0u64;
    while !blob.is_empty() {
        let gap = take(&mut blob, "the bins")?;
        let count = take(&mut blob, "the bins")?;
        let at = next
            .checked_add(gap)
            .filter(|&at| at < bucket_count as u64)
            .ok_or_else(|| anyhow!("the bins: a bin past the last of {bucket_count}"))?;
        if count == 0 {
            bail!("the bins: bin {at} is listed with a count of 0");
        }
        buckets[at as usize] = count;
        next = at + 1;
    }
    Ok(buckets)
}

/// The `overflow_cycles` blob of `numbers` (module doc).
pub(crate) fn encode_numbers(numbers: &[u64]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut last = 0u64;
    for &n in numbers {
        put(&mut out, n.wrapping_sub(last));
        last = n;
    }
    out
}

/// The numbers of an `overflow_cycles` blob.
pub(crate) fn decode_numbers(mut blob: &[u8]) -> Result<Vec<u64>> {
    let mut numbers = Vec::new();
    let mut last = 0u64;
    while !blob.is_empty() {
        last = last.wrapping_add(take(&mut blob, "the overflow cycle numbers")?);
        numbers.push(last);
    }
    Ok(numbers)
}

/// Stores the 1 µs histograms among `histograms` (those that carry one)
/// as rows of cell `cell`, inside the caller's transaction.
pub(super) fn insert(
    tx: &rusqlite::Transaction<'_>,
    cell: i64,
    histograms: &[StoredHistogram],
) -> Result<()> {
    let mut stmt =
        tx.prepare_cached("INSERT INTO histograms_1us VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)")?;
    for h in histograms {
        let Some(fine) = &h.fine else { continue };
        stmt.execute(params![
            cell,
            h.thread.map_or(COMBINED, i64::from),
            h.metric,
            BUCKET_US,
            i(fine.buckets.len() as u64),
            encode_buckets(&fine.buckets),
            i(fine.overflows),
            encode_numbers(&fine.overflow_cycles),
        ])?;
    }
    Ok(())
}

/// One stored row, as read.
struct Row {
    cell: i64,
    thread: i64,
    metric: String,
    bucket_us: i64,
    bucket_count: i64,
    buckets: Vec<u8>,
    overflows: i64,
    overflow_cycles: Vec<u8>,
}

impl Row {
    /// The histogram the row holds.
    fn histogram(self) -> Result<FineHistogram> {
        if self.bucket_us != BUCKET_US {
            bail!(
                "its bins are {} µs wide; this jitterlab reads 1 µs bins: use a newer jitterlab",
                self.bucket_us
            );
        }
        let bucket_count = usize::try_from(self.bucket_count)
            .ok()
            .filter(|&n| n as u64 <= MAX_HISTOGRAM_BUCKETS)
            .ok_or_else(|| {
                anyhow!(
                    "{} bins, where at most {MAX_HISTOGRAM_BUCKETS} are kept",
                    self.bucket_count
                )
            })?;
        let thread = match self.thread {
            COMBINED => None,
            t => Some(u32::try_from(t).map_err(|_| anyhow!("thread {t}"))?),
        };
        Ok(FineHistogram {
            thread,
            metric: self.metric,
            hist: LatencyHistogram {
                buckets: decode_buckets(&self.buckets, bucket_count)?,
                overflows: u64::try_from(self.overflows)
                    .map_err(|_| anyhow!("{} overflows", self.overflows))?,
                overflow_cycles: decode_numbers(&self.overflow_cycles)?,
            },
        })
    }
}

impl Store {
    /// The 1 µs histograms of run `run`: one list per cell, in the order of
    /// [`Store::load_run`]'s cells; in each, the threads' in thread order,
    /// then the combined one (when the cell had several threads). A cell
    /// without any (module doc) has an empty list.
    pub fn load_histograms_1us(&self, run: i64) -> Result<Vec<Vec<FineHistogram>>> {
        let r = self.load_histograms_1us_inner(run);
        self.named(r)
    }

    /// The work of [`Store::load_histograms_1us`].
    fn load_histograms_1us_inner(&self, run: i64) -> Result<Vec<Vec<FineHistogram>>> {
        let exists: Option<i64> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [run], |r| r.get(0))
            .optional()?;
        if exists.is_none() {
            bail!("there is no run {run} in the database; list the runs with: jitterlab runs");
        }
        let mut stmt = self
            .conn
            .prepare("SELECT id, name FROM cells WHERE run_id = ?1 ORDER BY id")?;
        let cells: Vec<(i64, String)> = stmt
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        let at: HashMap<i64, usize> = cells.iter().enumerate().map(|(k, c)| (c.0, k)).collect();
        let mut out: Vec<Vec<FineHistogram>> = vec![Vec::new(); cells.len()];
        let mut stmt = self.conn.prepare(
            "SELECT h.cell_id, h.thread, h.metric, h.bucket_us, h.bucket_count, h.buckets,
                    h.overflows, h.overflow_cycles
             FROM cells c JOIN histograms_1us h ON h.cell_id = c.id
             WHERE c.run_id = ?1
             ORDER BY h.cell_id, h.thread < 0, h.thread, h.metric",
        )?;
        let rows = stmt.query_map([run], |r| {
            Ok(Row {
                cell: r.get(0)?,
                thread: r.get(1)?,
                metric: r.get(2)?,
                bucket_us: r.get(3)?,
                bucket_count: r.get(4)?,
                buckets: r.get(5)?,
                overflows: r.get(6)?,
                overflow_cycles: r.get(7)?,
            })
        })?;
        for row in rows {
            let row = row?;
            let k = at[&row.cell];
            let (thread, metric) = (row.thread, row.metric.clone());
            let h = row.histogram().with_context(|| {
                let whose = match thread {
                    COMBINED => "every thread".to_string(),
                    t => format!("thread {t}"),
                };
                format!(
                    "reading the 1 µs histogram of {metric} of run {run}, cell {}, {whose}",
                    cells[k].1
                )
            })?;
            out[k].push(h);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests;
