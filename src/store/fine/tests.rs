//! The 1 µs histograms' codec, table, migration and read-back, through
//! real SQLite files in temporary directories.

use jitterlab_core::cell::{CellContext, CellStatus};
use jitterlab_core::result::ProbeKind;
use proptest::prelude::*;
use rusqlite::types::Value;
use rusqlite::Connection;

use super::super::schema;
use super::super::tests::{key, result, start};
use super::super::{RunKind, Store, StoredHistogram, SCHEMA_VERSION};
use super::*;

/// A histogram of `bins` bins with `counts` at their indexes.
fn hist(bins: usize, counts: &[(usize, u64)], overflows: u64, cycles: &[u64]) -> LatencyHistogram {
    let mut buckets = vec![0; bins];
    for &(i, c) in counts {
        buckets[i] = c;
    }
    LatencyHistogram {
        buckets,
        overflows,
        overflow_cycles: cycles.to_vec(),
    }
}

/// The stored histograms of a latency metric with `fine` beside it.
fn with_fine(thread: Option<u32>, fine: LatencyHistogram) -> StoredHistogram {
    let (_, lat) = result();
    StoredHistogram {
        thread,
        metric: "latency",
        positive: lat.histograms().positive,
        negative: None,
        fine: Some(fine),
    }
}

#[test]
fn the_bins_are_gap_count_pairs_byte_for_byte() {
    assert_eq!(
        encode_buckets(&[0, 3, 0, 0, 200]),
        [0x01, 0x03, 0x02, 0xc8, 0x01]
    );
    // Bin 0 has no gap; 300 takes two bytes, the last bin a gap of 9996.
    let mut b = vec![0u64; 10_000];
    b[0] = 300;
    b[9_999] = 1;
    assert_eq!(encode_buckets(&b), [0x00, 0xac, 0x02, 0x8e, 0x4e, 0x01]);
    assert_eq!(decode_buckets(&encode_buckets(&b), 10_000).unwrap(), b);
    assert_eq!(encode_buckets(&[0; 40]), Vec::<u8>::new());
    assert_eq!(decode_buckets(&[], 3).unwrap(), [0, 0, 0]);
    assert_eq!(
        decode_buckets(&[0x01, 0x03, 0x02, 0xc8, 0x01], 5).unwrap(),
        [0, 3, 0, 0, 200]
    );
}

#[test]
fn overflow_numbers_are_differences_from_the_one_before() {
    assert_eq!(encode_numbers(&[5, 7, 300]), [0x05, 0x02, 0xa5, 0x02]);
    assert_eq!(
        decode_numbers(&[0x05, 0x02, 0xa5, 0x02]).unwrap(),
        [5, 7, 300]
    );
    // A smaller number after a larger one wraps, and still comes back.
    let back = decode_numbers(&encode_numbers(&[10, 3, u64::MAX, 0])).unwrap();
    assert_eq!(back, [10, 3, u64::MAX, 0]);
    assert_eq!(encode_numbers(&[]), Vec::<u8>::new());
}

#[test]
fn a_blob_this_module_did_not_write_is_refused_with_what_is_wrong() {
    let err = |r: Result<Vec<u64>>| format!("{:#}", r.unwrap_err());
    assert_eq!(
        err(decode_buckets(&[0x02, 0x01, 0x00, 0x01], 3)),
        "the bins: a bin past the last of 3"
    );
    assert_eq!(
        err(decode_buckets(&[0x01, 0x00], 3)),
        "the bins: bin 1 is listed with a count of 0"
    );
    assert_eq!(
        err(decode_buckets(&[0x01, 0x83], 3)),
        "the bins: cut short inside a number"
    );
    assert_eq!(
        err(decode_buckets(&[0x01], 3)),
        "the bins: cut short inside a number"
    );
    let too_big = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f];
    assert_eq!(
        err(decode_numbers(&too_big)),
        "the overflow cycle numbers: a number larger than 64 bits"
    );
    // A gap that would wrap past u64 is past the last bin too.
    let huge = [0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01];
    let mut blob = vec![0x00, 0x01];
    blob.extend(huge);
    blob.push(0x01);
    assert_eq!(
        err(decode_buckets(&blob, 3)),
        "the bins: a bin past the last of 3"
    );
}

proptest! {
    #[test]
    fn any_sparse_histogram_round_trips(
        bins in 1usize..3_000,
        counts in proptest::collection::vec((any::<prop::sample::Index>(), 1u64..=u64::MAX), 0..64),
        numbers in proptest::collection::vec(any::<u64>(), 0..50),
    ) {
        let mut buckets = vec![0u64; bins];
        for (at, c) in &counts {
            buckets[at.index(bins)] = *c;
        }
        let blob = encode_buckets(&buckets);
        // Two varints per non-zero bin, at most 10 bytes each.
        let non_zero = buckets.iter().filter(|&&c| c > 0).count();
        prop_assert!(blob.len() <= 20 * non_zero);
        prop_assert_eq!(decode_buckets(&blob, bins).unwrap(), buckets);
        prop_assert_eq!(decode_numbers(&encode_numbers(&numbers)).unwrap(), numbers);
    }
}

#[test]
fn a_run_cell_stores_each_thread_s_histogram_and_the_combined_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s.begin_run(&start(&cmd)).unwrap();
    let (r, _) = result();
    let t0 = hist(10_000, &[(3, 1), (5, 1)], 1, &[2]);
    let t1 = hist(10_000, &[(5, 4), (9_999, 2)], 0, &[]);
    let mut all = t0.clone();
    all.merge(&t1);
    all.overflow_cycles.clear();
    let mut hdr_only = with_fine(Some(0), t0.clone());
    hdr_only.metric = "period";
    hdr_only.fine = None;
    // Given out of order: read back in thread order, the combined last.
    let stored = [
        with_fine(None, all.clone()),
        with_fine(Some(1), t1.clone()),
        hdr_only,
        with_fine(Some(0), t0.clone()),
    ];
    s.finish_run(ids, &r, &stored).unwrap();
    let back = s.load_histograms_1us(ids.run).unwrap();
    let fine = |thread, hist| FineHistogram {
        thread,
        metric: "latency".into(),
        hist,
    };
    assert_eq!(
        back,
        [vec![fine(Some(0), t0), fine(Some(1), t1), fine(None, all)]]
    );
    assert_eq!(back[0][2].hist.buckets[5], 5);
    assert_eq!(back[0][2].hist.count(), 9);
    // The rows as a reader of the file sees them.
    let mut stmt = s
        .conn
        .prepare(
            "SELECT thread, metric, bucket_us, bucket_count, hex(buckets), overflows,
                    hex(overflow_cycles)
             FROM histograms_1us WHERE cell_id = ?1 ORDER BY thread",
        )
        .unwrap();
    type Stored = (i64, String, i64, i64, String, i64, String);
    let rows: Vec<Stored> = stmt
        .query_map([ids.cell], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    let row = |t: i64, bins: &str, overflows: i64, cycles: &str| {
        let l = "latency".to_string();
        (
            t,
            l,
            1,
            10_000,
            bins.to_string(),
            overflows,
            cycles.to_string(),
        )
    };
    assert_eq!(
        rows,
        [
            row(-1, "03010105894E02", 1, ""),
            row(0, "03010101", 1, "02"),
            row(1, "0504894E02", 0, ""),
        ]
    );
}

#[test]
fn a_bench_reads_back_one_list_per_cell_in_cell_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string(), "bench".to_string()];
    let mut st = start(&cmd);
    st.kind = RunKind::Bench;
    let keys = [
        key("a", "idle", 0),
        key("b", "idle", 0),
        key("c", "idle", 0),
    ];
    let (run, cells) = s.begin_bench(&st, &keys).unwrap();
    let (r, _) = result();
    let ctx = CellContext::default();
    // The last cell ends first; the middle one is skipped.
    let c = hist(100, &[(7, 9)], 0, &[]);
    s.finish_cell(
        cells[2],
        CellStatus::Completed,
        Some(&r),
        &ctx,
        &[with_fine(Some(0), c.clone())],
    )
    .unwrap();
    s.finish_cell(cells[1], CellStatus::Skipped, None, &ctx, &[])
        .unwrap();
    let a = hist(100, &[(1, 2), (99, 1)], 3, &[0, 4, 8]);
    s.finish_cell(
        cells[0],
        CellStatus::Completed,
        Some(&r),
        &ctx,
        &[with_fine(Some(0), a.clone())],
    )
    .unwrap();
    let back = s.load_histograms_1us(run).unwrap();
    let cells_back = s.load_run(run).unwrap().cells;
    assert_eq!(back.len(), cells_back.len());
    assert_eq!(cells_back[0].key, keys[0]);
    let only = |b: &Vec<FineHistogram>| b.iter().map(|f| f.hist.clone()).collect::<Vec<_>>();
    assert_eq!(only(&back[0]), [a]);
    assert!(back[1].is_empty());
    assert_eq!(only(&back[2]), [c]);
    assert_eq!(
        format!("{:#}", s.load_histograms_1us(run + 1).unwrap_err()),
        format!(
            "there is no run {} in the database; list the runs with: jitterlab runs",
            run + 1
        )
    );
}

#[test]
fn a_cell_without_a_result_stores_no_histogram() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s.begin_run(&start(&cmd)).unwrap();
    let h = with_fine(Some(0), hist(10, &[(1, 1)], 0, &[]));
    s.finish_cell(
        ids.cell,
        CellStatus::Failed,
        None,
        &CellContext::default(),
        &[h],
    )
    .unwrap();
    assert_eq!(s.load_histograms_1us(ids.run).unwrap(), [vec![]]);
}

#[test]
fn a_row_this_jitterlab_cannot_read_names_its_run_cell_and_thread() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = Store::open(&dir.path().join("j.db")).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s.begin_run(&start(&cmd)).unwrap();
    let (r, _) = result();
    s.finish_run(ids, &r, &[with_fine(Some(0), hist(10, &[(1, 1)], 0, &[]))])
        .unwrap();
    s.conn
        .execute("UPDATE histograms_1us SET bucket_us = 2", [])
        .unwrap();
    assert_eq!(
        format!("{:#}", s.load_histograms_1us(ids.run).unwrap_err()),
        format!(
            "reading the 1 µs histogram of latency of run {}, cell default/none/host/cyclic, thread 0: \
             its bins are 2 µs wide; this jitterlab reads 1 µs bins: use a newer jitterlab",
            ids.run
        )
    );
    s.conn
        .execute(
            "UPDATE histograms_1us SET bucket_us = 1, bucket_count = 200000, thread = -1",
            [],
        )
        .unwrap();
    assert_eq!(
        format!("{:#}", s.load_histograms_1us(ids.run).unwrap_err()),
        format!(
            "reading the 1 µs histogram of latency of run {}, cell default/none/host/cyclic, every thread: \
             200000 bins, where at most 100000 are kept",
            ids.run
        )
    );
}

/// Every row of every table but those later steps add empty
/// (`histograms_1us`, the monitor's), by table name.
fn dump(c: &Connection) -> Vec<(String, Vec<Vec<Value>>)> {
    let tables: Vec<String> = c
        .prepare(
            "SELECT name FROM sqlite_master
             WHERE type = 'table' AND name NOT IN ('histograms_1us', 'monitor_rollups', 'monitor_marks')
             ORDER BY name",
        )
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<rusqlite::Result<_>>()
        .unwrap();
    tables
        .into_iter()
        .map(|t| {
            let mut stmt = c
                .prepare(&format!("SELECT * FROM {t} ORDER BY 1, 2, 3"))
                .unwrap();
            let n = stmt.column_count();
            let rows = stmt
                .query_map([], |r| (0..n).map(|k| r.get::<_, Value>(k)).collect())
                .unwrap()
                .collect::<rusqlite::Result<_>>()
                .unwrap();
            (t, rows)
        })
        .collect()
}

#[test]
fn migration_4_to_5_keeps_every_row_and_adds_the_empty_table() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("j.db");
    let (r, _) = result();
    let before = {
        let c = Connection::open(&p).unwrap();
        schema::create_at(&c, 4);
        c.execute_batch(&format!(
            "INSERT INTO runs (id, started_at, finished_at, probe, status, command_line, tool_version,
                               result_schema, params_json, pid, boot_id, realtime, elapsed_ns,
                               result_json, kind, name)
             VALUES (1, '2026-11-20T10:00:00Z', '2026-11-20T10:00:03Z', 'cyclic', 'completed',
                     '[]', '0.1.0', 1, '{{}}', 0, '', 1, 3000000, '{json}', 'run', 'cyclic');
             INSERT INTO hosts VALUES (1, 'plc-7', '6.18.0-rt', '{{}}');
             INSERT INTO cells (id, run_id, name, configuration, scenario, deployment, probe,
                                status, result_json, context_json)
             VALUES (1, 1, 'default/none/host/cyclic', 'default', 'none', 'host', 'cyclic',
                     'completed', '{json}', NULL);
             INSERT INTO metrics VALUES (1, 0, 1, 'latency', 3, 3000, 250000, 86000, 115000,
                                         5000, 250000, 250000, 250000, 250000, 100000, 1,
                                         x'1c849313', NULL);
             INSERT INTO metrics VALUES (1, NULL, NULL, 'jitter', 2, -4000, 4000, 0, 4000,
                                         0, 4000, 4000, 4000, 4000, NULL, NULL, x'00', x'01');
             INSERT INTO outliers VALUES (1, 0, 'latency', 0, 250000, 2, 2000000);
             INSERT INTO windows VALUES (1, 0, 1, 0, 0, 3, 0);
             INSERT INTO window_metrics VALUES (1, 0, 0, 'latency', 3, 3000, 250000, 86000);
             INSERT INTO window_metrics VALUES (1, 0, 0, 'exec', 0, NULL, NULL, NULL);
             INSERT INTO counters VALUES (1, 0, 'frames', 9000);",
            json = serde_json::to_string(&r).unwrap()
        ))
        .unwrap();
        dump(&c)
    };
    assert_eq!(before.len(), 8, "every table of schema 4 has a row");
    assert!(before.iter().all(|(_, rows)| !rows.is_empty()));
    let s = Store::open(&p).unwrap();
    assert_eq!(s.schema_version().unwrap(), SCHEMA_VERSION);
    // Every row is kept; the same step gave the run its uid (derived from
    // its boot id, pid and start) and the host an unknown machine id.
    let mut expected = before;
    for (table, rows) in &mut expected {
        match table.as_str() {
            "runs" => rows[0].push(Value::Text("303bd970-e738-5adb-b3d5-8770e810d2a8".into())),
            "hosts" => rows[0].push(Value::Null),
            _ => {}
        }
    }
    assert_eq!(dump(&s.conn), expected);
    let n: i64 = s
        .conn
        .query_row("SELECT COUNT(*) FROM histograms_1us", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, 0);
    // The old cell reads back, with no 1 µs histogram.
    assert_eq!(s.load_run(1).unwrap().cells[0].result.as_ref(), Some(&r));
    assert_eq!(s.load_histograms_1us(1).unwrap(), [vec![]]);
    // The table is the one a new file gets.
    let sql = |c: &Connection| -> String {
        c.query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'histograms_1us'",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    let fresh = Store::open(&dir.path().join("new.db")).unwrap();
    assert_eq!(sql(&s.conn), sql(&fresh.conn));
    assert!(sql(&s.conn).ends_with("PRIMARY KEY (cell_id, thread, metric) ) WITHOUT ROWID"));
    // And it takes a new cell's histograms.
    drop(s);
    let mut s = Store::open(&p).unwrap();
    let cmd = vec!["jitterlab".to_string()];
    let ids = s
        .begin_run(&super::super::RunStart {
            probe: "wakeup",
            ..start(&cmd)
        })
        .unwrap();
    let h = hist(10, &[(2, 5)], 0, &[]);
    s.finish_run(ids, &r, &[with_fine(Some(0), h.clone())])
        .unwrap();
    assert_eq!(s.load_histograms_1us(ids.run).unwrap()[0][0].hist, h);
    assert_eq!(r.probe, ProbeKind::Cyclic);
}
