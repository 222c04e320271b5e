//! The database schema and the steps that bring any older file up to it.
//!
//! `PRAGMA user_version` holds the schema version; [`MIGRATIONS`] lists the
//! steps from 0 (empty file) up, applied in order, each in its own
//! transaction. A step is SQL, or code when it needs what only jitterlab
//! knows — step 3 → 4 moves every window's statistics from the fixed
//! `latency/period/jitter/exec` columns to rows named by the metric, and
//! the name of a column's figures depends on the probe that wrote them.
//!
//! Schema 4 in short: `runs`, `hosts`, `cells` as before; `metrics` (run
//! statistics with their histograms, by metric name) and `outliers`;
//! `windows` holds one row header per thread and window (cycles, overruns,
//! start), `window_metrics` one row per metric of that window (count, min,
//! max, mean: any number of metrics, keyed by name) and `counters` a
//! probe thread's named counters.
//!
//! Schema 5 adds `histograms_1us`, the 1 µs histogram of each cell's main
//! latency (its layout: [`super::fine`]), and gives every run a stable
//! identity and every host one too:
//! `runs.uid` (unique) names a run in every database it is imported into,
//! and `hosts.machine_id` tells two machines of one hostname apart (see
//! [`super::ident`]). Runs stored before get a uid computed from what they
//! already hold, so two copies of one old file migrated apart agree.
//!
//! Schema 6 adds the tables of `jitterlab monitor`'s series
//! ([`super::monitor`]): `monitor_series`, `monitor_segments`,
//! `monitor_rollups` (5-minute and hourly rows) and `monitor_histograms`.
//!
//! Schema 7 adds `monitor_marks`: what happened to a series' task at a
//! time (its thread ended and the monitor re-attached to the new one).
//!
//! **The schema stays on the file's first page.** SQLite keeps the schema
//! table's rows (every `CREATE` text) in a b-tree rooted at page 1; once
//! that page is full the tree splits onto later pages, and a file whose
//! later pages are damaged no longer opens to say which file it is
//! (`tests/storage.rs`). Schema 4 left 58 bytes free on page 1 (the
//! page's cell content start less the end of its cell pointer array, read
//! from the b-tree header at byte 100 of a migrated `run-cyclic.db`), so step
//! 4 → 5 first rewrites the `CREATE` texts of the older steps without
//! their alignment and comments ([`compact_schema_text`]: about 900 bytes
//! back), then adds its columns and index.

use anyhow::Result;
use jitterlab_core::result::ProbeKind;
use rusqlite::{params, Transaction};

/// Version of the database schema this jitterlab writes.
pub const SCHEMA_VERSION: i64 = 7;

/// One step of [`MIGRATIONS`].
pub(super) enum Migration {
    /// A batch of SQL statements.
    Sql(&'static str),
    /// Work SQL alone cannot describe.
    Code(fn(&Transaction<'_>) -> Result<()>),
}

impl Migration {
    /// Applies the step inside `tx`; SQL [`squeezed`], so that the schema
    /// of a new file stays on its first page.
    pub(super) fn apply(&self, tx: &Transaction<'_>) -> Result<()> {
        match self {
            Migration::Sql(sql) => Ok(tx.execute_batch(&squeezed(sql))?),
            Migration::Code(f) => f(tx),
        }
    }
}

/// Migration `i` takes the schema from version `i` to `i + 1`.
pub(super) const MIGRATIONS: &[Migration] = &[
    // 0 → 1: the first schema.
    Migration::Sql(
        r#"
    CREATE TABLE runs (
        id            INTEGER PRIMARY KEY,
        started_at    TEXT    NOT NULL,
        finished_at   TEXT,
        probe         TEXT    NOT NULL,
        status        TEXT    NOT NULL
                      CHECK (status IN ('running', 'completed', 'interrupted', 'break-trace')),
        command_line  TEXT    NOT NULL,
        tool_version  TEXT    NOT NULL,
        result_schema INTEGER NOT NULL,
        params_json   TEXT    NOT NULL,
        pid           INTEGER NOT NULL,
        boot_id       TEXT    NOT NULL,
        realtime      INTEGER,
        elapsed_ns    INTEGER,
        result_json   TEXT
    );
    CREATE TABLE hosts (
        run_id         INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        hostname       TEXT NOT NULL,
        kernel_release TEXT NOT NULL,
        snapshot_json  TEXT NOT NULL
    );
    CREATE TABLE cells (
        id            INTEGER PRIMARY KEY,
        run_id        INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        name          TEXT    NOT NULL,
        configuration TEXT    NOT NULL,
        scenario      TEXT    NOT NULL,
        deployment    TEXT    NOT NULL,
        probe         TEXT    NOT NULL,
        repetition    INTEGER NOT NULL DEFAULT 0,
        UNIQUE (run_id, name, repetition)
    );
    CREATE TABLE metrics (
        cell_id        INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
        thread         INTEGER,          -- NULL: all threads combined
        cpu            INTEGER,
        metric         TEXT    NOT NULL,
        count          INTEGER NOT NULL,
        min_ns         INTEGER,
        max_ns         INTEGER,
        mean_ns        INTEGER,
        stddev_ns      INTEGER,
        p50_ns         INTEGER,
        p90_ns         INTEGER,
        p99_ns         INTEGER,
        p99_9_ns       INTEGER,
        p99_99_ns      INTEGER,
        threshold_ns   INTEGER,
        over_threshold INTEGER,
        hist_positive  BLOB,             -- HdrHistogram V2 serialization
        hist_negative  BLOB              -- magnitudes of negative samples
    );
    CREATE INDEX metrics_cell ON metrics (cell_id, metric);
    CREATE TABLE windows (
        cell_id  INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
        thread   INTEGER NOT NULL,
        cpu      INTEGER NOT NULL,
        window   INTEGER NOT NULL,
        start_ns INTEGER NOT NULL,
        cycles   INTEGER NOT NULL,
        overruns INTEGER NOT NULL,
        latency_count INTEGER, latency_min_ns INTEGER, latency_max_ns INTEGER, latency_mean_ns INTEGER,
        period_count  INTEGER, period_min_ns  INTEGER, period_max_ns  INTEGER, period_mean_ns  INTEGER,
        jitter_count  INTEGER, jitter_min_ns  INTEGER, jitter_max_ns  INTEGER, jitter_mean_ns  INTEGER,
        exec_count    INTEGER, exec_min_ns    INTEGER, exec_max_ns    INTEGER, exec_mean_ns    INTEGER,
        PRIMARY KEY (cell_id, thread, window)
    );
    CREATE TABLE outliers (
        cell_id        INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
        thread         INTEGER NOT NULL,
        metric         TEXT    NOT NULL,
        rank           INTEGER NOT NULL,
        value_ns       INTEGER NOT NULL,
        cycle          INTEGER NOT NULL,
        since_start_ns INTEGER NOT NULL,
        PRIMARY KEY (cell_id, thread, metric, rank)
    );
    "#,
    ),
    // 1 → 2: benches — a run has a kind and a spec; cells have their own
    // status, times, result and context (neighbours, counters).
    Migration::Sql(
        r#"
    ALTER TABLE runs ADD COLUMN kind TEXT NOT NULL DEFAULT 'run';
    ALTER TABLE runs ADD COLUMN name TEXT;
    ALTER TABLE runs ADD COLUMN spec_json TEXT;
    ALTER TABLE cells ADD COLUMN status TEXT NOT NULL DEFAULT 'completed';
    ALTER TABLE cells ADD COLUMN started_at TEXT;
    ALTER TABLE cells ADD COLUMN finished_at TEXT;
    ALTER TABLE cells ADD COLUMN result_json TEXT;
    ALTER TABLE cells ADD COLUMN context_json TEXT;
    UPDATE runs SET name = probe;
    UPDATE cells SET status = (SELECT CASE r.status WHEN 'running' THEN 'running'
                                                    WHEN 'interrupted' THEN 'interrupted'
                                                    ELSE 'completed' END
                               FROM runs r WHERE r.id = cells.run_id);
    "#,
    ),
    // 2 → 3: a cell's probe and parameters, stored when it starts measuring,
    // so that a cell whose process was killed can still be read: its
    // committed windows become partial figures (see `partial_result`).
    Migration::Sql(
        r#"
    ALTER TABLE cells ADD COLUMN plan_json TEXT;
    "#,
    ),
    // 3 → 4: metrics are data, not columns. Window statistics move to
    // `window_metrics`, one row per metric name; a thread's named counters
    // get their table.
    Migration::Code(named_window_metrics),
    // 4 → 5: a uid per run, a machine id per host (`super::ident`), and
    // the 1 µs histogram of every cell's main latency (`super::fine`;
    // cells stored before have none).
    Migration::Code(schema_5),
    // 5 → 6: a monitor's series, segments, 5-minute and hourly rollups and
    // 5-minute histograms (`super::monitor`).
    Migration::Sql(super::monitor::TABLES),
    // 6 → 7: the marks of a monitor's series (`super::monitor`): its task
    // restarted and was re-attached.
    Migration::Sql(super::monitor::MARKS),
];

/// The columns of a schema-3 window row, in slot order: slot `i` held
/// metric `i` of the cell's probe (for every probe, not only the periodic
/// ones the columns are named after).
const SCHEMA_3_SLOTS: [&str; 4] = ["latency", "period", "jitter", "exec"];

/// The tables of schema 4 that hold metrics as data. `window_metrics`
/// holds one row per (cell, thread, window, metric name): count, and min,
/// max, mean (NULL when count is 0); `counters` a thread's named counters;
/// `windows` the row headers. Stored [`squeezed`] and without rowid (no
/// separate index per table): the schema table must stay on the file's
/// first page, as it always was (`tests/storage.rs` damages every page
/// after the second and expects the file to open).
const NAMED_TABLES: &str = r#"
    CREATE TABLE window_metrics (
        cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
        thread  INTEGER NOT NULL,
        window  INTEGER NOT NULL,
        metric  TEXT    NOT NULL,
        count   INTEGER NOT NULL,
        min     INTEGER,
        max     INTEGER,
        mean    INTEGER,
        PRIMARY KEY (cell_id, thread, window, metric)
    ) WITHOUT ROWID;
    CREATE TABLE counters (
        cell_id INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
        thread  INTEGER NOT NULL,
        name    TEXT    NOT NULL,
        value   INTEGER NOT NULL,
        PRIMARY KEY (cell_id, thread, name)
    ) WITHOUT ROWID;
    CREATE TABLE windows (
        cell_id  INTEGER NOT NULL REFERENCES cells(id) ON DELETE CASCADE,
        thread   INTEGER NOT NULL,
        cpu      INTEGER NOT NULL,
        window   INTEGER NOT NULL,
        start_ns INTEGER NOT NULL,
        cycles   INTEGER NOT NULL,
        overruns INTEGER NOT NULL,
        PRIMARY KEY (cell_id, thread, window)
    ) WITHOUT ROWID;
"#;

/// `sql` without its `--` comments and with every run of white space made
/// one space: SQLite keeps a table's `CREATE` text as written, and the
/// alignment and comments above are for readers, not for the file. The
/// whole schema must fit on the file's first page (4 KiB) with the
/// records around it: written as aligned, schema 5's would not. (No string
/// literal of the SQL here holds `--` or a run of white space.)
fn squeezed(sql: &str) -> String {
    sql.lines()
        .map(|line| line.split("--").next().unwrap_or_default())
        .flat_map(str::split_whitespace)
        .collect::<Vec<_>>()
        .join(" ")
}

/// Step 4 → 5: the run and host identities ([`run_identity`], which first
/// makes room on the first page), then the 1 µs histograms' table.
fn schema_5(tx: &Transaction<'_>) -> Result<()> {
    run_identity(tx)?;
    fine_histograms(tx)
}

/// Part of step 4 → 5: the table of the 1 µs histograms ([`super::fine::TABLE`]),
/// empty: a cell stored before kept only its HDR histograms.
fn fine_histograms(tx: &Transaction<'_>) -> Result<()> {
    Ok(tx.execute_batch(&squeezed(super::fine::TABLE))?)
}

/// Step 3 → 4. Each cell's window columns are named with its probe kind's
/// metric table — the kind its stored result names, else its stored plan,
/// else (a schema-1 run) the run's result, else its probe name — slot by
/// slot, as schema 3 filled them; slots beyond the kind's table held
/// nothing and are dropped. A cell whose kind cannot be told keeps the
/// columns' own names. The old rows wait in a temporary table while the
/// new tables are made, so that the schema never holds both.
fn named_window_metrics(tx: &Transaction<'_>) -> Result<()> {
    tx.execute_batch(
        "CREATE TEMP TABLE windows_3 AS SELECT * FROM main.windows;
         DROP TABLE main.windows;",
    )?;
    tx.execute_batch(&squeezed(NAMED_TABLES))?;
    tx.execute_batch(
        "INSERT INTO main.windows
         SELECT cell_id, thread, cpu, window, start_ns, cycles, overruns FROM temp.windows_3;",
    )?;
    let cells: Vec<(i64, Option<String>)> = {
        let mut stmt = tx.prepare(
            "SELECT c.id, COALESCE(json_extract(c.result_json, '$.probe'),
                                   json_extract(c.plan_json, '$.probe'),
                                   json_extract(r.result_json, '$.probe'),
                                   c.probe)
             FROM cells c JOIN runs r ON r.id = c.run_id
             WHERE c.id IN (SELECT DISTINCT cell_id FROM temp.windows_3)
             ORDER BY c.id",
        )?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    for (cell, kind) in cells {
        let names: Vec<&str> = match kind.as_deref().and_then(ProbeKind::parse) {
            Some(k) => k.metrics().iter().map(|d| d.name).collect(),
            None => SCHEMA_3_SLOTS.to_vec(),
        };
        for (column, name) in SCHEMA_3_SLOTS.iter().zip(names) {
            tx.execute(
                &format!(
                    "INSERT INTO window_metrics
                     SELECT cell_id, thread, window, ?2, COALESCE({column}_count, 0),
                            {column}_min_ns, {column}_max_ns, {column}_mean_ns
                     FROM temp.windows_3 WHERE cell_id = ?1"
                ),
                params![cell, name],
            )?;
        }
    }
    tx.execute_batch("DROP TABLE temp.windows_3;")?;
    Ok(())
}

/// Part of step 4 → 5. Compacts the schema's text (see the module doc), adds
/// `runs.uid` and `hosts.machine_id`, gives every stored run its
/// deterministic uid ([`super::ident::stored_run_uid`], in id order, so a
/// clash — two rows of one process start — is settled the same way in
/// every copy) and makes uids unique. Hosts stored before keep a NULL
/// machine id: unknown.
fn run_identity(tx: &Transaction<'_>) -> Result<()> {
    compact_schema_text(tx)?;
    tx.execute_batch(
        "ALTER TABLE runs ADD COLUMN uid TEXT;
         ALTER TABLE hosts ADD COLUMN machine_id TEXT;",
    )?;
    let runs: Vec<(i64, String, i64, String)> = {
        let mut stmt = tx.prepare("SELECT id, boot_id, pid, started_at FROM runs ORDER BY id")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut taken = std::collections::HashSet::new();
    for (id, boot, pid, started) in runs {
        let mut uid = super::ident::stored_run_uid(&boot, pid, &started, None);
        if !taken.insert(uid.clone()) {
            uid = super::ident::stored_run_uid(&boot, pid, &started, Some(id));
            taken.insert(uid.clone());
        }
        tx.execute("UPDATE runs SET uid = ?2 WHERE id = ?1", params![id, uid])?;
    }
    tx.execute_batch("CREATE UNIQUE INDEX runs_uid ON runs (uid);")?;
    Ok(())
}

/// Rewrites every `CREATE` text of the schema table without comments and
/// with each run of white space made one space: the same schema, parsed
/// the same, in fewer bytes. SQLite documents this way of changing a
/// table's text in place (`writable_schema`, then a new `schema_version`
/// so that every connection reads the schema again) for changes that
/// leave the stored rows as they are, which a change of layout does.
fn compact_schema_text(tx: &Transaction<'_>) -> Result<()> {
    let texts: Vec<(String, String)> = {
        let mut stmt =
            tx.prepare("SELECT name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name")?;
        let rows = stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let changed: Vec<(String, String)> = texts
        .into_iter()
        .filter_map(|(name, sql)| {
            let compact = compact_sql(&sql);
            (compact != sql).then_some((name, compact))
        })
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    let version: i64 = tx.query_row("PRAGMA schema_version", [], |r| r.get(0))?;
    tx.pragma_update(None, "writable_schema", true)?;
    let written = changed.iter().try_for_each(|(name, sql)| {
        tx.execute(
            "UPDATE sqlite_master SET sql = ?2 WHERE name = ?1",
            params![name, sql],
        )
        .map(drop)
    });
    tx.pragma_update(None, "schema_version", version + 1)?;
    tx.pragma_update(None, "writable_schema", false)?;
    written?;
    Ok(())
}

/// `sql` without `--` comments, each run of white space outside quotes
/// made one space, none at either end. Quoted text (`'…'`, `"…"`, with
/// their doubled-quote escapes) is kept byte for byte. (Written here: the
/// few rules of SQL's lexer this needs are shorter than a parser crate.)
pub(super) fn compact_sql(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        match c {
            '\'' | '"' => {
                if space && !out.is_empty() {
                    out.push(' ');
                }
                space = false;
                out.push(c);
                // A doubled quote inside is an escaped quote: the loop
                // leaves and re-enters the quoted text, keeping both.
                for q in chars.by_ref() {
                    out.push(q);
                    if q == c {
                        break;
                    }
                }
            }
            '-' if chars.peek() == Some(&'-') => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        break;
                    }
                }
                space = true;
            }
            c if c.is_whitespace() => space = true,
            c => {
                if space && !out.is_empty() {
                    out.push(' ');
                }
                space = false;
                out.push(c);
            }
        }
    }
    out
}

/// The metric names of the listing's `max latency` column, which has always
/// shown the largest value of a probe's first metric when that is in
/// nanoseconds (the wake-up latency of the periodic and response probes, a
/// hand-over, timerlat's IRQ latency; nothing for the chase's cycles). A
/// cell whose kind could not be told at migration kept the periodic names,
/// whose first is among them.
pub(super) fn listed_latencies() -> Vec<&'static str> {
    let mut names: Vec<&'static str> = ProbeKind::ALL
        .iter()
        .filter_map(|k| k.metrics().first())
        .filter(|d| d.unit == jitterlab_core::probe::MetricUnit::Ns)
        .map(|d| d.name)
        .collect();
    names.sort_unstable();
    names.dedup();
    names
}

/// Creates the schema of `version` (≤ [`SCHEMA_VERSION`]) in an empty
/// database, as the jitterlab of that version did: for tests of the
/// migrations.
#[cfg(test)]
pub(super) fn create_at(conn: &rusqlite::Connection, version: usize) {
    for step in &MIGRATIONS[..version] {
        let tx = conn.unchecked_transaction().unwrap();
        step.apply(&tx).unwrap();
        tx.commit().unwrap();
    }
    conn.pragma_update(None, "user_version", version as i64)
        .unwrap();
}
