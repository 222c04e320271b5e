//! Tests of the HTML report: runs written through the store's own calls,
//! rendered, and the page parsed back.
//!
//! The page is parsed with `roxmltree`, a strict XML parser: the page is
//! written as XHTML-compatible HTML5 (see [`super::page`]), so a tag left
//! open or an attribute left unquoted fails here where an HTML5 parser
//! would repair it, and the same parser reads every SVG on its own. The
//! figures are checked exactly: the bins, percentiles and envelope points
//! each plot keeps in its `<metadata>`, the steps the histogram draws, the
//! axis texts with their units, the tables cell by cell against the text
//! report.
//!
//! The documents cited here are listed in `docs/design.md`.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use jitterlab_core::cell::{CellContext, CellKey, CellStatus, CpuCounters};
use jitterlab_core::probe::{MAX_METRICS, PERIODIC_METRICS};
use jitterlab_core::result::{
    DefaultStatus, EndReason, HostSnapshot, LimitCheck, Params, ProbeKind, RealtimeReport,
    RunResult, ThreadResult, UsageDelta, SCHEMA_VERSION,
};
use jitterlab_core::stats::MetricStats;
use jitterlab_core::window::{WindowRow, WindowStat};
use roxmltree::{Document, Node, ParsingOptions};

use super::plots::{Axis, BoxEntry, BoxRow};
use super::*;
use crate::report::tables::{self, Format};
use crate::store::{BenchSpecJson, RunKind, RunStart, RunStatus, StoredHistogram};

// ---------------------------------------------------------------------------
// Runs written through the store.

const THRESHOLD: u64 = 100_000;

fn open() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("r.db")).unwrap();
    (dir, store)
}

fn start<'a>(kind: RunKind, name: &'a str, host: &'a str, spec: Option<String>) -> RunStart<'a> {
    RunStart {
        started_at: "2026-11-21T12:00:00Z",
        probe: if kind == RunKind::Run { name } else { "bench" },
        command_line: &[],
        params_json: "{}".into(),
        host_json: "{}".into(),
        hostname: host,
        kernel_release: "6.12.0-rt5-amd64",
        realtime: Some(true),
        kind,
        name,
        machine_id: None,
        spec_json: spec,
    }
}

/// The statistics of `values` (signed metrics keep negative values; only
/// the latency has a threshold).
fn stats(values: &[i64], signed: bool, threshold: Option<u64>) -> MetricStats {
    let mut s = MetricStats::new(signed, threshold);
    for &v in values {
        s.record(v);
    }
    s
}

/// A cycle's four periodic metrics from its latency `v` (1 ms period):
/// period `1 ms + v/10`, jitter `v/10 − 450` (negative below 4.5 µs),
/// execution time `100 µs + v`.
fn periodic(v: i64) -> [(&'static str, i64); 4] {
    [
        ("latency", v),
        ("period", 1_000_000 + v / 10),
        ("jitter", v / 10 - 450),
        ("exec", 100_000 + v),
    ]
}

/// A cyclic result whose threads measured these latencies (and the other
/// periodic metrics from them, [`periodic`]), with its histograms as the
/// runner stores them; the combined figures only when `combined`.
fn measured(threads: &[&[i64]], combined: bool) -> (RunResult, Vec<StoredHistogram>) {
    let mut hists = Vec::new();
    let new = |name: &str| {
        let threshold = (name == "latency").then_some(THRESHOLD);
        MetricStats::new(name == "jitter", threshold)
    };
    let mut all: Vec<(&'static str, MetricStats)> =
        periodic(0).iter().map(|(n, _)| (*n, new(n))).collect();
    let mut results = Vec::new();
    for (i, values) in threads.iter().enumerate() {
        let mut metrics = BTreeMap::new();
        for (k, (name, acc)) in all.iter_mut().enumerate() {
            let v: Vec<i64> = values.iter().map(|&x| periodic(x)[k].1).collect();
            let s = stats(
                &v,
                *name == "jitter",
                (*name == "latency").then_some(THRESHOLD),
            );
            acc.merge(&s);
            let h = s.histograms();
            hists.push(StoredHistogram {
                thread: Some(i as u32),
                metric: name,
                positive: h.positive,
                negative: h.negative,
                fine: None,
            });
            metrics.insert(name.to_string(), s.summary());
        }
        results.push(ThreadResult {
            thread: i as u32,
            cpu: i + 1,
            tid: 100 + i as i32,
            cycles: values.len() as u64,
            releases: values.len() as u64,
            skipped: 0,
            overruns: 0,
            metrics,
            outliers: BTreeMap::new(),
            calibration: None,
            usage: UsageDelta::default(),
            window_rows: 0,
            dropped_rows: 0,
            counters: BTreeMap::new(),
        });
    }
    let combined = combined.then(|| {
        let mut m = BTreeMap::new();
        for (name, acc) in &all {
            let h = acc.histograms();
            hists.push(StoredHistogram {
                thread: None,
                metric: name,
                positive: h.positive,
                negative: h.negative,
                fine: None,
            });
            m.insert(name.to_string(), acc.summary());
        }
        m
    });
    let r = RunResult {
        schema_version: SCHEMA_VERSION,
        tool: "jitterlab".into(),
        tool_version: "0.1.0".into(),
        probe: ProbeKind::Cyclic,
        started_at: "2026-11-21T12:00:00Z".into(),
        elapsed_ns: 4_000_000_000,
        end: EndReason::Completed,
        interrupted: false,
        signal: None,
        command_line: vec!["jitterlab".into(), "run".into(), "cyclic".into()],
        params: Params {
            duration_ns: Some(4_000_000_000),
            cpus: (1..=threads.len()).collect(),
            scan_ns: 100_000,
            working_set_bytes: 65_536,
            threshold_ns: THRESHOLD,
            ..Params::default()
        },
        realtime: RealtimeReport {
            realtime: true,
            defaults: vec![],
        },
        host: HostSnapshot {
            hostname: "plc-7".into(),
            kernel_release: "6.12.0-rt5-amd64".into(),
            ..HostSnapshot::default()
        },
        threads: results,
        combined,
        limits: vec![],
        break_event: None,
        warnings: vec![],
        detail: None,
    };
    (r, hists)
}

/// A window row of thread 0 with these latency figures.
fn window(window: u64, count: u64, min: i64, max: i64, mean: i64) -> WindowRow {
    let mut stats = [WindowStat::default(); MAX_METRICS];
    stats[0] = WindowStat {
        count,
        min,
        max,
        mean,
        ..WindowStat::default()
    };
    WindowRow {
        thread: 0,
        cpu: 1,
        window,
        start_ns: window * 1_000_000_000,
        cycles: count,
        overruns: 0,
        metrics: &PERIODIC_METRICS[..1],
        stats,
    }
}

/// The windows of `values`, `per` samples a window.
fn windows_of(values: &[i64], per: usize) -> Vec<WindowRow> {
    values
        .chunks(per)
        .enumerate()
        .map(|(w, c)| {
            let sum: i64 = c.iter().sum();
            window(
                w as u64,
                c.len() as u64,
                *c.iter().min().unwrap(),
                *c.iter().max().unwrap(),
                sum / c.len() as i64,
            )
        })
        .collect()
}

/// The small cell whose figures the tests check by hand: 1 µs bins 1 (3
/// samples), 2 (1), 15 (2) and 40 (1); the 16 ns bucket of 40 000 ns
/// (40 000 ..= 40 031) lies inside bin 40.
const SMALL: [i64; 7] = [1_500, 1_200, 1_999, 2_200, 15_000, 15_900, 40_000];

/// A `jitterlab run cyclic` of `values` on `host`, stored; its run id.
fn single_run(store: &mut Store, values: &[i64], host: &str) -> i64 {
    let ids = store
        .begin_run(&start(RunKind::Run, "cyclic", host, None))
        .unwrap();
    store
        .insert_windows(ids.cell, &windows_of(values, 2))
        .unwrap();
    let (mut r, h) = measured(&[values], false);
    r.host.hostname = host.into();
    store.finish_run(ids, &r, &h).unwrap();
    ids.run
}

fn key(configuration: &str, scenario: &str) -> CellKey {
    CellKey {
        configuration: configuration.into(),
        scenario: scenario.into(),
        deployment: "host".into(),
        probe: "cyclic".into(),
        repetition: 0,
    }
}

/// A bench of three cells (two configurations, two scenarios) and one
/// configuration the machine could not run; its run id.
fn bench(store: &mut Store) -> i64 {
    let spec = BenchSpecJson {
        configurations: vec!["tuned".into(), "default".into(), "cat".into()],
        scenarios: vec!["idle".into(), "cpu".into()],
        unavailable: vec![("cat".into(), "no resctrl on this kernel".into())],
        spec: serde_json::json!({}),
        source: None,
    };
    let keys = [
        key("tuned", "idle"),
        key("tuned", "cpu"),
        key("default", "idle"),
    ];
    let (run, cells) = store
        .begin_bench(
            &start(
                RunKind::Bench,
                "compare",
                "plc-7",
                Some(serde_json::to_string(&spec).unwrap()),
            ),
            &keys,
        )
        .unwrap();
    let samples: [Vec<i64>; 3] = [
        (0..200).map(|i| 3_000 + i * 20).collect(),
        (0..200).map(|i| 5_000 + i * 90).collect(),
        (0..200).map(|i| 4_000 + i * 40).collect(),
    ];
    for (k, (&cell, values)) in cells.iter().zip(&samples).enumerate() {
        store.start_cell(cell).unwrap();
        store.insert_windows(cell, &windows_of(values, 50)).unwrap();
        let (mut r, h) = measured(&[values], false);
        if k == 1 {
            r.limits = vec![LimitCheck {
                metric: "latency".into(),
                limit_ns: 20_000,
                observed_ns: Some(22_910),
                exceeded: true,
                samples: None,
            }];
        }
        if k == 2 {
            r.realtime = RealtimeReport {
                realtime: false,
                defaults: vec![DefaultStatus {
                    name: "scheduler".into(),
                    requested: "SCHED_FIFO 95".into(),
                    applied: false,
                    detail: "EPERM: run as root".into(),
                    required: true,
                }],
            };
        }
        let ctx = CellContext {
            cpus: vec![CpuCounters {
                cpu: 1,
                steal_ns: 0,
                irqs: 12,
                irq_lines: BTreeMap::from([("LOC".to_string(), 12)]),
                softirqs: BTreeMap::new(),
            }],
            ..CellContext::default()
        };
        store
            .finish_cell(cell, CellStatus::Completed, Some(&r), &ctx, &h)
            .unwrap();
    }
    store
        .finish_run_row(run, RunStatus::Completed, None, 0, None)
        .unwrap();
    run
}

// ---------------------------------------------------------------------------
// Reading the page back.

fn parse(html: &str) -> Document<'_> {
    let opts = ParsingOptions {
        allow_dtd: true,
        ..ParsingOptions::default()
    };
    Document::parse_with_options(html, opts).unwrap_or_else(|e| panic!("not well-formed: {e}"))
}

fn elements<'a, 'i>(doc: &'a Document<'i>, tag: &str) -> Vec<Node<'a, 'i>> {
    doc.descendants()
        .filter(|n| n.is_element() && n.tag_name().name() == tag)
        .collect()
}

/// Every plot of a kind, each also parsed on its own.
fn plots<'a, 'i>(doc: &'a Document<'i>, html: &str, kind: &str) -> Vec<Node<'a, 'i>> {
    let v: Vec<Node<'_, '_>> = elements(doc, "svg")
        .into_iter()
        .filter(|n| n.attribute("data-plot") == Some(kind))
        .collect();
    for n in &v {
        let svg = &html[n.range()];
        Document::parse(svg).unwrap_or_else(|e| panic!("{kind} is not a well-formed SVG: {e}"));
    }
    v
}

fn text(n: Node<'_, '_>) -> String {
    n.descendants()
        .filter(|d| d.is_text())
        .filter_map(|d| d.text())
        .collect()
}

fn child_text(n: Node<'_, '_>, tag: &str) -> String {
    n.children()
        .find(|c| c.tag_name().name() == tag)
        .map(text)
        .unwrap_or_default()
}

/// The texts a plot shows (axis descriptions, ticks, legend).
fn labels(n: Node<'_, '_>) -> Vec<String> {
    n.descendants()
        .filter(|d| d.tag_name().name() == "text")
        .map(|d| text(d).trim().to_string())
        .collect()
}

/// Nothing on the page reaches outside it.
fn assert_self_contained(html: &str) {
    for bad in [
        "http:", "https:", "//", "url(", "<script", "@import", "src=", "href=",
    ] {
        assert!(!html.contains(bad), "the page holds {bad:?}");
    }
}

/// The x pixel of `value` on a plot's horizontal axis, from the positions
/// of its tick labels `"0"` and `at` (text drawn centred on its tick).
fn x_of(svg: Node<'_, '_>, at: &str, value: f64) -> f64 {
    let tick = |t: &str| -> f64 {
        svg.descendants()
            .filter(|d| d.tag_name().name() == "text")
            .filter(|d| d.attribute("text-anchor") == Some("middle"))
            .find(|d| text(*d).trim() == t)
            .unwrap_or_else(|| panic!("no tick {t} in {:?}", labels(svg)))
            .attribute("x")
            .unwrap()
            .parse()
            .unwrap()
    };
    let (x0, x1) = (tick("0"), tick(at));
    x0 + (x1 - x0) * value / at.parse::<f64>().unwrap()
}

/// The points of a polyline.
fn points(n: Node<'_, '_>) -> Vec<(i32, i32)> {
    n.attribute("points")
        .unwrap()
        .split_whitespace()
        .map(|p| {
            let (x, y) = p.split_once(',').unwrap();
            (x.parse().unwrap(), y.parse().unwrap())
        })
        .collect()
}

/// The polylines of a plot drawn in `look`'s colour with stroke width 2
/// (its series, not its axes).
fn series_lines<'a, 'i>(svg: Node<'a, 'i>, look: plots::Look) -> Vec<Node<'a, 'i>> {
    let plotters::style::RGBColor(r, g, b) = look.colour;
    let colour = format!("#{r:02X}{g:02X}{b:02X}");
    svg.descendants()
        .filter(|d| d.tag_name().name() == "polyline")
        .filter(|d| d.attribute("stroke") == Some(colour.as_str()))
        .filter(|d| d.attribute("stroke-width") == Some("2"))
        .collect()
}

// ---------------------------------------------------------------------------
// Tests.

#[test]
fn a_run_is_one_self_contained_page_with_three_plots() {
    let (_d, mut store) = open();
    let run = single_run(&mut store, &SMALL, "plc-7");
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>\n<html lang=\"en\">"));
    assert_self_contained(&html);
    let doc = parse(&html);
    assert_eq!(elements(&doc, "svg").len(), 3);
    assert_eq!(plots(&doc, &html, "histogram").len(), 1);
    assert_eq!(plots(&doc, &html, "percentiles").len(), 1);
    assert_eq!(plots(&doc, &html, "timeline").len(), 1);
    assert_eq!(elements(&doc, "figure").len(), 3);
    // A `jitterlab run` shows its summary and its verdicts, not the bench
    // tables.
    let tables = elements(&doc, "table");
    assert_eq!(tables.len(), 1);
    assert_eq!(
        text(tables[0]).replace('\n', ""),
        "Verdictsverdictobservedsampleslimitstatuswhat decided itlatency measured-7-PASS7 samples"
    );
    // The same database gives the same bytes.
    assert_eq!(
        render(&store, &[run], &HtmlOptions::default()).unwrap(),
        html
    );
}

#[test]
fn the_summary_is_the_text_report_byte_for_byte() {
    let (_d, mut store) = open();
    let run = single_run(&mut store, &SMALL, "plc-7");
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let pre = elements(&doc, "pre")
        .into_iter()
        .find(|n| n.attribute("class") == Some("summary"))
        .unwrap();
    let stored = store.load_run(run).unwrap();
    let want = crate::report::text::summary(stored.cells[0].result.as_ref().unwrap());
    assert_eq!(text(pre), want);
    assert!(want.contains("latency"), "{want}");
}

#[test]
fn the_histogram_draws_the_exact_bins_on_a_log_count_axis() {
    let (_d, mut store) = open();
    let run = single_run(&mut store, &SMALL, "plc-7");
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let h = plots(&doc, &html, "histogram")[0];
    assert_eq!(
        child_text(h, "metadata"),
        "# run 1\nbin_us count\n1 3\n2 1\n15 2\n40 1\noverflows 0\n"
    );
    let l = labels(h);
    assert!(l.contains(&"latency (µs), 1 µs bins".to_string()), "{l:?}");
    assert!(
        l.contains(&"samples per bin (log scale)".to_string()),
        "{l:?}"
    );
    assert!(l.contains(&"1".to_string()) && l.contains(&"10".to_string()));
    // The step line: one level per run of equal counts over bins 0 ..= 40
    // (0 | 3 | 1 | 0 ×12 | 2 | 0 ×24 | 1), two points each.
    // The series, then its legend sample.
    let lines = series_lines(h, plots::SOLID);
    assert_eq!(lines.len(), 2);
    let p = points(lines[0]);
    assert_eq!(p.len(), 14);
    let level = |k: usize| p[2 * k].1;
    for k in 0..7 {
        assert_eq!(p[2 * k].1, p[2 * k + 1].1, "level {k} is flat");
    }
    // Higher counts are drawn higher (smaller y); zeros on the floor; the
    // log axis puts 3 above 2 above 1.
    let (zero, three, one, two) = (level(0), level(1), level(2), level(4));
    assert!(three < two && two < one && one < zero, "{p:?}");
    assert_eq!(level(3), zero);
    assert_eq!(level(6), one);
    // Bins are 1 µs wide: bin 1 spans one unit of x, bins 3..15 twelve.
    let unit = p[3].0 - p[2].0;
    assert!(unit > 0);
    assert!((p[7].0 - p[6].0 - 12 * unit).abs() <= 12, "{p:?}");
    assert!(html.contains("From the HDR histogram: bins above 16 µs are approximate."));
}

#[test]
fn a_cell_that_kept_its_1us_histogram_is_plotted_from_it_exactly() {
    let (_d, mut store) = open();
    let ids = store
        .begin_run(&start(RunKind::Run, "cyclic", "plc-7", None))
        .unwrap();
    let (r, mut h) = measured(&[&SMALL], false);
    // The probe's own bins, which the HDR histogram cannot tell apart:
    // 40 µs and 40.9 µs share one bin here, and 120 µs is an overflow of
    // a 100-bin histogram.
    let mut fine = jitterlab_core::recorder::LatencyHistogram::new(100);
    for (ns, at) in [(1_000, 0), (40_000, 1), (40_900, 2), (120_000, 3)] {
        fine.record(ns, at);
    }
    let latency = h.iter_mut().find(|h| h.metric == "latency").unwrap();
    latency.fine = Some(fine);
    store.finish_run(ids, &r, &h).unwrap();
    let html = render(&store, &[ids.run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let p = plots(&doc, &html, "histogram")[0];
    assert_eq!(
        child_text(p, "metadata"),
        "# run 1\nbin_us count\n1 1\n40 2\noverflows 1\n"
    );
    assert!(!html.contains("bins above 16 µs are approximate"));
}

#[test]
fn a_run_still_measuring_shows_its_timeline_so_far() {
    let (_d, mut store) = open();
    // A `jitterlab run` keeps its parameters on the run row, not as a
    // cell plan: until it ends, its cell has no figures of its own.
    let (r, _) = measured(&[&SMALL], false);
    let ids = store
        .begin_run(&RunStart {
            params_json: serde_json::to_string(&r.params).unwrap(),
            ..start(RunKind::Run, "cyclic", "plc-7", None)
        })
        .unwrap();
    store
        .insert_windows(ids.cell, &windows_of(&SMALL, 2))
        .unwrap();
    let html = render(&store, &[ids.run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    assert_eq!(plots(&doc, &html, "timeline").len(), 1);
    assert_eq!(plots(&doc, &html, "histogram").len(), 0);
    assert!(html.contains("no histogram and no percentile curve yet"));
}

#[test]
fn the_percentile_curve_has_the_figures_and_the_threshold_line() {
    let (_d, mut store) = open();
    let values: Vec<i64> = (1..=1_000).map(|i| i * 10).collect();
    let run = single_run(&mut store, &values, "plc-7");
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let p = plots(&doc, &html, "percentiles")[0];
    // Each percentile is the highest value of its HDR bucket, as in every
    // summary: 5000 ns lies in 5000 ..= 5003, 9000 in 9000 ..= 9007.
    assert_eq!(
        child_text(p, "metadata"),
        "# run 1\nlabel nines value\nmin 0.0000 10\np50 0.3010 5003\np90 1.0000 9007\n\
         p99 2.0000 9903\np99.9 3.0000 9991\nmax 3.0000 10000\nline threshold 100 µs 100000\n"
    );
    let stored = store.load_run(run).unwrap();
    let summary = &stored.cells[0].result.as_ref().unwrap().threads[0].metrics["latency"];
    assert_eq!(
        (summary.p50, summary.p90, summary.p99, summary.p99_9),
        (Some(5003), Some(9007), Some(9903), Some(9991))
    );
    let l = labels(p);
    for want in [
        "latency (µs)",
        "threshold 100 µs",
        "min",
        "p90",
        "p99",
        "p99.9",
    ] {
        assert!(l.contains(&want.to_string()), "{want} in {l:?}");
    }
    // The threshold is a dash-dot line across the plot.
    let t = series_lines(p, plots::THRESHOLD);
    assert_eq!(t.len(), 2, "the line and its legend sample");
    assert!(t
        .iter()
        .all(|n| n.attribute("stroke-dasharray") == Some("10 3 2 3")));
}

#[test]
fn a_48_hour_run_stays_small_and_keeps_its_largest_maximum() {
    let (_d, mut store) = open();
    let ids = store
        .begin_run(&start(RunKind::Run, "cyclic", "plc-7", None))
        .unwrap();
    const WINDOWS: u64 = 172_800;
    const SPIKE: u64 = 123_457;
    let rows: Vec<WindowRow> = (0..WINDOWS)
        .map(|w| {
            let max = if w == SPIKE {
                987_654
            } else {
                10_000 + (w * 7_919 % 50_000) as i64
            };
            window(w, 1_000, 5_000, max, 8_000)
        })
        .collect();
    let largest = rows.iter().map(|r| r.stats[0].max).max().unwrap();
    assert_eq!(largest, 987_654);
    for chunk in rows.chunks(20_000) {
        store.insert_windows(ids.cell, chunk).unwrap();
    }
    let (mut r, h) = measured(&[&[5_000, 8_000, 59_999, 987_654]], false);
    r.elapsed_ns = WINDOWS * 1_000_000_000;
    store.finish_run(ids, &r, &h).unwrap();
    let t0 = std::time::Instant::now();
    let html = render(&store, &[ids.run], &HtmlOptions::default()).unwrap();
    eprintln!(
        "48-hour run: {} bytes rendered in {:?}",
        html.len(),
        t0.elapsed()
    );
    assert!(html.len() < 5_000_000, "{} bytes", html.len());
    let doc = parse(&html);
    let t = plots(&doc, &html, "timeline")[0];
    let meta = child_text(t, "metadata");
    let mut lines = meta.lines();
    assert_eq!(lines.next(), Some("windows_per_point 173"));
    lines.next();
    let maxima: Vec<i64> = lines
        .map(|l| l.split(' ').nth(4).unwrap().parse().unwrap())
        .collect();
    assert_eq!(maxima.len(), 999);
    assert_eq!(maxima.iter().max(), Some(&largest));
    assert_eq!(maxima[(SPIKE / 173) as usize], largest);
    let l = labels(t);
    assert!(
        l.contains(&"time since the first release (h)".to_string()),
        "{l:?}"
    );
    assert!(html.contains("172800 window rows of 1s in 999 points of up to 173 windows each"));
}

#[test]
fn a_bench_has_its_verdict_tables_cells_and_box_charts() {
    let (_d, mut store) = open();
    let run = bench(&mut store);
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    assert_self_contained(&html);
    let doc = parse(&html);
    // Three cells × three plots, and a box chart per metric.
    assert_eq!(plots(&doc, &html, "histogram").len(), 3);
    assert_eq!(plots(&doc, &html, "percentiles").len(), 3);
    assert_eq!(plots(&doc, &html, "timeline").len(), 3);
    let boxes = plots(&doc, &html, "boxes");
    let titles: Vec<String> = boxes.iter().map(|b| child_text(*b, "title")).collect();
    assert_eq!(
        titles,
        [
            "latency across the cells of run 1",
            "period across the cells of run 1",
            "jitter across the cells of run 1",
            "exec across the cells of run 1"
        ]
    );
    assert_eq!(
        child_text(boxes[0], "metadata"),
        "group series min p50 p99 max\n\
         tuned / idle | run 1 | 3000 4983 6943 6980\n\
         tuned / cpu | run 1 | 5000 13911 22735 22910\n\
         default / idle | run 1 | 4000 7963 11887 11960\n"
    );
    // The signed jitter's whiskers reach below zero.
    assert!(child_text(boxes[2], "metadata").contains("tuned / idle | run 1 | -150 "));
    let l = labels(boxes[0]);
    for want in [
        "latency (µs)",
        "tuned / idle",
        "tuned / cpu",
        "default / idle",
    ] {
        assert!(l.contains(&want.to_string()), "{want} in {l:?}");
    }
    let sheets: Vec<&str> = elements(&doc, "table")
        .iter()
        .filter_map(|t| t.attribute("data-table"))
        .collect();
    // As the text report has them: a configuration table per scenario
    // (idle, cpu) and a condition table per configuration.
    assert_eq!(
        sheets,
        [
            "configurations",
            "configurations",
            "conditions",
            "conditions",
            "latency"
        ]
    );
    // The verdict, in words.
    let v = text(
        elements(&doc, "ul")
            .into_iter()
            .find(|n| n.attribute("class") == Some("verdict"))
            .unwrap(),
    );
    assert!(
        v.contains("exit status: 1 — 1 of 3 verdicts did not pass: tuned/cpu/host/cyclic rep 0: FAIL latency: max 22.910us of 200 samples > limit 20.000us"),
        "{v}"
    );
    assert!(v.contains("real-time: NO"), "{v}");
    assert!(v.contains("default/idle/host/cyclic rep 0: scheduler (requested SCHED_FIFO 95): EPERM: run as root"), "{v}");
    assert!(
        v.contains("configuration cat: N/A — no resctrl on this kernel"),
        "{v}"
    );
    let limits = elements(&doc, "table")
        .into_iter()
        .find(|n| n.attribute("class") == Some("limits"))
        .unwrap();
    assert_eq!(
        text(limits).replace('\n', ""),
        "Verdictscellverdictobservedsampleslimitstatuswhat decided it\
         tuned/idle/host/cyclic rep 0latency measured-200-PASS200 samples\
         tuned/cpu/host/cyclic rep 0latency22.910 µs20020.000 µsFAILmax 22.910us of 200 samples > limit 20.000us\
         default/idle/host/cyclic rep 0latency measured-200-PASS200 samples"
    );
    // The explanations sit beside each cell.
    let asides = elements(&doc, "aside");
    assert_eq!(asides.len(), 3);
    assert!(text(asides[0]).contains("probe CPU 1: no steal; 12 interrupts (LOC=12); no softirqs"));
    // Without explanations, none.
    let mut opts = HtmlOptions::default();
    opts.tables.explain = false;
    let quiet = render(&store, &[run], &opts).unwrap();
    assert_eq!(elements(&parse(&quiet), "aside").len(), 0);
}

#[test]
fn the_tables_print_the_text_reports_figures() {
    let (_d, mut store) = open();
    let run = bench(&mut store);
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let stored = store.load_run(run).unwrap();
    let text_report =
        tables::render(&stored, &tables::TableOptions::default(), Format::Text).unwrap();
    let lines: Vec<&str> = text_report.lines().collect();
    let squeeze = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut compared = 0;
    for t in elements(&doc, "table")
        .into_iter()
        .filter(|t| t.attribute("class") == Some("sheet"))
    {
        let caption = child_text(t, "caption");
        let at = lines
            .iter()
            .position(|l| *l == caption)
            .unwrap_or_else(|| panic!("{caption} is a title of the text report"));
        let rows: Vec<String> = t
            .descendants()
            .filter(|n| n.tag_name().name() == "tr")
            .map(|tr| {
                let cells: Vec<String> = tr
                    .children()
                    .filter(|c| c.is_element())
                    .map(text)
                    .filter(|c| !c.is_empty())
                    .collect();
                squeeze(&cells.join(" "))
            })
            .collect();
        for (k, row) in rows.iter().enumerate() {
            assert_eq!(*row, squeeze(lines[at + 1 + k]), "{caption}, row {k}");
            compared += 1;
        }
    }
    // configurations (head + 3 configurations), conditions (head + 2
    // scenarios, per configuration that has them: tuned), latency (head +
    // 3 cells).
    assert!(compared >= 12, "{compared} rows compared");
}

#[test]
fn two_runs_are_overlaid_a_solid_and_b_dashed() {
    let (_d, mut store) = open();
    let a = single_run(&mut store, &SMALL, "plc-7");
    let b = single_run(&mut store, &[1_100, 3_300, 3_400, 80_000], "plc-8");
    let html = render(&store, &[a, b], &HtmlOptions::default()).unwrap();
    assert_self_contained(&html);
    // Each run's record once, folded and titled with its run, above its
    // verdict.
    for (letter, id, host) in [("A", a, "plc-7"), ("B", b, "plc-8")] {
        let head = format!(
            "<details class=\"record\"><summary><h3>Record of run {letter} (run {id})</h3></summary>\n<dl class=\"header\">\n"
        );
        assert_eq!(html.matches(&head).count(), 1, "{html}");
        let at = html.find(&head).unwrap();
        let side = &html[at..at + html[at..].find("</section>").unwrap()];
        assert!(
            side.contains(&format!("<dt>host</dt><dd>{host}</dd>")),
            "{side}"
        );
        assert!(
            side.find("</details>") < side.find("<h3>Verdict</h3>"),
            "{side}"
        );
    }
    assert_eq!(html.matches("<dl class=\"header\">").count(), 2, "{html}");
    let doc = parse(&html);
    let h = plots(&doc, &html, "histogram");
    assert_eq!(h.len(), 1);
    assert_eq!(
        child_text(h[0], "metadata"),
        "# A: run 1 (plc-7)\nbin_us count\n1 3\n2 1\n15 2\n40 1\noverflows 0\n\
         # B: run 2 (plc-8)\nbin_us count\n1 1\n3 2\n80 1\noverflows 0\n"
    );
    let l = labels(h[0]);
    assert!(
        l.contains(&"A: run 1 (plc-7)".to_string()) && l.contains(&"B: run 2 (plc-8)".to_string())
    );
    // A solid, B dashed: its line and its legend sample.
    assert!(series_lines(h[0], plots::SOLID)
        .iter()
        .all(|n| n.attribute("stroke-dasharray").is_none()));
    let dashed = series_lines(h[0], plots::DASHED);
    assert_eq!(dashed.len(), 2);
    assert!(dashed
        .iter()
        .all(|n| n.attribute("stroke-dasharray") == Some("7 4")));
    let p = plots(&doc, &html, "percentiles");
    assert_eq!(p.len(), 1);
    assert!(child_text(p[0], "metadata")
        .contains("# B: run 2 (plc-8)\nlabel nines value\nmin 0.0000 1100\n"));
    // A box chart per metric of the cell they share.
    assert_eq!(plots(&doc, &html, "boxes").len(), 4);
    let compare: Vec<Node<'_, '_>> = elements(&doc, "table")
        .into_iter()
        .filter(|t| t.attribute("data-table") == Some("compare"))
        .collect();
    assert_eq!(compare.len(), 1);
    assert!(text(compare[0]).contains("B: run 2"));
    assert_eq!(
        elements(&doc, "ul")
            .iter()
            .filter(|n| n.attribute("class") == Some("verdict"))
            .count(),
        2
    );
}

#[test]
fn stored_text_is_escaped_and_the_page_stays_well_formed() {
    let (_d, mut store) = open();
    let run = single_run(&mut store, &SMALL, "<b>plc & 'x'</b>\u{1b}[31m");
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    assert!(!html.contains("<b>"));
    assert!(!html.contains('\u{1b}'));
    let title = text(elements(&doc, "title")[0]);
    assert_eq!(
        title,
        "jitterlab report: run 1 (run cyclic) on <b>plc & 'x'</b>\\u{1b}[31m"
    );
}

#[test]
fn the_threads_of_a_cell_without_combined_figures_are_added() {
    let (_d, mut store) = open();
    let ids = store
        .begin_run(&start(RunKind::Run, "wakeup", "plc-7", None))
        .unwrap();
    let (r, h) = measured(&[&[1_000, 2_000], &[3_000]], false);
    store.finish_run(ids, &r, &h).unwrap();
    let got = store
        .metric_histograms(ids.cell, "latency")
        .unwrap()
        .unwrap();
    assert_eq!(got.positive.len(), 3);
    for v in [1_000, 2_000, 3_000] {
        assert_eq!(got.positive.count_at(v), 1);
    }
    // With combined figures, the combined row alone.
    let ids = store
        .begin_run(&start(RunKind::Run, "wakeup", "plc-7", None))
        .unwrap();
    let (r, h) = measured(&[&[1_000, 2_000], &[3_000]], true);
    store.finish_run(ids, &r, &h).unwrap();
    let got = store
        .metric_histograms(ids.cell, "latency")
        .unwrap()
        .unwrap();
    assert_eq!(got.positive.len(), 3);
    let _: &Histogram<u64> = &got.positive;
    assert!(store.metric_histograms(ids.cell, "load").unwrap().is_none());
}

#[test]
fn a_missing_run_is_bad_input_naming_it() {
    let (_d, mut store) = open();
    single_run(&mut store, &SMALL, "plc-7");
    let e = render(&store, &[9], &HtmlOptions::default()).unwrap_err();
    assert!(e.downcast_ref::<crate::error::BadInput>().is_some());
    assert_eq!(
        format!("{e}"),
        "there is no run 9 in the database; list the runs with: jitterlab runs"
    );
}

#[test]
fn the_output_file_is_replaced_whole_and_keeps_its_permissions() {
    use std::os::unix::fs::PermissionsExt as _;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("report.html");
    std::fs::write(&p, "old").unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
    crate::out_files::write_replacing(&p, "new report").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "new report");
    assert_eq!(
        std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
        0o640
    );
    let fresh = dir.path().join("fresh.html");
    crate::out_files::write_replacing(&fresh, "x").unwrap();
    assert_eq!(std::fs::read_to_string(&fresh).unwrap(), "x");
    // No temporary file is left beside them.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
}

/// A stored `jitterlab run roundtrip` of 200 screw-to-screw times, 2 ms
/// to 6.975 ms in 25 µs steps, against [Red Hat controls]'s 6.7 ms budget, with a
/// window row per 20 samples; its run id and result.
fn round_trip_run(store: &mut Store) -> (i64, RunResult) {
    use jitterlab_core::roundtrip::{Budget, BudgetInputs, BudgetVerdict};
    let ids = store
        .begin_run(&start(RunKind::Run, "roundtrip", "plc-7", None))
        .unwrap();
    let budget = Budget::seed001(
        BudgetInputs {
            opcua_ns: 500_000,
            network_ns: 100_000,
            controller_period_ns: 5_000_000,
            scan_ns: 500_000,
        },
        None,
    );
    let mut verdict = BudgetVerdict::new(budget.clone());
    let values: Vec<i64> = (0..200).map(|i| 2_000_000 + i * 25_000).collect();
    for (i, &v) in values.iter().enumerate() {
        verdict.add(i as u64, i as u64 * 10_000_000, v as u64);
    }
    assert_eq!(verdict.over, 11, "6.725 ms … 6.975 ms are beyond 6.7 ms");
    let s2s = stats(&values, false, None);
    let (mut r, _) = measured(&[&[1]], false);
    r.probe = ProbeKind::Roundtrip;
    r.threads[0].metrics = BTreeMap::from([("screw-to-screw".to_string(), s2s.summary())]);
    r.detail = Some(serde_json::json!({
        "budget": verdict,
        "budget_terms": budget.names_line(),
        "budget_formula": budget.formula(),
    }));
    let h = vec![StoredHistogram {
        thread: Some(0),
        metric: "screw-to-screw",
        positive: s2s.histograms().positive,
        negative: None,
        fine: None,
    }];
    let rows: Vec<WindowRow> = windows_of(&values, 20)
        .into_iter()
        .map(|w| WindowRow {
            metrics: &jitterlab_core::roundtrip::ROUNDTRIP.metrics[..1],
            ..w
        })
        .collect();
    store.insert_windows(ids.cell, &rows).unwrap();
    store.finish_run(ids, &r, &h).unwrap();
    (ids.run, r)
}

#[test]
fn a_round_trip_draws_its_budget_and_states_its_verdict() {
    let (_d, mut store) = open();
    let (run, r) = round_trip_run(&mut store);
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let p = plots(&doc, &html, "percentiles")[0];
    assert!(
        child_text(p, "metadata").ends_with("line budget 6700 µs 6700000\n"),
        "{}",
        child_text(p, "metadata")
    );
    let l = labels(p);
    assert!(l.contains(&"screw-to-screw (µs)".to_string()), "{l:?}");
    assert!(l.contains(&"budget 6700 µs".to_string()), "{l:?}");
    let b = series_lines(p, plots::BUDGET);
    assert_eq!(b.len(), 2, "the line and its legend sample");
    assert!(b
        .iter()
        .all(|n| n.attribute("stroke-dasharray") == Some("10 3 2 3 2 3")));
    // The histogram's bins run to the largest sample, 6.975 ms, whose
    // 4096 ns wide HDR bucket (6 971 392 ..= 6 975 487) has its middle in
    // bin 6973: approximate, as the caption says.
    let h = plots(&doc, &html, "histogram")[0];
    let m = child_text(h, "metadata");
    assert!(m.contains("\n6973 1\noverflows 0\n"), "{m}");
    assert_eq!(verdict_over(&r), 11);
    // The verdict carries the budget block the text report prints.
    let pre = elements(&doc, "pre")
        .into_iter()
        .find(|n| n.attribute("class") == Some("budget"))
        .unwrap();
    let want = (crate::probe::parts::of(r.probe).summary.unwrap())(&r).unwrap();
    assert_eq!(text(pre), want);
    assert!(
        want.contains("200 round trips, 11 beyond the budget of 6.700ms (FAILED)"),
        "{want}"
    );
}

#[test]
fn figures_spanning_decades_get_a_log_axis_in_the_box_chart() {
    let entry = |min, p50, p99, max| BoxEntry {
        min,
        p50: Some(p50),
        p99: Some(p99),
        max,
    };
    let rows = vec![
        BoxRow {
            label: "baseline / codesys".into(),
            entries: vec![Some(entry(3_859_700, 55_902_200, 88_000_000, 95_885_800))],
        },
        BoxRow {
            label: "tuned / codesys".into(),
            entries: vec![Some(entry(14_000, 28_900, 60_000, 89_700))],
        },
    ];
    let series = [("run 1".to_string(), plots::SOLID)];
    let svg = plots::boxes("latency", Axis::Us, &rows, &series, &[], "t").unwrap();
    let doc = Document::parse(&svg).unwrap();
    let l = labels(doc.root_element());
    for want in [
        "latency (µs, log scale)",
        "10",
        "100",
        "1000",
        "100000",
        "tuned / codesys",
    ] {
        assert!(l.contains(&want.to_string()), "{want} in {l:?}");
    }
    // Within 30×, a linear axis from 0.
    let rows = &rows[1..];
    let svg = plots::boxes("latency", Axis::Us, rows, &series, &[], "t").unwrap();
    let l = labels(Document::parse(&svg).unwrap().root_element());
    assert!(
        l.contains(&"latency (µs)".to_string()) && l.contains(&"0".to_string()),
        "{l:?}"
    );
}

/// How many screw-to-screw samples a result counted beyond its budget.
fn verdict_over(r: &RunResult) -> u64 {
    r.detail.as_ref().unwrap()["budget"]["over"]
        .as_u64()
        .unwrap()
}

#[test]
fn the_budget_is_a_line_on_the_histogram_timeline_and_box_chart() {
    let (_d, mut store) = open();
    let (run, _) = round_trip_run(&mut store);
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let budget = "line budget 6700 µs 6700000\n";
    // The histogram: its axis widened to 6.7 ms + 5 % (7 036 bins), drawn
    // in 20 µs bins; the budget a vertical dash-dot-dot line at 6700 µs.
    let h = plots(&doc, &html, "histogram")[0];
    let m = child_text(h, "metadata");
    assert!(
        m.contains("drawn in 20 µs bins\nfrom_us count\n2000 1\n"),
        "{m}"
    );
    assert!(m.ends_with(&format!("6960 1\n{budget}")), "{m}");
    let l = labels(h);
    assert!(
        l.contains(&"screw-to-screw (µs), 20 µs bins (1 µs bins merged for display)".to_string()),
        "{l:?}"
    );
    assert!(l.contains(&"budget 6700 µs".to_string()), "{l:?}");
    let lines = series_lines(h, plots::BUDGET);
    assert_eq!(lines.len(), 2, "the line and its legend sample");
    let p = points(lines[0]);
    assert_eq!(p.len(), 2);
    assert_eq!(p[0].0, p[1].0, "vertical: {p:?}");
    assert!(p[1].1 < p[0].1 - 200, "across the plot's height: {p:?}");
    let want = x_of(h, "5000", 6_700.0);
    assert!(
        (f64::from(p[0].0) - want).abs() <= 1.5,
        "{p:?} against {want}"
    );
    assert_eq!(lines[0].attribute("stroke-dasharray"), Some("10 3 2 3 2 3"));
    // The timeline: a horizontal line across it.
    let t = plots(&doc, &html, "timeline")[0];
    assert!(child_text(t, "metadata").ends_with(budget));
    let p = points(series_lines(t, plots::BUDGET)[0]);
    assert_eq!(p[0].1, p[1].1, "horizontal: {p:?}");
    assert!(p[1].0 > p[0].0 + 500, "{p:?}");
    // The box chart, [Red Hat controls] Figure 4 view: T1→T4 against the budget.
    let b = plots(&doc, &html, "boxes");
    assert_eq!(b.len(), 1);
    let m = child_text(b[0], "metadata");
    assert!(
        m.starts_with("group series min p50 p99 max\nT1→T4 screw-to-screw | run 1 | 2000000 "),
        "{m}"
    );
    assert!(m.ends_with(&format!(" 6975000\n{budget}")), "{m}");
    let p = points(series_lines(b[0], plots::BUDGET)[0]);
    assert_eq!(p[0].0, p[1].0, "vertical: {p:?}");
    let want = x_of(b[0], "5000", 6_700.0);
    assert!(
        (f64::from(p[0].0) - want).abs() <= 1.5,
        "{p:?} against {want}"
    );
    assert!(html.contains(
        "The round trip against its worst-case budget of 6700 µs (Red Hat and Intel, Figure 4)"
    ));
    // A cell without a budget draws none.
    let (_d, mut store) = open();
    let run = single_run(&mut store, &SMALL, "plc-7");
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    assert!(!html.contains("10 3 2 3 2 3"), "no budget line");
}

#[test]
fn a_histogram_spanning_milliseconds_is_drawn_in_merged_bins() {
    let (_d, mut store) = open();
    let ids = store
        .begin_run(&start(RunKind::Run, "cyclic", "plc-7", None))
        .unwrap();
    let (r, mut h) = measured(&[&SMALL], false);
    // 10 000 bins of 1 µs: more than 400 are drawn 50 µs wide.
    let mut fine = jitterlab_core::recorder::LatencyHistogram::new(10_000);
    for (ns, n) in [(1_200, 3), (2_500, 1), (5_000_000, 2), (9_999_999, 1)] {
        for k in 0..n {
            fine.record(ns, k);
        }
    }
    let latency = h.iter_mut().find(|h| h.metric == "latency").unwrap();
    latency.fine = Some(fine);
    store.finish_run(ids, &r, &h).unwrap();
    let html = render(&store, &[ids.run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    let p = plots(&doc, &html, "histogram")[0];
    assert_eq!(
        child_text(p, "metadata"),
        "# run 1\nbin_us count\n1 3\n2 1\n5000 2\n9999 1\noverflows 0\n\
         drawn in 50 µs bins\nfrom_us count\n0 4\n5000 2\n9950 1\n"
    );
    let l = labels(p);
    assert!(
        l.contains(&"latency (µs), 50 µs bins (1 µs bins merged for display)".to_string()),
        "{l:?}"
    );
    assert!(l.contains(&"samples per bin (log scale)".to_string()));
    // The steps: 4 | 0 ×99 | 2 | 0 ×98 | 1, two points each, 50 µs a bin.
    let s = points(series_lines(p, plots::SOLID)[0]);
    assert_eq!(s.len(), 10, "{s:?}");
    let (four, zero, two, one) = (s[0].1, s[2].1, s[4].1, s[8].1);
    assert!(four < two && two < one && one < zero, "{s:?}");
    assert_eq!(s[6].1, zero);
    let want = x_of(p, "5000", 5_000.0);
    assert!(
        (f64::from(s[4].0) - want).abs() <= 1.5,
        "{s:?} against {want}"
    );
    let want = x_of(p, "5000", 10_000.0);
    assert!(
        (f64::from(s[9].0) - want).abs() <= 1.5,
        "{s:?} against {want}"
    );
}

#[test]
fn the_jitter_per_sample_gets_a_log_axis_ticked_at_whole_decades() {
    let series = [
        plots::SampleSeries {
            name: "baseline".into(),
            points: vec![(1, 9_200), (2, 25_000), (3, 9_400)],
            look: plots::SOLID,
        },
        plots::SampleSeries {
            name: "cat".into(),
            points: vec![(1, 150), (2, 0), (3, 400)],
            look: plots::DASHED,
        },
    ];
    // Decades from 10⁶ up are written as powers of ten.
    let tall = [plots::SampleSeries {
        name: "stall".into(),
        points: vec![(1, 150_000), (2, 130_000_000)],
        look: plots::SOLID,
    }];
    let svg = plots::per_sample("jitter per sample", &tall, "t").unwrap();
    let l = labels(Document::parse(&svg).unwrap().root_element());
    for want in ["100000", "10⁶", "10⁷", "10⁸", "10⁹"] {
        assert!(l.contains(&want.to_string()), "{want} in {l:?}");
    }
    let svg = plots::per_sample("jitter per sample", &series, "t").unwrap();
    let doc = Document::parse(&svg).unwrap();
    let root = doc.root_element();
    assert_eq!(
        child_text(root, "metadata"),
        "# baseline\nsample cycles\n1 9200\n2 25000\n3 9400\n# cat\nsample cycles\n1 150\n2 0\n3 400\n"
    );
    let l = labels(root);
    assert!(
        l.contains(&"jitter per sample (CPU cycles, log scale)".to_string()),
        "{l:?}"
    );
    // The value axis is labelled at 10², 10³, 10⁴ and 10⁵ only, evenly
    // spaced from the bottom up.
    let ticks: Vec<(String, f64)> = root
        .descendants()
        .filter(|d| d.tag_name().name() == "text")
        .filter(|d| d.attribute("text-anchor") == Some("end"))
        .map(|d| {
            (
                text(d).trim().to_string(),
                d.attribute("y").unwrap().parse().unwrap(),
            )
        })
        .filter(|(t, _)| !t.is_empty())
        .collect();
    let mut ticks = ticks;
    ticks.sort_by(|a, b| a.1.total_cmp(&b.1));
    let names: Vec<&str> = ticks.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(names, ["100000", "10000", "1000", "100"], "{ticks:?}");
    let steps: Vec<f64> = ticks.windows(2).map(|w| w[1].1 - w[0].1).collect();
    assert!(
        steps
            .iter()
            .all(|s| (s - steps[0]).abs() <= 1.0 && *s > 40.0),
        "{ticks:?}"
    );
    // 25 000 cycles sit at log10(25 000) = 4.398 decades: between the
    // 10⁴ and 10⁵ ticks, 0.398 of a decade above 10⁴.
    let line = points(series_lines(root, plots::SOLID)[0]);
    let (y4, y5) = (ticks[1].1, ticks[0].1);
    let want = y4 + (y5 - y4) * (25_000f64.log10() - 4.0);
    assert!(
        (f64::from(line[1].1) - want).abs() <= 1.5,
        "{line:?} against {want}"
    );
    // Within 30 times, a linear axis.
    let flat = [plots::SampleSeries {
        name: "baseline".into(),
        points: vec![(1, 9_000), (2, 9_500)],
        look: plots::SOLID,
    }];
    let svg = plots::per_sample("jitter per sample", &flat, "t").unwrap();
    let l = labels(Document::parse(&svg).unwrap().root_element());
    assert!(
        l.contains(&"jitter per sample (CPU cycles)".to_string()),
        "{l:?}"
    );
}

#[test]
fn a_bench_folds_each_cell_into_a_details_element() {
    let (_d, mut store) = open();
    let run = bench(&mut store);
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    assert!(!html.contains("<script"));
    let doc = parse(&html);
    let folded = elements(&doc, "details");
    let heads: Vec<String> = folded
        .iter()
        .map(|d| {
            assert_eq!(d.attribute("class"), Some("cell"));
            assert_eq!(d.attribute("open"), None, "folded");
            let summary = d.children().find(|c| c.is_element()).unwrap();
            assert_eq!(summary.tag_name().name(), "summary");
            child_text(summary, "h3")
        })
        .collect();
    assert_eq!(
        heads,
        [
            "Cell tuned/idle/host/cyclic rep 0 — completed",
            "Cell tuned/cpu/host/cyclic rep 0 — completed",
            "Cell default/idle/host/cyclic rep 0 — completed",
        ]
    );
    // Each cell's three plots are inside its own element; the box charts
    // across cells are not folded.
    for d in &folded {
        assert_eq!(
            d.descendants()
                .filter(|n| n.tag_name().name() == "svg")
                .count(),
            3
        );
    }
    assert!(plots(&doc, &html, "boxes")
        .iter()
        .all(|b| b.ancestors().all(|a| a.tag_name().name() != "details")));
    // A single run is not folded.
    let (_d, mut store) = open();
    let run = single_run(&mut store, &SMALL, "plc-7");
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    let doc = parse(&html);
    assert!(elements(&doc, "details").is_empty());
    assert_eq!(
        elements(&doc, "section")
            .iter()
            .filter(|n| n.attribute("class") == Some("cell"))
            .count(),
        1
    );
}

#[test]
fn the_verdict_names_a_starved_neighbour_and_rt_throttling() {
    use jitterlab_core::cell::NeighbourReport;
    use jitterlab_core::rt_throttle::{RtLimit, Stall, Throttling};
    let (_d, mut store) = open();
    let spec = BenchSpecJson {
        configurations: vec!["tuned".into()],
        scenarios: vec!["redhat".into()],
        unavailable: vec![],
        spec: serde_json::json!({}),
        source: None,
    };
    let (run, cells) = store
        .begin_bench(
            &start(
                RunKind::Bench,
                "noise",
                "plc-7",
                Some(serde_json::to_string(&spec).unwrap()),
            ),
            &[key("tuned", "redhat")],
        )
        .unwrap();
    let values: Vec<i64> = (0..200).map(|i| 3_000 + i * 20).collect();
    store.start_cell(cells[0]).unwrap();
    store
        .insert_windows(cells[0], &windows_of(&values, 50))
        .unwrap();
    let (r, h) = measured(&[&values], false);
    // [Red Hat controls]'s neighbour on the probe CPU as measured here: 390 ms of
    // CPU time in 15.058 s.
    let mut neighbours = vec![NeighbourReport {
        name: "stress-ng-probe-cpus".into(),
        argv: [
            "stress-ng",
            "--cpu",
            "1",
            "--cpu-load",
            "80",
            "--metrics-brief",
        ]
        .map(String::from)
        .to_vec(),
        cpus: vec![1],
        pgid: 7,
        cpu_time_ns: 390_000_000,
        wall_ns: 15_058_000_000,
        bogo_ops: BTreeMap::from([("cpu".to_string(), 595)]),
        end: "stopped".into(),
        healthy: true,
        ..NeighbourReport::default()
    }];
    crate::neighbour::judge_loads(&mut neighbours);
    let ctx = CellContext {
        neighbours,
        throttling: Some(Throttling {
            limit: Some(RtLimit {
                runtime_us: 950_000,
                period_us: 1_000_000,
            }),
            fair_server: false,
            messages: vec![],
            rt_rqs: vec![],
            stalls: vec![Stall {
                metric: "latency".into(),
                ns: 52_380_000,
                at_ns: 1_950_000_000,
                window: 1,
            }],
            realtime_probe: true,
            windows_hit: vec![],
        }),
        ..CellContext::default()
    };
    store
        .finish_cell(cells[0], CellStatus::Completed, Some(&r), &ctx, &h)
        .unwrap();
    store
        .finish_run_row(run, RunStatus::Completed, None, 0, None)
        .unwrap();
    let html = render(&store, &[run], &HtmlOptions::default()).unwrap();
    assert!(html.contains(
        "<li>cell tuned/redhat/host/cyclic rep 0: neighbour stress-ng-probe-cpus <strong>short of its load</strong> — short of its load: 0.03 CPU of the 0.80 asked (3 %; tolerance 20 %)</li>"
    ), "{html}");
    assert!(html.contains(
        "<li>cell tuned/redhat/host/cyclic rep 0: stalls caused by <strong>RT throttling</strong> — RT throttling: 1 stall of up to 52.380ms in window 1: the kernel held this real-time probe off, as sched_rt_runtime_us=950000 of sched_rt_period_us=1000000 (real-time tasks held off 50.000ms of every 1.000s)</li>"
    ), "{html}");
    // The window it hit is a shaded band on the timeline, named in its
    // legend and in the figure's data.
    let timeline = &html[html.find("data-plot=\"timeline\"").expect("a timeline")..];
    let timeline = &timeline[..timeline.find("</svg>").unwrap()];
    assert!(
        timeline.contains("\nband RT throttling 1000000000 2000000000\n"),
        "{timeline}"
    );
    assert!(timeline.contains(">\nRT throttling\n</text>"), "{timeline}");
    assert!(
        timeline.contains(" opacity=\"0.25\" fill=\"#808080\""),
        "{timeline}"
    );
    // The cell's explanation says it too, never "healthy".
    assert!(html.contains(
        "neighbour stress-ng-probe-cpus (CPU 1): CPU time 390.000ms in 15.058s, 0.03 CPUs busy, 595 bogo-ops, alive but short of its load: 0.03 CPU of the 0.80 asked (3 %; tolerance 20 %)"
    ), "{html}");
}
