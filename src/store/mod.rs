//! The results database: every run, stored as it happens, in SQLite.
//!
//! One file (default `./jitterlab.db`, `--db PATH`) holds every run with its
//! host snapshot, its cells, the statistics of every metric with the
//! serialized HDR histograms behind them, every window row and the outliers.
//! Metrics are data, not columns: every figure is stored under the name the
//! probe's descriptor gives its metric, so a probe with other or more
//! metrics (and named counters per thread) needs no new column.
//! Reports read only this database (the design: measuring never formats, reporting
//! never measures), so a result can be re-rendered at any time, elsewhere.
//!
//! **Losing nothing** (design rule 7). The database runs in WAL mode with
//! `synchronous = FULL`; the run row is written before the first release, and
//! the writer commits the window rows it drains every 100 ms, so a crash or a
//! power cut costs at most the rows not yet drained — less than one window. A
//! run whose process died (`kill -9`, power loss) stays `running` in the file;
//! the next open of the database to write it sees that its process is gone
//! (pid no longer alive, or another boot) and marks it `interrupted`,
//! keeping every row; an open to read only shows it so ([`open`]).
//!
//! **Trust.** A file is checked before a statement touches it — who can
//! change it, and that its schema holds only jitterlab's tables and no
//! trigger or view ([`trust`]); the commands that only read open it
//! read-only and never create, migrate or mark ([`open`]).
//!
//! **Schema versions.** `PRAGMA user_version` holds the schema version;
//! [`schema`] lists the steps from 0 (empty file) up, applied in order,
//! each in its own transaction. A database from a newer jitterlab is refused
//! with a message rather than misread.
//!
//! Window rows are written and read back in [`windows`]; the 1 µs
//! histogram of each cell's main latency in [`fine`]; a run's kind and
//! status are the types of [`status`]; a run's uid, the choice of runs a
//! listing shows and the run a user names are [`ident`]'s; another
//! machine's runs come in through [`import`]; what the report's plots read,
//! in [`plots`]; the window totals of long and running runs (read
//! incrementally) and the progress `report --follow` polls, in [`speed`].
//!
//! The design rules cited here are in `docs/design.md`.

mod db;
pub(crate) mod fine;
mod header;
mod ident;
pub mod import;
pub mod monitor;
mod open;
mod plots;
mod schema;
mod speed;
mod status;
mod trust;
mod windows;

use anyhow::{bail, Context, Result};
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use jitterlab_core::cell::{CellContext, CellKey, CellStatus, StoredCell, StoredRun};
use jitterlab_core::recorder::LatencyHistogram;
use jitterlab_core::result::{Params, ProbeKind, RunResult, ThreadResult};
use jitterlab_core::stats::MetricSummary;
use jitterlab_core::window::WindowRow;
use rusqlite::{params, Connection, OptionalExtension};

pub use db::Db;
pub use header::{preset_source, spec_sha256};
pub use ident::{check_run_ref, short_id, RunFilter};
pub use open::check_for_writing;
pub use plots::Envelope;
pub use schema::SCHEMA_VERSION;
pub use speed::{LiveCell, RunProgress};
pub use status::{end_label, RunKind, RunStatus};

use windows::CellPlanJson;

/// What is known about a run when it starts.
#[derive(Debug, Clone)]
pub struct RunStart<'a> {
    /// RFC 3339 start time.
    pub started_at: &'a str,
    /// `cyclic`, `wakeup`, …
    pub probe: &'a str,
    /// The command line.
    pub command_line: &'a [String],
    /// Parameters as JSON.
    pub params_json: String,
    /// Host snapshot as JSON.
    pub host_json: String,
    /// Host name and kernel, for listing.
    pub hostname: &'a str,
    /// Kernel release, for listing.
    pub kernel_release: &'a str,
    /// The host's machine id as jitterlab stores it (a hash, see
    /// `system::host::machine_id`); `None` when the machine has none.
    pub machine_id: Option<&'a str>,
    /// Whether the real-time defaults held (`None` for a bench: each cell
    /// says for itself).
    pub realtime: Option<bool>,
    /// `run` or `bench`.
    pub kind: RunKind,
    /// The probe (run) or the spec's name (bench).
    pub name: &'a str,
    /// For a bench: the expanded spec as JSON ([`BenchSpecJson`]).
    pub spec_json: Option<String>,
}

/// What a bench stores of its spec: the names in spec order (reports keep
/// it), the configurations the machine cannot run, and the whole spec.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct BenchSpecJson {
    /// Configuration names in spec order.
    pub configurations: Vec<String>,
    /// Scenario names in spec order.
    pub scenarios: Vec<String>,
    /// Configurations this machine cannot run, with the reason.
    pub unavailable: Vec<(String, String)>,
    /// The expanded spec.
    pub spec: serde_json::Value,
    /// The document the preset it came from reproduces, and what it
    /// emulates; `None` for a spec file and in benches stored before it
    /// was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<jitterlab_core::preset::Provenance>,
}

/// The histograms behind one stored metric summary.
#[derive(Debug, Clone)]
pub struct StoredHistogram {
    /// Thread index; `None` for all threads combined.
    pub thread: Option<u32>,
    /// Metric name.
    pub metric: &'static str,
    /// Values `>= 0`.
    pub positive: Histogram<u64>,
    /// Magnitudes of negative values (signed metrics).
    pub negative: Option<Histogram<u64>>,
    /// The metric in 1 µs bins, for the probe's main latency (stored in
    /// `histograms_1us`, see [`fine`]).
    pub fine: Option<LatencyHistogram>,
}

/// The rows a run started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunIds {
    /// `runs.id`.
    pub run: i64,
    /// `cells.id` of its (for `jitterlab run`: only) cell.
    pub cell: i64,
}

/// One line of `jitterlab runs` (and one object of its `--json`).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct RunRow {
    /// Run id.
    pub id: i64,
    /// The run's uid, the same in every database (see [`ident`]).
    pub uid: String,
    /// Start time.
    pub started_at: String,
    /// `run` or `bench` ([`RunKind::name`]).
    pub kind: String,
    /// The probe (run) or the spec's name (bench).
    pub name: String,
    /// Status ([`RunStatus::name`]).
    pub status: String,
    /// Host name.
    pub hostname: String,
    /// The host's machine id (a hash); `None` for runs stored before
    /// schema 5 or on a machine without one.
    pub machine_id: Option<String>,
    /// Whether the real-time defaults held.
    pub realtime: Option<bool>,
    /// Cells planned.
    pub cells: i64,
    /// Cells that ended (completed, failed or skipped).
    pub cells_done: i64,
    /// Of those, the cells skipped (what this machine cannot run).
    pub cells_skipped: i64,
    /// Cycles measured, from the stored windows.
    pub cycles: i64,
    /// Window rows stored.
    pub windows: i64,
    /// Largest wake-up latency seen in the stored windows, ns: the largest
    /// value of a probe's first metric when that is in nanoseconds.
    pub latency_max_ns: Option<i64>,
}

/// A run that cannot be read: its id and why.
pub type Unreadable = (i64, String);

/// An open results database.
pub struct Store {
    conn: Connection,
    /// The database file, named in every error.
    path: std::path::PathBuf,
    /// Window totals of the cells read so far (see [`speed`]).
    totals: speed::TotalsCache,
    /// Whether this store may write the file (see [`open`]); a store
    /// opened to read never changes it.
    writable: bool,
    /// The private directory of the migrated copy a store reads an older
    /// database through (see [`open`]); removed on drop.
    copy: Option<tempfile::TempDir>,
}

/// Opens an existing database to read it only ([`Store::open_read`]); a
/// missing file is bad input (a report must not create an empty database).
pub fn open_existing(db: &std::path::Path) -> Result<Store> {
    if !db.is_file() {
        return Err(anyhow::Error::new(crate::error::BadInput(format!(
            "no results database at {}; run a probe first (jitterlab run cyclic) or name the database with --db",
            db.display()
        ))));
    }
    Store::open_read(db)
}

fn i(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Store {
    /// Names the database file in an error (design rule 8): "database disk
    /// image is malformed" alone does not say which file. Every public
    /// method below is its `_inner` twin with this context added.
    /// Other errors (no such run) are the caller's and pass unchanged.
    fn named<T>(&self, r: Result<T>) -> Result<T> {
        r.map_err(|e| {
            if e.chain().any(|c| c.is::<rusqlite::Error>()) {
                e.context(format!("results database {}", self.path.display()))
            } else {
                e
            }
        })
    }

    /// Records the end of a cell: its status, result and context, the
    /// per-metric statistics with their histograms (the 1 µs ones too),
    /// and the outliers.
    pub fn finish_cell(
        &mut self,
        cell: i64,
        status: CellStatus,
        result: Option<&RunResult>,
        context: &CellContext,
        histograms: &[StoredHistogram],
    ) -> Result<()> {
        let r = self.finish_cell_inner(cell, status, result, context, histograms);
        self.named(r)
    }

    /// Records the end of a run (`status`: completed, interrupted,
    /// break-trace), with the whole result for a `jitterlab run`.
    pub fn finish_run_row(
        &mut self,
        run: i64,
        status: RunStatus,
        realtime: Option<bool>,
        elapsed_ns: u64,
        result: Option<&RunResult>,
    ) -> Result<()> {
        let r = self.finish_run_row_inner(run, status, realtime, elapsed_ns, result);
        self.named(r)
    }

    /// Records the end of a `jitterlab run`: its cell, then the run row.
    pub fn finish_run(
        &mut self,
        ids: RunIds,
        result: &RunResult,
        histograms: &[StoredHistogram],
    ) -> Result<()> {
        let r = self.finish_run_inner(ids, result, histograms);
        self.named(r)
    }

    /// Records the start of a `jitterlab run` with its one cell (running);
    /// committed at once. (The runner says where the probe ran:
    /// [`Store::begin_run_in`]; tests record host runs.)
    #[cfg(test)]
    pub fn begin_run(&mut self, s: &RunStart<'_>) -> Result<RunIds> {
        self.begin_run_in(s, "host")
    }

    /// Records the start of a `jitterlab run` with its one cell (running),
    /// whose probe ran in `deployment` (`host`, `container`: the cell's
    /// key records it); committed at once.
    pub fn begin_run_in(&mut self, s: &RunStart<'_>, deployment: &str) -> Result<RunIds> {
        let r = self.begin_run_inner(s, deployment);
        self.named(r)
    }

    /// Records the start of a bench with every cell of its plan (pending);
    /// committed at once. Returns the run id and the cell ids in plan order.
    pub fn begin_bench(&mut self, s: &RunStart<'_>, cells: &[CellKey]) -> Result<(i64, Vec<i64>)> {
        let r = self.begin_bench_inner(s, cells);
        self.named(r)
    }

    /// Appends window rows in one transaction (one commit per drain), each
    /// metric of a row under its name.
    pub fn insert_windows(&mut self, cell: i64, rows: &[WindowRow]) -> Result<()> {
        let r = self.insert_windows_inner(cell, rows);
        self.named(r)
    }

    /// Records the probe and parameters of a cell about to measure, so
    /// that its committed windows can be read as partial figures should the
    /// process die before the cell's result is stored.
    pub fn record_cell_plan(&mut self, cell: i64, probe: ProbeKind, params: &Params) -> Result<()> {
        let r = self.record_cell_plan_inner(cell, probe, params);
        self.named(r)
    }

    /// Marks a cell running.
    pub fn start_cell(&mut self, cell: i64) -> Result<()> {
        let r = self.start_cell_inner(cell);
        self.named(r)
    }

    /// Marks a run interrupted without a result (an error after its start).
    pub fn abandon_run(&mut self, ids: RunIds) -> Result<()> {
        let r = self.abandon_run_inner(ids);
        self.named(r)
    }

    /// Every run, newest last.
    pub fn list_runs(&self) -> Result<Vec<RunRow>> {
        let r = self.list_runs_inner(None);
        self.named(r)
    }

    /// Every run that can be read, newest last, and the runs that cannot
    /// (a value out of range, of the wrong type), each with why: one bad
    /// row does not hide the others. The whole listing is read at once;
    /// only when that fails is each run read alone.
    pub fn list_readable_runs(&self) -> Result<(Vec<RunRow>, Vec<Unreadable>)> {
        let r = self.list_readable_runs_inner();
        self.named(r)
    }

    /// The work of [`Store::list_readable_runs`].
    fn list_readable_runs_inner(&self) -> Result<(Vec<RunRow>, Vec<Unreadable>)> {
        let whole = match self.list_runs_inner(None) {
            Ok(rows) => return Ok((rows, Vec::new())),
            Err(e) => e,
        };
        let ids: Vec<i64> = {
            let mut stmt = self.conn.prepare("SELECT id FROM runs ORDER BY id")?;
            let rows = stmt.query_map([], |r| r.get(0))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let (mut rows, mut bad) = (Vec::new(), Vec::new());
        for id in ids {
            match self.list_runs_inner(Some(id)) {
                Ok(r) => rows.extend(r),
                Err(e) => bad.push((id, format!("{e:#}"))),
            }
        }
        // No run can be read: the database is at fault (damaged), not a row.
        if rows.is_empty() && !bad.is_empty() {
            return Err(whole);
        }
        Ok((rows, bad))
    }

    /// A run with every cell, as reports read it. A `jitterlab run` that
    /// finished has its result in its one cell; an unfinished cell has no
    /// result (its window rows are still in the database).
    pub fn load_run(&self, run: i64) -> Result<StoredRun> {
        let r = self.load_run_inner(run);
        self.named(r)
    }

    /// The newest run's id.
    pub fn latest_run(&self) -> Result<Option<i64>> {
        let r = self.latest_run_inner();
        self.named(r)
    }

    /// The stored result of a finished run (`None` for a run that did not
    /// finish); an error when there is no such run.
    #[cfg(test)]
    pub fn load_result(&self, run: i64) -> Result<Option<RunResult>> {
        let r = self.load_result_inner(run);
        self.named(r)
    }

    /// The listing row of one run.
    pub fn run_row(&self, run: i64) -> Result<Option<RunRow>> {
        let r = self.run_row_inner(run);
        self.named(r)
    }

    /// The id of the run `text` names: its id, or its uid or a unique
    /// prefix of it (see [`ident`]); an error naming what to do when there
    /// is no such run or the prefix is shared.
    pub fn resolve_run(&self, text: &str) -> Result<i64> {
        let r = self.resolve_run_inner(text);
        self.named(r)
    }

    fn insert_run(tx: &rusqlite::Transaction<'_>, s: &RunStart<'_>) -> Result<i64> {
        tx.execute(
            "INSERT INTO runs (started_at, probe, status, command_line, tool_version,
                               result_schema, params_json, pid, boot_id, realtime,
                               kind, name, spec_json, uid)
             VALUES (?1, ?2, ?13, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?14)",
            params![
                s.started_at,
                s.probe,
                serde_json::to_string(s.command_line)?,
                crate::version::TOOL_VERSION,
                jitterlab_core::result::SCHEMA_VERSION,
                s.params_json,
                std::process::id(),
                boot_id(),
                s.realtime,
                s.kind.name(),
                s.name,
                s.spec_json,
                RunStatus::Running.name(),
                ident::new_run_uid(),
            ],
        )?;
        let run = tx.last_insert_rowid();
        tx.execute(
            "INSERT INTO hosts (run_id, hostname, kernel_release, snapshot_json, machine_id)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![run, s.hostname, s.kernel_release, s.host_json, s.machine_id],
        )?;
        Ok(run)
    }

    fn insert_cell(
        tx: &rusqlite::Transaction<'_>,
        run: i64,
        key: &CellKey,
        status: CellStatus,
    ) -> Result<i64> {
        tx.execute(
            "INSERT INTO cells (run_id, name, configuration, scenario, deployment, probe,
                                repetition, status, started_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, CASE WHEN ?8 = ?10 THEN ?9 END)",
            params![
                run,
                key.name(),
                key.configuration,
                key.scenario,
                key.deployment,
                key.probe,
                key.repetition,
                status.name(),
                now(),
                CellStatus::Running.name(),
            ],
        )?;
        Ok(tx.last_insert_rowid())
    }

    /// The work of [`Store::begin_run_in`].
    fn begin_run_inner(&mut self, s: &RunStart<'_>, deployment: &str) -> Result<RunIds> {
        let tx = self.conn.transaction()?;
        let run = Self::insert_run(&tx, s)?;
        let key = CellKey {
            configuration: "default".into(),
            scenario: "none".into(),
            deployment: deployment.into(),
            probe: s.probe.into(),
            repetition: 0,
        };
        let cell = Self::insert_cell(&tx, run, &key, CellStatus::Running)?;
        tx.commit()?;
        Ok(RunIds { run, cell })
    }

    /// The work of [`Store::begin_bench`].
    fn begin_bench_inner(
        &mut self,
        s: &RunStart<'_>,
        cells: &[CellKey],
    ) -> Result<(i64, Vec<i64>)> {
        let tx = self.conn.transaction()?;
        let run = Self::insert_run(&tx, s)?;
        let ids = cells
            .iter()
            .map(|k| Self::insert_cell(&tx, run, k, CellStatus::Pending))
            .collect::<Result<Vec<_>>>()?;
        tx.commit()?;
        Ok((run, ids))
    }

    /// The work of [`Store::record_cell_plan`].
    fn record_cell_plan_inner(
        &mut self,
        cell: i64,
        probe: ProbeKind,
        params: &Params,
    ) -> Result<()> {
        let plan = serde_json::json!({ "probe": probe, "params": params });
        self.conn.execute(
            "UPDATE cells SET plan_json = ?2 WHERE id = ?1",
            params![cell, plan.to_string()],
        )?;
        Ok(())
    }

    /// The work of [`Store::start_cell`].
    fn start_cell_inner(&mut self, cell: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE cells SET status = ?3, started_at = ?2 WHERE id = ?1",
            params![cell, now(), CellStatus::Running.name()],
        )?;
        Ok(())
    }

    /// The work of [`Store::finish_cell`].
    fn finish_cell_inner(
        &mut self,
        cell: i64,
        status: CellStatus,
        result: Option<&RunResult>,
        context: &CellContext,
        histograms: &[StoredHistogram],
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE cells SET status = ?2, finished_at = ?3, result_json = ?4, context_json = ?5
             WHERE id = ?1",
            params![
                cell,
                status.name(),
                now(),
                result.map(serde_json::to_string).transpose()?,
                serde_json::to_string(context)?,
            ],
        )?;
        if let Some(result) = result {
            insert_metrics(&tx, cell, result, histograms)?;
            fine::insert(&tx, cell, histograms)?;
            let mut o = tx.prepare("INSERT INTO outliers VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")?;
            let mut c = tx.prepare("INSERT INTO counters VALUES (?1, ?2, ?3, ?4)")?;
            for t in &result.threads {
                insert_outliers(&mut o, cell, t)?;
                for (name, value) in &t.counters {
                    c.execute(params![cell, t.thread, name, i(*value)])?;
                }
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The work of [`Store::finish_run_row`].
    fn finish_run_row_inner(
        &mut self,
        run: i64,
        status: RunStatus,
        realtime: Option<bool>,
        elapsed_ns: u64,
        result: Option<&RunResult>,
    ) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3, realtime = ?4, elapsed_ns = ?5,
                             result_json = ?6 WHERE id = ?1",
            params![
                run,
                status.name(),
                now(),
                realtime,
                i(elapsed_ns),
                result.map(serde_json::to_string).transpose()?,
            ],
        )?;
        Ok(())
    }

    /// The work of [`Store::finish_run`].
    fn finish_run_inner(
        &mut self,
        ids: RunIds,
        result: &RunResult,
        histograms: &[StoredHistogram],
    ) -> Result<()> {
        let status = match result.end {
            jitterlab_core::result::EndReason::Interrupted => CellStatus::Interrupted,
            _ => CellStatus::Completed,
        };
        self.finish_cell_inner(
            ids.cell,
            status,
            Some(result),
            &CellContext::default(),
            histograms,
        )?;
        self.finish_run_row_inner(
            ids.run,
            RunStatus::from(&result.end),
            Some(result.realtime.realtime),
            result.elapsed_ns,
            Some(result),
        )
    }

    /// The work of [`Store::abandon_run`].
    fn abandon_run_inner(&mut self, ids: RunIds) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2 WHERE id = ?1 AND status = ?3",
            params![
                ids.run,
                RunStatus::Interrupted.name(),
                RunStatus::Running.name()
            ],
        )?;
        interrupt_cells(&self.conn, ids.run)?;
        Ok(())
    }

    /// The work of [`Store::list_runs`]: every run, or only run `only`.
    fn list_runs_inner(&self, only: Option<i64>) -> Result<Vec<RunRow>> {
        let done = [
            CellStatus::Completed,
            CellStatus::Failed,
            CellStatus::Skipped,
        ]
        .map(CellStatus::name);
        let latencies = schema::listed_latencies();
        let marks = |from: usize, n: usize| -> String {
            let v: Vec<String> = (from..from + n).map(|k| format!("?{k}")).collect();
            v.join(", ")
        };
        let mut stmt = self.conn.prepare(&format!(
            "SELECT r.id, r.started_at, r.kind, COALESCE(r.name, r.probe), r.status,
                    COALESCE(h.hostname, ''), r.realtime,
                    (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id),
                    (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id AND c.status IN ({})),
                    COALESCE(SUM(w.cycles), 0), COUNT(w.window),
                    (SELECT MAX(m.max) FROM window_metrics m JOIN cells c ON c.id = m.cell_id
                     WHERE c.run_id = r.id AND m.metric IN ({})),
                    COALESCE(r.uid, ''), h.machine_id,
                    (SELECT COUNT(*) FROM cells c WHERE c.run_id = r.id AND c.status = ?{})
             FROM runs r
             LEFT JOIN hosts h ON h.run_id = r.id
             LEFT JOIN cells c ON c.run_id = r.id
             LEFT JOIN windows w ON w.cell_id = c.id
             WHERE ?{only} IS NULL OR r.id = ?{only}
             GROUP BY r.id ORDER BY r.id",
            marks(1, done.len()),
            marks(1 + done.len(), latencies.len()),
            1 + done.len() + latencies.len(),
            only = 2 + done.len() + latencies.len(),
        ))?;
        use rusqlite::types::Value;
        let only = only.map_or(Value::Null, Value::Integer);
        let skipped = CellStatus::Skipped.name();
        let names = done
            .iter()
            .chain(&latencies)
            .chain(std::iter::once(&skipped))
            .map(|s| Value::Text(s.to_string()))
            .chain([only]);
        let mut rows: Vec<RunRow> = stmt
            .query_map(rusqlite::params_from_iter(names), |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    kind: r.get(2)?,
                    name: r.get(3)?,
                    status: r.get(4)?,
                    hostname: r.get(5)?,
                    realtime: r.get(6)?,
                    cells: r.get(7)?,
                    cells_done: r.get(8)?,
                    cycles: r.get(9)?,
                    windows: r.get(10)?,
                    latency_max_ns: r.get(11)?,
                    uid: r.get(12)?,
                    machine_id: r.get(13)?,
                    cells_skipped: r.get(14)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        // Runs whose process is gone, which this store may not mark (they
        // may have died since it was opened).
        for row in &mut rows {
            if self.shown_interrupted(row.id, &row.status)? {
                row.status = RunStatus::Interrupted.name().to_string();
            }
        }
        Ok(rows)
    }

    /// The work of [`Store::load_run`].
    fn load_run_inner(&self, run: i64) -> Result<StoredRun> {
        let head = self
            .conn
            .query_row(
                "SELECT r.started_at, r.kind, COALESCE(r.name, r.probe), r.status, r.spec_json,
                        r.result_json, COALESCE(h.hostname, ''), COALESCE(h.kernel_release, '')
                 FROM runs r LEFT JOIN hosts h ON h.run_id = r.id WHERE r.id = ?1",
                [run],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, String>(7)?,
                    ))
                },
            )
            .optional()?;
        let Some((started_at, kind, name, mut status, spec_json, run_result, hostname, kernel)) =
            head
        else {
            bail!("there is no run {run} in the database; list the runs with: jitterlab runs")
        };
        // A run whose process is gone, which this store may not mark (it
        // may have died since the store was opened: `report --follow`).
        let dead = self.shown_interrupted(run, &status)?;
        if dead {
            status = RunStatus::Interrupted.name().to_string();
        }
        let mut stmt = self.conn.prepare(
            "SELECT configuration, scenario, deployment, probe, repetition, status,
                    result_json, context_json, id, plan_json, started_at
             FROM cells WHERE run_id = ?1 ORDER BY id",
        )?;
        type Row = (
            CellKey,
            String,
            Option<String>,
            Option<String>,
            (i64, Option<String>, Option<String>),
        );
        let rows: Vec<Row> = stmt
            .query_map([run], |r| {
                Ok((
                    CellKey {
                        configuration: r.get(0)?,
                        scenario: r.get(1)?,
                        deployment: r.get(2)?,
                        probe: r.get(3)?,
                        repetition: r.get(4)?,
                    },
                    r.get(5)?,
                    r.get(6)?,
                    r.get(7)?,
                    (r.get(8)?, r.get(9)?, r.get(10)?),
                ))
            })?
            .collect::<rusqlite::Result<_>>()?;
        let mut cells = Vec::with_capacity(rows.len());
        let single = rows.len() == 1 && RunKind::parse(&kind) == Some(RunKind::Run);
        for (key, status, result, context, (id, plan, cell_started)) in rows {
            // Schema-1 runs kept their result on the run row only.
            let result = result.or_else(|| if single { run_result.clone() } else { None });
            let mut result: Option<RunResult> = result
                .map(|j| serde_json::from_str(&j))
                .transpose()
                .with_context(|| format!("reading the result of run {run}, cell {}", key.name()))?;
            if let (None, Some(plan)) = (&result, plan) {
                let plan: CellPlanJson = serde_json::from_str(&plan).with_context(|| {
                    format!("reading the plan of run {run}, cell {}", key.name())
                })?;
                let started = cell_started.unwrap_or_else(|| started_at.clone());
                result = self.partial_result(id, plan, started)?;
            }
            let context: CellContext = context
                .map(|j| serde_json::from_str(&j))
                .transpose()
                .with_context(|| format!("reading the context of run {run}, cell {}", key.name()))?
                .unwrap_or_default();
            cells.push(StoredCell {
                status: match CellStatus::parse(&status) {
                    Some(CellStatus::Running) if dead => CellStatus::Interrupted,
                    s => s.unwrap_or(CellStatus::Interrupted),
                },
                key,
                result,
                context,
            });
        }
        let spec: Option<BenchSpecJson> =
            spec_json
                .map(|j| serde_json::from_str(&j))
                .transpose()
                .with_context(|| format!("reading the spec of run {run}"))?;
        // The probes of a spec this version cannot read are left out: the
        // tables then read what the cells stored.
        let probes = spec
            .as_ref()
            .and_then(|s| serde_json::from_value(s.spec.get("probes")?.clone()).ok())
            .unwrap_or_default();
        let (configurations, scenarios, unavailable) = match spec {
            Some(s) => (s.configurations, s.scenarios, s.unavailable),
            None => {
                let mut c: Vec<String> = Vec::new();
                let mut sc: Vec<String> = Vec::new();
                for cell in &cells {
                    if !c.contains(&cell.key.configuration) {
                        c.push(cell.key.configuration.clone());
                    }
                    if !sc.contains(&cell.key.scenario) {
                        sc.push(cell.key.scenario.clone());
                    }
                }
                (c, sc, Vec::new())
            }
        };
        Ok(StoredRun {
            id: run,
            started_at,
            kind,
            name,
            status,
            hostname,
            kernel_release: kernel,
            configurations,
            scenarios,
            unavailable,
            cells,
            probes,
        })
    }

    /// True when run `run`, stored with `status`, is to be shown
    /// interrupted by this store: it is opened to read only (so it may not
    /// mark the run), the run is left `running`, and the process that
    /// stored it is gone — asked at every read, since it may have died
    /// after the store was opened (`report --follow`).
    fn shown_interrupted(&self, run: i64, status: &str) -> Result<bool> {
        if self.writable || RunStatus::parse(status) != Some(RunStatus::Running) {
            return Ok(false);
        }
        let (pid, boot): (i64, String) =
            self.conn
                .query_row("SELECT pid, boot_id FROM runs WHERE id = ?1", [run], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })?;
        Ok(process_gone(pid, &boot))
    }

    /// The work of [`Store::latest_run`].
    fn latest_run_inner(&self) -> Result<Option<i64>> {
        Ok(self
            .conn
            .query_row("SELECT MAX(id) FROM runs", [], |r| r.get(0))?)
    }

    /// The work of [`Store::load_result`].
    #[cfg(test)]
    fn load_result_inner(&self, run: i64) -> Result<Option<RunResult>> {
        let json: Option<Option<String>> = self
            .conn
            .query_row("SELECT result_json FROM runs WHERE id = ?1", [run], |r| {
                r.get(0)
            })
            .optional()?;
        match json {
            None => {
                bail!("there is no run {run} in the database; list the runs with: jitterlab runs")
            }
            Some(None) => Ok(None),
            Some(Some(j)) => {
                Ok(Some(serde_json::from_str(&j).with_context(|| {
                    format!("reading the result of run {run}")
                })?))
            }
        }
    }

    /// The work of [`Store::run_row`].
    fn run_row_inner(&self, run: i64) -> Result<Option<RunRow>> {
        Ok(self.list_runs()?.into_iter().find(|r| r.id == run))
    }
}

fn insert_metrics(
    tx: &rusqlite::Transaction<'_>,
    cell: i64,
    result: &RunResult,
    histograms: &[StoredHistogram],
) -> Result<()> {
    let mut m = tx.prepare(
        "INSERT INTO metrics VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,
                                     ?13, ?14, ?15, ?16, ?17, ?18)",
    )?;
    let mut insert =
        |thread: Option<u32>, cpu: Option<usize>, name: &str, s: &MetricSummary| -> Result<()> {
            let (pos, neg) = histograms
                .iter()
                .find(|h| h.thread == thread && h.metric == name)
                .map(|h| (serialize(&h.positive), h.negative.as_ref().map(serialize)))
                .unwrap_or((Ok(Vec::new()), None));
            m.execute(params![
                cell,
                thread,
                cpu.map(|c| c as i64),
                name,
                i(s.count),
                s.min,
                s.max,
                s.mean,
                s.stddev,
                s.p50,
                s.p90,
                s.p99,
                s.p99_9,
                s.p99_99,
                s.threshold.map(i),
                s.over_threshold.map(i),
                pos?,
                neg.transpose()?,
            ])?;
            Ok(())
        };
    for t in &result.threads {
        for (name, s) in &t.metrics {
            insert(Some(t.thread), Some(t.cpu), name, s)?;
        }
    }
    if let Some(c) = &result.combined {
        for (name, s) in c {
            insert(None, None, name, s)?;
        }
    }
    Ok(())
}

/// Marks the running cells of run `run` interrupted.
fn interrupt_cells(conn: &Connection, run: i64) -> Result<()> {
    conn.execute(
        "UPDATE cells SET status = ?2 WHERE run_id = ?1 AND status = ?3",
        params![
            run,
            CellStatus::Interrupted.name(),
            CellStatus::Running.name()
        ],
    )?;
    Ok(())
}

fn now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn insert_outliers(stmt: &mut rusqlite::Statement<'_>, cell: i64, t: &ThreadResult) -> Result<()> {
    for (metric, list) in &t.outliers {
        for (rank, o) in list.iter().enumerate() {
            stmt.execute(params![
                cell,
                t.thread,
                metric,
                rank as i64,
                o.value,
                i(o.cycle),
                i(o.since_start_ns)
            ])?;
        }
    }
    Ok(())
}

/// HdrHistogram's V2 format, readable by every HdrHistogram implementation.
fn serialize(h: &Histogram<u64>) -> Result<Vec<u8>> {
    let mut buf = Vec::new();
    V2Serializer::new()
        .serialize(h, &mut buf)
        .map_err(|e| anyhow::anyhow!("serializing a histogram: {e:?}"))?;
    Ok(buf)
}

/// This boot's id, so a run left `running` by an earlier boot is recognised.
fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// True when the process `pid` of boot `boot` that stored a run is gone
/// (another boot, or no such process now).
fn process_gone(pid: i64, boot: &str) -> bool {
    !(boot == boot_id() && std::path::Path::new(&format!("/proc/{pid}")).exists())
}

#[cfg(test)]
mod tests;
